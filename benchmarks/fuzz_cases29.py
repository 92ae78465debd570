"""The twenty-ninth bad-input campaign's surfaces (issue 23), run by `fuzz_surfaces.py`:

    PYTHONPATH=. python benchmarks/fuzz_surfaces.py tools29 logs29 check29 --jobs 1

The files users feed `capcliff calibrate` and `capcliff check` from the benchmarking tools they
really run, each written in the exact layout its tool writes (field names, units and nesting read
from the tool's source): `vllm bench serve --save-result` and `benchmarks/benchmark_serving.py`
across vLLM 0.6-0.11 (the per-request arrays 0.6 always saved, `max_concurrency` from 0.6.4,
`endpoint_type`/`failed`/`max_concurrent_requests` of 0.10 on, `--append-result` lines, a
non-streaming backend, the `.pytorch.json` beside), SGLang `bench_serving --output-file` rows
(0.2's layout without `dataset_name` or means, 0.4-0.5's, `--output-details`, `--disable-stream`,
chat backends and `--disable-ignore-eos` whose requests stop at EOS), genai-perf's
profile_export_genai_perf JSON/CSV and perf_analyzer's profile_export.json, `trtllm-bench
--report_json` (0.15's and 0.20's layouts) and its printed report, guidellm's report as JSON,
YAML and its multi-row-header CSV, llmperf's summary and individual responses (tools29);
start-up logs of releases the fixtures do not cover (vLLM 0.5.4 TP2, 0.6.1, 0.7.1's opt-in V1,
0.8.5; SGLang 0.2's `[gpu=0]` lines and 0.4.6's; TensorRT-LLM's PyTorch backend 0.20 and 1.0;
logs29); those result files handed to `capcliff check` as a spec, a baseline, a trace or a
calibration (check29).

    PYTHONPATH=. python benchmarks/fuzz_cases29.py

runs every case and prints the four classes the campaign counts (valid input refused, nonsense
accepted, traceback, unclear error: a refusal whose line lacks the words a case says it must
name: the field, the tool, or the formats capcliff reads), then one line per finding. On f5b5870:
54 cases, 15 valid refused, 3 nonsense, 0 tracebacks, 18 unclear; after this campaign's fixes 0 of
each (docs/validation.md, tests/test_bad_input_campaign29.py).
"""

# Data tables: one case per line, some past 100 characters.
# ruff: noqa: E501
from __future__ import annotations

import json
import math
from collections.abc import Callable, Iterator

from fuzz_cases23 import _cal
from fuzz_harness import Case, FileSpec
from fuzz_surfaces import SPEC

LLAMA_REPO = "meta-llama/Meta-Llama-3.1-8B-Instruct"
CAL, CAL_SG, LOG = _cal("r.json"), _cal("r.jsonl"), _cal("server.log")
PROMPTS = 200

# Three closed-loop runs of Llama-3.1-8B on one H100, 200 prompts of 1,024 tokens in and 128
# out: (clients, output tok/s, mean TTFT ms, mean TPOT ms). Each sits within 4 % of Little's
# law: 8 x 128 / (0.150 + 127 x 0.014) = 531 tok/s against 500.
CLOSED = [(8, 500.0, 150.0, 14.0), (32, 1200.0, 160.0, 24.0), (64, 1800.0, 170.0, 32.0)]
# One burst of all 200 (no --max-concurrency, request rate inf): 200 x 128 / (2.4 + 127 x
# 0.045) = 3,155 tok/s against 3,000.
BURST = (None, 3000.0, 2400.0, 45.0)


def _timing(
    clients: int | None, throughput: float, ttft: float, tpot: float, osl: int = 128
) -> dict[str, object]:
    """The result fields both bench tools compute alike (vLLM and SGLang calculate_metrics)."""
    total_out = PROMPTS * osl
    duration = total_out / throughput
    return {
        "duration": duration, "completed": PROMPTS, "total_input_tokens": PROMPTS * 1024,
        "total_output_tokens": total_out, "request_throughput": PROMPTS / duration,
        "output_throughput": throughput, "total_token_throughput": (PROMPTS * 1024 + total_out) / duration,
        "mean_ttft_ms": ttft, "median_ttft_ms": ttft * 0.95, "std_ttft_ms": ttft * 0.2, "p99_ttft_ms": ttft * 2,
        "mean_tpot_ms": tpot, "median_tpot_ms": tpot, "std_tpot_ms": tpot * 0.05, "p99_tpot_ms": tpot * 1.2,
        "mean_itl_ms": tpot, "median_itl_ms": tpot * 0.98, "std_itl_ms": tpot * 0.3, "p99_itl_ms": tpot * 2.5,
    }  # fmt: skip


def _arrays(ttft: float, tpot: float, osl: int = 128) -> dict[str, object]:
    """The per-request arrays (seconds) vLLM 0.6 always saved and `--save-detailed` saves."""
    return {
        "input_lens": [1024] * PROMPTS, "output_lens": [osl] * PROMPTS,
        "ttfts": [ttft / 1e3] * PROMPTS, "itls": [[tpot / 1e3] * (osl - 1)] * 4 + [[]] * (PROMPTS - 4),
        "generated_texts": ["The sky is blue"] * PROMPTS, "errors": [""] * PROMPTS,
    }  # fmt: skip


def vllm_060(run: tuple[int | None, float, float, float]) -> dict[str, object]:
    """benchmarks/benchmark_serving.py --save-result of vLLM 0.6.0-0.6.3 (no --max-concurrency
    yet: every prompt at once when the rate is inf)."""
    clients, throughput, ttft, tpot = run
    return {
        "date": "20240912-101010", "backend": "vllm", "model_id": LLAMA_REPO, "tokenizer_id": LLAMA_REPO,
        "best_of": 1, "use_beam_search": False, "num_prompts": PROMPTS, "request_rate": "inf",
        **_timing(clients, throughput, ttft, tpot), **_arrays(ttft, tpot),
    }  # fmt: skip


def vllm_064(run: tuple[int | None, float, float, float]) -> dict[str, object]:
    """The same from 0.6.4 to 0.7 (burstiness and max_concurrency written)."""
    clients = run[0]
    return {**vllm_060(run), "burstiness": 1.0, "max_concurrency": clients}


def vllm_08(run: tuple[int | None, float, float, float]) -> dict[str, object]:
    """benchmark_serving.py of vLLM 0.8-0.9 (goodput null, no beam-search fields)."""
    clients, throughput, ttft, tpot = run
    return {
        "date": "20250501-101010", "backend": "vllm", "model_id": LLAMA_REPO, "tokenizer_id": LLAMA_REPO,
        "num_prompts": PROMPTS, "request_rate": "inf", "burstiness": 1.0, "max_concurrency": clients,
        **_timing(clients, throughput, ttft, tpot), "request_goodput": None, **_arrays(ttft, tpot),
    }  # fmt: skip


