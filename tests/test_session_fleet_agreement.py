"""One answer per deployment for session workloads (2026-12-08, h-sessfleet): the plan's users a
replica carries, the fleet check's run of those replicas and `sweep` of the same replica and
users agree, by Little's law on a user's cycle: cycle = think + TTFT + output x TPOT a request,
requests/s = users / cycle.

Before, `plan qwen3-32b --engine sglang --workload agentic --clients 64` said one replica carries
15 users (the saturation rate 2.52 requests/s x a 5.95 s cycle), while its own fleet check ran
10.5 users a unit at 1.39 requests/s (a 7.6 s cycle). The 5.95 s came from a run "at 2.02
requests/s" that offered 0.87: sessions at a rate started at rate / the preset's 30 mean turns,
but at a 40,960-token context an agentic session sends 14 requests (turns cut at the context,
fan-out branches added)."""

from __future__ import annotations

import json
import math
from typing import Any

import numpy as np
import pytest

from capcliff.analysis.evaluate.steady_state import REL_HALF_WIDTH
from capcliff.cli.main import main
from capcliff.sim.traffic.sessions import SessionSpec, generate_sessions, requests_per_session
from capcliff.sim.traffic.workload import Fixed

# 100 new tokens in, 100 out a turn, a 1,000-token context with room for max_tokens 100: turn k's
# prompt is 200 (k - 1) + 100, which fits while it is <= 900, so at most 5 turns run. Turns are
# geometric with mean 10 (p = 0.1): E[min(T, 5)] = sum_{k=0..4} 0.9^k = (1 - 0.9^5) / 0.1.
CUT = SessionSpec(
    mean_turns=10, user_input=Fixed(100), output=Fixed(100), max_context_tokens=1_000,
    max_output_tokens=100,
)  # fmt: skip
CUT_MEAN = (1 - 0.9**5) / 0.1  # 4.0951


def test_a_session_sends_the_turns_that_fit_the_context() -> None:
    assert requests_per_session(CUT) == pytest.approx(CUT_MEAN, rel=0.03)
    # nothing cut, no fan-out: the preset's mean turns exactly
    whole = SessionSpec(mean_turns=2.5, user_input=Fixed(10), output=Fixed(10))
    assert requests_per_session(whole) == 2.5


def test_sessions_at_a_rate_offer_that_rate_when_the_context_cuts_them() -> None:
    # 5 requests/s: sessions start at 5 / 4.0951 = 1.22 a second. The old divisor, 10 mean
    # turns, started 0.5 a second and offered 5 x 4.0951 / 10 = 2.05 requests/s.
    requests = generate_sessions(CUT, 4_000, np.random.default_rng(5), rate_per_s=5.0)
    starts = requests.arrival_s[~np.isnan(requests.arrival_s)]
    sessions = len(starts)
    offered = len(requests.arrival_s) / float(starts.max())
    # the last start is a sum of ~980 exponential gaps: 4 standard errors is 4 / sqrt(980)
    assert offered == pytest.approx(5.0, rel=4 / math.sqrt(sessions) + 0.02)


def _json(capsys: pytest.CaptureFixture[str], *args: str) -> dict[str, Any]:
    assert main([*args, "--format", "json"]) == 0
    return json.loads(capsys.readouterr().out)  # type: ignore[no-any-return]


DEPLOYMENT = ("qwen3-32b", "--engine", "sglang", "--gpus", "2", "--layout", "tp2",
              "--workload", "agentic")  # fmt: skip


@pytest.fixture(scope="module")
def plan38() -> dict[str, Any]:
    # a module fixture cannot take capsys: one plan serves three tests
    import contextlib
    import io

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = main(["plan", *DEPLOYMENT, "--clients", "38", "--jobs", "1", "--format", "json"])
    assert code == 0
    return json.loads(out.getvalue())  # type: ignore[no-any-return]


