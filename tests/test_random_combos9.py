"""Findings of the random-combination campaign's seeds 61-64 (benchmarks/fuzz_random.py, issue 23),
each value worked by hand or read from the engines' source.

llama-3.3-70b-fp4 (nvidia/Llama-3.3-70B-Instruct-FP4) ships `kv_cache_quant_algo: FP8` in its
hf_quant_config.json. Its KV cache per token, all layers: 80 layers x 8 KV heads x 128 x 2 (K and
V) = 163,840 elements, so 163,840 B in FP8 and 327,680 B in BF16.
"""

from __future__ import annotations

import json

import pytest

from capcliff.cli import main

MODEL = "llama-3.3-70b-fp4"
ON_TWO_B200 = ["--gpu", "b200", "--gpus", "2", "--layout", "tp2"]
PLAN = ["--num-requests", "40", "--jobs", "1", "--format", "json"]


def _plan(capsys: pytest.CaptureFixture[str], *argv: str) -> dict[str, object]:
    assert main(["plan", *argv, *PLAN]) == 0
    return json.loads(capsys.readouterr().out)


def _kv_flag(line: str) -> str | None:
    """The value of `--kv-cache-dtype` on an engine's command line (None: not given)."""
    words = line.replace("\\\n", " ").split()
    return words[words.index("--kv-cache-dtype") + 1] if "--kv-cache-dtype" in words else None


# A 16-bit cache asked over an FP8-KV checkpoint: `auto` stores the checkpoint's FP8 in vLLM
# >= 0.14 and SGLang >= 0.4.3, so the lines printed `--kv-cache-dtype auto` (vLLM) and nothing
# (SGLang) for a pool sized at 327,680 B a token: served as printed, each would hold twice the
# tokens planned, at another precision. vLLM names it `bfloat16` (vllm/config/cache.py
# CacheDType), SGLang `bf16` (server_args.py --kv-cache-dtype choices). vLLM 0.10's `auto`
# stores the model's dtype (the checkpoint's KV quantisation is read from 0.14): its line keeps
# `auto`, while SGLang's line, at its latest release, still names bf16.
@pytest.mark.parametrize(
    ("argv", "vllm"),
    [
        (["--engine", "vllm", "--kv-cache-dtype", "bf16"], "bfloat16"),
        (["--engine", "vllm", "--engine-version", "0.10.1"], "auto"),
        (["--engine", "vllm-v0", "--engine-version", "0.6.3"], "auto"),  # V0: the model's dtype
    ],
    ids=["bf16 asked", "vllm 0.10 default", "vllm V0 default"],
)
def test_a_16_bit_cache_over_an_fp8_kv_checkpoint_is_named_on_the_lines(
    capsys: pytest.CaptureFixture[str], argv: list[str], vllm: str
) -> None:
    report = _plan(capsys, MODEL, *ON_TWO_B200, *argv)
    assert report["kv_dtype"] == "bf16"
    flags = report["engine_flags"]
    assert isinstance(flags, dict)
    assert _kv_flag(flags["vllm"]) == vllm
    assert _kv_flag(flags["sglang"]) == "bf16"


# A checkpoint without a KV quantisation: `auto` is the model's BF16 everywhere, as before.
def test_a_checkpoint_without_kv_quantisation_keeps_auto(
    capsys: pytest.CaptureFixture[str],
) -> None:
    report = _plan(
        capsys, "llama-3.1-8b", "--gpu", "h100-sxm", "--gpus", "1", "--layout", "tp1",
        "--engine", "vllm", "--kv-cache-dtype", "bf16",
    )  # fmt: skip
    flags = report["engine_flags"]
    assert isinstance(flags, dict)
    assert _kv_flag(flags["vllm"]) == "auto"
    assert _kv_flag(flags["sglang"]) is None


# TensorRT-LLM's validate_and_set_kv_cache_quant accepts only auto/fp8/nvfp4 and raises "You
# cannot override a checkpoint with a pre-quantized KV cache that doesn't match": a BF16 cache
# over this checkpoint was planned (327,680 B a token) and its warning told the user to ask for one.
def test_trtllm_refuses_a_16_bit_cache_over_an_fp8_kv_checkpoint(
    capsys: pytest.CaptureFixture[str],
) -> None:
    argv = ["memory", MODEL, *ON_TWO_B200, "--engine", "trtllm", "--kv-cache-dtype", "bf16"]
    assert main(argv) == 2
    out, err = capsys.readouterr()
    assert out == ""
    lines = err.strip().splitlines()
    assert len(lines) == 1
    assert lines[0].startswith("error: --kv-cache-dtype: bf16: TensorRT-LLM cannot override")


def test_trtllm_keeps_the_checkpoint_fp8_and_says_it_cannot_be_changed(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["memory", MODEL, *ON_TWO_B200, "--engine", "trtllm", "--format", "json"]) == 0
    out, err = capsys.readouterr()
    report = json.loads(out)
    assert report["kv_dtype"] == "fp8"
    assert report["kv_bytes_per_token"] == 163_840
    assert "cannot override" in err
    assert "give --kv-cache-dtype bf16" not in err  # the advice TensorRT-LLM would refuse
    # the same checkpoint on vLLM may be sized 16-bit: 327,680 B a token
    bf16 = ["memory", MODEL, *ON_TWO_B200, "--kv-cache-dtype", "bf16", "--format", "json"]
    assert main(bf16) == 0
    assert json.loads(capsys.readouterr().out)["kv_bytes_per_token"] == 327_680


# The tie rule passes over a tied layout whose TTFT or TPOT p99 is over 2x another's beyond both
# sampling intervals; the "not settled" line did not know it. dpa2 (simpler: one GPU a rank)
# 9.0 % below tp2 sits inside the 10 % band by 1.0 point, within its 5-point noise; its TTFT
# p99, 45 s at +-20 %, lies above 45 / 1.2 = 37.5 s > 2 x 1.0 x 1.3 = 2.6 s: passed over, so
# tp2 is recommended whatever side of the edge dpa2 lands on. The line said "dpa2 is 9.0% below
# tp2, outside the 10% band ... may recommend dpa2": inside the band, and never recommended.
def test_a_layout_passed_over_for_its_latency_leaves_the_choice_settled() -> None:
    from capcliff.analysis.plan.ties import Option, decide, unsettled_reason

    tp2 = Option("tp2", 1.0, tp=2, pp=1, half_width=0.02,
                 latencies=((1.0, 0.3), (0.02, 0.05)))  # fmt: skip
    dpa2 = Option("dpa2", 0.91, tp=1, pp=1, half_width=0.03,
                  latencies=((45.0, 0.2), (0.018, 0.05)))  # fmt: skip
    assert decide([tp2, dpa2])[0] is tp2
    assert unsettled_reason([tp2, dpa2]) == ""
    # the same gap with dpa2 as quick as tp2 is a coin toss, and said so (as before)
    quick = Option("dpa2", 0.91, tp=1, pp=1, half_width=0.03,
                   latencies=((1.1, 0.2), (0.018, 0.05)))  # fmt: skip
    assert decide([tp2, quick])[0] is quick
    assert unsettled_reason([tp2, quick]).startswith("not settled: dpa2 is 9.0% below tp2, inside")
