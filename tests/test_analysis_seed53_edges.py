"""Edges the seed-53 mutation sample (`benchmarks/mutation.py --packages analysis --seed 53`)
found untested. Every expected value is worked out by hand in the comments."""

from __future__ import annotations

import numpy as np
import pytest

from capcliff.analysis.evaluate.solver import SweepPoint
from capcliff.analysis.sweep.report import point_result
from capcliff.sim.config import KVCapacity, SimConfig
from capcliff.sim.simulate import simulate
from capcliff.sim.traffic.workload import Requests
from tests.simtools import constant_model

MS = 1e-3


def test_a_point_without_a_prefix_cache_reports_no_reuse() -> None:
    # One request, prompt 4 and output 5, 1 ms a step, no prefix caching: one prefill step and
    # 4 decode steps, 5 ms; nothing saved, nothing evicted, no offload tier.
    requests = Requests(
        input_tokens=np.array([4]), output_tokens=np.array([5]),
        max_output_tokens=np.array([5]), arrival_s=np.array([0.0]),
    )  # fmt: skip
    kv = KVCapacity(blocks=10, block_size=1)
    result = simulate(requests, constant_model(MS), kv, SimConfig())
    assert result.reuse is None
    point = point_result(SweepPoint.of(3, result))
    assert point.concurrency == 3
    assert point.makespan_s == pytest.approx(5 * MS)
    assert point.prefill_tokens_saved == 0
    assert point.cache_evicted_blocks == 0
    assert point.offload == []
    assert point.steady is None  # not an online point


def _fleet_line(
    monkeypatch: pytest.MonkeyPatch,
    *,
    offered: float | None = None,
    clients: int | None = None,
    sized: int | None = None,
    layout_gpus: int = 8,
    e2e: float = 4.0,
    think: float = 1.0,
) -> dict[str, object]:
    """plan.online._fleet_line with its helpers stubbed: a unit of 2 GPUs sustaining 3
    requests/s with a 4 s mean E2E and 1 s think time (unless given), headroom 0.2; what it
    hands `fleet_entry`."""
    from types import SimpleNamespace
    from typing import Any

    from capcliff.analysis.plan import online

    unit = SimpleNamespace(gpus=2, sustained_rps=3.0, e2e_mean_s=e2e)
    seen: dict[str, object] = {}

    def entry(hardware: object, unit: object, replicas: int, **kw: object) -> dict[str, object]:
        seen.update(kw, replicas=replicas)
        return seen

    monkeypatch.setattr(online, "mean_think_s", lambda workload: think)
    monkeypatch.setattr(online, "unit_of", lambda ev, think: unit)
    monkeypatch.setattr(online, "replicas_for", lambda *a, **kw: sized)
    monkeypatch.setattr(online, "price_of", lambda hardware, prices: 2.0)
    monkeypatch.setattr(online, "_mean_output", lambda workload: 100.0)
    monkeypatch.setattr(online, "fleet_entry", entry)
    monkeypatch.setattr(
        online, "band_of", lambda dep, hardware_id: SimpleNamespace(throughput=0.15)
    )
    workload = SimpleNamespace(offered_rps=lambda: offered, choice=SimpleNamespace(clients=clients))
    ctx: Any = SimpleNamespace(
        # an SLO stands in, so the no-load p99 copy (tests/test_fleet_no_load_p99s.py) is not
        # asked of these stubs
        workload=workload,
        options=SimpleNamespace(headroom=0.2, prices=None, slo=object()),
        dep=None,
    )
    ev: Any = SimpleNamespace(memory=SimpleNamespace(layout=SimpleNamespace(gpus=layout_gpus)))
    online._fleet_line(ctx, SimpleNamespace(id="h200-sxm"), ev, None)  # type: ignore[arg-type]
    return seen


