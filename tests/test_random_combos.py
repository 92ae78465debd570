"""Findings of the random-combination campaign (benchmarks/fuzz_random.py, issue 23)."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import pytest

from capcliff.cli import main
from capcliff.cli.render_plan import _recommendation_lines


def _kv_aware_line(gain: float, makespan: float, monkeypatch: pytest.MonkeyPatch) -> str:
    import capcliff.cli.render_reuse

    monkeypatch.setattr(capcliff.cli.render_reuse, "reuse_lines", lambda report: [])
    rec = SimpleNamespace(
        layout="tp1", max_num_seqs=64, reasons=[], kv_aware_gain=gain, kv_aware_makespan_s=makespan
    )
    lines = _recommendation_lines(SimpleNamespace(recommended=rec))  # type: ignore[arg-type]
    return next(line for line in lines if "KV-aware" in line)


@pytest.mark.parametrize(
    ("gain", "verdict"),
    [
        # 1 - 100 / 100: equal makespans (seed 5: "makespan 99 s, -0% longer")
        (0.0, "would not change the makespan (100 s)"),
        (-0.004, "would not change the makespan (100 s)"),  # 100.4 s: 0.4 %, prints as 0 %
        (0.004, "would not change the makespan (100 s)"),
        (-0.07, "would not help: makespan 100 s, 7% longer"),  # 1 - 107 / 100
        (0.25, "would gain 25% (makespan 100 s)"),  # 1 - 75 / 100
    ],
)
def test_a_kv_aware_gain_of_zero_never_reads_minus_zero_percent_longer(
    gain: float, verdict: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert _kv_aware_line(gain, 100.0, monkeypatch) == f"  - KV-aware admission {verdict}"


def test_a_plan_whose_kv_aware_makespan_equals_the_capped_one_says_no_change(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # fuzz_random seed 5 (random) printed "would not help: makespan 99 s, -0% longer"
    args = ["plan", "gpt-oss-120b", "--num-requests", "40", "--jobs", "1", "--objective",
            "makespan", "--arrival", "batch", "--prefix-caching", "off"]  # fmt: skip
    assert main([*args, "--format", "json"]) == 0
    rec = json.loads(capsys.readouterr().out)["recommended"]
    assert rec["kv_aware_gain"] == 0.0  # this case: the two makespans are equal
    assert main(args) == 0
    out = capsys.readouterr().out
    assert "-0%" not in out
    assert f"would not change the makespan ({rec['kv_aware_makespan_s']:,.0f} s)" in out


def test_a_plan_without_an_slo_draws_its_figure(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # fuzz_random seed 6 (random): `plan ... --plot out.svg` without --slo-ttft/--slo-tpot
    # raised matplotlib's "Data cannot be log-scaled because all values are <= 0" (exit 4):
    # without an SLO no offered rate is searched, so the two latency panels had no points
    pytest.importorskip("matplotlib")
    args = ["plan", "llama-3.1-8b", "--gpus", "1", "--num-requests", "40", "--jobs", "1"]
    assert main([*args, "--format", "json"]) == 0
    layouts = json.loads(capsys.readouterr().out)["layouts"]
    assert all(not row["capacity"]["load_curve"] for row in layouts if row["capacity"])
    target = tmp_path / "plan.svg"
    assert main([*args, "--plot", str(target)]) == 0
    err = capsys.readouterr().err
    assert "Traceback" not in err and "UserWarning" not in err
    # one note on each of the two latency panels (TTFT, TPOT)
    assert target.read_text().count("no latency search: no SLO given") == 2
