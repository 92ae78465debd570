"""`capcliff sweep` where a requested layout does not fit: the answer says so, as `plan` does.

A model that does not fit is an answer, not an error (exit 0): each layout that was not simulated
is listed with its reason, and where none fits the sweep says what would. A layout that cannot
exist for the model (TP not dividing its heads) is bad input: one line, exit 2, in `plan` too.
The reasons and fixes below are worked out by hand from the model configs and the GPU specs.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from capcliff.cli.main import main

SMALL = ["--isl", "100", "--osl", "100", "--num-requests", "20"]


def _run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main([*args, *SMALL])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


# Llama-3.1-8B has 32 attention heads (config.json num_attention_heads): TP 3 cannot split them.
# Its 16 GB of BF16 weights fit one H200, so dp3 and pp3 of the same 3 GPUs fit as they are.
TP3 = "  tp3: 32 attention heads are not divisible by TP=3"


def test_a_layout_that_cannot_be_is_refused_naming_what_would_fit(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # A layout that cannot exist for the model is bad input (the layout field), not an answer:
    # one line naming it, why, and the layouts of the same GPUs that fit as they are.
    line = (
        "error: layout: tp3: 32 attention heads are not divisible by TP=3; valid: dp3, pp3 fit "
        "these 3 GPUs as they are (--layout dp3)\n"
    )
    code, out, err = _run(capsys, "sweep", "llama-3.1-8b", "--gpu", "h200-sxm", "--layout", "tp3")
    assert (code, out, err) == (2, "", line)
    # `plan` says the same, batch or online (the answer does not depend on which command asked)
    for mode in (["--arrival", "batch"], ["--rate", "2"]):
        plan = ["plan", "llama-3.1-8b", "--gpu", "h200-sxm", "--layout", "tp3", *mode]
        code, out, err = _run(capsys, *plan)
        assert (code, out, err) == (2, "", line)


def test_a_layout_left_out_beside_one_swept_is_named(capsys: pytest.CaptureFixture[str]) -> None:
    # tp3 was dropped without a word and tp2 swept alone.
    args = ["sweep", "llama-3.1-8b", "--gpu", "h200-sxm", "--layout", "tp3,tp2", "--concurrency"]
    code, out, _ = _run(capsys, *args, "8")
    assert code == 0
    assert "tp2, osl 100" in out
    assert out.rstrip().endswith("left out:\n" + TP3)
    code, out, _ = _run(capsys, *args, "8", "--format", "json")
    report = json.loads(out)
    assert [s["layout"] for s in report["series"]] == ["tp2"]
    assert report["left_out"] == [
        {"layout": "tp3", "reason": "32 attention heads are not divisible by TP=3"}
    ]


def test_every_layout_swept_leaves_nothing_out(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _run(capsys, "sweep", "llama-3.1-8b", "--concurrency", "8", "--format", "json")
    assert code == 0
    assert json.loads(out)["left_out"] == []


def test_nothing_fits_in_json_names_each_layout_and_what_would(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # Llama-3.1-405B in BF16 is 811.7 GB (405.9 B parameters x 2 B): 811.7 GB on one H100, 101.5
    # GB a GPU at TP 8, both over the 77.0 GB vLLM lets weights and KV use on an H100 (0.9 x the
    # 79.65 GiB the driver reports). In FP8, 50.7 GB a GPU at TP 8 fits; 16 BF16 GPUs hold 50.7
    # GB each (TP within a node, so tp8-pp2).
    args = ["sweep", "llama-3.1-405b", "--gpu", "h100-sxm", "--layout", "tp1,tp8"]
    code, out, err = _run(capsys, *args, "--format", "json")
    assert (code, err) == (0, "")
    answer = json.loads(out)
    assert answer["fits"] is False
    assert answer["gpus"] == 8  # the most GPUs a requested layout uses
    assert answer["left_out"] == [
        {"layout": "tp1", "reason": "does not fit: weights 811.7 GB/GPU > 77.0 GB usable"},
        {"layout": "tp8", "reason": "does not fit: weights 101.5 GB/GPU > 77.0 GB usable"},
    ]
    assert answer["fixes"][0] == "FP8 weights (--weight-dtype fp8) fit as tp8"
    assert answer["fixes"][1].startswith("16 GPUs (2 nodes) fit as ")


def test_nothing_fits_in_csv_has_the_columns_and_the_answer_on_one_line(
    capsys: pytest.CaptureFixture[str],
) -> None:
    args = ["sweep", "llama-3.1-405b", "--gpu", "h100-sxm", "--layout", "tp8", "--format", "csv"]
    code, out, err = _run(capsys, *args)
    assert code == 0
    assert out.count("\n") == 1 and out.startswith("layout,output_tokens,concurrency,")
    assert err == (
        "warning: nothing fits (tp8: does not fit: weights 101.5 GB/GPU > 77.0 GB usable); "
        "what would: FP8 weights (--weight-dtype fp8) fit as tp8; 16 GPUs (2 nodes) fit as "
        "tp8-pp2\n"
    )


def test_nothing_fits_writes_no_figure_and_says_so(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    pytest.importorskip("matplotlib")  # --plot is refused up front without it
    figure = tmp_path / "sweep.png"
    args = ["sweep", "llama-3.1-405b", "--gpu", "h100-sxm", "--layout", "tp8"]
    code, out, err = _run(capsys, *args, "--plot", str(figure))
    assert code == 0
    assert "Nothing fits. What would:" in out
    assert err.startswith("warning: plot: ") and "not written: no layout fits" in err
    assert err.count("\n") == 1
    assert not figure.exists()
