"""Measured op curves: interpolation, the shipped data, and where the roofline uses them."""

from __future__ import annotations

import json
from dataclasses import replace
from importlib import resources

import pytest
from hypothesis import given
from hypothesis import strategies as st

from capcliff.catalog.catalogs import get_hardware
from capcliff.catalog.layout import parse_layout
from capcliff.memory.budget import EngineName
from capcliff.memory.weights import WeightScheme
from capcliff.perf.op_curves import OpCurve, op_curve, table_format
from capcliff.perf.profiles import engine_profile, kernels_per_layer, weight_read_source
from capcliff.perf.step_time import StepTimeModel, step_time_model
from capcliff.units import KVDType, WeightDType
from tests.conftest import arch_of

CURVE = OpCurve(tokens=(1.0, 4.0), floor_s=(10e-6, 20e-6), hbm_fraction=(0.5, 0.8), source="t")


def _shipped() -> dict[str, object]:
    text = resources.files("capcliff.perf").joinpath("data", "op_curves.json").read_text()
    data: dict[str, object] = json.loads(text)
    return data


def _curve(hardware: str, engine: str, op: str, fmt: str) -> dict[str, list[float]]:
    curves = _shipped()["curves"]
    assert isinstance(curves, list)
    return next(
        c for c in curves
        if (c["hardware"], c["engine"], c["op"], c["format"]) == (hardware, engine, op, fmt)
    )  # fmt: skip


def test_a_curve_interpolates_in_log_tokens() -> None:
    # 2 tokens lie half-way between 1 and 4 in log: floor 15 us, fraction 0.65
    assert CURVE.floor_at(2) == pytest.approx(15e-6)
    assert CURVE.fraction_at(2) == pytest.approx(0.65)


def test_a_curve_holds_its_end_values_outside_the_measured_tokens() -> None:
    assert (CURVE.floor_at(0.5), CURVE.fraction_at(0.5)) == (10e-6, 0.5)
    assert (CURVE.floor_at(4096), CURVE.fraction_at(4096)) == (20e-6, 0.8)


def test_a_call_costs_its_floor_plus_its_bytes_at_the_reached_bandwidth() -> None:
    # 15 us + 1 MB / (0.65 x 1 TB/s) = 15 us + 1.538 us
    assert CURVE.seconds(2, 1e6, 1e12) == pytest.approx(15e-6 + 1e6 / 0.65e12)


@given(st.floats(min_value=1, max_value=1e4), st.floats(min_value=1, max_value=1e4))
def test_interpolated_values_stay_between_the_measured_ones(a: float, b: float) -> None:
    for t in (a, b):
        assert 10e-6 <= CURVE.floor_at(t) <= 20e-6
        assert 0.5 <= CURVE.fraction_at(t) <= 0.8


def test_every_shipped_curve_is_a_physical_bandwidth_curve_with_its_source() -> None:
    data = _shipped()
    assert "aiconfigurator-core" in str(data["source"])
    curves = data["curves"]
    assert isinstance(curves, list) and curves
    for c in curves:
        assert c["tokens"] == sorted(c["tokens"]) and len(c["tokens"]) >= 3
        assert all(0 < f <= 1.0 for f in c["hbm_fraction"]), c
        assert all(us >= 0 for us in c["floor_us"]), c
        assert c["release"] and c["system"]
        if "measured_on" in c:
            # aiter: CSV tables; a fifth of peak at the first token count (past 256 tokens its
            # GEMMs fall under it, the compute line's range); the fused MoE's floor is measured
            assert c["table"].endswith(".csv") and c["release"].startswith("ROCm/aiter ")
            assert c["hbm_fraction"][0] >= 0.2, c
        else:
            assert min(c["hbm_fraction"]) >= 0.2 and c["floor_us"][0] <= 50, c
            assert c["table"].endswith(".parquet"), c


def test_block_fp8_checkpoints_read_the_block_fp8_tables() -> None:
    r1 = arch_of("deepseek-r1")  # quantization_config: fp8 with weight_block_size [128, 128]
    assert table_format(WeightDType.FP8, r1.quantization) == "fp8_block"
    assert table_format(WeightDType.FP8, None) == "fp8"
    assert table_format(WeightDType.BF16, None) == "bfloat16"
    assert table_format(WeightDType.NVFP4, None) == "nvfp4"
    assert table_format(WeightDType.INT4, None) is None


def test_no_curve_where_no_table_was_measured() -> None:
    assert op_curve("mi355x", "trtllm", "moe", "fp8_block") is None
    assert op_curve("mi355x", "sglang", "moe", "nvfp4") is None
    assert op_curve("h200-sxm", "sglang", "moe", None) is None


def _r1_tp8(gpu: str, engine: EngineName, version: str | None = None) -> StepTimeModel:
    """R1 at TP 8 priced by the fitted curves (without R1's own measured MoE rows, which
    tests/test_moe_tables.py covers)."""
    arch = arch_of("deepseek-r1")
    profile = engine_profile(engine, version)
    lines = tuple(op for op in profile.op_curve_ops if op != "moe_table")
    return step_time_model(
        arch, get_hardware(gpu), parse_layout("tp8"), scheme=WeightScheme.as_shipped(arch),
        kv_dtype=KVDType.BF16, profile=replace(profile, op_curve_ops=lines),
    )  # fmt: skip


