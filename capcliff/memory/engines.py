"""Each serving engine's memory budget, defaults and block rounding, named for the engine.

- vLLM V1 (`vllm`): requested = total x gpu_memory_utilization; KV = requested - weights (with the
  RoPE cache built at load) - activation peak of the profile run - non-PyTorch growth - the
  CUDA-graph estimate (subtracted by default from 0.20.0 on NVIDIA GPUs, 0.26.0 on AMD ones:
  `overheads.vllm_graphs_in_budget`; before that graphs lived outside the budget).
  Blocks = floor(KV / (block_size x KV bytes per token)); the minimum over ranks binds.
  Source: vllm/v1/worker/gpu_worker.py `determine_available_memory`, vllm/utils/mem_utils.py
  `memory_profiling`, vllm/v1/core/kv_cache_utils.py.
- vLLM V0 (`vllm-v0`): the same split (vllm/worker/worker.py `determine_num_available_blocks`,
  Jan 2025 format), CUDA graphs outside the budget, V0 batch defaults.
- SGLang (`sglang`): the static pool (weights + KV) is mem_fraction_static x the memory free before
  weights load; max_total_num_tokens = floor(KV / cell size), page-aligned. Source:
  python/sglang/srt/model_executor/model_runner.py `profile_max_num_token`, server_args.py.
- TensorRT-LLM (`trtllm`): free_gpu_memory_fraction (0.9) of the memory free once weights and
  runtime
  buffers are in place, optionally capped by max_tokens; blocks = ceil(tokens / tokens_per_block).
  Source: cpp/tensorrt_llm/batch_manager/kvCacheManager.cpp `calculateMaxNumBlocks`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TypeVar

from capcliff.catalog.architecture import Architecture
from capcliff.catalog.layout import Layout
from capcliff.errors import InputError
from capcliff.memory.budget import (
    BudgetSettings,
    BudgetTerm,
    EngineName,
    Provenance,
    StageBudget,
    StageDemand,
)
from capcliff.memory.deepep import AllToAllBackend, deepep_buffers
from capcliff.memory.overheads import (
    DEFAULT_CUDA_CONTEXT_BYTES,
    DEFAULT_NON_TORCH_BYTES,
    SGLANG_LATEST_MODELLED_RELEASE,
    activation_peak_bytes,
    cudagraph_bytes,
    nvls_buffer_bytes,
    rope_cache_bytes,
    sglang_capture_sizes,
    v1_activation_peak_bytes,
    vllm_graphs_in_budget,
    vllm_v0_materialises_mla,
)
from capcliff.units import GIB, MIB

_T = TypeVar("_T")

# vLLM EngineArgs batch defaults for `vllm serve` (vllm/engine/arg_utils.py, get_batch_defaults):
# GPUs with >= 70 GiB (not A100) get max_num_batched_tokens 8192 and max_num_seqs 1024, others
# 2048/256.
VLLM_LARGE_GPU_BYTES = 70 * GIB
# vLLM V0: max_num_seqs 256; chunked prefill (2048-token budget) is switched on above 32K context.
VLLM_V0_CHUNKED_PREFILL_ABOVE = 32_768
# SGLang: max_running_requests from the pool (model_runner.py): clamp(tokens / context x 512, 2048,
# 4096).
SGLANG_MIN_REQUESTS, SGLANG_MAX_REQUESTS = 2048, 4096
# SGLang runs a prefill batch and the decode batch in separate forwards unless --enable-mixed-chunk
# (`ServerArgs.enable_mixed_chunk: bool = False` in every release; scheduler.py
# `get_next_batch_to_run` runs the new prefill batch instead of the running batch, and mixes them
# only when `is_mixed_chunk`), and server_args.py forces it off with EAGLE/MTP speculation ("Mixed
# chunked prefill is disabled because of using eagle speculative decoding", 0.5.6 on) and with
# n-gram ("The overlap scheduler and mixed chunked prefill are disabled because of using ngram
# speculative decoding"). vLLM V1 and TensorRT-LLM put the chunks in the decodes' step.
SGLANG_MIXED_CHUNK = False
# TensorRT-LLM LLM-API defaults: KvCacheConfig.tokens_per_block 32, max_num_tokens 8192,
# max_batch_size 2048.
TRTLLM_TOKENS_PER_BLOCK, TRTLLM_MAX_NUM_TOKENS, TRTLLM_MAX_BATCH_SIZE = 32, 8192, 2048


@dataclass(frozen=True)
class EngineDefaults:
    """Batch and block settings after the engine's defaults are applied."""

    max_num_batched_tokens: int
    max_num_seqs: int
    block_size: int
    # vLLM V0: False runs `_schedule_default` (prefills in steps of their own); every other
    # engine chunks prefills (or, TensorRT-LLM, is modelled so)
    chunked_prefill: bool = True
    # False: a step that runs prefill chunks decodes nobody (SGLang, `SGLANG_MIXED_CHUNK`)
    mixed_prefill: bool = True


