"""Memory an engine spends besides weights and KV cache: each term a named function with its source.

All results are bytes per GPU. Defaults that are not derived from the model come from public engine
logs in `shared/reference/` (row ids cited) and can be overridden or calibrated from a start-up log.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction

from capcliff.catalog.architecture import Architecture
from capcliff.catalog.layout import Layout
from capcliff.catalog.quantization import FP8_BITS
from capcliff.catalog.specs import HardwareSpec
from capcliff.memory.params import Storage, layer_param_groups
from capcliff.memory.weights import (
    WeightScheme,
    elements_per_rank,
    stage_layer_ranges,
    stage_param_groups,
)
from capcliff.units import GIB, MIB, round_up

ACTIVATION_BYTES = 2  # bf16/fp16 activations
BF16_BITS = 16
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
# vLLM V1's largest default capture size: min(2 x max_num_seqs, 512) in every release capcliff
# models (0.10.x `SchedulerConfig.cuda_graph_sizes`; from 0.11.1 `max_cudagraph_capture_size`,
# vllm/config/vllm.py `_set_cudagraph_sizes`, still 512 in 0.26.0 on every GPU).
MAX_CUDAGRAPH_CAPTURE_SIZE = 512
# The release whose V1 rule applies when the user names none: vLLM 0.24.0, the release of the
# latest step-time profile (perf/profiles.py, aiconfigurator-core 0.12's tables).
VLLM_LATEST_MODELLED_RELEASE = (0, 24, 0)
# vLLM 0.11.1 (the change docs/validation.md traces to PR #25829; 0.11.0's released
# vllm/config/__init__.py still builds `[1, 2, 4] + range(8, cuda_graph_sizes[0] + 1, 8)`):
# `max_cudagraph_capture_size = min(max_num_batched_tokens, min(2 x max_num_seqs, 512))`, 1, 2
# and 4 only up to it, steps of 8 below 256 and of 16 from 256.
V1_STEP16_CAPTURE_LIST_FROM = (0, 11, 1)
# vLLM 0.21.0 (PR #40734 "Fix max_num_batched_token not captured in cuda graph"; absent from
# 0.20.0's vllm/config/vllm.py): max_num_batched_tokens itself is captured when it bounds the list.
V1_CAPTURES_MAX_NUM_BATCHED_TOKENS_FROM = (0, 21, 0)
# SGLang's default CUDA-graph batch sizes (no speculative decoding, graph padding on) follow
# `cuda_graph_max_bs`: python/sglang/srt/server_args.py `_generate_cuda_graph_batch_sizes`, read
# in the 0.5.3, 0.5.6, 0.5.9, 0.5.10.post1 and 0.5.12 wheels: `[1, 2, 4, 8, 12] + range(16, 257,
# 8) + range(272, 512, 16) + range(512, cuda_graph_max_bs + 1, 32)`, those <= cuda_graph_max_bs;
# 0.5.10.post1 and 0.5.12 append cuda_graph_max_bs itself when the steps miss it (0.5.9 does
# not). Before, python/sglang/srt/model_executor/cuda_graph_runner.py
# `get_batch_sizes_to_capture` (0.4.3.post2): `[1, 2, 4] + [i * 8 for i in range(1, 21)]`, up to
# cuda_graph_max_bs (0.4.6 and 0.4.9 list the same sizes, plus 160-256 on GPUs above 80 or 90
# GiB, not modelled). The releases between 0.4.9 and 0.5.3 were not read.
SGLANG_STEP_LIST_FROM = (0, 5, 3)
SGLANG_CAPTURES_MAX_BS_FROM = (0, 5, 10)
SGLANG_OLD_LIST_LARGEST = 160
# The release whose rule applies to an SGLang deployment that names none: the latest read.
SGLANG_LATEST_MODELLED_RELEASE = (0, 5, 12)
# vLLM subtracts its profiled CUDA-graph estimate from the KV budget from 0.20.0 on NVIDIA
# (vllm/envs.py: VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS defaults to "0" in 0.19.1, "1" in
# 0.20.0; PR #30515 added the profiling, off by default), and from 0.26.0 on ROCm
# (vllm/v1/worker/gpu_worker.py `determine_available_memory` profiles only
# `not current_platform.is_rocm()` in 0.20.0 and `current_platform.is_cuda()` in 0.21.0 to
# 0.25.1; `is_cuda_alike()` in 0.26.0, PR #48526).
V1_GRAPHS_IN_BUDGET_FROM = {"NVIDIA": (0, 20, 0), "AMD": (0, 26, 0)}
# vLLM V0's candidate capture sizes are 1, 2, 4 and the multiples of 8 up to this largest one:
# 8 x 1024 = 8192 (`_BATCH_SIZES_TO_CAPTURE`, vllm/worker/model_runner.py, from PR #7894 "extend
# cuda graph size for H200", merged 2024-08-28, first released in 0.6.0; `possible_sizes` in
# `VllmConfig._set_cudagraph_sizes`, vllm/config.py, once the list moved there), and 8 x 32 =
# 256 in the releases before 0.6.0.
V0_LARGEST_CAPTURE_SIZE = 8192
V0_LARGEST_CAPTURE_SIZE_BEFORE_0_6 = 256
V0_LONGER_CAPTURE_LIST_FROM = (0, 6, 0)


def rope_cache_bytes(arch: Architecture) -> int:
    """max_position_embeddings x rotary_dim x 2 B: the cos/sin table built while loading.

    vLLM's "Model loading took X GiB" includes it: Llama-3.1-8B logs 14.9888 GiB = 14.9575 GiB of
    weights + 131,072 x 128 x 2 B (rows V01, V16); Llama-3-8B 14.9595 = 14.9575 + 8,192 x 128 x 2 B
    (V24).
    """
    rotary_dim = arch.mla.qk_rope_head_dim if arch.mla is not None else arch.head_dim
    return (arch.rope_table_rows or 0) * rotary_dim * ACTIVATION_BYTES


def _moe_workspace_elements(arch: Architecture, layout: Layout, *, modular: bool) -> int:
    """Fused-MoE workspace elements per token (N = 2 x expert width / expert TP, K = hidden).

    vLLM V1's modular kernel (TritonExperts.workspace_shapes in
    vllm/model_executor/layers/fused_moe/fused_moe.py) holds top_k x (max(N, K) + max(N/2, K)) plus
    a K-wide output; the older fused_experts_impl (vLLM V0) holds top_k x (max(N, K) + N/2).
    """
    assert arch.moe is not None
    expert_tp = layout.moe_tp
    n, k = 2 * arch.moe.expert_intermediate_size // expert_tp, arch.hidden_size
    top_k = arch.moe.experts_per_token
    if modular:
        return top_k * (max(n, k) + max(n // 2, k)) + k
    return top_k * (max(n, k) + n // 2)


def _forward_elements_per_token(arch: Architecture, layout: Layout, *, modular_moe: bool) -> int:
    """Activation elements alive per token at the peak of one decoder layer's forward pass."""
    tp, h = layout.tp, arch.hidden_size
    if arch.mla is not None:
        qk_head = arch.mla.qk_nope_head_dim + arch.mla.qk_rope_head_dim
        qkv = arch.num_attention_heads * qk_head // tp + arch.mla.kv_lora_rank
    else:
        qkv = (arch.num_attention_heads + 2 * arch.num_kv_heads) * arch.head_dim // tp
    mlp = 3 * arch.intermediate_size // tp  # gate/up output (2I) and the activated product (I)
    if arch.moe is not None:
        mlp = max(mlp, _moe_workspace_elements(arch, layout, modular=modular_moe))
    return qkv + mlp + h


