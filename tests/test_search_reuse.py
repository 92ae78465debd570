"""The online plan's searches: a replica searched once per plan, and the fleet line's search
skipping replicas that cannot be the cheapest (both exact: the same answer as searching all)."""

from __future__ import annotations

import math

import pytest

import capcliff.analysis.evaluate.capacity as capacity_module
from capcliff.analysis.deployment import resolve
from capcliff.analysis.deployment_settings import DeploymentSettings
from capcliff.analysis.evaluate.capacity import (
    VERIFY_SIZE,
    Replica,
    replica_capacity,
    saturation_caps,
    sustained_bound,
)
from capcliff.analysis.evaluate.layout_capacity import (
    LayoutEval,
    Searched,
    SearchSettings,
    evaluate_layouts,
)
from capcliff.analysis.evaluate.online_load import OnlineWorkload
from capcliff.analysis.evaluate.solver import Slo
from capcliff.analysis.workloads import WorkloadChoice
from capcliff.catalog.catalogs import get_hardware, get_model
from capcliff.catalog.layout import Layout
from capcliff.memory.weights import WeightScheme
from capcliff.perf.step_time import step_time_model
from capcliff.sim.config import KVCapacity, SimConfig
from capcliff.units import KVDType

SLO = Slo(ttft_s=5.0, tpot_s=0.05)


def _replica(blocks: int) -> Replica:
    model, h200 = get_model("llama-3.1-8b"), get_hardware("h200-sxm")
    steps = step_time_model(
        model.arch, h200, Layout(), scheme=WeightScheme.as_shipped(model.arch),
        kv_dtype=KVDType.BF16,
    )  # fmt: skip
    return Replica(steps, KVCapacity(blocks=blocks, block_size=16), SimConfig(max_num_seqs=256))


def _workload() -> OnlineWorkload:
    return OnlineWorkload(WorkloadChoice(num_requests=1, isl=100, osl=(100,)), seed=0)


@pytest.mark.parametrize(
    "slo", [SLO, Slo(ttft_s=0.5, tpot_s=0.02), None], ids=["loose", "tight", "no-slo"]
)
def test_the_sustained_rate_never_exceeds_its_bound_from_the_saturation_caps(
    slo: Slo | None,
) -> None:
    # The search probes no rate above 0.95 x a cap's saturation throughput (no SLO: the chosen
    # cap's saturation throughput itself), and verification only steps down.
    replica, workload = _replica(400), _workload()
    points = saturation_caps(replica, workload, slo=slo)
    found = replica_capacity(replica, workload, slo=slo, points=points)
    assert 0 < found.sustained_rps <= sustained_bound(points, slo)


def test_the_capacity_from_given_caps_equals_the_whole_search() -> None:
    replica, workload = _replica(400), _workload()
    whole = replica_capacity(replica, workload, slo=SLO)
    split = replica_capacity(
        replica, workload, slo=SLO, points=saturation_caps(replica, workload, slo=SLO)
    )
    assert (split.cap, split.sustained_rps) == (whole.cap, whole.sustained_rps)


def _small_kv_dep():  # type: ignore[no-untyped-def]
    settings = DeploymentSettings(kv_cache_memory="0.05GiB", max_num_seqs=64)
    return resolve(get_model("llama-3.1-8b"), get_hardware("h200-sxm"), settings)


def _search(dep) -> SearchSettings:  # type: ignore[no-untyped-def]
    return SearchSettings(_workload(), dep.sim_config(256), SLO, None)


