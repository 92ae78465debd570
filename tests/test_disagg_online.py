"""`plan --disagg` at an offered rate: both kinds in their steady state, splits ranked by serving
the rate."""

from __future__ import annotations

import json
import math
from collections.abc import Callable

import numpy as np
import pytest
from typer.testing import CliRunner

from capcliff.analysis.disagg.online import falls_behind, online_rank, rank_reason, slo_share
from capcliff.analysis.disagg.pools import fabric_between, parse_disagg
from capcliff.analysis.evaluate.solver import Slo
from capcliff.analysis.evaluate.steady_state import SteadyState
from capcliff.catalog.catalogs import get_hardware
from capcliff.cli import app
from capcliff.errors import InputError
from capcliff.sim.disagg.kv_transfer import Placement, schedule_transfers

runner = CliRunner()
SMALL = "deepseek-r1-distill-llama-8b"
SLO = Slo(ttft_s=5.0, tpot_s=0.06)


def _state(ttft: float, tpot: float, *, growing: bool = False, e2e: float = 10.0) -> SteadyState:
    """A settled steady state at 4 req/s served in full (unless `growing`)."""
    return SteadyState(
        requests=1000, measured=800, window_s=(50.0, 250.0), throughput_rps=4.0,
        output_tok_s=4096.0, arrival_rps=4.0, ttft_p99_s=ttft, tpot_p99_s=tpot,
        tpot_mean_s=tpot, e2e_mean_s=e2e, rps_half_width=0.01, tpot_half_width=0.01,
        queue_growing=growing,
    )  # fmt: skip


def test_the_slo_share_is_the_tighter_of_the_two_limits() -> None:
    # TTFT 2.5 s of 5 s = 50 %, TPOT 45 ms of 60 ms = 75 %: the larger, 75 %
    assert slo_share(_state(2.5, 0.045), SLO) == pytest.approx(0.75)


def test_a_split_that_serves_the_rate_outranks_one_that_does_not() -> None:
    roomy = _state(2.5, 0.045)  # uses 75 % of the SLO
    tight = _state(4.5, 0.030)  # uses 90 % (TTFT)
    late = _state(5.5, 0.010)  # TTFT p99 over the limit
    growing = _state(0.1, 0.010, growing=True)  # its queue grows: the rate is not served
    ranked = sorted([late, growing, tight, roomy], key=lambda s: online_rank(s, SLO))
    assert ranked[-2:] == [tight, roomy]
    assert {id(s) for s in ranked[:2]} == {id(late), id(growing)}


def test_without_an_slo_the_least_mean_end_to_end_time_wins() -> None:
    quick, slow = _state(9.0, 0.5, e2e=20.0), _state(1.0, 0.01, e2e=30.0)
    assert max([slow, quick], key=lambda s: online_rank(s, None)) is quick


def test_the_reason_counts_the_splits_that_serve_the_rate_even_when_only_one_does() -> None:
    # one split of three serves the rate: it is chosen for its cost ($98.00 per hour) and uses
    # max(2.5 / 5, 0.045 / 0.06) = 75 % of the SLO; "none serves" is said only when none does
    state = _state(2.5, 0.045)
    one = rank_reason(state, SLO, among=1, of=3, first=1000, usd_per_hour=98.0)
    assert one.startswith("1 of 3 splits serves the rate on the first 1,000 requests")
    assert "($98.00;" in one and one.endswith("uses 75% of the SLO")
    none = rank_reason(state, SLO, among=0, of=3, first=1000, usd_per_hour=98.0)
    assert none.startswith("none of the 3 splits tried serves the rate")
    assert "(4,096 output tok/s in steady state)" in none


def test_plan_at_a_rate_measures_both_kinds_in_their_steady_state() -> None:
    result = runner.invoke(app, [
        "plan", SMALL, "--gpus", "2", "--disagg", "--isl", "512", "--osl", "64", "--arrival",
        "poisson", "--rate", "5", "--num-requests", "24", "--slo-ttft", "2", "--slo-tpot",
        "0.1", "--format", "json",
    ])  # fmt: skip
    assert result.exit_code == 0, result.output
    report = json.loads(result.output)
    serving = report["disaggregated"]["serving"]
    steady = serving["steady"]
    n = steady["requests"]
    assert n >= 200  # the stopping rule's first sample is never below 200 requests
    # The window opens at the arrival of request ceil(0.2 n) and closes at the last arrival;
    # arrivals are unit-rate exponential gaps (seed 0 + 1,000,003) over 5 req/s, summed.
    arrivals = np.cumsum(np.random.default_rng(1_000_003).exponential(1.0, n)) / 5
    assert steady["window_s"] == pytest.approx([arrivals[math.ceil(0.2 * n)], arrivals[-1]])
    assert serving["ttft_p99_s"] == steady["ttft_p99_s"]
    assert serving["tpot_p99_s"] == steady["tpot_p99_s"]
    assert report["aggregated"]["steady"]["requests"] >= 200
    assert "steady state" in report["figures_from"]
    assert report["ranked_by"].startswith("serving the rate")


# --- pools on different GPU types -------------------------------------------------------------
def test_a_part_may_name_its_own_gpu() -> None:
    spec = parse_disagg("1p:tp8@h100-sxm,3d:dp8-ep8")
    assert (spec.prefill_gpu, spec.decode_gpu) == ("h100-sxm", None)
    assert spec.name == "1p:tp8@h100-sxm,3d:dp8-ep8"


def test_an_unknown_pool_gpu_is_one_line_naming_the_flag() -> None:
    with pytest.raises(InputError, match=r"^disagg: .*nope"):
        parse_disagg("1p:tp8@nope,3d:tp8")


