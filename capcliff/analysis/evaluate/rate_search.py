"""The highest Poisson rate one replica carries within an SLO, over its candidate caps.

Every cap of a layout is searched on the same samples (common random numbers: the sample at a
rate depends on the rate and the size, never on the cap), so caps are compared on the same
arrivals and lengths, and a run is reused wherever it is provably the run another cap would do:

- a cap binds only when a request waits while the running set is at the cap. The running set
  never exceeds the requests in the system (arrived and not finished), so if that count never
  exceeded `peak` (arrivals counted before departures at equal times) and both caps are at least
  `peak`, no admission decision differs and the two runs are the same run, step by step
  (`capcliff/sim/loop/head.py`, `admit_step.py`: the cap is only read in admission). The token
  budget must also be the same (`solver.config_at` raises it to the cap where it was lower).

A probe at an offered rate holds HELD_FACTOR x the requests in the system at a rate that meets
the SLO (Little's law: rate x (TTFT limit + mean output x TPOT limit)), or the stopping rule's
sample at the largest cap where that is fewer (`RateProbes.size`): the stopping rule sizes a
backlog's sample by the running set at the cap, which a rate within the SLO does not fill, and
the size depends on the rate alone, so caps still share their samples.

A plain search (`highest_rate`) brackets the rate between the light load and (1 - CAP_TOLERANCE)
x saturation and narrows the bracket to `rate_resolution`, the width BISECTIONS halvings would
leave, probing where the p99s' margin over their limits crosses 1 (`_narrow`). A cap searched
after another one found a rate needs only to be compared with it (`highest_rate_above`): it
starts at that rate, where a cap that does not bind shares the run and so the verdict.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, replace

import numpy as np
import numpy.typing as npt

from capcliff.analysis.evaluate.solver import Slo, config_at
from capcliff.analysis.evaluate.steady_state import (
    SteadyState,
    settled_part,
    steady_state,
    timed,
)
from capcliff.sim.config import SimConfig
from capcliff.sim.result import SimResult
from capcliff.sim.simulate import PausedRun
from capcliff.sim.traffic.workload import Requests

FloatArray = npt.NDArray[np.float64]

# requests a probe holds per request in the system: the stopping rule's stationary first sample
# is 20 x cap (capacity.FIRST_PER_CAP x SETTLE_FROM), about ten batches of two mean decode times
# with `cap` requests running; at an offered rate the running set is the requests in the system
HELD_FACTOR = 20
CAP_TOLERANCE = 0.05  # set: the smallest cap within 5 % of the best rate is chosen
BISECTIONS = 5  # rate resolution: about the saturation rate / 2^5 (3 %)
LIGHT_LOAD = 0.05  # the lightest load tried: 5 % of saturation (best achievable latencies)
MIN_FIRST = 200  # the smallest sample: the light load's, and the stopping rule's first (capacity)


@dataclass(frozen=True)
class RatePoint:
    """A replica at one offered rate and cap, and whether that meets the SLO."""

    cap: int
    rate_rps: float
    state: SteadyState
    meets: bool
    requests: int = 0  # the sample simulated
    preemptions: int = 0  # in that sample
    peak: int = 0  # the most requests in the system at once (`peak_in_system`)


def meets_slo(state: SteadyState, slo: Slo) -> bool:
    """Bounded queue, TTFT and TPOT p99 within the limits."""
    return not state.saturated and state.ttft_p99_s <= slo.ttft_s and state.tpot_p99_s <= slo.tpot_s


def peak_in_system(result: SimResult) -> int:
    """The most requests arrived and not finished at any instant, arrivals counted before
    departures at equal times: an upper bound of the running set at every admission decision.
    Every request when one did not finish."""
    arrive, finish = result.arrival_s, result.finish_s
    if not len(finish) or not np.all(np.isfinite(finish)):
        return len(finish)
    return _most_inside(arrive, finish)


def _most_inside(arrive: FloatArray, finish: FloatArray) -> int:
    """The most of the arrivals `arrive` not yet among the departures `finish` at any instant,
    arrivals counted first at equal times."""
    times = np.concatenate([arrive, finish])
    delta = np.concatenate([np.ones(len(arrive)), -np.ones(len(finish))])
    order = np.lexsort((-delta, times))  # by time; at a tie +1 (key -1) first
    return int(np.cumsum(delta[order]).max())


def misses_slo_surely(state: SteadyState, slo: Slo) -> bool:
    """Whether a p99 is over its limit by more than its 95 % half-width (`p99_half_width`):
    another sample of the same load misses the limit too. False where a half-width is not
    estimated (inf)."""
    ttft = state.ttft_p99_s * (1 - state.ttft_p99_half_width)
    tpot = state.tpot_p99_s * (1 - state.tpot_p99_half_width)
    return ttft > slo.ttft_s or tpot > slo.tpot_s


# set: the shares of a verification sample at which a run is read before it ends (`early_miss`)
EARLY_SHARES = (0.25, 0.5)


@dataclass(frozen=True)
class EarlyMiss:
    """A run stopped part way because it missed the SLO surely (`early_miss`)."""

    result: SimResult  # the part read (`steady_state.settled_part`)
    state: SteadyState
    # the most requests in the system up to where the run stopped: another cap at least this
    # large runs the same steps up to there, and so misses there too (`RateProbes._shared`)
    peak: int


def early_miss(run: PausedRun, sample: Requests, slo: Slo, mean_output: float) -> EarlyMiss | None:
    """A run read at EARLY_SHARES of its sample, as `sweep` extends a run
    (`steady_state.settled_part`: the requests the rest of the run cannot change, read as a run
    of their own): the first reading that misses the SLO surely (`misses_slo_surely`), or None
    (the caller runs it to the end). Its verdict is settled: the whole sample's p99s would have
    to fall below the interval this part puts them in, and the rest of the sample would only
    narrow that. Run to the end, the paused run is the plain one, step for step (`PausedRun`)."""
    for share in EARLY_SHARES:
        k = math.ceil(share * len(sample))
        if k < MIN_FIRST:
            continue
        # what is read here is per request (`settled_part`, `steady_state`, the peak) and, of a
        # run that misses, its preemptions: no latency percentiles
        point = run.advance(k, percentiles=False)
        if point.complete:
            return None
        part = settled_part(sample, point, open_loop=True)
        if len(part) < MIN_FIRST:
            continue
        result = run.part(part, percentiles=False)
        state = steady_state(result, open_loop=True, mean_output=mean_output)
        if misses_slo_surely(state, slo):
            arrived = sample.arrival_s[sample.arrival_s <= point.now_s]
            return EarlyMiss(result, state, _most_inside(arrived, point.result.finish_s))
    return None


@dataclass
class RateProbes:
    """Runs of one replica at offered rates, shared between caps where they are the same run.

    `sample(n, rate)`: the n-request Poisson sample at `rate`; `run(requests, cap)`: the
    simulation; `mean_output`: the workload's mean output tokens (the steady-state estimator)."""

    config: SimConfig
    slo: Slo
    sample: Callable[[int, float], Requests]
    run: Callable[[Requests, int], SimResult]
    mean_output: float
    points: list[RatePoint]
    cycle_s: float = math.inf  # bounds the mean time in the system of a rate that meets the SLO
    # `run`, lazily (one replica): a probe is read part way and stopped once it misses the SLO
    # surely (`early_miss`)
    paused: Callable[[Requests, int], PausedRun] | None = None

    def size(self, n: int, rate: float) -> int:
        """Requests of a probe asked for with n at `rate`: n, or HELD_FACTOR x the requests in
        the system at a rate that meets the SLO (Little's law: rate x `cycle_s`) where that is
        fewer, at least MIN_FIRST. The sample then spans as many turnovers of the requests
        held as the stopping rule's does of the running set at the largest cap, which a rate
        within the SLO does not fill. A function of the rate alone, so caps still share it."""
        held = rate * self.cycle_s
        if not math.isfinite(held):
            return n
        return min(n, max(MIN_FIRST, math.ceil(HELD_FACTOR * held)))

    def _shared(self, rate: float, n: int, cap: int) -> RatePoint | None:
        budget = config_at(self.config, cap, 1).max_num_batched_tokens
        for old in self.points:
            if (
                old.rate_rps == rate and old.requests == n
                and old.peak <= min(old.cap, cap)
                and config_at(self.config, old.cap, 1).max_num_batched_tokens == budget
            ):  # fmt: skip
                return old
        return None

    def probe(self, rate: float, n: int, cap: int) -> RatePoint:
        """The replica at `rate` requests/s on the n-request sample (`size`) with
        max_num_seqs = cap."""
        n = self.size(n, rate)
        old = self._shared(rate, n, cap)
        point = replace(old, cap=cap) if old is not None else self._simulated(rate, n, cap)
        self.points.append(point)
        return point

    def _simulated(self, rate: float, n: int, cap: int) -> RatePoint:
        """A fresh probe. One stopped early (`early_miss`) misses the SLO, as the whole sample
        would; its state and peak are those of the part run."""
        sample = self.sample(n, rate)
        if self.paused is not None and timed(sample, open_loop=True):
            lazy = self.paused(sample, cap)
            early = early_miss(lazy, sample, self.slo, self.mean_output)
            if early is not None:
                return RatePoint(
                    cap, rate, early.state, False, n, early.result.total_preemptions, early.peak
                )
            result = lazy.advance(len(sample)).result
        else:
            result = self.run(sample, cap)
        state = steady_state(result, open_loop=True, mean_output=self.mean_output)
        return RatePoint(
            cap, rate, state, meets_slo(state, self.slo), n, result.total_preemptions,
            peak_in_system(result),
        )  # fmt: skip


