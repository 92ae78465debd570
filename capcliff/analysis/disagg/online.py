"""`plan --disagg` at an offered rate: both kinds measured in their steady state.

With `--rate`, the figures of a split and of the aggregated layout it is compared with come from
the same rule as the aggregated online mode (`steady_state`, reused, not copied): the first 20 %
of the requests are warm-up, the window closes at the last arrival, throughput counts the
requests finished inside it, TTFT and TPOT p99 are over the requests that arrived inside it, and
the 95 % half-widths of the request rate and the mean TPOT come from batch means. The sample is
drawn by `OnlineWorkload` (unit-rate Poisson gaps divided by the rate: every candidate sees the
same arrivals) at the stopping rule's sizes (`rate_search.MIN_FIRST`, `capacity.FIRST_PER_CAP`,
`MAX_DOUBLINGS`): max(200, 5 x the most requests that can run, --num-requests) requests first (at
least one turnover of the running set after the warm-up), doubled until both half-widths are
within 5 % of their means, at most three times. The most that can run is the cap on running
requests or, when it is larger, the analytic KV cliff (every running request at its p99 peak):
a split's is its decode pool's, where the running requests are.

The search is coarse-to-fine, as `layout_capacity` searches aggregated layouts: every candidate
is ranked on the first sample; only the chosen one is grown until it settles (its confidence is
reported). A deployment serves the rate when its queue stays bounded (`SteadyState.saturated`
false) and its TTFT and TPOT p99 are within the SLOs.

Ranking at a rate (`online_rank`): a split that serves the rate ranks above every one that does
not (those rank by throughput). Among those that serve it, the fewer dollars per hour wins (per
million output tokens too: all serve the same rate x mean output tokens). Splits of one budget on
one GPU type cost the same, so there the one with the most room under the SLOs wins: the least of
max(TTFT p99 / its limit, TPOT p99 / its limit); without an SLO, the least mean end-to-end
time.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, replace

import numpy as np

from capcliff.analysis.deployment import Deployment
from capcliff.analysis.disagg.pools import PoolPlan, run_disagg
from capcliff.analysis.evaluate.capacity import FIRST_PER_CAP, MAX_DOUBLINGS
from capcliff.analysis.evaluate.online_load import OnlineWorkload
from capcliff.analysis.evaluate.rate_search import MIN_FIRST
from capcliff.analysis.evaluate.solver import Slo
from capcliff.analysis.evaluate.steady_state import (
    MIN_MEASURED,
    WARMUP_FRACTION,
    SteadyState,
    checkpoint_sizes,
    next_size,
    settle,
    settled_part,
    steady_state,
    timed,
)
from capcliff.analysis.workloads import WorkloadChoice
from capcliff.sim.disagg.pools import DisaggResult, FloatArray
from capcliff.sim.result import SimResult
from capcliff.sim.simulate import PausedRun
from capcliff.sim.traffic.workload import Arrival, Requests
from capcliff.units import counted


@dataclass
class OnlineSample:
    """Requests at the offered rate, drawn at any size (the same arrivals for every candidate)."""

    workload: OnlineWorkload
    rate_rps: float
    least: int  # the stopping rule's first sample at least: max(200, --num-requests)

    @classmethod
    def of(cls, choice: WorkloadChoice, seed: int) -> OnlineSample | None:
        """The sample of a Poisson `choice` with a rate; None for a batch."""
        if choice.arrival is Arrival.BATCH or choice.rate_per_s is None:
            return None
        online = OnlineWorkload(choice, seed)
        return cls(online, choice.rate_per_s, max(MIN_FIRST, int(choice.num_requests)))

    def first(self, running: int) -> int:
        """The stopping rule's first sample where at most `running` requests run at once."""
        return max(self.least, FIRST_PER_CAP * running)

    def most(self, running: int) -> int:
        """The stopping rule's largest sample."""
        return self.first(running) << MAX_DOUBLINGS

    def requests(self, n: int) -> Requests:
        """n requests arriving at the rate."""
        return self.workload.at_rate(n, self.rate_rps)


def disagg_steady(
    dep: Deployment,
    pools: tuple[PoolPlan, PoolPlan],
    sample: OnlineSample,
    *,
    concurrency: int | None,
    running: int,
    grow: bool,
    points: int = 64,
    prior: DisaggResult | None = None,
    observe: Callable[[DisaggResult], None] | None = None,
) -> tuple[DisaggResult, SteadyState]:
    """The split's run and steady state at the rate: on the first sample, or (`grow`) at the
    size the stopping rule settles at. `concurrency`: the decode pool's cap (None: the engine
    default); `running`: the most requests that can run in it (sets the sample sizes); `prior`:
    the run of the first sample, when already simulated; `observe`: given every two-pool run
    (`run_disagg`)."""
    first = sample.first(running)
    runs: dict[int, DisaggResult] = {} if prior is None else {first: prior}

    def run(n: int) -> SimResult:
        if n not in runs:
            runs[n] = run_disagg(dep, pools, sample.requests(n), concurrency=concurrency,
                                 points=points, observe=observe)  # fmt: skip
        return runs[n].serving

    if not grow:
        state = steady_state(run(first), open_loop=True)
        return runs[first], state
    done = settle(run, first=first, cap=sample.most(running), open_loop=True)
    return runs[done.requests], done.state


