"""Found by using capcliff as an inference engineer would: each test is one claim that was false."""

from __future__ import annotations

import json
import sys
from dataclasses import replace
from pathlib import Path

import pytest
from typer.testing import CliRunner

from capcliff.analysis.deployment import resolve
from capcliff.analysis.deployment_settings import DeploymentSettings
from capcliff.analysis.evaluate.capacity import Replica, ReplicaCapacity, replica_capacity
from capcliff.analysis.evaluate.layout_capacity import LayoutEval
from capcliff.analysis.evaluate.online_load import OnlineWorkload
from capcliff.analysis.evaluate.solver import Slo
from capcliff.analysis.plan.online_rows import recommendation_reasons_online
from capcliff.analysis.workloads import WorkloadChoice
from capcliff.catalog.catalogs import get_hardware, get_model
from capcliff.catalog.layout import Layout
from capcliff.cli import app, main
from capcliff.memory.weights import WeightScheme
from capcliff.perf.step_time import StepTimeModel, step_time_model
from capcliff.sim.config import KVCapacity, SimConfig
from capcliff.units import KVDType
from tests.checktools import check_file


def _llama_8b_steps() -> StepTimeModel:
    model, h200 = get_model("llama-3.1-8b"), get_hardware("h200-sxm")
    return step_time_model(
        model.arch, h200, Layout(), scheme=WeightScheme.as_shipped(model.arch),
        kv_dtype=KVDType.BF16,
    )  # fmt: skip


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


def test_within_an_slo_a_cap_that_thrashes_at_saturation_is_not_recommended() -> None:
    # 6,400 tokens of KV; requests of 100 + 1,000 tokens peak at 1,100 tokens (5.8 at once),
    # 600 on average over a decode: about 10 running requests fill the cache. The cap grid
    # reaches 10, which preempts more than 0.5 times per request at saturation (thrashing);
    # without an SLO it is never chosen (docs/serving.md, "The cap"), and an SLO changes nothing.
    replica = Replica(
        _llama_8b_steps(), KVCapacity(blocks=400, block_size=16), SimConfig(max_num_seqs=256)
    )
    workload = OnlineWorkload(WorkloadChoice(num_requests=1, isl=100, osl=(1000,)), seed=0)
    capacity = replica_capacity(replica, workload, slo=Slo.of(100.0, 1.0))
    chosen = next(p for p in capacity.points if p.cap == capacity.cap)
    assert chosen.result.total_preemptions <= 0.5 * len(chosen.result.finish_s)
    calm = [p for p in capacity.points if not p.thrashing]
    assert capacity.saturation_rps == max(p.state.throughput_rps for p in calm)


def test_a_cap_at_the_simulated_cliff_is_not_described_as_below_it() -> None:
    # isl 100 + osl 100 in 6,400 tokens: about 40 running requests fill the cache (6,400 / 158),
    # and cap 40 is both the cap chosen and the first that preempts. "past it requests are
    # preempted" read as if the cap were safe; at the cap they are already preempted.
    replica = Replica(
        _llama_8b_steps(), KVCapacity(blocks=400, block_size=16), SimConfig(max_num_seqs=256)
    )
    workload = OnlineWorkload(WorkloadChoice(num_requests=1, isl=100, osl=(100,)), seed=0)
    capacity = replica_capacity(replica, workload, slo=None)
    assert capacity.simulated_cliff is not None and capacity.cap >= capacity.simulated_cliff
    chosen = next(p for p in capacity.points if p.cap == capacity.cap)
    per_request = chosen.result.total_preemptions / len(chosen.result.finish_s)
    dep = resolve(get_model("llama-3.1-8b"), get_hardware("h200-sxm"), DeploymentSettings())
    ev = LayoutEval(dep.memory(Layout(), 1024), replica, capacity, refined=True)
    reasons = recommendation_reasons_online(ev, {"tp1": ev})
    cliff = next(r for r in reasons if r.startswith("cliffs per replica"))
    assert "below the burst cliff" not in cliff and "at or past the burst cliff" in cliff
    assert f"preempted ({per_request:.2f} per request)" in cliff


