"""Findings of the random-combination campaign's seeds 36-41 (benchmarks/fuzz_random.py, issue 23),
each value worked by hand or read from another command's answer."""

from __future__ import annotations

from pathlib import Path

import pytest

from capcliff.cli import main

T01 = str(Path(__file__).parent / "fixtures" / "logs" / "trtllm_t01_llama31_8b_rtx5090.txt")


def test_calibrate_refuses_a_trtllm_log_whose_memory_in_use_cannot_hold_the_weights(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # fuzz_random seed 39 (random): row T01, Llama-3.1-8B on an RTX 5090, calibrated as
    # qwen3-32b printed a modeled KV cache of -32.619 GiB (calibrated -30.044) with exit 0.
    # The log's "total: 31.84 GiB, available: 17.83 GiB" leaves 31.84 - 17.83 = 14.01 GiB in
    # use before the KV cache, weights included. Qwen3-32B in bf16: 64 layers x (5,120 x 8,192
    # x 2 (q, o) + 5,120 x 1,024 x 2 (k, v) + 3 x 5,120 x 25,600 (MLP)) = 31.206e9, + 2 x
    # 151,936 x 5,120 (embedding, head) = 32.761e9 parameters x 2 B / 2^30 = 61.02 GiB, past
    # 1.5 x 14.01 = 21.0.
    assert main(["calibrate", T01, "--model", "qwen3-32b"]) == 2
    err = capsys.readouterr().err
    assert "qwen3-32b's weights (61.02 GiB per GPU) do not fit in the 14.01 GiB" in err
    assert "31.84 GiB total less 17.83 available" in err


def test_calibrate_keeps_a_trtllm_log_of_the_model_named(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # Llama-3.1-8B: 8.030e9 parameters x 2 B / 2^30 = 14.96 GiB, 1.07 x the 14.01 in use (the
    # log's FP8 checkpoint is smaller): within the set 1.5, still calibrated
    assert main(["calibrate", T01, "--model", "llama-3.1-8b", "--kv-cache-dtype", "fp8"]) == 0
    assert "kv_cache_gib" in capsys.readouterr().out
