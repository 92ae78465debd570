"""`capcliff plan` for online serving: each layout's capacity, the recommendation, the fleet.

The answer is the steady state at the offered load: which layout and admission cap, how much
traffic one replica carries within the SLO (`capacity`), whether the planned GPUs carry the
offered load and how many replicas would (`fleet`), what that costs per GPU type, and, when no
layout meets the SLO, what would (`feasibility`). Nothing is recommended that misses the SLO.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace

from capcliff.analysis.deployment import Deployment
from capcliff.analysis.evaluate.layout_capacity import (
    LayoutEval,
    Rank,
    Searched,
    SearchSettings,
    best_layout,
    evaluate_layouts,
    group_layouts,
    layout_memories,
    refine_layouts,
)
from capcliff.analysis.evaluate.online_load import OnlineWorkload
from capcliff.analysis.evaluate.replica_models import band_of, step_label
from capcliff.analysis.evaluate.solver import Slo
from capcliff.analysis.parallel import Later, ahead
from capcliff.analysis.plan.commands import engine_flags, served_model
from capcliff.analysis.plan.fleet import (
    DEFAULT_HEADROOM,
    Checked,
    CheckKey,
    check_fleet,
    check_key,
    fleet_entry,
    fleet_tie_note,
    price_of,
    replicas_for,
    unit_layout,
    unit_of,
)
from capcliff.analysis.plan.group_note import group_note
from capcliff.analysis.plan.inputs import PlanInputs
from capcliff.analysis.plan.online_reuse import mean_think_s, online_reuse
from capcliff.analysis.plan.online_rows import layout_row, recommendation_reasons_online
from capcliff.analysis.plan.reuse_advice import given_offload_note
from capcliff.analysis.plan.runs import SimRuns
from capcliff.analysis.plan.ties import (
    Option,
    decide,
    simplicity,
    tie_band,
    tie_reason,
    unsettled_reason,
)
from capcliff.analysis.plan.types import (
    FleetEntry,
    Load,
    Mode,
    PlanReport,
    Recommendation,
)
from capcliff.analysis.what_fits import fit_fixes, refuse_impossible
from capcliff.analysis.workloads import REFERENCE_REQUESTS, WorkloadChoice
from capcliff.catalog.layout import Layout, enumerate_layouts
from capcliff.catalog.specs import HardwareSpec
from capcliff.errors import InputError
from capcliff.memory.layout_memory import LayoutMemory
from capcliff.memory.report import report_header
from capcliff.units import counted

# the TP replicas tried on another GPU type (no PP: it adds latency); a MoE model's EP and
# attention-DP units are tried beside them (`fleet_units`)
FLEET_TP_SIZES = (1, 2, 4, 8)


@dataclass(frozen=True)
class OnlineOptions:
    """The online plan's own settings."""

    slo: Slo | None = None
    headroom: float = DEFAULT_HEADROOM
    least_requests: int | None = None  # raises the stopping rule's first sample
    fleet_gpus: tuple[HardwareSpec, ...] = ()  # more GPU types to size a fleet on
    prices: dict[str, float] = field(default_factory=dict)  # per GPU id, overrides
    jobs: int = 1
    layouts: tuple[Layout, ...] = ()  # only these layouts of the planned GPUs (default: all)
    serve_local_path: bool = False


@dataclass(frozen=True)
class _Context:
    dep: Deployment
    max_model_len: int
    workload: OnlineWorkload
    options: OnlineOptions
    # the searches done so far on this GPU type (a context sent to a worker gets its own), and
    # the fleets simulated at the load (`fleet.check_key`)
    searched: Searched = field(default_factory=Searched)
    checked: dict[CheckKey, Checked] = field(default_factory=dict)
    # the runs the fleet check and the reuse advice share (`runs.SimRuns`)
    runs: SimRuns = field(default_factory=SimRuns)

    @property
    def band(self) -> float:
        """The tie band: the held-out throughput error of the deployment's engine and GPU."""
        return tie_band(band_of(self.dep).throughput)