def forward_peak_bytes(
    arch: Architecture, layout: Layout, *, max_num_batched_tokens: int, modular_moe: bool = False
) -> int:
    """T x (qkv + MLP + h) x 2 B: one profile forward pass over T = max_num_batched_tokens.

    The peak holds the layer input (h), the q/k/v projections and the MLP intermediates (3 x
    intermediate / TP; the fused-MoE workspaces for MoE layers, which process at most
    FUSED_MOE_CHUNK_TOKENS tokens at a time).
    """
    tokens = (
        min(max_num_batched_tokens, FUSED_MOE_CHUNK_TOKENS) if arch.moe else max_num_batched_tokens
    )
    per_token = _forward_elements_per_token(arch, layout, modular_moe=modular_moe)
    forward = tokens * per_token * ACTIVATION_BYTES
    if arch.moe is not None and max_num_batched_tokens > tokens:
        forward += (max_num_batched_tokens - tokens) * (arch.hidden_size * 2) * ACTIVATION_BYTES
    return forward


def activation_peak_bytes(
    arch: Architecture, layout: Layout, *, max_num_batched_tokens: int, max_num_seqs: int
) -> int:
    """vLLM V0: forward peak (forward_peak_bytes) + min(S, T) x vocab x 4 B of fp32 logits.

    vLLM V0's profile run (`ModelRunner.profile_run`) pushes T = max_num_batched_tokens tokens
    through the model, then samples S = max_num_seqs sequences. Checked against V0 logs of Llama-8B:
    2.10 GiB predicted vs 2.07 logged (V01), 3.00 vs 2.99 (V02). vLLM V1 profiles differently:
    `v1_activation_peak_bytes`.
    """
    forward = forward_peak_bytes(arch, layout, max_num_batched_tokens=max_num_batched_tokens)
    sampler = min(max_num_seqs, max_num_batched_tokens) * arch.vocab_size * LOGIT_BYTES
    return forward + sampler