def vllm_011(run: tuple[int | None, float, float, float], **extra: object) -> dict[str, object]:
    """`vllm bench serve --save-result` of vLLM 0.10-0.11 (vllm/benchmarks/serve.py: endpoint_type,
    label, failed, the peak figures; the arrays only under --save-detailed)."""
    clients, throughput, ttft, tpot = run
    return {
        "date": "20251010-101010", "endpoint_type": "vllm", "backend": "vllm", "label": None,
        "model_id": LLAMA_REPO, "tokenizer_id": LLAMA_REPO, "num_prompts": PROMPTS, "request_rate": "inf",
        "burstiness": 1.0, "max_concurrency": clients, **_timing(clients, throughput, ttft, tpot),
        "failed": 0, "request_goodput": None, "max_output_tokens_per_s": throughput * 1.3,
        "max_concurrent_requests": clients or PROMPTS, **extra,
    }  # fmt: skip


def sg_04(run: tuple[int | None, float, float, float], **extra: object) -> dict[str, object]:
    """SGLang 0.4-0.5 bench_serving --output-file row (python/sglang/bench_serving.py: its own
    arguments, then the metrics; request_rate inf is JSON's Infinity)."""
    clients, throughput, ttft, tpot = run
    timing = _timing(clients, throughput, ttft, tpot)
    e2e = ttft + 127 * tpot
    return {
        "backend": "sglang", "dataset_name": "random", "request_rate": math.inf, "max_concurrency": clients,
        "sharegpt_output_len": None, "random_input_len": 1024, "random_output_len": 128, "random_range_ratio": 1.0,
        "duration": timing["duration"], "completed": PROMPTS, "total_input_tokens": PROMPTS * 1024,
        "total_output_tokens": PROMPTS * 128, "total_output_tokens_retokenized": PROMPTS * 128 - 3,
        "request_throughput": timing["request_throughput"], "input_throughput": PROMPTS * 1024 / timing["duration"],  # type: ignore[operator]
        "output_throughput": throughput, "mean_e2e_latency_ms": e2e, "median_e2e_latency_ms": e2e,
        "std_e2e_latency_ms": e2e * 0.1, "p99_e2e_latency_ms": e2e * 1.5,
        **{k: v for k, v in timing.items() if k.endswith("_ms") and not k.startswith("p99_itl")},
        "p95_itl_ms": tpot * 2, "p99_itl_ms": tpot * 2.5, "concurrency": (clients or PROMPTS) * 0.97,
        "accept_length": None, **extra,
    }  # fmt: skip


def sg_02(rate_row: dict[str, object]) -> dict[str, object]:
    """SGLang 0.2 bench_serving row: no dataset_name, no max_concurrency, medians only."""
    keep = ("backend", "request_rate", "total_input_tokens", "total_output_tokens", "total_output_tokens_retokenized",
            "mean_e2e_latency_ms", "median_e2e_latency_ms", "median_ttft_ms", "median_itl_ms", "output_throughput",
            "random_input_len", "random_output_len", "random_range_ratio", "duration", "completed")  # fmt: skip
    return {k: rate_row[k] for k in keep}


def _lines(rows: list[dict[str, object]]) -> str:
    return "\n".join(json.dumps(r) for r in rows) + "\n"


def _points(
    expected: list[tuple[int, int, int, float | None, float | None, float | None]],
) -> Callable[[str], str | None]:
    """A reading of `calibrate --format json`: each point's (clients, input_len, output_len,
    tok/s, TPOT s, TTFT s), worked by hand from the file (None: not measured)."""

    def check(out: str) -> str | None:
        try:
            points = json.loads(out)["points"]
        except (ValueError, KeyError):
            return "not a benchmark fit"
        got = [
            (p["concurrency"], p["input_len"], p["output_len"], p["measured"].get("output_throughput_tok_s"),
             p["measured"].get("mean_tpot_s"), p["measured"].get("mean_ttft_s"))
            for p in points
        ]  # fmt: skip
        for g, e in zip(got, expected, strict=False):
            same = g[:3] == e[:3] and all(
                (a is None) == (b is None) and (a is None or math.isclose(a, b, rel_tol=1e-9))
                for a, b in zip(g[3:], e[3:], strict=True)  # type: ignore[arg-type]
            )
            if not same:
                return f"point {g} (by hand {e})"
        return None if len(got) == len(expected) else f"{len(got)} points (by hand {len(expected)})"

    return check


def _closed(osl: int = 128, isl: int = 1024) -> Callable[[str], str | None]:
    return _points([(c, isl, osl, t, tp / 1e3, tt / 1e3) for c, t, tt, tp in CLOSED])


BURST_POINT = _points([(PROMPTS, 1024, 128, 3000.0, 0.045, 2.4)])

# --- other tools' files, as each writes them -----------------------------------------------------

GENAI_METRIC = {
    "p25": 140.0,
    "p50": 148.0,
    "p75": 160.0,
    "p90": 200.0,
    "p95": 240.0,
    "p99": 300.0,
    "min": 90.0,
    "max": 320.0,
    "std": 30.0,
}
# genai-perf 0.0.x profile_export_genai_perf.json (genai_perf/export_data/json_exporter.py):
# one object per metric with its unit, then input_config (the CLI's arguments)
GENAI = {
    "request_throughput": {"unit": "requests/sec", "avg": 3.3},
    "request_latency": {"unit": "ms", "avg": 3000.0, **GENAI_METRIC},
    "time_to_first_token": {"unit": "ms", "avg": 150.0, **GENAI_METRIC},
    "time_to_second_token": {"unit": "ms", "avg": 24.0, **GENAI_METRIC},
    "inter_token_latency": {"unit": "ms", "avg": 24.0, **GENAI_METRIC},
    "output_token_throughput": {"unit": "tokens/sec", "avg": 1200.0},
    "output_token_throughput_per_request": {"unit": "tokens/sec", "avg": 37.5, **GENAI_METRIC},
    "output_sequence_length": {"unit": "tokens", "avg": 128.0, **GENAI_METRIC},
    "input_sequence_length": {"unit": "tokens", "avg": 1024.0, **GENAI_METRIC},
    "input_config": {"model": [LLAMA_REPO], "model_selection_strategy": "round_robin", "backend": "tensorrtllm",
                     "endpoint_type": "chat", "service_kind": "openai", "streaming": True, "concurrency": 32,
                     "measurement_interval": 10000, "num_prompts": 100, "synthetic_input_tokens_mean": 1024,
                     "output_tokens_mean": 128, "artifact_dir": "artifacts/llama-openai-chat-concurrency32"},
}  # fmt: skip
# genai-perf 0.0.10 on: input_config nested by subcommand (perf_analyzer.stimulus holds the load)
GENAI_NEW = {**GENAI, "input_config": {"model_names": [LLAMA_REPO], "endpoint": {"type": "chat", "streaming": True},
                                       "perf_analyzer": {"stimulus": {"concurrency": 32}, "measurement": {"mode": "request_count", "num": 100}},
                                       "input": {"synthetic_tokens": {"mean": 1024, "stddev": 0}}, "output": {"artifact_directory": "artifacts"}}}  # fmt: skip
