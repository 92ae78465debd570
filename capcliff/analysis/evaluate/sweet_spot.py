"""A sweep's sweet spot: the concurrency to run at, by goodput, steady throughput or makespan."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from capcliff.analysis.evaluate.rate_search import CAP_TOLERANCE
from capcliff.analysis.evaluate.solver import Slo, SweepPoint, collapse, slo_sweet_spot, sweet_spot
from capcliff.analysis.evaluate.steady_point import steady_point


class SweetSpotResult(BaseModel):
    """The best concurrency and what is lost past it."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    concurrency: int
    objective: str  # "makespan", "goodput" or "steady tokens/s"
    collapse_worst_loss: float  # 1 - worst throughput past the sweet spot / the sweet spot's


def sweet_spot_result(
    points: tuple[SweepPoint, ...], slo: Slo | None, online: bool, *, open_loop: bool = True
) -> SweetSpotResult:
    """The sweet spot: most goodput within the SLO online, else (online) the smallest cap
    within CAP_TOLERANCE of the most steady-state tokens/s, else least makespan; and the loss
    past it. Online points may have samples of different sizes (the stopping rule grows them),
    so their makespans do not compare."""
    if online and slo is not None:
        best = slo_sweet_spot(points, slo)
        objective = "goodput"
        if best is None:  # nothing meets the SLO: fall back to throughput alone
            best = max(points, key=lambda p: (p.output_tokens_per_s, -p.concurrency))
            objective = "throughput (no point meets the SLO)"
    elif online and all(p.result is not None for p in points):
        rate = {p.concurrency: _steady_tok_s(p, open_loop) for p in points}
        top = max(rate.values())
        best = min(
            (p for p in points if rate[p.concurrency] >= (1 - CAP_TOLERANCE) * top),
            key=lambda p: p.concurrency,
        )
        objective = "steady tokens/s"
    else:
        best, objective = sweet_spot(points), "makespan"
    loss = collapse(points, best).worst_loss
    return SweetSpotResult(
        concurrency=best.concurrency, objective=objective, collapse_worst_loss=loss
    )


def _steady_tok_s(point: SweepPoint, open_loop: bool) -> float:
    assert point.result is not None
    return steady_point(point.result, open_loop=open_loop).output_tok_s