# Bytes per logit alive at the peak of vLLM V1's dummy sampler run (gpu_model_runner.py
# `_dummy_sampler_run` samples with top_k = vocab - 1 and top_p = 0.9, so
# vllm/v1/sample/ops/topk_topp_sampler.py `apply_top_k_top_p` sorts the full vocabulary):
# the bf16 logits (2) + their fp32 copy (4) + the sort's values (4) and int64 indices (8) + the
# int64 iota it sorts from (8) + the radix sort's alternate key/value buffers (4 + 8).
V1_SAMPLER_BYTES_PER_LOGIT = 2 + 4 + 4 + 8 + 8 + 4 + 8
# The same dummy run when the sampler is FlashInfer's (vllm/v1/sample/ops/topk_topp_sampler.py
# `forward_cuda` -> `flashinfer_sample` -> flashinfer.sampling `top_k_top_p_sampling_from_logits`
# with its default `filter_apply_order="top_k_first"`, flashinfer-python 0.3.0/0.3.1, the
# releases vLLM 0.10.2/0.11.0 pin): the bf16 logits (2) + their fp32 copy (4) +
# `top_k_mask_logits`'s fp32 masked copy (`torch.empty_like`, 4) + the fp32 softmax of it (4);
# rejection sampling sorts nothing.
V1_FLASHINFER_SAMPLER_BYTES_PER_LOGIT = 2 + 4 + 4 + 4


