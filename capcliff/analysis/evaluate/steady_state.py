"""The steady state of an online simulation: warm-up and drain left out, batch-means confidence.

A simulation of n requests starts empty (warm-up) and ends when the last request has left
(drain); neither is the state a deployment serving traffic lives in. The rule used everywhere:

- warm-up: the first WARMUP_FRACTION of the requests. With arrivals over time (Poisson, a trace)
  the window opens at the arrival of request ceil(WARMUP_FRACTION x n) in arrival order; with a
  backlog (every request waiting at t = 0, the saturation experiment) or closed-loop clients, it
  opens when that many requests have finished (at n >= 10 x the cap that is two turnovers of
  the running set).
- drain: the window closes when the last request arrives (open loop), or when the last waiting
  request starts (backlog, closed loop): past it the running set only shrinks.
- estimates: throughput = requests finished inside the window / its length; latency percentiles
  over the requests that started inside it.
- confidence: the window is cut into BATCHES equal batches (batch means); the 95 % half-width of
  the mean is t(0.975, BATCHES - 1) x s / sqrt(BATCHES), for the request rate and the mean TPOT.
- settled: both half-widths are within REL_HALF_WIDTH of their means and at least MIN_MEASURED
  requests were measured; `settle` doubles the requests until then, up to a cap.
- extended, not restarted (`settle_paused`): the largest sample is simulated once, lazily, and
  the rule is evaluated at checkpoints while it runs (each CHECKPOINT_GROWTH x the requests
  finished at the one before). At a checkpoint the window closes at the run's horizon (the first
  token of the earliest request still running: every request that started before it has
  finished), so the requests measured are those a whole run would measure there, whatever is
  still running; the last checkpoint is the whole run.

A backlog that starts from the stationary running set (`OnlineWorkload.saturation_sample`: its
first `seeds` requests are that set) is measured differently (`_stationary`):
- warm-up: until the last seed has its first token (the set has been prefilled); the seeds are
  then in their steady state, so nothing more is left out;
- throughput: the output tokens generated inside the window (each request's tokens spread evenly
  over its decode, first token to last) per second, over the workload's mean output tokens per
  request. In steady state a replica finishes requests at its token rate / E[O] (conservation:
  every request leaves with its O tokens), and the token rate is far steadier than a count of
  completions of heavy-tailed requests: an indirect estimator (Carson and Law, "Conservation
  equations and variance reduction in queueing simulations", Operations Research 28(3), 1980).
  Over independent seeds it halved the spread of the `reasoning` saturation rate;
- batches: as many as fit, up to BATCHES, each at least RESIDENCE_PER_BATCH x the mean decode
  time of a request long. A request's tokens fall into every batch it spans, so batches shorter
  than a request are correlated and their spread understates the error: with ten batches over
  five turnovers of the running set, the stated 95 % half-width was 0.5 x the one measured over
  ten seeds; with batches of two decode times it matched or was wider (2,000-4,000-request
  samples of the default plan's layouts). The half-width uses Student's t with batches - 1
  degrees of freedom.
- parked preemptions (`parked`): an engine that puts a preempted request at the back of its
  queue (SGLang: `_add_request_to_queue` appends a retracted request to `waiting_queue`, which
  its FCFS policy never reorders) parks it behind the whole backlog, so a request preempted
  before the last start runs again only in the drain. The requests in the system then pile up
  tokens that no completion inside the window carries, the running set drifts toward fresh
  requests, and the conservation law the token estimator rests on fails: on Qwen3-30B-A3B
  (dpa2, 476 per rank, `reasoning`) its batches climbed 1.10, 1.22, 1.45 requests/s while 1.07
  finished per second, and none of the 4,188 preempted requests finished inside the window.
  When a preemption came before the window closes, the throughput is the direct count (requests
  finished inside the window / its length, batch means over BATCHES batches, as an open-loop
  run's): the rate at which the engine finishes requests, which is what an overloaded open-loop
  run (`sweep --rate`) serves (2.13 against the token estimator's 2.51 for the group, 16,000
  requests at 2.6/s), and the offered rate below which its queue stays bounded (one rank:
  bounded at 1.0 per second, growing from 1.05).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

from capcliff.sim.result import SimResult, linear_quantiles

if TYPE_CHECKING:
    from capcliff.sim.simulate import Checkpoint, IntArray
    from capcliff.sim.traffic.workload import Requests

FloatArray = npt.NDArray[np.float64]

WARMUP_FRACTION = 0.2  # set: the share of requests treated as warm-up
BATCHES = 10  # set: batch means over ten batches (Law & Kelton suggest 10-30)
# Student's t, 97.5th percentile, for 1 ... 9 degrees of freedom (any statistics table)
T_975 = (12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262)
RESIDENCE_PER_BATCH = 2.0  # set: a batch spans at least two mean decode times (see above)
# `next_size` (set): growth factors tried, the share of the target aimed at, and the batches
# below which a window is grown to hold about TARGET_BATCHES
GROWTH_STEPS = (1.5, 2.0, 3.0, 4.0, 6.0, 8.0)
AIM = 0.8
MIN_BATCHES = 4
TARGET_BATCHES = 8
# set: each checkpoint of an extended run (`settle_paused`) at 1.25 x the requests of the one
# before: evaluating the rule costs a few ms against about a second of simulation per thousand
# session requests, so checking often costs nothing and stops the run soon after it settles
CHECKPOINT_GROWTH = 1.25
REL_HALF_WIDTH = 0.05  # set: settled when the 95 % half-widths are within 5 % of the means
MIN_MEASURED = 100  # set: fewer measured requests never count as settled
# set: a point judged against a latency limit (a sweep's or a check's p99s) also needs its p99
# half-widths within this: the p99 of a few thousand requests varies ±10 % between samples
P99_REL_HALF_WIDTH = 0.05
# set: an open-loop queue is unbounded when the last quarter of the window waits twice as long as
# the first quarter, plus this many seconds (a margin for waits near zero).
QUEUE_GROWTH_MARGIN_S = 1.0


@dataclass(frozen=True)
class SteadyState:
    """Steady-state estimates of one simulation (requests/s, tokens/s, seconds)."""

    requests: int  # simulated
    measured: int  # finished inside the window
    window_s: tuple[float, float]
    throughput_rps: float
    output_tok_s: float
    arrival_rps: float | None  # open loop: arrivals inside the window / its length
    ttft_p99_s: float
    tpot_p99_s: float
    tpot_mean_s: float
    e2e_mean_s: float
    rps_half_width: float  # relative, 95 %
    tpot_half_width: float  # relative, 95 %
    queue_growing: bool  # open loop: waits grew across the window (more offered than served)
    batches: int = BATCHES  # batch means the half-widths came from
    # relative 95 % half-widths of the p99s (batch quantiles, `p99_half_width`); inf: not
    # estimated (a backlog's window, or too few requests)
    ttft_p99_half_width: float = math.inf
    tpot_p99_half_width: float = math.inf

    @property
    def settled(self) -> bool:
        """Whether the estimates are tight enough to stop simulating more requests."""
        return (
            self.measured >= MIN_MEASURED
            and self.rps_half_width <= REL_HALF_WIDTH
            and self.tpot_half_width <= REL_HALF_WIDTH
        )

    @property
    def p99_settled(self) -> bool:
        """Whether the TTFT and TPOT p99s are tight enough to judge a latency limit on."""
        return max(self.ttft_p99_half_width, self.tpot_p99_half_width) <= P99_REL_HALF_WIDTH

    @property
    def saturated(self) -> bool:
        """Open loop: more arrived than was served (the queue grows without bound)."""
        if self.arrival_rps is None:
            return False
        short = self.throughput_rps * (1 + self.rps_half_width) < 0.97 * self.arrival_rps
        return short or self.queue_growing


def relative_half_width(values: FloatArray) -> float:
    """95 % half-width of the mean of batch values over the mean (inf when undefined)."""
    finite = values[np.isfinite(values)]
    if len(finite) < 2:
        return math.inf
    mean = float(finite.mean())
    if mean <= 0:
        return math.inf
    t = T_975[min(len(finite), len(T_975) + 1) - 2]
    return t * float(finite.std(ddof=1)) / math.sqrt(len(finite)) / mean


def p99_half_width(values: FloatArray, batches: int = BATCHES) -> float:
    """Relative 95 % half-width of a p99 by batch quantiles: the requests (in start order) cut
    into `batches` consecutive batches, the p99 of each, the t half-width of their mean over it
    (Seila, "A batching approach to quantile estimation in regenerative simulations",
    Management Science 28(5), 1982). Consecutive requests share their bursts, so the spread of
    the batch p99s, not the count of requests, says how far another sample's p99 may fall."""
    parts = [p[np.isfinite(p)] for p in np.array_split(values, batches)]
    return relative_half_width(np.array([_p99(p) for p in parts if len(p)]))