GENAI_CSV = (
    "Metric,avg,min,max,p99,p95,p90,p75,p50,p25\n"
    "Time To First Token (ms),150.00,90.00,320.00,300.00,240.00,200.00,160.00,148.00,140.00\n"
    "Time To Second Token (ms),24.00,20.00,30.00,29.00,28.00,27.00,25.00,24.00,23.00\n"
    'Request Latency (ms),"3,000.00","2,800.00","3,500.00","3,450.00","3,300.00","3,200.00","3,100.00","3,000.00","2,900.00"\n'
    "Inter Token Latency (ms),24.00,20.00,30.00,29.00,28.00,27.00,25.00,24.00,23.00\n"
    "Output Sequence Length (tokens),128.00,128.00,128.00,128.00,128.00,128.00,128.00,128.00,128.00\n"
    'Input Sequence Length (tokens),"1,024.00","1,024.00","1,024.00","1,024.00","1,024.00","1,024.00","1,024.00","1,024.00","1,024.00"\n'
    '\nMetric,Value\nOutput Token Throughput (tokens/sec),"1,200.00"\nRequest Throughput (per sec),3.30\nRequest Count (count),100.00\n'
)
# perf_analyzer's profile_export.json, which genai-perf writes beside (per-request timestamps, ns)
PA_EXPORT = {
    "experiments": [{"experiment": {"mode": "concurrency", "value": 32},
                     "requests": [{"timestamp": 1718000000000000000, "request_inputs": {"payload": "{}"},
                                   "response_timestamps": [1718000000150000000, 1718000000174000000],
                                   "response_outputs": [{"response": "data: {}"}]}],
                     "window_boundaries": [1718000000000000000, 1718000010000000000]}],
    "version": "2.46.0", "service_kind": "openai", "endpoint": "v1/chat/completions",
}  # fmt: skip
# trtllm-bench throughput --report_json (tensorrt_llm/bench/dataclasses/reporting.py,
# get_statistics_dict), PyTorch backend 0.20: per-user and system throughputs side by side
TRT_BENCH = {
    "engine": {"model": LLAMA_REPO, "model_path": "None", "engine_dir": "None", "version": "0.20.0",
               "backend": "Pytorch", "dtype": "bfloat16", "kv_cache_dtype": None, "quantization": None},
    "world_info": {"tp_size": 1, "pp_size": 1, "ep_size": 1, "world_size": 1, "max_batch_size": 2048,
                   "max_num_tokens": 8192, "scheduling_policy": "GUARANTEED_NO_EVICT", "kv_cache_percentage": 0.9,
                   "issue_rate": 1.1e10},
    "request_info": {"num_requests": 200, "avg_num_concurrent_requests": 31.2, "avg_input_length": 1024.0, "avg_output_length": 128.0},
    "performance": {"total_latency_ms": 21333.3, "avg_request_latency_ms": 3200.0, "request_throughput_req_s": 9.375,
                    "system_output_throughput_tok_s": 1200.0, "system_total_throughput_tok_s": 10800.0,
                    "output_throughput_per_user_tok_s": 40.0, "output_throughput_per_gpu_tok_s": 1200.0,
                    "request_latency_percentiles_ms": {"p50": 3150.0, "p90": 3400.0, "p95": 3450.0, "p99": 3500.0, "minimum": 3000.0, "maximum": 3600.0, "average": 3200.0}},
    "streaming_metrics": {"token_output_speed_tok_s": 41.7, "avg_ttft_ms": 160.0, "avg_tpot_ms": 24.0,
                          "tpot_percentiles": {"p50": 24.0, "p99": 29.0}, "ttft_percentiles": {"p50": 150.0, "p99": 300.0}},
    "dataset": {"isl_stats": {"average": 1024}, "osl_stats": {"average": 128}, "num_requests": 200},
}  # fmt: skip
# trtllm-bench 0.14-0.16 (the C++ runtime): performance holds output_throughput_tok_s
TRT_BENCH_OLD = {
    "engine": {"model": LLAMA_REPO, "engine_dir": "/engines/llama-3.1-8b", "version": "0.15.0", "dtype": "bfloat16",
               "kv_cache_dtype": None, "quantization": "FP8", "max_input_length": 2048, "max_sequence_length": 4096},
    "world_info": {"tp_size": 1, "pp_size": 1, "world_size": 1, "max_batch_size": 512, "max_num_tokens": 8192,
                   "scheduling_policy": "Static Batching", "kv_cache_percentage": 95.0, "issue_rate": 1e10},
    "request_info": {"num_requests": 3000, "avg_num_concurrent_requests": 512.0, "avg_input_length": 128.0, "avg_output_length": 128.0},
    "performance": {"total_latency_ms": 24000.0, "avg_request_latency_ms": 4000.0, "request_throughput_req_s": 125.0,
                    "output_throughput_tok_s": 16000.0, "total_throughput_tok_s": 32000.0, "output_throughput_per_user_tok_s": 32.0},
}  # fmt: skip
TRT_BENCH_PRINTED = """
===========================================================
= PYTORCH BACKEND
===========================================================
Model:\t\t\tmeta-llama/Meta-Llama-3.1-8B-Instruct
Model Path:\t\tNone
TensorRT LLM Version:\t0.20.0
Dtype:\t\t\tbfloat16
KV Cache Dtype:\t\tNone
Quantization:\t\tNone

===========================================================
= REQUEST DETAILS
===========================================================
Number of requests:             200
Number of concurrent requests:  31.2000
Average Input Length (tokens):  1024.0000
Average Output Length (tokens): 128.0000
===========================================================
= PERFORMANCE OVERVIEW
===========================================================
Request Throughput (req/sec):                     9.3750
Total Output Throughput (tokens/sec):             1200.0000
Total Token Throughput (tokens/sec):              10800.0000
Total Latency (ms):                               21333.3000
Average request latency (ms):                     3200.0000
Per User Output Throughput [w/ ctx] (tps/user):   40.0000
Per GPU Output Throughput (tps/gpu):              1200.0000
"""
VLLM_PRINTED = """============ Serving Benchmark Result ============
Successful requests:                     200
Maximum request concurrency:             32
Benchmark duration (s):                  21.33
Total input tokens:                      204800
Total generated tokens:                  25600
Request throughput (req/s):              9.37
Output token throughput (tok/s):         1200.00
Peak output token throughput (tok/s):    1560.00
Peak concurrent requests:                32.00
Total Token throughput (tok/s):          10800.00
---------------Time to First Token----------------
Mean TTFT (ms):                          160.00
Median TTFT (ms):                        152.00
P99 TTFT (ms):                           320.00
-----Time per Output Token (excl. 1st token)------
Mean TPOT (ms):                          24.00
Median TPOT (ms):                        24.00
P99 TPOT (ms):                           28.80
==================================================
"""
# guidellm's report (GenerativeBenchmarksReport.save_json: benchmarks, each with its strategy and
# metrics as distributions by status)
GUIDELLM = {
    "benchmarks": [
        {"type_": "generative_benchmark", "id_": f"b{i}", "run_id": "r1",
         "args": {"profile": {"type_": "concurrent", "streams": [8, 32, 64]}, "strategy_index": i,
                  "strategy": {"type_": "concurrent", "streams": c}, "max_number": 200},
         "request_totals": {"successful": 200, "errored": 0, "incomplete": 0, "total": 200},
         "metrics": {"requests_per_second": {"successful": {"mean": t / 128}},
                     "request_concurrency": {"successful": {"mean": c * 0.98}},
                     "time_to_first_token_ms": {"successful": {"mean": ttft, "median": ttft}},
                     "time_per_output_token_ms": {"successful": {"mean": tpot}},
                     "inter_token_latency_ms": {"successful": {"mean": tpot}},
                     "output_tokens_per_second": {"successful": {"mean": t}},
                     "prompt_token_count": {"successful": {"mean": 1024}},
                     "output_token_count": {"successful": {"mean": 128}}}}
        for i, (c, t, ttft, tpot) in enumerate(CLOSED)
    ],
}  # fmt: skip
GUIDELLM_YAML = "benchmarks:\n" + "".join(
    f"- type_: generative_benchmark\n  args:\n    strategy:\n      type_: concurrent\n      streams: {c}\n"
    f"  metrics:\n    output_tokens_per_second:\n      successful:\n        mean: {t}\n"
    for c, t, _, _ in CLOSED
)
GUIDELLM_CSV = (
    "Run Info,Run Info,Benchmark,Benchmark,Request Counts,Server Throughput,Server Throughput,Time to First Token,Token Throughput\n"
    "Run ID,Run Index,Type,Strategy,Successful,Requests/Sec,Concurrency,Mean,Output Tokens/Sec\n"
    ",,,,,,,ms,\n"
    + "".join(f"r1,{i},generative_benchmark,concurrent,200,{t / 128:.4f},{c},{ttft},{t}\n" for i, (c, t, ttft, _) in enumerate(CLOSED))
)  # fmt: skip
# llmperf token_benchmark_ray.py: the summary (LLMPerfResults.to_dict, flattened with "_"; times
# in seconds, a per-request and an overall output throughput) and the per-request list
LLMPERF = {
    "version": "2023-08-31", "name": "meta-llama-Meta-Llama-3-1-8B-Instruct_1024_128_summary", "model": LLAMA_REPO,
    "mean_input_tokens": 1024, "stddev_input_tokens": 0, "mean_output_tokens": 128, "stddev_output_tokens": 0,
    "num_concurrent_requests": 32, "additional_sampling_params": "{}",
    "results_inter_token_latency_s_quantiles_p50": 0.024, "results_inter_token_latency_s_mean": 0.024,
    "results_ttft_s_quantiles_p50": 0.15, "results_ttft_s_mean": 0.16, "results_end_to_end_latency_s_mean": 3.2,
    "results_request_output_throughput_token_per_s_mean": 40.0, "results_number_input_tokens_mean": 1024.0,
    "results_number_output_tokens_mean": 128.0, "results_num_requests_started": 200, "results_error_rate": 0.0,
    "results_number_errors": 0, "results_error_code_frequency": "{}", "results_mean_output_throughput_token_per_s": 1200.0,
    "results_num_completed_requests": 200, "results_num_completed_requests_per_min": 562.5, "timestamp": 1718000000,
}  # fmt: skip
LLMPERF_ONE = [{"error_code": None, "error_msg": "", "inter_token_latency_s": 0.024, "ttft_s": 0.16,
                "end_to_end_latency_s": 3.2, "request_output_throughput_token_per_s": 40.0,
                "number_total_tokens": 1152, "number_output_tokens": 128, "number_input_tokens": 1024}] * 3  # fmt: skip
