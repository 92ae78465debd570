"""benchmarks/data/public_serving_rows.csv: the public rows benchmarks/fidelity.py validates on."""

from __future__ import annotations

import csv
import math
import re
from pathlib import Path

ROOT = Path(__file__).parent.parent
ROWS = ROOT / "benchmarks" / "data" / "public_serving_rows.csv"
# The columns of shared/reference/serving_benchmarks.csv (fidelity.py reads both files alike).
COLUMNS = [
    "row_id", "model", "hardware", "num_gpus", "parallelism", "engine", "engine_version",
    "server_flags", "benchmark_tool", "dataset", "input_len", "output_len", "num_requests",
    "concurrency", "duration_s", "request_throughput_req_s", "output_throughput_tok_s",
    "total_or_other_throughput", "mean_ttft_ms", "median_ttft_ms", "p99_ttft_ms",
    "mean_tpot_ms", "mean_itl_ms", "mean_e2e_latency_ms", "median_e2e_latency_ms", "notes",
    "source", "reliability",
]  # fmt: skip


def _rows() -> list[dict[str, str]]:
    with ROWS.open(newline="") as f:
        return list(csv.DictReader(f))


def test_columns_match_the_reference_csv() -> None:
    with ROWS.open(newline="") as f:
        assert next(csv.reader(f)) == COLUMNS


def test_every_row_has_a_source_and_parses() -> None:
    rows = _rows()
    assert len(rows) >= 40
    assert len({r["row_id"] for r in rows}) == len(rows)
    for r in rows:
        # a file at a commit, or a pull request or issue thread (the post quoting the block)
        pinned = re.search(
            r"@[0-9a-f]{7,40}|github\.com/[\w.-]+/[\w.-]+/(pull|issues)/\d+", r["source"]
        )
        assert "github.com/" in r["source"] and pinned, r
        for column in ("input_len", "output_len", "concurrency", "num_gpus"):
            assert int(r[column]) > 0, (r["row_id"], column)
        for column in ("output_throughput_tok_s", "mean_ttft_ms", "mean_tpot_ms"):
            value = float(r[column])
            assert math.isfinite(value) and value > 0, (r["row_id"], column)


def test_output_throughput_is_the_clients_tokens_over_their_latency() -> None:
    """Closed loop (Little's law): throughput = clients x mean output tokens / mean end-to-end
    latency. InferenceX draws output lengths uniformly in [0.8, 1] x OSL (--random-range-ratio
    0.8, mean 0.9 x OSL); the rows' throughput is the per-GPU figure x TP. Both hold if every
    row agrees within a few percent (the tail of the run, when fewer clients remain, is the
    rest)."""
    for r in _rows():
        if "InferenceX" not in r["benchmark_tool"]:
            continue
        clients, osl = int(r["concurrency"]), int(r["output_len"])
        expected = clients * 0.9 * osl / (float(r["mean_e2e_latency_ms"]) / 1e3)
        assert abs(expected / float(r["output_throughput_tok_s"]) - 1) < 0.06, r["row_id"]


def test_burst_rows_generated_every_prompts_tokens_within_their_duration() -> None:
    """GPUStack's vLLM V1 rows send every prompt at once and ran without --ignore-eos:
    `vllm bench serve` divides the generated tokens by the duration, and only cases whose
    requests produced at least 98 % of prompts x output length were kept."""
    burst = [r for r in _rows() if "gpustack" in r["source"]]
    assert len(burst) >= 15
    for r in burst:
        assert r["engine"] == "vLLM" and r["concurrency"] == r["num_requests"], r["row_id"]
        generated = float(r["output_throughput_tok_s"]) * float(r["duration_s"])
        nominal = int(r["num_requests"]) * int(r["output_len"])
        assert 0.98 <= generated / nominal <= 1.0 + 1e-3, r["row_id"]


def test_no_row_repeats_a_reference_row() -> None:
    reference = Path("/work/shared/reference/serving_benchmarks.csv")
    if not reference.exists():
        return
    with reference.open(newline="") as f:
        seen = {(r["mean_ttft_ms"], r["mean_tpot_ms"]) for r in csv.DictReader(f)}
    for r in _rows():
        ttft, tpot = float(r["mean_ttft_ms"]), float(r["mean_tpot_ms"])
        for a, b in seen:
            if a and b:
                assert not (math.isclose(ttft, float(a)) and math.isclose(tpot, float(b)))


def test_p216_and_p217_differ_only_in_async_scheduling() -> None:
    """docs/validation.md (vLLM V1: the host time the bursts measure) bounds V1's non-overlapped
    host time per step by these two rows' TPOT gap, 178.91 - 75.14 = 103.77 ms: that holds only
    while the rows share everything but `--async-scheduling` (GPUStack's gpt-oss-20b/h100 page)."""
    rows = {r["row_id"]: r for r in _rows()}
    sync, overlapped = rows["P216"], rows["P217"]
    same = ("model", "hardware", "num_gpus", "parallelism", "engine", "engine_version",
            "benchmark_tool", "dataset", "input_len", "output_len", "num_requests", "concurrency",
            "source")  # fmt: skip
    for column in same:
        assert sync[column] == overlapped[column], column
    assert overlapped["server_flags"] == sync["server_flags"] + " --async-scheduling"
    assert math.isclose(float(sync["mean_tpot_ms"]) - float(overlapped["mean_tpot_ms"]), 103.77)


SPECULATIVE_ROWS = ROOT / "benchmarks" / "data" / "public_speculative_rows.csv"
SPEC_COLUMNS = ["spec_method", "spec_num_draft_tokens", "spec_accept_length", "spec_source"]


def _speculative_rows() -> list[dict[str, str]]:
    with SPECULATIVE_ROWS.open(newline="") as f:
        return list(csv.DictReader(f))


def test_speculative_rows_add_their_settings_to_the_reference_columns() -> None:
    with SPECULATIVE_ROWS.open(newline="") as f:
        assert next(csv.reader(f)) == COLUMNS + SPEC_COLUMNS


def test_every_speculative_row_is_mtp_with_its_draft_count_and_sources() -> None:
    """SGLang's DeepSeek-R1 MTP recipes draft a chain of 2 (NVIDIA) or 3 (AMD) tokens;
    TensorRT-LLM's 3, or 1 with attention DP (InferenceX launch scripts)."""
    rows = _speculative_rows()
    assert len(rows) >= 40
    for r in rows:
        assert r["spec_method"] == "mtp", r["row_id"]
        assert int(r["spec_num_draft_tokens"]) in (1, 2, 3), r["row_id"]
        assert "/actions/runs/" in r["source"] and "SemiAnalysisAI/InferenceX" in r["spec_source"]
        if r["engine"] == "TensorRT-LLM":
            dpa = "DP attention" in r["parallelism"] and "no DP" not in r["parallelism"]
            assert int(r["spec_num_draft_tokens"]) == (1 if dpa else 3), r["row_id"]


def test_speculative_throughput_is_the_clients_tokens_over_their_latency() -> None:
    """The same closed-loop identity as the plain rows: speculation changes the latency, not
    the client."""
    for r in _speculative_rows():
        clients, osl = int(r["concurrency"]), int(r["output_len"])
        expected = clients * 0.9 * osl / (float(r["mean_e2e_latency_ms"]) / 1e3)
        assert abs(expected / float(r["output_throughput_tok_s"]) - 1) < 0.06, r["row_id"]
