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
    return head_decision(sim, step=step, free=free)[0]


def head_decision(
    sim: ReplicaState, *, step: int, free: int
) -> tuple[Candidate | bool, Candidate | None]:
    """(`head_verdict`, and the admitted head as the admission loop would build it: None unless
    the verdict is True from the chunked rule)."""
    if sim.prefill_only:
        return prefill_verdict(sim, step=step, free=free), None
    # a prefill step of its own (exclusive_prefill) has the whole token budget
    budget = sim.config.max_num_batched_tokens - (0 if sim.exclusive_prefill else sim.cohort.count)
    if not (sim.waiting and budget > 0 and len(sim.running) < sim.max_num_seqs):
        return False, None
    after = free - sim.cohort.needs_at(step)
    cand = candidate(sim, sim.waiting[0], budget, free=after)
    if head_admissible(sim, cand, [], step=step, free=after):
        return True, cand
    return cand, None


def known_admitted_head(sim: ReplicaState) -> Candidate | None:
    """The head of the queue as `head_decision` admitted it at this step with the blocks free
    now (`ReplicaState.known_head`, set by `fast_forward.plain_decode_run` just before the step
    it refused to jump runs exactly), or None; taken once. Nothing reads or changes the state
    between the two: the verdict and the candidate are the ones asked again would give (the
    prefix cache's settle to the same level is a no-op the second time)."""
    known, sim.known_head = sim.known_head, None
    if known is None or known[0] != sim.step or known[1] != sim.free:
        return None
    return known[2]