def test_pools_on_two_gpu_types_talk_over_the_scale_out_network() -> None:
    # Even packed on neighbouring GPUs, an H100 and an H200 sit on different nodes: 1 GB over
    # one ConnectX-7 (50 GB/s) = 20 ms, + 2.7 us latency + 1 ms overhead = 21.0027 ms.
    fabric = fabric_between(get_hardware("h100-sxm"), get_hardware("h200-sxm"))
    t = schedule_transfers(
        np.zeros(1), np.array([1e9]), np.zeros(1, dtype=np.int64), np.zeros(1, dtype=np.int64),
        fabric=fabric, placement=Placement((range(0, 1),), (range(1, 2),)),
    )  # fmt: skip
    assert t.end_s[0] == pytest.approx(21.0027e-3)


def test_plan_puts_each_pool_on_any_gpu_type_and_pays_for_each() -> None:
    result = runner.invoke(app, [
        "plan", SMALL, "--gpu", "h200-sxm,h100-sxm", "--gpus", "2", "--disagg", "--isl", "512",
        "--osl", "64", "--arrival", "poisson", "--rate", "20", "--slo-ttft", "1", "--slo-tpot",
        "0.0055", "--max-num-seqs", "32", "--format", "json",
    ])  # fmt: skip
    assert result.exit_code == 0, result.output
    report = json.loads(result.output)
    rows = {c["name"]: c for c in report["candidates"]}
    assert set(rows) == {"1p:tp1,1d:tp1", "1p:tp1@h100-sxm,1d:tp1", "1p:tp1,1d:tp1@h100-sxm",
                         "1p:tp1@h100-sxm,1d:tp1@h100-sxm"}  # fmt: skip
    # an H100 decodes slower than an H200 (3.35 vs 4.8 TB/s of HBM): past the 5.5 ms TPOT limit
    assert not rows["1p:tp1@h100-sxm,1d:tp1@h100-sxm"]["serves_rate"]
    assert rows["1p:tp1,1d:tp1"]["serves_rate"] and rows["1p:tp1@h100-sxm,1d:tp1"]["serves_rate"]
    d = report["disaggregated"]
    # of those that serve, the catalog's $3 (H100) + $4 (H200) per hour = $7 beats 2 x $4
    assert d["name"] == "1p:tp1@h100-sxm,1d:tp1"
    assert d["serving"]["usd_per_hour"] == pytest.approx(7.0)
    assert (d["prefill"]["hardware"], d["decode"]["hardware"]) == ("h100-sxm", "h200-sxm")
    assert report["hardware"] == "h100-sxm+h200-sxm"  # both pools' types, prefill first
    assert report["usd_per_gpu_hour_by_type"] == {"h100-sxm": 3.0, "h200-sxm": 4.0}
    # 512 tokens x 131,072 B of KV = 67.1 MB over 50 GB/s + 2.7 us + 1 ms
    assert d["kv_transfer"]["p99_transfer_s"] == pytest.approx(512 * 131_072 / 50e9 + 1.0027e-3)


def test_a_disaggregated_sweep_at_a_rate_reports_each_points_steady_state() -> None:
    args = ["sweep", SMALL, "--disagg", "1p:tp1,1d:tp1", "--isl", "512", "--osl", "16",
            "--num-requests", "120", "--concurrency", "32", "--format", "json"]  # fmt: skip
    online = json.loads(runner.invoke(app, [*args, "--rate", "10"]).output)
    batch = json.loads(runner.invoke(app, args).output)
    assert online["series"]["points"][0]["steady"]["throughput_rps"] > 0
    assert batch["series"]["points"][0]["steady"] is None  # a batch has no steady state


def test_a_sweep_on_two_gpu_types_names_both_in_its_header() -> None:
    args = ["sweep", SMALL, "--disagg", "1p:tp1@h100-sxm,2d:tp1", "--isl", "256", "--osl", "8",
            "--num-requests", "8", "--concurrency", "8"]  # fmt: skip
    report = json.loads(runner.invoke(app, [*args, "--format", "json"]).output)
    assert report["hardware"] == "h100-sxm+h200-sxm"  # prefill's type, then decode's
    text = runner.invoke(app, args).output
    assert "on 1 x h100-sxm (prefill) + 2 x h200-sxm (decode)" in text


@pytest.mark.parametrize(
    ("done", "waiting", "behind"),
    [
        # each served 0.1 s after it arrives: all 800 window arrivals done in the window
        (lambda a: a + 0.1, 0.0, False),
        # served at half the rate: done at 2a, so of the 800 arrivals in [20, 100] s only those
        # of [10, 50] s (400) are done in the window: 400 short > max(0.2 x 800, 4 sqrt(1,600))
        (lambda a: 2 * a, 0.0, True),
        # a steady 50 s wait: done in the window are the arrivals of [0, 50] s, 500: 300 short
        (lambda a: a + 50.0, 0.0, True),
        # ... which a queue meeting a 50 s TTFT limit may hold: 2 x 10/s x 50 s = 1,000 waiting
        (lambda a: a + 50.0, 1000.0, False),
    ],
    ids=["keeps-up", "half-rate", "long-wait", "long-wait-within-its-limit"],
)
def test_a_queue_falls_behind_when_the_window_finishes_far_fewer_than_arrive(
    done: Callable[[np.ndarray], np.ndarray], waiting: float, behind: bool
) -> None:
    arrivals = np.linspace(0.0, 100.0, 1001)[1:]  # 1,000 at 10/s; the window is [20, 100] s
    assert falls_behind(arrivals, done(arrivals), waiting) is behind
