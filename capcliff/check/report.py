"""The result of `capcliff check`: per scenario its figures and its assertions; baselines.

Every assertion reads `actual <comparison> expected` with a margin in the assertion's unit
(>= 0: it holds with that much room). A baseline is the figures of a stored run; comparing one
adds a `baseline.<figure>` assertion per figure that fails when the figure worsened by more than
a relative tolerance.
"""

from __future__ import annotations

import math
from enum import IntEnum
from pathlib import Path
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field

from capcliff.check.spec_errors import validation_lines
from capcliff.errors import CatalogError
from capcliff.files import parse_json, read_text

SCHEMA_VERSION = 1
SIGNIFICANT_DIGITS = 6  # simulated figures are rounded so that reports compare across machines
BASELINE_KIND = "capcliff-check-baseline"
# The figures a baseline compares: (unit, whether a larger value is better).
BASELINE_FIGURES = {
    "kv_capacity_tokens_per_replica": ("tokens", True),
    "analytic_cliff_concurrency": ("requests", True),
    "simulated_cliff_concurrency": ("requests", True),
    "sweet_spot_output_tok_s": ("tok/s", True),
    "output_throughput_tok_s": ("tok/s", True),
    "ttft_p99_s": ("s", False),
    "tpot_p99_s": ("s", False),
}


class ExitCode(IntEnum):
    """What `capcliff check` exits with."""

    OK = 0  # every assertion holds
    FAILED = 1  # at least one assertion fails
    INVALID = 2  # the spec or its inputs are invalid
    INTERNAL = 4  # a bug: never a failed check


