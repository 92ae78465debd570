"""Online capacity of every layout of one GPU type, searched coarse-to-fine.

Every fitting layout's replica is first simulated at one cap, COARSE_FACTOR x its steady-state
cliff, with a backlog (one simulation, the stopping rule's first size). Layouts are ranked by that
saturation throughput (all replicas together); the REFINE_TOP leaders are then searched in full
(`capacity.replica_capacity`: caps, the stopping rule, rates within the SLO). When an SLO is given
and no leader meets it, the rest are searched too before the answer is "nothing meets it".
A layout that was not refined can only rank below one that was: its coarse figure is a lower bound
of its saturation throughput near the cliff, and the leaders beat it there.

Searches are pure functions of the replica (its step-time model, KV capacity and engine settings)
and the search settings, and layouts that differ only in data parallelism share one replica
(dp2-tp4 and tp4 search the same tp4 replica). A plan that searches several sets of layouts on one
GPU type (its layouts, then one unit of each shape for the fleet) passes one `Searched` to
each, and a replica searched before is not searched again: the same figures, once.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field

from capcliff.analysis.deployment import Deployment
from capcliff.analysis.evaluate.capacity import (
    CapPoint,
    Replica,
    ReplicaCapacity,
    cap_grid,
    decode_bound,
    replica_capacity,
    saturation_caps,
    saturation_point,
    sustained_bound,
    sweep_caps,
    sweep_point,
)
from capcliff.analysis.evaluate.dp_group import group_capacity
from capcliff.analysis.evaluate.online_load import OnlineWorkload
from capcliff.analysis.evaluate.replica_models import replica_models
from capcliff.analysis.evaluate.solver import Slo
from capcliff.analysis.parallel import parallel_map, workers
from capcliff.catalog.layout import enumerate_layouts
from capcliff.memory.layout_memory import LayoutMemory
from capcliff.perf.op_curves import MEASURED_CURVE_DIP
from capcliff.sim.config import SimConfig

COARSE_FACTOR = 0.71  # x the steady-state cliff: below it, so the coarse run does not thrash
REFINE_TOP = 3
AHEAD = 3  # caps of each refined layout's sweep simulated ahead, in parallel (see `_ahead`)


@dataclass(frozen=True)
class LayoutEval:
    """A layout's memory, its replica's models and what the search found."""

    memory: LayoutMemory
    replica: Replica
    capacity: ReplicaCapacity
    refined: bool
    # one replica's search, where the rate was then searched on all dp together (`group_layouts`)
    alone: ReplicaCapacity | None = None

    @property
    def sustained_rps(self) -> float:
        """All replicas together, within the SLO (requests/s)."""
        return self.capacity.sustained_rps * self.memory.layout.dp

    @property
    def saturation_rps(self) -> float:
        """All replicas together, with a backlog (requests/s)."""
        return self.capacity.saturation_rps * self.memory.layout.dp


@dataclass(frozen=True)
class SearchSettings:
    """What every layout's search shares."""

    workload: OnlineWorkload
    config: SimConfig
    slo: Slo | None
    least_requests: int | None  # the stopping rule starts at no fewer requests
    jobs: int = 1
    headroom: float = 0.2


# The rank of a layout that sustained at most the given rate (requests/s per replica), as
# (value, tie-breaker) with the least first, or None where the layout has no rank
Rank = Callable[["LayoutEval", float], tuple[float, int] | None]
Ranked = tuple[float, int, int]  # a rank and the layout's position
SearchKey = tuple[Replica, object, int, Slo | None, int | None, float]


@dataclass
class Searched:
    """The coarse, refined and grouped (`group_layouts`, by key and DP size) capacities already
    found in one plan, by replica and search settings (`key`), so that a replica shared by two
    layouts is searched once."""

    coarse: dict[SearchKey, ReplicaCapacity] = field(default_factory=dict)
    refined: dict[SearchKey, ReplicaCapacity] = field(default_factory=dict)
    grouped: dict[tuple[SearchKey, int], ReplicaCapacity] = field(default_factory=dict)


def key(replica: Replica, search: SearchSettings) -> SearchKey:
    """What a search's result depends on: the replica, the workload (its choice and seed), the
    SLO, the stopping rule's least sample and the headroom (not the worker count: a parallel
    search gives the serial answer)."""
    load = search.workload
    return (replica, load.choice, load.seed, search.slo, search.least_requests, search.headroom)


