"""The state of one replica's engine and the changes every part of its loop makes to it.

`ReplicaState` holds the per-request lists, the running set and the queue, the free blocks, the
decode cohort, the recorder and the prefix-cache hook, and the state changes that are the same
whichever part of the loop makes them: giving up a victim (`preempt`), ending a step
(`_end_step`: prefill chunks land, first tokens, finished requests) and completing a request.
The parts of the loop (admission, victim choice, prefill-only steps, fast-forwarding, thrash
cycles) take a `ReplicaState`; `ReplicaSim` (`capcliff.sim.loop.replica`) is the loop that calls
them, so nothing here imports it.

Token accounting: a request with g tokens generated needs a prefill of prompt + g tokens (g > 0
after a recompute preemption); the step that completes it generates token g + 1. A decoding
request with g generated holds prompt + g - 1 tokens of KV; it finishes when g = output.
"""

from __future__ import annotations

import math
from collections import deque
from typing import ClassVar

import numpy as np

from capcliff.errors import InputError
from capcliff.perf.step_time import StepTimeModel
from capcliff.sim.config import RECV_WEIGHT_EXTEND, KVCapacity, PreemptionMode, SimConfig
from capcliff.sim.loop.clients import ClientLoop
from capcliff.sim.loop.cohort import DecodeCohort
from capcliff.sim.loop.timeline import Recorder, ReplicaResult
from capcliff.sim.policies import Candidate, Policy, Requeue, RunningState, VictimOrder
from capcliff.sim.reuse.prefix_reuse import replica_reuse
from capcliff.sim.reuse.retained_kv import RetainedKV
from capcliff.sim.traffic.workload import Requests
from capcliff.units import ceil_div


