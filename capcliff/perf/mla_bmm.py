"""MLA's two absorbed decode BMMs at their measured time (measured, not modelled).

Every MLA decode layer runs two batched matmuls around the attention kernel: W_UK absorbed into
the query (q_nope x w_kc, `mla_gen_pre`) and W_UV applied to the latent output (`mla_gen_post`).
SGLang runs them with `torch.bmm` in BF16 for DeepSeek's block-FP8 and BF16 `kv_b_proj`
(python/sglang/srt/models/deepseek_v2.py: `post_load_weights` dequantizes 128 x 128 block-FP8
weights to BF16 with `block_quant_dequant` unless SGL_USE_DEEPGEMM_BMM on Hopper, off by default;
`forward_absorb_prepare` / `forward_absorb_core` then call `torch.bmm`). TensorRT-LLM runs
`torch.ops.trtllm.bmm_out` for BF16 weights and, for block-FP8 weights,
`fp8_block_scaling_bmm_out` on Hopper or the weight dequantized to BF16 and `bmm_out` on
Blackwell (tensorrt_llm/_torch/modules/attention.py at 1.3.0rc20, as aiconfigurator's
collector/trtllm/collect_mla_bmm.py reproduces it). aiconfigurator-core 0.12 timed exactly
those kernels per GPU, heads per GPU and token count under a CUDA graph; their sum per token
count is in perf/data/mla_bmm.json (benchmarks/build_mla_bmm.py). Without the table each BMM took
one kernel floor (1 us) and its FLOPs and kv_b bytes in the dense terms; the tables give 8.3-10 us
for the pair at 16 heads on B200/B300 and 8-12 us (BF16) or 15-25 us (FP8 on Hopper) on H100/H200
up to 256 tokens. The kv_b bytes stay in the dense weight read as well (2.1 MB per layer at TP 8
in FP8, under 0.4 us at the GEMM curve's fraction of peak): a known overlap, not subtracted.
"""

from __future__ import annotations

from functools import cache

from capcliff.catalog.architecture import Architecture
from capcliff.catalog.layout import Layout
from capcliff.memory.weights import WeightScheme
from capcliff.perf.moe_tables import MoETable
from capcliff.perf.op_curves import MICRO, data_file
from capcliff.units import WeightDType

MLA_BMM_FILE = "mla_bmm.json"
# The kernels of profiles.kernels_per_layer's MLA list the table times (W_UK and W_UV absorb).
MLA_BMM_KERNELS = 2


@cache
def _tables() -> dict[tuple[str, str, str, int], MoETable]:
    data = data_file(MLA_BMM_FILE)
    tokens = tuple(float(n) for n in data["tokens"])
    source = data["source"].split(" (")[0]
    return {
        (t["hardware"], t["engine"], t["weight"], t["heads"]): MoETable(
            tokens=tokens,
            seconds=tuple(us * MICRO for us in t["us"]),
            source=f"{source}: {t['engine']} MLA BMMs, {t['weight']} weights, {t['heads']} heads",
        )
        for t in data["tables"]
    }


def kv_b_weight(arch: Architecture, scheme: WeightScheme) -> str | None:
    """How the checkpoint stores `kv_b_proj` (the BMMs' weights) as the table keys it:
    "bfloat16" (native: BF16/FP16, or left out of the checkpoint's quantization), "fp8_block"
    (FP8 with block scales); None for any other format (no table measured its kernel)."""
    quant = scheme.quantization
    if quant is None:
        native = scheme.linear in (WeightDType.BF16, WeightDType.FP16)
        return "bfloat16" if native else None
    fmt = quant.format_of("model.layers.0.self_attn.kv_b_proj", expert=False)
    if fmt is None:
        return "bfloat16" if arch.activation_dtype in (WeightDType.BF16, WeightDType.FP16) else None
    if scheme.linear is WeightDType.FP8 and fmt.block_rows > 1:
        return "fp8_block"
    return None


def mla_bmm_table(
    arch: Architecture, hardware_id: str, backend: str | None, layout: Layout, scheme: WeightScheme
) -> MoETable | None:
    """Seconds of one MLA decode layer's two absorbed BMMs by tokens, as `backend` (the
    profile's aiconfigurator tables: "sglang", "trtllm") runs them on `hardware_id` at the
    layout's attention heads per GPU; None for a model without MLA, or where nothing measured
    the kernel (another engine, GPU, weight format or head count). SGLang's BF16 rows serve its
    block-FP8 weights too: it dequantizes them to BF16 at load."""
    if arch.mla is None or backend is None:
        return None
    weight = kv_b_weight(arch, scheme)
    if weight == "fp8_block" and backend == "sglang":
        weight = "bfloat16"
    heads = arch.num_attention_heads / layout.tp
    if weight is None or heads != int(heads):
        return None
    return _tables().get((hardware_id, backend, weight, int(heads)))
