"""The memory, sweep and plan reports open with the same header, spelled the same way."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from capcliff.cli import app
from capcliff.report_header import ReportHeader, SimulationHeader

runner = CliRunner()
COMMON = ["--gpus", "1", "--kv-dtype", "fp8", "--max-model-len", "8192", "--engine", "sglang"]
WORKLOAD = ["--isl", "100", "--osl", "50", "--num-requests", "40"]


def _json(*args: str) -> dict:  # type: ignore[type-arg]
    result = runner.invoke(app, [*args, "--format", "json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.output)  # type: ignore[no-any-return]


def test_memory_sweep_and_plan_share_one_header() -> None:
    memory = _json("memory", "llama-3.1-8b", *COMMON)
    sweep = _json("sweep", "llama-3.1-8b", *COMMON, *WORKLOAD, "--concurrency", "8")
    plan = _json("plan", "llama-3.1-8b", *COMMON, *WORKLOAD, "--arrival", "batch")
    header = {key: memory[key] for key in ReportHeader.model_fields}
    # What the flags asked for, read back: one H200 (the default GPU), SGLang, fp8 KV, 8,192 tokens,
    # the checkpoint's own bf16 weights, no calibration file.
    assert header == {
        "schema_version": 2,
        "model": "llama-3.1-8b",
        "hardware": "h200-sxm",
        "gpus": 1,
        "engine": "sglang",
        "weight_dtype": "bf16",
        "kv_dtype": "fp8",
        "max_model_len": 8192,
        "overheads": "modeled",
    }
    for report in (sweep, plan):
        assert {key: report[key] for key in ReportHeader.model_fields} == header


def test_simulating_reports_also_name_policy_workload_and_seed() -> None:
    sweep = _json("sweep", "llama-3.1-8b", *COMMON, *WORKLOAD, "--concurrency", "8", "--seed", "3")
    plan = _json("plan", "llama-3.1-8b", *COMMON, *WORKLOAD, "--seed", "3", "--arrival", "batch")
    for report in (sweep, plan):
        sim = {key: report[key] for key in SimulationHeader.model_fields}
        assert sim["policy"] == "sglang"
        assert sim["num_requests"] == 40
        assert sim["seed"] == 3


def test_the_header_comes_first_in_every_report() -> None:
    memory = _json("memory", "llama-3.1-8b", "--gpus", "1")
    assert list(memory)[: len(ReportHeader.model_fields)] == list(ReportHeader.model_fields)
