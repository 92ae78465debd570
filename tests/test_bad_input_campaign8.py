"""Bad input that an eighth campaign (benchmarks/fuzz_cases8.py) and issue 23's leftovers found:
one test per class of finding, each case named for it.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from test_bad_input import _one_line_error
from test_bad_input_campaign7 import LLAMA_REPO, _run

from capcliff.analysis.max_model_len import context_length
from capcliff.cli import main
from capcliff.errors import InputError
from capcliff.sim.traffic.workload import Requests

SESSIONS = ["sweep", "llama-3.1-8b", "--workload", "multiturn-chat", "--clients", "8",
            "--num-requests", "40", "--concurrency", "4"]  # fmt: skip
UNUSED_TIERS = ["--prefix-caching", "off", "--offload", "cpu:64GiB"]


def _requests(*lengths: tuple[int, int]) -> Requests:
    import numpy as np

    ins = np.array([i for i, _ in lengths], dtype=np.int64)
    outs = np.array([o for _, o in lengths], dtype=np.int64)
    return Requests(ins, outs, outs, np.zeros(len(lengths)))


# A run that refuses its input part-way printed the deployment's warnings (offload tiers with
# prefix caching off) before the error: bad input is the one error line alone.


def test_a_run_that_refuses_its_input_prints_no_warning_first(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import capcliff.analysis.sweep.report as report

    def refuse(*_: object, **__: object) -> None:
        raise InputError("workload: refused part-way")

    monkeypatch.setattr(report, "build_sweep_report", refuse)
    line = _one_line_error([*SESSIONS, *UNUSED_TIERS], capsys)
    assert line == "error: workload: refused part-way"


def test_the_warning_still_comes_when_the_run_answers(capsys: pytest.CaptureFixture[str]) -> None:
    assert main([*SESSIONS, *UNUSED_TIERS, "--kv-cache-memory", "5GiB", "--format", "json"]) == 0
    err = capsys.readouterr().err
    assert "warning: offload: the tiers hold the prefix cache's evicted blocks" in err


def test_a_disaggregated_sweep_says_the_deployments_warnings(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # it dropped them: the tiers were accepted without a word
    args = ["sweep", "llama-3.1-8b", "--isl", "200", "--osl", "20", "--num-requests", "20",
            "--concurrency", "2", "--disagg", "1p:tp1,1d:tp1", *UNUSED_TIERS]  # fmt: skip
    assert main(args) == 0
    assert "warning: offload: the tiers hold" in capsys.readouterr().err


# vLLM V0 on a session preset was always refused ("max_num_batched_tokens (25600) must be >=
# the longest request (32766 tokens) when chunked prefill is off", two settings the user never
# gave): max_model_len came from the first sample, and the online stopping rule draws larger
# ones whose sessions grow further, up to the preset's 32,768-token context limit.


def test_max_model_len_covers_what_a_larger_sample_can_hold() -> None:
    # the sample's longest is 1,000 + 100 tokens; sessions may reach 32,768
    sample = _requests((1_000, 100))
    assert context_length(None, sample, model_context=131_072, allow_long=False) == 2_048
    got = context_length(None, sample, model_context=131_072, allow_long=False, bound=32_768)
    assert got == 32_768


def test_the_bound_stops_at_the_models_context() -> None:
    sample = _requests((1_000, 100))
    assert context_length(None, sample, model_context=8_192, allow_long=False, bound=32_768) == (
        8_192
    )


def test_a_given_max_model_len_shorter_than_the_sessions_grow_keeps_them_within_it(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # refused here before (multiturn-chat's window is 32,768); the sessions are now kept within
    # the 26,000 tokens served, said in a warning (`workloads.sessions_within`), and the sweep
    # runs at the max_model_len given
    args = [*SESSIONS, "--max-model-len", "26000", "--format", "json"]
    assert main(args) == 0
    captured = capsys.readouterr()
    assert "sessions kept within the 26,000-token context served" in captured.err
    assert '"max_model_len": 26000' in captured.out


def test_vllm_v0_sizes_a_session_preset(capsys: pytest.CaptureFixture[str]) -> None:
    # V0 without chunked prefill (its default at <= 32K context) budgets max_model_len tokens
    # a step: 32,768, enough for the longest turn a session can send
    assert main([*SESSIONS, "--engine", "vllm-v0", "--format", "json"]) == 0
    assert '"max_model_len": 32768' in capsys.readouterr().out


# calibrate: a vLLM run paced at a finite request_rate under a max_concurrency (each request
# waits for its paced time, then for a free slot) was fitted as the cap's clients sending at
# will, right only where the rate outruns them, which the file does not say.


@pytest.mark.parametrize("rate", [2.0, 1e6], ids=["slow", "far-past-the-cap"])
def test_a_paced_run_under_a_cap_is_refused(
    rate: float, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    lines = [_run(8, 500.0, 14.0, request_rate=rate), _run(32, 1200.0, 24.0)]
    path = tmp_path / "r.json"
    path.write_text("\n".join(lines))
    line = _one_line_error(["calibrate", str(path), "--model", "llama-3.1-8b"], capsys)
    assert line.startswith(f"error: r.json:1: request_rate: {rate:g} requests/s under ")
    assert 'give runs of request_rate "inf"' in line


def test_clients_sending_at_will_under_a_cap_are_still_read(tmp_path: Path) -> None:
    from capcliff.calibrate.benchmarks import DeploymentFilter, read_benchmark_file

    path = tmp_path / "r.json"
    path.write_text("\n".join([_run(8, 500.0, 14.0), _run(32, 1200.0, 24.0)]))
    points = read_benchmark_file(path, DeploymentFilter(hf_repo=LLAMA_REPO))
    assert [p.concurrency for p in points] == [8, 32]


# A session preset took `--clients 4 --rate 1` (the rate ran, the users were dropped) and an
# --arrival that contradicts its load (`--arrival poisson --clients 4` ran the users).

SESSION_SWEEP = ["sweep", "llama-3.1-8b", "--workload", "multiturn-chat", "--num-requests", "20",
                 "--concurrency", "4"]  # fmt: skip


@pytest.mark.parametrize(
    ("extra", "start"),
    [(["--clients", "4", "--rate", "1"], "error: rate: a session preset runs --clients users"),
     (["--clients", "4", "--arrival", "batch"], "error: arrival: a session preset's users"),
     (["--clients", "4", "--arrival", "poisson"], "error: clients: only a clients arrival"),
     (["--rate", "1", "--arrival", "clients"], "error: rate: only a poisson arrival")],
    ids=["clients-and-rate", "batch-with-clients", "poisson-with-clients", "clients-with-rate"],
)  # fmt: skip
def test_a_session_load_named_twice_is_refused(
    extra: list[str], start: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert _one_line_error([*SESSION_SWEEP, *extra], capsys).startswith(start)


# A session whose first turn did not fit the context (a long --context or --isl) was still
# numbered: user k of N, starting that empty session, sent nothing, and its later sessions
# waited for it forever ("replica idle with requests unfinished", exit 4).


def test_every_user_starts_when_some_sessions_send_nothing() -> None:
    import numpy as np

    from capcliff.sim.traffic.sessions import (
        SessionShape,
        SessionStream,
        shaped_session_spec,
    )

    # 28,000 tokens of own context + 200 prefix + a turn + 4,096 max_tokens: a first turn fits
    # the 32,768-token limit only when its new input is under 472 tokens, so some sessions
    # send nothing
    spec = shaped_session_spec("multiturn-chat", SessionShape(context_tokens=28_000))
    requests = SessionStream(spec, np.random.default_rng(0), clients=4).take(40)
    starts = requests.client[requests.arrival_s == 0.0]
    assert sorted(starts.tolist()) == [0, 1, 2, 3]  # one first request per user, each at 0


def test_a_long_context_session_sweep_answers(capsys: pytest.CaptureFixture[str]) -> None:
    assert main([*SESSION_SWEEP, "--clients", "4", "--context", "28000", "--format", "json"]) == 0


def test_a_turn_longer_than_the_room_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    # multiturn-chat: 32,768 - 200 prefix - 4,096 max_tokens = 28,472 tokens of room
    line = _one_line_error([*SESSION_SWEEP, "--clients", "4", "--isl", "40000"], capsys)
    assert line.endswith("32,768-token context (at most 28,471)")


# calibrate: `random_input_len: 0` (or an output length of 0) was read as absent and the length
# taken from the token totals.


@pytest.mark.parametrize("key", ["random_input_len", "random_output_len"])
def test_a_zero_length_asked_is_refused(
    key: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "r.json"
    path.write_text("\n".join([_run(8, 500.0, 14.0, **{key: 0}), _run(32, 1200.0, 24.0)]))
    line = _one_line_error(["calibrate", str(path), "--model", "llama-3.1-8b"], capsys)
    assert line.startswith(f"error: r.json:1: {key}: must be a number in 1 to ")


# A session trace's prefix_tokens without a prefix_id was dropped (the prompt lost those
# tokens), and a later turn naming another prefix than its session's first was ignored.


def _trace(tmp_path: Path, rows: list[dict[str, object]]) -> str:
    import json

    path = tmp_path / "t.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    return str(path)


TRACE_ROWS: list[dict[str, object]] = [
    {"session_id": "a", "turn": 0, "input_tokens": 50, "output_tokens": 20, "arrival_s": 0.0,
     "prefix_id": "sys", "prefix_tokens": 16},
    {"session_id": "a", "turn": 1, "input_tokens": 30, "output_tokens": 20, "think_s": 1.0},
]  # fmt: skip


def test_prefix_tokens_without_a_prefix_id_are_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rows = [{**TRACE_ROWS[0], "prefix_id": None}, TRACE_ROWS[1]]
    line = _one_line_error(["sweep", "llama-3.1-8b", "--workload", _trace(tmp_path, rows)], capsys)
    assert line.startswith(
        "error: trace line 1: prefix_tokens: a shared prefix needs its prefix_id"
    )


@pytest.mark.parametrize(
    "later",
    [{"prefix_id": "other", "prefix_tokens": 16}, {"prefix_id": "sys", "prefix_tokens": 8}],
    ids=["another-id", "another-length"],
)  # fmt: skip
def test_a_later_turn_naming_another_prefix_is_refused(
    later: dict[str, object], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rows = [TRACE_ROWS[0], {**TRACE_ROWS[1], **later}]
    line = _one_line_error(["sweep", "llama-3.1-8b", "--workload", _trace(tmp_path, rows)], capsys)
    assert line.startswith("error: trace: session 'a' turn 1: prefix_id ")


def test_a_later_turn_repeating_its_sessions_prefix_is_read() -> None:
    import json

    from capcliff.sim.traffic.sessions import parse_session_trace

    rows = [TRACE_ROWS[0], {**TRACE_ROWS[1], "prefix_id": "sys", "prefix_tokens": 16}]
    assert len(parse_session_trace([json.dumps(r) for r in rows])) == 2