# vLLM's save_to_pytorch_benchmark_format (SAVE_TO_PYTORCH_BENCHMARK_FORMAT set): a list of records
PYTORCH_JSON = [{"benchmark": {"name": "vLLM benchmark", "extra_info": {"args": {"model": LLAMA_REPO, "max_concurrency": 32}}},
                 "model": {"name": LLAMA_REPO}, "metric": {"name": "median_ttft_ms", "benchmark_values": [152.0],
                 "extra_info": {"completed": 200, "output_throughput": 1200.0}}}]  # fmt: skip

R = [vllm_011(r) for r in CLOSED]
SG = [sg_04(r) for r in CLOSED]
# fmt: off
# (name, argv, files, invalid, words the refusal must name or the answer reading)
Table29 = list[tuple[str, list[str], dict[str, FileSpec], bool | None, "tuple[str, ...] | Callable[[str], str | None]"]]
TOOLS29: Table29 = [
    # vLLM, release by release (valid: the points worked by hand)
    ("vllm-0.6.0-burst-with-arrays", CAL, {"r.json": json.dumps(vllm_060(BURST))}, False, BURST_POINT),
    ("vllm-0.6.4-closed-arrays", CAL, {"r.json": _lines([vllm_064(r) for r in CLOSED])}, False, _closed()),
    ("vllm-0.6.4-pretty-one-run", CAL, {"r.json": json.dumps(vllm_064(CLOSED[1]), indent=4)}, False, _points([(32, 1024, 128, 1200.0, 0.024, 0.16)])),
    ("vllm-0.8-goodput-null", CAL, {"r.json": _lines([vllm_08(r) for r in CLOSED])}, False, _closed()),
    ("vllm-0.11-save-result", CAL, {"r.json": json.dumps(R[0])}, False, _points([(8, 1024, 128, 500.0, 0.014, 0.15)])),
    ("vllm-0.11-append-result", CAL, {"r.json": "\n".join(json.dumps(r) for r in R)}, False, _closed()),
    ("vllm-0.11-save-detailed", CAL, {"r.json": _lines([{**r, **_arrays(c[2], c[3]), "latencies": [2.0] * PROMPTS, "start_times": [0.0] * PROMPTS} for r, c in zip(R, CLOSED, strict=True)])}, False, _closed()),
    ("vllm-0.11-e2el-percentiles", CAL, {"r.json": _lines([{**r, "mean_e2el_ms": 1928.0, "median_e2el_ms": 1900.0, "p99_e2el_ms": 2500.0} for r in R])}, False, _closed()),
    ("vllm-0.11-failed-requests", CAL, {"r.json": _lines([{**R[0], "completed": 190, "failed": 10, "total_input_tokens": 190 * 1024, "total_output_tokens": 190 * 128, "output_throughput": 475.0}, *R[1:]])},
     False, _points([(8, 1024, 128, 475.0, 0.014, 0.15), (32, 1024, 128, 1200.0, 0.024, 0.16), (64, 1024, 128, 1800.0, 0.032, 0.17)])),
    ("vllm-0.11-openai-chat-backend", CAL, {"r.json": _lines([{**r, "endpoint_type": "openai-chat", "backend": "openai-chat"} for r in R])}, False, _closed()),
    # a backend that does not stream (vLLM backend_request_func: DeepSpeed-MII's ttft is left 0,
    # "ttfts is empty if streaming is not supported by backend"): no TTFT or TPOT was timed, the
    # throughput stands
    ("vllm-deepspeed-mii-no-stream", CAL, {"r.json": _lines([{**vllm_064(r), "backend": "deepspeed-mii", "mean_ttft_ms": 0.0, "median_ttft_ms": 0.0, "p99_ttft_ms": 0.0,
                                                                "mean_tpot_ms": (r[2] + 127 * r[3]) / 127, "mean_itl_ms": 0.0, "median_itl_ms": 0.0, "p99_itl_ms": 0.0} for r in CLOSED])},
     False, _points([(c, 1024, 128, t, None, None) for c, t, _, _ in CLOSED])),
    ("vllm-pytorch-json-beside", CAL, {"r.json": json.dumps(PYTORCH_JSON)}, True, ("--save-result",)),
    ("vllm-printed-summary-as-txt", ["calibrate", "{d}/bench.txt", "--model", "llama-3.1-8b"], {"bench.txt": VLLM_PRINTED}, True, ("printed", "--save-result")),
    # SGLang, release by release
    ("sglang-0.4-random", CAL_SG, {"r.jsonl": _lines(SG)}, False, _closed()),
    ("sglang-0.4-output-details", CAL_SG, {"r.jsonl": _lines([{**s, **_arrays(c[2], c[3])} for s, c in zip(SG, CLOSED, strict=True)])}, False, _closed()),
    ("sglang-0.4-burst", CAL_SG, {"r.jsonl": _lines([sg_04(BURST)])}, False, BURST_POINT),
    # 0.2's row: no dataset_name or max_concurrency, medians only (a burst, throughput fitted)
    ("sglang-0.2-random-burst", CAL_SG, {"r.jsonl": _lines([sg_02(sg_04(BURST))])}, False, _points([(PROMPTS, 1024, 128, 3000.0, None, None)])),
    # 0.2 run on ShareGPT: the row still writes the random_* defaults (1024/128, no dataset_name
    # to say they were unused); the totals say 300 in and 200 out per request
    ("sglang-0.2-sharegpt-no-dataset-name", CAL_SG, {"r.jsonl": _lines([{**sg_02(sg_04(BURST)), "total_input_tokens": PROMPTS * 300, "total_output_tokens": PROMPTS * 200, "output_throughput": 3000.0}])},
     False, _points([(PROMPTS, 300, 200, 3000.0, None, None)])),
    # --random-range-ratio 0 (lengths uniform in [1, asked]): the totals' means 512 and 64 sit by
    # the asked ranges' 512.5 and 64.5, so the asked lengths and ratio stand; at 0.5 ([512, 1,024],
    # mean 768) a sample's mean of 790 in sits within three standard errors (10.5) and 2 %
    ("sglang-range-ratio-0", CAL_SG, {"r.jsonl": _lines([sg_04(CLOSED[1], random_range_ratio=0.0, total_input_tokens=PROMPTS * 512, total_output_tokens=PROMPTS * 64)])},
     False, _points([(32, 1024, 128, 1200.0, 0.024, 0.16)])),
    ("sglang-range-ratio-0.5-sampled", CAL_SG, {"r.jsonl": _lines([sg_04(CLOSED[1], random_range_ratio=0.5, total_input_tokens=PROMPTS * 790, total_output_tokens=PROMPTS * 97)])},
     False, _points([(32, 1024, 128, 1200.0, 0.024, 0.16)])),
    # a chat backend (no ignore_eos in its payload) or --disable-ignore-eos: requests stop at EOS;
    # the totals say 412 tokens out per request of the 1,024 asked
    ("sglang-chat-stops-at-eos", CAL_SG, {"r.jsonl": _lines([sg_04((c, t, tt, tp), backend="sglang-oai-chat", random_output_len=1024, total_output_tokens=PROMPTS * 412,
                                                                     mean_e2e_latency_ms=tt + 411 * tp) for c, t, tt, tp in [(8, 540.0, 150.0, 14.0), (32, 1300.0, 160.0, 24.0)]])},
     False, _points([(8, 1024, 412, 540.0, 0.014, 0.15), (32, 1024, 412, 1300.0, 0.024, 0.16)])),
    ("sglang-disable-ignore-eos", CAL_SG, {"r.jsonl": _lines([sg_04(CLOSED[1], random_output_len=512, total_output_tokens=PROMPTS * 128)])}, False, _points([(32, 1024, 128, 1200.0, 0.024, 0.16)])),
    # --disable-stream: SGLang's chat request sets TTFT to the whole latency (TPOT 0); its
    # completions request times the first chunk after the latency (TPOT a hair below 0)
    ("sglang-disable-stream-chat", CAL_SG, {"r.jsonl": _lines([sg_04(r, backend="sglang-oai-chat", mean_ttft_ms=r[2] + 127 * r[3], mean_tpot_ms=0.0, median_tpot_ms=0.0, p99_tpot_ms=0.0,
                                                                    mean_itl_ms=0.0, median_itl_ms=0.0, p95_itl_ms=0.0, p99_itl_ms=0.0) for r in CLOSED])},
     False, _points([(c, 1024, 128, t, None, None) for c, t, _, _ in CLOSED])),
    ("sglang-disable-stream-completions", CAL_SG, {"r.jsonl": _lines([sg_04(r, backend="sglang-oai", mean_ttft_ms=r[2] + 127 * r[3] + 0.02, mean_tpot_ms=-0.00016, median_tpot_ms=-0.00015,
                                                                           mean_itl_ms=0.0, median_itl_ms=0.0, p95_itl_ms=0.0, p99_itl_ms=0.0) for r in CLOSED])},
     False, _points([(c, 1024, 128, t, None, None) for c, t, _, _ in CLOSED])),
    # NVIDIA genai-perf and perf_analyzer
    ("genai-perf-json-0.0.8", ["calibrate", "{d}/profile_export_genai_perf.json", "--model", "llama-3.1-8b"], {"profile_export_genai_perf.json": json.dumps(GENAI, indent=4)}, True, ("genai-perf", "--save-result")),
    ("genai-perf-json-0.0.12", ["calibrate", "{d}/profile_export_genai_perf.json", "--model", "llama-3.1-8b"], {"profile_export_genai_perf.json": json.dumps(GENAI_NEW, indent=4)}, True, ("genai-perf", "--save-result")),
    ("genai-perf-csv", ["calibrate", "{d}/profile_export_genai_perf.csv", "--model", "llama-3.1-8b"], {"profile_export_genai_perf.csv": GENAI_CSV}, True, ("genai-perf", "concurrency")),
    ("perf-analyzer-profile-export", ["calibrate", "{d}/profile_export.json", "--model", "llama-3.1-8b"], {"profile_export.json": json.dumps(PA_EXPORT)}, True, ("perf_analyzer", "--save-result")),
    # trtllm-bench
    ("trtllm-bench-report-0.20", ["calibrate", "{d}/report.json", "--model", "llama-3.1-8b"], {"report.json": json.dumps(TRT_BENCH, indent=2)}, True, ("trtllm-bench", "--save-result")),
    ("trtllm-bench-report-0.15", ["calibrate", "{d}/report.json", "--model", "llama-3.1-8b"], {"report.json": json.dumps(TRT_BENCH_OLD, indent=2)}, True, ("trtllm-bench", "--save-result")),
    ("trtllm-bench-printed-report", ["calibrate", "{d}/bench.log", "--model", "llama-3.1-8b"], {"bench.log": TRT_BENCH_PRINTED}, True, ("printed", "--report_json")),
    # guidellm
    ("guidellm-json", ["calibrate", "{d}/benchmarks.json", "--model", "llama-3.1-8b"], {"benchmarks.json": json.dumps(GUIDELLM, indent=2)}, True, ("guidellm", "--save-result")),
    ("guidellm-yaml", ["calibrate", "{d}/benchmarks.yaml", "--model", "llama-3.1-8b"], {"benchmarks.yaml": GUIDELLM_YAML}, True, (".json", ".csv")),
    ("guidellm-csv", ["calibrate", "{d}/benchmarks.csv", "--model", "llama-3.1-8b"], {"benchmarks.csv": GUIDELLM_CSV}, True, ("guidellm", "concurrency")),
    # llmperf
    ("llmperf-summary", ["calibrate", "{d}/llama_1024_128_summary.json", "--model", "llama-3.1-8b"], {"llama_1024_128_summary.json": json.dumps(LLMPERF, indent=4)}, True, ("llmperf", "--save-result")),
    ("llmperf-individual-responses", ["calibrate", "{d}/llama_1024_128_individual_responses.json", "--model", "llama-3.1-8b"],
     {"llama_1024_128_individual_responses.json": json.dumps(LLMPERF_ONE, indent=4)}, True, ("--save-result", "array")),
]