def _sglang_tier(total_mib: float, tp: int) -> tuple[int, int]:
    """(chunked_prefill_size, cuda_graph_max_bs) by GPU memory (server_args.py, late 2025)."""
    gib = total_mib / 1024
    if gib < 20:
        return 2048, 8
    if gib < 35:
        return 2048, 24 if tp < 4 else 80
    if gib < 60:
        return 4096, 32 if tp < 4 else 160
    if gib < 160:
        return 8192, 256 if tp < 4 else 512
    return 16384, 512


def engine_defaults(
    settings: BudgetSettings, *, total_memory_bytes: int, max_model_len: int, mla: bool, tp: int
) -> EngineDefaults:
    """The engine's defaults for the settings the user left unset."""
    engine, chunked = settings.engine, True
    if engine is EngineName.VLLM:
        large = total_memory_bytes >= VLLM_LARGE_GPU_BYTES
        batched, seqs = (8192, 1024) if large else (2048, 256)
        block = 64 if mla else 16  # vLLM's MLA backends (FlashMLA) need 64-token blocks
    elif engine is EngineName.VLLM_V0:
        # Chunked prefill above 32K context, but never by default for MLA (vllm_v0_chunked_prefill)
        chunked = _given(
            settings.enable_chunked_prefill, vllm_v0_chunked_prefill(max_model_len, mla=mla)
        )
        batched, seqs, block = (2048 if chunked else max(max_model_len, 2048)), 256, 16
        given = settings.max_num_batched_tokens
        if not chunked and given is not None and given < max_model_len:
            raise InputError(  # SchedulerConfig._verify_args (0.6.x-0.7.x) raises ValueError
                f"max_num_batched_tokens: {given} is smaller than max_model_len ({max_model_len}),"
                " which vLLM V0 without chunked prefill refuses; raise it, shorten max_model_len"
                " or enable chunked prefill"
            )
    elif engine is EngineName.SGLANG:
        batched = _sglang_tier(total_memory_bytes / MIB, tp)[0]
        seqs, block = SGLANG_MAX_REQUESTS, 1
    else:
        batched, seqs, block = TRTLLM_MAX_NUM_TOKENS, TRTLLM_MAX_BATCH_SIZE, TRTLLM_TOKENS_PER_BLOCK
    return EngineDefaults(
        max_num_batched_tokens=_given(settings.max_num_batched_tokens, batched),
        max_num_seqs=_given(settings.max_num_seqs, seqs),
        block_size=_given(settings.block_size, block),
        chunked_prefill=chunked,
        mixed_prefill=SGLANG_MIXED_CHUNK if engine is EngineName.SGLANG else True,
    )