def _memories(
    ctx: _Context, dep: Deployment, gpus: int, *, replicas_only: bool = False
) -> list[LayoutMemory]:
    """Every layout of `gpus` GPUs of `dep` (only those named, when some are), or, with
    `replicas_only`, one unit of each shape up to `gpus` (`fleet_units`)."""
    o = ctx.options
    if replicas_only:
        return [dep.memory(unit, ctx.max_model_len) for unit in fleet_units(dep, gpus, o.layouts)]
    if o.layouts:
        return [dep.memory(lay, ctx.max_model_len) for lay in o.layouts]
    return layout_memories(dep, gpus, ctx.max_model_len)


def fleet_units(dep: Deployment, gpus: int, named: tuple[Layout, ...] = ()) -> list[Layout]:
    """The units a fleet on one GPU type is built of, up to `gpus` GPUs each: a replica of each
    TP size, the units of the layouts named (`--layout`) and, for a MoE model, the unit of each
    EP or attention-DP layout without pipeline stages, so that every GPU type's fleet line is
    searched over the shapes the planned type's layouts have. (2026-12-07, h-user2: DeepSeek-R1
    on SGLang, `--gpu h200-sxm,b200 --layout tp8,dp8-ep8`, no load: H200's line was dp8-ep8 at
    $2.01 per million output tokens, B200's tp8 at $3.59, so B200 read the dearer; B200's own
    plan gives dp8-ep8 at $0.82.)"""
    units = [Layout(tp=size) for size in FLEET_TP_SIZES]
    units += [unit_layout(lay) for lay in named]
    if dep.model.arch.moe is not None:
        units += [
            unit_layout(lay) for lay in enumerate_layouts(gpus, arch=dep.model.arch)
            if lay.pp == 1 and (lay.ep > 1 or lay.attention_dp)
        ]  # fmt: skip
    return [unit for unit in dict.fromkeys(units) if unit.gpus <= gpus]


def _search(
    ctx: _Context,
    dep: Deployment,
    gpus: int,
    *,
    replicas_only: bool = False,
    rank: Rank | None = None,
    memories: list[LayoutMemory] | None = None,
) -> tuple[list[LayoutMemory], dict[str, LayoutEval]]:
    """Every layout of `gpus` GPUs of `dep` (or, `replicas_only`, one unit of each shape up to
    `gpus`, `fleet_units`), searched coarse-to-fine (`rank`: only the first-ranked is wanted);
    `memories`: those layouts' memories (`_memories`), when already worked out."""
    o = ctx.options
    search = SearchSettings(
        ctx.workload, dep.sim_config(ctx.max_model_len), o.slo, o.least_requests, o.jobs,
        o.headroom,
    )  # fmt: skip
    if memories is None:
        memories = _memories(ctx, dep, gpus, replicas_only=replicas_only)
    named = bool(o.layouts) and not replicas_only
    found = evaluate_layouts(
        dep, memories, search, refine_all=named, searched=ctx.searched, rank=rank,
        group=not replicas_only,
    )  # fmt: skip
    if not replicas_only:
        group_layouts(found, search, ctx.searched)
        _refine_contenders(found, search, ctx.band, ctx.searched)
    return memories, found


def _refine_contenders(
    found: dict[str, LayoutEval], search: SearchSettings, band: float, searched: Searched
) -> None:
    """Refine the unrefined layouts that could change the recommendation: simpler than the one
    the tie rule picks and not ruled out by their first cap (a lower bound of the rate, so within
    twice the tie band of the best). Without this the layouts refined first, chosen on a noisy
    lower bound, would decide the answer, and it would flip with the seed."""
    while True:
        ranked = [_option(ev) for ev in found.values() if _ranked(ev)]
        if not ranked:
            return
        chosen, _, fastest = decide(ranked, band)
        top = (fastest or chosen).value
        more = [
            name for name, ev in found.items()
            if not ev.refined and ev.saturation_rps >= top * (1 - 2 * band)
            and simplicity(_option(ev)) < simplicity(chosen)
        ]  # fmt: skip
        if not more:
            return
        refine_layouts(found, more, search, searched=searched, group=True)
        group_layouts(found, search, searched)


