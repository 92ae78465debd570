"""Workloads a user describes on the command line: random range ratios, session presets shaped
by --isl/--osl/--turns/--context/--think-time, and traces replayed by a fixed pool of users."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from capcliff.analysis.workloads import WorkloadChoice, plan_workloads
from capcliff.cli.main import main
from capcliff.errors import InputError
from capcliff.sim.traffic.sessions import (
    SessionShape,
    generate_sessions,
    parse_session_trace,
    requests_from_session_trace,
    shaped_session_spec,
)
from capcliff.sim.traffic.workload import (
    Arrival,
    Fixed,
    LogNormal,
    Uniform,
    parse_trace,
    ranged_length,
    requests_from_trace,
)


def test_range_ratio_follows_the_bench_tools_rule() -> None:
    # SGLang bench_serving: randint(max(int(1000 * 0.5), 1), 1000 + 1) -> [500, 1000]
    assert ranged_length(1000, 0.5) == Uniform(500, 1000)
    # int(7 * 0.1) = 0 -> the low end is clipped to 1 token
    assert ranged_length(7, 0.1) == Uniform(1, 7)
    assert ranged_length(1000, 1.0) == Fixed(1000)


@given(
    st.integers(min_value=1, max_value=100_000),
    st.floats(min_value=0.001, max_value=1.0),
    st.integers(min_value=0, max_value=2**32 - 1),
)
def test_ranged_lengths_stay_within_r_l_and_l(tokens: int, ratio: float, seed: int) -> None:
    choice = WorkloadChoice(num_requests=50, isl=tokens, osl=(tokens,), random_range_ratio=ratio)
    _, [(_, requests)] = plan_workloads(choice, seed)
    low = max(1, int(tokens * ratio))
    for lengths in (requests.input_tokens, requests.output_tokens):
        assert lengths.min() >= low
        assert lengths.max() <= tokens


@pytest.mark.parametrize("ratio", [0.0, -0.5, 1.5, math.nan, math.inf])
def test_range_ratio_outside_0_1_is_refused(ratio: float) -> None:
    with pytest.raises(InputError, match=r"random_range_ratio: must be in \(0, 1\]"):
        WorkloadChoice(num_requests=10, isl=100, osl=(100,), random_range_ratio=ratio)


def test_session_shape_sets_turns_lengths_context_and_think_time() -> None:
    spec = shaped_session_spec(
        "agentic",
        SessionShape(turns=4, isl=1000, osl=2800, think_time_s=14.0, context_tokens=35_000),
    )
    assert spec.mean_turns == 4
    assert spec.think_time_s == 14.0
    # the preset's lognormal keeps its shape: p99 / mean = 15,000 / 1,500 = 10 -> 10,000
    assert spec.user_input == LogNormal(1000, 10_000)
    assert spec.output == LogNormal(2800, 28_000)  # 3,000 / 300 = 10 x 2,800
    assert spec.start_context == Fixed(35_000)


def test_session_context_is_sent_once_with_the_first_turn() -> None:
    spec = shaped_session_spec(
        "multiturn-chat",
        SessionShape(turns=1, isl=100, osl=50, context_tokens=5_000, range_ratio=1.0),
    )
    requests = generate_sessions(spec, 20, np.random.default_rng(0), clients=4)
    # one turn per session (geometric with mean 1): 200 shared + 5,000 own + 100 new tokens
    assert set(requests.input_tokens.tolist()) == {5_300}
    assert set(requests.output_tokens.tolist()) == {50}


def test_zero_think_time_sends_the_next_turn_at_once() -> None:
    choice = WorkloadChoice(
        num_requests=200,
        preset_name="multiturn-chat",
        clients=8,
        think_time_s=0.0,
        arrival=Arrival.CLIENTS,
    )
    _, [(_, requests)] = plan_workloads(choice, 0)
    assert not requests.think_s.any()


def test_session_label_prints_the_shape() -> None:
    choice = WorkloadChoice(
        num_requests=20, preset_name="multiturn-chat", clients=2, isl=270, osl=(590,), turns=3,
        think_time_s=0.0, random_range_ratio=1.0, arrival=Arrival.CLIENTS,
    )  # fmt: skip
    label, _ = plan_workloads(choice, 0)
    assert label == ("multiturn-chat (3 turns, isl 270, osl 590, shared prefix 200, think 0 s)")


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"isl": 10, "osl": (10,), "turns": 3.0}, "turns: only a session preset"),
        ({"isl": 10, "osl": (10,), "context_tokens": 5}, "context: only a session preset"),
        ({"preset_name": "chat", "isl": 10}, "isl: preset chat has its own lengths"),
        ({"preset_name": "multiturn-chat", "clients": 1, "turns": 0.5}, "turns: must be"),
        ({"isl": 10, "osl": (10,), "think_time_s": 1.0}, "think_time: needs closed-loop"),
        ({"preset_name": "reasoning", "random_range_ratio": 0.5}, "random_range_ratio: applies"),
    ],
)
def test_misplaced_shape_flags_are_refused(kwargs: dict[str, object], message: str) -> None:
    with pytest.raises(InputError, match=message):
        WorkloadChoice(num_requests=10, **kwargs)  # type: ignore[arg-type]


def test_think_time_is_taken_by_closed_loop_users_without_sessions() -> None:
    # 2 users, 6 requests: each user sends 3, waiting 2 s after each answer
    choice = WorkloadChoice(
        num_requests=6, isl=10, osl=(10,), arrival=Arrival.CLIENTS, clients=2, think_time_s=2.0
    )
    requests = plan_workloads(choice, 0)[1][0][1]
    assert requests.closed_loop and requests.client.tolist() == [0, 1] * 3
    assert requests.think_s.tolist() == [2.0] * 6
    # and by a session preset at a rate (no users): the think time between its turns
    sessions = WorkloadChoice(
        num_requests=6, preset_name="multiturn-chat", arrival=Arrival.POISSON, rate_per_s=1.0,
        think_time_s=3.0,
    )  # fmt: skip
    assert plan_workloads(sessions, 0)[0].endswith("think 3 s)")


def test_trace_clients_pool_recycles_users() -> None:
    rows = parse_trace(json.dumps({"input_tokens": 10, "output_tokens": 5}) for _ in range(7))
    requests = requests_from_trace(rows, clients=3, think_time_s=2.0)
    assert requests.closed_loop
    assert requests.client.tolist() == [0, 1, 2, 0, 1, 2, 0]
    assert requests.arrival_s[:3].tolist() == [0.0, 0.0, 0.0]
    assert np.isnan(requests.arrival_s[3:]).all()
    assert requests.think_s.tolist() == [2.0] * 7


def _session_rows() -> list[str]:
    rows = []
    for s in range(4):
        for t in range(2):
            row = {"session_id": f"s{s}", "turn": t, "input_tokens": 100, "output_tokens": 10}
            row |= {"arrival_s": 50.0 * s} if t == 0 else {"think_s": 3.0}
            rows.append(json.dumps(row))
    return rows


def test_session_trace_pool_gives_each_user_the_next_session() -> None:
    rows = parse_session_trace(_session_rows())
    requests = requests_from_session_trace(rows, clients=2)
    # sessions s0..s3 -> users 0, 1, 0, 1; the first two start at 0, the others wait for a user
    assert requests.client.tolist() == [0, 0, 1, 1, 0, 0, 1, 1]
    assert requests.arrival_s[[0, 2]].tolist() == [0.0, 0.0]
    assert np.isnan(requests.arrival_s[[1, 3, 4, 5, 6, 7]]).all()
    # turns keep the trace's think time; a user's next session follows at once
    assert requests.think_s.tolist() == [0.0, 3.0, 0.0, 3.0, 0.0, 3.0, 0.0, 3.0]


def test_session_trace_think_time_flag_replaces_the_trace() -> None:
    rows = parse_session_trace(_session_rows())
    requests = requests_from_session_trace(rows, think_time_s=0.5)
    assert requests.think_s.tolist() == [0.0, 0.5] * 4


def _code_err(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    code = main(args)
    return code, capsys.readouterr().err


@pytest.mark.parametrize("command", ["sweep", "plan"])
@pytest.mark.parametrize(
    ("flags", "start"),
    [
        (["--isl", "100", "--osl", "100", "--random-range-ratio", "0"], "random_range_ratio:"),
        (["--workload", "multiturn-chat", "--clients", "4", "--think-time", "-1"], "think_time:"),
        (["--workload", "agentic", "--clients", "4", "--turns", "0"], "turns:"),
        (["--workload", "agentic", "--clients", "4", "--context", "-5"], "context:"),
    ],
)
def test_bad_shape_flags_are_one_line_exit_2(
    command: str, flags: list[str], start: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code, err = _code_err([command, "llama-3.1-8b", *flags], capsys)
    assert code == 2
    assert err.startswith(f"error: {start}")
    assert err.count("\n") == 1


def test_spec_keys_shape_a_session_preset() -> None:
    from capcliff.check.spec import CheckWorkload

    w = CheckWorkload.model_validate(
        {"preset": "multiturn-chat", "clients": 8, "isl": 270, "osl": 590, "turns": 3,
         "think_time": 0, "random_range_ratio": 0.5}
    )  # fmt: skip
    assert (w.turns, w.think_time, w.random_range_ratio) == (3, 0, 0.5)


@pytest.mark.parametrize(
    ("keys", "message"),
    [
        ({"isl": 10, "osl": 10, "random_range_ratio": 2.0}, "random_range_ratio: must be"),
        ({"isl": 10, "osl": 10, "turns": 2}, "turns: only a session preset"),
        ({"preset": "agentic", "clients": 2, "think_time": -1.0}, "think_time: must be"),
    ],
)
def test_bad_spec_shape_keys_are_refused(keys: dict[str, object], message: str) -> None:
    from pydantic import ValidationError

    from capcliff.check.spec import CheckWorkload

    with pytest.raises(ValidationError, match=message):
        CheckWorkload.model_validate(keys)
