"""Edges the seed-89 mutation sample (`benchmarks/mutation.py --packages sim --seed 89`) found
untested. Every expected value is worked out by hand in the comments."""

from __future__ import annotations

import numpy as np
import pytest

from capcliff.sim.reuse.prefix_reuse import ReuseRecord, reuse_summary


def test_the_hit_rate_over_time_leaves_out_lookups_of_preempted_requests() -> None:
    # Two lookups in the bin (0, 1 s]: a new request's (100 tokens, 20 hit) and a resumed one's
    # (100 tokens, all 100 hit: its own blocks, freed a step before). vLLM's hit rate counts only
    # the new request: 20 / 100 = 0.2 overall and in the bin (the two together would be 0.6).
    # The resumed request's rate is 100 / 100 = 1.0.
    record = ReuseRecord(
        queried_tokens=200, hit_tokens=120, evicted_blocks=0,
        lookup_s=np.array([0.5, 0.5]), lookup_queried=np.array([100.0, 100.0]),
        lookup_hit=np.array([20.0, 100.0]), resumed_queried_tokens=100, resumed_hit_tokens=100,
        lookup_resumed=np.array([False, True]),
    )  # fmt: skip
    summary = reuse_summary([record], np.array([1.0]))
    assert summary.hit_rate == pytest.approx(0.2)
    assert summary.resumed_hit_rate == pytest.approx(1.0)
    assert summary.hit_rate_series.tolist() == pytest.approx([0.2])
    assert summary.queried_series.tolist() == [100.0]
