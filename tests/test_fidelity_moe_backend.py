"""benchmarks/fidelity.py's MoE backend per row: the TensorRT-LLM R1 FP8 rows on B200 that ran
DEEPGEMM (InferenceX's dsr1_fp8_b200_trt.sh before #594 of 2026-01-29, its MTP script before
#632 of 2026-02-05, and DEEPGEMM under attention DP) are priced with it; the rest take the engine
default (TRTLLM on Blackwell, perf/moe_tables.py)."""

from __future__ import annotations

import csv
from pathlib import Path
from types import ModuleType

import pytest

from tests.simtools import benchmark_module

ROOT = Path(__file__).resolve().parents[1]


def _fidelity() -> ModuleType:
    return benchmark_module("fidelity")


def _rows(name: str) -> dict[str, dict[str, str]]:
    with (ROOT / "benchmarks" / "data" / name).open(newline="") as f:
        return {r["row_id"]: r for r in csv.DictReader(f)}


@pytest.mark.parametrize(
    ("row", "backend"),
    [
        ("P015", "deepgemm"),  # 2025-12-15, TP 8 + EP 8: MOE_BACKEND="DEEPGEMM"
        ("P012", "deepgemm"),  # 2025-12-15, attention DP
        ("P010", None),  # 2026-05-18, TP 8: TRTLLM
        ("P123", None),  # 2026-01-29, the 1.2.0rc6 image and TRTLLM of #594
        ("P044", None),  # FP4: TRTLLM at every date
    ],
)
def test_serving_rows(row: str, backend: str | None) -> None:
    r = _rows("public_serving_rows.csv")[row]
    assert _fidelity()._moe_backend(r, "trtllm") == backend


@pytest.mark.parametrize(
    ("row", "backend"),
    [
        ("S005", "deepgemm"),  # MTP, 2026-01-14: the MTP script still said DEEPGEMM
        ("S052", None),  # MTP, 2026-02-05, TP 8: TRTLLM from #632
        ("S008", "deepgemm"),  # MTP, 2026-02-05, attention DP: DEEPGEMM
    ],
)
def test_speculative_rows(row: str, backend: str | None) -> None:
    r = _rows("public_speculative_rows.csv")[row]
    assert _fidelity()._moe_backend(r, "trtllm") == backend


@pytest.mark.parametrize(
    ("row", "backend"),
    [
        ("P206", "triton"),  # GPUStack R1 on 8 x H200, vLLM 0.11.0 from PyPI: no DeepGEMM
        ("P209", "triton"),
        ("P210", None),  # gpt-oss: MXFP4 experts (`_vllm_mxfp4_backend`), not block FP8
        ("P218", None),  # Qwen3-235B: not DeepSeek's expert shape
    ],
)
def test_gpustacks_r1_rows_ran_vllms_triton_moe(row: str, backend: str | None) -> None:
    r = _rows("public_serving_rows.csv")[row]
    assert _fidelity()._vllm_block_fp8_backend(r, "vllm") == backend
