"""Step-time terms fitted to serving benchmark results by least squares.

Every step of the simulator costs `fixed_s + scale x v`, where v is the profile's roofline and
communication time of that step (`perf.step_time`). A benchmark run with `c` closed-loop clients
is simulated as such (each client sends its next request when the last one finishes). With every
step longer than zero, the order of events does not depend on step durations (admissions,
completions and preemptions happen at step boundaries counted in steps), so every timing the
simulation reports is `fixed_s x A + scale x B`: A from a run whose steps all take one unit of
fixed time, B from a run with no fixed time. Two simulations per point give A and B; the fit
minimises the squared relative errors of TPOT and of seconds per output token (1 / throughput)
over all points, a linear least-squares problem in (fixed_s, scale).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np

from capcliff.analysis.deployment import Deployment
from capcliff.analysis.evaluate.replica_models import deployment_profile, replica_models
from capcliff.analysis.evaluate.solver import config_at
from capcliff.calibrate.benchmarks import BenchmarkPoint
from capcliff.calibrate.calibration_file import step_terms_problem
from capcliff.catalog.layout import Layout
from capcliff.errors import InputError
from capcliff.perf.step_time import StepTimeModel, profile_efficiency
from capcliff.sim.config import KVCapacity, SimConfig
from capcliff.sim.simulate import simulate
from capcliff.sim.traffic.workload import (
    Arrival,
    Fixed,
    Requests,
    Uniform,
    WorkloadSpec,
    generate_requests,
)

# Requests per client when the benchmark does not say (InferenceX: num_prompts = 10 x conc).
REQUESTS_PER_CLIENT = 10
# At most this many requests are simulated per point: a guard for files that name huge runs. Below
# it every request the benchmark sent is simulated, so its first wave (clients arriving together)
# weighs in the mean TTFT as it did in the run (a cap of 320 made it 20 % of the mean at 64 clients
# where the run's 640 requests made it 10 %; docs/validation.md, "The first wave").
MAX_SIMULATED_REQUESTS = 20_000
UNIT_FIXED_S = 1e-3  # the fixed time of the basis run A (any positive value gives the same fit)
FIT_TERMS = ("fixed_s", "scale")


@dataclass(frozen=True)
class Timings:
    """Mean TPOT, mean TTFT and seconds per output token (makespan / tokens), seconds."""

    tpot_s: float
    ttft_s: float
    s_per_token: float
    preemptions: int = 0  # in the simulation: > 0 means the run went past the KV cliff

    def combine(self, a: float, other: Timings, b: float) -> Timings:
        """a x self + b x other (the preemptions of self: the schedule is the same)."""
        return Timings(
            a * self.tpot_s + b * other.tpot_s,
            a * self.ttft_s + b * other.ttft_s,
            a * self.s_per_token + b * other.s_per_token,
            self.preemptions,
        )


@dataclass(frozen=True)
class PointFit:
    """One benchmark point: measured, modeled (the profile) and calibrated (the fit)."""

    point: BenchmarkPoint
    modeled: Timings
    calibrated: Timings

    def throughput_error(self, which: Timings) -> float | None:
        """(predicted - measured) / measured output throughput, or None if not measured."""
        measured = self.point.output_throughput_tok_s
        return None if not measured else (1 / which.s_per_token - measured) / measured

    def tpot_error(self, which: Timings) -> float | None:
        """(predicted - measured) / measured mean TPOT, or None if not measured."""
        measured = self.point.mean_tpot_s
        return None if not measured else (which.tpot_s - measured) / measured

    def ttft_error(self, which: Timings) -> float | None:
        """(predicted - measured) / measured mean TTFT, or None if not measured."""
        measured = self.point.mean_ttft_s
        return None if not measured else (which.ttft_s - measured) / measured


@dataclass(frozen=True)
class StepFit:
    """Fitted step-time terms and every point's residuals."""

    fixed_s: float
    scale: float
    modeled_fixed_s: float  # the profile's own fixed time per step (scale 1)
    profile: str
    points: tuple[PointFit, ...]
    # seconds of each request outside the engine's steps (SimConfig.request_overhead_s): the
    # median over the fitted points of measured - simulated mean TTFT, at least 0
    request_overhead_s: float = 0.0

    @property
    def terms(self) -> dict[str, float]:
        """The terms as `--calibration` applies them."""
        return {
            "fixed_s": self.fixed_s, "scale": self.scale,
            "request_overhead_s": self.request_overhead_s,
        }  # fmt: skip


