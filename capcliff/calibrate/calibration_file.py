"""Calibration files: overhead terms fitted from an engine start-up log, applied with --calibration.

A calibration file is TOML, written by `capcliff calibrate` (with tomli-w) and recording the
deployment it was fitted on, so that applying it to another one is refused without --force:

    engine = "vllm"
    engine_version = "0.8.5"        # when the log states it
    source = "logs/vllm-startup.log"
    model = "llama-3.1-8b"
    gpu = "h200-sxm"
    layout = "tp1"
    weight_dtype = "bf16"
    kv_cache_dtype = "bf16"
    [terms_gib]                     # GiB per GPU, by term name
    activation_peak = 1.40
    non_torch = 0.21
    [step_time]                     # from benchmark results (optional)
    fixed_s = 0.0123
    scale = 1.41
    profile = "vllm-v0 V0 (0.6 - 0.7)"
    source = "bench.csv"
    points = 5
    request_overhead_s = 0.085      # measured - simulated mean TTFT (median)
    [speculative]                   # from benchmark results with speculation (optional)
    speculative = "mtp:3"
    accept_length = 2.31            # tokens per speculative step
    source = "bench-mtp.csv"
    points = 4
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    Strict,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)

from capcliff.catalog.catalogs import read_user_text
from capcliff.catalog.layout import parse_layout
from capcliff.errors import CatalogError, InputError
from capcliff.file_fields import refuse_bool_number
from capcliff.files import parse_toml
from capcliff.memory.budget import OVERRIDABLE_TERMS, EngineName
from capcliff.memory.draft import MAX_SPECULATIVE_TOKENS, SpecMethod
from capcliff.units import GIB, MAX_BYTES, MAX_SLO_TPOT_S, parse_kv_dtype

# Set bounds on fitted step-time terms (not modeled): a scale off the roofline-and-communication
# model by more than 100x either way, or a fixed cost per step past the longest TPOT an SLO may
# name (units.MAX_SLO_TPOT_S), describes another deployment or figures in other units, not this
# one (DeepSeek-R1 rows forced onto an 8B model fit 10x; rows in seconds would fit 0.001x).
MIN_STEP_SCALE = 0.01
MAX_STEP_SCALE = 100.0
MAX_STEP_FIXED_S = MAX_SLO_TPOT_S


def concurrency_range_problem(low: int | None, high: int | None) -> str | None:
    """A fitted range of concurrencies that is empty (`concurrency_min` past `_max`)."""
    if low is not None and high is not None and low > high:
        return f"concurrency_min: {low} is past concurrency_max {high}; the range is empty"
    return None


def step_terms_problem(fixed_s: float, scale: float) -> str | None:
    """Why fitted step-time terms cannot describe a deployment (None when they can)."""
    if not MIN_STEP_SCALE <= scale <= MAX_STEP_SCALE:
        return (
            f"scale: {scale:.3g} x the modeled step time is outside [{MIN_STEP_SCALE:g}, "
            f"{MAX_STEP_SCALE:g}]: the figures are of another deployment (model, GPU, layout) "
            "or in other units"
        )
    if not 0 <= fixed_s <= MAX_STEP_FIXED_S:
        return (
            f"fixed_s: {fixed_s:.3g} s per step is outside [0, {MAX_STEP_FIXED_S:g}] s: the "
            "figures are of another deployment or in other units"
        )
    return None


class StepTimeCalibration(BaseModel):
    """Step-time terms fitted from serving benchmark results (`capcliff calibrate bench.csv`):
    every step costs `fixed_s` plus `scale` x the profile's roofline and communication time."""

    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)

    @field_validator("*", mode="before")
    @classmethod
    def _no_bool_numbers(cls, value: Any, info: ValidationInfo) -> Any:
        return refuse_bool_number(cls, value, info)

    fixed_s: float = Field(ge=0)  # seconds per step (replaces host time and kernel floors)
    scale: float = Field(gt=0)  # factor on the rest of the step
    profile: str  # the engine profile the terms were fitted against
    source: str  # the benchmark file
    points: int = Field(ge=1)  # benchmark runs fitted (one: the scale alone)
    # the concurrencies (clients or batch sizes) the runs had; outside them a figure extrapolates
    concurrency_min: int | None = Field(default=None, ge=1)
    concurrency_max: int | None = Field(default=None, ge=1)
    # seconds of each request outside the engine's steps: HTTP, tokenization, the first
    # detokenized chunk, the client's turnaround (measured - simulated mean TTFT, the median)
    request_overhead_s: float = Field(default=0.0, ge=0, le=60)

    @model_validator(mode="after")
    def _plausible(self) -> StepTimeCalibration:
        problem = step_terms_problem(self.fixed_s, self.scale) or concurrency_range_problem(
            self.concurrency_min, self.concurrency_max
        )
        if problem is not None:
            raise ValueError(problem)
        return self


