"""Edges of the plan's advice that mutation testing found untested (`benchmarks/mutation.py
--packages analysis`, seed 7): each expected value worked out by hand."""

from __future__ import annotations

import math
from types import SimpleNamespace
from typing import Any

import pytest

from capcliff.analysis.deployment import resolve
from capcliff.analysis.deployment_settings import DeploymentSettings
from capcliff.analysis.plan.feasibility import alternatives
from capcliff.analysis.plan.reuse_advice import _point
from capcliff.catalog.catalogs import get_hardware, get_model


def _result(tiers: list[int], queried: int, ttft_p99: float) -> Any:
    reuse = SimpleNamespace(
        tiers=[SimpleNamespace(hit_tokens=t) for t in tiers], queried_tokens=queried
    )
    return SimpleNamespace(
        reuse=reuse, prefix_cache_hit_rate=0.5, ttft=SimpleNamespace(p99=ttft_p99),
        output_tokens_per_s=1000.0, total_preemptions=3,
    )  # fmt: skip


def test_the_offload_hit_rate_is_every_tiers_loaded_tokens_over_those_looked_up() -> None:
    # 300 tokens from host DRAM and 100 from disk of 1,000 looked up: 400 / 1,000 = 0.4
    point = _point("offload 64 GiB", 64 << 30, _result([300, 100], 1000, 2.0))
    assert point.offload_hit_rate == pytest.approx(0.4)
    assert (point.ttft_p99_s, point.preemptions) == (2.0, 3)
    # nothing looked up: 0, not a division by zero; an endless TTFT p99 is reported as 0
    point = _point("caching on", 0, _result([], 0, math.inf))
    assert (point.offload_hit_rate, point.ttft_p99_s) == (0.0, 0.0)


def test_more_tensor_parallelism_is_offered_up_to_twice_the_gpus_within_one_domain() -> None:
    dep = resolve(get_model("llama-3.1-8b"), get_hardware("h200-sxm"), DeploymentSettings())
    # 2 GPUs: tp2 as given, then min(2 x 2, 8 behind one NVSwitch) = 4
    wider = [a for a in alternatives(dep, 2, []) if a.label.endswith("GPUs as tp4")]
    assert [(a.label, a.layout.tp) for a in wider] == [("4 GPUs as tp4", 4)]
    # 8 GPUs already fill the domain: min(16, 8) = 8 is not wider, so nothing is offered
    assert not [a for a in alternatives(dep, 8, []) if " GPUs as tp" in a.label]
