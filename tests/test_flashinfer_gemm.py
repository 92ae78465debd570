"""SGLang's dense block-FP8 GEMMs on FlashInfer (perf/flashinfer_gemm.py): the measured line's
FLOP/s, where it prices a step (`--fp8-gemm-backend flashinfer_trtllm`, SGLang, block-FP8
linears, an sm100 GPU) and where it does not, and the InferenceX rows that ran it
(benchmarks/fidelity.py `_sglang_fp8_gemm_backend`)."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest
from pydantic import ValidationError

from capcliff.analysis.deployment import resolve
from capcliff.analysis.deployment_settings import DeploymentSettings, settings_of
from capcliff.analysis.evaluate.replica_models import replica_models
from capcliff.catalog.catalogs import get_hardware, get_model
from capcliff.catalog.layout import parse_layout
from capcliff.perf.flashinfer_gemm import flashinfer_block_fp8_curve
from tests.simtools import benchmark_module

ROOT = Path(__file__).resolve().parents[1]


def test_the_line_at_2048_tokens_is_the_measured_gemm() -> None:
    # sglang PR #13528: M 2048 x N 24576 x K 7168 in 1632.544 us
    # 2 x 2048 x 24576 x 7168 = 7.2155e11 FLOPs -> 4.42e14 FLOP/s
    curve = flashinfer_block_fp8_curve("b200")
    assert curve is not None
    assert curve.flops_per_s_at(2048) == pytest.approx(721_554_505_728 / 1632.544041e-6)
    assert curve.flops_per_s_at(2048) == pytest.approx(442.0e12, rel=1e-3)
    # beyond the last measured count the rate holds; the FLOPs carry the time (no floor)
    assert curve.flops_per_s_at(8192) == curve.flops_per_s_at(2048)
    assert curve.floor_at(8192) == 0.0


@pytest.mark.parametrize("gpu", ["h200-sxm", "mi355x"])
def test_no_line_off_sm100(gpu: str) -> None:
    assert flashinfer_block_fp8_curve(gpu) is None


def _prefill_s(gpu: str, engine: str = "sglang", **settings: object) -> float:
    """Seconds of one 8,192-token prefill of DeepSeek-R1 (FP8) at TP 8."""
    dep = resolve(
        get_model("deepseek-r1"), get_hardware(gpu), settings_of({"engine": engine, **settings})
    )
    memory = dep.memory(parse_layout("tp8"), 16384)
    _, steps = replica_models(dep, memory, {})
    return steps.step_time_s(8192, 1, 0, 8192 * 8193 / 2)


def test_flashinfer_slows_the_dense_gemms_of_a_prefill() -> None:
    """The dense GEMMs' FLOPs go at FlashInfer's 442 TFLOP/s in place of the DeepGEMM line's
    (0.575 x 4.5 PFLOP/s = 2.59 at 8,192 tokens): they take 5.9x as long, the step less than
    that (the experts, attention and the all-reduces stay)."""
    default = _prefill_s("b200")
    slow = _prefill_s("b200", fp8_gemm_backend="flashinfer_trtllm")
    assert default < slow < 2590 / 442 * default
    assert _prefill_s("b200", fp8_gemm_backend="deep_gemm") == default


@pytest.mark.parametrize(("gpu", "engine"), [("h200-sxm", "sglang"), ("b200", "trtllm")])
def test_the_setting_leaves_other_gpus_and_engines_alone(gpu: str, engine: str) -> None:
    default = _prefill_s(gpu, engine)
    assert _prefill_s(gpu, engine, fp8_gemm_backend="flashinfer_trtllm") == default


def test_an_unknown_backend_is_refused_with_the_valid_names() -> None:
    with pytest.raises(ValidationError, match="valid: deep_gemm, flashinfer_trtllm"):
        DeploymentSettings(fp8_gemm_backend="cutlass")


def _rows() -> dict[str, dict[str, str]]:
    with (ROOT / "benchmarks" / "data" / "public_serving_rows.csv").open(newline="") as f:
        return {r["row_id"]: r for r in csv.DictReader(f)}


@pytest.mark.parametrize(
    ("row", "engine", "backend"),
    [
        ("P080", "sglang", "flashinfer_trtllm"),  # R1 FP8, 8 x B200, InferenceX
        ("P113", "sglang", "flashinfer_trtllm"),  # R1 FP8, 8 x B300, InferenceX
        ("P042", "sglang", None),  # H200: SGLang's defaults (DeepGEMM)
        ("P016", "trtllm", None),  # TensorRT-LLM on B200
    ],
)
def test_inferencex_blackwell_sglang_rows_ran_flashinfer(
    row: str, engine: str, backend: str | None
) -> None:
    fidelity = benchmark_module("fidelity")
    assert fidelity._sglang_fp8_gemm_backend(_rows()[row], engine) == backend
