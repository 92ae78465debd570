"""Edges the seed-61 mutation sample (`benchmarks/mutation.py --packages analysis --seed 61`)
found untested. Every expected value is worked out by hand in the comments."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest

from capcliff.analysis.evaluate.steady_state import _window


def _run(arrival: list[float], ttft: list[float], finish: list[float]) -> Any:
    """The three per-request arrays `_window` reads (s)."""
    return SimpleNamespace(
        arrival_s=np.array(arrival), ttft_s=np.array(ttft), finish_s=np.array(finish)
    )


def test_the_warm_up_of_one_or_two_requests_keeps_the_last_one() -> None:
    # k = min(n - 1, ceil(0.2 n)): n = 1 gives min(0, 1) = 0, n = 2 gives min(1, 1) = 1, so the
    # window opens at the last request of the sorted order either way.
    one = _run([3.0], [0.5], [4.0])
    assert _window(one, open_loop=True) == (3.0, 3.0)
    # closed loop: from the k-th finish (4.0) to the latest first token (3.0 + 0.5)
    assert _window(one, open_loop=False) == (4.0, 3.5)
    two = _run([1.0, 0.0], [0.25, 0.5], [2.0, 3.0])
    assert _window(two, open_loop=True) == (1.0, 1.0)
    # finishes sorted 2.0, 3.0: k = 1 opens at 3.0; first tokens at 1.25 and 0.5
    assert _window(two, open_loop=False) == (3.0, 1.25)


def test_a_fleet_line_searches_replicas_within_one_node(monkeypatch: pytest.MonkeyPatch) -> None:
    # The fleet line on a GPU type tries one replica of each TP size up to the plan's GPUs, but a
    # replica never spans nodes: 4 GPUs on an 8-GPU node search up to 4, 16 GPUs up to 8.
    from capcliff.analysis.plan import online

    asked: list[int] = []

    def search(ctx: object, dep: object, gpus: int, **kw: object) -> tuple[None, dict[str, Any]]:
        asked.append(gpus)
        return None, {}

    monkeypatch.setattr(online, "_fleet_rank", lambda ctx, hardware: None)
    monkeypatch.setattr(online, "_search", search)
    ctx = SimpleNamespace(dep=SimpleNamespace(on=lambda hardware: None))
    node = SimpleNamespace(id="x8", gpus_per_node=8)
    line, note = online._type_fleet((ctx, node, 4))  # type: ignore[arg-type]
    assert line is None
    assert note == "x8: no replica of up to 4 GPUs fits and meets the target"
    online._type_fleet((ctx, node, 16))  # type: ignore[arg-type]
    assert asked == [4, 8]


def test_a_kv_pool_exactly_the_device_is_accepted_and_a_byte_more_refused() -> None:
    from capcliff.errors import InputError
    from tests.simtools import llama_8b_h200

    # "more than the device" refuses only past it: 80 GiB of 80 GiB is allowed
    dep = llama_8b_h200("vllm", gpu_total_memory="80GiB", kv_cache_memory="80GiB")
    assert dep.settings.kv_cache_memory == 80 * 2**30
    with pytest.raises(InputError, match=r"^kv_cache_memory: 80\.00 GiB per GPU is more than"):
        llama_8b_h200("vllm", gpu_total_memory="80GiB", kv_cache_memory=80 * 2**30 + 1)


def test_the_step_label_names_only_the_overheads_that_are_there() -> None:
    from capcliff.analysis.evaluate.replica_models import step_label
    from tests.simtools import llama_8b_h200

    # vLLM models no request overhead (0 s) and its speculation keeps the overlap scheduler (no
    # host time per step): neither is named. SGLang's speculative worker without SPEC_V2 has
    # host time per step, and its front end a request overhead: both are.
    plain = step_label(llama_8b_h200("vllm"))
    assert "request overhead" not in plain
    spec = step_label(llama_8b_h200("vllm", speculative="ngram:3", spec_accept_length=2.0))
    assert "speculative ngram:3, 2.00 tokens/step" in spec
    assert "no overlap scheduler" not in spec
    assert "request overhead" not in spec
    sglang = step_label(llama_8b_h200("sglang", speculative="ngram:3", spec_accept_length=2.0))
    assert "; no overlap scheduler: " in sglang
    assert "; request overhead " in sglang


def test_a_run_opened_inside_a_run_is_the_outer_one(monkeypatch: pytest.MonkeyPatch) -> None:
    from capcliff.analysis import parallel

    monkeypatch.setattr(parallel, "idle_cores", lambda: 4)
    with parallel.run_pool(4):
        outer = parallel._current_run()
        assert outer is not None and outer.workers == 4
        with parallel.run_pool(2):  # nested: no second pool, the outer run's 4 workers
            assert parallel._current_run() is outer
        assert parallel._current_run() is outer  # the inner exit leaves the outer run open
    assert parallel._current_run() is None


def _full_run(
    arrival: list[float], ttft: list[float], finish: list[float], tokens: list[int]
) -> Any:
    """A run's per-request arrays (s, tokens) as `steady_state` reads them: TPOT over the decode
    gaps (NaN for one token), E2E from arrival to finish."""
    first = np.array(arrival) + np.array(ttft)
    out = np.array(tokens)
    gaps = np.where(out > 1, out - 1, 1)
    return SimpleNamespace(
        arrival_s=np.array(arrival), ttft_s=np.array(ttft), finish_s=np.array(finish),
        output_tokens=out, e2e_s=np.array(finish) - np.array(arrival),
        tpot_s=np.where(out > 1, (np.array(finish) - first) / gaps, np.nan),
        makespan_s=max(finish),
    )  # fmt: skip


def test_an_open_loop_window_of_no_length_falls_back_to_the_whole_run() -> None:
    from capcliff.analysis.evaluate.steady_state import steady_state

    # 100 one-token requests arrive, and finish, at 1 s: the window [1, 1] has no length, so the
    # whole run is the estimate: 100 requests over a 1 s makespan, nothing measured.
    n = 100
    run = _full_run([1.0] * n, [0.0] * n, [1.0] * n, [1] * n)
    state = steady_state(run, open_loop=True)
    assert state.measured == 0
    assert state.window_s == (0.0, 1.0)
    assert state.throughput_rps == pytest.approx(100.0)


def test_a_stationary_backlog_counts_a_request_that_finishes_as_the_window_opens() -> None:
    from capcliff.analysis.evaluate.steady_state import steady_state

    # first tokens at 1, 2, 3 s; seeds = 1: the window is [1, 3]. Request 0 (one token) finishes
    # exactly at 1 s, inside the closed window, so 3 requests are measured, not 2.
    run = _full_run([0.0, 0.0, 0.0], [1.0, 2.0, 3.0], [1.0, 2.5, 3.0], [1, 2, 1])
    state = steady_state(run, open_loop=False, seeds=1)
    assert state.window_s == (1.0, 3.0)
    assert state.measured == 3


def test_a_stationary_window_of_no_length_falls_back_to_the_whole_run() -> None:
    from capcliff.analysis.evaluate.steady_state import steady_state

    # every first token at 1 s: the seeds' latest start is the latest start, so the window has
    # no length and the whole run (makespan 3 s) is the estimate
    run = _full_run([0.0] * 4, [1.0] * 4, [2.0, 2.0, 3.0, 3.0], [2, 2, 3, 3])
    state = steady_state(run, open_loop=False, seeds=2)
    assert state.window_s == (0.0, 3.0)
    assert state.measured == 0


def test_token_rates_spread_each_request_over_its_decode() -> None:
    from capcliff.analysis.evaluate.steady_state import _token_rates

    # Request A: first token at 1 s, last at 3 s, 4 tokens: 2 tokens/s over [1, 3]. Request B:
    # one token, at 2.5 s. Over [0, 2): A's 1 s gives 2 tokens, 2 / 2 s = 1.0 tokens/s; over
    # [2, 4): A's 1 s gives 2 and B's token 1, 3 / 2 s = 1.5 tokens/s.
    run = _full_run([0.0, 2.0], [1.0, 0.5], [3.0, 2.5], [4, 1])
    rates = _token_rates(run, np.array([0.0, 2.0, 4.0]))
    assert rates.tolist() == pytest.approx([1.0, 1.5])


def test_a_contender_exactly_twice_the_band_below_the_best_is_refined(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from capcliff.analysis.plan import online

    # The best refined layout sustains 10/s; with a tie band of 0.25 an unrefined, simpler
    # layout whose first cap already reaches 10 x (1 - 2 x 0.25) = 5.0/s could still win: it is
    # refined. One at 4.9/s cannot, and is not.
    refined: list[str] = []

    def refine(found: dict[str, Any], names: list[str], search: object, **kw: object) -> None:
        refined.extend(names)
        for name in names:
            found[name].refined = True

    chosen = SimpleNamespace(name="tp2", value=10.0)
    monkeypatch.setattr(online, "_ranked", lambda ev: ev.refined)
    monkeypatch.setattr(online, "_option", lambda ev: ev)
    monkeypatch.setattr(online, "decide", lambda ranked, band: (chosen, [], None))
    monkeypatch.setattr(online, "simplicity", lambda option: 2 if option.name == "tp2" else 1)
    monkeypatch.setattr(online, "refine_layouts", refine)
    monkeypatch.setattr(online, "group_layouts", lambda *a: None)
    for rate, expected in ((5.0, ["tp1"]), (4.9, [])):
        refined.clear()
        found: Any = {
            "tp2": SimpleNamespace(name="tp2", refined=True, saturation_rps=10.0),
            "tp1": SimpleNamespace(name="tp1", refined=False, saturation_rps=rate),
        }
        online._refine_contenders(found, None, 0.25, None)  # type: ignore[arg-type]
        assert refined == expected


def test_users_exactly_at_a_replicas_cycle_capacity_do_not_saturate_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from capcliff.analysis.plan import online

    # 2 requests/s sustained, 3 s mean E2E + 2 s think: a 5 s cycle holds 2 x 5 = 10 users.
    # 10 users are served; 11 saturate. With an offered rate, 2.0/s is served and 2.01/s is not.
    monkeypatch.setattr(online, "mean_think_s", lambda workload: 2.0)
    best: Any = SimpleNamespace(
        sustained_rps=2.0, capacity=SimpleNamespace(at_sustained=SimpleNamespace(e2e_mean_s=3.0))
    )

    def load(offered: float | None, clients: int | None) -> Any:
        workload = SimpleNamespace(
            offered_rps=lambda: offered, choice=SimpleNamespace(clients=clients),
            kind=SimpleNamespace(value="users" if clients else "rate"),
        )  # fmt: skip
        return online._load(SimpleNamespace(workload=workload), best, 1)  # type: ignore[arg-type]

    assert not load(None, 10).saturated
    assert load(None, 11).saturated
    assert not load(2.0, None).saturated
    assert load(2.01, None).saturated


def test_fit_fixes_offers_up_to_eight_nodes(monkeypatch: pytest.MonkeyPatch) -> None:
    from capcliff.analysis import what_fits
    from capcliff.units import KVDType, WeightDType

    # 8-GPU nodes: the counts tried past 1 GPU are 2, 4 (within a node), then 8, 16, 32 and 64
    # (1, 2, 4 and 8 nodes). A model that fits only from 64 GPUs gets "64 GPUs (8 nodes)"; one
    # that needs more gets no count at all.
    def dep_fitting_from(least: int) -> Any:
        monkeypatch.setattr(what_fits, "enumerate_layouts", lambda gpus, arch: [gpus])
        return SimpleNamespace(
            model=SimpleNamespace(arch=None), scheme=SimpleNamespace(linear=WeightDType.FP8),
            kv_dtype=KVDType.FP8, hardware=SimpleNamespace(gpus_per_node=8),
            settings=SimpleNamespace(offload=None),
            memory=lambda gpus, length: SimpleNamespace(
                fits=gpus >= least, valid=False, layout=SimpleNamespace(name=f"tp{gpus}")
            ),
        )  # fmt: skip

    monkeypatch.setattr(what_fits, "replace", lambda dep, **changes: dep)
    monkeypatch.setattr(what_fits.WeightScheme, "planned", staticmethod(lambda *a: None))
    shipped = SimpleNamespace(linear=WeightDType.FP8)  # as planned: no dtype to offer
    monkeypatch.setattr(what_fits.WeightScheme, "as_shipped", staticmethod(lambda arch: shipped))
    assert what_fits.fit_fixes(dep_fitting_from(64), 1, 8192) == ["64 GPUs (8 nodes) fit as tp64"]
    assert what_fits.fit_fixes(dep_fitting_from(3), 1, 8192) == ["4 GPUs (1 node) fit as tp4"]
    assert what_fits.fit_fixes(dep_fitting_from(65), 1, 8192) == [
        "no change tried here fits: the model needs a larger deployment"
    ]


def test_any_sustained_rate_above_zero_meets_the_slo() -> None:
    from capcliff.analysis.evaluate.capacity import ReplicaCapacity

    # 0.5 requests/s is a slow replica, not a failing one; only 0 means no rate met the SLO
    meets = ReplicaCapacity.meets_slo.fget
    assert meets is not None
    assert meets(SimpleNamespace(sustained_rps=0.5))
    assert not meets(SimpleNamespace(sustained_rps=0.0))


def test_the_chosen_split_says_how_many_served_and_how_much_room_it_has(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from typing import NamedTuple

    from capcliff.analysis.disagg import plan
    from capcliff.analysis.evaluate.solver import Slo

    class Split(NamedTuple):
        key: tuple[bool, float, float]
        state: Any
        pools: Any = None
        cap: int = 0
        running: Any = None
        result: Any = None

    monkeypatch.setattr(plan, "disagg_steady", lambda *a, **k: ("grown", "settled"))
    # two splits serve the rate ($12/h and $20/h), one misses; the $12/h one ranks first. Its
    # TTFT p99 1.0 s of a 2 s limit and TPOT p99 0.02 s of 0.05 s: it uses max(0.5, 0.4) = 50 %
    # of the SLO; without an SLO, its 5 s mean E2E is the figure.
    state = SimpleNamespace(requests=400, ttft_p99_s=1.0, tpot_p99_s=0.02, e2e_mean_s=5.0)
    cheap = Split((True, -12.0, -0.5), state)
    splits = [Split((True, -20.0, -0.3), state), cheap, Split((False, 100.0, 0.0), state)]
    best, why = plan.chosen_split(None, splits, object(), Slo(ttft_s=2.0, tpot_s=0.05))  # type: ignore[arg-type]
    assert (best.key, best.result, best.state) == (cheap.key, "grown", "settled")
    assert why == [
        "2 of 3 splits serve the rate on the first 400 requests; this one costs the fewest $ "
        "per hour ($12.00; at equal cost, the most room under the SLOs wins) and uses 50% of "
        "the SLO"
    ]
    _, why = plan.chosen_split(None, splits, object(), None)  # type: ignore[arg-type]
    assert why[0].endswith("and 5 s mean E2E")


def test_a_tiers_link_utilisation_is_its_busy_time_over_each_replicas_makespan() -> None:
    from capcliff.analysis.sweep.report import _tiers

    # one replica whose CPU tier's link was busy 2 s of a 4 s run: 0.5; 300 of 1,000 queried
    # tokens hit it: 0.3. Two replicas sharing 2 s of busy time over 4 s each: 0.25.
    tier = SimpleNamespace(
        name="cpu", hit_tokens=300, read_bytes=10, written_bytes=20, busy_s=2.0,
        recompute_saved_s=0.1,
    )  # fmt: skip
    reuse = SimpleNamespace(queried_tokens=1000, tiers=[tier])
    one = _tiers(SimpleNamespace(reuse=reuse, replicas=[0], makespan_s=4.0))  # type: ignore[arg-type]
    assert (one[0].tier, one[0].hit_rate, one[0].link_utilization) == ("cpu", 0.3, 0.5)
    two = _tiers(SimpleNamespace(reuse=reuse, replicas=[0, 1], makespan_s=4.0))  # type: ignore[arg-type]
    assert two[0].link_utilization == 0.25


def test_only_an_online_sweep_with_a_redraw_is_grown(monkeypatch: pytest.MonkeyPatch) -> None:
    from capcliff.analysis.evaluate.steady_point import MAX_DOUBLINGS
    from capcliff.analysis.sweep import report

    # A point that never settles: an online sweep that can redraw its requests doubles them
    # MAX_DOUBLINGS times (10 -> 20 -> 40 ...); a batch sweep, or one with nothing to redraw
    # from, keeps its points as they are.
    drawn: list[int] = []

    def redraw(n: int) -> tuple[tuple[str, str], ...]:
        drawn.append(n)
        return (("w", f"{n} requests"),)

    def sweep(requests: str, *a: object, **k: object) -> list[Any]:
        return [SimpleNamespace(concurrency=4, result=requests)]

    monkeypatch.setattr(report, "needs_more", lambda result, open_loop: True)
    monkeypatch.setattr(report, "sweep", sweep)
    requests: Any = type("Ten", (), {"closed_loop": False, "__len__": lambda self: 10})()
    points: Any = (SimpleNamespace(concurrency=4, result="first"),)
    models: Any = (None, None, None, 2)  # several replicas: the restarting path
    for online, plan in ((True, None), (False, redraw), (True, redraw)):
        monkeypatch.setattr(report, "is_online", lambda r, online=online: online)
        out = report._grown(points, requests, "w", SimpleNamespace(redraw=plan), models)  # type: ignore[arg-type]
        if plan is None or not online:
            assert out == points
    assert drawn == [10 * 2**k for k in range(1, MAX_DOUBLINGS + 1)]
    assert out[0].result == f"{10 * 2**MAX_DOUBLINGS} requests"


def test_an_online_sweet_spot_is_the_goodput_best_else_the_throughput_best(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from capcliff.analysis.evaluate import sweet_spot
    from capcliff.analysis.evaluate.solver import Slo

    # caps 8, 16, 32 at 100, 300, 300 tokens/s. The SLO's goodput picks 8: the answer is 8, by
    # goodput. When no point meets the SLO, the most tokens/s wins, the smaller cap on a tie: 16.
    points: Any = tuple(
        SimpleNamespace(concurrency=c, output_tokens_per_s=t)
        for c, t in ((8, 100.0), (16, 300.0), (32, 300.0))
    )
    monkeypatch.setattr(sweet_spot, "collapse", lambda pts, best: SimpleNamespace(worst_loss=0.0))
    slo = Slo(ttft_s=1.0, tpot_s=0.05)
    monkeypatch.setattr(sweet_spot, "slo_sweet_spot", lambda pts, slo: pts[0])
    met = sweet_spot.sweet_spot_result(points, slo, online=True)
    assert (met.concurrency, met.objective) == (8, "goodput")
    monkeypatch.setattr(sweet_spot, "slo_sweet_spot", lambda pts, slo: None)
    missed = sweet_spot.sweet_spot_result(points, slo, online=True)
    assert (missed.concurrency, missed.objective) == (16, "throughput (no point meets the SLO)")


@pytest.mark.parametrize("online", [False, True])
def test_a_batch_sweet_spot_and_an_online_one_without_runs_go_by_makespan(
    monkeypatch: pytest.MonkeyPatch, online: bool
) -> None:
    from capcliff.analysis.evaluate import sweet_spot

    # caps 8 and 16: makespans 100 s and 90 s; in steady state 300 and 100 tokens/s. A batch
    # (with its runs) and online points without runs both take the least makespan, 16; only
    # online points with their runs go by steady tokens/s
    def point(cap: int, makespan_s: float) -> SimpleNamespace:
        result = None if online else SimpleNamespace(steady=3000.0 / cap)
        return SimpleNamespace(
            concurrency=cap, makespan_s=makespan_s, output_tokens_per_s=1.0, result=result
        )

    points: Any = (point(8, 100.0), point(16, 90.0))
    monkeypatch.setattr(sweet_spot, "_steady_tok_s", lambda p, open_loop: p.result.steady)
    got = sweet_spot.sweet_spot_result(points, None, online=online)
    assert (got.concurrency, got.objective) == (16, "makespan")


def test_a_cap_is_settled_only_when_asked_and_not_thrashing(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from capcliff.analysis.evaluate import capacity

    # First sample 10 requests, largest 80. More than 0.5 preemptions per request (over 5 of
    # 10) is thrashing: such a cap stays at its first sample, as does any cap not to be
    # settled; a cap at exactly 5 preemptions that is to be settled grows to the 80 the
    # stopping rule stopped at.
    monkeypatch.setattr(capacity, "_sample_sizes", lambda cap, least, workload: (10, 80))
    monkeypatch.setattr(capacity, "steady_state", lambda result, **kw: "first state")
    settled: list[int] = []

    def settle(run: object, *, first: int, cap: int, measure: object) -> Any:
        settled.append(first)
        return SimpleNamespace(state="settled state", result="grown", requests=cap)

    monkeypatch.setattr(capacity, "settle", settle)
    # a trace that shares content: restarted samples (`settle`), not an extended run
    workload: Any = SimpleNamespace(
        is_trace=True, sessions=False, stationary_start=lambda: False,
        mean_output_tokens=lambda: 100.0, saturation_sample=lambda n, cap: list(range(n)),
    )  # fmt: skip

    def point(preemptions: int, settle_it: bool) -> tuple[object, int]:
        replica: Any = SimpleNamespace(
            run=lambda sample, cap: SimpleNamespace(total_preemptions=preemptions)
        )
        p = capacity.saturation_point(replica, workload, 8, None, settle_it=settle_it)
        return p.state, p.requests

    assert point(6, settle_it=True) == ("first state", 10)
    assert point(0, settle_it=False) == ("first state", 10)
    assert point(6, settle_it=False) == ("first state", 10)
    assert settled == []
    assert point(5, settle_it=True) == ("settled state", 80)
    assert settled == [10]


def test_an_extended_cap_is_settled_only_when_asked_and_not_thrashing(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from capcliff.analysis.evaluate import capacity

    # The extended run (sessions, shared content): first checkpoint at 10 requests of an
    # 80-request sample. Over 5 preemptions in those 10 is thrashing: the point stays at its first
    # checkpoint, as does any cap not to be settled (which keeps its run paused for the sweep);
    # at exactly 5 the rule runs on over the checkpoints 10 .. 80.
    monkeypatch.setattr(capacity, "_sample_sizes", lambda cap, least, workload: (10, 80))
    monkeypatch.setattr(capacity, "steady_state", lambda result, **kw: "first state")
    asked: list[list[int]] = []

    def settle_paused(advance: Any, sizes: list[int], measure: object) -> Any:
        asked.append(list(sizes))
        return SimpleNamespace(finished=range(80), result="grown"), "settled state"

    monkeypatch.setattr(capacity, "settle_paused", settle_paused)
    workload: Any = SimpleNamespace(
        is_trace=False, sessions=False, stationary_start=lambda: False,
        mean_output_tokens=lambda: 100.0, saturation_sample=lambda n, cap: list(range(n)),
    )  # fmt: skip

    def point(preemptions: int, settle_it: bool) -> Any:
        def advance(k: int) -> object:
            result = SimpleNamespace(total_preemptions=preemptions)
            return SimpleNamespace(result=result, finished=range(k), complete=False, horizon_s=1.0)

        replica: Any = SimpleNamespace(paused=lambda sample, cap: SimpleNamespace(advance=advance))
        return capacity.saturation_point(replica, workload, 8, None, settle_it=settle_it)

    thrashing = point(6, settle_it=True)
    assert (thrashing.state, thrashing.requests, thrashing.paused) == ("first state", 10, None)
    coarse = point(0, settle_it=False)
    assert (coarse.state, coarse.requests) == ("first state", 10) and coarse.paused is not None
    assert point(6, settle_it=False).paused is None
    assert asked == []
    grown = point(5, settle_it=True)
    assert (grown.state, grown.requests) == ("settled state", 80)
    assert asked == [[10, 13, 17, 22, 28, 35, 44, 55, 69, 80]]  # ceil(1.25 x) each time


def test_the_quantized_checkpoint_is_the_catalogs_card_of_that_dtype() -> None:
    from capcliff.analysis.deployment import resolve
    from capcliff.analysis.deployment_settings import settings_of
    from capcliff.analysis.plan.commands import quantized_checkpoint
    from capcliff.catalog.catalogs import get_hardware, get_model

    def planned(model: str, **settings: object) -> Any:
        return resolve(get_model(model), get_hardware("h200-sxm"), settings_of(settings))

    # Meta ships Llama 3.1 405B in FP8 too (meta-llama/Llama-3.1-405B-Instruct-FP8): planned
    # with FP8 weights, that card is served. As shipped (BF16) there is nothing to swap in.
    card = quantized_checkpoint(planned("llama-3.1-405b", weight_dtype="fp8"))
    assert card is not None
    assert (card.id, card.hf_repo) == (
        "llama-3.1-405b-fp8",
        "meta-llama/Llama-3.1-405B-Instruct-FP8",
    )
    assert quantized_checkpoint(planned("llama-3.1-405b")) is None
    # Llama 3.1 70B has no FP8 card of its own; Llama 3.3's is another model and never stands in
    assert quantized_checkpoint(planned("llama-3.1-70b", weight_dtype="fp8")) is None
