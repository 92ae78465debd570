"""SGLang's scheduler without mixed chunks: a step runs prefill chunks or decodes, never both.

python/sglang/srt/managers/scheduler.py `get_next_batch_to_run`: the prefill batch that
`get_new_batch_prefill` forms (the chunked request's next chunk first, then waiting requests while
`PrefillAdder` lets them in, within --chunked-prefill-size) runs on its own, and the running batch
decodes only in a step with no prefill to run; the two share a forward only with
--enable-mixed-chunk (`is_mixed_chunk = chunked_prefill_size is not None and enable_mixed_chunk`;
off by default), which `server_args.py` turns off with EAGLE/NEXTN speculation ("Mixed chunked
prefill is disabled because of using eagle speculative decoding", v0.5.6 on). So the decoding
requests wait out every prefill step, and the prefill step has the whole token budget.

Admission asks the policy the question it asks in a mixed step (`head.head_verdict`): the
decoders' blocks of the step are set aside first, since SGLang reserves room for the running
requests' next tokens before it admits (`PrefillAdder` subtracts their reserved tokens), so a
run of decode steps ends (`fast_forward`) exactly where this module would run a prefill step.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from capcliff.sim.loop.head import head_decision, known_admitted_head
from capcliff.sim.loop.step_plan import PlannedStep, step_load

if TYPE_CHECKING:
    from capcliff.sim.loop.state import ReplicaState

# ReplicaSim._admit: (token budget, preempted) -> ([(request, context before, chunk)], refused)
Admit = Callable[[int, bool], tuple[list[tuple[int, int, int]], bool]]


def exclusive(sim: ReplicaState, *, landed: bool) -> bool:
    """Whether `sim` runs prefill steps of their own (SimConfig.mixed_prefill off): a plain
    replica only; a disaggregated pool's replica runs only prefills or only decodes, and V0's
    prefill-only scheduler (`prefill_only`) already keeps them apart."""
    return not (sim.config.mixed_prefill or landed or sim.prefill_only)


def exclusive_step(sim: ReplicaState, admit: Admit) -> PlannedStep | None:
    """The prefill step starting now (the request part way through its prefill takes its next
    chunk, then `admit`s while the policy agrees), the decoders held; or None when there is
    no prefill to run (then the step decodes and admits nobody; `sim.prefill_refused` says
    whether the policy refused the head of the queue for KV)."""
    budget = sim.config.max_num_batched_tokens
    reserve = sim.cohort.needs_at(sim.step)  # the decoders' next blocks, set aside
    chunk_x, need_x = sim._partial_plan(budget)
    known = known_admitted_head(sim)
    verdict, head = (
        (True, known) if known is not None else head_decision(sim, step=sim.step, free=sim.free)
    )
    sim.prefill_refused = verdict is not True and verdict is not False
    if sim.partial is None and verdict is not True:
        return None
    if need_x + reserve > sim.free:  # the chunk does not fit: a decode step resolves it
        return None
    sim.free -= need_x + reserve
    if sim.partial is not None:
        sim.held[sim.partial] += need_x
    else:  # `admit` asks first what `head_decision` just asked (the whole budget, `free` less
        sim.head_cand = head  # the reserve): it takes the answer
    admitted, blocked = admit(budget - chunk_x, False)
    sim.free += reserve
    prefills = admitted
    if sim.partial is not None and chunk_x:
        prefills = [*admitted, (sim.partial, sim.context[sim.partial], chunk_x)]
    if not prefills:  # nothing ran after all (a partial with no token left to compute)
        return None
    sim.cohort.hold()  # the decoding requests wait out this step
    swapped = sim.swap_out_tokens + sim.swap_in_tokens
    swap_s = sim.capacity.swap_seconds(swapped) if swapped else 0.0
    swap_s += sim.reuse.take_load_s() if sim.reuse is not None else 0.0
    return PlannedStep(chunk_x, admitted, False, blocked, step_load(0, 0, prefills), swap_s)