@dataclass(frozen=True)
class Basis:
    """A point's timings as a function of the terms: fixed_s x `fixed` + scale x `variable`."""

    point: BenchmarkPoint
    fixed: Timings  # per second of fixed time per step
    variable: Timings  # at scale 1 with no fixed time
    # the profile's own prediction where it is not linear in the terms (a step floor,
    # StepTimeModel.eager_floor_s, or a request overhead); None: fixed x the profile's fixed_s +
    # variable
    modeled: Timings | None = None


def point_requests(
    point: BenchmarkPoint, *, seed: int = 0, max_requests: int = MAX_SIMULATED_REQUESTS
) -> Requests:
    """The benchmark's closed-loop clients: `concurrency` clients, lengths fixed or uniform in
    [range_ratio x len, len], the file's request count (else 10 per client), at most
    `max_requests` (never fewer than one per client; a run of more clients than
    MAX_SIMULATED_REQUESTS is refused). The clients' first requests reach the engine
    `client_turnaround_s` apart and each next one that long after its previous one finishes
    (calibrate.benchmarks.CLIENT_TURNAROUND_S). The first `shared_prefix_tokens` of every prompt
    are one shared content (`_with_shared_prefix`)."""
    if point.concurrency > MAX_SIMULATED_REQUESTS:  # one request each: 1,000,000 ran for hours
        raise InputError(
            f"{point.row_id}: concurrency: {point.concurrency:,} clients is past the "
            f"{MAX_SIMULATED_REQUESTS:,} requests a fitted run simulates; give runs of fewer "
            "clients"
        )
    count = point.num_requests or REQUESTS_PER_CLIENT * point.concurrency
    count = max(min(count, max_requests), point.concurrency)

    def lengths(tokens: int) -> Fixed | Uniform:
        low = max(1, round(tokens * point.range_ratio))
        return Fixed(tokens) if low >= tokens else Uniform(low, tokens)

    spec = WorkloadSpec(
        num_requests=count,
        input=lengths(point.input_len),
        output=lengths(point.output_len),
        arrival=Arrival.CLIENTS,
        clients=point.concurrency,
        max_input_tokens=max(point.input_len, 1),
        max_output_tokens=max(point.output_len, 1),
        think_time_s=point.client_turnaround_s,
    )
    requests = _with_shared_prefix(
        generate_requests(spec, np.random.default_rng(seed)), point.shared_prefix_tokens
    )
    if point.client_turnaround_s <= 0:
        return requests
    arrival = requests.arrival_s.copy()
    first = min(point.concurrency, count)
    arrival[:first] = np.arange(first) * point.client_turnaround_s
    return replace(requests, arrival_s=arrival)


def _with_shared_prefix(requests: Requests, tokens: int) -> Requests:
    """`requests` whose first `tokens` prompt tokens are one content every request shares (a
    chat template's system message): content node 0 is that prefix, request i is node i + 1,
    forked from it after `tokens` tokens (`Requests`' content tree), so a prefix cache holds its
    full blocks once. 0 tokens: `requests` as they are (nothing shared)."""
    if tokens <= 0:
        return requests
    n = len(requests)
    if n and tokens > int(requests.input_tokens.min()):
        raise InputError(
            f"shared_prefix_tokens: {tokens} is longer than the shortest prompt "
            f"({int(requests.input_tokens.min())} tokens)"
        )
    return replace(
        requests,
        content_node=np.arange(1, n + 1, dtype=np.int64),
        content_parent=np.array([-1] + [0] * n, dtype=np.int64),
        content_fork_tokens=np.array([0] + [tokens] * n, dtype=np.int64),
    )


_Models = tuple[KVCapacity, StepTimeModel]


