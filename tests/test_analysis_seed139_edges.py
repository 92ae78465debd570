"""Edges the seed-139 mutation sample (`benchmarks/mutation.py --packages analysis --seed 139`)
found untested. Every expected value is worked out by hand in the comments."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any, cast

import numpy as np
import pytest

from capcliff.analysis.deployment_settings import settings_of
from capcliff.analysis.evaluate.capacity import Replica, ReplicaCapacity
from capcliff.analysis.evaluate.layout_capacity import LayoutEval
from capcliff.analysis.evaluate.online_load import OnlineWorkload
from capcliff.analysis.evaluate.rate_search import (
    RatePoint,
    RateProbes,
    highest_rate,
    rate_resolution,
)
from capcliff.analysis.evaluate.solver import Slo
from capcliff.analysis.evaluate.steady_state import _queue_growing
from capcliff.analysis.plan import online, reuse_advice
from capcliff.analysis.plan.feasibility import Alternative, LightLatency, what_would_meet
from capcliff.analysis.plan.group_note import group_note
from capcliff.analysis.plan.online_reuse import mean_think_s
from capcliff.analysis.plan.types import FleetEntry
from capcliff.analysis.serve_command import parse_serve_command
from capcliff.analysis.sweep.failure import past_cliff
from capcliff.analysis.workloads import WorkloadChoice
from capcliff.catalog.layout import Layout
from capcliff.errors import InputError
from capcliff.memory.layout_memory import LayoutMemory
from capcliff.sim.config import SimConfig
from capcliff.sim.result import SimResult
from capcliff.sim.reuse.prefix_reuse import ReuseSummary


def _fleet(layout: str, replicas: int, tp: int, usd_per_m: float) -> FleetEntry:
    # $4/GPU-hour; the per-token price is given directly (the line only compares it)
    return FleetEntry(
        gpu="h200", layout=layout, max_num_seqs=64, replicas=replicas, gpus=replicas * tp,
        nodes=1, usd_per_gpu_hour=4.0, usd_per_hour=4.0 * replicas * tp,
        usd_per_million_output_tokens=usd_per_m, sustained_rps_per_replica=2.5,
        ttft_p99_s=1.0, tpot_p99_s=0.05, meets_slo=True,
    )  # fmt: skip


def _same_search(
    monkeypatch: pytest.MonkeyPatch, rate: float | None, clients: int | None, alt: FleetEntry
) -> tuple[FleetEntry, list[str], int]:
    searched: list[Any] = []

    def type_fleet(job: Any) -> tuple[FleetEntry, str]:
        searched.append(job)
        return alt, ""

    monkeypatch.setattr(online, "_type_fleet", type_fleet)
    workload = SimpleNamespace(
        offered_rps=lambda: rate, choice=SimpleNamespace(clients=clients, rate_per_s=rate)
    )
    ctx = online._Context(
        dep=SimpleNamespace(hardware="h200"), max_model_len=8192, workload=workload,  # type: ignore[arg-type]
        options=online.OnlineOptions(jobs=2),
    )  # fmt: skip
    # the recommended layout: 2 copies of pp8 (16 GPUs) at $3.00 per million output tokens
    copies = _fleet("pp8", 2, 8, 3.0)
    entry, notes = online._same_search(ctx, copies, 8)
    return entry, notes, len(searched)


@pytest.mark.parametrize(("rate", "clients"), [(15.0, None), (None, 64)])
def test_the_planned_type_takes_the_cheaper_replica_search_under_a_rate_or_users(
    monkeypatch: pytest.MonkeyPatch, rate: float | None, clients: int | None
) -> None:
    # 6 x tp2 (12 GPUs) at $2.40 < 2 x pp8 at $3.00: the fleet line is the replica search's,
    # whichever way the load is given (a rate alone, or users alone)
    alt = _fleet("tp2", 6, 2, 2.4)
    entry, notes, searches = _same_search(monkeypatch, rate, clients, alt)
    assert searches == 1
    assert entry == alt
    assert len(notes) == 1
    assert "6 x tp2 (12 GPUs) carries the load for less than 2 x pp8 (16 GPUs)" in notes[0]


def test_the_planned_type_keeps_its_copies_when_they_are_cheaper_or_there_is_no_load(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    dearer = _fleet("tp2", 6, 2, 3.0)  # as dear as the copies: not cheaper, so not taken
    entry, notes, searches = _same_search(monkeypatch, 15.0, None, dearer)
    assert (entry.layout, notes, searches) == ("pp8", [], 1)
    # no load (neither a rate nor users): nothing to size a fleet for, no search
    cheaper = _fleet("tp2", 6, 2, 2.4)
    entry, notes, searches = _same_search(monkeypatch, None, None, cheaper)
    assert (entry.layout, notes, searches) == ("pp8", [], 0)


@pytest.mark.parametrize(
    ("values", "expected"),
    [
        # the validator's message already quotes the value: it is not repeated with ", got"
        ({"policy": "fifo-x"}, "--policy: unknown 'fifo-x'; known: vllm, vllm-first-chunk, "
         "vllm-v0, sglang, trtllm-no-evict, trtllm-max-util, kv-aware"),
        ({"kv_cache_dtype": "fp3"}, "--kv-cache-dtype: unknown KV cache dtype 'fp3'; valid: "
         "bf16, fp16, fp8"),
        # pydantic's own message does not: ", got 0" names it
        ({"max_num_seqs": 0}, "--max-num-seqs: Input should be greater than or equal to 1, got 0"),
    ],
)  # fmt: skip
def test_a_refused_setting_quotes_its_value_once(values: dict[str, Any], expected: str) -> None:
    with pytest.raises(InputError) as caught:
        settings_of(values)
    assert str(caught.value) == expected


def _sim(reuse: Any) -> Any:
    return SimpleNamespace(
        reuse=reuse, prefix_cache_hit_rate=None if reuse is None else 0.5,
        ttft=SimpleNamespace(p99=1.5), output_tokens_per_s=900.0, total_preemptions=0,
    )  # fmt: skip


def test_a_run_without_caching_shows_an_offload_hit_rate_of_zero_not_minus_zero() -> None:
    # caching off: no reuse summary, nothing looked up, nothing loaded: 0 %, printed "0%" (a
    # -0.0 would print "-0%" in the plan's reuse lines and "-0.0" in its JSON)
    off = reuse_advice._point("caching off", 0, _sim(None))
    assert f"{off.offload_hit_rate:.0%}" == "0%"
    assert '"offload_hit_rate":0.0' in off.model_dump_json()
    # with a summary: 250 + 50 tokens loaded from the tiers of 1,000 looked up = 30 %
    tiers = (SimpleNamespace(hit_tokens=250), SimpleNamespace(hit_tokens=50))
    on = reuse_advice._point(
        "offload 64 GiB", 1, _sim(SimpleNamespace(tiers=tiers, queried_tokens=1000))
    )
    assert on.offload_hit_rate == pytest.approx(0.3)


def test_a_session_sample_of_n_requests_holds_n_and_never_none() -> None:
    # a sample of n >= 1 requests of sessions holds n; one of 0 holds one, as a single-turn
    # backlog of 0 does (a workload always has a request to size from); at a rate, with users
    # or as a backlog alike
    single = OnlineWorkload(WorkloadChoice(num_requests=1, preset_name="chat"), 0)
    assert len(single.backlog(0)) == 1
    chat = OnlineWorkload(WorkloadChoice(num_requests=1, preset_name="multiturn-chat"), 0)
    for n, size in [(0, 1), (1, 1), (2, 2), (3, 3)]:
        assert len(chat.backlog(n)) == size
        assert len(chat.at_rate(n, 1.0)) == size
        assert len(chat.with_clients(n, 4)) == size


class _PassesUpTo(RateProbes):
    """Probes that meet the SLO iff the rate is at most `threshold` (requests/s)."""

    def __init__(self, threshold: float) -> None:
        super().__init__(SimConfig(), Slo(ttft_s=1.0, tpot_s=1.0), None, None, 1.0, [])  # type: ignore[arg-type]
        self.threshold = threshold

    def probe(self, rate: float, n: int, cap: int) -> RatePoint:
        # no margin to interpolate by (TPOT p99 at the limit whatever the rate): pure bisection
        state = cast(Any, SimpleNamespace(saturated=False, tpot_p99_s=1.0, ttft_p99_s=0.0))
        point = RatePoint(cap, rate, state, rate <= self.threshold, n)
        self.points.append(point)
        return point


def test_the_rate_resolution_is_the_final_bracket_of_five_bisections() -> None:
    # saturation 10/s: the light load 0.5/s passes, the top 9.5/s fails; bisecting [0.5, 9.5]
    # around 6.2/s: 5.0 pass, 7.25 fail, 6.125 pass, 6.6875 fail, 6.40625 fail. The last
    # bracket [6.125, 6.40625] is 9/32 = 0.28125 wide: (9.5 - 0.5) / 2^5
    probes = _PassesUpTo(6.2)
    found, _ = highest_rate(probes, 8, 10.0, 1000)
    assert [p.rate_rps for p in probes.points] == [0.5, 9.5, 5.0, 7.25, 6.125, 6.6875, 6.40625]
    assert found is not None and found.rate_rps == 6.125
    assert rate_resolution(10.0) == pytest.approx(6.40625 - 6.125) == pytest.approx(9 / 32)


def test_the_cache_lost_past_the_cliff_counts_the_lookups_after_it_only() -> None:
    # lookups binned by the end of each second: 100 tokens in each of (0,1], (1,2], (2,3], (3,4],
    # hit 80 % before the cliff at t = 2 s and 20 % after. The bin ending exactly at the cliff
    # is before it (as hit_rate_between counts it), so 200 tokens are looked up after it:
    # lost = (0.8 - 0.2) x 200 = 120 of 1,000 tokens computed, a 12 % share (not 0.6 x 300)
    reuse = ReuseSummary(
        hit_rate=0.5, queried_tokens=400, prefill_tokens_saved=200, evicted_blocks=0,
        time_s=np.array([1.0, 2.0, 3.0, 4.0]), hit_rate_series=np.array([0.8, 0.8, 0.2, 0.2]),
        queried_series=np.array([100.0, 100.0, 100.0, 100.0]),
    )  # fmt: skip
    series = SimpleNamespace(time_s=np.array([0.0, 4.0]), waiting=np.array([1.0, 0.0]))
    run = SimpleNamespace(
        first_saturation=(0, 2.0), e2e_s=np.ones(4), series=series, makespan_s=4.0,
        requests_per_s=1.0, scheduled_tokens=1_000, reuse=reuse, total_preemptions=0,
        blocked_s=0.0,
    )  # fmt: skip
    found = past_cliff(cast(SimResult, run))
    assert found is not None
    assert (found.hit_rate_before_cliff, found.hit_rate_after_cliff) == pytest.approx((0.8, 0.2))
    assert found.cache_loss_share == pytest.approx(0.12)
    assert (found.recompute_share, found.dominant) == (0.0, "prefix-cache loss")


def _group(per_replica_rps: float, alone_rps: float) -> LayoutEval:
    memory = cast(LayoutMemory, SimpleNamespace(layout=Layout(dp=2, tp=2)))
    replica = cast(Replica, SimpleNamespace(steps=SimpleNamespace(moe=None)))  # dense: a router
    capacity = cast(ReplicaCapacity, SimpleNamespace(sustained_rps=per_replica_rps))
    alone = cast(ReplicaCapacity, SimpleNamespace(sustained_rps=alone_rps))
    return LayoutEval(memory, replica, capacity, refined=True, alone=alone)


def test_a_group_is_compared_with_its_replicas_priced_alone_times_their_count() -> None:
    # one replica alone: 3/s, so two priced alone: 6/s. The group's 2 x 2.5 = 5/s is under
    # 0.97 x 6 = 5.82: noted; 2 x 2.95 = 5.9/s is within 3 % of 6: not noted
    (note,) = group_note(_group(2.5, 3.0))
    assert note.startswith("dp2-tp2: its 2 replicas share one router;")
    assert (
        "they sustain 5 requests/s within the target, where one replica priced alone gives 6"
        in note
    )
    assert group_note(_group(2.95, 3.0)) == []


def test_an_open_loop_queue_grows_when_the_last_quarter_waits_twice_the_first_plus_a_second() -> (
    None
):
    # 8 requests: the first quarter (2) waits 1 s each. The rule: unbounded when the last
    # quarter's mean exceeds 2 x 1 s + 1 s = 3 s. 2.9 s is not (it would be against 1 x 1 s + 1 s)
    assert not _queue_growing(np.array([1.0, 1.0, 2.0, 2.0, 2.5, 2.5, 2.9, 2.9]))
    assert _queue_growing(np.array([1.0, 1.0, 2.0, 2.0, 2.5, 2.5, 3.1, 3.1]))
    # from no wait at all, the margin alone: 0.9 s is not unbounded, 1.1 s is
    assert not _queue_growing(np.array([0.0, 0.0, 0.5, 0.5, 0.7, 0.7, 0.9, 0.9]))
    assert _queue_growing(np.array([0.0, 0.0, 0.5, 0.5, 0.7, 0.7, 1.1, 1.1]))


def _light(label: str, ttft_s: float | None, tpot_s: float | None) -> LightLatency:
    return LightLatency(cast(Alternative, SimpleNamespace(label=label)), ttft_s, tpot_s)


def test_the_alternatives_that_meet_the_target_at_light_load_are_named() -> None:
    # target TTFT p99 <= 1 s, TPOT p99 <= 50 ms. "fp8": 0.5 s, 50 ms (at the limit) meets it;
    # "tp4": 0.5 s, 100 ms is 2x over; "h100": 3 s, 20 ms is 3x over; "int4" does not fit
    slo = Slo(ttft_s=1.0, tpot_s=0.05)
    fp8, tp4 = _light("fp8", 0.5, 0.05), _light("tp4", 0.5, 0.1)
    h100, int4 = _light("h100", 3.0, 0.02), _light("int4", None, None)
    assert [t.meets(slo) for t in (fp8, tp4, h100, int4)] == [True, False, False, False]

    def name(t: LightLatency) -> str:
        return t.alternative.label

    assert what_would_meet(slo, [tp4, fp8, int4], name) == ["fp8: meets it at light load"]
    assert what_would_meet(slo, [h100, int4, tp4], name) == [
        "nothing tried meets it even with one user; closest:",
        "tp4: still 2.0x over the limit",
        "h100: still 3.0x over the limit",
    ]


def test_sessions_at_a_rate_think_between_turns_and_single_requests_do_not() -> None:
    # multi-turn chat: 2.54 turns a session on average, 10 s of (exponential) think time before
    # every turn but the first, so (2.54 - 1) / 2.54 of the requests wait 10 s on average:
    # 10 x 0.606 = 6.06 s a request (within the sampling noise of the reference sample)
    chat = OnlineWorkload(WorkloadChoice(num_requests=100, preset_name="multiturn-chat"), 0)
    spec = chat.choice.session_spec()
    assert (spec.mean_turns, spec.think_time_s) == (2.54, 10.0)
    assert mean_think_s(chat) == pytest.approx(10.0 * (2.54 - 1) / 2.54, rel=0.15)
    # single requests have no turns to think between
    single = OnlineWorkload(WorkloadChoice(num_requests=100, preset_name="chat"), 0)
    assert mean_think_s(single) == 0.0


@pytest.mark.parametrize("text", ["python -m", "python3 -m"])
def test_a_python_module_line_without_the_module_is_refused_in_one_line(text: str) -> None:
    # `python -m` names no module, so no engine: the one-line refusal, not an IndexError
    with pytest.raises(InputError, match=f"serve_command: cannot tell the engine from '{text}'"):
        parse_serve_command(text)
