"""One length at a time (`sample_length`, what a session stream draws) is the first of
`sample_lengths`' size-1 draw: the same value, and the Generator left in the same state, so a
session workload's requests do not depend on which of the two drew them."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from capcliff.sim.traffic.workload import (
    Empirical,
    Fixed,
    LengthDist,
    LogNormal,
    Normal,
    Uniform,
    sample_length,
    sample_lengths,
)

DISTS = st.one_of(
    st.builds(Fixed, st.integers(1, 10**6)),
    st.integers(1, 5_000).flatmap(
        lambda low: st.builds(Uniform, st.just(low), st.integers(low, low + 50_000))
    ),
    st.builds(
        Normal,
        st.floats(-1_000, 50_000, allow_nan=False),
        st.floats(0, 20_000, allow_nan=False),
    ),
    st.floats(1, 20_000).flatmap(
        lambda mean: st.builds(LogNormal, st.just(mean), st.floats(mean * 1.01, mean * 14))
    ),
    st.builds(
        Empirical,
        st.lists(st.integers(1, 100_000), min_size=1, max_size=6).map(tuple),
    ),
)


@settings(max_examples=300, deadline=None)
@given(dist=DISTS, max_tokens=st.integers(1, 200_000), seed=st.integers(0, 2**32 - 1))
def test_one_length_is_the_size_one_draw(dist: LengthDist, max_tokens: int, seed: int) -> None:
    one, block = np.random.default_rng(seed), np.random.default_rng(seed)
    for _ in range(20):
        drawn = sample_length(dist, one, max_tokens=max_tokens)
        assert isinstance(drawn, int)
        assert drawn == int(sample_lengths(dist, 1, block, max_tokens=max_tokens)[0])
    assert one.bit_generator.state == block.bit_generator.state


@pytest.mark.parametrize(
    ("mean", "max_tokens", "expected"),
    [
        (2.5, 100, 2),  # half to even, as np.rint: 2.5 -> 2
        (3.5, 100, 4),  # 3.5 -> 4
        (1.5, 100, 2),  # 1.5 -> 2, not clipped to 1
        (0.4, 100, 1),  # below one token: 1
        (-7.0, 100, 1),
        (99.6, 100, 100),  # rounds up to the cap
        (1e6, 100, 100),  # clipped to the cap
    ],
)
def test_one_length_rounds_half_to_even_and_clips(
    mean: float, max_tokens: int, expected: int
) -> None:
    # a Normal of no spread draws its mean exactly
    assert sample_length(Normal(mean, 0.0), np.random.default_rng(0), max_tokens=max_tokens) == (
        expected
    )
