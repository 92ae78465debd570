"""Fleet sizing: how many replicas carry the load, on how many GPUs and nodes, at what cost.

- Unit: one engine replica of the layout (its TP x PP GPUs); the ranks of an attention-DP
  layout step in lockstep and share its MoE layers, so there the whole layout is the unit.
- Replicas for a rate R: ceil(R / (per-replica sustained rate x (1 - headroom))). Headroom
  (DEFAULT_HEADROOM, set) keeps the fleet below the rate where its queues stop being bounded.
- Replicas for N closed-loop users: a replica holds L = rate x mean end-to-end time users at its
  sustained rate (Little's law), so ceil(N / (L x (1 - headroom))).
- Cost: GPUs x the on-demand price per GPU-hour (the hardware file's `usd_per_gpu_hour`, or
  --price-gpu-hour); per million output tokens it is that over the tokens served in an hour, the
  offered rate (without a load: the sustained rate less the headroom) x mean output tokens x 3600.
- Check: the fleet is simulated at the load with its routing (round-robin or least-loaded),
  so the stranded KV of data parallelism and the slowest replica's tail show; if it misses the
  SLO, one replica more is tried, up to VERIFY_RETRIES times. Each unit gets the sample its own
  search settled on: past VERIFY_MAX_REQUESTS requests in all, k of the fleet's units are
  simulated at their share of the load (k / replicas of the rate or users), which is what each
  unit sees under round-robin (16,000 requests over 12,989 replicas ran 1.2 each, far from
  their steady state: a TPOT p99 of 6 ms where one replica at its share reads 34 ms,
  fuzz_random seed 42).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from capcliff.analysis.evaluate.capacity import Replica
from capcliff.analysis.evaluate.layout_capacity import LayoutEval
from capcliff.analysis.evaluate.online_load import LoadKind, OnlineWorkload
from capcliff.analysis.evaluate.rate_search import meets_slo
from capcliff.analysis.evaluate.solver import Slo, config_at
from capcliff.analysis.evaluate.steady_state import SteadyState, steady_state
from capcliff.analysis.evaluate.unhit_runs import steps_run
from capcliff.analysis.plan.runs import SimRuns
from capcliff.analysis.plan.types import FleetEntry
from capcliff.catalog.layout import Layout
from capcliff.catalog.specs import HardwareSpec
from capcliff.errors import InputError
from capcliff.sim.config import SimConfig
from capcliff.sim.result import SimResult
from capcliff.sim.simulate import simulate
from capcliff.sim.traffic.workload import Requests

# The largest fleet sized, GPUs: about the largest GPU clusters built (~100k GPUs). A load that
# needs more is refused in one line with the replica count, before any fleet is simulated (the
# routing of millions of replicas would exhaust memory).
MAX_FLEET_GPUS = 100_000
DEFAULT_HEADROOM = 0.2  # set: run replicas at no more than 80 % of their sustained rate
VERIFY_MAX_REQUESTS = 16_000  # the fleet check simulates at most this many requests
VERIFY_RETRIES = 2


@dataclass(frozen=True)
class Unit:
    """What a fleet adds one of."""

    layout: Layout
    dp: int  # engine replicas inside one unit
    sustained_rps: float
    cap: int  # max_num_seqs per engine replica
    e2e_mean_s: float
    think_s: float = 0.0  # sessions: the mean think time before a request is sent

    @property
    def gpus(self) -> int:
        """GPUs of one unit."""
        return self.layout.gpus


def unit_layout(layout: Layout) -> Layout:
    """The layout of the unit a fleet of `layout` adds: one TP x PP (x EP) replica, or under
    attention DP the whole lockstep group (its ranks share the MoE layers: none runs alone)."""
    if layout.attention_dp:
        return layout
    return Layout(tp=layout.tp, pp=layout.pp, ep=layout.ep)


def unit_of(ev: LayoutEval, think_s: float = 0.0) -> Unit:
    """The replica a fleet of this layout is built from (`think_s`: users' mean think time)."""
    lay = ev.memory.layout
    state = ev.capacity.at_sustained
    if lay.attention_dp:  # lockstep ranks share the MoE layers: no rank runs alone
        return Unit(lay, lay.dp, ev.sustained_rps, ev.capacity.cap, state.e2e_mean_s, think_s)
    one = unit_layout(lay)
    return Unit(one, 1, ev.capacity.sustained_rps, ev.capacity.cap, state.e2e_mean_s, think_s)


def replicas_for(
    unit: Unit, *, offered_rps: float | None, clients: int | None, headroom: float
) -> int | None:
    """Units that carry the load with `headroom` to spare (None without a load)."""
    if not 0 <= headroom < 1:
        raise InputError(f"headroom: must be in [0, 1), got {headroom}")
    if unit.sustained_rps <= 0:
        return None
    usable = unit.sustained_rps * (1 - headroom)
    if offered_rps is not None:
        needed = offered_rps / usable
        load = f"rate: {offered_rps:,.6g} requests/s"
    elif clients is not None:
        users = usable * (unit.e2e_mean_s + unit.think_s)  # Little's law over a user's cycle
        if users <= 0:
            return None
        needed = clients / users
        load = f"clients: {clients:,} users"
    else:
        return None
    if needed * unit.gpus > MAX_FLEET_GPUS:
        raise InputError(
            f"{load} at headroom {headroom} needs {_many(needed)} replicas of "
            f"{unit.layout.name} ({_many(needed, unit.gpus)} GPUs), past the "
            f"{MAX_FLEET_GPUS:,} GPUs a fleet is sized to; lower the load or the headroom"
        )
    return max(1, math.ceil(needed - 1e-9))


def _many(count: float, each: int = 1) -> str:
    """`count` rounded up, times `each`, with thousands separators; past 10^12 in 3 significant
    figures (`--rate 1e300` printed 300 digits; an infinite count reads inf)."""
    return f"{math.ceil(count) * each:,}" if count < 1e12 else f"{count * each:.3g}"


def price_of(hardware: HardwareSpec, prices: dict[str, float]) -> float:
    """The price per GPU-hour: the override, else the hardware file's."""
    price = prices.get(hardware.id, hardware.usd_per_gpu_hour)
    if price is None:
        raise InputError(
            f"price-gpu-hour: {hardware.id} has no usd_per_gpu_hour; give --price-gpu-hour"
        )
    return price


def hourly_cost(gpus: int, price: float, output_tok_s: float) -> tuple[float, float]:
    """($ per hour, $ per million output tokens) of `gpus` GPUs at `price` $/GPU-hour serving
    `output_tok_s` output tokens/s; $ per million tokens is inf when nothing is served."""
    usd_per_hour = gpus * price
    tokens_per_hour = output_tok_s * 3600
    per_mtok = usd_per_hour / tokens_per_hour * 1e6 if tokens_per_hour > 0 else math.inf
    return usd_per_hour, per_mtok


def gpu_hours_per_mtok(gpus: int, output_tok_s: float) -> float:
    """GPU-hours per million output tokens of `gpus` GPUs serving `output_tok_s` output tokens/s:
    `hourly_cost`'s $ per million at $1 per GPU-hour, so that the two rank alike (inf when
    nothing is served)."""
    return hourly_cost(gpus, 1.0, output_tok_s)[1]


@dataclass(frozen=True)
class Checked:
    """The fleet simulated at the load."""

    replicas: int
    state: SteadyState  # of the units simulated, at their share of the load
    meets: bool
    # the share of the fleet's load simulated: all of it, or past VERIFY_MAX_REQUESTS that of
    # `simulated_units` units (a rate's units / replicas, users' share / clients)
    load_share: float = 1.0

    @property
    def fleet_rps(self) -> float:
        """Requests/s the whole fleet serves: the simulated units' throughput over their share
        (2026-12-08, h-user3: 64 agentic users on 6 x tp2, one unit simulated with 11 of them,
        priced the six replicas' dollars on that one unit's 2.77 requests/s, 6 x too dear)."""
        return self.state.throughput_rps / self.load_share


# What `check_fleet` simulates: the replica, its search's sample size, the cap and DP ranks of a
# unit, and the units
CheckKey = tuple[Replica, int, int, int, int]


def check_key(ev: LayoutEval, unit: Unit, replicas: int) -> CheckKey:
    """What `check_fleet(ev, unit, replicas, ...)` depends on besides the workload and the SLO:
    two fleets with equal keys are the same simulations (a unit's rate, layout name and latencies
    only size the fleet, never enter its run; dp2-tp4's copies and the tp4 fleet line are one
    fleet when their caps and counts agree)."""
    return (ev.replica, ev.capacity.simulated_requests, unit.cap, unit.dp, replicas)


def check_fleet(
    ev: LayoutEval,
    unit: Unit,
    replicas: int,
    workload: OnlineWorkload,
    slo: Slo | None,
    runs: SimRuns | None = None,
) -> Checked:
    """Simulate `replicas` units at the workload's load with the configured routing (past
    VERIFY_MAX_REQUESTS, `simulated_units` of them at their share); add one while the SLO (or,
    without one, a bounded queue) is missed. `runs`: the plan's runs so far (`runs.SimRuns`)."""
    limits = slo or Slo.unlimited()
    count = replicas
    sample = ev.capacity.simulated_requests
    for _ in range(VERIFY_RETRIES + 1):
        units = simulated_units(count, sample)
        engines = units * unit.dp
        n = min(VERIFY_MAX_REQUESTS, sample * units)
        if workload.kind is LoadKind.CLIENTS:
            assert workload.choice.clients is not None
            share = max(1, round(workload.choice.clients * units / count))
            requests = workload.with_clients(n, share)
            load_share = share / workload.choice.clients
        else:
            offered = workload.offered_rps()
            assert offered is not None
            requests = workload.at_rate(n, offered * units / count)
            load_share = units / count
        config = config_at(ev.replica.config, unit.cap * engines, engines)
        result = _fleet_run(ev.replica, requests, config, (engines, units), runs)
        state = steady_state(result, open_loop=workload.kind is not LoadKind.CLIENTS)
        if meets_slo(state, limits):
            return Checked(count, state, True, load_share)
        count += 1
    return Checked(count - 1, state, False, load_share)


def simulated_units(replicas: int, sample: int) -> int:
    """Units of a fleet of `replicas` that its check simulates: all of them while each can have
    `sample` requests (the sample its replica's search settled on) within VERIFY_MAX_REQUESTS,
    else as many as can (at least one), at their share of the load."""
    return max(1, min(replicas, VERIFY_MAX_REQUESTS // max(1, sample)))


def _fleet_run(
    replica: Replica,
    requests: Requests,
    config: SimConfig,
    engines_groups: tuple[int, int],
    runs: SimRuns | None = None,
) -> SimResult:
    """`simulate` of the fleet, whose steady state reads no prefix-cache figure: with the cache
    off where that takes the same steps (`unhit_runs.steps_run`)."""
    steps, capacity = replica.steps, replica.capacity
    engines, groups = engines_groups
    sim = simulate if runs is None else runs.simulate

    def run(c: SimConfig) -> SimResult:
        return sim(requests, steps, capacity, c, dp=engines, groups=groups)

    return steps_run(requests, config, run)


def fleet_entry(
    hardware: HardwareSpec,
    unit: Unit,
    replicas: int,
    *,
    price: float,
    served_rps: float,
    mean_output_tokens: float,
    checked: Checked | None = None,
    throughput_error: float | None = None,
) -> FleetEntry:
    """One GPU type's line of the fleet table (`throughput_error`: its held-out throughput
    error, carried to the table)."""
    gpus = replicas * unit.gpus
    usd_per_hour, usd_per_mtok = hourly_cost(gpus, price, served_rps * mean_output_tokens)
    return FleetEntry(
        gpu=hardware.id,
        layout=unit.layout.name,
        max_num_seqs=unit.cap,
        replicas=replicas,
        gpus=gpus,
        nodes=math.ceil(gpus / hardware.gpus_per_node),
        usd_per_gpu_hour=price,
        usd_per_hour=usd_per_hour,
        usd_per_million_output_tokens=usd_per_mtok,
        sustained_rps_per_replica=unit.sustained_rps,
        ttft_p99_s=None if checked is None else checked.state.ttft_p99_s,
        tpot_p99_s=None if checked is None else checked.state.tpot_p99_s,
        meets_slo=None if checked is None else checked.meets,
        throughput_error=throughput_error,
        served_rps=served_rps,
    )


def fleet_tie_note(fleet: list[FleetEntry]) -> str | None:
    """A note when the two cheapest GPU types of `fleet` (sorted cheapest first) cost less apart
    than the model can resolve: their $ per million output tokens differ by less than the larger
    of their held-out throughput errors (a cost per token is a price over a throughput, so it is
    as uncertain as the throughput). None otherwise, or where a type has no measured error."""
    if len(fleet) < 2:
        return None
    first, second = fleet[0], fleet[1]
    errors = [e.throughput_error for e in (first, second)]
    if any(e is None for e in errors) or second.usd_per_million_output_tokens <= 0:
        return None
    band = max(e for e in errors if e is not None)
    gap = 1 - first.usd_per_million_output_tokens / second.usd_per_million_output_tokens
    if gap >= band:
        return None
    return (
        f"fleet: {first.gpu} and {second.gpu} are {gap:.0%} apart in $ per million output "
        f"tokens, within the {band:.0%} held-out throughput error of the less validated one; "
        "the model cannot tell which is cheaper: calibrate each with one benchmark run before "
        "buying"
    )