# --- start-up logs of releases the fixtures do not cover -----------------------------------------

V061 = """INFO 09-12 10:00:00 api_server.py:495] vLLM API server version 0.6.1
INFO 09-12 10:00:00 api_server.py:496] args: Namespace(host=None, port=8000, model='meta-llama/Meta-Llama-3.1-8B-Instruct', max_model_len=None, gpu_memory_utilization=0.9)
INFO 09-12 10:00:05 llm_engine.py:232] Initializing an LLM engine (v0.6.1) with config: model='meta-llama/Meta-Llama-3.1-8B-Instruct', speculative_config=None, tokenizer='meta-llama/Meta-Llama-3.1-8B-Instruct', skip_tokenizer_init=False, tokenizer_mode=auto, revision=None, override_neuron_config=None, rope_scaling=None, rope_theta=None, tokenizer_revision=None, trust_remote_code=False, dtype=torch.bfloat16, max_seq_len=131072, download_dir=None, load_format=LoadFormat.AUTO, tensor_parallel_size=1, pipeline_parallel_size=1, disable_custom_all_reduce=False, quantization=None, enforce_eager=False, kv_cache_dtype=auto, quantization_param_path=None, device_config=cuda, decoding_config=DecodingConfig(guided_decoding_backend='outlines'), observability_config=ObservabilityConfig(otlp_traces_endpoint=None, collect_model_forward_time=False, collect_model_execute_time=False), seed=0, served_model_name=meta-llama/Meta-Llama-3.1-8B-Instruct, use_v2_block_manager=False, num_scheduler_steps=1, multi_step_stream_outputs=False, enable_prefix_caching=False, use_async_output_proc=True, use_cached_outputs=True, mm_processor_kwargs=None)
INFO 09-12 10:00:07 model_runner.py:997] Starting to load model meta-llama/Meta-Llama-3.1-8B-Instruct...
INFO 09-12 10:00:20 model_runner.py:1008] Loading model weights took 14.9888 GB
INFO 09-12 10:00:22 gpu_executor.py:122] # GPU blocks: 27895, # CPU blocks: 2048
INFO 09-12 10:00:22 model_runner.py:1311] Capturing the model for CUDA graphs. This may lead to unexpected consequences if the model is not static.
INFO 09-12 10:00:35 model_runner.py:1439] Graph capturing finished in 13 secs.
"""
V054_TP2 = """INFO 08-10 10:00:00 api_server.py:339] vLLM API server version 0.5.4
INFO 08-10 10:00:05 llm_engine.py:174] Initializing an LLM engine (v0.5.4) with config: model='meta-llama/Meta-Llama-3.1-8B-Instruct', speculative_config=None, tokenizer='meta-llama/Meta-Llama-3.1-8B-Instruct', skip_tokenizer_init=False, tokenizer_mode=auto, revision=None, rope_scaling=None, rope_theta=None, tokenizer_revision=None, trust_remote_code=False, dtype=torch.bfloat16, max_seq_len=131072, download_dir=None, load_format=LoadFormat.AUTO, tensor_parallel_size=2, pipeline_parallel_size=1, disable_custom_all_reduce=False, quantization=None, enforce_eager=False, kv_cache_dtype=auto, quantization_param_path=None, device_config=cuda, decoding_config=DecodingConfig(guided_decoding_backend='outlines'), observability_config=ObservabilityConfig(otlp_traces_endpoint=None), seed=0, served_model_name=meta-llama/Meta-Llama-3.1-8B-Instruct, use_v2_block_manager=False, enable_prefix_caching=False)
(VllmWorkerProcess pid=1786) INFO 08-10 10:00:09 multiproc_worker_utils.py:215] Worker ready; awaiting tasks
INFO 08-10 10:00:30 model_runner.py:732] Loading model weights took 7.5122 GB
(VllmWorkerProcess pid=1786) INFO 08-10 10:00:30 model_runner.py:732] Loading model weights took 7.5122 GB
INFO 08-10 10:00:33 distributed_gpu_executor.py:56] # GPU blocks: 63000, # CPU blocks: 4096
"""
V071_V1 = """INFO 01-30 03:17:50 api_server.py:840] vLLM API server version 0.7.1
INFO 01-30 03:17:58 core.py:45] Initializing an LLM engine (v0.7.1) with config: model='meta-llama/Meta-Llama-3.1-8B-Instruct', speculative_config=None, tokenizer='meta-llama/Meta-Llama-3.1-8B-Instruct', skip_tokenizer_init=False, tokenizer_mode=auto, revision=None, override_neuron_config=None, tokenizer_revision=None, trust_remote_code=False, dtype=torch.bfloat16, max_seq_len=2048, download_dir=None, load_format=LoadFormat.AUTO, tensor_parallel_size=1, pipeline_parallel_size=1, disable_custom_all_reduce=False, quantization=None, enforce_eager=False, kv_cache_dtype=auto, device_config=cuda, seed=0, served_model_name=meta-llama/Meta-Llama-3.1-8B-Instruct, num_scheduler_steps=1, enable_prefix_caching=True, chunked_prefill_enabled=True
INFO 01-30 03:18:02 gpu_model_runner.py:843] Starting to load model meta-llama/Meta-Llama-3.1-8B-Instruct...
INFO 01-30 03:18:12 gpu_model_runner.py:848] Loading model weights took 14.9889 GB
INFO 01-30 03:19:13 monitor.py:31] torch.compile takes 54.73 s in total
INFO 01-30 03:19:14 kv_cache_utils.py:395] # GPU blocks: 27870
INFO 01-30 03:19:14 kv_cache_utils.py:398] Maximum concurrency for 2048 tokens per request: 217.73x
INFO 01-30 03:19:30 gpu_model_runner.py:1046] Graph capturing finished in 16 secs, took 0.53 GiB
INFO 01-30 03:19:30 core.py:91] init engine (profile, create kv cache, warmup model) took 75.82 seconds
"""
V085 = """INFO 05-01 10:00:03 [api_server.py:1043] vLLM API server version 0.8.5
INFO 05-01 10:00:15 [core.py:58] Initializing a V1 LLM engine (v0.8.5) with config: model='meta-llama/Meta-Llama-3.1-8B-Instruct', speculative_config=None, tokenizer='meta-llama/Meta-Llama-3.1-8B-Instruct', skip_tokenizer_init=False, tokenizer_mode=auto, revision=None, override_neuron_config=None, tokenizer_revision=None, trust_remote_code=False, dtype=torch.bfloat16, max_seq_len=131072, download_dir=None, load_format=LoadFormat.AUTO, tensor_parallel_size=1, pipeline_parallel_size=1, disable_custom_all_reduce=False, quantization=None, enforce_eager=False, kv_cache_dtype=auto, device_config=cuda, seed=None, served_model_name=meta-llama/Meta-Llama-3.1-8B-Instruct, num_scheduler_steps=1, enable_prefix_caching=True, chunked_prefill_enabled=True
INFO 05-01 10:00:20 [gpu_model_runner.py:1329] Starting to load model meta-llama/Meta-Llama-3.1-8B-Instruct...
INFO 05-01 10:00:40 [gpu_model_runner.py:1347] Model loading took 14.9889 GiB and 19.754245 seconds
INFO 05-01 10:00:58 [monitor.py:33] torch.compile takes 12.41 s in total
INFO 05-01 10:01:00 [kv_cache_utils.py:634] GPU KV cache size: 445,920 tokens
INFO 05-01 10:01:00 [kv_cache_utils.py:637] Maximum concurrency for 131,072 tokens per request: 3.40x
INFO 05-01 10:01:20 [gpu_model_runner.py:1686] Graph capturing finished in 20 secs, took 0.53 GiB
INFO 05-01 10:01:20 [core.py:159] init engine (profile, create kv cache, warmup model) took 39.88 seconds
"""
SG02 = """server_args=ServerArgs(model_path='meta-llama/Meta-Llama-3.1-8B-Instruct', tokenizer_path='meta-llama/Meta-Llama-3.1-8B-Instruct', tokenizer_mode='auto', skip_tokenizer_init=False, load_format='auto', dtype='auto', trust_remote_code=False, context_length=None, quantization=None, served_model_name='meta-llama/Meta-Llama-3.1-8B-Instruct', chat_template=None, host='127.0.0.1', port=30000, mem_fraction_static=0.88, max_running_requests=None, max_num_reqs=None, max_total_tokens=None, chunked_prefill_size=8192, max_prefill_tokens=16384, schedule_policy='lpm', tp_size=1, dp_size=1, random_seed=0, log_level='info', disable_cuda_graph=False, kv_cache_dtype='auto')
[gpu=0] Init nccl begin.
[gpu=0] Load weight begin. avail mem=78.58 GB
[gpu=0] Load weight end. type=LlamaForCausalLM, dtype=torch.bfloat16, avail mem=63.49 GB
[gpu=0] Memory pool end. avail mem=8.52 GB
[gpu=0] Capture cuda graph begin. This can take up to several minutes.
[gpu=0] max_total_num_tokens=444500, max_prefill_tokens=16384, max_running_requests=4097, context_len=131072
"""
SG046 = """[2025-05-01 10:00:00] server_args=ServerArgs(model_path='meta-llama/Meta-Llama-3.1-8B-Instruct', tokenizer_path='meta-llama/Meta-Llama-3.1-8B-Instruct', tokenizer_mode='auto', load_format='auto', trust_remote_code=False, dtype='auto', kv_cache_dtype='auto', quantization=None, context_length=None, device='cuda', served_model_name='meta-llama/Meta-Llama-3.1-8B-Instruct', mem_fraction_static=0.88, max_running_requests=None, max_total_tokens=None, chunked_prefill_size=8192, max_prefill_tokens=16384, schedule_policy='fcfs', tp_size=1, pp_size=1, dp_size=1, page_size=1, disable_cuda_graph=False)
[2025-05-01 10:00:05 TP0] Attention backend not set. Use flashinfer backend by default.
[2025-05-01 10:00:05 TP0] Init torch distributed begin.
[2025-05-01 10:00:06 TP0] Init torch distributed ends. mem usage=0.00 GB
[2025-05-01 10:00:06 TP0] Load weight begin. avail mem=78.58 GB
[2025-05-01 10:00:20 TP0] Load weight end. type=LlamaForCausalLM, dtype=torch.bfloat16, avail mem=63.52 GB, mem usage=15.06 GB.
[2025-05-01 10:00:20 TP0] KV Cache is allocated. #tokens: 413292, K size: 25.22 GB, V size: 25.22 GB
[2025-05-01 10:00:20 TP0] Memory pool end. avail mem=12.37 GB
[2025-05-01 10:00:21 TP0] Capture cuda graph begin. This can take up to several minutes. avail mem=11.84 GB
[2025-05-01 10:00:40 TP0] Capture cuda graph end. Time elapsed: 19.21 s. mem usage=0.79 GB. avail mem=11.05 GB.
[2025-05-01 10:00:41 TP0] max_total_num_tokens=413292, chunked_prefill_size=8192, max_prefill_tokens=16384, max_running_requests=4097, context_len=131072, available_gpu_mem=11.05 GB
"""
TRT020 = """[06/01/2025-10:00:00] [TRT-LLM] [I] Starting TensorRT-LLM init.
[TensorRT-LLM][INFO] Set logger level to INFO
[06/01/2025-10:00:05] [TRT-LLM] [I] TensorRT-LLM inited.
[TensorRT-LLM] TensorRT-LLM version: 0.20.0
[06/01/2025-10:00:30] [TRT-LLM] [I] Memory used after loading model weights (inside torch) in memory usage profiling: 14.97 GiB
[06/01/2025-10:00:30] [TRT-LLM] [I] Memory used after loading model weights (outside torch) in memory usage profiling: 1.02 GiB
[06/01/2025-10:00:40] [TRT-LLM] [I] Memory dynamically allocated during inference (inside torch) in memory usage profiling: 2.10 GiB
[06/01/2025-10:00:40] [TRT-LLM] [I] Memory used outside torch (e.g., NCCL and CUDA graphs) in memory usage profiling: 1.30 GiB
[06/01/2025-10:00:40] [TRT-LLM] [I] Peak memory during memory usage profiling (torch + non-torch): 18.37 GiB, available KV cache memory when calculating max tokens: 54.42 GiB, fraction is set 0.9, kv size is 131072. device total memory 79.19 GiB, , tmp kv_mem 0.50 GiB
[06/01/2025-10:00:40] [TRT-LLM] [I] Estimated max tokens in KV cache : 445824
[TensorRT-LLM][INFO] Number of blocks in KV cache primary pool: 13932
[TensorRT-LLM][INFO] Number of blocks in KV cache secondary pool: 0, onboard blocks to primary memory before reuse: true
[TensorRT-LLM][INFO] Number of tokens per block: 32.
[TensorRT-LLM][INFO] [MemUsageChange] Allocated 54.42 GiB for max tokens in paged KV cache (445824).
"""
TRT10 = "\n".join(
    line.replace("[TRT-LLM] [I]", "[TRT-LLM] [RANK 0] [I]").replace("version: 0.20.0", "version: 1.0.0")
    for line in TRT020.splitlines()
) + "\n"


