"""Edges the seed-97 mutation sample (`benchmarks/mutation.py --packages analysis --seed 97`)
found untested. Every expected value is worked out by hand in the comments."""

from __future__ import annotations

import math
from types import SimpleNamespace
from typing import Any, cast

import numpy as np
import pytest

from capcliff.analysis.deployment import resolve
from capcliff.analysis.deployment_settings import DeploymentSettings
from capcliff.analysis.disagg.fleet import _limit
from capcliff.analysis.evaluate import capacity
from capcliff.analysis.evaluate.capacity import (
    CapPoint,
    Replica,
    ReplicaCapacity,
    saturation_sweep,
    sweep_caps,
)
from capcliff.analysis.evaluate.layout_capacity import LayoutEval, best_layout
from capcliff.analysis.evaluate.online_load import OnlineWorkload
from capcliff.analysis.evaluate.steady_state import SteadyState
from capcliff.analysis.plan.online_rows import _sweet
from capcliff.analysis.plan.ties import Option, decide, simplicity
from capcliff.analysis.serve_command import ServeCommand, merged_settings
from capcliff.analysis.sweep.failure import past_cliff
from capcliff.catalog.catalogs import get_hardware, get_model
from capcliff.catalog.layout import Layout
from capcliff.errors import InputError
from capcliff.memory.layout_memory import LayoutMemory
from capcliff.sim.result import SimResult


def test_no_pipeline_comes_before_fewer_gpus_per_replica() -> None:
    # the rule's first criterion is "no PP": tp1-pp2 uses 2 GPUs per replica and tp4 uses 4,
    # but tp4 has no pipeline stages, so it is the simpler of the two and wins their tie
    # (0.98 is 2 % below 1.0, inside the 10 % band)
    pp = Option("tp1-pp2", 1.0, tp=1, pp=2)
    tp = Option("tp4", 0.98, tp=4, pp=1)
    assert simplicity(tp) < simplicity(pp)
    assert simplicity(tp) == (False, 4, 1, 4)
    assert decide([pp, tp])[0] is tp


def test_without_speculation_a_sequence_holds_no_lookahead_slots() -> None:
    # no speculative method: nothing is verified ahead, so 0 slots (capacity() only asks under
    # speculation; the method's own answer is pinned here)
    dep = resolve(get_model("llama-3.1-8b"), get_hardware("h200-sxm"), DeploymentSettings())
    assert dep.speculation is None
    assert dep.lookahead_tokens_per_sequence() == 0


def test_the_cheapest_cluster_report_echoes_a_finite_slo_limit_and_none_for_no_limit() -> None:
    # an SLO limit left out is infinite inside the search; the report says None (no limit) for
    # it and carries a given limit as it was given (2.0 s, 0.05 s)
    assert _limit(2.0) == 2.0
    assert _limit(0.05) == 0.05
    assert _limit(math.inf) is None


def test_past_cliff_waiting_counts_the_sample_at_the_makespan_and_none_after() -> None:
    # samples at 0..4 s (the grid ends exactly at the 4 s makespan) wait 0, 4, 4, 2, 0 requests:
    # mean 10 / 5 = 2.0 and peak 4; the sample at 5 s (past the makespan) is left out. 8
    # requests at 2/s: 4 preemptions are 0.5 each, Little's law 2.0 / 2 = 1.0 s; 50 of 1,000
    # tokens recomputed is 5 %, under the 10 % share, so queueing dominates
    series = SimpleNamespace(
        time_s=np.array([0.0, 1.0, 2.0, 3.0, 4.0, 5.0]),
        waiting=np.array([0.0, 4.0, 4.0, 2.0, 0.0, 10.0]),
    )
    run = SimpleNamespace(
        first_saturation=(0, 1.0), e2e_s=np.ones(8), series=series, makespan_s=4.0,
        requests_per_s=2.0, scheduled_tokens=1_000, reuse=None, total_recomputed_tokens=50,
        total_preemptions=4, blocked_s=1.5,
    )  # fmt: skip
    found = past_cliff(cast(SimResult, run))
    assert found is not None
    assert found.mean_waiting == 2.0
    assert found.peak_waiting == 4.0
    assert found.mean_wait_s == 1.0
    assert found.preemptions_per_request == 0.5
    assert found.recompute_share == 0.05
    assert found.dominant == "queueing"


def _cap_point(cap: int, rps: float) -> CapPoint:
    result = SimpleNamespace(total_preemptions=0, finish_s=np.ones(10))
    state = SimpleNamespace(throughput_rps=rps, rps_half_width=0.0)
    return CapPoint(cap, cast(SteadyState, state), cast(SimResult, result), 10)


