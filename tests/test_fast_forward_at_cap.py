"""A decode run with the queue waiting and every seat taken (a saturation run at its cap is
mostly such runs): `exact_step` answers False there with nothing changed, and the replica jumps
to the first finish."""

from __future__ import annotations

import numpy as np
import pytest

from capcliff.sim.config import KVCapacity, SimConfig
from capcliff.sim.loop.admit_step import exact_step
from capcliff.sim.loop.replica import ReplicaSim
from capcliff.sim.simulate import make_policy
from tests.simtools import constant_model, fixed_batch

CONFIGS = [
    SimConfig(policy="vllm", max_num_seqs=2),
    SimConfig(policy="trtllm-max-util", max_num_seqs=2),
]


def _sim(config: SimConfig, n: int) -> ReplicaSim:
    """n requests (prompt 10, output 3) waiting at t = 0, 1 ms a step, max_num_seqs 2."""
    requests = fixed_batch(n, 10, 3)
    return ReplicaSim(
        requests, constant_model(1e-3), KVCapacity(100, 16), config, make_policy(config, requests)
    )


@pytest.mark.parametrize("config", CONFIGS, ids=lambda c: c.policy)
def test_exact_step_with_every_seat_taken_admits_nobody_and_changes_nothing(
    config: SimConfig,
) -> None:
    sim = _sim(config, 3)
    sim.take_arrivals()
    assert exact_step(sim) is True  # step 0 admits A and B into both seats; C waits
    before = (sim.free, sim.step, sim.now_s, list(sim.waiting), dict(sim.running), sim.rec.events)
    assert exact_step(sim) is False
    after = (sim.free, sim.step, sim.now_s, list(sim.waiting), dict(sim.running), sim.rec.events)
    assert after == before


@pytest.mark.parametrize("config", CONFIGS, ids=lambda c: c.policy)
def test_a_full_replica_jumps_to_the_first_finish_while_the_queue_waits(config: SimConfig) -> None:
    # Step 0 admits A and B (first tokens at 1 ms); steps 1-2 are one run of decode steps (their
    # tokens 2-3, done at 3 ms) though C and D wait; step 3 admits C and D (1 token at 4 ms),
    # steps 4-5 finish them at 6 ms. Four events: two admission steps, two runs.
    result = _sim(config, 4).run()
    assert result.first_token_s.tolist() == pytest.approx([1e-3, 1e-3, 4e-3, 4e-3])
    assert result.finish_s.tolist() == pytest.approx([3e-3, 3e-3, 6e-3, 6e-3])
    assert result.events == 4
    assert np.array_equal(result.series_running, [2, 0, 2, 0])
