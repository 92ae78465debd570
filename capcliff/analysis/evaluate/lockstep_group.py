"""The rate an attention-DP layout's lockstep group sustains within an SLO, searched on the group.

Under attention DP (the experts spread across the DP ranks) every MoE layer waits for all ranks,
so the ranks step in lockstep and a prefill on any rank stalls the others (`sim/loop/lockstep.py`).
The layout search (`capacity.replica_capacity`) simulates one rank whose steps are priced as if
every rank were as busy as it (`StepTimeModel.moe`): there the ranks' prefills always fall in the
same steps, and with long prompts that overstates the layout. Here the cap that search chose is
kept and the rate is searched again on the whole group by the same rules (probes on common
samples, the bracket narrowed to the same resolution, the answer verified on a fresh sample), so
the figures a plan reports for the layout are the ones `sweep` and `check` simulate for it.

Every rate here is per rank (the group is offered `ranks` x it), as everywhere in a
`ReplicaCapacity`; the group's states are divided by the ranks where they count requests or
tokens per second (`per_rank`).
"""

from __future__ import annotations

from dataclasses import replace

from capcliff.analysis.evaluate.capacity import (
    Replica,
    ReplicaCapacity,
    meets_slo_surely,
    verified,
)
from capcliff.analysis.evaluate.online_load import OnlineWorkload
from capcliff.analysis.evaluate.rate_search import (
    CAP_TOLERANCE,
    RatePoint,
    RateProbes,
    highest_rate_below,
    rate_resolution,
)
from capcliff.analysis.evaluate.solver import Slo, config_at
from capcliff.analysis.evaluate.steady_state import SteadyState
from capcliff.sim.result import SimResult
from capcliff.sim.simulate import simulate
from capcliff.sim.traffic.workload import Requests


def lockstep_ranks(replica: Replica, dp: int) -> int:
    """The replicas of a layout that step together: its DP ranks under attention DP (a MoE
    step model with `dp` > 1, as `sim.simulate` runs them), else 1."""
    return dp if replica.steps.moe is not None and dp > 1 else 1


def per_rank(state: SteadyState, ranks: int) -> SteadyState:
    """A group's steady state with its rates (requests/s, tokens/s) per rank."""
    arrival = None if state.arrival_rps is None else state.arrival_rps / ranks
    return replace(
        state,
        throughput_rps=state.throughput_rps / ranks,
        output_tok_s=state.output_tok_s / ranks,
        arrival_rps=arrival,
    )


def _point_per_rank(point: RatePoint, ranks: int) -> RatePoint:
    return replace(point, state=per_rank(point.state, ranks))


def group_capacity(
    replica: Replica,
    ranks: int,
    workload: OnlineWorkload,
    slo: Slo,
    single: ReplicaCapacity,
) -> ReplicaCapacity:
    """`single` (one rank's search) with the rate within `slo` searched on the `ranks` ranks
    together at `single`'s cap: first at `single`'s rate, kept when the group meets the SLO
    there with its p99s' sampling noise added (`meets_slo_surely`), else the highest rate below
    it that the group meets (`highest_rate_below`), verified on a fresh sample. Unchanged for
    one rank or when `single` met no rate."""
    if ranks < 2 or single.sustained is None:
        return single
    cap = single.cap
    mean = workload.mean_output_tokens()

    def run(requests: Requests, at_cap: int) -> SimResult:
        config = config_at(replica.config, at_cap * ranks, ranks)
        return simulate(requests, replica.steps, replica.capacity, config, dp=ranks)

    def sample(n: int, rate: float) -> Requests:
        return workload.at_rate(n * ranks, rate * ranks)

    # as `capacity._within_slo`: the caps' sample size, and the time a request meeting the SLO
    # spends in the system (the probes' Little's-law size)
    size = max(p.requests for p in single.points)
    # the verification's sample holds as many requests in all as one rank's did: its p99s are
    # as tight (the probes span as many turnovers of the group's requests as of one rank's)
    own = -(-next((p.requests for p in single.points if p.cap == cap), size) // ranks)
    probes = RateProbes(replica.config, slo, sample, run, mean, [], slo.ttft_s + mean * slo.tpot_s)
    at = probes.probe(single.sustained_rps, size, cap)
    found: RatePoint | None = at
    if not at.meets:
        resolution = rate_resolution(single.sustained_rps / (1 - CAP_TOLERANCE))
        found = highest_rate_below(probes, cap, at, size, resolution)
    if found is not None and not meets_slo_surely(found.state, slo):
        found = verified(run, workload, slo, found, probes.points, own, ranks)
    shown = tuple(_point_per_rank(p, ranks) for p in probes.points)
    if found is None:
        return replace(
            single, sustained_rps=0.0, at_sustained=per_rank(at.state, ranks), sustained=None,
            probes=shown,
        )  # fmt: skip
    chosen = _point_per_rank(found, ranks)
    return replace(
        single, sustained_rps=chosen.rate_rps, at_sustained=chosen.state, sustained=chosen,
        probes=shown,
    )  # fmt: skip
