"""`memory --layout` takes a comma list, as `plan --layout` does (h-user's trial: `tp8,dpa8-ep8`
was refused by memory and read by plan)."""

from __future__ import annotations

import json

import pytest

from capcliff.cli.main import main


def test_a_list_of_layouts_is_reported_layout_by_layout(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["memory", "llama-3.1-8b", "--layout", "tp2,dp2", "--format", "json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert [row["name"] for row in report["layouts"]] == ["tp2", "dp2"]
    # tp2 shards the 16.06 GB of bf16 weights over 2 GPUs, dp2 holds them whole on each
    tp2, dp2 = report["layouts"]
    assert tp2["weights_bytes_per_gpu"] * 2 == pytest.approx(dp2["weights_bytes_per_gpu"], rel=0.01)


def test_layouts_of_two_gpu_counts_are_refused_in_one_line(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["memory", "llama-3.1-8b", "--layout", "tp8,tp4"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [
        "error: layout: one memory report lays out one GPU count (tp8 uses 8, tp4 uses 4); "
        "run memory once per count"
    ]
