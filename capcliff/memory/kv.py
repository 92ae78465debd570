"""KV cache bytes per token, for the whole model and per GPU of a layout.

MHA/GQA/MQA layer: 2 (K and V) x kv_heads x head_dim x bytes per element.
MLA layer (DeepSeek): (kv_lora_rank + qk_rope_head_dim) x bytes: one compressed latent, no separate
V.
Sliding-window layers hold at most `window` tokens (plus the prefill chunk in flight) per request
under vLLM; SGLang sizes its own pools (`sglang_kv_bytes_per_token_per_gpu`); TensorRT-LLM's pool
holds every token on every layer (`layout_memory.sliding_context_tokens`).
"""

from __future__ import annotations

from capcliff.catalog.architecture import Architecture
from capcliff.catalog.layout import Layout
from capcliff.memory.weights import stage_layer_ranges
from capcliff.units import KVDType, round_up


def kv_heads_per_rank(arch: Architecture, tp: int) -> int:
    """KV heads one TP rank stores: kv_heads / TP, or 1 (replicated) when TP > kv_heads."""
    return max(1, arch.num_kv_heads // tp)


def kv_heads_replicated(arch: Architecture, tp: int) -> bool:
    """Whether TP forces ranks to store copies of the same KV heads (TP > kv_heads, or MLA)."""
    if arch.mla is not None:
        return tp > 1
    return tp > arch.num_kv_heads


# vLLM V0 pads each MLA cache entry to 256 bytes counted in the model dtype's elements (128 for
# bf16), whatever the cache dtype: vllm/worker/cache_engine.py `get_cache_block_size` applies
# `align_to_256bytes(num_heads * head_size, model_config.dtype)` when `_align_cache` (MLA on CUDA,
# VLLM_CUDA_MEM_ALIGN_KV_CACHE, on by default). DeepSeek's 576-element latent becomes 640: +11 %.
# Only in the releases between PR #12676 "[Perf] Mem align KV caches for CUDA devices (MLA perf
# improvement)" (merged 2025-02-04, after 0.7.1 of 2025-02-01) and PR #14842 "[Attention] Get rid
# of mla cache alignment" (merged 2025-03-15, in 0.8.0: "rip this out reclaiming the memory lost
# to padding"; its R1 TP 8 V0 logs: 4,739 cuda blocks padded, 5,266 without, 5,266 / 4,739 =
# 1.111 = 640 / 576).
VLLM_V0_MLA_ALIGN_BYTES = 256
VLLM_V0_MLA_ALIGN_RELEASES = ((0, 7, 2), (0, 8, 0))
MODEL_DTYPE_BYTES = 2  # bf16/fp16 models


def vllm_v0_mla_align_elements(release: tuple[int, int, int] | None) -> int:
    """Elements an MLA cache entry is rounded up to in vLLM V0 at `release` (None: its latest):
    256 B / 2 B = 128 in the releases VLLM_V0_MLA_ALIGN_RELEASES names, else 1 (no padding)."""
    first, until = VLLM_V0_MLA_ALIGN_RELEASES
    if release is None or not first <= release < until:
        return 1
    return VLLM_V0_MLA_ALIGN_BYTES // MODEL_DTYPE_BYTES


def layer_kv_bytes_per_token(
    arch: Architecture, *, kv_dtype: KVDType, tp: int = 1, mla_align_elements: int = 1
) -> int:
    """KV bytes one decoder layer stores per token on one TP rank.

    `mla_align_elements` rounds an MLA entry up to a multiple of that many elements (vLLM V0).
    """
    if arch.mla is not None:
        # The latent is not split by heads: every TP rank stores all of it.
        entry = round_up(arch.mla.kv_lora_rank + arch.mla.qk_rope_head_dim, mla_align_elements)
        return entry * kv_dtype.bytes_per_element
    return 2 * kv_heads_per_rank(arch, tp) * arch.head_dim * kv_dtype.bytes_per_element


def kv_bytes_per_token(arch: Architecture, *, kv_dtype: KVDType) -> int:
    """Whole-model KV bytes per token of context, all layers counted as if attending fully."""
    return arch.num_layers * layer_kv_bytes_per_token(arch, kv_dtype=kv_dtype)


def _stored_tokens(window: int | None, context_tokens: int, chunk_tokens: int) -> int:
    return context_tokens if window is None else min(context_tokens, window + chunk_tokens)


def kv_bytes_for_context(
    arch: Architecture,
    context_tokens: int,
    *,
    kv_dtype: KVDType,
    layout: Layout | None = None,
    stage: int = 0,
    chunk_tokens: int = 0,
    mla_align_elements: int = 1,
) -> int:
    """KV bytes one request of `context_tokens` holds, whole model or per GPU of a layout's stage.

    Full-attention layers store every token; sliding-window layers store min(context, window +
    chunk).
    """
    layout = layout or Layout()
    layers = stage_layer_ranges(arch.num_layers, layout.pp)[stage]
    per_layer = layer_kv_bytes_per_token(
        arch, kv_dtype=kv_dtype, tp=layout.tp, mla_align_elements=mla_align_elements
    )
    return sum(
        per_layer * _stored_tokens(arch.sliding_window_per_layer[i], context_tokens, chunk_tokens)
        for i in layers
    )


def kv_bytes_per_token_per_gpu(
    arch: Architecture,
    layout: Layout,
    *,
    kv_dtype: KVDType,
    context_tokens: int | None = None,
    chunk_tokens: int = 0,
    mla_align_elements: int = 1,
) -> list[int]:
    """KV bytes per token of context on one GPU of each pipeline stage.

    Without `context_tokens` every layer counts as attending fully (exact for models without
    sliding windows, an upper bound otherwise). With it, sliding-window layers count only the
    tokens they keep (the window plus the prefill chunk in flight, `chunk_tokens`), averaged over a
    request of that length (rounded up to whole bytes).
    """
    result = []
    for stage, layers in enumerate(stage_layer_ranges(arch.num_layers, layout.pp)):
        if context_tokens is None:
            per_layer = layer_kv_bytes_per_token(
                arch, kv_dtype=kv_dtype, tp=layout.tp, mla_align_elements=mla_align_elements
            )
            result.append(len(layers) * per_layer)
        else:
            total = kv_bytes_for_context(
                arch,
                context_tokens,
                kv_dtype=kv_dtype,
                layout=layout,
                stage=stage,
                chunk_tokens=chunk_tokens,
                mla_align_elements=mla_align_elements,
            )
            result.append(-(-total // context_tokens))
    return result


# SGLang pools the sliding-window layers of a hybrid-SWA architecture apart from the full ones
# (python/sglang/srt/configs/model_config.py `is_hybrid_swa_model`: GptOssForCausalLM is the one
# capcliff sizes; Llama 4, MiMo-V2, Step-3.5 and Gemma 4 are the others), with a pool of
# `--swa-full-tokens-ratio` (server_args default 0.8) times the full pool's tokens; any other
# model's layers share one pool, every layer holding every token (Gemma 3 included).
SGLANG_HYBRID_SWA_MODEL_TYPES = frozenset({"gpt_oss"})
SGLANG_SWA_FULL_TOKENS_RATIO = 0.8  # set: SGLang's default --swa-full-tokens-ratio


def sglang_kv_bytes_per_token_per_gpu(
    arch: Architecture, layout: Layout, *, kv_dtype: KVDType
) -> list[int]:
    """KV bytes per token of SGLang's full-attention pool on one GPU of each pipeline stage.

    per layer x (full layers + SGLANG_SWA_FULL_TOKENS_RATIO x sliding layers) for a hybrid-SWA
    model: `ModelRunner.set_num_token_hybrid` solves swa x swa_layers + full x full_layers = the
    tokens all layers would hold, with swa = ratio x full; per layer x layers for any other model
    (rounded up to whole bytes).
    """
    per_layer = layer_kv_bytes_per_token(arch, kv_dtype=kv_dtype, tp=layout.tp)
    hybrid = arch.model_type in SGLANG_HYBRID_SWA_MODEL_TYPES
    result = []
    for layers in stage_layer_ranges(arch.num_layers, layout.pp):
        sliding = sum(arch.sliding_window_per_layer[i] is not None for i in layers) if hybrid else 0
        full = len(layers) - sliding
        # the ratio is 4/5: 5 x the bytes is an exact integer before the rounding up
        fifths = per_layer * (5 * full + round(5 * SGLANG_SWA_FULL_TOKENS_RATIO) * sliding)
        result.append(-(-fifths // 5))
    return result
