"""Runs of identical decode steps, jumped over in one go.

While no request arrives, finishes, needs a prefill chunk or fails to get a block, and the policy
would admit nobody, every step is the same: each running request writes one token. The run ends
at the first of: the step in which a request finishes (included), the last step before the
blocks run out (found from the cohort's phase histogram), the last step before an arrival that
could be admitted (found on the closed-form time axis), and, for SGLang, the last step before
the decaying new_token_ratio would let the head of the queue in.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from capcliff.perf import DecodeLine
from capcliff.scheduler import (
    SGLANG_CLIP_MAX_NEW_TOKENS,
    Candidate,
    VictimOrder,
    sglang_first_admissible_step,
)
from capcliff.simconfig import PreemptionMode
from capcliff.units import ceil_div

if TYPE_CHECKING:
    from capcliff.replica import ReplicaSim


def fast_forward(sim: ReplicaSim) -> bool:
    """Jump over the run of identical decode steps starting now; False if the next step is not
    one (then the caller runs it exactly)."""
    co = sim.cohort
    if sim.partial is not None or co.count == 0 or len(sim.running) != co.count:
        return False
    if co.first_step_needing(sim.step, sim.free, strictly_more=True) == 1:
        return _preempt_then_decode(sim)
    limit = _steps_that_fit(sim)
    verdict = _admission_horizon(sim, limit)
    if verdict is None:
        return False
    blocked, limit = verdict
    line = sim.model.decode_line(co.count, co.context_sum(sim.step) + co.count)
    if sim.arrivals and (not sim.waiting or sim.rule.event_triggered):
        limit = line.steps_before(sim.arrivals[0][0] - sim.now_s, limit)
    _advance(sim, limit, line, blocked)
    return True


def _preempt_then_decode(sim: ReplicaSim) -> bool:
    """The next step runs out of blocks. Where the policy gives up its latest admissions, drops
    their KV and admits nobody in that step (vLLM V1, TensorRT-LLM, kv-aware), the step is a
    decode step of the survivors: give up the victims and start the run with it."""
    rule = sim.rule
    if (
        rule.victim_order is not VictimOrder.LIFO
        or rule.admits_after_preemption
        or sim.config.preemption is not PreemptionMode.RECOMPUTE
    ):
        return False
    step, co = sim.step, sim.cohort
    sim.resolve_exhaustion(sim.config.max_num_batched_tokens)
    if co.count == 0:
        _empty_step(sim)
        return True
    line = sim.model.decode_line(co.count, co.context_sum(step) + co.count)
    first_s = line.step_s(0)
    sim.rec.saturation(step, sim.now_s + first_s)
    blocked, limit = _admission_after_preemption(sim, _steps_that_fit(sim))
    if limit > 1 and sim.arrivals and rule.event_triggered:
        limit = line.steps_before(sim.arrivals[0][0] - sim.now_s, limit)
    duration = _advance(sim, limit, line, False)
    if blocked:
        sim.rec.blocked_steps += limit - 1
        sim.rec.blocked_s += duration - first_s
    return True


def _empty_step(sim: ReplicaSim) -> None:
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


def _admission_after_preemption(sim: ReplicaSim, limit: int) -> tuple[bool, int]:
    """(refused for KV, steps of the run) when admission resumes in the step after the
    preemption step: it is decided there, after both steps' blocks are allocated."""
    if limit <= 1:
        return False, limit
    step, first_blocks = sim.step, sim.cohort.needs_at(sim.step)
    sim.step, sim.free = step + 1, sim.free - first_blocks
    try:
        verdict = _admission_horizon(sim, limit - 1)
    finally:
        sim.step, sim.free = step, sim.free + first_blocks
    return (False, 1) if verdict is None else (verdict[0], verdict[1] + 1)


def _steps_that_fit(sim: ReplicaSim) -> int:
    """Steps before the blocks run out, up to and including the next step in which one
    finishes."""
    co, step = sim.cohort, sim.step
    over = co.first_step_needing(step, sim.free, strictly_more=True)
    finish = co.next_finish_step()
    assert over is not None and finish is not None
    return max(1, min(over - 1, finish - step + 1))


def _admission_horizon(sim: ReplicaSim, limit: int) -> tuple[bool, int] | None:
    """None if the policy admits the head now; else (refused for KV, steps it stays refused)."""
    budget = sim.config.max_num_batched_tokens - sim.cohort.count
    if not sim.can_admit_more(budget):
        return False, limit
    need = sim.cohort.needs_at(sim.step)
    sim.free -= need  # admission is decided after the running requests' blocks are allocated
    try:
        cand = sim.candidate(sim.waiting[0], budget)
        if sim.head_admissible(cand, []):
            return None
    finally:
        sim.free += need
    if sim.rule.ratio is not None:
        limit = _sglang_limit(sim, cand, limit)
    return True, limit


def _sglang_limit(sim: ReplicaSim, cand: Candidate, limit: int) -> int:
    """Steps before SGLang's decaying ratio would admit `cand` (as `sglang_admit` decides)."""
    ratio, co, step = sim.rule.ratio, sim.cohort, sim.step
    assert ratio is not None
    steps = np.arange(limit, dtype=np.int64)
    members = np.flatnonzero(co.member)
    clip = SGLANG_CLIP_MAX_NEW_TOKENS
    hit = sglang_first_admissible_step(
        need_tokens=cand.prefill_tokens
        + cand.kv_tokens
        + min(cand.max_output_tokens - cand.generated_tokens, clip),
        blocks_now=cand.blocks_now,
        free_blocks_after=sim.free - co.blocks_needed_by_step(step, limit),
        block_size=sim.block_size,
        ratios=ratio.values(sim.ratio_base, sim.ratio_steps + steps),
        future_tokens=sim.requests.max_output_tokens[members] - (co.generated_base[members] + step),
        clip=clip,
    )
    return limit if hit is None else max(hit, 1)


def _advance(sim: ReplicaSim, k: int, line: DecodeLine, blocked: bool) -> float:
    """Run k decode steps: blocks, clock, finishing requests, records. Returns their time."""
    co, step, free0 = sim.cohort, sim.step, sim.free
    used_first = sim.total - free0 + co.needs_at(step)
    blocks = co.blocks_needed(step, k)
    if blocks >= free0 and sim.rec.first_saturation is None:
        saturated = co.first_step_needing(step, free0, strictly_more=False)
        assert saturated is not None
        sim.rec.saturation(step + saturated - 1, sim.now_s + line.total_s(saturated))
    sim.free -= blocks
    used_last = sim.total - sim.free
    duration = line.total_s(k)
    start, sim.now_s = sim.now_s, sim.now_s + duration
    tokens = co.count * k
    last = step + k - 1
    for i in co.pop_finishing(last):
        ctx, _ = co.remove(i, last + 1)
        sim.complete(i, ceil_div(ctx, sim.block_size))
    sim.step = last + 1
    sim.ratio_steps += k
    sim.rec.run(
        steps=k,
        start_s=start,
        duration_s=duration,
        used_blocks=(used_first, used_last),
        counts=(len(sim.running), len(sim.waiting)),
        hbm_bytes=line.total_bytes(k),
        blocked=blocked,
        tokens=tokens,
    )
    return duration