def _p99(values: FloatArray) -> float:
    """`np.percentile` of the finite values at 99, to the bit (`linear_quantiles`, without
    numpy's per-call machinery: a steady state takes up to 22); 0 when none is finite."""
    finite = values[np.isfinite(values)]
    return linear_quantiles(finite, [99 / 100])[0] if len(finite) else 0.0


def _window(result: SimResult, open_loop: bool) -> tuple[float, float]:
    n = len(result.finish_s)
    k = min(n - 1, math.ceil(WARMUP_FRACTION * n))
    if open_loop:
        arrivals = np.sort(result.arrival_s)
        return float(arrivals[k]), float(arrivals[-1])
    start_s = result.arrival_s + result.ttft_s
    return float(np.sort(result.finish_s)[k]), float(start_s.max())


def _tpot_batches(tpot: FloatArray, batches: int = BATCHES) -> FloatArray:
    parts = [p for p in np.array_split(tpot, batches) if np.isfinite(p).any()]
    return np.array([float(np.nanmean(p)) for p in parts])


def _queue_growing(ttft: FloatArray) -> bool:
    if len(ttft) < 8:
        return False
    quarter = len(ttft) // 4
    return float(ttft[-quarter:].mean()) > 2 * float(ttft[:quarter].mean()) + QUEUE_GROWTH_MARGIN_S


