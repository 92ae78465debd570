"""Online serving: the steady-state rule, replica capacity, fleet sizing and cost, feasibility."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from typer.testing import CliRunner

from capcliff.analysis.evaluate.cap_base import steady_cliff
from capcliff.analysis.evaluate.capacity import Replica, cap_grid, replica_capacity, sweep_caps
from capcliff.analysis.evaluate.online_load import OnlineWorkload
from capcliff.analysis.evaluate.solver import Slo
from capcliff.analysis.evaluate.steady_state import (
    WARMUP_FRACTION,
    SteadyState,
    doublings_needed,
    relative_half_width,
)
from capcliff.analysis.evaluate.steady_state import steady_state as steady
from capcliff.analysis.parallel import parallel_map
from capcliff.analysis.plan.fleet import Unit, fleet_entry, replicas_for, unit_of
from capcliff.analysis.workloads import WorkloadChoice
from capcliff.catalog.catalogs import get_hardware, get_model, hardware_catalog
from capcliff.catalog.layout import Layout, parse_layout
from capcliff.cli import app
from capcliff.memory.weights import WeightScheme
from capcliff.perf.error_band import error_band
from capcliff.perf.step_time import step_time_model
from capcliff.sim.config import KVCapacity, SimConfig
from capcliff.units import KVDType

runner = CliRunner()
ROOT = Path(__file__).parent.parent
SMALL_KV = KVCapacity(blocks=400, block_size=16)  # 6,400 tokens: a cliff near 30 requests


def _replica() -> Replica:
    model, h200 = get_model("llama-3.1-8b"), get_hardware("h200-sxm")
    steps = step_time_model(
        model.arch, h200, Layout(), scheme=WeightScheme.as_shipped(model.arch),
        kv_dtype=KVDType.BF16,
    )  # fmt: skip
    return Replica(steps, SMALL_KV, SimConfig(max_num_seqs=256))


def _workload() -> OnlineWorkload:
    return OnlineWorkload(WorkloadChoice(num_requests=1, isl=100, osl=(100,)), seed=0)


def test_batch_means_half_width_is_t_s_over_root_k_over_the_mean() -> None:
    # Ten batch rates 1..10: mean 5.5, s = sqrt(sum((x - 5.5)^2) / 9) = sqrt(82.5 / 9) = 3.0277;
    # half-width = 2.262 x 3.0277 / sqrt(10) = 2.1657, relative 2.1657 / 5.5 = 0.3938.
    values = np.arange(1.0, 11.0)
    assert relative_half_width(values) == pytest.approx(0.3938, abs=1e-4)


def test_the_window_opens_after_the_warm_up_and_closes_at_the_last_arrival() -> None:
    # 200 Poisson arrivals: the window is [arrival of request 40, last arrival].
    requests = _workload().at_rate(200, 5.0)
    state = steady(_replica().run(requests, 16), open_loop=True)
    arrivals = np.sort(requests.arrival_s)
    assert state.window_s == (arrivals[math.ceil(WARMUP_FRACTION * 200)], arrivals[-1])


def test_the_steady_state_cliff_weights_requests_by_their_output() -> None:
    # isl 100, osl 100: a running request holds 100 + 100/2 = 150 tokens on average, plus half a
    # block (8) lost to rounding: 6,400 // 158 = 40 requests.
    requests = _workload().backlog(100)
    assert steady_cliff(requests, SMALL_KV) == 40


def test_cap_and_sustained_rate_move_less_than_ten_percent_with_four_times_the_requests() -> None:
    replica, workload = _replica(), _workload()
    sized = replica_capacity(replica, workload, slo=None)
    larger = replica_capacity(replica, workload, slo=None, least=4 * sized.simulated_requests)
    assert abs(larger.cap / sized.cap - 1) < 0.1
    assert abs(larger.sustained_rps / sized.sustained_rps - 1) < 0.1


def test_with_an_slo_every_grid_cap_up_to_the_climbs_end_is_simulated() -> None:
    # The SLO search picks the smallest cap within CAP_TOLERANCE of the best rate, so which caps
    # it sees must not hang on a saturation comparison at that tolerance's edge (70B on 8 x H100
    # jumped between caps 143 and 203 with the seed): the lowest grid cap is always there.
    replica, workload = _replica(), _workload()
    _, base = cap_grid(workload, replica)
    grid = sweep_caps(replica, base)
    result = replica_capacity(replica, workload, slo=Slo(ttft_s=5.0, tpot_s=0.05))
    seen = sorted(p.cap for p in result.points)
    assert seen == grid[: len(seen)]
    assert seen[0] == grid[0]


def test_the_cap_grid_and_the_analytic_cliff_do_not_move_with_the_seed() -> None:
    # They come from a reference sample drawn with a fixed seed: with lognormal outputs the
    # seeded 1,000-request sample's KV per request moves by a few %, and the default plan's cap
    # moved with it (Qwen-32B reasoning: 67-79 on seeds 0-4, off the grid of any one seed).
    choice = WorkloadChoice(num_requests=1, isl=100, osl=(600,), output_lengths="lognormal:150:500")
    replica = _replica()
    grids = {cap_grid(OnlineWorkload(choice, seed=s), replica) for s in range(4)}
    assert len(grids) == 1
    seeded = {OnlineWorkload(choice, seed=s).backlog(1000).output_tokens.sum() for s in range(4)}
    assert len(seeded) == 4  # the run's own samples do move: the grid does not follow them


def _run_cap(cap: int) -> float:
    return _replica().run(_workload().backlog(300), cap).makespan_s


def test_simulations_in_worker_processes_equal_the_serial_run() -> None:
    caps = [4, 8, 16, 32]
    assert parallel_map(_run_cap, caps, 2) == [_run_cap(c) for c in caps]


def test_replicas_carry_the_rate_below_the_headroom() -> None:
    # 10 requests/s per replica with 20 % headroom: 8 usable; 40 requests/s need 5 replicas.
    unit = Unit(Layout(tp=2), 1, sustained_rps=10.0, cap=64, e2e_mean_s=4.0)
    assert replicas_for(unit, offered_rps=40.0, clients=None, headroom=0.2) == 5
    # Users: a replica holds 8 requests/s x 4 s = 32 users at the headroom; 100 users need 4.
    assert replicas_for(unit, offered_rps=None, clients=100, headroom=0.2) == 4


def _evaluated(layout: str, per_replica_rps: float):  # type: ignore[no-untyped-def]
    """The fields of a LayoutEval that `unit_of` reads."""
    lay = parse_layout(layout)
    capacity = SimpleNamespace(
        sustained_rps=per_replica_rps, cap=35, at_sustained=SimpleNamespace(e2e_mean_s=60.0)
    )
    return SimpleNamespace(
        memory=SimpleNamespace(layout=lay), capacity=capacity,
        sustained_rps=per_replica_rps * lay.dp,
    )  # fmt: skip


def test_an_attention_dp_layout_is_one_fleet_unit() -> None:
    # dpa8's eight ranks share the MoE layers and step in lockstep: no rank runs alone, so the
    # unit is all 8 GPUs at 8 x 0.11 = 0.88 requests/s. 2 requests/s at 20 % headroom need
    # ceil(2 / (0.88 x 0.8)) = ceil(2.84) = 3 units, 24 GPUs (not 23 one-GPU "replicas").
    for name in ("dpa8", "dp8-ep8"):
        unit = unit_of(_evaluated(name, 0.11))
        assert (unit.layout.name, unit.dp, unit.gpus) == (name, 8, 8)
        assert unit.sustained_rps == pytest.approx(0.88)
        assert replicas_for(unit, offered_rps=2.0, clients=None, headroom=0.2) == 3
    # Independent replicas are their own units, expert parallelism kept in the name.
    assert unit_of(_evaluated("dp2-tp4", 1.5)).layout.name == "tp4"
    assert unit_of(_evaluated("dp2-tp4", 1.5)).sustained_rps == 1.5
    assert unit_of(_evaluated("tp8-ep8", 0.3)).layout.name == "tp8-ep8"


@given(st.floats(0.5, 1000.0), st.floats(0.1, 100.0))
def test_doubling_the_rate_doubles_the_replicas_within_one(rate: float, per_replica: float) -> None:
    unit = Unit(Layout(), 1, sustained_rps=per_replica, cap=8, e2e_mean_s=1.0)
    once = replicas_for(unit, offered_rps=rate, clients=None, headroom=0.2)
    twice = replicas_for(unit, offered_rps=2 * rate, clients=None, headroom=0.2)
    assert once is not None and twice is not None
    assert 2 * once - 1 <= twice <= 2 * once


def test_fleet_cost_per_million_tokens_is_dollars_over_tokens_served() -> None:
    # 3 replicas of tp2 = 6 GPUs x $4 = $24/h; 10 requests/s x 200 tokens x 3600 s = 7.2 M tokens
    # an hour: $24 / 7.2 = $3.333 per million.
    unit = Unit(Layout(tp=2), 1, sustained_rps=5.0, cap=64, e2e_mean_s=1.0)
    entry = fleet_entry(
        get_hardware("h200-sxm"), unit, 3, price=4.0, served_rps=10.0, mean_output_tokens=200
    )
    assert (entry.gpus, entry.nodes, entry.usd_per_hour) == (6, 1, 24.0)
    assert entry.usd_per_million_output_tokens == pytest.approx(24 / 7.2)


def test_every_gpu_has_a_dated_price_with_a_source() -> None:
    for spec in hardware_catalog().values():
        assert spec.usd_per_gpu_hour is not None and spec.usd_per_gpu_hour > 0
        assert re.search(r"20\d\d-\d\d", spec.sources["usd_per_gpu_hour"]), spec.id


def _plan(*args: str) -> dict:  # type: ignore[type-arg]
    result = runner.invoke(
        app, ["plan", "llama-3.1-8b", "--gpus", "1", "--isl", "200", "--osl", "200", "--jobs",
              "1", *args, "--format", "json"],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    return json.loads(result.output)  # type: ignore[no-any-return]


@pytest.mark.parametrize("meets", [True, False])
def test_a_fleet_that_misses_the_target_at_the_load_says_so(
    monkeypatch: pytest.MonkeyPatch, meets: bool
) -> None:
    # the fleet for 5 requests/s (one tp1 replica on one H200) is simulated at the load: only a
    # fleet that misses the target there gets the note to add replicas or headroom
    from dataclasses import replace

    import capcliff.analysis.plan.online as online

    simulated = online.check_fleet

    def checked(*args: object) -> object:
        return replace(simulated(*args), meets=meets)  # type: ignore[arg-type]

    monkeypatch.setattr(online, "check_fleet", checked)
    report = _plan("--rate", "5")
    assert report["fleet"][0]["replicas"] == 1
    missing = [n for n in report["notes"] if "still misses the target" in n]
    expected = "the fleet of 1 x tp1 simulated at the load still misses the target"
    assert missing == ([] if meets else [f"{expected}: add replicas or headroom"])


def test_the_plan_counts_the_largest_sample_any_layout_needed() -> None:
    # two GPUs: dp2, tp2 and pp2 are searched on samples of their own sizes; the plan's request
    # count is the largest of them, not the smallest
    result = runner.invoke(
        app, ["plan", "llama-3.1-8b", "--gpus", "2", "--isl", "200", "--osl", "200", "--jobs",
              "1", "--rate", "5", "--format", "json"],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    report = json.loads(result.output)
    sizes = [lay["capacity"]["simulated_requests"] for lay in report["layouts"]]
    assert len(set(sizes)) == 3  # three different samples
    assert report["simulated_requests"] == report["num_requests"] == max(sizes)


def test_an_slo_nothing_meets_gives_no_recommendation_and_no_engine_command() -> None:
    # 0.1 ms per output token: an 8B decode step reads ~16 GB of weights, over 3 ms on any GPU.
    report = _plan("--slo-tpot", "0.0001")
    assert report["mode"] == "online"
    assert report["recommended"] is None and report["engine_flags"] == {}
    assert "TPOT p99 <= 0.1 ms" in report["reason"]
    assert report["fixes"] and "over the limit" in report["fixes"][-1]


def test_an_overload_says_so_with_the_replicas_that_carry_it() -> None:
    report = _plan("--rate", "1000", "--slo-ttft", "5", "--slo-tpot", "0.2")
    load = report["load"]
    assert load["saturated"] and load["offered_rps"] == 1000
    assert load["replicas_needed"] > 1
    assert report["fleet"][0]["replicas"] == load["replicas_needed"]
    assert report["notes"][0].startswith("overload:")


def test_every_gpu_types_fleet_is_simulated_at_the_load_with_its_routing() -> None:
    # Each type's cheapest line is checked by simulating its replicas at the offered rate, so
    # every line carries its own tail latencies and verdict, not only the planned GPU's.
    report = _plan("--rate", "200", "--slo-ttft", "5", "--slo-tpot", "0.2",
                   "--gpu", "h200-sxm,h100-sxm")  # fmt: skip
    assert {e["gpu"] for e in report["fleet"]} == {"h200-sxm", "h100-sxm"}
    for entry in report["fleet"]:
        assert entry["meets_slo"] is True
        assert 0 < entry["ttft_p99_s"] <= 5 and 0 < entry["tpot_p99_s"] <= 0.2
        # the rate is carried below the headroom: replicas x per-replica rate x 0.8 >= 200
        assert entry["replicas"] * entry["sustained_rps_per_replica"] * 0.8 >= 200
        # each line carries the held-out throughput error of the engine on its own GPU type
        band = error_band(report["engine"], entry["gpu"], calibrated=False)
        assert entry["throughput_error"] == band.throughput


def test_an_online_sweep_reports_each_caps_steady_state() -> None:
    # 20 requests/s of chat on one H200: 16 running requests cannot keep up (the queue grows),
    # 64 can; a batch sweep has no steady state.
    args = ["sweep", "llama-3.1-8b", "--workload", "chat", "--rate", "20", "--num-requests",
            "400", "--concurrency", "16,64", "--format", "json"]  # fmt: skip
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    report = json.loads(result.output)
    low, high = report["points"]
    assert report["mode"] == "online"
    assert low["steady"]["saturated"] and not high["steady"]["saturated"]
    assert high["steady"]["ttft_p99_s"] < low["steady"]["ttft_p99_s"]


@pytest.mark.parametrize(
    ("rps_hw", "tpot_hw", "measured", "expected"),
    [
        # (0.116 / 0.05)^2 = 5.38 x the requests asked for; 4 < 5.38 <= 8: jump 4x (2 doublings)
        (0.116, 0.039, 762, 2),
        # (0.187 / 0.05)^2 = 13.99; 8 < 13.99 <= 16: jump 8x
        (0.187, 0.051, 417, 3),
        # (0.06 / 0.05)^2 = 1.44: one doubling, as the plain rule
        (0.06, 0.025, 1_372, 1),
        # too few measured, or no finite width: one doubling
        (0.5, 0.5, 50, 1),
        (math.inf, math.inf, 0, 1),
    ],
)
def test_the_stopping_rule_skips_only_the_doublings_predicted_not_to_settle(
    rps_hw: float, tpot_hw: float, measured: int, expected: int
) -> None:
    state = SteadyState(
        requests=1_000, measured=measured, window_s=(0.0, 1.0), throughput_rps=1.0,
        output_tok_s=1.0, arrival_rps=None, ttft_p99_s=1.0, tpot_p99_s=0.1, tpot_mean_s=0.1,
        e2e_mean_s=1.0, rps_half_width=rps_hw, tpot_half_width=tpot_hw, queue_growing=False,
    )  # fmt: skip
    assert doublings_needed(state) == expected