def _log(engine: str, layout: str, figures: dict[str, float]) -> Callable[[str], str | None]:
    """A reading of `calibrate LOG --format json`: the engine, layout and logged figures, as the
    log's own lines print them."""

    def check(out: str) -> str | None:
        try:
            data = json.loads(out)
            logged = {f["name"]: f["logged"] for f in data["figures"]}
        except (ValueError, KeyError):
            return "not a log comparison"
        if (data["engine"], data["layout"]) != (engine, layout):
            return f"engine {data['engine']} {data['layout']} (the log's: {engine} {layout})"
        wrong = [f"{k} {logged.get(k)} (logged {v})" for k, v in figures.items() if logged.get(k) != v]
        return "; ".join(wrong) or None

    return check


LOGS29: Table29 = [
    ("vllm-0.6.1-v0", LOG, {"server.log": V061}, False, _log("vllm-v0", "tp1", {"weights_gib": 14.9888, "gpu_blocks": 27895})),
    ("vllm-0.5.4-v0-tp2", LOG, {"server.log": V054_TP2}, False, _log("vllm-v0", "tp2", {"weights_gib": 7.5122, "gpu_blocks": 63000})),
    # VLLM_USE_V1=1 on 0.7.1: V1's engine core logged V0's words ("Initializing an LLM engine",
    # "Loading model weights took") and "# GPU blocks: N" without CPU blocks
    ("vllm-0.7.1-v1-opt-in", LOG, {"server.log": V071_V1}, False, _log("vllm", "tp1", {"weights_gib": 14.9889, "gpu_blocks": 27870, "max_concurrency": 217.73})),
    ("vllm-0.8.5-v1", LOG, {"server.log": V085}, False, _log("vllm", "tp1", {"weights_gib": 14.9889, "kv_tokens": 445920, "max_concurrency": 3.4})),
    ("sglang-0.2-gpu-tags", LOG, {"server.log": SG02}, False, _log("sglang", "tp1", {"kv_tokens": 444500, "weights_gib": 15.09})),
    ("sglang-0.4.6", LOG, {"server.log": SG046}, False, _log("sglang", "tp1", {"weights_gib": 15.06, "kv_tokens": 413292})),
    ("trtllm-0.20-pytorch", LOG, {"server.log": TRT020}, False, _log("trtllm", "tp1", {"weights_gib": 14.97, "kv_tokens": 445824, "kv_cache_gib": 54.42})),
    ("trtllm-1.0-rank-tags", LOG, {"server.log": TRT10}, False, _log("trtllm", "tp1", {"weights_gib": 14.97, "kv_tokens": 445824, "kv_cache_gib": 54.42})),
]

