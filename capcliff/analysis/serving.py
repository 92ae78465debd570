"""`capcliff plan` for online serving: each layout's capacity, the recommendation, the fleet.

The answer is the steady state at the offered load: which layout and admission cap, how much
traffic one replica carries within the SLO (`capacity`), whether the planned GPUs carry the
offered load and how many replicas would (`fleet`), what that costs per GPU type, and, when no
layout meets the SLO, what would (`feasibility`). Nothing is recommended that misses the SLO.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from capcliff.analysis.capacity import REFERENCE_REQUESTS
from capcliff.analysis.deployment import WorkloadChoice, sim_config_for
from capcliff.analysis.fleet import (
    DEFAULT_HEADROOM,
    Checked,
    check_fleet,
    fleet_entry,
    price_of,
    replicas_for,
    unit_of,
)
from capcliff.analysis.layout_capacity import (
    LayoutEval,
    SearchSettings,
    best_layout,
    evaluate_layouts,
    layout_memories,
)
from capcliff.analysis.online_load import OnlineWorkload
from capcliff.analysis.plan import CONTEXT_ROUNDING, PlanInputs, engine_flags, fit_fixes
from capcliff.analysis.plan_types import (
    SCHEMA_VERSION,
    FleetEntry,
    Load,
    Mode,
    PlanReport,
    Recommendation,
)
from capcliff.analysis.serving_rows import layout_row, recommendation_reasons_online
from capcliff.analysis.solver import Slo
from capcliff.catalog.catalogs import Model
from capcliff.catalog.layout import Layout
from capcliff.catalog.specs import HardwareSpec
from capcliff.memory.budget import BudgetSettings
from capcliff.memory.layout_memory import LayoutMemory
from capcliff.memory.weights import WeightScheme
from capcliff.sim.config import Routing, SimConfig
from capcliff.units import KVDType, round_up

FLEET_TP_SIZES = (1, 2, 4, 8)  # the replicas tried on another GPU type (TP only: PP adds latency)


@dataclass(frozen=True)
class OnlineOptions:
    """The online plan's own settings."""

    slo: Slo | None = None
    headroom: float = DEFAULT_HEADROOM
    least_requests: int | None = None  # raises the stopping rule's first sample
    fleet_gpus: tuple[HardwareSpec, ...] = ()  # more GPU types to size a fleet on
    prices: dict[str, float] = field(default_factory=dict)  # per GPU id, overrides
    jobs: int = 1
    routing: Routing = Routing.ROUND_ROBIN
    layouts: tuple[Layout, ...] = ()  # only these layouts of the planned GPUs (default: all)


@dataclass(frozen=True)
class _Context:
    model: Model
    settings: BudgetSettings
    kv_dtype: KVDType
    scheme: WeightScheme
    max_model_len: int
    workload: OnlineWorkload
    options: OnlineOptions
    policy: str | None


def _config(ctx: _Context, hardware: HardwareSpec) -> SimConfig:
    config = sim_config_for(
        ctx.settings, hardware, policy=ctx.policy, max_model_len=ctx.max_model_len
    )
    return replace(config, routing=ctx.options.routing)


def _search(
    ctx: _Context, hardware: HardwareSpec, gpus: int, *, replicas_only: bool = False
) -> tuple[list[LayoutMemory], dict[str, LayoutEval]]:
    config = _config(ctx, hardware)
    search = SearchSettings(
        ctx.workload, config, ctx.options.slo, ctx.options.least_requests, ctx.options.jobs,
        ctx.options.headroom,
    )  # fmt: skip
    memories = layout_memories(
        ctx.model, hardware, gpus, scheme=ctx.scheme, kv_dtype=ctx.kv_dtype,
        max_model_len=ctx.max_model_len, settings=ctx.settings,
    )  # fmt: skip
    if ctx.options.layouts and gpus == sum(lay.gpus for lay in ctx.options.layouts[:1]):
        names = {lay.name for lay in ctx.options.layouts}
        memories = [m for m in memories if m.layout.name in names]
    if replicas_only:  # fleet sizing on another GPU type: one replica of each TP size
        memories = [
            m for size in FLEET_TP_SIZES if size <= gpus
            for m in layout_memories(
                ctx.model, hardware, size, scheme=ctx.scheme, kv_dtype=ctx.kv_dtype,
                max_model_len=ctx.max_model_len, settings=ctx.settings,
            )
            if m.layout.dp == 1 and m.layout.pp == 1 and m.layout.ep == 1
        ]  # fmt: skip
    found = evaluate_layouts(
        ctx.model, hardware, memories, search, scheme=ctx.scheme, kv_dtype=ctx.kv_dtype
    )
    return memories, found


def _mean_output(workload: OnlineWorkload) -> float:
    return float(workload.backlog(REFERENCE_REQUESTS).output_tokens.mean())


