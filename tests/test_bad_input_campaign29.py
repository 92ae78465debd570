"""What a twenty-ninth campaign (benchmarks/fuzz_cases29.py) found in the files users feed
`capcliff calibrate` and `capcliff check` from the bench tools they run, each written as its tool
writes it. Valid files are read by their tool's own rule: a vLLM 0.6 result names the model by
its first Hub name (`Meta-Llama-3.1-8B-Instruct`), a run without streaming timed no TTFT or TPOT,
requests that stopped at EOS ran the lengths their totals give, 0.7's V1 logged its blocks
alone, SGLang 0.2 logged the free memory around loading, not the weights. Files capcliff cannot
use are refused in one line naming the tool and what capcliff reads.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from test_bad_input import _one_line_error

from capcliff.calibrate.benchmarks import DeploymentFilter, read_benchmark_file
from capcliff.calibrate.compare import model_id_from_log
from capcliff.calibrate.startup_logs import LogFormat, parse_startup_log
from capcliff.catalog.catalogs import catalog_id_of_repo, model_catalog
from capcliff.errors import InputError

LLAMA = DeploymentFilter(hf_repo="meta-llama/Llama-3.1-8B")
CAL = ["--model", "llama-3.1-8b", "--gpu", "h100-sxm"]


def _vllm_run(**changes: object) -> dict[str, object]:
    """A `vllm bench serve --save-result` run: 8 clients, 200 requests of 1,024 tokens in and
    128 out, 500 tok/s, TTFT 150 ms, TPOT 14 ms (8 x 128 / (0.150 + 127 x 0.014) = 531 tok/s by
    Little's law)."""
    return {
        "date": "20240912-101010", "backend": "vllm",
        "model_id": "meta-llama/Llama-3.1-8B-Instruct",
        "num_prompts": 200, "request_rate": "inf", "burstiness": 1.0, "max_concurrency": 8,
        "duration": 51.2, "completed": 200, "total_input_tokens": 204_800,
        "total_output_tokens": 25_600, "output_throughput": 500.0, "mean_ttft_ms": 150.0,
        "mean_tpot_ms": 14.0, "mean_itl_ms": 14.0, **changes,
    }  # fmt: skip


def _sglang_row(**changes: object) -> dict[str, object]:
    """SGLang bench_serving --output-file's row of the same run (random dataset, lengths fixed)."""
    return {
        "backend": "sglang", "dataset_name": "random", "request_rate": math.inf,
        "max_concurrency": 8, "random_input_len": 1024, "random_output_len": 128,
        "random_range_ratio": 1.0, "completed": 200, "total_input_tokens": 204_800,
        "total_output_tokens": 25_600, "output_throughput": 500.0, "mean_e2e_latency_ms": 1928.0,
        "mean_ttft_ms": 150.0, "mean_tpot_ms": 14.0, "mean_itl_ms": 14.0, **changes,
    }  # fmt: skip


def _read(tmp_path: Path, runs: list[dict[str, object]], name: str = "r.jsonl") -> list:
    path = tmp_path / name
    path.write_text("".join(json.dumps(r) + "\n" for r in runs))
    return read_benchmark_file(path, LLAMA)


def _measured(point: object) -> tuple[object, object, object]:
    """(tok/s, TPOT s, TTFT s) of a point."""
    return (point.output_throughput_tok_s, point.mean_tpot_s, point.mean_ttft_s)  # type: ignore[attr-defined]


# --- Meta's renamed Llama 3.1 repositories ---


def test_a_result_naming_meta_llama_3_1_is_llama_3_1s(tmp_path: Path) -> None:
    # vLLM 0.6 (mid-2024) wrote the name the model was served under, Meta's first one; the Hub
    # renamed it meta-llama/Llama-3.1-8B-Instruct (a redirect): refused as another model before
    (point,) = _read(tmp_path, [_vllm_run(model_id="meta-llama/Meta-Llama-3.1-8B-Instruct")])
    assert (point.concurrency, point.input_len, point.output_len) == (8, 1024, 128)


def test_llama_3s_own_meta_name_is_still_another_model(tmp_path: Path) -> None:
    # Llama 3 was never renamed: Meta-Llama-3-8B is not Llama 3.1
    with pytest.raises(InputError, match="the rows are of meta-llama/Meta-Llama-3-8B-Instruct"):
        _read(tmp_path, [_vllm_run(model_id="meta-llama/Meta-Llama-3-8B-Instruct")])


def test_the_old_name_finds_the_card_in_a_log_and_by_repo() -> None:
    log = parse_startup_log(
        "INFO 09-12 10:00:05 llm_engine.py:232] Initializing an LLM engine (v0.6.1) with config: "
        "model='meta-llama/Meta-Llama-3.1-8B-Instruct', dtype=torch.bfloat16\n"
        "INFO 09-12 10:00:22 gpu_executor.py:122] # GPU blocks: 27895, # CPU blocks: 2048\n"
    )
    repos = {mid: card.hf_repo or "" for mid, card in model_catalog().items()}
    assert model_id_from_log(log, repos) == "llama-3.1-8b"
    assert catalog_id_of_repo("meta-llama/Meta-Llama-3.1-70B") == "llama-3.1-70b"


# --- runs without streaming ---


@pytest.mark.parametrize(
    "changes",
    [
        # SGLang --disable-stream, chat: TTFT is the whole latency, TPOT 0, no ITLs
        {"backend": "sglang-oai-chat", "mean_ttft_ms": 1928.0, "mean_tpot_ms": 0.0,
         "mean_itl_ms": 0.0},
        # completions: the first chunk timed a hair after the latency (TPOT a hair below 0)
        {"backend": "sglang-oai", "mean_ttft_ms": 1928.02, "mean_tpot_ms": -0.00016,
         "mean_itl_ms": 0.0},
    ],
    ids=["chat", "completions"],
)  # fmt: skip
def test_an_sglang_run_without_streaming_gives_its_throughput_only(
    tmp_path: Path, changes: dict[str, object]
) -> None:
    # refused before ("mean_tpot_ms: must be a finite number > 0, got 0")
    (point,) = _read(tmp_path, [_sglang_row(**changes)])
    assert _measured(point) == (500.0, None, None)


def test_a_vllm_backend_that_does_not_stream_gives_its_throughput_only(tmp_path: Path) -> None:
    # DeepSpeed-MII's TTFT is left 0 (vLLM: "ttfts is empty if streaming is not supported by
    # backend"), its TPOT the whole latency over 127 tokens: 1,928 / 127 = 15.18 ms, not a TPOT
    run = _vllm_run(
        backend="deepspeed-mii", mean_ttft_ms=0.0, mean_tpot_ms=1928.0 / 127, mean_itl_ms=0.0
    )
    (point,) = _read(tmp_path, [run], "r.json")
    assert _measured(point) == (500.0, None, None)


def test_a_ttft_of_0_beside_timed_itls_is_still_refused(tmp_path: Path) -> None:
    # tokens streamed 14 ms apart cannot have come 0 ms after the request: no run's figures
    with pytest.raises(InputError, match="mean_ttft_ms: must be a finite number > 0, got 0"):
        _read(tmp_path, [_vllm_run(mean_ttft_ms=0.0)], "r.json")


def test_one_token_outputs_keep_their_ttft(tmp_path: Path) -> None:
    # outputs of one token have no gaps (ITL and TPOT 0) yet streamed their first token
    run = _vllm_run(
        total_output_tokens=200, mean_tpot_ms=0.0, mean_itl_ms=0.0, output_throughput=40.0
    )
    (point,) = _read(tmp_path, [run], "r.json")
    assert (point.output_len, point.mean_tpot_s, point.mean_ttft_s) == (1, None, 0.15)


# --- lengths the requests ran ---


def test_requests_that_stopped_at_eos_ran_their_totals_lengths(tmp_path: Path) -> None:
    # a chat backend sends no ignore_eos: 1,024 tokens asked, 200 x 412 = 82,400 given; fitted at
    # 1,024 before
    row = _sglang_row(backend="sglang-oai-chat", random_output_len=1024, total_output_tokens=82_400,
                      output_throughput=540.0)  # fmt: skip
    (point,) = _read(tmp_path, [row])
    assert (point.input_len, point.output_len, point.range_ratio) == (1024, 412, 1.0)


def test_sglang_0_2s_sharegpt_row_runs_its_totals_lengths(tmp_path: Path) -> None:
    # SGLang 0.2 wrote its random_* defaults on every row and no dataset_name; a ShareGPT run's
    # totals give 60,000 / 200 = 300 in and 40,000 / 200 = 200 out
    row = {
        "backend": "sglang", "request_rate": math.inf, "total_input_tokens": 60_000,
        "total_output_tokens": 40_000, "output_throughput": 3000.0, "median_ttft_ms": 2300.0,
        "median_itl_ms": 45.0, "random_input_len": 1024, "random_output_len": 128,
        "random_range_ratio": 1.0, "duration": 13.3, "completed": 200,
    }  # fmt: skip
    (point,) = _read(tmp_path, [row])
    assert (point.concurrency, point.input_len, point.output_len) == (200, 300, 200)


@pytest.mark.parametrize(
    ("ratio", "mean_in", "mean_out"),
    # uniform in [max(int(L x r), 1), L]: r = 0 gives means 512.5 and 64.5; r = 0.5 gives 768 and
    # 96, whose standard errors over 200 requests are 513 / sqrt(2,400) = 10.5 and 1.3 tokens
    [(0.0, 512, 64), (0.5, 790, 97)],
)
def test_totals_that_fit_the_asked_range_keep_it(
    tmp_path: Path, ratio: float, mean_in: int, mean_out: int
) -> None:
    row = _sglang_row(random_range_ratio=ratio, total_input_tokens=200 * mean_in,
                      total_output_tokens=200 * mean_out)  # fmt: skip
    (point,) = _read(tmp_path, [row])
    assert (point.input_len, point.output_len, point.range_ratio) == (1024, 128, ratio)


# --- other tools' files: one line naming the tool and what is read ---

READ = "capcliff does not read; it reads `vllm bench serve --save-result` JSON"


@pytest.mark.parametrize(
    ("result", "tool"),
    [
        ({"time_to_first_token": {"unit": "ms", "avg": 150.0}, "input_config": {"concurrency": 32}},
         "genai-perf's profile_export_genai_perf.json"),
        ({"records": {"ttft": {"unit": "ms", "avg": 150.0}}, "input_config": {}}, "AIPerf's"),
        ({"experiments": [], "version": "2.46.0", "service_kind": "openai"}, "perf_analyzer's"),
        ({"engine": {"version": "0.20.0"}, "request_info": {"num_requests": 200},
          "performance": {"system_output_throughput_tok_s": 1200.0}},
         "a `trtllm-bench --report_json` report"),
        ({"benchmarks": [{"metrics": {}}]}, "a guidellm report"),
        ({"results_num_completed_requests": 200, "num_concurrent_requests": 32,
          "results_mean_output_throughput_token_per_s": 1200.0}, "an llmperf summary"),
    ],
    ids=["genai-perf", "aiperf", "perf-analyzer", "trtllm-bench", "guidellm", "llmperf"],
)  # fmt: skip
def test_another_tools_result_is_refused_by_name(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], result: dict, tool: str
) -> None:
    path = tmp_path / "r.json"
    path.write_text(json.dumps(result, indent=4))
    line = _one_line_error(["calibrate", str(path), *CAL], capsys)
    assert f"completed: missing: this is {tool}" in line and READ in line


