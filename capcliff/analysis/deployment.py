"""From the user's settings to the core's inputs: one resolution shared by every command.

`resolve` turns `DeploymentSettings` (`deployment_settings`), with a model and a GPU, into a
`Deployment`: the budget settings, weight and KV formats, the simulator's engine settings, any
calibration (`deployment_calibration`), speculation and measured-kernel target, checked against
each other (`setting_refusals`, `max_model_len`).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

from capcliff.analysis.deployment_calibration import calibration_terms, merge_layout_mismatches
from capcliff.analysis.deployment_settings import DeploymentSettings
from capcliff.analysis.kv_cache_default import checkpoint_kv_note, resolved_kv_dtype
from capcliff.analysis.max_model_len import check_model_context, context_length
from capcliff.analysis.offload import offload_shortfall, offload_tiers, parse_offload
from capcliff.analysis.setting_refusals import (
    check_adp_balance,
    refuse_budget_below_seats,
    refuse_chunked_prefill_switch,
    refuse_engine_on_vendor,
    refuse_moe_settings_on_dense,
    refuse_other_engines_settings,
    sglang_fp4_refusal,
    unused_tiers,
)
from capcliff.catalog.catalogs import Model, with_rope_scaling
from capcliff.catalog.layout import Layout
from capcliff.catalog.specs import HardwareSpec
from capcliff.errors import InputError
from capcliff.memory.budget import BudgetSettings, EngineName
from capcliff.memory.draft import DraftMemory, DraftModel, SpecMethod, draft_memory, draft_model
from capcliff.memory.engines import engine_defaults, sglang_mem_fraction_static, sglang_server
from capcliff.memory.layout_memory import LayoutMemory, layout_memory
from capcliff.memory.overheads import vllm_graphs_in_budget
from capcliff.memory.params import Storage
from capcliff.memory.weights import WeightScheme
from capcliff.perf.first_wave import first_wave_figure
from capcliff.perf.profiles import FITTED_TERMS, engine_profile
from capcliff.perf.speculation import (
    Acceptance,
    Speculation,
    acceptance,
    parse_acceptance,
    parse_speculative,
    speculative_host_s,
    speculative_max_num_seqs,
)
from capcliff.releases import parse_version
from capcliff.sim.config import KVCapacity, SimConfig, parse_adp_balance
from capcliff.sim.policy_names import VLLM_FULL_SEQUENCE_RELEASE
from capcliff.units import KVDType, parse_weight_dtype

if TYPE_CHECKING:
    from capcliff.perf.measured_kernels import KernelTarget
    from capcliff.sim.traffic.workload import Requests


# Families capcliff sizes whose engines hold no MTP module, so a num_nextn_predict_layers in their
# config.json names no weights any engine loads: vLLM runs MTP only through the per-family draft
# models of vllm/config/speculative.py `MTP_MODEL_TYPES` (deepseek_mtp, mimo_mtp, glm4_moe_mtp,
# ernie_mtp, qwen3_next_mtp, longcat_flash_mtp, ...; docs/features/spec_decode/mtp.md: "your base
# model must already have pre-trained MTP heads"), SGLang's NEXTN the NextN classes of the same
# families (DeepseekV3ForCausalLMNextN, Glm4MoeForCausalLMNextN, ...). A deny list, so that a new
# MTP family is not refused.
NO_MTP_FAMILIES = frozenset(
    {"llama", "mistral", "mixtral", "qwen2", "qwen3", "qwen3_moe", "gemma2", "gemma3_text",
     "phi3", "gpt_oss"}
)  # fmt: skip

# The scheduling policy each engine runs by default (TensorRT-LLM's CapacitySchedulerPolicy defaults
# to GUARANTEED_NO_EVICT).
ENGINE_POLICY = {
    EngineName.VLLM: "vllm",
    EngineName.VLLM_V0: "vllm-v0",
    EngineName.SGLANG: "sglang",
    EngineName.TRTLLM: "trtllm-no-evict",
}


def _release(version: str | None) -> tuple[int, int, int] | None:
    """(major, minor, patch) of the release the user names (None: none named)."""
    return None if version is None else parse_version(version)


def engine_policy(engine: EngineName, version: str | None) -> str:
    """The admission policy of `engine` at release `version` (None: the latest): vLLM V1 before
    VLLM_FULL_SEQUENCE_RELEASE admits on a request's first chunk."""
    policy = ENGINE_POLICY[engine]
    if policy == "vllm" and version and parse_version(version) < VLLM_FULL_SEQUENCE_RELEASE:
        return "vllm-first-chunk"
    return policy


