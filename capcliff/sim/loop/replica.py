"""One replica's serving engine, simulated event by event (the design note's scheme).

Each loop iteration either runs one engine step exactly (when something happens: an admission, a
prefill chunk, a preemption) or jumps over a run of identical decode steps at once
(`capcliff.sim.loop.fast_forward`). A step: (1) if the running requests' new blocks do not fit,
give up victims in the policy's order until they do; (2) every decoding request writes one token,
a request part way through its prefill takes the next chunk of what budget is left; (3) waiting
requests are admitted FCFS while the policy agrees (head-of-line blocking); (4) the step's time
comes from the step-time model (+ swap transfers); requests that finish free their blocks.

Token accounting: a request with g tokens generated needs a prefill of prompt + g tokens (g > 0
after a recompute preemption); the step that completes it generates token g + 1. A decoding
request with g generated holds prompt + g - 1 tokens of KV; it finishes when g = output.
"""

from __future__ import annotations

import math
from collections import deque
from functools import partial

from capcliff.errors import InputError
from capcliff.perf.step_time import StepTimeModel
from capcliff.sim.config import KVCapacity, PreemptionMode, SimConfig
from capcliff.sim.loop.admission import AdmissionView, candidate
from capcliff.sim.loop.clients import ClientLoop
from capcliff.sim.loop.cohort import DecodeCohort
from capcliff.sim.loop.fast_forward import fast_forward
from capcliff.sim.loop.prefill_only import no_chunking, prefill_step, prefill_verdict, swap_ins
from capcliff.sim.loop.step_plan import Load, PlannedStep, step_load
from capcliff.sim.loop.thrash import handles
from capcliff.sim.loop.timeline import Recorder, ReplicaResult
from capcliff.sim.loop.victims import next_victim
from capcliff.sim.policies import Candidate, Policy, Requeue, VictimOrder
from capcliff.sim.reuse.prefix_reuse import replica_reuse
from capcliff.sim.traffic.workload import Requests
from capcliff.units import ceil_div


