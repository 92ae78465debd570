"""`capcliff check` judges an online workload on its steady state, the one `capcliff sweep` prints
for the same point (warm-up and drain left out, the sample grown by the same stopping rule), and
a failed latency bound says at which cap it would pass."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from capcliff.cli.app import app
from tests.checktools import check_file

SPEC = """
[[scenario]]
name = "online"
model = "llama-3.1-8b"
gpu = "h200-sxm"
layout = "tp1"
[scenario.workload]
isl = 512
osl = 256
rate = 20
num_requests = 1000
concurrency = 64
[scenario.expect]
tpot_p99_max_s = {tpot}
"""


@pytest.fixture(scope="module")
def swept() -> dict[str, object]:
    """The same point through `capcliff sweep` (a different command, its own code path)."""
    out = CliRunner().invoke(app, [
        "sweep", "llama-3.1-8b", "--gpus", "1", "--layout", "tp1", "--isl", "512", "--osl", "256",
        "--rate", "20", "--num-requests", "1000", "--concurrency", "64", "--format", "json",
    ])  # fmt: skip
    assert out.exit_code == 0, out.output
    point: dict[str, object] = json.loads(out.stdout)["series"][0]["points"][0]
    return point


def test_check_reports_the_steady_state_that_sweep_prints(
    swept: dict[str, object], tmp_path: Path
) -> None:
    steady = swept["steady"]
    assert isinstance(steady, dict)
    (tmp_path / "capcliff.toml").write_text(SPEC.format(tpot=1.0))
    figures = check_file(tmp_path / "capcliff.toml").scenarios[0].figures
    assert figures.tpot_p99_s == pytest.approx(steady["tpot_p99_s"], rel=1e-2)
    assert figures.ttft_p99_s == pytest.approx(steady["ttft_p99_s"], rel=1e-2)
    assert figures.output_throughput_tok_s == pytest.approx(steady["output_tok_s"], rel=1e-2)
    assert figures.latency_basis is not None
    assert figures.latency_basis.startswith(f"steady state of {steady['requests']:,} requests")


def test_a_bound_between_the_whole_run_and_the_steady_state_is_judged_on_the_steady_state(
    swept: dict[str, object], tmp_path: Path
) -> None:
    steady = swept["steady"]
    assert isinstance(steady, dict)
    whole, settled = float(swept["tpot_p99_s"]), float(steady["tpot_p99_s"])  # type: ignore[arg-type]
    assert whole < settled  # the warm-up's and the drain's light batches decode faster
    (tmp_path / "capcliff.toml").write_text(SPEC.format(tpot=(whole + settled) / 2))
    tpot = check_file(tmp_path / "capcliff.toml").scenarios[0].assertions[0]
    assert not tpot.passed  # it would pass over the whole run
    # a lower cap queues more and decodes smaller batches: the failure names the cap that passes
    assert "passes at" in tpot.detail and "max_num_seqs" in tpot.detail


def test_a_bound_within_the_p99s_sampling_noise_says_so(
    swept: dict[str, object], tmp_path: Path
) -> None:
    # A limit 1 % above the steady-state p99 passes, but the p99's own 95 % interval at this
    # sample size (a few per cent, sweep's `tpot_p99_half_width`) covers the limit: another sample
    # may fail, and the detail says so; a limit twice the p99 is far outside it and says nothing.
    steady = swept["steady"]
    assert isinstance(steady, dict)
    p99, half = float(steady["tpot_p99_s"]), float(steady["tpot_p99_half_width"])
    assert half > 0.01
    (tmp_path / "capcliff.toml").write_text(SPEC.format(tpot=p99 * 1.01))
    near = check_file(tmp_path / "capcliff.toml").scenarios[0].assertions[0]
    assert near.passed and "within its sampling noise of the limit" in near.detail
    assert f"p99 +/-{half:.0%}" in near.detail
    (tmp_path / "capcliff.toml").write_text(SPEC.format(tpot=p99 * 2))
    far = check_file(tmp_path / "capcliff.toml").scenarios[0].assertions[0]
    assert far.passed and "sampling noise" not in far.detail


def test_a_sample_too_small_for_its_p99s_says_so(tmp_path: Path) -> None:
    # 200 requests, grown at most 8 x: too few for a p99 to within 5 %; the basis says so and
    # names the fix, and the stated half-width is the one over 5 %.
    (tmp_path / "capcliff.toml").write_text(
        SPEC.format(tpot=1.0).replace("num_requests = 1000", "num_requests = 200")
    )
    figures = check_file(tmp_path / "capcliff.toml").scenarios[0].figures
    assert figures.latency_basis is not None
    assert "p99s not settled" in figures.latency_basis
    assert "raise num_requests" in figures.latency_basis
