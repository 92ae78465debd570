"""Edges the seed-229 mutation sample (`benchmarks/mutation.py --packages analysis --seed 229`)
found untested, written after that fresh sample was measured. Values are worked out by hand."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any, cast

from capcliff.analysis.plan.batch import _admission_cap
from capcliff.analysis.plan.ties import TIE_BAND, Option, ties
from tests.test_analysis_mutants_seed201 import cap_point, within_slo


def test_an_option_exactly_the_band_below_the_best_ties() -> None:
    # the band is 10 %: 0.9 of the best's 1.0 is exactly at its edge and ties; 0.89 does not
    assert TIE_BAND == 0.1
    best = Option("tp2", 1.0, tp=2, pp=1)
    edge, below = Option("tp1", 0.9, tp=1, pp=1), Option("tp4", 0.89, tp=4, pp=1)
    assert ties(best, [best, edge, below]) == [edge]


def _evaluated(sweet: int, clean: dict[int, bool]) -> Any:
    points = [SimpleNamespace(concurrency=c, hit_cliff=not ok) for c, ok in clean.items()]
    sweet_point = next(p for p in points if p.concurrency == sweet)
    return cast(Any, SimpleNamespace(sweet=sweet_point, points=points))


def test_the_admission_cap_is_a_clean_sweet_spot_else_the_largest_clean_cap() -> None:
    # a sweet spot at 64 that runs clean is the cap, though 128 runs clean too
    assert _admission_cap(_evaluated(64, {32: True, 64: True, 128: True, 256: False})) == 64
    # a sweet spot at 128 past the cliff: the largest cap that ran clean, 64
    assert _admission_cap(_evaluated(128, {32: True, 64: True, 128: False})) == 64
    # nothing ran clean: the sweet spot itself
    assert _admission_cap(_evaluated(32, {32: False, 64: False})) == 32


def test_every_cap_is_searched_on_the_largest_sample_any_cap_needed(monkeypatch: Any) -> None:
    from capcliff.analysis.evaluate import capacity
    from capcliff.analysis.evaluate.rate_search import RatePoint

    # caps 4 and 8 settled on 100 and 400 requests: both are searched on 400 (common random
    # numbers across caps), neither on 100
    sizes: list[tuple[int, int]] = []

    def highest_rate(probes: Any, cap: int, sat: float, size: int) -> Any:
        sizes.append((cap, size))
        light = SimpleNamespace(ttft_p99_s=1.0, tpot_p99_s=0.05)
        return None, RatePoint(cap, 0.1 * sat, cast(Any, light), False)

    monkeypatch.setattr(capacity, "highest_rate", highest_rate)
    within_slo((cap_point(4, 6.0, 100), cap_point(8, 10.0, 400)))
    assert sorted(sizes) == [(4, 400), (8, 400)]


def test_every_cap_is_searched_to_the_resolution_of_the_layouts_best_saturation(
    monkeypatch: Any,
) -> None:
    from capcliff.analysis.evaluate import capacity
    from capcliff.analysis.evaluate.rate_search import RatePoint, rate_resolution

    # cap 8 saturates at 10/s and passes at 8/s; cap 4 saturates at 9/s, above 0.95 x 8 = 7.6/s,
    # so it is searched above 8/s, to the resolution of the layout's best saturation (10/s)
    light = cast(Any, SimpleNamespace(ttft_p99_s=1.0, tpot_p99_s=0.05))
    found = RatePoint(8, 8.0, light, True)
    asked: list[float] = []
    monkeypatch.setattr(capacity, "highest_rate", lambda probes, cap, sat, size: (found, found))
    monkeypatch.setattr(
        capacity, "highest_rate_above",
        lambda probes, cap, sat, size, best, resolution: asked.append(resolution),
    )  # fmt: skip
    monkeypatch.setattr(capacity, "verified", lambda *a, **k: None)
    within_slo((cap_point(4, 9.0), cap_point(8, 10.0)))
    assert asked == [rate_resolution(10.0)]
    assert rate_resolution(10.0) != rate_resolution(9.0)
