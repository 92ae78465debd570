"""Measured compute lines (op_curves.ComputeCurve): interpolation, the shipped data, and the
roofline's compute term priced through them (expected values worked out from the shipped file)."""

from __future__ import annotations

import math
from dataclasses import replace

import pytest
from hypothesis import given
from hypothesis import strategies as st

from capcliff.catalog.catalogs import get_hardware
from capcliff.catalog.layout import Layout, parse_layout
from capcliff.memory.budget import EngineName
from capcliff.memory.weights import WeightScheme
from capcliff.perf.efficiency import DEFAULT_MFU
from capcliff.perf.op_curves import ComputeCurve, compute_curve
from capcliff.perf.profiles import engine_profile
from capcliff.perf.step_time import StepTimeModel, step_time_model
from capcliff.units import KVDType
from tests.conftest import arch_of
from tests.test_op_curves import _shipped

LINE = ComputeCurve(
    tokens=(512.0, 2048.0), floor_s=(10e-6, 20e-6), flops_fraction=(0.4, 0.6),
    peak_flops_per_s=1e15, source="t",
)  # fmt: skip


def test_a_line_interpolates_in_log_tokens_and_holds_its_last_values() -> None:
    # 1024 lies half-way between 512 and 2048 in log: floor 15 us, 0.5 x 1 PFLOP/s
    assert LINE.floor_at(1024) == pytest.approx(15e-6)
    assert LINE.flops_per_s_at(1024) == pytest.approx(0.5e15)
    assert (LINE.floor_at(1e5), LINE.flops_per_s_at(1e5)) == (20e-6, 0.6e15)


def test_below_the_first_count_the_fraction_holds_and_the_floor_shrinks_with_the_tokens() -> None:
    # 128 tokens = a quarter of 512: floor 2.5 us; FLOPs at 0.4 x peak
    assert LINE.floor_at(128) == pytest.approx(2.5e-6)
    assert LINE.flops_per_s_at(128) == pytest.approx(0.4e15)
    # 3 calls over 1024 tokens, 1e12 FLOPs: 3 x 15 us + 1e12 / 5e14 = 45 us + 2 ms
    assert LINE.seconds(1024, 1e12, calls=3) == pytest.approx(45e-6 + 2e-3)


@given(st.floats(min_value=1, max_value=1e6))
def test_the_floor_never_falls_as_tokens_grow_below_the_first_count(t: float) -> None:
    assert 0 <= LINE.floor_at(min(t, 512)) <= LINE.floor_at(512)
    assert 0.4e15 <= LINE.flops_per_s_at(t) <= 0.6e15


def test_every_shipped_compute_line_is_physical_and_names_its_source() -> None:
    lines = _shipped()["compute_curves"]
    assert isinstance(lines, list) and lines
    for c in lines:
        first = 1024 if c["op"] == "mla_context" else 512  # prompt length / tokens per call
        assert c["tokens"][0] == first and c["tokens"] == sorted(c["tokens"]), c
        assert all(0 < f <= 1 for f in c["flops_fraction"]), c
        assert all(us >= 0 for us in c["floor_us"]), c
        suffix = ".csv" if "measured_on" in c else ".parquet"  # aiter's tables are CSV
        assert c["table"].endswith(suffix) and c["release"] and c["system"]
    # the peaks are aiconfigurator's system files' dense tensor-core figures for the format
    peaks = {(c["system"], c["format"]): c["peak_flops_per_s"] for c in lines}
    assert peaks[("h200_sxm", "bfloat16")] == 989e12
    assert peaks[("b200_sxm", "fp8_block")] == 4.5e15
    assert peaks[("b200_sxm", "nvfp4")] == 9e15


def test_fp4_buys_less_than_its_doubled_peak_on_b200() -> None:
    # shipped trtllm lines at 4096 tokens: NVFP4 0.3996 of 9 PFLOP/s = 3.596 PFLOP/s; FP8
    # (per-tensor) 0.5524 of 4.5 = 2.486: 1.45x, not the 2x of the peaks
    fp4 = compute_curve("b200", "trtllm", "gemm", "nvfp4")
    fp8 = compute_curve("b200", "trtllm", "gemm", "fp8")
    assert fp4 is not None and fp8 is not None
    assert fp4.flops_per_s_at(4096) == pytest.approx(0.3996 * 9e15)
    assert fp8.flops_per_s_at(4096) == pytest.approx(0.5524 * 4.5e15)
    assert "trtllm 1.3.0rc20 gemm table on b200_sxm" in fp4.source


