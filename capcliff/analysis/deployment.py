"""From the user's settings to the core's inputs: one resolution shared by every command.

`DeploymentSettings` is the engine and memory settings a user gives (CLI flags of `memory`,
`sweep`, `plan`; keys of a `check` scenario), validated once with their domains. `resolve`
turns them, with a model and a GPU, into a `Deployment`: the budget settings, weight and KV
formats, the simulator's engine settings and any calibration, checked against each other.
`context_length` is the one rule for max_model_len (given, or the longest request rounded up;
never shorter than a request, never past the model's context unless allowed). Commands that add
settings add a field here, and every command and spec gets it.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    ValidationInfo,
    field_validator,
)

from capcliff.analysis.byte_count import ByteCount, DeviceBytes
from capcliff.analysis.offload import offload_tiers, parse_offload
from capcliff.catalog.catalogs import Model
from capcliff.catalog.layout import MAX_GPUS as MAX_GPUS  # re-exported: its home until issue 23
from capcliff.catalog.layout import Layout, parse_layout
from capcliff.catalog.specs import HardwareSpec
from capcliff.errors import InputError
from capcliff.file_fields import refuse_bool_number
from capcliff.memory.budget import BudgetSettings, EngineName
from capcliff.memory.deepep import AllToAllBackend
from capcliff.memory.draft import (
    DraftMemory,
    DraftModel,
    SpecMethod,
    draft_memory,
    draft_model,
)
from capcliff.memory.engines import engine_defaults
from capcliff.memory.layout_memory import LayoutMemory, layout_memory
from capcliff.memory.weights import WeightScheme
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
from capcliff.sim.config import (
    RECV_WEIGHT_EXTEND,
    KVCapacity,
    PreemptionMode,
    Routing,
    SimConfig,
    parse_adp_balance,
)
from capcliff.sim.policy_names import POLICY_NAMES, VLLM_FULL_SEQUENCE_RELEASE
from capcliff.units import GIB, KVDType, parse_kv_dtype, parse_weight_dtype, round_up

if TYPE_CHECKING:
    from capcliff.perf.measured_kernels import KernelTarget
    from capcliff.sim.traffic.workload import Requests

# The scheduling policy each engine runs by default (TensorRT-LLM's CapacitySchedulerPolicy defaults
# to GUARANTEED_NO_EVICT).
ENGINE_POLICY = {
    EngineName.VLLM: "vllm",
    EngineName.VLLM_V0: "vllm-v0",
    EngineName.SGLANG: "sglang",
    EngineName.TRTLLM: "trtllm-no-evict",
}


def engine_policy(engine: EngineName, version: str | None) -> str:
    """The admission policy of `engine` at release `version` (None: the latest): vLLM V1 before
    VLLM_FULL_SEQUENCE_RELEASE admits on a request's first chunk."""
    from capcliff.perf.profiles import parse_version

    policy = ENGINE_POLICY[engine]
    if policy == "vllm" and version and parse_version(version) < VLLM_FULL_SEQUENCE_RELEASE:
        return "vllm-first-chunk"
    return policy


# The largest set-up cost of one KV transfer accepted, ms: a minute, far past any network's (NIXL
# and Mooncake set up a transfer in well under a millisecond to a few ms); more is a unit slip.
MAX_KV_TRANSFER_OVERHEAD_MS = 60_000.0
# A max_model_len derived from the workload is its longest request rounded up to whole KiB tokens.
CONTEXT_ROUNDING = 1024


# A sanity bound on the KV block (page) size, tokens: vLLM takes 1 to 256 (`BlockSize =
# Literal[1, 8, 16, 32, 64, 128, 256]`, vllm/config/cache.py); assumption: no engine pages KV in
# blocks past 1,024 tokens (10**26 was sized as "0 blocks" needing 10**19 TB per request).
MAX_BLOCK_SIZE = 1024


