"""An attention-DP layout's rate is searched on its lockstep group, and `sweep` agrees with it."""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, replace
from types import SimpleNamespace
from typing import cast

import numpy as np
import pytest

from capcliff.analysis.evaluate import dp_group
from capcliff.analysis.evaluate.capacity import CapPoint, Replica, ReplicaCapacity
from capcliff.analysis.evaluate.dp_group import per_rank
from capcliff.analysis.evaluate.online_load import OnlineWorkload
from capcliff.analysis.evaluate.rate_search import (
    LIGHT_LOAD,
    RatePoint,
    RateProbes,
    highest_rate_below,
)
from capcliff.analysis.evaluate.solver import Slo
from capcliff.analysis.evaluate.steady_state import SteadyState
from capcliff.cli.main import main
from capcliff.sim.config import KVCapacity, Routing, SimConfig
from capcliff.sim.simulate import route, simulate
from tests.simtools import toy_model
from tests.test_rate_search import _poisson

R1 = ["deepseek-r1", "--gpu", "h200-sxm", "--gpus", "32", "--layout", "dp8-tp2-pp2-ep16",
      "--isl", "8192", "--osl", "1024"]  # fmt: skip


def _state(tpot_s: float, rps: float = 1.0) -> SteadyState:
    return SteadyState(
        requests=1000, measured=900, window_s=(0.0, 100.0), throughput_rps=rps,
        output_tok_s=100 * rps, arrival_rps=rps, ttft_p99_s=0.5, tpot_p99_s=tpot_s,
        tpot_mean_s=tpot_s / 2, e2e_mean_s=5.0, rps_half_width=0.01, tpot_half_width=0.01,
        queue_growing=False,
    )  # fmt: skip


@dataclass
class _Linear(RateProbes):
    """A replica whose TPOT p99 is 0.1 s per request/s of offered rate: it meets a 60 ms limit
    up to 0.6 requests/s exactly."""

    def probe(self, rate: float, n: int, cap: int) -> RatePoint:
        tpot = 0.1 * rate
        point = RatePoint(cap, rate, _state(tpot), tpot <= self.slo.tpot_s, n)
        self.points.append(point)
        return point


def _probes() -> _Linear:
    slo = Slo(ttft_s=3.0, tpot_s=0.06)
    return _Linear(None, slo, None, None, 1000.0, [])  # type: ignore[arg-type]


def test_the_rate_below_a_failing_one_is_found_within_the_resolution() -> None:
    probes = _probes()
    bad = probes.probe(4.0, 1000, 8)  # fails: 400 ms
    found = highest_rate_below(probes, 8, bad, 1000, resolution=0.01)
    assert found is not None and found.meets
    # by hand: the limit is crossed at 0.6 requests/s; the answer passes and lies within the
    # resolution below it
    assert 0.59 <= found.rate_rps <= 0.6


def test_nothing_is_found_when_even_the_light_load_misses() -> None:
    probes = _probes()
    probes.slo = Slo(ttft_s=3.0, tpot_s=1e-6)  # no rate meets 1 us
    bad = probes.probe(4.0, 1000, 8)
    assert highest_rate_below(probes, 8, bad, 1000, resolution=0.01) is None
    # it halves down to the light load of the failing rate and stops there
    assert min(p.rate_rps for p in probes.points) == pytest.approx(LIGHT_LOAD * 4.0)


def test_a_groups_rates_are_divided_among_its_ranks() -> None:
    got = per_rank(_state(0.05, rps=8.0), 8)
    assert (got.throughput_rps, got.output_tok_s, got.arrival_rps) == (1.0, 100.0, 1.0)
    assert got.tpot_p99_s == 0.05  # latencies are each request's, not shared out


def _run(capsys: pytest.CaptureFixture[str], args: list[str]) -> dict:  # type: ignore[type-arg]
    assert main([*args, "--format", "json"]) == 0
    found: dict = json.loads(capsys.readouterr().out)  # type: ignore[type-arg]
    return found


