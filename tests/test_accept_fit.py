"""Calibrating a speculative deployment's mean acceptance length from its benchmark results
(`capcliff calibrate BENCH --speculative mtp:K`)."""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path

import pytest

from capcliff.analysis.deployment import resolve
from capcliff.analysis.deployment_settings import settings_of
from capcliff.analysis.sweep.accept_fit import fit_accept_length, with_accept_length
from capcliff.analysis.sweep.step_fit import simulate_point
from capcliff.calibrate.benchmarks import BenchmarkPoint
from capcliff.calibrate.calibration_file import SpeculativeCalibration
from capcliff.catalog.catalogs import get_hardware, get_model
from capcliff.catalog.layout import parse_layout
from capcliff.cli.main import main

TP8 = parse_layout("tp8")
CLIENTS = (2, 8)


def _r1_mtp(**extra: object):  # type: ignore[no-untyped-def]
    settings = settings_of({"engine": "sglang", "speculative": "mtp:3", **extra})
    return resolve(get_model("deepseek-r1"), get_hardware("h200-sxm"), settings)


def _measured_at(length: float) -> list[BenchmarkPoint]:
    """Runs of the deployment as they would measure if its drafts averaged `length` tokens per
    step (the simulator's figures at that acceptance, standing in for an engine's)."""
    dep, points = _r1_mtp(), []
    for c in CLIENTS:
        p = BenchmarkPoint(f"c{c}", c, 512, 256)
        t = simulate_point(with_accept_length(dep, length), TP8, p, {})
        points.append(replace(p, output_throughput_tok_s=1 / t.s_per_token, mean_tpot_s=t.tpot_s))
    return points


def test_the_fit_finds_the_acceptance_the_runs_were_made_at() -> None:
    # started from the default E = 2.50 (0.75 x 0.86^(j-1), K = 3), the runs made at 1.8
    fit = fit_accept_length(_r1_mtp(), TP8, _measured_at(1.8))
    assert fit.modeled_length == pytest.approx(2.5, abs=0.01)
    assert fit.accept_length == pytest.approx(1.8, rel=0.01)
    assert fit.bound is None
    for p in fit.points:
        assert abs(p.tpot_error(p.calibrated) or 0) < 0.01
        assert (p.tpot_error(p.modeled) or 0) < -0.2  # the default E was 39 % too many tokens


def test_runs_slower_than_one_token_a_step_allows_stop_at_the_bound() -> None:
    slow = [replace(p, mean_tpot_s=10 * (p.mean_tpot_s or 0), output_throughput_tok_s=None)
            for p in _measured_at(2.0)]  # fmt: skip
    fit = fit_accept_length(_r1_mtp(), TP8, slow)
    assert (fit.accept_length, fit.bound) == (1.0, "lower")


def test_a_file_refuses_more_tokens_a_step_than_k_plus_one() -> None:
    with pytest.raises(ValueError, match="more than K \\+ 1 = 4 for mtp:3"):
        SpeculativeCalibration(speculative="mtp:3", accept_length=4.2, source="b.csv", points=2)
    with pytest.raises(ValueError, match="is not mtp:K"):
        SpeculativeCalibration(speculative="mtp", accept_length=2, source="b.csv", points=2)


def _bench(tmp_path: Path, length: float) -> Path:
    rows = ["model,gpu,gpus,layout,engine,concurrency,input_len,output_len,"
            "output_throughput_tok_s,mean_tpot_ms"]  # fmt: skip
    for p in _measured_at(length):
        rows.append(
            f"deepseek-ai/DeepSeek-R1,H200,8,tp8,sglang,{p.concurrency},512,256,"
            f"{p.output_throughput_tok_s:.3f},{(p.mean_tpot_s or 0) * 1e3:.5f}"
        )
    path = tmp_path / "mtp.csv"
    path.write_text("\n".join(rows) + "\n")
    return path


def test_calibrate_writes_the_acceptance_and_a_plan_applies_it_to_that_setting_only(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bench, cal = _bench(tmp_path, 2.2), tmp_path / "cal.toml"
    args = ["calibrate", str(bench), "--model", "deepseek-r1", "--gpu", "h200-sxm", "--gpus",
            "8", "--engine", "sglang", "--speculative", "mtp:3", "-o", str(cal)]  # fmt: skip
    assert main(args) == 0
    out = capsys.readouterr().out
    # the CSV reader adds the client's turnaround between requests (CLIENT_TURNAROUND_S), which
    # the runs above were made without: within 1 %
    fitted = re.search(r"fitted: acceptance length (\d\.\d\d) tokens per step for mtp:3 "
                       r"\(modeled 2\.50\)", out)  # fmt: skip
    assert fitted is not None and float(fitted.group(1)) == pytest.approx(2.2, rel=0.01)
    dep = _r1_mtp(calibration=str(cal))
    assert dep.acceptance is not None
    assert dep.acceptance.tokens_per_step == pytest.approx(2.2, rel=0.01)
    assert dep.acceptance.source.startswith(f"calibrated from {bench}")
    # a given acceptance wins over the file's
    given = _r1_mtp(calibration=str(cal), spec_accept_length=2.9)
    assert given.acceptance is not None and given.acceptance.tokens_per_step == 2.9
    sweep = ["sweep", "deepseek-r1", "--gpu", "h200-sxm", "--gpus", "8", "--layout", "tp8",
             "--engine", "sglang", "--calibration", str(cal), "--isl", "512", "--osl", "64",
             "--concurrency", "4", "--num-requests", "8"]  # fmt: skip
    assert main([*sweep, "--speculative", "mtp:2"]) == 2
    assert "made for another deployment (speculative mtp:3 != mtp:2)" in capsys.readouterr().err
    assert main(sweep) == 0
    assert "applies only with --speculative mtp:3" in capsys.readouterr().err


def test_the_flags_of_an_acceptance_fit_are_refused_elsewhere(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bench = _bench(tmp_path, 2.0)
    base = ["calibrate", str(bench), "--model", "deepseek-r1", "--gpu", "h200-sxm", "--gpus",
            "8", "--engine", "sglang"]  # fmt: skip
    assert main([*base, "--calibration", str(bench)]) == 2
    assert "applies to an acceptance fit (with --speculative) only" in capsys.readouterr().err
    log = tmp_path / "start.log"
    log.write_text("INFO vllm serve\n")
    assert main(["calibrate", str(log), "--speculative", "mtp:3"]) == 2
    assert "not a start-up log" in capsys.readouterr().err