def steady_state(
    result: SimResult,
    *,
    open_loop: bool,
    seeds: int = 0,
    mean_output: float | None = None,
    until_s: float | None = None,
    parked: bool = False,
) -> SteadyState:
    """Steady-state estimates of `result` under the module's warm-up and drain rule. `seeds`:
    a backlog whose first `seeds` requests are the stationary running set (`_stationary`).
    `mean_output`: the workload's E[O] (tokens); open loop, output tokens/s are then the
    request rate x E[O] (the same conservation law), not the window's own tokens. `until_s`:
    the window closes there at the latest (users who run out of work, `cap_base.users_end`).
    `parked`: the engine requeues a preempted request at the back of its queue (the module
    docstring's parked preemptions; read with `seeds` only)."""
    if seeds > 0 and not open_loop:
        return _stationary(result, seeds, mean_output, parked=parked)
    lo, hi = _window(result, open_loop)
    if until_s is not None:
        hi = min(hi, until_s)
    length = hi - lo
    done = (result.finish_s >= lo) & (result.finish_s <= hi)
    start = result.arrival_s if open_loop else result.arrival_s + result.ttft_s
    order = np.argsort(start, kind="stable")
    inside = order[(start[order] >= lo) & (start[order] <= hi)]
    if length <= 0 or len(inside) < MIN_MEASURED or done.sum() < MIN_MEASURED:
        return whole_run(result, open_loop=open_loop)
    edges = np.linspace(lo, hi, BATCHES + 1)
    counts, _ = np.histogram(result.finish_s[done], bins=edges)
    tpot = result.tpot_s[inside]
    arrivals = None
    if open_loop:
        arrivals = float(((result.arrival_s >= lo) & (result.arrival_s <= hi)).sum()) / length
    return SteadyState(
        requests=len(result.finish_s),
        measured=int(done.sum()),
        window_s=(lo, hi),
        throughput_rps=float(done.sum()) / length,
        output_tok_s=_tokens_per_s(result, done, length, mean_output),
        arrival_rps=arrivals,
        ttft_p99_s=_p99(result.ttft_s[inside]),
        tpot_p99_s=_p99(tpot),
        tpot_mean_s=float(np.nanmean(tpot)) if np.isfinite(tpot).any() else 0.0,
        e2e_mean_s=float(result.e2e_s[inside].mean()),
        rps_half_width=relative_half_width(counts / (length / BATCHES)),
        tpot_half_width=(
            relative_half_width(_tpot_batches(tpot)) if np.isfinite(tpot).any() else 0.0
        ),
        queue_growing=open_loop and _queue_growing(result.ttft_s[inside]),
        ttft_p99_half_width=p99_half_width(result.ttft_s[inside]),
        tpot_p99_half_width=p99_half_width(tpot) if np.isfinite(tpot).any() else 0.0,
    )