def test_without_an_slo_a_layouts_tokens_per_s_are_at_its_rps(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # Every request has 100 output tokens, so at any steady rate R requests/s a layout makes
    # 100 R output tokens/s. The tok/s of a row were at (1 - headroom) R, its rps at R.
    code = main(["plan", *SMALL[:-2], "--format", "json"])
    report = json.loads(capsys.readouterr().out)
    assert code == 0
    for row in report["layouts"]:
        capacity = row["capacity"]
        assert capacity["output_tok_s"] == pytest.approx(100 * capacity["sustained_rps"], rel=0.02)


@pytest.fixture(scope="module")
def first_cap_rows() -> list[list[str]]:
    """The table rows (cells) of layouts searched at their first cap only, within an SLO."""
    runner = CliRunner()
    result = runner.invoke(
        app, ["plan", "llama-3.1-8b", "--gpus", "4", "--isl", "100", "--osl", "100",
              "--slo-tpot", "0.05"],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    rows = [line.split("│")[1:-1] for line in lines if "*" in line and "│" in line]
    assert rows
    return rows


def test_within_an_slo_a_layout_searched_at_its_first_cap_only_shows_no_tokens_per_s(
    first_cap_rows: list[list[str]],
) -> None:
    # Its rate within the SLO is unknown ("-"), so tokens/s at that rate are too; the figure
    # shown was at its saturation rate, beside rows at their SLO-bound rates.
    for cells in first_cap_rows:
        rps, tok_s = cells[5].strip(), cells[6].strip()
        assert rps == "-" and tok_s == "-", cells


def test_within_an_slo_first_cap_layouts_are_listed_by_saturation_rate(
    first_cap_rows: list[list[str]],
) -> None:
    # Their rate within the SLO unknown (0 in JSON), the table lists them by what it knows.
    saturation = [float(cells[4].replace(",", "")) for cells in first_cap_rows]
    assert saturation == sorted(saturation, reverse=True)


def test_the_online_tables_cliff_is_per_replica_like_its_cap() -> None:
    # A 100 + 100-token request peaks at 200 tokens, ceil(200 / 16) = 13 blocks of 16; a
    # replica's analytic cliff is its blocks over 13. The dp2 row showed both replicas' (x 2)
    # beside its per-replica cap, so a cap at the cliff read as half of it.
    result = CliRunner().invoke(
        app, ["plan", "llama-3.1-8b", "--gpus", "2", "--isl", "100", "--osl", "100"]
    )
    assert result.exit_code == 0, result.output
    row = next(line for line in result.stdout.splitlines() if line.startswith("│ dp2 "))
    cells = [c.strip() for c in row.split("│")[1:-1]]
    kv_tokens_per_replica = int(cells[1].replace(",", ""))
    analytic = int(cells[2].split("/")[0].replace(",", ""))
    assert analytic == kv_tokens_per_replica // 16 // 13


def test_a_split_on_one_gpu_names_the_gpu_count(capsys: pytest.CaptureFixture[str]) -> None:
    # It said "no layout of up to 0 GPUs fits this model", though the model fits one GPU.
    code = main(["plan", "deepseek-r1-distill-llama-8b", "--disagg", "--gpus", "1",
                 "--isl", "2048", "--osl", "512", "--num-requests", "100"])  # fmt: skip
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1, err
    assert err.startswith("error: gpus: a split needs at least 2 GPUs"), err


def test_a_batch_sweep_past_its_requests_says_those_points_repeat_one_run(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # 100 requests at t = 0: concurrency 128, 256 and 512 each run all 100 at once, so their
    # rows repeat the same run; the table showed them as a plateau without a word.
    code = main(["sweep", "llama-3.1-8b", "--isl", "100", "--osl", "100", "--num-requests",
                 "100", "--concurrency", "64..512"])  # fmt: skip
    err = capsys.readouterr().err
    assert code == 0
    assert "concurrency 128, 256, 512: more than the 100 requests" in err


ONLINE_SWEEP = ["sweep", "llama-3.1-8b", "--workload", "chat", "--rate", "20", "--num-requests",
                "300", "--concurrency", "8,64"]  # fmt: skip


def test_an_online_sweep_table_shows_each_points_steady_state_and_sample() -> None:
    # At 20 requests/s a cap of 8 cannot keep up (its queue grows) and keeps its first sample,
    # while a cap of 64 is grown by the stopping rule; the table showed whole-run makespans of
    # different samples (the saturated point finishing first) and no word of either.
    runner = CliRunner()
    data = json.loads(runner.invoke(app, [*ONLINE_SWEEP, "--format", "json"]).stdout)
    table = runner.invoke(app, ONLINE_SWEEP).stdout
    for point in data["points"]:
        steady = point["steady"]
        row = next(
            line for line in table.splitlines() if line.startswith(f"│ {point['concurrency']:>4} ")
        )
        cells = [c.strip() for c in row.split("│")[1:-1]]
        assert cells[1] == f"{steady['throughput_rps']:,.2f}"
        assert cells[7] == f"{steady['requests']:,}"
        assert ("saturated" in cells[8]) == steady["saturated"]
    assert any(p["steady"]["saturated"] for p in data["points"])


def test_an_online_sweep_of_sessions_keeps_its_hit_rate_column() -> None:
    # README: sweep points report the hit rate (`hit` column) for session workloads.
    result = CliRunner().invoke(
        app, ["sweep", "llama-3.1-8b", "--workload", "multiturn-chat", "--clients", "8",
              "--num-requests", "100", "--concurrency", "8"],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    header = next(line for line in result.stdout.splitlines() if "conc" in line)
    assert " hit " in header


def test_plan_disagg_lists_its_candidates_in_the_order_they_rank(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # "splits ranked by makespan": the table listed them as enumerated (15 s, 10 s, 12 s).
    code = main(["plan", "llama-3.1-8b", "--gpus", "4", "--disagg", "--isl", "2048", "--osl",
                 "512", "--num-requests", "200", "--format", "json"])  # fmt: skip
    report = json.loads(capsys.readouterr().out)
    assert code == 0 and report["objective"] == "makespan"
    makespans = [c["makespan_s"] for c in report["candidates"]]
    assert makespans == sorted(makespans)
    assert report["candidates"][0]["name"] == report["disaggregated"]["name"]


DISAGG_SPEC = """
[[scenario]]
name = "split"
model = "deepseek-r1-distill-llama-8b"
gpu = "h200-sxm"
disagg = "1p:tp1,1d:tp1"
workload = { isl = 512, osl = 16, num_requests = 16, concurrency = 8 }
[scenario.expect]
fits = true
"""


@pytest.mark.parametrize(
    "line",
    [
        'recommended_layout = "tp1"',
        "sustained_rps_min = 1",
        "replicas_max = 2",
        "usd_per_million_tokens_max = 5",
    ],
)
def test_a_disagg_scenario_refuses_assertions_about_aggregated_plans(
    line: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # They failed as "nothing fits" / "no layout fits" beside fits = true.
    spec = tmp_path / "capcliff.toml"
    spec.write_text(DISAGG_SPEC + line + "\n")
    code = main(["check", str(spec)])
    err = capsys.readouterr().err
    key = line.split(" = ")[0]
    assert code == 2, err
    assert f"scenario[0].expect.{key}: not with disagg" in err


def test_a_disagg_scenarios_layouts_are_the_specs_not_the_plans(tmp_path: Path) -> None:
    spec = tmp_path / "capcliff.toml"
    spec.write_text(DISAGG_SPEC)
    assert check_file(spec).scenarios[0].layout_source == "spec"


def test_a_load_within_the_gpus_but_past_the_headroom_names_the_fleets_gpus() -> None:
    # One H200 under vLLM >= 0.14 saturates below 96 requests/s of 100 + 100 tokens: its
    # overlapped host time is at least 103.77 us per running sequence and step
    # (perf/host_time.py), so at most 1 / 103.77 us = 9,637 decode tokens/s, 96 requests/s of 100
    # output tokens before any prefill. 75 is within it but past 80 % of it (the simulation
    # sustains 87), so the fleet row needs two GPUs. The line said "within these GPUs; 2
    # replicas carry it", while the plan was for one GPU.
    result = CliRunner().invoke(
        app, ["plan", "llama-3.1-8b", "--gpus", "1", "--isl", "100", "--osl", "100", "--rate",
              "75", "--format", "json"],
    )  # fmt: skip
    report = json.loads(result.stdout)
    fleet = report["fleet"][0]
    assert 75 <= report["load"]["sustained_rps"] < min(75 / 0.8, 96) and fleet["gpus"] == 2
    text = CliRunner().invoke(
        app, ["plan", "llama-3.1-8b", "--gpus", "1", "--isl", "100", "--osl", "100", "--rate",
              "75"],
    ).stdout  # fmt: skip
    line = next(row for row in text.splitlines() if row.startswith("Load:"))
    assert "not with 20% headroom" in line and "(2 GPUs)" in line


def _batch_plan_text(args: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    """A batch plan of 100 + 100-token requests on one H200: its table (exit 0)."""
    code = main(["plan", *args, "--gpus", "1", "--isl", "100", "--osl", "100", "--arrival",
                 "batch"])  # fmt: skip
    out = capsys.readouterr().out
    assert code == 0
    return out


def test_when_nothing_fits_the_smallest_gpu_count_that_fits_is_named(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # Llama-3.1-405B in BF16 is 811.7 GB: over 4 H200s that is 203 GB a GPU (more than the
    # 135.7 GB usable), over 8 it is 101.5 GB, which fits as tp8. The fix named 16 GPUs.
    out = _batch_plan_text(["llama-3.1-405b", "--num-requests", "20"], capsys)
    assert "8 GPUs (1 node) fit as tp8" in out


def test_a_plot_without_matplotlib_is_refused_before_simulating(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    # README: outputs are checked before the simulation starts; the sweep ran and printed its
    # table first, then failed for want of matplotlib.
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # as if not installed
    code = main(["sweep", *SMALL, "--concurrency", "4", "--plot", str(tmp_path / "p.png")])
    out, err = capsys.readouterr()
    assert code == 2 and out == ""
    assert err == "error: plot: matplotlib is not installed; pip install 'capcliff[plot]'\n"


@pytest.mark.parametrize(
    ("args", "reason"),
    [
        (["llama-3.1-8b", "--layout", "dpa8"], "dpa8: attention DP applies only to MoE models"),
        # 405B in BF16 is 811.7 GB, all of it on one GPU
        (["llama-3.1-405b", "--gpus", "1"], "tp1: does not fit: weights 811.7 GB/GPU"),
    ],
    ids=["dense-attention-dp", "405b-one-gpu"],
)
def test_a_sweep_with_nothing_to_simulate_says_why(
    args: list[str], reason: str, capsys: pytest.CaptureFixture[str]
) -> None:
    # It said "no requested layout fits this model; run `capcliff memory`" and nothing more. A
    # layout that cannot exist (attention DP on a dense model) is bad input: one line saying why,
    # exit 2. A model that does not fit is an answer, as `plan` gives it: each layout's reason
    # and what would fit, exit 0.
    code = main(["sweep", *args, "--isl", "100", "--osl", "100", "--num-requests", "20",
                 "--concurrency", "4"])  # fmt: skip
    captured = capsys.readouterr()
    if "dpa8" in args:
        assert code == 2 and captured.err.count("\n") == 1, captured.err
        assert reason in captured.err
    else:
        assert code == 0 and captured.err == "", captured.err
        assert reason in captured.out
        assert "Nothing fits. What would:" in captured.out


def test_an_online_plan_where_nothing_fits_says_what_would_fit(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # It headed the fit fixes "What would meet it:" (the SLO wording) and claimed "up to 0
    # requests per simulation". 405B in BF16 over 4 H200s is 203 GB a GPU: nothing fits.
    code = main(["plan", "llama-3.1-405b", "--gpus", "4", "--isl", "100", "--osl", "100"])
    out = capsys.readouterr().out
    assert code == 0
    assert "What would fit:" in out and "What would meet it" not in out
    assert "up to 0 requests" not in out


def test_a_batch_cap_that_is_the_whole_batch_says_it_depends_on_the_batch(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # 50 requests of 100 + 100 tokens need 50 x 13 blocks, far below one H200's 53,907: the
    # best cap is all 50 at once, an answer about this batch's size, not about the KV cliff.
    out = _batch_plan_text(["llama-3.1-8b", "--num-requests", "50"], capsys)
    assert "Recommended: tp1, max_num_seqs 50 per replica" in out
    assert "the cap admits the whole batch (50 requests at once)" in out


def test_an_online_disagg_sweep_says_which_decode_caps_let_the_queue_grow() -> None:
    # At 8 requests/s of 1,024-token answers a decode cap of 16 cannot keep up (the JSON's
    # steady.saturated); the table gave a 40 s TTFT with no word of a growing queue.
    args = ["sweep", "deepseek-r1-distill-llama-8b", "--disagg", "1p:tp1,3d:tp1", "--isl",
            "2048", "--osl", "1024", "--num-requests", "300", "--rate", "8", "--concurrency",
            "16,64"]  # fmt: skip
    runner = CliRunner()
    data = json.loads(runner.invoke(app, [*args, "--format", "json"]).stdout)
    text = runner.invoke(app, args).stdout
    for point in data["series"]["points"]:
        row = next(r for r in text.splitlines() if r.startswith(f"│ {point['concurrency']:>11} "))
        queue = row.split("│")[-2].strip()
        assert queue == ("grows" if point["steady"]["saturated"] else "bounded")
    assert any(p["steady"]["saturated"] for p in data["series"]["points"])


def test_kv_aware_admission_that_is_slower_says_so(capsys: pytest.CaptureFixture[str]) -> None:
    # "would not help: 7% (makespan 464 s)" read as a 7 % gain; the makespan was 7 % longer.
    code = main(["plan", "--arrival", "batch", "--num-requests", "500", "--format", "json"])
    rec = json.loads(capsys.readouterr().out)["recommended"]
    assert code == 0 and rec["kv_aware_gain"] < 0  # this case: slower than the chosen cap
    main(["plan", "--arrival", "batch", "--num-requests", "500"])
    line = next(r for r in capsys.readouterr().out.splitlines() if "KV-aware" in r)
    assert line.endswith(f"{-rec['kv_aware_gain']:.0%} longer")


def test_the_memory_tables_concurrency_column_says_it_is_per_replica(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # dp16 of Llama-3.1-8B: 858,144 tokens a replica hold 6 requests of 131,072 tokens, 96 over
    # all 16; beside "KV tok total" the column read as the deployment's, and it is a replica's.
    code = main(["memory", "llama-3.1-8b", "--gpus", "16", "--layout", "dp16"])
    out = capsys.readouterr().out
    assert code == 0
    assert "conc/rep@131,072" in out


@pytest.mark.parametrize("fraction", ["0.9", "0.8"])
def test_a_plan_for_tensorrt_llm_prints_a_trtllm_serve_line_with_its_cap(
    fraction: str, capsys: pytest.CaptureFixture[str]
) -> None:
    # It printed only vLLM and SGLang lines, with a cap sized under TensorRT-LLM's memory rule.
    code = main(["plan", "llama-3.1-8b", "--gpus", "1", "--engine", "trtllm", "--isl", "100",
                 "--osl", "100", "--free-gpu-memory-fraction", fraction, "--format",
                 "json"])  # fmt: skip
    report = json.loads(capsys.readouterr().out)
    assert code == 0
    line = report["engine_flags"]["trtllm"]
    assert line.startswith("trtllm-serve meta-llama/Llama-3.1-8B")
    assert f"--max_batch_size {report['recommended']['max_num_seqs']}" in line
    assert f"--kv_cache_free_gpu_memory_fraction {fraction}" in line  # as given, not rounded


def test_reuse_figures_at_an_overload_say_they_are_not_the_fleets(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # One H200 sustains about 24 requests/s of multiturn-chat; at 40 the fleet needs three, but
    # the reuse runs put all 40 on the one replica planned, with no word of it.
    code = main(["plan", "llama-3.1-8b", "--gpus", "1", "--workload", "multiturn-chat",
                 "--rate", "40", "--format", "json"])  # fmt: skip
    report = json.loads(capsys.readouterr().out)
    assert code == 0 and report["load"]["saturated"] and report["reuse"] is not None
    assert any(n.startswith("the reuse figures are tp1 alone") for n in report["notes"])


def test_an_online_sweeps_sweet_spot_does_not_compare_makespans_of_different_samples(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # 8 closed-loop users: a cap of 4 serves about half what 8 does, but its sample was not
    # grown (400 requests against 800), so its makespan was the least and it was the "sweet
    # spot". A cap of 64 runs the same 8 users as a cap of 8.
    code = main(["sweep", "llama-3.1-8b", "--isl", "100", "--osl", "100", "--clients", "8",
                 "--num-requests", "200", "--concurrency", "4,8,64", "--format",
                 "json"])  # fmt: skip
    report = json.loads(capsys.readouterr().out)
    assert code == 0
    assert report["sweet_spot"]["concurrency"] == 8


def test_a_gpu_memory_without_its_unit_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    # "--gpu-total-memory 80" was 80 bytes: every layout "did not fit" on a 0.00 GiB device.
    code = main(["memory", "llama-3.1-8b", "--gpu-total-memory", "80"])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1, err
    assert err.startswith("error: --gpu-total-memory: 80 bytes is less than 1 GiB")


def test_a_cap_safe_at_the_rate_but_past_the_burst_cliff_is_warned_about() -> None:
    # the same replica (400 blocks: a backlog fills them at cap 40) under a loose SLO
    replica = Replica(
        _llama_8b_steps(), KVCapacity(blocks=400, block_size=16), SimConfig(max_num_seqs=256)
    )
    workload = OnlineWorkload(WorkloadChoice(num_requests=1, isl=100, osl=(100,)), seed=0)
    capacity = replica_capacity(replica, workload, slo=Slo.of(60.0, 1.0))
    assert capacity.sustained is not None and capacity.simulated_cliff == capacity.cap == 40
    dep = resolve(get_model("llama-3.1-8b"), get_hardware("h200-sxm"), DeploymentSettings())

    def cliff_line(c: ReplicaCapacity) -> str:
        ev = LayoutEval(dep.memory(Layout(), 1024), replica, c, refined=True)
        return next(r for r in recommendation_reasons_online(ev, {"tp1": ev})
                    if r.startswith("cliffs per replica"))  # fmt: skip

    line = cliff_line(capacity)
    assert f"analytic p99 {capacity.analytic_cliff:,}" in line and "burst 40" in line
    s = capacity.sustained
    assert f"{s.preemptions / s.requests:.3f} preemptions per request" in line
    assert "rides it out" not in line  # it preempts at the planned rate already
    # how the engine fails at the burst cliff, from the backlog run at cap 40 (issue 20)
    assert "; at the burst cliff, " in line and " dominates (" in line
    calm = replace(capacity, sustained=replace(s, preemptions=0))
    assert "safe at the planned rate, but a restart or a burst preempts" in cliff_line(calm)
    assert "a cap below 40 rides it out" in cliff_line(calm)


@pytest.mark.parametrize("mode", [["--arrival", "batch"], ["--rate", "2"]])
def test_a_given_layout_that_cannot_exist_names_the_layouts_that_fit_as_they_are(
    mode: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    # Llama-3.1-8B has 32 attention heads: TP 3 cannot split them. 16 GB of BF16 weights fit one
    # H200, so three GPUs serve it as dp3 with no FP8 and no more GPUs (the old fixes said "FP8
    # weights fit as dp3", as if BF16 did not). A layout that cannot exist is bad input (exit 2,
    # one line), as `sweep` says it; it was an exit-0 answer here and an error there.
    code = main(["plan", "llama-3.1-8b", "--gpu", "h200-sxm", "--layout", "tp3", "--isl", "100",
                 "--osl", "100", *mode])  # fmt: skip
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1, err
    assert "32 attention heads are not divisible by TP=3" in err
    assert "fit these 3 GPUs as they are (--layout dp3)" in err
    assert "FP8 weights" not in err
