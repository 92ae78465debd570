"""Compare an engine's start-up log with capcliff's prediction, and fit the overhead terms.

The prediction uses the configuration the log states (total memory, utilisation, parallel sizes,
max_model_len, quantisation, batch settings); the fitted terms are the log's own figures for the
overheads capcliff can only model (activation peak, non-PyTorch memory, CUDA graphs, load-time
buffers), written to a calibration file that `--calibration` applies to later commands.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from capcliff.calibrate.calibration_file import Calibration
from capcliff.calibrate.startup_logs import LogFormat, StartupLog
from capcliff.catalog.catalogs import Model, current_repo_name
from capcliff.catalog.layout import Layout, parse_layout
from capcliff.catalog.specs import HardwareSpec
from capcliff.errors import InputError
from capcliff.memory.budget import BudgetSettings, EngineName
from capcliff.memory.kv_default import checkpoint_kv_dtype
from capcliff.memory.layout_memory import LayoutMemory, layout_memory
from capcliff.memory.overheads import DEFAULT_CUDA_CONTEXT_BYTES, vllm_graphs_in_budget
from capcliff.memory.params import Storage
from capcliff.memory.weights import WeightScheme
from capcliff.releases import parse_version
from capcliff.units import GIB, KVDType, WeightDType, parse_weight_dtype

ENGINE_OF_FORMAT = {
    LogFormat.VLLM_V1: EngineName.VLLM,
    LogFormat.VLLM_V0: EngineName.VLLM_V0,
    LogFormat.SGLANG: EngineName.SGLANG,
    LogFormat.TRTLLM: EngineName.TRTLLM,
}


@dataclass(frozen=True)
class ComparedFigure:
    """One figure of the log next to capcliff's prediction, before and after calibration."""

    name: str
    logged: float
    predicted: float
    calibrated: float

    @property
    def error(self) -> float:
        """Relative error of the uncalibrated prediction (0.05 = 5 % high)."""
        return (self.predicted - self.logged) / self.logged if self.logged else 0.0


@dataclass(frozen=True)
class CalibrationResult:
    """What `capcliff calibrate` reports and writes."""

    engine: EngineName
    layout: Layout
    max_model_len: int
    figures: tuple[ComparedFigure, ...]
    calibration: Calibration
    notes: tuple[str, ...] = ()


def _config_int(log: StartupLog, key: str, default: int) -> int:
    """A parallel size from the log's config (`default` when it names none); a size under 1
    or with a fraction is an InputError (tensor_parallel_size=0 divided by zero before)."""
    value = log.config.get(key)
    if not isinstance(value, int | float) or isinstance(value, bool):
        return default
    if value < 1 or value != int(value):
        raise InputError(f"logfile: {key}: must be an integer >= 1, got {value:g}")
    return int(value)


def _fig(log: StartupLog, name: str) -> float | None:
    figure = log.figures.get(name)
    return None if figure is None else figure.value


def log_layout(log: StartupLog, model: Model) -> Layout:
    """The parallel layout the log ran with (EP when the log enabled expert parallelism)."""
    tp = _config_int(log, "tensor_parallel_size", 1)
    pp = _config_int(log, "pipeline_parallel_size", 1)
    dp = _config_int(log, "data_parallel_size", 1)
    ep = dp * tp if log.config.get("enable_expert_parallel") and model.arch.moe else 1
    return Layout(dp=dp, tp=tp, pp=pp, ep=ep)


def log_max_model_len(log: StartupLog, fallback: int | None) -> int:
    """max_model_len from the log's config, its concurrency line or its failure."""
    for value in (stated_max_model_len(log), fallback):
        if value is not None and value > 0:
            return int(value)
    return 8192


def stated_max_model_len(log: StartupLog) -> int | None:
    """The max_model_len the log states (its config, concurrency line or failure), else None."""
    for value in (
        log.config.get("max_model_len"),
        _fig(log, "max_concurrency_len"),
        _fig(log, "failed_max_model_len"),
    ):
        if isinstance(value, int | float) and not isinstance(value, bool) and value > 0:
            return int(value)
    return None


