"""`capcliff check`: a sizing spec's scenarios and assertions -> CheckReport.

Each scenario is resolved and simulated by `check_scenario`; here its assertions are judged and a
baseline compared. Pure: no printing, no files (`check_output` renders the report; the CLI writes
it). Exit codes (the CLI maps them): 0 every assertion holds, 1 one fails, 2 the spec or its
inputs are invalid (an InputError), 4 an internal error: a crash never reads as a failed check.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

from capcliff.analysis.evaluate.replica_models import band_of
from capcliff.check.report import (
    SCHEMA_VERSION,
    AssertionResult,
    Baseline,
    CheckReport,
    ScenarioResult,
    Value,
    assertion,
    bound,
    compare_baseline,
)
from capcliff.check.scenario import Deployment, Judged, Outcome, deployment, outcome
from capcliff.check.spec import Expectations, SpecFile
from capcliff.check.spec_errors import field_line
from capcliff.errors import InputError
from capcliff.memory.fit import largest_max_model_len


def _unsimulated(
    name: str, comparison: str, expected: Value, unit: str, o: Outcome
) -> AssertionResult:
    return assertion(
        name, comparison, expected, None, unit, passed=False, detail=f"not simulated: {o.reason}"
    )


def check_fits(o: Outcome, expected: bool) -> AssertionResult:
    """The layout fits: weights, reserves and one max_model_len request."""
    fits = o.sims is not None
    detail = o.reason or f"{o.figures.kv_capacity_tokens_per_replica:,} tokens of KV per replica"
    return assertion("fits", "==", expected, fits, "", passed=fits == expected, detail=detail)


# Assertions on the workload as stated, at the scenario's concurrency: (unit, whether the value
# is a minimum, the value from the simulated point).
STATED: dict[str, tuple[str, bool, Callable[[Judged], float]]] = {
    "kv_headroom_min": ("fraction", True, lambda p: 1 - p.peak_kv_utilization),
    "ttft_p99_max_s": ("s", False, lambda p: p.ttft_p99_s),
    "tpot_p99_max_s": ("s", False, lambda p: p.tpot_p99_s),
    "output_throughput_min_tok_s": ("tok/s", True, lambda p: p.output_throughput_tok_s),
    "prefix_hit_rate_min": ("fraction", True, lambda p: p.prefix_cache_hit_rate or 0.0),
}

P99_HALF_WIDTH: dict[str, Callable[[Judged], float | None]] = {
    "ttft_p99_max_s": lambda p: p.ttft_p99_half_width,
    "tpot_p99_max_s": lambda p: p.tpot_p99_half_width,
}


def check_stated(o: Outcome, name: str, expected: float) -> AssertionResult:
    """KV headroom (1 - peak utilisation), TTFT / TPOT p99 or output throughput of the workload
    as stated, against a minimum or a maximum."""
    unit, at_least, value = STATED[name]
    if o.sims is None:
        return _unsimulated(name, ">=" if at_least else "<=", expected, unit, o)
    point = o.sims.stated_point(o.concurrency)
    judged = Judged.of(point)
    detail = (
        f"at most {o.concurrency} running requests, {judged.basis}: peak KV "
        f"{point.peak_kv_utilization:.1%}, makespan {point.makespan_s:,.1f} s"
    )
    half = P99_HALF_WIDTH[name](judged) if name in P99_HALF_WIDTH else None
    if half is not None:
        detail += f"; p99 +/-{half:.0%} (95 % sampling interval)"
        if abs(value(judged) - expected) <= half * value(judged):
            detail += (
                "; within its sampling noise of the limit: another sample of the same load may "
                "judge otherwise (more requests narrow it)"
            )
    detail += _within_model_error(o, name, value(judged), expected)
    result = bound(name, expected, value(judged), unit, at_least=at_least, detail=detail)
    if not result.passed and name in P99_HALF_WIDTH:
        passing = passing_concurrency(o, lambda j: value(j) <= expected)
        result = result.model_copy(update={"detail": f"{detail}; {passing}"})
    return result


# The held-out error (perf/error_band.py, measured by benchmarks/fidelity.py) that bears on an
# assertion's figure: throughput's for tokens/s, mean TTFT's for the TTFT p99, TPOT's for TPOT.
MODEL_ERROR = {
    "output_throughput_min_tok_s": "throughput",
    "ttft_p99_max_s": "ttft",
    "tpot_p99_max_s": "tpot",
}


def _within_model_error(o: Outcome, name: str, actual: float, limit: float) -> str:
    """A note when a simulated figure lies closer to its limit than the model's held-out error
    for the deployment's engine and GPU: the verdict then rests on the model, not only on the
    sampling ("" otherwise, or where the validation measured no such error)."""
    metric = MODEL_ERROR.get(name)
    if metric is None or not math.isfinite(actual):
        return ""
    band = band_of(o.dep.resolved)
    error = getattr(band, metric)
    if error is None or abs(actual - limit) > error * abs(actual):
        return ""
    basis = "calibrated" if band.calibrated else "uncalibrated"
    return (
        f"; within the model's held-out error of the limit (±{error:.0%}, {basis}, "
        f"{band.scope}): a measured run may judge otherwise{'; ' if band.advice else ''}"
        f"{band.advice}"
    )


def passing_concurrency(o: Outcome, holds: Callable[[Judged], bool]) -> str:
    """What would pass a failed latency bound: the largest cap on running requests, halving from
    the scenario's, at which the workload as stated meets it (the same evaluation)."""
    assert o.sims is not None
    dp = 1 if o.layout is None else o.layout.dp
    cap = o.concurrency // 2
    while cap >= max(dp, 1):
        if holds(Judged.of(o.sims.stated_point(cap))):
            return (
                f"passes at {cap} running requests (max_num_seqs {max(cap // dp, 1)} per "
                f"replica{'' if dp == 1 else f' x {dp} replicas'})"
            )
        cap //= 2
    return "no smaller cap passes: needs a faster layout, more GPUs or a looser bound"


