"""A sweep point's steady state, for arrivals over time (see `steady_state` for the rule), and the
sweep's stopping rule.

An online sweep starts at --num-requests. A point whose steady state did not settle (its 95 %
half-widths, the p99s' included, are over 5 %) is simulated again with twice the requests (a
saturated point: while the rate it serves is unsettled, since its queue and p99s grow with any
sample), at most MAX_DOUBLINGS times (8 x the first), with the same workload drawn at the
larger size. Each point reports the sample its estimate came from (`requests`). A trace has its
own size and is not grown.
"""

from __future__ import annotations

import math

from pydantic import BaseModel, ConfigDict

from capcliff.analysis.evaluate.steady_state import MIN_MEASURED, REL_HALF_WIDTH, steady_state
from capcliff.sim.result import SimResult


class SteadyPoint(BaseModel):
    """Online sweeps: the point's throughput and latency with warm-up and drain left out."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    throughput_rps: float  # requests finished per second inside the window
    output_tok_s: float
    ttft_p99_s: float
    tpot_p99_s: float
    rps_half_width: float | None  # relative, 95 % (None: too few batches)
    # relative 95 % half-widths of the p99s (batch quantiles; None: not estimated)
    ttft_p99_half_width: float | None = None
    tpot_p99_half_width: float | None = None
    settled: bool  # the stopping rule's 5 % interval closed at this sample size
    saturated: bool  # open loop: more arrived than was served
    requests: int  # the sample this estimate came from (the stopping rule may grow it)


def _finite(value: float) -> float | None:
    return value if math.isfinite(value) else None


def steady_point(result: SimResult, *, open_loop: bool) -> SteadyPoint:
    """The steady state of one simulated point."""
    s = steady_state(result, open_loop=open_loop)
    return SteadyPoint(
        throughput_rps=s.throughput_rps, output_tok_s=s.output_tok_s,
        ttft_p99_s=s.ttft_p99_s if math.isfinite(s.ttft_p99_s) else 0.0,
        tpot_p99_s=s.tpot_p99_s if math.isfinite(s.tpot_p99_s) else 0.0,
        rps_half_width=_finite(s.rps_half_width),
        ttft_p99_half_width=_finite(s.ttft_p99_half_width),
        tpot_p99_half_width=_finite(s.tpot_p99_half_width),
        settled=s.settled, saturated=s.saturated, requests=len(result.finish_s),
    )  # fmt: skip


MAX_DOUBLINGS = 3  # set: as the plan's stopping rule, at most 8 x the first sample


def needs_more(result: SimResult, *, open_loop: bool) -> bool:
    """Whether a point's steady state is unsettled: with a bounded queue its rate, mean TPOT
    and, open loop, its p99s; saturated, the rate it serves (the p99s of a growing queue grow
    with any sample, but the served rate is the point's capacity, and a short sample of a
    backlog that takes minutes to fill reads it low)."""
    s = steady_state(result, open_loop=open_loop)
    if s.saturated:
        return not (s.measured >= MIN_MEASURED and s.rps_half_width <= REL_HALF_WIDTH)
    return not (s.settled and (s.p99_settled or not open_loop))
