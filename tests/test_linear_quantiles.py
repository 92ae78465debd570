"""`linear_quantiles`: numpy's default (linear) quantile, computed without numpy's machinery."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from capcliff.sim.result import linear_quantiles


def test_p90_of_ten_values_interpolates_between_the_ninth_and_tenth() -> None:
    # virtual index (10 - 1) x 0.9 = 8.1: x[8] + (x[9] - x[8]) x 0.1 = 9 + 10 x 0.1 = 10
    assert linear_quantiles(np.array([1.0, 2, 3, 4, 5, 6, 7, 8, 9, 19]), [0.9]) == [
        pytest.approx(10.0)
    ]


def test_median_of_an_even_count_is_the_middle_pair_mean() -> None:
    # virtual index (4 - 1) x 0.5 = 1.5: t = 0.5 >= 0.5, so b - (b - a)(1 - t) = 30 - 20 x 0.5
    assert linear_quantiles(np.array([40, 10, 30, 0]), [0.5]) == [20.0]


def test_a_nan_makes_every_quantile_nan() -> None:
    assert all(math.isnan(q) for q in linear_quantiles(np.array([1.0, math.nan]), [0.5, 0.99]))


finite = st.floats(min_value=-1e12, max_value=1e12, allow_nan=False)


@given(
    st.lists(finite, min_size=1, max_size=60),
    st.lists(st.floats(min_value=0.0, max_value=1.0), min_size=1, max_size=5),
)
def test_floats_match_numpy_to_the_bit(values: list[float], quantiles: list[float]) -> None:
    expected = [float(v) for v in np.quantile(np.array(values), quantiles)]
    assert linear_quantiles(np.array(values), quantiles) == expected


@given(
    st.lists(st.integers(min_value=0, max_value=10**12), min_size=1, max_size=60),
    st.sampled_from([50.0, 90.0, 99.0, 99.9]),
)
def test_integer_percentiles_match_numpy_to_the_bit(values: list[int], percent: float) -> None:
    arr = np.array(values, dtype=np.int64)
    assert linear_quantiles(arr, [percent / 100]) == [float(np.percentile(arr, percent))]
