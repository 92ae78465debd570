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
from capcliff.analysis.sweep.report import CliffResult, SeriesResult, point_result
from capcliff.analysis.sweep.timelines import kv_over_time
from capcliff.analysis.workloads import check_sweep_size, is_online
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
