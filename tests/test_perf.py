"""Roofline step times, worked out by hand, and the closed-form sums of decode steps."""

from __future__ import annotations

import dataclasses
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from capcliff.catalog.catalogs import get_hardware
from capcliff.catalog.layout import Layout
from capcliff.memory.weights import WeightScheme
from capcliff.perf.step_time import (
    DecodeLine,
    Efficiency,
    StepTimeModel,
    default_mbu,
    host_link_bytes_per_s,
    step_time_model,
)
from capcliff.units import KVDType, WeightDType
from tests.conftest import arch_of
from tests.simtools import toy_model

EFF = Efficiency(mbu=0.8, mfu=0.5, step_overhead_s=0.002)


def _model(model_id: str, layout: Layout = Layout()) -> StepTimeModel:  # noqa: B008
    arch = arch_of(model_id)
    return step_time_model(
        arch,
        get_hardware("h200-sxm"),
        layout,
        scheme=WeightScheme.as_shipped(arch),
        kv_dtype=KVDType.BF16,
        efficiency=EFF,
    )


def test_decode_reads_every_weight_but_the_input_embedding() -> None:
    # Llama-3.1-8B: 8,030,261,248 parameters less the 128,256 x 4,096 = 525,336,576 embedding
    # rows (only looked up), x 2 bytes = 15,009,849,344 bytes read per step.
    assert _model("llama-3.1-8b").weight_bytes == 15_009_849_344


def test_one_sequence_decode_is_memory_bound() -> None:
    # Context 1,000 + the new token: 1,001 x 131,072 B of KV. (15,009,849,344 + 131,203,072) B /
    # (4.8 TB/s x 0.8) = 3.9429824 ms, + 2 ms overhead = 5.9429824 ms. The FLOPs (2 x 6.98e9 +
    # lm_head 2 x 5.25e8 + 524,288 x 1,001 attention) take 0.03 ms at 494.7 TFLOP/s.
    model = _model("llama-3.1-8b")
    assert model.step_time_s(1, 1, 1_001, 1_001) == pytest.approx(5.9429824e-3, rel=1e-9)


def test_a_long_prefill_is_compute_bound() -> None:
    # 8,192 prompt tokens: 2 x 6,979,588,096 (matmuls but lm_head) x 8,192 = 114,353,571,364,864
    # + lm_head once 2 x 525,336,576 = 1,050,673,152
    # + attention 524,288 FLOPs/pair (32 layers x 32 heads x 2 x 128 x 2) x 8,192 x 8,193 / 2
    #   pairs = 17,594,333,528,064 -> 131,948,955,566,080 FLOPs / (989.4 TFLOP/s x 0.5)
    # = 266.7252 ms, + 2 ms = 268.7252 ms.
    model = _model("llama-3.1-8b")
    pairs = 8_192 * 8_193 // 2
    assert model.step_time_s(8_192, 1, 8_192, pairs) == pytest.approx(0.2687251982, rel=1e-9)


def test_moe_reads_only_the_experts_its_tokens_touch() -> None:
    # Qwen3-30B-A3B: 48 layers x 128 experts x 3 x 2,048 x 768 x 2 B = 57,982,058,496 B of experts.
    # One token touches 8/128 of them; 16 tokens 1 - (120/128)^16 = 0.643926.
    model = _model("qwen3-30b-a3b")
    assert model.expert_bytes == 57_982_058_496
    extra = model.hbm_bytes(16, 1, 0) - model.hbm_bytes(1, 1, 0)
    expected = 57_982_058_496 * ((1 - (120 / 128) ** 16) - 8 / 128)
    assert extra == pytest.approx(expected, rel=1e-12)


def test_tensor_parallel_adds_two_ring_all_reduces_per_layer() -> None:
    # Llama-3.1-70B at TP8: 2 x 80 all-reduces of 8,192 x 2 B per token, ring factor 2 x 7/8:
    # 28,672 wire bytes per token. 100 tokens: 160 x (8 us + 100 x 28,672 B / 470 GB/s)
    # = 160 x (8 us + 6.1004 us) = 2.256068 ms.
    model = _model("llama-3.1-70b", Layout(tp=8))
    assert model.comm.allreduces_per_pass == 160
    assert model.comm.allreduce_bytes_per_token == 28_672
    silent = dataclasses.replace(model, comm=dataclasses.replace(model.comm, allreduces_per_pass=0))
    comm = model.step_time_s(100, 100, 0, 0) - silent.step_time_s(100, 100, 0, 0)
    assert comm == pytest.approx(2.256068085e-3, rel=1e-9)


def test_pipeline_bubble_when_fewer_sequences_than_stages() -> None:
    # Toy model, PP=4: one pass reads 1 GB at 1 TB/s = 1 ms. One sequence: 4 stage passes, one at
    # a time, + 1 ms overhead = 5 ms. Four sequences fill the pipe as four micro-batches of one:
    # still 5 ms, so four tokens for the price of one.
    model = toy_model(pp=4)
    assert model.step_time_s(1, 1, 0, 0) == pytest.approx(5e-3)
    assert model.step_time_s(4, 4, 0, 0) == pytest.approx(5e-3)


