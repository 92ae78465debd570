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
  fits) and the engine's default (not simulated again when no run at the cap filled its seats,
  `cap_never_binds`: it would be the same run).
The best candidate by the plan's objective is reported in full and compared with `plan`'s
recommendation on the same GPUs; the better of the two is the one that meets the SLOs, else the
one with the fewer dollars per million output tokens (`fleet.hourly_cost` at the hardware's
`usd_per_gpu_hour` or --price-gpu-hour).
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import NamedTuple

import numpy as np
from pydantic import BaseModel, ConfigDict

from capcliff.analysis.deployment import Deployment
from capcliff.analysis.disagg.compare import (
    AggregatedSummary,
    aggregated_at,
    best_aggregated,
    comparison_reasons,
    meets,
    offered_tokens_per_s,
    winner_by_cost,
)
from capcliff.analysis.disagg.flags import disagg_engine_settings
from capcliff.analysis.disagg.online import (
    OnlineSample,
    disagg_steady,
    online_rank,
    rank_reason,
    serves,
)
from capcliff.analysis.disagg.options import (
    NoSplitError,
    PoolChoices,
    instance_layouts,
    split_candidates,
)
from capcliff.analysis.disagg.pools import (
    DisaggSpec,
    PoolPlan,
    cap_never_binds,
    note_most_held,
    pools_of,
    run_disagg,
)
from capcliff.analysis.disagg.report import (
    DisaggHeader,
    DisaggregatedReport,
    disaggregated_report,
    pools_price,
)
from capcliff.analysis.evaluate.replica_models import p99_analytic_cliff
from capcliff.analysis.evaluate.solver import Slo, SweepPoint
from capcliff.analysis.evaluate.steady_state import WARMUP_FRACTION, SteadyState
from capcliff.analysis.plan.batch import score
from capcliff.analysis.plan.fleet import price_of
from capcliff.analysis.plan.inputs import PlanInputs, resolve_inputs
from capcliff.analysis.plan.types import Objective
from capcliff.analysis.workloads import WorkloadChoice
from capcliff.sim.disagg.pools import DisaggResult

SCHEMA_VERSION = 2
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
    usd_per_gpu_hour: float  # --gpu's (the first type's)
    usd_per_gpu_hour_by_type: dict[str, float]  # of each GPU type the chosen split runs on
    candidates: list[DisaggCandidate]
    disaggregated: DisaggregatedReport
    aggregated: AggregatedSummary | None
    winner: str  # "disaggregated" or "aggregated"
    reasons: list[str]
    engine_settings: dict[str, str]


def _candidates(
    dep: Deployment, budget: int, inputs: PlanInputs, types: tuple[str, ...]
) -> list[DisaggSpec]:
    """Splits of `budget` GPUs, each pool on any of `types` (`disagg_options`); refuses a budget
    that holds no prefill and decode instance of --gpu's type."""
    choices = PoolChoices(dep, inputs.max_model_len, inputs.config.max_num_batched_tokens)
    if specs := split_candidates(choices, budget, types):
        return specs
    instance_layouts(dep, budget, inputs.max_model_len)  # says why on --gpu's type
    raise NoSplitError(f"disagg: {budget} GPUs of {', '.join(types)} hold no prefill and decode "
                       "instance of this model")  # fmt: skip


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
    cliff = p99_analytic_cliff(inputs.reference, dec.pool.capacity, dec.pool.replicas)
    capped = max(cliff, dec.pool.replicas)
    default = dec.pool.config.max_num_seqs * dec.pool.replicas
    out: list[Evaluated] = []
    for cap in (capped, None) if capped < default else (None,):  # a cap above the default is it
        state: SteadyState | None = None
        running = min(cap or default, capped)
        held: list[int] = []  # the most any decode replica held, in each run simulated
        observe = partial(note_most_held, held)
        if sample is None:
            result = run_disagg(dep, (pre, dec), inputs.requests, concurrency=cap, points=64,
                                observe=observe)  # fmt: skip
            point = SweepPoint.of(cap or len(inputs.requests), result.serving)
            key: tuple[float, ...] = (score(point, goal, slo),)
        else:  # at an offered rate: ranked on the first sample's steady state
            result, state = disagg_steady(dep, (pre, dec), sample, concurrency=cap,
                                          running=running, grow=False, observe=observe)  # fmt: skip
            key = online_rank(state, slo, usd_per_hour)
        if out and _same(out[-1].result, result):
            break  # the cap never bound: the engine default ran the same
        out.append(Evaluated(spec, (pre, dec), result, cap, key, state, running))
        if progress is not None:
            progress()
        if cap is not None and held and cap_never_binds(dec.pool, cap, max(held)):
            break  # every run (each round of a closed loop) is the default's: it is not run
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
    if sample is None and workload.clients is not None:
        return (
            f"{workload.clients:,} closed-loop clients, each sending its next request when its "
            f"last one ends ({requests:,} requests; with --disagg the send times are the fixed "
            "point of the two-pool simulation), both kinds simulated end to end over the whole "
            "run ($ per million tokens at its throughput)"
        )
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


