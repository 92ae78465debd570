"""Attention-DP ranks simulated in lockstep: one clock, one step at a time for all of them.

Every rank keeps its own requests, KV cache and scheduler (`ReplicaSim`), but the ranks enter each
MoE layer together, so a step ends when the slowest rank's own work and the shared MoE layers
(over every rank padded to the busiest one's tokens) are done
(`StepTimeModel.lockstep_step_time_s`).
A rank with nothing to run pads: it waits for the others, its clock moves with theirs.

With TensorRT-LLM's attention-DP balance on (`SimConfig.adp_balance`), the ranks' context
requests wait as `capcliff.sim.loop.balance` decides, iteration by iteration: a run of decode
steps ends where its verdict would change, and at every arrival.

Cost stays O(events): when every busy rank is in a run of identical decode steps, the ranks jump
together to the first event of any of them. Rank r's own step time is max(mem_r(j), cmp_r(j)) +
fixed_r, affine in the step index j on each side, so the lockstep step is the upper envelope of
those lines plus the shared MoE time (constant over the run: every rank's token count is); the
envelope is convex and piecewise linear, and a run's time sums each piece in closed form.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from capcliff.errors import request_limit_error, step_limit_error
from capcliff.perf.decode_line import DecodeLine
from capcliff.perf.step_time import StepTimeModel
from capcliff.sim.config import ARRIVAL_TIE_S
from capcliff.sim.loop.balance import UNBOUNDED, BalanceGate
from capcliff.sim.loop.fast_forward import (
    advance_decode,
    decided_steps,
    plain_decode_run,
)
from capcliff.sim.loop.landed import first_tokens_at, fold_landing, folds_landings
from capcliff.sim.loop.replica import ReplicaSim
from capcliff.sim.loop.timeline import ReplicaResult

# No run of decode steps is this long: an envelope piece starting later is never reached.
FAR_STEP = 2**62


class LockstepLine:
    """Time axis of a run of lockstep decode steps: step j takes max over ranks of
    max(mem0 + mem1 j, cmp0 + cmp1 j) + fixed, plus `shared_s`."""

    def __init__(
        self,
        lines: list[DecodeLine],
        shared_s: float,
        floor_s: float = 0.0,
        pieces: list[tuple[float, float]] | None = None,
    ) -> None:
        """The clock of `lines` (one per rank), or of `pieces` as `line_pieces` makes them from
        such lines (then `lines` is not read)."""
        self.pieces = line_pieces(lines, shared_s, floor_s) if pieces is None else pieces
        self.shared_s = shared_s
        self.hull = self._upper_envelope()

    def _upper_envelope(self) -> list[tuple[int, float, float]]:
        """(first step, intercept, slope) of each piece of the envelope over j >= 0: the line
        highest at the piece's first step, until a steeper one overtakes it."""
        hull, j = [], 0
        while True:
            a, b = self._highest(j)
            hull.append((j, a, b))
            nxt = FAR_STEP
            for a2, b2 in self.pieces:
                if b2 > b:  # a steeper line overtakes at x >= (a - a2) / (b2 - b)
                    cross = (a - a2) / (b2 - b)
                    if cross < nxt:  # (an infinite or far crossing changes nothing)
                        nxt = max(j + 1, math.ceil(cross))
            if nxt >= FAR_STEP:
                return hull
            j = nxt

    def _highest(self, j: int) -> tuple[float, float]:
        """The piece highest at step j, the steeper on a tie, the first of equal ones (as
        `max(pieces, key=(value at j, slope))`, in a loop that runs natively when compiled)."""
        pieces = self.pieces
        best = pieces[0]
        top, slope = best[0] + best[1] * j, best[1]
        for piece in pieces:
            value = piece[0] + piece[1] * j
            if value > top or (value == top and piece[1] > slope):
                best, top, slope = piece, value, piece[1]
        return best

    def step_s(self, j: int) -> float:
        """Seconds of step j."""
        top = -math.inf
        for a, b in self.pieces:
            top = max(top, a + b * j)
        return top + self.shared_s

    def total_s(self, k: int) -> float:
        """Seconds of steps 0 .. k-1: each envelope piece summed in closed form
        (`decode_line.series`' arithmetic, inline)."""
        total, hull = 0.0, self.hull
        if len(hull) == 1 and k > 0:  # one piece from step 0 (most runs): the loop's one term
            _, a, b = hull[0]
            return total + (k * a + b * (k * (k - 1)) / 2) + k * self.shared_s
        for n, (j, a, b) in enumerate(hull):
            if j >= k:
                break
            end = min(k, hull[n + 1][0]) if n + 1 < len(hull) else k
            if end > j:
                total += (end - j) * a + b * (end * (end - 1) - j * (j - 1)) / 2
        return total + k * self.shared_s

    def steps_before(self, duration_s: float, k_max: int) -> int:
        """Smallest m in [1, k_max] with total_s(m) >= duration_s, or k_max if none: the
        bisection of `decode_line.steps_before`, probe for probe, run natively when compiled."""
        if self.total_s(k_max) < duration_s:
            return k_max
        lo, hi = 1, k_max
        if len(self.hull) == 1:  # total_s's one-piece sum, inline (the same probes, the same sums)
            _, a, b = self.hull[0]
            shared = self.shared_s
            while lo < hi:
                m = (lo + hi) // 2
                at_m = 0.0 + (m * a + b * (m * (m - 1)) / 2) + m * shared
                lo, hi = (lo, m) if at_m >= duration_s else (m + 1, hi)
            return lo
        while lo < hi:
            mid = (lo + hi) // 2
            lo, hi = (lo, mid) if self.total_s(mid) >= duration_s else (mid + 1, hi)
        return lo


