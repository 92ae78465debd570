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

Which table prices an engine's MoE layers follows the kernel it runs (`MoE backend`), not the
framework that measured it: `moe_kernel` names the kernel family of an engine's MoE backend
setting (its own spellings: TensorRT-LLM `moe_config.backend`, SGLang `--moe-runner-backend`),
`DEFAULT_MOE_KERNELS` the one each engine runs for DeepSeek where the user sets none, and a
table is read wherever any framework measured that kernel on that GPU. TensorRT-LLM's TRTLLM
backend on Blackwell (`TRTLLMGenFusedMoE`, `fused_moe_trtllm_gen.py`: block-FP8 through
`torch.ops.trtllm.fp8_block_scale_moe_runner`, NVFP4 through `fp4_block_scale_moe_runner`) runs
the trtllm-gen MoE runner (`cpp/tensorrt_llm/kernels/trtllmGenKernels/blockScaleMoe`, namespace
`tensorrt_llm::kernels::trtllmGenFp8BlockScaleMoe`: routing, permute + GEMM1, activation, GEMM2,
finalize over trtllm-gen batched-GEMM cubins). FlashInfer's `trtllm_fp8_block_scale_moe` and
`trtllm_fp4_block_scale_moe`, which SGLang runs on sm100 (`flashinfer_trtllm`), are that runner
ported (flashinfer-ai/flashinfer #1212 "trtllm-gen fp8 moe kernels", 2025-07-10: the same
namespace and classes, the routing enum "in sync with" TensorRT-LLM's routing.py, the
batched-GEMM cubins from the trtllm-gen export), so the rows aiconfigurator measured under
SGLang (`sglang_flashinfer_trtllm_moe`) price TensorRT-LLM's TRTLLM backend too. Checked on the
one format both frameworks measured: NVFP4 on B200, MoE TP 8, aiconfigurator's TensorRT-LLM rows
of `TRTLLMGenFusedMoE` (`moe_torch_flow_min_latency`) against the SGLang rows, 20.1 / 31.8 /
60.2 / 109.6 / 157.6 us against 19.4 / 31.1 / 63.3 / 113.9 / 165.8 us at 1 / 4 / 16 / 64 / 256
tokens (within 5 %).

Loading the shipped data file is this module's only I/O (package data, read once, cached).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cache, cached_property
from typing import Any

from capcliff.catalog.architecture import Architecture
from capcliff.perf.op_curves import data_file, interpolate

TABLES_FILE = "moe_tables.json"
MICRO = 1e-6

# The kernel family each MoE backend name runs (lower-cased engine spellings: TensorRT-LLM
# `moe_config.backend`, SGLang `--moe-runner-backend`); "auto": the engine's default.
MOE_BACKEND_KERNELS: dict[str, str] = {
    "auto": "auto",
    "trtllm": "trtllm_gen",  # TensorRT-LLM TRTLLMGenFusedMoE
    "trtllm_gen": "trtllm_gen",
    "flashinfer_trtllm": "trtllm_gen",  # SGLang: FlashInfer's port of the same runner
    "cutlass": "cutlass",  # TensorRT-LLM CutlassFusedMoE
    "triton": "triton",  # SGLang fused_moe_triton; TensorRT-LLM TritonFusedMoE
    "deepgemm": "deepgemm",
    "deep_gemm": "deepgemm",
    "flashinfer_cutlass": "flashinfer_cutlass",
    "flashinfer_mxfp4": "flashinfer_mxfp4",
    "triton_kernel": "triton_kernel",
    "flashinfer_cutedsl": "cutedsl",
    "cutedsl": "cutedsl",
    "wideep": "wideep",
    "vanilla": "vanilla",
    "marlin": "marlin",  # vLLM's Marlin MoE (MXFP4 experts on Hopper: perf/marlin_moe.py)
}
# The kernel each aiconfigurator kernel_source measured (benchmarks/build_moe_tables.py).
TABLE_KERNELS = {
    "sglang_fused_moe_triton": "triton",
    "sglang_flashinfer_trtllm_moe": "trtllm_gen",
    "moe_torch_flow_cutlass": "cutlass",
    # vLLM's Triton fused MoE (`fused_experts`), as aiconfigurator's 0.19 and 0.24 tables name it
    "vllm_fused_moe": "triton",
    "vllm_fp8moe_triton_tritonexperts": "triton",
}
# Kernels one framework's measurement prices in another (the same code, above); every other
# backend name is engine-specific (SGLang's "cutlass" is sgl-kernel's, not TensorRT-LLM's).
SHARED_KERNELS = {
    "trtllm_gen": "the trtllm-gen MoE runner, measured under SGLang's FlashInfer port of it",
}
BLACKWELL = frozenset({"b200", "b300", "gb200"})
# What each engine runs for DeepSeek-V3/R1 where the user sets no backend, by GPU generation.
# SGLang 0.5.x server_args.py: "auto" becomes flashinfer_trtllm on sm100 for
# DeepseekV3ForCausalLM in fp8 / modelopt_fp4, Triton otherwise. TensorRT-LLM:
# `MoeConfig.backend` 'CUTLASS' on Hopper; on Blackwell `ModelConfig.resolve_moe_backend` turns
# AUTO into TRTLLM for FP8_BLOCK_SCALES on sm100f, and InferenceX's R1 B200 scripts
# (dsr1_fp8_b200_trt.sh since 2026-01-29, dsr1_fp4_b200_trt.sh) set `moe_config.backend: TRTLLM`
# outside attention DP. An NVFP4 checkpoint under TensorRT-LLM's AUTO runs CUTLASS: set it.
DEFAULT_MOE_KERNELS: dict[tuple[str, bool], str] = {
    ("sglang", False): "triton",
    ("sglang", True): "trtllm_gen",
    ("trtllm", False): "cutlass",
    ("trtllm", True): "trtllm_gen",
}


