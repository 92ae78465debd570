"""MLA's two absorbed decode BMMs at their measured time (perf/mla_bmm.py): each decode layer of
an MLA model takes the pair's time from aiconfigurator's tables for the kernel the engine runs, in
place of two kernel floors, in passes that decode and not in passes that prefill."""

from __future__ import annotations

import dataclasses

import pytest

from capcliff.catalog.catalogs import get_hardware
from capcliff.catalog.layout import parse_layout
from capcliff.memory.budget import EngineName
from capcliff.memory.weights import WeightScheme
from capcliff.perf.mla_bmm import kv_b_weight, mla_bmm_table
from capcliff.perf.profiles import EngineProfile, engine_profile
from capcliff.perf.step_time import step_time_model
from capcliff.units import KVDType
from tests.conftest import arch_of

US = 1e-6
# aiconfigurator-core 0.12 mla_bmm_perf.parquet rows, 16 heads (TP 8 of 128), latency in ms:
# b200 trtllm 1.3.0rc20 fp8 (trtllm_bmm_out_dequant_bf16), 4 tokens: pre 0.004266, post 0.004474
B200_TRTLLM_FP8_4 = (4.266 + 4.474) * US
# b200 sglang 0.5.14 sglang_torch_bmm bfloat16, 64 tokens: pre 0.004432, post 0.004864
B200_SGLANG_BF16_64 = (4.432 + 4.864) * US
# h200 trtllm fp8 (trtllm_fp8_block_scaling_bmm_out), 4 tokens: pre 0.007466, post 0.007802
H200_TRTLLM_FP8_4 = (7.466 + 7.802) * US
# b200 sglang bfloat16, 128 heads (attention DP), 64 tokens: pre 0.006627, post 0.006528
B200_SGLANG_BF16_128H_64 = (6.627 + 6.528) * US


def _table(model: str, gpu: str, backend: str | None, layout: str):  # type: ignore[no-untyped-def]
    arch = arch_of(model)
    return mla_bmm_table(
        arch, gpu, backend, parse_layout(layout), WeightScheme.as_shipped(arch)
    )  # fmt: skip


def test_the_kv_b_weight_as_each_checkpoint_stores_it() -> None:
    """R1's FP8 checkpoint stores kv_b_proj in 128 x 128 block FP8; NVIDIA's NVFP4 R1 leaves
    every self_attn projection in BF16 (its exclude list)."""
    r1, fp4 = arch_of("deepseek-r1"), arch_of("deepseek-r1-0528-fp4")
    assert kv_b_weight(r1, WeightScheme.as_shipped(r1)) == "fp8_block"
    assert kv_b_weight(fp4, WeightScheme.as_shipped(fp4)) == "bfloat16"


def test_the_tables_are_the_measured_pairs() -> None:
    assert _table("deepseek-r1", "b200", "trtllm", "tp8").seconds_at(4) == pytest.approx(
        B200_TRTLLM_FP8_4, rel=1e-3
    )
    # SGLang dequantizes block FP8 to BF16: its BF16 rows price the FP8 checkpoint too
    assert _table("deepseek-r1", "b200", "sglang", "tp8").seconds_at(64) == pytest.approx(
        B200_SGLANG_BF16_64, rel=1e-3
    )
    assert _table("deepseek-r1", "h200-sxm", "trtllm", "tp8").seconds_at(4) == pytest.approx(
        H200_TRTLLM_FP8_4, rel=1e-3
    )
    # attention DP: every rank runs all 128 heads
    assert _table("deepseek-r1", "b200", "sglang", "dp8-ep8").seconds_at(64) == pytest.approx(
        B200_SGLANG_BF16_128H_64, rel=1e-3
    )


@pytest.mark.parametrize(
    ("model", "gpu", "backend"),
    [
        ("llama-3.1-70b", "b200", "sglang"),  # no MLA
        ("deepseek-r1", "mi300x", "sglang"),  # no table on AMD
        ("deepseek-r1", "b200", "vllm"),  # vLLM's path not read: no table kept
        ("deepseek-r1", "b200", None),  # a profile without kernel tables
    ],
)
def test_none_where_nothing_measured_the_kernel(model: str, gpu: str, backend: str | None) -> None:
    assert _table(model, gpu, backend, "tp8") is None


def _without(profile: EngineProfile) -> EngineProfile:
    ops = tuple(op for op in profile.op_curve_ops if op != "mla_bmm")
    return dataclasses.replace(profile, op_curve_ops=ops)


def _step(profile: EngineProfile, tokens: int, seqs: int, context: int) -> float:
    arch = arch_of("deepseek-r1")
    model = step_time_model(
        arch, get_hardware("b200"), parse_layout("tp8"),
        scheme=WeightScheme.as_shipped(arch), kv_dtype=KVDType.FP8, profile=profile,
    )  # fmt: skip
    return model.step_time_s(tokens, seqs, context, context)


def test_a_decode_step_pays_the_pair_in_place_of_two_floors() -> None:
    """R1 on B200 TP 8 under TensorRT-LLM, 4 sequences: the decode step is memory-bound, so
    each of the 61 layers adds the measured pair less the two 1 us floors it replaces:
    61 x (8.740 - 2) us = 0.4111 ms."""
    profile = engine_profile(EngineName.TRTLLM, "1.3.0")
    added = _step(profile, 4, 4, 4 * 1_536) - _step(_without(profile), 4, 4, 4 * 1_536)
    assert added == pytest.approx(61 * (B200_TRTLLM_FP8_4 - 2 * US), rel=1e-3)


def test_a_prefill_pass_runs_no_absorbed_bmm() -> None:
    """A pass that prefills runs MLA's MHA form (kv_b as a GEMM): it takes neither the table
    nor the floors the table replaces, so it is 61 x 2 floors cheaper than without the table."""
    profile = engine_profile(EngineName.TRTLLM, "1.3.0")
    saved = _step(_without(profile), 2_048, 1, 2_048) - _step(profile, 2_048, 1, 2_048)
    assert saved == pytest.approx(61 * 2 * US, rel=1e-6)
