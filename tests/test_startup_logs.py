"""Start-up log parser: real public logs, anchored to the figures their reference rows quote.

Each fixture under tests/fixtures/logs/ is a real log excerpt whose header names its source. The
expected values are the reference rows' (docs: shared reference vllm_kv_logs.csv and
sglang_trtllm_kv_logs.csv, rows V01, V02, V04, V11, V16, V24, S02, T01), copied from the logs by
hand and independent of this parser. Numbers are compared exactly: the parser reads the digits
the engine printed.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path

import pytest

from capcliff.calibrate.startup_logs import LogFormat, StartupLog, detect_format, parse_startup_log
from capcliff.errors import InputError

LOGS = Path(__file__).parent / "fixtures" / "logs"
FIXTURES = {
    "V01": "vllm_v0_v01_llama31_8b_rtx3090_20k.txt",
    "V02": "vllm_v0_v02_llama31_8b_rtx3090_29k_fails.txt",
    "V04": "vllm_v1_v04_qwen3_235b_fp8_8xl40s_tp8.txt",
    "V11": "vllm_v0_v11_llama3_8b_table.txt",
    "V16": "vllm_v1_v16_llama31_8b_eager.txt",
    "V24": "vllm_v0_v24_llama3_8b_a100_40gb.txt",
    "S02": "sglang_s02_qwq_32b_4xl4_tp4.txt",
    "T01": "trtllm_t01_llama31_8b_rtx5090.txt",
}


def text_of(row: str) -> str:
    return (LOGS / FIXTURES[row]).read_text(encoding="utf-8")


@cache
def parsed(row: str) -> StartupLog:
    return parse_startup_log(text_of(row))


def values_of(row: str, name: str) -> list[float]:
    return [r.value for r in parsed(row).readings if r.name == name]


REFERENCE_FIGURES = {
    "V01": {
        "weights_gib": 14.9888,
        "total_memory_gib": 23.58,
        "gpu_memory_utilization": 0.90,
        "initial_memory_gib": 15.34,
        "peak_torch_gib": 17.06,
        "post_profile_memory_gib": 15.35,
        "non_torch_gib": 0.35,
        "kv_cache_gib": 3.81,
        "gpu_blocks": 1952,
        "cpu_blocks": 2048,
        "max_concurrency": 1.56,
        "max_concurrency_len": 20000,
    },
    "V02": {
        "weights_gib": 14.9888,
        "total_memory_gib": 23.58,
        "gpu_memory_utilization": 0.90,
        "peak_torch_gib": 17.98,
        "non_torch_gib": 0.35,
        "kv_cache_gib": 2.89,
        "gpu_blocks": 1478,
        "cpu_blocks": 2048,
        "max_concurrency": 0.82,
        "max_concurrency_len": 29000,
        "failed_max_model_len": 29000,
        "failed_kv_tokens": 23648,  # the row's kv_tokens: 1478 blocks * 16 tokens = 23,648
    },
    "V04": {  # the KV figures of this row are one rank's: see the multi-rank tests below
        "total_memory_gib": 44.42,
        "free_at_start_gib": 43.93,
        "gpu_memory_utilization": 0.9,
        "requested_memory_gib": 39.98,
        "non_torch_gib": 0.21,
        "activation_peak_gib": 1.4,
        "cudagraph_gib": 3.45,
        "max_concurrency_len": 32768,
        "suggested_kv_cache_fit_bytes": 7564378828,
        "suggested_kv_cache_full_bytes": 11809093120,
        "kv_cache_in_use_bytes": 11423138508,
    },
    "V11": {
        "profiling_s": 0.75,
        "total_memory_gib": 79.22,
        "gpu_memory_utilization": 0.90,
        "requested_memory_gib": 71.29,
        "weights_gib": 14.96,
        "non_torch_gib": 1.79,
        "activation_peak_gib": 1.26,
        "kv_cache_gib": 53.29,
    },
    "V16": {
        "weights_gib": 14.9889,
        "kv_cache_gib": 85.79,
        "gpu_blocks": 43925,
        "kv_tokens": 702800,
        "max_concurrency": 5.36,
        "max_concurrency_len": 131072,
    },
    "V24": {
        "weights_gib": 14.9595,
        "total_memory_gib": 39.50,
        "gpu_memory_utilization": 0.90,
        "requested_memory_gib": 35.55,
        "non_torch_gib": 0.10,
        "activation_peak_gib": 9.37,
        "kv_cache_gib": 11.12,
        "gpu_blocks": 5691,
        "cpu_blocks": 2048,
        "max_concurrency": 11.12,
        "max_concurrency_len": 8192,
    },
    "S02": {
        "mem_fraction_static": 0.85,
        "avail_before_load_gib": 21.63,
        "avail_after_load_gib": 6.09,
        "weights_gib": 15.54,
        "kv_tokens": 46611,
        "k_size_gib": 1.42,
        "v_size_gib": 1.42,
        "avail_after_pool_gib": 2.09,
        "cudagraph_gib": 0.93,
        "avail_after_cudagraph_gib": 0.53,
    },
    "T01": {
        "total_memory_gib": 31.84,
        "avail_before_kv_gib": 17.83,
        "kv_cache_gib": 16.05,
        "kv_tokens": 263008,
        "tokens_per_block": 32,
        "gpu_blocks": 8219,
    },
}

REFERENCE_CONFIG = {
    "V04": {
        "engine_version": "0.10.2",
        "model": "Qwen/Qwen3-235B-A22B-Instruct-2507-FP8",
        "tensor_parallel_size": 8,
        "pipeline_parallel_size": 1,
        "data_parallel_size": 1,
        "max_model_len": 32768,
        "dtype": "bfloat16",
        "kv_cache_dtype": "auto",
        "quantization": "fp8",
        "enforce_eager": False,
        "max_num_batched_tokens": 2048,
    },
    "V16": {"engine_version": "0.10.2", "enforce_eager": True, "max_model_len": 131072},
    "S02": {
        "model": "/home/model/Qwen/QwQ-32B",
        "tensor_parallel_size": 4,
        "data_parallel_size": 1,
        "max_model_len": 131072,
        "dtype": "bfloat16",
        "kv_cache_dtype": "auto",
        "max_num_seqs": 2049,
        "chunked_prefill_size": 2048,
        "max_prefill_tokens": 16384,
    },
}


@pytest.mark.parametrize(
    ("row", "name", "expected"),
    [(row, n, v) for row, figures in REFERENCE_FIGURES.items() for n, v in figures.items()],
    ids=[f"{row}-{n}" for row, figures in REFERENCE_FIGURES.items() for n in figures],
)
def test_figure_equals_the_reference_row(row: str, name: str, expected: float) -> None:
    assert parsed(row).figures[name].value == expected


@pytest.mark.parametrize(
    ("row", "key", "expected"),
    [(row, k, v) for row, config in REFERENCE_CONFIG.items() for k, v in config.items()],
    ids=[f"{row}-{k}" for row, config in REFERENCE_CONFIG.items() for k in config],
)
def test_config_equals_the_reference_row(row: str, key: str, expected: object) -> None:
    assert parsed(row).config[key] == expected


@pytest.mark.parametrize(
    ("row", "expected"),
    [
        ("V01", LogFormat.VLLM_V0),
        ("V02", LogFormat.VLLM_V0),
        ("V04", LogFormat.VLLM_V1),
        ("V11", LogFormat.VLLM_V0),
        ("V16", LogFormat.VLLM_V1),
        ("V24", LogFormat.VLLM_V0),
        ("S02", LogFormat.SGLANG),
        ("T01", LogFormat.TRTLLM),
    ],
)
def test_format_is_detected(row: str, expected: LogFormat) -> None:
    assert detect_format(text_of(row)) is expected


@pytest.mark.parametrize(
    "text",
    ["", "hello world\nnothing to see here", "Traceback (most recent call last):\n  KeyError: 'x'"],
    ids=["empty", "prose", "python-traceback"],
)
def test_unknown_log_is_an_input_error_of_one_line(text: str) -> None:
    with pytest.raises(InputError) as raised:
        parse_startup_log(text)
    assert "\n" not in str(raised.value)
    assert "expected e.g." in str(raised.value)


def test_vllm_gb_is_read_as_gib_and_keeps_the_engine_word() -> None:
    weights = parsed("V01").figures["weights_gib"]
    assert (weights.value, weights.unit) == (14.9888, "GB")


def test_sglang_gb_is_read_as_gib_and_keeps_the_engine_word() -> None:
    k_size = parsed("S02").figures["k_size_gib"]
    assert (k_size.value, k_size.unit) == (1.42, "GB")


def test_comma_grouped_numbers_are_read_whole() -> None:
    # "GPU KV cache size: 702,800 tokens", "Maximum concurrency for 131,072 tokens per request"
    figures = parsed("V16").figures
    assert (figures["kv_tokens"].value, figures["max_concurrency_len"].value) == (702800, 131072)


@pytest.mark.parametrize(
    ("row", "blocks", "tokens_per_block", "tokens"),
    [
        ("V16", "gpu_blocks", 16, "kv_tokens"),  # 43,925 * 16 = 702,800 (vLLM default block)
        ("T01", "gpu_blocks", 32, "kv_tokens"),  # 8,219 * 32 = 263,008
    ],
)
def test_blocks_times_block_size_is_the_token_count(
    row: str, blocks: str, tokens_per_block: int, tokens: str
) -> None:
    figures = parsed(row).figures
    assert figures[blocks].value * tokens_per_block == figures[tokens].value


def test_v0_refusal_is_kept_in_the_engine_words() -> None:
    assert parsed("V02").failure == (
        "The model's max seq len (29000) is larger than the maximum number of tokens that can be "
        "stored in KV cache (23648). Try increasing `gpu_memory_utilization` or decreasing "
        "`max_model_len` when initializing the engine."
    )


def test_a_log_that_started_has_no_failure() -> None:
    assert parsed("V01").failure is None


V1_REFUSAL = """\
(EngineCore_DP0 pid=18799) ERROR 10-08 20:33:48 [core.py:708] ValueError: 
To serve at least one request with the models's max seq len (40960), 
(5.62 GiB KV cache is needed, which is larger than the available KV cache memory (4.50 GiB). 
Based on the available memory, the estimated maximum model length is 32768. 
Try increasing `gpu_memory_utilization` or decreasing `max_model_len` when initializing the engine.
"""  # noqa: W291 - the trailing spaces are the engine's, kept as logged


def test_v1_refusal_wrapped_over_lines_gives_its_numbers() -> None:
    # Message format: vllm/v1/core/kv_cache_utils.py; this wrapped copy is from a public log.
    figures = parse_startup_log(V1_REFUSAL).figures
    got = {n: figures[n].value for n in figures}
    assert got == {
        "failed_max_model_len": 40960,
        "failed_kv_needed_gib": 5.62,
        "failed_kv_available_gib": 4.50,
        "estimated_max_model_len": 32768,
    }


def test_v1_refusal_is_one_line_of_engine_words() -> None:
    failure = parse_startup_log(V1_REFUSAL).failure
    assert failure is not None
    assert failure.startswith("To serve at least one request with the models's max seq len (40960)")
    assert failure.endswith("when initializing the engine.")


def test_kv_memory_is_the_minimum_over_ranks() -> None:
    # Eight ranks print 10.64, 10.64, 10.65, 10.68, 10.68, 10.64, 10.64, 10.65 GiB; row V04
    # quotes TP3's 10.65. The engine sizes every rank's cache to the smallest.
    assert sorted(set(values_of("V04", "kv_cache_gib"))) == [10.64, 10.65, 10.68]
    assert parsed("V04").figures["kv_cache_gib"].value == 10.64


def test_kv_tokens_are_the_minimum_over_ranks_and_match_the_final_blocks() -> None:
    # Row V04 quotes the first "GPU KV cache size" line (238,208 tokens, 7.27x); the engine then
    # settled on num_gpu_blocks 14,834 * 16 tokens = 237,344, the smallest rank's size (7.24x).
    assert 238208 in values_of("V04", "kv_tokens")
    assert 7.27 in values_of("V04", "max_concurrency")
    figures = parsed("V04").figures
    assert figures["kv_tokens"].value == figures["gpu_blocks"].value * 16 == 237344
    assert figures["max_concurrency"].value == 7.24


def test_other_figures_come_from_the_first_line_that_prints_them() -> None:
    # TP2 prints "0.21 GiB for non-torch memory" before TP0 prints 0.18.
    assert values_of("V04", "non_torch_gib")[:3] == [0.21, 0.21, 0.18]
    assert parsed("V04").figures["non_torch_gib"].value == 0.21


def test_both_weight_lines_are_kept() -> None:
    # "Model loading took 27.7183 GiB" comes first; row V04 quotes "Actual usage is 27.72 GiB".
    weights = [r for r in parsed("V04").readings if r.name == "weights_gib"]
    assert parsed("V04").figures["weights_gib"].value == 27.7183
    assert any(
        r.value == 27.72 and "Actual usage is 27.72 GiB for weight" in r.text for r in weights
    )


def test_v0_sentence_and_load_line_both_give_weights() -> None:
    # Row V24 quotes "Loading model weights took 14.9595 GB; model weights take 14.96GiB".
    assert values_of("V24", "weights_gib") == [14.9595, 14.96]


@pytest.mark.parametrize(("row", "ranks"), [("V04", 8), ("S02", 4), ("V16", 1), ("V24", 1)])
def test_ranks_seen_counts_the_ranks_that_loaded_weights(row: str, ranks: int) -> None:
    assert parsed(row).config["ranks_seen"] == ranks


def test_trtllm_keeps_the_last_kv_allocation() -> None:
    # The PyTorch flow allocates a provisional cache to profile, then the real one.
    log = parse_startup_log(
        "[TensorRT-LLM][INFO] [MemUsageChange] Allocated 0.54 GiB for max tokens in paged KV cache"
        " (16576).\n"
        "[TRT-LLM] [I] Peak memory during memory usage profiling (torch + non-torch): 91.46 GiB,"
        " available KV cache memory when calculating max tokens: 41.11 GiB, fraction is set 0.85,"
        " kv size is 35136. device total memory 139.81 GiB\n"
        "[TensorRT-LLM][INFO] [MemUsageChange] Allocated 41.11 GiB for max tokens in paged KV cache"
        " (524288).\n"
    )
    got = {
        n: log.figures[n].value for n in ("kv_cache_gib", "kv_tokens", "free_gpu_memory_fraction")
    }
    assert got == {"kv_cache_gib": 41.11, "kv_tokens": 524288, "free_gpu_memory_fraction": 0.85}


def test_newer_v1_lines_are_read() -> None:
    # Line formats of later vLLM V1 releases, as printed in public logs.
    log = parse_startup_log(
        "(Worker_TP2 pid=512) INFO [model_runner.py:415] Model loading took 19.07 GiB memory and"
        " 58.214395 seconds\n"
        "(EngineCore pid=384) INFO [kv_cache_utils.py:2393] GPU KV cache size: 651,081 tokens,"
        " Maximum concurrency for 262,144 tokens per request: 2.48x\n"
        "(Worker_TP0 pid=510) INFO [gpu_worker.py:935] Free memory on device (31.23/31.86 GiB) on"
        " startup. Desired GPU memory utilization is (0.97, 30.9 GiB). Actual usage is 24.58 GiB"
        " for consumed memory (weights + non-torch), 1.46 GiB for peak activation, and 0.49 GiB for"
        " CUDAGraph memory.\n"
    )
    names = ("weights_gib", "kv_tokens", "max_concurrency", "consumed_gib", "cudagraph_gib")
    got = {n: log.figures[n].value for n in names}
    assert got == {
        "weights_gib": 19.07,
        "kv_tokens": 651081,
        "max_concurrency": 2.48,
        "consumed_gib": 24.58,
        "cudagraph_gib": 0.49,
    }


@pytest.mark.parametrize(
    "line",
    [
        "INFO 01-16 09:40:00 executor_base.py:95] # CUDA blocks: 6001, # CPU blocks: 1638",
        "INFO 08-29 13:08:35 [executor_base.py:112] # cuda blocks: 6001, # CPU blocks: 1638",
    ],
    ids=["CUDA", "cuda"],
)
def test_v0_blocks_line_reads_for_any_device_name(line: str) -> None:
    figures = parse_startup_log(line).figures
    assert (figures["gpu_blocks"].value, figures["cpu_blocks"].value) == (6001, 1638)


def test_sglang_mla_pool_reports_one_kv_size() -> None:
    log = parse_startup_log(
        "[2025-07-01 10:00:00 TP0] KV Cache is allocated. #tokens: 1000, KV size: 0.07 GB"
    )
    assert (log.figures["kv_tokens"].value, log.figures["kv_cache_gib"].value) == (1000, 0.07)