def layout_memories(dep: Deployment, gpus: int, max_model_len: int) -> list[LayoutMemory]:
    """Memory of every layout of `gpus` GPUs."""
    return [dep.memory(lay, max_model_len) for lay in enumerate_layouts(gpus, arch=dep.model.arch)]


def coarse_capacity(replica: Replica, search: SearchSettings) -> ReplicaCapacity:
    """One backlog simulation at COARSE_FACTOR x the steady-state cliff (a lower bound)."""
    cliff, base = cap_grid(search.workload, replica)
    cap = max(1, min(round(base * COARSE_FACTOR), replica.config.max_num_seqs))
    point = saturation_point(replica, search.workload, cap, search.least_requests, settle_it=False)
    rate = point.state.throughput_rps
    return ReplicaCapacity(
        analytic_cliff=cliff, points=(point,), cap=cap, saturation_rps=rate,
        sustained_rps=rate if search.slo is None else 0.0, at_sustained=point.state,
        best_ttft_p99_s=None, best_tpot_p99_s=None, simulated_requests=point.requests,
        settled=point.state.settled,
    )  # fmt: skip


RefineJob = tuple[Replica, SearchSettings, ReplicaCapacity, dict[int, CapPoint], tuple[int, ...]]


def _refine(job: RefineJob) -> tuple[ReplicaCapacity, dict[int, ReplicaCapacity]]:
    """A replica's full search and, when it meets the SLO, its groups of each of the DP sizes
    asked for (`group_layouts`'s searches, done in the same job: a group needs only its
    replica's search, so one layout's group need not wait for the other layouts' searches)."""
    replica, search, coarse, known, ranks = job
    capacity = replica_capacity(
        replica, search.workload, slo=search.slo, least=search.least_requests,
        headroom=search.headroom, first=coarse.points[0], known=known,
    )  # fmt: skip
    if search.slo is None or not capacity.meets_slo:
        return capacity, {}
    return capacity, {
        size: group_capacity(replica, size, search.workload, search.slo, capacity) for size in ranks
    }


def _cap_point(job: tuple[Replica, SearchSettings, CapPoint, int]) -> CapPoint:
    replica, search, first, cap = job
    _, base = cap_grid(search.workload, replica)
    return sweep_point(replica, search.workload, base, search.least_requests, first, cap)


def _ahead(
    found: dict[str, LayoutEval], names: list[str], search: SearchSettings
) -> list[dict[int, CapPoint]]:
    """With more than one worker (`workers`: idle cores, the run's pool): the caps every refined
    layout's sweep reaches (the grid's AHEAD caps from the first above 1/2: the climb stops only
    past the cliff; with an SLO the lowest too), simulated in parallel ahead of the sweeps, by
    layout. Serially: none (the sweep runs what it needs)."""
    if workers(search.jobs) <= 1:
        return [{} for _ in names]
    jobs = []
    for n in names:
        ev = found[n]
        _, base = cap_grid(search.workload, ev.replica)
        caps = sweep_caps(ev.replica, base)
        for cap in caps[1 : 1 + AHEAD] + (caps[:1] if search.slo is not None else []):
            jobs.append((ev.replica, search, ev.capacity.points[0], cap))
    points = parallel_map(_cap_point, jobs, search.jobs)
    known: dict[int, dict[int, CapPoint]] = {id(ev.replica): {} for ev in found.values()}
    for (replica, _, _, cap), point in zip(jobs, points, strict=True):
        known[id(replica)][cap] = point
    return [known[id(found[n].replica)] for n in names]


def _coarse(job: tuple[Replica, SearchSettings]) -> ReplicaCapacity:
    return coarse_capacity(*job)


