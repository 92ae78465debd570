"""Benchmark results -> step-time terms: readers, the least-squares fit, the CLI."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from typer.testing import CliRunner

from capcliff.analysis.deployment import resolve
from capcliff.analysis.deployment_settings import settings_of
from capcliff.analysis.sweep.step_fit import fit_step_terms, point_requests, simulate_point
from capcliff.calibrate.benchmarks import (
    CLIENT_TURNAROUND_S,
    BenchmarkPoint,
    DeploymentFilter,
    engine_of,
    layout_of,
    read_benchmark_file,
)
from capcliff.calibrate.calibration_file import load_calibration
from capcliff.catalog.catalogs import get_hardware, get_model
from capcliff.catalog.layout import Layout
from capcliff.cli import app, main
from capcliff.errors import InputError
from tests.calibration_text import calibration_toml

runner = CliRunner()
# Rows copied from shared/reference/serving_benchmarks.csv (each keeps its source column).
BENCH = Path(__file__).parent / "fixtures" / "bench"
REFERENCE = BENCH / "reference_rows.csv"
HEADER = "row_id,concurrency,input_len,output_len,output_throughput_tok_s,mean_tpot_ms\n"


@pytest.mark.parametrize(
    ("cell", "layout"),
    [
        ("TP8", "tp8"),
        ("TP8 EP1 (no DP attention)", "tp8"),
        ("TP4 + EP4 (no DP attention)", "tp4-ep4"),
        ("TP8 + DP attention", "dpa8"),  # SGLang --tp 8 --enable-dp-attention (dp = tp)
        ("TP8 + EP8 + DP attention", "dpa8-ep8"),
    ],
    ids=["tp8", "tp8-ep1", "tp4-ep4", "dp-attention", "dp-attention-ep8"],
)
def test_parallelism_cells_name_layouts(cell: str, layout: str) -> None:
    assert layout_of(cell) == layout


@pytest.mark.parametrize(
    ("engine", "version", "name"),
    [
        ("vllm", "vLLM 0.7.4.dev181+gf35f8e22", "vllm-v0"),
        ("vLLM", "0.6.3.post2.dev308+gb489fc3c", "vllm-v0"),
        ("vLLM", "0.15.0 (V1 engine)", "vllm"),
        ("SGLang", "lmsysorg/sglang:v0.5.12-cu130", "sglang"),
        ("TensorRT-LLM", "not recorded", "trtllm"),
    ],
    ids=["vllm-0.7", "vllm-0.6", "vllm-0.15", "sglang", "trtllm"],
)
def test_engine_cells_name_engines(engine: str, version: str, name: str) -> None:
    assert engine_of(engine, version) == name


def test_reference_csv_filters_to_one_deployment() -> None:
    # vLLM 0.7.4 (V0) serving DeepSeek-R1 on 8 x H200, TP8: rows B08-B12; the SGLang rows of the
    # same model (B02-B06 DP attention, B52-B53) and the 405B rows are left out.
    keep = DeploymentFilter("deepseek-ai/DeepSeek-R1", "h200-sxm", 8, "tp8", "vllm-v0")
    points = read_benchmark_file(REFERENCE, keep)
    assert [p.row_id for p in points] == ["B08", "B09", "B10", "B11", "B12"]
    assert (points[-1].concurrency, points[-1].mean_tpot_s) == (4, pytest.approx(0.025729974))
    assert points[-1].client_turnaround_s == CLIENT_TURNAROUND_S  # online (bench_serving)
    # the dstack 405B rows ran vLLM's offline benchmark_throughput.py: queued all at once
    offline = DeploymentFilter("meta-llama/Llama-3.1-405B-FP8", "h100-sxm", 8, "tp8", "vllm-v0")
    assert {p.client_turnaround_s for p in read_benchmark_file(REFERENCE, offline)} == {0.0}


def test_a_missing_column_is_named(tmp_path: Path) -> None:
    path = tmp_path / "bench.csv"
    path.write_text("concurrency,input_len,output_throughput_tok_s\n4,1024,400\n")
    with pytest.raises(InputError, match="column output_len missing"):
        read_benchmark_file(path, DeploymentFilter())


def test_vllm_result_json_reads_lengths_from_totals(tmp_path: Path) -> None:
    # 40 requests of 1,024 + 1,024 tokens: totals 40,960 each.
    path = tmp_path / "vllm.json"
    run = {"max_concurrency": 4, "completed": 40, "total_input_tokens": 40_960,
           "total_output_tokens": 40_960, "output_throughput": 400.0, "mean_tpot_ms": 9.7,
           "mean_ttft_ms": 150.0}  # fmt: skip
    path.write_text(json.dumps(run))
    [point] = read_benchmark_file(path, DeploymentFilter())
    assert (point.concurrency, point.input_len, point.output_len) == (4, 1024, 1024)
    assert point.mean_tpot_s == pytest.approx(0.0097)


def test_sglang_jsonl_reads_one_point_per_line(tmp_path: Path) -> None:
    path = tmp_path / "sglang.jsonl"
    lines = [
        {"max_concurrency": c, "random_input_len": 1024, "random_output_len": 1024,
         "random_range_ratio": 0.8, "completed": 10 * c, "output_throughput": 100.0 * c}
        for c in (4, 8)
    ]  # fmt: skip
    path.write_text("\n".join(json.dumps(x) for x in lines) + "\n")
    points = read_benchmark_file(path, DeploymentFilter())
    assert [(p.concurrency, p.range_ratio, p.num_requests) for p in points] == [
        (4, 0.8, 40),
        (8, 0.8, 80),
    ]


def _deployment():  # type: ignore[no-untyped-def]
    return resolve(get_model("llama-3.1-8b"), get_hardware("h200-sxm"), settings_of({}))


def _point(c: int, turnaround_s: float = 0.0, **measured: float) -> BenchmarkPoint:
    return BenchmarkPoint(
        f"c{c}", c, 64, 32, num_requests=4 * c, client_turnaround_s=turnaround_s,
        **measured,  # type: ignore[arg-type]
    )  # fmt: skip


def test_one_point_cannot_fit_two_terms() -> None:
    with pytest.raises(InputError, match="1 point cannot fit 2 terms"):
        fit_step_terms(_deployment(), Layout(), [_point(4, mean_tpot_s=0.01)])


def test_fit_recovers_the_terms_that_made_the_measurements() -> None:
    # Measurements simulated with fixed 5 ms per step and 1.3 x the roofline are fitted back.
    dep, truth = _deployment(), {"fixed_s": 0.005, "scale": 1.3}
    points = []
    for c in (2, 8):
        t = simulate_point(dep, Layout(), _point(c), truth)
        points.append(_point(c, mean_tpot_s=t.tpot_s, output_throughput_tok_s=1 / t.s_per_token))
    fit = fit_step_terms(dep, Layout(), points)
    assert (fit.fixed_s, fit.scale) == (pytest.approx(0.005), pytest.approx(1.3))
    assert all(abs(p.tpot_error(p.calibrated) or 0) < 1e-9 for p in fit.points)


def test_online_clients_reach_the_engine_one_at_a_time() -> None:
    # 3 clients, 1 us apart at the start; each next request 1 us after its client's last one
    requests = point_requests(_point(3, CLIENT_TURNAROUND_S))
    assert requests.arrival_s[:3].tolist() == pytest.approx([0.0, 1e-6, 2e-6])
    assert all(a != a for a in requests.arrival_s[3:].tolist())  # NaN: the client decides
    assert requests.think_s.tolist() == pytest.approx([1e-6] * 12)
    # an offline batch (turnaround 0) is queued at once
    assert point_requests(_point(3)).arrival_s[:3].tolist() == [0.0, 0.0, 0.0]


def test_a_point_is_simulated_with_at_most_max_requests_and_one_per_client() -> None:
    # InferenceX at 64 clients sends 640 requests: the harness simulates all 640 by default (the
    # first wave is then 64 / 640 of the mean, as in the run), fewer when asked, and never fewer
    # than one per client; a file naming 10^6 requests is held to the 20,000 guard
    point = BenchmarkPoint("p", 64, 1024, 1024, num_requests=640)
    assert len(point_requests(point)) == 640
    assert len(point_requests(point, max_requests=320)) == 320
    assert len(point_requests(BenchmarkPoint("q", 4, 16, 16, num_requests=10**6))) == 20_000
    assert len(point_requests(point, max_requests=10_000)) == 640
    assert len(point_requests(point, max_requests=10)) == 64


def test_the_fit_stays_exact_with_the_client_turnaround() -> None:
    # the turnaround (1 us) is shorter than any step, so every timing stays linear in the terms
    fit = fit_step_terms(_deployment(), Layout(), _measured_online((2, 8)))
    assert (fit.fixed_s, fit.scale) == (pytest.approx(0.004), pytest.approx(0.8))


def _measured_online(
    concurrencies: tuple[int, ...], ttft: Callable[[float], float | None] = lambda _: None
) -> list[BenchmarkPoint]:
    """Online points measured as fixed 4 ms per step and 0.8 x the roofline simulate them, with
    `ttft(simulated mean TTFT)` as their measured TTFT."""
    dep, truth = _deployment(), {"fixed_s": 0.004, "scale": 0.8}
    points = []
    for c in concurrencies:
        t = simulate_point(dep, Layout(), _point(c, CLIENT_TURNAROUND_S), truth)
        measured = {"mean_tpot_s": t.tpot_s, "output_throughput_tok_s": 1 / t.s_per_token}
        if ttft(t.ttft_s) is not None:
            measured["mean_ttft_s"] = ttft(t.ttft_s)  # type: ignore[assignment]
        points.append(_point(c, CLIENT_TURNAROUND_S, **measured))
    return points


def test_cli_writes_a_step_time_section_that_sweep_applies(tmp_path: Path) -> None:
    out = tmp_path / "r1.toml"
    args = ["calibrate", str(REFERENCE), "--model", "deepseek-r1", "--gpu", "h200-sxm",
            "--gpus", "8", "--layout", "tp8", "--engine", "sglang", "-o", str(out)]  # fmt: skip
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    assert "| B52 | 4 | 1024/1024 | 393.4 |" in result.output
    step = load_calibration(out).step_time
    assert step is not None and step.points == 2
    sweep = runner.invoke(
        app,
        ["sweep", "deepseek-r1", "--gpus", "8", "--layout", "tp8", "--engine", "sglang",
         "--isl", "1024", "--osl", "64", "--num-requests", "8", "--concurrency", "4",
         "--calibration", str(out), "--format", "json"],
    )  # fmt: skip
    assert sweep.exit_code == 0, sweep.output
    profile = json.loads(sweep.stdout)["step_profile"]
    assert ", calibrated" in profile
    # B52 and B53 measured 157.8 and 165.4 ms mean TTFT where the model gives 179.1 and 270.2 ms
    # (the calibrate table): measured - simulated is negative at both, the fitted overhead is
    # clipped to 0, and the label names none (the engine default is replaced, not added)
    assert step.request_overhead_s == 0.0
    assert "request overhead" not in profile


def test_cli_one_row_fits_the_scale_alone(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "bench.csv"
    path.write_text(HEADER + "x,4,1024,1024,400,9.7\n")
    assert main(["calibrate", str(path), "--model", "llama-3.1-8b"]) == 0
    out = capsys.readouterr().out
    # one point, two measurements (throughput, TPOT): the scale, with fixed_s as modeled
    assert "from 1 point (one run: the scale alone, fixed kept as modeled)" in out


def test_cli_fits_from_the_named_release(tmp_path: Path) -> None:
    # SGLang 0.4.3 DP-attention rows (B02-B06) fitted from that release's profile; the file
    # records the release. The fitted fixed time lands near the profile's derived one (28.1 ms:
    # 61 x 31 kernels x 13.8 us + 2 ms host time), which no row was used to set. Within 20 %:
    # the source itself spans 12.7-15.1 us per kernel (26.0-30.6 ms) and counts words, not
    # tokens, so it may read 5-10 % slow (down to ~23.8 ms).
    out = tmp_path / "dpa.toml"
    args = ["calibrate", str(REFERENCE), "--model", "deepseek-r1", "--gpu", "h200-sxm",
            "--gpus", "8", "--layout", "dpa8", "--engine", "sglang", "--engine-version", "0.4.3",
            "-o", str(out)]  # fmt: skip
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    assert "step-time profile: sglang 0.4.0 - 0.4.3" in result.output
    calibration = load_calibration(out)
    assert calibration.engine_version == "0.4.3"
    assert calibration.step_time is not None
    assert calibration.step_time.fixed_s == pytest.approx(28.1e-3, rel=0.2)


def test_cli_bad_release_is_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    args = ["calibrate", str(REFERENCE), "--model", "deepseek-r1", "--gpus", "8",
            "--engine", "sglang", "--engine-version", "latest"]  # fmt: skip
    assert main(args) == 2
    err = capsys.readouterr().err.strip()
    assert "--engine-version" in err and len(err.splitlines()) == 1


def test_cli_no_matching_rows_names_the_flags(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["calibrate", str(REFERENCE), "--model", "llama-3.1-8b", "--gpus", "8"])
    assert code == 2
    assert "no rows match --model llama-3.1-8b --gpu h200-sxm --gpus 8" in capsys.readouterr().err


def test_the_fit_recovers_a_request_overhead_from_the_measured_ttft() -> None:
    # Measured TTFT = simulated TTFT with the true step terms + 30 ms for every point: the step
    # terms come back exactly (they fit TPOT and throughput), so every gap is 30 ms and so is
    # their median.
    fit = fit_step_terms(_deployment(), Layout(), _measured_online((2, 8, 16), lambda t: t + 0.03))
    assert fit.request_overhead_s == pytest.approx(0.030, abs=1e-4)  # the terms to ~1e-5 s
    for p in fit.points:
        assert p.ttft_error(p.calibrated) == pytest.approx(0.0, abs=1e-3)


def test_a_measured_ttft_below_the_simulated_one_fits_no_overhead() -> None:
    points = _measured_online((2, 8), lambda t: 0.5 * t)
    assert fit_step_terms(_deployment(), Layout(), points).request_overhead_s == 0.0


def _sweep_ttft_p50(path: Path) -> float:
    out = runner.invoke(app, [
        "sweep", "llama-3.1-8b", "--gpus", "1", "--isl", "256", "--osl", "32", "--num-requests",
        "16", "--concurrency", "16", "--arrival", "batch", "--calibration", str(path),
        "--format", "json",
    ])  # fmt: skip
    assert out.exit_code == 0, out.output
    return float(json.loads(out.stdout)["series"][0]["points"][0]["ttft_p50_s"])


def test_a_calibrated_overhead_reaches_the_simulated_ttft(tmp_path: Path) -> None:
    # A batch: every request reaches the engine 120 ms late, so the whole run shifts and each
    # TTFT is exactly 120 ms longer than with no overhead (same step terms).
    with_it, without = tmp_path / "with.toml", tmp_path / "without.toml"
    with_it.write_text(calibration_toml("vllm", 0.12))
    without.write_text(calibration_toml("vllm", 0.0))
    assert _sweep_ttft_p50(with_it) == pytest.approx(_sweep_ttft_p50(without) + 0.12, abs=1e-6)


@pytest.mark.parametrize("bad", ["-0.1", "61", "nan", "inf"])
def test_a_bad_overhead_in_a_calibration_file_is_one_line(
    tmp_path: Path, bad: str, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "bad.toml"
    path.write_text(calibration_toml("vllm", bad))
    assert main(["memory", "llama-3.1-8b", "--gpus", "1", "--calibration", str(path)]) == 2
    err = capsys.readouterr().err
    assert "request_overhead_s" in err and err.count("\n") == 1


def test_sglang_jsonl_with_its_default_infinite_rate_is_read(tmp_path: Path) -> None:
    # sglang.bench_serving's --request-rate defaults to float("inf"), and json.dumps writes it as
    # the literal Infinity: a run of clients sending at will, like vLLM's "inf"
    path = tmp_path / "sglang.jsonl"
    run = {"request_rate": float("inf"), "max_concurrency": 8, "random_input_len": 1024,
           "random_output_len": 1024, "completed": 80, "output_throughput": 800.0}  # fmt: skip
    path.write_text(json.dumps(run) + "\n")
    assert "Infinity" in path.read_text()
    (point,) = read_benchmark_file(path, DeploymentFilter())
    assert (point.concurrency, point.num_requests) == (8, 80)


def test_a_negative_infinite_rate_is_still_refused(tmp_path: Path) -> None:
    path = tmp_path / "sglang.jsonl"
    run = {"request_rate": float("-inf"), "max_concurrency": 8, "random_input_len": 1024,
           "random_output_len": 1024, "completed": 80, "output_throughput": 800.0}  # fmt: skip
    path.write_text(json.dumps(run) + "\n")
    with pytest.raises(InputError, match="request_rate"):
        read_benchmark_file(path, DeploymentFilter())
