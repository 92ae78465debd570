"""One replica's serving engine, simulated event by event (the design note's scheme).

Each loop iteration either runs one engine step exactly (when something happens: an admission, a
prefill chunk, a preemption) or jumps over a run of identical decode steps at once
(`capcliff.sim.loop.fast_forward`). A step: (1) if the running requests' new blocks do not fit,
give up victims in the policy's order until they do; (2) every decoding request writes one token,
a request part way through its prefill takes the next chunk of what budget is left; (3) waiting
requests are admitted FCFS while the policy agrees (head-of-line blocking); (4) the step's time
comes from the step-time model (+ swap transfers); requests that finish free their blocks.

The state and the changes every part makes to it are `ReplicaState`'s
(`capcliff.sim.loop.state`), with the token accounting.
"""

from __future__ import annotations

import math
from functools import partial

from capcliff.errors import request_limit_error, step_limit_error
from capcliff.sim.config import ARRIVAL_TIE_S
from capcliff.sim.loop.admission import candidate, head_admissible
from capcliff.sim.loop.exclusive_prefill import exclusive, exclusive_step
from capcliff.sim.loop.fast_forward import fast_forward
from capcliff.sim.loop.head import known_admitted_head
from capcliff.sim.loop.prefill_only import no_chunking, prefill_step, swap_ins
from capcliff.sim.loop.state import ReplicaState
from capcliff.sim.loop.step_plan import Load, PlannedStep, step_load
from capcliff.sim.loop.thrash import handles
from capcliff.sim.loop.timeline import ReplicaResult
from capcliff.sim.loop.victims import next_victim
from capcliff.sim.policies import Candidate