class ReplicaState:
    """One replica's engine state over `requests` (local indices 0 .. n-1)."""

    RECEIVES_EVERY_STEP: ClassVar[bool] = False  # True: no receive interval modelled (a pool)

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
        # admission.running_state's last arrays and the (step, cohort changes, partial,
        # its generated tokens) they hold for
        self.running_memo: tuple[tuple[int, int, int, int], RunningState] | None = None
        self.step, self.now_s, self.done, self.seq = 0, 0.0, 0, 0
        # An overlap scheduler (`StepTimeModel.overlap_schedule`) decides a step when the one
        # before it starts: the arrivals it can take are those up to that start (`last_start_s`,
        # the start of the latest step, or the moment an idle replica wakes), not up to now.
        self.overlap = model.overlap_schedule
        self.last_start_s = 0.0
        # SGLang --scheduler-recv-interval (SimConfig.scheduler_recv_interval): arrivals are
        # received only at polls (`poll_s`), up to `heard_s`; not modelled for the two pools of
        # disaggregated serving (their requests land from a transfer queue)
        self.recv_every = (
            1 if landed or self.RECEIVES_EVERY_STEP else config.scheduler_recv_interval
        )
        self.recv_counter, self.heard_s = self.recv_every, 0.0
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
        # SGLang's retraction order: the cohort keeps its members in it too (`_advance_all`)
        self.tracks_victims = rule.victim_order is VictimOrder.FEWEST_GENERATED
        # set by ReplicaSim: the policy's prefill-only steps and inlined thrash/admission steps
        self.prefill_only, self.prefill_refused, self.inline = False, False, False
        self.exclusive_prefill = False  # set by ReplicaSim: prefill steps decode nobody
        # (step, free blocks, the head of the queue as admitted then): a jump refused for an
        # admission (`head.known_admitted_head`), and that candidate handed to the admission loop
        self.known_head: tuple[int, int, Candidate] | None = None
        self.head_cand: Candidate | None = None
        self.clients = ClientLoop(requests, self.arrival)
        self.arrivals = self.clients.arrivals
        self.reuse = replica_reuse(requests, capacity, model, config, rule)
        # vLLM V1's cache where nothing is shared: only a preempted request's own blocks hit
        # (not modelled for the pools of disaggregated serving)
        self.retained = (
            RetainedKV(capacity.block_size)
            if config.keeps_preempted_kv and not landed and not self.RECEIVES_EVERY_STEP
            else None
        )
        self._choose_paths(landed)

    def _per_request(self, requests: Requests) -> None:
        """Per-request state as Python lists (scalar access is what the event loop does)."""
        n = len(requests)
        self.prompt: list[int] = requests.input_tokens.tolist()
        self.output: list[int] = requests.output_tokens.tolist()
        self.max_output: list[int] = requests.max_output_tokens.tolist()
        self.max_output_top = max(self.max_output, default=0)  # no running request's is larger
        self.requests = requests
        arrival_s = requests.arrival_s
        # every request timed (no client sends one): the list stays these times, and the result
        # copies the array instead of converting the list back
        self.all_timed = bool(np.isfinite(arrival_s).all())
        self.arrival: list[float] = (
            arrival_s.tolist()
            if self.all_timed
            else np.where(np.isnan(arrival_s), math.inf, arrival_s).tolist()
        )
        self.context = [0] * n  # KV tokens (not kept up to date while decoding: see cohort)
        self.generated = [0] * n
        self.held = [0] * n  # blocks held while not decoding
        self.host_kv = [0] * n  # tokens swapped out to the host
        self.admit_seq = [0] * n
        self.first_token_s = [math.nan] * n
        self.finish_s = [math.nan] * n
        self.preemptions = [0] * n
        self.recomputed = [0] * n

    def _choose_paths(self, landed: bool) -> None:
        """Set `prefill_only` and `inline` once the state is built (the loop does)."""

    @property
    def seen_s(self) -> float:
        """The latest arrival time the step about to be decided can take: now, or under an
        overlap scheduler the start of the step just run (it was decided while that one ran)."""
        return self.last_start_s if self.overlap else self.now_s

    def poll_s(self) -> float:
        """The latest arrival time received by the step about to be decided: `seen_s`, or under
        --scheduler-recv-interval N the one of the latest poll, which happens here once N decode
        steps (or one step that prefilled) have run since the one before."""
        if self.recv_every == 1:
            return self.seen_s
        if self.recv_counter >= self.recv_every:
            self.recv_counter, self.heard_s = 0, self.seen_s
        return self.heard_s

    def count_step(self, prefilled: bool) -> None:
        """The receive counter after one step (`poll_s`)."""
        self.recv_counter += RECV_WEIGHT_EXTEND if prefilled else 1

    @property
    def new_token_ratio(self) -> float:
        """SGLang's new-token ratio now (0 for other policies)."""
        return self.rule.ratio.value(self.ratio_base, self.ratio_steps) if self.rule.ratio else 0.0

    def _partial_plan(self, budget: int) -> tuple[int, int]:
        """(chunk, new blocks) of the request part way through its prefill."""
        x = self.partial
        if x is None:
            return 0, 0
        chunk = max(0, min(self.prompt[x] + self.generated[x] - self.context[x], budget))
        need = max(0, ceil_div(self.context[x] + chunk, self.block_size) - self.held[x])
        return chunk, need

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
        elif self.retained is not None and self.config.preemption is PreemptionMode.RECOMPUTE:
            self.retained.preempted(v, ctx, self.free)
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
            self.recomputed[v] += ctx  # less what it hits when it is admitted again
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

    # --- end of a step ----------------------------------------------------------------------
    def _end_step(
        self, chunk_x: int, admitted: list[tuple[int, int, int]], preempted: bool
    ) -> None:
        cohort, size, step = self.cohort, self.block_size, self.step
        # `finishing`, one call less where no prefix cache orders the frees
        for i in cohort.pop_finishing(step) if self.reuse is None else self.finishing(step):
            ctx, _ = cohort.remove(i, step + 1)
            self.complete(i, -(-ctx // size))
        x, self.partial = self.partial, None
        # the chunk of the request part way through its prefill first, then the admitted ones
        # (the running sums the admissions add commute with what advancing x changes)
        if x is not None:
            self._advance_all([(x, 0, chunk_x)], False)
        if admitted:
            self._advance_all(admitted, True)  # admitted in it
            self.dirty = True
        if not preempted and self.rule.ratio:
            self.ratio_steps += 1

    def _advance_all(self, entries: list[tuple[int, int, int]], admitted: bool) -> None:
        """Each (request, _, chunk) in order computed `chunk` tokens this step; `admitted`: they
        were admitted in it (they join the running sums and leave the host)."""
        context, held, generated, prompt, output = (
            self.context, self.held, self.generated, self.prompt, self.output
        )  # fmt: skip
        size, whole, cohort, first_token_s = (
            self.block_size, self.whole_prompt_blocks, self.cohort, self.first_token_s
        )  # fmt: skip
        step, tracks = self.step + 1, self.tracks_victims
        max_output, host_kv = self.max_output, self.host_kv
        for i, _, chunk in entries:
            if admitted:
                self.full_blocks_sum += -(-(prompt[i] + max_output[i]) // size)
                self.max_output_sum += max_output[i]
                host_kv[i] = 0
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
            cohort.add(i, ctx, g, output[i], step)  # context, generated, output, step
            if tracks:
                cohort.track_victims(i, prompt=prompt[i], admit_seq=self.admit_seq[i])

    def finishing(self, step: int) -> list[int]:
        """Decoding requests whose last token is generated in `step`, in running order (the order
        they were admitted). vLLM V1's `update_from_output` (vllm/v1/core/sched/scheduler.py)
        frees finished requests in the order they were scheduled, running ones first in
        `self.running` order, and `free_blocks` appends each one's blocks to the free queue's
        tail: with a prefix cache the one freed first is evicted first."""
        done = self.cohort.pop_finishing(step)
        if self.reuse is not None and len(done) > 1:
            done.sort(key=self.admit_seq.__getitem__)
        return done

    def complete(self, i: int, blocks: int) -> None:
        """Request i finished at the end of the current step; it frees `blocks` blocks."""
        if self.reuse is not None:  # it holds prompt + output - 1 tokens of KV
            ctx = self.prompt[i] + self.output[i] - 1
            blocks = self.reuse.freed_blocks(i, blocks, ctx, self.now_s, finished=True)
        elif self.retained is not None:
            self.retained.finished(self.prompt[i] + self.output[i] - 1, self.free)
        self.free += blocks
        self._leave_running(i)
        self.finish_s[i] = self.now_s
        self.done += 1
        clients = self.clients
        if clients.queue:  # else nobody waits for a client: `finished` would do nothing
            clients.finished(i, self.now_s)

    def result(self) -> ReplicaResult:
        """The finished replica's timings and records."""
        requests, n = self.requests, len(self.prompt)
        # Every preemption is recorded (`Recorder.first_preemption`), and a request's recompute
        # count changes only once it was preempted: none recorded, both lists are zeros, made as
        # arrays without reading the lists (a result is taken after every leg of a run).
        preempted = self.rec.first_preemption is not None
        return self.rec.result(
            arrival_s=requests.arrival_s if self.all_timed else self.arrival,
            first_token_s=self.first_token_s,
            finish_s=self.finish_s,
            output_tokens=requests.output_tokens,  # never changed: `self.output` is its copy
            preemptions=self.preemptions if preempted else np.zeros(n, dtype=np.int64),
            recomputed_tokens=self.recomputed if preempted else np.zeros(n, dtype=np.int64),
            reuse=None if self.reuse is None else self.reuse.record(),
        )
