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

from collections.abc import Callable
from typing import NamedTuple

import numpy as np
from pydantic import BaseModel, ConfigDict

from capcliff.analysis.deployment import Deployment
from capcliff.analysis.disagg import (
    DisaggSpec,
    PoolPlan,
    pool_deployment,
    pool_plan,
    pools_of,
    run_disagg,
)
from capcliff.analysis.disagg_compare import (
    AggregatedSummary,
    aggregated_online,
    aggregated_summary,
    comparison_reasons,
    meets,
    winner_by_cost,
    with_kv_headroom,
)
from capcliff.analysis.disagg_flags import disagg_engine_settings
from capcliff.analysis.disagg_online import (
    OnlineSample,
    disagg_steady,
    online_rank,
    rank_reason,
    serves,
)
from capcliff.analysis.disagg_report import (
    DisaggHeader,
    DisaggregatedReport,
    disaggregated_report,
    pools_price,
)
from capcliff.analysis.fleet import price_of
from capcliff.analysis.plan import PlanInputs, build_plan_report, resolve_inputs, score
from capcliff.analysis.plan_types import Objective
from capcliff.analysis.solver import Slo, SweepPoint
from capcliff.analysis.steady_state import WARMUP_FRACTION, SteadyState
from capcliff.analysis.sweep import p99_analytic_cliff
from capcliff.analysis.workloads import WorkloadChoice
from capcliff.catalog.layout import Layout, enumerate_layouts
from capcliff.errors import InputError
from capcliff.memory.layout_memory import LayoutMemory
from capcliff.sim.disagg import DisaggResult
from capcliff.sim.workload import Arrival

SCHEMA_VERSION = 1
MAX_SPLITS = 6
RANKED_AT_RATE = "serving the rate within the SLOs, then the most room under them"


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
    serves_rate: bool | None = None  # at a rate: bounded queue, p99 within the SLOs


class DisaggPlanReport(DisaggHeader):
    """Everything `capcliff plan --disagg` prints."""

    objective: str
    ranked_by: str  # what orders the splits: the objective (a batch) or serving the rate
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


def _prefill_width(dep: Deployment, most: int, length: int) -> tuple[int, list[LayoutMemory]]:
    """(instance width, fitting layouts) of a prefill pool on `dep`'s GPU type: the narrowest
    power of two up to `most` GPUs and a node; (0, []) when none fits."""
    width = 1
    while width <= min(most, dep.hardware.gpus_per_node):
        if mems := _fitting(dep, width, length):
            return width, mems
        width *= 2
    return 0, []


