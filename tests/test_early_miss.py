"""A probe or verification run stopped as soon as it misses the SLO surely: the verdict is the
whole run's, and a run that does not miss surely is the plain run, step for step."""

from __future__ import annotations

import math

import numpy as np
import pytest

from capcliff.analysis.evaluate.rate_search import (
    RateProbes,
    early_miss,
    meets_slo,
    misses_slo_surely,
    peak_in_system,
)
from capcliff.analysis.evaluate.solver import Slo
from capcliff.analysis.evaluate.steady_state import SteadyState, steady_state
from capcliff.sim.config import KVCapacity, SimConfig
from capcliff.sim.result import SimResult
from capcliff.sim.simulate import PausedRun, simulate
from capcliff.sim.traffic.workload import Requests
from tests.simtools import toy_model
from tests.test_rate_search import _poisson

SLO = Slo(ttft_s=2.0, tpot_s=0.05)
CAPACITY = KVCapacity(blocks=4000, block_size=16, kv_bytes_per_token=1000)
CONFIG = SimConfig(policy="vllm", max_num_seqs=64, max_num_batched_tokens=2048)


def _state(ttft: float, ttft_hw: float, tpot: float, tpot_hw: float) -> SteadyState:
    return SteadyState(
        requests=1000, measured=800, window_s=(0.0, 100.0), throughput_rps=8.0,
        output_tok_s=800.0, arrival_rps=8.0, ttft_p99_s=ttft, tpot_p99_s=tpot,
        tpot_mean_s=tpot / 2, e2e_mean_s=5.0, rps_half_width=0.02, tpot_half_width=0.02,
        queue_growing=False, ttft_p99_half_width=ttft_hw, tpot_p99_half_width=tpot_hw,
    )  # fmt: skip


@pytest.mark.parametrize(
    ("ttft", "ttft_hw", "tpot", "tpot_hw", "misses"),
    [
        (2.4, 0.1, 0.03, 0.1, True),  # 2.4 x 0.9 = 2.16 s > 2 s
        (2.2, 0.1, 0.03, 0.1, False),  # 2.2 x 0.9 = 1.98 s: the interval reaches under 2 s
        (1.0, 0.1, 0.06, 0.1, True),  # 60 ms x 0.9 = 54 ms > 50 ms
        (1.0, 0.1, 0.055, 0.1, False),  # 55 ms x 0.9 = 49.5 ms
        (9.0, math.inf, 0.03, 0.1, False),  # no interval for the TTFT p99: nothing is sure
    ],
    ids=["ttft-over", "ttft-interval-under", "tpot-over", "tpot-interval-under", "no-interval"],
)
def test_a_miss_is_sure_when_the_p99s_interval_lies_over_its_limit(
    ttft: float, ttft_hw: float, tpot: float, tpot_hw: float, misses: bool
) -> None:
    assert misses_slo_surely(_state(ttft, ttft_hw, tpot, tpot_hw), SLO) is misses


def _lazy(requests: Requests) -> PausedRun:
    return PausedRun(requests, toy_model(), CAPACITY, CONFIG)


def _plain(requests: Requests) -> SimResult:
    return simulate(requests, toy_model(), CAPACITY, CONFIG)


def test_an_overloaded_run_stops_early_and_the_whole_run_misses_too() -> None:
    # The toy replica finishes about 25 requests/s (a 225-token prefill at 0.1 ms a token is
    # 22 ms of each request's time); offered 100/s, its queue and TTFT grow without bound.
    sample = _poisson(2000, 100.0, 0)
    early = early_miss(_lazy(sample), sample, SLO, 160.0)
    assert early is not None
    assert len(early.result.finish_s) < len(sample) // 2 + 1
    whole = _plain(sample)
    assert not meets_slo(steady_state(whole, open_loop=True, mean_output=160.0), SLO)
    # the runs agree up to where the lazy one stopped, so its peak is at most the whole run's
    assert early.peak <= peak_in_system(whole)


def test_a_light_load_is_run_to_the_end_as_the_plain_run() -> None:
    sample = _poisson(1000, 2.0, 1)
    lazy = _lazy(sample)
    assert early_miss(lazy, sample, SLO, 160.0) is None
    ran, plain = lazy.advance(len(sample)).result, _plain(sample)
    np.testing.assert_array_equal(ran.finish_s, plain.finish_s)
    np.testing.assert_array_equal(ran.ttft_s, plain.ttft_s)


@pytest.mark.parametrize("rate", [2.0, 100.0], ids=["light", "overloaded"])
def test_a_lazy_probe_gives_the_plain_probes_verdict(rate: float) -> None:
    def probes(lazy: bool) -> RateProbes:
        return RateProbes(
            CONFIG, SLO, lambda n, r: _poisson(n, r, 2), lambda req, cap: _plain(req), 160.0, [],
            paused=(lambda req, cap: _lazy(req)) if lazy else None,
        )  # fmt: skip

    plain, lazy = probes(False).probe(rate, 2000, 64), probes(True).probe(rate, 2000, 64)
    assert lazy.meets is plain.meets
    assert lazy.requests == plain.requests
