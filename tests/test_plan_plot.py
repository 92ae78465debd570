"""`capcliff plan --plot`: an online plan draws its layouts; the path is checked before any
simulation; a batch plan has no load to draw against."""

from __future__ import annotations

from pathlib import Path

import pytest

from capcliff.cli import main

ONLINE = [
    "plan", "llama-3.1-8b", "--gpus", "1", "--layout", "tp1", "--isl", "256", "--osl", "64",
    "--rate", "5", "--slo-ttft", "1", "--slo-tpot", "0.05", "--num-requests", "300",
]  # fmt: skip


def test_an_online_plan_draws_a_png(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    target = tmp_path / "plan.png"
    code = main([*ONLINE, "--plot", str(target), "--format", "json"])
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        assert code == 2
        assert "pip install 'capcliff[plot]'" in capsys.readouterr().err
        return
    assert code == 0
    assert target.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_an_existing_figure_is_kept_without_force(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    target = tmp_path / "plan.svg"
    target.write_text("mine")
    assert main([*ONLINE, "--plot", str(target)]) == 2
    assert target.read_text() == "mine"
    assert "--plot" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("extra", "said"),
    [
        (["--plot", "out.pdf"], "must end in .png or .svg"),
        (["--plot", "out.png", "--arrival", "batch"], "a batch plan has no load"),
    ],
)
def test_a_figure_that_cannot_be_drawn_is_one_line_exit_2(
    extra: list[str], said: str, tmp_path: Path, capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    if "batch" in extra:  # the missing library would be said first
        pytest.importorskip("matplotlib")
    monkeypatch.chdir(tmp_path)
    args = [a for a in ONLINE if a not in ("--rate", "5")] if "batch" in extra else ONLINE
    assert main([*args, *extra]) == 2
    err = capsys.readouterr().err
    assert said in err and len(err.strip().splitlines()) == 1
