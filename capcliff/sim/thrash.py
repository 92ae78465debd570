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
  here admit it when the blocks of its first chunk fit (`vllm_admit`, `trtllm_max_util_admit`),
  so the verdict is one comparison;
- the recorder's per-event sample and sums are updated in place, in the same order and with the
  same arithmetic as `Recorder.run`, so every result is bit-identical to the general path.

Only the pattern itself runs here: anything else (a request finishing, prefix caching, an
event-triggered or token-ratio rule, swap) goes back to the general event loop.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from capcliff.sim.policies import Requeue, trtllm_max_util_admit, vllm_admit

if TYPE_CHECKING:
    from capcliff.sim.replica import ReplicaSim

# Admission rules that admit the head when the blocks of its first chunk fit, nothing else.
_BLOCKS_FIT_RULES = (vllm_admit, trtllm_max_util_admit)


# The ReplicaSim methods these loops stand in for: a subclass that overrides one (the disaggregated
# decode pool's `LandedReplicaSim` folds its own admissions) keeps the general path.
_STOOD_IN_FOR = ("run_step", "begin_step", "_admit", "head_admissible", "head_verdict", "preempt")


_PLAIN: dict[type, bool] = {}


def _plain_replica(cls: type) -> bool:
    """Whether `cls` inherits every method in `_STOOD_IN_FOR` from `ReplicaSim` unchanged."""
    plain = _PLAIN.get(cls)
    if plain is None:
        methods = (getattr(cls, name) for name in _STOOD_IN_FOR)
        plain = _PLAIN[cls] = all(m.__module__ == "capcliff.sim.replica" for m in methods)
    return plain


def handles(sim: ReplicaSim) -> bool:
    """Whether `run_thrash` and `admit_step.exact_step` apply to `sim`'s policy and settings."""
    rule = sim.rule
    return (
        sim.preempts_latest_and_waits
        and _plain_replica(type(sim))
        and sim.reuse is None
        and not rule.event_triggered
        and rule.ratio is None
        and rule.requeue is Requeue.FRONT
        and rule.admit in _BLOCKS_FIT_RULES
    )


def run_thrash(sim: ReplicaSim) -> None:
    """Preemption events while the next step runs out of blocks (`handles(sim)` must hold, and the
    next step must be a decode step of the whole cohort that needs more blocks than are free):
    exactly what `fast_forward._preempt_then_decode` does, event for event: the victims, then the
    run of decode steps (`advance_decode`) to the first of the blocks running out, the next
    finish, and the step the head of the queue is admitted in."""
    co, rec, size, total = sim.cohort, sim.rec, sim.block_size, sim.total
    needs, decode_line, record = co.phase_counts, sim.model.decode_line, rec.record
    running, waiting = sim.running, sim.waiting
    while True:
        _give_up_latest(sim)
        count, step, free = co.count, sim.step, sim.free
        if count == 0:
            empty_step(sim)
            return
        line = decode_line(count, co.context_sum(step) + count)
        if rec.first_saturation is None:
            rec.first_saturation = (step, sim.now_s + line.step_s(0))
        fit, left = _steps_that_fit(sim, count)
        finish = co.next_finish_step()
        assert finish is not None
        limit = min(fit, finish - step + 1)  # >= 1: the first step fits, nobody has finished
        verdict = _head_refused(sim, count) if limit > 1 else None
        if verdict is False:
            limit = 1
        phase_need = needs[step % size]
        used_first = total - free + phase_need
        if limit == 1:
            free -= phase_need
        elif limit != fit or left < 0:
            free -= co.blocks_needed(step, limit)
        else:
            free = left
        duration = line.total_s(limit)
        start = sim.now_s
        sim.free, sim.now_s = free, start + duration
        last = step + limit - 1
        if finish == last:
            _finish(sim, last)
        sim.step = last + 1
        sim.ratio_steps += limit
        hbm, tokens = line.total_bytes(limit), count * limit
        used_last = total - free
        record(
            limit, start, duration, used_first, used_last, len(running), len(waiting), hbm, tokens
        )
        if verdict:
            rec.blocked_steps += limit - 1
            rec.blocked_s += duration - line.step_s(0)
        if not _still_thrashing(sim):
            return


