"""The result of `capcliff sweep`: simulated serving across concurrency, output lengths and layouts.

For each series (a layout and an output length) the report holds one point per concurrency, the
analytic cliff (peak KV of the requests at their p99 length against the replica's blocks), the
simulated cliff (the first concurrency that preempted or refused a waiting request for lack of KV),
the sweet spot (least makespan for a batch, most throughput within the SLO for online serving) and
the collapse (throughput lost past the sweet spot).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from pydantic import BaseModel, ConfigDict, Field

from capcliff.analysis.deployment import Deployment
from capcliff.analysis.evaluate.replica_models import (
    band_of,
    p99_analytic_cliff,
    replica_models,
    step_label,
)
from capcliff.analysis.evaluate.solver import (
    Slo,
    SweepPoint,
    config_at,
    simulated_cliff,
    sweep,
)
from capcliff.analysis.evaluate.steady_point import (
    MAX_DOUBLINGS,
    SteadyPoint,
    needs_more,
    steady_point,
)
from capcliff.analysis.evaluate.steady_state import (
    MIN_MEASURED,
    checkpoint_sizes,
    settled_part,
    timed,
)
from capcliff.analysis.evaluate.sweet_spot import SweetSpotResult, sweet_spot_result
from capcliff.analysis.sweep.failure import PastCliff, past_cliff, within_sweet_spot
from capcliff.analysis.sweep.speculation_gain import SpeculationGain, speculation_gain
from capcliff.analysis.sweep.timelines import hit_rate_over_time, kv_over_time
from capcliff.analysis.what_fits import fit_fixes, refuse_impossible
from capcliff.analysis.workloads import check_sweep_size, is_online
from capcliff.catalog.layout import Layout
from capcliff.errors import InputError
from capcliff.memory.report import report_header
from capcliff.perf.step_time import StepTimeModel
from capcliff.report_header import ReportHeader, SimulationHeader
from capcliff.sim.config import KVCapacity, SimConfig
from capcliff.sim.result import SimResult
from capcliff.sim.simulate import PausedRun
from capcliff.sim.traffic.workload import Requests


class _Result(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class TierResult(_Result):
    """One offload tier at one sweep point (bytes per GPU)."""

    tier: str
    hit_rate: float  # tokens loaded from it / tokens looked up
    read_bytes: float
    written_bytes: float
    link_utilization: float  # time its link was busy / makespan
    recompute_saved_s: float  # recompute time of the loaded tokens less the load time


class PointResult(_Result):
    """One concurrency of a series."""

    concurrency: int
    output_throughput_tok_s: float
    request_throughput_req_s: float
    ttft_mean_s: float
    ttft_p50_s: float
    ttft_p90_s: float
    ttft_p99_s: float
    tpot_mean_s: float  # mean over requests of each one's decode time / (its tokens - 1)
    tpot_p50_s: float
    tpot_p90_s: float
    tpot_p99_s: float
    itl_mean_s: float  # mean over tokens of the gap before each (benchmarks' mean ITL)
    itl_p50_s: float
    itl_p90_s: float
    itl_p99_s: float
    e2e_mean_s: float
    e2e_p50_s: float
    e2e_p90_s: float
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
    # prefix caching (None / 0 / empty with caching off): token-weighted hit rate in HBM, prefill
    # tokens the hits saved, blocks evicted from the cache, and each offload tier's figures
    prefix_cache_hit_rate: float | None = None
    prefill_tokens_saved: int = 0
    cache_evicted_blocks: int = 0
    offload: list[TierResult] = []
    steady: SteadyPoint | None = None  # online workloads: the steady state (sweep_steady)
    past_cliff: PastCliff | None = None  # how it fails once its KV cache filled (failure.py)


class CliffResult(_Result):
    """Where the KV cache runs out, analytically and in the simulation."""

    analytic_concurrency: int
    simulated_concurrency: int | None


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
    hit_rate_over_time: dict[str, list[tuple[float, float]]] = {}  # (s, prefix-cache hit rate)
    # with --speculative: the same points without it, and where speculation stops paying
    speculation: SpeculationGain | None = None


class LeftOut(_Result):
    """A requested layout that was not simulated because it does not fit, and why."""

    layout: str
    reason: str  # the memory calculator's: weights past the GPU, heads TP does not divide ...


class SweepReport(SimulationHeader):
    """Everything `capcliff sweep` prints. Top-level points/cliff/sweet_spot: the first series."""

    mode: str = "batch"  # "online" when requests arrive over time (rate, users, a timed trace)
    series: list[SeriesResult]
    points: list[PointResult]
    cliff: CliffResult
    sweet_spot: SweetSpotResult
    left_out: list[LeftOut] = Field(default_factory=list)  # requested layouts that do not fit


class SweepNoFit(ReportHeader):
    """`capcliff sweep` where no requested layout fits in memory: that is the answer (not an
    error), with each layout's reason and what would fit (`what_fits.fit_fixes`), as `plan` and
    `memory` say it."""

    fits: bool = False
    left_out: list[LeftOut]
    fixes: list[str]


def _left_out(dep: Deployment, layouts: Sequence[Layout], max_model_len: int) -> list[LeftOut]:
    memories = (dep.memory(lay, max_model_len) for lay in layouts)
    return [LeftOut(layout=m.layout.name, reason=m.reason) for m in memories if not m.fits]


def nothing_fits(
    dep: Deployment, layouts: Sequence[Layout], *, max_model_len: int
) -> SweepNoFit | None:
    """The answer when none of `layouts` fits requests of `max_model_len` tokens; None when one
    does (it is swept). Layouts that cannot exist for the model (TP not dividing its heads,
    experts on a dense model, more stages than layers) are bad input, not an answer: an
    InputError naming them and what would be valid."""
    left = _left_out(dep, layouts, max_model_len)
    if len(left) < len(layouts):
        return None
    refuse_impossible(dep, tuple(layouts), max_model_len)
    most = max(lay.gpus for lay in layouts)
    fixes = fit_fixes(dep, most, max_model_len, given=tuple(layouts))
    header = report_header(
        dep.model, dep.hardware, gpus=most, settings=dep.budget, scheme=dep.scheme,
        kv_dtype=dep.kv_dtype, max_model_len=max_model_len,
    )  # fmt: skip
    return SweepNoFit(**header.model_dump(), left_out=left, fixes=fixes)


@dataclass(frozen=True)
class SweepPlan:
    """What to sweep: the layouts, the workloads (one per output-length setting), concurrencies."""

    layouts: tuple[Layout, ...]
    workloads: tuple[tuple[str, Requests], ...]  # (label, requests)
    concurrencies: tuple[int, ...]
    workload_label: str
    seed: int
    slo: Slo | None = None
    # online: the workloads drawn again at n requests (the stopping rule, `sweep_steady`); None:
    # a fixed sample (a trace, or a batch)
    redraw: Callable[[int], tuple[tuple[str, Requests], ...]] | None = None
    # the fixed reference sample of each workload, by label (`workloads.reference_workloads`):
    # the analytic p99 cliff comes from it; a label not here (a trace) is its own reference
    references: tuple[tuple[str, Requests], ...] = ()


def _finite(value: float) -> float:
    return value if math.isfinite(value) else 0.0


def _latency_fields(r: SimResult) -> dict[str, float]:
    """mean, p50, p90, p99 of TTFT, TPOT, ITL and end-to-end latency, by PointResult name."""
    out = {}
    for name in ("ttft", "tpot", "itl", "e2e"):
        stats = getattr(r, name)
        for stat in ("mean", "p50", "p90", "p99"):
            out[f"{name}_{stat}_s"] = _finite(getattr(stats, stat))
    return out


def point_result(point: SweepPoint, *, online: bool = False, users: bool = False) -> PointResult:
    """A sweep point in report form (online: with its steady state; `users`: closed loop)."""
    r = point.result
    assert r is not None
    return PointResult(
        steady=steady_point(r, open_loop=not users) if online else None,
        concurrency=point.concurrency,
        output_throughput_tok_s=r.output_tokens_per_s,
        request_throughput_req_s=r.requests_per_s,
        **_latency_fields(r),
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
        prefix_cache_hit_rate=r.prefix_cache_hit_rate,
        prefill_tokens_saved=0 if r.reuse is None else r.reuse.prefill_tokens_saved,
        cache_evicted_blocks=0 if r.reuse is None else r.reuse.evicted_blocks,
        offload=_tiers(r),
        past_cliff=past_cliff(r),
    )


def _tiers(r: SimResult) -> list[TierResult]:
    """Each offload tier's figures, summed over replicas (link time over the makespan of each
    replica's link: the mean over replicas)."""
    if r.reuse is None or not r.reuse.tiers:
        return []
    queried, replicas = r.reuse.queried_tokens, max(1, len(r.replicas))
    out = []
    for t in r.reuse.tiers:
        out.append(
            TierResult(
                tier=t.name,
                hit_rate=t.hit_tokens / queried if queried else 0.0,
                read_bytes=t.read_bytes,
                written_bytes=t.written_bytes,
                link_utilization=t.busy_s / (replicas * r.makespan_s) if r.makespan_s else 0.0,
                recompute_saved_s=t.recompute_saved_s,
            )
        )
    return out


