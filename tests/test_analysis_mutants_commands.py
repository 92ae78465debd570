"""Edges of reading an engine command line that mutation testing found untested
(`benchmarks/mutation.py --packages analysis`, seed 7): each expected value worked out by hand."""

from __future__ import annotations

from capcliff.analysis.serve_command import parse_serve_command


def test_a_quantization_flag_capcliff_knows_sets_the_weight_dtype() -> None:
    # vLLM's --quantization fp8 and its short form -q: FP8 weights, nothing left unmodelled
    for flag in ("--quantization fp8", "-q fp8"):
        command = parse_serve_command(f"vllm serve m/x {flag}")
        assert command.settings["weight_dtype"] == "fp8"
        assert command.unmodelled == ()