def vllm_v0_chunked_prefill(max_model_len: int, *, mla: bool) -> bool:
    """Whether vLLM V0 turns chunked prefill on when the user leaves it unset.

    Above 32K context it does, to keep the profile run small (arg_utils.py), except for MLA
    models: 0.7.1-0.7.3 force it off ("MLA is enabled; forcing chunked prefill and prefix
    caching to be disabled", `VllmConfig.__post_init__` in vllm/config.py), and from the MLA
    chunked-prefill support (vllm-project/vllm PR #12639, Feb 2025) to the last V0 releases the
    default stays off (`EngineArgs._set_default_args_v0`: "Chunked prefill not supported for
    Multimodal or MLA in V0"). Without it SchedulerConfig budgets max(max_model_len, 2048)
    tokens per step, and the profile run that sizes the KV pool pushes that many through the
    model.
    """
    return max_model_len > VLLM_V0_CHUNKED_PREFILL_ABOVE and not mla


def _given(value: _T | None, default: _T) -> _T:
    """A setting as given; its default when not given (None)."""
    return default if value is None else value


# SGLang's reserve terms beyond the base rule, python/sglang/srt/server_args.py
# `_handle_gpu_memory_settings`, read in the 0.4.9, 0.5.3, 0.5.6, 0.5.9, 0.5.10, 0.5.10.post1,
# 0.5.11 and 0.5.12 wheels (0.4.9 has another rule altogether, not modelled; 0.5.4-0.5.5 and
# 0.5.7-0.5.8 were not read): under DP attention `cuda_graph_max_bs x dp_size x 3` MiB, and `x
# 1.5` more above 300 (0.5.3 on); an EAGLE/MTP draft 2 GiB (0.5.3-0.5.9), 4 GiB (0.5.10 on),
# STANDALONE 6 GiB, n-gram nothing, added after the 10 GiB floor.
SGLANG_RESERVE_TERMS_FROM = (0, 5, 3)
SGLANG_DRAFT_RESERVE_MIB = {(0, 5, 3): 2 * 1024, (0, 5, 10): 4 * 1024}
SGLANG_DP_ATTENTION_MIB_PER_BS, SGLANG_DP_ATTENTION_LARGE_BS = 3, 300
# Piecewise CUDA graphs: `disable_piecewise_cuda_graph: bool = False` from 0.5.10 (0.5.9 has
# `enable_piecewise_cuda_graph: bool = False`, off); the reserve adds 8 MiB per piecewise size
# (`_generate_piecewise_cuda_graph_tokens`, up to `piecewise_cuda_graph_max_tokens` =
# chunked_prefill_size), or 1.5 GiB on an MLA model, before the 10 GiB floor.
# `_handle_piecewise_cuda_graph` (run before the reserve) turns them off for speculative decoding
# in 0.5.10 and 0.5.10.post1 only (0.5.11 and 0.5.12 drop that condition).
SGLANG_PIECEWISE_FROM = (0, 5, 10)
SGLANG_PIECEWISE_WITH_SPECULATION_FROM = (0, 5, 11)
SGLANG_PIECEWISE_MIB_PER_SIZE, SGLANG_PIECEWISE_MLA_MIB = 8, 1.5 * 1024
# configs/model_config.py `piecewise_cuda_graph_disabled_model_archs` (0.5.10-0.5.12:
# DeepseekV32, Qwen3Next, GlmMoeDsa, BailingMoeV2_5, LLaDA; 0.5.12 adds DeepseekV4), by the
# model_type of their HF configs (BailingMoeV2_5's is not known here, so not listed)
SGLANG_PIECEWISE_OFF_MODEL_TYPES = frozenset(
    {"deepseek_v32", "deepseek_v4", "qwen3_next", "glm_moe_dsa", "llada"}
)


def sglang_tp_size(layout: Layout) -> int:
    """SGLang's `--tp`: every rank of the lockstep group under DP attention (`dp x tp`), else tp."""
    return layout.moe_ranks


def sglang_piecewise_sizes(max_tokens: int) -> list[int]:
    """server_args.py `_generate_piecewise_cuda_graph_tokens` (0.5.9-0.5.12): the token counts
    SGLang captures piecewise graphs for, up to `piecewise_cuda_graph_max_tokens`."""
    sizes = [*range(4, 33, 4), *range(48, 257, 16), *range(288, 513, 32), *range(576, 1025, 64)]
    sizes += [*range(1280, 4097, 256), *range(4608, max_tokens + 1, 512)]
    return [size for size in sizes if size <= max_tokens]