def _priced(pools: tuple[PoolPlan, PoolPlan], prices: dict[str, float]) -> float:
    """The split's $ per GPU-hour over both pools' GPU types (each must have a price)."""
    for plan in pools:
        price_of(plan.hardware, prices)  # one line naming a GPU type without a price
    blended = pools_price(pools, prices)
    assert blended is not None
    return blended


def chosen_split(
    dep: Deployment, evaluated: list[Evaluated], sample: OnlineSample | None, slo: Slo | None,
    *, grow_failing: bool = True,
) -> tuple[Evaluated, list[str]]:  # fmt: skip
    """The best candidate (at a rate, grown until its steady state settles; unless
    `grow_failing`, only when it serves the rate on the first sample) and why it ranks first,
    when the ranking is by dollars (at a rate)."""
    best = max(evaluated, key=lambda ev: ev.key)
    if sample is None or best.state is None or not (grow_failing or best.key[0]):
        return best, []
    result, state = disagg_steady(dep, best.pools, sample, concurrency=best.cap,
                                  running=best.running, grow=True, prior=best.result)  # fmt: skip
    among = sum(ev.key[0] > 0 for ev in evaluated)
    first = best.state.requests
    why = rank_reason(best.state, slo, among=among, of=len(evaluated), first=first,
                      usd_per_hour=-best.key[1] if best.key[0] else 0.0)  # fmt: skip
    return best._replace(result=result, state=state), [why]


def _ranked(evaluated: list[Evaluated]) -> list[Evaluated]:
    """The candidates in the order they rank, best first (ties: as enumerated)."""
    return sorted(evaluated, key=lambda ev: ev.key, reverse=True)


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


def rank_splits(
    dep: Deployment, specs: list[DisaggSpec], inputs: PlanInputs, goal: Objective,
    slo: Slo | None, sample: OnlineSample | None, prices: dict[str, float],
    progress: Callable[[], None] | None = None,
) -> list[Evaluated]:  # fmt: skip
    """Every split of `specs` at each decode cap, simulated once (on the first sample at a rate)
    and keyed for ranking (`Evaluated.key`, higher is better)."""
    return [
        ev for spec in specs for ev in _evaluate(dep, spec, inputs, goal, slo, sample, prices,
                                                 progress)
    ]  # fmt: skip