def _mean_output(workload: OnlineWorkload) -> float:
    """Output tokens per request a fleet's $ per million is costed on: the workload's expected
    output (the closed form, `OnlineWorkload.mean_output_tokens`), the figure every conversion
    between requests/s and tokens/s of the capacity search uses; the reference sample's mean
    differed by its sampling noise (765.6 against 799.5 for lognormal:800:3000, 4 %)."""
    return workload.mean_output_tokens()


def _fleet_line(
    ctx: _Context, hardware: HardwareSpec, ev: LayoutEval, checked: Checked | None
) -> FleetEntry:
    think = mean_think_s(ctx.workload)
    unit = unit_of(ev, think)
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
    elif clients is not None and checked is not None:
        # the users' own rate, simulated at their load: their cycle is think + their latency
        # there, not the latency at the replicas' sustained rate (8 users thinking 10 s on a
        # replica that answers in 2.3 s send 0.65 requests/s, not 8 / (10 + 13.5) = 0.34)
        served = checked.fleet_rps
    elif clients is not None and unit.e2e_mean_s + think > 0:
        served = min(clients / (unit.e2e_mean_s + think), replicas * unit.sustained_rps)
    else:
        served = replicas * unit.sustained_rps * (1 - ctx.options.headroom)
    entry = fleet_entry(
        hardware, unit, replicas, price=price_of(hardware, ctx.options.prices),
        served_rps=served, mean_output_tokens=_mean_output(ctx.workload), checked=checked,
        throughput_error=band_of(ctx.dep, hardware.id).throughput,
    )  # fmt: skip
    if checked is None and offered is None and clients is None and ctx.options.slo is None:
        # no load and no SLO: each replica runs at the headroom below its saturation, where the
        # layout's own p99s were measured (`capacity`); the row showed "-" beside them
        state = ev.capacity.at_sustained
        p99s = {"ttft_p99_s": state.ttft_p99_s, "tpot_p99_s": state.tpot_p99_s}
        entry = entry.model_copy(update=p99s)
    return entry


def _type_fleet(job: tuple[_Context, HardwareSpec, int]) -> tuple[FleetEntry | None, str]:
    """The cheapest fleet line on one GPU type: one unit of each shape up to `gpus`, each
    sized for the load (or a note saying why there is none)."""
    ctx, hardware, gpus = job
    dep = ctx.dep.on(hardware)
    _, found = _search(
        ctx, dep, min(gpus, hardware.gpus_per_node), replicas_only=True,
        rank=_fleet_rank(ctx, hardware),
    )  # fmt: skip
    meeting = [ev for ev in found.values() if ev.refined and ev.capacity.meets_slo]
    if not meeting:
        return None, f"{hardware.id}: no replica of up to {gpus} GPUs fits and meets the target"
    lines = [(_fleet_line(ctx, hardware, ev, None), ev) for ev in meeting]
    line, ev = min(lines, key=lambda p: (p[0].usd_per_million_output_tokens, p[0].gpus))
    _, checked = _checked_fleet(ctx, ev)
    if checked is not None:  # the cheapest line, simulated at the load with its routing
        line = _fleet_line(ctx, hardware, ev, checked)
    return line, ""


