"""The sweep's stopping rule extends one run instead of restarting at each doubling
(`sweep.report._grown`, `_extended`, `settled_part`): the part of a paused run it reads is the
whole run's reading over that part's window, a point that never settles is the whole run of the
largest sample (the restart loop's last doubling), and several replicas still restart."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

import numpy as np
import pytest

import capcliff.analysis.sweep.report as report
from capcliff.analysis.disagg.online import aggregated_steady
from capcliff.analysis.evaluate.solver import config_at, sweep
from capcliff.analysis.evaluate.steady_state import (
    checkpoint_sizes,
    settled_part,
    steady_state,
    timed,
)
from capcliff.analysis.sweep.report import SweepPlan, _extended, _grown
from capcliff.sim import core
from capcliff.sim.config import KVCapacity, SimConfig
from capcliff.sim.loop.replica import ReplicaSim
from capcliff.sim.result import SimResult
from capcliff.sim.simulate import PausedRun, simulate
from capcliff.sim.traffic.sessions import SessionSpec, generate_sessions
from capcliff.sim.traffic.workload import Arrival, LogNormal, Requests, WorkloadSpec
from capcliff.sim.traffic.workload import generate_requests as draw
from tests.simtools import toy_model
from tests.test_sim_core import _same

COMPILED = core.load_compiled()
CAPACITY = KVCapacity(
    blocks=400, block_size=16, kv_bytes_per_token=1000, host_link_bytes_per_s=1e9,
    host_kv_tokens=0,
)  # fmt: skip
CONFIG = SimConfig(max_num_seqs=8, max_num_batched_tokens=512)


def _poisson(n: int, rate: float = 50.0, seed: int = 3) -> Requests:
    spec = WorkloadSpec(
        num_requests=n, input=LogNormal(60, 300), output=LogNormal(30, 150),
        arrival=Arrival.POISSON, rate_per_s=rate, max_input_tokens=1024, max_output_tokens=256,
    )  # fmt: skip
    return draw(spec, np.random.default_rng(seed))


def _users(n: int, seed: int = 3) -> Requests:
    spec = WorkloadSpec(
        num_requests=n, input=LogNormal(60, 300), output=LogNormal(30, 150),
        arrival=Arrival.CLIENTS, clients=12, think_time_s=0.002, max_input_tokens=1024,
        max_output_tokens=256,
    )  # fmt: skip
    return draw(spec, np.random.default_rng(seed))


def _sessions(n: int, seed: int = 11) -> Requests:
    spec = SessionSpec(
        mean_turns=3.0, user_input=LogNormal(40, 300), output=LogNormal(30, 200),
        prefix_tokens=32, max_context_tokens=4_096, max_output_tokens=256,
    )  # fmt: skip
    return generate_sessions(spec, n, np.random.default_rng(seed), clients=12)


SAMPLES: dict[str, Callable[[int], Requests]] = {
    "poisson": _poisson, "users": _users, "sessions": _sessions,
}  # fmt: skip


def _config(sample: Requests) -> SimConfig:
    return replace(CONFIG, prefix_caching=sample.has_content)


def _expected_part(whole: SimResult, now_s: float, open_loop: bool) -> np.ndarray:
    """Read off the whole run, apart from `settled_part`: the requests that started before the
    first one unfinished at `now_s` started (open loop: arrived; closed loop: first token)."""
    start = whole.arrival_s if open_loop else whole.arrival_s + whole.ttft_s
    unfinished = whole.finish_s > now_s
    if not open_loop:  # a closed-loop request not yet started has no start to bound the part
        unfinished &= start <= now_s
    edge = float(start[unfinished].min()) if unfinished.any() else np.inf
    if not open_loop:
        edge = min(edge, now_s)
    return np.flatnonzero(start < edge)


@pytest.mark.parametrize("kind", sorted(SAMPLES))
def test_a_settled_part_is_the_whole_runs_reading_over_its_window(kind: str) -> None:
    sample = SAMPLES[kind](900)
    open_loop = not sample.closed_loop
    config = _config(sample)
    whole = simulate(sample, toy_model(), CAPACITY, config)
    run = PausedRun(sample, toy_model(), CAPACITY, config)
    for k in checkpoint_sizes(200, 900)[:-1]:
        point = run.advance(k)
        part = settled_part(sample, point, open_loop=open_loop)
        np.testing.assert_array_equal(part, _expected_part(whole, point.now_s, open_loop))
        mine = run.part(part)
        for field in ("arrival_s", "ttft_s", "tpot_s", "finish_s", "output_tokens"):
            np.testing.assert_array_equal(getattr(mine, field), getattr(whole, field)[part])
        # the estimate counts what the whole run did inside the part's window: no drain
        state = steady_state(mine, open_loop=open_loop)
        lo, hi = state.window_s
        assert state.measured >= 100, kind  # a real window, not the whole-run fallback
        ended = int(((whole.finish_s >= lo) & (whole.finish_s <= hi)).sum())
        assert state.throughput_rps == pytest.approx(ended / (hi - lo), rel=1e-12)
        if open_loop:
            came = int(((whole.arrival_s >= lo) & (whole.arrival_s <= hi)).sum())
            assert state.arrival_rps == pytest.approx(came / (hi - lo), rel=1e-12)


@pytest.mark.parametrize("kind", sorted(SAMPLES))
def test_a_point_that_never_settles_is_the_whole_run_of_the_largest_sample(
    kind: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(report, "needs_more", lambda result, *, open_loop: True)
    sample = SAMPLES[kind](400)
    config = _config(sample)
    run = PausedRun(sample, toy_model(), CAPACITY, config)
    got = _extended(run, sample, 100, open_loop=not sample.closed_loop)
    assert _same(got, simulate(sample, toy_model(), CAPACITY, config))


def test_the_rule_stops_at_the_first_checkpoint_that_settles(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    asked: list[int] = []

    def third_settles(result: SimResult, *, open_loop: bool) -> bool:
        asked.append(len(result.finish_s))
        return len(asked) < 3

    monkeypatch.setattr(report, "needs_more", third_settles)
    sample = _poisson(900)
    run = PausedRun(sample, toy_model(), CAPACITY, CONFIG)
    got = _extended(run, sample, 200, open_loop=True)
    # the third checkpoint asked, 200 x 1.25^2 = 313 finished, read as its settled part
    again = PausedRun(sample, toy_model(), CAPACITY, CONFIG)
    point = again.advance(checkpoint_sizes(200, 900)[2])
    assert checkpoint_sizes(200, 900)[:3] == [200, 250, 313]
    assert _same(got, again.part(settled_part(sample, point, open_loop=True)))
    assert len(asked) == 3 and len(got.finish_s) == asked[-1] < 313


def _plan(make: Callable[[int], Requests]) -> SweepPlan:
    return SweepPlan(
        layouts=(), workloads=(("x", make(100)),), concurrencies=(4, 8), workload_label="x",
        seed=3, redraw=lambda n: (("x", make(n)),),
    )  # fmt: skip


@pytest.mark.parametrize("dp", [1, 2])
def test_unsettled_points_end_on_the_restart_loops_last_doubling(
    dp: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    # one replica extends the 8 x sample, several restart at 2x, 4x, 8x: either way a point
    # that never settles is the run of 8 x the first sample, drawn as the restart loop drew it
    monkeypatch.setattr(report, "needs_more", lambda result, *, open_loop: True)
    sizes: list[int] = []

    def counted(n: int) -> Requests:
        sizes.append(n)
        return _poisson(n)

    plan = _plan(counted)
    first = sweep(plan.workloads[0][1], toy_model(), CAPACITY, CONFIG, (4, 8), dp=dp)
    sizes.clear()
    grown = _grown(first, plan.workloads[0][1], "x", plan, (toy_model(), CAPACITY, CONFIG, dp))
    assert sizes == ([800] if dp == 1 else [200, 400, 800])
    for point in grown:
        whole = simulate(_poisson(800), toy_model(), CAPACITY,
                         config_at(CONFIG, point.concurrency, dp), dp=dp)  # fmt: skip
        assert _same(point.result, whole)


def test_settled_points_are_left_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(report, "needs_more", lambda result, *, open_loop: False)
    plan = _plan(_poisson)
    first = sweep(plan.workloads[0][1], toy_model(), CAPACITY, CONFIG, (4, 8))
    grown = _grown(first, plan.workloads[0][1], "x", plan, (toy_model(), CAPACITY, CONFIG, 1))
    assert grown == first


@pytest.mark.skipif(COMPILED is None, reason="no compiled core built from the current source")
def test_the_compiled_loop_extends_as_the_pure_one(monkeypatch: pytest.MonkeyPatch) -> None:
    assert COMPILED is not None
    sample = _sessions(600)
    config = _config(sample)
    got = []
    for cls in (ReplicaSim, COMPILED.ReplicaSim):
        monkeypatch.setattr("capcliff.sim.simulate.replica_class", lambda cls=cls: cls)
        run = PausedRun(sample, toy_model(), CAPACITY, config)
        got.append(_extended(run, sample, 150, open_loop=False))
    assert _same(got[0], got[1])


# --- the aggregated layout a disaggregated split is compared with (`disagg.online`) -----------


class _Sample:
    """`OnlineSample`'s sizes and draws over `_poisson` (first x 2^3 at most)."""

    def __init__(self, first: int, rate: float) -> None:
        self.size, self.rate_rps = first, rate

    def first(self, running: int) -> int:
        return self.size

    def most(self, running: int) -> int:
        return self.size << 3

    def requests(self, n: int) -> Requests:
        return _poisson(n, self.rate_rps)


