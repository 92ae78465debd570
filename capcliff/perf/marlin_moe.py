"""vLLM's Marlin MXFP4 MoE on Hopper: the compute line of its routed-expert layers, measured.

Which kernel runs MXFP4 experts (gpt-oss) in vLLM on an sm90 GPU:
vllm/model_executor/layers/quantization/mxfp4.py `get_mxfp4_backend` picks FlashInfer's BF16
MoE only when `VLLM_USE_FLASHINFER_MOE_MXFP4_BF16` is set, then Marlin when
`VLLM_MXFP4_USE_MARLIN` is set or `has_triton_kernels()` is false, and OpenAI's Triton
`matmul_ogs` kernels otherwise. `has_triton_kernels` (vllm/utils/import_utils.py) looks for the
optional `triton_kernels` package, which `pip install vllm` does not bring (later releases vendor
it as `vllm.third_party.triton_kernels`). So an image that installs vLLM from PyPI and nothing
else runs gpt-oss's experts on Marlin (`--moe-backend marlin`). capcliff's default has no
measured MXFP4 line and prices the experts' FLOPs with the dense GEMMs' (on H100 about 777
TFLOP/s at 8,192 tokens), near what the Triton kernel reaches (aiconfigurator-core 0.12,
h100_sxm moe vllm 0.24.0, `vllm_gptossmxfp4moe_triton`: 556-563 TFLOP/s at 8,192 tokens in
gpt-oss's own shapes).

The line: aiconfigurator-core 0.12's measured vLLM 0.24.0 MoE table on H100
(`systems/data/h100_sxm/moe/vllm/0.24.0/moe_perf.parquet`), the one Marlin MXFP4 kernel it holds
(`vllm_compressedtensorsw4a4mxfp4moe_marlin_marlinexperts_situ_as_silu`, `w4a16_mxfp4`,
`balanced` routing, MoE TP 1, EP 1; hidden 3584, expert width 3072, 896 experts, top 16), its
layer latency at 512-16,384 tokens. Per token count the FLOP/s reached is 2 x tokens x top-k x 3
x hidden x width / latency (gate, up and down); no fixed cost is split off (one shape gives no
line). Named assumption: Marlin reaches the same FLOP/s at a token count in gpt-oss's smaller
experts (2880 x 2880, 32 or 128 experts, top 4). H200 has H100's compute (the same GH100 die).
"""

from __future__ import annotations

from capcliff.perf.op_curves import ComputeCurve, one_shape_curve

MARLIN_MXFP4_SOURCE = (
    "aiconfigurator-core 0.12, h100_sxm moe vllm 0.24.0 moe_perf.parquet, "
    "vllm_compressedtensorsw4a4mxfp4moe_marlin (w4a16_mxfp4, balanced, hidden 3584, width "
    "3072, 896 experts, top 16, MoE TP 1); assumption: the same FLOP/s in gpt-oss's shape"
)
# The measured shape (hidden, expert width, top-k) and its layer latencies (ms) by token count.
_SHAPE = (3584, 3072, 16)
_TOKENS = (512, 768, 1024, 1536, 2048, 3072, 4096, 6144, 8192, 12288, 16384)
_LATENCY_MS = (6.454, 6.523, 8.821, 9.072, 11.282, 15.146, 28.943, 29.429, 47.013, 60.079, 75.413)
# The dense BF16 peak the fractions are of (aiconfigurator's h100_sxm system file: 989 TFLOP/s).
_PEAK_FLOPS_PER_S = 989e12
SM90_HARDWARE = frozenset({"h100-sxm", "h200-sxm"})


def marlin_flops(tokens: int) -> float:
    """FLOPs of one measured layer over `tokens` tokens: 2 x tokens x top-k x 3 x hidden x width."""
    hidden, width, top_k = _SHAPE
    return 2.0 * tokens * top_k * 3 * hidden * width


def marlin_mxfp4_curve(hardware_id: str) -> ComputeCurve | None:
    """The Marlin MXFP4 MoE compute line on `hardware_id` (sm90 GPUs), None elsewhere."""
    if hardware_id not in SM90_HARDWARE:
        return None
    return one_shape_curve(
        _TOKENS, tuple(marlin_flops(t) for t in _TOKENS), tuple(ms * 1e-3 for ms in _LATENCY_MS),
        _PEAK_FLOPS_PER_S, MARLIN_MXFP4_SOURCE,
    )  # fmt: skip
