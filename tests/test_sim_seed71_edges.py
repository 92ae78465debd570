"""Edges the seed-71 mutation sample (`benchmarks/mutation.py --packages sim --seed 71`) found
untested. Every expected value is worked out by hand in the comments."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from capcliff.sim.loop.timeline import Recorder
from capcliff.sim.result import mean_kv_utilization


def test_kv_in_use_is_integrated_over_time_by_the_trapezoid_rule() -> None:
    # 10 blocks. A 2 s event whose used blocks go 4 -> 6 holds (4 + 6) / 2 x 2 = 10 block-s; a
    # 1 s event at 6 -> 6 holds 6: 16 block-s over a 4 s run of 10 blocks is 0.4 of the KV on
    # average. A second replica that never ran counts 0: the mean over the two is 0.2.
    rec = Recorder(total_blocks=10, peak_hbm_bytes_per_s=1e12)
    rec.record(3, 0.0, 2.0, 4, 6, 2, 0, 0.0, 7)
    rec.record(1, 2.0, 1.0, 6, 6, 2, 1, 0.0, 2, blocked=True)
    assert rec.used_block_seconds == 16.0
    assert (rec.steps, rec.events, rec.busy_s, rec.peak_used) == (4, 2, 3.0, 6)
    assert (rec.blocked_steps, rec.blocked_s, rec.scheduled_tokens) == (1, 1.0, 9)
    ran: Any = SimpleNamespace(used_block_seconds=16.0, total_blocks=10, makespan_s=4.0)
    idle: Any = SimpleNamespace(used_block_seconds=0.0, total_blocks=10, makespan_s=0.0)
    assert mean_kv_utilization([ran]) == pytest.approx(0.4)
    assert mean_kv_utilization([ran, idle]) == pytest.approx(0.2)


def test_blocks_a_running_request_references_are_not_revivable() -> None:
    from capcliff.sim.reuse.prefix_cache import PrefixCache

    # One node, 16-token blocks: blocks 0-32 cached, then a request references blocks 0-19.
    # Of the first 10 blocks none is revivable (all referenced); of the first 25, blocks 20-24.
    cache = PrefixCache([-1], [0], 16)
    cache.release(0, 0, 33, now_s=1.0)
    assert cache.acquire(0, 20) == 20
    # a prompt of 10 x 16 + 1 tokens looks up its first 10 blocks: none revivable; of 25
    # (401 tokens), blocks 20-24
    assert cache.lookup_revivable(0, 161) == (10, 0)
    assert cache.lookup_revivable(0, 401) == (25, 5)


def test_an_idle_sglang_rank_in_lockstep_is_back_at_the_initial_ratio() -> None:
    import dataclasses

    import numpy as np

    from capcliff.sim.config import KVCapacity, SimConfig
    from capcliff.sim.loop.lockstep import LockstepSim
    from capcliff.sim.loop.replica import ReplicaSim
    from capcliff.sim.simulate import make_policy
    from capcliff.sim.traffic.workload import Requests
    from tests.simtools import constant_model

    # SGLang sets new_token_ratio back to init_new_token_ratio (0.7) when its scheduler is idle.
    # Rank 0 serves a request at 0 s and then idles while rank 1 serves one at 1 s: at the end
    # rank 0 is at 0.7 exactly (no decay step counted since), rank 1 has decayed below it.
    model = dataclasses.replace(constant_model(1e-3), eager_floor_s=0.01)
    capacity, config = KVCapacity(10, 16), SimConfig(policy="sglang")

    def rank(arrival_s: float) -> ReplicaSim:
        one = Requests(np.array([10]), np.array([5]), np.array([5]), np.array([arrival_s]))
        return ReplicaSim(one, model, capacity, config, make_policy(config, one))

    ranks = [rank(0.0), rank(1.0)]
    LockstepSim(ranks, model).run()
    assert ranks[0].new_token_ratio == 0.7
    assert ranks[1].new_token_ratio < 0.7


def test_a_later_turn_with_an_arrival_time_but_no_think_time_is_refused() -> None:
    import math

    from capcliff.errors import InputError
    from capcliff.sim.traffic.sessions import SessionRow, requests_from_session_trace

    # A later turn is sent after the previous one finishes, so its gap is a think time; an
    # arrival time alone cannot place it. Neither given: it follows at once (think 0).
    first = SessionRow("s", 0, 10, 5, 0.0, None, None, 0)
    with pytest.raises(InputError, match="turn 1: a later turn needs think_s"):
        requests_from_session_trace([first, SessionRow("s", 1, 5, 5, 3.0, None, None, 0)])
    follows = requests_from_session_trace([first, SessionRow("s", 1, 5, 5, None, None, None, 0)])
    assert math.isnan(follows.arrival_s[1])
    assert follows.think_s is not None and follows.think_s[1] == 0.0
    # a pool of users sends each turn when its user is free: the arrival time is not used
    pooled = requests_from_session_trace(
        [first, SessionRow("s", 1, 5, 5, 3.0, None, None, 0)], clients=1
    )
    assert math.isnan(pooled.arrival_s[1])
