"""vLLM V0's default scheduler, chunked prefill off: a step runs prefills or decodes, never both.

vllm/core/scheduler.py `Scheduler._schedule_default` (v0.6.x-v0.7.x): when no request is swapped
out, `_schedule_prefills(enable_chunking=False)` takes waiting requests FCFS, each with its whole
prefill (the prompt, plus the tokens generated before a recompute preemption), while the token
budget (max_num_batched_tokens, counting only these prefills), the seats (max_num_seqs, counting
the running requests) and the block manager's `can_allocate` (whole prompt, watermark:
`vllm_v0_admit`) allow. "Don't schedule decodes if prefills are scheduled": a step that admitted
anyone runs those prefills alone. Otherwise it is a decode step of the running requests
(`_schedule_running`, LIFO preemption when blocks run out) and, unless that preempted, swapped-out
requests come back (`_schedule_swapped`); a new prompt is never admitted in a decode step.

V0 keeps swapped-out requests in a queue of their own (`Scheduler.swapped`), extended with each
step's swap-outs in the order they happened and served from its front (`_schedule_swapped`: no
sorting in v0.6-v0.7; it stops at the first that `can_swap_in` or the budget refuses). While it is
not empty no prefill is scheduled. capcliff keeps swapped-out requests in the waiting queue with the
recompute-preempted ones, each put at the front when preempted (`Requeue.FRONT`), so V0's swapped
queue is the swapped-out requests of the queue's preempted prefix, last first (`swapped_queue`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from capcliff.errors import InputError
from capcliff.sim.loop.admission import candidate, head_admissible
from capcliff.sim.loop.step_plan import PlannedStep, step_load
from capcliff.sim.policies import Candidate

if TYPE_CHECKING:
    from capcliff.sim.loop.state import ReplicaState

Admitted = list[tuple[int, int, int]]  # (request, context before, tokens this step)


def no_chunking(sim: ReplicaState, *, landed: bool) -> bool:
    """Whether `sim` runs prefill-only steps (SimConfig.chunked_prefill off). Its token budget
    must hold every request's whole prefill: V0's SchedulerConfig refuses max_num_batched_tokens
    < max_model_len without chunked prefill (`_verify_args`). A disaggregated decode pool
    (`landed`) runs no prefills: its requests land with their KV and come in like swap-ins, so
    the setting changes nothing there (modelled)."""
    if sim.config.chunked_prefill or landed:
        return False
    longest = max((p + m for p, m in zip(sim.prompt, sim.max_output, strict=True)), default=0)
    if longest > sim.config.max_num_batched_tokens:
        raise InputError(
            f"max_num_batched_tokens ({sim.config.max_num_batched_tokens}) must be >= the longest"
            f" request ({longest} tokens) when chunked prefill is off"
        )
    return True


def prefill_step(sim: ReplicaState) -> PlannedStep | None:
    """The prefill-only step starting now with its admissions made, or None when it admits
    nobody (then the step decodes; `sim.prefill_refused` says whether KV refused the head)."""
    sim.prefill_refused = False
    if sim.host_used or not sim.waiting:  # swapped-out requests come first
        return None
    budget = sim.config.max_num_batched_tokens
    started: Admitted = []
    cands: list[Candidate] = []
    waiting, running = sim.waiting, sim.running
    while waiting and len(running) < sim.max_num_seqs:
        i = waiting[0]
        cand = candidate(sim, i, budget, free=sim.free)
        if cand.chunk_tokens < cand.prefill_tokens:  # the whole prefill does not fit the budget
            break
        if not head_admissible(sim, cand, cands, step=sim.step, free=sim.free):
            sim.prefill_refused = True
            break
        waiting.popleft()
        sim.free -= cand.blocks_now
        running[i] = None
        sim.seq += 1
        sim.admit_seq[i], sim.held[i] = sim.seq, cand.blocks_now
        started.append((i, 0, cand.chunk_tokens))
        cands.append(cand)
        budget -= cand.chunk_tokens
    if not started:
        return None
    sim.cohort.hold()  # the decoding requests wait out this step
    return PlannedStep(0, started, False, sim.prefill_refused, step_load(0, 0, started), 0.0)


def swapped_queue(sim: ReplicaState) -> list[int]:
    """V0's swapped queue: the swapped-out requests, first swapped out first. The waiting queue
    starts with every preempted request (each was put at the front, the latest first), then the
    never-admitted ones in arrival order; O(preempted requests waiting)."""
    preemptions, host_kv = sim.preemptions, sim.host_kv
    swapped: list[int] = []
    for i in sim.waiting:
        if not preemptions[i]:
            break
        if host_kv[i]:
            swapped.append(i)
    swapped.reverse()
    return swapped


def swap_ins(sim: ReplicaState, budget: int, preempted: bool) -> tuple[Admitted, bool]:
    """A decode step's admissions: swapped-out requests in V0's order, unless the step
    preempted; (admitted, refused for KV)."""
    if preempted or not sim.host_used:
        return [], sim.prefill_refused
    started: Admitted = []
    cands: list[Candidate] = []
    waiting, running = sim.waiting, sim.running
    for i in swapped_queue(sim):
        if budget <= 0 or len(running) >= sim.max_num_seqs:
            break
        cand = candidate(sim, i, budget, free=sim.free)
        if not head_admissible(sim, cand, cands, step=sim.step, free=sim.free):
            return started, True
        waiting.remove(i)  # within the preempted prefix
        sim.free -= cand.blocks_now
        running[i] = None
        sim.seq += 1
        sim.admit_seq[i], sim.held[i] = sim.seq, cand.blocks_now
        sim.context[i] = kv = cand.kv_tokens
        sim.swap_in_tokens += kv
        sim.host_used -= kv
        started.append((i, kv, 1))
        cands.append(cand)
        budget -= 1
    return started, False


def prefill_verdict(sim: ReplicaState, *, step: int, free: int) -> Candidate | bool:
    """`head.head_verdict` without chunking: would `step`, with `free` blocks free at its
    start, admit anyone (a prefill step, or a swap-in after its decodes)?"""
    if not sim.waiting or len(sim.running) >= sim.max_num_seqs:
        return False
    if sim.host_used:  # a decode step that swaps back the first of the swapped queue
        budget = sim.config.max_num_batched_tokens - sim.cohort.count
        if budget <= 0:
            return False
        free -= sim.cohort.needs_at(step)
        cand = candidate(sim, swapped_queue(sim)[0], budget, free=free)
    else:
        cand = candidate(sim, sim.waiting[0], sim.config.max_num_batched_tokens, free=free)
    return True if head_admissible(sim, cand, [], step=step, free=free) else cand