def test_plan_reports_the_groups_rate_and_sweep_sees_the_same_latencies(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # issue 22's scenario: DeepSeek-R1 on 4 nodes, 8k prompts. One rank priced as if every rank
    # were as busy meets TPOT p99 <= 60 ms at about 4.6 requests/s; the 8 ranks in lockstep,
    # each stalled by the others' 8k-token prefill chunks, give ~300 ms there (`sweep`). The
    # plan must report the rate the group meets, and `sweep` of that layout, cap and rate must
    # see the plan's latencies.
    plan = _run(capsys, ["plan", *R1, "--rate", "8", "--slo-ttft", "3", "--slo-tpot", "0.06"])
    row = next(r for r in plan["layouts"] if r["name"] == "dp8-tp2-pp2-ep16")["capacity"]
    note = next(n for n in plan["notes"] if "step in lockstep" in n)
    alone = re.search(r"gives ([\d.]+):", note)
    assert alone is not None and row["sustained_rps"] < 0.97 * float(alone.group(1))
    cap = plan["recommended"]["max_num_seqs"] * 8
    rate = f"{row['sustained_rps']:.6g}"
    sweep = _run(capsys, ["sweep", *R1, "--num-requests", "2000", "--rate", rate,
                          "--concurrency", str(cap)])  # fmt: skip
    steady = sweep["series"][0]["points"][0]["steady"]
    assert steady["tpot_p99_s"] <= 0.06 * (1 + steady["tpot_p99_half_width"])
    # the same figure within the two samples' 95 % intervals of the p99
    band = row["tpot_p99_half_width"] + steady["tpot_p99_half_width"]
    assert math.isclose(steady["tpot_p99_s"], row["tpot_p99_s"], rel_tol=band)


def test_without_a_target_a_lockstep_layouts_rate_is_said_to_be_one_ranks(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # no SLO, so no group search: the note must say whose rate the row shows (dp8-ep8 of a MoE
    # model runs its 8 ranks in lockstep; dp8 of a dense model does not, and gets no note)
    moe = _run(capsys, ["plan", "qwen3-30b-a3b", "--gpus", "8", "--layout", "dp8-ep8",
                        "--isl", "4096", "--osl", "512", "--rate", "20"])  # fmt: skip
    assert any("without a latency target the rate shown is one rank's" in n for n in moe["notes"])
    dense = _run(capsys, ["plan", "llama-3.1-8b", "--gpus", "8", "--layout", "dp8",
                          "--isl", "4096", "--osl", "512", "--rate", "20"])  # fmt: skip
    assert not any("lockstep" in n for n in dense["notes"])


def _single(rate: float) -> ReplicaCapacity:
    sustained = RatePoint(8, rate, _state(0.05, rate), True, 1000)
    point = SimpleNamespace(cap=8, requests=1000, state=_state(0.05, 2 * rate))
    return ReplicaCapacity(
        analytic_cliff=10, points=(cast(CapPoint, point),), cap=8, saturation_rps=2 * rate,
        sustained_rps=rate, at_sustained=sustained.state, best_ttft_p99_s=0.1,
        best_tpot_p99_s=0.02, simulated_requests=1000, settled=True, sustained=sustained,
    )  # fmt: skip


@pytest.mark.parametrize("passes", [True, False], ids=["a-step-passes", "no-step-passes"])
def test_independent_replicas_are_verified_from_one_replicas_rate_before_any_probe(
    monkeypatch: pytest.MonkeyPatch, passes: bool
) -> None:
    # Where the ladder from one replica's rate finds a step, that is the group's answer and no
    # probe runs; where none passes (the ladder hands back what it was given), the group is
    # probed at that rate and searched below it as before.
    single, calls = _single(1.0), []

    def ladder(run: object, workload: object, slo: Slo, found: RatePoint, *args: object) -> object:
        calls.append(("verify", found.rate_rps))
        if not passes and found is single.sustained:
            return found
        return replace(found, rate_rps=0.97 * found.rate_rps)

    def probe(self: RateProbes, rate: float, n: int, cap: int) -> RatePoint:
        calls.append(("probe", rate))
        point = RatePoint(cap, rate, _state(0.05, rate), True, n)
        self.points.append(point)
        return point

    monkeypatch.setattr(dp_group, "verified", ladder)
    monkeypatch.setattr(RateProbes, "probe", probe)
    config = SimpleNamespace(routing=Routing.ROUND_ROBIN)
    replica = cast(Replica, SimpleNamespace(steps=SimpleNamespace(moe=None), config=config))
    workload = cast(OnlineWorkload, SimpleNamespace(mean_output_tokens=lambda: 100.0))
    got = dp_group.group_capacity(replica, 2, workload, Slo(ttft_s=2.0, tpot_s=0.06), single)
    if passes:
        assert calls == [("verify", 1.0)]
    else:
        assert calls == [("verify", 1.0), ("probe", 1.0), ("verify", 1.0)]
    assert got.sustained_rps == pytest.approx(0.97)  # one step below, per replica


@pytest.mark.parametrize(("chosen", "probed", "own"), [(100, 400, 100), (6000, 6000, 4000)])
def test_a_lockstep_group_is_probed_on_the_largest_sample_any_cap_needed(
    monkeypatch: pytest.MonkeyPatch, chosen: int, probed: int, own: int
) -> None:
    # One replica's search settled cap 4 on 400 requests and its chosen cap 8 on 100. A group in
    # lockstep is probed first, on the largest of the caps' samples (400, as `_within_slo`); the
    # verification offers each rank what the chosen cap's run had, 100 (under GROUP_VERIFY_MAX:
    # 16,000 / (VERIFY_SIZE 2 x 2 ranks) = 4,000). Had cap 8 taken 6,000, the probe would run
    # 6,000 and the verification stop at the 4,000 the limit allows.
    single = _single(1.0)
    points = (
        SimpleNamespace(cap=4, requests=400, state=_state(0.05, 2.0)),
        SimpleNamespace(cap=8, requests=chosen, state=_state(0.05, 2.0)),
    )
    single = replace(single, points=cast(tuple[CapPoint, ...], points))
    calls: list[tuple[str, float, int]] = []
    cycles: list[float] = []

    def probe(self: RateProbes, rate: float, n: int, cap: int) -> RatePoint:
        calls.append(("probe", rate, n))
        cycles.append(self.cycle_s)
        point = RatePoint(cap, rate, _state(0.05, rate), True, n)
        self.points.append(point)
        return point

    def ladder(run: object, workload: object, slo: Slo, found: RatePoint, tried: object,
               own: int, ranks: int) -> RatePoint:  # fmt: skip
        calls.append(("verify", found.rate_rps, own))
        return found

    monkeypatch.setattr(dp_group, "verified", ladder)
    monkeypatch.setattr(RateProbes, "probe", probe)
    config = SimpleNamespace(routing=Routing.ROUND_ROBIN)
    replica = cast(Replica, SimpleNamespace(steps=SimpleNamespace(moe=object()), config=config))
    workload = cast(OnlineWorkload, SimpleNamespace(mean_output_tokens=lambda: 100.0))
    dp_group.group_capacity(replica, 2, workload, Slo(ttft_s=2.0, tpot_s=0.06), single)
    assert calls == [("probe", 1.0, probed), ("verify", 1.0, own)]
    # a request that meets the SLO spends at most TTFT 2 s + 100 tokens x 0.06 s = 8 s in the
    # system: the probes' Little's-law bound
    assert cycles == [pytest.approx(8.0)]


def test_a_lockstep_group_that_misses_is_searched_below_to_its_saturations_resolution(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # One replica sustains 0.95/s, 0.95 of the saturation it stands for, 1.0/s. The group
    # misses there, so it is searched below to rate_resolution(1.0): the bracket from the light
    # load (0.05) to 0.95 of saturation halved 5 times, (0.95 - 0.05) x 1.0 / 32 = 0.028125/s.
    asked: list[float] = []

    def probe(self: RateProbes, rate: float, n: int, cap: int) -> RatePoint:
        point = RatePoint(cap, rate, _state(0.5, rate), False, n)
        self.points.append(point)
        return point

    def below(probes: object, cap: int, bad: RatePoint, n: int, resolution: float) -> None:
        asked.append(resolution)

    monkeypatch.setattr(RateProbes, "probe", probe)
    monkeypatch.setattr(dp_group, "highest_rate_below", below)
    config = SimpleNamespace(routing=Routing.ROUND_ROBIN)
    replica = cast(Replica, SimpleNamespace(steps=SimpleNamespace(moe=object()), config=config))
    workload = cast(OnlineWorkload, SimpleNamespace(mean_output_tokens=lambda: 100.0))
    got = dp_group.group_capacity(replica, 2, workload, Slo(ttft_s=2.0, tpot_s=0.06), _single(0.95))
    assert asked == [pytest.approx(0.028125)]
    assert got.sustained_rps == 0.0 and got.sustained is None  # nothing below passed


@pytest.mark.parametrize("seed", [0, 1])
def test_a_round_robin_replicas_share_runs_alone_as_in_its_group(seed: int) -> None:
    # The claim `interchangeable` rests on: behind a round-robin router, replicas that do not
    # step in lockstep never affect one another, so the first replica's share, simulated
    # alone, is its part of the group's run, request for request.
    requests = _poisson(600, 30.0, seed)
    capacity = KVCapacity(blocks=4000, block_size=16, kv_bytes_per_token=1000)
    config = SimConfig(policy="vllm", max_num_seqs=16, max_num_batched_tokens=2048)
    group = simulate(requests, toy_model(), capacity, config, dp=3)
    mine = route(requests, 3, Routing.ROUND_ROBIN)[0]
    alone = simulate(requests.subset(mine), toy_model(), capacity, config)
    np.testing.assert_array_equal(alone.finish_s, group.finish_s[mine])
    np.testing.assert_array_equal(alone.ttft_s, group.ttft_s[mine])


def test_only_independent_round_robin_replicas_are_read_from_one_share() -> None:
    def replica(moe: object, routing: Routing) -> Replica:
        config = SimpleNamespace(routing=routing)
        return cast(Replica, SimpleNamespace(steps=SimpleNamespace(moe=moe), config=config))

    assert dp_group.interchangeable(replica(None, Routing.ROUND_ROBIN), 4)
    assert not dp_group.interchangeable(replica(object(), Routing.ROUND_ROBIN), 4)  # lockstep
    assert not dp_group.interchangeable(replica(None, Routing.LEAST_LOADED), 4)