def test_a_llama_8b_prefill_on_h200_is_priced_by_the_measured_gemm_line() -> None:
    arch, h200 = arch_of("llama-3.1-8b"), get_hardware("h200-sxm")
    model = step_time_model(
        arch, h200, Layout(), scheme=WeightScheme.as_shipped(arch), kv_dtype=KVDType.BF16,
        profile=engine_profile(EngineName.TRTLLM),
    )  # fmt: skip
    # Llama-3.1-8B per layer: q, o 4096^2; k, v 4096 x 1024; gate, up, down 4096 x 14336 =
    # 218,103,808 elements; 32 layers = 6,979,321,856, + the RMSNorm weights the roofline counts
    # with them (2 per layer and the final one, 4096 each: 266,240); lm_head 4096 x 128,256 =
    # 525,336,576.
    # One 4096-token prompt (attention left out: 0 pairs): 2 x 6.979e9 x 4096 + 2 x 5.25e8
    # FLOPs at the h200-sxm trtllm bfloat16 line at 4096 (0.775 of 989 TFLOP/s, 3.362 us per
    # call) over 32 x 4 GEMM calls: 74.6 ms + 0.43 ms, far above the 16 GB weight read.
    flops = 2 * (6_979_321_856 + 266_240) * 4096 + 2 * 525_336_576
    compute = 128 * 3.362e-6 + flops / (0.775 * 989e12)
    assert model.step_time_s(4096, 1, 4096, 0) - model.step_overhead_s == pytest.approx(compute)


def test_the_mfu_constant_prices_the_flops_where_no_line_was_measured() -> None:
    arch, mi300x = arch_of("llama-3.1-8b"), get_hardware("mi300x")
    model = step_time_model(
        arch, mi300x, Layout(), scheme=WeightScheme.as_shipped(arch), kv_dtype=KVDType.BF16,
        profile=engine_profile(EngineName.VLLM),
    )  # fmt: skip
    assert model.gemm_flops_curve is None
    assert model.flops_per_s == pytest.approx(mi300x.dense_tflops_bf16 * 1e12 * DEFAULT_MFU)


def test_without_the_compute_ops_the_step_is_the_mfu_roofline() -> None:
    arch, h200 = arch_of("llama-3.1-8b"), get_hardware("h200-sxm")
    profile = replace(engine_profile(EngineName.TRTLLM), op_curve_ops=("gemm", "moe"))
    model = step_time_model(
        arch, h200, Layout(), scheme=WeightScheme.as_shipped(arch), kv_dtype=KVDType.BF16,
        profile=profile,
    )  # fmt: skip
    flops = 2 * (6_979_321_856 + 266_240) * 4096 + 2 * 525_336_576
    compute = flops / (989.4e12 * DEFAULT_MFU)
    assert model.step_time_s(4096, 1, 4096, 0) - model.step_overhead_s == pytest.approx(compute)


def test_mla_prefill_attention_line_is_opt_in_and_prices_the_mha_form() -> None:
    arch, h200 = arch_of("deepseek-r1"), get_hardware("h200-sxm")

    def model(ops: tuple[str, ...]) -> StepTimeModel:
        return step_time_model(
            arch, h200, parse_layout("tp8"), scheme=WeightScheme.as_shipped(arch),
            kv_dtype=KVDType.BF16,
            profile=replace(engine_profile(EngineName.TRTLLM), op_curve_ops=ops),
        )  # fmt: skip

    assert model(("gemm", "moe", "gemm_flops", "moe_flops")).extend_attention_curve is None
    curved = model(("gemm", "moe", "gemm_flops", "moe_flops", "mla_context"))
    # one 4096-token prompt: 4096 x 4097 / 2 pairs, prompt length 2 x pairs / tokens = 4097,
    # just past 4096 on the h200-sxm trtllm "bfloat16:16" line (128 heads / TP 8): at
    # w = ln(4097 / 4096) / ln 2 between 4096 (0.5609, 48.147 us) and 8192 (0.589, 30.279 us).
    # Per pair: 61 layers x 16 heads x 2 x (128 + 64 + 128) FLOPs; 61 calls' floors.
    pairs = 4096 * 4097 / 2
    w = math.log(4097 / 4096) / math.log(2)
    rate = (0.5609 + w * (0.589 - 0.5609)) * 989e12
    floor = (48.147 + w * (30.279 - 48.147)) * 1e-6
    attention = 61 * floor + 61 * 16 * 640 * pairs / rate
    with_pairs = curved.step_time_s(4096, 1, 4096, pairs)
    # the same step's GEMM and MoE FLOPs alone: the prefill is compute-bound either way
    without = curved.step_time_s(4096, 1, 4096, 0)
    assert with_pairs - without == pytest.approx(attention, rel=1e-6)