class SpeculativeCalibration(BaseModel):
    """The mean acceptance length fitted from benchmark results of a speculative deployment
    (`capcliff calibrate bench.csv --speculative mtp:3`): tokens per speculative step."""

    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)

    @field_validator("*", mode="before")
    @classmethod
    def _no_bool_numbers(cls, value: Any, info: ValidationInfo) -> Any:
        return refuse_bool_number(cls, value, info)

    speculative: str  # the setting it was fitted for, as --speculative writes it (mtp:3)
    accept_length: float = Field(ge=1)  # tokens per speculative step, at most K + 1
    source: str  # the benchmark file
    points: int = Field(ge=1)
    concurrency_min: int | None = Field(default=None, ge=1)
    concurrency_max: int | None = Field(default=None, ge=1)

    @model_validator(mode="after")
    def _within_k(self) -> SpeculativeCalibration:
        method, _, rest = self.speculative.partition(":")
        k_text = rest.partition(":")[0]
        methods = {m.value for m in SpecMethod}
        if method not in methods or not k_text.isdecimal() or k_text == "0":
            raise ValueError(
                f"speculative: {self.speculative!r:.40} is not mtp:K, eagle:K[:DRAFT] or ngram:K"
            )
        if len(k_text) > 2 or int(k_text) > MAX_SPECULATIVE_TOKENS:  # ngram:10**30 was kept
            raise ValueError(
                f"speculative: K is at most {MAX_SPECULATIVE_TOKENS}, got {k_text:.12}"
            )
        k = int(k_text)
        problem = concurrency_range_problem(self.concurrency_min, self.concurrency_max)
        if problem is not None:
            raise ValueError(problem)
        if self.accept_length > k + 1:
            raise ValueError(
                f"accept_length: {self.accept_length:g} tokens per step is more than K + 1 = "
                f"{k + 1} for {self.speculative}"
            )
        return self


class Calibration(BaseModel):
    """Fitted terms for one engine: memory overheads (GiB per GPU) from a start-up log and
    step-time terms from benchmark results; a file may carry either or both."""

    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)

    @field_validator("*", mode="before")
    @classmethod
    def _no_bool_numbers(cls, value: Any, info: ValidationInfo) -> Any:
        return refuse_bool_number(cls, value, info)

    engine: EngineName
    engine_version: str | None = None  # as the log states it
    source: str
    model: str | None = None  # catalog id (or config path) the log was fitted with
    # Architecture.shape_label of that model: two folders named alike are told apart by it
    model_shape: str | None = None
    gpu: str | None = None  # hardware id
    layout: str | None = None  # e.g. tp8-ep8
    weight_dtype: str | None = None  # linear weights
    kv_cache_dtype: str | None = None
    # Strict: `activation_peak = true` was read as 1 GiB
    terms_gib: dict[str, Annotated[float, Strict()]] = Field(default_factory=dict)
    step_time: StepTimeCalibration | None = None
    speculative: SpeculativeCalibration | None = None

    @property
    def step_time_terms(self) -> tuple[tuple[str, float], ...]:
        """The step-time terms as BudgetSettings.step_time_terms carries them (() if none)."""
        if self.step_time is None:
            return ()
        step = self.step_time
        overhead = (("request_overhead_s", step.request_overhead_s),)
        return (
            ("fixed_s", step.fixed_s), ("scale", step.scale),
            *(overhead if step.request_overhead_s > 0 else ()),
        )  # fmt: skip

    @field_validator(
        "engine_version", "model", "model_shape", "gpu", "layout", "weight_dtype", "kv_cache_dtype"
    )
    @classmethod
    def _named(cls, value: str | None, info: ValidationInfo) -> str | None:
        """A recorded deployment field must name something: a blank one matched no deployment
        (a mismatch only --force passed), and a layout or KV dtype no flag reads was applied."""
        if value is None:
            return None
        if not value.strip():
            raise ValueError("blank; give the value `capcliff calibrate` recorded, or drop the key")
        try:
            if info.field_name == "layout":
                parse_layout(value)
            elif info.field_name == "kv_cache_dtype":
                parse_kv_dtype(value, field="kv_cache_dtype")
        except InputError as exc:
            raise ValueError(str(exc).partition(": ")[2]) from None
        return value

    @model_validator(mode="after")
    def _calibrates_something(self) -> Calibration:
        if not self.terms_gib and self.step_time is None and self.speculative is None:
            raise ValueError(
                "no [terms_gib] term, [step_time] or [speculative] table: the file calibrates "
                "nothing; valid: a file `capcliff calibrate -o` wrote"
            )
        return self

    @field_validator("terms_gib")
    @classmethod
    def _known_terms(cls, terms: dict[str, float]) -> dict[str, float]:
        unknown = sorted(set(terms) - set(OVERRIDABLE_TERMS))
        if unknown:
            raise ValueError(
                f"unknown term {', '.join(unknown)}; valid: {', '.join(OVERRIDABLE_TERMS)}"
            )
        negative = sorted(name for name, value in terms.items() if value < 0)
        if negative:
            raise ValueError(f"negative bytes for {', '.join(negative)}")
        huge = sorted(name for name, value in terms.items() if value * GIB > MAX_BYTES)
        if huge:  # 1e300 GiB overflowed to inf in bytes (a traceback)
            raise ValueError(f"{', '.join(huge)}: past {MAX_BYTES // GIB:,} GiB (1 EiB) per GPU")
        return terms

    @property
    def terms_bytes(self) -> dict[str, int]:
        """The terms in bytes."""
        return {name: round(gib * GIB) for name, gib in self.terms_gib.items()}