def evaluate_layouts(
    dep: Deployment,
    memories: list[LayoutMemory],
    search: SearchSettings,
    *,
    refine_all: bool = False,
    searched: Searched | None = None,
    rank: Rank | None = None,
    group: bool = False,
) -> dict[str, LayoutEval]:
    """Coarse capacity of every fitting layout, refined for the leaders (by layout name;
    `refine_all`: every fitting layout, as for the layouts a user names). `searched`: the
    plan's searches so far, reused and added to. `rank`: only the first-ranked refined layout
    that meets the SLO is wanted (`refine_layouts`). `group`: the caller groups the layouts
    next (`group_layouts`), so their groups are searched with them (`refine_layouts`)."""
    done = Searched() if searched is None else searched
    replicas: dict[str, tuple[LayoutMemory, Replica]] = {}
    for memory in memories:
        if memory.fits:
            capacity, steps = replica_models(dep, memory)
            replicas[memory.layout.name] = (memory, Replica(steps, capacity, search.config))
    names = list(replicas)
    todo = list(
        dict.fromkeys(
            replicas[n][1] for n in names if key(replicas[n][1], search) not in done.coarse
        )
    )
    for replica, cap in zip(
        todo, parallel_map(_coarse, [(r, search) for r in todo], search.jobs), strict=True
    ):
        done.coarse[key(replica, search)] = cap
    found = {
        n: LayoutEval(replicas[n][0], replicas[n][1], done.coarse[key(replicas[n][1], search)],
                      refined=False)
        for n in names
    }  # fmt: skip
    order = sorted(names, key=lambda n: (-found[n].saturation_rps, n))
    # ranked (a fleet line's cost): the cheapest may be a slow replica, so every layout is a
    # candidate; `_refine_ranked` skips, unsimulated, those whose rank cannot come first
    top = len(order) if refine_all or rank is not None else REFINE_TOP
    refine_layouts(found, order[:top], search, searched=done, rank=rank, group=group)
    if search.slo is not None and not any(found[n].capacity.meets_slo for n in order):
        refine_layouts(found, order[top:], search, searched=done, rank=rank, group=group)
    return found


def refine_layouts(
    found: dict[str, LayoutEval],
    names: list[str],
    search: SearchSettings,
    *,
    searched: Searched | None = None,
    rank: Rank | None = None,
    group: bool = False,
) -> None:
    """Refine the layouts `names` of `found` in place (the full cap search within the SLO);
    `searched`: the plan's searches so far (a replica refined before is not searched again).
    `rank`: only the refined layout that meets the SLO with the least rank is wanted (ties to
    the first in `found`), and a layout that cannot be it is left unrefined (`_refine_ranked`).
    `group`: the caller groups the layouts next (`group_layouts`): each replica's job searches
    the groups of its layouts of several DP replicas too, into `searched`, as soon as its own
    search is done (the same searches `group_layouts` would run, sooner)."""
    done = Searched() if searched is None else searched
    if rank is not None:
        _refine_ranked(found, names, search, done, rank)
        return
    todo: dict[SearchKey, str] = {}
    sizes: dict[SearchKey, set[int]] = {}
    for name in names:
        at = key(found[name].replica, search)
        if at not in done.refined:
            todo.setdefault(at, name)
            ranks = found[name].memory.layout.dp
            if group and ranks > 1 and (at, ranks) not in done.grouped:
                sizes.setdefault(at, set()).add(ranks)
    fresh = list(todo.values())
    known = _ahead(found, fresh, search)
    jobs = [
        (found[n].replica, search, found[n].capacity, k, tuple(sorted(sizes.get(at, ()))))
        for (at, n), k in zip(todo.items(), known, strict=True)
    ]
    for at, (capacity, groups) in zip(
        todo, parallel_map(_refine, jobs, search.jobs, heavy=True), strict=True
    ):
        done.refined[at] = capacity
        done.grouped.update({(at, size): grouped for size, grouped in groups.items()})
    for name in names:
        ev = found[name]
        capacity = done.refined[key(ev.replica, search)]
        found[name] = LayoutEval(ev.memory, ev.replica, capacity, refined=True)


def _refine_ranked(
    found: dict[str, LayoutEval],
    names: list[str],
    search: SearchSettings,
    done: Searched,
    rank: Rank,
) -> None:
    """`refine_layouts` for the first-ranked layout only, serially, from the best rank each
    layout would reach at its coarse rate (replicas searched before in the plan first). A layout
    whose rank cannot beat one already found (rank, then position in `found`) is left at its
    coarse capacity: not simulated at all when even an unbounded rate cannot, else its caps are
    simulated at saturation (`saturation_caps`) and the bound they set on its rate within the
    SLO (`sustained_bound`) decides whether it is searched; its verification stops once the
    rate has stepped down to where it cannot rank first (`capacity.verified`'s `worthless`).
    `rank` must not improve as the rate falls, so a rank at an upper bound of the rate bounds
    the rank it can reach."""
    position = {name: i for i, name in enumerate(found)}

    def ranked(name: str, rate: float) -> Ranked | None:
        got = rank(found[name], rate)
        return None if got is None else (*got, position[name])

    def beaten(at: Ranked | None, first: Ranked | None) -> bool:
        return at is not None and first is not None and at > first

    def order(name: str) -> tuple[bool, Ranked]:
        # searched first: replicas already refined, then by the rank at their coarse rate (a
        # guess of the first-ranked, so that the others face its rank; any order gives the
        # same first-ranked layout, only the simulations skipped differ)
        fresh = key(found[name].replica, search) not in done.refined
        guess = ranked(name, found[name].capacity.saturation_rps) or ranked(name, math.inf)
        return fresh, guess or (-math.inf, 0, position[name])

    def beaten_at(name: str, first: Ranked | None) -> Callable[[float], bool]:
        return lambda rate: beaten(ranked(name, rate), first)

    first: Ranked | None = None
    for name in sorted(names, key=order):
        ev = found[name]
        capacity = done.refined.get(key(ev.replica, search))
        if capacity is None:
            capacity = _unless_beaten(ev, search, beaten_at(name, first))
            if capacity is None:  # cannot rank first: left at its coarse capacity
                continue
            done.refined[key(ev.replica, search)] = capacity
        found[name] = LayoutEval(ev.memory, ev.replica, capacity, refined=True)
        got = ranked(name, capacity.sustained_rps) if capacity.meets_slo else None
        if got is not None and (first is None or got < first):
            first = got


