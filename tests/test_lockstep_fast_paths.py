"""The lockstep loop's shortcuts (2026-12-07, branch h-slowmoe) give the old loop's numbers, bit
for bit: the one-piece clock's sums, a pending run's time before its last step, the largest
step time of a lockstep step, and whole lockstep runs against the loop as it was before them
(`_OldLoop`: decode lines built per rank and jump, the run ends asked again for an exact step,
every settle asking the run's first step)."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from capcliff.perf.attention_dp import MoEGroup
from capcliff.perf.communication import ExchangeCost
from capcliff.perf.decode_line import DecodeLine
from capcliff.perf.step_time import StepTimeModel, _largest
from capcliff.sim.config import ARRIVAL_TIE_S, PreemptionMode
from capcliff.sim.loop.balance import UNBOUNDED
from capcliff.sim.loop.fast_forward import decided_steps, waits_for_arrival
from capcliff.sim.loop.landed import first_tokens_at
from capcliff.sim.loop.lockstep import FixedStep, LockstepLine, LockstepSim, PendingRun
from capcliff.sim.loop.replica import ReplicaSim
from capcliff.sim.simulate import make_policy, route
from tests.simtools import assert_same_run, random_case, toy_model

_seconds = st.floats(0.0, 0.05, allow_subnormal=False)
_slopes = st.floats(0.0, 1e-4, allow_subnormal=False)


@st.composite
def _lines(draw: st.DrawFn) -> list[DecodeLine]:
    ranks = draw(st.integers(1, 4))
    return [
        DecodeLine(draw(_seconds), draw(_slopes), draw(_seconds), draw(_slopes),
                   draw(_seconds), 1e6, 1e3, draw(st.sampled_from([0.0, 0.0, 0.01])))
        for _ in range(ranks)
    ]  # fmt: skip


def _bits(x: float) -> str:
    return x.hex()  # tells -0.0 from 0.0


@settings(max_examples=200, deadline=None)
@given(_lines(), _seconds, st.sampled_from([0.0, 0.02]), st.integers(1, 3000), _seconds)
def test_a_one_piece_clock_sums_as_the_envelope_loop(
    lines: list[DecodeLine], shared_s: float, floor_s: float, k_max: int, due_s: float
) -> None:
    clock = LockstepLine(lines, shared_s, floor_s)
    if len(clock.hull) != 1:
        return
    # the same clock with a second envelope piece past every step asked: `total_s` and
    # `steps_before` then take their loops over the pieces, as before the one-piece sums
    looped = LockstepLine(lines, shared_s, floor_s)
    looped.hull = [*clock.hull, (k_max + 1, 1.0, 1.0)]
    for k in {0, 1, 2, k_max // 2, k_max - 1, k_max}:
        assert _bits(clock.total_s(k)) == _bits(looped.total_s(k))
    assert clock.steps_before(due_s, k_max) == looped.steps_before(due_s, k_max)
    assert clock.steps_before(clock.total_s(k_max) / 3, k_max) == looped.steps_before(
        looped.total_s(k_max) / 3, k_max
    )


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.tuples(st.integers(1, 40), st.booleans(), _seconds), min_size=1, max_size=6),
    _lines(),
)
def test_a_pending_runs_time_before_its_last_step_is_its_segments_sum(
    segments: list[tuple[int, bool, float]], lines: list[DecodeLine]
) -> None:
    run = PendingRun(0.0, lines[0], False, [])
    more = PendingRun(0.0, lines[0], False, [])  # one segment more: the loop over segments
    for k, lockstep, shared_s in segments:
        clock = LockstepLine(lines, shared_s) if lockstep else FixedStep(shared_s + 0.001)
        for pending in (run, more):
            pending.add(k, clock, 10.0, clock.total_s(k))
    more.add(1, FixedStep(1.0), 10.0, 1.0)
    k = run.steps - 1
    assert _bits(run.total_s(k)) == _bits(more.total_s(k))
    assert _bits(run.total_s(run.steps)) == _bits(more.total_s(run.steps))


@given(st.lists(st.sampled_from([0.0, -0.0, 1.5, 2.5, -1.0, 2.5]), min_size=1, max_size=8))
def test_the_largest_step_time_is_maxs_pick(values: list[float]) -> None:
    loads = [(i, i, i, i) for i in range(len(values))]
    found = _largest(lambda i, *_: values[i], loads)
    assert _bits(found) == _bits(max(values))


class _OldLoop(LockstepSim):
    """The lockstep loop before the shortcuts, for the comparison: only the methods they
    changed, as they were."""

    def run(self):  # type: ignore[no-untyped-def]
        ranks, max_steps = self.ranks, self.ranks[0].config.max_steps
        while any(r.done < len(r.prompt) for r in ranks):
            seen = self.last_start_s if self.overlap else self.now_s
            for i, r in enumerate(ranks):
                if r.arrivals and r.arrivals[0][0] <= seen + ARRIVAL_TIE_S:
                    self._settle(i)
                    r.now_s, r.last_start_s = self.now_s, self.last_start_s
                    r.take_arrivals()
                    self.run_end.pop(i, None)
                if i not in self.pending:
                    r.now_s = self.now_s
            busy = [i for i, r in enumerate(ranks) if r.running or r.waiting]
            for r in ranks:
                if not (r.running or r.waiting) and r.rule.ratio:
                    r.ratio_base, r.ratio_steps = r.rule.ratio.init, 0
            if busy:
                self._step(busy)
            else:
                self._wait_for_arrival()
            self.steps += 1
            assert self.steps <= max_steps
        return [r.result() for r in ranks]

    def _settle(self, i: int) -> None:
        pending = self.pending.get(i)
        super()._settle(i)
        if pending is not None:  # asked at every settle (a no-op but for a folded landing)
            first_tokens_at(self.ranks[i], pending.start_s + pending.total_s(1))

    def _exact_step(self, busy, ends):  # type: ignore[no-untyped-def]
        ends = {i: self._run_end(i) for i in busy}
        exact = [i for i in busy if ends[i] is None]
        for i in exact:
            self._settle(i)
        ranks = [self.ranks[i] for i in exact]
        planned = [r.begin_step() for r in ranks]
        loads = [p.load for p in planned]
        decoding = {}
        for i in busy:
            if ends[i] is not None:
                co, n = self.ranks[i].cohort, self.ranks[i].cohort.count
                ctx = co.context_sum(self._step_of(i)) + n
                loads.append((n, n, ctx, ctx))
                decoding[i] = self.model.local.decode_line(n, ctx)
        compute_s = self.model.lockstep_step_time_s(loads, ranks=self.group)
        swap_s = max((p.swap_s for p in planned), default=0.0)
        busiest = max(loads, key=lambda load: load[0])
        shared = self.model.moe_hbm_bytes(busiest[0], busiest[1])
        for r, p in zip(ranks, planned, strict=True):
            r.finish_step(p, compute_s + (swap_s - p.swap_s), shared)
        self._old_pend(decoding, ends, 1, FixedStep(compute_s + swap_s), shared, compute_s + swap_s)
        self.last_start_s = self.now_s
        self.now_s += compute_s + swap_s

    def _old_pend(self, lines, ends, k, clock, shared, seconds):  # type: ignore[no-untyped-def]
        for i, line in lines.items():
            step = self._step_of(i)
            run = self.pending.get(i)
            if run is None:
                run = self.pending[i] = PendingRun(self.now_s, line, ends[i][1], [])
            run.add(k, clock, shared, seconds)
            if step + k == ends[i][0]:
                self._settle(i)
                self.run_end.pop(i)

    def _fast_forward(self, busy: list[int], cap: int = UNBOUNDED) -> int:
        ends = {i: self._run_end(i) for i in busy}
        if any(end is None for end in ends.values()):
            return 0
        local = self.model.local
        at = {i: self._step_of(i) for i in busy}
        counts = [self.ranks[i].cohort.count for i in busy]
        lines = {
            i: local.decode_line(n, self.ranks[i].cohort.context_sum(at[i]) + n)
            for i, n in zip(busy, counts, strict=True)
        }
        busiest = max(counts)
        floor = self.model.eager_floor_s if len(busy) < self.group else 0.0
        shared_s = self.model.shared_step_s(busiest, busiest)
        clock = LockstepLine(list(lines.values()), shared_s, floor)
        limit = min(cap, *(end[0] - at[i] for i, end in ends.items() if end is not None))
        due = [
            r.arrivals[0][0]
            for r in self.ranks
            if r.arrivals
            and (self.gate is not None or not (r.running or r.waiting) or waits_for_arrival(r))
        ]
        if due:
            due_s = min(due) - self.now_s - ARRIVAL_TIE_S
            limit = decided_steps(
                self.overlap, due_s, limit, lambda n: clock.steps_before(due_s, n)
            )
        seconds = clock.total_s(limit)
        hbm = self.model.moe_hbm_bytes(busiest, busiest)
        self._old_pend(lines, ends, limit, clock, hbm, seconds)
        if self.overlap:
            self.last_start_s = self.now_s + clock.total_s(limit - 1) if limit > 1 else self.now_s
        self.now_s += seconds
        for i in busy:
            if i not in self.pending:
                self.ranks[i].now_s = self.now_s
        return limit


def _moe_model(overlap: bool, floor_s: float) -> StepTimeModel:
    group = MoEGroup(
        ranks=4, expert_bytes=2e9, expert_choice_fraction=0.25, expert_flops_per_token=1e9,
        moe_layers=2, exchange=ExchangeCost(1e-5, 1e-6),
    )  # fmt: skip
    # unround terms, so that sums taken in another order would show in the last bits
    return dataclasses.replace(
        toy_model(step_overhead_s=1.37e-3), kv_bytes_per_token=123_457.0,
        bandwidth_bytes_per_s=9.7e11, moe=group, overlap_schedule=overlap, eager_floor_s=floor_s,
    )  # fmt: skip


def lockstep_group(seed: int, policy: str) -> Callable[[type[LockstepSim]], LockstepSim]:
    """A small random attention-DP group (2-4 ranks, `random_case`'s requests), built afresh by
    each call with the loop class given."""
    arrival = ("poisson", "batch", "clients")[seed % 3]
    requests, capacity, config = random_case(seed, policy, PreemptionMode.RECOMPUTE, arrival)
    model = _moe_model(overlap=seed % 2 == 1, floor_s=0.002 if seed % 4 < 2 else 0.0)
    rule = make_policy(config, requests)
    ranks = 2 + seed % 3
    owned = [idx for idx in route(requests, ranks, config.routing) if len(idx)]

    def group(loop: type[LockstepSim]) -> LockstepSim:
        sims = [ReplicaSim(requests.subset(i), model.local, capacity, config, rule) for i in owned]
        return loop(sims, model, group=ranks)

    return group


@pytest.mark.parametrize("seed", range(12))
@pytest.mark.parametrize("policy", ["vllm", "sglang", "trtllm-max-util", "kv-aware"])
def test_lockstep_runs_are_the_old_loops_to_the_bit(seed: int, policy: str) -> None:
    group = lockstep_group(seed, policy)
    new, old = group(LockstepSim), group(_OldLoop)
    for got, want in zip(new.run(), old.run(), strict=True):
        assert_same_run(got, want)
    assert (new.steps, new.now_s.hex()) == (old.steps, old.now_s.hex())
