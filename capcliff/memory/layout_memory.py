"""Per-layout memory: weights per GPU, KV bytes per token, KV capacity, fit, and warnings."""

from __future__ import annotations

from dataclasses import dataclass, field

from capcliff.catalog.architecture import Architecture
from capcliff.catalog.layout import Layout, engine_refusal, invalid_reason
from capcliff.catalog.specs import HardwareSpec
from capcliff.memory.budget import (
    BudgetSettings,
    EngineName,
    Provenance,
    StageBudget,
    StageDemand,
)
from capcliff.memory.draft import DraftMemory
from capcliff.memory.engines import engine_defaults, stage_budget
from capcliff.memory.kv import (
    kv_bytes_per_token_per_gpu,
    kv_heads_replicated,
    sglang_kv_bytes_per_token_per_gpu,
    vllm_v0_mla_align_elements,
)
from capcliff.memory.overheads import (
    allocator_rounding_bytes,
    mla_absorbed_bytes,
    mla_dequantized_bytes,
    nvls_channels,
    vllm_v0_materialises_mla,
)
from capcliff.memory.weights import (
    WeightScheme,
    dense_split_saving_bytes,
    pp_layer_counts,
    weight_bytes_per_gpu_by_stage,
)
from capcliff.units import KVDType, ceil_div, format_bytes


@dataclass(frozen=True)
class LayoutMemory:
    """Memory of one layout: per stage budgets, replica capacity and the fit verdict."""

    layout: Layout
    valid: bool
    reason: str  # why the layout is invalid, or why it does not fit; "" when it fits
    stages: tuple[StageBudget, ...] = ()
    max_model_len: int = 0
    warnings: tuple[str, ...] = field(default=())

    @property
    def weights_bytes_per_gpu(self) -> int:
        """Weight bytes on the fullest GPU (the largest pipeline stage binds)."""
        return max((s.weights_bytes for s in self.stages), default=0)

    @property
    def kv_bytes_per_token_per_gpu(self) -> int:
        """KV bytes per token on the GPU that stores the most per token."""
        return max((s.kv_bytes_per_token for s in self.stages), default=0)

    @property
    def blocks_per_replica(self) -> int:
        """KV blocks a replica can use: the smallest stage binds (vLLM takes the min over ranks)."""
        return min((s.blocks for s in self.stages), default=0)

    @property
    def kv_capacity_tokens_per_replica(self) -> int:
        """Tokens of context one replica's KV cache holds."""
        block = self.stages[0].block_size if self.stages else 0
        return self.blocks_per_replica * block

    @property
    def kv_capacity_tokens_total(self) -> int:
        """Tokens of context over all DP replicas (not pooled: each replica has its own)."""
        return self.kv_capacity_tokens_per_replica * self.layout.dp

    def max_concurrency(self, context_tokens: int) -> int:
        """Requests of `context_tokens` each that one replica holds at once: blocks / ceil(L /
        B)."""
        if not self.stages or context_tokens < 1:
            return 0
        return self.blocks_per_replica // ceil_div(context_tokens, self.stages[0].block_size)

    @property
    def fits(self) -> bool:
        """Valid, weights and reserves fit, and one `max_model_len` request fits in the KV cache."""
        return self.valid and not self.reason


def fit_reason(
    stages: tuple[StageBudget, ...], *, max_model_len: int, caps_to_pool: bool = False
) -> str:
    """Empty when the stages fit; otherwise why not, in plain words with the numbers.
    `caps_to_pool`: the engine starts with a pool shorter than one `max_model_len` request and
    caps requests at the pool instead (SGLang, `sglang_served_len`), so only a pool of no
    tokens fails."""
    over = max(stages, key=lambda s: s.requested_bytes - s.total_memory_bytes)
    if over.requested_bytes > over.total_memory_bytes:
        return (
            f"does not fit: weights, reserves and KV cache need "
            f"{format_bytes(over.requested_bytes)}/GPU on a {format_bytes(over.total_memory_bytes)}"
            " device"
        )
    worst = min(stages, key=lambda s: s.kv_bytes)
    if worst.weights_bytes > worst.requested_bytes:
        return (
            f"does not fit: weights {format_bytes(worst.weights_bytes)}/GPU > "
            f"{format_bytes(worst.requested_bytes)} usable"
        )
    if worst.kv_bytes <= 0:
        return (
            f"does not fit: weights {format_bytes(worst.weights_bytes)}/GPU + reserves "
            f"{format_bytes(worst.reserves_bytes)} > {format_bytes(worst.requested_bytes)} usable"
        )
    tight = min(stages, key=lambda s: s.blocks)
    needed_blocks = ceil_div(max_model_len, tight.block_size)
    if tight.blocks < needed_blocks and not caps_to_pool:
        need = needed_blocks * tight.block_size * tight.kv_bytes_per_token
        return (
            f"does not fit: one request of max_model_len={max_model_len} needs "
            f"{format_bytes(need)} of KV/GPU, {format_bytes(tight.kv_bytes)} is left"
        )
    if tight.blocks <= 0:
        # caps_to_pool: SGLang rounds its pool down to whole pages and refuses to start with none
        # (model_runner.py `init_memory_pool`: "Not enough memory", max_total_num_tokens <= 0)
        page = tight.block_size * tight.kv_bytes_per_token
        return (
            f"does not fit: {format_bytes(tight.kv_bytes)} of KV/GPU holds no page of "
            f"{tight.block_size} token(s) ({format_bytes(page)}): the engine refuses an empty pool"
        )
    return ""