def check_no_preemption(o: Outcome, at: int) -> AssertionResult:
    """No preemption when `at` requests may run at once (expected: 0 preemptions)."""
    name = "no_preemption_at"
    if o.sims is None:
        return _unsimulated(name, "==", 0, "preemptions", o)
    point = o.sims.stated_point(at)
    detail = f"at most {at} running requests; peak KV {point.peak_kv_utilization:.1%}"
    if point.admission_blocked:
        detail += "; admission waited for KV"
    return assertion(
        name, "==", 0, point.preemptions, "preemptions", passed=point.preemptions == 0,
        detail=detail,
    )  # fmt: skip


def check_cliff(o: Outcome, expected: int) -> AssertionResult:
    """The simulated cliff (first concurrency that ran out of KV) is at least `expected`.

    With no cliff in the sweep it holds. When the sweep cannot tell (its last clean point is
    below expected - 1 and its cliff above), the batch runs at expected - 1 too.
    """
    name, f = "cliff_concurrency_min", o.figures
    if o.sims is None:
        return _unsimulated(name, ">=", expected, "requests", o)
    cliff = f.simulated_cliff_concurrency
    if cliff is None:
        detail = f"no cliff up to {f.swept_concurrency_max} running requests"
        return assertion(name, ">=", expected, None, "requests", passed=True, detail=detail)
    if cliff >= expected > 1 and o.sims.batch_runs_short(expected - 1):
        cliff = expected - 1
    detail = (
        f"KV ran short at {cliff} running requests (analytic cliff {f.analytic_cliff_concurrency})"
    )
    return bound(name, expected, cliff, "requests", at_least=True, detail=detail)


def check_recommended(o: Outcome, expected: str) -> AssertionResult:
    """`capcliff plan` recommends `expected` for the scenario's GPUs."""
    rec = o.recommended
    actual = None if rec is None else rec.layout
    detail = "nothing fits" if rec is None else "; ".join(rec.reasons[:1]) or "recommended"
    # a choice within sampling noise of the tie band's edge (`plan.ties.unsettled_reason`) may
    # go the other way on another seed: the gate says so beside its verdict
    unsettled = [] if rec is None else [r for r in rec.reasons if r.startswith("not settled")]
    detail += "".join(f"; {line}" for line in unsettled)
    return assertion(
        "recommended_layout", "==", expected, actual, "", passed=actual == expected, detail=detail
    )


def check_max_model_len(o: Outcome, expected: int) -> AssertionResult:
    """One request of `expected` tokens fits a replica's KV cache (the engine would start)."""
    name = "max_model_len_fits"
    if o.layout is None:
        return _unsimulated(name, ">=", expected, "tokens", o)
    memory = o.dep.memory(o.layout, expected)
    actual = largest_max_model_len(memory) if memory.valid else 0
    detail = memory.reason or f"{o.layout.name} holds {actual:,} tokens per replica"
    return assertion(
        name,
        ">=",
        expected,
        actual,
        "tokens",
        passed=memory.fits,
        detail=detail,
        margin=actual - expected,
    )


def assertions_of(o: Outcome, e: Expectations) -> list[AssertionResult]:
    """The results of the assertions the spec states, in the spec's key order."""
    found = [
        None if e.fits is None else check_fits(o, e.fits),
        None
        if e.kv_headroom_min is None
        else check_stated(o, "kv_headroom_min", e.kv_headroom_min),
        None if e.no_preemption_at is None else check_no_preemption(o, e.no_preemption_at),
        None if e.cliff_concurrency_min is None else check_cliff(o, e.cliff_concurrency_min),
        None if e.ttft_p99_max_s is None else check_stated(o, "ttft_p99_max_s", e.ttft_p99_max_s),
        None if e.tpot_p99_max_s is None else check_stated(o, "tpot_p99_max_s", e.tpot_p99_max_s),
        None
        if e.output_throughput_min_tok_s is None
        else check_stated(o, "output_throughput_min_tok_s", e.output_throughput_min_tok_s),
        None
        if e.prefix_hit_rate_min is None
        else check_stated(o, "prefix_hit_rate_min", e.prefix_hit_rate_min),
        None if e.recommended_layout is None else check_recommended(o, e.recommended_layout),
        None if e.max_model_len_fits is None else check_max_model_len(o, e.max_model_len_fits),
    ]
    from capcliff.check.serving_checks import serving_assertions

    return [a for a in found if a is not None] + serving_assertions(o, e)