def _fleet_line(
    ctx: _Context, hardware: HardwareSpec, ev: LayoutEval, checked: Checked | None
) -> FleetEntry:
    unit = unit_of(ev)
    offered = ctx.workload.offered_rps()
    clients = ctx.workload.choice.clients
    replicas = replicas_for(
        unit, offered_rps=offered, clients=clients, headroom=ctx.options.headroom
    )
    if checked is not None:
        replicas = checked.replicas
    if replicas is None:  # no load: the planned deployment, loaded to its headroom
        replicas = max(1, ev.memory.layout.gpus // unit.gpus)
    if offered is not None:
        served = offered
    elif clients is not None and unit.e2e_mean_s > 0:
        served = min(clients / unit.e2e_mean_s, replicas * unit.sustained_rps)
    else:
        served = replicas * unit.sustained_rps * (1 - ctx.options.headroom)
    return fleet_entry(
        hardware, unit, replicas, price=price_of(hardware, ctx.options.prices),
        served_rps=served, mean_output_tokens=_mean_output(ctx.workload), checked=checked,
    )  # fmt: skip


def _other_fleets(ctx: _Context, plan_gpu: str, gpus: int) -> tuple[list[FleetEntry], list[str]]:
    """The cheapest fleet line of each other GPU type: one replica of each TP size up to the
    planned GPU count (at most a node), each sized for the load; the cheapest wins."""
    lines, notes = [], []
    for hardware in ctx.options.fleet_gpus:
        if hardware.id == plan_gpu:
            continue
        _, found = _search(ctx, hardware, min(gpus, hardware.gpus_per_node), replicas_only=True)
        meeting = [ev for ev in found.values() if ev.refined and ev.capacity.meets_slo]
        if not meeting:
            notes.append(f"{hardware.id}: no replica of up to {gpus} GPUs meets the SLO (or fits)")
            continue
        options = [_fleet_line(ctx, hardware, ev, None) for ev in meeting]
        lines.append(min(options, key=lambda e: (e.usd_per_million_output_tokens, e.gpus)))
    return lines, notes


def _load(ctx: _Context, best: LayoutEval | None, replicas: int | None) -> Load:
    offered = ctx.workload.offered_rps()
    clients = ctx.workload.choice.clients
    sustained = None if best is None else best.sustained_rps
    saturated = False
    if best is not None and offered is not None:
        saturated = offered > best.sustained_rps
    elif best is not None and clients is not None:
        users = best.sustained_rps * best.capacity.at_sustained.e2e_mean_s
        saturated = clients > users
    return Load(
        kind=ctx.workload.kind.value, offered_rps=offered, clients=clients,
        sustained_rps=sustained, saturated=saturated, replicas_needed=replicas,
    )  # fmt: skip


def _overload_note(load: Load, best: LayoutEval, entry: FleetEntry, headroom: float) -> str:
    offered = (
        f"{load.offered_rps:,.2f} requests/s" if load.offered_rps is not None
        else f"{load.clients:,} users"
    )  # fmt: skip
    return (
        f"overload: {offered} offered, {best.memory.layout.name} on {best.memory.layout.gpus} "
        f"GPUs sustains {best.sustained_rps:,.2f} requests/s within the target; "
        f"{entry.replicas} x {entry.layout} ({entry.gpus} GPUs, {entry.nodes} nodes) carry it "
        f"with {headroom:.0%} headroom"
    )


def build_online_plan(
    model: Model,
    hardware: HardwareSpec,
    *,
    gpus: int,
    workload: WorkloadChoice,
    settings: BudgetSettings,
    kv_dtype: KVDType,
    max_model_len: int | None,
    policy: str | None,
    seed: int,
    options: OnlineOptions,
    scheme: WeightScheme | None = None,
) -> PlanReport:
    """Every layout's online capacity on `gpus` GPUs, one recommended, and the fleet."""
    online = OnlineWorkload(workload, seed)
    reference = online.backlog(REFERENCE_REQUESTS)
    longest = int((reference.input_tokens + reference.max_output_tokens).max())
    length = max_model_len or round_up(longest, CONTEXT_ROUNDING)
    ctx = _Context(
        model, settings, kv_dtype, scheme or WeightScheme.as_shipped(model.arch), length,
        online, options, policy,
    )  # fmt: skip
    memories, found = _search(ctx, hardware, gpus)
    best = best_layout(found)
    rows = [layout_row(m, found.get(m.layout.name), gpus) for m in memories]
    config = _config(ctx, hardware)
    inputs = PlanInputs(reference, online.label, length, ctx.scheme, config)
    report = PlanReport(
        schema_version=SCHEMA_VERSION, mode=Mode.ONLINE.value, model=model.id,
        hardware=hardware.id, gpus=gpus, engine=settings.engine.value, policy=config.policy,
        overheads="calibrated" if settings.calibrated_terms else "modeled",
        objective="sustained requests/s within the SLO", workload=online.label,
        num_requests=max((ev.capacity.simulated_requests for ev in found.values()), default=0),
        max_model_len=length, layouts=rows, recommended=None, fixes=[], engine_flags={},
        flag_warnings=[], slo_ttft_s=_finite(options.slo, "ttft_s"),
        slo_tpot_s=_finite(options.slo, "tpot_s"), headroom=options.headroom,
    )  # fmt: skip
    report = report.model_copy(
        update={
            "simulated_requests": report.num_requests,
            "settled": all(ev.capacity.settled for ev in found.values() if ev.refined),
        }
    )
    if not found:
        fixes = fit_fixes(model, hardware, gpus, inputs, settings=settings, kv_dtype=kv_dtype)
        return report.model_copy(
            update={"fixes": fixes, "reason": "no layout fits", "load": _load(ctx, None, None)}
        )
    if best is None:
        return _infeasible(ctx, report, hardware, gpus, found)
    return _recommend(ctx, report, hardware, best, found, inputs)


def _finite(slo: Slo | None, name: str) -> float | None:
    if slo is None:
        return None
    value: float = getattr(slo, name)
    return value if value != float("inf") else None


def _recommend(
    ctx: _Context,
    report: PlanReport,
    hardware: HardwareSpec,
    best: LayoutEval,
    found: dict[str, LayoutEval],
    inputs: PlanInputs,
) -> PlanReport:
    lay = best.memory.layout
    unit = unit_of(best)
    offered = ctx.workload.offered_rps()
    clients = ctx.workload.choice.clients
    needed = replicas_for(unit, offered_rps=offered, clients=clients, headroom=ctx.options.headroom)
    checked = None
    if needed is not None:
        checked = check_fleet(best, unit, needed, ctx.workload, ctx.options.slo)
        needed = checked.replicas
    entry = _fleet_line(ctx, hardware, best, checked)
    others, notes = _other_fleets(ctx, hardware.id, lay.gpus)
    fleet = sorted([entry, *others], key=lambda e: e.usd_per_million_output_tokens)
    load = _load(ctx, best, needed)
    rec = Recommendation(
        layout=lay.name, dp=lay.dp, tp=lay.tp, pp=lay.pp, ep=lay.ep,
        max_num_seqs=best.capacity.cap, reasons=recommendation_reasons_online(best, found),
        tie=[], kv_aware_makespan_s=None, kv_aware_gain=None,
    )  # fmt: skip
    flags, warnings = engine_flags(
        ctx.model, best.memory, best.capacity.cap * lay.dp, rec, inputs, ctx.settings,
        ctx.kv_dtype,
    )  # fmt: skip
    if load.saturated:
        notes.insert(0, _overload_note(load, best, entry, ctx.options.headroom))
    if checked is not None and not checked.meets:
        notes.append(
            f"the fleet of {checked.replicas} x {entry.layout} simulated at the load still "
            "misses the target: add replicas or headroom"
        )
    if not best.capacity.settled:
        notes.append(
            f"{lay.name}: the sample ({best.capacity.simulated_requests:,} requests) was too "
            "small for a 5 % confidence interval; the estimates may still move"
        )
    return report.model_copy(
        update={
            "recommended": rec, "engine_flags": flags, "flag_warnings": warnings,
            "load": load, "fleet": fleet, "notes": notes,
        }
    )  # fmt: skip


def _infeasible(
    ctx: _Context,
    report: PlanReport,
    hardware: HardwareSpec,
    gpus: int,
    found: dict[str, LayoutEval],
) -> PlanReport:
    from capcliff.analysis.feasibility import (
        alternatives,
        light_latency,
        what_would_meet,
    )
    from capcliff.catalog.catalogs import hardware_catalog

    slo = ctx.options.slo
    assert slo is not None
    config = _config(ctx, hardware)
    tried = [
        light_latency(
            ctx.model, alt, ctx.workload, config=config, max_model_len=ctx.max_model_len,
            settings=ctx.settings,
        )
        for alt in alternatives(
            ctx.model, hardware, gpus, scheme=ctx.scheme, kv_dtype=ctx.kv_dtype,
            catalog=list(hardware_catalog().values()),
        )
    ]  # fmt: skip

    def describe(t: object) -> str:
        from capcliff.analysis.feasibility import LightLatency

        assert isinstance(t, LightLatency)
        return (
            f"{t.alternative.label}: TTFT p99 {t.ttft_p99_s:,.2f} s, "
            f"TPOT p99 {(t.tpot_p99_s or 0) * 1000:,.0f} ms"
        )

    parts = []
    if slo.ttft_s != float("inf"):
        parts.append(f"TTFT p99 <= {slo.ttft_s:g} s")
    if slo.tpot_s != float("inf"):
        parts.append(f"TPOT p99 <= {slo.tpot_s * 1000:g} ms")
    limits = " and ".join(parts)
    return report.model_copy(
        update={
            "reason": f"no layout of {gpus} x {hardware.id} meets {limits}, even at light load",
            "fixes": what_would_meet(slo, tried, describe),
            "load": _load(ctx, None, None),
        }
    )