@dataclass(frozen=True)
class SGLangServer:
    """What SGLang's server_args.py reads to size the reserve, beyond GPU memory.

    `tp`: SGLang's `--tp` (`sglang_tp_size`); `dp_attention`: `--dp` under
    `--enable-dp-attention` (1 without); `speculative`: capcliff's method (mtp, eagle, ngram) or
    None; `piecewise_allowed`: False where `_handle_piecewise_cuda_graph` turns piecewise graphs
    off for a reason other than DP attention, PP and speculation (`sglang_piecewise_allowed`).
    """

    tp: int
    pp: int = 1
    release: tuple[int, int, int] | None = None
    dp_attention: int = 1
    mla: bool = False
    speculative: str | None = None
    piecewise_allowed: bool = True

    @property
    def rule(self) -> tuple[int, int, int]:
        """The release whose rule applies (None: SGLANG_LATEST_MODELLED_RELEASE)."""
        return SGLANG_LATEST_MODELLED_RELEASE if self.release is None else self.release

    @property
    def piecewise(self) -> bool:
        """Whether SGLang captures piecewise CUDA graphs (and reserves for them)."""
        speculation_off = self.speculative is not None and self.rule < (
            SGLANG_PIECEWISE_WITH_SPECULATION_FROM
        )
        return (
            self.rule >= SGLANG_PIECEWISE_FROM
            and self.piecewise_allowed
            and self.dp_attention == 1
            and self.pp == 1
            and not speculation_off
        )


def sglang_reserved_mib(total_memory_bytes: int, server: SGLangServer) -> float:
    """SGLang's reserve, MiB (server_args.py `_handle_gpu_memory_settings`, 0.5.3-0.5.12).

    512 + 1.5 x max(chunked_prefill_size, 2048) + 2 x cuda_graph_max_bs + TP x PP / 8 x 1024;
    from 0.5.3 + cuda_graph_max_bs x dp x 3 (x 1.5 more above 300) under DP attention; from
    0.5.10 + 8 x len(piecewise_cuda_graph_tokens) with piecewise graphs on (1.5 GiB on an MLA
    model); at least 10 GiB on GPUs above 60 GB; then + the draft's 2 GiB (0.5.3-0.5.9) or
    4 GiB (0.5.10 on) for EAGLE/MTP. chunked_prefill_size and cuda_graph_max_bs are the GPU
    memory tier's (`_sglang_tier`).
    """
    total_mib = total_memory_bytes / MIB
    chunk, graph_bs = _sglang_tier(total_mib, server.tp)
    reserved = 512 + 1.5 * max(chunk, 2048) + 2 * graph_bs + server.tp * server.pp / 8 * 1024
    terms = server.rule >= SGLANG_RESERVE_TERMS_FROM
    if terms and server.dp_attention > 1:
        per_bs = SGLANG_DP_ATTENTION_MIB_PER_BS * (
            1.5 if graph_bs > SGLANG_DP_ATTENTION_LARGE_BS else 1
        )
        reserved += graph_bs * server.dp_attention * per_bs
    if server.piecewise and server.mla:
        reserved += SGLANG_PIECEWISE_MLA_MIB
    elif server.piecewise:
        reserved += len(sglang_piecewise_sizes(chunk)) * SGLANG_PIECEWISE_MIB_PER_SIZE
    if total_mib > 60 * 1024:
        reserved = max(reserved, 10 * 1024)
    if terms and server.speculative in ("mtp", "eagle"):
        draft = SGLANG_DRAFT_RESERVE_MIB.items()
        reserved += max(mib for since, mib in draft if server.rule >= since)
    return reserved


