"""`capcliff sweep --disagg`: a disaggregated deployment across the decode pool's concurrency.

Each concurrency caps the running requests of the decode pool (split over its replicas), as
`sweep` caps an aggregated deployment; a concurrency is not simulated again where the run at a
lower one never filled the seats of either (`cap_never_binds`: it would be the same run). The
series has the aggregated sweep's shape (so `check`'s assertions apply unchanged): points from
the end-to-end result, the analytic cliff of the decode pool (it holds the running requests'
KV), the simulated cliff (the first concurrency at which the decode pool preempted or refused a
request whose KV had landed), the sweet spot.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial

from capcliff.analysis.deployment import Deployment
from capcliff.analysis.disagg.options import gpu_types
from capcliff.analysis.disagg.pools import (
    DisaggSpec,
    cap_never_binds,
    check_adp_balance,
    note_most_held,
    pool_deployment,
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
from capcliff.analysis.evaluate.solver import Slo, SweepPoint, simulated_cliff
from capcliff.analysis.evaluate.sweet_spot import sweet_spot_result
from capcliff.analysis.sweep.report import (
    CliffResult,
    LeftOut,
    SeriesResult,
    SweepNoFit,
    point_result,
)
from capcliff.analysis.sweep.timelines import kv_over_time
from capcliff.analysis.what_fits import fit_fixes
from capcliff.analysis.workloads import check_sweep_size, is_online
from capcliff.catalog.layout import Layout
from capcliff.memory.report import report_header
from capcliff.sim.disagg.pools import DisaggResult
from capcliff.sim.traffic.workload import Requests

SCHEMA_VERSION = 1


class DisaggSweepReport(DisaggHeader):
    """Everything `capcliff sweep --disagg` prints."""

    series: SeriesResult  # the end-to-end serving figures per concurrency
    disaggregated: DisaggregatedReport  # at the sweet spot
    per_point: list[DisaggregatedReport]  # each concurrency's pools and transfers


def disagg_series(
    dep: Deployment,
    spec: DisaggSpec,
    requests: Requests,
    concurrencies: tuple[int, ...],
    *,
    max_model_len: int,
    slo: Slo | None = None,
    label: str = "",
    progress: Callable[[], None] | None = None,
    reference: Requests | None = None,
) -> tuple[SeriesResult, list[DisaggregatedReport]]:
    """The series of `spec` over `concurrencies`, and each point's disaggregated report
    (`reference`: the workload's fixed reference sample, `workloads.reference_workloads`, that
    the analytic p99 cliff comes from; None: `requests` itself, a trace)."""
    check_adp_balance(dep, spec)
    check_sweep_size(((len(set(concurrencies)), "concurrencies"),), len(requests))
    pools = pools_of(dep, spec, max_model_len)
    dec = pools[1].pool
    points: list[SweepPoint] = []
    reports: list[DisaggregatedReport] = []
    ran: tuple[int, int, DisaggResult] | None = None  # (concurrency, most held, its run)
    for c in sorted(set(concurrencies)):
        if ran is not None and cap_never_binds(dec, ran[0], ran[1], c):
            result = ran[2]  # the seats of neither cap were filled: the same run
        else:
            held: list[int] = []
            result = run_disagg(dep, pools, requests, concurrency=c,
                                observe=partial(note_most_held, held))  # fmt: skip
            ran = (c, max(held), result) if held else None
        points.append(SweepPoint.of(c, result.serving))
        reports.append(
            disaggregated_report(spec, pools, result, concurrency=c, price=pools_price(pools, {}))
        )
        if progress is not None:
            progress()
    ordered = tuple(points)
    first = simulated_cliff(ordered)
    sweet = sweet_spot_result(ordered, slo, online=is_online(requests))
    series = SeriesResult(
        layout=spec.name,
        dp=spec.decode.dp * spec.decode_instances,
        tp=spec.decode.tp,
        pp=spec.decode.pp,
        ep=spec.decode.ep,
        output_tokens_label=label,
        kv_blocks_per_replica=dec.capacity.blocks,
        block_size=dec.capacity.block_size,
        # arrivals over time: each point's steady state too, as an aggregated sweep reports it
        points=[point_result(p, online=bool((requests.arrival_s > 0).any())) for p in ordered],
        cliff=CliffResult(
            analytic_concurrency=p99_analytic_cliff(
                requests if reference is None else reference, dec.capacity, dec.replicas
            ),
            simulated_concurrency=None if first is None else first.concurrency,
        ),
        sweet_spot=sweet,
        kv_over_time=kv_over_time(ordered, sweet.concurrency),
    )
    return series, reports


def build_disagg_sweep(
    dep: Deployment,
    spec: DisaggSpec,
    requests: Requests,
    concurrencies: tuple[int, ...],
    *,
    workload_label: str,
    seed: int,
    slo: Slo | None,
    progress: Callable[[], None] | None = None,
    reference: Requests | None = None,
) -> DisaggSweepReport:
    """Simulate `spec` at each concurrency (`reference`: as `disagg_series`)."""
    length = dep.context_length(requests)
    series, reports = disagg_series(
        dep, spec, requests, concurrencies, max_model_len=length, slo=slo,
        label=workload_label, progress=progress, reference=reference,
    )  # fmt: skip
    at = [p.concurrency for p in series.points].index(series.sweet_spot.concurrency)
    return DisaggSweepReport(
        schema_version=SCHEMA_VERSION, model=dep.model.id,
        hardware=gpu_types(spec, dep.hardware.id),
        gpus=spec.gpus, engine=dep.settings.engine.value, workload=workload_label,
        num_requests=len(requests), seed=seed, series=series, disaggregated=reports[at],
        per_point=reports,
    )  # fmt: skip


def disagg_nothing_fits(dep: Deployment, spec: DisaggSpec, requests: Requests) -> SweepNoFit | None:
    """The answer when a pool's layout exists but does not fit in memory, as `sweep --layout`
    answers one (a model that does not fit is an answer, and a check spec's `fits = false`
    holds of the same deployment); None when both pools fit. A layout that cannot exist (TP past
    the NVLink domain, EP on a dense model) stays bad input, refused by `pool_plan`."""
    length = dep.context_length(requests)
    left: list[tuple[Deployment, Layout, LeftOut]] = []
    for role, layout, gpu in (("prefill", spec.prefill, spec.prefill_gpu),
                              ("decode", spec.decode, spec.decode_gpu)):  # fmt: skip
        pool_dep = pool_deployment(dep, gpu)
        memory = pool_dep.memory(layout, length)
        if not memory.valid:
            return None
        if not memory.fits:
            left.append((pool_dep, layout, LeftOut(layout=f"{role} {layout.name}",
                                                   reason=memory.reason)))  # fmt: skip
    if not left:
        return None
    pool_dep, layout, _ = left[0]
    header = report_header(
        dep.model, pool_dep.hardware, gpus=spec.gpus, settings=dep.budget, scheme=dep.scheme,
        kv_dtype=dep.kv_dtype, max_model_len=length,
    )  # fmt: skip
    fixes = fit_fixes(pool_dep, layout.gpus, length, given=(layout,))
    return SweepNoFit(**header.model_dump(), left_out=[out for *_, out in left], fixes=fixes)