def test_a_fleet_line_without_a_load_is_the_planned_deployment(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # no load: the layout's 8 GPUs are 8 // 2 = 4 units, serving 4 x 3 x (1 - 0.2) = 9.6/s
    seen = _fleet_line(monkeypatch)
    assert seen["replicas"] == 4
    assert seen["served_rps"] == pytest.approx(9.6)
    assert (seen["price"], seen["mean_output_tokens"]) == (2.0, 100.0)
    # a layout narrower than a unit still has one
    assert _fleet_line(monkeypatch, layout_gpus=1)["replicas"] == 1


def test_a_fleet_line_serves_the_load_it_was_sized_for(monkeypatch: pytest.MonkeyPatch) -> None:
    # a rate: the offered 5/s, on the replicas sized for it
    seen = _fleet_line(monkeypatch, offered=5.0, sized=3)
    assert (seen["replicas"], seen["served_rps"]) == (3, 5.0)
    # 30 users cycling every 4 + 1 s ask 6/s, and 3 replicas serve up to 9/s: 6
    assert _fleet_line(monkeypatch, clients=30, sized=3)["served_rps"] == pytest.approx(6.0)
    # 60 users ask 12/s, more than 9/s: 9
    assert _fleet_line(monkeypatch, clients=60, sized=3)["served_rps"] == pytest.approx(9.0)

    # a cycle of 0.25 + 0.5 = 0.75 s: 30 users ask 40/s, capped at 9
    short = _fleet_line(monkeypatch, clients=30, sized=3, e2e=0.25, think=0.5)
    assert short["served_rps"] == pytest.approx(9.0)
    # no cycle time at all (nothing measured): the replicas' rate less the headroom,
    # 3 x 3 x 0.8 = 7.2, not 30 / 0
    none = _fleet_line(monkeypatch, clients=30, sized=3, e2e=0.0, think=0.0)
    assert none["served_rps"] == pytest.approx(7.2)


def _capacity(
    cap: int, cliff: int | None, requests: int, preemptions: int, finished: int = 100
) -> object:
    from types import SimpleNamespace

    sustained = SimpleNamespace(requests=requests, rate_rps=2.5, preemptions=preemptions)
    # the cap's own point: 50 preemptions over `finished` requests, not thrashing; its KV
    # cache never filled (no past-cliff statement)
    point = SimpleNamespace(
        cap=cap, thrashing=False,
        result=SimpleNamespace(
            total_preemptions=50, finish_s=[0.0] * finished, first_saturation=None
        ),
    )  # fmt: skip
    return SimpleNamespace(
        simulated_cliff=cliff, analytic_cliff=1_200, sustained=sustained, points=[point], cap=cap
    )


def test_the_cliff_reason_counts_preemptions_per_request() -> None:
    from typing import Any

    from capcliff.analysis.plan.online_rows import _cliff_reason

    head = (
        "cliffs per replica: analytic p99 1,200 (every running request at the p99 length); "
        "burst {} (the cap at which a backlog, as after a restart or a burst of arrivals, first "
        "runs KV short); at 2.50 requests/s per replica in steady state: {} preemptions per "
        "request; "
    )
    below: Any = _capacity(64, None, 1, 3)
    # one request in the steady sample with 3 preemptions: 3 / 1 = 3.000 a request
    assert _cliff_reason(below) == head.format("-", "3.000") + "the cap is below the burst cliff"
    # none measured: divided by 1, not 0
    none: Any = _capacity(64, None, 0, 3)
    assert "3.000 preemptions per request" in _cliff_reason(none)
    # 4 requests, 3 preemptions: 0.750
    four: Any = _capacity(64, 80, 4, 3)
    assert "0.750 preemptions per request" in _cliff_reason(four)
    # at the cliff (cap 128, cliff 100): 50 preemptions over 100 requests at the cap is 0.50
    at: Any = _capacity(128, 100, 4, 3)
    said = _cliff_reason(at)
    assert said.startswith(head.format("100", "0.750"))
    assert "so with a backlog requests are preempted (0.50 per request)" in said
    assert "a cap below 100 rides it out" not in said  # it preempted at the planned rate too
    # exactly at the cliff counts as at it; no request finished: 50 / max(1, 0) = 50.00
    exactly: Any = _capacity(100, 100, 4, 3, finished=0)
    assert "the cap is at or past the burst cliff" in _cliff_reason(exactly)
    assert "(50.00 per request)" in _cliff_reason(exactly)
    safe: Any = _capacity(128, 100, 4, 0)
    assert "a cap below 100 rides it out" in _cliff_reason(safe)


def test_another_gpu_type_is_offered_at_the_widest_tp_one_node_holds() -> None:
    from capcliff.analysis.deployment import resolve
    from capcliff.analysis.deployment_settings import DeploymentSettings
    from capcliff.analysis.plan.feasibility import alternatives
    from capcliff.catalog.catalogs import get_hardware, get_model

    h200, gb200 = get_hardware("h200-sxm"), get_hardware("gb200")
    dep = resolve(get_model("llama-3.1-8b"), h200, DeploymentSettings())
    named = {a.label: a.layout.tp for a in alternatives(dep, 2, [h200, gb200])}
    # GB200: an NVLink domain of 72 GPUs but 4 to a node (tensor parallelism stays in a node):
    # min(72, 4) = tp4. The H200 itself is not offered as another type.
    assert named["gb200 as tp4"] == 4
    assert not any(label.startswith("h200-sxm as") for label in named)
    # on H200s (domain 8): 2 GPUs widest tp2, so 4 GPUs as tp4 = min(2 x 2, 8) is offered
    assert named["4 GPUs as tp4"] == 4
    # bf16 weights and KV: both FP8 options are offered, at the widest TP of the 2 GPUs
    assert named["FP8 weights (--weight-dtype fp8)"] == 2
    assert named["an FP8 KV cache (--kv-cache-dtype fp8)"] == 2
    # on 8 H200s, tp8 already spans the domain: min(16, 8) = 8 is not wider, nothing offered
    eight = [a.label for a in alternatives(dep, 8, [h200])]
    assert not any("GPUs as tp" in label for label in eight)


class _StepProbes:
    """Rate probes on a step function: a rate passes iff it is at most `limit` requests/s.
    Every probe is recorded; the sample size is the requests asked for."""

    def __init__(self, limit: float, seen: list[tuple[float, bool]] | None = None) -> None:
        from types import SimpleNamespace

        self.limit = limit
        self.points = [
            SimpleNamespace(rate_rps=r, meets=ok, requests=100) for r, ok in (seen or [])
        ]
        self.probed: list[float] = []

    def size(self, n: int, rate: float) -> int:
        return n

    def probe(self, rate: float, n: int, cap: int) -> object:
        from types import SimpleNamespace

        self.probed.append(rate)
        point = SimpleNamespace(rate_rps=rate, meets=rate <= self.limit, requests=n)
        self.points.append(point)
        return point


def _gallop(probes: _StepProbes, top: float) -> tuple[list[float], float, float | None]:
    from types import SimpleNamespace
    from typing import Any

    from capcliff.analysis.evaluate.rate_search import _upwards

    stub: Any = probes
    good: Any = SimpleNamespace(rate_rps=1.0, meets=True, requests=100)
    passed, failed = _upwards(stub, 8, good, 100, top, 1.0)
    return probes.probed, passed.rate_rps, None if failed is None else failed.rate_rps


def test_the_upward_gallop_doubles_its_step_from_the_last_pass() -> None:
    # the top rate (20) first; where it fails, from 1/s with step 1: limit 7.3: 2 (pass),
    # +2 = 4 (pass), +4 = 8 (fail): bracket [4, 8]
    assert _gallop(_StepProbes(7.3), top=20.0) == ([20.0, 2.0, 4.0, 8.0], 4.0, 8.0)
    # the top rate passes: nothing else is probed
    assert _gallop(_StepProbes(100.0), top=20.0) == ([20.0], 20.0, None)
    # exactly at the limit passes: limit 4: 20 fails, 2, 4 pass, 8 fails
    assert _gallop(_StepProbes(4.0), top=20.0) == ([20.0, 2.0, 4.0, 8.0], 4.0, 8.0)
    # limit 19: 20 fails, 2, 4, 8, 16 pass, then min(20, 32) = 20 is the top, already seen
    # failing (not probed again): bracket [16, 20]
    assert _gallop(_StepProbes(19.0), top=20.0) == ([20.0, 2.0, 4.0, 8.0, 16.0], 16.0, 20.0)


def test_the_gallop_tries_the_lowest_rate_seen_failing_first() -> None:
    # failures already seen at 6, 9 and 30 (30 is past the top, 20): 6 is tried first; it fails
    # again on the step function (limit 5), so the bracket is [1, 6] at once
    seen = [(6.0, False), (9.0, False), (30.0, False), (3.0, True)]
    assert _gallop(_StepProbes(5.0, seen), top=20.0) == ([6.0], 1.0, 6.0)
    # limit 7: 6 (recorded failing, at another cap) passes when probed, the top (20) fails;
    # from 6: 7 passes, 7 + 2 = 9 fails
    assert _gallop(_StepProbes(7.0, seen), top=20.0) == ([6.0, 20.0, 7.0, 9.0], 7.0, 9.0)
    # failures recorded exactly at the passing rate (1) or at the top (20) are not inside the
    # bracket: ignored, the top is probed as with none (and passes here)
    edges = [(1.0, False), (20.0, False)]
    assert _gallop(_StepProbes(100.0, edges), top=20.0) == ([20.0], 20.0, None)