def scenario_result(
    dep: Deployment, *, baseline: Baseline | None, tolerance: float
) -> ScenarioResult:
    """Evaluate one scenario's assertions (and its baseline comparison)."""
    o, s = outcome(dep), dep.scenario
    by_type = dep.gpus_by_type()
    checks = assertions_of(o, s.expect)
    if baseline is not None:
        before = baseline.scenarios.get(s.name)
        checks += compare_baseline(o.figures, before, tolerance=tolerance)
    return ScenarioResult(
        name=s.name,
        model=s.model,
        gpu="+".join(by_type),
        gpus=s.gpu_count,
        gpus_by_type=by_type,
        engine=s.engine.value,
        layout=o.figures.layout,
        layout_source="spec" if s.layout != "auto" or s.disagg is not None else "plan",
        workload=o.workload,
        num_requests=o.num_requests,
        concurrency=o.concurrency,
        max_model_len=o.max_model_len,
        seed=s.seed,
        fits=o.sims is not None,
        reason=o.reason,
        figures=o.figures,
        assertions=checks,
    )


@dataclass(frozen=True)
class RunOptions:
    """How a check runs: the baseline, its tolerance, --force, a progress callback."""

    baseline: Baseline | None
    tolerance: float
    force: bool = False
    progress: Callable[[], None] | None = None
    warn: Callable[[str], None] | None = None  # told each resolution warning, one line each


def _scenario_checked(spec_file: SpecFile, index: int, run: RunOptions) -> ScenarioResult:
    """`scenario_result`, with input errors named by the spec file and the scenario."""
    scenario = spec_file.spec.scenario[index]
    baseline, tolerance = run.baseline, run.tolerance
    try:
        dep = deployment(spec_file, scenario, force=run.force, progress=run.progress)
        warn = run.warn
        if warn is not None:
            for warning in dep.resolved.warnings:
                warn(f"{spec_file.path}: scenario[{index}]: {warning}")
        return scenario_result(dep, baseline=baseline, tolerance=tolerance)
    except InputError as exc:
        where = f"scenario[{index}]"
        lines = [f"{spec_file.path}: {field_line(where, m)}" for m in str(exc).splitlines()]
        raise InputError("\n".join(lines)) from None


def _check_baseline_matches(baseline: Baseline, names: list[str]) -> None:
    """A baseline that holds none of the spec's scenarios is another spec's (or empty): every
    comparison would be skipped and the check pass having compared nothing. One scenario new
    since the baseline was written is skipped by design; all of them is an input error."""
    if any(name in baseline.scenarios for name in names):
        return
    held = ", ".join(sorted(baseline.scenarios)[:5]) or "none"
    raise InputError(
        f"baseline: holds none of this spec's scenarios ({', '.join(names[:5])}); it holds "
        f"{held}: write it from this spec with --write-baseline"
    )


def run_checks(
    spec_file: SpecFile,
    *,
    baseline: Baseline | None = None,
    tolerance: float | None = None,
    force: bool = False,
    progress: Callable[[], None] | None = None,
    warn: Callable[[str], None] | None = None,
) -> CheckReport:
    """Evaluate every scenario of a loaded spec; compare with `baseline` when given.

    `tolerance` (relative; default the spec's `baseline_tolerance`, 5 %) is how much a baseline
    figure may worsen. Raises InputError (exit 2) for inputs the spec loader could not catch.
    """
    tol = spec_file.spec.baseline_tolerance if tolerance is None else tolerance
    if not 0 < tol < 1:
        raise InputError(f"tolerance: must be in (0, 1), got {tol}")
    if baseline is not None:
        _check_baseline_matches(baseline, [s.name for s in spec_file.spec.scenario])
    run = RunOptions(baseline, tol, force, progress, warn)
    results = [_scenario_checked(spec_file, i, run) for i in range(len(spec_file.spec.scenario))]
    return CheckReport(
        schema_version=SCHEMA_VERSION,
        spec=str(spec_file.path),
        baseline_compared=baseline is not None,
        tolerance=tol,
        scenarios=results,
    )


def check_spec_file(
    spec_file: SpecFile,
    *,
    baseline: Baseline | None,
    force: bool = False,
    progress: Callable[[], None] | None = None,
    warn: Callable[[str], None] | None = None,
) -> CheckReport:
    """What `capcliff check` computes for a spec already loaded (the CLI validates output paths
    against its inputs first): every scenario run; the report's exit_code says 0 or 1."""
    return run_checks(spec_file, baseline=baseline, force=force, progress=progress, warn=warn)
