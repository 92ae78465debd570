"""The engine and memory settings a user gives, validated once with their domains.

`DeploymentSettings` is the settings of a deployment as the engines name them (CLI flags of
`memory`, `sweep`, `plan`; keys of a `check` scenario). `settings_of` builds them from flags or spec
keys with one-line errors naming the field; `check_gpu_count` checks a GPU count a deployment can
span. Commands that add settings add a field here, and every command and spec gets it.
"""

from __future__ import annotations

import json
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, ValidationInfo, field_validator

from capcliff.analysis.byte_count import DeviceBytes, KVPoolBytes, PoolBytes
from capcliff.analysis.offload import parse_offload
from capcliff.catalog.layout import MAX_GPUS
from capcliff.errors import InputError
from capcliff.file_fields import refuse_bool_number
from capcliff.files import json_problem
from capcliff.memory.budget import EngineName
from capcliff.memory.deepep import AllToAllBackend
from capcliff.perf.speculation import parse_acceptance, parse_speculative, speculative_text
from capcliff.sim.config import RECV_WEIGHT_EXTEND, PreemptionMode, Routing, parse_adp_balance
from capcliff.sim.policy_names import POLICY_NAMES
from capcliff.units import parse_kv_dtype, parse_weight_dtype

# The largest set-up cost of one KV transfer accepted, ms: a minute, far past any network's (NIXL
# and Mooncake set up a transfer in well under a millisecond to a few ms); more is a unit slip.
MAX_KV_TRANSFER_OVERHEAD_MS = 60_000.0


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
    policy: str | None = None  # admission policy; default: the engine's (deployment.ENGINE_POLICY)
    weight_dtype: str | None = None  # default: as the checkpoint ships
    # None: the engine's default, `auto` (kv_cache_default.resolved_kv_dtype)
    kv_cache_dtype: str | None = None
    max_model_len: int | None = Field(default=None, ge=1)  # tokens; default: longest request
    allow_long_max_model_len: bool = False  # vLLM's VLLM_ALLOW_LONG_MAX_MODEL_LEN
    # a RoPE table over config.json's (vLLM --rope-scaling, --hf-overrides '{"rope_scaling":
    # ...}', SGLang --json-model-override-args), as canonical JSON; the model's context is
    # derived from it (catalogs.with_rope_scaling)
    rope_scaling: str | None = None
    gpu_memory_utilization: float = Field(default=0.9, gt=0, le=1)  # vLLM
    gpu_total_memory: DeviceBytes | None = None  # overrides the driver-reported total
    kv_cache_memory: KVPoolBytes | None = None  # vLLM --kv-cache-memory, per GPU
    max_num_seqs: int | None = Field(default=None, ge=1)  # per replica
    max_num_batched_tokens: int | None = Field(default=None, ge=1)  # per step, per replica
    enable_chunked_prefill: bool | None = None  # vLLM V0 only; None: V0's default (engines.py)
    block_size: int | None = Field(default=None, ge=1, le=MAX_BLOCK_SIZE)  # tokens per KV block
    enforce_eager: bool = False
    # vLLM V1 samples with FlashInfer (<= 0.11.0: FlashInfer installed; from 0.11.1:
    # VLLM_USE_FLASHINFER_SAMPLER=1): a smaller profile-run sampler peak (BudgetSettings)
    flashinfer_sampler: bool = False
    mem_fraction_static: float | None = Field(default=None, gt=0, le=1)  # SGLang
    free_gpu_memory_fraction: float = Field(default=0.9, gt=0, le=1)  # TensorRT-LLM
    # MoE all-to-all: vLLM --all2all-backend, SGLang --moe-a2a-backend (+ --deepep-mode)
    all2all_backend: AllToAllBackend = AllToAllBackend.NONE
    calibration: str | None = None  # a calibration file from `capcliff calibrate`
    preemption: PreemptionMode = PreemptionMode.RECOMPUTE
    swap_space: PoolBytes | None = None  # host swap pool per GPU (default vLLM's 4 GiB)
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
    # SGLang's dense block-FP8 GEMM kernel (--fp8-gemm-backend; SGL_ENABLE_JIT_DEEPGEMM=false
    # selects flashinfer_trtllm on Blackwell): which measured line prices those GEMMs' FLOPs
    # on sm100 GPUs (perf/flashinfer_gemm.py); None: DeepGEMM, the engine's default
    fp8_gemm_backend: str | None = None
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

    @field_validator("rope_scaling", mode="before")
    @classmethod
    def _rope_scaling(cls, value: object) -> object:
        if isinstance(value, str):
            text, (value, problem) = value, json_problem(value)
            if problem is not None:
                raise ValueError(
                    f"{text!r:.60} is no JSON object ({problem:.80}); give one such as "
                    '\'{"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": '
                    "32768}'"
                )
        if value is None:
            return None
        if not isinstance(value, dict) or not value:
            raise ValueError(
                f"must be a RoPE table (a JSON object with a rope_type), got {value!r:.60}"
            )
        return json.dumps(value, sort_keys=True)

    @field_validator("calibration")
    @classmethod
    def _calibration(cls, value: str | None) -> str | None:
        if value is not None and not value.strip():  # read as "." (a directory) unsaid
            raise ValueError("blank; give a calibration file written by `capcliff calibrate`")
        return value

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

    @field_validator("fp8_gemm_backend")
    @classmethod
    def _fp8_gemm_backend(cls, value: str | None) -> str | None:
        from capcliff.perf.flashinfer_gemm import FP8_GEMM_BACKENDS

        if value is None:
            return None
        name = value.strip().lower()
        if name not in FP8_GEMM_BACKENDS:
            raise ValueError(f"unknown {value!r}; valid: {', '.join(FP8_GEMM_BACKENDS)}")
        return name

    @field_validator("speculative")
    @classmethod
    def _speculative(cls, value: str | None) -> str | None:
        if value is None:
            return None
        _accepted(parse_speculative, value)
        return speculative_text(parse_speculative(value))  # an engine's name as capcliff's

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
        from capcliff.releases import parse_version

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
    def _kv_dtype(cls, value: str | None) -> str | None:
        # `auto` is the engines' default by its own name: left to the engine, as not given
        if value is None or value.strip().lower() == "auto":
            return None
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
        shown = repr(error.get("input"))
        got = (
            ""  # the message quotes the value already (cut to 60 characters where long)
            if "got" in message or shown in message or shown[:59] in message
            else (f", got {shown:.60}")
        )
        raise InputError(f"{where}: {message}{got}") from None
