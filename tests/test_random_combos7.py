"""Findings of the random-combination campaign's seeds 48-51 (benchmarks/fuzz_random.py, issue 23),
each value worked by hand or read from the engine's tables."""

from __future__ import annotations

import json

import pytest

from capcliff.cli import main


def _step_profile(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    """The step-time label of a one-point JSON sweep."""
    args = ["sweep", *argv, "--num-requests", "8", "--isl", "100", "--osl", "10"]
    assert main([*args, "--concurrency", "8", "--format", "json"]) == 0
    return str(json.loads(capsys.readouterr().out)["step_profile"])


# op_curves.json holds one vLLM GEMM table for mi300x, aiter's a8w8 (one-byte weights: format
# "fp8"), and none in bfloat16 or nvfp4 for any Hopper GPU: a BF16 model's GEMMs on an MI300X, and
# an NVFP4 checkpoint's on an H200, are priced at the MBU and MFU constants (efficiency.
# op_curves_for: no curve of their format). Seed 48 (random: `plan deepseek-r1-0528-fp4 --gpu
# mi300x`) printed "weight reads from measured aiter curves (... stand for vLLM's FP8 GEMMs);
# compute from measured aiter curves" for weights none of those curves measure.
@pytest.mark.parametrize(
    ("argv", "fmt", "gpu"),
    [
        (("llama-3.1-8b", "--gpu", "mi300x", "--gpus", "1"), "bfloat16", "mi300x"),
        (("deepseek-r1-0528-fp4", "--gpu", "h200-sxm", "--gpus", "8"), "nvfp4", "h200-sxm"),
    ],
)
def test_a_gpus_tables_of_other_formats_are_not_said_to_price_the_model(
    capsys: pytest.CaptureFixture[str], argv: tuple[str, ...], fmt: str, gpu: str
) -> None:
    label = _step_profile(capsys, *argv)
    assert (
        f"weight reads at the model's MBU (no measured vllm op curve for {fmt} weights on {gpu})"
        in label
    )
    assert f"compute at MFU (no measured vllm compute curve for {fmt} weights on {gpu})" in label
    assert "from measured" not in label


def test_an_fp8_model_on_mi300x_is_still_priced_from_aiters_fp8_table(
    capsys: pytest.CaptureFixture[str],
) -> None:
    label = _step_profile(capsys, "llama-3.3-70b-fp8", "--gpu", "mi300x", "--gpus", "1")
    assert "weight reads from measured aiter curves (ROCm/aiter 035725098d" in label
    assert "compute from measured aiter curves (the same tables)" in label


# vLLM and SGLang cast a checkpoint's bfloat16 weights to float16 at load with `--dtype float16`
# ("Casting between float16 and bfloat16 is allowed with a warning": `_get_and_verify_dtype` in
# vllm/config/model.py and python/sglang/srt/configs/model_config.py). Seed 50 (random: `plan
# gemma-3-27b --weight-dtype fp16 --gpu mi355x`) printed lines without it and "the engines cannot
# quantize bf16 weights to it while loading; serve a checkpoint quantized to fp16".
def test_fp16_weights_of_a_bf16_checkpoint_are_the_engines_dtype_cast(
    capsys: pytest.CaptureFixture[str],
) -> None:
    argv = ["plan", "llama-3.1-8b", "--gpu", "h200-sxm", "--gpus", "1", "--engine", "trtllm"]
    argv += ["--weight-dtype", "fp16", "--isl", "1000", "--osl", "100", "--num-requests", "40"]
    assert main([*argv, "--layout", "tp1", "--format", "json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert "--dtype float16" in out["engine_flags"]["vllm"]
    assert "--dtype float16" in out["engine_flags"]["sglang"]
    assert not any("cannot quantize" in w for w in out["flag_warnings"])
    assert (
        "trtllm-serve: weights cast to float16 are dtype: float16 in --extra_llm_api_options"
        in (out["flag_warnings"])
    )


def test_fp8_weights_are_still_quantized_at_load_not_cast(
    capsys: pytest.CaptureFixture[str],
) -> None:
    argv = ["plan", "llama-3.1-8b", "--gpu", "h200-sxm", "--gpus", "1", "--weight-dtype", "fp8"]
    argv += ["--isl", "1000", "--osl", "100", "--num-requests", "40", "--layout", "tp1"]
    assert main([*argv, "--format", "json"]) == 0
    vllm = json.loads(capsys.readouterr().out)["engine_flags"]["vllm"]
    assert "--quantization fp8" in vllm
    assert "--dtype" not in vllm