class DeploymentSettings(BaseModel):
    """The engine and memory settings of a deployment, as the engines name them.

    None means "not given" (the engine's default, or a value derived from the workload). Every
    command that sizes memory takes all of them (flags `--weight-dtype`, `--kv-cache-memory` ...;
    spec keys of the same names with underscores).
    """

    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)

    @field_validator("*", mode="before")
    @classmethod
    def _no_bool_numbers(cls, value: Any, info: ValidationInfo) -> Any:
        return refuse_bool_number(cls, value, info)

    engine: EngineName = EngineName.VLLM
    # the engine's release, for its step-time profile (profiles.engine_profile); None: the
    # latest modelled release
    engine_version: str | None = None
    policy: str | None = None  # admission policy; default: the engine's (ENGINE_POLICY)
    weight_dtype: str | None = None  # default: as the checkpoint ships
    kv_cache_dtype: str = "bf16"
    max_model_len: int | None = Field(default=None, ge=1)  # tokens; default: longest request
    allow_long_max_model_len: bool = False  # vLLM's VLLM_ALLOW_LONG_MAX_MODEL_LEN
    gpu_memory_utilization: float = Field(default=0.9, gt=0, le=1)  # vLLM
    gpu_total_memory: DeviceBytes | None = None  # overrides the driver-reported total
    kv_cache_memory: ByteCount | None = None  # vLLM --kv-cache-memory, per GPU
    max_num_seqs: int | None = Field(default=None, ge=1)  # per replica
    max_num_batched_tokens: int | None = Field(default=None, ge=1)  # per step, per replica
    enable_chunked_prefill: bool | None = None  # vLLM V0 only; None: V0's default (engines.py)
    block_size: int | None = Field(default=None, ge=1, le=MAX_BLOCK_SIZE)  # tokens per KV block
    enforce_eager: bool = False
    mem_fraction_static: float | None = Field(default=None, gt=0, le=1)  # SGLang
    free_gpu_memory_fraction: float = Field(default=0.9, gt=0, le=1)  # TensorRT-LLM
    # MoE all-to-all: vLLM --all2all-backend, SGLang --moe-a2a-backend (+ --deepep-mode)
    all2all_backend: AllToAllBackend = AllToAllBackend.NONE
    calibration: str | None = None  # a calibration file from `capcliff calibrate`
    preemption: PreemptionMode = PreemptionMode.RECOMPUTE
    swap_space: ByteCount | None = None  # host swap pool per GPU (default vLLM's 4 GiB)
    routing: Routing = Routing.ROUND_ROBIN  # how requests reach data-parallel replicas
    # prefix caching: on / off; None: the engine's default (vllm, sglang: on for workloads that
    # share content; single-turn workloads keep the simulator's results without it)
    prefix_caching: Literal["on", "off"] | None = None
    offload: str | None = None  # KV offload tiers per replica, e.g. cpu:512GiB,nvme:4TiB
    # disaggregated serving: the set-up cost of one KV transfer (default: kv_transfer's 1 ms)
    kv_transfer_overhead_ms: float | None = Field(
        default=None, ge=0, le=MAX_KV_TRANSFER_OVERHEAD_MS, allow_inf_nan=False
    )
    offload_policy: Literal["write-through", "write-back"] = "write-through"
    # ms each request spends outside the engine's steps (HTTP, tokenization, the first chunk, the
    # client): SimConfig.request_overhead_s; default: the calibration's fitted figure, else 0
    request_overhead_ms: float | None = Field(default=None, ge=0, le=60_000, allow_inf_nan=False)
    # speculative decoding: mtp:K, eagle:K[:DRAFT] or ngram:K (perf/speculation.py); its
    # acceptance: K per-position rates (0.8,0.6,0.4) or a mean acceptance length, else the
    # method's published default
    speculative: str | None = None
    spec_acceptance: str | None = None
    spec_accept_length: float | None = Field(default=None, ge=1)
    # SGLang: SGLANG_ENABLE_SPEC_V2=1, speculation under the overlap scheduler (True) or not
    # (False); None: the engine's default (0.5.x: off, perf/speculation.py)
    spec_overlap: bool | None = None
    # the engine's overlap scheduler (a request arriving during step N runs from step N + 2):
    # on (True) or off (False: SGLang --disable-overlap-schedule, TensorRT-LLM
    # disable_overlap_scheduler); None: the engine's default (EngineProfile.overlap_schedule)
    overlap_schedule: bool | None = None
    # SGLang --scheduler-recv-interval: new requests are received every N decode steps (and at
    # the first step after one that prefills); None: every step (SimConfig.scheduler_recv_interval)
    scheduler_recv_interval: int | None = Field(default=None, ge=1, le=RECV_WEIGHT_EXTEND)
    # the engine's MoE backend (TensorRT-LLM moe_config.backend, SGLang --moe-runner-backend),
    # which picks the measured MoE rows of DeepSeek's experts; None: the engine's default
    moe_backend: str | None = None
    # what prices the engine steps: the roofline (perf/step_time.py) or aiconfigurator's
    # measured kernel tables (perf/measured_kernels.py, the optional `kernels` extra)
    step_source: Literal["roofline", "kernels"] = "roofline"
    # TensorRT-LLM attention_dp_config under attention DP: "on" (enable_balance with the
    # engine's timeout_iters 50, batching_wait_iters 10), "TIMEOUT[:BATCHING_WAIT]" (e.g. 60:0,
    # InferenceX's R1 scripts) or "off"; None: off, as the engine ships (SimConfig.adp_balance)
    attention_dp_balance: str | None = None

    @field_validator("attention_dp_balance")
    @classmethod
    def _attention_dp_balance(cls, value: str | None) -> str | None:
        return None if value is None else _accepted(parse_adp_balance, value).strip().lower()

    @field_validator("step_source")
    @classmethod
    def _step_source(cls, value: str) -> str:
        from capcliff.perf.measured_kernels import INSTALL_HINT, extra_installed

        if value == "kernels" and not extra_installed():
            raise ValueError(f"'kernels' needs aiconfigurator-core: {INSTALL_HINT}")
        return value

    @field_validator("moe_backend")
    @classmethod
    def _moe_backend(cls, value: str | None) -> str | None:
        from capcliff.perf.moe_tables import moe_kernel

        if value is None:
            return None
        moe_kernel(value)  # raises with the valid names
        return value.strip().lower()

    @field_validator("speculative")
    @classmethod
    def _speculative(cls, value: str | None) -> str | None:
        return None if value is None else _accepted(parse_speculative, value)

    @field_validator("spec_acceptance")
    @classmethod
    def _spec_acceptance(cls, value: str | None) -> str | None:
        return None if value is None else _accepted(parse_acceptance, value)

    @field_validator("offload")
    @classmethod
    def _offload(cls, value: str | None) -> str | None:
        return None if value is None else _accepted(parse_offload, value)

    @field_validator("offload_policy")
    @classmethod
    def _policy_of_tiers(cls, value: str, info: ValidationInfo) -> str:
        # write-back without tiers to write to was silently unused (a refused offload is
        # missing from info.data and reported on its own; write-through is the default)
        if value == "write-back" and "offload" in info.data and info.data["offload"] is None:
            raise ValueError("needs offload tiers to write to (offload, e.g. cpu:512GiB)")
        return value

    @field_validator("engine_version")
    @classmethod
    def _release(cls, value: str | None) -> str | None:
        from capcliff.perf.profiles import parse_version

        return None if value is None else _accepted(parse_version, value)

    @field_validator("policy")
    @classmethod
    def _known_policy(cls, value: str | None) -> str | None:
        if value is not None and value not in POLICY_NAMES:
            raise ValueError(f"unknown {value!r}; known: {', '.join(POLICY_NAMES)}")
        return value

    @field_validator("weight_dtype")
    @classmethod
    def _weight_dtype(cls, value: str | None) -> str | None:
        return None if value is None else _accepted(parse_weight_dtype, value)

    @field_validator("kv_cache_dtype")
    @classmethod
    def _kv_dtype(cls, value: str) -> str:
        return _accepted(parse_kv_dtype, value)


