"""Time series a sweep reports at its named points (the sweet spot, and the largest
concurrency past the cliff): KV utilisation and the prefix cache's hit rate over time."""

from __future__ import annotations

import numpy as np

from capcliff.analysis.evaluate.solver import SweepPoint

KV_SERIES_POINTS = 128


def _named_points(points: tuple[SweepPoint, ...], sweet: int) -> dict[str, SweepPoint]:
    """The sweet spot and the largest concurrency past the cliff (when there is one)."""
    chosen = {"sweet spot": next(p for p in points if p.concurrency == sweet)}
    past = [p for p in points if p.concurrency > sweet and p.hit_cliff]
    if past:
        chosen["past the cliff"] = past[-1]
    return chosen


def hit_rate_over_time(
    points: tuple[SweepPoint, ...], sweet: int
) -> dict[str, list[tuple[float, float]]]:
    """The prefix cache's token-weighted hit rate over time (lookups binned on the time grid;
    bins without a lookup left out) at the sweet spot and past the cliff; empty without
    caching."""
    out = {}
    for name, point in _named_points(points, sweet).items():
        assert point.result is not None
        reuse = point.result.reuse
        if reuse is None:
            continue
        step = max(1, len(reuse.time_s) // KV_SERIES_POINTS)
        times, rates = reuse.time_s, reuse.hit_rate_series
        out[f"{name} ({point.concurrency})"] = [
            (float(times[k]), float(np.nanmean(rates[k : k + step])))
            for k in range(0, len(times), step)
            if np.isfinite(rates[k : k + step]).any()
        ]
    return out


def kv_over_time(
    points: tuple[SweepPoint, ...], sweet: int
) -> dict[str, list[tuple[float, float]]]:
    """KV utilisation over time at the sweet spot and at the largest concurrency past it."""
    out = {}
    for name, point in _named_points(points, sweet).items():
        assert point.result is not None
        series = point.result.series
        step = max(1, len(series.time_s) // KV_SERIES_POINTS)
        out[f"{name} ({point.concurrency})"] = [
            (float(t), float(u))
            for t, u in zip(series.time_s[::step], series.kv_utilization[::step], strict=True)
        ]
    return out
