"""vLLM's Marlin MXFP4 MoE line (perf/marlin_moe.py): the measured layer's FLOP/s, where it
prices a step (MXFP4 experts under `--moe-backend marlin` on Hopper) and where it does not, and
the GPUStack gpt-oss rows that ran it (benchmarks/fidelity.py `_vllm_mxfp4_backend`)."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from capcliff.analysis.deployment import Deployment, resolve
from capcliff.analysis.deployment_settings import settings_of
from capcliff.analysis.evaluate.replica_models import replica_models
from capcliff.catalog.catalogs import get_hardware, get_model
from capcliff.catalog.layout import parse_layout
from capcliff.perf.marlin_moe import marlin_mxfp4_curve
from tests.simtools import benchmark_module

ROOT = Path(__file__).resolve().parents[1]


def test_the_line_at_8192_tokens_is_the_measured_layer() -> None:
    # 2 x 8192 tokens x top-16 x 3 matrices x 3584 x 3072 = 8.6587e12 FLOPs in 47.013 ms
    flops = 2 * 8192 * 16 * 3 * 3584 * 3072
    curve = marlin_mxfp4_curve("h100-sxm")
    assert curve is not None
    assert curve.flops_per_s_at(8192) == pytest.approx(flops / 47.013e-3, rel=1e-6)
    assert curve.flops_per_s_at(8192) == pytest.approx(184.2e12, rel=1e-3)


@pytest.mark.parametrize("gpu", ["b200", "mi300x"])
def test_no_line_off_hopper(gpu: str) -> None:
    assert marlin_mxfp4_curve(gpu) is None


def _prefill_s(model: str, gpu: str, **settings: object) -> float:
    """Seconds of one 8,192-token prefill step (64 prompts of 128 tokens) on one GPU."""
    dep: Deployment = resolve(
        get_model(model), get_hardware(gpu), settings_of({"engine": "vllm", **settings})
    )
    memory = dep.memory(parse_layout("tp1"), 4096)
    _, steps = replica_models(dep, memory, {})
    return steps.step_time_s(8192, 64, 8192, 64 * 128 * 129 / 2)


def test_marlin_slows_mxfp4_experts_on_hopper() -> None:
    """By default the experts' FLOPs go at the dense GEMM line (777 TFLOP/s at 8,192 tokens on
    H100), under Marlin at 184: the experts (4.78 of gpt-oss-20b's 6.06 GFLOP a token) take
    777 / 184 = 4.2x as long, the step less than that (dense layers and attention stay)."""
    default = _prefill_s("gpt-oss-20b", "h100-sxm")
    marlin = _prefill_s("gpt-oss-20b", "h100-sxm", moe_backend="marlin")
    assert 3 * default < marlin < 777 / 184 * default


def test_marlin_leaves_other_expert_formats_alone() -> None:
    default = _prefill_s("qwen3-30b-a3b", "h100-sxm")
    assert _prefill_s("qwen3-30b-a3b", "h100-sxm", moe_backend="marlin") == default


def _rows() -> dict[str, dict[str, str]]:
    with (ROOT / "benchmarks" / "data" / "public_serving_rows.csv").open(newline="") as f:
        return {r["row_id"]: r for r in csv.DictReader(f)}


@pytest.mark.parametrize(
    ("row", "backend"),
    [
        ("P210", "marlin"),  # gpt-oss-120b, one H100, GPUStack
        ("P213", "marlin"),  # gpt-oss-120b, two H100, GPUStack
        ("P216", "marlin"),  # gpt-oss-20b, one H100, GPUStack
        ("P206", None),  # DeepSeek-R1: FP8 experts
        ("P218", None),  # Qwen3-235B: BF16 experts
        ("P223", None),  # not GPUStack's image
    ],
)
def test_gpustack_gpt_oss_rows_ran_marlin(row: str, backend: str | None) -> None:
    assert benchmark_module("fidelity")._vllm_mxfp4_backend(_rows()[row], "vllm") == backend