def _accepted(parse: Any, text: str) -> str:
    try:
        parse(text)
    except InputError as exc:
        raise ValueError(str(exc).split(": ", 1)[-1]) from None
    return text


def check_gpu_count(gpus: int, *, gpus_per_node: int, field: str = "gpus") -> int:
    """`gpus` if a deployment can span it: 1 to MAX_GPUS, at most one node or whole nodes."""
    if gpus < 1 or gpus > MAX_GPUS:
        raise InputError(f"{field}: {gpus:,} is outside 1 to {MAX_GPUS:,}")
    if gpus > gpus_per_node and gpus % gpus_per_node:
        raise InputError(
            f"{field}: {gpus} is neither at most one node ({gpus_per_node}) nor a multiple of it"
        )
    return gpus


def settings_of(values: dict[str, Any], *, flag_names: bool = True) -> DeploymentSettings:
    """Validated settings from `values` (None entries are "not given"); one-line errors naming
    the flag (`--max-num-seqs`) or, with `flag_names=False`, the key."""
    given = {k: v for k, v in values.items() if v is not None}
    try:
        return DeploymentSettings.model_validate(given)
    except ValidationError as exc:
        error = exc.errors()[0]
        name = str(error["loc"][0]) if error["loc"] else "settings"
        where = "--" + name.replace("_", "-") if flag_names else name
        message = error["msg"].removeprefix("Value error, ")
        got = (
            ""
            if "got" in message or repr(error.get("input")) in message
            else (f", got {error.get('input')!r}")
        )
        raise InputError(f"{where}: {message}{got}") from None


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

    def context_length(self, requests: Requests) -> int:
        """max_model_len for `requests` (see `context_length`)."""
        return context_length(
            self.settings.max_model_len,
            requests,
            model_context=self.model.arch.max_position_embeddings,
            allow_long=self.settings.allow_long_max_model_len,
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
        """The memory verdict of `layout` for requests up to `max_model_len` tokens."""
        return layout_memory(
            self.model.arch, self.hardware, layout, scheme=self.scheme, kv_dtype=self.kv_dtype,
            max_model_len=max_model_len, settings=self.budget, draft=self.draft_memory(layout),
        )  # fmt: skip

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
        """The blocks left for context once every sequence the engine may run
        (max_num_seqs) holds its lookahead slots: an upper bound on the reserve (a named
        assumption: the simulator does not track the slots per sequence)."""
        seqs = self.sim_config(memory.max_model_len).max_num_seqs
        reserve = -(-seqs * self.lookahead_tokens_per_sequence() // capacity.block_size)
        return max(1, capacity.blocks - reserve)


def _caching(value: str | None) -> bool | None:
    """--prefix-caching on/off, or None for the engine's default."""
    return None if value is None else value == "on"


def _refuse_terms_past_the_device(
    terms: dict[str, int], path: Path, hardware: HardwareSpec, settings: DeploymentSettings
) -> None:
    """An InputError when a calibrated term (bytes per GPU) is more than the whole device."""
    device = max(hardware.hbm_driver_bytes, settings.gpu_total_memory or 0)
    for name, size in terms.items():
        if size > device:  # 5,000 GiB of activations printed a KV cache of -4,894 GiB
            raise InputError(
                f"calibration: {path}: terms_gib.{name}: {size / GIB:,.2f} GiB per GPU is more "
                f"than {hardware.id}'s {device / GIB:,.2f} GiB; a term of another deployment or "
                "unit"
            )


def _calibration_terms(
    settings: DeploymentSettings,
    model: Model,
    hardware: HardwareSpec,
    *,
    weight_dtype: str,
    layout: str | None,
    base_dir: Path | None,
    force: bool,
) -> tuple[dict[str, int], list[str], tuple[tuple[str, float], ...], Acceptance | None]:
    """The calibrated terms (bytes), warnings, step-time terms and the calibrated acceptance of
    the deployment's speculation; a calibration made for another deployment (or another
    speculative setting) is refused unless `force`."""
    if settings.calibration is None:
        return {}, [], (), None
    from capcliff.calibrate.calibration_file import calibration_mismatches, load_calibration

    path = Path(settings.calibration)
    if base_dir is not None and not path.is_absolute():
        path = base_dir / path
    calibration = load_calibration(path)
    mismatches = calibration_mismatches(
        calibration,
        engine=settings.engine,
        model=model.id,
        gpu=hardware.id,
        weight_dtype=weight_dtype,
        kv_cache_dtype=parse_kv_dtype(settings.kv_cache_dtype).value,
        layout=layout,
        model_shape=model.arch.shape_label,
    )
    fitted = calibration.speculative
    accepted, spec_note = None, []
    if fitted is not None and settings.speculative is not None:
        mine, theirs = (parse_speculative(t) for t in (settings.speculative, fitted.speculative))
        same = (mine.method, mine.num_speculative_tokens) == (
            theirs.method,
            theirs.num_speculative_tokens,
        )
        if not same:
            mismatches.append(f"speculative {fitted.speculative} != {settings.speculative}")
        elif settings.spec_acceptance is None and settings.spec_accept_length is None:
            seen = f"{fitted.concurrency_min}-{fitted.concurrency_max} clients, "
            accepted = Acceptance(
                fitted.accept_length,
                f"calibrated from {fitted.source} ({seen if fitted.concurrency_min else ''}"
                f"{fitted.points} runs)",
            )
    elif fitted is not None:
        spec_note.append(
            f"calibration {path}: its acceptance length ({fitted.accept_length:.2f} tokens per "
            f"step) applies only with --speculative {fitted.speculative}"
        )
    if mismatches and not force:
        raise InputError(
            f"calibration: {path} was made for another deployment ({'; '.join(mismatches)}); "
            "pass --force to apply it anyway"
        )
    warnings = (
        [f"calibration {path} applied to another deployment: {'; '.join(mismatches)}"]
        if mismatches
        else []
    )
    step = calibration.step_time
    if step is not None and step.concurrency_min is not None:
        warnings.append(
            f"calibration {path}: step times fitted at {step.concurrency_min}-"
            f"{step.concurrency_max} concurrent requests ({step.points} runs); figures at other "
            "concurrencies extrapolate them"
        )
    if calibration.gpu is None:
        warnings.append(
            f"calibration {path} does not record the GPU it was made on: it applies to "
            f"{hardware.id} only if it was made there"
        )
    _refuse_terms_past_the_device(calibration.terms_bytes, path, hardware, settings)
    return calibration.terms_bytes, warnings + spec_note, calibration.step_time_terms, accepted


def _check_adp_balance(settings: DeploymentSettings, layout: str | None) -> None:
    """TensorRT-LLM's attention_dp_config is refused for another engine, and for a named layout
    without attention DP (a sweep or plan over several layouts applies it to those with it)."""
    if settings.attention_dp_balance in (None, "off"):
        return
    if settings.engine is not EngineName.TRTLLM:
        raise InputError(
            f"attention_dp_balance: TensorRT-LLM's attention_dp_config, not a "
            f"{settings.engine.value} setting; leave it unset"
        )
    if layout is not None and not parse_layout(layout).attention_dp:
        raise InputError(
            f"attention_dp_balance: layout {layout} has no attention DP; it balances attention-DP "
            "ranks (a layout such as dpa8 or dp8-ep8)"
        )


def refuse_disagg_only(settings: DeploymentSettings, *, disagg: bool) -> None:
    """The KV transfer's set-up cost prices the prefill-to-decode hand-off; an aggregated
    deployment has none, and the setting was dropped unsaid."""
    if not disagg and settings.kv_transfer_overhead_ms is not None:
        raise InputError(
            "kv_transfer_overhead_ms: the prefill-to-decode KV hand-off's cost; it applies "
            "with disagg only"
        )


def _refuse_moe_settings_on_dense(settings: DeploymentSettings, model: Model) -> None:
    """The MoE backend and the all-to-all backend pick expert kernels and expert dispatch; on a
    dense model they were dropped unsaid."""
    if model.arch.moe is not None:
        return
    given = [name for name, on in (
        ("moe_backend", settings.moe_backend is not None),
        ("all2all_backend", settings.all2all_backend is not AllToAllBackend.NONE),
    ) if on]  # fmt: skip
    if given:
        raise InputError(
            f"{given[0]}: picks the experts' kernels or dispatch; {model.id} is dense (no "
            "experts); leave it unset"
        )


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
    deployment (unless `force`: then a warning).
    """
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
    if settings.enable_chunked_prefill is not None and settings.engine is not EngineName.VLLM_V0:
        raise InputError(f"enable_chunked_prefill: modelled for vllm-v0, not {settings.engine}")
    if settings.scheduler_recv_interval is not None and settings.engine is not EngineName.SGLANG:
        raise InputError(
            f"scheduler_recv_interval: SGLang's --scheduler-recv-interval, not a "
            f"{settings.engine.value} setting; leave it unset"
        )
    _check_adp_balance(settings, layout)
    _refuse_moe_settings_on_dense(settings, model)
    unused = _refuse_other_engines_settings(settings)
    check_model_context(settings.max_model_len, arch.max_position_embeddings,
                        allow_long=settings.allow_long_max_model_len)  # fmt: skip
    scheme = (
        WeightScheme.as_shipped(arch)
        if settings.weight_dtype is None
        else WeightScheme.quantised(arch, parse_weight_dtype(settings.weight_dtype))
    )
    terms, warnings, step_terms, calibrated_acceptance = _calibration_terms(
        settings, model, hardware, weight_dtype=scheme.linear.value, layout=layout,
        base_dir=base_dir, force=force,
    )  # fmt: skip
    budget = BudgetSettings(
        engine=settings.engine,
        gpu_memory_utilization=settings.gpu_memory_utilization,
        gpu_total_memory_bytes=settings.gpu_total_memory,
        max_num_seqs=settings.max_num_seqs,
        max_num_batched_tokens=settings.max_num_batched_tokens,
        enable_chunked_prefill=settings.enable_chunked_prefill,
        block_size=settings.block_size,
        kv_cache_memory_bytes=settings.kv_cache_memory,
        enforce_eager=settings.enforce_eager,
        mem_fraction_static=settings.mem_fraction_static,
        free_gpu_memory_fraction=settings.free_gpu_memory_fraction,
        all2all_backend=settings.all2all_backend,
        term_overrides=terms,
        calibrated_terms=frozenset(terms),
        step_time_terms=step_terms,
    )
    warnings = [*warnings, *unused, *_unused_tiers(settings)]
    spec, accepted = _speculation(settings, model)
    accepted = calibrated_acceptance or accepted
    kv_dtype = parse_kv_dtype(settings.kv_cache_dtype)
    return Deployment(
        model=model, hardware=hardware, settings=settings, budget=budget, scheme=scheme,
        kv_dtype=kv_dtype, warnings=tuple(warnings), speculation=spec, acceptance=accepted,
        kernels=_kernels(settings, model, hardware, kv_dtype),
    )  # fmt: skip


# Memory settings one engine family reads and the others ignore (memory/engines.py): given for
# another engine they were dropped unsaid (`--engine sglang --gpu-memory-utilization 0.5` sized
# SGLang's own fraction).
ENGINE_SETTINGS: dict[str, tuple[frozenset[EngineName], str]] = {
    "gpu_memory_utilization": (
        frozenset({EngineName.VLLM, EngineName.VLLM_V0}),
        "vLLM's --gpu-memory-utilization",
    ),
    "kv_cache_memory": (
        frozenset({EngineName.VLLM, EngineName.VLLM_V0}),
        "vLLM's --kv-cache-memory",
    ),
    "mem_fraction_static": (frozenset({EngineName.SGLANG}), "SGLang's --mem-fraction-static"),
    "free_gpu_memory_fraction": (
        frozenset({EngineName.TRTLLM}),
        "TensorRT-LLM's kv_cache_free_gpu_memory_fraction",
    ),
}


def _unused_tiers(settings: DeploymentSettings) -> list[str]:
    """A warning for offload tiers with prefix caching turned off: the tiers extend the prefix
    cache (a lookup finds a block there after HBM evicted it), so with no lookups they change no
    figure."""
    if settings.offload is None or settings.prefix_caching != "off":
        return []
    return [
        "offload: the tiers hold the prefix cache's evicted blocks and prefix caching is off, so "
        "nothing is looked up in them and they change no figure; turn prefix caching on or "
        "drop the tiers"
    ]


def _refuse_other_engines_settings(settings: DeploymentSettings) -> list[str]:
    """Refuses a setting given (flag or spec key) that the deployment's engine does not read
    (one line naming it); a warning for a swap pool without swap preemption (a `vllm serve`
    command carries --swap-space whatever it preempts with)."""
    given = settings.model_fields_set
    for name, (engines, what) in ENGINE_SETTINGS.items():
        if name in given and settings.engine not in engines:
            raise InputError(
                f"{name}: {what}, not a {settings.engine.value} setting; leave it unset"
            )
    if "swap_space" in given and settings.preemption is not PreemptionMode.SWAP:
        return ["swap_space: unused: only swap preemption (preemption swap) copies KV to host"]
    return []


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
    accepted = acceptance(
        spec,
        rates=None if rates is None else parse_acceptance(rates),
        length=settings.spec_accept_length,
    )
    return spec, accepted


def check_model_context(
    max_model_len: int | None, model_context: int | None, *, allow_long: bool
) -> None:
    """Refuse a max_model_len past the model's context, as vLLM does (it starts only with
    VLLM_ALLOW_LONG_MAX_MODEL_LEN=1; vllm/config: `_get_and_verify_max_len`)."""
    if max_model_len is None or model_context is None or allow_long:
        return
    if max_model_len > model_context:
        raise InputError(
            f"max_model_len: {max_model_len} is longer than the model's context "
            f"({model_context} tokens, max_position_embeddings); pass "
            "--allow-long-max-model-len (allow_long_max_model_len) to plan it anyway"
        )


def context_length(
    given: int | None, requests: Requests, *, model_context: int | None, allow_long: bool
) -> int:
    """max_model_len: `given`, else the longest request rounded up to CONTEXT_ROUNDING (at most
    the model's context). A request longer than it is refused, with the numbers: an engine
    would reject it."""
    lengths = requests.input_tokens + requests.max_output_tokens
    import numpy as np  # only where a workload is sized: `capcliff memory` never needs it

    index = int(np.argmax(lengths))
    longest = int(lengths[index])
    request = (
        f"the longest request ({longest} tokens: {int(requests.input_tokens[index])} input + "
        f"{int(requests.max_output_tokens[index])} output)"
    )
    if given is not None:
        check_model_context(given, model_context, allow_long=allow_long)
        if longest > given:
            raise InputError(f"max_model_len: {given} is shorter than {request}")
        return given
    if model_context is None or allow_long:
        return round_up(longest, CONTEXT_ROUNDING)
    if longest > model_context:
        raise InputError(
            f"workload: {request} is longer than the model's context ({model_context} tokens); "
            "shorten it or pass --allow-long-max-model-len"
        )
    return min(round_up(longest, CONTEXT_ROUNDING), model_context)
