"""Measured MoE layer tables of DeepSeek-V3/R1's own expert shape: interpolation, the shipped
rows, and where the roofline uses them."""

from __future__ import annotations

from dataclasses import replace

import pytest
from hypothesis import given
from hypothesis import strategies as st

from capcliff.catalog.catalogs import get_hardware
from capcliff.catalog.layout import parse_layout
from capcliff.memory.budget import EngineName
from capcliff.memory.weights import WeightScheme
from capcliff.perf.moe_tables import MoETable, _tables, has_table_shape, moe_kernel, moe_table
from capcliff.perf.profiles import DEFAULT_OP_CURVES, engine_profile
from capcliff.perf.step_time import step_time_model
from capcliff.units import KVDType
from tests.conftest import arch_of

TABLE = MoETable(tokens=(1.0, 4.0, 16.0), seconds=(10e-6, 40e-6, 80e-6), source="t")


def test_a_table_interpolates_in_log_tokens_and_log_seconds() -> None:
    # 2 tokens lie half-way between 1 and 4 in log: exp((ln 10 + ln 40) / 2) = 20 us
    assert TABLE.seconds_at(2) == pytest.approx(20e-6)
    # 8 tokens half-way between 4 and 16: sqrt(40 x 80) = 56.57 us
    assert TABLE.seconds_at(8) == pytest.approx(56.5685e-6, rel=1e-5)


def test_a_table_holds_its_first_time_below_the_first_count() -> None:
    assert TABLE.seconds_at(0.5) == 10e-6


def test_past_the_last_count_a_layer_takes_time_in_proportion_to_its_tokens() -> None:
    # 64 tokens = 4 x the last count's 16: 4 x 80 us
    assert TABLE.seconds_at(64) == pytest.approx(320e-6)


@given(st.sampled_from(sorted(_tables())))
def test_every_shipped_table_passes_through_its_measured_rows(key: tuple) -> None:  # type: ignore[type-arg]
    table = _tables()[key]
    for tokens, seconds in zip(table.tokens, table.seconds, strict=True):
        assert table.seconds_at(tokens) == pytest.approx(seconds)


def test_the_h200_sglang_table_is_aiconfigurators_power_law_row() -> None:
    # aiconfigurator-core 0.12 systems/data/h200_sxm/moe/sglang/0.5.14/moe_perf.parquet,
    # fp8_block, hidden 7168, inter 2048, 256 experts, top 8, moe_tp 8, moe_ep 1,
    # power_law_1.01, 64 tokens: 0.326 ms (the balanced row: 0.249 ms)
    table = moe_table(arch_of("deepseek-r1"), "h200-sxm", "sglang", "fp8_block", moe_tp=8, ep=1)
    assert table is not None
    assert table.seconds_at(64) == pytest.approx(326e-6, abs=1e-6)


def test_only_deepseeks_expert_shape_has_tables() -> None:
    assert has_table_shape(arch_of("deepseek-r1"))
    assert has_table_shape(arch_of("deepseek-r1-0528-fp4"))
    assert not has_table_shape(arch_of("qwen3-30b-a3b"))  # 128 experts of width 768
    qwen = arch_of("qwen3-30b-a3b")
    assert moe_table(qwen, "h200-sxm", "sglang", "bfloat16", moe_tp=1, ep=1) is None


def _r1_h200(layout: str, ops: tuple[str, ...] = DEFAULT_OP_CURVES):  # type: ignore[no-untyped-def]
    arch = arch_of("deepseek-r1")
    profile = replace(engine_profile(EngineName.SGLANG), op_curve_ops=ops)
    return step_time_model(
        arch, get_hardware("h200-sxm"), parse_layout(layout), scheme=WeightScheme.as_shipped(arch),
        kv_dtype=KVDType.BF16, profile=profile,
    )  # fmt: skip


def test_each_moe_layer_of_a_decode_step_takes_the_tables_time() -> None:
    # R1: 61 layers, the first 3 dense (first_k_dense_replace = 3): 58 MoE layers, each at the
    # table's 326 us for 64 tokens: 18.9 ms on top of the dense weights' read
    model = _r1_h200("tp8")
    assert model.moe_table is not None and model.moe_layers == 58
    dense = replace(model, expert_bytes=0.0)._weights_time_s(64)
    assert model._weights_time_s(64) - dense == pytest.approx(58 * 326e-6, rel=0.005)


