"""`capcliff plan --disagg`: the prefill:decode split and each pool's layout for a GPU budget,
against the best aggregated layout of the same GPUs, with reasons in numbers.

Search (each candidate is one two-pool simulation, O(requests)):
- instance width: the fewest GPUs (a power of two up to a node) on which some layout fits;
- prefill layouts: of the fitting layouts of that width, the one with the most prompt tokens/s
  per instance and the one with the shortest prefill of one prompt (the TTFT floor), each from
  one full chunk (`max_num_batched_tokens`) through the step-time model;
- decode layout: the fitting layout with the most KV in all (the decode pool holds the KV);
- splits: x prefill and y decode instances with x + y = the budget's instances (at most 6 splits,
  spread geometrically over x);
- the decode pool's cap on running requests: its analytic cliff (every request at its p99 peak
  fits) and the engine's default.
The best candidate by the plan's objective is reported in full and compared with `plan`'s
recommendation on the same GPUs; the better of the two is the one that meets the SLOs, else the
one with the fewer dollars per million output tokens (`fleet.hourly_cost` at the hardware's
`usd_per_gpu_hour` or --price-gpu-hour).
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
from pydantic import BaseModel, ConfigDict

from capcliff.analysis.deployment import Deployment
from capcliff.analysis.disagg import DisaggSpec, PoolPlan, pool_plan, run_disagg
from capcliff.analysis.disagg_flags import disagg_engine_settings
from capcliff.analysis.disagg_report import DisaggHeader, DisaggregatedReport, disaggregated_report
from capcliff.analysis.fleet import hourly_cost, price_of
from capcliff.analysis.plan import PlanInputs, build_plan_report, resolve_inputs, score
from capcliff.analysis.plan_types import Objective, PlanReport
from capcliff.analysis.solver import Slo, SweepPoint, config_at
from capcliff.analysis.sweep import p99_analytic_cliff, replica_models
from capcliff.analysis.workloads import WorkloadChoice
from capcliff.catalog.layout import Layout, enumerate_layouts, parse_layout
from capcliff.errors import InputError
from capcliff.memory.layout_memory import LayoutMemory
from capcliff.sim.disagg import DisaggResult
from capcliff.sim.simulate import simulate
from capcliff.sim.workload import Arrival

SCHEMA_VERSION = 1
MAX_SPLITS = 6


class _Result(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class DisaggCandidate(_Result):
    """One simulated split."""

    name: str
    concurrency: int | None
    makespan_s: float
    output_throughput_tok_s: float
    ttft_p99_s: float
    tpot_p99_s: float
    decode_kv_headroom: float  # 1 - peak KV utilisation of the decode pool
    preemptions: int


class AggregatedSummary(_Result):
    """`plan`'s recommendation on the same GPUs, at its sweet spot."""

    layout: str
    concurrency: int
    makespan_s: float
    output_throughput_tok_s: float
    ttft_p99_s: float
    tpot_p99_s: float
    gpu_hours_per_mtok: float
    usd_per_hour: float  # GPUs x $/GPU-hour (`fleet.hourly_cost`)
    usd_per_million_output_tokens: float | None  # that over the tokens/s served (None: none)
    kv_headroom: float | None = None  # 1 - peak KV utilisation at the sweet spot


class DisaggPlanReport(DisaggHeader):
    """Everything `capcliff plan --disagg` prints."""

    objective: str
    figures_from: str  # which simulation the serving figures (and so the costs) come from
    usd_per_gpu_hour: float
    candidates: list[DisaggCandidate]
    disaggregated: DisaggregatedReport
    aggregated: AggregatedSummary | None
    winner: str  # "disaggregated" or "aggregated"
    reasons: list[str]
    engine_settings: dict[str, str]


def _fitting(dep: Deployment, gpus: int, length: int) -> list[LayoutMemory]:
    mems = [dep.memory(lay, length) for lay in enumerate_layouts(gpus, arch=dep.model.arch)]
    return [m for m in mems if m.fits and m.layout.pp == 1]