def line_pieces(
    lines: list[DecodeLine], shared_s: float, floor_s: float = 0.0
) -> list[tuple[float, float]]:
    """`LockstepLine`'s lines (intercept, slope), in the order its envelope reads them: every
    rank's memory line, every rank's compute line, the eager floor, the ranks' host floors."""
    pieces = [(ln.mem0 + ln.fixed_s, ln.mem1) for ln in lines] + [
        (ln.cmp0 + ln.fixed_s, ln.cmp1) for ln in lines
    ]
    if floor_s > 0:  # a flat piece: no step shorter than floor_s (StepTimeModel.eager_floor_s)
        pieces.append((floor_s - shared_s, 0.0))
    # a rank's host time under an overlap scheduler (DecodeLine.floor_s): a flat piece too
    # (it overlaps the shared MoE layers as well)
    pieces += [(ln.floor_s + ln.fixed_s - shared_s, 0.0) for ln in lines if ln.floor_s > 0]
    return pieces


@dataclass(frozen=True)
class FixedStep:
    """A clock of steps of one known duration (a lockstep step some ranks decided exactly)."""

    step_s: float

    def total_s(self, k: int) -> float:
        """Seconds of k such steps."""
        return k * self.step_s


@dataclass
class PendingRun:
    """Decode steps a rank has run in lockstep but not yet applied to its state: segments of
    (steps, clock, expert bytes per step) since `start_s`, from its own line at the first one.
    The totals over every pending step are summed as segments come, in the order (and with the
    float operations) `total_s` and `total_bytes` would sum them, so settling a long pending run
    costs O(1), not O(segments)."""

    start_s: float
    own: DecodeLine
    blocked: bool
    segments: list[tuple[int, LockstepLine | FixedStep, float]]
    steps: int = 0  # steps pending
    whole_s: float = 0.0  # total_s(steps)
    whole_shared: float = 0.0  # expert bytes of total_bytes(steps)
    before_last_s: float = 0.0  # whole_s before the last segment came: its earlier ones' sum

    def add(self, k: int, clock: LockstepLine | FixedStep, shared: float, seconds: float) -> None:
        """k more steps on `clock` (`seconds` = clock.total_s(k)), reading `shared` expert bytes
        each."""
        self.segments.append((k, clock, shared))
        self.steps += k
        self.before_last_s = self.whole_s
        self.whole_s += seconds
        self.whole_shared += shared * k

    def total_s(self, k: int) -> float:
        """Seconds of the first k pending steps (on each segment's shared clock)."""
        if k == self.steps:
            return self.whole_s
        if k == self.steps - 1:  # all but the last step (an overlap scheduler's last start)
            last, clock, _ = self.segments[-1]  # the loop below: the earlier segments whole,
            # summed in the same order as `before_last_s`, then this one's first last - 1
            return self.before_last_s + clock.total_s(last - 1) if last > 1 else self.before_last_s
        total = 0.0
        for steps, clock, _ in self.segments:
            total += clock.total_s(min(k, steps))
            k -= steps
            if k <= 0:
                break
        return total

    def total_bytes(self, k: int) -> float:
        """Bytes this GPU reads over the first k pending steps: its own and the experts."""
        if k == self.steps:
            return self.own.total_bytes(k) + self.whole_shared
        shared, left = 0.0, k
        for steps, _, per_step in self.segments:
            shared += per_step * min(left, steps)
            left -= steps
            if left <= 0:
                break
        return self.own.total_bytes(k) + shared


