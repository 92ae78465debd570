"""Findings of the random-combination campaign's seeds 42-47 (benchmarks/fuzz_random.py, issue 23),
each value worked by hand or read from another command's answer."""

from __future__ import annotations

import json
import math
from types import SimpleNamespace
from typing import Any

import pytest

from capcliff.cli import main


def _stubbed_fleet_check(
    monkeypatch: pytest.MonkeyPatch, replicas: int, sample: int, clients: int | None = None
) -> list[tuple[str, int, float, int]]:
    """check_fleet with its simulator stubbed: each run recorded as (load kind, requests drawn,
    rate or users, engines)."""
    from capcliff.analysis.evaluate.online_load import LoadKind
    from capcliff.analysis.plan import fleet

    runs: list[tuple[str, int, float, int]] = []
    drawn: dict[str, Any] = {}

    def at_rate(n: int, rate: float) -> str:
        drawn.update(kind="rate", n=n, load=rate)
        return "requests"

    def with_clients(n: int, users: int) -> str:
        drawn.update(kind="clients", n=n, load=users)
        return "requests"

    def simulate(requests: str, steps: object, kv: object, config: object, **kw: int) -> int:
        runs.append((drawn["kind"], drawn["n"], drawn["load"], kw["dp"]))
        return kw["dp"]

    monkeypatch.setattr(fleet, "config_at", lambda config, cap, engines: engines)
    monkeypatch.setattr(fleet, "simulate", simulate)
    monkeypatch.setattr(fleet, "steps_run", lambda requests, config, run: run(config))
    monkeypatch.setattr(fleet, "steady_state", lambda result, open_loop: result)
    monkeypatch.setattr(fleet, "meets_slo", lambda state, limits: True)
    workload: Any = SimpleNamespace(
        kind=LoadKind.RATE if clients is None else LoadKind.CLIENTS,
        choice=SimpleNamespace(clients=clients),
        offered_rps=lambda: 5000.0,
        at_rate=at_rate,
        with_clients=with_clients,
    )
    ev: Any = SimpleNamespace(
        capacity=SimpleNamespace(simulated_requests=sample),
        replica=SimpleNamespace(config=None, steps=None, capacity=None),
    )
    unit: Any = SimpleNamespace(dp=1, cap=216)
    checked = fleet.check_fleet(ev, unit, replicas, workload, None)
    assert (checked.replicas, checked.meets) == (replicas, True)
    return runs


