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


@pytest.mark.parametrize(
    ("loss", "text"),
    [(-0.0032, "none"), (0.0, "none"), (0.004, "none"), (0.25, "up to 25%")],
)
def test_a_throughput_loss_of_zero_or_less_reads_none(loss: float, text: str) -> None:
    from capcliff.cli.render import _loss_text

    assert _loss_text(loss) == text


def test_a_sweep_whose_points_past_the_sweet_spot_hold_more_loses_none(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # fuzz_random seed 7 (random) printed "throughput lost past it: up to -0%": online, the
    # sweet spot is the smallest cap within a tolerance of the most tokens/s, so the points past
    # it ran 0.3 % more (2,341.0 against 2,333.5 tok/s: a loss of 1 - 2341.0 / 2333.5 < 0)
    args = ["sweep", "qwen3-32b", "--num-requests", "40", "--rate", "50", "--isl", "1000",
            "--osl", "500"]  # fmt: skip
    assert main([*args, "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["sweet_spot"]["collapse_worst_loss"] < 0
    assert main(args) == 0
    out = capsys.readouterr().out
    assert "throughput lost past it: none" in out and "-0%" not in out


KV_2GIB = ["memory", "deepseek-r1", "--kv-cache-memory", "2GiB"]


def test_a_layout_that_overruns_the_device_reports_no_negative_headroom(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # fuzz_random seed 7 (random): `memory deepseek-r1 --kv-cache-memory 2GiB` printed
    # "headroom outside -498.54" GiB for dp8 (every GPU holding all 673 GB of weights)
    assert main([*KV_2GIB, "--layout", "dp8", "--format", "json"]) == 0
    stage = json.loads(capsys.readouterr().out)["layouts"][0]["stages"][0]
    outside = sum(t["bytes"] for t in stage["terms"] if not t["inside_budget"])
    overrun = stage["usable_bytes"] + outside - stage["total_memory_bytes"]  # budget + outside
    assert overrun > 0
    assert stage["headroom_bytes"] == 0 and stage["headroom_shortfall_bytes"] == overrun
    assert main([*KV_2GIB, "--layout", "dp8"]) == 0
    row = next(r for r in capsys.readouterr().out.splitlines() if "headroom outside" in r)
    assert f"overrun the device by {overrun / 2**30:,.2f} GiB" in row
    assert " 0.00 " in row  # no room left, not a negative amount


def test_the_budget_table_shows_a_layout_that_fits_before_one_with_more_kv(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # with a fixed 2 GiB KV pool per GPU, dp8 has the most KV in all (8 replicas) but does not
    # fit; the table showed dp8's overrun rather than pp8, the one layout that fits
    assert main([*KV_2GIB, "--format", "json"]) == 0
    fitting = [lay["name"] for lay in json.loads(capsys.readouterr().out)["layouts"] if lay["fits"]]
    assert fitting == ["pp8"]
    assert main(KV_2GIB) == 0
    assert "budget per GPU, pp8 " in capsys.readouterr().out


def _rate_layout(cap: int, per_replica: dict[int, float]) -> SimpleNamespace:
    """A 2-replica layout whose caps saturate at `per_replica` requests/s each, chosen at `cap`."""
    points = tuple(
        SimpleNamespace(cap=k, state=SimpleNamespace(throughput_rps=v))
        for k, v in per_replica.items()
    )
    at = SimpleNamespace(
        ttft_p99_s=0.12, tpot_p99_s=0.033, ttft_p99_half_width=0.07, tpot_p99_half_width=0.76
    )
    best_rate = max(per_replica.values())
    capacity = SimpleNamespace(
        cap=cap, points=points, saturation_rps=best_rate, at_sustained=at, simulated_cliff=None
    )
    layout = SimpleNamespace(name="dpa2", dp=2, tp=1, pp=1)
    return SimpleNamespace(
        memory=SimpleNamespace(layout=layout), capacity=capacity, sustained_rps=1.74,
        saturation_rps=2 * best_rate, refined=True,
    )  # fmt: skip


@pytest.mark.parametrize(
    ("cap", "saturation"),
    [
        # fuzz_random seed 14 (valid), Qwen3-30B-A3B dpa2 on 2 x H200 (JSON `capacity.caps`):
        # cap 238 saturates at 2 x 0.98 = 1.96, the grid's best is cap 476 at 2 x 1.255 = 2.51
        (238, "saturation 1.96 at this cap (2.51 at max_num_seqs 476)"),
        (476, "saturation 2.51"),  # the chosen cap is the best one: said once
    ],
)
def test_the_recommended_cap_prints_its_own_saturation(cap: int, saturation: str) -> None:
    from capcliff.analysis.plan.online_rows import recommendation_reasons_online

    ev = _rate_layout(cap, {119: 0.753, 238: 0.98, 476: 1.255})
    line = recommendation_reasons_online(ev, {})[0]  # type: ignore[arg-type]
    assert line.startswith(f"sustains 1.74 requests/s (6,264 an hour) at max_num_seqs {cap} ")
    assert f"per replica; {saturation}; there TTFT p99 0.12 s ±7%" in line


def test_a_tie_made_by_sampling_noise_says_so_with_its_gap() -> None:
    # fuzz_random seed 17 (qwen3-8b on 4 x H100, multiturn-chat, 8 users): dp4 57.01, dp2-tp2
    # 38.86 and dp2-pp2 25.27 requests/s, one line reading "ties with dp2-tp2 (38.86
    # requests/s), dp2-pp2 (25.27 requests/s): within 10%". With relative 95 % half-widths of
    # 0.30, 0.10 and 0.30: dp2-tp2 is 1 - 38.86 / 57.01 = 31.8 % below (within 0.30 + 0.10),
    # dp2-pp2 1 - 25.27 / 57.01 = 55.7 % below (within 0.30 + 0.30 = 60 %): a tie by noise.
    from capcliff.analysis.plan.ties import Option, decide, tie_reason

    dp4 = Option("dp4", 57.01, 1, 1, 0.30, "57.01 requests/s")
    tp = Option("dp2-tp2", 38.86, 2, 1, 0.10, "38.86 requests/s")
    pp = Option("dp2-pp2", 25.27, 2, 2, 0.30, "25.27 requests/s")
    chosen, tied, fastest = decide([dp4, tp, pp], 0.10)
    assert (chosen, tied, fastest) == (dp4, [tp, pp], None)
    line = tie_reason(chosen, tied, fastest, 0.10)
    assert "within 10%" not in line
    assert "up to 56% below dp4, past the model's 10% held-out throughput error" in line
    assert "95 % half-widths summing to 60%" in line


def test_a_tie_within_the_band_still_names_the_band() -> None:
    # tp4-pp2 1.60 and dp2-tp4 1.53 requests/s: 1 - 1.53 / 1.60 = 4.4 %, within 10 %
    from capcliff.analysis.plan.ties import Option, decide, tie_reason

    pp = Option("tp4-pp2", 1.60, tp=4, pp=2, shown="1.60 requests/s")
    dp = Option("dp2-tp4", 1.53, tp=4, pp=1, shown="1.53 requests/s")
    line = tie_reason(*decide([pp, dp]))
    assert line.startswith("ties with tp4-pp2 (1.60 requests/s): within 10% (the model's")


def test_a_fleet_without_a_load_says_the_rate_its_cost_is_priced_on() -> None:
    # fuzz_random seed 15 (qwen3-8b on 4 x B200, no load): the layouts table said 76.11
    # requests/s and 61,044 tok/s, the fleet $24.12 an hour and $0.14 per million output
    # tokens, where 24.12 / (61,044 x 3,600 / 1e6) = $0.11: the fleet is priced at the rate
    # less the 20 % headroom, which nothing said. Here one H100 at $2.50 an hour, isl 1000 and
    # osl 500 (98 %) or 2,000 (2 %): 530 output tokens a request (0.98 x 500 + 0.02 x 2,000).
    import contextlib
    import io

    argv = ["plan", "llama-3.1-8b", "--gpu", "h100-sxm", "--gpus", "1", "--engine", "vllm"]
    argv += ["--isl", "1000", "--osl", "histogram:500*98,2000*2", "--layout", "tp1"]
    argv += ["--jobs", "1", "--num-requests", "40", "--price-gpu-hour", "2.5"]
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main([*argv, "--format", "json"]) == 0
    report = json.loads(out.getvalue())
    fleet = report["fleet"][0]
    served = fleet["replicas"] * fleet["sustained_rps_per_replica"] * (1 - 0.2)
    assert report["headroom"] == 0.2 and fleet["served_rps"] == pytest.approx(served, rel=1e-12)
    per_million = fleet["usd_per_hour"] / (served * 530 * 3600) * 1e6
    assert fleet["usd_per_million_output_tokens"] == pytest.approx(per_million, rel=1e-9)
    text = io.StringIO()
    with contextlib.redirect_stdout(text):
        assert main(argv) == 0
    said = f"fleet: $ per million output tokens at h100-sxm {served:,.2f} requests/s (no load "
    assert said + "given: the replicas' sustained rate less the 20% headroom)" in text.getvalue()
