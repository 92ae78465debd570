"""The stopping rule extends one sample instead of restarting: session draws are
prefix-consistent (`SessionStream`), a paused run is an uninterrupted one (`PausedRun`,
`ReplicaSim.run_until`), and a checkpoint's estimate is the one a from-scratch evaluation of the
same finished requests gives (`settle_paused`, `capacity._extended_point`)."""

from __future__ import annotations

import pickle
from dataclasses import replace

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from capcliff.analysis.evaluate.capacity import CapPoint, Resumable
from capcliff.analysis.evaluate.steady_state import (
    SteadyState,
    checkpoint_sizes,
    settle_paused,
    steady_state,
)
from capcliff.sim import core
from capcliff.sim.config import KVCapacity, PreemptionMode, SimConfig
from capcliff.sim.loop.replica import ReplicaSim
from capcliff.sim.result import SimResult
from capcliff.sim.simulate import Checkpoint, PausedRun, horizon, make_policy, simulate
from capcliff.sim.traffic.sessions import SESSION_PRESETS, SessionSpec, generate_sessions
from capcliff.sim.traffic.workload import LogNormal, Requests
from tests.simtools import POLICIES, PREEMPTING_POLICIES, pressure_case, random_case, toy_model
from tests.test_sim_core import _same

COMPILED = core.load_compiled()


# --- prefix-consistent session draws ---------------------------------------------------------

SPECS = {
    "chat": SESSION_PRESETS["multiturn-chat"],
    "chat-no-think": replace(SESSION_PRESETS["multiturn-chat"], think_time_s=0.0),
    "agentic": SESSION_PRESETS["agentic"],  # fan-out waves: a cut may fall inside one
}


def _per_client(r: Requests) -> dict[int, np.ndarray]:
    """Each client's requests as rows (prompt, output, arrival, think, joins, node), in the
    order it sends them."""
    rows = np.column_stack(
        [r.input_tokens, r.output_tokens, r.arrival_s, r.think_s, r.joins_previous, r.content_node]
    )
    return {int(c): rows[r.client == c] for c in np.unique(r.client)}


@settings(max_examples=60, deadline=None)
@given(
    name=st.sampled_from(sorted(SPECS)),
    seed=st.integers(0, 2**16),
    n=st.integers(1, 120),
    more=st.integers(1, 200),
    clients=st.integers(1, 12),
    rate=st.one_of(st.none(), st.floats(0.1, 50.0)),
)
def test_a_larger_session_sample_begins_with_the_smaller_one(
    name: str, seed: int, n: int, more: int, clients: int, rate: float | None
) -> None:
    users = None if rate else clients
    small = generate_sessions(SPECS[name], n, np.random.default_rng(seed), clients=users,
                              rate_per_s=rate)  # fmt: skip
    large = generate_sessions(SPECS[name], n + more, np.random.default_rng(seed), clients=users,
                              rate_per_s=rate)  # fmt: skip
    if rate:  # no reordering: the first n arrivals (NaN: a later turn) and lengths are the same
        for field in ("arrival_s", "input_tokens", "output_tokens", "think_s", "content_node"):
            np.testing.assert_array_equal(getattr(small, field), getattr(large, field)[:n])
    else:  # in user order: each user's requests begin with the smaller sample's
        big = _per_client(large)
        for client, rows in _per_client(small).items():
            np.testing.assert_array_equal(rows, big[client][: len(rows)])
    nodes = len(small.content_parent)
    np.testing.assert_array_equal(small.content_parent, large.content_parent[:nodes])
    np.testing.assert_array_equal(small.content_fork_tokens, large.content_fork_tokens[:nodes])


def test_users_without_think_time_share_one_draw() -> None:
    # With no think time the draws never depend on the users: 3 and 7 users run the same
    # sessions, each session whole by one user (sessions k, k + N, ... by user k).
    spec = SPECS["chat-no-think"]
    three = generate_sessions(spec, 200, np.random.default_rng(5), clients=3)
    seven = generate_sessions(spec, 200, np.random.default_rng(5), clients=7)
    key = np.lexsort((three.content_node,))
    key7 = np.lexsort((seven.content_node,))
    np.testing.assert_array_equal(three.input_tokens[key], seven.input_tokens[key7])
    np.testing.assert_array_equal(three.output_tokens[key], seven.output_tokens[key7])


# --- a paused run is an uninterrupted one ------------------------------------------------------