@dataclass(frozen=True)
class _Run:
    """What simulating one point needs besides its step-time terms."""

    requests: Requests
    capacity: KVCapacity
    steps: StepTimeModel  # with the deployment's own terms
    config: SimConfig
    dp: int
    # seconds each client's first request waits more (perf/first_wave.py); 0: none
    first_wave_s: float = 0.0

    def timings(self, steps: StepTimeModel) -> Timings:
        result = simulate(self.requests, steps, self.capacity, self.config, dp=self.dp)
        tokens = float(result.output_tokens.sum())
        # The first wave: nothing reaches the server before the clients' first requests, so
        # holding all of them first_wave_s longer runs the same schedule that much later; only
        # their TTFT (and E2E) and the run's duration grow by it. One client sends no wave: its
        # first prefill is the shape its warm-up ran (perf/first_wave.py).
        first = int(np.isfinite(self.requests.arrival_s).sum())
        wave = self.first_wave_s if first > 1 else 0.0
        return Timings(
            result.tpot.mean, result.ttft.mean + wave * first / len(self.requests),
            (result.makespan_s + wave) / tokens, result.total_preemptions,
        )  # fmt: skip


def _run(dep: Deployment, layout: Layout, point: BenchmarkPoint, cache: dict[int, _Models]) -> _Run:
    requests = point_requests(point)
    length = dep.context_length(requests)
    if length not in cache:
        memory = dep.memory(layout, length)
        if not memory.fits:
            raise InputError(f"layout: {layout.name} does not fit: {memory.reason}")
        cache[length] = replica_models(dep, memory, {})
    capacity, steps = cache[length]
    config = config_at(dep.sim_config(length), point.concurrency, layout.dp)
    # a benchmark run has a first wave (perf/first_wave.py), a steady state none
    return _Run(requests, capacity, steps, config, layout.dp, dep.first_wave[0])


def simulate_point(
    dep: Deployment, layout: Layout, point: BenchmarkPoint, terms: dict[str, float]
) -> Timings:
    """Mean TPOT and TTFT and seconds per output token of `point` simulated with `terms`."""
    run = _run(dep, layout, point, {})
    memory = dep.memory(layout, dep.context_length(run.requests))
    return run.timings(replica_models(dep, memory, terms)[1])


def _basis(run: _Run, point: BenchmarkPoint) -> Basis:
    # A floor is not linear in the terms, nor is a request overhead in seconds (it moves a
    # closed-loop client's next arrival against the steps), nor the host time per sequence
    # (perf/host_time.py; a calibration replaces it): the bases run without them, and the
    # profile's own prediction is simulated with them where it has them.
    steps = replace(
        run.steps, eager_floor_s=0.0, extend_floor_s=0.0, host_fixed_s=0.0, host_per_seq_s=0.0
    )
    bare = replace(run, config=replace(run.config, request_overhead_s=0.0), first_wave_s=0.0)
    fixed = bare.timings(replace(steps, step_overhead_s=UNIT_FIXED_S, variable_scale=0.0))
    variable = bare.timings(replace(steps, step_overhead_s=0.0, variable_scale=1.0))
    floored = run.steps.eager_floor_s > 0 or run.steps.extend_floor_s > 0
    delayed = run.config.request_overhead_s > 0 or run.first_wave_s > 0
    nonlinear = floored or run.steps.host_applies or delayed
    modeled = run.timings(run.steps) if nonlinear else None
    return Basis(point, fixed.combine(1 / UNIT_FIXED_S, fixed, 0.0), variable, modeled)


def modeled_fixed_s(dep: Deployment, layout: Layout) -> tuple[float, str]:
    """The profile's fixed time per step for `layout` and the profile's label."""
    profile, _ = deployment_profile(dep, {})
    eff = profile_efficiency(dep.model.arch, dep.hardware, layout, profile)
    return eff.step_overhead_s, profile.label


def _solve(bases: list[Basis], terms: tuple[str, ...], fixed0: float) -> tuple[float, float]:
    """Least squares on relative errors; `fixed_s` pinned to `fixed0` unless fitted, and to 0
    when the unconstrained fit would make it negative."""
    rows, targets = [], []
    for b in bases:
        for measured, fixed, variable in (
            (b.point.mean_tpot_s, b.fixed.tpot_s, b.variable.tpot_s),
            (_s_per_token(b.point), b.fixed.s_per_token, b.variable.s_per_token),
        ):
            # a modeled figure that is not finite (a TPOT of one-token answers) says nothing
            if measured and math.isfinite(fixed) and math.isfinite(variable):
                rows.append((fixed / measured, variable / measured))
                targets.append(1.0)
    if not rows:
        raise InputError(
            "benchmark: no run has a TPOT or a throughput the model can price (one-token "
            "answers have no TPOT); give runs of at least two output tokens"
        )
    a, y = np.array(rows), np.array(targets)
    if "fixed_s" in terms:
        (f, s), *_ = np.linalg.lstsq(a, y, rcond=None)
        if f >= 0:
            return float(f), float(s)
        fixed0 = 0.0
    rest = y - a[:, 0] * fixed0
    s = float(a[:, 1] @ rest / (a[:, 1] @ a[:, 1]))
    return fixed0, s


