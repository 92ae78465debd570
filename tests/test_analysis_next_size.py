"""`analysis.evaluate.steady_state.next_size` at its edges: the measured-request floor, a
non-finite half-width, exactly MIN_BATCHES batches, and no growth step predicted to settle.
Every expected value is worked out by hand in the test's comment (the seed-51 mutation sample
found `2 * n` replaceable by `1 * n` without a failing test); the main cases are in
test_stationary_start.py."""

from __future__ import annotations

import math

import pytest

from capcliff.analysis.evaluate.steady_state import next_size
from tests.simtools import steady_at


@pytest.mark.parametrize(
    ("hw", "batches", "measured", "expected"),
    [
        # 5 batches, hw 0.052 (x1.5 is predicted to settle, test_stationary_start.py), but only
        # 99 measured requests (under MIN_MEASURED = 100): the spread says little, so 2 x 1,000
        (0.052, 5, 99, 2_000),
        # exactly 100 measured: the prediction holds, x1.5
        (0.052, 5, 100, 1_500),
        # a half-width that is not finite: 2 x 1,000
        (math.inf, 5, 1_000, 2_000),
        # exactly MIN_BATCHES = 4 batches, hw 0.04: x1.5 gives 6 batches, predicted
        # 0.04 x t(5) / t(3) / sqrt(1.5) = 0.04 x 2.571 / 3.182 / 1.2247 = 0.0264 <= 0.04
        (0.04, 4, 1_000, 1_500),
        # 3 batches (under 4): to about TARGET_BATCHES = 8, ceil(1,000 x 8 / 3) = 2,667
        (0.04, 3, 1_000, 2_667),
        # hw 1.0 at 5 batches: even x8 (10 batches) predicts 1.0 x 2.262 / 2.776 / 2.828 = 0.288
        # > 0.04, so the largest step, x8
        (1.0, 5, 1_000, 8_000),
        # 9 batches, hw 0.05: x1.5 gives min(10, 13) = 10 batches, predicted
        # 0.05 x t(9) / t(8) / sqrt(1.5) = 0.05 x 2.262 / 2.306 / 1.2247 = 0.04005 > 0.04;
        # x2: 0.05 x 2.262 / 2.306 / 1.414 = 0.0347 <= 0.04: x2
        (0.05, 9, 1_000, 2_000),
        # t at the right degrees of freedom, t(b' - 1) over t(b - 1): 5 batches, hw 0.055, x1.5
        # (7 batches): 0.055 x t(6) / t(4) / sqrt(1.5) = 0.055 x 2.447 / 2.776 / 1.2247 =
        # 0.0396 <= 0.04 (with t(5) above, 2.571: 0.0416, too wide)
        (0.055, 5, 1_000, 1_500),
        # hw 0.0575: 0.0575 x 2.447 / 2.776 / 1.2247 = 0.0414 > 0.04 (with t(3) below, 3.182:
        # 0.0361); x2 (10 batches): 0.0575 x 2.262 / 2.776 / 1.414 = 0.0331: x2
        (0.0575, 5, 1_000, 2_000),
    ],
)
def test_next_size_at_its_edges(hw: float, batches: int, measured: int, expected: int) -> None:
    assert next_size(steady_at(hw, batches, measured), 1_000) == expected