def _cases() -> list[tuple[Requests, KVCapacity, SimConfig]]:
    cases = []
    for seed in range(2):
        for policy in POLICIES:
            for arrival in ("batch", "poisson", "clients"):
                cases.append(random_case(seed, policy, PreemptionMode.RECOMPUTE, arrival))
        for policy in PREEMPTING_POLICIES:
            requests, capacity, config, _ = pressure_case(seed, policy, PreemptionMode.SWAP)
            cases.append((requests, capacity, config))
    return cases


@pytest.mark.parametrize("stops", [(1,), (1, 2, 3), (3, 7, 11, 12)], ids=["1", "1-2-3", "3-12"])
def test_pausing_a_replica_changes_no_step(stops: tuple[int, ...]) -> None:
    for requests, capacity, config in _cases():
        rule = make_policy(config, requests)
        whole = ReplicaSim(requests, toy_model(), capacity, config, rule).run()
        paused = ReplicaSim(requests, toy_model(), capacity, config, rule)
        for k in stops:
            paused.run_until(k)
            assert paused.done >= min(k, len(requests))
        paused.run_until(len(requests))
        assert _same(whole, paused.result()), (config.policy, len(requests))


def _session_case(
    n: int, *, overhead_s: float = 0.0, users: int = 12
) -> tuple[Requests, KVCapacity, SimConfig]:
    spec = SessionSpec(
        mean_turns=3.0,
        user_input=LogNormal(40, 300),
        output=LogNormal(30, 200),
        prefix_tokens=32,
        max_context_tokens=4_096,
        max_output_tokens=256,
    )
    requests = generate_sessions(spec, n, np.random.default_rng(11), clients=users)
    capacity = KVCapacity(
        blocks=400, block_size=16, kv_bytes_per_token=1000, host_link_bytes_per_s=1e9,
        host_kv_tokens=0,
    )  # fmt: skip
    config = SimConfig(
        max_num_seqs=8, max_num_batched_tokens=512, prefix_caching=True,
        request_overhead_s=overhead_s,
    )  # fmt: skip
    return requests, capacity, config


@pytest.mark.parametrize("overhead_s", [0.0, 0.002], ids=["engine", "with-overhead"])
def test_the_last_checkpoint_is_the_whole_simulation(overhead_s: float) -> None:
    requests, capacity, config = _session_case(300, overhead_s=overhead_s)
    run = PausedRun(requests, toy_model(), capacity, config)
    for k in (50, 120, 121, 260):
        point = run.advance(k)
        assert len(point.finished) >= k and not point.complete
    last = run.advance(len(requests))
    assert last.complete
    assert _same(last.result, simulate(requests, toy_model(), capacity, config))


def _from_scratch(whole: SimResult, now_s: float) -> tuple[np.ndarray, SimResult, float]:
    """What a run stopped at `now_s` shows, read off the whole run: the requests finished by
    then, and the horizon (the first token of the earliest one then still running)."""
    first_token = whole.arrival_s + whole.ttft_s
    done = np.flatnonzero(whole.finish_s <= now_s)
    running = (first_token <= now_s) & (whole.finish_s > now_s)
    edge = min(now_s, float(first_token[running].min())) if running.any() else now_s
    per_request = ("ttft_s", "tpot_s", "e2e_s", "preemptions", "recomputed_tokens", "replica",
                   "output_tokens", "arrival_s", "finish_s")  # fmt: skip
    part = replace(whole, **{f: getattr(whole, f)[done] for f in per_request})
    return done, part, edge


def _measure(point: Checkpoint) -> SteadyState:
    return steady_state(point.result, open_loop=False, until_s=point.horizon_s)


def test_a_checkpoint_measures_what_a_fresh_evaluation_of_its_finished_requests_gives() -> None:
    requests, capacity, config = _session_case(900)
    whole = simulate(requests, toy_model(), capacity, config)
    run = PausedRun(requests, toy_model(), capacity, config)
    for k in checkpoint_sizes(300, 900)[:-1]:
        point = run.advance(k)
        done, part, edge = _from_scratch(whole, point.now_s)
        np.testing.assert_array_equal(point.finished, done)
        assert point.horizon_s == edge
        fresh = steady_state(part, open_loop=False, until_s=edge)
        mine = _measure(point)
        assert mine == fresh and mine.settled == fresh.settled
        assert mine.measured >= 100  # a real window, not the whole-run fallback


