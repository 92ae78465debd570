"""A plan's JSON says which caps thrash and the sample each cap's rate came from: a thrashing
cap's rate is its short probe's, never chosen, and it can read far from what `sweep` serves at
that cap (qwen3-8b vllm tp2 at 224: 0.861 against 0.954; 2026-12-07, issue 23, branch
h-consist)."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from capcliff.analysis.deployment import resolve
from capcliff.analysis.deployment_settings import settings_of
from capcliff.analysis.evaluate.capacity import (
    REFERENCE_REQUESTS,
    THRASH_PREEMPTIONS,
    Replica,
    saturation_point,
)
from capcliff.analysis.evaluate.online_load import OnlineWorkload
from capcliff.analysis.evaluate.replica_models import replica_models
from capcliff.analysis.plan.online_rows import _capacity
from capcliff.analysis.workloads import WorkloadChoice
from capcliff.catalog.catalogs import get_hardware, get_model
from capcliff.catalog.layout import parse_layout


def test_a_thrashing_cap_is_marked_with_its_probes_sample() -> None:
    # `plan qwen3-8b --gpus 2 --layout tp2 --workload reasoning`'s top cap, 224, lies past the
    # grid's base, so it is first run on a probe of 224 requests (PROBE_PER_CAP x cap, above the
    # 200-request least) from the stationary running set; there it preempts more than 0.5 times
    # a request, so that probe is the point
    dep = resolve(get_model("qwen3-8b"), get_hardware("h200-sxm"), settings_of({"engine": "vllm"}))
    workload = OnlineWorkload(WorkloadChoice(num_requests=40, preset_name="reasoning"), 0)
    length = dep.context_length(workload.reference(REFERENCE_REQUESTS), bound=None)
    capacity, steps = replica_models(dep, dep.memory(parse_layout("tp2"), length))
    replica = Replica(steps, capacity, dep.sim_config(length))
    point = saturation_point(replica, workload, 224, 40, probe=True)
    ran = len(point.result.finish_s)
    assert point.result.total_preemptions > THRASH_PREEMPTIONS * ran
    caps = SimpleNamespace(
        cap=224, at_sustained=None, points=[point], probes=[], meets_slo=True,
        best_ttft_p99_s=None, best_tpot_p99_s=None, settled=False, simulated_requests=ran,
    )  # fmt: skip
    ev: Any = SimpleNamespace(
        capacity=caps, memory=SimpleNamespace(layout=SimpleNamespace(dp=1)), refined=False,
        saturation_rps=point.state.throughput_rps, sustained_rps=point.state.throughput_rps,
    )  # fmt: skip
    (row,) = _capacity(ev, within_slo=False).caps
    assert (row.max_num_seqs, row.thrashing, row.requests) == (224, True, 224)