def v1_activation_peak_bytes(
    arch: Architecture,
    layout: Layout,
    *,
    max_num_batched_tokens: int,
    max_num_seqs: int,
    flashinfer_sampler: bool = False,
) -> int:
    """vLLM V1: max(forward peak, sampler peak + T x h x 2 B), the sampler min(S, T) x vocab x 38 B
    (PyTorch's sort), or x 14 B when it samples with FlashInfer (`flashinfer_sampler`).

    `GPUModelRunner.profile_run` runs the forward pass (modular fused-MoE workspaces), frees its
    intermediates, then runs the sampler on min(S, T) rows while the T x h output hidden states are
    still held; vLLM reports the peak of PyTorch's allocated bytes, the larger of the two. Row V04
    (Qwen3-235B FP8, S = 256, vocab 151,936): 256 x 151,936 x 38 B = 1.38 GiB + 0.02 GiB of hidden
    states; logged 1.40 GiB.
    """
    forward = forward_peak_bytes(
        arch, layout, max_num_batched_tokens=max_num_batched_tokens, modular_moe=True
    )
    rows = min(max_num_seqs, max_num_batched_tokens)
    hidden = max_num_batched_tokens * arch.hidden_size * ACTIVATION_BYTES
    per_logit = (
        V1_FLASHINFER_SAMPLER_BYTES_PER_LOGIT if flashinfer_sampler else V1_SAMPLER_BYTES_PER_LOGIT
    )
    return max(forward, rows * arch.vocab_size * per_logit + hidden)


# NCCL's NVLink SHARP (NVLS) buffers, allocated when a large all-reduce first picks the NVLS
# algorithm (during the profile run, so vLLM counts them as non-PyTorch memory). NCCL
# src/transport/nvls.cc `ncclNvlsBufferSetup`: buffSize = NVLS chunk (NCCL_NVLS_CHUNKSIZE, 128 KiB)
# x NCCL_STEPS (8); each GPU maps nHeads x nChannels x 2 x buffSize. NVLS needs NVSwitch and more
# than 2 GPUs (`ncclNvlsInit`: gpuCount <= 2 disables it).
NVLS_CHUNK_BYTES = 128 * 1024
NCCL_STEPS = 8
# NVLS channels: NCCL's default NVLS_NCHANNELS 16 (src/transport/nvls.cc, NVLink 4 / Hopper);
# Blackwell (NVLink 5) runs 24 ("NVLS multicast support is available on dev 0 (NVLS_NCHANNELS 24)"
# in row V35's B200 log).
NVLS_CHANNELS_BY_NVLINK = {"NVLink 4": 16, "NVLink 5": 24}


def nvls_channels(hardware: HardwareSpec) -> int:
    """NCCL's NVLS channel count on this GPU's NVSwitch fabric; 0 without NVLS."""
    fabric = hardware.scaleup_fabric
    if "Switch" not in fabric:
        return 0
    return next((n for name, n in NVLS_CHANNELS_BY_NVLINK.items() if name in fabric), 0)


def nvls_buffer_bytes(tp: int, channels: int) -> int:
    """tp x channels x 2 x 8 x 128 KiB: NCCL's NVLS buffers for a TP group on NVSwitch (tp > 2)."""
    if tp <= 2 or channels == 0:
        return 0
    return tp * channels * 2 * NCCL_STEPS * NVLS_CHUNK_BYTES


def mla_dequantized_bytes(
    arch: Architecture, layout: Layout, scheme: WeightScheme, stage: int
) -> int:
    """kv_b_proj elements per rank x 2 B on each MLA layer whose kv_b_proj is quantised.

    vLLM's MLA backends (vllm/v1/attention/backends/mla/common.py, and V0's
    vllm/attention/backends/mla/common.py) build W_UK and W_UV from kv_b_proj at load
    (`process_weights_after_loading`): "we currently do not have quantized bmm's ... we just store
    fp16/bf16 copies". An unquantised kv_b_proj is only viewed, not copied.
    """
    if arch.mla is None:
        return 0
    kv_b = [
        group
        for layer in stage_layer_ranges(arch.num_layers, layout.pp)[stage]
        for group in layer_param_groups(arch, layer)
        if group.module.endswith("kv_b_proj") and group.storage is Storage.LINEAR
    ]
    quantised = [g for g in kv_b if scheme.format_of(g).element_bits < BF16_BITS]
    return sum(int(elements_per_rank(g, layout)) for g in quantised) * ACTIVATION_BYTES


