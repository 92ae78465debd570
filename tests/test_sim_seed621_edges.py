"""Edges the seed-621 mutation sample (`benchmarks/mutation.py --packages sim --seed 621`) found
untested. Every expected value is worked out by hand in the comments."""

from __future__ import annotations

import math

import numpy as np
import pytest

from capcliff.errors import InputError
from capcliff.sim.result import linear_quantiles
from capcliff.sim.traffic.length_spec import MAX_COUNT, histogram_spec


def test_a_histogram_file_row_of_exactly_the_count_bound_is_refused() -> None:
    # Counts must be < MAX_COUNT = 1e15 (past it: a corrupt file, not a histogram). 1e15 itself
    # is refused on its line; 999,999,999,999,999 (= 1e15 - 1, exact in a double: under 2^53) is
    # the largest whole count taken. (Seed 621's `count <= MAX_COUNT` took the row of 1e15.)
    assert MAX_COUNT == 1e15
    with pytest.raises(InputError, match=r"^osl: h\.csv line 2: count must be a number > 0 and <"):
        histogram_spec("300,1\n100,1e15\n", source="h.csv")
    assert histogram_spec("300,1\n100,999999999999999\n", source="h.csv").startswith("histogram:")


def _sign(x: float) -> float:
    return math.copysign(1.0, x)


@pytest.mark.parametrize(
    ("values", "q", "sign"),
    [
        # One value -0.0, any q: virtual index v = (1 - 1) q = 0 is at the last index, so
        # a = b = -0.0 and numpy's gamma against its previous index is t = v + 1 = 1 (>= 0.5):
        # b - (b - a)(1 - t) = -0.0 - (0.0 x 0.0) = -0.0 - 0.0 = -0.0.
        # (Seed 621's t = v = 0: a + (b - a) t = -0.0 + 0.0 x 0 = +0.0.)
        ([-0.0], 0.5, -1.0),
        ([-0.0], 1.0, -1.0),
        # Two values -0.0 at q = 1: v = 1, the last index, t = 2: b - 0.0 x (1 - 2) =
        # -0.0 - (-0.0) = +0.0 (IEEE x - x is +0). (Seed 621's t = 1: -0.0 - 0.0 x 0 = -0.0.)
        ([-0.0, -0.0], 1.0, 1.0),
    ],
)
def test_a_quantile_at_the_last_index_keeps_numpys_sign_of_zero(
    values: list[float], q: float, sign: float
) -> None:
    # "to the bit" includes the sign of a zero, which == does not see (-0.0 == 0.0)
    (got,) = linear_quantiles(np.array(values), [q])
    assert got == 0.0 and _sign(got) == sign
    assert _sign(float(np.quantile(np.array(values), q))) == sign  # numpy's own, for the record