@pytest.mark.parametrize(
    ("records", "what"),
    [
        ([{"ttft_s": 0.16, "end_to_end_latency_s": 3.2, "number_output_tokens": 128}],
         "a JSON array of llmperf's individual responses"),
        ([{"benchmark": {"name": "vLLM benchmark"}, "metric": {"name": "median_ttft_ms"}}],
         "a JSON array of PyTorch benchmark records"),
    ],
    ids=["llmperf", "pytorch-json"],
)  # fmt: skip
def test_a_json_array_is_refused_saying_what_is_read(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], records: list, what: str
) -> None:
    # "expected a JSON object per run" before
    path = tmp_path / "r.json"
    path.write_text(json.dumps(records))
    line = _one_line_error(["calibrate", str(path), *CAL], capsys)
    assert f"line 1: {what}" in line and "capcliff reads `vllm bench serve --save-result`" in line


PRINTED = "read from a .json, .jsonl or .csv file"


@pytest.mark.parametrize(
    ("name", "text", "said"),
    [
        ("b.csv", "Metric,avg,min,max\nTime To First Token (ms),150.00,90.00,320.00\n",
         ("this is genai-perf's profile_export_genai_perf.csv", READ)),
        # guidellm's three header rows: groups first (read as "Run Info" named twice before)
        ("b.csv", "Run Info,Run Info,Benchmark\nRun ID,Run Index,Type\n,,\nr1,0,generative\n",
         ("this is guidellm's benchmarks.csv", READ)),
        ("bench.txt", "====== Serving Benchmark Result ======\nSuccessful requests: 200\n",
         ("this is `vllm bench serve` or SGLang `bench_serving`'s printed summary", PRINTED)),
        ("bench.txt", "= PERFORMANCE OVERVIEW\nRequest Throughput (req/sec):   9.3750\n",
         ("this is trtllm-bench's printed report", PRINTED)),
    ],
    ids=["genai-perf-csv", "guidellm-csv", "vllm-printed", "trtllm-bench-printed"],
)  # fmt: skip
def test_another_tools_text_is_refused_by_name(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str, text: str, said: tuple
) -> None:
    path = tmp_path / name
    path.write_text(text)
    line = _one_line_error(["calibrate", str(path), *CAL], capsys)
    assert all(words in line for words in said), line


