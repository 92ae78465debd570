"""SGLang launches a step that prefills without CUDA graphs: such a step lasts at least one
eagerly launched pass (sgl-project/sglang PR #12160: DeepSeek-V3, a one-token extend took
82.64 ms eager against 23.10 ms graphed)."""

from __future__ import annotations

import pytest

from capcliff.catalog.catalogs import get_hardware
from capcliff.catalog.layout import Layout
from capcliff.memory.budget import EngineName
from capcliff.memory.weights import WeightScheme
from capcliff.perf.profiles import engine_profile, extend_eager_pass_s
from capcliff.perf.step_time import StepTimeModel, step_time_model
from capcliff.units import KVDType
from tests.conftest import arch_of

PR_12160_EAGER_S = 82.64e-3  # the log line "forward cost-82.64 ms", one new token


def _r1(engine: EngineName, fitted: dict[str, float] | None = None) -> StepTimeModel:
    arch = arch_of("deepseek-r1")
    return step_time_model(
        arch, get_hardware("h200-sxm"), Layout(tp=8), scheme=WeightScheme.as_shipped(arch),
        kv_dtype=KVDType.BF16, profile=engine_profile(engine), fitted=fitted,
    )  # fmt: skip


def test_the_deepseek_eager_pass_is_the_measured_one() -> None:
    profile, arch = engine_profile(EngineName.SGLANG), arch_of("deepseek-r1")
    assert extend_eager_pass_s(profile, arch, 61, 8) == pytest.approx(PR_12160_EAGER_S)


def test_a_dense_8b_pass_scales_by_layers_and_kernels() -> None:
    # 32 layers x 10 kernels (bf16, TP 1) x 82.64 ms / (61 x 33) = 13.14 ms
    profile, arch = engine_profile(EngineName.SGLANG), arch_of("llama-3.1-8b")
    assert extend_eager_pass_s(profile, arch, 32, 1) == pytest.approx(13.137e-3, rel=1e-3)


def test_only_sglang_launches_prefills_eagerly() -> None:
    arch = arch_of("llama-3.1-8b")
    for engine in (EngineName.VLLM, EngineName.TRTLLM, EngineName.VLLM_V0):
        assert extend_eager_pass_s(engine_profile(engine), arch, 32, 1) == 0.0


def test_a_small_prefill_step_lasts_the_eager_pass_and_a_decode_step_does_not() -> None:
    sglang = _r1(EngineName.SGLANG)
    # 2 tokens of one sequence: a one-token extend after a cached token, as in the PR's log
    assert sglang.step_time_s(2, 1, 2, 3) == pytest.approx(PR_12160_EAGER_S, rel=1e-9)
    decode = sglang.step_time_s(1, 1, 1_000, 1_000)
    assert decode < 0.05  # a graphed decode step of one sequence: ~20 ms, not the eager pass
    assert decode == _r1(EngineName.SGLANG).step_time_s(1, 1, 1_000, 1_000)


def test_a_long_prefill_outlasts_the_floor_and_is_unchanged() -> None:
    sglang = _r1(EngineName.SGLANG)
    unfloored = sglang.__class__(**{**sglang.__dict__, "extend_floor_s": 0.0})
    tokens = 16_384
    long = sglang.step_time_s(tokens, 1, tokens, tokens * (tokens + 1) // 2)
    assert long > PR_12160_EAGER_S
    assert long == unfloored.step_time_s(tokens, 1, tokens, tokens * (tokens + 1) // 2)


def test_a_calibration_replaces_the_floor() -> None:
    # fixed_s and scale are fitted linearly: a floor would not be (as the DP eager floor)
    assert _r1(EngineName.SGLANG, fitted={"fixed_s": 0.001, "scale": 1.0}).extend_floor_s == 0.0