def test_r1_weights_on_h200_sglang_are_read_through_the_measured_curves() -> None:
    # One decoding sequence: 61 layers x 6 dense GEMMs (MLA q_a, q_b, kv_a, O; gate/up, down),
    # each the GEMM curve's 1-token floor, plus the dense bytes at its fraction of 4.8 TB/s; 58 MoE
    # layers at the MoE curve's floor, plus 8 of 256 experts' bytes at its fraction. Expert bytes
    # per GPU: 58 x 256 x 3 x 7168 x 2048 / 8 x (1 + 4 / 128^2) = 81,758,552,064.
    model = _r1_tp8("h200-sxm", EngineName.SGLANG)
    gemm = _curve("h200-sxm", "sglang", "gemm", "fp8_block")
    moe = _curve("h200-sxm", "sglang", "moe", "fp8_block")
    assert model.expert_bytes == 81_758_552_064
    peak = 4.8e12
    dense = 61 * 6 * gemm["floor_us"][0] * 1e-6 + model.weight_bytes / (
        gemm["hbm_fraction"][0] * peak
    )
    experts = 58 * moe["floor_us"][0] * 1e-6 + 81_758_552_064 * 8 / 256 / (
        moe["hbm_fraction"][0] * peak
    )
    assert model._weights_time_s(1) == pytest.approx(dense + experts)


def _r1_fp4_tp4_b200_trtllm() -> StepTimeModel:
    arch = arch_of("deepseek-r1-0528-fp4")
    profile = engine_profile(EngineName.TRTLLM)
    lines = tuple(op for op in profile.op_curve_ops if op != "moe_table")
    return step_time_model(
        arch, get_hardware("b200"), parse_layout("tp4"), scheme=WeightScheme.as_shipped(arch),
        kv_dtype=KVDType.FP8, profile=replace(profile, op_curve_ops=lines),
    )  # fmt: skip


def test_attention_projections_an_nvfp4_checkpoint_keeps_in_bf16_read_the_bf16_curve() -> None:
    # NVIDIA's R1 NVFP4 excludes model.layers.*.self_attn*: per layer at TP 4, q_a_proj
    # 7168 x 1536 = 11,010,048 and kv_a 7168 x 576 = 4,128,768 replicated; q_b 1536 x 24576 / 4 =
    # 9,437,184, kv_b 512 x 32768 / 4 = 4,194,304 and o_proj 16384 x 7168 / 4 = 29,360,128
    # split: 58,130,432 BF16 elements x 2 B x 61 layers = 7,091,912,704 bytes. Four of the six
    # dense GEMMs of a layer (q_a, q_b, kv_a, O) read them; gate/up and down stay NVFP4.
    model = _r1_fp4_tp4_b200_trtllm()
    assert model.excluded_bytes == 7_091_912_704
    assert (model.excluded_gemms, model.dense_gemms) == (61 * 4, 61 * 6)
    bf16 = _curve("b200", "trtllm", "gemm", "bfloat16")
    fp4 = _curve("b200", "trtllm", "gemm", "nvfp4")
    peak = 8.0e12  # hardware/b200.toml
    dense = (
        61 * 4 * bf16["floor_us"][0] * 1e-6
        + 7_091_912_704 / (bf16["hbm_fraction"][0] * peak)
        + 61 * 2 * fp4["floor_us"][0] * 1e-6
        + (model.weight_bytes - 7_091_912_704) / (fp4["hbm_fraction"][0] * peak)
    )
    assert model.gemm_curve is not None
    assert model._dense_gemms_s(model.gemm_curve, 1) == pytest.approx(dense)


def test_a_checkpoint_quantising_every_linear_prices_them_on_one_curve() -> None:
    model = _r1_tp8("b200", EngineName.TRTLLM)  # block FP8 everywhere: nothing excluded
    assert (model.excluded_gemm_curve, model.excluded_gemms, model.excluded_bytes) == (None, 0, 0)


def test_curved_kernels_take_no_kernel_floor() -> None:
    # 61 layers x (33 kernels - 6 dense GEMMs - 5 fused-MoE kernels - the 2 MLA BMMs the
    # mla_bmm table times) x 1 us = 1.220 ms
    assert kernels_per_layer(arch_of("deepseek-r1"), tp=8) == 33
    model = _r1_tp8("h200-sxm", EngineName.TRTLLM)
    assert model.step_overhead_s == pytest.approx(61 * (33 - 6 - 5 - 2) * 1e-6)


