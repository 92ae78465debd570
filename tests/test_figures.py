"""The headline figures of a simulation, worked out by hand: latency percentiles, goodput under
both SLOs, KV and HBM utilisation.

Percentiles follow numpy's default definition (linear interpolation between closest ranks;
Hyndman & Fan type 7, Excel's PERCENTILE.INC): for n sorted values x_0 .. x_{n-1}, the p-th
percentile sits at rank h = (n - 1) x p / 100 and is x_floor(h) + (h - floor(h)) x (x_floor(h)+1 -
x_floor(h)). For 1 .. 100: p50 at h = 49.5 -> 50.5, p90 at h = 89.1 -> 90.1, p99 at h = 98.01 ->
99.01 (p95 would be 95.05).
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from capcliff.analysis.evaluate.solver import Slo, SweepPoint, meets
from capcliff.analysis.plan.batch import score, sweet_spot_figures
from capcliff.analysis.plan.types import Objective
from capcliff.analysis.sweep.report import point_result
from capcliff.perf.step_time import StepTimeModel
from capcliff.sim.config import KVCapacity, SimConfig
from capcliff.sim.loop.replica import ReplicaSim
from capcliff.sim.result import Percentiles, SimResult
from capcliff.sim.simulate import make_policy, simulate
from capcliff.sim.traffic.workload import Requests
from tests.simtools import constant_model, fixed_batch, toy_model

MS = 1e-3


def test_percentiles_of_one_to_one_hundred() -> None:
    p = Percentiles.of(np.arange(1.0, 101.0))
    assert (p.p50, p.p90, p.p99) == pytest.approx((50.5, 90.1, 99.01), rel=1e-12)


def test_percentiles_skip_requests_without_a_value() -> None:
    # Finite values 1, 2, 3: h = 2 x p / 100 -> p50 at 1.0 -> 2; p90 at 1.8 -> 2.8; p99 at 1.98.
    p = Percentiles.of(np.array([np.nan, 3.0, 1.0, np.inf, 2.0]))
    assert (p.p50, p.p90, p.p99) == pytest.approx((2.0, 2.8, 2.98), rel=1e-12)


@pytest.fixture(scope="module")
def one_at_a_time() -> SimResult:
    # 100 one-token requests, all there at t = 0, one running at a time, every step 1 ms:
    # request k is prefilled (and finished) in step k, so its TTFT = E2E = (k + 1) ms.
    requests = fixed_batch(100, 1, 1)
    return simulate(requests, constant_model(MS), KVCapacity(10, 16), SimConfig(max_num_seqs=1))


def test_simulated_latency_percentiles_are_the_hand_computed_ones(one_at_a_time: SimResult) -> None:
    assert one_at_a_time.ttft_s == pytest.approx(np.arange(1, 101) * MS)
    t = one_at_a_time.ttft
    assert (t.p50, t.p90, t.p99) == pytest.approx((50.5 * MS, 90.1 * MS, 99.01 * MS))
    e = one_at_a_time.e2e
    assert (e.p50, e.p90, e.p99) == pytest.approx((50.5 * MS, 90.1 * MS, 99.01 * MS))


def test_the_sweep_report_prints_p50_and_p99(one_at_a_time: SimResult) -> None:
    point = point_result(SweepPoint.of(1, one_at_a_time))
    assert point.ttft_p50_s == pytest.approx(50.5 * MS)
    assert point.ttft_p99_s == pytest.approx(99.01 * MS)
    assert point.e2e_p99_s == pytest.approx(99.01 * MS)
    assert point.tpot_p99_s == 0.0  # one-token outputs have no TPOT


def _with_latencies(base: SimResult, ttft: list[float], tpot: list[float]) -> SimResult:
    return dataclasses.replace(
        base,
        ttft_s=np.array(ttft),
        tpot_s=np.array(tpot),
        e2e_s=np.array(ttft),
        output_tokens=np.ones(len(ttft), dtype=np.int64),
        makespan_s=2.0,
    )


# Four requests over a 2 s makespan. Request 0 meets both limits, 1 sits exactly on the TTFT limit
# (met: <=), 2 breaks TPOT, 3 breaks TTFT and has one output token (no TPOT: meets any limit).
TTFT = [0.1, 0.5, 0.2, 0.9]
TPOT = [0.01, 0.01, 0.08, np.nan]


@pytest.mark.parametrize(
    ("ttft_limit", "tpot_limit", "good"),
    [
        (0.5, 0.05, 2),  # both bind: requests 0 and 1 -> 1.0 request/s
        (0.5, np.inf, 3),  # TTFT binds alone: 0, 1, 2 -> 1.5 requests/s
        (np.inf, 0.05, 3),  # TPOT binds alone: 0, 1, 3 -> 1.5 requests/s
        (0.49, 0.05, 1),  # one notch under request 1's TTFT: only request 0
        (np.inf, 0.01, 3),  # TPOT exactly 0.01 meets a 0.01 limit: 0, 1 and 3 (no TPOT)
    ],
    ids=["both", "ttft-only", "tpot-only", "ttft-boundary", "tpot-boundary"],
)
def test_goodput_counts_requests_within_both_limits(
    one_at_a_time: SimResult, ttft_limit: float, tpot_limit: float, good: int
) -> None:
    result = _with_latencies(one_at_a_time, TTFT, TPOT)
    assert result.goodput_requests_per_s(ttft_s=ttft_limit, tpot_s=tpot_limit) == good / 2.0


def test_the_plan_ranks_by_goodput_under_both_limits(one_at_a_time: SimResult) -> None:
    result = _with_latencies(one_at_a_time, TTFT, TPOT)
    point = SweepPoint.of(1, result)
    assert score(point, Objective.GOODPUT, Slo(ttft_s=0.5, tpot_s=0.05)) == 1.0


def _point(ttft_s: np.ndarray, tpot_s: np.ndarray) -> SweepPoint:
    return SweepPoint(1, 1.0, 1.0, 1.0, 0, False, ttft_s, tpot_s)


def test_an_slo_is_met_at_its_p99() -> None:
    # p99 of 1 .. 100 ms is 99.01 ms (for TTFT and TPOT alike).
    ms = np.arange(1, 101) * MS
    flat = np.full(100, MS)
    assert meets(_point(ms, flat), Slo(ttft_s=0.09902, tpot_s=1.0))
    assert not meets(_point(ms, flat), Slo(ttft_s=0.09900, tpot_s=1.0))
    assert meets(_point(flat, ms), Slo(ttft_s=1.0, tpot_s=0.09902))
    assert not meets(_point(flat, ms), Slo(ttft_s=1.0, tpot_s=0.09900))


def _prompt_4_output_5(arrivals: list[float]) -> Requests:
    n = len(arrivals)
    return Requests(
        input_tokens=np.full(n, 4, dtype=np.int64),
        output_tokens=np.full(n, 5, dtype=np.int64),
        max_output_tokens=np.full(n, 5, dtype=np.int64),
        arrival_s=np.array(arrivals),
    )


# One request of prompt 4, output 5, in a cache of 10 one-token blocks, 1 ms a step. Step 0
# prefills 4 tokens (4 blocks); decode steps 1-4 write the KV of tokens 1-4: 5, 6, 7, 8 blocks.
# Blocks in use, step by step: 4, 5, 6, 7, 8 -> peak 8 / 10 = 0.8; time-weighted mean over the
# 5 ms it runs: (4 + 5 + 6 + 7 + 8) / 5 = 6 blocks -> 0.6.
ONE_TOKEN_BLOCKS = KVCapacity(blocks=10, block_size=1)


def test_kv_utilization_peak_and_mean_of_one_request() -> None:
    result = simulate(_prompt_4_output_5([0.0]), constant_model(MS), ONE_TOKEN_BLOCKS, SimConfig())
    assert result.makespan_s == pytest.approx(5 * MS)
    assert result.peak_kv_utilization == pytest.approx(0.8)
    assert result.mean_kv_utilization == pytest.approx(0.6)
    assert point_result(SweepPoint.of(1, result)).mean_kv_utilization == pytest.approx(0.6)


def test_mean_kv_utilization_counts_idle_time_as_empty() -> None:
    # A second identical request arrives at 10 ms, after 5 ms idle: 30 + 30 block-ms used over
    # 10 blocks x 15 ms = 0.4.
    requests = _prompt_4_output_5([0.0, 10 * MS])
    result = simulate(requests, constant_model(MS), ONE_TOKEN_BLOCKS, SimConfig())
    assert result.makespan_s == pytest.approx(15 * MS)
    assert result.mean_kv_utilization == pytest.approx(0.4)


def test_mean_kv_utilization_averages_the_replicas() -> None:
    # Round robin: replica 0 serves the prompt-4, output-5 request (0.6, as above); replica 1 a
    # prompt-2, output-3 one: 2, 3, 4 blocks over 3 ms -> 3 / 10 = 0.3. Each replica's mean over
    # its own run, averaged: (0.6 + 0.3) / 2 = 0.45; the peak is the fuller replica's 0.8.
    requests = Requests(
        input_tokens=np.array([4, 2], dtype=np.int64),
        output_tokens=np.array([5, 3], dtype=np.int64),
        max_output_tokens=np.array([5, 3], dtype=np.int64),
        arrival_s=np.zeros(2),
    )
    result = simulate(requests, constant_model(MS), ONE_TOKEN_BLOCKS, SimConfig(), dp=2)
    assert result.mean_kv_utilization == pytest.approx(0.45)
    assert result.peak_kv_utilization == pytest.approx(0.8)


def _weights_only_model(kv_bytes_per_token: float = 0.0) -> StepTimeModel:
    """1 GB of weights read at an effective 1 TB/s out of a 2 TB/s peak, plus 1 ms a step."""
    return dataclasses.replace(
        toy_model(step_overhead_s=MS),
        weight_bytes=1e9,
        kv_bytes_per_token=kv_bytes_per_token,
        flops_per_token=0.0,
        flops_per_sequence=0.0,
        attention_flops_per_pair=0.0,
        bandwidth_bytes_per_s=1e12,
        peak_bandwidth_bytes_per_s=2e12,
    )


def test_hbm_utilization_is_bytes_over_time_times_peak_bandwidth() -> None:
    # Every step reads 1e9 B in 1e9 / 1e12 = 1 ms + 1 ms overhead: 1e9 / (2 ms x 2e12 B/s) = 0.25.
    requests = _prompt_4_output_5([0.0, 0.0])
    result = simulate(requests, _weights_only_model(), ONE_TOKEN_BLOCKS, SimConfig(), dp=2)
    assert result.series.hbm_utilization == pytest.approx(np.full(len(result.series.time_s), 0.25))


def test_hbm_utilization_counts_the_kv_read() -> None:
    # With 1e5 B of KV per token, step 0 reads 1e9 + 4 x 1e5 B (the prompt it writes) and decode
    # steps 1-4 read 1e9 + 1e5 x (5, 6, 7, 8): 5e9 + 3e6 B in all, over 5.003 ms of reading plus
    # 5 ms overhead. Utilisation, time-weighted: 5.003e9 / (10.003e-3 s x 2e12 B/s) = 0.2500750.
    config = SimConfig()
    requests = _prompt_4_output_5([0.0])
    model = _weights_only_model(kv_bytes_per_token=1e5)
    run = ReplicaSim(requests, model, ONE_TOKEN_BLOCKS, config, make_policy(config, requests)).run()
    ends = run.series_s
    durations = np.diff(np.concatenate([[0.0], ends]))
    assert ends[-1] == pytest.approx(10.003e-3)
    weighted = float((run.series_hbm_utilization * durations).sum()) / ends[-1]
    assert weighted == pytest.approx(5.003e9 / (10.003e-3 * 2e12), rel=1e-9)


def test_the_plan_reports_its_sweet_spot_by_hand(one_at_a_time: SimResult) -> None:
    # TTFT 1 .. 100 ms: p99 99.01 ms; 50 requests within a 50.5 ms TTFT limit over the 0.1 s
    # makespan: 500 requests/s; one-token outputs have no TPOT (0); 8 GPUs x 0.1 s / 3,600 /
    # 100 tokens x 1e6 = 2.222 GPU-hours per million output tokens.
    sweet = sweet_spot_figures(
        SweepPoint.of(1, one_at_a_time), gpus=8, slo=Slo(ttft_s=0.0505, tpot_s=1.0)
    )
    assert sweet.ttft_p99_s == pytest.approx(99.01 * MS)
    assert sweet.tpot_p99_s == 0.0
    assert sweet.makespan_s == pytest.approx(0.1)
    assert sweet.goodput_req_s == pytest.approx(500.0)
    assert sweet.gpu_hours_per_mtok == pytest.approx(8 * 0.1 / 3600 / 100 * 1e6)
    assert sweet.output_throughput_tok_s == pytest.approx(1000.0)  # 100 tokens / 0.1 s
