"""Edges the seed-51 mutation sample (`benchmarks/mutation.py --packages analysis --seed 51`)
found untested in small functions: when the reuse advice runs, which flags a lognormal output
length refuses, a draft model's presence, the price level's rounding, and which layouts the
online recommendation compares. Every expected value is worked out by hand in the comments."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from capcliff.analysis.workloads import WorkloadChoice
from capcliff.errors import InputError


def test_reuse_advice_needs_shared_content_and_a_prefix_cache() -> None:
    from capcliff.analysis.plan.reuse_advice import reuse_advice

    unused: Any = None  # not read: the advice stops before it looks at the deployment
    shared: Any = SimpleNamespace(has_content=True)
    alone: Any = SimpleNamespace(has_content=False)
    # content shared, but a policy without a modelled prefix cache (vLLM V0's): no advice
    v0: Any = SimpleNamespace(policy="vllm-v0")
    assert reuse_advice(unused, unused, shared, v0) is None
    # a prefix cache, but nothing shared
    for policy in ("vllm", "vllm-first-chunk", "sglang"):
        config: Any = SimpleNamespace(policy=policy)
        assert reuse_advice(unused, unused, alone, config) is None


def test_a_lognormal_output_length_is_for_single_turn_requests_without_a_range() -> None:
    spread = "lognormal:8000:30000"
    with pytest.raises(InputError, match="osl: a lognormal output length is for single-turn"):
        WorkloadChoice(
            num_requests=1, preset_name="multiturn-chat", osl=(30_000,), output_lengths=spread
        )
    with pytest.raises(InputError, match="osl: a lognormal output length is for single-turn"):
        WorkloadChoice(
            num_requests=1, isl=100, osl=(30_000,), output_lengths=spread, random_range_ratio=0.5
        )
    # neither: accepted
    assert WorkloadChoice(num_requests=1, isl=100, osl=(30_000,), output_lengths=spread)


def test_a_deployment_has_a_draft_model_only_with_a_drafting_method() -> None:
    from capcliff.analysis.deployment import Deployment
    from capcliff.catalog.catalogs import get_model
    from capcliff.memory.draft import SpecMethod
    from capcliff.perf.speculation import Speculation

    r1 = get_model("deepseek-r1")  # one MTP layer (num_nextn_predict_layers = 1)

    def draft(spec: Speculation | None) -> Any:
        fake = SimpleNamespace(speculation=spec, model=r1)
        prop: Any = Deployment.draft
        return prop.fget(fake)

    assert draft(None) is None  # no speculation
    assert draft(Speculation(SpecMethod.NGRAM, 3)) is None  # n-gram drafts from the prompt
    mtp = draft(Speculation(SpecMethod.MTP, 1))
    assert mtp is not None and mtp.arch.num_layers == r1.arch.num_mtp_layers == 1
    eagle = draft(Speculation(SpecMethod.EAGLE, 3))
    assert eagle is not None and eagle.arch.num_layers == 1  # one dense layer


def test_options_of_one_price_to_a_millionth_of_a_dollar_are_one_level() -> None:
    from capcliff.analysis.disagg.options import Option

    def level(usd: float) -> float:
        return Option(usd, "aggregated", 8, "h100-sxm").price_level

    # 0.1 + 0.2 = 0.30000000000000004 in floating point: one level with 0.3
    assert level(0.1 + 0.2) == level(0.3) == 0.3
    # 4 millionths apart are two levels (at a hundred-thousandth they would be one)
    assert level(1.000004) == 1.000004
    assert level(1.000004) != level(1.0)
    # half a millionth rounds away
    assert level(2.0000004) == 2.0


def _layout_eval(name: str, tp: int, dp: int, rps: float, refined: bool = True) -> Any:
    at = SimpleNamespace(
        ttft_p99_s=1.0, ttft_p99_half_width=0.01, tpot_p99_s=0.05, tpot_p99_half_width=0.01
    )
    capacity = SimpleNamespace(
        at_sustained=at, cap=64, simulated_cliff=None, meets_slo=True, points=()
    )  # no cap's saturation point: the recommendation prints the layout's
    layout = SimpleNamespace(name=name, tp=tp, pp=1, dp=dp)
    return SimpleNamespace(
        memory=SimpleNamespace(layout=layout), capacity=capacity, sustained_rps=rps,
        saturation_rps=rps * 1.2, refined=refined,
    )  # fmt: skip


def _compared(best: Any, *others: Any) -> list[str]:
    from capcliff.analysis.plan.online_rows import recommendation_reasons_online

    found = {ev.memory.layout.name: ev for ev in (best, *others)}
    reasons = recommendation_reasons_online(best, found)
    return [r for r in reasons if "the rate of" in r]


def test_the_online_recommendation_compares_the_runner_up_and_the_data_parallel_layout() -> None:
    tp2 = _layout_eval("tp2", 2, 1, 10.0)
    tp4 = _layout_eval("tp4", 4, 1, 8.0)
    dp2 = _layout_eval("dp2", 1, 2, 4.0)
    # best tp2 at 10/s: the runner-up tp4 (10 / 8 = 1.25x) and the data-parallel dp2 (2.50x)
    assert _compared(tp2, tp4, dp2) == [
        "1.25x the rate of tp4 (8.00 requests/s)",
        "2.50x the rate of dp2 (4.00 requests/s)",
    ]
    # the data-parallel layout is the best: it is not compared with itself
    best_dp = _layout_eval("dp2", 1, 2, 12.0)
    assert _compared(best_dp, tp2, tp4) == ["1.20x the rate of tp2 (10.00 requests/s)"]
    # the data-parallel layout is the runner-up: named once
    fast_dp = _layout_eval("dp2", 1, 2, 9.0)
    assert _compared(tp2, fast_dp, tp4) == ["1.11x the rate of dp2 (9.00 requests/s)"]
    # a data-parallel layout measured at its first cap only says so; one at 0/s is not compared
    first = _layout_eval("dp2", 1, 2, 5.0, refined=False)
    assert (
        _compared(tp2, tp4, first)[1] == "2.00x the rate of dp2 (5.00 requests/s, first cap only)"
    )
    assert _compared(tp2, tp4, _layout_eval("dp2", 1, 2, 0.0, refined=False)) == [
        "1.25x the rate of tp4 (8.00 requests/s)"
    ]
    # any rate above 0 is compared: 10 / 0.5 = 20x
    slow = _layout_eval("dp2", 1, 2, 0.5, refined=False)
    assert (
        _compared(tp2, tp4, slow)[1] == "20.00x the rate of dp2 (0.50 requests/s, first cap only)"
    )


class _Fleet:
    """check_fleet's simulator, steady state and SLO test stubbed: each simulation records
    (requests drawn, engines) and the SLO is met from `meets_from` engines on."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, meets_from: int) -> None:
        from capcliff.analysis.plan import fleet

        self.runs: list[tuple[int, int]] = []
        self.caps: list[int] = []  # max_num_seqs over the fleet's engines
        self.open_loop: list[bool] = []
        self.limits: list[Any] = []

        def config_at(config: object, cap: int, engines: int) -> int:
            self.caps.append(cap)
            return engines

        def steady_state(result: tuple[int, int], open_loop: bool) -> tuple[int, int]:
            self.open_loop.append(open_loop)
            return result

        def meets(state: tuple[int, int], limits: object) -> bool:
            self.runs.append(state)
            self.limits.append(limits)
            return state[1] >= meets_from

        monkeypatch.setattr(fleet, "config_at", config_at)

        def simulate(
            requests: int, steps: object, kv: object, config: object, dp: int, groups: int
        ) -> tuple[int, int]:
            assert dp == 2 * groups  # one group of the unit's 2 engines per replica
            return requests, dp

        monkeypatch.setattr(fleet, "simulate", simulate)
        # stand-in requests: the run as configured (`unhit_runs.steps_run` reads real ones)
        monkeypatch.setattr(fleet, "steps_run", lambda requests, config, run: run(config))
        monkeypatch.setattr(fleet, "steady_state", steady_state)
        monkeypatch.setattr(fleet, "meets_slo", meets)


