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
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from capcliff.sim.result import SimResult

FloatArray = npt.NDArray[np.float64]

WARMUP_FRACTION = 0.2  # set: the share of requests treated as warm-up
BATCHES = 10  # set: batch means over ten batches (Law & Kelton suggest 10-30)
T_975_9 = 2.262  # Student's t, 97.5th percentile, 9 degrees of freedom
REL_HALF_WIDTH = 0.05  # set: settled when the 95 % half-widths are within 5 % of the means
MIN_MEASURED = 100  # set: fewer measured requests never count as settled
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

    @property
    def settled(self) -> bool:
        """Whether the estimates are tight enough to stop simulating more requests."""
        return (
            self.measured >= MIN_MEASURED
            and self.rps_half_width <= REL_HALF_WIDTH
            and self.tpot_half_width <= REL_HALF_WIDTH
        )

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
    return T_975_9 * float(finite.std(ddof=1)) / math.sqrt(len(finite)) / mean


def _p99(values: FloatArray) -> float:
    finite = values[np.isfinite(values)]
    return float(np.percentile(finite, 99)) if len(finite) else 0.0


def _window(result: SimResult, open_loop: bool) -> tuple[float, float]:
    n = len(result.finish_s)
    k = min(n - 1, math.ceil(WARMUP_FRACTION * n))
    if open_loop:
        arrivals = np.sort(result.arrival_s)
        return float(arrivals[k]), float(arrivals[-1])
    start_s = result.arrival_s + result.ttft_s
    return float(np.sort(result.finish_s)[k]), float(start_s.max())


def _tpot_batches(tpot: FloatArray) -> FloatArray:
    parts = [p for p in np.array_split(tpot, BATCHES) if np.isfinite(p).any()]
    return np.array([float(np.nanmean(p)) for p in parts])


def _queue_growing(ttft: FloatArray) -> bool:
    if len(ttft) < 8:
        return False
    quarter = len(ttft) // 4
    return float(ttft[-quarter:].mean()) > 2 * float(ttft[:quarter].mean()) + QUEUE_GROWTH_MARGIN_S


def steady_state(result: SimResult, *, open_loop: bool) -> SteadyState:
    """Steady-state estimates of `result` under the module's warm-up and drain rule."""
    lo, hi = _window(result, open_loop)
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
        output_tok_s=float(result.output_tokens[done].sum()) / length,
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
    )


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


def settle(run: Callable[[int], SimResult], *, first: int, cap: int, open_loop: bool) -> Settled:
    """Simulate `first` requests, doubling until the steady state settles or `cap` is reached;
    skips the doublings that `doublings_needed` says cannot settle (the sizes stay first x 2^k)."""
    n = first
    while True:
        result = run(n)
        state = steady_state(result, open_loop=open_loop)
        if state.settled or n >= cap:
            return Settled(result, state, n)
        n = min(cap, n * 2 ** doublings_needed(state))


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