def rate_resolution(saturation_rps: float) -> float:
    """The width of `highest_rate`'s final bracket, requests/s: BISECTIONS halvings of the span
    from the light load to (1 - CAP_TOLERANCE) x saturation."""
    return (1 - CAP_TOLERANCE - LIGHT_LOAD) * saturation_rps / (1 << BISECTIONS)


def highest_rate(
    probes: RateProbes, cap: int, saturation_rps: float, requests: int
) -> tuple[RatePoint | None, RatePoint]:
    """(highest passing rate point or None, the light-load point) at `cap`.

    The light load (LIGHT_LOAD x saturation, MIN_FIRST requests: nothing queues) shows the least
    latency; if even that misses the SLO, no rate meets it. Then (1 - CAP_TOLERANCE) x saturation
    is tried (a loose SLO passes there at once), else the bracket between the two is narrowed
    to `rate_resolution` (`_narrow`).
    """
    light = probes.probe(LIGHT_LOAD * saturation_rps, MIN_FIRST, cap)
    if not light.meets:
        return None, light
    top = probes.probe((1 - CAP_TOLERANCE) * saturation_rps, requests, cap)
    if top.meets:
        return top, light
    return _narrow(probes, cap, light, top, requests, rate_resolution(saturation_rps)), light


def _upwards(
    probes: RateProbes, cap: int, good: RatePoint, requests: int, top_rate: float, step: float
) -> tuple[RatePoint, RatePoint | None]:
    """(highest pass, the lowest failing point above it or None when `top_rate` passes) from the
    passing `good`: first the lowest rate already seen failing above it, then `top_rate`, as
    `highest_rate` tries it first (a cap that passes there is done: galloping up to it took
    five to seven runs of the largest samples), then galloping up in steps that double from
    `step` (requests/s)."""
    failed = [
        p.rate_rps for p in probes.points
        if not p.meets and p.requests == probes.size(requests, p.rate_rps)
        and good.rate_rps < p.rate_rps < top_rate
    ]  # fmt: skip
    hi = min(failed, default=None)
    if hi is not None:
        above = probes.probe(hi, requests, cap)
        if not above.meets:
            return good, above
        good = above
    if good.rate_rps >= top_rate:
        return good, None
    top = probes.probe(top_rate, requests, cap)
    if top.meets:
        return top, None
    while good.rate_rps < top_rate:
        rate = min(top_rate, good.rate_rps + step)
        point = top if rate == top_rate else probes.probe(rate, requests, cap)
        if not point.meets:
            return good, point
        good, step = point, 2 * step
    return good, None


