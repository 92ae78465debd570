"""`plan --disagg` at an offered rate: GPU-hours per million output tokens on the same basis as
the $ per million beside it, for the split and for the aggregated layout.

Both figures price the same GPUs over the same output tokens, so at one $ per GPU-hour for every
GPU they must rank the two deployments alike: $ per million = GPU-hours per million x $ per
GPU-hour. The aggregated figure used to be its batch sweet spot's (GPUs x makespan over the
tokens) while its $ figure was its steady state's at the rate, and the comparison printed "$11.37
vs $10.96" beside "GPU-hours per million 2.81 vs 3.88" (campaign 19).
"""

from __future__ import annotations

import json

import pytest

from capcliff.cli.main import main

GPUS, PRICE = 2, 4.0


def test_gpu_hours_and_dollars_per_million_tokens_agree(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code = main(
        ["plan", "llama-3.1-8b", "--gpus", str(GPUS), "--rate", "2", "--isl", "500", "--osl",
         "300", "--slo-tpot", "1e-6", "--disagg", "--format", "json", "--jobs", "1",
         "--price-gpu-hour", str(PRICE)]
    )  # fmt: skip
    report = json.loads(capsys.readouterr().out)
    assert code == 0
    assert report["usd_per_gpu_hour"] == PRICE
    # A TPOT limit of 1 microsecond is met by neither, so each is costed on the output tokens/s
    # of its steady state: GPU-hours per million = GPUs / (tokens/s x 3,600 s/h) x 1e6.
    for figures in (report["disaggregated"]["serving"], report["aggregated"]):
        gpu_hours = figures["gpu_hours_per_mtok"]
        tok_s = figures["output_throughput_tok_s"]
        assert gpu_hours == pytest.approx(GPUS / (tok_s * 3600) * 1e6, rel=1e-9)
        assert figures["usd_per_million_output_tokens"] == pytest.approx(
            gpu_hours * PRICE, rel=1e-9
        )
