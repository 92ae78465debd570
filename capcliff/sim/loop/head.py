"""Would the head of the queue be admitted: the question the loop and its jumps both ask."""

from __future__ import annotations

from typing import TYPE_CHECKING

from capcliff.sim.loop.admission import candidate, head_admissible
from capcliff.sim.loop.prefill_only import prefill_verdict
from capcliff.sim.policies import Candidate

if TYPE_CHECKING:
    from capcliff.sim.loop.state import ReplicaState


def head_verdict(sim: ReplicaState, *, step: int, free: int) -> Candidate | bool:
    """Would the head of the queue be admitted in `step` if `free` blocks were free at its start?
    Admission is decided after the running requests' new blocks of that step are allocated. True
    if admitted; False if nobody could be (empty queue, no token budget or no seat); else the
    refused candidate."""
    if sim.prefill_only:
        return prefill_verdict(sim, step=step, free=free)
    # a prefill step of its own (exclusive_prefill) has the whole token budget
    budget = sim.config.max_num_batched_tokens - (0 if sim.exclusive_prefill else sim.cohort.count)
    if not (sim.waiting and budget > 0 and len(sim.running) < sim.max_num_seqs):
        return False
    after = free - sim.cohort.needs_at(step)
    cand = candidate(sim, sim.waiting[0], budget, free=after)
    return True if head_admissible(sim, cand, [], step=step, free=after) else cand