def test_a_grid_of_two_caps_adds_the_lower_one_when_the_upper_is_chosen() -> None:
    # base 1: the factors 0.5, 0.71, 1, 1.41, 2 round to caps 1 (0 floored at 1), 1, 1, 1, 2,
    # so the grid is [1, 2]; the climb starts at 2, and since 2 is the choice (the only point),
    # the lowest cap, 1, goes in front (points taken from `known`: nothing is simulated)
    replica = cast(Replica, SimpleNamespace(config=SimpleNamespace(max_num_seqs=8)))
    assert sweep_caps(replica, 1) == [1, 2]
    one, two = _cap_point(1, 5.0), _cap_point(2, 9.0)
    workload = cast(OnlineWorkload, None)
    points = saturation_sweep(replica, workload, 1, None, known={1: one, 2: two})
    assert points == (one, two)


def _layout_eval(layout: Layout, replica_rps: float, *, meets: bool = True) -> LayoutEval:
    memory = cast(LayoutMemory, SimpleNamespace(layout=layout))
    found = cast(ReplicaCapacity, SimpleNamespace(sustained_rps=replica_rps, meets_slo=meets))
    return LayoutEval(memory, cast(Replica, None), found, refined=True)


def test_the_best_layout_in_all_and_per_gpu() -> None:
    # dp8 sustains 8 x 1.0 = 8 requests/s on 8 GPUs (1.0 per GPU); tp4 sustains 6 on 4 GPUs
    # (1.5 per GPU); tp2 would sustain 20 but misses the SLO. In all dp8 is best (8 > 6), per GPU
    # tp4 (1.5 > 1.0). (No caller in capcliff asks per GPU yet; the option is pinned here.)
    found = {
        "dp8": _layout_eval(Layout(dp=8), 1.0),
        "tp4": _layout_eval(Layout(tp=4), 6.0),
        "tp2": _layout_eval(Layout(tp=2), 20.0, meets=False),
    }
    assert found["dp8"].sustained_rps == 8.0
    assert best_layout(found) is found["dp8"]
    assert best_layout(found, per_gpu=True) is found["tp4"]
    assert best_layout({"tp2": found["tp2"]}) is None


def test_only_caps_past_the_base_are_probed_for_thrashing(monkeypatch: pytest.MonkeyPatch) -> None:
    # the base cap is the steady-state cliff, simulated in full; a cap past it (base + 1 and up)
    # may thrash, so it is first probed with a short sample
    probes: dict[int, bool] = {}

    def record(replica: object, workload: object, cap: int, least: object, **kw: Any) -> int:
        probes[cap] = kw["probe"]
        return cap

    monkeypatch.setattr(capacity, "saturation_point", record)
    replica, workload = cast(Replica, None), cast(OnlineWorkload, None)
    for cap in (4, 8, 9):
        capacity.sweep_point(replica, workload, 8, None, None, cap)
    assert probes == {4: False, 8: False, 9: True}


def test_an_online_sweet_spot_takes_the_makespan_of_the_chosen_cap() -> None:
    # caps 4 and 8 were swept and 8 chosen: its run's makespan (7 s) is the sweet spot's, not
    # cap 4's (10 s). dp 2 on 2 GPUs: 16 concurrent, 2 x 500 = 1,000 output tok/s, 2 x 2 = 4
    # requests/s, and 2 GPU-hours / (1,000 x 3,600 tokens) x 1e6 = 0.5556 GPU-hours per Mtok
    def point(cap: int, makespan_s: float) -> Any:
        return SimpleNamespace(cap=cap, result=SimpleNamespace(makespan_s=makespan_s))

    state = SimpleNamespace(output_tok_s=500.0, ttft_p99_s=0.4, tpot_p99_s=0.02)
    found = SimpleNamespace(
        cap=8, at_sustained=state, points=[point(4, 10.0), point(8, 7.0)], sustained_rps=2.0
    )
    memory = cast(LayoutMemory, SimpleNamespace(layout=Layout(dp=2)))
    ev = LayoutEval(memory, cast(Replica, None), cast(ReplicaCapacity, found), refined=True)
    spot = _sweet(ev, 2)
    assert spot.makespan_s == 7.0
    assert spot.concurrency == 16
    assert spot.output_throughput_tok_s == 1_000.0
    assert spot.goodput_req_s == 4.0
    assert spot.gpu_hours_per_mtok == pytest.approx(2 / 3.6)
    assert (spot.ttft_p99_s, spot.tpot_p99_s) == (0.4, 0.02)


def test_a_given_value_of_another_type_than_the_commands_is_a_one_line_conflict() -> None:
    # numbers are compared as numbers only when both are: a spec's kv_cache_dtype = 8 against
    # the command's "fp8", or gpu_memory_utilization = "high" against its 0.9, conflict (one
    # line, no TypeError or ValueError); 0.9 against 0.9 and 128 against 128 agree
    settings = {"kv_cache_dtype": "fp8", "gpu_memory_utilization": 0.9, "max_num_seqs": 128}
    command = ServeCommand("vllm", "m/x", Layout(), settings)
    agreed = {"gpu_memory_utilization": 0.9, "max_num_seqs": 128}
    assert merged_settings(command, agreed) == settings
    for given in ({"kv_cache_dtype": 8}, {"gpu_memory_utilization": "high"}):
        with pytest.raises(InputError, match="conflicts with the command's"):
            merged_settings(command, given)
