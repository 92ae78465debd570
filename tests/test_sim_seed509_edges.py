"""Edges the seed-509 mutation sample (`benchmarks/mutation.py --packages sim --seed 509`) found
untested. Every expected value is worked out by hand in the comments."""

from __future__ import annotations

import pytest

from capcliff.errors import InputError
from capcliff.sim.config import KVCapacity, SimConfig
from capcliff.sim.simulate import simulate
from capcliff.sim.traffic.length_mean import expected_length
from capcliff.sim.traffic.length_spec import histogram_spec
from capcliff.sim.traffic.workload import Normal
from tests.simtools import constant_model, fixed_batch


def test_a_two_token_answer_has_one_inter_token_gap() -> None:
    # One request of 10 prompt tokens and 2 output tokens, 10 ms steps: step 0 prefills it and
    # gives its first token (10 ms), step 1 its second (20 ms). Its one gap is 10 ms, so the
    # inter-token latency (each request weighted by its outputs - 1 gaps) is 10 ms at every
    # percentile. seed 509's weights `outputs - 2` gave it no weight: NaN.
    capacity = KVCapacity(blocks=100, block_size=16)
    result = simulate(fixed_batch(1, 10, 2), constant_model(0.01), capacity, SimConfig())
    assert (result.itl.p50, result.itl.p90, result.itl.p99) == pytest.approx((0.01,) * 3)
    assert result.itl.mean == pytest.approx(0.01)


def test_a_histogram_row_of_one_token_is_kept() -> None:
    # Lengths are integers in [1, MAX_TOKENS]: a one-token answer (3 of them) is a length, and
    # the rows come back sorted by length with their counts (seed 509's `2 <= tokens` refused it).
    assert histogram_spec("5\n1,3\n", source="h.csv") == "histogram:1*3,5*1"
    with pytest.raises(InputError, match=r"osl: h.csv line 1: tokens must be an integer in \[1,"):
        histogram_spec("0,3\n", source="h.csv")


@pytest.mark.parametrize(("mean", "top", "expected"), [(100.0, 256, 100.0), (300.0, 256, 256.0),
                                                       (0.5, 256, 1.0)])  # fmt: skip
def test_a_normal_of_no_spread_is_its_mean_clipped_to_the_lengths(
    mean: float, top: int, expected: float
) -> None:
    # std 0: every draw is the mean, clipped to [1, max_tokens] (100; 300 -> 256; 0.5 -> 1).
    # seed 509's `std <= 0` -> `< 0` divided by the zero std (ZeroDivisionError).
    assert expected_length(Normal(mean, 0.0), max_tokens=top) == expected