# vLLM V0 releases that keep MLA's absorbed decode matrices in memory: from 0.7.1 (PR #12528
# "[Attention] MLA decode optimizations"; Neural Magic, "Enhancing DeepSeek Models with MLA and
# FP8 Optimizations in vLLM", 2025-02-04: MLA and its "matrix absorption" in vLLM v0.7.1) until
# 0.8.0, whose PR #14770 "[Attention] MLA get rid of materialization" (merged
# 2025-03-13: "It's actually better to just not materialize the absorbed `W_Q_UK` and `W_UV_O`
# as it reduces memory usage (and total flops)") removed them and the switch,
# VLLM_MLA_PERFORM_MATRIX_ABSORPTION.
# 0.7.4 was never released: its dev builds (0.7.4.devN) stand before 0.8.0 here; those up to
# 2025-03-13 (dev181 is of 2025-03-03) still materialise.
VLLM_V0_MLA_ABSORBED_RELEASES = ((0, 7, 1), (0, 8, 0))


def vllm_v0_materialises_mla(release: tuple[int, int, int] | None) -> bool:
    """Whether vLLM V0 at `release` (None: its latest, 0.10) keeps the absorbed MLA matrices
    (VLLM_V0_MLA_ABSORBED_RELEASES)."""
    first, until = VLLM_V0_MLA_ABSORBED_RELEASES
    return release is not None and first <= release < until


@dataclass(frozen=True)
class AbsorbedMLA:
    """What vLLM 0.7.1-0.7.x's MLA decode holds and reads per GPU on one stage (bytes)."""

    held_bytes: int  # W_Q_UK, W_UV_O and W_QR, built at load beside the raw weights
    replaced_bytes: int  # the raw q (or q_b), kv_b and o projections the decode does not read


def mla_absorbed_bytes(
    arch: Architecture, layout: Layout, scheme: WeightScheme, stage: int
) -> AbsorbedMLA:
    """The absorbed decode matrices vLLM V0 builds from each MLA layer of `stage`, per GPU, in
    the releases VLLM_V0_MLA_ABSORBED_RELEASES names.

    vllm/attention/backends/mla/ (utils.py, later common.py),
    `MLACommonImpl.process_weights_after_loading` with VLLM_MLA_PERFORM_MATRIX_ABSORPTION
    (default on): W_Q_UK = einsum("qnd,lnd -> qnl", W_Q, W_UK), Lq x (N x Lkv) per rank (Lq:
    q_lora_rank, or the hidden size without it), and W_UV_O = einsum("lnd,hnd -> nlh", W_UV,
    W_O), (N x Lkv) x H, "absorbed weights for decode and another copy of raw weights for prefill";
    FP8 checkpoints requantise both with the group shapes the weights were quantised with
    (`scaled_quantize(..., self.reqaunt_weight_group_shape)` unless
    VLLM_MLA_DISABLE_REQUANTIZATION), others keep the activation dtype (those releases refuse
    MLA over any other quantisation, "Only FP8 and UnquantizedLinearMethod are supported for
    MLA": such a checkpoint is counted in the activation dtype here); W_QR, q_proj's rope
    columns, is copied to the activation dtype ("W_QR is small so for simplicity we dont bother
    requantizing it"). Decode (`_q_proj_and_k_up_proj`, `_v_up_proj_and_o_proj`) reads W_Q_UK,
    W_QR and W_UV_O instead of q_proj, kv_b_proj and o_proj. The BF16 W_UK/W_UV views of a
    quantised kv_b_proj are `mla_dequantized_bytes`. Zero for a model without MLA.
    """
    mla = arch.mla
    if mla is None:
        return AbsorbedMLA(0, 0)
    held, replaced = Fraction(0), Fraction(0)
    lq = mla.q_lora_rank or arch.hidden_size
    for layer in stage_layer_ranges(arch.num_layers, layout.pp)[stage]:
        groups = {
            g.module.rsplit(".", 1)[-1]: g
            for g in layer_param_groups(arch, layer)
            if g.storage is Storage.LINEAR
        }
        kv_b = groups["kv_b_proj"]
        q = groups["q_b_proj" if mla.q_lora_rank else "q_proj"]
        o = groups["o_proj"]
        # heads per rank: kv_b_proj is Lkv x (N x (P + V)) split by heads
        heads = elements_per_rank(kv_b, layout) / (
            mla.kv_lora_rank * (mla.qk_nope_head_dim + mla.v_head_dim)
        )
        fmt = scheme.format_of(kv_b)
        fp8 = fmt.element_bits == FP8_BITS and fmt.name.startswith("fp8")
        q_uk = lq * heads * mla.kv_lora_rank
        uv_o = heads * mla.kv_lora_rank * arch.hidden_size
        if fp8:
            held += q_uk * fmt.bytes_per_element(lq)
            held += uv_o * fmt.bytes_per_element(int(heads * mla.kv_lora_rank))
        else:
            held += (q_uk + uv_o) * ACTIVATION_BYTES
        held += lq * heads * mla.qk_rope_head_dim * ACTIVATION_BYTES  # W_QR
        for g in (q, kv_b, o):
            replaced += elements_per_rank(g, layout) * scheme.bytes_per_element(g)
    return AbsorbedMLA(math.floor(held), math.floor(replaced))