def highest_rate_above(
    probes: RateProbes,
    cap: int,
    saturation_rps: float,
    requests: int,
    best: RatePoint,
    resolution: float,
) -> RatePoint | None:
    """The highest passing rate at `cap`, for a cap that matters only if it comes within
    CAP_TOLERANCE of `best` (another cap's rate): None when it does not.

    Tried first at `best`'s rate, then at the lowest rate seen failing above it (both shared with
    `best`'s runs when this cap does not bind there); from a pass the bracket gallops up in
    steps doubling from CAP_TOLERANCE x best's rate, from a failure it drops to the tolerance;
    then the bracket is narrowed to `resolution` (requests/s), the first search's (`_narrow`)."""
    top_rate = (1 - CAP_TOLERANCE) * saturation_rps
    floor = (1 - CAP_TOLERANCE) * best.rate_rps
    if floor >= top_rate:
        return None
    at = probes.probe(min(best.rate_rps, top_rate), requests, cap)
    bad: RatePoint | None
    if at.meets:
        good, bad = _upwards(probes, cap, at, requests, top_rate, CAP_TOLERANCE * best.rate_rps)
        if bad is None:
            return good
    else:
        bad = at
        good = probes.probe(floor, requests, cap)
        if not good.meets:
            return None
    return _narrow(probes, cap, good, bad, requests, resolution)


