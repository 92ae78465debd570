"""Edges the seed-101 mutation sample (`benchmarks/mutation.py --packages analysis --seed 101`)
found untested. Every expected value is worked out by hand in the comments."""

from __future__ import annotations

import json
import math
import shlex
from dataclasses import replace
from types import SimpleNamespace
from typing import cast

import numpy as np
import pytest
from typer.testing import CliRunner

from capcliff.analysis.disagg.online import falls_behind, queue_allowance
from capcliff.analysis.evaluate.capacity import (
    CapPoint,
    Replica,
    ReplicaCapacity,
    _p99s_surely,
    _surely_margin,
    sustained_bound,
)
from capcliff.analysis.evaluate.layout_capacity import LayoutEval
from capcliff.analysis.evaluate.rate_search import RatePoint, RateProbes, highest_rate_above
from capcliff.analysis.evaluate.solver import Slo
from capcliff.analysis.evaluate.steady_state import SteadyState
from capcliff.analysis.flags import Deployment as FlagsDeployment
from capcliff.analysis.flags import sglang_command
from capcliff.analysis.plan.online_rows import _capacity
from capcliff.analysis.sweep.failure import past_cliff
from capcliff.analysis.sweep.step_fit import Timings
from capcliff.analysis.workloads import parse_concurrency
from capcliff.catalog.layout import Layout
from capcliff.cli import app
from capcliff.errors import InputError
from capcliff.memory.layout_memory import LayoutMemory
from capcliff.sim.result import SimResult
from capcliff.sim.traffic.workload_rules import MAX_REQUESTS


def test_combining_timings_is_a_linear_combination_of_each_figure() -> None:
    # 3 x (2, 4, 8) + 0.5 x (1, 2, 4) = (6.5, 13, 26); the preemptions are the first run's
    first = Timings(tpot_s=2.0, ttft_s=4.0, s_per_token=8.0, preemptions=5)
    second = Timings(tpot_s=1.0, ttft_s=2.0, s_per_token=4.0, preemptions=9)
    assert first.combine(3.0, second, 0.5) == Timings(6.5, 13.0, 26.0, 5)


def _searched(meets_slo: bool) -> LayoutEval:
    state = SimpleNamespace(
        output_tok_s=100.0, ttft_p99_s=0.5, tpot_p99_s=0.02, ttft_p99_half_width=0.1,
        tpot_p99_half_width=0.1, throughput_rps=3.0,
    )  # fmt: skip
    point = SimpleNamespace(cap=8, state=state, hit_cliff=False, thrashing=False, requests=400)
    found = SimpleNamespace(
        cap=8, at_sustained=state, points=[point], probes=[], meets_slo=meets_slo,
        sustained_rps=2.0, saturation_rps=3.0, best_ttft_p99_s=0.5, best_tpot_p99_s=0.02,
        settled=True, simulated_requests=400,
    )  # fmt: skip
    memory = cast(LayoutMemory, SimpleNamespace(layout=Layout(dp=2)))
    return LayoutEval(memory, cast(Replica, None), cast(ReplicaCapacity, found), refined=True)


def test_a_searched_layout_says_why_only_when_it_misses_the_slo() -> None:
    # refined (searched) and within an SLO: a miss says so; a layout that meets it needs no
    # reason. dp 2: 2 x 100 = 200 output tok/s and 2 x 2.0 = 4.0 requests/s sustained
    missed = _capacity(_searched(meets_slo=False), within_slo=True)
    assert missed.why_not == "searched: no cap and rate tried meets the SLO"
    met = _capacity(_searched(meets_slo=True), within_slo=True)
    assert met.why_not is None
    assert (met.output_tok_s, met.sustained_rps, met.saturation_rps) == (200.0, 4.0, 6.0)


def test_a_layout_that_meets_no_rate_delivers_no_tokens_but_shows_its_closest_miss() -> None:
    # No rate met the SLO: 0 requests/s sustained make 0 output tokens/s (the table printed
    # "0.00 rps, 182 tok/s"); its p99s stay those of the lightest load tried, so a reader sees
    # by how much it missed (the stub's 0.5 s and 20 ms)
    missed = _capacity(_searched(meets_slo=False), within_slo=True)
    assert missed.output_tok_s == 0.0
    assert (missed.ttft_p99_s, missed.tpot_p99_s) == (0.5, 0.02)