def _still_thrashing(sim: ReplicaSim) -> bool:
    """Whether the next step is again a decode step of the whole cohort that runs out of blocks,
    with no arrival due (`_preempt_then_decode`'s loop condition)."""
    co, arrivals = sim.cohort, sim.arrivals
    count = co.count
    return not (
        count == 0
        or len(sim.running) != count
        or co.phase_counts[sim.step % co.block_size] <= sim.free
        or (arrivals and arrivals[0][0] <= sim.now_s)
        or sim.rec.steps > sim.config.max_steps
    )


def _finish(sim: ReplicaSim, last: int) -> None:
    """The members whose last token was generated in step `last` leave and free their blocks."""
    co = sim.cohort
    for i in co.pop_finishing(last):
        ctx, _ = co.remove(i, last + 1)
        sim.complete(i, -(-ctx // sim.block_size))


def _give_up_latest(sim: ReplicaSim) -> None:
    """Preempt the latest admissions until the step's new blocks fit (`ReplicaSim.preempt` under
    LIFO recompute, no prefix cache): their KV is dropped and they go back to the queue's front."""
    co, rec, step, now, size = sim.cohort, sim.rec, sim.step, sim.now_s, sim.block_size
    needs, running, free = co.phase_counts, sim.running, sim.free
    phase = step % size
    prompt, generated, max_output = sim.prompt, sim.generated, sim.max_output
    while needs[phase] > free:
        v = next(reversed(running))
        ctx, generated[v] = co.remove(v, step)
        free += -(-ctx // size)
        del running[v]
        out = max_output[v]
        sim.full_blocks_sum -= -(-(prompt[v] + out) // size)
        sim.max_output_sum -= out
        sim.recomputed[v] += ctx
        sim.context[v] = sim.held[v] = 0
        sim.waiting.appendleft(v)
        sim.preemptions[v] += 1
        rec.preemption_times.append(now)
        if rec.first_preemption is None:
            rec.first_preemption = (step, now)
    sim.free = free
    sim.dirty = True


def _steps_that_fit(sim: ReplicaSim, count: int) -> tuple[int, int]:
    """(k, free blocks after k steps): the steps whose new blocks fit, N(k) <= free, as
    `first_step_needing` counts them; with fewer blocks free than the cohort needs in B steps
    (`count`), by walking the phase histogram (at most B steps), else from the prefix sums
    (then the free blocks after are not computed: -1)."""
    co, step, free, size = sim.cohort, sim.step, sim.free, sim.block_size
    if free >= count:
        over = co.first_step_needing(step, free, strictly_more=True)
        assert over is not None
        return over - 1, -1
    needs, fit = co.phase_counts, 0
    while (n := needs[step % size]) <= free:
        free -= n
        fit += 1
        step += 1
    return fit, free


def _head_refused(sim: ReplicaSim, count: int) -> bool | None:
    """Does the rule refuse the head of the queue in the step after the preemption step (after
    both steps' new blocks)? None if nobody could be admitted (no queue, budget or seat). The
    head is the request just given up; it needs the blocks of its first chunk."""
    budget = sim.config.max_num_batched_tokens - count
    waiting, size = sim.waiting, sim.block_size
    if not (waiting and budget > 0 and len(sim.running) < sim.max_num_seqs):
        return None
    head = waiting[0]
    kv = sim.host_kv[head]
    blocks: int
    if kv:
        blocks = -(-(kv + 1) // size)
    else:
        todo = sim.prompt[head] + sim.generated[head]
        chunk = todo if todo < budget else budget
        blocks = -(-(todo if sim.whole_prompt_blocks else chunk) // size)
    needs, step = sim.cohort.phase_counts, sim.step
    return blocks > sim.free - needs[step % size] - needs[(step + 1) % size]


def empty_step(sim: ReplicaSim) -> None:
    """Every running request was given up: a step that computes nothing and takes no time."""
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
