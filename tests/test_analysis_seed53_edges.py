"""Edges the seed-53 mutation sample (`benchmarks/mutation.py --packages analysis --seed 53`)
found untested. Every expected value is worked out by hand in the comments."""

from __future__ import annotations

import numpy as np
import pytest

from capcliff.analysis.evaluate.solver import SweepPoint
from capcliff.analysis.sweep.report import point_result
from capcliff.sim.config import KVCapacity, SimConfig
from capcliff.sim.simulate import simulate
from capcliff.sim.traffic.workload import Requests
from tests.simtools import constant_model

MS = 1e-3


def test_a_point_without_a_prefix_cache_reports_no_reuse() -> None:
    # One request, prompt 4 and output 5, 1 ms a step, no prefix caching: one prefill step and
    # 4 decode steps, 5 ms; nothing saved, nothing evicted, no offload tier.
    requests = Requests(
        input_tokens=np.array([4]), output_tokens=np.array([5]),
        max_output_tokens=np.array([5]), arrival_s=np.array([0.0]),
    )  # fmt: skip
    kv = KVCapacity(blocks=10, block_size=1)
    result = simulate(requests, constant_model(MS), kv, SimConfig())
    assert result.reuse is None
    point = point_result(SweepPoint.of(3, result))
    assert point.concurrency == 3
    assert point.makespan_s == pytest.approx(5 * MS)
    assert point.prefill_tokens_saved == 0
    assert point.cache_evicted_blocks == 0
    assert point.offload == []
    assert point.steady is None  # not an online point
