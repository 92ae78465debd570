"""The result of `capcliff sweep`: simulated serving across concurrency, output lengths and layouts.

For each series (a layout and an output length) the report holds one point per concurrency, the
analytic cliff (peak KV of the requests at their p99 length against the replica's blocks), the
simulated cliff (the first concurrency that preempted or refused a waiting request for lack of KV),
the sweet spot (least makespan for a batch, most throughput within the SLO for online serving) and
the collapse (throughput lost past the sweet spot).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

from pydantic import BaseModel, ConfigDict

from capcliff.analysis.deployment import is_online, sim_config_for
from capcliff.analysis.solver import (
    Slo,
    SweepPoint,
    analytic_cliff_percentile,
    collapse,
    simulated_cliff,
    slo_sweet_spot,
    sweep,
    sweet_spot,
)
from capcliff.catalog.catalogs import Model
from capcliff.catalog.layout import Layout
from capcliff.catalog.specs import HardwareSpec
from capcliff.errors import InputError
from capcliff.memory.budget import BudgetSettings, EngineName
from capcliff.memory.layout_memory import LayoutMemory, layout_memory
from capcliff.memory.weights import WeightScheme
from capcliff.perf.profiles import profile_label, step_profile
from capcliff.perf.step_time import StepTimeModel, step_time_model
from capcliff.sim.config import KVCapacity, SimConfig
from capcliff.sim.workload import (
    Requests,
)
from capcliff.units import KVDType

SCHEMA_VERSION = 1
CLIFF_PERCENTILE = 99.0


class _Result(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class PointResult(_Result):
    """One concurrency of a series."""

    concurrency: int
    output_throughput_tok_s: float
    request_throughput_req_s: float
    ttft_p50_s: float
    ttft_p99_s: float
    tpot_p50_s: float
    tpot_p99_s: float
    e2e_p50_s: float
    e2e_p99_s: float
    makespan_s: float
    preemptions: int
    recomputed_tokens: int
    peak_kv_utilization: float
    mean_kv_utilization: float
    first_preemption_s: float | None
    first_saturation_s: float | None
    admission_blocked: bool
    blocked_s: float
    stranded_kv_fraction: float


class CliffResult(_Result):
    """Where the KV cache runs out, analytically and in the simulation."""

    analytic_concurrency: int
    simulated_concurrency: int | None


class SweetSpotResult(_Result):
    """The best concurrency and what is lost past it."""

    concurrency: int
    objective: str  # "makespan" or "goodput"
    collapse_worst_loss: float  # 1 - worst throughput past the sweet spot / the sweet spot's


class SeriesResult(_Result):
    """One layout at one output-length setting, swept over concurrency."""

    layout: str
    dp: int
    tp: int
    pp: int
    ep: int
    output_tokens_label: str
    kv_blocks_per_replica: int
    block_size: int
    points: list[PointResult]
    cliff: CliffResult
    sweet_spot: SweetSpotResult
    kv_over_time: dict[str, list[tuple[float, float]]]  # (s, KV utilisation) at named points


class SweepReport(_Result):
    """Everything `capcliff sweep` prints. Top-level points/cliff/sweet_spot: the first series."""

    schema_version: int
    model: str
    hardware: str
    gpus: int
    engine: str
    policy: str
    overheads: str  # "modeled" or "calibrated": where the KV budget's overhead terms come from
    step_profile: str = ""  # the engine and version the step times assume, modeled or calibrated
    workload: str
    num_requests: int
    seed: int
    series: list[SeriesResult]
    points: list[PointResult]
    cliff: CliffResult
    sweet_spot: SweetSpotResult


@dataclass(frozen=True)
class SweepPlan:
    """What to sweep: the layouts, the workloads (one per output-length setting), concurrencies."""

    layouts: tuple[Layout, ...]
    workloads: tuple[tuple[str, Requests], ...]  # (label, requests)
    concurrencies: tuple[int, ...]
    workload_label: str
    seed: int
    slo: Slo | None = None


def _finite(value: float) -> float:
    return value if math.isfinite(value) else 0.0


def point_result(point: SweepPoint) -> PointResult:
    """A sweep point in report form."""
    r = point.result
    assert r is not None
    return PointResult(
        concurrency=point.concurrency,
        output_throughput_tok_s=r.output_tokens_per_s,
        request_throughput_req_s=r.requests_per_s,
        ttft_p50_s=_finite(r.ttft.p50),
        ttft_p99_s=_finite(r.ttft.p99),
        tpot_p50_s=_finite(r.tpot.p50),
        tpot_p99_s=_finite(r.tpot.p99),
        e2e_p50_s=_finite(r.e2e.p50),
        e2e_p99_s=_finite(r.e2e.p99),
        makespan_s=r.makespan_s,
        preemptions=r.total_preemptions,
        recomputed_tokens=r.total_recomputed_tokens,
        peak_kv_utilization=r.peak_kv_utilization,
        mean_kv_utilization=r.mean_kv_utilization,
        first_preemption_s=None if r.first_preemption is None else r.first_preemption[1],
        first_saturation_s=None if r.first_saturation is None else r.first_saturation[1],
        admission_blocked=r.admission_blocked,
        blocked_s=r.blocked_s,
        stranded_kv_fraction=r.stranded_kv_fraction,
    )


def _sweet(points: tuple[SweepPoint, ...], slo: Slo | None, online: bool) -> SweetSpotResult:
    if online and slo is not None:
        best = slo_sweet_spot(points, slo)
        objective = "goodput"
        if best is None:  # nothing meets the SLO: fall back to throughput alone
            best = max(points, key=lambda p: (p.output_tokens_per_s, -p.concurrency))
            objective = "throughput (no point meets the SLO)"
    else:
        best, objective = sweet_spot(points), "makespan"
    loss = collapse(points, best).worst_loss
    return SweetSpotResult(
        concurrency=best.concurrency, objective=objective, collapse_worst_loss=loss
    )


def replica_models(
    model: Model,
    hardware: HardwareSpec,
    memory: LayoutMemory,
    *,
    scheme: WeightScheme,
    kv_dtype: KVDType,
    step_terms: tuple[tuple[str, float], ...] = (),
) -> tuple[KVCapacity, StepTimeModel]:
    """A fitting layout's KV capacity per replica and its step-time model under the budget's
    engine profile, with `step_terms` (BudgetSettings.step_time_terms) applied."""
    capacity = KVCapacity.of_layout(memory, hardware)
    engine = memory.stages[0].engine if memory.stages else EngineName.VLLM
    profile, fitted = step_profile(engine, dict(step_terms))
    steps = step_time_model(
        model.arch, hardware, memory.layout, scheme=scheme, kv_dtype=kv_dtype,
        profile=profile, fitted=fitted,
    )  # fmt: skip
    return capacity, steps


def p99_analytic_cliff(requests: Requests, capacity: KVCapacity, dp: int) -> int:
    """Requests at their p99 peak KV that all replicas hold at once."""
    return analytic_cliff_percentile(
        requests,
        blocks_per_replica=capacity.blocks,
        block_size=capacity.block_size,
        percentile=CLIFF_PERCENTILE,
        dp=dp,
    )


ProgressFn = Callable[[int, int], None]
KV_SERIES_POINTS = 128


def _kv_over_time(
    points: tuple[SweepPoint, ...], sweet: int
) -> dict[str, list[tuple[float, float]]]:
    """KV utilisation over time at the sweet spot and at the largest concurrency past it."""
    chosen = {"sweet spot": next(p for p in points if p.concurrency == sweet)}
    past = [p for p in points if p.concurrency > sweet and p.hit_cliff]
    if past:
        chosen["past the cliff"] = past[-1]
    out = {}
    for name, point in chosen.items():
        assert point.result is not None
        series = point.result.series
        step = max(1, len(series.time_s) // KV_SERIES_POINTS)
        out[f"{name} ({point.concurrency})"] = [
            (float(t), float(u))
            for t, u in zip(series.time_s[::step], series.kv_utilization[::step], strict=True)
        ]
    return out


def _series(
    model: Model,
    hardware: HardwareSpec,
    layout: Layout,
    label: str,
    requests: Requests,
    *,
    plan: SweepPlan,
    scheme: WeightScheme,
    kv_dtype: KVDType,
    max_model_len: int,
    settings: BudgetSettings,
    config: SimConfig,
) -> SeriesResult | None:
    memory = layout_memory(
        model.arch,
        hardware,
        layout,
        scheme=scheme,
        kv_dtype=kv_dtype,
        max_model_len=max_model_len,
        settings=settings,
    )
    if not memory.fits:
        return None
    capacity, steps = replica_models(
        model, hardware, memory, scheme=scheme, kv_dtype=kv_dtype,
        step_terms=settings.step_time_terms,
    )  # fmt: skip
    points = sweep(requests, steps, capacity, config, plan.concurrencies, dp=layout.dp)
    analytic = p99_analytic_cliff(requests, capacity, layout.dp)
    first = simulated_cliff(points)
    sweet = _sweet(points, plan.slo, online=is_online(requests))
    return SeriesResult(
        layout=layout.name,
        dp=layout.dp,
        tp=layout.tp,
        pp=layout.pp,
        ep=layout.ep,
        output_tokens_label=label,
        kv_blocks_per_replica=capacity.blocks,
        block_size=capacity.block_size,
        points=[point_result(p) for p in points],
        cliff=CliffResult(
            analytic_concurrency=analytic,
            simulated_concurrency=None if first is None else first.concurrency,
        ),
        sweet_spot=sweet,
        kv_over_time=_kv_over_time(points, sweet.concurrency),
    )


def build_sweep_report(
    model: Model,
    hardware: HardwareSpec,
    plan: SweepPlan,
    *,
    scheme: WeightScheme,
    kv_dtype: KVDType,
    max_model_len: int,
    settings: BudgetSettings,
    policy: str | None = None,
    progress: ProgressFn | None = None,
) -> SweepReport:
    """Simulate every (layout, workload) series of `plan` across its concurrencies."""
    config = sim_config_for(settings, hardware, policy=policy, max_model_len=max_model_len)
    jobs = [(lay, label, req) for lay in plan.layouts for label, req in plan.workloads]
    series: list[SeriesResult] = []
    for i, (lay, label, requests) in enumerate(jobs):
        found = _series(
            model, hardware, lay, label, requests, plan=plan, scheme=scheme, kv_dtype=kv_dtype,
            max_model_len=max_model_len, settings=settings, config=config,
        )  # fmt: skip
        if found is not None:
            series.append(found)
        if progress is not None:
            progress(i + 1, len(jobs))
    if not series:
        raise InputError("layout: no requested layout fits this model; run `capcliff memory`")
    first = series[0]
    return SweepReport(
        schema_version=SCHEMA_VERSION,
        model=model.id,
        hardware=hardware.id,
        gpus=plan.layouts[0].gpus,
        engine=settings.engine.value,
        policy=config.policy,
        overheads="calibrated" if settings.calibrated_terms else "modeled",
        step_profile=profile_label(settings.engine, dict(settings.step_time_terms)),
        workload=plan.workload_label,
        num_requests=len(plan.workloads[0][1].input_tokens),
        seed=plan.seed,
        series=series,
        points=first.points,
        cliff=first.cliff,
        sweet_spot=first.sweet_spot,
    )