def _count_runs(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    runs: list[int] = []
    simulate = capacity_module.simulate

    def counted(*args, **kwargs):  # type: ignore[no-untyped-def]
        runs.append(1)
        return simulate(*args, **kwargs)

    monkeypatch.setattr(capacity_module, "simulate", counted)
    return runs


def test_a_replica_searched_before_in_the_plan_is_not_simulated_again(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # dp2 on 2 GPUs and tp1 on one run the same one-GPU replica: the second search is free and
    # gives the first one's figures.
    dep = _small_kv_dep()
    search, searched = _search(dep), Searched()
    first = evaluate_layouts(dep, [dep.memory(Layout(dp=2), 256)], search, searched=searched)
    runs = _count_runs(monkeypatch)
    again = evaluate_layouts(dep, [dep.memory(Layout(), 256)], search, searched=searched)
    assert runs == []
    assert again["tp1"].refined
    assert again["tp1"].capacity is first["dp2"].capacity


def _gpu_rank(ev: LayoutEval, rate: float) -> tuple[float, int] | None:
    """GPUs to carry 10 requests/s at `rate` per replica: the fewer the better."""
    if rate <= 0:
        return None
    gpus = math.ceil(10 / rate) * ev.memory.layout.gpus
    return float(gpus), gpus


def test_a_ranked_search_finds_the_same_first_as_searching_every_layout() -> None:
    dep = _small_kv_dep()
    memories = [dep.memory(Layout(tp=tp), 256) for tp in (1, 2, 4)]
    every = evaluate_layouts(dep, memories, _search(dep))
    ranked = evaluate_layouts(dep, memories, _search(dep), rank=_gpu_rank)

    def first(found: dict[str, LayoutEval]) -> tuple[float, int, str]:
        return min(
            (*rank, name)
            for name, ev in found.items()
            if ev.refined and ev.capacity.meets_slo
            for rank in [_gpu_rank(ev, ev.capacity.sustained_rps)]
            if rank is not None
        )

    assert first(ranked) == first(every)


def test_a_ranked_search_skips_a_layout_that_cannot_come_first() -> None:
    # One tp2 replica carries the 10 requests/s alone (2 GPUs); one tp4 replica is 4 GPUs
    # whatever its rate, so it cannot rank first and its search within the SLO is skipped.
    dep = _small_kv_dep()
    memories = [dep.memory(Layout(tp=tp), 256) for tp in (1, 2, 4)]
    ranked = evaluate_layouts(dep, memories, _search(dep), rank=_gpu_rank)
    assert ranked["tp2"].refined and ranked["tp2"].capacity.sustained_rps >= 10
    assert not ranked["tp4"].refined


def test_the_rate_probes_hold_twenty_times_the_requests_a_passing_rate_keeps_in_the_system() -> (
    None
):
    # A request that meets TTFT 5 s and TPOT 50 ms over 100 output tokens spends at most about
    # 5 + 100 x 0.05 = 10 s in the system: a probe at r requests/s holds max(200, 20 x 10 r)
    # requests, or the largest cap's stopping-rule sample when that is smaller.
    replica, workload = _replica(400), _workload()
    found = replica_capacity(replica, workload, slo=SLO)
    largest = max(p.requests for p in found.points if not p.thrashing)
    chosen = next(p.requests for p in found.points if p.cap == found.cap)
    verifying = VERIFY_SIZE * chosen  # the verification's fresh samples: the chosen cap's own
    searched = [p for p in found.probes if p.requests not in (200, verifying)]
    assert searched
    for p in searched:
        assert p.requests == min(largest, max(200, math.ceil(20 * 10 * p.rate_rps)))


def _found_and_probes() -> tuple[Replica, OnlineWorkload, capacity_module.RatePoint, int]:
    """A replica, its workload, the rate its search found (before verification) and the chosen
    cap's own sample size."""
    replica, workload = _replica(400), _workload()
    whole = replica_capacity(replica, workload, slo=SLO)
    assert whole.sustained is not None
    own = next(p.requests for p in whole.points if p.cap == whole.cap)
    searched = [p for p in whole.probes if p.requests != VERIFY_SIZE * own]
    found = max((p for p in searched if p.meets and p.cap == whole.cap), key=lambda p: p.rate_rps)
    return replica, workload, found, own


def test_a_verification_at_a_rate_worth_nothing_to_the_caller_simulates_nothing() -> None:
    replica, workload, found, own = _found_and_probes()
    probes: list[capacity_module.RatePoint] = []
    got = capacity_module.verified(
        replica.run, workload, SLO, found, probes, own, worthless=lambda rate: True
    )
    assert got is None and probes == []


def test_a_verification_whose_rates_all_matter_is_the_plain_one() -> None:
    replica, workload, found, own = _found_and_probes()
    plain: list[capacity_module.RatePoint] = []
    floored: list[capacity_module.RatePoint] = []
    expected = capacity_module.verified(replica.run, workload, SLO, found, plain, own)
    got = capacity_module.verified(
        replica.run, workload, SLO, found, floored, own, worthless=lambda rate: False
    )
    assert got == expected and floored == plain


def test_a_verification_stops_at_the_first_rate_worth_nothing() -> None:
    # Steps of 3 %: a floor just below the found rate lets only the first step run.
    replica, workload, found, own = _found_and_probes()
    probes: list[capacity_module.RatePoint] = []
    floor = found.rate_rps * 0.99
    got = capacity_module.verified(
        replica.run, workload, SLO, found, probes, own, worthless=lambda rate: rate < floor
    )
    assert [p.rate_rps for p in probes] == [found.rate_rps]
    assert got is None or got is probes[0]


def test_groups_searched_with_their_replica_are_the_groups_searched_after(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # dp2's group searched in its replica's job (`group=True`) is the figure `group_layouts`
    # finds when it searches it on its own afterwards, and that second search is not made.
    from capcliff.analysis.evaluate.layout_capacity import group_layouts

    dep = _small_kv_dep()
    memories = [dep.memory(Layout(dp=2), 256)]
    apart = evaluate_layouts(dep, memories, _search(dep))
    group_layouts(apart, _search(dep))
    searched = Searched()
    together = evaluate_layouts(dep, memories, _search(dep), searched=searched, group=True)
    import capcliff.analysis.evaluate.dp_group as dp_group

    runs = _count_runs(monkeypatch)
    monkeypatch.setattr(dp_group, "simulate", lambda *a, **k: runs.append(1))
    group_layouts(together, _search(dep), searched)
    assert runs == []
    assert apart["dp2"].alone is not None and together["dp2"].alone is not None

    def figures(ev: LayoutEval) -> tuple[int, float, float, float]:
        state = ev.capacity.at_sustained
        return ev.capacity.cap, ev.capacity.sustained_rps, state.ttft_p99_s, state.tpot_p99_s

    assert figures(together["dp2"]) == figures(apart["dp2"])
    assert together["dp2"].capacity.sustained_rps > 0


def test_a_fleet_check_depends_on_its_units_cap_and_count_not_on_their_rate(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # dp2-tp4's copies (grouped rate 7.0/s a replica) and the tp4 fleet line (7.2/s alone) at
    # the same cap and count simulate the same fleet: one check key, the same simulation.
    from types import SimpleNamespace

    import capcliff.analysis.plan.fleet as fleet

    replica = _replica(400)
    ev = SimpleNamespace(replica=replica, capacity=SimpleNamespace(simulated_requests=500))
    grouped = fleet.Unit(Layout(tp=4), 1, 7.0, 227, 1.5)
    alone = fleet.Unit(Layout(tp=4), 1, 7.2, 227, 1.4)
    other_cap = fleet.Unit(Layout(tp=4), 1, 7.2, 228, 1.4)
    assert fleet.check_key(ev, grouped, 4) == fleet.check_key(ev, alone, 4)  # type: ignore[arg-type]
    assert fleet.check_key(ev, grouped, 4) != fleet.check_key(ev, other_cap, 4)  # type: ignore[arg-type]
    assert fleet.check_key(ev, grouped, 4) != fleet.check_key(ev, grouped, 5)  # type: ignore[arg-type]
    seen: list[tuple[object, ...]] = []

    def recorded(requests, steps, capacity, config, **kw):  # type: ignore[no-untyped-def]
        seen.append((requests.arrival_s.tobytes(), steps, capacity, config, kw))
        return simulate_real(requests, steps, capacity, config, **kw)

    simulate_real = fleet.simulate
    monkeypatch.setattr(fleet, "simulate", recorded)
    from capcliff.sim.traffic.workload import Arrival

    choice = WorkloadChoice(
        num_requests=1, isl=100, osl=(100,), arrival=Arrival.POISSON, rate_per_s=2.0
    )
    workload = OnlineWorkload(choice, 0)
    first = fleet.check_fleet(ev, grouped, 2, workload, SLO)  # type: ignore[arg-type]
    second = fleet.check_fleet(ev, alone, 2, workload, SLO)  # type: ignore[arg-type]
    assert len(seen) == 2 and seen[0][1:] == seen[1][1:] and seen[0][0] == seen[1][0]
    assert (first.replicas, first.meets) == (second.replicas, second.meets)