# --- result files handed to `capcliff check` ------------------------------------------------------


def _spec(line: str) -> str:
    return SPEC.replace('engine = "vllm"\n', f'engine = "vllm"\n{line}\n')


def _traced(path: str) -> str:
    text = SPEC.replace("isl = 100\nosl = 100\n", "").replace("num_requests = 20\n", "").replace('arrival = "batch"\n', "")
    return text.replace("[scenario.workload]\n", f'[scenario.workload]\ntrace = "{path}"\n')


CHECK29: Table29 = [
    ("vllm-result-as-spec", ["check", "{d}/r.json"], {"r.json": json.dumps(R[0], indent=4)}, True, ("scenario",)),
    ("sglang-row-as-spec", ["check", "{d}/r.jsonl"], {"r.jsonl": _lines(SG)}, True, ("spec",)),
    ("vllm-result-as-baseline", ["check", "{d}/s.toml", "--baseline", "{d}/r.json"], {"s.toml": SPEC, "r.json": json.dumps(R[0])}, True, ("baseline",)),
    ("genai-perf-as-baseline", ["check", "{d}/s.toml", "--baseline", "{d}/p.json"], {"s.toml": SPEC, "p.json": json.dumps(GENAI)}, True, ("baseline",)),
    ("sglang-rows-as-trace", ["check", "{d}/s.toml"], {"s.toml": _traced("r.jsonl"), "r.jsonl": _lines(SG)}, True, ("workload.trace", "bench_serving")),
    ("vllm-detailed-as-trace", ["check", "{d}/s.toml"], {"s.toml": _traced("r.json"), "r.json": json.dumps({**R[0], **_arrays(150.0, 14.0)})}, True, ("workload.trace", "--save-result")),
    ("llmperf-responses-as-trace", ["check", "{d}/s.toml"], {"s.toml": _traced("resp.json"), "resp.json": json.dumps(LLMPERF_ONE)}, True, ("workload.trace",)),
    ("vllm-result-as-calibration", ["check", "{d}/s.toml"], {"s.toml": _spec('calibration = "r.json"'), "r.json": json.dumps(R[0])}, True, ("calibration", "capcliff calibrate")),
    ("sglang-rows-as-calibration", ["check", "{d}/s.toml"], {"s.toml": _spec('calibration = "r.jsonl"'), "r.jsonl": _lines(SG)}, True, ("calibration", "capcliff calibrate")),
    ("trtllm-report-as-calibration", ["check", "{d}/s.toml"], {"s.toml": _spec('calibration = "report.json"'), "report.json": json.dumps(TRT_BENCH)}, True, ("calibration", "capcliff calibrate")),
]
# fmt: on


