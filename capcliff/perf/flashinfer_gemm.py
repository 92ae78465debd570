"""SGLang's dense block-FP8 GEMMs on FlashInfer (Blackwell): their compute line, measured.

Which kernel runs a block-FP8 linear (DeepSeek's attention projections, shared experts and dense
MLPs) in SGLang on an sm100 GPU: `dispatch_w8a8_block_fp8_linear`
(python/sglang/srt/layers/quantization/fp8_utils.py) picks DeepGEMM while its JIT is enabled
(`SGLANG_ENABLE_JIT_DEEPGEMM`, on by default) and otherwise, on Blackwell with FlashInfer,
`flashinfer_gemm_w8a8_block_fp8_linear_with_fallback`, which calls FlashInfer's
`gemm_fp8_nt_groupwise` with `backend="trtllm"` on SM100/SM103 ("SM100/103: TRTLLM only",
`_get_flashinfer_groupwise_backend`; `--fp8-gemm-backend flashinfer_trtllm` in later
releases). InferenceX's B200 and B300 SGLang scripts export `SGL_ENABLE_JIT_DEEPGEMM=false` and
`SGLANG_ENABLE_FLASHINFER_GEMM=true`, so their dense GEMMs run FlashInfer's kernel, while
aiconfigurator-core's SGLang GEMM tables for B200/B300 measured DeepGEMM
(`sglang_deepgemm_gemm_nt_f8f8bf16`), which is what the default line prices.

The line: sgl-project/sglang PR #13528 ("[NVIDIA] Add fp8 gemm benchmark on blackwell",
merged 2025-11; benchmark/kernels/deepseek/benchmark_deepgemm_fp8_gemm_blackwell.py), which times
`gemm_fp8_nt_groupwise(..., backend="trtllm")` against DeepGEMM on an sm10x GPU (the script runs
only on compute capability 10) with inputs already quantized. Its table for the (N 24576, K 7168)
weight (DeepSeek's unsplit q projection) at M = 128-2,048 tokens: FlashInfer 125.2, 223.5,
826.2, 1,632.5 us where DeepGEMM takes 69.1, 71.0, 146.0, 260.4 us. Per token count the FLOP/s
reached is 2 x M x N x K / time: 0.36-0.44 PFLOP/s, about a sixth of DeepGEMM's 2.8 at 2,048
tokens. No fixed cost is split off (one shape gives no line). Named assumption: FlashInfer
reaches that FLOP/s in DeepSeek's other dense shapes (the same PR's 576 x 7168 rows reach
0.41-0.53 PFLOP/s at 2,048-4,096 tokens) and on B300 (sm103, the same FP8 tensor peak). Below
128 tokens the fraction holds, where the weight read dominates a step anyway.
"""

from __future__ import annotations

from capcliff.perf.op_curves import ComputeCurve, one_shape_curve

FLASHINFER_BLOCK_FP8_SOURCE = (
    "sgl-project/sglang PR #13528: FlashInfer gemm_fp8_nt_groupwise (backend trtllm) on an "
    "sm10x GPU, N 24576 x K 7168 at 128-2048 tokens; assumption: the same FLOP/s in "
    "DeepSeek's other dense shapes and on B300"
)
# SGLang's --fp8-gemm-backend name for it (what SGL_ENABLE_JIT_DEEPGEMM=false selects on sm100)
FLASHINFER_TRTLLM = "flashinfer_trtllm"
FP8_GEMM_BACKENDS = ("deep_gemm", FLASHINFER_TRTLLM)
# The measured weight shape (N, K) and FlashInfer's times (us) by token count M.
_SHAPE = (24576, 7168)
_TOKENS = (128, 256, 1024, 2048)
_TIME_US = (125.216007, 223.519996, 826.191992, 1632.544041)
# The dense FP8 peak the fractions are of (aiconfigurator's b200_sxm system file, as the
# SGLang GEMM lines of op_curves.json record it).
_PEAK_FLOPS_PER_S = 4.5e15
SM100_HARDWARE = frozenset({"b200", "b300", "gb200"})


def gemm_flops(tokens: int) -> float:
    """FLOPs of one measured GEMM over `tokens` tokens: 2 x tokens x N x K."""
    n, k = _SHAPE
    return 2.0 * tokens * n * k


_CURVE = one_shape_curve(
    _TOKENS, tuple(gemm_flops(t) for t in _TOKENS), tuple(us * 1e-6 for us in _TIME_US),
    _PEAK_FLOPS_PER_S, FLASHINFER_BLOCK_FP8_SOURCE,
)  # fmt: skip


def flashinfer_block_fp8_curve(hardware_id: str) -> ComputeCurve | None:
    """FlashInfer's block-FP8 GEMM compute line on `hardware_id` (sm100 GPUs), None elsewhere."""
    return _CURVE if hardware_id in SM100_HARDWARE else None
