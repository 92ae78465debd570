"""A thrashing KV cache under vLLM V1's rules, one preemption event after another, in one tight
loop.

Past the cliff, a replica whose policy gives up its latest admissions, drops their KV and admits
nobody in that step (vLLM V1, TensorRT-LLM's MAX_UTILIZATION) spends most of its events in one
pattern: the next step needs more new blocks than are free, so the newest requests are preempted
until it fits, then the survivors decode until the blocks run out again (a few steps later), and
so on until a request finishes or the head of the queue fits again. `fast_forward` handles each
such event with the general machinery (the policy's verdict through an `AdmissionView`, the
cohort's prefix sums, the recorder); here the same events run with the state in local variables:

- the victim is the last key of the running dict (LIFO), and goes back to the queue's front;
- the steps that fit are counted by walking the phase histogram while fewer blocks are free than
  the cohort needs per cycle of B steps (at most B steps), else from the cohort's prefix sums;
- the head of the queue after a preemption is the request just given up, and the rules handled
  here admit it when the blocks of its first chunk (or, `admits_whole_sequence`, of its whole
  sequence) fit (`vllm_admit`, `vllm_first_chunk_admit`, `trtllm_max_util_admit`), so the
  verdict is one comparison;
- the recorder's per-event sample and sums are updated in place, in the same order and with the
  same arithmetic as `Recorder.record`, so every result is bit-identical to the general path.

Only the pattern itself runs here: the loop returns to the general event loop after an event in
which a request finishes, the head is admitted or an arrival is due, and a policy with prefix
caching, an event-triggered or token-ratio rule, or swap never enters it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from capcliff.perf.decode_line import DecodeLine
from capcliff.sim.config import ARRIVAL_TIE_S
from capcliff.sim.loop.admission import retained_tokens
from capcliff.sim.policies import (
    Requeue,
    trtllm_max_util_admit,
    vllm_admit,
    vllm_first_chunk_admit,
)

if TYPE_CHECKING:
    from capcliff.sim.loop.state import ReplicaState

# Admission rules that admit the head when the blocks of its first chunk fit, nothing else.
_BLOCKS_FIT_RULES = (vllm_admit, vllm_first_chunk_admit, trtllm_max_util_admit)


# The ReplicaSim methods these loops stand in for: a subclass that overrides one (the disaggregated
# decode pool's `LandedReplicaSim` folds its own admissions) keeps the general path.
_STOOD_IN_FOR = (
    "run_step",
    "begin_step",
    "finish_step",
    "_end_step",
    "resolve_exhaustion",
    "_admit",
    "preempt",
    "_leave_running",
)


_PLAIN: dict[type, bool] = {}


def _plain_replica(cls: type) -> bool:
    """Whether `cls` inherits every method in `_STOOD_IN_FOR` from `ReplicaSim` unchanged: no
    class above `ReplicaSim` in its MRO defines one (the compiled core's `ReplicaSim` too)."""
    plain = _PLAIN.get(cls)
    if plain is None:
        below = cls.__mro__[: [k.__name__ for k in cls.__mro__].index("ReplicaSim")]
        plain = _PLAIN[cls] = not any(n in vars(k) for k in below for n in _STOOD_IN_FOR)
    return plain


def handles(sim: ReplicaState) -> bool:
    """Whether `run_thrash` and `admit_step.exact_step` apply to `sim`'s policy and settings
    (not where prefill steps run alone, `SimConfig.mixed_prefill` off: `exact_step` mixes an
    admission's prefill into the decode step)."""
    rule = sim.rule
    return (
        sim.recv_every == 1  # the receive counter's polls are the general path's
        and sim.preempts_latest_and_waits
        and sim.config.mixed_prefill
        and _plain_replica(type(sim))
        and sim.reuse is None
        and not rule.event_triggered
        and rule.ratio is None
        and rule.requeue is Requeue.FRONT
        and rule.admit in _BLOCKS_FIT_RULES
    )


def run_thrash(sim: ReplicaState) -> None:
    """Preemption events while the next step runs out of blocks (`handles(sim)` must hold, and the
    next step must be a decode step of the whole cohort that needs more blocks than are free):
    exactly what `fast_forward._preempt_then_decode` does, event for event: the victims, then the
    run of decode steps (`advance_decode`) to the first of the blocks running out, the next
    finish, and the step the head of the queue is admitted in.

    This is the simulator's hottest loop past the cliff (about 80 % of the study scenario's
    events), so the state lives in local variables and the recorder's sample is taken in place
    (`Recorder.record`: the same arithmetic in the same order)."""
    co, rec, size, total = sim.cohort, sim.rec, sim.block_size, sim.total
    needs = co.phase_counts
    running, waiting, arrivals = sim.running, sim.waiting, sim.arrivals
    times, used_series, running_series, waiting_series, hbm_series = rec.series
    # bound methods: looked up once per call of this function, not once per event
    add_time, add_used, add_running = times.append, used_series.append, running_series.append
    add_waiting, add_hbm = waiting_series.append, hbm_series.append
    peak_hbm = rec.peak_hbm
    step, free, now, max_steps = sim.step, sim.free, sim.now_s, sim.config.max_steps
    overlap = sim.overlap
    while True:
        phase = step % size
        if needs[phase] > free:
            free = _give_up_latest(sim, step, free, now)
        sim.dirty = True
        count = co.count
        if count == 0:
            sim.step, sim.free, sim.now_s = step, free, now
            empty_step(sim)
            return
        ctx0 = co.context_sum(step) + count
        if free < count:  # the steps that fit: fewer than B, so walk the phase histogram
            left, fit, t = free, 0, step
            while (n := needs[t % size]) <= left:
                left, fit, t = left - n, fit + 1, t + 1
        else:
            left, fit = -1, _steps_that_fit(sim, step, free)
        finish: int = co.next_finish_step()  # type: ignore[assignment]
        limit = min(fit, finish - step + 1)  # >= 1: the first step fits, nobody has finished
        sim.step, sim.free = step, free
        verdict = _head_refused(sim, count) if limit > 1 else None
        limit = 1 if verdict is False else limit
        used_first = total - free + needs[phase]
        free = (
            free - needs[phase] if limit == 1
            else left if limit == fit and left >= 0
            else free - co.blocks_needed(step, limit)
        )  # fmt: skip
        duration, read, first_s, before_last = decode_run(sim, count, ctx0, limit)
        rec.first_saturation = rec.first_saturation or (step, now + first_s)
        start, now = now, now + duration
        if overlap:  # the start of the event's last step (`ReplicaState.seen_s`)
            sim.last_start_s = start + before_last if limit > 1 else start
        last = step + limit - 1
        if finish == last:
            sim.free, sim.now_s = free, now
            _finish(sim, last)
        step = last + 1
        sim.ratio_steps += limit
        # Recorder.record, in place
        rec.steps += limit
        rec.scheduled_tokens += count * limit
        used_last, top = total - free, rec.peak_used
        rec.peak_used = (
            top if used_first <= top and used_last <= top else max(used_first, used_last)
        )
        rec.used_block_seconds += (used_first + used_last) / 2 * duration
        rec.busy_s += duration
        add_time(start + duration)
        add_used(used_last)
        add_running(len(running))
        add_waiting(len(waiting))
        add_hbm(read / (duration * peak_hbm) if duration > 0 else 0.0)
        if verdict:
            rec.blocked_steps += limit - 1
            rec.blocked_s += duration - first_s
        free = sim.free if finish == last else free
        count = co.count
        if (
            count == 0
            or len(running) != count
            or needs[step % size] <= free
            or (
                arrivals
                and arrivals[0][0] <= (sim.last_start_s if overlap else now) + ARRIVAL_TIE_S
            )
            or rec.steps > max_steps
        ):
            sim.step, sim.free, sim.now_s = step, free, now
            return


def _give_up_latest(sim: ReplicaState, step: int, free: int, now: float) -> int:
    """`ReplicaState.preempt` of the latest admissions until step `step`'s new blocks fit in the
    free ones; returns the free blocks after."""
    co, size, needs, running = sim.cohort, sim.block_size, sim.cohort.phase_counts, sim.running
    prompt, generated, max_output = sim.prompt, sim.generated, sim.max_output
    recomputed, preemptions, context, held = sim.recomputed, sim.preemptions, sim.context, sim.held
    requeue, add_preemption, rec = sim.waiting.appendleft, sim.rec.preemption_times.append, sim.rec
    retained, phase = sim.retained, step % size
    while needs[phase] > free:
        v = running.popitem()[0]  # the last key: the latest admission
        ctx, generated[v] = co.remove(v, step)
        if retained is not None:
            retained.preempted(v, ctx, free)
        free += -(-ctx // size)
        sim.full_blocks_sum -= -(-(prompt[v] + max_output[v]) // size)
        sim.max_output_sum -= max_output[v]
        recomputed[v] += ctx
        context[v] = held[v] = 0
        requeue(v)
        preemptions[v] += 1
        add_preemption(now)
        rec.first_preemption = rec.first_preemption or (step, now)
    return free


def decode_run(
    sim: ReplicaState, count: int, context0: int, k: int
) -> tuple[float, float, float, float]:
    """(seconds, bytes one GPU reads, seconds of the first step, seconds of the first k - 1 steps)
    of k identical decode steps of `count` requests whose contexts (each counting the token it
    writes) sum to `context0`: `sim.model.decode_line(count, context0)`'s total_s(k),
    total_bytes(k), step_s(0) and total_s(k - 1) (0 for k = 1), to the bit; the last is
    `decode_run_s(sim, count, context0, k - 1)` too (memory-bound over k steps, it is over
    k - 1), which an overlap scheduler asks for the start of the run's last step. The line's
    fields come from the model's decode terms (kept in the replica's table) in `decode_line`'s
    order, and the memory-bound sum with `DecodeLine.total_s`'s arithmetic; the
    line itself is built only when the compute term overtakes within the run."""
    terms = sim.line_terms.get(count) or line_terms_of(sim, count)  # a lookup per event
    mem0, mem1 = terms[0] + terms[1] * context0, terms[2]
    cmp0, cmp1 = terms[3] + terms[4] * context0, terms[5]
    fixed, bytes0, bytes1 = terms[6], terms[7] + terms[10] * context0, terms[8]
    floor = terms[9]  # an overlap scheduler's host time (perf/host_time.py); 0: none
    # max(max(mem, cmp), floor) as `max` picks (the first of equals), without its two calls
    mem, cmp = mem0 + mem1 * 0, cmp0 + cmp1 * 0
    top = cmp if cmp > mem else mem
    first_s = (floor if floor > top else top) + fixed
    d0 = mem0 - cmp0
    j = k - 1
    if d0 >= 0 and d0 + (mem1 - cmp1) * j >= 0 and floor <= mem0:  # memory-bound throughout
        duration = k * (mem0 + fixed) + mem1 * k * j / 2
        before_last = j * (mem0 + fixed) + mem1 * j * (j - 1) / 2 if j else 0.0
    else:
        line = DecodeLine(mem0, mem1, cmp0, cmp1, fixed, bytes0, bytes1, floor)
        duration, before_last = line.total_s(k), line.total_s(j) if j else 0.0
    return duration, k * bytes0 + bytes1 * (k * j) / 2, first_s, before_last


def decode_run_s(sim: ReplicaState, count: int, context0: int, k: int) -> float:
    """`decode_run(sim, count, context0, k)[0]` alone, to the bit: the seconds of k steps, without
    their bytes or a tuple (an overlap scheduler asks it for the start of each run's last step)."""
    terms = line_terms_of(sim, count)
    mem0, mem1 = terms[0] + terms[1] * context0, terms[2]
    d0 = mem0 - (terms[3] + terms[4] * context0)
    if d0 >= 0 and d0 + (mem1 - terms[5]) * (k - 1) >= 0 and terms[9] <= mem0:
        return k * (mem0 + terms[6]) + mem1 * k * (k - 1) / 2
    return decode_run(sim, count, context0, k)[0]


def line_terms_of(sim: ReplicaState, count: int) -> tuple[float, ...]:
    """`StepTimeModel.decode_terms(count)` and the KV bytes per token, from the replica's table
    (filled on first use)."""
    terms = sim.line_terms.get(count)
    if terms is None:
        model = sim.model
        terms = sim.line_terms[count] = (*model.decode_terms(count), model.context_bytes_per_token)
    return terms


def _steps_that_fit(sim: ReplicaState, step: int, free: int) -> int:
    """Steps from `step` whose new blocks fit in `free` (N(k) <= free), from the prefix sums."""
    over = sim.cohort.first_step_needing(step, free, strictly_more=True)
    assert over is not None
    return over - 1


def _finish(sim: ReplicaState, last: int) -> None:
    """The members whose last token was generated in step `last` leave and free their blocks."""
    co = sim.cohort
    for i in sim.finishing(last):
        ctx, _ = co.remove(i, last + 1)
        sim.complete(i, -(-ctx // sim.block_size))


def _head_refused(sim: ReplicaState, count: int) -> bool | None:
    """Does the rule refuse the head of the queue in the step after the preemption step (after
    both steps' new blocks)? None if nobody could be admitted (no queue, budget or seat). The
    head is the request just given up; it needs the blocks of its first chunk."""
    budget = sim.config.max_num_batched_tokens - count
    waiting, size = sim.waiting, sim.block_size
    if not (waiting and budget > 0 and len(sim.running) < sim.max_num_seqs):
        return None
    head = waiting[0]
    kv = sim.host_kv[head]
    needs, step = sim.cohort.phase_counts, sim.step
    free = sim.free - needs[step % size] - needs[(step + 1) % size]
    if kv:
        blocks = -(-(kv + 1) // size)
    else:
        todo = sim.prompt[head] + sim.generated[head]
        whole = sim.whole_prompt_blocks or sim.rule.admits_whole_sequence  # all of it, hits too
        cached = 0 if whole else retained_tokens(sim, head, todo, free)
        chunk = min(todo - cached, budget)
        blocks = -(-(todo if whole else cached + chunk) // size)
    return blocks > free


def empty_step(sim: ReplicaState) -> None:
    """Every running request was given up: a step that computes nothing and takes no time."""
    sim.last_start_s = sim.now_s
    if sim.recv_every > 1:
        sim.count_step(False)
    sim.rec.saturation(sim.step, sim.now_s)
    sim.rec.run(
        steps=1,
        start_s=sim.now_s,
        duration_s=0.0,
        used_blocks=(0, 0),
        counts=(0, len(sim.waiting)),
        hbm_bytes=0.0,
        blocked=False,
        tokens=0,
    )
    sim.step += 1