def _aggregated(sample: _Sample, *, extend: bool) -> tuple[SimResult, object]:
    def run(r: Requests) -> SimResult:
        return simulate(r, toy_model(), CAPACITY, CONFIG)

    def paused(r: Requests) -> PausedRun:
        return PausedRun(r, toy_model(), CAPACITY, CONFIG)

    return aggregated_steady(run, sample, 8, paused=paused if extend else None)  # type: ignore[arg-type]


def test_an_aggregated_layout_that_never_settles_reads_as_before() -> None:
    # 15 x 8 = 120 requests: a window of 96 arrivals is under MIN_MEASURED, so no size settles
    # and both rules end on the whole run of the largest sample
    sample = _Sample(15, 50.0)
    before, after = _aggregated(sample, extend=False), _aggregated(sample, extend=True)
    assert not before[1].settled  # type: ignore[attr-defined]
    assert _same(after[0], before[0]) and after[1] == before[1]


def test_an_aggregated_layout_that_settles_early_reads_a_part_of_the_largest_run() -> None:
    sample = _Sample(400, 40.0)  # settles at a checkpoint short of the 3,200 requests
    result, state = _aggregated(sample, extend=True)
    whole = simulate(sample.requests(3200), toy_model(), CAPACITY, CONFIG)
    assert state.settled and len(result.finish_s) < 3200  # type: ignore[attr-defined]
    # the part is the run's first requests by arrival, each as the whole run served it
    part = np.flatnonzero(np.isin(whole.arrival_s, result.arrival_s))
    np.testing.assert_array_equal(part, np.arange(len(result.finish_s)))
    np.testing.assert_array_equal(result.finish_s, whole.finish_s[part])
    assert state == steady_state(result, open_loop=True)


def test_only_arrivals_known_up_front_are_read_part_by_part() -> None:
    poisson = _poisson(20)
    assert timed(poisson, open_loop=True)
    later_turn = replace(poisson, arrival_s=np.where(np.arange(20) == 5, np.nan, poisson.arrival_s))
    assert not timed(later_turn, open_loop=True)  # sent when the turn before it ends
    assert timed(_sessions(20), open_loop=False)  # closed loop: read by first tokens
