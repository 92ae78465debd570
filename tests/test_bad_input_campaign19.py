"""Bad input that a nineteenth campaign (benchmarks/fuzz_cases19.py) found in sweep grids and
SLOs no layout meets. A grid whose axes are each within their own limit but whose product runs
for an hour is refused up front, one `error: ...` line naming its axes (exit 2); a grid inside
the limits is answered; plan's answer where nothing meets an SLO prints figures that agree with
the excess it states.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from test_bad_input import _llama_config, _one_line_error

from capcliff.analysis.workloads import (
    MAX_SWEEP_REQUESTS,
    MAX_SWEEP_SIMULATIONS,
    check_sweep_size,
)
from capcliff.cli import main
from capcliff.errors import InputError

SW = ["sweep", "llama-3.1-8b", "--isl", "100", "--osl", "100"]


def test_grid_limits_are_the_documented_ones() -> None:
    assert (MAX_SWEEP_SIMULATIONS, MAX_SWEEP_REQUESTS) == (1_024, 1_000_000)


@pytest.mark.parametrize(
    ("axes", "each", "refused"),
    [
        # 64 x 256 = 16,384 points; x 2,000 = 32,768,000 requests
        (((64, "output lengths"), (256, "concurrencies")), 2_000, True),
        # 256 points x 2,000 = 512,000 requests: inside both limits
        (((1, "output lengths"), (256, "concurrencies")), 2_000, False),
        # 1,024 x 976 = 999,424 requests; 1,024 x 977 = 1,000,448
        (((4, "layouts"), (256, "concurrencies")), 976, False),
        (((4, "layouts"), (256, "concurrencies")), 977, True),
        # 1,025 points of one request each: past the points limit alone
        (((5, "output lengths"), (205, "concurrencies")), 1, True),
        # one point is its simulation's own limit (200,000 per replica): 8 replicas of it pass
        (((1, "concurrencies"),), 1_600_000, False),
        # 2 points x 600,000 = 1,200,000
        (((2, "concurrencies"),), 600_000, True),
    ],
)
def test_check_sweep_size(axes: tuple[tuple[int, str], ...], each: int, refused: bool) -> None:
    if refused:
        with pytest.raises(InputError, match=r"^sweep: "):
            check_sweep_size(axes, each)
    else:
        check_sweep_size(axes, each)


def test_osl_list_times_concurrency_list_refused(capsys: pytest.CaptureFixture[str]) -> None:
    osl = ",".join(str(100 * i) for i in range(1, 9))  # 8 lengths
    conc = ",".join(str(i) for i in range(1, 201))  # 200 concurrencies
    argv = [*SW[:4], "--osl", osl, "--concurrency", conc, "--num-requests", "20"]
    line = _one_line_error(argv, capsys)
    # 8 x 200 = 1,600 simulations, x 20 requests = 32,000
    assert "8 output lengths x 200 concurrencies = 1,600 simulations of 20 requests" in line
    assert "(32,000 in all)" in line


def test_requests_times_concurrencies_refused(capsys: pytest.CaptureFixture[str]) -> None:
    conc = ",".join(str(2**i) for i in range(11))  # 1 .. 1024: 11 points
    line = _one_line_error([*SW, "--num-requests", "100000", "--concurrency", conc], capsys)
    assert "11 concurrencies = 11 simulations of 100,000 requests (1,100,000 in all)" in line


def test_speculation_counts_the_grid_twice(capsys: pytest.CaptureFixture[str]) -> None:
    # 6 points x 100,000 = 600,000 alone; the same grid again without speculation: 1,200,000
    argv = [*SW, "--num-requests", "100000", "--concurrency", "1..32", "--speculative", "eagle:3"]
    line = _one_line_error(argv, capsys)
    assert "6 concurrencies x 2 runs (with speculation and without) = 12 simulations" in line


def test_disagg_grid_refused(capsys: pytest.CaptureFixture[str]) -> None:
    conc = ",".join(str(2**i) for i in range(11))
    argv = [*SW, "--num-requests", "100000", "--concurrency", conc, "--disagg", "1p:tp1,1d:tp1"]
    line = _one_line_error(argv, capsys)
    assert "(1,100,000 in all)" in line


def test_layouts_that_do_not_fit_are_not_counted(capsys: pytest.CaptureFixture[str]) -> None:
    """llama-3.1-70b in BF16 (141 GB of weights) on 80 GB H100s: dp4 (141 GB a GPU) and dp2-tp2
    (70.6 GB plus the reserves, past 77 GB usable) do not fit, tp4 does: the grid is tp4's
    alone, 5 output lengths x 256 concurrencies = 1,280 simulations, past 1,024."""
    osl = ",".join(str(100 * i) for i in range(1, 6))
    argv = ["sweep", "llama-3.1-70b", "--gpu", "h100-sxm", "--gpus", "4", "--isl", "100",
            "--osl", osl, "--num-requests", "20", "--layout", "dp4,dp2-tp2,tp4",
            "--concurrency", ",".join(str(i) for i in range(1, 257))]  # fmt: skip
    line = _one_line_error(argv, capsys)
    assert "sweep: 5 output lengths x 256 concurrencies = 1,280 simulations of 20" in line


def test_256_concurrencies_of_few_requests_answered(capsys: pytest.CaptureFixture[str]) -> None:
    conc = ",".join(str(i) for i in range(1, 257))
    assert main([*SW, "--num-requests", "20", "--concurrency", conc, "--format", "csv"]) == 0
    rows = capsys.readouterr().out.strip().splitlines()[1:]
    assert len(rows) == 256


def test_unmeetable_ttft_closest_figures_agree(capsys: pytest.CaptureFixture[str]) -> None:
    """With only a TTFT limit, each closest alternative is over it by TTFT / limit: the TTFT
    printed (three figures) times 10^6 is the excess printed, to the figures shown."""
    argv = ["plan", "llama-3.1-8b", "--jobs", "1", "--isl", "100", "--osl", "100",
            "--num-requests", "20", "--gpus", "1", "--rate", "2", "--slo-ttft", "1e-6"]  # fmt: skip
    assert main(argv) == 0
    out = capsys.readouterr().out
    found = re.findall(r"TTFT p99 ([0-9.e-]+) s, TPOT p99 [0-9.,]+ ms: still ([0-9.,]+)x", out)
    assert found, out
    for ttft, excess in found:
        assert float(ttft) > 0
        assert float(excess.replace(",", "")) == pytest.approx(float(ttft) * 1e6, rel=0.01)


def test_mtp_on_a_llama_config_naming_nextn_layers(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A Llama config.json with num_nextn_predict_layers = 1 has no MTP weights any engine loads
    (vLLM's MTP draft models are per family: deepseek_mtp, mimo_mtp, glm4_moe_mtp, ...)."""
    path = _llama_config(tmp_path, num_nextn_predict_layers=1)
    argv = ["sweep", str(path), "--isl", "100", "--osl", "100", "--num-requests", "20",
            "--concurrency", "4", "--speculative", "mtp:1"]  # fmt: skip
    line = _one_line_error(argv, capsys)
    assert line.startswith("error: speculative: mtp ") and "llama" in line
    # an EAGLE head on the same config is answered
    assert main([*argv[:-1], "eagle:1"]) == 0


def test_nodes_past_what_one_run_simulates_names_the_gpus(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """1,000 nodes of 8 H200s: 8,000 replicas of llama-3.1-8b (tp1) verified together; the
    refusal names the GPUs, not --num-requests (given as 20)."""
    argv = ["plan", "llama-3.1-8b", "--jobs", "1", "--isl", "100", "--osl", "100",
            "--num-requests", "20", "--rate", "2", "--slo-ttft", "2",
            "--nodes", "1000"]  # fmt: skip
    line = _one_line_error(argv, capsys)
    assert line.startswith("error: gpus: 8,000 replicas") and "num_requests" not in line