def cudagraph_capture_sizes(
    max_num_seqs: int,
    *,
    v0: bool = False,
    release: tuple[int, int, int] | None = None,
    max_num_batched_tokens: int | None = None,
) -> list[int]:
    """Batch sizes vLLM captures CUDA graphs for, by engine (`v0`: vLLM's V0 engine) and release
    (None: the latest of that engine); `max_num_batched_tokens` bounds V1's list (None: no bound).

    V1: `vllm_v1_capture_sizes`. V0: the candidates 1, 2, 4, 8, 16, ... up to 8192 (256 before
    0.6.0), kept up to the first one >= S, or all of them when S is larger
    (`vllm_v0_capture_sizes`).
    """
    if v0:
        return vllm_v0_capture_sizes(max_num_seqs, release=release)
    return vllm_v1_capture_sizes(
        max_num_seqs, release=release, max_num_batched_tokens=max_num_batched_tokens
    )


def vllm_v1_capture_sizes(
    max_num_seqs: int,
    *,
    release: tuple[int, int, int] | None = None,
    max_num_batched_tokens: int | None = None,
) -> list[int]:
    """V1's default list at `release` (None: VLLM_LATEST_MODELLED_RELEASE), with L = min(2 x S,
    512) and T = max_num_batched_tokens:

    - before 0.11.1: 1, 2, 4 and every multiple of 8 up to L, then those <= T (0.10.2 and 0.11.0
      `VllmConfig._set_cudagraph_sizes`, vllm/config/__init__.py: `batch_size_capture_list = [1,
      2, 4] + [i for i in range(8, cuda_graph_sizes[0] + 1, 8)]`, `cuda_graph_sizes` defaulting to
      [min(max_num_seqs * 2, 512)], filtered `if size <= max_num_tokens`); row V04 logs the 67
      sizes of S = 256;
    - from 0.11.1: M = min(T, L); 1, 2 and 4 up to M, steps of 8 from 8 below 256 and steps of
      16 from 256, up to M (vllm/config/vllm.py `_set_cudagraph_sizes`, the same in 0.11.1 to
      0.26.0); row V35 (0.19.1) logs the 51 sizes of S = 1024, T = 8192, and row V37 (0.15.0,
      its largest size set to 2048) the same steps;
    - from 0.21.0 T is added when T <= M ("ensure max_num_tokens is captured if within max
      capture size").

    Speculative decoding multiplies S by 1 + the draft tokens by 0.14.0 (`decode_query_len`, not
    in 0.12.0); capcliff counts plain decoding.
    """
    rule = VLLM_LATEST_MODELLED_RELEASE if release is None else release
    tokens = max_num_batched_tokens
    largest = min(2 * max_num_seqs, MAX_CUDAGRAPH_CAPTURE_SIZE)
    if rule < V1_STEP16_CAPTURE_LIST_FROM:
        sizes = [1, 2, 4, *range(8, largest + 1, 8)]
        return [size for size in sizes if tokens is None or size <= tokens]
    if tokens is not None:
        largest = min(largest, tokens)
    sizes = [size for size in (1, 2, 4) if size <= largest]
    sizes += [*range(8, min(largest + 1, 256), 8), *range(256, largest + 1, 16)]
    if rule >= V1_CAPTURES_MAX_NUM_BATCHED_TOKENS_FROM and tokens is not None and tokens <= largest:
        sizes.append(tokens)
    return sorted(set(sizes))


