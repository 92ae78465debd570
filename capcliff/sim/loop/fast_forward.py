"""Runs of identical decode steps, jumped over in one go.

While no request arrives, finishes, needs a prefill chunk or fails to get a block, and the policy
would admit nobody, every step is the same: each running request writes one token. The run ends
at the first of: the step in which a request finishes (included), the last step before the
blocks run out (found from the cohort's phase histogram), the last step before an arrival that
could be admitted (found on the closed-form time axis), and, for SGLang, the last step before
the decaying new_token_ratio would let the head of the queue in.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import TYPE_CHECKING, Protocol

import numpy as np

from capcliff.sim.config import ARRIVAL_TIE_S
from capcliff.sim.loop.admit_step import exact_step
from capcliff.sim.loop.head import head_decision, head_verdict
from capcliff.sim.loop.thrash import (
    decode_run,
    decode_run_s,
    empty_step,
    line_terms_of,
    run_thrash,
)
from capcliff.sim.policies import (
    SGLANG_CLIP_MAX_NEW_TOKENS,
    Candidate,
    sglang_admissible,
)

# Steps `_sglang_limit` scans one at a time, then steps in the first of its numpy windows
# (set: any sizes give the same answer).
SGLANG_SCALAR_STEPS = 64
SGLANG_WINDOW_STEPS = 256

if TYPE_CHECKING:
    from capcliff.sim.loop.state import ReplicaState


class DecodeRun(Protocol):
    """The time axis and the bytes one GPU reads over a run of identical decode steps
    (`DecodeLine` for one replica, `LockstepLine` for attention-DP ranks)."""

    def total_s(self, k: int) -> float:
        """Seconds of steps 0 .. k-1."""
        ...

    def total_bytes(self, k: int) -> float:
        """Bytes one GPU reads over steps 0 .. k-1."""
        ...


def fast_forward(sim: ReplicaState) -> bool:
    """Jump over the run of identical decode steps starting now; False if the next step is not
    one (then the caller runs it exactly)."""
    co = sim.cohort
    count = co.count
    if count == 0:
        return False
    if sim.partial is not None:  # a prefill chunk: an exact step
        return sim.inline and exact_step(sim) is True
    if len(sim.running) != count:
        return False
    # the next step needs more blocks than are free (`needs_at`, without the call: per event)
    if co.phase_counts[sim.step % co.block_size] > sim.free:
        return _preempt_then_decode(sim)
    if sim.inline:
        # an admission: an exact step (with nobody queued it admits nobody: False, unchanged)
        head = exact_step(sim) if sim.waiting else False
        if head is True:
            return True
        limit, blocked = _steps_that_fit(sim), head is None
    else:
        run = plain_decode_run(sim)
        if run is None:
            return False
        limit, blocked = run
    # priced from the decode terms (`decode_run`), no DecodeLine built
    context0 = co.context_sum(sim.step) + count
    if sim.arrivals and (not sim.waiting or sim.rule.event_triggered):  # waits_for_arrival
        limit = steps_before_arrival(sim, count, context0, limit)
    duration, read, _, before_last = decode_run(sim, count, context0, limit)
    settle_decode(sim, limit, duration, read, None, blocked, before_last)
    return True


def plain_decode_run(sim: ReplicaState) -> tuple[int, bool] | None:
    """(steps the run of identical decode steps starting now may last, not counting arrivals;
    whether the policy refuses the head of the queue for KV meanwhile), or None if the next step
    is not such a decode step (a prefill chunk, an admission, a preemption)."""
    co = sim.cohort
    count = co.count
    sim.known_head = None
    if sim.partial is not None or count == 0 or len(sim.running) != count:
        return None
    if co.needs_at(sim.step) > sim.free:
        return None
    head, admitted = head_decision(sim, step=sim.step, free=sim.free)
    if head is True:  # the exact step that follows admits this candidate first
        sim.known_head = None if admitted is None else (sim.step, sim.free, admitted)
        return None
    limit = _steps_that_fit(sim)
    if head is not False and sim.rule.ratio is not None:
        limit = _sglang_limit(sim, head, limit, step=sim.step, free=sim.free)
    return limit, head is not False


def steps_before_arrival(sim: ReplicaState, count: int, context0: int, limit: int) -> int:
    """The steps of the run before the next arrival can be taken: the smallest m in [1, limit]
    after which it is there when the next step is decided, else `limit`. That is the first m
    steps lasting at least `due` (the time to it), or under an overlap scheduler the first m - 1
    (the step after the one it arrives in is already decided: `ReplicaState.seen_s`); under a
    receive interval, the first poll at or after that (`poll_aligned`)."""
    due_s = sim.arrivals[0][0] - sim.now_s - ARRIVAL_TIE_S
    ahead, n = decided_span(sim.overlap, due_s, limit)  # no closure for decided_steps: per run
    steps = ahead if ahead and not n else ahead + _steps_lasting(sim, count, context0, n, due_s)
    return steps if sim.recv_every == 1 else poll_aligned(sim, steps, limit)


def decided_steps(overlap: bool, due_s: float, limit: int, lasting: Callable[[int], int]) -> int:
    """Steps of a run before an arrival `due_s` from its start is there when the next step is
    decided, at most `limit`, given `lasting(n)`: the smallest m in [1, n] whose first m steps
    last at least `due_s`, else n. Under an overlap scheduler the step after the one it arrives
    in is already decided: one step more (`ReplicaState.seen_s`)."""
    ahead, n = decided_span(overlap, due_s, limit)
    return ahead if ahead and not n else ahead + lasting(n)


def decided_span(overlap: bool, due_s: float, limit: int) -> tuple[int, int]:
    """`decided_steps`' (steps taken whatever the arrival's time, steps n to search with
    `lasting(n)`; no search where the first is 1 and the second 0)."""
    if not overlap:
        return 0, limit
    if due_s <= 0 or limit == 1:
        return 1, 0
    return 1, limit - 1


def _steps_lasting(sim: ReplicaState, count: int, context0: int, limit: int, due_s: float) -> int:
    """`sim.model.decode_line(count, context0).steps_before(due_s, limit)`, to the bit: the
    smallest m in [1, limit] whose first m steps last at least `due_s`, else `limit`. Where the
    run stays memory-bound over all `limit` steps its time is `decode_run`'s
    m (mem0 + fixed) + mem1 m (m - 1) / 2, which never falls as m grows (each rounded operation
    keeps the order of non-negative operands), so halving the interval on it finds the same m as
    the line's search, without building the line; else (compute-bound somewhere, or a negative
    term) the line searches."""
    terms = sim.line_terms.get(count) or line_terms_of(sim, count)  # a lookup per event
    mem0, mem1 = terms[0] + terms[1] * context0, terms[2]
    d0 = mem0 - (terms[3] + terms[4] * context0)
    per_step_s = mem0 + terms[6]  # the first step, and each step's part that does not grow
    floored = terms[9] > mem0  # an overlap scheduler's host time sets the first steps
    if d0 < 0 or d0 + (mem1 - terms[5]) * (limit - 1) < 0 or mem1 < 0 or per_step_s < 0 or floored:
        return sim.model.decode_line(count, context0).steps_before(due_s, limit)
    lo, hi = 1, limit
    while lo < hi:
        m = (lo + hi) // 2
        lo, hi = (lo, m) if m * per_step_s + mem1 * m * (m - 1) / 2 >= due_s else (m + 1, hi)
    return lo


def waits_for_arrival(sim: ReplicaState) -> bool:
    """Whether the next arrival ends a run of decode steps (it could be admitted then)."""
    return bool(sim.arrivals) and (not sim.waiting or sim.rule.event_triggered)


def _preempt_then_decode(sim: ReplicaState) -> bool:
    """The next step runs out of blocks. Where the policy gives up its latest admissions, drops
    their KV and admits nobody in that step (vLLM V1, TensorRT-LLM, kv-aware), the step is a
    decode step of the survivors: give up the victims and start the run with it. Repeats while
    the step after the run runs out of blocks again and nothing arrives (a thrashing cache)."""
    if not sim.preempts_latest_and_waits:
        return False
    if sim.inline:
        run_thrash(sim)
        return True
    co, rec, arrivals, running = sim.cohort, sim.rec, sim.arrivals, sim.running
    size, needs, max_steps = co.block_size, co.phase_counts, sim.config.max_steps
    while True:
        _preempt_then_decode_once(sim)
        count = co.count
        if (
            count == 0
            or len(running) != count
            or needs[sim.step % size] <= sim.free
            or (arrivals and arrivals[0][0] <= sim.seen_s + ARRIVAL_TIE_S)
            or sim.recv_every > 1  # its polls are the caller's loop's
            or rec.steps > max_steps
        ):
            return True  # the caller's loop takes it from here, as after any event


def _preempt_then_decode_once(sim: ReplicaState) -> None:
    """One event of `_preempt_then_decode`: the victims, then the run of decode steps."""
    step, co = sim.step, sim.cohort
    # resolve_exhaustion with no request part way through its prefill and no SGLang ratio
    phase = step % co.block_size
    needs, running, preempt = co.phase_counts, sim.running, sim.preempt
    while needs[phase] > sim.free:
        preempt(next(reversed(running)))
    count = co.count
    if count == 0:
        empty_step(sim)
        return
    context0 = co.context_sum(step) + count
    first_s = decode_run(sim, count, context0, 1)[2]
    rec = sim.rec
    if rec.first_saturation is None:
        rec.saturation(step, sim.now_s + first_s)
    over = co.first_step_needing(step, sim.free, strictly_more=True)
    finish = co.next_finish_step()
    assert over is not None and finish is not None
    limit = min(over - 1, finish - step + 1)  # _steps_that_fit
    blocked, limit = _admission_after_preemption(sim, limit if limit > 1 else 1)
    if limit > 1 and sim.arrivals and sim.rule.event_triggered:
        limit = steps_before_arrival(sim, count, context0, limit)
    duration, read, _, before_last = decode_run(sim, count, context0, limit)
    settle_decode(sim, limit, duration, read, None, False, before_last)
    if blocked:
        rec.blocked_steps += limit - 1
        rec.blocked_s += duration - first_s


def _admission_after_preemption(sim: ReplicaState, limit: int) -> tuple[bool, int]:
    """(refused for KV, steps of the run) when admission resumes in the step after the
    preemption step: it is decided there, after both steps' blocks are allocated."""
    if limit <= 1:
        return False, limit
    free_next = sim.free - sim.cohort.needs_at(sim.step)  # after the preemption step's blocks
    verdict = _admission_horizon(sim, limit - 1, step=sim.step + 1, free=free_next)
    return (False, 1) if verdict is None else (verdict[0], verdict[1] + 1)


