"""Edges the seed-623 mutation sample (`benchmarks/mutation.py --packages sim --seed 623`) found
untested. Every expected value is worked out by hand in the comments."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from capcliff.errors import InputError
from capcliff.sim.config import KVCapacity, SimConfig
from capcliff.sim.disagg.pools import Pool, most_held
from tests.simtools import toy_model
from tests.test_disagg_shortcuts import _burst, _two_pools
from tests.test_disagg_shortcuts import _pool as _shortcut_pool


def _pool(replicas: int, gpus: int) -> Pool:
    return Pool(
        model=toy_model(), capacity=KVCapacity(blocks=100, block_size=4),
        config=SimConfig(), replicas=replicas, gpus_per_replica=gpus,
    )  # fmt: skip


@pytest.mark.parametrize(("replicas", "gpus"), [(0, 4), (2, 0)], ids=["no-replica", "no-gpu"])
def test_a_pool_needs_at_least_one_replica_of_at_least_one_gpu(replicas: int, gpus: int) -> None:
    # Either count alone below 1 is refused, with both figures named: 0 replicas of 4 GPUs, or
    # 2 replicas of 0 GPUs. (Seed 623's `replicas < 1 and gpus_per_replica < 1` refused only a
    # pool missing both.) One replica of one GPU is the least pool taken.
    with pytest.raises(
        InputError,
        match=rf"^disagg: a pool needs >= 1 replica of >= 1 GPU, got {replicas} x {gpus}$",
    ):
        _pool(replicas, gpus)
    assert _pool(1, 1).replicas == 1


def test_the_decode_pools_most_held_is_its_busiest_replicas() -> None:
    # Two decode replicas, by hand: one holds requests in [0, 2], [1, 3], [2, 4] and [5, 6] s
    # (3 at once at t = 2, both ends counted, as test_most_held_counts_both_ends works it), the
    # other one request in [0, 1] s (1). The pool's most held is the busier one's: 3. (Seed
    # 623's `min` read the idler one's 1.)
    run = _two_pools(_shortcut_pool(), [])(_burst(4, 0.0))
    spans = {"busy": ([0.0, 1.0, 2.0, 5.0], [2.0, 3.0, 4.0, 6.0]), "idle": ([0.0], [1.0])}
    busy, idle = (
        dataclasses.replace(run.decode_runs[0], arrival_s=np.array(a), finish_s=np.array(f))
        for a, f in spans.values()
    )
    assert (most_held(busy), most_held(idle)) == (3, 1)
    assert dataclasses.replace(run, decode_runs=[idle, busy]).decode_most_held == 3
    assert dataclasses.replace(run, decode_runs=[busy, idle]).decode_most_held == 3