def _unless_beaten(
    ev: LayoutEval, search: SearchSettings, beaten_at: Callable[[float], bool]
) -> ReplicaCapacity | None:
    """`ev`'s capacity within the SLO, or None once `beaten_at` (its rank at a rate cannot be
    first) holds of an upper bound of its rate: any rate or the step-time model's decode bound
    (`decode_bound`; nothing simulated), the bound its saturation caps set
    (`sustained_bound`), or the rate its verification steps down to."""
    if beaten_at(math.inf):
        return None
    bound = decode_bound(ev.replica, search.workload)
    # raised by the measured curves' dip (`decode_bound` assumes a step never gets faster)
    if bound is not None and beaten_at(bound * (1 + MEASURED_CURVE_DIP)):  # no simulation either
        return None
    points = saturation_caps(
        ev.replica, search.workload, slo=search.slo, least=search.least_requests,
        first=ev.capacity.points[0],
    )  # fmt: skip
    if beaten_at(sustained_bound(points, search.slo)):
        return None
    capacity = replica_capacity(
        ev.replica, search.workload, slo=search.slo, least=search.least_requests,
        headroom=search.headroom, points=points, worthless=beaten_at,
    )  # fmt: skip
    return None if capacity.worthless else capacity


def _group(job: tuple[Replica, int, SearchSettings, ReplicaCapacity]) -> ReplicaCapacity:
    replica, ranks, search, single = job
    assert search.slo is not None
    return group_capacity(replica, ranks, search.workload, search.slo, single)


def group_layouts(
    found: dict[str, LayoutEval], search: SearchSettings, searched: Searched | None = None
) -> None:
    """Within an SLO, each refined layout of several DP replicas that met the SLO gets the rate
    its replicas meet simulated together (`dp_group.group_capacity`: attention-DP ranks in
    lockstep, independent replicas behind the router), in place; `searched`: the plan's
    searches so far (a group searched before is not searched again)."""
    if search.slo is None:
        return
    done = Searched() if searched is None else searched
    todo: dict[tuple[SearchKey, int], tuple[Replica, int, SearchSettings, ReplicaCapacity]] = {}
    names = []
    for name, ev in found.items():
        ranks = ev.memory.layout.dp
        if ev.alone is not None or not ev.refined or ranks < 2 or not ev.capacity.meets_slo:
            continue
        names.append(name)
        at = (key(ev.replica, search), ranks)
        if at not in done.grouped:
            todo.setdefault(at, (ev.replica, ranks, search, ev.capacity))
    for at, capacity in zip(
        todo, parallel_map(_group, list(todo.values()), search.jobs, heavy=True), strict=True
    ):
        done.grouped[at] = capacity
    for name in names:
        ev = found[name]
        grouped = done.grouped[(key(ev.replica, search), ev.memory.layout.dp)]
        found[name] = LayoutEval(ev.memory, ev.replica, grouped, True, alone=ev.capacity)


def best_layout(found: dict[str, LayoutEval], *, per_gpu: bool = False) -> LayoutEval | None:
    """The refined layout that sustains the most within the SLO, in all or per GPU (None when
    none does)."""
    meeting = [ev for ev in found.values() if ev.refined and ev.capacity.meets_slo]
    if not meeting:
        return None

    def key(ev: LayoutEval) -> tuple[float, int, str]:
        lay = ev.memory.layout
        rate = ev.sustained_rps / lay.gpus if per_gpu else ev.sustained_rps
        return (-rate, lay.tp, lay.name)

    return min(meeting, key=key)