class ReplicaSim(ReplicaState):
    """Simulates one replica over `requests` (local indices 0 .. n-1): the loop over the state
    that calls its parts."""

    def _choose_paths(self, landed: bool) -> None:
        self.prefill_only = no_chunking(self, landed=landed)
        self.inline = handles(self)  # vLLM-like: its thrashing and admission steps run inlined
        self.exclusive_prefill = exclusive(self, landed=landed)

    # --- the loop ---------------------------------------------------------------------------
    def run(self) -> ReplicaResult:
        """Simulate until every request has finished."""
        self.run_until(len(self.prompt))
        return self.result()

    def run_until(self, done: int, before_s: float = math.inf) -> None:
        """Simulate until at least `done` requests (at most all) have finished. A later call goes
        on from there: the loop pauses between two of its iterations, so the steps taken are
        those of one uninterrupted `run` (a jump over decode steps may finish several requests,
        so more than `done` may have finished). `before_s`: pause earlier, before the first
        iteration that could read an arrival at or after `before_s` - ARRIVAL_TIE_S (`reads_past`),
        so that what was simulated depends only on the arrivals before that time."""
        n, rec, arrivals = len(self.prompt), self.rec, self.arrivals
        max_steps = self.config.max_steps
        # A decode step gives each running request one token: no run finishes in fewer steps
        # than this, so one past the guard is refused now (10M requests took minutes to reach it).
        if not self.step and n > self.config.max_requests:
            raise request_limit_error(self.config.max_requests, n)
        if not self.step and (sum(self.output) - n) / self.max_num_seqs > max_steps:
            raise step_limit_error(max_steps, n)
        target, polls, pausing = min(done, n), self.recv_every != 1, before_s < math.inf
        while self.done < target:
            if pausing and self.reads_past(before_s):
                return
            # a poll resets the receive counter, whatever came; without a receive interval every
            # step polls: `poll_s` is `seen_s`, read here without the two calls
            heard = self.poll_s() if polls else self.last_start_s if self.overlap else self.now_s
            if arrivals and arrivals[0][0] <= heard + ARRIVAL_TIE_S:
                self.take_arrivals(heard)
            if not self.running and not self.waiting:
                self._idle()
            elif not fast_forward(self):
                self.run_step()
            if rec.steps > max_steps:
                raise step_limit_error(max_steps, n)

    def reads_past(self, before_s: float) -> bool:
        """Whether the next iteration may read an arrival at or after `before_s` - ARRIVAL_TIE_S:
        it takes those up to its poll (at most now) + ARRIVAL_TIE_S, then an idle wait or a run
        of decode steps reads the next one (none: it may run to the last finish)."""
        if self.now_s + 2 * ARRIVAL_TIE_S >= before_s:
            return True
        taken_by = self.now_s + ARRIVAL_TIE_S
        for arrival_s, _ in self.arrivals:  # the first it cannot take is the one it reads
            if arrival_s > taken_by:
                return arrival_s + ARRIVAL_TIE_S >= before_s
        return True

    def take_arrivals(self, seen: float | None = None) -> None:
        """Queue the requests received by now (`poll_s`: under an overlap scheduler, those that
        arrived by the start of the step just run; under a receive interval, by the last poll).
        `seen`: what `poll_s()` answered the caller just now (asked again, it answers the same)."""
        arrivals, waiting = self.arrivals, self.waiting
        if seen is None:
            seen = self.poll_s()
        if arrivals and arrivals[-1][0] <= seen + ARRIVAL_TIE_S:  # all of them (a batch at once)
            waiting.extend([i for _, i in arrivals])
            arrivals.clear()
            self.dirty = True
        while arrivals and arrivals[0][0] <= seen + ARRIVAL_TIE_S:
            waiting.append(arrivals.popleft()[1])
            self.dirty = True

    def _idle(self) -> None:
        if not self.arrivals:
            raise RuntimeError("replica idle with requests unfinished and none to arrive")
        self.now_s = self.last_start_s = max(self.now_s, self.arrivals[0][0])  # polls at once
        self.recv_counter = self.recv_every
        if self.rule.ratio:  # SGLang resets the ratio when the scheduler goes idle
            self.ratio_base, self.ratio_steps = self.rule.ratio.init, 0

    def run_step(self) -> None:
        """One engine step, exactly."""
        planned = self.begin_step()
        self.finish_step(planned, self.model.step_time_s(*planned.load))

    def begin_step(self) -> PlannedStep:
        """Decide one engine step: victims, the prefill chunk, admissions, blocks; its load."""
        budget = self.config.max_num_batched_tokens
        self.swap_out_tokens = self.swap_in_tokens = 0
        if self.prefill_only and (planned := prefill_step(self)) is not None:
            return planned  # vLLM V0 without chunked prefill: this step runs prefills alone
        if self.exclusive_prefill:
            if (planned := exclusive_step(self, self._admit)) is not None:
                return planned  # SGLang: the prefill chunks run alone
            budget = 0  # a decode step: no chunk, no admission (no token budget left for one)
        cohort = self.cohort
        if self.partial is None and cohort.needs_at(self.step) <= self.free:
            preempted = False  # resolve_exhaustion would give up nobody
            # `_admit` asks first what a jump's `head_decision` asked just now, if one did
            # (the budget less the decoders, the blocks free less theirs)
            self.head_cand = known_admitted_head(self) if budget else None
        else:
            preempted = self.resolve_exhaustion(budget)
        decoders = cohort.count
        chunk_x, need_x = self._partial_plan(budget - decoders)
        self.free -= cohort.needs_at(self.step) + need_x
        if self.partial is not None:
            self.held[self.partial] += need_x
        admit = partial(swap_ins, self) if self.prefill_only else self._admit
        admitted, blocked = admit(budget - decoders - chunk_x, preempted)
        if self.exclusive_prefill:
            blocked = self.prefill_refused  # as exclusive_step found the head of the queue
        prefills = admitted
        if self.partial is not None and chunk_x:
            prefills = [*admitted, (self.partial, self.context[self.partial], chunk_x)]
        load = step_load(decoders, cohort.context_sum(self.step) + decoders, prefills)
        swapped = self.swap_out_tokens + self.swap_in_tokens
        swap_s = self.capacity.swap_seconds(swapped) if swapped else 0.0
        swap_s += self.reuse.take_load_s() if self.reuse is not None else 0.0  # tier loads
        return PlannedStep(chunk_x, admitted, preempted, blocked, load, swap_s)

    def finish_step(
        self, planned: PlannedStep, compute_s: float, shared_bytes: float = 0.0
    ) -> None:
        """Run `begin_step`'s step in `compute_s` s (+ swaps), also reading `shared_bytes`."""
        swap_s, load, blocked = planned.swap_s, planned.load, planned.blocked
        duration, used, rec = compute_s + swap_s, self.total - self.free, self.rec
        if planned.preempted or self.free == 0:
            rec.saturation(self.step, self.now_s + duration)
        start, self.now_s = self.now_s, self.now_s + duration
        self.last_start_s = start
        if self.recv_every > 1:
            self.count_step(bool(planned.admitted) or planned.chunk_x > 0)
        if self.reuse is not None:  # evict the cached blocks this step's allocations took
            self.reuse.settle(self.free, self.now_s)
        self._end_step(planned.chunk_x, planned.admitted, planned.preempted)
        rec.swapped_tokens += self.swap_out_tokens
        rec.swap_s += swap_s
        hbm_bytes = self.step_bytes(load) + shared_bytes
        running, waiting = len(self.running), len(self.waiting)
        rec.record(1, start, duration, used, used, running, waiting, hbm_bytes, load[0], blocked)
        self.step += 1

    def step_bytes(self, load: Load) -> float:
        """Bytes one GPU reads from HBM in a step of `load`, its own (`model.hbm_bytes`)."""
        return self.model.hbm_bytes(load[0], load[1], load[2])

    # --- running requests: blocks and victims ----------------------------------------------
    def resolve_exhaustion(self, budget: int) -> bool:
        """Give up victims until this step's new blocks fit; True if any was given up."""
        preempted = False
        while True:
            need = self.cohort.needs_at(self.step)
            need += self._partial_plan(budget - self.cohort.count)[1]
            if need <= self.free:
                break
            self.preempt(next_victim(self))
            preempted = True
        if preempted and self.rule.ratio:
            self.ratio_base = self.rule.ratio.after_retraction(*self._decoding_sums())
            self.ratio_steps = 0
        return preempted

    # --- admission --------------------------------------------------------------------------
    def _admit(self, budget: int, preempted: bool) -> tuple[list[tuple[int, int, int]], bool]:
        """Admit FCFS; returns [(request, context before, chunk)] and whether KV refused one."""
        started: list[tuple[int, int, int]] = []
        cands: list[Candidate] = []
        known, self.head_cand = self.head_cand, None  # the head, admitted by the caller's ask
        if preempted and not self.rule.admits_after_preemption:
            return started, False
        waiting, running, max_seqs = self.waiting, self.running, self.max_num_seqs
        while waiting and budget > 0 and len(running) < max_seqs:  # room for another
            i = waiting[0]
            if known is not None:  # the same question, asked with nothing changed since: True
                cand, known = known, None
            else:
                cand = candidate(self, i, budget, free=self.free)
                if not head_admissible(self, cand, cands, step=self.step, free=self.free):
                    return started, True
            waiting.popleft()
            kv, chunk, blocks = cand.kv_tokens, cand.chunk_tokens, cand.blocks_now
            self.free -= blocks
            running[i] = None
            self.seq += 1
            self.admit_seq[i], self.held[i] = self.seq, blocks
            self.context[i] = kv or cand.cached_tokens
            if self.retained is not None and self.preemptions[i] and not kv:
                self.retained.take(i, cand.cached_tokens // self.block_size, self.free + blocks)
                self.recomputed[i] -= cand.cached_tokens
            if self.reuse is not None and not kv:  # the blocks it hit are shared, not its own
                self.held[i] = self.reuse.held_blocks(
                    i, cand, blocks, self.now_s, resumed=self.preemptions[i] > 0
                )
            if i in self.landed:
                self.landed.discard(i)
            elif kv:
                self.swap_in_tokens += kv
                self.host_used -= kv
            started.append((i, self.context[i], chunk))  # KV before: swapped in or cached
            cands.append(cand)
            budget -= chunk
        return started, False