def test_the_table_prices_a_prefills_expert_flops_too() -> None:
    # 8,192 tokens: the compute term's expert part is 58 x the table's time, not FLOPs at a rate
    model = _r1_h200("tp8")
    table = model.moe_table
    assert table is not None
    no_experts = replace(
        model, moe_table=None, moe_flops_curve=None, expert_flops_per_token=0.0,
        flops_per_token=model.flops_per_token - model.expert_flops_per_token,
    )  # fmt: skip
    extra = model._token_compute_s(8192, 1) - no_experts._token_compute_s(8192, 1)
    assert extra == pytest.approx(58 * table.seconds_at(8192))


def test_attention_dp_layouts_leave_the_moe_to_the_lockstep_group() -> None:
    assert _r1_h200("dpa8").moe_table is None


def test_without_the_op_the_fitted_moe_lines_price_the_layer() -> None:
    ops = tuple(op for op in DEFAULT_OP_CURVES if op != "moe_table")
    assert _r1_h200("tp8", ops).moe_table is None


def _label(model: str, engine: str, gpu: str, moe_backend: str | None = None) -> str:
    from capcliff.analysis.deployment import resolve
    from capcliff.analysis.deployment_settings import settings_of
    from capcliff.analysis.evaluate.replica_models import step_label
    from capcliff.catalog.catalogs import get_model

    settings = settings_of({"engine": engine, "moe_backend": moe_backend})
    return step_label(resolve(get_model(model), get_hardware(gpu), settings))


def test_the_step_label_names_the_measured_moe_rows_where_they_price_the_steps() -> None:
    label = _label("deepseek-r1", "sglang", "h200-sxm")
    assert "; MoE layers at measured rows of their shape (aiconfigurator-core" in label
    assert "kernel sglang_fused_moe_triton), power_law_1.01 rows" in label


def test_the_step_label_is_silent_where_no_measured_rows_apply() -> None:
    assert "measured rows of their shape" not in _label("qwen3-30b-a3b", "sglang", "h200-sxm")
    # vLLM: no DeepSeek MoE table at all
    assert "measured rows of their shape" not in _label("deepseek-r1", "vllm", "b200")


def test_tensorrt_llm_on_blackwell_reads_the_trtllm_gen_rows_measured_under_sglang() -> None:
    # TensorRT-LLM's TRTLLM MoE backend and FlashInfer's trtllm_fp8_block_scale_moe run the same
    # trtllm-gen runner; aiconfigurator-core 0.12 b200_sxm/moe/sglang/0.5.14, fp8_block, MoE TP
    # 8, power_law_1.01, kernel sglang_flashinfer_trtllm_moe: 49.7 us at 4 tokens, 74.2 at 8
    arch = arch_of("deepseek-r1")
    table = moe_table(arch, "b200", "trtllm", "fp8_block", moe_tp=8, ep=1)
    assert table is not None
    assert table.seconds_at(4) == pytest.approx(49.7e-6, abs=0.05e-6)
    # 6 tokens, log-log between them: 49.7 x (74.2 / 49.7) ** log2(1.5) = 62.8 us
    assert table.seconds_at(6) == pytest.approx(62.8e-6, abs=0.1e-6)
    label = _label("deepseek-r1", "trtllm", "b200")
    assert "kernel sglang_flashinfer_trtllm_moe" in label
    assert "the trtllm-gen MoE runner, measured under SGLang's FlashInfer port" in label


@pytest.mark.parametrize("backend", ["CUTLASS", "DEEPGEMM", "cutedsl"])
def test_another_tensorrt_llm_moe_backend_on_blackwell_takes_the_fitted_lines(backend: str) -> None:
    arch = arch_of("deepseek-r1")
    assert moe_table(arch, "b200", "trtllm", "fp8_block", moe_tp=8, ep=1, backend=backend) is None
    label = _label("deepseek-r1", "trtllm", "b200", backend)
    assert f"fitted MoE lines (no measured rows of --moe-backend {backend.lower()})" in label