def sglang_mem_fraction_static(
    total_memory_bytes: int,
    *,
    tp: int,
    pp: int,
    release: tuple[int, int, int] | None = None,
    server: SGLangServer | None = None,
) -> float:
    """SGLang's default: (gpu_mem - reserved) / gpu_mem, rounded to three decimals
    (server_args.py); reserved by `sglang_reserved_mib` for `server` (None: TP `tp`, PP `pp` at
    `release`, None the latest, with no DP attention, speculation or MLA)."""
    server = server or SGLangServer(tp=tp, pp=pp, release=release)
    total_mib = total_memory_bytes / MIB
    return round((total_mib - sglang_reserved_mib(total_memory_bytes, server)) / total_mib, 3)


def sglang_piecewise_allowed(arch: Architecture, *, vendor: str, settings: BudgetSettings) -> bool:
    """False where SGLang's `_handle_piecewise_cuda_graph` (0.5.10-0.5.12) turns piecewise CUDA
    graphs off for what capcliff knows beyond DP attention, PP and speculation: HIP (AMD GPUs),
    an all-to-all MoE backend, a multimodal model, a listed architecture
    (SGLANG_PIECEWISE_OFF_MODEL_TYPES), hierarchical cache, PD disaggregation."""
    return not (
        vendor == "AMD"
        or settings.all2all_backend is not AllToAllBackend.NONE
        or arch.vision_params > 0
        or arch.model_type in SGLANG_PIECEWISE_OFF_MODEL_TYPES
        or settings.hierarchical_cache
        or settings.pd_disaggregation
    )


def sglang_server(
    arch: Architecture, layout: Layout, settings: BudgetSettings, *, vendor: str
) -> SGLangServer:
    """What SGLang's reserve reads for `layout` of `arch` under `settings` on `vendor`'s GPUs."""
    return SGLangServer(
        tp=sglang_tp_size(layout),
        pp=layout.pp,
        release=settings.engine_release,
        dp_attention=layout.dp if layout.attention_dp else 1,
        mla=arch.mla is not None,
        speculative=settings.speculative,
        piecewise_allowed=sglang_piecewise_allowed(arch, vendor=vendor, settings=settings),
    )


def _overhead(settings: BudgetSettings, name: str, modeled: int, source: str) -> BudgetTerm:
    pinned = settings.override(name)
    provenance = settings.provenance_of(name)
    if pinned is None:
        return BudgetTerm(name, modeled, provenance, source)
    origin = "a start-up log (--calibration)" if provenance is Provenance.CALIBRATED else "a flag"
    return BudgetTerm(name, pinned, provenance, f"from {origin}; modeled: {source}")


def _vllm(settings: BudgetSettings) -> bool:
    return settings.engine in (EngineName.VLLM, EngineName.VLLM_V0)


def _weights_terms(demand: StageDemand, settings: BudgetSettings) -> list[BudgetTerm]:
    sglang = settings.engine is EngineName.SGLANG
    rope = rope_cache_bytes(demand.arch)
    source = "RoPE cos/sin cache: max_position_embeddings x rotary_dim x 2 B"
    extra = demand.mla_weight_copies_bytes if _vllm(settings) else 0
    if extra:
        source += " + BF16 W_UK/W_UV copies of the quantised kv_b_proj (vLLM MLA common.py)"
        if settings.engine is EngineName.VLLM_V0 and vllm_v0_materialises_mla(
            settings.engine_release
        ):
            source += " + absorbed W_Q_UK, W_UV_O and W_QR (V0 0.7.1-0.7.x, overheads.py)"
    if settings.engine is EngineName.SGLANG and demand.allocator_rounding_bytes:
        # SGLang measures load as free device memory, so it sees the allocator's rounding.
        extra += demand.allocator_rounding_bytes
        source += " + caching-allocator rounding of weight tensors >= 10 MiB to 2 MiB"
    return [
        BudgetTerm(
            "weights",
            demand.weights_bytes,
            demand.weights_provenance,
            "parameters sharded by TP/EP, layers split by PP, per-module formats (weights.py)",
        ),
        _overhead(settings, "weights_overhead", rope + extra, source),
        *([_draft_term(demand)] if demand.draft_weights_bytes and not sglang else []),
    ]


