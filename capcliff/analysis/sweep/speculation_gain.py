"""Whether speculative decoding pays at each swept concurrency, and where it stops paying.

A sweep with speculation simulates the same requests at the same concurrencies once more without
it (the same evaluation, `Deployment.without_speculation`); speculation pays at a concurrency
when both the output throughput and the per-user rate (1 / mean TPOT) are at least as high as
without it. The crossover is the smallest swept concurrency from which it loses at every larger
swept one: the verification step computes K + 1 tokens per sequence, so once a step is
compute-bound the extra FLOPs outweigh the tokens accepted (perf/speculation.py).

The cost is one sweep without speculation per series: as many simulated points as the sweep
(same requests, same concurrencies, same stopping rule), each no dearer than its speculative
twin (the mean-field model simulates the same events with or without speculation).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from pydantic import BaseModel, ConfigDict


class _Point(Protocol):
    """What the comparison reads from a sweep point (PointResult)."""

    @property
    def concurrency(self) -> int: ...
    @property
    def output_throughput_tok_s(self) -> float: ...
    @property
    def tpot_mean_s(self) -> float: ...


class _Result(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class SpeculationPoint(_Result):
    """One concurrency with and without speculation (tok/s, seconds; gains as fractions)."""

    concurrency: int
    output_throughput_tok_s_without: float
    tpot_mean_s_without: float
    throughput_gain: float  # output tok/s with / without - 1
    per_user_gain: float  # (1 / TPOT) with / without - 1: TPOT without / with - 1
    pays: bool  # neither the throughput nor the per-user rate is lower than without


class SpeculationGain(_Result):
    """Speculation against the same sweep without it, for one series."""

    method: str  # mtp, eagle, ngram
    num_speculative_tokens: int  # K
    tokens_per_step: float  # E, the expected accepted tokens per speculative step
    points: list[SpeculationPoint]
    # the smallest swept concurrency from which speculation loses at every larger swept one
    # (None: it pays at the largest swept concurrency)
    loses_from: int | None
    pays_up_to: int | None  # the largest swept concurrency below `loses_from` (None: none)
    extra_points: int  # points simulated without speculation to find it (the cost)


def _gain(with_: float, without: float) -> float:
    return with_ / without - 1 if without > 0 else 0.0


def compare_point(with_spec: _Point, without: _Point) -> SpeculationPoint:
    """One concurrency's gains: output throughput, and per-user rate 1 / mean TPOT."""
    tpot, tpot0 = with_spec.tpot_mean_s, without.tpot_mean_s
    per_user = tpot0 / tpot - 1 if tpot > 0 and tpot0 > 0 else 0.0
    throughput = _gain(with_spec.output_throughput_tok_s, without.output_throughput_tok_s)
    return SpeculationPoint(
        concurrency=with_spec.concurrency,
        output_throughput_tok_s_without=without.output_throughput_tok_s,
        tpot_mean_s_without=tpot0,
        throughput_gain=throughput,
        per_user_gain=per_user,
        pays=throughput >= 0 and per_user >= 0,
    )


def speculation_gain(
    with_spec: Sequence[_Point],
    without: Sequence[_Point],
    *,
    method: str,
    num_speculative_tokens: int,
    tokens_per_step: float,
) -> SpeculationGain:
    """Every swept concurrency compared (both sweeps over the same concurrencies) and the
    crossover: the first concurrency of the trailing run of points where speculation loses."""
    plain = {p.concurrency: p for p in without}
    points = [compare_point(p, plain[p.concurrency]) for p in with_spec]
    loses_from = None
    for p in reversed(points):
        if p.pays:
            break
        loses_from = p.concurrency
    below = [p.concurrency for p in points if loses_from is None or p.concurrency < loses_from]
    return SpeculationGain(
        method=method,
        num_speculative_tokens=num_speculative_tokens,
        tokens_per_step=tokens_per_step,
        points=points,
        loses_from=loses_from,
        pays_up_to=max(below, default=None),
        extra_points=len(without),
    )
