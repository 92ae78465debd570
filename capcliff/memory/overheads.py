"""Memory an engine spends besides weights and KV cache: each term a named function with its source.

All results are bytes per GPU. Defaults that are not derived from the model come from public engine
logs in `shared/reference/` (row ids cited) and can be overridden or calibrated from a start-up log.
"""

from __future__ import annotations

from capcliff.catalog.architecture import Architecture
from capcliff.catalog.layout import Layout
from capcliff.units import GIB

ACTIVATION_BYTES = 2  # bf16/fp16 activations
LOGIT_BYTES = 4  # the sampler works on fp32 logits
# vLLM's fused MoE kernel processes at most this many tokens per chunk (VLLM_FUSED_MOE_CHUNK_SIZE).
FUSED_MOE_CHUNK_TOKENS = 32_768

# Memory outside PyTorch's allocator that grows during vLLM's profile run (NCCL and custom
# all-reduce
# buffers, cuBLAS workspaces). Logged 0.10 GiB (V24, TP1), 0.21 GiB (V04, TP8), 0.35 GiB (V01, an
# older format that also counted part of the CUDA context).
DEFAULT_NON_TORCH_BYTES = round(0.2 * GIB)
# CUDA context plus NCCL initialisation, taken before any weights load. SGLang row S02 logs 21.63
# GiB
# free before weights on a 22.49 GiB (23,034 MiB) L4 at TP=4: 0.86 GiB.
DEFAULT_CUDA_CONTEXT_BYTES = round(0.86 * GIB)
# CUDA-graph pool per captured batch size per decoder layer (piecewise graphs split at each layer).
# Row V04: 3.45 GiB for 67 capture sizes x 94 layers = 0.56 MiB.
CUDAGRAPH_BYTES_PER_SIZE_PER_LAYER = round(3.45 * GIB / (67 * 94))
# vLLM's default capture sizes: 1, 2, 4, then every multiple of 8 up to the largest size
# (max_cudagraph_capture_size = min(2 x max_num_seqs, 512); vllm/config/compilation.py).
MAX_CUDAGRAPH_CAPTURE_SIZE = 512


def rope_cache_bytes(arch: Architecture) -> int:
    """max_position_embeddings x rotary_dim x 2 B: the cos/sin table built while loading.

    vLLM's "Model loading took X GiB" includes it: Llama-3.1-8B logs 14.9888 GiB = 14.9575 GiB of
    weights + 131,072 x 128 x 2 B (rows V01, V16); Llama-3-8B 14.9595 = 14.9575 + 8,192 x 128 x 2 B
    (V24).
    """
    rotary_dim = arch.mla.qk_rope_head_dim if arch.mla is not None else arch.head_dim
    return (arch.max_position_embeddings or 0) * rotary_dim * ACTIVATION_BYTES


def _forward_elements_per_token(arch: Architecture, layout: Layout) -> int:
    """Activation elements alive per token at the peak of one decoder layer's forward pass."""
    tp, h = layout.tp, arch.hidden_size
    if arch.mla is not None:
        qk_head = arch.mla.qk_nope_head_dim + arch.mla.qk_rope_head_dim
        qkv = arch.num_attention_heads * qk_head // tp + arch.mla.kv_lora_rank
    else:
        qkv = (arch.num_attention_heads + 2 * arch.num_kv_heads) * arch.head_dim // tp
    mlp = 3 * arch.intermediate_size // tp  # gate/up output (2I) and the activated product (I)
    if arch.moe is not None:
        expert_tp = layout.moe_tp
        n1 = 2 * arch.moe.expert_intermediate_size // expert_tp
        # fused_moe workspaces: top_k x max(N1, h) and top_k x N1 / 2 elements per token.
        mlp = max(mlp, arch.moe.experts_per_token * (max(n1, h) + n1 // 2))
    return qkv + mlp + h


def activation_peak_bytes(
    arch: Architecture, layout: Layout, *, max_num_batched_tokens: int, max_num_seqs: int
) -> int:
    """T x (qkv + MLP + h) x 2 B  +  min(S, T) x vocab x 4 B.

    vLLM's profile run pushes T = max_num_batched_tokens tokens through the model (vLLM V1
    `GPUModelRunner.profile_run`, V0 `ModelRunner.profile_run`): the peak holds the layer input
    (h), the q/k/v projections and the MLP intermediates (3 x intermediate / TP; the fused MoE
    kernel's workspaces for MoE layers). The sampler warm-up then holds fp32 logits for up to S =
    max_num_seqs sequences over the full vocabulary. Checked against V0 logs of Llama-8B: 2.10 GiB
    predicted vs 2.07 logged (V01), 3.00 vs 2.99 (V02). Current vLLM V1 releases report more (about
    5 GiB for dense models at T=8192, S=1024 on H100-class GPUs): calibrate from a start-up log.
    """
    tokens = (
        min(max_num_batched_tokens, FUSED_MOE_CHUNK_TOKENS) if arch.moe else max_num_batched_tokens
    )
    forward = tokens * _forward_elements_per_token(arch, layout) * ACTIVATION_BYTES
    if arch.moe is not None and max_num_batched_tokens > tokens:
        forward += (max_num_batched_tokens - tokens) * (arch.hidden_size * 2) * ACTIVATION_BYTES
    sampler = min(max_num_seqs, max_num_batched_tokens) * arch.vocab_size * LOGIT_BYTES
    return forward + sampler


def cudagraph_capture_sizes(max_num_seqs: int) -> list[int]:
    """Batch sizes vLLM captures CUDA graphs for: 1, 2, 4, 8, 16, ... up to min(2 x S, 512)."""
    largest = min(2 * max_num_seqs, MAX_CUDAGRAPH_CAPTURE_SIZE)
    sizes = [s for s in (1, 2, 4) if s <= largest]
    return sizes + list(range(8, largest + 1, 8))


def cudagraph_bytes(arch: Architecture, layout: Layout, *, max_num_seqs: int) -> int:
    """capture sizes x layers on the stage x 0.56 MiB (row V04's pool per size and layer)."""
    layers = -(-arch.num_layers // layout.pp)
    sizes = len(cudagraph_capture_sizes(max_num_seqs))
    return sizes * layers * CUDAGRAPH_BYTES_PER_SIZE_PER_LAYER
