"""The rate a layout's DP replicas sustain within an SLO, searched on all of them together.

The layout search (`capacity.replica_capacity`) simulates one replica offered 1/dp of the load,
a Poisson stream of its own. A deployment is all dp replicas behind the engine's router, and
that differs in two ways, both of which `sweep` and `check` simulate:

- Under attention DP (the experts spread across the DP ranks) every MoE layer waits for all
  ranks, so the ranks step in lockstep and a prefill on any rank stalls the others
  (`sim/loop/lockstep.py`). The one-rank search prices a rank as if every rank were as busy as
  it (`StepTimeModel.moe`): there the ranks' prefills always fall in the same steps, and with
  long prompts that overstates the layout, several-fold.
- Independent replicas get their arrivals from a router (round robin by default), which
  spreads them more evenly than dp independent Poisson streams: the one-replica search's p99s
  are a few per cent pessimistic.

So the cap that search chose is kept and the rate is checked again on the whole group by the
same rules (probes on common samples, the bracket narrowed to the same resolution, the answer
verified on a fresh sample that offers each replica as many requests as one replica's
verification did, up to GROUP_VERIFY_MAX in all, with its p99s' noise added), and the figures a
plan reports for the layout are the group's. The rate is only ever lowered: where the group
does better than one replica, the one-replica rate stands, with the group's latencies at it.

Replicas that are not in lockstep and share a round-robin router are interchangeable
(`interchangeable`): each serves every dp-th request of the stream, on its own, so the group is
read from the first replica's share alone, at 1/dp of the requests (its p99s' intervals are
then those of one replica's verification, which holds as many requests).

Every rate here is per replica (the group is offered `ranks` x it), as everywhere in a
`ReplicaCapacity`; a whole group's states are divided by the ranks where they count requests or
tokens per second (`per_rank`).
"""

from __future__ import annotations

from dataclasses import replace

from capcliff.analysis.evaluate.capacity import (
    VERIFY_SIZE,
    Replica,
    ReplicaCapacity,
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
from capcliff.sim.config import Routing
from capcliff.sim.result import SimResult
from capcliff.sim.simulate import route, simulate
from capcliff.sim.traffic.workload import Requests

# set: the most requests a group's verification simulates, the largest sample an online `sweep`
# grows to from its default 2,000 requests (`steady_point.MAX_DOUBLINGS`: 8 x)
GROUP_VERIFY_MAX = 16_000


def in_lockstep(replica: Replica, dp: int) -> bool:
    """Whether a layout's `dp` replicas step together: attention DP, a MoE step model with
    `dp` > 1, as `sim.simulate` runs them."""
    return replica.steps.moe is not None and dp > 1


def interchangeable(replica: Replica, dp: int) -> bool:
    """Whether `dp` replicas of `replica` behind the router are alike and apart: not in
    lockstep, and sent requests round robin. Each then serves every dp-th request of the
    group's stream, whatever the others do, so each replica's share is drawn alike (the same
    lengths, gaps of dp of the stream's) and runs on its own: the group's latencies are those of
    any one of them, and one replica's share, simulated, reads the group's figures (rates per
    replica) at 1/dp of the cost (the same run as its part of the group's, but for the kv-aware
    policy, whose output quantile is then taken over the share's requests, not the group's:
    the same distribution). With least-loaded routing the router reads every replica's
    work, so the group is simulated whole."""
    return not in_lockstep(replica, dp) and replica.config.routing is Routing.ROUND_ROBIN


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
    """`single` (one replica's search) with the rate within `slo` searched on the `ranks`
    replicas together at `single`'s cap: `single`'s rate where the group meets the SLO there,
    else the highest rate below it that the group meets (`highest_rate_below`); then verified
    on a fresh sample (`capacity.verified`: stepped down until that sample meets the SLO with
    its p99s' noise added), whose figures are the ones reported. Unchanged for one replica or
    when `single` met no rate.

    Replicas that do not step in lockstep are verified from `single`'s rate at once, without
    the probe on the search's sample: where that probe passes, the answer is the same (the
    same ladder from the same rate), and where the verification's stricter test (a larger
    fresh sample, the p99s' noise added) passes a step the probe would have missed, that step
    stands. A router spreads arrivals more evenly than a Poisson stream per replica, so the
    group does at least about as well as one replica there; where no step passes, the group is
    searched as above. Ranks in lockstep can do several-fold worse (a prefill on one stalls
    all), where the ladder of 3 % steps would miss throughout, so they are probed first."""
    if ranks < 2 or single.sustained is None:
        return single
    cap = single.cap
    mean = workload.mean_output_tokens()
    alike = interchangeable(replica, ranks)
    per = 1 if alike else ranks  # replicas whose figures one run's state holds

    def run(requests: Requests, at_cap: int) -> SimResult:
        if alike:  # the first replica's share of the group's stream
            mine = route(requests, ranks, Routing.ROUND_ROBIN)[0]
            return replica.run(requests.subset(mine), at_cap)
        config = config_at(replica.config, at_cap * ranks, ranks)
        return simulate(requests, replica.steps, replica.capacity, config, dp=ranks)

    def sample(n: int, rate: float) -> Requests:
        return workload.at_rate(n * ranks, rate * ranks)

    # as `capacity._within_slo`: the caps' sample size, and the time a request meeting the SLO
    # spends in the system (the probes' Little's-law size)
    size = max(p.requests for p in single.points)
    # the verification offers each replica as many requests as one replica's did, up to
    # GROUP_VERIFY_MAX simulated in all (one share: as one replica's)
    own = next((p.requests for p in single.points if p.cap == cap), size)
    own = min(own, -(-GROUP_VERIFY_MAX // (VERIFY_SIZE * per)))
    tried: list[RatePoint] = []  # the direct verification's runs
    found: RatePoint | None = None
    if not in_lockstep(replica, ranks):
        found = verified(run, workload, slo, single.sustained, tried, own, ranks)
        found = None if found is single.sustained else found  # no step passed
    probes = RateProbes(replica.config, slo, sample, run, mean, [], slo.ttft_s + mean * slo.tpot_s)
    missed: SteadyState | None = None
    if found is None:
        at = probes.probe(single.sustained_rps, size, cap)
        found = at
        if not at.meets:
            missed = at.state
            resolution = rate_resolution(single.sustained_rps / (1 - CAP_TOLERANCE))
            found = highest_rate_below(probes, cap, at, size, resolution)
        if found is not None:  # the figures reported come from the verification's fresh sample
            found = verified(run, workload, slo, found, probes.points, own, ranks)
    shown = tuple(_point_per_rank(p, per) for p in [*tried, *probes.points])
    if found is None:
        assert missed is not None  # no rate found: the probe at `single`'s rate missed
        return replace(
            single, sustained_rps=0.0, at_sustained=per_rank(missed, per), sustained=None,
            probes=shown,
        )  # fmt: skip
    chosen = _point_per_rank(found, per)
    return replace(
        single, sustained_rps=chosen.rate_rps, at_sustained=chosen.state, sustained=chosen,
        probes=shown,
    )  # fmt: skip