ProgressFn = Callable[[], None]  # called once per simulated point


def _series(
    dep: Deployment,
    layout: Layout,
    label: str,
    requests: Requests,
    *,
    plan: SweepPlan,
    max_model_len: int,
    config: SimConfig,
    progress: ProgressFn | None,
) -> SeriesResult | None:
    memory = dep.memory(layout, max_model_len)
    if not memory.fits:
        return None
    capacity, steps = replica_models(dep, memory)
    points = sweep(
        requests, steps, capacity, config, plan.concurrencies, dp=layout.dp, on_point=progress
    )
    points = _grown(points, requests, label, plan, (steps, capacity, config, layout.dp))
    online, users = is_online(requests), requests.closed_loop
    results = [point_result(p, online=online, users=users) for p in points]
    analytic = p99_analytic_cliff(dict(plan.references).get(label, requests), capacity, layout.dp)
    first = simulated_cliff(points)
    sweet = sweet_spot_result(
        points, plan.slo, online=is_online(requests), open_loop=not requests.closed_loop
    )
    results = [
        r.model_copy(update={"past_cliff": within_sweet_spot(r.past_cliff)})
        if r.past_cliff is not None and r.concurrency <= sweet.concurrency
        else r
        for r in results
    ]
    return SeriesResult(
        layout=layout.name,
        dp=layout.dp,
        tp=layout.tp,
        pp=layout.pp,
        ep=layout.ep,
        output_tokens_label=label,
        kv_blocks_per_replica=capacity.blocks,
        block_size=capacity.block_size,
        points=results,
        cliff=CliffResult(
            analytic_concurrency=analytic,
            simulated_concurrency=None if first is None else first.concurrency,
        ),
        sweet_spot=sweet,
        kv_over_time=kv_over_time(points, sweet.concurrency),
        hit_rate_over_time=hit_rate_over_time(points, sweet.concurrency),
        speculation=_speculation_gain(dep, layout, label, requests, results, plan, max_model_len),
    )