def _candidates(
    dep: Deployment, budget: int, inputs: PlanInputs, prefill_gpus: tuple[str, ...]
) -> list[DisaggSpec]:
    """Splits of `budget` GPUs: decode on `dep`'s GPU type, prefill on it and on each of
    `prefill_gpus`, each pool at its own instance width."""
    width, mems = instance_layouts(dep, budget, inputs.max_model_len)
    chunk = inputs.config.max_num_batched_tokens
    decode = max(mems, key=lambda m: (m.kv_capacity_tokens_total, -m.layout.tp)).layout
    out: list[DisaggSpec] = []
    for gpu in dict.fromkeys((None, *(g for g in prefill_gpus if g != dep.hardware.id))):
        dep_p = pool_deployment(dep, gpu)
        width_p, mems_p = (
            (width, mems) if gpu is None
            else _prefill_width(dep_p, budget - width, inputs.max_model_len)
        )  # fmt: skip
        if not width_p:
            continue  # the model fits no instance of this GPU type within the budget
        prefills = prefill_layouts(dep_p, mems_p, chunk)
        for x in splits((budget - width) // width_p + 1):
            decodes = (budget - x * width_p) // width
            out.extend(DisaggSpec(pre, x, decode, decodes, prefill_gpu=gpu) for pre in prefills)
    return out


class Evaluated(NamedTuple):
    """One simulated candidate: its pools, run, cap, rank key (higher is better) and, at an
    offered rate, its steady state."""

    spec: DisaggSpec
    pools: tuple[PoolPlan, PoolPlan]
    result: DisaggResult
    cap: int | None
    key: tuple[float, ...]
    state: SteadyState | None
    running: int  # the most requests that can run in the decode pool (sizes a rate's sample)


def _evaluate(
    dep: Deployment, spec: DisaggSpec, inputs: PlanInputs, goal: Objective, slo: Slo | None,
    sample: OnlineSample | None, prices: dict[str, float], progress: Callable[[], None] | None,
) -> list[Evaluated]:  # fmt: skip
    pre, dec = pools_of(dep, spec, inputs.max_model_len)
    usd_per_hour = (pools_price((pre, dec), prices) or 0.0) * spec.gpus
    cliff = p99_analytic_cliff(inputs.requests, dec.pool.capacity, dec.pool.replicas)
    capped = max(cliff, dec.pool.replicas)
    default = dec.pool.config.max_num_seqs * dec.pool.replicas
    out: list[Evaluated] = []
    for cap in (capped, None) if capped < default else (None,):  # a cap above the default is it
        state: SteadyState | None = None
        running = min(cap or default, capped)
        if sample is None:
            result = run_disagg(dep, (pre, dec), inputs.requests, concurrency=cap, points=64)
            point = SweepPoint.of(cap or len(inputs.requests), result.serving)
            key: tuple[float, ...] = (score(point, goal, slo),)
        else:  # at an offered rate: ranked on the first sample's steady state
            result, state = disagg_steady(dep, (pre, dec), sample, concurrency=cap,
                                          running=running, grow=False)  # fmt: skip
            key = online_rank(state, slo, usd_per_hour)
        if out and _same(out[-1].result, result):
            break  # the cap never bound: the engine default ran the same
        out.append(Evaluated(spec, (pre, dec), result, cap, key, state, running))
        if progress is not None:
            progress()
    return out


def _same(a: DisaggResult, b: DisaggResult) -> bool:
    """Whether two runs served every request at the same times."""
    return bool(np.array_equal(a.serving.e2e_s, b.serving.e2e_s))


def _candidate_row(ev: Evaluated, slo: Slo | None) -> DisaggCandidate:
    r, state = ev.result.serving, ev.state
    return DisaggCandidate(
        name=ev.spec.name, concurrency=ev.cap, makespan_s=r.makespan_s,
        output_throughput_tok_s=r.output_tokens_per_s if state is None else state.output_tok_s,
        ttft_p99_s=float(r.ttft.p99) if state is None else state.ttft_p99_s,
        tpot_p99_s=float(np.nan_to_num(r.tpot.p99)) if state is None else state.tpot_p99_s,
        decode_kv_headroom=1 - ev.result.decode.peak_kv_utilization,
        preemptions=r.total_preemptions,
        serves_rate=None if state is None else serves(state, slo),
    )  # fmt: skip


def figures_source(workload: WorkloadChoice, requests: int, sample: OnlineSample | None) -> str:
    """Which simulation the serving figures, and so the costs, come from."""
    if sample is None:
        return (
            f"an offline batch: {requests:,} requests at t = 0, both kinds simulated end to end "
            "($ per million tokens at the batch's throughput)"
        )
    return (
        f"the steady state at {sample.rate_rps:g} req/s ({workload.arrival.value} arrivals), as "
        f"the aggregated online mode measures it: the first {WARMUP_FRACTION:.0%} of the "
        "requests are warm-up, the window closes at the last arrival, 95 % half-widths from "
        "batch means; splits ranked on max(200, 5 x the decode pool's running limit, "
        "--num-requests) requests, the chosen split and the aggregated layout grown until both "
        "half-widths are within 5 % (at most 8 x). $ per million tokens at the offered rate x "
        "mean output tokens where the rate is served within the SLOs, else at the steady-state "
        "throughput"
    )


def offered_tokens_per_s(workload: WorkloadChoice, inputs: PlanInputs) -> float | None:
    """Output tokens/s an offered rate asks for (rate x mean output tokens); None in a batch."""
    if workload.arrival is Arrival.BATCH or workload.rate_per_s is None:
        return None
    return workload.rate_per_s * float(np.mean(inputs.requests.output_tokens))


def _priced(pools: tuple[PoolPlan, PoolPlan], prices: dict[str, float]) -> float:
    """The split's $ per GPU-hour over both pools' GPU types (each must have a price)."""
    for plan in pools:
        price_of(plan.hardware, prices)  # one line naming a GPU type without a price
    blended = pools_price(pools, prices)
    assert blended is not None
    return blended


def _chosen(
    dep: Deployment, evaluated: list[Evaluated], sample: OnlineSample | None, slo: Slo | None
) -> tuple[Evaluated, list[str]]:
    """The best candidate (at a rate, grown until its steady state settles) and why it ranks
    first, when the ranking is by dollars (at a rate)."""
    best = max(evaluated, key=lambda ev: ev.key)
    if sample is None or best.state is None:
        return best, []
    result, state = disagg_steady(dep, best.pools, sample, concurrency=best.cap,
                                  running=best.running, grow=True, prior=best.result)  # fmt: skip
    among = sum(ev.key[0] > 0 for ev in evaluated)
    first = best.state.requests
    why = rank_reason(best.state, slo, among=among, of=len(evaluated), first=first,
                      usd_per_hour=-best.key[1] if best.key[0] else 0.0)  # fmt: skip
    return best._replace(result=result, state=state), [why]


def _confidence(best: DisaggregatedReport, agg: AggregatedSummary | None) -> list[str]:
    """The steady states' sizes and 95 % half-widths, one line."""
    parts = []
    agg_steady = None if agg is None else agg.steady
    for name, steady in (("split", best.serving.steady), ("aggregated", agg_steady)):
        if steady is None:
            continue
        rate, tpot = (f"{h:.1%}" if h is not None else "n/a"
                      for h in (steady.rps_half_width, steady.tpot_half_width))  # fmt: skip
        parts.append(
            f"{name} {steady.measured:,} of {steady.requests:,} requests measured, rate "
            f"+/-{rate}, mean TPOT +/-{tpot}{'' if steady.settled else ' (not settled)'}"
        )
    return [f"steady state: {'; '.join(parts)}"] if parts else []


def build_disagg_plan(
    dep: Deployment,
    *,
    gpus: int,
    workload: WorkloadChoice,
    objective: str,
    slo: Slo | None,
    seed: int,
    prices: dict[str, float] | None = None,
    prefill_gpus: tuple[str, ...] = (),
    progress: Callable[[], None] | None = None,
) -> DisaggPlanReport:
    """Search disaggregated splits of `gpus` GPUs and compare the best with `plan`'s by dollars
    (`winner_by_cost`), at the hardware's $/GPU-hour or `prices`'. In a batch the splits are
    ranked by the objective; at an offered rate by serving it within the SLOs, then dollars
    (`online_rank`), both kinds in their steady state. The prefill pool is also tried on each GPU
    type of `prefill_gpus`."""
    goal = Objective(objective)
    prices = prices or {}
    price = price_of(dep.hardware, prices)
    inputs = resolve_inputs(dep, workload, seed=seed)
    sample = OnlineSample.of(workload, seed)
    evaluated = [
        ev
        for spec in _candidates(dep, gpus, inputs, prefill_gpus)
        for ev in _evaluate(dep, spec, inputs, goal, slo, sample, prices, progress)
    ]
    chosen, why_split = _chosen(dep, evaluated, sample, slo)
    spec, pools, result, cap, _, state, _ = chosen
    offered = offered_tokens_per_s(workload, inputs)
    r = result.serving
    ok = (
        meets(float(r.ttft.p99), float(np.nan_to_num(r.tpot.p99)), slo)
        if state is None
        else serves(state, slo)
    )
    split_price = price if spec.prefill_gpu is None else _priced(pools, prices)
    best = disaggregated_report(spec, pools, result, concurrency=cap, price=split_price,
                                offered_tok_s=offered if ok else None, state=state)  # fmt: skip
    agg_report = build_plan_report(dep, gpus=gpus, workload=workload, objective=objective,
                                   slo=slo, seed=seed, progress=progress)  # fmt: skip
    agg = aggregated_summary(agg_report, price, offered, slo)
    if agg is not None and sample is not None:
        agg = aggregated_online(agg, dep, inputs, sample, gpus=gpus, price=price,
                                offered_tok_s=offered, slo=slo)  # fmt: skip
    elif agg is not None:
        agg = with_kv_headroom(agg, dep, inputs)
    winner, reasons = "disaggregated", ["no aggregated layout of these GPUs fits"]
    if agg is not None:
        winner, why = winner_by_cost(best, agg, slo)
        reasons = [why, *comparison_reasons(best, agg)]
    return DisaggPlanReport(
        schema_version=SCHEMA_VERSION, model=dep.model.id, hardware=dep.hardware.id, gpus=gpus,
        engine=dep.settings.engine.value, workload=inputs.workload_label,
        num_requests=len(r.e2e_s), seed=seed, objective=goal.value,
        ranked_by=goal.value if sample is None else RANKED_AT_RATE,
        figures_from=figures_source(workload, len(inputs.requests), sample),
        usd_per_gpu_hour=price,
        candidates=[_candidate_row(ev, slo) for ev in evaluated], disaggregated=best,
        aggregated=agg, winner=winner, reasons=[*reasons, *why_split, *_confidence(best, agg)],
        engine_settings=disagg_engine_settings(dep, spec, pools, inputs, cap),
    )  # fmt: skip
