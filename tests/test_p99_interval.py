"""The p99's sampling interval (batch quantiles) and the SLO verdict that adds it: a plan's
sustained rate is one another sample of the same load meets too."""

from __future__ import annotations

import dataclasses

import numpy as np

from capcliff.analysis.evaluate.capacity import meets_slo_surely
from capcliff.analysis.evaluate.rate_search import meets_slo
from capcliff.analysis.evaluate.solver import Slo
from capcliff.analysis.evaluate.steady_state import SteadyState, p99_half_width


def test_the_half_width_covers_the_spread_of_p99s_between_independent_samples() -> None:
    # Exponential values: the p99 of n draws has a known spread; the 95 % half-width computed
    # from one sample must match the spread measured over 40 independent samples (1.96 sd)
    # within a factor of two.
    rng = np.random.default_rng(7)
    n = 20_000
    p99s = [float(np.percentile(rng.exponential(size=n), 99)) for _ in range(40)]
    measured = 1.96 * float(np.std(p99s, ddof=1)) / float(np.mean(p99s))
    stated = [p99_half_width(rng.exponential(size=n)) for _ in range(10)]
    assert 0.5 * measured < float(np.median(stated)) < 2.0 * measured


def test_more_requests_narrow_the_interval() -> None:
    rng = np.random.default_rng(3)
    small = np.median([p99_half_width(rng.exponential(size=2_000)) for _ in range(10)])
    large = np.median([p99_half_width(rng.exponential(size=32_000)) for _ in range(10)])
    assert large < small / 2  # 1/sqrt(16) = 1/4 in theory


def _state(tpot_p99_s: float, half_width: float) -> SteadyState:
    return SteadyState(
        requests=1000, measured=800, window_s=(0.0, 100.0), throughput_rps=8.0,
        output_tok_s=2000.0, arrival_rps=8.0, ttft_p99_s=0.2, tpot_p99_s=tpot_p99_s,
        tpot_mean_s=0.009, e2e_mean_s=3.0, rps_half_width=0.02, tpot_half_width=0.02,
        queue_growing=False, ttft_p99_half_width=0.05, tpot_p99_half_width=half_width,
    )  # fmt: skip


def test_a_p99_under_the_limit_by_less_than_its_noise_is_not_surely_met() -> None:
    slo = Slo(ttft_s=1.0, tpot_s=0.012)
    state = _state(0.0113, 0.08)  # 11.3 ms x 1.08 = 12.2 ms > 12 ms
    assert meets_slo(state, slo) and not meets_slo_surely(state, slo)
    assert meets_slo_surely(dataclasses.replace(state, tpot_p99_half_width=0.05), slo)  # 11.9