def test_a_fleet_past_the_check_sample_is_simulated_a_few_replicas_at_their_share(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # fuzz_random seed 42 (random): `plan gemma-3-27b --rate 5000` sized 12,989 x tp4 and
    # simulated 16,000 requests over 12,989 engines, 1.2 each: no replica got near its steady
    # state, and the fleet line printed TPOT p99 6.4 ms where dp2-tp4 at the same 0.385
    # requests/s a replica read 34 ms. Each unit now gets the replica's own sample, 4,320:
    # 16,000 // 4,320 = 3 units, 12,960 requests, at 3 / 12,989 of the rate, 1.1548 requests/s.
    runs = _stubbed_fleet_check(monkeypatch, replicas=12_989, sample=4_320)
    [(kind, n, rate, engines)] = runs
    assert (kind, n, engines) == ("rate", 12_960, 3)
    assert rate == pytest.approx(1.15482, rel=1e-5)


def test_closed_loop_users_are_shared_out_to_the_replicas_simulated(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # 10,000 users over 500 replicas, sample 2,000: 16,000 // 2,000 = 8 replicas simulated,
    # with 10,000 x 8 / 500 = 160 of the users, 16,000 requests
    runs = _stubbed_fleet_check(monkeypatch, replicas=500, sample=2_000, clients=10_000)
    assert runs == [("clients", 16_000, 160, 8)]


def test_a_large_fleet_without_an_slo_is_not_said_to_miss_its_target(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # seed 42's fleet check, on a smaller fleet: Llama-3.1-8B on H100s at 2,000 requests/s.
    # The replica sustains R requests/s; 20 % headroom: ceil(2,000 / (0.8 R)) replicas (16.75:
    # ceil(149.25) = 150). On the base, 16,000 requests over 150 replicas (107 each) never
    # settled: "the fleet of 152 x tp1 simulated at the load still misses the target", with no
    # SLO given, two replicas added.
    args = ["plan", "llama-3.1-8b", "--gpu", "h100-sxm", "--gpus", "1", "--isl", "1000",
            "--osl", "500", "--rate", "2000", "--jobs", "1", "--format", "json"]  # fmt: skip
    assert main(args) == 0
    report = json.loads(capsys.readouterr().out)
    sustained = report["layouts"][0]["capacity"]["sustained_rps"]
    [line] = report["fleet"]
    assert line["replicas"] == math.ceil(2000 / (0.8 * sustained))
    assert line["meets_slo"] is True
    assert not [n for n in report["notes"] if "still misses the target" in n]


SMALL = ["llama-3.1-8b", "--gpus", "8", "--gpu-total-memory", "10GiB", "--num-requests", "40"]


def _json(args: list[str], capsys: pytest.CaptureFixture[str]) -> dict[str, Any]:
    assert main([*args, "--format", "json"]) == 0
    return dict(json.loads(capsys.readouterr().out))


def test_a_batch_plan_ranks_each_layout_at_the_cap_it_would_serve(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # fuzz_random seed 46 (random): `plan .../llama-3.1-8b/config.json --arrival batch
    # --gpu-total-memory 10GiB` ranked dp2-tp4 by 40 requests at once (makespan 89.6 s, 2
    # preemptions: past its simulated cliff), tied it with tp8 (88.9 s) and recommended it at
    # "max_num_seqs 8 per replica", the largest cap that runs clean (16 in all), and warned that
    # 8 is "far below the sweet spot (20 per replica)". The same layout at 16 requests takes
    # what `sweep --concurrency 16` prints, not 89.6 s; tp8 runs the whole batch clean.
    plan = _json(["plan", *SMALL, "--jobs", "1", "--arrival", "batch"], capsys)
    sweep = _json(["sweep", *SMALL, "--layout", "dp2-tp4", "--workload", "reasoning",
                   "--concurrency", "16,40"], capsys)  # fmt: skip
    at = {p["concurrency"]: p for p in sweep["points"]}
    assert at[16]["preemptions"] == 0 and at[40]["preemptions"] > 0
    [row] = [lay for lay in plan["layouts"] if lay["name"] == "dp2-tp4"]
    assert row["sweet_spot"]["concurrency"] == 16
    assert row["sweet_spot"]["makespan_s"] == pytest.approx(at[16]["makespan_s"], rel=1e-9)
    # tp8, 40 at once, runs past dp2-tp4's clean cap by more than the 10 % tie band
    assert plan["recommended"]["layout"] == "tp8"
    assert plan["recommended"]["max_num_seqs"] == 40
    assert not [w for w in plan["flag_warnings"] if "far below the sweet spot" in w]


def test_a_session_context_of_0_tokens_is_the_presets_none(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # fuzz_random seeds 42-43 (valid): `--workload agentic --context 0` was refused ("context:
    # must be an integer >= 1, got 0"). Both presets start a session with no context of its own
    # (sessions.py: start_context None), so 0 tokens is the preset as shipped: the same answer.
    args = ["sweep", "gpt-oss-20b", "--gpu", "h100-sxm", "--engine", "trtllm", "--workload",
            "agentic", "--turns", "2", "--clients", "8", "--num-requests", "40"]  # fmt: skip
    plain = _json(args, capsys)
    assert _json([*args, "--context", "0"], capsys) == plain
    assert main([*args, "--context", "-1"]) == 2
    assert "context: must be an integer >= 0, got -1" in capsys.readouterr().err


def test_an_eager_deployment_says_its_steps_are_priced_as_graphed(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # fuzz_random seed 43 (random): `plan llama-3.1-8b --enforce-eager` printed the same 3.95
    # requests/s and 17.9 ms TPOT p99 as the graphed plan: only the CUDA-graph pool (memory) is
    # modeled, not launching each op from the host. The answer now says so where it names its
    # step times.
    args = ["sweep", "llama-3.1-8b", "--isl", "100", "--osl", "100", "--num-requests", "20",
            "--concurrency", "4"]  # fmt: skip
    graphed = _json(args, capsys)
    eager = _json([*args, "--enforce-eager"], capsys)
    assert "--enforce-eager: KV without the CUDA-graph pool" in eager["step_profile"]
    assert "enforce-eager" not in graphed["step_profile"]


def test_a_fleet_line_of_one_gpu_says_gpu(capsys: pytest.CaptureFixture[str]) -> None:
    # fuzz_random seed 43 (valid): "1 x tp1 (1 GPUs) carries the load for less than 1 x dpa2
    # (2 GPUs)". One tp1 replica of Llama-3.1-8B carries 1 request/s of 200 + 100 tokens.
    args = ["plan", "llama-3.1-8b", "--gpus", "2", "--layout", "tp2", "--isl", "200", "--osl",
            "100", "--rate", "1", "--jobs", "1", "--num-requests", "40"]  # fmt: skip
    assert main(args) == 0
    out = capsys.readouterr().out
    assert "1 x tp1 (1 GPU) carries the load for less than 1 x tp2 (2 GPUs)" in out