def _check(
    monkeypatch: pytest.MonkeyPatch, meets_from: int, clients: bool = False, slo: Any = None
) -> Any:
    from capcliff.analysis.evaluate.online_load import LoadKind
    from capcliff.analysis.plan.fleet import check_fleet

    stub = _Fleet(monkeypatch, meets_from)
    workload: Any = SimpleNamespace(
        kind=LoadKind.CLIENTS if clients else LoadKind.RATE,
        choice=SimpleNamespace(clients=7),
        offered_rps=lambda: 2.0,
        at_rate=lambda n, rate: n,
        with_clients=lambda n, c: n + c * 1_000_000,  # marks the clients' draw
    )
    ev: Any = SimpleNamespace(
        capacity=SimpleNamespace(simulated_requests=4_000),
        replica=SimpleNamespace(config=None, steps=None, capacity=None),
    )
    unit: Any = SimpleNamespace(dp=2, cap=64)  # 2 engines a replica
    checked = check_fleet(ev, unit, 2, workload, slo)
    return checked, stub


def test_the_fleet_check_adds_a_replica_at_most_twice(monkeypatch: pytest.MonkeyPatch) -> None:
    from capcliff.analysis.evaluate.solver import Slo

    # never met: 2, 3 and 4 replicas (4, 6 and 8 engines) are simulated (VERIFY_RETRIES = 2
    # more), and the answer is the last tried, 4, not met. Requests: 4,000 (the replica's
    # sample) x replicas, within 16,000: 8,000, 12,000, 16,000. max_num_seqs 64 per engine:
    # 256, 384, 512 in all.
    checked, stub = _check(monkeypatch, meets_from=99)
    assert stub.runs == [(8_000, 4), (12_000, 6), (16_000, 8)]
    assert stub.caps == [256, 384, 512]
    assert (checked.replicas, checked.meets) == (4, False)
    # a rate is an open loop; without an SLO the limits are unbounded
    assert stub.open_loop == [True] * 3
    assert stub.limits[0] == Slo.unlimited()
    # met from 6 engines: 2 replicas miss, 3 meet
    checked, stub = _check(monkeypatch, meets_from=6)
    assert [engines for _, engines in stub.runs] == [4, 6]
    assert (checked.replicas, checked.meets) == (3, True)
    # met at once: no retry; the SLO given is the one tested
    slo = Slo.of(1.0, None)
    checked, stub = _check(monkeypatch, meets_from=1, slo=slo)
    assert (len(stub.runs), checked.replicas, checked.meets) == (1, 2, True)
    assert stub.limits == [slo]