class _Result(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


Value = bool | int | float | str | None


class Figures(_Result):
    """A scenario's capacity figures, as a report shows them and a baseline file stores them.

    None where a figure does not apply (the layout does not fit; no cliff within the sweep).
    """

    layout: str | None
    kv_capacity_tokens_per_replica: int | None = None  # tokens
    analytic_cliff_concurrency: int | None = None  # running requests, all replicas (p99 request)
    simulated_cliff_concurrency: int | None = None  # the first swept concurrency that ran out of KV
    swept_concurrency_max: int | None = None  # the largest concurrency of the batch sweep
    sweet_spot_concurrency: int | None = None  # least makespan of the batch sweep
    sweet_spot_output_tok_s: float | None = None  # output tokens/s there
    output_throughput_tok_s: float | None = None  # the workload as stated, output tokens/s
    ttft_p99_s: float | None = None  # the workload as stated
    tpot_p99_s: float | None = None  # the workload as stated
    peak_kv_utilization: float | None = None  # the workload as stated, fraction of the KV cache
    preemptions: int | None = None  # the workload as stated
    # what the latency and throughput figures are of: an online workload's steady state, a
    # batch's whole run
    latency_basis: str | None = None


class AssertionResult(_Result):
    """One assertion: what the spec expects, what capcliff computed, and the slack."""

    name: str  # the `expect` key, or `baseline.<figure>`
    comparison: str  # how `actual` must relate to `expected`: "==", ">=" or "<="
    expected: Value
    actual: Value
    unit: str  # of expected, actual and margin
    margin: float | None  # slack in `unit`: >= 0 holds with that much room, < 0 misses by it
    passed: bool
    skipped: bool = False  # nothing to compare (a scenario missing from the baseline)
    detail: str


class ScenarioResult(_Result):
    """One scenario: the deployment as resolved, its figures and its assertions."""

    name: str
    model: str
    gpu: str  # the GPU type, or `prefill-type+decode-type` when a split's pools differ
    gpus: int
    gpus_by_type: dict[str, int]  # GPUs of each type (each pool's, for a split on two types)
    engine: str
    layout: str | None  # None when `auto` finds no layout that fits
    layout_source: str  # "spec" or "plan"
    workload: str
    num_requests: int
    concurrency: int  # the cap on running requests the stated workload runs at
    max_model_len: int  # tokens
    seed: int
    fits: bool
    reason: str  # why it does not fit ("" when it fits)
    figures: Figures
    assertions: list[AssertionResult]

    @property
    def passed(self) -> bool:
        """Whether every assertion holds."""
        return all(a.passed for a in self.assertions)


class CheckReport(_Result):
    """Everything `capcliff check` prints and writes."""

    schema_version: int
    spec: str
    baseline_compared: bool
    tolerance: float  # relative, for baseline comparisons
    scenarios: list[ScenarioResult]

    @property
    def assertions(self) -> list[AssertionResult]:
        """Every assertion of every scenario."""
        return [a for s in self.scenarios for a in s.assertions]

    @property
    def failures(self) -> int:
        """Assertions that fail."""
        return sum(not a.passed for a in self.assertions)

    @property
    def exit_code(self) -> ExitCode:
        """OK when every assertion holds, else FAILED."""
        return ExitCode.FAILED if self.failures else ExitCode.OK


# A stored figure as `--write-baseline` writes it: a JSON number (never "684" or true, which
# pydantic's lax mode would read as 684.0 and 1), none negative
_Count = Annotated[int, Field(ge=0, strict=True)]
_Amount = Annotated[float, Field(ge=0, strict=True)]


class StoredFigures(Figures):
    """`Figures` as a baseline file holds them: counts whole and >= 0, amounts >= 0, the peak
    KV utilisation a fraction of the cache (0 to 1)."""

    kv_capacity_tokens_per_replica: _Count | None = None
    analytic_cliff_concurrency: _Count | None = None
    simulated_cliff_concurrency: _Count | None = None
    swept_concurrency_max: _Count | None = None
    sweet_spot_concurrency: _Count | None = None
    sweet_spot_output_tok_s: _Amount | None = None
    output_throughput_tok_s: _Amount | None = None
    ttft_p99_s: _Amount | None = None
    tpot_p99_s: _Amount | None = None
    peak_kv_utilization: Annotated[float, Field(ge=0, le=1, strict=True)] | None = None
    preemptions: _Count | None = None


class Baseline(_Result):
    """A stored run (`--write-baseline`): each scenario's figures, by name."""

    schema_version: Literal[1]
    kind: Literal["capcliff-check-baseline"]
    scenarios: dict[str, StoredFigures]


def baseline_of(report: CheckReport) -> Baseline:
    """The baseline a report would store."""
    figures = {s.name: StoredFigures(**dict(s.figures)) for s in report.scenarios}
    return Baseline(schema_version=1, kind=BASELINE_KIND, scenarios=figures)


def parse_baseline(text: str, *, path: Path) -> Baseline:
    """Validate a baseline file's JSON `text`; problems read `path: field: message`."""
    data = parse_json(text, source=str(path), error=CatalogError, unique_keys=True)
    if isinstance(data, dict) and data.get("kind") != BASELINE_KIND:
        # another file whole (check's --format json report, a sweep's result): one line for
        # what it is not, where each of its keys was a line of its own (24 for a sweep's)
        raise CatalogError(
            f"{path}: kind: {data.get('kind')!r:.40} is not a baseline's "
            f"({BASELINE_KIND!r}); write one with `capcliff check SPEC --write-baseline FILE`"
        )
    problems = validation_lines(Baseline, data)
    if problems:
        raise CatalogError("\n".join(f"{path}: {p}" for p in problems))
    return Baseline.model_validate(data)


def load_baseline(path: Path) -> Baseline:
    """Read and validate the baseline file at `path` (written by `--write-baseline`)."""
    return parse_baseline(read_text(path, field="baseline"), path=path)


def significant(value: float) -> float:
    """`value` to SIGNIFICANT_DIGITS significant digits (0 for NaN and infinities); an int as
    it is."""
    if isinstance(value, int):
        return value
    return float(f"{value:.{SIGNIFICANT_DIGITS}g}") if math.isfinite(value) else 0.0


def assertion(
    name: str, comparison: str, expected: Value, actual: Value, unit: str, *,
    passed: bool, detail: str, margin: float | None = None,
) -> AssertionResult:  # fmt: skip
    """An assertion's result (the margin rounded like the figures)."""
    return AssertionResult(
        name=name, comparison=comparison, expected=expected, actual=actual, unit=unit,
        margin=None if margin is None else significant(margin), passed=passed, detail=detail,
    )  # fmt: skip


def bound(
    name: str, expected: float, actual: float, unit: str, *, at_least: bool, detail: str
) -> AssertionResult:
    """`actual >= expected` (at_least) or `actual <= expected`; the margin in `unit`."""
    actual = significant(actual)
    margin = actual - expected if at_least else expected - actual
    return assertion(
        name, ">=" if at_least else "<=", expected, actual, unit, passed=margin >= 0,
        detail=detail, margin=margin,
    )  # fmt: skip


def _figure(figures: Figures, name: str) -> tuple[float | None, str]:
    """A figure's value and a note; no simulated cliff counts as the largest swept concurrency."""
    value = getattr(figures, name)
    swept = figures.swept_concurrency_max
    if value is None and name == "simulated_cliff_concurrency" and swept is not None:
        return float(swept), f" (no cliff up to {swept})"
    return (None if value is None else float(value)), ""


def compare_figure(
    name: str, now: Figures, before: Figures, *, tolerance: float
) -> AssertionResult | None:
    """`name` now against the baseline: fails when it worsened by more than `tolerance`
    (relative). None when the baseline lacks the figure."""
    unit, higher_is_better = BASELINE_FIGURES[name]
    old, old_note = _figure(before, name)
    new, new_note = _figure(now, name)
    label, comparison = f"baseline.{name}", ">=" if higher_is_better else "<="
    if old is None:
        return None
    if new is None:
        detail = f"the baseline has {old:g}; this run has none (does the layout still fit?)"
        return assertion(label, comparison, old, None, unit, passed=False, detail=detail)
    limit = old * (1 - tolerance) if higher_is_better else old * (1 + tolerance)
    change = f"{new / old - 1:+.1%}" if old else "n/a"
    detail = (
        f"baseline {old:g}{old_note}, now {new:g}{new_note} ({change}); tolerance {tolerance:.0%}"
    )
    return bound(label, significant(limit), new, unit, at_least=higher_is_better, detail=detail)


def compare_baseline(
    now: Figures, before: Figures | None, *, tolerance: float
) -> list[AssertionResult]:
    """One `baseline.<figure>` assertion per figure the baseline has (a skipped one when the
    baseline does not know the scenario)."""
    if before is None:
        return [
            AssertionResult(
                name="baseline",
                comparison="==",
                expected=None,
                actual=None,
                unit="",
                margin=None,
                passed=True,
                skipped=True,
                detail="no baseline for this scenario",
            )
        ]
    found = (compare_figure(n, now, before, tolerance=tolerance) for n in BASELINE_FIGURES)
    return [a for a in found if a is not None]
