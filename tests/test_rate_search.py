"""The rate search within an SLO: the runs it shares between caps are the runs those caps would
do, and the search that starts from another cap's rate finds what a full search finds."""

from __future__ import annotations

import dataclasses
import math
from types import SimpleNamespace
from typing import Any, cast

import numpy as np
import pytest

from capcliff.analysis.evaluate.rate_search import (
    CAP_TOLERANCE,
    RatePoint,
    RateProbes,
    highest_rate,
    highest_rate_above,
    peak_in_system,
    rate_resolution,
)
from capcliff.analysis.evaluate.solver import Slo, config_at
from capcliff.sim.config import KVCapacity, SimConfig
from capcliff.sim.result import SimResult
from capcliff.sim.simulate import simulate
from capcliff.sim.traffic.workload import Requests
from tests.simtools import toy_model


def _timed(arrival: list[float], finish: list[float]) -> SimResult:
    return cast(SimResult, SimpleNamespace(arrival_s=np.array(arrival), finish_s=np.array(finish)))


def test_the_peak_counts_requests_between_arrival_and_finish() -> None:
    # In the system: [0, 2.5), [1, 1.5), [2, 4), [3, 3.5): at most two at once (t in [1, 1.5),
    # [2, 2.5), [3, 3.5)).
    assert peak_in_system(_timed([0, 1, 2, 3], [2.5, 1.5, 4, 3.5])) == 2


def test_an_arrival_at_a_finish_counts_both() -> None:
    # The second request arrives when the first finishes: counted as two at once (the bound must
    # hold whichever the engine handles first).
    assert peak_in_system(_timed([0, 1], [1, 2])) == 2


def test_a_request_that_never_finished_makes_every_request_count() -> None:
    assert peak_in_system(_timed([0, 1, 2], [1.5, np.nan, 3])) == 3


def _poisson(n: int, rate: float, seed: int) -> Requests:
    rng = np.random.default_rng(seed)
    return Requests(
        input_tokens=rng.integers(50, 400, n).astype(np.int64),
        output_tokens=rng.integers(20, 300, n).astype(np.int64),
        max_output_tokens=np.full(n, 300, dtype=np.int64),
        arrival_s=np.cumsum(rng.exponential(1 / rate, n)),
    )


