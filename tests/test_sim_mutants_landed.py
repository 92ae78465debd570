"""Landings folded into the decode run, counted by hand (a mutation survivor of
`benchmarks/mutation.py --packages sim`, seed 19: capcliff/sim/loop/landed.py `run_step`)."""

from __future__ import annotations

import numpy as np
import pytest

from capcliff.sim.config import KVCapacity, SimConfig
from capcliff.sim.loop.landed import LandedReplicaSim
from capcliff.sim.simulate import make_policy
from capcliff.sim.traffic.workload import Requests
from tests.simtools import constant_model


def test_two_landings_at_once_join_the_decode_run_in_one_event() -> None:
    # 10 ms a step. A (output 200) lands at 0 s: its admission step (token 2) starts the run,
    # which ends where B and C (output 100) land, at 1.0 s (100 steps): event 1. B and C are
    # admitted together into the run with A (their token 2 at 1.01 s); the run ends at the next
    # finish, which is all three: A's token 200 and B's and C's token 100 at 1.99 s: event 2.
    requests = Requests(
        np.full(3, 10), np.array([200, 100, 100]), np.array([200, 100, 100]),
        np.array([0.0, 1.0, 1.0]),
    )  # fmt: skip
    config = SimConfig(policy="vllm", max_num_seqs=8, max_num_batched_tokens=64)
    rule = make_policy(config, requests)
    result = LandedReplicaSim(
        requests, constant_model(0.01), KVCapacity(200, 4), config, rule
    ).run()
    assert (result.events, result.steps) == (2, 199)
    assert result.series_s.tolist() == pytest.approx([1.0, 1.99])
    assert result.first_token_s.tolist() == pytest.approx([0.01, 1.01, 1.01])
    assert result.finish_s.tolist() == pytest.approx([1.99, 1.99, 1.99])
