"""What simulating a layout's DP replicas together changed, said in the plan's notes.

The plan searches each layout's rate on one replica (`evaluate.capacity`) and then on all its
DP replicas together (`evaluate.dp_group`). Where they sustain less than the one replica, the
note says by how much and why, so that a user comparing with an older plan, or with a
one-replica estimate, knows which figure is the deployment's.
"""

from __future__ import annotations

from capcliff.analysis.evaluate.dp_group import in_lockstep
from capcliff.analysis.evaluate.layout_capacity import LayoutEval

# set: a group rate this close to one replica's is the same figure within the rate search's
# resolution (`rate_search.BISECTIONS`: about 3 %)
SAME_RATE = 0.03


def group_note(best: LayoutEval, *, within_slo: bool = True) -> list[str]:
    """A note when `best`'s replicas, simulated together, sustain less than one replica's
    search said, or, without an SLO (`within_slo` False), when its ranks step in lockstep and
    its saturation rate is one rank's; [] otherwise."""
    alone, lay = best.alone, best.memory.layout
    if not within_slo and in_lockstep(best.replica, lay.dp):
        return [
            f"{lay.name}: its {lay.dp} ranks step in lockstep, and a prefill on any rank stalls "
            f"them all; without a latency target the rate shown is one rank's at saturation, "
            "which the group reaches only while the ranks' prefills fall in the same steps. "
            "Give --slo-ttft/--slo-tpot to search the group, or measure it (docs/serving.md)"
        ]
    if alone is None or alone.sustained_rps <= 0:
        return []
    one = alone.sustained_rps * lay.dp
    if best.sustained_rps >= (1 - SAME_RATE) * one:
        return []
    why = (
        f"its {lay.dp} ranks step in lockstep, and a prefill on any rank stalls them all"
        if in_lockstep(best.replica, lay.dp)
        else f"its {lay.dp} replicas share one router"
    )
    return [
        f"{lay.name}: {why}; simulated together they sustain {best.sustained_rps:.3g} "
        f"requests/s within the target, where one replica priced alone gives {one:.3g}: the "
        f"figures shown are the group's (`capcliff sweep --layout {lay.name} --rate "
        f"{best.sustained_rps:.3g}` simulates the same group)"
    ]