@pytest.mark.parametrize("policy", ["vllm", "sglang", "trtllm-max-util"])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_a_cap_at_or_above_the_peak_is_the_same_run(policy: str, seed: int) -> None:
    # The claim the search relies on: with at most `peak` requests in the system, any cap of at
    # least `peak` admits exactly as an unbounded cap does, so every request's times agree.
    requests = _poisson(300, 40.0, seed)
    capacity = KVCapacity(blocks=4000, block_size=16, kv_bytes_per_token=1000)
    base = SimConfig(policy=policy, max_num_seqs=1000, max_num_batched_tokens=2048)
    loose = simulate(requests, toy_model(), capacity, base)
    peak = peak_in_system(loose)
    assert 1 < peak < 1000
    for cap in (peak, peak + 7):
        tight = simulate(requests, toy_model(), capacity, config_at(base, cap, 1))
        np.testing.assert_array_equal(tight.finish_s, loose.finish_s)
        np.testing.assert_array_equal(tight.ttft_s, loose.ttft_s)
    binding = simulate(requests, toy_model(), capacity, config_at(base, max(1, peak // 3), 1))
    assert not np.array_equal(binding.finish_s, loose.finish_s)  # a cap that binds does differ


class _Threshold(RateProbes):
    """Probes whose TPOT p99 over its limit is (rate / the cap's threshold)^shape: they pass iff
    the rate is at most the threshold (requests/s); shape 0 gives no margin to go by."""

    def __init__(self, threshold: dict[int, float], shape: float | str = 0.0) -> None:
        slo = Slo(ttft_s=1.0, tpot_s=1.0)
        super().__init__(SimConfig(), slo, _never, _never, 1.0, [])
        self.threshold, self.shape = threshold, shape

    def probe(self, rate: float, n: int, cap: int) -> RatePoint:
        t = self.threshold[cap]
        if self.shape == "queue":  # a p99 wait like rho / (1 - rho), rho = rate / 10: 1 at t
            margin = (rate / (10.0 - rate)) / (t / (10.0 - t))
        else:
            margin = (rate / t) ** float(self.shape)
        state = cast(Any, SimpleNamespace(saturated=False, tpot_p99_s=margin, ttft_p99_s=0.0))
        point = RatePoint(cap, rate, state, rate <= self.threshold[cap], n)
        self.points.append(point)
        return point


def _never(*_: object) -> Any:
    raise AssertionError("not simulated")


def test_the_full_search_brackets_the_threshold_to_its_resolution() -> None:
    probes = _Threshold({8: 6.2})
    found, _ = highest_rate(probes, 8, 10.0, 1000)
    assert found is not None
    assert 6.2 - rate_resolution(10.0) <= found.rate_rps <= 6.2
    assert len(probes.points) == 7  # light, top, five bisections (no margin to interpolate)


def test_a_margin_linear_in_the_rate_closes_in_two_probes() -> None:
    # Margin = rate / 6.2: the line through the light (0.5) and top (9.5) probes crosses 1 at
    # 6.2 (to rounding) and passes; the bracket [6.2, 9.5] has halved, so the next round
    # interpolates again: 6.2, moved a quarter of the resolution up (6.27), fails, and the
    # bracket is closed: 4 probes, where bisection takes 7.
    probes = _Threshold({8: 6.2}, shape=1.0)
    found, _ = highest_rate(probes, 8, 10.0, 1000)
    assert found is not None
    assert 6.2 - rate_resolution(10.0) <= found.rate_rps <= 6.2
    assert len(probes.points) == 4


@pytest.mark.parametrize("shape", [0.3, 1.0, 3.0, 12.0, "queue"])
@pytest.mark.parametrize("threshold", [0.9, 3.3, 6.2, 9.1])
def test_any_monotone_margin_is_bracketed_within_the_bisections_budget(
    shape: float | str, threshold: float
) -> None:
    # Whatever the margin's curvature the bracket at least halves every three probes (an
    # interpolation and its closing probe, then a bisection): never more than light + top +
    # 3 x 5 probes, and the answer within the resolution below the threshold.
    probes = _Threshold({8: threshold}, shape=shape)
    found, _ = highest_rate(probes, 8, 10.0, 1000)
    assert found is not None
    assert threshold - rate_resolution(10.0) <= found.rate_rps <= threshold
    assert len(probes.points) <= 17


def test_a_cap_that_cannot_reach_the_tolerance_costs_two_probes() -> None:
    probes = _Threshold({8: 6.2, 4: 5.0})
    best, _ = highest_rate(probes, 8, 10.0, 1000)
    assert best is not None
    before = len(probes.points)
    # best ~6.1; (1 - 0.05) x 6.1 = 5.8 > 5.0: the cap fails at best's rate and at the floor
    assert highest_rate_above(probes, 4, 9.0, 1000, best, rate_resolution(10.0)) is None
    assert len(probes.points) - before == 2


@pytest.mark.parametrize("threshold", [5.9, 6.2, 6.6, 7.5, 8.6, 9.4])
def test_the_search_above_finds_the_threshold_as_the_full_search_would(threshold: float) -> None:
    probes = _Threshold({8: 6.2, 16: threshold})
    best, _ = highest_rate(probes, 8, 10.0, 1000)
    assert best is not None
    resolution = rate_resolution(10.0)
    found = highest_rate_above(probes, 16, 10.0, 1000, best, resolution)
    assert found is not None and found.meets
    top = (1 - CAP_TOLERANCE) * 10.0
    assert min(threshold, top) - resolution <= found.rate_rps <= min(threshold, top)


def test_runs_are_shared_only_where_the_cap_does_not_bind() -> None:
    calls: list[int] = []

    def run(requests: Requests, cap: int) -> SimResult:
        calls.append(cap)
        capacity = KVCapacity(blocks=4000, block_size=16, kv_bytes_per_token=1000)
        return simulate(requests, toy_model(), capacity, SimConfig(max_num_seqs=cap))

    probes = RateProbes(
        SimConfig(), Slo(ttft_s=10.0, tpot_s=1.0),
        lambda n, rate: _poisson(n, rate, 5), run, 160.0, [],
    )  # fmt: skip
    first = probes.probe(40.0, 300, 1000)
    shared = probes.probe(40.0, 300, first.peak)
    assert calls == [1000] and shared.cap == first.peak
    assert dataclasses.replace(shared, cap=1000) == first
    probes.probe(40.0, 300, first.peak - 1)  # may bind: simulated
    assert calls == [1000, first.peak - 1]


def test_a_probe_holds_twenty_times_the_requests_in_the_system_at_a_passing_rate() -> None:
    # TTFT 2 s + 1,000 output tokens x 30 ms = 32 s in the system; at 5 requests/s Little's law
    # holds 5 x 32 = 160 requests, and the probe 20 x 160 = 3,200 of the 20,480 asked for.
    slo = Slo(ttft_s=2.0, tpot_s=0.03)
    probes = RateProbes(SimConfig(), slo, _never, _never, 1000.0, [], cycle_s=32.0)
    assert probes.size(20_480, 5.0) == 3_200
    assert probes.size(1_000, 5.0) == 1_000  # never more than asked for
    assert probes.size(20_480, 0.01) == 200  # 20 x 0.32 = 6.4: at least MIN_FIRST


def test_without_a_bound_on_the_time_in_the_system_a_probe_is_the_size_asked_for() -> None:
    slo = Slo(ttft_s=math.inf, tpot_s=0.05)
    probes = RateProbes(SimConfig(), slo, _never, _never, 1000.0, [], cycle_s=math.inf)
    assert probes.size(20_480, 5.0) == 20_480