def aggregated_steady(
    run: Callable[[Requests], SimResult], sample: OnlineSample, running: int,
    *, behind_at: Slo | None = None, paused: Callable[[Requests], PausedRun] | None = None,
) -> tuple[SimResult, SteadyState]:  # fmt: skip
    """The aggregated layout's steady state at the rate (`run` simulates it; at most `running`
    requests run in it), grown by the stopping rule as the chosen split is. With `behind_at`
    (an SLO with a TTFT limit), a first sample whose first tokens fall behind the arrivals
    (`falls_behind`, beyond the rate x 2 x the TTFT limit that a queue meeting it may hold
    waiting, by Little's law) is not grown: its queue grows, so it is reported saturated.
    `paused` (a layout of one replica: `run`, lazily): past the first sample the largest one is
    simulated once and read at checkpoints as it runs (`_extended`), instead of restarting."""
    if paused is not None:
        return _extended_aggregated(run, paused, sample, running, behind_at)
    runs: dict[int, SimResult] = {}

    def one(n: int) -> SimResult:
        if n not in runs:
            runs[n] = run(sample.requests(n))
        return runs[n]

    first = sample.first(running)
    if behind_at is not None and math.isfinite(behind_at.ttft_s):
        result = one(first)
        waiting = queue_allowance(sample.rate_rps, behind_at.ttft_s)
        if falls_behind(result.arrival_s, result.arrival_s + result.ttft_s, waiting):
            state = steady_state(result, open_loop=True)
            rate = state.arrival_rps or sample.rate_rps  # a first sample too short for a window
            return result, replace(state, queue_growing=True, arrival_rps=rate)
    done = settle(one, first=first, cap=sample.most(running), open_loop=True)
    return runs[done.requests], done.state


def _extended_aggregated(
    run: Callable[[Requests], SimResult],
    paused: Callable[[Requests], PausedRun],
    sample: OnlineSample,
    running: int,
    behind_at: Slo | None,
) -> tuple[SimResult, SteadyState]:
    """`aggregated_steady` of one replica: the first sample as the restarting rule runs it; if
    it does not settle, the largest sample (the restarting rule's last size, drawn alike) run on
    from the size `next_size` predicts, read at checkpoints CHECKPOINT_GROWTH x apart
    (`sweep.report.settled_part`: the requests the rest of the run cannot change, read as a run
    of their own), stopping at the first that settles; the last is the whole run."""
    first, most = sample.first(running), sample.most(running)
    result = run(sample.requests(first))
    state = steady_state(result, open_loop=True)
    if behind_at is not None and math.isfinite(behind_at.ttft_s):
        waiting = queue_allowance(sample.rate_rps, behind_at.ttft_s)
        if falls_behind(result.arrival_s, result.arrival_s + result.ttft_s, waiting):
            rate = state.arrival_rps or sample.rate_rps  # a first sample too short for a window
            return result, replace(state, queue_growing=True, arrival_rps=rate)
    if state.settled or first >= most:
        return result, state
    largest = sample.requests(most)
    if not timed(largest, open_loop=True):  # sessions: restarted (`settle`), first run reused
        done = settle(
            lambda n: result if n == first else run(sample.requests(n)),
            first=first, cap=most, open_loop=True,
        )  # fmt: skip
        return done.result, done.state
    extended = paused(largest)
    for k in checkpoint_sizes(min(most, next_size(state, first)), most):
        point = extended.advance(k)
        if point.complete:
            break
        part = settled_part(largest, point, open_loop=True)
        if len(part) < MIN_MEASURED:
            continue
        result = extended.part(part)
        state = steady_state(result, open_loop=True)
        if state.settled:
            return result, state
    result = extended.advance(most).result
    return result, steady_state(result, open_loop=True)


def serves(state: SteadyState, slo: Slo | None) -> bool:
    """Whether the deployment serves the offered rate: a bounded queue and p99 within `slo`."""
    if state.saturated:
        return False
    return slo is None or (state.ttft_p99_s <= slo.ttft_s and state.tpot_p99_s <= slo.tpot_s)


