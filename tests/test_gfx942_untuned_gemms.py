"""SGLang 0.5.6 - 0.5.9 on gfx942 (MI300X, MI325X): DeepSeek's block-FP8 MLA projections run aiter's
Triton GEMM with only the generic gfx942 config, priced from ROCm/aiter PR #1930's measurement."""

from __future__ import annotations

import pytest

from capcliff.catalog.catalogs import get_hardware
from capcliff.catalog.layout import parse_layout
from capcliff.memory.budget import EngineName
from capcliff.memory.weights import WeightScheme
from capcliff.perf.profiles import engine_profile
from capcliff.perf.step_time import StepTimeModel, step_time_model
from capcliff.units import KVDType
from tests.conftest import arch_of

# ROCm/aiter PR #1930 (8 x MI300X, SGLang, DeepSeek-R1, 1k/1k, 4 clients): tuning the gfx942
# Triton config of (N, K) = (2112, 7168) took median TPOT from 28.76 to 22.05 ms, 6.71 ms over
# R1's 61 layers: 6.71 / 61 = 0.1100 ms per layer.
PER_LAYER_S = 6.71e-3 / 61


def _r1_steps(gpu: str, release: str) -> StepTimeModel:
    arch = arch_of("deepseek-r1")
    return step_time_model(
        arch, get_hardware(gpu), parse_layout("tp8"), scheme=WeightScheme.as_shipped(arch),
        kv_dtype=KVDType.FP8, profile=engine_profile(EngineName.SGLANG, release),
    )  # fmt: skip


@pytest.mark.parametrize("release", ["0.5.6", "0.5.9", "v0.5.9-rocm700-mi30x"])
def test_releases_with_untuned_gfx942_configs_carry_the_measured_cost(release: str) -> None:
    profile = engine_profile(EngineName.SGLANG, release)
    assert profile.gfx942_mla_gemm_extra_s == pytest.approx(PER_LAYER_S, rel=1e-9)
    assert "0.5.6 - 0.5.9" in profile.label


@pytest.mark.parametrize("release", ["0.4.8", "0.5.5.post3", "0.5.10", "0.5.12", None])
def test_ck_and_tuned_releases_carry_none(release: str | None) -> None:
    # 0.5.5.post3 imports aiter's CK gemm_a8w8_blockscale; from 0.5.10 the image's aiter has the
    # gfx942 configs (aiter PR #2024, tagged in v0.1.11)
    assert engine_profile(EngineName.SGLANG, release).gfx942_mla_gemm_extra_s == 0.0


@pytest.mark.parametrize("gpu", ["mi300x", "mi325x"])
def test_an_r1_decode_step_on_gfx942_is_61_layers_of_it_longer(gpu: str) -> None:
    old, new = _r1_steps(gpu, "0.5.9"), _r1_steps(gpu, "0.5.12")
    # 4 sequences decoding, 1,000 tokens of context each: 61 x 0.1100 ms = 6.71 ms more
    extra = old.step_time_s(4, 4, 4_000, 4_000) - new.step_time_s(4, 4, 4_000, 4_000)
    assert extra == pytest.approx(6.71e-3, rel=1e-6)
    line_old, line_new = old.decode_line(4, 4_000), new.decode_line(4, 4_000)
    assert line_old.step_s(0) - line_new.step_s(0) == pytest.approx(6.71e-3, rel=1e-6)


@pytest.mark.parametrize("gpu", ["mi355x", "h200-sxm"])
def test_other_gpus_price_0_5_9_as_0_5_12(gpu: str) -> None:
    old, new = _r1_steps(gpu, "0.5.9"), _r1_steps(gpu, "0.5.12")
    assert old.step_time_s(4, 4, 4_000, 4_000) == new.step_time_s(4, 4, 4_000, 4_000)


def test_a_dense_bf16_model_on_gfx942_is_untouched() -> None:
    arch = arch_of("llama-3.1-8b")
    steps = step_time_model(
        arch, get_hardware("mi300x"), parse_layout("tp1"), scheme=WeightScheme.as_shipped(arch),
        kv_dtype=KVDType.BF16, profile=engine_profile(EngineName.SGLANG, "0.5.9"),
    )  # fmt: skip
    assert steps.gemm_extra_s == 0.0


def test_the_term_can_be_overridden_to_zero() -> None:
    profile = engine_profile(EngineName.SGLANG, "0.5.9")
    assert profile.with_overrides({"gfx942_mla_gemm_extra_s": 0.0}).gfx942_mla_gemm_extra_s == 0.0