def _tokens_per_s(
    result: SimResult, done: npt.NDArray[np.bool_], length: float, mean_output: float | None
) -> float:
    """Output tokens/s of the requests finished in the window, or their count x E[O]."""
    if mean_output is None:
        return float(result.output_tokens[done].sum()) / length
    return float(done.sum()) / length * mean_output


def _token_rates(result: SimResult, edges: FloatArray) -> FloatArray:
    """Output tokens/s generated in each interval between `edges`, each request's tokens spread
    evenly over its decode (first token to last; a one-token output at its finish)."""
    first = result.arrival_s + result.ttft_s
    finish = result.finish_s
    tokens = result.output_tokens.astype(np.float64)
    span = finish - first
    timed = span > 0
    per_s = np.where(timed, tokens / np.where(timed, span, 1.0), 0.0)
    rates = []
    for lo, hi in itertools.pairwise(edges):
        overlap = np.clip(np.minimum(finish, hi) - np.maximum(first, lo), 0.0, None)
        points = tokens[~timed & (finish >= lo) & (finish < hi)].sum()
        rates.append((float((per_s * overlap).sum()) + float(points)) / (hi - lo))
    return np.array(rates)


def _stationary(
    result: SimResult, seeds: int, mean_output: float | None, *, parked: bool = False
) -> SteadyState:
    """A backlog started from the stationary running set (the module docstring's rule; with
    `parked` and a preemption before the window closes, its parked-preemption rule)."""
    start = result.arrival_s + result.ttft_s
    lo, hi = float(start[:seeds].max()), float(start.max())
    length = hi - lo
    done = (result.finish_s >= lo) & (result.finish_s <= hi)
    own = np.arange(len(start)) >= seeds
    order = np.argsort(start, kind="stable")
    inside = order[own[order] & (start[order] >= lo) & (start[order] <= hi)]
    if length <= 0 or len(inside) < 2:
        return whole_run(result, open_loop=False)
    per_request = mean_output or float(result.output_tokens[seeds:].mean())
    if parked and result.first_preemption is not None and result.first_preemption[1] < hi:
        return _finished_rate(result, (lo, hi), done, inside, per_request)
    decode_s = float(np.mean(result.finish_s - start))
    batches = min(BATCHES, int(length / (RESIDENCE_PER_BATCH * decode_s))) if decode_s > 0 else 1
    rates = _token_rates(result, np.linspace(lo, hi, max(batches, 1) + 1))
    tok_s = float(rates.mean())
    tpot = result.tpot_s[inside]
    some = bool(np.isfinite(tpot).any())
    half = batches >= 2
    return SteadyState(
        requests=len(start), measured=int(done.sum()), window_s=(lo, hi),
        throughput_rps=tok_s / per_request, output_tok_s=tok_s, arrival_rps=None,
        ttft_p99_s=_p99(result.ttft_s[inside]), tpot_p99_s=_p99(tpot),
        tpot_mean_s=float(np.nanmean(tpot)) if some else 0.0,
        e2e_mean_s=float(result.e2e_s[inside].mean()),
        rps_half_width=relative_half_width(rates) if half else math.inf,
        tpot_half_width=(
            relative_half_width(_tpot_batches(tpot, batches)) if half and some else
            0.0 if half else math.inf
        ),
        queue_growing=False, batches=batches,
    )  # fmt: skip