def _cap_point(cap: int, rps: float, preemptions: int) -> CapPoint:
    result = SimpleNamespace(total_preemptions=preemptions, finish_s=np.ones(10))
    state = SimpleNamespace(throughput_rps=rps)
    return CapPoint(cap, cast(SteadyState, state), cast(SimResult, result), 10)


def test_the_sustained_bound_is_the_best_calm_cap_less_the_cap_tolerance_within_an_slo() -> None:
    # caps 8 (10/s, 0 preemptions) and 16 (12/s, 6 preemptions over 10 requests: thrashing,
    # past 0.5 per request): the best calm cap is 10/s; within an SLO 0.95 x 10 = 9.5/s
    calm, thrashing = _cap_point(8, 10.0, 0), _cap_point(16, 12.0, 6)
    slo = Slo(ttft_s=2.0, tpot_s=0.05)
    assert sustained_bound((calm, thrashing), None) == 10.0
    assert sustained_bound((calm, thrashing), slo) == pytest.approx(9.5)
    # every cap thrashing: the best of them all, 12/s
    assert sustained_bound((thrashing,), None) == 12.0


class _Passing:
    """Rate probes that pass at every rate below `limit` (requests/s); each probe recorded."""

    def __init__(self, limit: float) -> None:
        self.limit, self.points = limit, cast(list[RatePoint], [])

    def size(self, n: int, rate: float) -> int:
        return n

    def probe(self, rate: float, n: int, cap: int) -> RatePoint:
        state = cast(SteadyState, SimpleNamespace(saturated=False, ttft_p99_s=0.0, tpot_p99_s=1.0))
        self.points.append(RatePoint(cap, rate, state, rate <= self.limit, n))
        return self.points[-1]


def test_a_cap_searched_above_another_stops_at_the_tolerance_below_saturation() -> None:
    # saturation 10/s: no rate past (1 - 0.05) x 10 = 9.5/s is probed, though the cap would pass
    # up to 50/s. From best's 6/s (a pass) the top, 9.5, is tried; it passes and ends the search
    best = RatePoint(8, 6.0, cast(SteadyState, None), True, 100)
    probes = _Passing(50.0)
    found = highest_rate_above(cast(RateProbes, probes), 16, 10.0, 100, best, 0.1)
    assert found is not None and found.rate_rps == pytest.approx(9.5)
    assert [p.rate_rps for p in probes.points] == pytest.approx([6.0, 9.5])
    # best already at 10/s: its floor 0.95 x 10 reaches the top, 9.5, so nothing is probed
    fast = RatePoint(8, 10.0, cast(SteadyState, None), True, 100)
    assert highest_rate_above(cast(RateProbes, _Passing(50.0)), 16, 10.0, 100, fast, 0.1) is None


def test_a_concurrency_of_exactly_the_request_limit_is_read_and_one_more_refused() -> None:
    # each value is at most MAX_REQUESTS (10,000,000), the limit included; listed or as a span
    assert MAX_REQUESTS == 10_000_000
    assert parse_concurrency("1,10000000") == (1, 10_000_000)
    assert parse_concurrency("5000000..10000000") == (5_000_000, 10_000_000)
    for text in ("10000001", "0,8"):
        with pytest.raises(InputError, match="concurrency: cannot read"):
            parse_concurrency(text)


def test_the_verification_margin_is_the_larger_p99_with_its_half_width_over_its_limit() -> None:
    # TTFT 1.0 s x 1.2 = 1.2 s of 2 s is 0.6; TPOT 40 ms x 1.25 = 50 ms of 50 ms is 1.0: 1.0.
    # A TTFT of 3 s is 1.5, or 2.25 with a half-width of 0.5; a growing queue, or no p99
    # (NaN), is infinite
    slo = Slo(ttft_s=2.0, tpot_s=0.05)

    def state(ttft: float, hw: float, saturated: bool = False) -> SteadyState:
        figures = SimpleNamespace(
            ttft_p99_s=ttft, ttft_p99_half_width=hw, tpot_p99_s=0.04, tpot_p99_half_width=0.25,
            saturated=saturated,
        )  # fmt: skip
        return cast(SteadyState, figures)

    assert _surely_margin(state(1.0, 0.2), slo) == pytest.approx(1.0)
    assert _surely_margin(state(3.0, 0.0), slo) == pytest.approx(1.5)
    assert _surely_margin(state(3.0, 0.5), slo) == pytest.approx(2.25)  # 3 x 1.5 = 4.5 of 2 s
    assert _p99s_surely(state(1.0, 0.2)) == pytest.approx((1.2, 0.05))
    assert _surely_margin(state(1.0, 0.2, saturated=True), slo) == math.inf
    assert _surely_margin(state(math.nan, 0.0), slo) == math.inf