def test_default_mbu_follows_the_study_anchors() -> None:
    assert default_mbu(8e9) == pytest.approx(0.85)
    assert default_mbu(70e9) == pytest.approx(0.70)
    assert default_mbu(671e9) == pytest.approx(0.55)
    assert default_mbu(math.sqrt(8e9 * 70e9)) == pytest.approx(0.775)  # halfway in log(params)
    assert default_mbu(1e9) == 0.85 and default_mbu(2e12) == 0.55


def test_host_link_is_half_the_bidirectional_figure() -> None:
    assert host_link_bytes_per_s(get_hardware("h200-sxm")) == 64e9  # 128 GB/s bidir / 2


def test_hbm_utilization_of_a_decode_step_stays_under_mbu() -> None:
    model = _model("llama-3.1-8b")
    for seqs in (1, 64, 1024):
        ctx = seqs * 2_000
        # fraction of peak HBM bandwidth the step uses: bytes / (time x peak bandwidth)
        time_s = model.step_time_s(seqs, seqs, ctx, ctx)
        used = model.hbm_bytes(seqs, seqs, ctx) / (time_s * model.peak_bandwidth_bytes_per_s)
        assert 0 < used <= EFF.mbu


line_coefficients = st.tuples(
    st.floats(0, 1),
    st.floats(-1e-3, 1e-3),
    st.floats(0, 1),
    st.floats(-1e-3, 1e-3),
    st.floats(0, 1e-2),
)


@settings(max_examples=200, deadline=None)
@given(line_coefficients, st.integers(0, 3_000))
def test_decode_line_sums_in_closed_form(coeffs: tuple[float, ...], k: int) -> None:
    mem0, mem1, cmp0, cmp1, fixed = coeffs
    line = DecodeLine(mem0, mem1, cmp0, cmp1, fixed, 0.0, 0.0)
    brute = math.fsum(line.step_s(j) for j in range(k))
    assert line.total_s(k) == pytest.approx(brute, rel=1e-9, abs=1e-9)


@settings(max_examples=100, deadline=None)
@given(st.integers(1, 4096), st.integers(0, 10**7), st.integers(0, 500))
def test_decode_line_matches_step_by_step_times(seqs: int, context: int, j: int) -> None:
    model = _model("llama-3.1-8b")
    line = model.decode_line(seqs, context)
    ctx = context + seqs * j
    assert line.step_s(j) == pytest.approx(model.step_time_s(seqs, seqs, ctx, ctx), rel=1e-9)
    assert line.bytes0 + line.bytes1 * j == pytest.approx(model.hbm_bytes(seqs, seqs, ctx))


@settings(max_examples=50, deadline=None)
@given(st.integers(1, 4096), st.integers(0, 10**7), st.integers(0, 10**7))
def test_decode_line_is_bit_identical_from_its_cache(seqs: int, first: int, second: int) -> None:
    # decode_line keeps the terms that depend only on `seqs`; a model built afresh has none.
    model = _model("llama-3.1-8b")
    model.decode_line(seqs, first)
    fresh = dataclasses.replace(model)
    assert model.decode_line(seqs, second) == fresh.decode_line(seqs, second)


@settings(max_examples=100, deadline=None)
@given(st.floats(1e-3, 10), st.integers(1, 5_000))
def test_steps_before_finds_the_first_step_at_or_past_a_time(duration: float, k_max: int) -> None:
    line = DecodeLine(1e-3, 1e-6, 5e-4, 2e-6, 1e-3, 0.0, 0.0)
    m = line.steps_before(duration, k_max)
    if line.total_s(k_max) < duration:
        assert m == k_max
    else:
        assert line.total_s(m) >= duration > line.total_s(m - 1)


@pytest.mark.parametrize(
    ("gpu", "peak_tflops"),
    [
        ("b200", 9000),  # NVFP4 GEMMs on Blackwell's FP4 tensor cores (hardware/b200.toml)
        ("h200-sxm", 989.4),  # no FP4 tensor cores: Marlin W4A16, BF16 matmuls
        ("mi355x", 2516.6),  # AMD's FP4 peak is MXFP4, not NVFP4: BF16 matmuls
    ],
)
def test_nvfp4_weights_compute_at_the_fp4_peak_only_on_nvidia_fp4_gpus(
    gpu: str, peak_tflops: float
) -> None:
    arch = arch_of("llama-3.1-70b")
    hardware = get_hardware(gpu)
    model = step_time_model(
        arch, hardware, Layout(tp=8), scheme=WeightScheme.quantised(arch, WeightDType.NVFP4),
        kv_dtype=KVDType.FP8, efficiency=EFF,
    )  # fmt: skip
    assert model.flops_per_s == pytest.approx(peak_tflops * 1e12 * EFF.mfu, rel=1e-3)