def log_kv_dtype(log: StartupLog, default: KVDType) -> KVDType:
    """The KV cache dtype the log names; `default` where it says 'auto' or nothing. An FP8
    variant (vLLM's fp8, fp8_e4m3, fp8_e5m2, fp8_inc; SGLang's fp8_e4m3, fp8_e5m2) is FP8, a
    16-bit name (vLLM's bfloat16, SGLang's bf16) the model's 16 bits even over a checkpoint whose
    `auto` is FP8; another (vLLM's nvfp4 or int8_per_token_head, SGLang's fp4_e2m1) is refused:
    it read as `auto`, a 16-bit pool that held 3.5 times the bytes per token."""
    value = _kv_name(log.config.get("kv_cache_dtype"))
    if value in LOG_UNSET_KV:  # unset: the engine's default
        return default
    if value.startswith(("fp8", "float8")):
        return KVDType.FP8
    if value in LOG_16_BIT_KV:
        return KVDType.FP16 if value in ("float16", "fp16", "half") else KVDType.BF16
    raise InputError(
        f"kv_cache_dtype: the log ran {value!r:.40}, a KV cache capcliff does not size (auto, "
        "16-bit and fp8 caches are); calibrate from a log of one of those"
    )


LOG_16_BIT_KV = ("bfloat16", "bf16", "float16", "fp16", "half")  # vLLM, SGLang and torch names
LOG_UNSET_KV = ("auto", "none", "")


def _kv_name(stated: object) -> str:
    """A log's kv_cache_dtype as a bare lower-case name (`'fp8_e4m3'`, `torch.bfloat16`; None:
    `auto`)."""
    text = "auto" if stated is None else str(stated)
    return text.strip().strip("'\"").lower().removeprefix("torch.")


def auto_kv_dtype(
    log: StartupLog, model: Model, engine: EngineName, given: KVDType | None, as_shipped: bool
) -> KVDType:
    """What the log's `auto` (or silence) stored: the flag given, else the checkpoint's KV
    quantisation where the log's engine release takes it (memory/kv_default.py), else the
    model's 16-bit dtype. A flag of another width than a vLLM or SGLang `auto` is refused."""
    stated = log.config.get("kv_cache_dtype")
    if _kv_name(stated) not in LOG_UNSET_KV:
        return given or KVDType.BF16  # the log names its own: log_kv_dtype reads it
    if given is not None and (stated is None or engine is EngineName.TRTLLM):
        return given  # the log names none (TensorRT-LLM's never does): the flag says it
    taken = checkpoint_kv_dtype(model.arch, engine, _release(log)) if as_shipped else None
    auto = taken or KVDType.BF16
    if given is not None and (given is KVDType.FP8) != (auto is KVDType.FP8):
        raise InputError(
            f"kv-cache-dtype: the log ran kv_cache_dtype=auto, which stored {auto.value} for "
            f"{model.id}, not {given.value} (the flag stands in only where a log omits it)"
        )
    return given or auto


def log_scheme(log: StartupLog, model: Model) -> WeightScheme:
    """The weight formats the log's quantisation implies.

    A catalog card that records its checkpoint's quantization_config keeps its per-module formats:
    the log's `quantization=fp8` names the method, not what every module is stored in.
    """
    quant = log.config.get("quantization")
    if model.arch.quantization is not None:
        return WeightScheme.as_shipped(model.arch)
    if isinstance(quant, str) and quant not in ("None", "none", ""):
        dtype: WeightDType = parse_weight_dtype(quant, field="quantization")
        return WeightScheme.quantised(model.arch, dtype)
    return WeightScheme.as_shipped(model.arch)