@dataclass(frozen=True)
class Deployment:
    """Settings resolved against a model and a GPU: what the calculators and simulator take."""

    model: Model
    hardware: HardwareSpec
    settings: DeploymentSettings
    budget: BudgetSettings
    scheme: WeightScheme
    kv_dtype: KVDType
    warnings: tuple[str, ...] = ()
    speculation: Speculation | None = None
    acceptance: Acceptance | None = None  # set with `speculation`
    kernels: KernelTarget | None = None  # set with step_source "kernels"
    # seconds each client's first request of a replayed benchmark run waits more (see
    # `first_wave`); None: the calibrated figure of the engine on the GPU's vendor
    first_wave_s: float | None = None
    # how `resolve` read the settings: relative paths from `base_dir`, a calibration of another
    # deployment applied when `forced`; a re-resolution on another GPU reads them alike
    base_dir: Path | None = None
    forced: bool = False

    def on(
        self, hardware: HardwareSpec, settings: DeploymentSettings | None = None,
        *, layout: str | None = None,
    ) -> Deployment:  # fmt: skip
        """These settings (or `settings`) resolved on `hardware` (and for `layout`, when one is
        named) as this deployment was: a fleet's other GPU types and a pool's GPU dropped --force
        (a forced calibration was refused there) and the spec's folder."""
        return resolve(
            self.model, hardware, settings or self.settings, base_dir=self.base_dir,
            force=self.forced, layout=layout,
        )  # fmt: skip

    def with_warnings_of(self, others: Iterable[Deployment]) -> Deployment:
        """This deployment with the warnings `others` (re-resolutions of it: a fleet's other GPU
        types, other layouts) give that it does not give itself, each once."""
        extra = [w for other in others for w in other.warnings if w not in self.warnings]
        merged = merge_layout_mismatches((*self.warnings, *dict.fromkeys(extra)))
        return replace(self, warnings=merged)

    @property
    def draft(self) -> DraftModel | None:
        """The speculative draft's model (None without speculation or for n-gram)."""
        spec = self.speculation
        return None if spec is None else draft_model(self.model.arch, spec.method)

    def draft_memory(self, layout: Layout) -> DraftMemory | None:
        """What the draft adds to one GPU of `layout` (None without speculation)."""
        if self.speculation is None:
            return None
        return draft_memory(self.draft, layout, self.scheme, self.kv_dtype)

    @property
    def total_memory_bytes(self) -> int:
        """Device memory per GPU: the override, else what the driver reports."""
        given = self.settings.gpu_total_memory
        return self.hardware.hbm_driver_bytes if given is None else given

    @property
    def served_context(self) -> int | None:
        """The longest context the engine serves, tokens: --max-model-len, else the model's by
        the engine's rule (None where the config names none)."""
        given, engine = self.settings.max_model_len, self.settings.engine.value
        return given if given is not None else self.model.arch.context_for(engine)

    def with_warning(self, line: str) -> Deployment:
        """This deployment with one more warning (none for an empty `line`)."""
        return replace(self, warnings=(*self.warnings, line)) if line else self

    def context_length(self, requests: Requests, *, bound: int | None = None) -> int:
        """max_model_len for `requests`, of a workload whose requests are at most `bound`
        tokens long (see `context_length`)."""
        return context_length(
            self.settings.max_model_len,
            requests,
            model_context=self.model.arch.context_for(self.settings.engine.value),
            allow_long=self.settings.allow_long_max_model_len,
            bound=bound,
        )

    @property
    def request_overhead_s(self) -> float:
        """Seconds per request outside the engine's steps: --request-overhead-ms, else a
        calibration's fitted figure (0 where it fitted none), else the engine profile's measured
        default (`EngineProfile.request_overhead_s`; 0 where none is sourced)."""
        return self.request_overhead[0]

    @property
    def request_overhead(self) -> tuple[float, str]:
        """(seconds per request outside the engine's steps, where the figure comes from: "set",
        "calibrated" or "engine default")."""
        if self.settings.request_overhead_ms is not None:
            return self.settings.request_overhead_ms / 1e3, "set"
        terms = dict(self.budget.step_time_terms)
        if any(k in FITTED_TERMS for k in terms):
            return terms.get("request_overhead_s", 0.0), "calibrated"
        profile = engine_profile(self.settings.engine, self.settings.engine_version)
        return profile.request_overhead_s, "engine default"

    @property
    def first_wave(self) -> tuple[float, str]:
        """(seconds each client's first request of a benchmark run waits more, where the figure
        comes from: "set", or the calibrated figure of the engine on the GPU's vendor with its
        basis; 0 where no public run measured one). Only a simulated benchmark run reads it
        (`analysis.sweep.step_fit`)."""
        if self.first_wave_s is not None:
            return self.first_wave_s, "set"
        figure = first_wave_figure(self.settings.engine.value, self.hardware.vendor)
        if figure is None:
            return 0.0, "none measured for this engine and vendor"
        return figure.seconds, (
            f"calibrated: median of {figure.runs} public runs, {figure.deployments} deployments"
        )

    @property
    def speculative_host_s(self) -> float:
        """Host seconds every step exposes because of speculation (SGLang's speculative worker
        without the overlap scheduler); 0 without speculation."""
        if self.speculation is None:
            return 0.0
        return speculative_host_s(self.settings.engine, overlap=self.settings.spec_overlap)

    def overlap_schedule(self, profile_default: bool) -> tuple[bool, str]:
        """(whether the engine runs an overlap scheduler, where that comes from: "set",
        "speculative worker" or "engine default"), given the profile's verdict for the layout
        (`profiles.overlaps`). SGLang's speculative worker without SGLANG_ENABLE_SPEC_V2 turns it
        off (`speculative_host_s` > 0)."""
        if self.settings.overlap_schedule is not None:
            return self.settings.overlap_schedule, "set"
        if self.speculative_host_s > 0:
            return False, "speculative worker"
        return profile_default, "engine default"

    def sim_config(self, max_model_len: int) -> SimConfig:
        """The simulator's engine settings: policy, batch caps (the engine's defaults unless
        given), whether vLLM V0 chunks prefills, preemption mode and DP routing."""
        defaults = engine_defaults(
            self.budget,
            total_memory_bytes=self.total_memory_bytes,
            max_model_len=max_model_len,
            mla=self.model.arch.mla is not None,
            tp=1,  # only SGLang's CUDA-graph batch depends on it, which no batch cap reads
        )
        policy = self.settings.policy or engine_policy(
            self.settings.engine, self.settings.engine_version
        )
        max_num_seqs, engine_cap = defaults.max_num_seqs, None
        if self.speculation is not None and self.settings.max_num_seqs is None:
            engine_cap = speculative_max_num_seqs(self.settings.engine)
            max_num_seqs = engine_cap or max_num_seqs
        refuse_budget_below_seats(
            self.settings.engine, batched=defaults.max_num_batched_tokens, seqs=max_num_seqs,
            seqs_given=self.settings.max_num_seqs is not None,
        )  # fmt: skip
        return SimConfig(
            policy=policy,
            max_num_seqs=max_num_seqs,
            engine_max_num_seqs=engine_cap,
            max_num_batched_tokens=defaults.max_num_batched_tokens,
            preemption=self.settings.preemption,
            routing=self.settings.routing,
            prefix_caching=_caching(self.settings.prefix_caching),
            # V0's default scheduler, only where both the engine and the policy are V0's
            chunked_prefill=defaults.chunked_prefill or policy != "vllm-v0",
            mixed_prefill=defaults.mixed_prefill,
            request_overhead_s=self.request_overhead_s,
            scheduler_recv_interval=self.settings.scheduler_recv_interval or 1,
            adp_balance=self.adp_balance,
        )

    @property
    def adp_balance(self) -> tuple[int, int] | None:
        """TensorRT-LLM's attention-DP balance (timeout_iters, batching_wait_iters), or None
        (off); only attention-DP layouts run it (`capcliff.sim.loop.balance`)."""
        given = self.settings.attention_dp_balance
        return None if given is None else parse_adp_balance(given)

    def memory(self, layout: Layout, max_model_len: int) -> LayoutMemory:
        """The memory verdict of `layout` for requests up to `max_model_len` tokens; with
        --offload, a replica whose GPUs' share of the node's host DRAM (or NVMe) cannot hold its
        tiers does not fit either (a wider replica of the same GPUs may)."""
        mem = layout_memory(
            self.model.arch, self.hardware, layout, scheme=self.scheme, kv_dtype=self.kv_dtype,
            max_model_len=max_model_len, settings=self.budget, draft=self.draft_memory(layout),
        )  # fmt: skip
        if self.settings.offload is None or not mem.fits:
            return mem
        short = offload_shortfall(
            parse_offload(self.settings.offload), self.hardware,
            gpus_per_replica=max(1, layout.gpus // layout.dp),
        )  # fmt: skip
        return mem if short is None else replace(mem, reason=f"does not fit: {short}")

    def capacity(self, memory: LayoutMemory) -> KVCapacity:
        """A fitting layout's KV cache per replica, with the host swap pool."""
        capacity = KVCapacity.of_layout(
            memory, self.hardware, swap_space_bytes=self.settings.swap_space
        )
        if self.speculation is not None:
            capacity = replace(capacity, blocks=self._speculative_blocks(capacity, memory))
        if self.settings.offload is None:
            return capacity
        layout = memory.layout
        tiers = offload_tiers(
            parse_offload(self.settings.offload),
            self.hardware,
            gpus_per_replica=max(1, layout.gpus // layout.dp),
            kv_bytes_per_token_per_gpu=memory.kv_bytes_per_token_per_gpu,
        )
        write_back = self.settings.offload_policy == "write-back"
        return replace(capacity, tiers=tiers, offload_write_back=write_back)

    def without_speculation(self) -> Deployment:
        """The same deployment decoding one token per step (what speculation is compared with:
        no draft in memory, no lookahead slots, plain decode steps)."""
        plain = {
            "speculative": None,
            "spec_acceptance": None,
            "spec_accept_length": None,
            "spec_overlap": None,
        }
        settings = self.settings.model_copy(update=plain)
        return replace(self, settings=settings, speculation=None, acceptance=None)

    def lookahead_tokens_per_sequence(self) -> int:
        """KV slots a running sequence holds past its context under speculation: the K tokens
        each verification writes (vLLM schedules 1 + K tokens per decoding request; SGLang
        allocates `speculative_num_draft_tokens` per request to verify), and on vLLM K more
        lookahead slots for draft-model methods (vllm/v1/core/sched/scheduler.py:
        `num_lookahead_tokens = num_spec_tokens` when `use_eagle()`; n-gram none)."""
        spec = self.speculation
        if spec is None:
            return 0
        k = spec.num_speculative_tokens
        vllm = self.settings.engine in (EngineName.VLLM, EngineName.VLLM_V0)
        return 2 * k if vllm and self.draft is not None else k

    def _speculative_blocks(self, capacity: KVCapacity, memory: LayoutMemory) -> int:
        """The blocks left for context once every sequence the engine may run holds its
        lookahead slots: an upper bound on the reserve (a named assumption: the simulator does
        not track the slots per sequence). No more sequences run at once than max_num_seqs, nor
        than the pool has blocks (each running sequence holds one at least): vLLM allocates the
        lookahead slots of running requests only (`KVCacheManager.allocate_slots`'
        `num_lookahead_tokens`, vllm/v1/core/sched/scheduler.py), so a pool smaller than
        max_num_seqs x lookahead runs fewer sequences, not none."""
        seqs = min(self.sim_config(memory.max_model_len).max_num_seqs, capacity.blocks)
        reserve = -(-seqs * self.lookahead_tokens_per_sequence() // capacity.block_size)
        return max(1, capacity.blocks - reserve)


def sglang_default_fraction(
    dep: Deployment,
    layout: Layout,
    total_memory_bytes: int,
    *,
    vendor: str | None = None,
    disaggregated: bool = False,
) -> float:
    """SGLang's default --mem-fraction-static for `layout` of `dep` (on `vendor`'s GPUs, None:
    `dep`'s; `disaggregated`: a PD-disaggregation worker), as `sglang_budget` sizes the pool."""
    budget = replace(dep.budget, pd_disaggregation=dep.budget.pd_disaggregation or disaggregated)
    server = sglang_server(dep.model.arch, layout, budget, vendor=vendor or dep.hardware.vendor)
    return sglang_mem_fraction_static(total_memory_bytes, tp=server.tp, pp=server.pp, server=server)


def _caching(value: str | None) -> bool | None:
    """--prefix-caching on/off, or None for the engine's default."""
    return None if value is None else value == "on"


def resolve(
    model: Model,
    hardware: HardwareSpec,
    settings: DeploymentSettings,
    *,
    base_dir: Path | None = None,
    force: bool = False,
    layout: str | None = None,
) -> Deployment:
    """Resolve `settings` for `model` on `hardware` (relative paths start at `base_dir`; `layout`:
    the one layout the command sizes, when it sizes one, e.g. `tp8`).

    Refuses what no engine would start with: a KV pool larger than the device, a max_model_len
    past the model's context (unless `allow_long_max_model_len`), a calibration made for another
    deployment (unless `force`: then a warning). A `rope_scaling` replaces the config's RoPE
    table before the model's context is derived (catalogs.with_rope_scaling).
    """
    if settings.rope_scaling is not None and settings.engine is EngineName.TRTLLM:
        raise InputError(
            "rope_scaling: a launch-line RoPE table is modelled for vllm (--hf-overrides) and "
            "sglang (--json-model-override-args); for trtllm, put it in the model's config.json"
        )
    if settings.rope_scaling is not None:
        model = with_rope_scaling(model, json.loads(settings.rope_scaling))
    arch = model.arch
    total = (
        hardware.hbm_driver_bytes
        if settings.gpu_total_memory is None
        else settings.gpu_total_memory
    )
    if settings.kv_cache_memory is not None and settings.kv_cache_memory > total:
        raise InputError(
            f"kv_cache_memory: {settings.kv_cache_memory / 2**30:.2f} GiB per GPU is more than "
            f"the device's {total / 2**30:.2f} GiB"
        )
    refuse_chunked_prefill_switch(settings.engine, settings.enable_chunked_prefill)
    if settings.scheduler_recv_interval is not None and settings.engine is not EngineName.SGLANG:
        raise InputError(
            f"scheduler_recv_interval: SGLang's --scheduler-recv-interval, not a "
            f"{settings.engine.value} setting; leave it unset"
        )
    check_adp_balance(settings, layout)
    refuse_engine_on_vendor(settings, hardware)
    engine_profile(settings.engine, settings.engine_version)  # refuses a release it never had
    refuse_moe_settings_on_dense(settings, model)
    unused = refuse_other_engines_settings(settings)
    check_model_context(settings.max_model_len, arch.context_for(settings.engine.value),
                        allow_long=settings.allow_long_max_model_len)  # fmt: skip
    scheme = WeightScheme.planned(
        arch, None if settings.weight_dtype is None else parse_weight_dtype(settings.weight_dtype)
    )
    if settings.engine is EngineName.SGLANG and (why := sglang_fp4_refusal(scheme, hardware)):
        raise InputError(
            f"engine: {why}: use --engine vllm (FP4 weights through Marlin there), or a "
            "Blackwell GPU"
        )
    kv_dtype = resolved_kv_dtype(arch, settings)
    terms, warnings, step_terms, calibrated_acceptance = calibration_terms(
        settings, model, hardware, weight_dtype=scheme.label_of(Storage.LINEAR),
        kv_dtype=kv_dtype.value, layout=layout, base_dir=base_dir, force=force,
    )  # fmt: skip
    spec, accepted = _speculation(settings, model)
    budget = BudgetSettings(
        engine=settings.engine,
        engine_release=_release(settings.engine_version),
        cudagraph_in_budget=vllm_graphs_in_budget(
            _release(settings.engine_version), hardware.vendor
        ),
        gpu_memory_utilization=settings.gpu_memory_utilization,
        gpu_total_memory_bytes=settings.gpu_total_memory,
        max_num_seqs=settings.max_num_seqs,
        max_num_batched_tokens=settings.max_num_batched_tokens,
        enable_chunked_prefill=settings.enable_chunked_prefill,
        block_size=settings.block_size,
        kv_cache_memory_bytes=settings.kv_cache_memory,
        enforce_eager=settings.enforce_eager,
        flashinfer_sampler=settings.flashinfer_sampler,
        mem_fraction_static=settings.mem_fraction_static,
        speculative=None if spec is None else spec.method.value,
        hierarchical_cache=settings.offload is not None,
        free_gpu_memory_fraction=settings.free_gpu_memory_fraction,
        all2all_backend=settings.all2all_backend,
        term_overrides=terms,
        calibrated_terms=frozenset(terms),
        step_time_terms=step_terms,
    )
    if settings.engine in (EngineName.VLLM, EngineName.TRTLLM):  # defaults free of the context
        seats = engine_defaults(budget, total_memory_bytes=total, max_model_len=1, mla=False, tp=1)
        refuse_budget_below_seats(
            settings.engine, batched=seats.max_num_batched_tokens, seqs=seats.max_num_seqs,
            seqs_given=settings.max_num_seqs is not None,
        )  # fmt: skip
    kv_note = checkpoint_kv_note(arch, settings)
    policy = settings.policy or engine_policy(settings.engine, settings.engine_version)
    tiers = unused_tiers(settings, policy=policy)
    warnings = [*warnings, *unused, *tiers, *([kv_note] if kv_note else [])]
    accepted = calibrated_acceptance or accepted
    return Deployment(
        model=model, hardware=hardware, settings=settings, budget=budget, scheme=scheme,
        kv_dtype=kv_dtype, warnings=tuple(warnings), speculation=spec, acceptance=accepted,
        kernels=_kernels(settings, model, hardware, kv_dtype), base_dir=base_dir, forced=force,
    )  # fmt: skip


def _kernels(
    settings: DeploymentSettings, model: Model, hardware: HardwareSpec, kv_dtype: KVDType
) -> KernelTarget | None:
    """aiconfigurator's target for `--step-source kernels` (None for the roofline); refuses
    what it cannot price, and a calibration or speculation with it."""
    if settings.step_source != "kernels":
        return None
    from capcliff.perf.measured_kernels import kernel_target

    if settings.calibration is not None:
        raise InputError(
            "--step-source kernels: a calibration's terms were fitted to the roofline; "
            "give one or the other"
        )
    if settings.speculative is not None:
        raise InputError("--step-source kernels: speculative decoding is priced by the roofline")
    given = None if settings.weight_dtype is None else parse_weight_dtype(settings.weight_dtype)
    weights = None if given == model.arch.linear_dtype else given  # None: as shipped
    return kernel_target(
        hf_repo=model.hf_repo, hardware_id=hardware.id, engine=settings.engine,
        kv_dtype=kv_dtype, weights=weights, max_context=model.arch.max_position_embeddings,
    )  # fmt: skip


def _speculation(
    settings: DeploymentSettings, model: Model
) -> tuple[Speculation | None, Acceptance | None]:
    """The speculative setting and its acceptance, checked against the model: MTP needs the
    model's own MTP layers (num_nextn_predict_layers); acceptance figures need a method."""
    rates = settings.spec_acceptance
    if settings.speculative is None:
        given = next(
            (name for name in ("spec_acceptance", "spec_accept_length", "spec_overlap")
             if getattr(settings, name) is not None),
            None,
        )  # fmt: skip
        if given is not None:
            raise InputError(f"{given}: needs --speculative (mtp:K, eagle:K[:DRAFT], ngram:K)")
        return None, None
    spec = parse_speculative(settings.speculative)
    if settings.spec_overlap is not None and settings.engine is not EngineName.SGLANG:
        raise InputError(
            f"spec_overlap: SGLang's SGLANG_ENABLE_SPEC_V2, not a {settings.engine.value} "
            "setting; leave it unset"
        )
    if spec.method is SpecMethod.MTP and model.arch.num_mtp_layers == 0:
        raise InputError(
            f"speculative: mtp needs a model with MTP layers (num_nextn_predict_layers); "
            f"{model.id} has none: use eagle:K:DRAFT or ngram:K"
        )
    if spec.method is SpecMethod.MTP and model.arch.model_type in NO_MTP_FAMILIES:
        raise InputError(
            f"speculative: mtp runs a family's own MTP module, and {model.arch.model_type} "
            f"has none in any engine (its num_nextn_predict_layers names no weights): use "
            f"eagle:K:DRAFT or ngram:K"
        )
    accepted = acceptance(
        spec,
        rates=None if rates is None else parse_acceptance(rates),
        length=settings.spec_accept_length,
    )
    return spec, accepted
