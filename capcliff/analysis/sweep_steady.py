"""A sweep point's steady state, for arrivals over time (see `steady_state` for the rule)."""

from __future__ import annotations

import math

from pydantic import BaseModel, ConfigDict

from capcliff.analysis.steady_state import steady_state
from capcliff.sim.result import SimResult


class SteadyPoint(BaseModel):
    """Online sweeps: the point's throughput and latency with warm-up and drain left out."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    throughput_rps: float  # requests finished per second inside the window
    output_tok_s: float
    ttft_p99_s: float
    tpot_p99_s: float
    rps_half_width: float | None  # relative, 95 % (None: too few batches)
    settled: bool  # the stopping rule's 5 % interval closed at this sample size
    saturated: bool  # open loop: more arrived than was served


def steady_point(result: SimResult, *, open_loop: bool) -> SteadyPoint:
    """The steady state of one simulated point."""
    s = steady_state(result, open_loop=open_loop)
    return SteadyPoint(
        throughput_rps=s.throughput_rps, output_tok_s=s.output_tok_s,
        ttft_p99_s=s.ttft_p99_s if math.isfinite(s.ttft_p99_s) else 0.0,
        tpot_p99_s=s.tpot_p99_s if math.isfinite(s.tpot_p99_s) else 0.0,
        rps_half_width=s.rps_half_width if math.isfinite(s.rps_half_width) else None,
        settled=s.settled, saturated=s.saturated,
    )  # fmt: skip
