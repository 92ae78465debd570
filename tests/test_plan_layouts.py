"""`plan --layout`: exactly the layouts a user names, each searched in full; no 0.0 standing for
"not searched" in JSON; `--concurrency a..b:N` counts points."""

from __future__ import annotations

import json
from typing import Any

import pytest

from capcliff.analysis.workloads import parse_concurrency
from capcliff.cli import main

ONLINE = (
    "plan", "deepseek-r1-distill-llama-8b", "--gpus", "8", "--isl", "512", "--osl", "128",
    "--rate", "5", "--slo-ttft", "2", "--slo-tpot", "0.05", "--jobs", "1", "--format", "json",
)  # fmt: skip
NAMED = ("dp8", "dp4-tp2", "dp2-tp4", "tp8")  # four: more than the three leaders refined


def _json(capsys: pytest.CaptureFixture[str], *args: str) -> dict[str, Any]:
    assert main(list(args)) == 0
    result: dict[str, Any] = json.loads(capsys.readouterr().out)
    return result


@pytest.fixture(scope="module")
def default_plan() -> dict[str, Any]:
    import contextlib
    import io

    out = io.StringIO()  # module scope has no capsys: read main's stdout here
    with contextlib.redirect_stdout(out):
        assert main(list(ONLINE)) == 0
    result: dict[str, Any] = json.loads(out.getvalue())
    return result


def test_every_named_layout_is_searched_within_the_slo(
    capsys: pytest.CaptureFixture[str],
) -> None:
    report = _json(capsys, *ONLINE, "--layout", ",".join(NAMED))
    assert [row["name"] for row in report["layouts"]] == list(NAMED)
    for row in report["layouts"]:
        capacity = row["capacity"]
        assert capacity["refined"] and capacity["sustained_rps"] is not None, row["name"]
        assert row["sweet_spot"] is not None
    assert report["recommended"]["layout"] in NAMED


def test_a_named_layout_gets_the_figures_the_full_plan_gives_it(
    capsys: pytest.CaptureFixture[str], default_plan: dict[str, Any]
) -> None:
    best = default_plan["recommended"]["layout"]
    alone = _json(capsys, *ONLINE, "--layout", best)
    row = next(r for r in default_plan["layouts"] if r["name"] == best)
    assert alone["layouts"][0]["capacity"] == row["capacity"]
    assert alone["recommended"]["max_num_seqs"] == default_plan["recommended"]["max_num_seqs"]


def test_layouts_not_searched_are_null_with_a_reason_never_zero(
    default_plan: dict[str, Any],
) -> None:
    rows = [r for r in default_plan["layouts"] if r["capacity"] is not None]
    unsearched = [r for r in rows if not r["capacity"]["refined"]]
    assert unsearched  # 10 layouts of 8 GPUs, three leaders refined
    for row in unsearched:
        assert row["capacity"]["sustained_rps"] is None
        assert row["capacity"]["why_not"].startswith("not searched within the SLO")
        assert row["sweet_spot"] is None


def test_a_batch_plan_evaluates_exactly_the_named_layouts(
    capsys: pytest.CaptureFixture[str],
) -> None:
    report = _json(
        capsys, "plan", "deepseek-r1-distill-llama-8b", "--gpus", "2", "--layout", "tp2,dp2",
        "--isl", "512", "--osl", "256", "--arrival", "batch", "--num-requests", "60",
        "--format", "json",
    )  # fmt: skip
    assert [row["name"] for row in report["layouts"]] == ["tp2", "dp2"]
    assert all(row["sweet_spot"] is not None for row in report["layouts"])


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--gpus", "8", "--layout", "tp4"),
         "error: layout: tp4 (4) do not use the 8 GPUs planned (--gpus 8); every layout must "
         "span them all"),
        (("--layout", "tp8,dp4"),
         "error: layout: dp4 (4) do not use the 8 GPUs planned (tp8 uses 8); every layout must "
         "span them all"),
        (("--layout", "tp2,xx4"),
         "error: layout: cannot read 'xx4'; write factors like dp4-tp2, tp8, pp4-tp2-ep8, "
         "tp8-ep4 or dpa8 (attention DP)"),
        (("--layout", "tp2", "--disagg"),
         "error: layout: not with --disagg (it searches the pools' layouts)"),
    ],
    ids=["not-the-gpus", "layouts-of-different-sizes", "unknown-token", "with-disagg"],
)  # fmt: skip
def test_bad_layouts_are_one_line_and_exit_2(
    capsys: pytest.CaptureFixture[str], args: tuple[str, ...], message: str
) -> None:
    assert main(["plan", "llama-3.1-8b", *args]) == 2
    assert capsys.readouterr().err.strip().splitlines() == [message]


def test_concurrency_n_after_the_colon_is_a_count_of_points() -> None:
    # 64..8192 is 2^6..2^13: eight log-spaced points are the eight powers of two.
    assert parse_concurrency("64..8192:8") == (64, 128, 256, 512, 1024, 2048, 4096, 8192)
    # 1..1000:4 -> 10^0, 10^1, 10^2, 10^3: four points, not a step of 4.
    assert parse_concurrency("1..1000:4") == (1, 10, 100, 1000)
    assert parse_concurrency("64..512") == (64, 128, 256, 512)  # no N: doubling


def test_every_command_with_concurrency_says_n_is_a_count(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # `sweep` (and `sweep --disagg`, the same option) is the one command that takes it
    assert main(["sweep", "--help"]) == 0
    words = capsys.readouterr().out.replace("│", " ").split()
    assert "16 is a count of points" in " ".join(words)
