"""Release-specific step-time terms: SGLang < 0.4.8 DP attention (overlap off, idle ranks eager)."""

from __future__ import annotations

import dataclasses

import pytest

from capcliff.analysis.deployment import settings_of
from capcliff.catalog.catalogs import get_hardware, get_model
from capcliff.catalog.layout import parse_layout
from capcliff.errors import InputError
from capcliff.memory.budget import EngineName
from capcliff.memory.weights import WeightScheme
from capcliff.perf.attention_dp import MoEGroup
from capcliff.perf.communication import ExchangeCost
from capcliff.perf.profiles import (
    PROFILES,
    dp_eager_pass_s,
    dp_host_overhead_s,
    engine_profile,
    parse_version,
    profile_label,
)
from capcliff.perf.step_time import StepTimeModel, step_time_model
from capcliff.sim.config import KVCapacity, SimConfig
from capcliff.sim.simulate import simulate
from capcliff.units import KVDType
from tests.conftest import arch_of
from tests.simtools import fixed_batch, toy_model

OLD = "0.4.3.post2"  # the release of the dstack SGLang DP-attention rows (B02-B06)


def test_releases_parse_from_the_ways_benchmarks_name_them() -> None:
    assert parse_version("sglang 0.4.3.post2") == (0, 4, 3)
    assert parse_version("lmsysorg/sglang:v0.5.12-cu130") == (0, 5, 12)
    assert parse_version("0.7") == (0, 7, 0)
    with pytest.raises(InputError, match="engine_version"):
        parse_version("latest")


def test_sglang_before_0_4_8_gets_the_dp_attention_profile() -> None:
    old = engine_profile(EngineName.SGLANG, OLD)
    assert old.dp_eager_op_s == pytest.approx(15e-6)
    assert old.dp_attention_host_overhead_s == pytest.approx(2e-3)
    # PR #7269 landed for 0.4.8: that release and later, and no release given, get the latest
    for version in ("0.4.8", "0.5.12", None):
        assert engine_profile(EngineName.SGLANG, version) is PROFILES[EngineName.SGLANG]
    # engines with one modelled profile accept any release
    assert engine_profile(EngineName.VLLM_V0, "0.7.4") is PROFILES[EngineName.VLLM_V0]
    assert "0.4.0 - 0.4.7" in profile_label(EngineName.SGLANG, {}, OLD)


def test_the_release_is_a_setting_with_a_one_line_error() -> None:
    assert settings_of({"engine_version": "0.4.3"}).engine_version == "0.4.3"
    with pytest.raises(InputError, match=r"^--engine-version: .*release like 0\.4\.3"):
        settings_of({"engine_version": "latest"})


def test_an_eager_r1_pass_under_dp_attention() -> None:
    # 61 layers x 33 kernels (10 + gather and post-MoE all-reduce 2 + MLA 6 + MoE 7 + FP8 8)
    # x 15 us = 2,013 x 15 us = 30.195 ms
    old = engine_profile(EngineName.SGLANG, OLD)
    r1 = arch_of("deepseek-r1")
    assert dp_eager_pass_s(old, r1, parse_layout("dpa8")) == pytest.approx(30.195e-3)
    # without attention DP, or in a release that graphs idle ranks, no floor
    assert dp_eager_pass_s(old, r1, parse_layout("tp8")) == 0.0
    assert dp_eager_pass_s(engine_profile(EngineName.SGLANG), r1, parse_layout("dpa8")) == 0.0


def test_the_overlap_scheduler_is_off_only_under_dp_attention() -> None:
    old = engine_profile(EngineName.SGLANG, OLD)
    assert dp_host_overhead_s(old, parse_layout("dpa8")) == pytest.approx(2e-3)
    assert dp_host_overhead_s(old, parse_layout("tp8")) == 0.0


def test_the_r1_step_model_carries_the_floor_unless_calibrated() -> None:
    model = get_model("deepseek-r1")
    kwargs = {"scheme": WeightScheme.as_shipped(model.arch), "kv_dtype": KVDType.BF16}
    hw, dpa8 = get_hardware("h200-sxm"), parse_layout("dpa8")
    old = engine_profile(EngineName.SGLANG, OLD)
    assert step_time_model(
        model.arch, hw, dpa8, profile=old, **kwargs
    ).eager_floor_s == pytest.approx(30.195e-3)
    fitted = step_time_model(model.arch, hw, dpa8, profile=old, fitted={"scale": 1.5}, **kwargs)
    assert fitted.eager_floor_s == 0.0


def _floored(floor_s: float, ranks: int) -> StepTimeModel:
    group = MoEGroup(
        ranks=ranks,
        expert_bytes=1e6,
        expert_choice_fraction=0.25,
        expert_flops_per_token=1e6,
        moe_layers=1,
        exchange=ExchangeCost(1e-6, 1e-9),
    )
    return dataclasses.replace(toy_model(), moe=group, eager_floor_s=floor_s)


def test_a_lockstep_step_with_an_idle_or_prefilling_rank_lasts_the_eager_pass() -> None:
    model = _floored(1.0, ranks=2)
    decode = (1, 1, 100, 100)  # toy step ~ 2 ms: far under the 1 s floor
    assert model.lockstep_step_time_s([decode], ranks=2) == 1.0  # one rank idle
    assert model.lockstep_step_time_s([decode, decode], ranks=2) < 0.01  # all decode: graphs
    assert model.lockstep_step_time_s([decode, (40, 1, 40, 820)], ranks=2) == 1.0  # a prefill


def test_one_request_on_two_ranks_pays_the_floor_every_step() -> None:
    # one request (40-token prompt, 30 output tokens): 1 prefill step + 29 decode steps, rank 1
    # idle throughout, every step at the 1 s floor: 30 s (both the exact and fast-forward paths)
    model = _floored(1.0, ranks=2)
    result = simulate(fixed_batch(1, prompt=40, output=30), model, *_roomy(), dp=2)
    assert result.makespan_s == pytest.approx(30.0)
    # two requests, one per rank: only the joint prefill step is eager (1 s), decode is graphed
    both = simulate(fixed_batch(2, prompt=40, output=30), model, *_roomy(), dp=2)
    assert 1.0 < both.makespan_s < 2.0


def _roomy() -> tuple[KVCapacity, SimConfig]:
    """A KV cache and batch limits these workloads never reach."""
    return KVCapacity(blocks=1000, block_size=16), SimConfig(max_num_batched_tokens=1024)
