"""vLLM's dense FP8 GEMMs on MI300X: the curves distilled from ROCm/aiter#1092's measured rows."""

from __future__ import annotations

import pytest

from capcliff.memory.budget import EngineName
from capcliff.perf.op_curves import compute_curve, op_curve
from capcliff.perf.profiles import compute_source, engine_profile, weight_read_source

MI300X_HBM_BYTES_PER_S = 5.3e12  # AMD spec, hardware/mi300x.toml
MI300X_FP8_FLOPS = 2614.9e12  # dense FP8, hardware/mi300x.toml


def test_decode_gemm_curve_passes_near_llama70b_gate_up_at_one_token() -> None:
    # aiter a8w8_tuned_gemm.csv at 035725098d (PR #1092), row "304,1,57344,8192,50,0,143.3251":
    # Llama 70B's fused gate/up projection at TP1, 57344 x 8192 one-byte weights = 469,762,048
    # bytes in 143.3251 us (3.28 TB/s, 62 % of 5.3 TB/s). The curve is a line through every shape
    # measured at M = 1, so this one sits near it: within 5 %.
    curve = op_curve("mi300x", "vllm", "gemm", "fp8")
    assert curve is not None
    seconds = curve.seconds(1, 469_762_048, MI300X_HBM_BYTES_PER_S)
    assert seconds == pytest.approx(143.3251e-6, rel=0.05)


def test_decode_gemm_curve_passes_near_llama70b_o_proj_at_one_token() -> None:
    # Same table, row "304,1,8192,8192,34,0,28.8985": 67,108,864 bytes in 28.8985 us. Smaller
    # shapes reach less of peak than the line through all of them: within 15 % (the line: 25 us).
    curve = op_curve("mi300x", "vllm", "gemm", "fp8")
    assert curve is not None
    seconds = curve.seconds(1, 67_108_864, MI300X_HBM_BYTES_PER_S)
    assert seconds == pytest.approx(28.8985e-6, rel=0.15)


def test_compute_line_passes_near_llama70b_down_proj_at_4096_tokens() -> None:
    # Row "304,4096,8192,28672,1,0,1876.4926": 2 x 4096 x 8192 x 28672 = 1.924e12 FLOPs in
    # 1876.49 us = 1,025 TFLOP/s, 39 % of MI300X's dense 2,614.9 (not capcliff's 50 % MFU).
    line = compute_curve("mi300x", "vllm", "gemm", "fp8")
    assert line is not None
    flops = 2.0 * 4096 * 8192 * 28672
    assert line.seconds(4096, flops) == pytest.approx(1876.4926e-6, rel=0.05)
    assert line.flops_per_s_at(4096) / MI300X_FP8_FLOPS == pytest.approx(0.39, abs=0.02)


def test_curves_are_vllm_fp8_on_the_gfx942_die_only() -> None:
    # The PR's rows name MI300X; MI325X (the same gfx942 die, 304 CUs) takes them under a named
    # assumption, as MI300X takes MI325X's SGLang rows; no other GPU, format or engine does.
    assert op_curve("mi355x", "vllm", "gemm", "fp8") is None
    assert op_curve("mi300x", "vllm", "gemm", "bfloat16") is None
    assert op_curve("mi300x", "vllm", "moe", "fp8") is None
    assert op_curve("mi325x", "vllm", "gemm", "fp8") is not None


def test_mi325x_reads_weights_at_mi300x_fraction_of_its_own_bandwidth() -> None:
    # Same fraction of peak, MI325X's 6.0 TB/s against MI300X's 5.3: the byte-read part of the
    # gate/up projection's 469,762,048 bytes at one token is 5.3 / 6.0 as long, the floor equal.
    mi300x = op_curve("mi300x", "vllm", "gemm", "fp8")
    mi325x = op_curve("mi325x", "vllm", "gemm", "fp8")
    assert mi300x is not None and mi325x is not None
    size = 469_762_048
    floor = mi300x.floor_at(1)
    assert mi325x.floor_at(1) == floor
    read_300 = mi300x.seconds(1, size, MI300X_HBM_BYTES_PER_S) - floor
    read_325 = mi325x.seconds(1, size, 6.0e12) - floor
    assert read_325 == pytest.approx(read_300 * 5.3 / 6.0, rel=1e-9)
    label = weight_read_source(engine_profile(EngineName.VLLM), "mi325x")
    assert "measured on mi300x" in label and "same gfx942 die" in label


def test_vllm_label_on_mi300x_names_the_pr_commit_and_the_int8_assumption() -> None:
    label = weight_read_source(engine_profile(EngineName.VLLM), "mi300x")
    assert label.startswith("weight reads from measured aiter curves (ROCm/aiter 035725098d ")
    assert "measured on mi300x" in label and "int8" in label
    assert compute_source(engine_profile(EngineName.VLLM), "mi300x") == (
        "; compute from measured aiter curves (the same tables)"
    )