def vllm_graphs_in_budget(release: tuple[int, int, int] | None, vendor: str = "NVIDIA") -> bool:
    """Whether vLLM V1 at `release` (None: VLLM_LATEST_MODELLED_RELEASE) on `vendor`'s GPUs
    subtracts its CUDA-graph estimate from the KV budget (V1_GRAPHS_IN_BUDGET_FROM); before that
    the graphs are captured after the KV cache, outside gpu_memory_utilization."""
    first = V1_GRAPHS_IN_BUDGET_FROM.get(vendor)
    rule = VLLM_LATEST_MODELLED_RELEASE if release is None else release
    return first is not None and rule >= first


def vllm_v0_capture_sizes(
    max_num_seqs: int, *, release: tuple[int, int, int] | None = None
) -> list[int]:
    """V0's: the candidates 1, 2, 4, 8, 16, ... up to V0_LARGEST_CAPTURE_SIZE (256 before 0.6.0)
    that are at most the first candidate >= max_num_seqs (the last candidate when none is).

    Source: 0.6.x, vllm/worker/model_runner.py: `max_batchsize_to_capture =
    _get_max_graph_batch_size(max_num_seqs)` (max_num_seqs padded to 1, 2, 4 or the next
    multiple of 8, capped at the last candidate) and `capture_model` captures
    `[bs for bs in _BATCH_SIZES_TO_CAPTURE if bs <= graph_batch_size]`; earlier releases filter
    the same way by `_get_graph_batch_size(max_num_seqs)`; 0.7 - 0.10, the V0 branch
    (`not envs.VLLM_USE_V1`) of `_set_cudagraph_sizes`, vllm/config.py: "find the minimum size
    that is larger than max_num_seqs" among `possible_sizes`, keep those up to it. Unlike V1 it
    neither doubles S nor caps at 512, nor filters by max_num_batched_tokens."""
    old = release is not None and release < V0_LONGER_CAPTURE_LIST_FROM
    largest = V0_LARGEST_CAPTURE_SIZE_BEFORE_0_6 if old else V0_LARGEST_CAPTURE_SIZE
    candidates = [1, 2, 4, *range(8, largest + 1, 8)]
    top = next((size for size in candidates if size >= max_num_seqs), candidates[-1])
    return [size for size in candidates if size <= top]


def sglang_capture_sizes(
    cuda_graph_max_bs: int,
    *,
    max_running_requests: int,
    release: tuple[int, int, int] | None = None,
) -> list[int]:
    """Batch sizes SGLang captures decode CUDA graphs for at `release` (None:
    SGLANG_LATEST_MODELLED_RELEASE), without speculative decoding and with graph padding on.

    The list follows `cuda_graph_max_bs` (SGLANG_STEP_LIST_FROM; before it the 0.4.x list of 1,
    2, 4 and multiples of 8 up to 160), then cuda_graph_runner.py `get_batch_sizes_to_capture`
    bounds it by the request pool (`req_to_token_pool.size`, max_running_requests), adding the
    pool size when the list reaches past it (0.4.3.post2 adds size - 1 too).
    """
    rule = SGLANG_LATEST_MODELLED_RELEASE if release is None else release
    if rule >= SGLANG_STEP_LIST_FROM:
        sizes = [1, 2, 4, 8, 12, *range(16, 257, 8), *range(272, 512, 16)]
        sizes += range(512, cuda_graph_max_bs + 1, 32)
        sizes = [size for size in sizes if size <= cuda_graph_max_bs]
        if rule >= SGLANG_CAPTURES_MAX_BS_FROM and cuda_graph_max_bs not in sizes:
            sizes.append(cuda_graph_max_bs)
        extra = [max_running_requests]
    else:
        sizes = [1, 2, 4, *range(8, SGLANG_OLD_LIST_LARGEST + 1, 8)]
        extra = [max_running_requests - 1, max_running_requests]
        sizes = [size for size in sizes if size <= cuda_graph_max_bs]
    if sizes and max(sizes) > max_running_requests:
        sizes += extra
    return sorted({size for size in sizes if 0 < size <= max_running_requests})


