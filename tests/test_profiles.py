"""Engine step-time profiles: kernel counts, measured all-reduce latencies, overrides, labels."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from capcliff.catalog.catalogs import get_hardware
from capcliff.catalog.layout import Layout
from capcliff.errors import InputError
from capcliff.memory.budget import EngineName
from capcliff.memory.weights import WeightScheme
from capcliff.perf.allreduce_curves import allreduce_curve, allreduce_s
from capcliff.perf.profiles import (
    engine_profile,
    kernels_per_layer,
    profile_label,
    step_profile,
)
from capcliff.perf.step_time import step_time_model
from capcliff.units import KVDType
from tests.conftest import arch_of


def test_a_dense_bf16_layer_on_one_gpu_runs_ten_kernels() -> None:
    # norm, QKV, RoPE, cache write, attention, O, add+norm, gate/up, SiLU*, down = 10
    assert kernels_per_layer(arch_of("llama-3.1-8b"), tp=1) == 10


def test_deepseek_r1_at_tp8_runs_thirty_three_kernels_per_layer() -> None:
    # 10 + 2 all-reduces + 6 (MLA) + 7 (routed MoE) + 8 FP8 activation quantisations = 33
    assert kernels_per_layer(arch_of("deepseek-r1"), tp=8) == 33


def test_allreduce_interpolates_between_measured_sizes() -> None:
    # SGLang PR #2904, TP 8, TRT-LLM kernel: 32,768 B 7.8 us, 262,144 B 16.7 us. A 147,456 B
    # message (half-way in bytes: 32,768 + 114,688) takes 7.8 + 8.9 / 2 = 12.25 us.
    curve = allreduce_curve(engine_profile(EngineName.SGLANG).allreduce_kernel, tp=8)
    assert allreduce_s(curve, 147_456, 1e12) == pytest.approx(12.25e-6)


def test_allreduce_past_the_last_measurement_adds_bytes_at_bus_bandwidth() -> None:
    # 1,048,576 B takes 45.0 us with vLLM's kernel at TP 8; 1 MB more at 1e11 B/s adds 10.49 us.
    curve = allreduce_curve(engine_profile(EngineName.VLLM).allreduce_kernel, tp=8)
    assert allreduce_s(curve, 2 * 1_048_576, 1e11) == pytest.approx(45.0e-6 + 10.48576e-6)


def test_tp1_has_no_allreduce() -> None:
    assert allreduce_curve(engine_profile(EngineName.VLLM).allreduce_kernel, tp=1) == ()


@given(st.floats(1, 1e9), st.floats(1, 1e9))
def test_allreduce_time_never_falls_as_messages_grow_past_4k(a: float, b: float) -> None:
    # The measured table dips once below 4 KiB (launch noise); above it time grows with bytes.
    curve = allreduce_curve(engine_profile(EngineName.SGLANG).allreduce_kernel, tp=8)
    small, large = sorted((a + 4096, b + 4096))
    assert allreduce_s(curve, small, 4.7e11) <= allreduce_s(curve, large, 4.7e11)


def test_overlap_scheduler_engines_charge_no_host_time() -> None:
    assert engine_profile(EngineName.SGLANG).host_overhead_s == 0.0
    assert engine_profile(EngineName.TRTLLM).host_overhead_s == 0.0


def test_unknown_override_names_the_valid_terms() -> None:
    with pytest.raises(InputError, match="step_time: unknown term warp_speed; valid: host_"):
        step_profile(EngineName.VLLM, {"warp_speed": 1.0})


def test_an_override_replaces_one_term() -> None:
    profile, fitted = step_profile(EngineName.VLLM_V0, {"host_overhead_s": 0.004, "scale": 2.0})
    assert (profile.host_overhead_s, fitted) == (0.004, {"scale": 2.0})


def test_label_says_engine_version_and_whether_calibrated() -> None:
    assert profile_label(EngineName.SGLANG, {}) == (
        "sglang >= 0.4.8 (overlap scheduler), modeled; weight reads from measured sglang op "
        "curves on b200, b300, gb200, h100-sxm, h200-sxm, mi300x, mi325x, mi355x; MBU elsewhere; "
        "compute from measured sglang curves on b200, b300, gb200, h100-sxm, h200-sxm, mi300x, "
        "mi325x, mi355x; MFU elsewhere; a step that "
        "prefills lasts at least one eager pass (41 us per op, no CUDA graph)"
    )
    assert ", calibrated; " in profile_label(EngineName.VLLM_V0, {"fixed_s": 0.01})


def test_fitted_terms_make_the_step_fixed_plus_scaled_roofline() -> None:
    # step = fixed_s + scale x (roofline + communication): doubling scale and adding 3 ms to the
    # fixed part moves a step from t to 2 (t - f0) + 0.003, f0 the modeled fixed part.
    arch, h200 = arch_of("llama-3.1-8b"), get_hardware("h200-sxm")
    profile = engine_profile(EngineName.VLLM, "0.11.0")  # serial: host time adds to the step

    def build(fitted: dict[str, float]) -> float:
        model = step_time_model(
            arch, h200, Layout(), scheme=WeightScheme.as_shipped(arch), kv_dtype=KVDType.BF16,
            profile=profile, fitted=fitted,
        )  # fmt: skip
        return model.step_time_s(1, 1, 1_001, 1_001)

    base = build({})
    # 0.5 ms host + 32 layers x 6 kernels x 1 us: of a Llama layer's 10 kernels, the 4 dense
    # GEMMs are priced by vLLM's measured H200 BF16 GEMM curve (perf/op_curves.py), not floored;
    # + the host time of the step's one sequence (perf/host_time.py), which fixed_s replaces too
    fixed = (
        profile.host_overhead_s + 32 * (10 - 4) * profile.kernel_floor_s + profile.host_per_seq_s
    )
    assert build({"fixed_s": 0.003, "scale": 2.0}) == pytest.approx(2 * (base - fixed) + 0.003)
