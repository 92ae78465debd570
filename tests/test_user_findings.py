"""Found by using capcliff as an inference engineer would: each test is one claim that was false."""

from __future__ import annotations

from pathlib import Path

import pytest

from capcliff.check.runner import check_file
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


AUTO_ONLINE = """
[[scenario]]
name = "chat users on two GPUs"
model = "llama-3.1-8b"
gpu = "h200-sxm"
gpus = 2
layout = "auto"
[scenario.workload]
preset = "chat"
arrival = "clients"
concurrency = 64
num_requests = 200
[scenario.expect]
tpot_p99_max_s = 0.03
recommended_layout = "tp2"
sustained_rps_min = 0.1
"""


def test_an_online_auto_scenario_judges_one_layout(tmp_path: Path) -> None:
    # The layout `auto` chose, the recommended_layout assertion and the sustained rate must all
    # be the online plan's: they were tp2 (a batch plan) against dp2 (the online plan).
    spec = tmp_path / "capcliff.toml"
    spec.write_text(AUTO_ONLINE)
    scenario = check_file(spec).scenarios[0]
    recommended = next(a for a in scenario.assertions if a.name == "recommended_layout")
    sustained = next(a for a in scenario.assertions if a.name == "sustained_rps_min")
    assert scenario.layout_source == "plan"
    assert recommended.actual == scenario.layout
    assert sustained.detail.split(" at max_num_seqs")[0] == scenario.layout