def _fleet_rank(ctx: _Context, hardware: HardwareSpec) -> Rank | None:
    """The key `_type_fleet` takes the cheapest line by ($ per million output tokens, GPUs) of a
    replica that sustained a given rate, for an offered rate (None otherwise: with users or no
    load the cost moves with the latencies too). It never falls as the rate rises (fewer
    replicas carry the load), so at an upper bound of the rate it is a lower bound of the key.
    None where the line cannot be priced (the line itself then reports why)."""
    offered = ctx.workload.offered_rps()
    if offered is None:
        return None

    def rank(ev: LayoutEval, rate: float) -> tuple[float, int] | None:
        lay = ev.memory.layout
        unit = replace(unit_of(ev), sustained_rps=rate * (lay.dp if lay.attention_dp else 1))
        try:
            replicas = replicas_for(
                unit, offered_rps=offered, clients=None, headroom=ctx.options.headroom
            )
            price = price_of(hardware, ctx.options.prices)
        except InputError:
            return None
        if replicas is None:
            return None
        line = fleet_entry(
            hardware, unit, replicas, price=price, served_rps=offered,
            mean_output_tokens=_mean_output(ctx.workload),
        )  # fmt: skip
        return line.usd_per_million_output_tokens, line.gpus

    return rank


def _checked_fleet(ctx: _Context, ev: LayoutEval) -> tuple[int | None, Checked | None]:
    """Replicas of `ev` for the load, and, with a load, that fleet simulated with its routing."""
    unit = unit_of(ev, mean_think_s(ctx.workload))
    needed = replicas_for(
        unit, offered_rps=ctx.workload.offered_rps(), clients=ctx.workload.choice.clients,
        headroom=ctx.options.headroom,
    )  # fmt: skip
    if needed is None:
        return None, None
    # the recommended layout's copies can be the planned type's fleet line too (dp2-tp4 and
    # tp4, even where their rates differ): one fleet, simulated once
    seen = check_key(ev, unit, needed)
    if seen not in ctx.checked:
        ctx.checked[seen] = check_fleet(ev, unit, needed, ctx.workload, ctx.options.slo, ctx.runs)
    checked = ctx.checked[seen]
    return checked.replicas, checked


def _start_other_fleets(ctx: _Context, gpus: int) -> list[Later[tuple[FleetEntry | None, str]]]:
    """The other GPU types' fleet lines for `gpus` GPUs, one job per type: started now in the
    run's pool when it has more than one worker (they need nothing the planned type's search
    finds, so they run beside it), else searched here, in turn, when `_other_fleets` asks."""
    inner = _Context(ctx.dep, ctx.max_model_len, ctx.workload, _serial(ctx.options))
    others = [h for h in ctx.options.fleet_gpus if h.id != ctx.dep.hardware.id]
    return ahead(_type_fleet, [(inner, h, gpus) for h in others], ctx.options.jobs)


def _other_fleets(
    ctx: _Context, gpus: int, started: tuple[int, list[Later[tuple[FleetEntry | None, str]]]]
) -> tuple[list[FleetEntry], list[str]]:
    """The other GPU types' fleet lines for `gpus` GPUs: those `started` for as many GPUs."""
    count, lines = started
    if count != gpus:  # every layout of a plan uses all its GPUs, so this is a safeguard
        for later in lines:
            later.cancel()
        lines = _start_other_fleets(ctx, gpus)
    found = [later.result() for later in lines]
    return [e for e, _ in found if e is not None], [n for e, n in found if e is None]


def _same_search(ctx: _Context, entry: FleetEntry, gpus: int) -> tuple[FleetEntry, list[str]]:
    """The planned GPU type's fleet line from the search every other type gets (replicas of each
    TP size, as many as the load needs) when that is cheaper than copies of the recommended
    layout: the fleet table then compares the best fleet on each type, not a node-sized layout
    on one against replica-sized ones on the others. Only with a load (rate or users)."""
    if ctx.workload.offered_rps() is None and ctx.workload.choice.clients is None:
        return entry, []
    # the planned type's own searches: a replica of the layouts searched (tp4 of dp2-tp4) is
    # not searched again
    inner = _Context(
        ctx.dep, ctx.max_model_len, ctx.workload, _serial(ctx.options), ctx.searched, ctx.checked
    )
    alt, _ = _type_fleet((inner, ctx.dep.hardware, gpus))
    if (
        alt is None
        or not alt.meets_slo
        or (alt.usd_per_million_output_tokens >= entry.usd_per_million_output_tokens)
    ):
        return entry, []
    return alt, [
        f"{entry.gpu}: {alt.replicas} x {alt.layout} ({counted(alt.gpus, 'GPU')}) carries the "
        f"load for less than {entry.replicas} x {entry.layout} ({counted(entry.gpus, 'GPU')}), "
        f"the recommended layout's copies (${alt.usd_per_million_output_tokens:,.2f} against "
        f"${entry.usd_per_million_output_tokens:,.2f} per million output tokens): the fleet "
        "line is the cheaper"
    ]