def sglang_served_len(stages: tuple[StageBudget, ...], max_model_len: int) -> int:
    """The longest request (tokens, prompt + output) SGLang serves: its scheduler caps it at
    min(context_len - 1, max_total_num_tokens - 1) and starts whatever the pool
    (sglang/srt/managers/tp_worker.py `max_req_len`, 0.4.3 to 0.5.12); capcliff's context is
    `max_model_len` tokens, so the cap binds only where the pool is shorter than it."""
    pool = min(s.blocks * s.block_size for s in stages)
    return max_model_len if pool >= max_model_len else pool - 1


def layout_warnings(arch: Architecture, layout: Layout) -> tuple[str, ...]:
    """Things a user should know about a valid layout (replicated KV, unbalanced stages)."""
    notes: list[str] = []
    if kv_heads_replicated(arch, layout.tp):
        if arch.mla is not None:
            notes.append(
                f"MLA latent is stored whole on each of the {layout.tp} TP ranks; "
                "attention-DP (DP with EP) does not replicate it"
            )
        else:
            copies = layout.tp // arch.num_kv_heads
            notes.append(
                f"TP={layout.tp} > {arch.num_kv_heads} KV heads: each KV head is stored on "
                f"{copies} ranks"
            )
    counts = pp_layer_counts(arch.num_layers, layout.pp)
    if len(set(counts)) > 1:
        notes.append(f"PP stages hold {'/'.join(map(str, counts))} layers; the fullest binds")
    return tuple(notes)


def headroom_warning(stages: tuple[StageBudget, ...]) -> str | None:
    """A warning when what lives outside the engine's budget will not fit there."""
    worst = min(stages, key=lambda s: s.headroom_bytes)
    if worst.headroom_bytes >= 0 or worst.requested_bytes > worst.total_memory_bytes:
        return None  # fits; or the budget is past the device, which the fit reason says
    names = " + ".join(t.name for t in worst.outside_terms)
    room = worst.total_memory_bytes - worst.requested_bytes
    return (
        f"{names} need {format_bytes(room - worst.headroom_bytes)} outside the budget but only "
        f"{format_bytes(room)} is left there: lower the memory fraction or use --enforce-eager"
    )


def sliding_context_tokens(
    arch: Architecture, engine: EngineName, max_model_len: int
) -> int | None:
    """The context at which sliding layers are averaged into the KV bytes a token (tokens), or
    None where every layer is charged in full: a model with no window, or TensorRT-LLM.

    TensorRT-LLM sizes its pool by `kv_cache_config.max_attention_window`, whose default (None) is
    one window of max_seq_len for every layer (tensorrt_llm/_torch/pyexecutor/resource_manager.py
    `KVCacheManager.__init__`, "Use max_seq_len as default max_attention_window"; the V2 manager,
    kv_cache/kv_cache_manager_v2.py, [None]: no window). The model's window only masks the kernel
    (modeling_gpt_oss.py `AttentionBlock.sliding_window`, even layers, passed as
    `attention_window_size` at each forward; Gemma 3 likewise) and is read into
    max_attention_window for Gemma 4 alone (`_util._create_kv_cache_manager`), so one pool holds
    every layer's KV for every token and `calculateWindowSizeToShare` sees one window (share 1.0).
    So in every release read, from the PyTorch VSWA manager (PR #5151, June 2025) to gpt-oss on
    the V2 manager by default (PR #16942, July 2026). A max_attention_window the user sets (VSWA:
    a pool per window, memory split in proportion to window x bytes a token) is not modelled.
    """
    if not arch.has_sliding_window or engine is EngineName.TRTLLM:
        return None
    return max_model_len