def _draft_term(demand: StageDemand) -> BudgetTerm:
    """The speculative draft's weights. vLLM and TensorRT-LLM load the draft with the target,
    before the KV cache is sized (vllm/v1/worker/gpu_model_runner.py `load_model` loads the
    drafter); SGLang loads its draft worker after the target's KV pool is allocated
    (`EAGLEWorker` after the target `TpModelWorker`), in the 1 - mem_fraction_static reserve."""
    return BudgetTerm(
        "draft_weights",
        demand.draft_weights_bytes,
        Provenance.MODELED,
        "speculative draft: its decoder layers, fusion projection, own lm_head (draft.py)",
    )


def _activation_term(
    demand: StageDemand, settings: BudgetSettings, defaults: EngineDefaults
) -> BudgetTerm:
    batched, seqs = defaults.max_num_batched_tokens, defaults.max_num_seqs
    rows = min(seqs, batched)
    if settings.engine is EngineName.VLLM:
        flashinfer = settings.flashinfer_sampler
        modeled = v1_activation_peak_bytes(
            demand.arch, demand.layout, max_num_batched_tokens=batched, max_num_seqs=seqs,
            flashinfer_sampler=flashinfer,
        )  # fmt: skip
        per_logit = "14 B, FlashInfer's sampler" if flashinfer else "38 B"
        source = (
            f"max(profile pass over {batched} tokens, sampler on {rows} rows x vocab x "
            f"{per_logit}) (vLLM V1 profile_run)"
        )
    else:
        modeled = activation_peak_bytes(
            demand.arch, demand.layout, max_num_batched_tokens=batched, max_num_seqs=seqs
        )
        source = f"profile pass over {batched} tokens + {rows} fp32 logit rows"
    return _overhead(settings, "activation_peak", modeled, source)


def _non_torch_term(demand: StageDemand, settings: BudgetSettings) -> BudgetTerm:
    """Base non-PyTorch growth, plus NCCL's NVLS buffers that vLLM V1 sets up in its profile run."""
    nvls = 0
    if settings.engine is EngineName.VLLM:
        nvls = nvls_buffer_bytes(demand.layout.tp, demand.nvls_channels)
    source = "non-PyTorch growth in the profile run (rows V24, V04: 0.10-0.21 GiB)"
    if nvls:
        source += (
            f" + NCCL NVLS buffers: TP {demand.layout.tp} x {demand.nvls_channels} channels"
            " x 2 x 8 x 128 KiB (nccl src/transport/nvls.cc)"
        )
    return _overhead(settings, "non_torch", DEFAULT_NON_TORCH_BYTES + nvls, source)


def _all2all_terms(demand: StageDemand, settings: BudgetSettings) -> list[BudgetTerm]:
    """DeepEP's buffers when the settings name a DeepEP backend (none by default: no term)."""
    buffers = deepep_buffers(
        demand.arch, demand.layout, engine=settings.engine.value, backend=settings.all2all_backend
    )
    pinned = settings.override("all2all_buffers")
    if not buffers.total_bytes and pinned is None:
        return []
    source = (
        f"DeepEP {settings.all2all_backend.value} over {demand.layout.moe_ranks} EP ranks: "
        f"NVL {buffers.nvl_bytes / GIB:.3f} + RDMA {buffers.rdma_bytes / GIB:.3f} GiB "
        "+ 32 MiB workspace (DeepEP csrc/config.hpp size hints; memory/deepep.py)"
    )
    return [_overhead(settings, "all2all_buffers", buffers.total_bytes, source)]


