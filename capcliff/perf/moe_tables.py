"""Measured MoE layer times for DeepSeek-V3/R1's own routed-expert shape.

`op_curves.py`'s `moe` curves are lines fitted per token count through every MoE shape
aiconfigurator-core measured (many models, `balanced` routing). Where the table holds the
model's own shape, its rows say more: for DeepSeek-V3/R1 (hidden 7168, expert width 2048, 256
experts, top 8) on 8 x H200 under SGLang the fitted line gives 416 us for one MoE layer over 64
tokens at MoE TP 8 where the shape's own rows measured 249 us (`balanced`) and 326 us
(`power_law_1.01`).

`data/moe_tables.json` (`benchmarks/build_moe_tables.py`) holds those rows per GPU, engine
(aiconfigurator backend), weight format and MoE TP x EP: seconds of one routed-expert layer (the
fused MoE kernel: token sort, both grouped GEMMs, activation, combine) at 27 token counts from 1
to 16,384, the fastest kernel measured per count, in the routing distribution aiconfigurator's
own DeepSeek model prices with (`power_law_1.01`: sdk/models/deepseek.py `_power_law_alpha =
1.01`). A step prices each MoE layer at the table's time for its tokens: interpolated linearly in
log(tokens) and log(seconds) between measured counts, the first count's time below it, and in
proportion to the tokens past the last (16,384 tokens per layer is compute-bound).

Loading the shipped data file is this module's only I/O (package data, read once, cached).
"""

from __future__ import annotations

import bisect
import json
import math
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Any

from capcliff.catalog.architecture import Architecture

TABLES_FILE = "moe_tables.json"
MICRO = 1e-6


@dataclass(frozen=True)
class MoETable:
    """One MoE layer's measured seconds by tokens (one GPU, engine, format, MoE TP x EP)."""

    tokens: tuple[float, ...]
    seconds: tuple[float, ...]
    source: str

    def seconds_at(self, tokens: float) -> float:
        """Seconds of one MoE layer over `tokens` tokens (log-log between measured counts)."""
        xs, ys = self.tokens, self.seconds
        if tokens <= xs[0]:
            return ys[0]
        if tokens >= xs[-1]:
            return ys[-1] * tokens / xs[-1]
        i = bisect.bisect_right(xs, tokens) - 1
        w = math.log(tokens / xs[i]) / math.log(xs[i + 1] / xs[i])
        return math.exp(math.log(ys[i]) + w * (math.log(ys[i + 1]) - math.log(ys[i])))


@cache
def _file() -> dict[str, Any]:
    path = resources.files("capcliff.perf").joinpath("data", TABLES_FILE)
    data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return data


@cache
def _tables() -> dict[tuple[str, str, str, int, int], MoETable]:
    data = _file()
    tool = data["source"].split(" (")[0]
    out = {}
    for t in data["tables"]:
        read = data["tables_read"][f"{t['hardware']}/{t['engine']}"]
        out[(t["hardware"], t["engine"], t["format"], t["moe_tp"], t["moe_ep"])] = MoETable(
            tokens=tuple(float(n) for n in t["tokens"]),
            seconds=tuple(us * MICRO for us in t["us"]),
            source=f"{tool}: {read}, {data['distribution']} rows of DeepSeek's MoE shape",
        )
    return out


def has_table_shape(arch: Architecture) -> bool:
    """Whether `arch`'s routed experts have the shape the tables measured (DeepSeek-V3/R1)."""
    moe, shape = arch.moe, _file()["shape"]
    return (
        moe is not None
        and arch.hidden_size == shape["hidden_size"]
        and moe.expert_intermediate_size == shape["inter_size"]
        and moe.num_experts == shape["num_experts"]
        and moe.experts_per_token == shape["topk"]
    )


def moe_table(
    arch: Architecture, hardware_id: str, engine: str, fmt: str | None, *, moe_tp: int, ep: int
) -> MoETable | None:
    """The measured MoE layer table of `arch` on `hardware_id` under aiconfigurator backend
    `engine` for experts in `fmt`, split over `moe_tp` x `ep` ranks; None where `arch` is not
    the measured shape or no table holds that GPU, engine, format and split."""
    if fmt is None or not has_table_shape(arch):
        return None
    return _tables().get((hardware_id, engine, fmt, moe_tp, ep))


def moe_table_source(arch: Architecture, hardware_id: str, engine: str, fmt: str | None) -> str:
    """What a step label says where `arch`'s MoE layers on `hardware_id` under backend `engine`
    (experts in `fmt`) are priced at measured rows of their own shape; "" where no table holds
    them (at any MoE split)."""
    if fmt is None or not has_table_shape(arch):
        return ""
    found = next(
        (
            t
            for (hw, eng, f, _, _), t in _tables().items()
            if (hw, eng, f) == (hardware_id, engine, fmt)
        ),
        None,
    )
    return "" if found is None else f"; MoE layers at measured rows of their shape ({found.source})"
