"""A plain step-by-step serving simulator: one loop iteration = one engine step, Python objects,
no cleverness. The event-driven simulator (capcliff.sim.loop.replica) must agree with it exactly.

It follows the engines' own loops: vLLM's `schedule` walks the running list in order, allocating
each request's blocks and popping victims from the end when one does not fit; SGLang checks the
whole decode batch and retracts in its order until it fits. Admission decisions come from the
policy functions of capcliff.sim.policies (tested on their own in test_scheduler.py).
"""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass

import numpy as np

from capcliff.perf.step_time import StepTimeModel
from capcliff.sim.config import ARRIVAL_TIE_S, KVCapacity, PreemptionMode, SimConfig
from capcliff.sim.policies import (
    Candidate,
    Policy,
    Requeue,
    RunningState,
    VictimOrder,
)
from capcliff.sim.traffic.workload import Requests
from tests.reference_sglang import sglang_future_tokens


def blocks_for(tokens: int, block_size: int) -> int:
    return -(-tokens // block_size)


@dataclass
class Req:
    idx: int
    prompt: int
    output: int
    max_output: int
    arrival: float
    client: int
    context: int = 0
    generated: int = 0
    blocks: int = 0
    host_kv: int = 0
    landed: bool = False  # prompt KV computed elsewhere, first token generated, not yet admitted
    decoding: bool = False
    admit_seq: int = 0
    first_token: float = math.nan
    finish: float = math.nan
    preemptions: int = 0
    recomputed: int = 0

    @property
    def prefill_target(self) -> int:
        return self.prompt + self.generated


@dataclass
class RefResult:
    first_token_s: list[float]
    finish_s: list[float]
    arrival_s: list[float]
    preemptions: list[int]
    recomputed: list[int]
    steps: int
    scheduled_tokens: int
    swapped_tokens: int
    swap_s: float
    first_preemption: tuple[int, float] | None
    first_saturation: tuple[int, float] | None
    blocked_steps: int
    blocked_s: float
    peak_used: int
    max_used: int
    prefill_victims: int  # preemptions of a request part way through its prefill


class ReferenceSim:
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
        self.model, self.cap, self.cfg, self.rule = model, capacity, config, rule
        self.reqs = [
            Req(
                i,
                int(requests.input_tokens[i]),
                int(requests.output_tokens[i]),
                int(requests.max_output_tokens[i]),
                math.inf if math.isnan(requests.arrival_s[i]) else float(requests.arrival_s[i]),
                int(requests.client[i]),
            )
            for i in range(len(requests))
        ]
        if landed:
            for r in self.reqs:
                r.host_kv, r.generated, r.landed = r.prompt, 1, True
        self.think = requests.think_s.tolist()  # before each request a client sends
        self.joins = requests.joins_previous.tolist()  # sent together with the one before it
        self.B = capacity.block_size
        self.free = capacity.blocks
        self.running: list[Req] = []
        self.waiting: deque[Req] = deque()
        # vLLM V0 without chunked prefill: swapped-out requests, in the order they were swapped out
        self.swapped: deque[Req] = deque()
        self.not_arrived = [r for r in self.reqs if r.arrival < math.inf]
        self.later = [r for r in self.reqs if r.arrival == math.inf]
        self.outstanding = {r.client: 0 for r in self.reqs}  # sent and not finished, per client
        # sessions after a user's first wait in a shared pool, keyed (k-th session of its user,
        # user); a user whose session ends starts the pool's first (clients.py, the bench tools)
        self.pooled: dict[tuple[int, int], list[Req]] = {}
        if requests.has_content and self.later:
            node, parent = requests.content_node.tolist(), requests.content_parent.tolist()
            carried = set(node)
            session = [n if parent[n] < 0 or parent[n] not in carried else parent[n] for n in node]
            seen: dict[int, list[int]] = {}
            for r in self.reqs:
                keys = seen.setdefault(r.client, [])
                if not keys or keys[-1] != session[r.idx]:
                    keys.append(session[r.idx])
                if len(keys) > 1:
                    self.pooled.setdefault((len(keys) - 1, r.client), []).append(r)
            pooled_ids = {q.idx for part in self.pooled.values() for q in part}
            self.later = [r for r in self.later if r.idx not in pooled_ids]
        for r in self.not_arrived:
            self.outstanding[r.client] += 1
        self.t = 0.0
        # an overlap scheduler decides a step while the one before it runs: it takes the arrivals
        # up to that step's start (or the moment an idle engine wakes)
        self.overlap = model.overlap_schedule
        self.last_start = 0.0
        # SGLang --scheduler-recv-interval: a counter, +1 per decode-only step and +1000 per step
        # that prefills, starting ready; arrivals are received only when it reaches the interval
        self.recv_every = 1 if landed else config.scheduler_recv_interval
        self.recv_counter, self.heard = self.recv_every, 0.0
        self.step = 0
        self.seq = 0
        self.done = 0
        self.ratio_base = rule.ratio.init if rule.ratio else 0.0
        self.ratio_steps = 0
        self.dirty = True
        self.host_used = 0
        self.new_this_step: list[Req] = []
        self.scheduled_tokens = self.swapped_tokens = 0
        self.swap_s = 0.0
        self.first_preemption: tuple[int, float] | None = None
        self.first_saturation: tuple[int, float] | None = None
        self.blocked_steps = 0
        self.blocked_s = 0.0
        self.peak_used = 0
        self.prefill_victims = 0

    # the view the policy functions read
    @property
    def free_blocks(self) -> int:
        return self.free

    @property
    def total_blocks(self) -> int:
        return self.cap.blocks

    @property
    def block_size(self) -> int:
        return self.B

    @property
    def new_token_ratio(self) -> float:
        if self.rule.ratio is None:
            return 0.0
        return self.rule.ratio.value(self.ratio_base, self.ratio_steps)

    def _old_running(self) -> list[Req]:
        return [r for r in self.running if r not in self.new_this_step]

    def full_length_blocks(self) -> int:
        return sum(blocks_for(r.prompt + r.max_output, self.B) for r in self._old_running())

    def running_state(self) -> RunningState:
        old = self._old_running()
        return RunningState(
            np.array([r.prompt for r in old], dtype=np.int64),
            np.array([r.generated for r in old], dtype=np.int64),
            np.array([r.output for r in old], dtype=np.int64),
            np.array([r.max_output for r in old], dtype=np.int64),
            np.array([not r.decoding for r in old], dtype=bool),
        )

    def future_tokens(self, clip: int) -> int:
        state = self.running_state()
        return int(
            sglang_future_tokens(state.max_output_tokens, state.generated_tokens, clip).sum()
        )

    # the loop
    def run(self) -> RefResult:
        while self.done < len(self.reqs):
            seen = self.last_start if self.overlap else self.t
            if self.recv_every > 1:
                if self.recv_counter >= self.recv_every:
                    self.recv_counter, self.heard = 0, seen
                seen = self.heard
            for r in sorted(self.not_arrived, key=lambda q: (q.arrival, q.idx)):
                if r.arrival <= seen + ARRIVAL_TIE_S:
                    self.not_arrived.remove(r)
                    self.waiting.append(r)
                    self.dirty = True
            if not self.running and not self.waiting and not self.swapped:
                self.t = self.last_start = max(self.t, min(r.arrival for r in self.not_arrived))
                self.recv_counter = self.recv_every  # an idle scheduler polls at once
                if self.rule.ratio:
                    self.ratio_base, self.ratio_steps = self.rule.ratio.init, 0
                continue
            self.one_step()
        return RefResult(
            [r.first_token for r in self.reqs],
            [r.finish for r in self.reqs],
            [r.arrival for r in self.reqs],
            [r.preemptions for r in self.reqs],
            [r.recomputed for r in self.reqs],
            self.step,
            self.scheduled_tokens,
            self.swapped_tokens,
            self.swap_s,
            self.first_preemption,
            self.first_saturation,
            self.blocked_steps,
            self.blocked_s,
            self.peak_used,
            self.peak_used,
            self.prefill_victims,
        )

    def preempt(self, v: Req, swap_out: list[int]) -> None:
        self.running.remove(v)
        self.free += self.released_blocks(v, finished=False)
        self.prefill_victims += not v.decoding
        room = self.cap.host_kv_tokens - self.host_used
        if self.cfg.preemption is PreemptionMode.SWAP and v.decoding and v.context <= room:
            v.host_kv = v.context
            self.host_used += v.context
            swap_out.append(v.context)
        else:
            v.recomputed += v.context
        v.context, v.blocks, v.decoding = 0, 0, False
        if v.host_kv and not self.cfg.chunked_prefill:
            self.swapped.append(v)  # V0 `_schedule_default`: self.swapped.extend(swapped_out)
        elif self.rule.requeue is Requeue.FRONT:
            self.waiting.appendleft(v)
        else:
            self.waiting.append(v)
        v.preemptions += 1
        self.dirty = True
        if self.first_preemption is None:
            self.first_preemption = (self.step, self.t)

    def tokens_for(self, r: Req, budget: int) -> int:
        return 1 if r.decoding else min(r.prefill_target - r.context, budget)

    def need_for(self, r: Req, n: int) -> int:
        return max(0, blocks_for(r.context + n, self.B) - r.blocks)

    def schedule_running_vllm(self, swap_out: list[int]) -> tuple[list[tuple[Req, int]], bool]:
        """vLLM: walk the running list; pop victims from its end when blocks do not fit."""
        budget = self.cfg.max_num_batched_tokens
        scheduled: list[tuple[Req, int]] = []
        preempted = False
        i = 0
        while i < len(self.running) and budget > 0:
            r = self.running[i]
            n = self.tokens_for(r, budget)
            need = self.need_for(r, n)
            while need > self.free:
                if self.rule.victim_order is VictimOrder.NONE:
                    raise AssertionError("a no-evict policy ran out of blocks")
                victim = self.running[-1]
                self.preempt(victim, swap_out)
                preempted = True
                if victim is r:
                    break
            if r not in self.running:
                break
            self.free -= need
            r.blocks += need
            scheduled.append((r, n))
            budget -= n
            i += 1
        return scheduled, preempted

    def schedule_running_sglang(self, swap_out: list[int]) -> tuple[list[tuple[Req, int]], bool]:
        """SGLang: if the whole batch's next tokens do not fit, retract fewest-generated first."""
        preempted = False
        while True:
            plan = self.plan_all()
            if sum(self.need_for(r, n) for r, n in plan) <= self.free:
                break
            victim = min(self.running, key=lambda q: (q.generated, -q.prompt, -q.admit_seq))
            self.preempt(victim, swap_out)
            preempted = True
        plan = self.plan_all()
        for r, n in plan:
            need = self.need_for(r, n)
            self.free -= need
            r.blocks += need
        return [(r, n) for r, n in plan if n > 0], preempted

    def plan_all(self) -> list[tuple[Req, int]]:
        budget = self.cfg.max_num_batched_tokens
        plan = []
        for r in self.running:
            n = self.tokens_for(r, budget)
            plan.append((r, n))
            budget -= n
        return plan

    def candidate(self, r: Req, budget: int) -> Candidate:
        if r.host_kv:
            return Candidate(
                r.prompt,
                r.generated,
                r.output,
                r.max_output,
                r.host_kv,
                1,
                blocks_for(r.host_kv + 1, self.B),
            )
        todo = r.prefill_target
        chunk = min(todo, budget)
        blocks = blocks_for(todo if self.rule.whole_prompt_blocks else chunk, self.B)
        return Candidate(r.prompt, r.generated, r.output, r.max_output, 0, chunk, blocks)

    def admit(
        self,
        budget: int,
        swap_in: list[int],
        *,
        whole: bool = False,
        queue: deque[Req] | None = None,
    ) -> tuple[list[tuple[Req, int]], bool]:
        """FCFS from `queue` (the waiting queue unless given); `whole`: only whole prefills (stop
        at one that does not fit the budget)."""
        admitted: list[tuple[Req, int]] = []
        cands: list[Candidate] = []
        queue = self.waiting if queue is None else queue
        while queue and budget > 0 and len(self.running) < self.cfg.max_num_seqs:
            r = queue[0]
            cand = self.candidate(r, budget)
            if whole and cand.chunk_tokens < cand.prefill_tokens:
                return admitted, False
            if not self.running:
                ok = True
            elif self.rule.event_triggered and not self.dirty:
                ok = False
            else:
                ok = self.rule.admit(self, cand, cands)
                if not ok:
                    self.dirty = False
            if not ok:
                return admitted, True
            queue.popleft()
            self.free -= cand.blocks_now
            r.blocks = cand.blocks_now
            self.started(r, cand)
            self.seq += 1
            r.admit_seq = self.seq
            if r.host_kv:
                r.context, r.decoding = r.host_kv, True
                if not r.landed:
                    swap_in.append(r.host_kv)
                    self.host_used -= r.host_kv
                r.host_kv, r.landed = 0, False
            self.running.append(r)
            self.new_this_step.append(r)
            admitted.append((r, cand.chunk_tokens))
            cands.append(cand)
            budget -= cand.chunk_tokens
        return admitted, False

    def one_step(self) -> None:
        swap_out: list[int] = []
        swap_in: list[int] = []
        self.new_this_step = []
        if not self.cfg.chunked_prefill:
            self.one_step_v0(swap_out, swap_in)
            return
        if self.rule.victim_order is VictimOrder.FEWEST_GENERATED:
            scheduled, preempted = self.schedule_running_sglang(swap_out)
        else:
            scheduled, preempted = self.schedule_running_vllm(swap_out)
        if preempted and self.rule.ratio:
            old = [r for r in self.running if r.decoding]  # SGLang's running batch: no chunked req
            self.ratio_base = self.rule.ratio.after_retraction(
                sum(r.generated for r in old), sum(r.max_output for r in old), len(old)
            )
            self.ratio_steps = 0
        budget = self.cfg.max_num_batched_tokens - sum(n for _, n in scheduled)
        admitted: list[tuple[Req, int]] = []
        blocked = False
        if not (preempted and not self.rule.admits_after_preemption):
            admitted, blocked = self.admit(budget, swap_in)
        self.run_work(scheduled, admitted, swap_out, swap_in, preempted=preempted, blocked=blocked)

    def one_step_v0(self, swap_out: list[int], swap_in: list[int]) -> None:
        """vLLM V0 `_schedule_default` (chunked prefill off): with nobody swapped out, admit
        whole prefills FCFS (token budget, seats, `can_allocate`); if anyone was admitted the step
        runs them alone ("Don't schedule decodes if prefills are scheduled"). Else the running
        requests decode (LIFO victims) and, if none was given up, swapped-out requests come back."""
        admitted: list[tuple[Req, int]] = []
        scheduled: list[tuple[Req, int]] = []
        preempted = blocked = False
        if not self.swapped and self.waiting:
            admitted, blocked = self.admit(self.cfg.max_num_batched_tokens, swap_in, whole=True)
        if not admitted:
            scheduled, preempted = self.schedule_running_vllm(swap_out)
            if not preempted and self.swapped:  # `_schedule_swapped`, from the queue's front
                budget = self.cfg.max_num_batched_tokens - len(scheduled)
                admitted, blocked = self.admit(budget, swap_in, queue=self.swapped)
        self.run_work(scheduled, admitted, swap_out, swap_in, preempted=preempted, blocked=blocked)

    def run_work(
        self,
        scheduled: list[tuple[Req, int]],
        admitted: list[tuple[Req, int]],
        swap_out: list[int],
        swap_in: list[int],
        *,
        preempted: bool,
        blocked: bool,
    ) -> None:
        """Price and run the step's work: the running requests' tokens, then the admitted."""
        work = scheduled + admitted
        tokens = sum(n for _, n in work)
        ctx = sum(r.context + n for r, n in work)
        pairs = sum(n * r.context + n * (n + 1) // 2 for r, n in work)
        moved = sum(swap_out) + sum(swap_in)
        dt = self.model.step_time_s(tokens, len(work), ctx, pairs)
        dt += self.cap.swap_seconds(moved) + self.loads_s()
        self.account(dt, preempted=preempted, blocked=blocked, tokens=tokens)
        self.swapped_tokens += sum(swap_out)
        self.swap_s += self.cap.swap_seconds(moved)
        self.last_start = self.t
        self.t += dt
        prefilled = bool(admitted) or any(n > 0 and not r.decoding for r, n in scheduled)
        self.recv_counter += 1000 if prefilled else 1
        self.settle()
        for r, n in work:
            self.advance(r, n)
        if admitted:
            self.dirty = True
        if not preempted and self.rule.ratio:
            self.ratio_steps += 1
        self.step += 1

    def account(self, dt: float, *, preempted: bool, blocked: bool, tokens: int) -> None:
        self.peak_used = max(self.peak_used, self.cap.blocks - self.free)
        if (preempted or self.free == 0) and self.first_saturation is None:
            self.first_saturation = (self.step, self.t + dt)
        if blocked:
            self.blocked_steps += 1
            self.blocked_s += dt
        self.scheduled_tokens += tokens

    def advance(self, r: Req, n: int) -> None:
        r.context += n
        if not r.decoding:
            if r.context < r.prefill_target:
                return
            r.decoding = True
        if math.isnan(r.first_token):  # a landed request's first decode step emits it
            r.first_token = self.t
        r.generated += 1
        if r.generated == r.output:
            self.free += self.released_blocks(r, finished=True)
            self.running.remove(r)
            r.finish = self.t
            self.done += 1
            self.dirty = True
            self.outstanding[r.client] -= 1
            if self.outstanding[r.client]:
                return
            queue = [q for q in self.later if q.client == r.client]
            if not queue and self.pooled:
                queue = self.pooled.pop(min(self.pooled))
                for q in queue:
                    q.client = r.client
                self.later.extend(queue)
            wave = queue[:1]
            while wave and len(queue) > len(wave) and self.joins[queue[len(wave)].idx]:
                wave.append(queue[len(wave)])  # a fan-out wave is sent together
            for nxt in wave:
                self.later.remove(nxt)
                nxt.arrival = self.t + self.think[wave[0].idx]
                self.not_arrived.append(nxt)
                self.outstanding[r.client] += 1

    # hooks for prefix caching (tests/reference_reuse.py); without it, what the loop always did
    def started(self, r: Req, cand: Candidate) -> None:
        """Request r was admitted as `cand`."""

    def released_blocks(self, r: Req, *, finished: bool) -> int:
        """Blocks that become free when r stops running."""
        return r.blocks

    def settle(self) -> None:
        """The step's allocations are done (before anyone finishes)."""

    def loads_s(self) -> float:
        """Time of this step's loads from offload tiers (taken: the next step starts at 0)."""
        return 0.0
