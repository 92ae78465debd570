"""The recommended layout's lockstep ranks simulated together, at the rate the plan reports.

Under attention DP (expert parallelism across DP replicas) the replicas step in lockstep: every
MoE layer waits for all ranks, so a prefill on any rank stalls the others (`sim/loop/lockstep.py`).
The plan's search simulates one rank priced as if every rank were as busy as it
(`StepTimeModel.moe`); with long prompts the ranks' prefills fall in different steps and the
search overstates the layout. This runs the whole group once at the sustained rate and, where it
misses the SLO the search said it meets, the plan says so with the group's figures.
"""

from __future__ import annotations

from capcliff.analysis.evaluate.layout_capacity import LayoutEval
from capcliff.analysis.evaluate.online_load import OnlineWorkload
from capcliff.analysis.evaluate.rate_search import meets_slo
from capcliff.analysis.evaluate.solver import Slo, config_at
from capcliff.analysis.evaluate.steady_state import steady_state
from capcliff.sim.simulate import simulate

# Set: the requests of the check (all ranks together); 16,000 is where `sweep` stops growing an
# online sample by default, and it settles a saturated group's throughput within a few per cent.
LOCKSTEP_CHECK_REQUESTS = 16_000


def lockstep_note(best: LayoutEval, workload: OnlineWorkload, slo: Slo | None) -> list[str]:
    """A note when `best`'s lockstep group, simulated together at its sustained rate, misses
    `slo`; [] when it meets it, without an SLO, or when the layout has no lockstep ranks."""
    lay, replica = best.memory.layout, best.replica
    if slo is None or replica.steps.moe is None or lay.dp < 2 or best.sustained_rps <= 0:
        return []
    rate = best.sustained_rps
    config = config_at(replica.config, best.capacity.cap * lay.dp, lay.dp)
    sample = workload.at_rate(LOCKSTEP_CHECK_REQUESTS, rate)
    result = simulate(sample, replica.steps, replica.capacity, config, dp=lay.dp)
    state = steady_state(result, open_loop=True, mean_output=workload.mean_output_tokens())
    if meets_slo(state, slo):
        return []
    queue = ", the queue grows" if state.saturated else ""
    return [
        f"{lay.name}: its {lay.dp} ranks step in lockstep, and a prefill on any rank stalls "
        f"them all; simulated together at {rate:.3g} requests/s they give TTFT p99 "
        f"{state.ttft_p99_s:.3g} s, TPOT p99 {state.tpot_p99_s * 1e3:.1f} ms, "
        f"{state.throughput_rps:.3g} requests/s served{queue}: the search, which prices one "
        "rank as if all were as busy, overstates this layout here (`capcliff sweep --layout "
        f"{lay.name} --rate {rate:.3g}` shows the group)"
    ]
