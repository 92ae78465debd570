"""Which running request a replica gives up next when its KV blocks run out.

vLLM and TensorRT-LLM give up their latest admission (LIFO); SGLang retracts the request with the
fewest generated tokens, then the longest prompt, then the latest admitted (`victim_key`); the
no-evict policy reserves every block in advance and never needs a victim.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from capcliff.sim.policies import VictimOrder

if TYPE_CHECKING:
    from capcliff.sim.loop.state import ReplicaState


def next_victim(sim: ReplicaState) -> int:
    """The running request `sim`'s policy gives up next (a query: the replica is unchanged)."""
    order = sim.rule.victim_order
    if order is VictimOrder.LIFO:
        return next(reversed(sim.running))
    if order is VictimOrder.NONE:
        raise RuntimeError(f"{sim.rule.name} ran out of KV blocks, which it must never do")
    candidates = []
    best = sim.cohort.fewest_generated()
    if best is not None:
        (gen, prompt, seq), i = best
        candidates.append(((gen + sim.step, prompt, seq), i))
    if (x := sim.partial) is not None:
        candidates.append(((sim.generated[x], -sim.prompt[x], -sim.admit_seq[x]), x))
    return min(candidates)[1]