def test_a_file_neither_log_nor_results_says_which_results_are_read(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "benchmarks.yaml"  # guidellm's report as YAML
    path.write_text("benchmarks:\n- type_: generative_benchmark\n")
    line = _one_line_error(["calibrate", str(path), *CAL], capsys)
    assert "no vLLM, SGLang or TensorRT-LLM start-up line found" in line
    assert "benchmark results are read from a .json, .jsonl or .csv file" in line


# --- start-up logs of releases the fixtures do not cover ---


def test_vllm_0_7s_v1_log_is_v1_with_its_blocks() -> None:
    # VLLM_USE_V1=1 on 0.7.1: the V1 engine core logged V0's words and "# GPU blocks: N" alone
    # (vllm/v1/core/kv_cache_utils.py); read as V0 with no KV figure before
    log = parse_startup_log(
        "INFO 01-30 03:17:58 core.py:45] Initializing an LLM engine (v0.7.1) with config: "
        "model='meta-llama/Llama-3.1-8B-Instruct', dtype=torch.bfloat16, max_seq_len=2048\n"
        "INFO 01-30 03:18:12 gpu_model_runner.py:848] Loading model weights took 14.9889 GB\n"
        "INFO 01-30 03:19:14 kv_cache_utils.py:395] # GPU blocks: 27870\n"
        "INFO 01-30 03:19:14 kv_cache_utils.py:398] Maximum concurrency for 2048 tokens per "
        "request: 217.73x\n"
    )
    assert log.format is LogFormat.VLLM_V1
    assert log.figures["gpu_blocks"].value == 27870


def test_two_engines_logs_joined_are_refused() -> None:
    # a vLLM start followed by an SGLang one was read as whichever printed more of its own
    # phrases (6 of SGLang's against 4 of vLLM V1's), the other's figures dropped unsaid
    logs = Path(__file__).parent / "fixtures" / "logs"
    text = (logs / "vllm_v1_v16_llama31_8b_eager.txt").read_text() + (
        logs / "sglang_s02_qwq_32b_4xl4_tp4.txt"
    ).read_text()
    with pytest.raises(InputError, match="holds start-up lines of vLLM and SGLang"):
        parse_startup_log(text)


SGLANG_0_2 = (
    "[gpu=0] Load weight begin. avail mem=78.58 GB\n"
    "[gpu=0] Load weight end. type=LlamaForCausalLM, dtype=torch.bfloat16, avail mem=63.49 GB\n"
    "[gpu=0] Memory pool end. avail mem=8.52 GB\n"
    "[gpu=0] max_total_num_tokens=444500, max_prefill_tokens=16384, "
    "max_running_requests=4097, context_len=131072\n"
)
SGLANG_0_4 = (
    "[2025-05-01 10:00:06 TP0] Load weight begin. avail mem=78.58 GB\n"
    "[2025-05-01 10:00:20 TP0] Load weight end. type=LlamaForCausalLM, dtype=torch.bfloat16, "
    "avail mem=63.52 GB, mem usage=15.06 GB.\n"
    "[2025-05-01 10:00:20 TP0] KV Cache is allocated. #tokens: 413292, K size: 25.22 GB, "
    "V size: 25.22 GB\n"
)


@pytest.mark.parametrize(
    ("text", "weights", "tokens"),
    # SGLang 0.2 logged the free memory before and after loading, not the "mem usage=" later
    # releases print (before - after: 78.58 - 63.49 = 15.09 GB; "nothing to fit" before); a
    # log that prints its own figure keeps it (15.06, where the difference gives 15.06 too)
    [(SGLANG_0_2, 15.09, 444500), (SGLANG_0_4, 15.06, 413292)],
    ids=["0.2", "0.4.6"],
)
def test_sglang_weights_are_the_free_memory_loading_took(
    text: str, weights: float, tokens: int
) -> None:
    log = parse_startup_log(text)
    assert log.format is LogFormat.SGLANG
    assert math.isclose(log.figures["weights_gib"].value, weights)
    assert log.figures["kv_tokens"].value == tokens


# --- result files handed to `capcliff check` ---

SPEC = """[[scenario]]
name = "s"
model = "llama-3.1-8b"
gpu = "h100-sxm"
layout = "tp1"
engine = "vllm"
{extra}
[scenario.workload]
{workload}
[scenario.expect]
fits = true
"""
FIXED = 'isl = 100\nosl = 100\narrival = "batch"\nnum_requests = 20\nconcurrency = 4'


def test_results_given_as_the_spec_say_so(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "r.jsonl"  # "(toml): Invalid statement (at line 1, column 1)" before
    path.write_text(json.dumps(_sglang_row(request_rate=1e9)) + "\n")
    line = _one_line_error(["check", str(path)], capsys)
    assert "(toml): holds JSON, not a spec" in line


def test_results_given_as_the_calibration_say_so(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "r.json").write_text(json.dumps(_vllm_run()))
    spec = tmp_path / "s.toml"
    spec.write_text(SPEC.format(extra='calibration = "r.json"', workload=FIXED))
    line = _one_line_error(["check", str(spec)], capsys)
    assert "r.json: (toml): holds JSON, not a calibration file" in line
    assert "benchmark results are `capcliff calibrate`'s input" in line


@pytest.mark.parametrize(
    ("row", "tool"),
    [(_sglang_row(request_rate=1e9), "SGLang `bench_serving --output-file`"),
     (_vllm_run(), "`vllm bench serve --save-result`")],
    ids=["sglang", "vllm"],
)  # fmt: skip
def test_results_given_as_a_trace_say_so(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], row: dict, tool: str
) -> None:
    # "'backend': unknown key; valid: input_tokens, output_tokens, arrival_s" before
    (tmp_path / "t.jsonl").write_text(json.dumps(row) + "\n")
    spec = tmp_path / "s.toml"
    spec.write_text(SPEC.format(extra="", workload='trace = "t.jsonl"\nconcurrency = 4'))
    line = _one_line_error(["check", str(spec)], capsys)
    assert f"workload.trace: trace line 1: a {tool} result (a run's totals), not a request" in line
