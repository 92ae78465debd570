"""More survivors of the seed-8 mutation sample (`benchmarks/mutation.py --packages analysis
--seed 8`; the first five are in test_analysis_mutants_seed8.py). Each expected value is worked
out by hand in its comment, and each test was checked to fail on its mutant, planted by hand."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from capcliff.analysis import parallel


def test_a_run_keeps_at_least_one_worker(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(parallel, "idle_cores", lambda: 3)
    assert parallel._Run(0).workers == 1  # max(1, min(0, 3)) = 1: never an empty pool
    assert parallel._Run(5).workers == 3  # max(1, min(5, 3)) = 3
    assert parallel._Run(2).workers == 2  # max(1, min(2, 3)) = 2


def test_a_timed_traces_offered_rate_counts_intervals_not_requests() -> None:
    import json

    from capcliff.analysis.evaluate.online_load import OnlineWorkload
    from capcliff.analysis.workloads import WorkloadChoice

    def trace(arrivals: list[float]) -> OnlineWorkload:
        lines = tuple(
            json.dumps({"input_tokens": 10, "output_tokens": 5, "arrival_s": a}) for a in arrivals
        )
        return OnlineWorkload(WorkloadChoice(num_requests=1, trace_lines=lines), seed=0)

    # 5 requests at 0, 1, 2, 3, 4 s: 4 intervals over a 4 s span = 1 request/s (not 5 / 4)
    assert trace([2.0, 0.0, 1.0, 4.0, 3.0]).offered_rps() == pytest.approx(1.0)
    # 3 requests at 10, 12 and 15 s: 2 intervals over 5 s = 0.4 request/s
    assert trace([10.0, 12.0, 15.0]).offered_rps() == pytest.approx(0.4)
    # all at once (and not at 0, so the trace is timed): no span, no rate
    assert trace([1.0, 1.0]).offered_rps() is None


def test_kv_capacity_is_compared_only_when_both_layouts_have_one() -> None:
    from capcliff.analysis.plan.advice import recommendation_reasons
    from capcliff.analysis.plan.types import Objective

    def row(name: str, cap: int | None) -> Any:
        return SimpleNamespace(
            name=name, weights_bytes_per_gpu=10, kv_capacity_tokens_per_replica=cap,
            kv_capacity_tokens_total=cap, cliff=None, sweet_spot=None,
        )  # fmt: skip

    # both known: 3,000 / 1,500 = 2.0x
    assert recommendation_reasons(row("a", 3000), row("b", 1500), Objective.COST) == [
        "KV capacity per replica: 3,000 vs 1,500 tokens (2.0x); in all 3,000 vs 1,500"
    ]
    # one of them unknown (0 or None): no line, and no division by 0
    assert recommendation_reasons(row("a", 3000), row("b", 0), Objective.COST) == []
    assert recommendation_reasons(row("a", None), row("b", 1500), Objective.COST) == []


def test_ranged_benchmark_lengths_run_from_ratio_x_len_to_len() -> None:
    from capcliff.analysis.sweep.step_fit import point_requests
    from capcliff.calibrate.benchmarks import BenchmarkPoint

    point = BenchmarkPoint(
        "r", concurrency=4, input_len=1000, output_len=200, num_requests=400, range_ratio=0.5
    )
    requests = point_requests(point)
    # inputs uniform in [0.5 x 1,000, 1,000] = [500, 1,000]; outputs in [100, 200]
    assert requests.input_tokens.min() >= 500 and requests.input_tokens.max() <= 1000
    assert requests.output_tokens.min() >= 100 and requests.output_tokens.max() <= 200
    # 400 draws spread over 501 values: far from all equal (a fixed 1,000 would be)
    assert requests.input_tokens.min() < 600 and requests.input_tokens.max() > 900
    fixed = point_requests(BenchmarkPoint("f", 4, 1000, 200, num_requests=8))
    assert set(fixed.input_tokens.tolist()) == {1000}  # ratio 1: 1 x 1,000 = the length


def test_split_candidates_share_the_budget_between_the_pools() -> None:
    from capcliff.analysis.disagg.options import split_candidates

    asked: list[tuple[str, int]] = []

    def decode(gpu: str, most: int) -> tuple[int, str]:
        asked.append(("decode", most))
        return 2, "D"  # a decode instance is 2 GPUs wide

    def prefill(gpu: str, most: int) -> tuple[int, list[str]]:
        asked.append(("prefill", most))
        return 1, ["P"]  # a prefill instance is 1 GPU wide

    choices: Any = SimpleNamespace(
        dep=SimpleNamespace(hardware=SimpleNamespace(id="h")), decode=decode, prefill=prefill
    )
    specs = split_candidates(choices, 8, ("h",))
    # decode gets at most 8 // 2 = 4 GPUs, prefill what one decode instance leaves: 8 - 2 = 6
    assert asked == [("decode", 4), ("prefill", 6)]
    # x = 1 .. (8 - 2) // 1 = 6 prefill instances, y = (8 - x) // 2 decode instances:
    # (1, 3), (2, 3), (3, 2), (4, 2), (5, 1), (6, 1)
    got = [(s.prefill_instances, s.decode_instances) for s in specs]
    assert got == [(1, 3), (2, 3), (3, 2), (4, 2), (5, 1), (6, 1)]
    assert all(s.prefill_gpu is None and s.decode_gpu is None for s in specs)
    # 32 GPUs, both 2 wide: prefill gets (32 - 2) // 2 = 15 instances at most, more than
    # MAX_SPLITS = 6, so the grid geomspace(1, 15, 6) = 1, 1.72, 2.95, 5.08, 8.73, 15 rounds
    # to 1, 2, 3, 5, 9, 15, each with (32 - 2x) // 2 decode instances
    wide: Any = SimpleNamespace(
        dep=choices.dep, decode=lambda g, most: (2, "D"), prefill=lambda g, most: (2, ["P"])
    )
    got = [(s.prefill_instances, s.decode_instances) for s in split_candidates(wide, 32, ("h",))]
    assert got == [(1, 15), (2, 14), (3, 13), (5, 11), (9, 7), (15, 1)]


def test_without_an_slo_the_latencies_are_read_at_the_headroom_below_saturation(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from capcliff.analysis.evaluate import capacity

    rates: list[float] = []
    at_rate = SimpleNamespace(throughput_rps=8.0)

    def run_at(rps: float) -> Any:
        top = SimpleNamespace(state=SimpleNamespace(throughput_rps=rps, settled=True),
                              requests=500, cap=64)  # fmt: skip
        workload: Any = SimpleNamespace(
            at_rate=lambda n, rate: rates.append(rate) or "requests",
            mean_output_tokens=lambda: 100.0,
        )
        replica: Any = SimpleNamespace(steps_run=lambda requests, cap: "result")
        monkeypatch.setattr(capacity, "cap_grid", lambda w, r: (70, 8))
        monkeypatch.setattr(capacity, "chosen_cap", lambda points: top)
        monkeypatch.setattr(capacity, "steady_state", lambda *a, **k: at_rate)
        monkeypatch.setattr(capacity, "last_start", lambda requests: None)  # not sessions
        return capacity.replica_capacity(replica, workload, slo=None, headroom=0.2, points=(top,))

    got = run_at(10.0)
    assert rates == [pytest.approx(8.0)]  # (1 - 0.2) x 10 requests/s
    assert got.saturation_rps == got.sustained_rps == 10.0 and got.at_sustained is at_rate
    rates.clear()
    got = run_at(0.0)  # nothing served: no run at a rate of 0, the saturated state reported
    assert rates == [] and got.at_sustained.throughput_rps == 0.0


def _rate_point(rate: float, saturated_from: float = 1e9) -> Any:
    # margin = TTFT p99 / 1 s = rate / 2: the SLO holds up to 2 requests/s
    sat = rate >= saturated_from
    state = SimpleNamespace(saturated=sat, ttft_p99_s=rate / 2, tpot_p99_s=0.0)
    return SimpleNamespace(rate_rps=rate, meets=not sat and rate / 2 <= 1, state=state)


def _probes() -> tuple[Any, list[float]]:
    probed: list[float] = []

    def probe(rate: float, requests: int, cap: int) -> Any:
        probed.append(rate)
        return _rate_point(rate, saturated_from=4.0)

    return SimpleNamespace(slo=SimpleNamespace(ttft_s=1.0, tpot_s=1.0), probe=probe), probed


def test_narrow_interpolates_only_between_two_known_margins() -> None:
    from capcliff.analysis.evaluate.rate_search import _narrow

    probes, probed = _probes()
    # margins 0.5 at 1 and 1.5 at 3 (rate / 2): the line crosses 1 at 1 + 2 x 0.5 / 1 = 2,
    # where bisection would probe 1 + 2 / 2 = 2 as well; so start the bad end at 5 (margin 2.5):
    # 1 + 4 x 0.5 / 2 = 2.0, where bisection probes 3.0
    got = _narrow(probes, 64, _rate_point(1.0), _rate_point(5.0), 100, 0.1)
    # 2.0 passes; the bad end is still the starting one, so no second probe; the bracket (2, 5)
    # did not halve, so bisect: 3.5 fails (1.75); then the line through 1.0 and 1.75 crosses 1
    # at 2.0, pushed in by 0.1 / 4 to 2.025, which fails; 2.025 - 0.09 is below 2: no probe
    assert probed == pytest.approx([2.0, 3.5, 2.025]) and got.rate_rps == pytest.approx(2.0)
    # a saturated bad end has no margin: bisect, (1 + 4.5) / 2 = 2.75 first
    probes, probed = _probes()
    got = _narrow(probes, 64, _rate_point(1.0), _rate_point(4.5, 4.0), 100, 0.1)
    # 2.75 fails (1.375), with no second probe (the round did not interpolate); then the line
    # through 0.5 at 1 and 1.375 at 2.75 crosses 1 at 1 + 1.75 x 0.5 / 0.875 = 2.0, which
    # passes, and 2.0 + 0.9 x 0.1 = 2.09 fails: the bracket (2.0, 2.09) is done
    assert probed == pytest.approx([2.75, 2.0, 2.09]) and got.rate_rps == pytest.approx(2.0)


def test_narrow_bisects_when_the_failing_end_has_no_higher_margin() -> None:
    from capcliff.analysis.evaluate.rate_search import _narrow

    probed: list[float] = []

    def probe(rate: float, requests: int, cap: int) -> Any:
        probed.append(rate)
        return _rate_point(rate)

    probes: Any = SimpleNamespace(slo=SimpleNamespace(ttft_s=1.0, tpot_s=1.0), probe=probe)
    # the failing end fails on something else, with the same margin 0.5 as the passing end:
    # no line to follow (it would divide by 0), so bisect: (1 + 3) / 2 = 2.0 first
    bad = SimpleNamespace(rate_rps=3.0, meets=False, state=_rate_point(1.0).state)
    _narrow(probes, 64, _rate_point(1.0), bad, 100, 0.1)
    assert probed[0] == pytest.approx(2.0)


def test_fit_fixes_offers_the_longest_length_any_valid_layout_takes(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import capcliff.memory.fit
    from capcliff.analysis import what_fits
    from capcliff.units import KVDType, WeightDType

    def memories(lengths: list[tuple[int, bool]]) -> Any:
        mems = [
            SimpleNamespace(longest=n, valid=ok, fits=False, layout=SimpleNamespace(name=f"l{k}"))
            for k, (n, ok) in enumerate(lengths)
        ]
        monkeypatch.setattr(
            what_fits, "enumerate_layouts", lambda gpus, arch: list(range(len(mems)))
        )
        return SimpleNamespace(
            model=SimpleNamespace(arch=None), memory=lambda lay, length: mems[lay],
            scheme=SimpleNamespace(linear=WeightDType.FP8), kv_dtype=KVDType.FP8,
            hardware=SimpleNamespace(gpus_per_node=1), settings=SimpleNamespace(offload=None),
        )  # fmt: skip

    monkeypatch.setattr(what_fits, "replace", lambda dep, **changes: dep)
    for name in ("quantised", "planned", "as_shipped"):
        monkeypatch.setattr(what_fits.WeightScheme, name, staticmethod(lambda *a: None))
    monkeypatch.setattr(capcliff.memory.fit, "largest_max_model_len", lambda m: m.longest)
    # valid layouts take 3,000 and 5,000 tokens (an invalid one 7,000 does not count): 5,000
    dep = memories([(3000, True), (5000, True), (7000, False)])
    assert what_fits.fit_fixes(dep, 8, 8192) == [
        "--max-model-len 5000 (the longest one request that fits)"
    ]
    # no valid layout: the longest is 0, and no length is offered
    dep = memories([(7000, False)])
    assert what_fits.fit_fixes(dep, 8, 8192) == [
        "no change tried here fits: the model needs a larger deployment"
    ]


def test_the_users_a_layout_holds_follow_littles_law(monkeypatch: pytest.MonkeyPatch) -> None:
    from capcliff.analysis.plan import online_reuse as module

    requests = SimpleNamespace(has_content=True)
    monkeypatch.setattr(module, "online_requests", lambda w, rps, h: requests)
    monkeypatch.setattr(module, "reuse_advice", lambda *a, **k: None)
    monkeypatch.setattr(module, "requests_per_session", lambda sample: 4.0)
    monkeypatch.setattr(module, "mean_think_s", lambda w: 6.0)
    monkeypatch.setattr(module, "replace", lambda config, **changes: config)
    best: Any = SimpleNamespace(
        sustained_rps=2.0, replica=SimpleNamespace(config=None), memory=None,
        capacity=SimpleNamespace(cap=8, sustained_rps=2.0,
                                 at_sustained=SimpleNamespace(e2e_mean_s=4.0,
                                                              throughput_rps=1.6)),
    )  # fmt: skip
    workload: Any = SimpleNamespace(reference=lambda n: None)
    sessions, advice = module.online_reuse(None, best, workload, 0.2)  # type: ignore[arg-type]
    assert advice is None and sessions is not None
    # the operating state's 1.6 requests/s x (4 s end to end + 6 s thinking) = 16 users (not
    # the sustained 2.0 beside that state's latency); 2 / 4 = 0.5 sessions/s
    assert sessions.users == pytest.approx(16.0)
    assert (sessions.users_rps, sessions.cycle_s) == (1.6, 10.0)
    assert sessions.sessions_per_s == pytest.approx(0.5)
    assert sessions.mean_think_s == 6.0 and sessions.preemptions == 0


def test_the_caching_off_point_offloads_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    from capcliff.analysis.evaluate import replica_models
    from capcliff.analysis.plan import reuse_advice as module
    from capcliff.memory.budget import EngineName
    from capcliff.sim.config import PREFIX_CACHING_POLICIES

    runs: list[tuple[bool, Any]] = []

    def simulate(requests: Any, model: Any, cap: Any, config: Any, dp: int) -> Any:
        runs.append((config.prefix_caching, cap.tiers))
        hit = 0.4 if config.prefix_caching else None  # 40 % of looked-up tokens hit with caching
        return SimpleNamespace(
            reuse=None, prefix_cache_hit_rate=hit, ttft=SimpleNamespace(p99=2.0),
            output_tokens_per_s=100.0, total_preemptions=0,
        )  # fmt: skip

    def merged(obj: Any, **changes: Any) -> Any:
        return SimpleNamespace(**{**vars(obj), **changes})

    monkeypatch.setattr(replica_models, "replica_models", lambda dep, memory: (SimpleNamespace(),
                                                                               None))  # fmt: skip
    monkeypatch.setattr(module, "replace", merged)
    monkeypatch.setattr(module, "simulate", simulate)
    monkeypatch.setattr(module, "offload_sizes", lambda dep, memory: [])
    monkeypatch.setattr(module, "offload_tiers", lambda *a, **k: ("a tier",))
    # the stand-in requests share content: caching on is simulated too
    monkeypatch.setattr(module, "content_is_private", lambda requests: False)
    dep: Any = SimpleNamespace(settings=SimpleNamespace(engine=EngineName.VLLM))
    memory: Any = SimpleNamespace(layout=SimpleNamespace(dp=1, gpus=2))
    config: Any = SimpleNamespace(policy=next(iter(PREFIX_CACHING_POLICIES)))
    advice = module.reuse_advice(dep, memory, SimpleNamespace(has_content=True), config)  # type: ignore[arg-type]
    assert advice is not None
    # two runs, neither with an offload tier: caching off, then on
    assert runs == [(False, ()), (True, ())]
    off, on = advice.points
    assert (off.label, off.offload_bytes, off.prefix_cache_hit_rate) == ("caching off", 0, None)
    assert (on.label, on.offload_bytes, on.prefix_cache_hit_rate) == ("caching on", 0, 0.4)
    # no size offered, so none recommended: the flags turn caching on only
    assert advice.recommended_offload_bytes == 0
    assert advice.flags == ["--enable-prefix-caching"]
    assert advice.hit_rate_without == advice.hit_rate_with == 0.4


def test_the_fleet_report_counts_a_split_only_when_its_best_meets(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from capcliff.analysis.disagg import fleet

    found: list[tuple[bool, Any, bool]] = []
    plan = SimpleNamespace(winner="disaggregated", disaggregated=SimpleNamespace(gpus=4))
    monkeypatch.setattr(fleet, "split_plan_report", lambda dep, **k: plan)
    monkeypatch.setattr(fleet, "offered_tokens_per_s", lambda w: 1.0)
    monkeypatch.setattr(fleet, "Spent", lambda *a: None)
    monkeypatch.setattr(fleet, "cheapest_reasons", lambda spent, p, f: found.append(f) or [])
    monkeypatch.setattr(fleet, "CheapestReport", lambda **k: SimpleNamespace(**k))
    ctx: Any = SimpleNamespace(
        slo=SimpleNamespace(ttft_s=1.0, tpot_s=0.1), workload=SimpleNamespace(rate_per_s=2.0),
        dep=SimpleNamespace(model=SimpleNamespace(id="m")), inputs=None, seed=0, prices={},
        usd_per_gpu_hour={"h": 2.0},
    )  # fmt: skip
    agg = SimpleNamespace(gpus=8)
    chosen = [SimpleNamespace(spec=SimpleNamespace(gpus=4))]

    def report(split: Any, agg_ok: bool) -> Any:
        walk: Any = SimpleNamespace(
            best_aggregated=lambda: (agg, agg_ok), best_split=lambda: split, skipped=0
        )
        return fleet._report(ctx, ("h",), [], [], walk, 10.0)

    # the best split misses the SLOs and 8 aggregated GPUs meet them: aggregated, although
    # the plan (comparing the two as they are) prefers the split
    got = report((None, chosen, False), True)
    assert (got.choice, got.gpus, found[-1][0]) == ("aggregated", 8, False)
    # the best split meets them and the aggregated fleet does not: the split's 4 GPUs
    got = report((None, chosen, True), False)
    assert (got.choice, got.gpus, found[-1][0]) == ("disaggregated", 4, True)
    # no split at all: aggregated
    got = report(None, True)
    assert (got.choice, got.gpus, found[-1][0]) == ("aggregated", 8, False)


def test_after_the_answer_only_the_kind_that_missed_is_walked_on(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from capcliff.analysis.disagg import fleet

    visited: list[list[tuple[str, float]]] = []

    def visit(ctx: Any, level: list[Any], walk: Any, jobs: int) -> list[Any]:
        visited.append([(o.kind, o.price_level) for o in level])
        return [SimpleNamespace(model_copy=lambda update: SimpleNamespace(meets=False, **update))]

    monkeypatch.setattr(fleet, "_visit", visit)
    options: Any = [
        SimpleNamespace(kind=k, price_level=p)
        for k, p in [("aggregated", 5.0), ("aggregated", 10.0), ("disaggregated", 12.0),
                     ("aggregated", 12.0), ("aggregated", 20.0), ("aggregated", 25.0)]
    ]  # fmt: skip

    def other(split_ok: bool, agg_ok: bool) -> list[Any]:
        visited.clear()
        walk: Any = SimpleNamespace(splits=[(None, split_ok)], aggregated=[(None, agg_ok)])
        return fleet._other_kind(None, options, walk, 10.0, 1)  # type: ignore[arg-type]

    # a split met at $10/h and no aggregated fleet did: the aggregated ones above $10 up to
    # 2 x 10 = $20/h, each level in turn (none meets), marked as compared only
    rows = other(True, False)
    assert visited == [[("aggregated", 12.0)], [("aggregated", 20.0)]]
    assert len(rows) == 2 and all(r.compared_only for r in rows)
    # the other way round: the split at $12/h
    other(False, True)
    assert visited == [[("disaggregated", 12.0)]]
    # both kinds met (or neither): nothing more
    assert other(True, True) == [] and other(False, False) == [] and visited == []
