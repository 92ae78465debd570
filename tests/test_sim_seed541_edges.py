"""Edges the seed-541 mutation sample (`benchmarks/mutation.py --packages sim --seed 541`) found
untested. Every expected value is worked out by hand in the comments."""

from __future__ import annotations

import numpy as np
import pytest

from capcliff.sim.config import KVCapacity, SimConfig
from capcliff.sim.loop.lockstep import LockstepSim
from capcliff.sim.loop.replica import ReplicaSim
from capcliff.sim.simulate import make_policy
from capcliff.sim.traffic.workload import Requests
from tests.simtools import constant_model


def test_a_lockstep_rank_waiting_for_a_seat_is_not_blocked_for_kv() -> None:
    # Two attention-DP ranks in lockstep, vLLM V1, 1 ms a step, 1-token blocks. Each rank gets
    # A (prompt 6, 4 out) and B (prompt 6, 2 out) at t = 0; a request with g tokens out holds
    # 6 + g - 1 blocks, and admission is decided after the running requests' new blocks.
    # Rank 0, 10 blocks: step 0 prefills A (6 blocks), B needs 6 > 4 free: refused for KV;
    #   steps 1-3 decode A (7, 8, 9 blocks held: 3, 2, 1 free), B refused each time; A's 4th
    #   token ends step 3 (4 ms). B runs steps 4-5 (6 ms). Blocked: steps 0-3, 4 steps, 4 ms.
    # Rank 1, 100 blocks but one seat (max_num_seqs 1): B waits for A's seat, not for KV, so
    #   no step is blocked; the same times (4 ms, 6 ms).
    # (Seed 541's `_run_end` `run[1]` -> `run[0]` marked every pending decode run blocked by its
    # step count: rank 1 counted steps 1-3 and 5, rank 0 step 5 too.)
    model = constant_model(1e-3)

    def rank(blocks: int, seats: int) -> ReplicaSim:
        two = Requests(np.array([6, 6]), np.array([4, 2]), np.array([4, 2]), np.zeros(2))
        config = SimConfig(policy="vllm", max_num_seqs=seats)
        return ReplicaSim(two, model, KVCapacity(blocks, 1), config, make_policy(config, two))

    by_kv, by_seat = LockstepSim([rank(10, 256), rank(100, 1)], model).run()
    assert (by_kv.blocked_steps, by_kv.blocked_s) == (4, pytest.approx(4e-3))
    assert (by_seat.blocked_steps, by_seat.blocked_s) == (0, 0.0)
    for result in (by_kv, by_seat):
        assert result.finish_s.tolist() == pytest.approx([4e-3, 6e-3])