def split_plan_report(
    dep: Deployment, *, gpus: int, workload: WorkloadChoice, inputs: PlanInputs, goal: Objective,
    slo: Slo | None, seed: int, evaluated: list[Evaluated], chosen: tuple[Evaluated, list[str]],
    agg: AggregatedSummary | None, prices: dict[str, float],
) -> DisaggPlanReport:  # fmt: skip
    """The report of the chosen split (`chosen`: it and why it ranks first) among `evaluated`,
    against the aggregated deployment `agg` (`winner_by_cost`)."""
    price = price_of(dep.hardware, prices)
    sample = OnlineSample.of(workload, seed)
    (spec, pools, result, cap, _, state, _), why_split = chosen
    offered = offered_tokens_per_s(workload)
    r = result.serving
    ok = (
        meets(float(r.ttft.p99), float(np.nan_to_num(r.tpot.p99)), slo)
        if state is None
        else serves(state, slo)
    )
    mixed = spec.prefill_gpu is not None or spec.decode_gpu is not None
    best = disaggregated_report(spec, pools, result, concurrency=cap,
                                price=_priced(pools, prices) if mixed else price,
                                offered_tok_s=offered if ok else None, state=state)  # fmt: skip
    winner, reasons = "disaggregated", ["no aggregated layout fits"]
    if agg is not None:
        winner, why = winner_by_cost(best, agg, slo)
        reasons = [why, *comparison_reasons(best, agg)]
    types = dict.fromkeys(plan.hardware.id for plan in pools)
    return DisaggPlanReport(
        schema_version=SCHEMA_VERSION, model=dep.model.id, hardware="+".join(types), gpus=gpus,
        engine=dep.settings.engine.value, workload=inputs.workload_label,
        num_requests=len(r.e2e_s), seed=seed, objective=goal.value,
        ranked_by=goal.value if sample is None else RANKED_AT_RATE,
        figures_from=figures_source(workload, len(inputs.requests), sample),
        usd_per_gpu_hour=price,
        usd_per_gpu_hour_by_type={p.hardware.id: price_of(p.hardware, prices) for p in pools},
        candidates=[_candidate_row(ev, slo) for ev in _ranked(evaluated)], disaggregated=best,
        aggregated=agg, winner=winner, reasons=[*reasons, *why_split, *_confidence(best, agg)],
        engine_settings=disagg_engine_settings(dep, spec, pools, inputs, cap),
    )  # fmt: skip


def build_disagg_plan(
    dep: Deployment,
    *,
    gpus: int,
    workload: WorkloadChoice,
    objective: str,
    slo: Slo | None,
    seed: int,
    prices: dict[str, float] | None = None,
    types: tuple[str, ...] = (),
    progress: Callable[[], None] | None = None,
) -> DisaggPlanReport:
    """Search disaggregated splits of `gpus` GPUs, each pool on any of `types` (besides --gpu's)
    and compare the best with the best aggregated layout of `gpus` GPUs of each type, by dollars
    (`winner_by_cost`), at the hardware's $/GPU-hour or `prices`'. In a batch the splits are
    ranked by the objective; at an offered rate by serving it within the SLOs, then dollars
    (`online_rank`), both kinds in their steady state."""
    goal = Objective(objective)
    prices = prices or {}
    types = tuple(dict.fromkeys((dep.hardware.id, *types)))
    inputs = resolve_inputs(dep, workload, seed=seed)
    sample = OnlineSample.of(workload, seed)
    evaluated = rank_splits(dep, _candidates(dep, gpus, inputs, types), inputs, goal, slo,
                            sample, prices, progress)  # fmt: skip
    chosen = chosen_split(dep, evaluated, sample, slo)
    choices = PoolChoices(dep, inputs.max_model_len, inputs.config.max_num_batched_tokens)
    aggs = []
    for g in types:
        on = choices.on(g)
        aggs.append(aggregated_at(on, gpus=gpus, workload=workload, objective=objective, slo=slo,
                                  seed=seed, price=price_of(on.hardware, prices),
                                  progress=progress))  # fmt: skip
    return split_plan_report(
        dep, gpus=gpus, workload=workload, inputs=inputs, goal=goal, slo=slo, seed=seed,
        evaluated=evaluated, chosen=chosen, agg=best_aggregated(aggs, slo), prices=prices,
    )  # fmt: skip