class ReplicaSim:
    """Simulates one replica over `requests` (local indices 0 .. n-1)."""

    def __init__(
        self,
        requests: Requests,
        model: StepTimeModel,
        capacity: KVCapacity,
        config: SimConfig,
        rule: Policy,
        *,
        landed: bool = False,
    ) -> None:
        n = len(requests)
        self.model, self.capacity, self.config, self.rule = model, capacity, config, rule
        self._per_request(requests)
        # Requests whose prompt KV was computed elsewhere (a prefill pool) and lands here with the
        # first token generated: admitted like a swap-in (one token, blocks for prompt + 1), free.
        self.landed: set[int] = set(range(n)) if landed else set()
        if landed:
            if min(self.output, default=2) < 2:
                raise InputError("landed requests: each needs an output of >= 2 tokens")
            self.host_kv, self.generated = list(self.prompt), [1] * n
        self.block_size, self.total = capacity.block_size, capacity.blocks
        self.line_terms: dict[int, tuple[float, ...]] = {}  # decode lines' terms, for `thrash`
        self.free = capacity.blocks
        self.cohort = DecodeCohort(n, capacity.block_size)
        self.running: dict[int, None] = {}  # running order = admission order
        self.waiting: deque[int] = deque()
        self.partial: int | None = None  # the running request part way through its prefill
        self.step, self.now_s, self.done, self.seq = 0, 0.0, 0, 0
        self.ratio_base, self.ratio_steps = (rule.ratio.init if rule.ratio else 0.0), 0
        self.dirty = True  # the running set or the queue changed since admission was decided
        self.full_blocks_sum = 0  # over running requests admitted before this step
        self.host_used = self.max_output_sum = self.swap_out_tokens = self.swap_in_tokens = 0
        self.rec = Recorder(capacity.blocks, model.peak_bandwidth_bytes_per_s)
        self.whole_prompt_blocks = rule.whole_prompt_blocks
        # gives up its latest admissions, drops their KV, admits nobody in that step
        self.preempts_latest_and_waits = (
            rule.victim_order is VictimOrder.LIFO
            and not rule.admits_after_preemption
            and config.preemption is PreemptionMode.RECOMPUTE
        )
        self.max_num_seqs = config.max_num_seqs
        self.prefill_only, self.prefill_refused = no_chunking(self, landed=landed), False
        self.clients = ClientLoop(requests, self.arrival)
        self.arrivals = self.clients.arrivals
        self.reuse = replica_reuse(requests, capacity, model, config, rule)
        self.inline = handles(self)  # vLLM-like: its thrashing and admission steps run inlined

    def _per_request(self, requests: Requests) -> None:
        """Per-request state as Python lists (scalar access is what the event loop does)."""
        n = len(requests)
        self.prompt: list[int] = requests.input_tokens.tolist()
        self.output: list[int] = requests.output_tokens.tolist()
        self.max_output: list[int] = requests.max_output_tokens.tolist()
        self.requests = requests
        self.arrival = [math.inf if math.isnan(a) else a for a in requests.arrival_s.tolist()]
        self.context = [0] * n  # KV tokens (not kept up to date while decoding: see cohort)
        self.generated = [0] * n
        self.held = [0] * n  # blocks held while not decoding
        self.host_kv = [0] * n  # tokens swapped out to the host
        self.admit_seq = [0] * n
        self.first_token_s = [math.nan] * n
        self.finish_s = [math.nan] * n
        self.preemptions = [0] * n
        self.recomputed = [0] * n

    @property
    def new_token_ratio(self) -> float:
        """SGLang's new-token ratio now (0 for other policies)."""
        return self.rule.ratio.value(self.ratio_base, self.ratio_steps) if self.rule.ratio else 0.0

    # --- the loop ---------------------------------------------------------------------------
    def run(self) -> ReplicaResult:
        """Simulate until every request has finished."""
        n, rec, arrivals = len(self.prompt), self.rec, self.arrivals
        max_steps = self.config.max_steps
        while self.done < n:
            if arrivals and arrivals[0][0] <= self.now_s:
                self.take_arrivals()
            if not self.running and not self.waiting:
                self._idle()
            elif not fast_forward(self):
                self.run_step()
            if rec.steps > max_steps:
                raise RuntimeError(f"simulation did not finish in {max_steps} steps")
        return self.result()

    def take_arrivals(self) -> None:
        """Queue the requests that have arrived by now."""
        arrivals, waiting, now = self.arrivals, self.waiting, self.now_s
        while arrivals and arrivals[0][0] <= now:
            waiting.append(arrivals.popleft()[1])
            self.dirty = True

    def _idle(self) -> None:
        if not self.arrivals:
            raise RuntimeError("replica idle with requests unfinished and none to arrive")
        self.now_s = max(self.now_s, self.arrivals[0][0])
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
        cohort = self.cohort
        if self.partial is None and cohort.needs_at(self.step) <= self.free:
            preempted = False  # resolve_exhaustion would give up nobody
        else:
            preempted = self.resolve_exhaustion(budget)
        decoders = cohort.count
        chunk_x, need_x = self._partial_plan(budget - decoders)
        self.free -= cohort.needs_at(self.step) + need_x
        if self.partial is not None:
            self.held[self.partial] += need_x
        admit = partial(swap_ins, self) if self.prefill_only else self._admit
        admitted, blocked = admit(budget - decoders - chunk_x, preempted)
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
    def _partial_plan(self, budget: int) -> tuple[int, int]:
        """(chunk, new blocks) of the request part way through its prefill."""
        x = self.partial
        if x is None:
            return 0, 0
        chunk = max(0, min(self.prompt[x] + self.generated[x] - self.context[x], budget))
        need = max(0, ceil_div(self.context[x] + chunk, self.block_size) - self.held[x])
        return chunk, need

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

    def _decoding_sums(self) -> tuple[int, int, int]:
        """(generated, max_output, count) of SGLang's running batch: no chunked request."""
        out, n = (self.max_output[x], 1) if (x := self.partial) is not None else (0, 0)
        running = len(self.running) - n
        return self.cohort.generated_sum(self.step), self.max_output_sum - out, running

    def preempt(self, v: int) -> None:
        """Give up running request v: free its blocks, swap its KV out (if the mode and the host
        pool allow) or drop it for a later recompute, and requeue it as the policy says."""
        decoding = v != self.partial
        step = self.step
        if decoding:
            ctx, self.generated[v] = self.cohort.remove(v, step)
            held = -(-ctx // self.block_size)
        else:
            ctx, held, self.partial = self.context[v], self.held[v], None
        if self.reuse is not None:  # its hit blocks were never its own
            held = self.reuse.freed_blocks(v, held, ctx, self.now_s, finished=False)
        self.free += held
        self._leave_running(v)
        if (
            decoding
            and self.config.preemption is PreemptionMode.SWAP
            and ctx <= self.capacity.host_kv_tokens - self.host_used
        ):
            self.host_kv[v] = ctx
            self.host_used += ctx
            self.swap_out_tokens += ctx
        else:
            self.recomputed[v] += ctx
        self.context[v] = self.held[v] = 0
        if self.rule.requeue is Requeue.FRONT:
            self.waiting.appendleft(v)
        else:
            self.waiting.append(v)
        self.preemptions[v] += 1
        self.rec.preemption(step, self.now_s)

    def _leave_running(self, i: int) -> None:
        del self.running[i]
        max_output = self.max_output[i]
        self.full_blocks_sum -= -(-(self.prompt[i] + max_output) // self.block_size)
        self.max_output_sum -= max_output
        self.dirty = True

    # --- admission --------------------------------------------------------------------------
    def head_admissible(
        self, cand: Candidate, admitted: list[Candidate], *, step: int, free: int
    ) -> bool:
        """The policy's verdict on the head of the queue at the start of `step` with `free` free
        blocks (an idle replica always admits). Reads the replica without changing it, except
        that an event-triggered policy's refusal is remembered until the running set or the
        queue changes (`dirty`)."""
        if not self.running:
            return True
        if self.rule.event_triggered and not self.dirty:
            return False
        ok = self.rule.admit(AdmissionView(self, step=step, free=free), cand, admitted)
        if not ok:
            self.dirty = False
        return ok

    def head_verdict(self, *, step: int, free: int) -> Candidate | bool:
        """Would the head of the queue be admitted in `step` if `free` blocks were free at its
        start? Admission is decided after the running requests' new blocks of that step are
        allocated. True if admitted; False if nobody could be (empty queue, no token budget or
        no seat); else the refused candidate."""
        if self.prefill_only:
            return prefill_verdict(self, step=step, free=free)
        budget = self.config.max_num_batched_tokens - self.cohort.count
        if not (self.waiting and budget > 0 and len(self.running) < self.max_num_seqs):
            return False
        after = free - self.cohort.needs_at(step)
        cand = candidate(self, self.waiting[0], budget, free=after)
        return True if self.head_admissible(cand, [], step=step, free=after) else cand

    def _admit(self, budget: int, preempted: bool) -> tuple[list[tuple[int, int, int]], bool]:
        """Admit FCFS; returns [(request, context before, chunk)] and whether KV refused one."""
        started: list[tuple[int, int, int]] = []
        cands: list[Candidate] = []
        if preempted and not self.rule.admits_after_preemption:
            return started, False
        waiting, running, max_seqs = self.waiting, self.running, self.max_num_seqs
        while waiting and budget > 0 and len(running) < max_seqs:  # room for another
            i = waiting[0]
            cand = candidate(self, i, budget, free=self.free)
            if not self.head_admissible(cand, cands, step=self.step, free=self.free):
                return started, True
            waiting.popleft()
            kv, chunk, blocks = cand.kv_tokens, cand.chunk_tokens, cand.blocks_now
            self.free -= blocks
            running[i] = None
            self.seq += 1
            self.admit_seq[i], self.held[i] = self.seq, blocks
            self.context[i] = kv or cand.cached_tokens
            if self.reuse is not None and not kv:  # the blocks it hit are shared, not its own
                self.held[i] = self.reuse.held_blocks(i, cand, blocks, self.now_s)
            if i in self.landed:
                self.landed.discard(i)
            elif kv:
                self.swap_in_tokens += kv
                self.host_used -= kv
            started.append((i, self.context[i], chunk))  # KV before: swapped in or cached
            cands.append(cand)
            budget -= chunk
        return started, False

    # --- end of a step ----------------------------------------------------------------------
    def _end_step(
        self, chunk_x: int, admitted: list[tuple[int, int, int]], preempted: bool
    ) -> None:
        cohort, size = self.cohort, self.block_size
        for i in cohort.pop_finishing(self.step):
            ctx, _ = cohort.remove(i, self.step + 1)
            self.complete(i, -(-ctx // size))
        x, self.partial = self.partial, None
        if x is not None:
            self._advance_all([(x, 0, chunk_x)])
        if admitted:
            prompt, max_output, host_kv = self.prompt, self.max_output, self.host_kv
            for i, _, _ in admitted:
                self.full_blocks_sum += -(-(prompt[i] + max_output[i]) // size)
                self.max_output_sum += max_output[i]
                host_kv[i] = 0
            self._advance_all(admitted)
            self.dirty = True
        if not preempted and self.rule.ratio:
            self.ratio_steps += 1

    def _advance_all(self, entries: list[tuple[int, int, int]]) -> None:
        """Each (request, _, chunk) in order computed `chunk` tokens this step."""
        context, held, generated, prompt, output = (
            self.context, self.held, self.generated, self.prompt, self.output
        )  # fmt: skip
        size, whole, cohort, first_token_s = (
            self.block_size, self.whole_prompt_blocks, self.cohort, self.first_token_s
        )  # fmt: skip
        step, tracks = self.step + 1, self.rule.victim_order is VictimOrder.FEWEST_GENERATED
        for i, _, chunk in entries:
            context[i] = ctx = context[i] + chunk
            if not whole:
                held[i] = -(-ctx // size)
            g = generated[i]
            if ctx < prompt[i] + g:
                self.partial = i
                continue
            generated[i] = g = g + 1
            if first_token_s[i] != first_token_s[i]:  # NaN: its first token
                first_token_s[i] = self.now_s
            if g == output[i]:
                self.complete(i, -(-ctx // size))
                continue
            cohort.add(i, context=ctx, generated=g, output=output[i], step=step)
            if tracks:
                cohort.track_victims(i, prompt=prompt[i], admit_seq=self.admit_seq[i])

    def complete(self, i: int, blocks: int) -> None:
        """Request i finished at the end of the current step; it frees `blocks` blocks."""
        if self.reuse is not None:  # it holds prompt + output - 1 tokens of KV
            ctx = self.prompt[i] + self.output[i] - 1
            blocks = self.reuse.freed_blocks(i, blocks, ctx, self.now_s, finished=True)
        self.free += blocks
        self._leave_running(i)
        self.finish_s[i] = self.now_s
        self.done += 1
        self.clients.finished(i, self.now_s)

    def result(self) -> ReplicaResult:
        """The finished replica's timings and records."""
        return self.rec.result(
            arrival_s=self.arrival,
            first_token_s=self.first_token_s,
            finish_s=self.finish_s,
            output_tokens=self.output,
            preemptions=self.preemptions,
            recomputed_tokens=self.recomputed,
            reuse=None if self.reuse is None else self.reuse.record(),
        )