def _graphs_in_budget(log: StartupLog, vendor: str) -> bool:
    """Whether the log's vLLM subtracted its CUDA-graph estimate from the budget
    (`vllm_graphs_in_budget` of its release on the GPU's vendor; a log stating no release: no)."""
    release = _release(log)
    return release is not None and vllm_graphs_in_budget(release, vendor)


def _release(log: StartupLog) -> tuple[int, int, int] | None:
    """The engine release the log states (None: it states none, or no release number)."""
    version = log.config.get("engine_version")
    try:
        return None if version is None else parse_version(str(version))
    except InputError:
        return None


def log_settings(log: StartupLog, base: BudgetSettings, vendor: str = "NVIDIA") -> BudgetSettings:
    """`base` with every setting the log states (engine, memory, utilisation, batch sizes) on a
    GPU made by `vendor`."""
    total_bytes = base.gpu_total_memory_bytes
    total = _fig(log, "total_memory_gib")
    before = _fig(log, "avail_before_load_gib")
    if total is not None:
        total_bytes = round(total * GIB)
    elif before is not None and total_bytes is None:
        # SGLang logs the memory free before weights load: the device total less the CUDA context.
        total_bytes = round(before * GIB) + DEFAULT_CUDA_CONTEXT_BYTES
    util = _fig(log, "gpu_memory_utilization")
    fraction = _fig(log, "mem_fraction_static")
    batched = _config_int(log, "max_num_batched_tokens", 0)  # 0: not logged
    seqs = _config_int(log, "max_num_seqs", 0)
    block = _fig(log, "tokens_per_block")
    return replace(
        base,
        engine=ENGINE_OF_FORMAT[log.format],
        engine_release=_release(log),
        gpu_total_memory_bytes=total_bytes,
        gpu_memory_utilization=base.gpu_memory_utilization if util is None else util,
        mem_fraction_static=base.mem_fraction_static if fraction is None else fraction,
        max_num_batched_tokens=batched if batched > 0 else base.max_num_batched_tokens,
        max_num_seqs=seqs if seqs > 0 else base.max_num_seqs,
        enforce_eager=bool(log.config.get("enforce_eager", base.enforce_eager)),
        cudagraph_in_budget=_graphs_in_budget(log, vendor),
        block_size=base.block_size if block is None else int(block),
    )


def fitted_terms_gib(log: StartupLog, mem: LayoutMemory) -> dict[str, float]:
    """The overhead terms the log measures, GiB per GPU, as `--calibration` would pin them."""
    stage = max(mem.stages, key=lambda s: s.weights_bytes)
    modeled_weights = stage.term("weights") / GIB
    terms: dict[str, float] = {}
    weights = _fig(log, "weights_gib")
    if weights is not None:
        terms["weights_overhead"] = max(0.0, weights - modeled_weights)
    for name in ("activation_peak", "non_torch", "cudagraph"):
        value = _fig(log, f"{name}_gib")
        if value is not None:
            terms[name] = value
    peak_torch = _fig(log, "peak_torch_gib")
    if "activation_peak" not in terms and peak_torch is not None and weights is not None:
        terms["activation_peak"] = max(0.0, peak_torch - weights)  # V0, Nov 2024 format
    total, available = _fig(log, "total_memory_gib"), _fig(log, "avail_before_kv_gib")
    if log.format is LogFormat.TRTLLM and total is not None and available is not None:
        # TensorRT-LLM logs the memory free once everything but the KV cache is in place; what is
        # not weights or the CUDA context is its runtime buffers (pinned as the activation term).
        context = stage.term("cuda_context") / GIB
        terms["activation_peak"] = total - available - modeled_weights - context
        terms["weights_overhead"] = 0.0
    return terms