def _finished_rate(
    result: SimResult,
    window: tuple[float, float],
    done: npt.NDArray[np.bool_],
    inside: npt.NDArray[np.intp],
    per_request: float,
) -> SteadyState:
    """`_stationary`'s window read by the direct count (parked preemptions, module docstring):
    requests finished inside it / its length, with batch means over BATCHES batches; output
    tokens/s are that rate x `per_request` (E[O], tokens), as an open-loop run's with E[O].
    Latencies as `_stationary`'s: over the requests that started inside the window."""
    lo, hi = window
    length = hi - lo
    finished = int(done.sum())
    if finished < MIN_MEASURED:
        return whole_run(result, open_loop=False)
    counts, _ = np.histogram(result.finish_s[done], bins=np.linspace(lo, hi, BATCHES + 1))
    rate = finished / length
    tpot = result.tpot_s[inside]
    some = bool(np.isfinite(tpot).any())
    return SteadyState(
        requests=len(result.finish_s), measured=finished, window_s=(lo, hi),
        throughput_rps=rate, output_tok_s=rate * per_request, arrival_rps=None,
        ttft_p99_s=_p99(result.ttft_s[inside]), tpot_p99_s=_p99(tpot),
        tpot_mean_s=float(np.nanmean(tpot)) if some else 0.0,
        e2e_mean_s=float(result.e2e_s[inside].mean()),
        rps_half_width=relative_half_width(counts / (length / BATCHES)),
        tpot_half_width=relative_half_width(_tpot_batches(tpot)) if some else 0.0,
        queue_growing=False,
    )  # fmt: skip


def whole_run(result: SimResult, *, open_loop: bool) -> SteadyState:
    """The whole run as the estimate, when the sample is too small for a window (every request
    started at once): never settled, so the output says the sample is too small."""
    span = result.makespan_s
    n = len(result.finish_s)
    tpot = result.tpot_s
    finite = np.isfinite(tpot).any()
    return SteadyState(
        requests=n, measured=0, window_s=(0.0, span), throughput_rps=n / span if span else 0.0,
        output_tok_s=float(result.output_tokens.sum()) / span if span else 0.0,
        arrival_rps=None, ttft_p99_s=_p99(result.ttft_s), tpot_p99_s=_p99(tpot),
        tpot_mean_s=float(np.nanmean(tpot)) if finite else 0.0,
        e2e_mean_s=float(result.e2e_s.mean()), rps_half_width=math.inf,
        tpot_half_width=math.inf, queue_growing=False,
    )  # fmt: skip


@dataclass(frozen=True)
class Settled:
    """The run the stopping rule stopped at."""

    result: SimResult
    state: SteadyState
    requests: int


def settle(
    run: Callable[[int], SimResult],
    *,
    first: int,
    cap: int,
    measure: Callable[[SimResult], SteadyState] | None = None,
    open_loop: bool = False,
) -> Settled:
    """Simulate `first` requests, growing the sample until the steady state settles or `cap` is
    reached; the growth skips the sizes predicted not to settle (`next_size`). The steady state
    is `measure` of a run, or by default `steady_state` with `open_loop`."""
    n = first
    while True:
        result = run(n)
        state = measure(result) if measure else steady_state(result, open_loop=open_loop)
        if state.settled or n >= cap:
            return Settled(result, state, n)
        n = min(cap, next_size(state, n))