def test_the_horizon_is_the_first_token_of_the_oldest_running_request() -> None:
    # three requests: finished; running since t = 2; running since t = 5; one waiting (no token)
    first = np.array([1.0, 2.0, 5.0, np.nan])
    finish = np.array([3.0, np.nan, np.nan, np.nan])
    assert horizon(first, finish, 6.0) == 2.0
    assert horizon(first[:1], finish[:1], 6.0) == 6.0  # nothing running: now


# --- the rule over checkpoints ----------------------------------------------------------------


def test_checkpoints_grow_a_quarter_at_a_time_to_the_whole_sample() -> None:
    # 100, ceil(125.0) = 125, ceil(156.25) = 157, ceil(196.25) = 197, then the whole 200
    assert checkpoint_sizes(100, 200) == [100, 125, 157, 197, 200]
    assert checkpoint_sizes(300, 300) == [300]
    assert checkpoint_sizes(3, 5) == [3, 4, 5]  # at least one request more each time


def _state(settled: bool) -> SteadyState:
    hw = 0.01 if settled else 0.2
    return SteadyState(
        requests=1000, measured=500, window_s=(0.0, 1.0), throughput_rps=1.0, output_tok_s=1.0,
        arrival_rps=None, ttft_p99_s=1.0, tpot_p99_s=1.0, tpot_mean_s=1.0, e2e_mean_s=1.0,
        rps_half_width=hw, tpot_half_width=hw, queue_growing=False,
    )  # fmt: skip


def _fake_point(k: int, complete: bool = False) -> Checkpoint:
    requests, capacity, config = _session_case(20)
    result = simulate(requests, toy_model(), capacity, config)
    return Checkpoint(result, np.arange(k, dtype=np.int64), 1.0, 1.0, complete)


def test_the_rule_stops_at_the_first_checkpoint_that_settles() -> None:
    asked: list[int] = []

    def advance(k: int) -> Checkpoint:
        asked.append(k)
        return _fake_point(k)

    point, state = settle_paused(advance, [10, 13, 17, 20], lambda p: _state(len(p.finished) >= 13))
    assert asked == [10, 13] and len(point.finished) == 13 and state.settled


def test_the_rule_runs_to_the_whole_sample_when_nothing_settles() -> None:
    asked: list[int] = []

    def advance(k: int) -> Checkpoint:
        asked.append(k)
        return _fake_point(k, complete=k == 20)

    point, state = settle_paused(advance, [10, 13, 17, 20], lambda p: _state(False))
    assert asked == [10, 13, 17, 20] and point.complete and not state.settled


def test_a_run_that_completes_early_stops_there() -> None:
    asked: list[int] = []

    def advance(k: int) -> Checkpoint:
        asked.append(k)
        return _fake_point(k, complete=True)

    settle_paused(advance, [10, 13, 17, 20], lambda p: _state(False))
    assert asked == [10]


# --- the paused run handed on ------------------------------------------------------------------


def test_a_paused_run_is_handed_on_once_and_only_for_its_sample() -> None:
    requests, capacity, config = _session_case(40)
    run = PausedRun(requests, toy_model(), capacity, config)
    assert Resumable(run, 40).take(41) is None  # another sample: simulate afresh
    held = Resumable(run, 40)
    assert held.take(40) is run and held.take(40) is None


def test_a_pickled_cap_point_leaves_its_paused_run_behind() -> None:
    requests, capacity, config = _session_case(40)
    run = PausedRun(requests, toy_model(), capacity, config)
    point = run.advance(10)
    cap = CapPoint(8, _measure(point), point.result, 10, Resumable(run, 40))
    back = pickle.loads(pickle.dumps(cap))
    assert back.paused is None and back.cap == 8 and back.requests == 10


@pytest.mark.skipif(COMPILED is None, reason="no compiled core built from the current source")
def test_the_compiled_loop_pauses_as_the_pure_one() -> None:
    assert COMPILED is not None
    requests, capacity, config = _session_case(300)
    config = replace(config, prefix_caching=True)
    rule = make_policy(config, requests)
    pure = ReplicaSim(requests, toy_model(), capacity, config, rule)
    fast = COMPILED.ReplicaSim(requests, toy_model(), capacity, config, rule)
    for k in (40, 41, 170, 300):
        pure.run_until(k)
        fast.run_until(k)
        assert _same(pure.result(), fast.result()), k