def _negative_note(name: str, value: float, log: StartupLog) -> str:
    """Why a fitted term came out below 0 (it is pinned at 0). Only TensorRT-LLM's runtime
    buffers are worked out from the modeled weights (`fitted_terms_gib`), so only there does a
    negative figure mean the modeled weights are too large; elsewhere the log states the figure
    itself (2026-12-07, h-user2: vLLM 0.15.0 logged "Graph capturing finished in 1 secs, took
    -8.31 GiB" for Llama-3.3-70B FP4 on a B200, and the note blamed the modeled weights, 39.81
    GiB against the log's 39.89)."""
    if name == "activation_peak" and log.format is LogFormat.TRTLLM:
        return (
            f"{name}: the log implies {value:.2f} GiB < 0; the modeled weights are larger than "
            "the engine's (check --weight-dtype)"
        )
    return (
        f"{name}: the log states {value:.2f} GiB: free memory rose during that stage (memory "
        "released there, not the term's), so the term is taken as 0"
    )


def _predicted(name: str, mem: LayoutMemory) -> float:
    stage = min(mem.stages, key=lambda s: s.blocks)
    block = stage.block_size
    values = {
        "weights_gib": stage.weights_bytes / GIB,
        "activation_peak_gib": stage.term("activation_peak") / GIB,
        "non_torch_gib": stage.term("non_torch") / GIB,
        "cudagraph_gib": stage.term("cudagraph") / GIB,
        "kv_cache_gib": stage.kv_bytes / GIB,
        "gpu_blocks": float(mem.blocks_per_replica),
        "kv_tokens": float(mem.kv_capacity_tokens_per_replica),
        "max_concurrency": mem.blocks_per_replica / -(-mem.max_model_len // block),
    }
    return values[name]


COMPARED = (
    "weights_gib",
    "activation_peak_gib",
    "non_torch_gib",
    "cudagraph_gib",
    "kv_cache_gib",
    "gpu_blocks",
    "kv_tokens",
    "max_concurrency",
)


# The figures that say how large a KV cache the engine allocated: a log without one of them
# stopped before the end of start-up.
KV_FIGURES = ("kv_cache_gib", "gpu_blocks", "kv_tokens")
# A logged weight figure this far from the modeled one (either way) means the log is of another
# model or dtype than the one named: fitting it would pin nonsense (a set guard, not a tolerance;
# partially quantised checkpoints differ by under 10 %, see docs/validation.md).
WEIGHTS_MISMATCH = 0.5


@dataclass(frozen=True)
class LogClaims:
    """What the user says the log is (None: not said); a log that disagrees is refused."""

    model: str | None = None  # --model as given
    model_in_log: str | None = None  # the catalog id the log's model name matches
    engine: EngineName | None = None
    layout: str | None = None


def refuse_disagreement(log: StartupLog, model: Model, layout: Layout, claims: LogClaims) -> None:
    """Refuse a log of another engine, layout or model than the flags say, with the numbers."""
    engine = ENGINE_OF_FORMAT[log.format]
    if claims.engine is not None and claims.engine is not engine:
        raise InputError(
            f"engine: the log is from {engine.value} (its {log.format.value} format), "
            f"not --engine {claims.engine.value}"
        )
    if claims.layout is not None and parse_layout(claims.layout).name != layout.name:
        raise InputError(
            f"layout: the log ran {layout.name} (tp {layout.tp}, pp {layout.pp}, dp {layout.dp}), "
            f"not --layout {claims.layout}"
        )
    if claims.model is not None and claims.model_in_log not in (None, model.id):
        raise InputError(
            f"model: the log serves {log.config.get('model')} ({claims.model_in_log}), "
            f"not --model {claims.model}"
        )


def refuse_other_weights(log: StartupLog, mem: LayoutMemory, model: Model) -> None:
    """Refuse a log whose weights are far from the model's (another model, or another dtype)."""
    logged = _fig(log, "weights_gib")
    stage = max(mem.stages, key=lambda s: s.weights_bytes)
    modeled = stage.term("weights") / GIB
    if logged is None and modeled > 0:
        refuse_weights_past_memory_in_use(log, modeled, model)
    if logged is None or modeled <= 0:
        return
    error = logged / modeled - 1
    # either way: a log of FP8 weights against bf16 modeled is half (-50 %), which |error|
    # let through (Qwen3-235B-FP8 as bf16: 27.72 against 54.92 GiB, a KV pool of -16.78 GiB)
    if max(logged / modeled, modeled / logged) - 1 > WEIGHTS_MISMATCH:
        raise InputError(
            f"model: the log's weights ({logged:.2f} GiB per GPU) are {error:+.0%} off "
            f"{model.id}'s ({modeled:.2f} GiB); a log of another model? (or pass --weight-dtype)"
        )


def refuse_weights_past_memory_in_use(log: StartupLog, modeled_gib: float, model: Model) -> None:
    """Refuse a log without a weights figure whose engine had less memory in use before its KV
    cache than the model's weights need: in_use = total - available, GiB per GPU, both from
    TensorRT-LLM's "Memory usage when calculating max tokens in paged kv cache" line
    (cpp/tensorrt_llm/batch_manager/kvCacheManager.cpp: cudaMemGetInfo once the engine, its
    weights and runtime buffers are in place), so in_use holds the weights. Row T01 (Llama-3.1-8B):
    31.84 - 17.83 = 14.01 GiB against 14.96 modeled (bf16); Qwen3-32B's 61.02 would leave a KV
    pool of -32.62 GiB."""
    total, available = _fig(log, "total_memory_gib"), _fig(log, "avail_before_kv_gib")
    if total is None or available is None:
        return
    in_use = total - available
    # the same set guard as a logged weight figure's, against the memory that holds the weights
    if modeled_gib > in_use * (1 + WEIGHTS_MISMATCH):
        raise InputError(
            f"model: {model.id}'s weights ({modeled_gib:.2f} GiB per GPU) do not fit in the "
            f"{in_use:.2f} GiB the log's engine had in use before its KV cache ({total:.2f} GiB "
            f"total less {available:.2f} available); a log of another model? (or pass "
            "--weight-dtype)"
        )


# set: how far the log's KV bytes per token (its KV GiB over its KV tokens, both printed rounded)
# may lie from the modeled dtype's before the note; dtypes differ by 2x
KV_BYTES_TOLERANCE = 0.05


def kv_dtype_note(log: StartupLog, mem: LayoutMemory, kv: KVDType) -> list[str]:
    """A log whose KV pool holds another number of bytes per token per GPU than the KV dtype
    modeled, said with the dtype it matches: logged = KV GiB x 2^30 / KV tokens (TensorRT-LLM
    prints both, `trtllm_log`), modeled x element bytes of d / element bytes of `kv` for each
    dtype d. Row T01: 16.05 GiB / 263,008 = 65,526 B against bf16's 131,072: fp8."""
    gib, tokens = _fig(log, "kv_cache_gib"), _fig(log, "kv_tokens")
    modeled = mem.kv_bytes_per_token_per_gpu
    if not gib or not tokens or modeled <= 0:
        return []
    logged = gib * GIB / tokens
    if abs(logged / modeled - 1) <= KV_BYTES_TOLERANCE:
        return []
    per = {d: modeled * d.bytes_per_element / kv.bytes_per_element for d in KVDType}
    fits = [d.value for d, b in per.items() if abs(logged / b - 1) <= KV_BYTES_TOLERANCE]
    hint = f"pass --kv-cache-dtype {fits[0]}" if fits else "a log of another model or layout?"
    return [
        f"kv_cache_dtype: the log's KV pool holds {logged:,.0f} B per token per GPU ({gib:g} GiB "
        f"over {tokens:,.0f} tokens), not the {modeled:,} B of the {kv.value} KV modeled, so the "
        f"calibrated KV figures stay off; {hint}"
    ]


def calibrate(
    log: StartupLog,
    model: Model,
    hardware: HardwareSpec,
    *,
    base: BudgetSettings,
    kv_dtype: KVDType | None = None,
    scheme: WeightScheme | None = None,
    max_model_len: int | None = None,
    source: str = "",
    gpu: str | None = None,
    claims: LogClaims | None = None,
) -> CalibrationResult:
    """Predict the log's figures, fit the overheads, and predict again with them applied.

    `scheme` and `max_model_len` stand in for what the log does not say (weight formats of a
    prebuilt engine; the context length when the log omits it). Refused: a log that disagrees
    with `claims`, whose weights are another model's, or that has nothing to fit.
    """
    settings = log_settings(log, base, hardware.vendor)
    layout = log_layout(log, model)
    refuse_disagreement(log, model, layout, LogClaims() if claims is None else claims)
    if log.config.get("enable_lora") is True:
        # vLLM counts the LoRA adapter slots (max_loras x max_lora_rank per layer) in "Model
        # loading took" (v1/worker/gpu_model_runner.py load_model: load_lora_model inside the
        # DeviceMemoryProfiler); SGLang reserves a LoRA memory pool: capcliff models neither
        raise InputError(
            "logfile: the engine ran with enable_lora=True, whose adapter buffers its memory "
            "figures count and capcliff does not model; valid: the log of a start without "
            "--enable-lora"
        )
    default = model.arch.default_context_for(settings.engine.value)
    fallback = default if max_model_len is None else max_model_len
    length = log_max_model_len(log, fallback)
    weights = log_scheme(log, model) if scheme is None else scheme
    shipped = scheme is None or scheme == WeightScheme.as_shipped(model.arch)
    kv = log_kv_dtype(log, auto_kv_dtype(log, model, settings.engine, kv_dtype, shipped))

    def predict(s: BudgetSettings) -> LayoutMemory:
        return layout_memory(
            model.arch,
            hardware,
            layout,
            scheme=weights,
            kv_dtype=kv,
            max_model_len=length,
            settings=s,
        )

    modeled = predict(settings)
    if not modeled.valid:
        raise InputError(f"layout: the log's {layout.name} is invalid here: {modeled.reason}")
    refuse_other_weights(log, modeled, model)
    if not any(name in log.figures for name in KV_FIGURES):
        raise InputError(
            "logfile: the log stops before the engine sized its KV cache (no KV cache, block or "
            "token figure): half-written? nothing to check a fit against"
        )
    terms = fitted_terms_gib(log, modeled)
    if not terms:
        raise InputError(
            "logfile: nothing to fit: the log states no weights, activation, non-PyTorch or "
            "CUDA-graph figure (is it complete?)"
        )
    notes = [_negative_note(name, value, log) for name, value in terms.items() if value < 0]
    notes += kv_dtype_note(log, modeled, kv)
    terms = {name: max(0.0, value) for name, value in terms.items()}
    version = log.config.get("engine_version")
    cal = Calibration(
        engine=settings.engine, engine_version=None if version is None else str(version),
        source=source, model=model.id, model_shape=model.arch.shape_label, gpu=gpu,
        layout=layout.name,
        weight_dtype=weights.label_of(Storage.LINEAR), kv_cache_dtype=kv.value, terms_gib=terms,
    )  # fmt: skip
    calibrated = predict(
        replace(settings, term_overrides=cal.terms_bytes, calibrated_terms=frozenset(terms))
    )
    figures = tuple(
        ComparedFigure(
            name, log.figures[name].value, _predicted(name, modeled), _predicted(name, calibrated)
        )
        for name in COMPARED
        if name in log.figures
    )
    return CalibrationResult(settings.engine, layout, length, figures, cal, tuple(notes))


def model_id_from_log(log: StartupLog, catalog_repos: dict[str, str]) -> str | None:
    """The catalog id whose HF repo the log's model name starts with (longest match wins; a
    repository the Hub renamed under its current name: `current_repo_name`)."""
    name = current_repo_name(str(log.config.get("model", "")).rstrip("/").split("/")[-1].lower())
    matches = [
        (len(repo), model_id)
        for model_id, repo in catalog_repos.items()
        if name and name.startswith(repo.split("/")[-1].lower())
    ]
    return max(matches)[1] if matches else None