def test_the_plans_users_a_replica_carries_are_littles_law_on_one_run(
    plan38: dict[str, Any],
) -> None:
    s = plan38["sessions"]
    # agentic users think 2 s (exponential mean) before every request in steady state
    assert s["mean_think_s"] == 2.0
    assert s["users"] == pytest.approx(s["users_rps"] * s["cycle_s"])
    # the operating state: without an SLO, 80 % of the saturation rate
    [row] = plan38["layouts"]
    sat = row["capacity"]["saturation_rps"]
    assert s["users_rps"] == pytest.approx(0.8 * sat, rel=REL_HALF_WIDTH)


def test_the_fleet_check_runs_the_users_the_plan_says_a_replica_carries(
    plan38: dict[str, Any],
) -> None:
    s = plan38["sessions"]
    [fleet] = plan38["fleet"]
    # 38 users over the users a replica carries at 80 % of saturation: 38 / ~20 -> 2 replicas
    assert fleet["replicas"] == math.ceil(38 / s["users"] - 1e-9)
    # each unit runs 19 users; their cycle (users / requests/s) is the plan's, within the
    # sampling intervals of the two runs (each settled within REL_HALF_WIDTH)
    checked_cycle = 38 / fleet["served_rps"]
    assert checked_cycle == pytest.approx(s["cycle_s"], rel=2 * REL_HALF_WIDTH)


def test_sweep_of_a_replica_with_the_plans_users_serves_users_over_the_cycle(
    plan38: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    s = plan38["sessions"]
    users = round(s["users"])
    sweep = _json(capsys, "sweep", *DEPLOYMENT, "--clients", str(users), "--concurrency",
                  str(plan38["recommended"]["max_num_seqs"]), "--num-requests", "1500")  # fmt: skip
    [point] = sweep["series"][0]["points"]
    steady = point["steady"]
    expected = users / s["cycle_s"]
    band = steady["rps_half_width"] + REL_HALF_WIDTH
    assert steady["throughput_rps"] == pytest.approx(expected, rel=band)
    # the hand-worked cycle of the sweep's own requests: think + TTFT + output x TPOT
    hand = 2.0 + point["ttft_mean_s"] + 294 * point["tpot_mean_s"]
    assert hand == pytest.approx(s["cycle_s"], rel=0.15)


def test_check_of_a_replica_with_the_plans_users_serves_users_over_the_cycle(
    plan38: dict[str, Any], capsys: pytest.CaptureFixture[str], tmp_path: Any
) -> None:
    s = plan38["sessions"]
    users = round(s["users"])
    spec = tmp_path / "sessions.toml"
    spec.write_text(
        '[[scenario]]\nname = "plan users"\nmodel = "qwen3-32b"\ngpu = "h200-sxm"\ngpus = 2\n'
        'layout = "tp2"\nengine = "sglang"\n[scenario.workload]\npreset = "agentic"\n'
        f'arrival = "clients"\nclients = {users}\n'
        f"concurrency = {plan38['recommended']['max_num_seqs']}\nnum_requests = 1500\n"
        "[scenario.expect]\noutput_throughput_min_tok_s = 1\n"
    )
    assert main(["check", str(spec), "--format", "json"]) == 0
    figures = json.loads(capsys.readouterr().out)["scenarios"][0]["figures"]
    # users / cycle requests/s, each of the preset's 294 output tokens on average (the
    # context-cut sample's mean is within 3 % of it); the check's rate is settled within 5 %
    expected = users / s["cycle_s"] * 294
    band = 2 * REL_HALF_WIDTH + 0.03
    assert figures["output_throughput_tok_s"] == pytest.approx(expected, rel=band)


def test_a_session_runs_window_closes_at_the_last_session_start() -> None:
    # sessions at a rate: first turns timed, later turns NaN (they follow the turn before);
    # past the last start (3 s) only the running sessions' later turns arrive: their drain
    from capcliff.analysis.evaluate.capacity import last_start
    from capcliff.sim.traffic.workload import Requests

    def requests(arrivals: list[float]) -> Requests:
        n = len(arrivals)
        return Requests(
            input_tokens=np.full(n, 10), output_tokens=np.full(n, 10),
            max_output_tokens=np.full(n, 10), arrival_s=np.array(arrivals),
        )  # fmt: skip

    assert last_start(requests([0.0, math.nan, 3.0, math.nan])) == 3.0
    assert last_start(requests([0.0, 1.0, 2.0])) is None  # every request arrives on its own
