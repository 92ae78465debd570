"""How much traffic one replica carries: its saturation throughput and its rate within an SLO.

1. Saturation: with a backlog (every request waiting) the engine always has work, so the rate it
   finishes requests in steady state is the most it can sustain at that cap: any higher offered
   rate grows the queue without bound. Caps are tried at CAP_FACTORS x a base: the steady-state
   cliff (`steady_cliff`) or, when it comes first, the throughput knee (`throughput_knee`),
   never above the engine's default max_num_seqs (vLLM V1: 1,024 on GPUs of 70 GiB or more, see
   `memory.engines`). The base comes from a fixed reference sample (`OnlineWorkload.reference`:
   its own seed), so the grid never moves with the sample size or the run's seed. Caps are
   climbed until the throughput falls past the cliff or the engine thrashes. The chosen cap is
   the smallest within CAP_TOLERANCE of the best throughput: past it more concurrency buys
   nothing but latency. A backlog that cannot start stationary (sessions, requests that share
   content) is extended, not restarted: its largest sample is simulated once, lazily, with the
   stopping rule evaluated at checkpoints as it runs (`_extended_point`).
2. Within an SLO: for each cap (best saturation throughput first), the highest Poisson rate in
   (0, saturation] whose steady state meets the TTFT and TPOT p99 limits with a bounded queue
   (`highest_rate`, with the light load that gives the best latencies). A cap whose saturation
   throughput is below the best rate found, less CAP_TOLERANCE, cannot win and is skipped; any
   other cap after the first is first tried at that rate (`rate_search.highest_rate_above`),
   on the same samples (common random numbers), sharing the runs where the cap never binds.
   Of the caps whose rates come within CAP_TOLERANCE of the best, the smallest is chosen (the
   rates cannot be told apart at the sample sizes used, and the smallest cap keeps the most KV
   in reserve), and its rate is checked on a fresh sample with the p99s' sampling noise added
   (`verified`). Every cap of the grid up to the climb's end (here also the first cap past the
   throughput peak, `past_peak`) is simulated here, the lowest included: which caps the SLO
   search sees must not hang on a saturation comparison at the edge of CAP_TOLERANCE, or the
   recommended cap would jump a whole grid step with the seed.
3. No SLO: the capacity is the saturation throughput; the default latency target is a bounded
   queue, and the latencies reported are those at (1 - headroom) x saturation.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from capcliff.analysis.evaluate.cap_base import (
    held_tokens,
    reserved_cliff,
    steady_cliff,
    throughput_knee,
    users_end,
)
from capcliff.analysis.evaluate.online_load import OnlineWorkload
from capcliff.analysis.evaluate.rate_search import (
    CAP_TOLERANCE,
    MIN_FIRST,
    EarlyMiss,
    RatePoint,
    RateProbes,
    early_miss,
    highest_rate,
    highest_rate_above,
    meets_slo,
    peak_in_system,
    rate_resolution,
)
from capcliff.analysis.evaluate.solver import Slo, analytic_cliff_percentile, config_at
from capcliff.analysis.evaluate.steady_state import (
    Settled,
    SteadyState,
    checkpoint_sizes,
    settle,
    settle_paused,
    steady_state,
    timed,
)
from capcliff.analysis.evaluate.unhit_runs import steps_run
from capcliff.analysis.workloads import REFERENCE_REQUESTS
from capcliff.errors import InputError
from capcliff.perf.step_time import StepTimeModel
from capcliff.sim.config import KVCapacity, SimConfig
from capcliff.sim.policies import Requeue, policy
from capcliff.sim.result import SimResult
from capcliff.sim.simulate import Checkpoint, PausedRun, simulate
from capcliff.sim.traffic.workload import Requests
from capcliff.sim.traffic.workload_rules import MAX_REQUESTS

CAP_FACTORS = (0.5, 0.71, 1.0, 1.41, 2.0)  # x the steady-state cliff (half-octave steps)
THRASH_PREEMPTIONS = 0.5  # preemptions per request past which a cap is not simulated further
FALL_STOP = 0.9  # stop climbing once throughput falls below 90 % of the best
FIRST_PER_CAP = 5  # the stopping rule's first sample: max(MIN_FIRST, 5 x cap) requests ...
PROBE_PER_CAP = 1  # a cap past the base is first tried with cap requests (thrashing?)
# A stationary start settles from 4 x the first size (20 x cap): batches of two decode times (about
# two turnovers of the running set each) need about 20 turnovers for ten of them.
SETTLE_FROM = 4
MAX_DOUBLINGS = 3  # ... doubled at most three times (8 x the first)
CLIFF_PERCENTILE = 99.0
KNEE_GRID_FACTOR = 1.41  # the knee sits one grid step above the base, so the grid spans it
HALF_GRID_STEP = 1.19  # sqrt(1.41): caps closer than this to the engine's limit are the limit


@dataclass
class Resumable:
    """A paused run handed on once (`take`): the first caller goes on with it, any other
    simulates afresh, which gives the same steps."""

    run: PausedRun | None
    sample_size: int

    def take(self, sample_size: int) -> PausedRun | None:
        """The paused run, if it runs a sample of `sample_size` and nobody took it."""
        run, self.run = self.run, None
        return run if run is not None and sample_size == self.sample_size else None


@dataclass(frozen=True)
class CapPoint:
    """One cap at saturation (per replica)."""

    cap: int
    state: SteadyState
    result: SimResult
    requests: int
    # an extended run paused at this point's checkpoint (`_extended_point`), in this process
    # only: it is dropped when the point is pickled to or from a worker
    paused: Resumable | None = field(default=None, compare=False, repr=False)

    def __getstate__(self) -> dict[str, object]:
        state = dict(self.__dict__)
        state["paused"] = None
        return state

    @property
    def thrashing(self) -> bool:
        """Preempting more than THRASH_PREEMPTIONS times per request simulated."""
        return self.result.total_preemptions > THRASH_PREEMPTIONS * len(self.result.finish_s)

    @property
    def hit_cliff(self) -> bool:
        """Whether KV ran short: a preemption or a waiting request refused for lack of KV."""
        return self.result.total_preemptions > 0 or self.result.admission_blocked


@dataclass(frozen=True)
class ReplicaCapacity:
    """What one replica of a layout carries (requests/s) and at which cap."""

    analytic_cliff: int
    points: tuple[CapPoint, ...]
    cap: int
    saturation_rps: float
    sustained_rps: float  # within the SLO; the saturation rate when there is none
    at_sustained: SteadyState  # at that rate; without an SLO at (1 - headroom) x it
    best_ttft_p99_s: float | None  # at light load: the least this replica can do
    best_tpot_p99_s: float | None
    simulated_requests: int
    settled: bool
    probes: tuple[RatePoint, ...] = ()  # every offered rate the SLO search simulated
    sustained: RatePoint | None = None  # the run at the sustained rate (within an SLO)
    # the verification stopped where the rate was worth nothing to the caller (`verified`'s
    # `worthless`): the rate and latencies above are not the replica's
    worthless: bool = False

    @property
    def simulated_cliff(self) -> int | None:
        """The smallest cap at which KV ran short at saturation."""
        return next((p.cap for p in self.points if p.hit_cliff), None)

    @property
    def meets_slo(self) -> bool:
        """Whether any rate met the SLO."""
        return self.sustained_rps > 0


@dataclass(frozen=True)
class Replica:
    """The models of one replica and the engine settings it runs."""

    steps: StepTimeModel
    capacity: KVCapacity
    config: SimConfig

    @property
    def parks_preempted(self) -> bool:
        """Whether the engine puts a preempted request at the back of its queue (SGLang), which
        in a backlog parks it until the backlog has drained (`steady_state`, parked
        preemptions)."""
        return policy(self.config.policy).requeue is Requeue.BACK

    def run(self, requests: Requests, cap: int) -> SimResult:
        """Simulate `requests` on this replica with max_num_seqs = cap."""
        return simulate(requests, self.steps, self.capacity, config_at(self.config, cap, 1))

    def steps_run(self, requests: Requests, cap: int) -> SimResult:
        """`run` for a reader of its steps alone (its prefix-cache figures may be left out:
        `unhit_runs.steps_run`)."""
        config = config_at(self.config, cap, 1)
        return steps_run(
            requests, config, lambda c: simulate(requests, self.steps, self.capacity, c)
        )

    def paused(self, requests: Requests, cap: int) -> PausedRun:
        """`run`, lazily: a run that goes on as far as it is asked (`PausedRun.advance`)."""
        return PausedRun(requests, self.steps, self.capacity, config_at(self.config, cap, 1))


def cap_grid(workload: OnlineWorkload, replica: Replica) -> tuple[int, int]:
    """(analytic p99 cliff per replica, the grid's base: the steady-state cliff, or the
    throughput knee when that comes first) of the fixed reference sample."""
    reference = workload.reference(REFERENCE_REQUESTS)
    capacity = replica.capacity
    cliff = analytic_cliff_percentile(
        reference, blocks_per_replica=capacity.blocks, block_size=capacity.block_size,
        percentile=CLIFF_PERCENTILE,
    )  # fmt: skip
    if policy(replica.config.policy).reserves_full_sequence:
        steady = reserved_cliff(reference, capacity)
    else:
        steady = steady_cliff(reference, capacity)
    knee = throughput_knee(replica.steps, held_tokens(reference), 2 * steady)
    base = min(steady, round(knee / KNEE_GRID_FACTOR), replica.config.max_num_seqs)
    return cliff, max(1, base)


def _sample_sizes(cap: int, least: int | None, workload: OnlineWorkload) -> tuple[int, int]:
    """(first, largest) sample of the stopping rule at `cap`; `least` raises the first. A
    session's requests run one after another, so a session backlog holds FIRST_PER_CAP x cap
    sessions (x requests per session requests) to keep `cap` busy. A trace: its rows, once."""
    if workload.is_trace:  # a trace has its own size: the stopping rule cannot grow it
        size = len(workload.backlog(0))
        return size, size
    per_cap = round(FIRST_PER_CAP * cap * workload.requests_per_unit())
    first = max(MIN_FIRST, per_cap, least or 0)
    return first, first * 2 ** workload.max_doublings(MAX_DOUBLINGS)


def saturation_point(
    replica: Replica,
    workload: OnlineWorkload,
    cap: int,
    least: int | None,
    *,
    settle_it: bool = True,
    prior: CapPoint | None = None,
    probe: bool = False,
) -> CapPoint:
    """Steady-state throughput at `cap` with every request waiting, started from the stationary
    running set where the workload allows (`OnlineWorkload.saturation_sample`); the stopping
    rule's size, or only its first size when not `settle_it`. `prior`: that first run, when
    already done. `probe` (a cap past the grid's base, where the engine may thrash): a sample of
    PROBE_PER_CAP x cap first, and a cap that thrashes there is not simulated further (a
    stationary start is in steady state at once, so a short sample shows the thrashing)."""
    first, most = _sample_sizes(cap, least, workload)
    stationary = workload.stationary_start()
    if probe and stationary and not workload.is_trace:
        thrashed = _probed(replica, workload, cap)
        if thrashed is not None:
            return thrashed
    if not stationary and not workload.is_trace:
        return _extended_point(replica, workload, cap, (first, most), settle_it, prior)
    # a stationary start, or a trace (its own size: simulated once)
    seeds = cap if stationary else 0
    mean_output = workload.mean_output_tokens()
    parked = stationary and replica.parks_preempted  # read only with seeds
    samples: dict[int, Requests] = {}

    def sample_of(n: int) -> Requests:
        if n not in samples:
            samples[n] = workload.saturation_sample(n, cap)
        return samples[n]

    def measure(result: SimResult) -> SteadyState:
        return steady_state(
            result, open_loop=False, seeds=seeds, mean_output=mean_output, parked=parked
        )

    if settle_it and stationary:  # the first size cannot hold ten batches
        first = min(most, first * SETTLE_FROM)
    sample = sample_of(first)
    if prior is not None and prior.cap == cap and prior.requests == first:
        result = prior.result
    else:
        result = replica.run(sample, cap)
    thrashing = result.total_preemptions > THRASH_PREEMPTIONS * len(sample)
    if thrashing or not settle_it:  # a thrashing cap is never chosen: no need to settle it
        return CapPoint(cap, measure(result), result, first)
    done: Settled = settle(
        lambda n: result if n == first else replica.run(sample_of(n), cap),
        first=first, cap=most, measure=measure,
    )  # fmt: skip
    return CapPoint(cap, done.state, done.result, done.requests)


def _probed(replica: Replica, workload: OnlineWorkload, cap: int) -> CapPoint | None:
    """`saturation_point`'s probe: PROBE_PER_CAP x cap requests from the stationary running set;
    the point if the cap thrashes there, else None."""
    small = max(MIN_FIRST, round(PROBE_PER_CAP * cap))
    trial = workload.saturation_sample(small, cap)
    seen = replica.run(trial, cap)
    if seen.total_preemptions <= THRASH_PREEMPTIONS * len(trial):
        return None
    state = steady_state(
        seen, open_loop=False, seeds=cap, mean_output=workload.mean_output_tokens(),
        parked=replica.parks_preempted,
    )  # fmt: skip
    return CapPoint(cap, state, seen, small)


def _extended_point(
    replica: Replica,
    workload: OnlineWorkload,
    cap: int,
    sizes: tuple[int, int],
    settle_it: bool,
    prior: CapPoint | None,
) -> CapPoint:
    """`saturation_point` of a backlog that cannot start stationary (sessions, requests that
    share content): the largest sample of the stopping rule is simulated once, lazily, and the
    rule is evaluated at checkpoints as it runs (`settle_paused`), instead of simulating the first
    size, then twice it from the start. Not `settle_it`: the first checkpoint, with the run left
    paused for the caller that settles this cap (`prior`). Sessions: the window also closes when
    the users can no longer keep the cap busy (`cap_base.users_end`, requests still running
    counted as never ending)."""
    first, most = sizes
    sample = workload.saturation_sample(most, cap)
    held = None if prior is None or prior.cap != cap or prior.paused is None else prior.paused
    run = held.take(len(sample)) if held is not None else None
    if run is None:
        run = replica.paused(sample, cap)
    mean_output = workload.mean_output_tokens()

    def measure(point: Checkpoint) -> SteadyState:
        until = point.horizon_s
        if workload.sessions:
            finish = np.full(len(sample), np.inf)
            finish[point.finished] = point.result.finish_s
            end = users_end(sample.client, finish, cap)
            until = until if end is None else min(until, end)
        return steady_state(point.result, open_loop=False, mean_output=mean_output, until_s=until)

    start = run.advance(first)
    thrashing = start.result.total_preemptions > THRASH_PREEMPTIONS * len(start.finished)
    if thrashing or not settle_it:  # a thrashing cap is never chosen: no need to settle it
        paused = None if thrashing or start.complete else Resumable(run, len(sample))
        return CapPoint(cap, measure(start), start.result, len(start.finished), paused)
    point, state = settle_paused(
        lambda k: start if k <= first else run.advance(k), checkpoint_sizes(first, most), measure
    )
    return CapPoint(cap, state, point.result, len(point.finished))


def sweep_caps(replica: Replica, base: int) -> list[int]:
    """The cap grid of `saturation_sweep`: CAP_FACTORS x base, within the engine's limit. Where
    a factor is clipped to the limit, a cap within half a grid step below it is dropped: 63
    beside a `--max-num-seqs` of 64 is the limit again, and the plan would name it as a choice."""
    limit = max(base, replica.config.max_num_seqs)
    caps = sorted({max(1, min(limit, round(base * f))) for f in CAP_FACTORS})
    if any(round(base * f) > limit for f in CAP_FACTORS):
        caps = [c for c in caps if c == limit or limit / c >= HALF_GRID_STEP]
    return caps


def saturation_sweep(
    replica: Replica,
    workload: OnlineWorkload,
    base: int,
    least: int | None,
    first: CapPoint | None = None,
    known: dict[int, CapPoint] | None = None,
    *,
    lowest: bool = False,
) -> tuple[CapPoint, ...]:
    """Caps on the grid from the first factor above 1/2 upwards, until throughput falls past the
    cliff or the engine thrashes; the lowest factor when the next one up is the choice, or
    always with `lowest` (the SLO search, which may prefer it for latency).
    `first` is a point already simulated (the coarse pass), reused when it lies on the grid;
    `known`: points already simulated by `sweep_point` (in parallel), by cap.

    With `lowest` the climb also stops at the first cap whose throughput, plus its 95 %
    half-width, is below the best so far (`past_peak`): a larger cap runs KV shorter still. The
    caps past it matter to the SLO search only if they beat the smaller caps' rates, and at a
    rate within the SLO the requests in the system stay far below such caps, where a cap does
    not bind and its runs are the smaller cap's (`rate_search`)."""
    caps = sweep_caps(replica, base)
    points: list[CapPoint] = []

    def at(cap: int) -> CapPoint:
        if known and cap in known:
            return known[cap]
        return sweep_point(replica, workload, base, least, first, cap)

    if len(caps) == 1:  # every factor rounds to one cap (a base of 1: --max-num-seqs 1)
        return (at(caps[0]),)
    for cap in caps[1:]:
        points.append(at(cap))
        best = max(p.state.throughput_rps for p in points)
        if points[-1].state.throughput_rps < FALL_STOP * best or points[-1].thrashing:
            break
        if lowest and past_peak(points[-1], best):
            break
    if len(caps) > 1 and (lowest or chosen_cap(tuple(points)).cap == caps[1]):
        points.insert(0, at(caps[0]))
    return tuple(points)


def past_peak(point: CapPoint, best: float) -> bool:
    """Whether `point`'s saturation throughput is below `best` (requests/s) by more than its
    own 95 % half-width."""
    state = point.state
    return state.throughput_rps * (1 + state.rps_half_width) < best


def sweep_point(
    replica: Replica,
    workload: OnlineWorkload,
    base: int,
    least: int | None,
    first: CapPoint | None,
    cap: int,
) -> CapPoint:
    """One cap of `saturation_sweep` (a pure function of its arguments: the same point whether
    simulated in the sweep or ahead of it in a worker process)."""
    return saturation_point(replica, workload, cap, least, prior=first, probe=cap > base)


def chosen_cap(points: tuple[CapPoint, ...]) -> CapPoint:
    """The smallest cap within CAP_TOLERANCE of the best saturation throughput among the caps
    that do not thrash (all of them when every cap thrashes)."""
    calm = [p for p in points if not p.thrashing] or list(points)
    best = max(p.state.throughput_rps for p in calm)
    return next(p for p in calm if p.state.throughput_rps >= (1 - CAP_TOLERANCE) * best)


def meets_slo_surely(state: SteadyState, slo: Slo) -> bool:
    """`meets_slo` with each p99's 95 % half-width added (`steady_state.p99_half_width`): another
    sample of the same load (a `sweep`, a `check`, the deployment itself) meets the limits too,
    not only this one."""
    ttft, tpot = _p99s_surely(state)
    return not state.saturated and ttft <= slo.ttft_s and tpot <= slo.tpot_s


def _p99s_surely(state: SteadyState) -> tuple[float, float]:
    """The TTFT and TPOT p99s (seconds) with their 95 % half-widths added."""
    return (
        state.ttft_p99_s * (1 + state.ttft_p99_half_width),
        state.tpot_p99_s * (1 + state.tpot_p99_half_width),
    )


VERIFY_SEED = 1_000_003  # set: the fresh sample's seed is the workload's plus this
VERIFY_BACKOFF = 0.03  # set: the rate steps down 3 % at a time (the bisection's resolution)
VERIFY_TRIES = 8  # ... at most this many times (about 22 % below the rate the search found)
# set: the fresh sample is twice the search's: a p99's spread between samples of the search's size
# is about ±10 %, and the figure reported is this sample's
VERIFY_SIZE = 2
# set: how fast the verification's margin falls with the rate, d ln(margin) / d ln(rate), to
# guess the step that first passes (`_next_rung`), and the most steps one guess goes down before
# a step has passed. Only the number of runs depends on them, not the answer. Measured
# 2026-12-06: the margins of the Qwen3-32B plan's verifications fell 0.45-1.7 x as fast as the
# rate; the 70B fleet's fell that fast but from up to 2.4 x the limit, and then flattened (a
# guess past the passing step costs two runs, one short of it one).
VERIFY_ELASTICITY = 1.7
VERIFY_JUMP = 2


def _verification_run(
    run: Callable[[Requests, int], SimResult],
    paused: Callable[[Requests, int], PausedRun] | None,
    sample: Requests, cap: int, slo: Slo, mean_output: float,
) -> tuple[SimResult, SteadyState, EarlyMiss | None]:  # fmt: skip
    """`sample` at `cap` and its steady state: the whole run, or with `paused` (one replica,
    arrivals known up front) the part at which it surely misses the SLO
    (`rate_search.early_miss`)."""
    if paused is not None and timed(sample, open_loop=True):
        lazy = paused(sample, cap)
        early = early_miss(lazy, sample, slo, mean_output)
        if early is not None:
            return early.result, early.state, early
        result = lazy.advance(len(sample)).result
    else:
        result = run(sample, cap)
    return result, steady_state(result, open_loop=True, mean_output=mean_output), None


def _surely_margin(state: SteadyState, slo: Slo) -> float:
    """The larger of the p99s with their half-widths over their limits (`meets_slo_surely`
    passes at or below 1); inf with a growing queue or no p99."""
    ttft, tpot = _p99s_surely(state)
    margin = max(ttft / slo.ttft_s, tpot / slo.tpot_s)
    return margin if not state.saturated and margin == margin else math.inf


def _next_rung(failed: tuple[int, float], passed: tuple[int, float] | None, end: int) -> int:
    """The step of the ladder to try next, strictly between the highest step known to miss and
    the lowest known to pass (or `end`, where the ladder stops), each given as (step, margin over
    the SLO). With both ends known: where the line through their log-margins crosses the limit.
    With only a missing step: where the margin would reach the limit if it fell
    VERIFY_ELASTICITY x as fast as the rate, at most VERIFY_JUMP steps down. One step down (or
    halfway, between two ends) where a margin is not finite."""
    low, margin = failed
    high = end if passed is None else passed[0]
    if not math.isfinite(margin):
        guess = low + 1 if passed is None else (low + high) // 2
    elif passed is not None:
        fall = math.log(margin) - math.log(max(passed[1], 1e-9))
        guess = low + math.ceil((high - low) * math.log(margin) / fall) if fall > 0 else low + 1
    else:
        per_step = VERIFY_ELASTICITY * -math.log1p(-VERIFY_BACKOFF)
        guess = low + min(VERIFY_JUMP, math.ceil(math.log(margin) / per_step))
    return min(high - 1, max(low + 1, guess))


def verified(
    run: Callable[[Requests, int], SimResult], workload: OnlineWorkload, slo: Slo,
    found: RatePoint, probes: list[RatePoint], own: int, ranks: int = 1,
    worthless: Callable[[float], bool] | None = None,
    paused: Callable[[Requests, int], PausedRun] | None = None,
) -> RatePoint | None:  # fmt: skip
    """`found` checked on a sample drawn independently of the one the search chose it on
    (`run`: a replica's simulation; `ranks`: the replicas it simulates together, each offered
    `found`'s rate and sample size).

    The search keeps the highest rate whose estimate passes the SLO, so the estimate it keeps is
    biased toward passing (the winner's curse): at that rate a fresh sample, or `sweep`, sees a
    higher p99. The answer is the first step of a ladder down from `found`'s rate, VERIFY_BACKOFF
    at a time, at which a fresh sample of VERIFY_SIZE x `own` (the stopping rule's size at the
    found cap) meets the SLO with its p99s' sampling noise added (`meets_slo_surely`), and that
    sample's figures are the ones reported: another sample at that rate meets the SLO too.
    Unchanged when no step passes (the search's point is returned).

    The fresh sample is one draw whose arrival times are scaled by 1 / rate (common random
    numbers), so its p99s fall step by step down the ladder. The ladder is searched rather than
    walked: from a step that misses, the next one tried is where the margin would reach the limit
    (`_next_rung`), until a passing step lies next to a missing one (the top step is always
    tried; when every step tried misses, the others are tried top first). Where passing is
    monotone down the ladder that is the step a walk finds, in at most one run more than the
    walk and mostly fewer (the 2026-12-06 Qwen3-32B plan: 25 runs instead of 31); where it is
    not, a passing step at or below the walk's (never a higher rate).

    `worthless(rate)`: whether a rate is worth nothing to the caller (a fleet's replica that
    could not be the cheapest at it); true of every rate below one it is true of. When no step
    above the first worthless one passes, None is returned, with no simulation at or below it:
    any step left that passes is worth nothing too. (The one case this changes: every step left
    misses, where the unverified `found` would be returned.)

    `paused`: `run`, lazily (one replica): a step's run is read part way
    (`rate_search.early_miss`) and stopped once it misses the SLO surely; the step's point is
    then that part's."""
    fresh = workload.reseeded(workload.seed + VERIFY_SEED)
    size = VERIFY_SIZE * own
    if size * ranks > MAX_REQUESTS:  # named num_requests, which the user had set to 20
        raise InputError(
            f"gpus: {ranks:,} replicas simulated together at {size:,} requests each "
            f"({size * ranks:,}) is past the {MAX_REQUESTS:,} requests capcliff simulates in one "
            "run; plan fewer GPUs (--gpus, --nodes): a fleet grows by whole replicas"
        )
    rates = [found.rate_rps]
    for _ in range(VERIFY_TRIES - 1):
        rates.append(rates[-1] * (1 - VERIFY_BACKOFF))
    end = next(
        (k for k, rate in enumerate(rates) if worthless is not None and worthless(rate)),
        VERIFY_TRIES,
    )
    tried: dict[int, tuple[RatePoint, float]] = {}

    mean_output = fresh.mean_output_tokens()

    def passes(k: int) -> bool:
        rate = rates[k]
        sample = fresh.at_rate(size * ranks, rate * ranks)
        result, state, early = _verification_run(run, paused, sample, found.cap, slo, mean_output)
        point = RatePoint(
            found.cap, rate, state, meets_slo(state, slo), size, result.total_preemptions,
            early.peak if early else peak_in_system(result),
        )  # fmt: skip
        probes.append(point)
        tried[k] = (point, _surely_margin(state, slo))
        return meets_slo_surely(state, slo)

    failed, passed = -1, end  # the highest step known to miss, the lowest known to pass (or end)
    while passed - failed > 1:
        k = 0
        if failed >= 0:
            upper = (passed, tried[passed][1]) if passed < end else None
            k = _next_rung((failed, tried[failed][1]), upper, end)
        if passes(k):
            passed = k
        else:
            failed = k
    if passed == end:  # every step tried missed: the others too, top first, as a walk would
        passed = next((k for k in range(end) if k not in tried and passes(k)), end)
    if passed < end:
        return tried[passed][0]
    return None if end < VERIFY_TRIES else found


def saturation_caps(
    replica: Replica,
    workload: OnlineWorkload,
    *,
    slo: Slo | None,
    least: int | None = None,
    first: CapPoint | None = None,
) -> tuple[CapPoint, ...]:
    """The caps `replica_capacity` simulates at saturation before its search within `slo`."""
    _, base = cap_grid(workload, replica)
    return saturation_sweep(replica, workload, base, least, first, lowest=slo is not None)


def sustained_bound(points: tuple[CapPoint, ...], slo: Slo | None) -> float:
    """An upper bound of the rate `replica_capacity` sustains from these caps, requests/s per
    replica: the best saturation throughput among the caps that do not thrash (all of them when
    every cap thrashes), times (1 - CAP_TOLERANCE) within an SLO.

    Why it bounds: without an SLO the rate is the chosen cap's saturation throughput, one of
    those caps (`chosen_cap`). Within one, every rate the search probes at a cap lies at or below
    (1 - CAP_TOLERANCE) x that cap's saturation throughput (`highest_rate`'s top probe,
    `highest_rate_above`'s top rate; `_narrow` stays inside its bracket), and the verification
    only steps the rate down (`verified`)."""
    calm = [p for p in points if not p.thrashing] or list(points)
    best = max(p.state.throughput_rps for p in calm)
    return best if slo is None else (1 - CAP_TOLERANCE) * best


def decode_bound(replica: Replica, workload: OnlineWorkload) -> float | None:
    """An upper bound of any saturation throughput `saturation_caps` can find, so of the rate
    `replica_capacity` sustains, requests/s per replica, from the step-time model alone (None
    where it does not apply: speculative decoding, whose steps make several tokens a sequence).

    Why it bounds: a step makes at most one token for each sequence it schedules (a decode, or a
    prefill that completes), and the simulator times a step over B such sequences with
    `StepTimeModel.step_time_s` of its whole load: at least B tokens and sequences and some KV
    read, never less time than a decode of B sequences reading no KV (the model's time grows
    with each term of the load; tested, `tests/test_decode_bound.py`). No cap on the sweep's grid
    exceeds its largest (`sweep_caps`), so tokens/s <= max over B <= that cap of B / that time,
    and a rate in steady state is tokens/s over the mean output length (the workload's)."""
    if replica.steps.spec is not None:
        return None
    _, base = cap_grid(workload, replica)
    top = max(sweep_caps(replica, base))
    steps = replica.steps
    tok_s = max(b / steps.step_time_s(b, b, 0.0, 0.0) for b in range(1, top + 1))
    return tok_s / workload.mean_output_tokens()


def replica_capacity(
    replica: Replica,
    workload: OnlineWorkload,
    *,
    slo: Slo | None,
    least: int | None = None,
    headroom: float = 0.2,
    first: CapPoint | None = None,
    known: dict[int, CapPoint] | None = None,
    points: tuple[CapPoint, ...] | None = None,
    worthless: Callable[[float], bool] | None = None,
) -> ReplicaCapacity:
    """The saturation throughput, the chosen cap and the rate sustained within `slo`.

    Without an SLO the capacity is the saturation throughput, and the latencies reported are
    those at (1 - headroom) x it, where the queue is bounded (the default latency target).
    `known`: caps of the sweep already simulated (`sweep_point`); `points`: the whole sweep
    (`saturation_caps`), already simulated. `worthless`: rates worth nothing to the caller
    (`verified`); a verification that reaches one marks the capacity `worthless`.
    """
    cliff, base = cap_grid(workload, replica)
    if points is None:
        points = saturation_sweep(
            replica, workload, base, least, first, known, lowest=slo is not None
        )
    top = chosen_cap(points)
    sizes = max(p.requests for p in points)
    settled = top.state.settled
    if slo is None:
        rate = top.state.throughput_rps
        state = top.state
        if rate > 0:
            load = workload.at_rate(top.requests, (1 - headroom) * rate)
            operating = replica.steps_run(load, top.cap)
            state = steady_state(
                operating,
                open_loop=True,
                mean_output=workload.mean_output_tokens(),
                until_s=last_start(load),
            )
        return ReplicaCapacity(
            analytic_cliff=cliff, points=points, cap=top.cap, saturation_rps=rate,
            sustained_rps=rate, at_sustained=state,
            best_ttft_p99_s=None, best_tpot_p99_s=None, simulated_requests=sizes,
            settled=settled,
        )  # fmt: skip
    return _within_slo(replica, workload, slo, points, top, cliff, settled, worthless)


def last_start(requests: Requests) -> float | None:
    """Sessions at a rate: the last session's start (s), past which no session starts and the
    offered load falls off as the sessions running end (their later turns still arrive, so the
    open-loop window, closed at the last arrival, would take in that drain: 1.81 requests/s
    measured of 2.02 offered, agentic on one tp2 replica); None for requests that all arrive
    on their own."""
    later = np.isnan(requests.arrival_s)
    if not later.any() or later.all():
        return None
    return float(np.nanmax(requests.arrival_s))


def _within_slo(
    replica: Replica,
    workload: OnlineWorkload,
    slo: Slo,
    points: tuple[CapPoint, ...],
    top: CapPoint,
    cliff: int,
    settled: bool,
    worthless: Callable[[float], bool] | None = None,
) -> ReplicaCapacity:
    best: RatePoint | None = None
    lightest: RatePoint | None = None
    founds: list[RatePoint] = []
    calm = [p for p in points if not p.thrashing] or list(points)  # as `chosen_cap`
    # one sample size for every cap (common random numbers), and one resolution for the layout
    size = max(p.requests for p in calm)
    resolution = rate_resolution(max(p.state.throughput_rps for p in calm))
    # a request that meets the SLO spends about its TTFT and its output's TPOTs in the system
    cycle = slo.ttft_s + workload.mean_output_tokens() * slo.tpot_s
    probes = RateProbes(
        replica.config, slo, workload.at_rate, replica.run, workload.mean_output_tokens(), [],
        cycle, replica.paused,
    )  # fmt: skip
    for point in sorted(calm, key=lambda p: -p.state.throughput_rps):
        if point.state.throughput_rps <= 0:
            continue
        if best is not None and point.state.throughput_rps <= (1 - CAP_TOLERANCE) * best.rate_rps:
            continue  # cannot come within CAP_TOLERANCE of the best rate found
        sat = point.state.throughput_rps
        if best is None:
            found, light = highest_rate(probes, point.cap, sat, size)
            if lightest is None or light.state.tpot_p99_s < lightest.state.tpot_p99_s:
                lightest = light
        else:
            found = highest_rate_above(probes, point.cap, sat, size, best, resolution)
        if found is not None:
            founds.append(found)
            best = max(founds, key=lambda f: f.rate_rps)
    if best is not None:  # caps within CAP_TOLERANCE of the best rate: the smallest, as chosen_cap
        best = min(
            (f for f in founds if f.rate_rps >= (1 - CAP_TOLERANCE) * best.rate_rps),
            key=lambda f: (f.cap, -f.rate_rps),
        )
    own = {p.cap: p.requests for p in calm}
    chosen = (
        None if best is None
        else verified(
            replica.run, workload, slo, best, probes.points, own[best.cap], worthless=worthless,
            paused=replica.paused,
        )
    )  # fmt: skip
    if lightest is None:  # no throughput to search under: the sample is far too small
        lightest = RatePoint(top.cap, 0.0, top.state, False)
    return ReplicaCapacity(
        analytic_cliff=cliff,
        points=points,
        cap=chosen.cap if chosen else top.cap,
        saturation_rps=max(p.state.throughput_rps for p in calm),
        sustained_rps=chosen.rate_rps if chosen else 0.0,
        at_sustained=chosen.state if chosen else lightest.state,
        best_ttft_p99_s=lightest.state.ttft_p99_s,
        best_tpot_p99_s=lightest.state.tpot_p99_s,
        simulated_requests=max(p.requests for p in points),
        settled=settled,
        probes=tuple(probes.points),
        sustained=chosen,
        worthless=best is not None and chosen is None,
    )