def layout_memory(
    arch: Architecture,
    hardware: HardwareSpec,
    layout: Layout,
    *,
    scheme: WeightScheme,
    kv_dtype: KVDType,
    max_model_len: int,
    settings: BudgetSettings,
    weights_provenance: Provenance = Provenance.MODELED,
    draft: DraftMemory | None = None,
    caps_to_pool: bool = False,
) -> LayoutMemory:
    """Weights, KV budget and fit of `layout` for `arch` on `hardware`; a speculative `draft`
    adds its weights and its KV per token to the last pipeline stage (which runs it).
    `caps_to_pool` (SGLang serving its context, as `memory` asks): a pool shorter than
    `max_model_len` caps the requests served (`sglang_served_len`) instead of failing."""
    reason = invalid_reason(layout, arch=arch, hardware=hardware) or engine_refusal(
        layout, settings.engine.value
    )
    if reason is not None:
        return LayoutMemory(layout=layout, valid=False, reason=reason, max_model_len=max_model_len)
    given = settings.gpu_total_memory_bytes
    total_memory = hardware.hbm_driver_bytes if given is None else given
    context = sliding_context_tokens(arch, settings.engine, max_model_len)
    # A sliding-window layer keeps its window plus the prefill chunk in flight (vLLM's
    # SlidingWindowSpec.max_memory_usage_bytes: min(window - 1 + max_num_batched_tokens, L)).
    chunk = engine_defaults(
        settings,
        total_memory_bytes=total_memory,
        max_model_len=max_model_len,
        mla=arch.mla is not None,
        tp=layout.tp,
    ).max_num_batched_tokens
    v0 = settings.engine is EngineName.VLLM_V0
    align = vllm_v0_mla_align_elements(settings.engine_release) if v0 else 1
    if settings.engine is EngineName.SGLANG and arch.has_sliding_window:
        # SGLang's own pools (2026-12-07, h-user2: gpt-oss-120b on one H200 read 1,511,973
        # tokens by vLLM's window rule where SGLang's 0.8 pool ratio gives 1,053,3xx)
        kv_per_token = sglang_kv_bytes_per_token_per_gpu(arch, layout, kv_dtype=kv_dtype)
    else:
        kv_per_token = kv_bytes_per_token_per_gpu(
            arch,
            layout,
            kv_dtype=kv_dtype,
            context_tokens=context,
            chunk_tokens=chunk,
            mla_align_elements=align,
        )
    weights = weight_bytes_per_gpu_by_stage(arch, layout, scheme)
    # Only SGLang sees the allocator's rounding (it measures load as free device memory).
    sglang = settings.engine is EngineName.SGLANG
    if sglang:  # SGLang splits dense MLPs over the whole MoE group under DP attention
        weights = [
            w - dense_split_saving_bytes(arch, layout, scheme, i) for i, w in enumerate(weights)
        ]
    channels = nvls_channels(hardware)
    # vLLM 0.7.1-0.7.x V0 also holds MLA's absorbed decode matrices (overheads.mla_absorbed_bytes)
    absorbed = settings.engine is EngineName.VLLM_V0 and vllm_v0_materialises_mla(
        settings.engine_release
    )
    draft = draft or DraftMemory()
    last = layout.pp - 1
    kv_per_token = [k + (draft.kv_bytes_per_token if i == last else 0)
                    for i, k in enumerate(kv_per_token)]  # fmt: skip
    stages = tuple(
        stage_budget(
            StageDemand(
                arch=arch,
                layout=layout,
                stage=i,
                total_memory_bytes=total_memory,
                weights_bytes=w,
                kv_bytes_per_token=k,
                max_model_len=max_model_len,
                weights_provenance=weights_provenance,
                nvls_channels=channels,
                mla_weight_copies_bytes=mla_dequantized_bytes(arch, layout, scheme, i)
                + (mla_absorbed_bytes(arch, layout, scheme, i).held_bytes if absorbed else 0),
                allocator_rounding_bytes=(
                    allocator_rounding_bytes(arch, layout, scheme, i) if sglang else 0
                ),
                draft_weights_bytes=draft.weights_bytes if i == last else 0,
                gpu_vendor=hardware.vendor,
            ),
            settings,
        )
        for i, (w, k) in enumerate(zip(weights, kv_per_token, strict=True))
    )
    reason = fit_reason(stages, max_model_len=max_model_len, caps_to_pool=caps_to_pool)
    served = sglang_served_len(stages, max_model_len) if caps_to_pool and not reason else None
    capped: tuple[str, ...] = ()
    if served is not None and served < max_model_len:
        capped = (
            f"SGLang starts and serves requests of at most {served:,} tokens, its KV pool less "
            f"one (the context is {max_model_len:,}: its scheduler's max_req_len)",
        )
    return LayoutMemory(
        layout=layout,
        valid=True,
        reason=reason,
        stages=stages,
        max_model_len=max_model_len if served is None else served,
        warnings=layout_warnings(arch, layout)
        + tuple(w for w in (headroom_warning(stages),) if w is not None)
        + capped,
    )