def _cudagraph_term(
    demand: StageDemand, settings: BudgetSettings, defaults: EngineDefaults
) -> BudgetTerm:
    v0 = settings.engine is EngineName.VLLM_V0
    count, sizes = None, "V0's capture sizes" if v0 else "capture sizes"
    if settings.engine is EngineName.SGLANG:
        graph_bs = _sglang_tier(demand.total_memory_bytes / MIB, sglang_tp_size(demand.layout))[1]
        listed = sglang_capture_sizes(
            graph_bs, max_running_requests=defaults.max_num_seqs, release=settings.engine_release
        )
        count = len(listed)
        sizes = f"SGLang's {count} capture sizes (cuda_graph_max_bs {graph_bs})"
    modeled = cudagraph_bytes(
        demand.arch, demand.layout, max_num_seqs=defaults.max_num_seqs, v0=v0,
        release=settings.engine_release, max_num_batched_tokens=defaults.max_num_batched_tokens,
        sizes=count,
    )  # fmt: skip
    return _overhead(settings, "cudagraph", modeled, f"{sizes} x layers x 0.56 MiB (row V04)")


def _context_term(settings: BudgetSettings) -> BudgetTerm:
    return _overhead(
        settings,
        "cuda_context",
        DEFAULT_CUDA_CONTEXT_BYTES,
        "CUDA context + NCCL init before weights (row S02: 0.86 GiB)",
    )


def _blocks(kv_bytes: int, block_size: int, kv_bytes_per_token: int) -> int:
    block_bytes = block_size * kv_bytes_per_token
    return max(0, kv_bytes) // block_bytes if block_bytes else 0


def vllm_budget(
    demand: StageDemand, settings: BudgetSettings, defaults: EngineDefaults
) -> StageBudget:
    """vLLM V1/V0: KV = total x utilisation - weights - activation peak - non-torch [- graphs]."""
    current = settings.engine is EngineName.VLLM
    graphs = [] if settings.enforce_eager else [_cudagraph_term(demand, settings, defaults)]
    in_budget = settings.cudagraph_in_budget
    if in_budget is None:
        in_budget = vllm_graphs_in_budget(settings.engine_release)
    # vLLM reserves the graphs' estimate inside the budget and captures them into that room
    # (vllm/v1/worker/gpu_worker.py `determine_available_memory`: available KV = requested -
    # non-KV memory - `cudagraph_memory_estimate_applied`), so they are a term of the budget and
    # no longer an outside (headroom) term.
    inside = graphs if current and in_budget else []
    terms = (
        *_weights_terms(demand, settings),
        _activation_term(demand, settings, defaults),
        _non_torch_term(demand, settings),
        # vLLM builds the all-to-all handles after loading, before the profile run, outside
        # PyTorch's allocator: its non-PyTorch growth (gpu_model_runner
        # `prepare_communication_buffer_for_model`), so they come off the KV pool.
        *_all2all_terms(demand, settings),
        *inside,
    )
    requested = int(demand.total_memory_bytes * settings.gpu_memory_utilization)
    kv = requested - sum(t.bytes for t in terms)
    if settings.kv_cache_memory_bytes is not None:
        # --kv-cache-memory skips the profiling: the engine allocates exactly this much KV on
        # top of what the model uses (vllm/v1/worker/gpu_worker.py `determine_available_memory`),
        # so what it asks for is the terms plus this, whatever the utilisation says.
        kv = settings.kv_cache_memory_bytes
        requested = kv + sum(t.bytes for t in terms)
    return StageBudget(
        engine=settings.engine,
        total_memory_bytes=demand.total_memory_bytes,
        requested_bytes=requested,
        terms=terms,
        kv_bytes=kv,
        kv_bytes_per_token=demand.kv_bytes_per_token,
        block_size=defaults.block_size,
        blocks=_blocks(kv, defaults.block_size, demand.kv_bytes_per_token),
        outside_terms=(_context_term(settings), *[g for g in graphs if g not in inside]),
    )