def _s_per_token(point: BenchmarkPoint) -> float | None:
    return 1 / point.output_throughput_tok_s if point.output_throughput_tok_s else None


def _check_count(points: int, terms: tuple[str, ...]) -> None:
    if points < len(terms):
        raise InputError(
            f"benchmark: {points} point{'s' if points != 1 else ''} cannot fit "
            f"{len(terms)} terms ({', '.join(terms)}); give at least {len(terms)} rows "
            "(runs at different concurrencies)"
        )


def point_bases(dep: Deployment, layout: Layout, points: list[BenchmarkPoint]) -> list[Basis]:
    """Each point's timings per second of fixed step time and per unit of scale (two
    simulations each); any fit over a subset of the points reuses them."""
    cache: dict[int, _Models] = {}
    return [_basis(_run(dep, layout, p, cache), p) for p in points]


def fit_bases(
    bases: list[Basis],
    *,
    fixed0: float,
    label: str,
    terms: tuple[str, ...] = FIT_TERMS,
    predict: list[Basis] | None = None,
) -> StepFit:
    """Fit `terms` (fixed_s and scale, or scale alone with fixed_s = `fixed0`) to `bases`; the
    result's points are `predict` (default: the fitted ones), modeled and calibrated."""
    _check_count(len(bases), terms)
    fixed, scale = _solve(bases, terms, fixed0)
    if scale <= 0:
        raise InputError(
            f"benchmark: the fit gives a step-time scale of {scale:.3g} (must be > 0); the "
            "points disagree with any positive step time: check the rows' units and lengths"
        )
    overhead = request_overhead(bases, fixed, scale)
    fits = tuple(
        PointFit(
            b.point,
            modeled=b.modeled or b.fixed.combine(fixed0, b.variable, 1.0),
            calibrated=_plus_overhead(b.fixed.combine(fixed, b.variable, scale), overhead),
        )
        for b in (bases if predict is None else predict)
    )
    return StepFit(fixed, scale, fixed0, label, fits, overhead)


def _plus_overhead(t: Timings, overhead_s: float) -> Timings:
    """`t` with the request overhead in its TTFT."""
    return replace(t, ttft_s=t.ttft_s + overhead_s)


def request_overhead(bases: list[Basis], fixed: float, scale: float) -> float:
    """Seconds per request outside the engine's steps that the measured TTFTs imply: the median
    over the points that measured one of (measured - simulated mean TTFT with the fitted step
    terms), at least 0 (0 without any measured TTFT). The median, because a point past the KV
    cliff or with a warm-up outlier in its mean TTFT disagrees for other reasons. Added to the
    simulated TTFT as the client sees it (`SimConfig.request_overhead_s`); a closed-loop client
    waits it between requests too, which lengthens its cycle by it (a few per cent of an E2E of
    seconds, not in the fitted throughput)."""
    gaps = [
        b.point.mean_ttft_s - b.fixed.combine(fixed, b.variable, scale).ttft_s
        for b in bases if b.point.mean_ttft_s
    ]  # fmt: skip
    return max(0.0, float(np.median(gaps))) if gaps else 0.0


def fit_step_terms(
    dep: Deployment,
    layout: Layout,
    points: list[BenchmarkPoint],
    *,
    terms: tuple[str, ...] = FIT_TERMS,
) -> StepFit:
    """Fit `terms` (fixed_s and scale, or scale alone) to `points` of one deployment."""
    _check_count(len(points), terms)
    fixed0, label = modeled_fixed_s(dep, layout)
    fit = fit_bases(point_bases(dep, layout, points), fixed0=fixed0, label=label, terms=terms)
    problem = step_terms_problem(fit.fixed_s, fit.scale)
    if problem is not None:  # the terms a calibration file refuses (calibration_file.py)
        raise InputError(f"benchmark: the fit's {problem}; check the rows against the flags")
    return fit
