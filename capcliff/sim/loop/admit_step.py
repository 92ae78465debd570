"""One exact engine step under a rule that admits the head of the queue when the blocks of its
first chunk fit (vLLM V1's `vllm_first_chunk_admit`, TensorRT-LLM's `trtllm_max_util_admit`), or
those of its whole sequence (vLLM V1's `vllm_admit`, which still allocates one chunk at a time).

`ReplicaSim.begin_step` asks the policy about every candidate through an `AdmissionView` and a
`Candidate`; under these rules the verdict is one comparison, so the admissions of a step (past
the cliff: the requests a finish lets back in, about seven per step in the study's scenario) are
decided here with the replica's lists in local variables. The step is the one `begin_step`
decides, to the bit: the same victims (none: a step that needs one is left to the general path),
the same chunk of the request part way through its prefill, the same admissions and load; the
step then ends as `ReplicaSim.finish_step` ends any other.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from capcliff.sim.loop.admission import retained_tokens
from capcliff.sim.loop.step_plan import step_load

if TYPE_CHECKING:
    from capcliff.sim.loop.state import ReplicaState

Admitted = list[tuple[int, int, int]]  # (request, context before, chunk)


def exact_step(sim: ReplicaState) -> bool | None:
    """Run the next step if it needs no victim and either carries a prefill chunk or admits
    someone (`thrash.handles(sim)` must hold, and the cohort must not be empty): True. Else,
    with nothing changed, None if the rule refused the head of the queue for KV, False if
    nobody could be admitted or the step needs a victim (`ReplicaSim.head_verdict`'s answers)."""
    co, step, x = sim.cohort, sim.step, sim.partial
    need = co.phase_counts[step % co.block_size]
    decoders = co.count
    budget = sim.config.max_num_batched_tokens - decoders
    chunk_x = need_x = 0
    if x is not None:
        chunk_x, need_x = sim._partial_plan(budget)
    if need + need_x > sim.free:
        return False
    admitted, blocked, free, swap_in = _admit(sim, budget - chunk_x, sim.free - need - need_x)
    if x is None and not admitted:
        return None if blocked else False
    sim.free = free
    sim.swap_out_tokens, sim.swap_in_tokens = 0, swap_in
    prefills = admitted
    if x is not None:
        sim.held[x] += need_x
        if chunk_x:
            prefills = [*admitted, (x, sim.context[x], chunk_x)]
    tokens, seqs, ctx, pairs = step_load(decoders, co.context_sum(step) + decoders, prefills)
    swap_s = sim.capacity.swap_seconds(swap_in) if swap_in else 0.0
    # ReplicaSim.finish_step of this step (no victim, no prefix cache, no shared bytes), without
    # building its PlannedStep
    duration = sim.model.step_time_s(tokens, seqs, ctx, pairs) + (swap_s + 0.0)
    used, rec, start = sim.total - sim.free, sim.rec, sim.now_s
    if sim.free == 0:
        rec.saturation(step, start + duration)
    sim.now_s = start + duration
    sim.last_start_s = start
    sim._end_step(chunk_x, admitted, False)
    if swap_in:  # else nothing moved: no swapped tokens (none out), 0.0 s
        rec.swap_s += swap_s + 0.0
    hbm_bytes = sim.model.hbm_bytes(tokens, seqs, ctx) + 0.0
    running, waiting = len(sim.running), len(sim.waiting)
    rec.record(1, start, duration, used, used, running, waiting, hbm_bytes, tokens, blocked)
    sim.step += 1
    return True


def _admit(sim: ReplicaState, budget: int, free: int) -> tuple[Admitted, bool, int, int]:
    """`ReplicaSim._admit` with `free` blocks left after the step's decode and chunk blocks:
    (admitted, refused for KV, free blocks after, tokens swapped in)."""
    waiting, running, max_seqs = sim.waiting, sim.running, sim.max_num_seqs
    if not (waiting and budget > 0 and len(running) < max_seqs):
        return [], False, free, 0
    prompt, generated, host_kv, whole = (
        sim.prompt,
        sim.generated,
        sim.host_kv,
        sim.whole_prompt_blocks,
    )
    sequence = sim.rule.admits_whole_sequence  # the verdict needs the whole sequence's blocks
    context, held, admit_seq, landed = sim.context, sim.held, sim.admit_seq, sim.landed
    size, preemptions = sim.block_size, sim.preemptions
    admitted: Admitted = []
    swap_in = 0
    while waiting and budget > 0 and len(running) < max_seqs:
        i = waiting[0]
        kv = host_kv[i]
        if kv:
            chunk, blocks = 1, -(-(kv + 1) // size)
            need, before = blocks, kv
        else:
            todo = prompt[i] + generated[i]
            # KV still cached since it was preempted: not computed again
            before = retained_tokens(sim, i, todo, free) if preemptions[i] else 0
            chunk = todo - before
            chunk = chunk if chunk <= budget else budget  # min(), without its call
            blocks = -(-(todo if whole else before + chunk) // size)
            need = -(-todo // size) if sequence else blocks
        if need > free:
            return admitted, True, free, swap_in
        waiting.popleft()
        if preemptions[i] and sim.retained is not None and not kv:
            sim.retained.take(i, before // size, free)
            sim.recomputed[i] -= before
        free -= blocks
        running[i] = None
        sim.seq += 1
        admit_seq[i], held[i], context[i] = sim.seq, blocks, before
        if i in landed:
            landed.discard(i)
        elif kv:
            swap_in += kv
            sim.host_used -= kv
        admitted.append((i, before, chunk))
        budget -= chunk
    return admitted, False, free, swap_in
