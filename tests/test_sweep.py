"""`capcliff sweep`: concurrency parsing, the report's cliff and sweet spot, formats, errors."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from capcliff.analysis.workloads import is_online, parse_concurrency
from capcliff.cli import app, main
from capcliff.errors import InputError
from capcliff.units import ceil_div
from tests.simtools import fixed_batch

runner = CliRunner()
SMALL = ["--isl", "100", "--osl", "4000", "--num-requests", "300", "--concurrency", "32..512"]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("64,128,256", (64, 128, 256)),
        ("64..512", (64, 128, 256, 512)),
        ("1..1000:4", (1, 10, 100, 1000)),  # 4 log-spaced values: 10^0 .. 10^3
        ("256,64,64", (64, 256)),
    ],
)
def test_parse_concurrency(text: str, expected: tuple[int, ...]) -> None:
    assert parse_concurrency(text) == expected


@pytest.mark.parametrize("bad", ["", "0,4", "a..b", "64..", "-4"])
def test_bad_concurrency_names_the_field(bad: str) -> None:
    with pytest.raises(InputError, match=r"^concurrency: "):
        parse_concurrency(bad)


def test_at_most_256_concurrencies_are_read() -> None:
    # MAX_CONCURRENCY_POINTS is 256: 1,2,...,256 is read; 1,...,257 is one too many
    assert parse_concurrency(",".join(str(c) for c in range(1, 257))) == tuple(range(1, 257))
    with pytest.raises(InputError, match=r"^concurrency: .*at most 256 values"):
        parse_concurrency(",".join(str(c) for c in range(1, 258)))


def _sweep_json(*extra: str) -> dict:  # type: ignore[type-arg]
    result = runner.invoke(app, ["sweep", *SMALL, *extra, "--format", "json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)  # type: ignore[no-any-return]


def test_json_has_the_documented_fields() -> None:
    report = _sweep_json()
    assert report["schema_version"] == 2
    for point in report["points"]:
        for key in (
            "concurrency", "output_throughput_tok_s", "ttft_p50_s", "ttft_p99_s", "tpot_p50_s",
            "tpot_p99_s", "e2e_p50_s", "makespan_s", "preemptions", "peak_kv_utilization",
            "first_preemption_s",
        ):  # fmt: skip
            assert key in point
    assert {"analytic_concurrency", "simulated_concurrency"} <= set(report["cliff"])
    assert "concurrency" in report["sweet_spot"]


def test_analytic_cliff_is_blocks_over_a_requests_peak_blocks() -> None:
    # Fixed lengths: a request's KV peaks at 100 + 4000 - 1 tokens = ceil(4099 / 16) = 257 blocks.
    series = _sweep_json()["series"][0]
    expected = series["kv_blocks_per_replica"] // ceil_div(100 + 4000 - 1, 16)
    assert series["cliff"]["analytic_concurrency"] == expected


def test_no_preemption_below_the_simulated_cliff() -> None:
    report = _sweep_json()
    cliff = report["cliff"]["simulated_concurrency"]
    assert cliff is not None
    for point in report["points"]:
        hit = point["preemptions"] > 0 or point["admission_blocked"]
        assert hit == (point["concurrency"] >= cliff)


def test_same_seed_gives_identical_json() -> None:
    args = ["sweep", "--workload", "reasoning", "--num-requests", "200", "--concurrency", "64,256"]
    first = runner.invoke(app, [*args, "--format", "json", "--seed", "7"]).output
    again = runner.invoke(app, [*args, "--format", "json", "--seed", "7"]).output
    other = runner.invoke(app, [*args, "--format", "json", "--seed", "8"]).output
    assert first == again
    assert first != other


def test_output_lengths_make_series() -> None:
    args = ["sweep", "--isl", "100", "--osl", "1000,4000", "--num-requests", "100"]
    report = json.loads(
        runner.invoke(app, [*args, "--concurrency", "64", "--format", "json"]).output
    )
    assert [s["output_tokens_label"] for s in report["series"]] == ["osl 1000", "osl 4000"]


def test_csv_has_a_row_per_point() -> None:
    result = runner.invoke(app, ["sweep", *SMALL, "--format", "csv"])
    lines = result.stdout.strip().splitlines()
    assert lines[0].startswith("layout,output_tokens,concurrency,")
    assert len(lines) == 1 + 5  # 32, 64, 128, 256, 512


def test_table_marks_cliff_and_sweet_spot() -> None:
    result = runner.invoke(app, ["sweep", *SMALL])
    assert result.exit_code == 0
    out = " ".join(result.output.split())
    assert "analytic p99 cliff:" in out
    assert "burst cliff (simulated: every request waiting at t = 0" in out  # a batch sweep
    assert "sweet" in out


def test_an_online_sweep_names_its_simulated_cliff_the_steady_state_one() -> None:
    args = ["sweep", "llama-3.1-8b", "--gpus", "1", "--isl", "200", "--osl", "50"]
    result = runner.invoke(app, [*args, "--rate", "5", "--num-requests", "200",
                                 "--concurrency", "16"])  # fmt: skip
    assert result.exit_code == 0, result.output
    assert "steady-state cliff (simulated while serving" in " ".join(result.output.split())


def test_missing_workload_is_one_line_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["sweep", "--isl", "100"]) == 2
    assert capsys.readouterr().err.startswith("error: workload: give --isl and --osl")


def test_plot_writes_a_figure_or_says_what_is_missing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    target = tmp_path / "sweep.png"
    code = main(["sweep", *SMALL, "--plot", str(target), "--format", "json"])
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        assert code == 2
        assert "pip install 'capcliff[plot]'" in capsys.readouterr().err
        assert not target.exists()
        return
    assert code == 0
    assert target.read_bytes().startswith(b"\x89PNG")


def test_plot_needs_png_or_svg(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["sweep", *SMALL, "--plot", "out.pdf"]) == 2
    assert "must end in .png or .svg" in capsys.readouterr().err


def test_a_batch_at_t0_is_offline_and_timed_arrivals_are_online() -> None:
    # Online: requests arrive over time (some arrival > 0) or come from closed-loop clients.
    batch = fixed_batch(4, 10, 10)
    assert not is_online(batch)
    assert is_online(dataclasses.replace(batch, arrival_s=np.array([0.0, 0.0, 0.0, 0.5])))


def test_session_sweep_reports_hit_rate_and_preemptions_per_point() -> None:
    result = runner.invoke(
        app,
        ["sweep", "llama-3.1-8b", "--gpu", "h100-sxm", "--gpus", "1", "--layout", "tp1",
         "--workload", "multiturn-chat", "--clients", "8", "--num-requests", "120",
         "--concurrency", "4,8", "--format", "json"],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    report = json.loads(result.output)
    for point in report["points"]:
        assert 0 < point["prefix_cache_hit_rate"] < 1  # caching on by default for sessions
        assert point["preemptions"] >= 0
        assert point["prefill_tokens_saved"] > 0
    assert report["series"][0]["hit_rate_over_time"]


def test_prefix_caching_off_reports_no_hit_rate() -> None:
    result = runner.invoke(
        app,
        ["sweep", "llama-3.1-8b", "--gpu", "h100-sxm", "--gpus", "1", "--layout", "tp1",
         "--workload", "multiturn-chat", "--clients", "8", "--num-requests", "60",
         "--concurrency", "8", "--prefix-caching", "off", "--format", "json"],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    assert json.loads(result.output)["points"][0]["prefix_cache_hit_rate"] is None


def test_csv_flattens_offload_tiers_into_columns() -> None:
    result = runner.invoke(
        app,
        ["sweep", "llama-3.1-8b", "--gpu", "h100-sxm", "--gpus", "1", "--layout", "tp1",
         "--workload", "multiturn-chat", "--clients", "4", "--num-requests", "20",
         "--concurrency", "4", "--kv-cache-memory", "4GiB", "--offload", "cpu:64GiB",
         "--format", "csv"],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    header, row = result.output.splitlines()[:2]
    assert "cpu_hit_rate" in header.split(",")
    assert len(row.split(",")) == len(header.split(","))
