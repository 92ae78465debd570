"""Attention-DP ranks simulated in lockstep: one clock, one step at a time for all of them.

Every rank keeps its own requests, KV cache and scheduler (`ReplicaSim`), but the ranks enter each
MoE layer together, so a step ends when the slowest rank's own work and the shared MoE layers
(over every rank padded to the busiest one's tokens) are done
(`StepTimeModel.lockstep_step_time_s`).
A rank with nothing to run pads: it waits for the others, its clock moves with theirs.

Cost stays O(events): when every busy rank is in a run of identical decode steps, the ranks jump
together to the first event of any of them. Rank r's own step time is max(mem_r(j), cmp_r(j)) +
fixed_r, affine in the step index j on each side, so the lockstep step is the upper envelope of
those lines plus the shared MoE time (constant over the run: every rank's token count is); the
envelope is convex and piecewise linear, and a run's time sums each piece in closed form.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from capcliff.perf.decode_line import DecodeLine
from capcliff.perf.step_time import StepTimeModel
from capcliff.sim.fast_forward import advance_decode, plain_decode_run, waits_for_arrival
from capcliff.sim.replica import ReplicaSim
from capcliff.sim.timeline import ReplicaResult


def _series(x0: float, x1: float, a: int, b: int) -> float:
    """sum_{j=a}^{b-1} (x0 + x1 j)."""
    return (b - a) * x0 + x1 * (b * (b - 1) - a * (a - 1)) / 2 if b > a else 0.0


class LockstepLine:
    """Time axis of a run of lockstep decode steps: step j takes max over ranks of
    max(mem0 + mem1 j, cmp0 + cmp1 j) + fixed, plus `shared_s`."""

    def __init__(self, lines: list[DecodeLine], shared_s: float) -> None:
        self.pieces = [(ln.mem0 + ln.fixed_s, ln.mem1) for ln in lines] + [
            (ln.cmp0 + ln.fixed_s, ln.cmp1) for ln in lines
        ]
        self.shared_s = shared_s

    def step_s(self, j: int) -> float:
        """Seconds of step j."""
        return max(a + b * j for a, b in self.pieces) + self.shared_s

    def total_s(self, k: int) -> float:
        """Seconds of steps 0 .. k-1: walk the upper envelope piece by piece."""
        total, j = 0.0, 0
        while j < k:
            a, b = max(self.pieces, key=lambda p: (p[0] + p[1] * j, p[1]))
            end = k
            for a2, b2 in self.pieces:
                if b2 > b:  # a steeper line overtakes at x >= (a - a2) / (b2 - b)
                    cross = (a - a2) / (b2 - b)
                    if cross < end:  # (an infinite or far crossing changes nothing in this run)
                        end = max(j + 1, math.ceil(cross))
            total += _series(a, b, j, end)
            j = end
        return total + k * self.shared_s

    def steps_before(self, duration_s: float, k_max: int) -> int:
        """Smallest m in [1, k_max] with total_s(m) >= duration_s, or k_max if none."""
        lo, hi = 1, k_max
        if self.total_s(hi) < duration_s:
            return k_max
        while lo < hi:
            mid = (lo + hi) // 2
            if self.total_s(mid) >= duration_s:
                hi = mid
            else:
                lo = mid + 1
        return lo


@dataclass(frozen=True)
class RankLine:
    """One rank's view of a lockstep run: the shared time axis, its own bytes plus the experts."""

    clock: LockstepLine
    own: DecodeLine
    shared_bytes: float  # expert bytes this GPU reads per step

    def total_s(self, k: int) -> float:
        """Seconds of steps 0 .. k-1 (the same for every rank)."""
        return self.clock.total_s(k)

    def total_bytes(self, k: int) -> float:
        """Bytes this GPU reads over steps 0 .. k-1."""
        return self.own.total_bytes(k) + self.shared_bytes * k


class LockstepSim:
    """Simulates attention-DP ranks (`ReplicaSim`s built on `model.local`) on one clock."""

    def __init__(self, ranks: list[ReplicaSim], model: StepTimeModel) -> None:
        self.ranks, self.model, self.now_s, self.steps = ranks, model, 0.0, 0

    def run(self) -> list[ReplicaResult]:
        """Simulate until every rank's requests have finished."""
        ranks, max_steps = self.ranks, self.ranks[0].config.max_steps if self.ranks else 0
        while any(r.done < len(r.prompt) for r in ranks):
            for r in ranks:
                r.now_s = self.now_s
                if r.arrivals and r.arrivals[0][0] <= self.now_s:
                    r.take_arrivals()
            busy = [r for r in ranks if r.running or r.waiting]
            for r in ranks:
                if not (r.running or r.waiting) and r.rule.ratio:  # SGLang resets it when idle
                    r.ratio_base, r.ratio_steps = r.rule.ratio.init, 0
            if not busy:
                self._wait_for_arrival()
            elif not self._fast_forward(busy):
                self._exact_step(busy)
            self.steps += 1
            if self.steps > max_steps:
                raise RuntimeError(f"simulation did not finish in {max_steps} steps")
        return [r.result() for r in ranks]

    def _wait_for_arrival(self) -> None:
        nxt = [r.arrivals[0][0] for r in self.ranks if r.arrivals]
        if not nxt:
            raise RuntimeError("ranks idle with requests unfinished and none to arrive")
        self.now_s = max(self.now_s, min(nxt))

    def _exact_step(self, busy: list[ReplicaSim]) -> None:
        """One step of every busy rank, priced together."""
        planned = [r.begin_step() for r in busy]
        loads = [p.load for p in planned]
        compute_s = self.model.lockstep_step_time_s(loads)
        swap_s = max(p.swap_s for p in planned)
        busiest = max(loads, key=lambda load: load[0])
        shared = self.model.moe_hbm_bytes(busiest[0], busiest[1])
        for r, p in zip(busy, planned, strict=True):
            # every rank also waits for the slowest swap: one duration for all
            r.finish_step(p, compute_s + (swap_s - p.swap_s), shared)
        self.now_s += compute_s + swap_s

    def _fast_forward(self, busy: list[ReplicaSim]) -> bool:
        """Jump every rank over the common run of identical decode steps; False if some busy
        rank's next step is not a decode step (then all run one exact step)."""
        runs = [plain_decode_run(r) for r in busy]
        if any(run is None for run in runs):
            return False
        counts = [r.cohort.count for r in busy]
        local = self.model.local
        lines = [
            local.decode_line(n, r.cohort.context_sum(r.step) + n)
            for r, n in zip(busy, counts, strict=True)
        ]
        busiest = max(counts)
        clock = LockstepLine(lines, self.model.shared_step_s(busiest, busiest))
        limit = min(run[0] for run in runs if run is not None)
        for r in self.ranks:
            idle = not (r.running or r.waiting)
            if r.arrivals and (idle or waits_for_arrival(r)):
                limit = clock.steps_before(r.arrivals[0][0] - self.now_s, limit)
        shared = self.model.moe_hbm_bytes(busiest, busiest)
        for r, line, run in zip(busy, lines, runs, strict=True):
            assert run is not None
            advance_decode(r, limit, RankLine(clock, line, shared), run[1])
        self.now_s += clock.total_s(limit)
        return True
