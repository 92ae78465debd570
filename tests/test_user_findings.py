"""Found by using capcliff as an inference engineer would: each test is one claim that was false."""

from __future__ import annotations

import pytest

from capcliff.cli import main

SMALL = ["llama-3.1-8b", "--gpus", "1", "--isl", "100", "--osl", "100", "--num-requests", "20"]


@pytest.mark.parametrize("value", ["1", "1.5", "nan", "-0.1"])
def test_a_headroom_outside_zero_to_one_names_headroom_before_simulating(
    value: str, capsys: pytest.CaptureFixture[str]
) -> None:
    # headroom 1 left no capacity (reported as 'rate: must be > 0'); NaN crashed the simulator
    code = main(["plan", *SMALL, "--headroom", value])
    err = capsys.readouterr().err
    assert code == 2, err
    assert "Traceback" not in err and err.count("\n") == 1, err
    assert err.startswith("error: --headroom: must be a number in [0, 1)"), err