def _speculation_gain(
    dep: Deployment,
    layout: Layout,
    label: str,
    requests: Requests,
    with_spec: list[PointResult],
    plan: SweepPlan,
    max_model_len: int,
) -> SpeculationGain | None:
    """With speculation: the same sweep without it (same requests, concurrencies and stopping
    rule) compared point by point (speculation_gain.py); None without speculation."""
    if dep.speculation is None or dep.acceptance is None:
        return None
    plain = dep.without_speculation()
    memory = plain.memory(layout, max_model_len)
    if not memory.fits:  # cannot happen: the draft only adds memory
        return None
    capacity, steps = replica_models(plain, memory)
    config = plain.sim_config(max_model_len)
    points = sweep(requests, steps, capacity, config, plan.concurrencies, dp=layout.dp)
    points = _grown(points, requests, label, plan, (steps, capacity, config, layout.dp))
    online, users = is_online(requests), requests.closed_loop
    return speculation_gain(
        with_spec,
        [point_result(p, online=online, users=users) for p in points],
        method=dep.speculation.method.value,
        num_speculative_tokens=dep.speculation.num_speculative_tokens,
        tokens_per_step=dep.acceptance.tokens_per_step,
    )


def _grown(
    points: tuple[SweepPoint, ...],
    requests: Requests,
    label: str,
    plan: SweepPlan,
    models: tuple[StepTimeModel, KVCapacity, SimConfig, int],
) -> tuple[SweepPoint, ...]:
    """The stopping rule of an online sweep (`sweep_steady`): unsettled points with a bounded
    queue get more requests, up to 2^MAX_DOUBLINGS x the first sample. One replica (dp = 1):
    the largest sample is simulated once, lazily, and the rule is read at checkpoints as it
    runs (`_extended`). Several replicas: simulated again with twice the requests, each time
    from the start (the requests are routed up front, and attention-DP ranks step in lockstep:
    `PausedRun` pauses one replica)."""
    if plan.redraw is None or not is_online(requests):
        return points
    steps, capacity, config, dp = models
    open_loop = not requests.closed_loop
    by_cap = {p.concurrency: p for p in points}
    n = len(requests)

    def unsettled() -> list[int]:
        return [
            c for c, p in by_cap.items() if p.result and needs_more(p.result, open_loop=open_loop)
        ]

    if dp == 1 and timed(requests, open_loop=open_loop):
        more = unsettled()
        if more:  # the same draw as the last doubling's
            largest = dict(plan.redraw(n << MAX_DOUBLINGS))[label]
            for c in more:
                run = PausedRun(largest, steps, capacity, config_at(config, c, 1))
                by_cap[c] = SweepPoint.of(c, _extended(run, largest, 2 * n, open_loop=open_loop))
        return tuple(by_cap[c] for c in sorted(by_cap))
    for _ in range(MAX_DOUBLINGS):
        more = unsettled()
        if not more:
            break
        n *= 2
        larger = dict(plan.redraw(n))[label]
        for p in sweep(larger, steps, capacity, config, more, dp=dp):
            by_cap[p.concurrency] = p
    return tuple(by_cap[c] for c in sorted(by_cap))


