"""What searching an attention-DP layout's lockstep group changed, said in the plan's notes.

The plan searches each layout's rate on one rank (`evaluate.capacity`) and then, for a layout
whose ranks step in lockstep, on the whole group (`evaluate.lockstep_group`). Where the group
sustains less than the one rank priced as if every rank were as busy, the note says by how much
and why, so that a user comparing with an older plan, or with a single-rank estimate, knows which
figure is the deployment's.
"""

from __future__ import annotations

from capcliff.analysis.evaluate.layout_capacity import LayoutEval

# set: a group rate this close to one rank's is the same figure within the rate search's
# resolution (`rate_search.BISECTIONS`: about 3 %)
SAME_RATE = 0.03


def lockstep_note(best: LayoutEval) -> list[str]:
    """A note when `best`'s rate was searched on its lockstep group and came out lower than one
    rank's search; [] otherwise."""
    alone, lay = best.alone, best.memory.layout
    if alone is None or alone.sustained_rps <= 0:
        return []
    rank_rate = alone.sustained_rps * lay.dp
    if best.sustained_rps >= (1 - SAME_RATE) * rank_rate:
        return []
    return [
        f"{lay.name}: its {lay.dp} ranks step in lockstep, and a prefill on any rank stalls "
        f"them all; simulated together they sustain {best.sustained_rps:.3g} requests/s within "
        f"the target, where one rank priced as if every rank were as busy gives "
        f"{rank_rate:.3g}: the figures shown are the group's (`capcliff sweep --layout "
        f"{lay.name} --rate {best.sustained_rps:.3g}` simulates the same group)"
    ]