SHORT_FRACTION = 0.2  # a deficit of at least 20 % of the window's arrivals ...
NOISE_SIGMAS = 4.0  # ... and of 4 standard deviations of a balanced queue's backlog change
LEAST_ARRIVALS = 100  # fewer arrivals in the window are too few to tell


def queue_allowance(rate_rps: float, ttft_limit_s: float) -> float:
    """Requests a queue that meets a TTFT limit may hold in steady state, and so a deficit
    `falls_behind` must exceed: by Little's law a mean wait of the limit at `rate_rps` holds
    rate x limit requests; twice that, as a p99 limit allows a mean below it and a first sample
    fluctuates (requests; rate in requests/s, limit in seconds)."""
    return 2 * rate_rps * ttft_limit_s


def falls_behind(arrived_s: FloatArray, done_s: FloatArray, waiting: float = 0.0) -> bool:
    """Whether a queue cannot keep up: in the steady window (the arrival of request
    ceil(0.2 n) to the last arrival, `steady_state`'s), of the N requests that arrive (at least
    `LEAST_ARRIVALS`), fewer than N - max(0.2 N, 4 sqrt(2 N)) are done (`done_s`).

    A queue that keeps up finishes about what arrives: its backlog over the window changes by a
    random walk of about sqrt(2 N) requests even at full load (arrivals and services each about
    as variable as a Poisson count), so a deficit of 4 of those and of 20 % is a growing queue,
    not noise (unlike a first sample's `SteadyState.saturated`, which flags queues that keep up
    once the sample grows). `waiting`: a deficit that a queue keeping up may still show (requests
    it holds in steady state), which the deficit must exceed too."""
    if len(arrived_s) != len(done_s) or not len(arrived_s):
        return False
    order = np.sort(arrived_s)
    lo, hi = order[math.ceil(WARMUP_FRACTION * len(order))], order[-1]
    came = int(np.count_nonzero((arrived_s >= lo) & (arrived_s <= hi)))
    finished = int(np.count_nonzero((done_s >= lo) & (done_s <= hi)))
    deficit = max(SHORT_FRACTION * came, NOISE_SIGMAS * math.sqrt(2 * came), waiting)
    return came >= LEAST_ARRIVALS and came - finished > deficit


def prefill_falls_behind(result: DisaggResult) -> bool:
    """Whether the prefill pool cannot keep up with the rate (`falls_behind` of its prompts'
    arrivals and prefill ends). The prefill pool is simulated before, and apart from, the decode
    pool (round robin by arrival), so this holds whatever the decode pool; with fewer instances
    of the same layout each gets more of the rate, so they fall behind too. (One-token outputs
    never reach the decode pool; with any, this says no.)"""
    return falls_behind(result.serving.arrival_s, result.prefill_done_s)


def slo_share(state: SteadyState, slo: Slo | None) -> float:
    """How much of the SLO the deployment uses: max(TTFT p99 / limit, TPOT p99 / limit); without
    an SLO (or limits), the mean end-to-end time in seconds. Lower is better."""
    shares = [
        value / limit
        for value, limit in (
            (state.ttft_p99_s, math.inf if slo is None else slo.ttft_s),
            (state.tpot_p99_s, math.inf if slo is None else slo.tpot_s),
        )
        if math.isfinite(limit) and limit > 0
    ]
    return max(shares) if shares else state.e2e_mean_s


def online_rank(
    state: SteadyState, slo: Slo | None, usd_per_hour: float = 0.0
) -> tuple[bool, float, float]:
    """Higher is better: serving the rate first; then the fewer $ per hour (splits of one GPU
    type and budget tie here: the same GPUs serving the same rate) and the least SLO share;
    for one that does not serve it, the most throughput."""
    if serves(state, slo):
        return True, -usd_per_hour, -slo_share(state, slo)
    return False, state.output_tok_s, 0.0


def rank_reason(
    state: SteadyState, slo: Slo | None, *, among: int, of: int, first: int, usd_per_hour: float
) -> str:
    """Why the chosen split ranked first on the first sample (`state`), in numbers: `among` of
    the `of` candidates served the rate there; the chosen one costs `usd_per_hour`."""
    if among == 0:
        return (
            f"none of the {counted(of, 'split')} tried serves the rate within the SLOs on the "
            f"first "
            f"{first:,} requests; this one serves the most ({state.output_tok_s:,.0f} output "
            "tok/s in steady state)"
        )
    share = slo_share(state, slo)
    room = f"uses {share:.0%} of the SLO" if slo is not None else f"{share:.3g} s mean E2E"
    return (
        f"{among} of {counted(of, 'split')} {'serves' if among == 1 else 'serve'} the rate on "
        f"the first {first:,} requests; this one "
        f"costs the fewest $ per hour (${usd_per_hour:,.2f}; at equal cost, the most room "
        f"under the SLOs wins) and {room}"
    )