def _extended(run: PausedRun, sample: Requests, first: int, *, open_loop: bool) -> SimResult:
    """The stopping rule over one run of `sample` extended instead of restarted: read at
    checkpoints CHECKPOINT_GROWTH x apart from `first` finished requests to the whole sample,
    stopping at the first that settles (`needs_more`). A checkpoint's result is `settled_part`
    of the run so far, so the report reads it as a run of its own; the last is the whole run."""
    for k in checkpoint_sizes(first, len(sample)):
        point = run.advance(k)
        if point.complete:
            return point.result
        part = settled_part(sample, point, open_loop=open_loop)
        if len(part) < MIN_MEASURED:
            continue
        result = run.part(part)
        if not needs_more(result, open_loop=open_loop):
            return result
    return run.advance(len(sample)).result


def _check_grid(dep: Deployment, plan: SweepPlan, max_model_len: int) -> None:
    """Refuse a grid past what one sweep simulates (`check_sweep_size`) before any of it runs:
    the layouts that fit, the output lengths, the concurrencies, and the same grid again
    without speculation where it is on (`_speculation_gain`)."""
    fitting = sum(dep.memory(lay, max_model_len).fits for lay in plan.layouts)
    axes = [
        (max(fitting, 1), "layouts"),
        (len(plan.workloads), "output lengths"),
        (len(set(plan.concurrencies)), "concurrencies"),
    ]
    if dep.speculation is not None:
        axes.append((2, "runs (with speculation and without)"))
    most = max(len(requests) for _, requests in plan.workloads)
    check_sweep_size(tuple(axes), most)


def build_sweep_report(
    dep: Deployment,
    plan: SweepPlan,
    *,
    max_model_len: int,
    progress: ProgressFn | None = None,
) -> SweepReport:
    """Simulate every (layout, workload) series of `plan` across its concurrencies."""
    _check_grid(dep, plan, max_model_len)
    config = dep.sim_config(max_model_len)
    jobs = [(lay, label, req) for lay in plan.layouts for label, req in plan.workloads]
    series: list[SeriesResult] = []
    for lay, label, requests in jobs:
        found = _series(
            dep, lay, label, requests, plan=plan, max_model_len=max_model_len, config=config,
            progress=progress,
        )  # fmt: skip
        if found is not None:
            series.append(found)
    left = _left_out(dep, plan.layouts, max_model_len)
    if not series:  # `nothing_fits` answers the CLI before this; a spec's scenario is refused
        why = "; ".join(f"{out.layout}: {out.reason}" for out in left)
        raise InputError(f"layout: no requested layout fits this model ({why})")
    first = series[0]
    header = report_header(
        dep.model, dep.hardware, gpus=plan.layouts[0].gpus, settings=dep.budget,
        scheme=dep.scheme, kv_dtype=dep.kv_dtype, max_model_len=max_model_len,
    )  # fmt: skip
    return SweepReport(
        **header.model_dump(),
        policy=config.policy,
        step_profile=step_label(dep),
        error_band=band_of(dep),
        workload=plan.workload_label,
        num_requests=len(plan.workloads[0][1].input_tokens),
        seed=plan.seed,
        mode="online" if any(is_online(r) for _, r in plan.workloads) else "batch",
        series=series,
        points=first.points,
        cliff=first.cliff,
        sweet_spot=first.sweet_spot,
        left_out=left,
    )