def load_calibration(path: Path) -> Calibration:
    """Read and validate a calibration file; errors read `path: field: message`. A JSON text
    (a bench tool's results, given where the calibration fitted from them belongs) is refused
    as such: it read "(toml): Invalid statement", which said neither."""
    text = read_user_text(path)
    if text.lstrip("\ufeff \t\r\n").startswith("{"):  # no TOML document starts with `{`
        raise CatalogError(
            f"{path}: (toml): holds JSON, not a calibration file (TOML, as `capcliff calibrate "
            "... -o FILE` writes it); benchmark results are `capcliff calibrate`'s input: fit "
            "them there and give the file it writes"
        )
    data = parse_toml(text, source=str(path), error=CatalogError)
    try:
        return Calibration.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        field = ".".join(str(p) for p in first["loc"]) or "(file)"
        message = first["msg"].removeprefix("Value error, ")
        raise CatalogError(f"{path}: {field}: {message}") from None


def calibration_toml(calibration: Calibration) -> str:
    """The TOML text of a calibration file (strings escaped by tomli-w)."""
    import tomli_w

    data = calibration.model_dump(mode="json", exclude_none=True)
    data["terms_gib"] = {name: round(v, 4) for name, v in sorted(calibration.terms_gib.items())}
    header = "# Written by `capcliff calibrate`; apply with --calibration FILE.\n"
    return header + tomli_w.dumps(data)


def calibration_mismatches(
    calibration: Calibration,
    *,
    engine: str,
    model: str,
    gpu: str,
    weight_dtype: str | None,
    kv_cache_dtype: str,
    layout: str | None = None,
    model_shape: str | None = None,
) -> list[str]:
    """How the deployment a calibration was fitted on differs from this one ([] when it does
    not, or the file does not say): `engine vllm-v0 != vllm` ..."""
    pairs = (
        ("engine", calibration.engine.value, engine),
        ("model", calibration.model, model),
        ("gpu", calibration.gpu, gpu),
        ("weight_dtype", calibration.weight_dtype, weight_dtype),
        ("kv_cache_dtype", _kv_name(calibration.kv_cache_dtype), _kv_name(kv_cache_dtype)),
        ("layout", calibration.layout, layout),
        ("model shape", calibration.model_shape, model_shape),
    )
    return [
        f"{name} {recorded} != {used}"
        for name, recorded, used in pairs
        if recorded is not None and used is not None and recorded != used
    ]


def _kv_name(text: str | None) -> str | None:
    """A KV cache dtype by its capcliff name (`fp8_e4m3` is fp8, `auto` bf16: a file written
    with `calibrate --kv-dtype fp8_e4m3` was refused for the deployment it was made on), or as
    written when no dtype reads it."""
    if text is None:
        return None
    try:
        return parse_kv_dtype(text).value
    except InputError:
        return text
