"""SGLang splits dense MLPs and shared experts over the whole MoE group under DP attention."""

from __future__ import annotations

import pytest

from capcliff.catalog.catalogs import get_hardware, get_model
from capcliff.catalog.layout import parse_layout
from capcliff.memory.budget import EngineName
from capcliff.memory.weights import WeightScheme, dense_split_saving_bytes
from capcliff.perf.profiles import engine_profile
from capcliff.perf.step_time import step_time_model
from capcliff.units import KVDType

# DeepSeek-R1: 3 dense layers x 3 x 7168 x 18432 + 58 MoE layers' shared expert 3 x 7168 x 2048
# = 1,189,085,184 + 2,554,331,136 = 3,743,416,320 elements, block FP8 (1 B + a 4 B scale per
# 128 x 128 block: 1 + 4 / 16,384 B per element).
R1_DENSE_ELEMENTS = 3 * 3 * 7168 * 18432 + 58 * 3 * 7168 * 2048
FP8_BLOCK_BYTES = 1 + 4 / 128**2


def test_r1_dense_weights_a_dpa8_rank_does_not_hold() -> None:
    arch = get_model("deepseek-r1").arch
    scheme = WeightScheme.as_shipped(arch)
    # dpa8: attention TP 1 held them whole; split 8 ways a rank keeps 1/8: 7/8 saved
    saved = dense_split_saving_bytes(arch, parse_layout("dpa8"), scheme, 0)
    assert saved == pytest.approx(R1_DENSE_ELEMENTS * 7 / 8 * FP8_BLOCK_BYTES, rel=1e-6)
    # dpa4-tp2: held 1/2, keeps 1/8
    saved = dense_split_saving_bytes(arch, parse_layout("dpa4-tp2"), scheme, 0)
    assert saved == pytest.approx(R1_DENSE_ELEMENTS * (1 / 2 - 1 / 8) * FP8_BLOCK_BYTES, rel=1e-6)
    # without attention DP nothing changes
    assert dense_split_saving_bytes(arch, parse_layout("tp8"), scheme, 0) == 0


def test_only_sglang_layouts_hold_less_and_read_less() -> None:
    model, hw = get_model("deepseek-r1"), get_hardware("h200-sxm")
    scheme = WeightScheme.as_shipped(model.arch)
    dpa8 = parse_layout("dpa8")
    saved = dense_split_saving_bytes(model.arch, dpa8, scheme, 0)
    reads = {
        engine: step_time_model(
            model.arch, hw, dpa8, scheme=scheme, kv_dtype=KVDType.BF16,
            profile=engine_profile(engine),
        ).weight_bytes
        for engine in (EngineName.SGLANG, EngineName.VLLM)
    }  # fmt: skip
    assert reads[EngineName.VLLM] - reads[EngineName.SGLANG] == pytest.approx(saved)


def test_the_sglang_budget_loads_the_split_weights() -> None:
    from capcliff.analysis.deployment import resolve
    from capcliff.analysis.deployment_settings import settings_of
    from capcliff.memory.weights import weight_bytes_per_gpu_by_stage

    model, hw = get_model("deepseek-r1"), get_hardware("h200-sxm")
    scheme = WeightScheme.as_shipped(model.arch)
    dpa8 = parse_layout("dpa8")
    dep = resolve(model, hw, settings_of({"engine": "sglang"}))
    stage = dep.memory(dpa8, 4096).stages[0]
    whole = weight_bytes_per_gpu_by_stage(model.arch, dpa8, scheme)[0]
    assert stage.term("weights") == whole - dense_split_saving_bytes(model.arch, dpa8, scheme, 0)


def test_the_saving_grows_with_the_group_and_never_exceeds_what_was_held() -> None:
    # 1 - 1/N of the dense weights: 1/2, 3/4, 7/8 for dpa2, dpa4, dpa8
    arch = get_model("deepseek-r1").arch
    scheme = WeightScheme.as_shipped(arch)
    layouts = [parse_layout(f"dpa{n}") for n in (2, 4, 8)]
    savings = [dense_split_saving_bytes(arch, layout, scheme, 0) for layout in layouts]
    whole = R1_DENSE_ELEMENTS * FP8_BLOCK_BYTES
    assert savings == [pytest.approx(whole * f, rel=1e-6) for f in (1 / 2, 3 / 4, 7 / 8)]
    assert savings[0] < savings[1] < savings[2] < whole