def test_only_the_shared_trtllm_gen_kernel_crosses_engines() -> None:
    arch = arch_of("deepseek-r1")
    # SGLang's "cutlass" runner is sgl-kernel's, not TensorRT-LLM's CutlassFusedMoE: no rows
    assert (
        moe_table(arch, "h200-sxm", "sglang", "fp8_block", moe_tp=8, ep=1, backend="cutlass")
        is None
    )
    # trtllm-gen is sm100-only: no Hopper rows, for either engine
    for engine in ("trtllm", "sglang"):
        assert (
            moe_table(arch, "h200-sxm", engine, "fp8_block", moe_tp=8, ep=1, backend="TRTLLM")
            is None
        )
    # TensorRT-LLM on Hopper keeps its own CUTLASS rows by default: 146.8 us at 4 tokens, MoE TP 8
    cutlass = moe_table(arch, "h200-sxm", "trtllm", "fp8_block", moe_tp=8, ep=1)
    assert cutlass is not None and cutlass.seconds_at(4) == pytest.approx(146.8e-6, abs=0.05e-6)


def test_moe_backend_names_are_the_engines_own_spellings() -> None:
    assert moe_kernel("TRTLLM") == moe_kernel("flashinfer_trtllm") == "trtllm_gen"
    assert moe_kernel(" DeepGEMM ") == moe_kernel("deep_gemm") == "deepgemm"
    with pytest.raises(ValueError, match="must be one of auto, trtllm"):
        moe_kernel("fastest")


def test_a_bad_moe_backend_is_one_line_naming_the_flag() -> None:
    from capcliff.analysis.deployment_settings import settings_of
    from capcliff.errors import InputError

    with pytest.raises(
        InputError, match=r"^--moe-backend: must be one of auto, trtllm.*got 'fastest'"
    ):
        settings_of({"moe_backend": "fastest"})
    assert settings_of({"moe_backend": "TRTLLM"}).moe_backend == "trtllm"


def test_sglangs_moe_runner_backend_flag_sets_the_moe_backend() -> None:
    from capcliff.analysis.serve_command import parse_serve_command

    command = parse_serve_command(
        "python -m sglang.launch_server --model-path deepseek-ai/DeepSeek-R1 --tp 8 "
        "--moe-runner-backend triton"
    )
    assert command.settings["moe_backend"] == "triton"


def test_the_measured_rows_are_a_switch_a_profile_override_turns_off() -> None:
    profile = engine_profile(EngineName.SGLANG)
    off = profile.with_overrides({"moe_table": 0})
    assert "moe_table" in profile.op_curve_ops and "moe_table" not in off.op_curve_ops
    assert "moe_table" in off.with_overrides({"moe_table": 1}).op_curve_ops
    assert _r1_h200("tp8", off.op_curve_ops).moe_table is None


def test_vllms_triton_moe_prices_r1_at_its_own_tp8_rows() -> None:
    # aiconfigurator-core 0.12 systems/data/h200_sxm/moe/vllm/0.24.0/moe_perf.parquet,
    # vllm_fp8moe_triton_tritonexperts, fp8_block, R1's shape at moe_tp 8, power_law_1.01:
    # 8,192 tokens 2.538 ms (the balanced row 2.371 ms); that is 6 x 8192 x 8 x 7168 x 256
    # FLOPs / 2.538 ms = 284 TFLOP/s, about half the 540 TFLOP/s of the fitted MoE line
    r1 = arch_of("deepseek-r1")
    table = moe_table(r1, "h200-sxm", "vllm", "fp8_block", moe_tp=8, ep=1, backend="triton")
    assert table is not None
    assert table.seconds_at(8192) == pytest.approx(2.538e-3, abs=1e-6)
    flops = 6 * 8192 * 8 * 7168 * 256
    assert flops / table.seconds_at(8192) == pytest.approx(284e12, rel=0.01)


def test_vllm_has_no_default_moe_table() -> None:
    # vLLM 0.11's Fp8MoEMethod runs DeepGEMM where it is installed, which no table measured:
    # only --moe-backend triton selects the Triton rows
    r1 = arch_of("deepseek-r1")
    assert moe_table(r1, "h200-sxm", "vllm", "fp8_block", moe_tp=8, ep=1) is None
    assert moe_table(r1, "h100-sxm", "vllm", "fp8_block", moe_tp=8, ep=1, backend="triton")
