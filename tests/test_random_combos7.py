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
