"""SGLang's aiter MLA decode on AMD GPUs: each decode layer takes the op's measured fixed time
(ROCm/aiter PR #2039, at a 21-token context) and the graph node of its reduce kernel."""

from __future__ import annotations

import dataclasses

import pytest

from capcliff.catalog.catalogs import get_hardware
from capcliff.catalog.layout import parse_layout
from capcliff.memory.budget import EngineName
from capcliff.memory.weights import WeightScheme
from capcliff.perf.efficiency import aiter_mla_decode_s, profile_efficiency
from capcliff.perf.profiles import EngineProfile, engine_profile
from capcliff.perf.step_time import step_time_model
from capcliff.units import KVDType
from tests.conftest import arch_of

# ROCm/aiter PR #2039, "ASM (us)" at batch 1 and a 21-token context: 15.491 us on MI300 (MI325X
# takes it: the same gfx942 die), 12.106 us on MI355. The reduce kernel's node on AMD: 1 us +
# HIP's 1.53593 us per node - CUDA's 0.58 = 1.95593 us (tests/test_amd_terms.py).
PER_LAYER_US = {"mi300x": 15.491 + 1.95593, "mi325x": 15.491 + 1.95593, "mi355x": 12.106 + 1.95593}


def _off(profile: EngineProfile) -> EngineProfile:
    return dataclasses.replace(profile, aiter_mla_decode_floor_s=0.0)


@pytest.mark.parametrize("gpu", ["mi300x", "mi325x", "mi355x"])
@pytest.mark.parametrize("release", ["0.5.9", "0.5.12", None])
def test_r1_takes_61_layers_of_the_measured_floor(gpu: str, release: str | None) -> None:
    arch, hardware, layout = arch_of("deepseek-r1"), get_hardware(gpu), parse_layout("tp8")
    profile = engine_profile(EngineName.SGLANG, release)
    scheme = WeightScheme.as_shipped(arch)
    on = profile_efficiency(arch, hardware, layout, profile, scheme=scheme)
    off = profile_efficiency(arch, hardware, layout, _off(profile), scheme=scheme)
    # MI300X: 61 x 17.44693 us = 1.06426 ms; MI355X: 61 x 14.06193 us = 0.85778 ms
    extra = on.step_overhead_s - off.step_overhead_s
    assert extra == pytest.approx(61 * PER_LAYER_US[gpu] * 1e-6, rel=1e-5)


def test_an_r1_decode_step_on_mi300x_is_that_much_longer() -> None:
    arch = arch_of("deepseek-r1")
    profile = engine_profile(EngineName.SGLANG, "0.5.12")

    def step(p: EngineProfile) -> float:
        model = step_time_model(
            arch, get_hardware("mi300x"), parse_layout("tp8"),
            scheme=WeightScheme.as_shipped(arch), kv_dtype=KVDType.FP8, profile=p,
        )  # fmt: skip
        return model.step_time_s(4, 4, 4 * 8_192, 4 * 8_192)

    # 61 x (15.491 + 1.95593) us = 1.06426 ms, whatever the context
    assert step(profile) - step(_off(profile)) == pytest.approx(1.06426e-3, rel=1e-5)


@pytest.mark.parametrize("release", ["0.4.3", "0.4.8", "0.5.5.post3"])
def test_releases_before_0_5_6_carry_none(release: str) -> None:
    profile = engine_profile(EngineName.SGLANG, release)
    assert profile.aiter_mla_decode_floor_s == 0.0
    assert aiter_mla_decode_s(arch_of("deepseek-r1"), get_hardware("mi300x"), profile) == 0.0


@pytest.mark.parametrize("release", ["0.5.6", "0.5.9", "0.5.12", None])
def test_releases_from_0_5_6_take_the_measured_figure(release: str | None) -> None:
    assert engine_profile(EngineName.SGLANG, release).aiter_mla_decode_floor_s is None


@pytest.mark.parametrize(
    ("model", "gpu", "engine"),
    [
        ("deepseek-r1", "h200-sxm", EngineName.SGLANG),  # NVIDIA: no aiter
        ("llama-3.1-8b", "mi300x", EngineName.SGLANG),  # no MLA
        ("deepseek-r1", "mi300x", EngineName.VLLM),  # the term is SGLang's
        ("deepseek-r1", "mi300x", EngineName.TRTLLM),
    ],
)
def test_only_mla_on_amd_under_sglang(model: str, gpu: str, engine: EngineName) -> None:
    assert aiter_mla_decode_s(arch_of(model), get_hardware(gpu), engine_profile(engine)) == 0.0


def test_an_override_replaces_the_measured_figure() -> None:
    arch, mi300x = arch_of("deepseek-r1"), get_hardware("mi300x")
    profile = engine_profile(EngineName.SGLANG)
    # 20 us + the reduce's 1.95593 us node
    twenty = profile.with_overrides({"aiter_mla_decode_floor_s": 20e-6})
    assert aiter_mla_decode_s(arch, mi300x, twenty) == pytest.approx(21.95593e-6, rel=1e-5)
    zero = profile.with_overrides({"aiter_mla_decode_floor_s": 0.0})
    assert aiter_mla_decode_s(arch, mi300x, zero) == 0.0


def test_the_profile_names_its_source() -> None:
    terms = dict(engine_profile(EngineName.SGLANG).sources)
    assert "PR #2039" in terms["aiter_mla_decode_floor_s"]
    assert "aiter_mla_decode_floor_s" not in dict(
        engine_profile(EngineName.SGLANG, "0.5.5").sources
    )