def _cases(surface: str, table: Table29) -> Iterator[Case]:
    for name, argv, files, invalid, reading in table:
        answer = reading if callable(reading) else None
        yield Case(surface, name, list(argv), dict(files), invalid, answer=answer)


def tools29_cases() -> Iterator[Case]:
    yield from _cases("tools29", TOOLS29)


def logs29_cases() -> Iterator[Case]:
    yield from _cases("logs29", LOGS29)


def check29_cases() -> Iterator[Case]:
    yield from _cases("check29", CHECK29)


SURFACES29: dict[str, Callable[[], Iterator[Case]]] = {
    "tools29": tools29_cases, "logs29": logs29_cases, "check29": check29_cases,
}  # fmt: skip


def _classes() -> None:
    """Run every case; print the campaign's four classes and one line per finding."""
    from fuzz_harness import print_classes, run_all

    tables = {"tools29": TOOLS29, "logs29": LOGS29, "check29": CHECK29}
    words = {(s, row[0]): row[4] for s, t in tables.items() for row in t if not callable(row[4])}
    cases = [c for s in tables for c in SURFACES29[s]()]
    counts = {"refused-valid": 0, "nonsense": 0, "traceback": 0, "unclear": 0}
    kinds = {"refused-valid": "refused-valid", "nonsense": "nonsense", "traceback": "traceback",
             "hang": "traceback", "lines": "unclear"}  # fmt: skip
    print_classes(run_all(cases, jobs=1), counts, kinds.get, words)


if __name__ == "__main__":
    _classes()
