"""benchmarks/fidelity.py's attention-DP balance per row: InferenceX's DeepSeek-R1 TensorRT-LLM
scripts (dsr1_fp{4,8}_b200_trt*.sh, dsr1_fp8_h200_trt*.sh) write `attention_dp_config:
{enable_balance: true, timeout_iters: 60, batching_wait_iters: 0}` whenever DP_ATTENTION is true,
the MTP scripts alike; no other row runs it (TensorRT-LLM's default is off)."""

from __future__ import annotations

import csv
from pathlib import Path
from types import ModuleType

import pytest

from capcliff.calibrate.benchmarks import engine_of, layout_of
from tests.simtools import benchmark_module

ROOT = Path(__file__).resolve().parents[1]


def _fidelity() -> ModuleType:
    return benchmark_module("fidelity")


def _balance(name: str, row: str) -> str | None:
    with (ROOT / "benchmarks" / "data" / name).open(newline="") as f:
        r = next(r for r in csv.DictReader(f) if r["row_id"] == row)
    engine = engine_of(r["engine"], r["engine_version"]) or r["engine"]
    result: str | None = _fidelity()._adp_balance(r, engine, layout_of(r["parallelism"]))
    return result


@pytest.mark.parametrize(
    ("row", "balance"),
    [
        ("P012", "60:0"),  # TensorRT-LLM, TP 8 + EP 8 + DP attention, FP8 B200
        ("P162", "60:0"),  # FP4 B200, DP attention, 8k prompts
        ("P015", None),  # TP 8 + EP 8, no DP attention
        ("P010", None),  # TP 8
    ],
)
def test_serving_rows(row: str, balance: str | None) -> None:
    assert _balance("public_serving_rows.csv", row) == balance


def test_speculative_rows_under_attention_dp_run_it_too() -> None:
    assert _balance("public_speculative_rows.csv", "S008") == "60:0"  # MTP, DP attention
    assert _balance("public_speculative_rows.csv", "S005") is None  # MTP, TP 8 + EP 8