def highest_rate_below(
    probes: RateProbes, cap: int, bad: RatePoint, requests: int, resolution: float
) -> RatePoint | None:
    """The highest passing rate below the failing `bad`, for a search that starts from a rate
    another model found: the rate gallops down from `bad` (from the rate it served, where it
    saturated) in steps doubling from `resolution` until one passes (None once it falls under
    LIGHT_LOAD x `bad`'s rate, the light load of a replica that saturates there), then the
    bracket is narrowed to `resolution` (requests/s, `_narrow`). An attention-DP group sustains
    most of one replica's rate (87-97 % on qwen3-30b-a3b's groups), where halving to 50 % and
    bisecting back cost five or six probes of the group's largest sample (2026-12-07, h-slowad:
    24 -> 13 probes on `plan qwen3-30b-a3b --slo-ttft 2`, the rates within the resolution; a
    group far below, 46 % on qwen3-235b-a22b's dpa8, takes 4 probes more, 35 -> 39)."""
    floor = LIGHT_LOAD * bad.rate_rps
    # a saturated run served no more than its throughput: the search starts below that
    top = bad.state.throughput_rps if bad.state.saturated else bad.rate_rps
    step = resolution
    while True:
        rate = max(floor, min(bad.rate_rps, top) - step)
        good = probes.probe(rate, requests, cap)
        if good.meets:
            return _narrow(probes, cap, good, bad, requests, resolution)
        if rate <= floor:
            return None
        bad, step = good, 2 * step


def _margin(point: RatePoint, slo: Slo) -> float | None:
    """The larger of the p99s over their limits (1 at the limit); None with a growing queue."""
    if point.state.saturated:
        return None
    return max(point.state.ttft_p99_s / slo.ttft_s, point.state.tpot_p99_s / slo.tpot_s)


def _narrow(
    probes: RateProbes, cap: int, good: RatePoint, bad: RatePoint, requests: int,
    resolution: float,
) -> RatePoint:  # fmt: skip
    """The highest passing rate between the passing `good` and the failing `bad`, once the
    bracket is no wider than `resolution` (requests/s).

    Each round probes where the line through the two ends' margins (`_margin`) crosses 1, then
    0.9 x `resolution` beyond it towards the side it did not fall on: where the margin is close
    to linear in the rate (a TPOT-bound target: the step time grows about linearly with the
    batch, and the batch with the rate) one round closes the bracket, where bisection takes five
    probes. While the failing end is the one the search started from (in `highest_rate`, next
    to saturation, where the p99s leave the line) the second probe is not made. A round that
    does not halve the bracket is followed by a bisection, so the bracket at least halves every
    three probes whatever the margin's shape."""
    bisect, top = False, bad
    while bad.rate_rps - good.rate_rps > resolution:
        width = bad.rate_rps - good.rate_rps
        low, high = _margin(good, probes.slo), _margin(bad, probes.slo)
        interpolate = not bisect and low is not None and high is not None and high > low
        if low is None or high is None or not interpolate:
            rate = good.rate_rps + width / 2
        else:
            rate = good.rate_rps + width * (1 - low) / (high - low)
            rate = min(max(rate, good.rate_rps + resolution / 4), bad.rate_rps - resolution / 4)
        point = probes.probe(rate, requests, cap)
        good, bad = (point, bad) if point.meets else (good, point)
        if interpolate and bad is not top:
            close = rate + 0.9 * resolution if point.meets else rate - 0.9 * resolution
            if good.rate_rps < close < bad.rate_rps:
                point = probes.probe(close, requests, cap)
                good, bad = (point, bad) if point.meets else (good, point)
        bisect = interpolate and bad.rate_rps - good.rate_rps > width / 2
    return good