def test_the_fleet_check_sends_clients_their_own_way(monkeypatch: pytest.MonkeyPatch) -> None:
    # closed-loop users: with_clients(8,000, 7), marked as 7,008,000 by the stub; a closed loop
    _, stub = _check(monkeypatch, meets_from=1, clients=True)
    assert stub.runs == [(7_008_000, 4)]
    assert stub.open_loop == [False]


@pytest.mark.parametrize("policy", ["write-through", "write-back"])
def test_a_deployments_offload_tier_and_policy_reach_its_kv_capacity(policy: str) -> None:
    from capcliff.analysis.deployment import resolve
    from capcliff.analysis.deployment_settings import DeploymentSettings
    from capcliff.catalog.catalogs import get_hardware, get_model
    from capcliff.catalog.layout import Layout

    model, h200 = get_model("llama-3.1-8b"), get_hardware("h200-sxm")
    settings = DeploymentSettings(offload="cpu:64GiB", offload_policy=policy)
    dep = resolve(model, h200, settings)
    capacity = dep.capacity(dep.memory(Layout(), 4096))
    # one GPU: 64 GiB of host DRAM over Llama 3.1 8B's bf16 KV, 2 x 32 layers x 8 KV heads x
    # 128 x 2 bytes = 131,072 bytes a token: 68,719,476,736 / 131,072 = 524,288 tokens
    (cpu,) = capacity.tiers
    assert (cpu.name, cpu.tokens) == ("cpu", 524_288)
    assert capacity.offload_write_back is (policy == "write-back")
    # the size is per replica. TP 2: 32 GiB on each of its GPUs, each holding half of every
    # token's KV (65,536 bytes): 524,288 tokens still. DP 2: each replica is one GPU with all
    # 64 GiB, as with one GPU.
    for layout in (Layout(tp=2), Layout(dp=2)):
        (cpu,) = dep.capacity(dep.memory(layout, 4096)).tiers
        assert cpu.tokens == 524_288
    plain = resolve(model, h200, DeploymentSettings())
    bare = plain.capacity(plain.memory(Layout(), 4096))
    assert bare.tiers == () and not bare.offload_write_back
