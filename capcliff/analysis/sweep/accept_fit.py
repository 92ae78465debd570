"""The mean acceptance length a speculative deployment's benchmark implies.

A speculative step emits E tokens per sequence on average (perf/speculation.py: tokens per step,
1 <= E <= K + 1); the published defaults describe one dataset and one draft, the user's traffic
another. Given benchmark runs of the deployment with speculation on (mean TPOT and output
throughput), this finds the E at which the simulator reproduces them, keeping the step times and
the request overhead as the profile (or a step calibration applied with it) prices them: the step
terms are the engine's,
E is the traffic's, and one benchmark cannot tell a slower step from a lower E (TPOT is about the
step time over E), so step terms belong to a benchmark without speculation.

The fit: g(E) = the median over the measured figures of log(simulated / measured) for TPOT and
for seconds per output token, simulated at E. More accepted tokens per step never lengthen a
sequence's time per token, so g falls with E; bisection on log E over [1, K + 1] finds g = 0.
Where the figures need an E outside the bounds, the bound is returned and says so.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np

from capcliff.analysis.deployment import Deployment
from capcliff.analysis.sweep.step_fit import PointFit, Timings, simulate_point
from capcliff.calibrate.benchmarks import BenchmarkPoint
from capcliff.catalog.layout import Layout
from capcliff.errors import InputError
from capcliff.perf.speculation import Acceptance

# Set: bisection steps on log E over [1, K + 1]; 12 halve log(4) to 3e-4, E to 0.03 %.
BISECTION_STEPS = 12
FITTED_SOURCE = "calibrated from benchmark results"


@dataclass(frozen=True)
class AcceptFit:
    """The fitted mean acceptance length and every point's measured, modeled and fitted figures
    (modeled: the deployment's own acceptance; calibrated: the fitted one)."""

    accept_length: float  # tokens per speculative step
    modeled_length: float  # the acceptance the deployment had (default or given)
    bound: str | None  # "lower" or "upper" when the figures need an E outside [1, K + 1]
    points: tuple[PointFit, ...]


def with_accept_length(dep: Deployment, length: float) -> Deployment:
    """`dep` with its drafts accepting `length` tokens per step on average (fitted)."""
    return replace(dep, acceptance=Acceptance(length, FITTED_SOURCE))


def _log_gaps(simulated: list[Timings], points: list[BenchmarkPoint]) -> list[float]:
    gaps = []
    for t, p in zip(simulated, points, strict=True):
        if p.mean_tpot_s:
            gaps.append(math.log(t.tpot_s / p.mean_tpot_s))
        if p.output_throughput_tok_s:
            gaps.append(math.log(t.s_per_token * p.output_throughput_tok_s))
    return gaps


def fit_accept_length(dep: Deployment, layout: Layout, points: list[BenchmarkPoint]) -> AcceptFit:
    """The mean acceptance length of `dep`'s speculation that reproduces `points` (see the
    module docstring); the deployment's step terms are kept."""
    if dep.speculation is None or dep.acceptance is None:
        raise InputError("speculative: fitting an acceptance length needs --speculative")
    measured = [p for p in points if p.mean_tpot_s or p.output_throughput_tok_s]
    if not measured:
        raise InputError("benchmark: no row has a mean TPOT or an output throughput to fit")
    terms = dict(dep.budget.step_time_terms)

    def run(length: float) -> list[Timings]:
        return [simulate_point(with_accept_length(dep, length), layout, p, terms) for p in measured]

    def g(length: float) -> float:
        return float(np.median(_log_gaps(run(length), measured)))

    top = dep.speculation.num_speculative_tokens + 1.0
    low, high = 0.0, math.log(top)
    bound = None
    if g(1.0) <= 0:  # even one token per step is as fast as measured or faster
        length, bound = 1.0, "lower"
    elif g(top) >= 0:  # even every draft token accepted is slower than measured
        length, bound = top, "upper"
    else:
        for _ in range(BISECTION_STEPS):
            mid = (low + high) / 2
            low, high = (mid, high) if g(math.exp(mid)) > 0 else (low, mid)
        length = math.exp((low + high) / 2)
    modeled = [simulate_point(dep, layout, p, terms) for p in measured]
    fits = tuple(
        PointFit(p, modeled=m, calibrated=t)
        for p, m, t in zip(measured, modeled, run(length), strict=True)
    )
    return AcceptFit(length, dep.acceptance.tokens_per_step, bound, fits)