def test_a_gpu_without_tables_keeps_the_mbu_constants() -> None:
    # MI355X under TensorRT-LLM: no table; dense weights at MBU x peak, every kernel floored at
    # HIP graph replay's floor: 1 us + (12,614.591 - 1,605.067) / 7,168 us - 0.58 us = 1.95593 us
    model = _r1_tp8("mi355x", EngineName.TRTLLM)
    assert model.gemm_curve is None and model.moe_curve is None
    assert model.step_overhead_s == pytest.approx(61 * 33 * 1.95593e-6, rel=1e-5)
    weights = model.weight_bytes / model.bandwidth_bytes_per_s
    assert model._weights_time_s(0) == pytest.approx(weights)


def test_older_sglang_kernels_keep_the_constants() -> None:
    model = _r1_tp8("h200-sxm", EngineName.SGLANG, "0.4.3")
    assert model.gemm_curve is None and model.moe_curve is None


def test_mla_attention_curve_is_opt_in_and_prices_the_kv_read_by_batch() -> None:
    # B200, TensorRT-LLM, R1 at TP 8: 128 / 8 = 16 heads per GPU, BF16 cache -> "bfloat16:16".
    # Opted in: 4 sequences read KV at the curve's batch-4 fraction of peak, each of the 61
    # layers adds its batch-4 floor, and the attention kernel takes no 1 us floor:
    # 61 x (33 - 6 GEMMs - 5 MoE - 1 attention) x 1 us = 1.281 ms.
    arch = arch_of("deepseek-r1")
    profile = replace(engine_profile(EngineName.TRTLLM), op_curve_ops=("gemm", "moe", "mla"))
    model = step_time_model(
        arch, get_hardware("b200"), parse_layout("tp8"), scheme=WeightScheme.as_shipped(arch),
        kv_dtype=KVDType.BF16, profile=profile,
    )  # fmt: skip
    mla = _curve("b200", "trtllm", "mla", "bfloat16:16")
    assert mla["tokens"][2] == 4
    assert model._kv_bw_at(4) == pytest.approx(
        mla["hbm_fraction"][2] * model.peak_bandwidth_bytes_per_s
    )
    assert model._attention_floor_s(4) == pytest.approx(61 * mla["floor_us"][2] * 1e-6)
    assert model.step_overhead_s == pytest.approx(61 * (33 - 6 - 5 - 1) * 1e-6)
    default = _r1_tp8("b200", EngineName.TRTLLM)
    assert default.attention_curve is None and default._attention_floor_s(4) == 0.0


def test_the_mi325x_moe_curve_reproduces_its_aiter_row_at_one_token() -> None:
    # ROCm/aiter a8w8_blockscale_tuned_fmoe_ds_v3.csv, row "304,1,7168,2048,33,9,...": 99.2100 us.
    # 1 token picks 9 of 33 experts: 9 x 3 x 7168 x 2048 x (1 + 4 / 128^2) = 396,458,496 bytes,
    # 66.0764 us at MI325X's 6.0 TB/s; the curve reads them at peak (fraction 1), so its floor is
    # 99.2100 - 66.0764 = 33.1336 us and one call over those bytes takes the row's 99.21 us.
    curve = op_curve("mi325x", "sglang", "moe", "fp8_block")
    assert curve is not None
    assert curve.fraction_at(1) == 1.0
    assert curve.floor_at(1) == pytest.approx(33.1336e-6, abs=0.001e-6)
    assert curve.seconds(1, 396_458_496, 6.0e12) == pytest.approx(99.21e-6, abs=0.01e-6)


def test_the_mi355x_gemm_curve_passes_near_a_measured_decode_gemm() -> None:
    # ROCm/aiter a8w8_blockscale_tuned_gemm_ds_v3.csv, row "gfx950,256,1,9216,7168,...": 18.249 us
    # for 9216 x 7168 x (1 + 4 / 128^2) = 66,076,416 bytes. The curve is a line fitted through the
    # 28 shapes measured at M = 1 (relative least squares), so one shape sits near it, not on it:
    # within 10 %.
    curve = op_curve("mi355x", "sglang", "gemm", "fp8_block")
    assert curve is not None
    assert curve.seconds(1, 66_076_416, 8.0e12) == pytest.approx(18.249e-6, rel=0.10)


def test_mi300x_borrows_the_mi325x_curves_at_its_own_peak() -> None:
    mi300x = _curve("mi300x", "sglang", "moe", "fp8_block")
    mi325x = _curve("mi325x", "sglang", "moe", "fp8_block")
    assert mi300x["floor_us"] == mi325x["floor_us"]
    assert mi300x["measured_on"] == "mi325x" and "assumption" in mi300x
    assert mi300x["peak_hbm_bytes_per_s"] == 5.3e12  # MI300X's HBM3, AMD spec


def test_amd_labels_say_measured_aiter_curves_and_name_the_assumption() -> None:
    mi300x = weight_read_source(engine_profile(EngineName.SGLANG), "mi300x")
    assert mi300x.startswith("weight reads from measured aiter curves (ROCm/aiter e4048607a5 ")
    assert "measured on mi325x; assumption: MI325X's curves on MI300X" in mi300x
    mi355x = weight_read_source(engine_profile(EngineName.SGLANG), "mi355x")
    assert mi355x == (
        "weight reads from measured aiter curves (ROCm/aiter e4048607a5 tables measured on mi355x)"
    )