def cudagraph_bytes(
    arch: Architecture,
    layout: Layout,
    *,
    max_num_seqs: int,
    v0: bool = False,
    release: tuple[int, int, int] | None = None,
    max_num_batched_tokens: int | None = None,
    sizes: int | None = None,
) -> int:
    """capture sizes x layers on the stage x 0.56 MiB (row V04's pool per size and layer); the
    sizes counted are `sizes` when given (another engine's list), else vLLM's
    (`cudagraph_capture_sizes` of the engine and release)."""
    layers = -(-arch.num_layers // layout.pp)
    if sizes is None:
        sizes = len(
            cudagraph_capture_sizes(
                max_num_seqs, v0=v0, release=release, max_num_batched_tokens=max_num_batched_tokens
            )
        )
    return sizes * layers * CUDAGRAPH_BYTES_PER_SIZE_PER_LAYER


# PyTorch's CUDA caching allocator (c10/cuda/CUDACachingAllocator.cpp): a request of at least
# kMinLargeAlloc (10 MiB) gets its own segment rounded up to kRoundLarge (2 MiB); smaller requests
# share 2 MiB / 20 MiB segments. An engine that measures load-time memory as free device memory
# (SGLang's "Load weight end ... mem usage") sees the rounding; vLLM's allocated-bytes figure does
# not.
ALLOCATOR_MIN_LARGE_ALLOC = 10 * MIB
ALLOCATOR_ROUND_LARGE = 2 * MIB
# Linear layers the engines fuse into one parameter (QKVParallelLinear, MergedColumnParallelLinear).
_FUSED = {"q_proj": "qkv_proj", "k_proj": "qkv_proj", "v_proj": "qkv_proj",
          "gate_proj": "gate_up_proj", "up_proj": "gate_up_proj"}  # fmt: skip


def _rank_tensor_bytes(
    arch: Architecture, layout: Layout, scheme: WeightScheme, stage: int
) -> list[int]:
    """Bytes of each weight tensor one GPU allocates, fused as vLLM/SGLang build them."""
    tensors: dict[tuple[str, int, bool], float] = {}
    for group in stage_param_groups(arch, layout, stage):
        if not group.module:
            continue  # norms and other small tensors share the allocator's small segments
        head, _, leaf = group.module.rpartition(".")
        key = (f"{head}.{_FUSED.get(leaf, leaf)}", group.fan_in, group.storage is Storage.NATIVE)
        size = elements_per_rank(group, layout) * scheme.bytes_per_element(group)
        tensors[key] = tensors.get(key, 0) + float(size)
    return [int(size) for size in tensors.values()]


def allocator_rounding_bytes(
    arch: Architecture, layout: Layout, scheme: WeightScheme, stage: int
) -> int:
    """Sum over weight tensors of >= 10 MiB of round_up(size, 2 MiB) - size (caching allocator)."""
    return sum(
        round_up(size, ALLOCATOR_ROUND_LARGE) - size
        for size in _rank_tensor_bytes(arch, layout, scheme, stage)
        if size >= ALLOCATOR_MIN_LARGE_ALLOC
    )