def instance_layouts(dep: Deployment, budget: int, length: int) -> tuple[int, list[LayoutMemory]]:
    """(instance width, its fitting layouts): the narrowest power of two up to a node."""
    width = 1
    while width <= min(budget // 2, dep.hardware.gpus_per_node):
        if mems := _fitting(dep, width, length):
            return width, mems
        width *= 2
    raise InputError(
        f"disagg: no layout of up to {min(budget // 2, dep.hardware.gpus_per_node)} GPUs fits "
        f"this model, so {budget} GPUs cannot hold a prefill and a decode instance"
    )


def _prefill_step_s(dep: Deployment, memory: LayoutMemory, chunk: int) -> float:
    """Seconds of one full chunk of one prompt on one replica of the layout."""
    plan = pool_plan(dep, memory.layout, 1, memory.max_model_len, role="prefill")
    return plan.pool.model.step_time_s(chunk, 1, chunk, chunk * (chunk + 1) // 2)


def prefill_layouts(dep: Deployment, mems: list[LayoutMemory], chunk: int) -> list[Layout]:
    """The layout with the most prompt tokens/s per instance (dp replicas in parallel) and the
    one with the shortest prefill of a prompt (the TTFT floor), the same layout when they agree."""
    step = {m.layout: _prefill_step_s(dep, m, chunk) for m in mems}
    # ties (the step model prices a lone chunk the same with experts whole or split in width)
    # go to expert parallelism, as SGLang's large-scale PD deployments run prefill (DeepEP)
    fastest = max(step, key=lambda lay: (lay.dp * chunk / step[lay], lay.ep, -lay.tp))
    shortest = min(step, key=lambda lay: (step[lay], lay.tp, -lay.ep))
    return [fastest] if fastest == shortest else [fastest, shortest]


def splits(instances: int) -> list[int]:
    """Prefill instance counts to try (1 .. instances - 1, at most MAX_SPLITS of them)."""
    if instances - 1 <= MAX_SPLITS:
        return list(range(1, instances))
    grid = np.geomspace(1, instances - 1, MAX_SPLITS)
    return sorted({int(x + 0.5) for x in grid})


def _candidates(dep: Deployment, budget: int, inputs: PlanInputs) -> list[DisaggSpec]:
    width, mems = instance_layouts(dep, budget, inputs.max_model_len)
    chunk = inputs.config.max_num_batched_tokens
    prefills = prefill_layouts(dep, mems, chunk)
    decode = max(mems, key=lambda m: (m.kv_capacity_tokens_total, -m.layout.tp)).layout
    total = budget // width
    return [DisaggSpec(pre, x, decode, total - x) for x in splits(total) for pre in prefills]


Evaluated = tuple[DisaggSpec, tuple[PoolPlan, PoolPlan], DisaggResult, int | None, float]


def _evaluate(
    dep: Deployment, spec: DisaggSpec, inputs: PlanInputs, goal: Objective, slo: Slo | None,
    progress: Callable[[], None] | None,
) -> list[Evaluated]:  # fmt: skip
    pre = pool_plan(dep, spec.prefill, spec.prefill_instances, inputs.max_model_len,
                    role="prefill")  # fmt: skip
    dec = pool_plan(dep, spec.decode, spec.decode_instances, inputs.max_model_len, role="decode")
    cliff = p99_analytic_cliff(inputs.requests, dec.pool.capacity, dec.pool.replicas)
    capped = max(cliff, dec.pool.replicas)
    default = dec.pool.config.max_num_seqs * dec.pool.replicas
    out: list[Evaluated] = []
    for cap in (capped, None) if capped < default else (None,):  # a cap above the default is it
        result = run_disagg(dep, (pre, dec), inputs.requests, concurrency=cap, points=64)
        if out and _same(out[-1][2], result):
            break  # the cap never bound: the engine default ran the same
        point = SweepPoint.of(cap or len(inputs.requests), result.serving)
        out.append((spec, (pre, dec), result, cap, score(point, goal, slo)))
        if progress is not None:
            progress()
    return out


def _same(a: DisaggResult, b: DisaggResult) -> bool:
    """Whether two runs served every request at the same times."""
    return bool(np.array_equal(a.serving.e2e_s, b.serving.e2e_s))


def _candidate_row(ev: Evaluated) -> DisaggCandidate:
    spec, _, result, cap, _ = ev
    r = result.serving
    return DisaggCandidate(
        name=spec.name, concurrency=cap, makespan_s=r.makespan_s,
        output_throughput_tok_s=r.output_tokens_per_s, ttft_p99_s=float(r.ttft.p99),
        tpot_p99_s=float(np.nan_to_num(r.tpot.p99)),
        decode_kv_headroom=1 - result.decode.peak_kv_utilization,
        preemptions=r.total_preemptions,
    )  # fmt: skip


def aggregated_summary(
    report: PlanReport, price: float, offered_tok_s: float | None = None, slo: Slo | None = None
) -> AggregatedSummary | None:
    """`plan`'s recommendation at its sweet spot, costed at `price` $/GPU-hour per output token
    served: `offered_tok_s` at an offered rate when it meets `slo`, else the sweet spot's
    simulated throughput (a deployment that misses may not serve the whole rate); None when
    nothing fits."""
    rec = report.recommended
    if rec is None:
        return None
    row = next(r for r in report.layouts if r.name == rec.layout)
    sweet = row.sweet_spot
    assert sweet is not None
    served = offered_tok_s if meets(sweet.ttft_p99_s, sweet.tpot_p99_s, slo) else None
    usd_per_hour, usd_per_mtok = hourly_cost(
        report.gpus, price, served or sweet.output_throughput_tok_s
    )
    return AggregatedSummary(
        layout=rec.layout, concurrency=sweet.concurrency, makespan_s=sweet.makespan_s,
        output_throughput_tok_s=sweet.output_throughput_tok_s, ttft_p99_s=sweet.ttft_p99_s,
        tpot_p99_s=sweet.tpot_p99_s, gpu_hours_per_mtok=sweet.gpu_hours_per_mtok,
        usd_per_hour=usd_per_hour,
        usd_per_million_output_tokens=usd_per_mtok if math.isfinite(usd_per_mtok) else None,
    )  # fmt: skip


def with_kv_headroom(
    agg: AggregatedSummary, dep: Deployment, inputs: PlanInputs
) -> AggregatedSummary:
    """`agg` with its KV headroom: the aggregated layout simulated once more at its sweet spot
    (`plan` does not keep the peak)."""
    layout = parse_layout(agg.layout)
    capacity, steps = replica_models(dep, dep.memory(layout, inputs.max_model_len))
    config = config_at(inputs.config, agg.concurrency, layout.dp)
    result = simulate(inputs.requests, steps, capacity, config, dp=layout.dp)
    return agg.model_copy(update={"kv_headroom": 1 - result.peak_kv_utilization})


def _change(ours: float, theirs: float) -> str:
    return f"{ours / theirs - 1:+.0%}" if theirs else "n/a"


def usd_text(value: float | None) -> str:
    return "n/a" if value is None else f"${value:,.2f}"


def comparison_reasons(best: DisaggregatedReport, agg: AggregatedSummary) -> list[str]:
    """The disaggregated deployment against the aggregated one, figure by figure."""
    s = best.serving
    return [
        f"TTFT p99 {s.ttft_p99_s:.2f} s vs {agg.ttft_p99_s:.2f} s "
        f"({_change(s.ttft_p99_s, agg.ttft_p99_s)})",
        f"TPOT p99 {s.tpot_p99_s * 1e3:.1f} ms vs {agg.tpot_p99_s * 1e3:.1f} ms "
        f"({_change(s.tpot_p99_s, agg.tpot_p99_s)})",
        f"output throughput {s.output_throughput_tok_s:,.0f} vs "
        f"{agg.output_throughput_tok_s:,.0f} tok/s "
        f"({_change(s.output_throughput_tok_s, agg.output_throughput_tok_s)})",
        f"makespan {s.makespan_s:.3g} s vs {agg.makespan_s:.3g} s",
        f"$ per million output tokens {usd_text(s.usd_per_million_output_tokens)} vs "
        f"{usd_text(agg.usd_per_million_output_tokens)} ($ per hour {usd_text(s.usd_per_hour)} vs "
        f"{usd_text(agg.usd_per_hour)}; GPU-hours per million {s.gpu_hours_per_mtok:.2f} vs "
        f"{agg.gpu_hours_per_mtok:.2f})",
        f"KV headroom at peak {1 - best.decode.peak_kv_utilization:.0%} in the decode pool vs "
        f"{'n/a' if agg.kv_headroom is None else format(agg.kv_headroom, '.0%')} aggregated "
        f"(decode pool {best.decode.gpus} GPUs, prefill pool {best.prefill.gpus} GPUs, "
        f"prefill busy {best.prefill.utilization:.0%}, decode busy {best.decode.utilization:.0%})",
    ]


def figures_source(workload: WorkloadChoice, requests: int) -> str:
    """Which simulation the serving figures, and so the costs, come from."""
    if workload.arrival is Arrival.BATCH:
        return (
            f"an offline batch: {requests:,} requests at t = 0, both kinds simulated end to end "
            "($ per million tokens at the batch's throughput)"
        )
    return (
        f"{requests:,} requests arriving {workload.arrival.value} at "
        f"{workload.rate_per_s or 0:g} req/s, both kinds simulated end to end at that load "
        "($ per million tokens at the offered rate x mean output tokens where the SLOs are met, "
        "as fleet sizing counts them, else at the simulated throughput); not the online "
        "steady-state search, which sizes one aggregated replica's sustained rate and has no "
        "two-pool form"
    )


def offered_tokens_per_s(workload: WorkloadChoice, inputs: PlanInputs) -> float | None:
    """Output tokens/s an offered rate asks for (rate x mean output tokens); None in a batch."""
    if workload.arrival is Arrival.BATCH or workload.rate_per_s is None:
        return None
    return workload.rate_per_s * float(np.mean(inputs.requests.output_tokens))


def meets(ttft_p99_s: float, tpot_p99_s: float, slo: Slo | None) -> bool:
    """Whether p99 TTFT and TPOT are within `slo` (always, without one)."""
    return slo is None or (ttft_p99_s <= slo.ttft_s and tpot_p99_s <= slo.tpot_s)


def _cost_key(usd_per_mtok: float | None) -> float:
    return math.inf if usd_per_mtok is None else usd_per_mtok


def winner_by_cost(
    best: DisaggregatedReport, agg: AggregatedSummary, slo: Slo | None
) -> tuple[str, str]:
    """(winner, why): the one that meets the SLOs, or when both or neither do, the one with the
    fewer $ per million output tokens (then the fewer $ per hour)."""
    s = best.serving
    ok_d, ok_a = meets(s.ttft_p99_s, s.tpot_p99_s, slo), meets(agg.ttft_p99_s, agg.tpot_p99_s, slo)
    if ok_d != ok_a:
        kind = "disaggregated" if ok_d else "aggregated"
        return kind, f"only the {kind} deployment meets the SLOs at p99"
    d_key = (_cost_key(s.usd_per_million_output_tokens), s.usd_per_hour or 0.0)
    a_key = (_cost_key(agg.usd_per_million_output_tokens), agg.usd_per_hour)
    both = "both meet the SLOs" if slo is not None and ok_d else (
        "neither meets the SLOs" if slo is not None else "no SLO given"
    )  # fmt: skip
    if d_key == a_key:  # the same GPUs serving the same offered rate
        return "aggregated", f"{both} at the same $; aggregated is one pool, no KV transfers"
    kind = "disaggregated" if d_key < a_key else "aggregated"
    return kind, f"{both}; {kind} serves a million output tokens for fewer dollars"


def build_disagg_plan(
    dep: Deployment,
    *,
    gpus: int,
    workload: WorkloadChoice,
    objective: str,
    slo: Slo | None,
    seed: int,
    prices: dict[str, float] | None = None,
    progress: Callable[[], None] | None = None,
) -> DisaggPlanReport:
    """Search disaggregated splits of `gpus` GPUs (ranked by the objective) and compare the best
    with `plan`'s by dollars (`winner_by_cost`), at the hardware's $/GPU-hour or `prices`'."""
    goal = Objective(objective)
    price = price_of(dep.hardware, prices or {})
    inputs = resolve_inputs(dep, workload, seed=seed)
    evaluated = [
        ev
        for spec in _candidates(dep, gpus, inputs)
        for ev in _evaluate(dep, spec, inputs, goal, slo, progress)
    ]
    spec, pools, result, cap, _ = max(evaluated, key=lambda ev: ev[4])
    offered = offered_tokens_per_s(workload, inputs)
    r = result.serving
    kept_up = meets(float(r.ttft.p99), float(np.nan_to_num(r.tpot.p99)), slo)
    best = disaggregated_report(spec, pools, result, concurrency=cap, price=price,
                                offered_tok_s=offered if kept_up else None)  # fmt: skip
    agg_report = build_plan_report(dep, gpus=gpus, workload=workload, objective=objective,
                                   slo=slo, seed=seed, progress=progress)  # fmt: skip
    agg = aggregated_summary(agg_report, price, offered, slo)
    if agg is not None:
        agg = with_kv_headroom(agg, dep, inputs)
    winner, reasons = "disaggregated", ["no aggregated layout of these GPUs fits"]
    if agg is not None:
        winner, why = winner_by_cost(best, agg, slo)
        reasons = [why, *comparison_reasons(best, agg)]
    return DisaggPlanReport(
        schema_version=SCHEMA_VERSION, model=dep.model.id, hardware=dep.hardware.id, gpus=gpus,
        engine=dep.settings.engine.value, workload=inputs.workload_label,
        num_requests=len(inputs.requests), seed=seed, objective=goal.value,
        figures_from=figures_source(workload, len(inputs.requests)), usd_per_gpu_hour=price,
        candidates=[_candidate_row(ev) for ev in evaluated], disaggregated=best, aggregated=agg,
        winner=winner, reasons=reasons,
        engine_settings=disagg_engine_settings(dep, spec, pools, inputs, cap),
    )  # fmt: skip