def next_size(state: SteadyState, n: int) -> int:
    """The next sample size after n requests that did not settle.

    With all BATCHES batches, n x 2^k (`doublings_needed`). With fewer (the window of a stationary
    start is cut into batches of at least RESIDENCE_PER_BATCH decode times, `_stationary`), more
    requests also add batches and degrees of freedom: a half-width is t(b - 1) s / sqrt(b) over
    batches of length W / b, and s / sqrt(b) falls as 1 / sqrt(W), so growing the window f times
    turns it into hw x t(b' - 1) / t(b - 1) / sqrt(f) with b' = min(BATCHES, floor(b f)). The
    smallest f in GROWTH_STEPS predicted to reach AIM x REL_HALF_WIDTH is taken. Under
    MIN_BATCHES the spread of so few batches says little, so the sample grows to hold about
    TARGET_BATCHES batches. Modeled."""
    batches = state.batches
    if batches >= BATCHES:
        return n << doublings_needed(state)
    if batches < MIN_BATCHES:
        return math.ceil(n * min(GROWTH_STEPS[-1], TARGET_BATCHES / max(batches, 1)))
    worst = max(state.rps_half_width, state.tpot_half_width)
    if state.measured < MIN_MEASURED or not math.isfinite(worst):
        return 2 * n
    for f in GROWTH_STEPS:
        grown = min(BATCHES, math.floor(batches * f))
        predicted = worst * T_975[grown - 2] / T_975[batches - 2] / math.sqrt(f)
        if predicted <= AIM * REL_HALF_WIDTH:
            return math.ceil(n * f)
    return n * round(GROWTH_STEPS[-1])


def doublings_needed(state: SteadyState) -> int:
    """Doublings to skip to, at least 1: the largest k with 2^k below the growth the 1/sqrt(n)
    law of a half-width asks for, (worst relative half-width / REL_HALF_WIDTH)^2. Below it the
    sample is predicted not to settle, so simulating it would be wasted; the jump stays short of
    the prediction because half-widths fall faster than 1/sqrt(n) (the warm-up share of the
    measured requests shrinks), so a sample the prediction reaches may settle earlier. Modeled."""
    worst = max(state.rps_half_width, state.tpot_half_width) / REL_HALF_WIDTH
    if state.measured < MIN_MEASURED or not math.isfinite(worst) or worst <= 1:
        return 1
    return max(1, math.ceil(math.log2(worst * worst)) - 1)


def checkpoint_sizes(first: int, most: int) -> list[int]:
    """Requests finished at each checkpoint of an extended run: `first`, then CHECKPOINT_GROWTH
    x the one before, ending at `most` (the whole sample)."""
    sizes = [min(first, most)]
    while sizes[-1] < most:
        sizes.append(min(most, max(sizes[-1] + 1, math.ceil(sizes[-1] * CHECKPOINT_GROWTH))))
    return sizes


def settle_paused(
    advance: Callable[[int], Checkpoint],
    sizes: Sequence[int],
    measure: Callable[[Checkpoint], SteadyState],
) -> tuple[Checkpoint, SteadyState]:
    """The stopping rule over one run extended instead of restarted: `advance(k)` runs the largest
    sample on until k requests have finished; the rule is evaluated at each of `sizes` (a
    checkpoint, `measure`), and the run stops at the first that settles, or at the last (the
    whole sample). A run that completes early (every request finished) stops there."""
    for k in sizes:
        point = advance(k)
        state = measure(point)
        if state.settled or point.complete or k >= sizes[-1]:
            return point, state
    raise ValueError("settle_paused: no checkpoint sizes")


def settled_part(sample: Requests, point: Checkpoint, *, open_loop: bool) -> IntArray:
    """The requests of a paused run of `sample` whose steady-state figures the rest of the run
    cannot change: those that started before the first that has not finished. A request starts
    at its arrival (open loop: given in `sample`, see `timed`) or at its first token (closed
    loop: `Checkpoint.horizon_s`).

    Every request that ends, starts or arrives inside the window of these requests alone
    (`steady_state`, which closes it at the last start among them) is one of them, so a fresh
    `steady_state` of their result is the whole run's reading over that window: no drain, as
    the run goes on past it. Input indices, ascending."""
    done = point.finished
    if open_loop:
        left = np.ones(len(sample), dtype=bool)
        left[done] = False
        edge = float(sample.arrival_s[left].min()) if left.any() else math.inf
        start = sample.arrival_s[done]
    else:
        edge = point.horizon_s
        start = point.result.arrival_s + point.result.ttft_s  # the first token, engine time
    return done[start < edge]


def timed(sample: Requests, *, open_loop: bool) -> bool:
    """Whether `settled_part` can read `sample`: closed loop, or every arrival known up front
    (a session's later turn, NaN, is sent when the turn before it ends)."""
    return not open_loop or bool(np.isfinite(sample.arrival_s).all())
