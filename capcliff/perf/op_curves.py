"""Measured per-op curves: how a weight-reading kernel's time grows with the tokens it runs over.

The roofline reads weights at one memory-bandwidth efficiency (MBU, from the model's size) at
every batch, plus a named 1 us floor per kernel. Measured kernels do not behave like that: a
decode GEMM costs a fixed 3-15 us per call whatever its size, a fused MoE layer 17-38 us, and
the share of peak bandwidth they reach on their bytes changes with the tokens (a grouped GEMM
over few tokens per expert reaches less of it than one over many).

`data/op_curves.json` holds those two figures per token count for each GPU, engine and weight
format that NVIDIA's aiconfigurator-core (Apache-2.0) measured: a line
    seconds = floor_s(t) + bytes / (hbm_fraction(t) x peak HBM bytes/s)
fitted through its tables' shapes at t tokens (`benchmarks/build_op_curves.py` rebuilds the file
from an installed aiconfigurator-core and says which table each curve came from). Two ops:

- `gemm`: a dense GEMM reading N x K weights (every linear layer outside the routed experts);
- `moe`: one routed-expert layer (the fused MoE kernel: both grouped GEMMs, the activation,
  the token sort and the combine) reading the experts its tokens touch;
- `mla`: one layer's MLA decode attention over a batch of sequences, reading their latent KV
  cache (per KV dtype and heads per GPU; its "tokens" are the batch's sequences, each batch's
  line fitted across the measured contexts, so a step stays affine in the summed context).

Between measured token counts both figures are interpolated linearly in log(tokens); outside
them the end values hold (above 512 tokens the roofline's compute term takes over anyway).

The compute term has its own curves (`ComputeCurve`, the file's `compute_curves`) from the same
GEMM and MoE tables at 512-16384 tokens per call: a line
    seconds = floor_s(t) + FLOPs / (flops_fraction(t) x peak FLOP/s)
with the peak of aiconfigurator's system file for the format (recorded with the curve), so the
achieved FLOP/s is the measured one whatever peak capcliff's catalog quotes. At 512 tokens a
GEMM's compute line is its weight-read line (same points, FLOPs and bytes both proportional to
N x K). Below the first measured count the fraction holds and the floor shrinks in proportion to
the tokens (the weight-read curve carries the fixed cost there, and the step stays continuous).
MLA prefill attention has one too (`mla_context`, per KV dtype and heads per GPU as `mla`): over
the prompt length, its FLOPs counted in the MHA form the engines run, at the BF16 peak.
Curves are looked up by capcliff hardware id, aiconfigurator backend and format; where none was
measured (vLLM V0, SGLang before 0.4.8, INT4/MXFP4 weights) the roofline keeps its constants, and
the step label says which.

AMD GPUs have curves of the same form under SGLang from ROCm/aiter's (AMD, MIT) tuned kernel
tables (`measured_on` in the file: the GPU the rows were measured on, named by the aiter commit
that added them): DeepSeek-V3's block-FP8 GEMMs and fused MoE on MI355X and MI325X. The fused
MoE table measures too few shapes per token count for a line: its curve reads the bytes at peak
(fraction 1) and carries the rest of each measured time as its floor. MI300X, which no table
names, takes MI325X's curves under the assumption each such curve records (`assumption`), and
the step label says so.

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

from capcliff.catalog.quantization import Quantization
from capcliff.units import KVDType, WeightDType

CURVES_FILE = "op_curves.json"
MICRO = 1e-6
# The most a step's modelled time falls as its load grows, relative: the curves' floors and
# fractions are fitted per token count, and aiconfigurator's H100 vLLM GEMM floor dips by 0.16 us
# between 1 and 4 tokens, 0.05 % of a Llama-8B step at 4 -> 5 sequences; 0.1 % covers it.
MEASURED_CURVE_DIP = 1e-3


@dataclass(frozen=True)
class OpCurve:
    """One op's measured curve: per token count, the fixed seconds per call and the fraction of
    peak HBM bandwidth reached on the bytes read."""

    tokens: tuple[float, ...]
    floor_s: tuple[float, ...]
    hbm_fraction: tuple[float, ...]
    source: str  # aiconfigurator-core version, system, backend release, table

    def _at(self, values: tuple[float, ...], tokens: float) -> float:
        return interpolate(self.tokens, values, tokens)

    def floor_at(self, tokens: float) -> float:
        """Fixed seconds of one call over `tokens` tokens."""
        return self._at(self.floor_s, tokens)

    def fraction_at(self, tokens: float) -> float:
        """Fraction of peak HBM bandwidth one call over `tokens` tokens reaches on its bytes."""
        return self._at(self.hbm_fraction, tokens)

    def seconds(self, tokens: float, bytes_read: float, peak_bytes_per_s: float) -> float:
        """floor + bytes / (fraction x peak): one call over `tokens` tokens reading
        `bytes_read` bytes."""
        return self.floor_at(tokens) + bytes_read / (self.fraction_at(tokens) * peak_bytes_per_s)


def interpolate(xs: tuple[float, ...], values: tuple[float, ...], tokens: float) -> float:
    """values at `tokens`: linear in log(tokens) between the measured counts, ends held."""
    if tokens <= xs[0]:
        return values[0]
    if tokens >= xs[-1]:
        return values[-1]
    i = bisect.bisect_right(xs, tokens) - 1
    w = math.log(tokens / xs[i]) / math.log(xs[i + 1] / xs[i])
    return values[i] + w * (values[i + 1] - values[i])


@dataclass(frozen=True)
class ComputeCurve:
    """One op's measured compute line: per token count (tokens per call), the fixed seconds per
    call and the fraction of `peak_flops_per_s` (aiconfigurator's system figure for the format)
    reached on the call's FLOPs."""

    tokens: tuple[float, ...]
    floor_s: tuple[float, ...]
    flops_fraction: tuple[float, ...]
    peak_flops_per_s: float
    source: str  # aiconfigurator-core version, system, backend release, table

    def floor_at(self, tokens: float) -> float:
        """Fixed seconds of one call over `tokens` tokens (below the first measured count, in
        proportion to the tokens)."""
        first = self.tokens[0]
        if tokens < first:
            return self.floor_s[0] * max(tokens, 0.0) / first
        return interpolate(self.tokens, self.floor_s, tokens)

    def flops_per_s_at(self, tokens: float) -> float:
        """FLOP/s one call over `tokens` tokens reaches on its FLOPs."""
        return interpolate(self.tokens, self.flops_fraction, tokens) * self.peak_flops_per_s

    def seconds(self, tokens: float, flops: float, calls: int = 1) -> float:
        """`calls` x floor + FLOPs / reached FLOP/s: `calls` calls over `tokens` tokens each,
        `flops` FLOPs in all."""
        return calls * self.floor_at(tokens) + flops / self.flops_per_s_at(tokens)


def one_shape_curve(
    tokens: tuple[int, ...],
    flops: tuple[float, ...],
    seconds: tuple[float, ...],
    peak_flops_per_s: float,
    source: str,
) -> ComputeCurve:
    """A compute line from one measured shape: per token count the fraction of
    `peak_flops_per_s` its `flops` reached in `seconds`, no fixed cost split off (one shape
    gives no line)."""
    return ComputeCurve(
        tokens=tuple(float(t) for t in tokens),
        floor_s=(0.0,) * len(tokens),
        flops_fraction=tuple(f / s / peak_flops_per_s for f, s in zip(flops, seconds, strict=True)),
        peak_flops_per_s=peak_flops_per_s,
        source=source,
    )


@cache
def data_file(name: str) -> dict[str, Any]:
    """One JSON file of measured tables shipped in `capcliff/perf/data`, read once."""
    path = resources.files("capcliff.perf").joinpath("data", name)
    data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return data


def _file() -> dict[str, Any]:
    return data_file(CURVES_FILE)


Key = tuple[str, str, str, str]  # (hardware id, engine, op, format)


@cache
def _rows(kind: str) -> dict[Key, dict[str, Any]]:
    """The file's rows of `kind` ("curves", "compute_curves") by key, the last of a key kept."""
    return {(c["hardware"], c["engine"], c["op"], c["format"]): c for c in _file().get(kind, [])}


@cache
def _curve(key: Key) -> OpCurve:
    # one curve built when first asked for: a run reads two or three of the file's 395
    c = _rows("curves")[key]
    return OpCurve(
        tokens=tuple(float(t) for t in c["tokens"]),
        floor_s=tuple(us * MICRO for us in c["floor_us"]),
        hbm_fraction=tuple(float(f) for f in c["hbm_fraction"]),
        source=_source(_file(), c),
    )


def _source(data: dict[str, Any], c: dict[str, Any]) -> str:
    if "measured_on" in c:
        assumption = f"; {c['assumption']}" if "assumption" in c else ""
        return (
            f"ROCm/aiter {c['release'].split()[-1][:10]}: {c['op']} table measured on "
            f"{c['measured_on']} ({c['table'].rsplit('/', 1)[-1]}){assumption}"
        )
    return (
        f"{data['source'].split(' (')[0]}: {c['engine']} {c['release']} {c['op']} "
        f"table on {c['system']} ({c['table'].rsplit('/', 1)[-1]})"
    )


@cache
def _compute_curve(key: Key) -> ComputeCurve:
    c = _rows("compute_curves")[key]
    return ComputeCurve(
        tokens=tuple(float(t) for t in c["tokens"]),
        floor_s=tuple(us * MICRO for us in c["floor_us"]),
        flops_fraction=tuple(float(f) for f in c["flops_fraction"]),
        peak_flops_per_s=float(c["peak_flops_per_s"]),
        source=_source(_file(), c),
    )


def compute_curve(hardware_id: str, engine: str, op: str, fmt: str | None) -> ComputeCurve | None:
    """The measured compute line of `op` ("gemm", "moe"; "mla_context" with `mla_format`'s
    key) for weights in `fmt` under
    aiconfigurator backend `engine` on `hardware_id`; None where none was measured."""
    key = (hardware_id, engine, op, fmt)
    return None if fmt is None or key not in _rows("compute_curves") else _compute_curve(key)


def table_format(dtype: WeightDType, quantization: Quantization | None) -> str | None:
    """aiconfigurator's name of a weight format (block FP8 where the checkpoint's FP8 has
    block scales); None where no table measures it."""
    if dtype is WeightDType.FP8:
        fmt = None if quantization is None else quantization.main_format
        return "fp8_block" if fmt is not None and fmt.block_rows > 1 else "fp8"
    return {
        WeightDType.BF16: "bfloat16",
        WeightDType.FP16: "bfloat16",
        WeightDType.NVFP4: "nvfp4",
    }.get(dtype)


def mla_format(kv_dtype: KVDType, heads_per_gpu: float) -> str | None:
    """The MLA decode table's key for a KV cache dtype and attention heads per GPU
    ("bfloat16:16"); None where no table measures it."""
    kv = {KVDType.BF16: "bfloat16", KVDType.FP16: "bfloat16", KVDType.FP8: "fp8"}.get(kv_dtype)
    if kv is None or heads_per_gpu != int(heads_per_gpu):
        return None
    return f"{kv}:{int(heads_per_gpu)}"


def op_curve(hardware_id: str, engine: str, op: str, fmt: str | None) -> OpCurve | None:
    """The measured curve of `op` ("gemm", "moe" or "mla") for weights (MLA: KV cache and
    heads, `mla_format`) in `fmt` under aiconfigurator
    backend `engine` on `hardware_id`; None where none was measured."""
    key = (hardware_id, engine, op, fmt)
    return None if fmt is None or key not in _rows("curves") else _curve(key)


AITER_ORIGIN = "measured aiter curves"


@cache
def curves_origin(hardware_id: str, engine: str) -> str:
    """How a label names the tables behind `hardware_id`'s curves under backend `engine`:
    "aiconfigurator-core tables", or AITER_ORIGIN with the aiter commit, the GPU its rows were
    measured on and any assumption that carries them to `hardware_id`; "" where it has none."""
    data = _file()
    kinds = [
        c
        for c in (*data["curves"], *data.get("compute_curves", []))
        if c["hardware"] == hardware_id and c["engine"] == engine
    ]
    if not kinds:
        return ""
    aiter = next((c for c in kinds if "measured_on" in c), None)
    if aiter is None:
        return "aiconfigurator-core tables"
    where = (
        f"ROCm/aiter {aiter['release'].split()[-1][:10]} tables measured on {aiter['measured_on']}"
    )
    if "assumption" in aiter:
        where += f"; {aiter['assumption']}"
    return f"{AITER_ORIGIN} ({where})"


@cache
def measured_hardware(engine: str) -> tuple[str, ...]:
    """capcliff hardware ids with at least one curve for aiconfigurator backend `engine`."""
    return tuple(sorted({hw for hw, eng, _, _ in _rows("curves") if eng == engine}))


@cache
def compute_measured_hardware(engine: str) -> tuple[str, ...]:
    """capcliff hardware ids with at least one compute curve for backend `engine`."""
    return tuple(sorted({hw for hw, eng, _, _ in _rows("compute_curves") if eng == engine}))