@dataclass(frozen=True)
class MoETable:
    """One MoE layer's measured seconds by tokens (one GPU, engine, format, MoE TP x EP)."""

    tokens: tuple[float, ...]
    seconds: tuple[float, ...]
    source: str

    def seconds_at(self, tokens: float) -> float:
        """Seconds of one MoE layer over `tokens` tokens (log-log between measured counts, the
        first count's time below it, in proportion past the last)."""
        xs, ys = self.tokens, self.seconds
        if tokens <= xs[0]:
            return ys[0]
        if tokens >= xs[-1]:
            return ys[-1] * tokens / xs[-1]
        return math.exp(interpolate(xs, self._log_seconds, tokens))

    @cached_property
    def _log_seconds(self) -> tuple[float, ...]:
        return tuple(math.log(y) for y in self.seconds)


def _file() -> dict[str, Any]:
    return data_file(TABLES_FILE)


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
    moe = arch.moe
    if moe is None:  # a dense model: the tables' file (3 ms to read) is not opened
        return False
    shape: dict[str, int] = _file()["shape"]
    return (
        arch.hidden_size == shape["hidden_size"]
        and moe.expert_intermediate_size == shape["inter_size"]
        and moe.num_experts == shape["num_experts"]
        and moe.experts_per_token == shape["topk"]
    )


def moe_kernel(backend: str) -> str:
    """The kernel family of MoE backend name `backend` (any case; `MOE_BACKEND_KERNELS`)."""
    kernel = MOE_BACKEND_KERNELS.get(backend.strip().lower())
    if kernel is None:
        raise ValueError(f"must be one of {', '.join(MOE_BACKEND_KERNELS)}")
    return kernel


def engine_moe_kernel(engine: str, hardware_id: str, backend: str | None) -> str:
    """The MoE kernel family `engine` (an aiconfigurator backend) runs on `hardware_id` for
    DeepSeek's experts under MoE backend `backend` (None or "auto": `DEFAULT_MOE_KERNELS`; ""
    where no default is sourced)."""
    kernel = moe_kernel(backend) if backend is not None else "auto"
    if kernel != "auto":
        return kernel
    return DEFAULT_MOE_KERNELS.get((engine, hardware_id in BLACKWELL), "")


def _table_key(engine: str, hardware_id: str, kernel: str) -> str | None:
    """The measured tables (aiconfigurator backend) that hold `kernel` on `hardware_id`: the
    engine's own where it measured that kernel, else another framework's run of the same one."""
    kernels = {
        eng: TABLE_KERNELS.get(read.split("kernel ")[-1].rstrip(")"), "")
        for key, read in _file()["tables_read"].items()
        for hw, eng in [key.split("/")]
        if hw == hardware_id
    }
    owners = sorted(eng for eng, k in kernels.items() if k and k == kernel)
    if engine in owners:
        return engine
    return next(iter(owners), None) if kernel in SHARED_KERNELS else None


def moe_table(
    arch: Architecture,
    hardware_id: str,
    engine: str,
    fmt: str | None,
    *,
    moe_tp: int,
    ep: int,
    backend: str | None = None,
) -> MoETable | None:
    """The measured MoE layer table of `arch` on `hardware_id` for the kernel aiconfigurator
    backend `engine` runs under MoE backend `backend` (None: its default), experts in `fmt`,
    split over `moe_tp` x `ep` ranks; None where `arch` is not the measured shape or no table
    holds that GPU, kernel, format and split."""
    if fmt is None or not has_table_shape(arch):
        return None
    key = _table_key(engine, hardware_id, engine_moe_kernel(engine, hardware_id, backend))
    return None if key is None else _tables().get((hardware_id, key, fmt, moe_tp, ep))


def moe_table_source(
    arch: Architecture, hardware_id: str, engine: str, fmt: str | None, backend: str | None = None
) -> str:
    """What a step label says where `arch`'s MoE layers on `hardware_id` under aiconfigurator
    backend `engine` and MoE backend `backend` (experts in `fmt`) are priced at measured rows of
    their own shape; "" where no table holds them (at any MoE split)."""
    if fmt is None or not has_table_shape(arch):
        return ""
    kernel = engine_moe_kernel(engine, hardware_id, backend)
    key = _table_key(engine, hardware_id, kernel)
    found = next(
        (
            t
            for (hw, eng, f, _, _), t in _tables().items()
            if (hw, eng, f) == (hardware_id, key, fmt)
        ),
        None,
    )
    if found is None:
        return ""
    borrowed = "" if key == engine else f"; {SHARED_KERNELS[kernel]}"
    return f"; MoE layers at measured rows of their shape ({found.source}{borrowed})"
