"""`analysis.sweep.speculation_gain` at its edges: a gain at exactly 0 still pays, a TPOT or a
throughput of 0 gives no gain, and the crossover is the start of the trailing run of losses.
Every expected value is worked out by hand in the test's comment (the seed-51 mutation sample
found `tpot > 0` replaceable by `>= 0` without a failing test)."""

from __future__ import annotations

from typing import NamedTuple

import pytest

from capcliff.analysis.sweep.speculation_gain import compare_point, speculation_gain


class P(NamedTuple):
    concurrency: int
    output_throughput_tok_s: float
    tpot_mean_s: float


def test_gains_are_ratios_minus_one() -> None:
    # 120 vs 100 tok/s: +20 %; TPOT 20 ms vs 25 ms: per-user rate 25 / 20 - 1 = +25 %
    point = compare_point(P(4, 120.0, 0.020), P(4, 100.0, 0.025))
    assert point.concurrency == 4
    assert point.throughput_gain == pytest.approx(0.2)
    assert point.per_user_gain == pytest.approx(0.25)
    assert point.output_throughput_tok_s_without == 100.0
    assert point.tpot_mean_s_without == 0.025
    assert point.pays


def test_a_gain_of_exactly_zero_pays_and_any_loss_does_not() -> None:
    assert compare_point(P(1, 100.0, 0.025), P(1, 100.0, 0.025)).pays  # 0 and 0
    # throughput 90 vs 100 (-10 %) with a faster TPOT: does not pay
    assert not compare_point(P(1, 90.0, 0.020), P(1, 100.0, 0.025)).pays
    # throughput up, TPOT 30 ms vs 25 ms (25 / 30 - 1 = -16.7 %): does not pay
    slower = compare_point(P(1, 110.0, 0.030), P(1, 100.0, 0.025))
    assert slower.per_user_gain == pytest.approx(25 / 30 - 1)
    assert not slower.pays


def test_a_zero_tpot_or_throughput_gives_no_gain_rather_than_a_division_by_zero() -> None:
    # no decode tokens measured with speculation (TPOT 0): per-user gain 0, not 0.025 / 0
    assert compare_point(P(1, 100.0, 0.0), P(1, 100.0, 0.025)).per_user_gain == 0.0
    # nor without it
    assert compare_point(P(1, 100.0, 0.025), P(1, 100.0, 0.0)).per_user_gain == 0.0
    # no throughput without speculation: gain 0
    assert compare_point(P(1, 50.0, 0.025), P(1, 0.0, 0.025)).throughput_gain == 0.0
    # but any throughput above 0 counts: 1 vs 0.5 tok/s is +100 %
    assert compare_point(P(1, 1.0, 0.025), P(1, 0.5, 0.025)).throughput_gain == 1.0


def _gain(pays: list[bool]) -> tuple[int | None, int | None, int]:
    """A sweep at 1, 2, 4, ... whose point k pays or not: (loses_from, pays_up_to, extra)."""
    with_spec = [P(2**k, 100.0 if ok else 90.0, 0.02) for k, ok in enumerate(pays)]
    without = [P(2**k, 100.0, 0.02) for k in range(len(pays))]
    gain = speculation_gain(
        with_spec, without, method="mtp", num_speculative_tokens=1, tokens_per_step=1.8
    )
    return gain.loses_from, gain.pays_up_to, gain.extra_points


def test_the_crossover_is_where_the_trailing_run_of_losses_starts() -> None:
    # pays at 1, loses at 2, pays at 4, loses at 8 and 16: it loses from 8, pays up to 4
    assert _gain([True, False, True, False, False]) == (8, 4, 5)
    # pays everywhere: no crossover, pays up to the largest, 16
    assert _gain([True] * 5) == (None, 16, 5)
    # loses everywhere: from the smallest, 1, and pays nowhere
    assert _gain([False] * 3) == (1, None, 3)
    # loses only at the largest
    assert _gain([True, True, False]) == (4, 2, 3)
