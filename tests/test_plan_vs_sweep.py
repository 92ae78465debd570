"""`plan` and `sweep` agree on the same deployment: the rate `plan` says a layout sustains within
the SLO holds when `sweep` (its own sample, its own code path) runs that rate at that cap.

The plan's search keeps the highest rate whose noisy estimate passes; its figures are then taken
from a fresh sample (`capacity.verified`), so they are not biased toward passing."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from capcliff.cli.app import app

DEPLOYMENT = ["llama-3.1-8b", "--gpu", "h200-sxm", "--gpus", "1", "--isl", "1024", "--osl", "256"]
SLO_TPOT_S = 0.012


def _json(args: list[str]) -> dict[str, object]:
    out = CliRunner().invoke(app, [*args, "--format", "json"])
    assert out.exit_code == 0, out.output
    found: dict[str, object] = json.loads(out.stdout)
    return found


def test_the_sustained_rate_of_plan_meets_the_slo_in_sweep() -> None:
    plan = _json(["plan", *DEPLOYMENT, "--layout", "tp1", "--rate", "5", "--slo-ttft", "5",
                  "--slo-tpot", str(SLO_TPOT_S)])  # fmt: skip
    row = plan["layouts"][0]  # type: ignore[index]
    capacity = row["capacity"]
    rate, cap = capacity["sustained_rps"], capacity["max_num_seqs"]
    assert rate > 0 and capacity["tpot_p99_s"] <= SLO_TPOT_S
    for seed in ("0", "1"):
        sweep = _json(["sweep", *DEPLOYMENT, "--layout", "tp1", "--rate", str(rate),
                       "--concurrency", str(cap), "--seed", seed])  # fmt: skip
        steady = sweep["series"][0]["points"][0]["steady"]  # type: ignore[index]
        # the same figure within the p99's sampling noise: measured 11.3-13.6 ms over samples of
        # 8,000-17,680 requests at this point (the stopping rule bounds the rate and the mean
        # TPOT to 5 %, not the p99); before `verified` the plan's rate sat past the SLO in sweep
        assert steady["tpot_p99_s"] == pytest.approx(capacity["tpot_p99_s"], rel=0.25)
        assert steady["tpot_p99_s"] <= SLO_TPOT_S * 1.15