def _serial(options: OnlineOptions) -> OnlineOptions:
    return replace(options, jobs=1)


def _load(ctx: _Context, best: LayoutEval | None, replicas: int | None) -> Load:
    offered = ctx.workload.offered_rps()
    clients = ctx.workload.choice.clients
    saturated = False
    if best is not None and offered is not None:
        saturated = offered > best.sustained_rps
    elif best is not None and clients is not None:
        cycle = best.capacity.at_sustained.e2e_mean_s + mean_think_s(ctx.workload)
        saturated = clients > best.sustained_rps * cycle
    return Load(
        kind=ctx.workload.kind.value, offered_rps=offered, clients=clients,
        sustained_rps=None if best is None else best.sustained_rps, saturated=saturated,
        replicas_needed=replicas,
    )  # fmt: skip


def _overload_note(load: Load, best: LayoutEval, entry: FleetEntry, headroom: float) -> str:
    offered = (
        f"{load.offered_rps:,.2f} requests/s" if load.offered_rps is not None
        else f"{load.clients:,} users"
    )  # fmt: skip
    lay = best.memory.layout
    return (
        f"overload: {offered} offered; {lay.name} on {counted(lay.gpus, 'GPU')} sustains "
        f"{best.sustained_rps:,.2f} requests/s within the target. {entry.replicas} x "
        f"{entry.layout} ({counted(entry.gpus, 'GPU')}, {counted(entry.nodes, 'node')}) carry "
        f"it with {headroom:.0%} headroom"
    )


def _finite(value: float | None) -> float | None:
    return value if value is not None and value != float("inf") else None


def _context(
    dep: Deployment, workload: WorkloadChoice, seed: int, options: OnlineOptions
) -> _Context:
    online = OnlineWorkload(workload, seed)
    reference = online.reference(REFERENCE_REQUESTS)
    length = dep.context_length(reference, bound=online.choice.longest_request_bound)
    return _Context(dep, length, online, options)


def recommended_layout(
    dep: Deployment, *, gpus: int, workload: WorkloadChoice, seed: int, options: OnlineOptions
) -> tuple[Layout, int] | None:
    """The layout and cap per replica `build_online_plan` recommends (the same search and tie
    rule), without its fleet, reuse advice and engine lines; None where it recommends none."""
    ctx = _context(dep, workload, seed, options)
    _, found = _search(ctx, dep, gpus)
    if best_layout(found) is None:
        return None
    chosen, _, _ = decide([_option(ev) for ev in found.values() if _ranked(ev)], ctx.band)
    ev = found[chosen.name]
    return ev.memory.layout, ev.capacity.cap