def sglang_budget(
    demand: StageDemand, settings: BudgetSettings, defaults: EngineDefaults
) -> StageBudget:
    """SGLang: KV = free-before-load x mem_fraction_static - weights; tokens = floor(KV / cell)."""
    context = _context_term(settings)
    free_before = demand.total_memory_bytes - context.bytes
    fraction = settings.mem_fraction_static
    if fraction is None:
        server = sglang_server(demand.arch, demand.layout, settings, vendor=demand.gpu_vendor)
        fraction = sglang_mem_fraction_static(
            demand.total_memory_bytes, tp=server.tp, pp=server.pp, server=server
        )
    requested = int(free_before * fraction)
    terms = tuple(_weights_terms(demand, settings))
    kv = requested - sum(t.bytes for t in terms)
    tokens = max(0, kv) // demand.kv_bytes_per_token if demand.kv_bytes_per_token else 0
    page = defaults.block_size
    outside = [context, _activation_term(demand, settings, defaults)]
    if demand.draft_weights_bytes:  # loaded after the KV pool (_draft_term)
        outside.append(_draft_term(demand))
    # SGLang creates its DeepEP buffer at the first dispatch (`DeepEPBuffer.get_deepep_buffer`
    # from `_get_buffer`), after the KV pool is allocated: it lives in the 1 - fraction reserve.
    outside.extend(_all2all_terms(demand, settings))
    if not settings.enforce_eager:
        outside.append(_cudagraph_term(demand, settings, defaults))
    return StageBudget(
        engine=settings.engine,
        total_memory_bytes=demand.total_memory_bytes,
        requested_bytes=requested,
        terms=terms,
        kv_bytes=kv,
        kv_bytes_per_token=demand.kv_bytes_per_token,
        block_size=page,
        blocks=tokens // page,
        outside_terms=tuple(outside),
    )


def trtllm_budget(
    demand: StageDemand, settings: BudgetSettings, defaults: EngineDefaults
) -> StageBudget:
    """TensorRT-LLM: tokens = floor(fraction x free / per-token bytes), blocks rounded up."""
    used = (
        _context_term(settings),
        *_weights_terms(demand, settings),
        _activation_term(demand, settings, defaults),
        *_all2all_terms(demand, settings),  # refuses a DeepEP backend (not modelled here)
    )
    free = demand.total_memory_bytes - sum(t.bytes for t in used)
    allotted = int(max(0, free) * settings.free_gpu_memory_fraction)
    per_token = demand.kv_bytes_per_token
    max_tokens = allotted // per_token if per_token else 0
    if settings.max_tokens is not None:
        max_tokens = min(max_tokens, settings.max_tokens)
    # Blocks round up (ceilDiv), so the pool may exceed the allotment by under one block; the excess
    # comes out of the (1 - fraction) reserve.
    blocks = math.ceil(max_tokens / defaults.block_size) if free > 0 else 0
    kv = blocks * defaults.block_size * per_token if free > 0 else free
    reserve = BudgetTerm(
        "fraction_reserve",
        max(0, free) - max(0, kv),
        Provenance.MODELED,
        f"(1 - free_gpu_memory_fraction {settings.free_gpu_memory_fraction}) x free memory",
    )
    return StageBudget(
        engine=settings.engine,
        total_memory_bytes=demand.total_memory_bytes,
        requested_bytes=demand.total_memory_bytes,
        terms=(*used, reserve),
        kv_bytes=kv,
        kv_bytes_per_token=per_token,
        block_size=defaults.block_size,
        blocks=blocks,
    )


def stage_budget(demand: StageDemand, settings: BudgetSettings) -> StageBudget:
    """The budget of one GPU under the engine named in `settings`."""
    defaults = engine_defaults(
        settings,
        total_memory_bytes=demand.total_memory_bytes,
        max_model_len=demand.max_model_len,
        mla=demand.arch.mla is not None,
        tp=demand.layout.tp,
    )
    if settings.engine in (EngineName.VLLM, EngineName.VLLM_V0):
        return vllm_budget(demand, settings, defaults)
    if settings.engine is EngineName.SGLANG:
        return sglang_budget(demand, settings, defaults)
    return trtllm_budget(demand, settings, defaults)