def _check_requests(ranks: list[ReplicaSim]) -> None:
    """Each rank is a replica's scheduler of its own: more requests than its `max_requests`
    are refused before the first step, as `ReplicaSim.run_until` refuses them."""
    for r in ranks:
        if len(r.prompt) > r.config.max_requests:
            raise request_limit_error(r.config.max_requests, len(r.prompt))


class LockstepSim:
    """Simulates attention-DP ranks (`ReplicaSim`s built on `model.local`) on one clock.

    A rank is brought up to date only when something happens to it (its own event, an arrival, an
    exact step): until then the decode runs it shares with the others pile up as a `PendingRun`,
    and its next event step stays cached, so a run costs O(ranks) only for the envelope.
    """

    def __init__(self, ranks: list[ReplicaSim], model: StepTimeModel, group: int = 0) -> None:
        self.ranks, self.model, self.now_s, self.steps = ranks, model, 0.0, 0
        # the ranks share one clock and so one overlap scheduler's view (`ReplicaState.seen_s`)
        self.overlap, self.last_start_s = model.overlap_schedule, 0.0
        for r in ranks:  # how SGLang's DP ranks line up prefill and decode steps: not modelled
            r.exclusive_prefill = False
            r.recv_every = 1  # nor a receive interval (SGLang's skipper refused DP attention)
        self.group = max(group, len(ranks))  # ranks in the group, those given no request too
        balance = ranks[0].config.adp_balance if ranks else None
        self.gate = None if balance is None else BalanceGate(*balance, self.group)
        self.holding = False  # the context requests wait in the step about to run (the gate's)
        self.pending: dict[int, PendingRun] = {}
        self.run_end: dict[int, tuple[int, bool]] = {}  # rank -> (step its run ends, blocked)
        # the busy ranks' `_run_end`s as the latest `_fast_forward` found them (an exact step
        # follows one that found a None, with nothing changed in between)
        self.ends: list[tuple[int, bool] | None] = []
        # tables of pure functions of the model, by their arguments: `model.local`'s decode
        # terms (with its KV bytes per token) by sequences, and the shared MoE layers' seconds
        # and expert bytes by the busiest rank's (tokens, sequences)
        self.terms: dict[int, tuple[float, ...]] = {}
        self.shared: dict[tuple[int, int], tuple[float, float]] = {}
        self.landed = any(folds_landings(r) for r in ranks)  # first tokens from the clock

    def run(self) -> list[ReplicaResult]:
        """Simulate until every rank's requests have finished."""
        ranks, max_steps = self.ranks, self.ranks[0].config.max_steps if self.ranks else 0
        _check_requests(ranks)
        sizes = [len(r.prompt) for r in ranks]
        first_open = 0  # every rank before it has finished (`done` never falls)
        while True:
            while first_open < len(ranks) and ranks[first_open].done >= sizes[first_open]:
                first_open += 1
            if first_open == len(ranks):
                break
            busy = self._take_arrivals()
            if not busy:
                self._wait_for_arrival()
            else:
                self._step(busy)
            self.steps += 1
            if self.steps > max_steps:
                raise step_limit_error(max_steps, sum(len(r.prompt) for r in ranks))
        return [r.result() for r in ranks]

    def _take_arrivals(self) -> list[int]:
        """Every rank takes what has arrived by the step about to be decided (its pending run
        settled first) and joins the clock; the busy ranks (running or waiting)."""
        seen = self.last_start_s if self.overlap else self.now_s
        due_s, now, pending = seen + ARRIVAL_TIE_S, self.now_s, self.pending
        busy: list[int] = []
        for i, r in enumerate(self.ranks):
            if r.arrivals and r.arrivals[0][0] <= due_s:
                self._settle(i)
                r.now_s = now  # a rank settled inside an exact step kept its start
                r.last_start_s = self.last_start_s
                r.take_arrivals()
                self.run_end.pop(i, None)
            if i not in pending:
                r.now_s = now
            if r.running or r.waiting:
                busy.append(i)
            elif r.rule.ratio:  # SGLang resets it when idle
                r.ratio_base, r.ratio_steps = r.rule.ratio.init, 0
        return busy

    def _step(self, busy: list[int]) -> None:
        """The busy ranks' next run of decode steps, or one step exactly; under the balance gate,
        no more steps than its verdict stands for."""
        cap = UNBOUNDED if self.gate is None else self._balance()
        steps = self._fast_forward(busy, cap)
        if not steps:
            self._exact_step(busy, self.ends)
            steps = 1
        if self.gate is not None:
            self.gate.advance(steps)

    def _balance(self) -> int:
        """The balance gate's verdict for the next step, applied: a rank whose context requests
        wait admits nobody (no seat for a new request). Returns the steps it stands for."""
        assert self.gate is not None
        hold, steps = self.gate.decide(self.ranks)
        if hold != self.holding:
            self.holding = hold
            for i, r in enumerate(self.ranks):
                r.max_num_seqs = 0 if hold else r.config.max_num_seqs
                if r.waiting:  # its admissions change: its run so far is settled first
                    self._settle(i)
                    r.now_s, r.last_start_s = self.now_s, self.last_start_s
                    r.dirty = True
                    self.run_end.pop(i, None)
        return steps

    def _settle(self, i: int) -> None:
        """Apply rank i's pending decode steps to its state."""
        pending = self.pending.pop(i, None)
        if pending is None:
            return
        r = self.ranks[i]
        r.now_s = pending.start_s
        advance_decode(r, pending.steps, pending, pending.blocked)
        if self.landed:  # a folded landing's first token: the end of the run's first step
            first_tokens_at(r, pending.start_s + pending.total_s(1))
        r.now_s = self.now_s

    def _wait_for_arrival(self) -> None:
        nxt = [r.arrivals[0][0] for r in self.ranks if r.arrivals]
        if not nxt:
            raise RuntimeError("ranks idle with requests unfinished and none to arrive")
        self.now_s = self.last_start_s = max(self.now_s, min(nxt))

    def _terms(self, seqs: int) -> tuple[float, ...]:
        """`model.local.decode_terms(seqs)` and its KV bytes per token (`thrash.line_terms_of`'s
        layout): `decode_line(seqs, c)` is DecodeLine(t0 + t1 c, t2, t3 + t4 c, t5, t6,
        t7 + t10 c, t8, t9), the same floats."""
        terms = self.terms.get(seqs)
        if terms is None:
            local = self.model.local
            terms = (*local.decode_terms(seqs), local.context_bytes_per_token)
            self.terms[seqs] = terms
        return terms

    def _shared(self, tokens: int, seqs: int) -> tuple[float, float]:
        """(`model.shared_step_s`, `model.moe_hbm_bytes`) of a busiest rank's `tokens` of
        `seqs` sequences."""
        both = self.shared.get((tokens, seqs))
        if both is None:
            model = self.model
            both = (model.shared_step_s(tokens, seqs), model.moe_hbm_bytes(tokens, seqs))
            self.shared[tokens, seqs] = both
        return both

    def _exact_step(self, busy: list[int], ends: list[tuple[int, bool] | None]) -> None:
        """One step of every busy rank, priced together. Ranks whose step is a plain decode step
        add it to their pending run; the others decide theirs exactly. `ends`: the busy ranks'
        `_run_end`s."""
        exact = [i for i, end in zip(busy, ends, strict=True) if end is None]
        for i in exact:
            self._settle(i)
        ranks = [self.ranks[i] for i in exact]
        planned = [r.begin_step() for r in ranks]
        loads = [p.load for p in planned]
        decoding: list[int] = []
        at: list[int] = []
        runs: list[tuple[int, bool]] = []
        contexts: list[int] = []
        for i, end in zip(busy, ends, strict=True):
            if end is not None:
                step = self._step_of(i)
                n = self.ranks[i].cohort.count
                ctx = self.ranks[i].cohort.context_sum(step) + n
                loads.append((n, n, ctx, ctx))
                decoding.append(i)
                at.append(step)
                runs.append(end)
                contexts.append(ctx)
        compute_s = self.model.lockstep_step_time_s(loads, ranks=self.group)
        swap_s = max((p.swap_s for p in planned), default=0.0)
        busiest = max(loads, key=lambda load: load[0])
        shared = self._shared(busiest[0], busiest[1])[1]
        for r, p in zip(ranks, planned, strict=True):
            # every rank also waits for the slowest swap: one duration for all
            r.finish_step(p, compute_s + (swap_s - p.swap_s), shared)
        step_s = compute_s + swap_s
        self._pend(decoding, at, runs, contexts, 1, FixedStep(step_s), shared, step_s)
        self.last_start_s = self.now_s
        self.now_s += compute_s + swap_s

    def _step_of(self, i: int) -> int:
        """Rank i's step counter, its pending steps included."""
        pending = self.pending.get(i)
        return self.ranks[i].step + (pending.steps if pending is not None else 0)

    def _pend(
        self,
        busy: list[int],
        at: list[int],
        ends: list[tuple[int, bool]],
        contexts: list[int],
        k: int,
        clock: LockstepLine | FixedStep,
        shared: float,
        seconds: float,
    ) -> None:
        """Add k decode steps on `clock` (`seconds` = clock.total_s(k)) to the pending runs of
        the ranks `busy` (at steps `at`, whose runs end as `ends` says, with summed contexts
        `contexts` there); a rank whose run ends there is brought up to date."""
        pending, now = self.pending, self.now_s
        for i, step, end, ctx in zip(busy, at, ends, contexts, strict=True):
            run = pending.get(i)
            if run is None:  # its own line from here: `model.local.decode_line(n, ctx)`
                t = self._terms(self.ranks[i].cohort.count)
                own = DecodeLine(
                    t[0] + t[1] * ctx, t[2], t[3] + t[4] * ctx, t[5], t[6], t[7] + t[10] * ctx,
                    t[8], t[9],
                )  # fmt: skip
                run = pending[i] = PendingRun(now, own, end[1], [])
            # PendingRun.add, inline
            run.segments.append((k, clock, shared))
            run.steps += k
            run.before_last_s = run.whole_s
            run.whole_s += seconds
            run.whole_shared += shared * k
            if step + k == end[0]:  # its event: bring it up to date
                self._settle(i)
                self.run_end.pop(i)

    def _run_end(self, i: int) -> tuple[int, bool] | None:
        """(step rank i's run of decode steps ends, blocked), cached while nothing happens to
        it; None if its next step is not a decode step."""
        cached = self.run_end.get(i)
        if cached is None:
            r = self.ranks[i]
            run = plain_decode_run(r)
            if run is None and fold_landing(r):  # a landing joins the run (sim.landed)
                run = plain_decode_run(r)
            if run is None:
                return None
            cached = self.run_end[i] = (r.step + run[0], run[1])
        return cached

    def _first_due(self) -> float:
        """The earliest arrival that ends a run of decode steps (inf if none): a rank's next
        one where it `waits_for_arrival`, or an idle rank's; under the balance gate every
        arrival (it may change the gate's verdict)."""
        gated, first = self.gate is not None, math.inf
        for r in self.ranks:
            if r.arrivals and (gated or not r.waiting or r.rule.event_triggered):
                first = min(first, r.arrivals[0][0])
        return first

    def _fast_forward(self, busy: list[int], cap: int = UNBOUNDED) -> int:
        """Jump every rank over the common run of identical decode steps, at most `cap` of them;
        the steps jumped, 0 if some busy rank's next step is not a decode step (then all run one
        step together)."""
        run_end = self.run_end
        ends = self.ends = [run_end.get(i) or self._run_end(i) for i in busy]
        if None in ends:
            return 0
        ranks, pending = self.ranks, self.pending
        # every rank's decode line from its step now, as `model.local.decode_line(n, ctx)`
        # makes it, read straight into the clock's pieces (`line_pieces`' order)
        mem: list[tuple[float, float]] = []
        cmp: list[tuple[float, float]] = []
        hosts: list[float] = []
        at: list[int] = []
        runs: list[tuple[int, bool]] = []
        contexts: list[int] = []
        busiest, limit = 0, cap
        for i, end in zip(busy, ends, strict=True):
            assert end is not None
            r = ranks[i]
            run = pending.get(i)
            step = r.step + (run.steps if run is not None else 0)
            co = r.cohort
            n = co.count
            ctx = co.context_sum(step) + n
            t = self.terms.get(n) or self._terms(n)
            fixed = t[6]
            mem.append((t[0] + t[1] * ctx + fixed, t[2]))
            cmp.append((t[3] + t[4] * ctx + fixed, t[5]))
            if t[9] > 0:
                hosts.append(t[9] + fixed)
            at.append(step)
            runs.append(end)
            contexts.append(ctx)
            busiest = max(busiest, n)
            limit = min(limit, end[0] - step)
        floor = self.model.eager_floor_s if len(busy) < self.group else 0.0
        shared_s, shared = self.shared.get((busiest, busiest)) or self._shared(busiest, busiest)
        pieces = mem + cmp
        if floor > 0:
            pieces.append((floor - shared_s, 0.0))
        pieces += [(host - shared_s, 0.0) for host in hosts]
        clock = LockstepLine([], shared_s, pieces=pieces)
        # the run ends before the first arrival that could be taken: steps_before is monotone in
        # the duration, so the earliest such arrival bounds it (one search, not one per rank)
        first = self._first_due()
        if first < math.inf:
            due_s = first - self.now_s - ARRIVAL_TIE_S
            limit = decided_steps(
                self.overlap, due_s, limit, lambda n: clock.steps_before(due_s, n)
            )
        seconds = clock.total_s(limit)
        self._pend(busy, at, runs, contexts, limit, clock, shared, seconds)
        if self.overlap:  # the start of the run's last step
            self.last_start_s = self.now_s + clock.total_s(limit - 1) if limit > 1 else self.now_s
        self.now_s += seconds
        for i in busy:
            if i not in pending:
                ranks[i].now_s = self.now_s
        return limit
