"""Edges the seed-137 mutation sample (`benchmarks/mutation.py --packages sim --seed 137`) found
untested. Every expected value is worked out by hand in the comments."""

from __future__ import annotations

import numpy as np
import pytest

from capcliff.errors import InputError
from capcliff.sim.config import ARRIVAL_TIE_S, KVCapacity, SimConfig
from capcliff.sim.loop.replica import ReplicaSim
from capcliff.sim.simulate import make_policy, simulate
from capcliff.sim.traffic.workload import Empirical, Requests
from tests.simtools import constant_model

STEP_S = 2.0**-10  # a step time that sums without rounding: k steps end at exactly k x STEP_S


@pytest.mark.parametrize("policy", ["vllm", "vllm-first-chunk", "trtllm-max-util"])
@pytest.mark.parametrize(("late_s", "waiting_at_10"), [(ARRIVAL_TIE_S, 3), (3 * ARRIVAL_TIE_S, 2)])
def test_an_arrival_within_the_tie_of_a_thrash_event_end_is_queued_at_that_event(
    policy: str, late_s: float, waiting_at_10: int
) -> None:
    # seed 83's thrashing case (A, B, C: prompt 1, output 10; 12 one-token blocks), steps of
    # STEP_S, with D (prompt 1, output 1) arriving just after the event that ends at step 6.
    # An arrival counts as there at a step end t when it comes by t + ARRIVAL_TIE_S (1 ns), as
    # the main loop has it: D at 6 steps + 1 ns is queued at that event, so when B is preempted
    # in steps 6-9 three wait at the 10-step sample (B, C, D). At 6 steps + 3 ns D is heard
    # only at the next event, after its sample: B and C wait there. Nothing else changes: D
    # still queues behind C and gets its one token at step 15 (seed 83's walk-through).
    requests = Requests(
        np.array([1, 1, 1, 1]), np.array([10, 10, 10, 1]), np.array([10, 10, 10, 1]),
        np.array([0.0, 0.0, 0.0, 6 * STEP_S + late_s]),
    )  # fmt: skip
    config = SimConfig(policy=policy)
    result = ReplicaSim(
        requests, constant_model(STEP_S), KVCapacity(12, 1), config, make_policy(config, requests)
    ).run()
    assert (result.series_s / STEP_S).tolist() == [1, 4, 6, 10, 11, 14, 15, 19]
    assert result.series_waiting.tolist() == [0, 0, 1, waiting_at_10, 1, 2, 0, 0]
    assert (result.finish_s / STEP_S).tolist() == [10, 14, 19, 15]


@pytest.mark.parametrize("values", [(), (0, 5), (5, -3)])
def test_an_empirical_length_distribution_needs_lengths_and_each_of_at_least_one_token(
    values: tuple[int, ...],
) -> None:
    # Lengths are drawn from `values`: with none there is nothing to draw, and a length of 0 or
    # fewer tokens is no request. Each is refused as bad input (one line, the field named), not
    # a ValueError from inside (min of nothing) and not accepted.
    with pytest.raises(InputError, match="empirical"):
        Empirical(values)
    Empirical((1, 5))  # one token is the shortest length there is


def test_a_fleets_first_saturation_is_its_earliest_replicas() -> None:
    # Three replicas (round robin in arrival order), each with 4 blocks of 16 tokens, every step
    # 1 ms. A (64-token prompt, 1 token out, at 0 s) fills replica 0's 4 blocks in its prefill
    # step, [0, 1 ms): saturated at step 0, 1 ms. B, the same at 5 ms on replica 1: step 0,
    # 6 ms. C (16 tokens, 1 block) never fills replica 2. The fleet's first saturation is the
    # earliest of them, replica 0's (0, 1 ms); nobody is preempted.
    requests = Requests(
        np.array([64, 64, 16]), np.array([1, 1, 1]), np.array([1, 1, 1]),
        np.array([0.0, 0.005, 0.010]),
    )  # fmt: skip
    result = simulate(requests, constant_model(1e-3), KVCapacity(4, 16), SimConfig(), dp=3)
    assert result.first_saturation is not None
    step, at_s = result.first_saturation
    assert step == 0
    assert at_s == pytest.approx(0.001)
    assert result.first_preemption is None