def _steps_that_fit(sim: ReplicaState) -> int:
    """Steps before the blocks run out, up to and including the next step in which one
    finishes."""
    co, step = sim.cohort, sim.step
    finish = co.next_finish_step()
    assert finish is not None
    steps = finish - step + 1
    # no member needs more than one block per block_size steps: if those steps' blocks fit
    # even so, the blocks last past the finish (no prefix-sum search)
    if steps >= 1 and -(-steps // co.block_size) * co.count <= sim.free:
        return steps
    over = co.first_step_needing(step, sim.free, strictly_more=True)
    assert over is not None
    return max(1, min(over - 1, steps))


def _admission_horizon(
    sim: ReplicaState, limit: int, *, step: int, free: int
) -> tuple[bool, int] | None:
    """None if the policy admits the head in `step` (with `free` blocks free at its start); else
    (refused for KV, steps it stays refused)."""
    head = head_verdict(sim, step=step, free=free)
    if head is True:
        return None
    if head is False:
        return False, limit
    if sim.rule.ratio is not None:
        limit = _sglang_limit(sim, head, limit, step=step, free=free)
    return True, limit


def _sglang_limit(sim: ReplicaState, cand: Candidate, limit: int, *, step: int, free: int) -> int:
    """Steps from `step` (with `free` blocks free at its start) before SGLang's decaying ratio
    would admit `cand` (as `sglang_admit` decides). The running set's clipped reserve over the
    run comes from the cohort's crossings (`DecodeCohort.clip_crossings`), no sort: step by step
    over the first SGLANG_SCALAR_STEPS steps (most runs end within them), then in windows that
    grow 4x from SGLANG_WINDOW_STEPS, so the arrays stay short and the scan stops at the first
    hit. Both are the arithmetic of the all-steps reference (tests/reference_sglang.py),
    operation for operation."""
    ratio, co, size = sim.rule.ratio, sim.cohort, sim.block_size
    assert ratio is not None
    clip = SGLANG_CLIP_MAX_NEW_TOKENS
    reserve, below, crossings = _clip_scan(sim, step, clip, limit)
    need = (
        cand.prefill_tokens
        + cand.kv_tokens
        + min(cand.max_output_tokens - cand.generated_tokens, clip)
    )
    blocks_now, base, steps0 = cand.blocks_now, sim.ratio_base, sim.ratio_steps
    floor, decay = ratio.floor, ratio.decay
    counts, n_cross, c, free0 = co.phase_counts, len(crossings), 0, free
    scalar = min(limit, SGLANG_SCALAR_STEPS)
    for j in range(scalar):
        free -= counts[(step + j) % size]  # free after step j's decode blocks
        if blocks_now > free:  # and so in every later step: never admitted in the run
            return limit
        if need < free * size - max(floor, base - (steps0 + j) * decay) * reserve:
            return max(j, 1)
        while c < n_cross and crossings[c] <= j:
            below, c = below + 1, c + 1
        reserve -= below  # the reserve at step j + 1
    if scalar == limit:
        return limit
    scan = (need, blocks_now, reserve, below, crossings[c:])
    return _sglang_limit_windows(sim, scan, limit, step=step, free=free0)


def _clip_scan(sim: ReplicaState, step: int, clip: int, k: int) -> tuple[int, int, list[int]]:
    """`DecodeCohort.clip_crossings` of the cohort. Where no request of the replica may generate
    more than `clip` tokens, no member is clipped and none crosses: the sum is the members' max
    outputs less their generated tokens, kept as requests come and go (as
    `AdmissionView.future_tokens` reads it), and the cohort keeps no crossings."""
    co = sim.cohort
    if sim.max_output_top > clip:
        return co.clip_crossings(step, clip, sim.max_output, k)
    x = sim.partial  # the running sum's one non-member
    members_max = sim.max_output_sum - (0 if x is None else sim.max_output[x])
    return members_max - co.generated_sum(step), co.count, []


def _sglang_limit_windows(
    sim: ReplicaState,
    scan: tuple[int, int, int, int, list[int]],
    limit: int,
    *,
    step: int,
    free: int,
) -> int:
    """`_sglang_limit` from step SGLANG_SCALAR_STEPS on, in numpy windows; `scan`: (tokens the
    candidate needs, blocks it takes now, the reserve at that step, members with at most the
    clip left before it, the later crossings)."""
    ratio, co = sim.rule.ratio, sim.cohort
    assert ratio is not None
    need, blocks_now, reserve, below, crossings = scan
    lo, width = SGLANG_SCALAR_STEPS, SGLANG_WINDOW_STEPS
    later = np.asarray(crossings, dtype=np.int64)
    while lo < limit:
        hi = min(limit, lo + width)
        j = np.arange(lo, hi, dtype=np.int64)
        falls = below + np.searchsorted(later, j, side="right")  # reserve(j) - reserve(j + 1)
        drop = np.cumsum(falls)
        reserves = reserve - np.concatenate(([0], drop[:-1]))
        hits = np.flatnonzero(
            sglang_admissible(
                need_tokens=need,
                blocks_now=blocks_now,
                free_blocks_after=free - co.blocks_needed_by_step(step, hi, lo),
                block_size=sim.block_size,
                ratios=ratio.values(sim.ratio_base, sim.ratio_steps + j),
                reserve_tokens=reserves,
            )
        )
        if len(hits):
            return max(lo + int(hits[0]), 1)
        reserve -= int(drop[-1])
        lo, width = hi, 4 * width
    return limit


def _count_run(sim: ReplicaState, k: int, start: float, total_s: Callable[[int], float]) -> None:
    """The receive counter over a run of k decode steps from `start` (`ReplicaState.poll_s`):
    the polls at its inner boundaries (after step j - 1 for j in 1 .. k - 1, the counter
    reaching N) and the run's last step; the boundary after it is the caller's loop's."""
    every, counter = sim.recv_every, sim.recv_counter
    first = max(1, every - counter)  # the first inner boundary that polls
    if first > k - 1:
        sim.recv_counter = counter + k
        return
    last = first + every * ((k - 1 - first) // every)
    # what the poll at boundary `last` heard: arrivals up to its end of step, or under an
    # overlap scheduler up to the start of the step before it
    seen_steps = last - 1 if sim.overlap else last
    sim.heard_s = start + total_s(seen_steps) if seen_steps > 0 else start
    sim.recv_counter = k - last


def poll_aligned(sim: ReplicaState, steps: int, limit: int) -> int:
    """Under --scheduler-recv-interval, the first boundary at or after `steps` steps of a run
    whose counter is `sim.recv_counter` at its start where the scheduler polls, at most
    `limit`; `steps` without it."""
    every = sim.recv_every
    if every == 1:
        return steps
    first = max(1, every - sim.recv_counter)
    if steps <= first:
        return min(first, limit)
    return min(first + every * -(-(steps - first) // every), limit)


def advance_decode(sim: ReplicaState, k: int, line: DecodeRun, blocked: bool) -> float:
    """Run k decode steps: blocks, clock, finishing requests, records. Returns their time."""
    return settle_decode(sim, k, line.total_s(k), line.total_bytes(k), line.total_s, blocked)


def settle_decode(
    sim: ReplicaState,
    k: int,
    duration: float,
    read: float,
    total_s: Callable[[int], float] | None,
    blocked: bool,
    before_last_s: float = 0.0,
) -> float:
    """`advance_decode` of a run that takes `duration` s and reads `read` bytes (`total_s(j)`:
    seconds of its first j steps, asked only at the first saturation and, under an overlap
    scheduler, for the start of its last step; None: the replica's own decode steps of its whole
    cohort, `decode_run`'s, whose fourth answer is then `before_last_s`)."""
    co, step, free0, rec = sim.cohort, sim.step, sim.free, sim.rec
    count = co.count
    context0 = 0  # of the cohort's decode steps (total_s None), asked for where needed
    used_first = sim.total - free0 + co.phase_counts[step % co.block_size]  # + needs_at(step)
    blocks = co.blocks_needed(step, k)
    if blocks >= free0 and rec.first_saturation is None:
        saturated = co.first_step_needing(step, free0, strictly_more=False)
        assert saturated is not None
        if total_s is None:
            context0 = co.context_sum(step) + count
        seconds = (
            total_s(saturated)
            if total_s is not None
            else decode_run_s(sim, count, context0, saturated)
        )
        rec.saturation(step + saturated - 1, sim.now_s + seconds)
    sim.free = free = free0 - blocks
    start = sim.now_s
    sim.now_s = start + duration
    if sim.overlap and k > 1:  # the start of the run's last step
        sim.last_start_s = start + (total_s(k - 1) if total_s is not None else before_last_s)
    elif sim.overlap:
        sim.last_start_s = start
    if sim.recv_every > 1:
        if total_s is None:
            context0 = co.context_sum(step) + count
        _count_run(sim, k, start, total_s or partial(decode_run_s, sim, count, context0))
    last = step + k - 1
    if sim.reuse is not None:  # the run's blocks were allocated before anyone finishes
        sim.reuse.settle(sim.free, sim.now_s)
    finishing = co.pop_finishing(last) if sim.reuse is None else sim.finishing(last)
    if finishing:
        size = sim.block_size
        for i in finishing:
            ctx, _ = co.remove(i, last + 1)
            sim.complete(i, -(-ctx // size))
    sim.step = last + 1
    sim.ratio_steps += k
    used_last, running, waiting = sim.total - free, len(sim.running), len(sim.waiting)
    tokens = count * k
    rec.record(k, start, duration, used_first, used_last, running, waiting, read, tokens, blocked)
    return duration
