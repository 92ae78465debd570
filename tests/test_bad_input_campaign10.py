"""Bad input that a tenth campaign (benchmarks/fuzz_cases10.py) found: one test per class of
finding, each case named for it.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from test_bad_input import _one_line_error

from capcliff.files import parse_json

RUN = {
    "date": "20250101-000000", "backend": "vllm", "model_id": "meta-llama/Llama-3.1-8B-Instruct",
    "tokenizer_id": "meta-llama/Llama-3.1-8B-Instruct", "num_prompts": 200,
    "request_rate": "inf", "burstiness": 1.0, "max_concurrency": 32, "duration": 60.0,
    "completed": 200, "total_input_tokens": 204_800, "total_output_tokens": 25_600,
    "request_throughput": 3.3, "output_throughput": 1200.0, "total_token_throughput": 4600.0,
    "mean_ttft_ms": 150.0, "median_ttft_ms": 140.0, "p99_ttft_ms": 300.0, "mean_tpot_ms": 24.0,
    "median_tpot_ms": 24.0, "p99_tpot_ms": 28.8, "mean_itl_ms": 24.0,
}  # fmt: skip
CALIBRATE = ["--model", "llama-3.1-8b", "--gpu", "h100-sxm"]


# A JSON object that names a key twice: Python's reader kept the last unsaid, so a vLLM result
# with `"mean_tpot_ms": 24.0, ..., "mean_tpot_ms": 30.0` was fitted at 30 ms, and a trace row's
# second `arrival_s` replaced its first.


def test_a_benchmark_result_with_a_key_twice_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "r.json"
    path.write_text(json.dumps(RUN)[:-1] + ', "mean_tpot_ms": 30.0}')
    line = _one_line_error(["calibrate", str(path), *CALIBRATE], capsys)
    assert line.endswith("r.json: line 1: (json): 'mean_tpot_ms': key given twice; give it once")


def test_a_trace_row_with_a_key_twice_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "t.jsonl"
    path.write_text('{"arrival_s": 0.0, "input_tokens": 50, "output_tokens": 20, "arrival_s": 9}\n')
    line = _one_line_error(
        ["sweep", "llama-3.1-8b", "--workload", str(path), "--concurrency", "4"], capsys
    )
    assert "trace line 1: (json): 'arrival_s': key given twice" in line


def test_a_model_config_keeps_the_last_of_a_key_twice() -> None:
    # transformers and the engines read config.json with json.load, which keeps the last
    assert parse_json('{"a": 1, "a": 2}', source="config.json") == {"a": 2}