def build_online_plan(
    dep: Deployment,
    *,
    gpus: int,
    workload: WorkloadChoice,
    seed: int,
    options: OnlineOptions,
) -> PlanReport:
    """Every layout's online capacity on `gpus` GPUs, one recommended, and the fleet."""
    ctx = _context(dep, workload, seed, options)
    online, length = ctx.workload, ctx.max_model_len
    reference = online.reference(REFERENCE_REQUESTS)
    memories = _memories(ctx, dep, gpus)
    # the other GPU types' fleets run beside this type's search, where a layout fits to size
    # one on (with one worker they wait for `_recommend`, as before)
    others = _start_other_fleets(ctx, gpus) if any(m.fits for m in memories) else []
    memories, found = _search(ctx, dep, gpus, memories=memories)
    config = dep.sim_config(length)
    header = report_header(
        dep.model, dep.hardware, gpus=gpus, settings=dep.budget, scheme=dep.scheme,
        kv_dtype=dep.kv_dtype, max_model_len=length,
    )  # fmt: skip
    slo = options.slo
    simulated = max((ev.capacity.simulated_requests for ev in found.values()), default=0)
    report = PlanReport(
        **header.model_dump(),
        policy=config.policy, workload=online.label, num_requests=simulated, seed=seed,
        step_profile=step_label(dep), error_band=band_of(dep),
        objective="sustained requests/s within the SLO", mode=Mode.ONLINE.value,
        layouts=[
            layout_row(m, found.get(m.layout.name), gpus, within_slo=slo is not None)
            for m in memories
        ],
        recommended=None, fixes=[], engine_flags={}, flag_warnings=[],
        simulated_requests=simulated,
        settled=all(ev.capacity.settled for ev in found.values() if ev.refined),
        slo_ttft_s=_finite(None if slo is None else slo.ttft_s),
        slo_tpot_s=_finite(None if slo is None else slo.tpot_s), headroom=options.headroom,
    )  # fmt: skip
    inputs = PlanInputs(reference, online.label, length, config, reference)
    best = best_layout(found)
    if best is None:  # nothing to size a fleet of: the other types' lines are not wanted
        for later in others:
            later.cancel()
    if not found:
        refuse_impossible(dep, options.layouts, inputs.max_model_len)
        return report.model_copy(
            update={"fixes": fit_fixes(dep, gpus, inputs.max_model_len, given=options.layouts),
                    "reason": "no layout fits",
                    "load": _load(ctx, None, None)}
        )  # fmt: skip
    if best is None:
        return _infeasible(ctx, report, gpus, found)
    ranked = [_option(ev) for ev in found.values() if _ranked(ev)]
    chosen, tied, fastest = decide(ranked, ctx.band)
    return _recommend(
        ctx, report, found[chosen.name], found, inputs, tie=(chosen, tied, fastest),
        others=(gpus, others), unsettled=unsettled_reason(ranked, ctx.band),
    )  # fmt: skip


def _tie_lines(
    tie: tuple[Option, list[Option], Option | None], band: float, unsettled: str
) -> list[str]:
    return [line for line in (tie_reason(*tie, band), unsettled) if line]


def _ranked(ev: LayoutEval) -> bool:
    return ev.refined and ev.capacity.meets_slo


def _option(ev: LayoutEval) -> Option:
    """A layout's sustained rate with its sampling half-width, for the tie rule."""
    at = ev.capacity.at_sustained
    half = at.rps_half_width
    lay = ev.memory.layout
    return Option(
        lay.name,
        ev.sustained_rps,
        lay.tp,
        lay.pp,
        half if math.isfinite(half) else 0.0,
        shown=f"{ev.sustained_rps:,.2f} requests/s",
        latencies=(
            (at.ttft_p99_s, at.ttft_p99_half_width),
            (at.tpot_p99_s, at.tpot_p99_half_width),
        ),
    )


