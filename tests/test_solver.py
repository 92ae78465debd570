"""Sweeps, the analytic and simulated cliff, the sweet spot and the collapse."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from capcliff.analysis.evaluate.solver import (
    Slo,
    SweepPoint,
    analytic_cliff,
    analytic_cliff_percentile,
    collapse,
    config_at,
    meets,
    simulated_cliff,
    slo_sweet_spot,
    sweep,
    sweet_spot,
)
from capcliff.errors import InputError
from capcliff.sim.config import KVCapacity, SimConfig
from capcliff.sim.traffic.workload import Requests
from tests.simtools import fixed_batch, toy_model


def test_analytic_cliff_counts_requests_at_their_longest() -> None:
    # 100 + 400 - 1 = 499 tokens -> ceil(499 / 16) = 32 blocks; 1,000 // 32 = 31 per replica.
    assert analytic_cliff(blocks_per_replica=1_000, block_size=16, input_tokens=100,
                          output_tokens=400) == 31  # fmt: skip
    assert analytic_cliff(blocks_per_replica=1_000, block_size=16, input_tokens=100,
                          output_tokens=400, dp=2) == 62  # fmt: skip


def test_percentile_cliff_uses_the_percentile_request() -> None:
    # Peaks (input + output - 1): 99, 199, 299, 399. The median is 249 tokens -> 16 blocks ->
    # 1,000 // 16 = 62; the maximum 399 -> 25 blocks -> 40.
    requests = Requests(np.array([50] * 4), np.array([50, 150, 250, 350]),
                        np.array([350] * 4), np.zeros(4))  # fmt: skip
    assert analytic_cliff_percentile(requests, blocks_per_replica=1_000, block_size=16,
                                     percentile=50) == 62  # fmt: skip
    assert analytic_cliff_percentile(requests, blocks_per_replica=1_000, block_size=16,
                                     percentile=100) == 40  # fmt: skip


def test_sweep_finds_the_simulated_cliff_one_past_the_analytic_one() -> None:
    # The analytic cliff of this batch is 31 (previous test); in lockstep the first preemption
    # comes at exactly 32 running requests.
    points = sweep(fixed_batch(34, 100, 400), toy_model(), KVCapacity(1_000, 16), SimConfig(),
                   [34, 29, 30, 31, 32, 33])  # fmt: skip
    assert [p.concurrency for p in points] == [29, 30, 31, 32, 33, 34]
    cliff = simulated_cliff(points)
    assert cliff is not None and cliff.concurrency == 32


def test_sweep_splits_concurrency_over_replicas() -> None:
    config = config_at(SimConfig(max_num_batched_tokens=8_192), 10_000, 4)
    assert config.max_num_seqs == 2_500
    assert config.max_num_batched_tokens == 8_192
    assert config_at(SimConfig(), 20_000, 1).max_num_batched_tokens == 20_000


def test_config_at_keeps_the_engines_own_cap() -> None:
    # ceil(10,000 / 4) = 2,500 per replica, above the engine's 48: 48; the budget stays
    config = config_at(SimConfig(max_num_batched_tokens=8_192, engine_max_num_seqs=48), 10_000, 4)
    assert (config.max_num_seqs, config.max_num_batched_tokens) == (48, 8_192)


@given(st.integers(1, 100_000), st.integers(1, 64), st.integers(1, 4_096))
def test_config_at_never_runs_more_than_the_engines_cap_or_the_clients(
    concurrency: int, dp: int, cap: int
) -> None:
    seqs = config_at(SimConfig(engine_max_num_seqs=cap), concurrency, dp).max_num_seqs
    assert seqs == min(-(-concurrency // dp), cap)


def test_sweep_rejects_a_zero_concurrency() -> None:
    with pytest.raises(InputError, match="concurrency"):
        sweep(fixed_batch(2, 10, 10), toy_model(), KVCapacity(100, 16), SimConfig(), [0])


def _point(concurrency: int, makespan: float, rate: float, ttft: float = 1.0,
           tpot: float = 0.05) -> SweepPoint:  # fmt: skip
    return SweepPoint(concurrency, makespan, rate, rate / 100, 0, False,
                      np.full(10, ttft), np.full(10, tpot))  # fmt: skip


def test_sweet_spot_is_the_least_makespan() -> None:
    points = [_point(1, 100, 10), _point(2, 60, 17), _point(4, 80, 12)]
    assert sweet_spot(points).concurrency == 2


def test_slo_sweet_spot_is_the_fastest_point_within_limits() -> None:
    points = [_point(1, 100, 10, ttft=0.5), _point(2, 60, 17, ttft=3.0), _point(4, 80, 12)]
    best = slo_sweet_spot(points, Slo(ttft_s=2.0, tpot_s=0.1))
    assert best is not None and best.concurrency == 4  # 2 misses its TTFT limit
    assert slo_sweet_spot(points, Slo(ttft_s=0.1, tpot_s=0.1)) is None


def test_collapse_measures_throughput_lost_past_the_sweet_spot() -> None:
    # Sweet spot 17 tok/s; 12 tok/s loses 1 - 12/17 = 0.2941; 8.5 tok/s loses 0.5.
    points = [_point(1, 100, 10), _point(2, 60, 17), _point(4, 80, 12), _point(8, 120, 8.5)]
    result = collapse(points, sweet_spot(points))
    assert [c for c, _ in result.losses] == [4, 8]
    assert result.losses[0][1] == pytest.approx(5 / 17)
    assert result.worst_loss == pytest.approx(0.5)


def test_slo_of_treats_a_missing_bound_as_unbounded_and_zero_as_zero() -> None:
    from capcliff.analysis.evaluate.solver import Slo

    assert Slo.of(None, None) is None
    assert Slo.of(2.0, None) == Slo(ttft_s=2.0, tpot_s=float("inf"))
    assert Slo.of(0.0, 0.05) == Slo(ttft_s=0.0, tpot_s=0.05)


def test_the_p99_analytic_cliff_counts_peak_kv_as_input_plus_output_minus_one() -> None:
    # 100 + 62 - 1 = 161 tokens at the peak -> ceil(161 / 16) = 11 blocks; 110 // 11 = 10 requests.
    # (Counting one token fewer, 160 tokens, would need 10 blocks and give 11.)
    requests = fixed_batch(50, 100, 62)
    cliff = analytic_cliff_percentile(
        requests, blocks_per_replica=110, block_size=16, percentile=99.0
    )
    assert cliff == 10


def test_a_p99_exactly_at_the_limit_meets_the_slo() -> None:
    # Limits are inclusive, as in goodput (<=).
    at = np.full(10, 0.5)
    point = SweepPoint(1, 1.0, 1.0, 1.0, 0, False, at, at)
    assert meets(point, Slo(ttft_s=0.5, tpot_s=0.5))