def test_a_queue_falls_behind_past_four_sigmas_of_its_backlog_change() -> None:
    # 250 arrivals at 0, 1, ..., 249 s: the window runs from arrival ceil(0.2 x 250) = 50 (at
    # 50 s) to the last, 249 s, and holds 200 of them. The noise term 4 sqrt(2 x 200) = 80 is
    # above 20 % of 200 = 40, so a deficit of 90 (110 done in the window) falls behind and one
    # of 70 (130 done) does not
    arrived = np.arange(250.0)

    def done(in_window: int) -> np.ndarray:
        return np.where(np.arange(250) < in_window, 100.0, 1_000.0)

    assert falls_behind(arrived, done(110))
    assert not falls_behind(arrived, done(130))
    assert not falls_behind(arrived, done(110), waiting=95.0)  # a standing queue of 95 is fine


@pytest.mark.parametrize("policy", ["write-through", "write-back"])
def test_the_vllm_write_back_warning_follows_the_offload_policy_planned(policy: str) -> None:
    # vLLM's CPU offloading connector writes through; only a plan simulated with write-back
    # warns that vLLM has no flag for it
    args = ["plan", "llama-3.1-8b", "--gpus", "1", "--isl", "512", "--osl", "128",
            "--num-requests", "100", "--offload", "cpu:64GiB", "--offload-policy", policy,
            "--format", "json"]  # fmt: skip
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    warned = [w for w in json.loads(result.output)["flag_warnings"] if "write-back" in w]
    assert len(warned) == (policy == "write-back")


def test_a_recompute_share_of_exactly_ten_percent_dominates() -> None:
    # "at least 10 % of the tokens computed": 100 of 1,000 recomputed is preemption; 99 is not
    def run(recomputed: int) -> SimResult:
        series = SimpleNamespace(time_s=np.array([0.0, 1.0]), waiting=np.array([2.0, 0.0]))
        figures = SimpleNamespace(
            first_saturation=(0, 0.5), e2e_s=np.ones(4), series=series, makespan_s=1.0,
            requests_per_s=4.0, scheduled_tokens=1_000, reuse=None,
            total_recomputed_tokens=recomputed, total_preemptions=2, blocked_s=0.0,
        )  # fmt: skip
        return cast(SimResult, figures)

    at, below = past_cliff(run(100)), past_cliff(run(99))
    assert at is not None and below is not None
    assert (at.recompute_share, at.dominant) == (0.1, "preemption")
    assert below.dominant == "queueing"


def test_sglang_names_an_expert_parallel_size_only_past_one() -> None:
    # Qwen3-30B-A3B (MoE) on TP 2: EP 1 is SGLang's default, so no --ep-size; EP 2 says it
    base = FlagsDeployment(
        model="Qwen/Qwen3-30B-A3B", layout=Layout(tp=2), max_num_seqs=64,
        max_num_batched_tokens=8192, max_model_len=4096, gpu_memory_utilization=0.9,
        mem_fraction_static=0.8, kv_cache_dtype="auto", moe=True, mla=False,
    )  # fmt: skip
    assert "--ep-size" not in shlex.split(sglang_command(base))
    args = shlex.split(sglang_command(replace(base, layout=Layout(tp=2, ep=2))))
    assert args[args.index("--ep-size") + 1] == "2"


def test_the_queue_a_ttft_limit_allows_is_twice_littles_law() -> None:
    # 4 requests/s waiting 2 s each on average hold 8 (Little's law); the allowance is twice that
    assert queue_allowance(4.0, 2.0) == pytest.approx(16.0)
    assert queue_allowance(0.5, 3.0) == pytest.approx(3.0)