def _recommend(
    ctx: _Context,
    report: PlanReport,
    best: LayoutEval,
    found: dict[str, LayoutEval],
    inputs: PlanInputs,
    *,
    tie: tuple[Option, list[Option], Option | None],
    others: tuple[int, list[Later[tuple[FleetEntry | None, str]]]],
    unsettled: str = "",
) -> PlanReport:
    dep, o = ctx.dep, ctx.options
    lay = best.memory.layout
    needed, checked = _checked_fleet(ctx, best)
    entry = _fleet_line(ctx, dep.hardware, best, checked)
    # this type's fleet line before the other types' (their jobs may still be running)
    entry, same = _same_search(ctx, entry, lay.gpus)
    other_lines, notes = _other_fleets(ctx, lay.gpus, others)
    notes += same
    fleet = sorted([entry, *other_lines], key=lambda e: e.usd_per_million_output_tokens)
    if (fleet_tie := fleet_tie_note(fleet)) is not None:
        notes.append(fleet_tie)
    load = _load(ctx, best, needed)
    rec = Recommendation(
        layout=lay.name, dp=lay.dp, tp=lay.tp, pp=lay.pp, ep=lay.ep,
        max_num_seqs=best.capacity.cap,
        reasons=[
            *recommendation_reasons_online(
                best, found, None if o.slo is not None else o.headroom
            ),
            *_tie_lines(tie, ctx.band, unsettled)
        ],
        tie=[t.name for t in tie[1]], kv_aware_makespan_s=None, kv_aware_gain=None,
    )  # fmt: skip
    flags, warnings = engine_flags(
        dep, (best.memory, best.capacity.cap * lay.dp), rec, inputs,
        served_model(dep, local=o.serve_local_path),
    )  # fmt: skip
    sessions, reuse = online_reuse(dep, best, ctx.workload, o.headroom, ctx.runs)
    warnings += given_offload_note(dep, reuse)
    if load.saturated:
        notes.insert(0, _overload_note(load, best, entry, o.headroom))
        if reuse is not None:
            notes.append(
                f"the reuse figures are {lay.name} alone at the whole offered load, more than it "
                "sustains in steady state: compare them with each other, not with the target"
            )
    if checked is not None and not checked.meets:
        notes.append(
            f"the fleet of {checked.replicas} x {entry.layout} simulated at the load still "
            "misses the target: add replicas or headroom"
        )
    notes += group_note(best, within_slo=o.slo is not None)
    if not best.capacity.settled:
        notes.append(
            f"{lay.name}: the sample ({best.capacity.simulated_requests:,} requests) was too "
            "small for a 5 % confidence interval; the estimates may still move"
        )
    return report.model_copy(
        update={
            "recommended": rec, "engine_flags": flags, "flag_warnings": warnings,
            "load": load, "fleet": fleet, "notes": notes, "sessions": sessions,
            "reuse": reuse,
        }
    )  # fmt: skip


def _limits(slo: Slo) -> str:
    parts = []
    if slo.ttft_s != float("inf"):
        parts.append(f"TTFT p99 <= {slo.ttft_s:g} s")
    if slo.tpot_s != float("inf"):
        parts.append(f"TPOT p99 <= {slo.tpot_s * 1000:g} ms")
    return " and ".join(parts)


def _infeasible(
    ctx: _Context, report: PlanReport, gpus: int, found: dict[str, LayoutEval]
) -> PlanReport:
    from capcliff.analysis.plan.feasibility import (
        LightLatency,
        LightLoad,
        alternatives,
        light_latency,
        what_would_meet,
    )
    from capcliff.catalog.catalogs import hardware_catalog

    slo = ctx.options.slo
    assert slo is not None
    # the alternatives at the lightest load any layout missed it at (per replica)
    probes = [p for ev in found.values() for p in ev.capacity.probes]
    light = min(probes, key=lambda p: (p.rate_rps, p.cap), default=None)
    load = None if light is None else LightLoad(light.rate_rps, light.requests, light.cap)
    tried = [
        light_latency(alt, ctx.workload, ctx.max_model_len, load)
        for alt in alternatives(ctx.dep, gpus, list(hardware_catalog().values()))
    ]

    def describe(t: LightLatency) -> str:
        return (
            # three figures: a light-load TTFT of 1.5 ms printed "0.00 s, still 1545.5x over"
            f"{t.alternative.label}: TTFT p99 {t.ttft_p99_s or 0:,.3g} s, "
            f"TPOT p99 {(t.tpot_p99_s or 0) * 1000:,.3g} ms"
        )

    hardware = ctx.dep.hardware.id
    return report.model_copy(
        update={
            "reason": f"no layout of {gpus} x {hardware} meets {_limits(slo)}, even at light load",
            "fixes": what_would_meet(slo, tried, describe),
            "load": _load(ctx, None, None),
        }
    )
