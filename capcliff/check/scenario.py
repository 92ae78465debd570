"""A `capcliff check` scenario resolved into the core's inputs, simulated, and its figures.

The layout is the spec's, or what `capcliff plan` recommends for `auto`. Two kinds of simulation,
each run once: a batch sweep of the workload's requests (all there at t = 0) over 16, 32, ... up
to 4 x the scenario's concurrency (never past the number of requests) for the analytic and
simulated cliff and the sweet spot; and the workload as stated (its arrivals, capped at a
concurrency) for KV headroom, latency and throughput.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from capcliff.analysis import deployment as resolution
from capcliff.analysis.deployment_settings import DeploymentSettings
from capcliff.analysis.disagg.pools import check_pool_calibration, parse_disagg, pool_deployment
from capcliff.analysis.disagg.sweep import disagg_series
from capcliff.analysis.evaluate.solver import Slo
from capcliff.analysis.evaluate.steady_state import P99_REL_HALF_WIDTH
from capcliff.analysis.plan.types import PlanReport, Recommendation
from capcliff.analysis.sweep.report import PointResult, SeriesResult, SweepPlan, build_sweep_report
from capcliff.analysis.workloads import (
    WorkloadChoice,
    is_online,
    plan_workloads,
    redraw,
    reference_workloads,
    sessions_within,
    with_arrival,
)
from capcliff.catalog.catalogs import get_hardware, get_model
from capcliff.catalog.layout import Layout, parse_layout
from capcliff.check.report import Figures, significant
from capcliff.check.spec import CheckWorkload, Scenario, SpecFile
from capcliff.memory.layout_memory import LayoutMemory
from capcliff.sim.traffic.workload import Arrival, Requests
from capcliff.sim.traffic.workload_rules import implied_arrival

GRID_START = 16  # the cliff sweep's smallest concurrency (running requests)
GRID_SPAN = 4  # ... and its largest: this many times the scenario's concurrency


@dataclass(frozen=True)
class Deployment:
    """A scenario with its settings resolved (`analysis.deployment.resolve`) and its trace."""

    scenario: Scenario
    resolved: resolution.Deployment
    trace: tuple[str, ...] | None
    progress: Callable[[], None] | None = None  # called once per simulated point

    def choice(self, concurrency: int | None) -> WorkloadChoice:
        """The workload; closed-loop clients default to `concurrency` (then to the spec's)."""
        w = self.scenario.workload
        arrival = arrival_pattern(w)
        clients = next((c for c in (w.clients, concurrency, w.concurrency) if c is not None), None)
        choice = WorkloadChoice(
            num_requests=len(self.trace or ()) if w.request_count is None else w.request_count,
            isl=w.isl,
            osl=w.output_cut,
            output_lengths=w.osl if isinstance(w.osl, str) else None,
            preset_name=w.preset,
            trace_lines=self.trace,
            arrival=arrival,
            rate_per_s=w.rate,
            clients=clients if arrival is Arrival.CLIENTS else None,
            random_range_ratio=w.random_range_ratio,
            think_time_s=w.think_time,
            turns=w.turns,
            context_tokens=w.context,
        )
        return sessions_within(choice, self.resolved.served_context)[0]

    def requests(self, concurrency: int | None = None) -> tuple[str, Requests]:
        """(label, requests) of the workload (lengths do not depend on `concurrency`)."""
        label, series = plan_workloads(self.choice(concurrency), self.scenario.seed)
        return label, series[0][1]

    def redraw(self, concurrency: int | None) -> Callable[[int], tuple[tuple[str, Requests], ...]]:
        """The workload drawn again at n requests, labelled as `Simulations` labels it ("")."""
        draw = redraw(self.choice(concurrency), self.scenario.seed)
        return lambda n: (("", draw(n)[0][1]),)

    def reference(self) -> Requests:
        """The workload's fixed reference sample (`workloads.reference_workloads`): the
        analytic p99 cliff comes from it, as in `sweep` and `plan`."""
        return reference_workloads(self.choice(None))[0][1]

    def memory(self, layout: Layout, max_model_len: int) -> LayoutMemory:
        """The memory verdict of `layout` for requests up to `max_model_len` tokens, on the
        scenario's GPU, or for a disaggregated scenario (whose layout is its decode pool's) on
        the decode pool's GPU type."""
        disagg = self.scenario.disagg
        gpu = None if disagg is None else parse_disagg(disagg).decode_gpu
        return pool_deployment(self.resolved, gpu).memory(layout, max_model_len)

    def gpus_by_type(self) -> dict[str, int]:
        """GPUs of each type: the scenario's, or each pool's for a disaggregated scenario."""
        s = self.scenario
        if s.disagg is None:
            return {s.gpu: s.gpu_count}
        spec = parse_disagg(s.disagg)
        out: dict[str, int] = {}
        for gpu, count in ((spec.prefill_gpu or s.gpu, spec.prefill_gpus),
                           (spec.decode_gpu or s.gpu, spec.decode_gpus)):  # fmt: skip
            out[gpu] = out.get(gpu, 0) + count
        return out


def arrival_pattern(w: CheckWorkload) -> Arrival:
    """The arrival as given, else implied: poisson with a rate, clients with clients."""
    given = None if w.arrival is None else w.arrival.value
    return Arrival(implied_arrival(given, rate=w.rate, clients=w.clients))


def deployment(
    spec_file: SpecFile,
    scenario: Scenario,
    *,
    force: bool = False,
    progress: Callable[[], None] | None = None,
) -> Deployment:
    """Resolve a scenario's catalog ids, dtypes, engine settings and calibration (relative to
    the spec's folder; a calibration for another deployment needs `force`)."""
    model = get_model(spec_file.model_ref(scenario))
    settings = DeploymentSettings.model_validate(
        # the keys the spec gave only: a setting is "given" only where the spec gives it
        scenario.model_dump(include=set(DeploymentSettings.model_fields), exclude_unset=True)
    )
    resolved = resolution.resolve(
        model, get_hardware(scenario.gpu), settings, base_dir=spec_file.base_dir, force=force,
        layout=None if scenario.layout == "auto" else scenario.layout,
    )  # fmt: skip
    if scenario.disagg is not None:
        resolved = check_pool_calibration(resolved, parse_disagg(scenario.disagg))
    if scenario.serve_command is not None:  # the flags it does not model, said once
        from dataclasses import replace

        from capcliff.analysis.serve_command import parse_serve_command

        said = parse_serve_command(scenario.serve_command, base_dir=spec_file.base_dir).warning()
        if said is not None:
            resolved = replace(resolved, warnings=(*resolved.warnings, said))
    preset = scenario.workload.preset
    if preset is not None and scenario.workload.trace is None:  # said once, as plan says it
        probe = WorkloadChoice(num_requests=1, preset_name=preset, clients=1,
                               arrival=Arrival.CLIENTS)  # fmt: skip
        resolved = resolved.with_warning(sessions_within(probe, resolved.served_context)[1])
    return Deployment(
        scenario=scenario,
        resolved=resolved,
        trace=spec_file.traces.get(scenario.name),
        progress=progress,
    )


def online_plan(dep: Deployment, layouts: tuple[Layout, ...] = ()) -> PlanReport:
    """`capcliff plan`'s online search on the scenario's GPUs (`layouts`: these only; empty:
    every layout), with its SLO, headroom, price and load."""
    from capcliff.analysis.plan.online import OnlineOptions, build_online_plan

    s = dep.scenario
    slo = Slo.of(s.expect.ttft_p99_max_s, s.expect.tpot_p99_max_s)
    prices = {} if s.usd_per_gpu_hour is None else {dep.resolved.hardware.id: s.usd_per_gpu_hour}
    options = OnlineOptions(slo=slo, headroom=s.headroom, prices=prices, layouts=layouts)
    return build_online_plan(
        dep.resolved, gpus=s.gpu_count, workload=dep.choice(None), seed=s.seed, options=options
    )


def recommendation(
    dep: Deployment, online: bool
) -> tuple[Recommendation | None, PlanReport | None]:
    """What `capcliff plan` recommends for the scenario's GPUs (None: nothing fits), and for
    arrivals over time the online plan it comes from (the one `capcliff plan` prints)."""
    if online:
        report = online_plan(dep)
        return report.recommended, report
    from capcliff.analysis.plan.batch import build_plan_report  # the plan stack only where needed

    expect = dep.scenario.expect
    slo = Slo.of(expect.ttft_p99_max_s, expect.tpot_p99_max_s)
    return build_plan_report(
        dep.resolved, gpus=dep.scenario.gpu_count, workload=dep.choice(None),
        objective="makespan", slo=slo, seed=dep.scenario.seed, progress=dep.progress,
    ).recommended, None  # fmt: skip


def concurrency_grid(concurrency: int, num_requests: int) -> tuple[int, ...]:
    """16, 32, ... below GRID_SPAN x `concurrency`, that bound and `concurrency` itself; capped
    at `num_requests` (a batch never runs more than all of its requests at once)."""
    top = min(GRID_SPAN * concurrency, num_requests)
    grid = {top, min(concurrency, top)}
    grid.update(c for c in (GRID_START * 2**k for k in range(64)) if c < top)
    return tuple(sorted(grid))


def as_batch(requests: Requests) -> Requests:
    """The same requests, all there at t = 0."""
    n = len(requests)
    return Requests(
        input_tokens=requests.input_tokens,
        output_tokens=requests.output_tokens,
        max_output_tokens=requests.max_output_tokens,
        arrival_s=np.zeros(n),
    )


@dataclass(frozen=True)
class Judged:
    """The figures of the workload as stated that assertions judge: for arrivals over time the
    steady state (warm-up and drain left out, `analysis.evaluate.steady_state`, the figures
    `sweep` prints for the point), for a batch the whole run (a batch is all warm-up and drain)."""

    ttft_p99_s: float
    tpot_p99_s: float
    output_throughput_tok_s: float
    peak_kv_utilization: float
    prefix_cache_hit_rate: float
    basis: str  # which run the figures are of, in words
    # the p99s' 95 % sampling intervals, relative (`steady_state.p99_half_width`); None: whole run
    ttft_p99_half_width: float | None = None
    tpot_p99_half_width: float | None = None

    @classmethod
    def of(cls, point: PointResult) -> Judged:
        """The judged figures of a simulated point."""
        steady = point.steady
        hit = point.prefix_cache_hit_rate or 0.0
        if steady is None:
            return cls(point.ttft_p99_s, point.tpot_p99_s, point.output_throughput_tok_s,
                       point.peak_kv_utilization, hit, "whole run")  # fmt: skip
        half = "" if steady.rps_half_width is None else f", rate +/-{steady.rps_half_width:.0%}"
        basis = f"steady state of {steady.requests:,} requests{half}"
        if not steady.settled:
            basis += ", not settled"
        widest = max(steady.ttft_p99_half_width or 0.0, steady.tpot_p99_half_width or 0.0)
        if widest > P99_REL_HALF_WIDTH:
            basis += (
                f", p99s not settled (+/-{widest:.0%}, over the {P99_REL_HALF_WIDTH:.0%} the "
                "stopping rule grows to before its 8 x limit: raise num_requests)"
            )
        return cls(steady.ttft_p99_s, steady.tpot_p99_s, steady.output_tok_s,
                   point.peak_kv_utilization, hit, basis, steady.ttft_p99_half_width,
                   steady.tpot_p99_half_width)  # fmt: skip


def _short(point: PointResult) -> bool:
    return point.preemptions > 0 or point.admission_blocked


@dataclass
class Simulations:
    """The simulations of one scenario on one fitting layout, each run once."""

    dep: Deployment
    layout: Layout
    max_model_len: int
    online: bool
    _stated: dict[int, PointResult] = field(default_factory=dict)
    _batch: dict[int, PointResult] = field(default_factory=dict)

    def series(
        self, requests: Requests, concurrencies: tuple[int, ...], *, grow_at: int | None = None
    ) -> SeriesResult:
        """`requests` simulated at each concurrency (the cap on running requests). `grow_at`: the
        workload as stated, with clients following that concurrency; an online one grows its
        sample by `sweep`'s stopping rule, so its steady state is the one `sweep` prints."""
        if self.dep.scenario.disagg is not None:
            return disagg_series(
                self.dep.resolved, parse_disagg(self.dep.scenario.disagg), requests,
                concurrencies, max_model_len=self.max_model_len, progress=self.dep.progress,
                reference=self.dep.reference(),
            )[0]  # fmt: skip
        plan = SweepPlan(
            layouts=(self.layout,), workloads=(("", requests),), concurrencies=concurrencies,
            workload_label="", seed=self.dep.scenario.seed,
            redraw=None if grow_at is None else self.dep.redraw(grow_at),
            references=(("", self.dep.reference()),),
        )  # fmt: skip
        return build_sweep_report(
            self.dep.resolved, plan, max_model_len=self.max_model_len, progress=self.dep.progress
        ).series[0]

    def batch_sweep(self, concurrencies: tuple[int, ...]) -> SeriesResult:
        """The batch sweep behind the cliff and the sweet spot."""
        found = self.series(as_batch(self.dep.requests()[1]), concurrencies)
        self._batch.update((p.concurrency, p) for p in found.points)
        if not self.online:  # the stated workload is this batch
            self._stated.update(self._batch)
        return found

    def batch_runs_short(self, concurrency: int) -> bool:
        """Whether the batch runs out of KV (preempts, or refuses a waiting request for lack of
        KV) at `concurrency`. A clean point at a larger concurrency answers without simulating:
        fewer running requests never hold more KV."""
        if any(c >= concurrency and not _short(p) for c, p in self._batch.items()):
            return False
        if concurrency not in self._batch:
            self.batch_sweep((concurrency,))
        return _short(self._batch[concurrency])

    def stated_point(self, concurrency: int) -> PointResult:
        """The workload as stated (closed-loop clients following `concurrency` unless given)."""
        if concurrency not in self._stated:
            requests = self.dep.requests(concurrency)[1]
            grow = concurrency if self.online and self.dep.trace is None else None
            found = self.series(requests, (concurrency,), grow_at=grow)
            self._stated[concurrency] = found.points[0]
        return self._stated[concurrency]


@dataclass(frozen=True)
class Outcome:
    """What a scenario's assertions are judged on."""

    dep: Deployment
    workload: str  # the workload's label
    num_requests: int
    max_model_len: int
    layout: Layout | None
    memory: LayoutMemory | None
    sims: Simulations | None  # None when the layout does not fit
    concurrency: int
    figures: Figures
    recommended: Recommendation | None  # None when no plan ran, or nothing fits
    online_plan: PlanReport | None = None  # the online plan behind `recommended`, if one ran

    @property
    def reason(self) -> str:
        """Why the scenario does not fit ("" when it does)."""
        if self.memory is None:
            return f"no layout of {self.dep.scenario.gpu_count} GPUs fits (capcliff plan)"
        return self.memory.reason


def default_concurrency(
    dep: Deployment, layout: Layout | None, rec: Recommendation | None, *, max_model_len: int,
    num_requests: int,
) -> int:  # fmt: skip
    """The spec's concurrency (or clients); else max_num_seqs x dp (the plan's cap for `auto`,
    the engine's setting or default otherwise), at most every request at once."""
    w = dep.scenario.workload
    given = w.concurrency if w.concurrency is not None else w.clients
    if given is not None:
        return given
    if layout is None:
        return num_requests
    if dep.scenario.disagg is not None:  # every decode replica at the engine's cap
        spec = parse_disagg(dep.scenario.disagg)
        per_replica = dep.resolved.sim_config(max_model_len).max_num_seqs
        return min(spec.decode.dp * spec.decode_instances * per_replica, num_requests)
    if rec is not None and dep.scenario.layout == "auto":
        per_replica = rec.max_num_seqs
    else:
        per_replica = dep.resolved.sim_config(max_model_len).max_num_seqs
    return min(layout.dp * per_replica, num_requests)


def figures_of(
    layout: Layout | None,
    memory: LayoutMemory | None,
    sims: Simulations | None,
    grid: tuple[int, ...],
    concurrency: int,
) -> Figures:
    """The scenario's capacity figures (the batch sweep runs here)."""
    name = None if layout is None else layout.name
    if sims is not None and sims.dep.scenario.disagg is not None:
        name = sims.dep.scenario.disagg  # both pools' layouts
    if sims is None:
        capacity = memory.kv_capacity_tokens_per_replica if memory and memory.valid else None
        return Figures(layout=name, kv_capacity_tokens_per_replica=capacity)
    assert memory is not None
    series = sims.batch_sweep(grid)
    sweet = next(p for p in series.points if p.concurrency == series.sweet_spot.concurrency)
    point = sims.stated_point(concurrency)
    stated = Judged.of(point)
    return Figures(
        layout=name,
        kv_capacity_tokens_per_replica=memory.kv_capacity_tokens_per_replica,
        analytic_cliff_concurrency=series.cliff.analytic_concurrency,
        simulated_cliff_concurrency=series.cliff.simulated_concurrency,
        swept_concurrency_max=max(grid),
        sweet_spot_concurrency=sweet.concurrency,
        sweet_spot_output_tok_s=significant(sweet.output_throughput_tok_s),
        output_throughput_tok_s=significant(stated.output_throughput_tok_s),
        ttft_p99_s=significant(stated.ttft_p99_s),
        tpot_p99_s=significant(stated.tpot_p99_s),
        peak_kv_utilization=significant(stated.peak_kv_utilization),
        preemptions=point.preemptions,
        latency_basis=stated.basis,
    )


def chosen_layout(
    dep: Deployment, online: bool
) -> tuple[Layout | None, Recommendation | None, PlanReport | None]:
    """The spec's layout, or the plan's for `auto` (the plan runs only when needed)."""
    s = dep.scenario
    if s.disagg is not None:  # the decode pool holds the KV: its layout is the scenario's
        return parse_disagg(s.disagg).decode, None, None
    rec, report = None, None
    if s.layout == "auto" or s.expect.recommended_layout is not None:
        rec, report = recommendation(dep, online)
    if s.layout != "auto":
        return parse_layout(s.layout), rec, report
    if rec is None:
        return None, None, report
    return parse_layout(rec.layout), rec, report


def outcome(dep: Deployment) -> Outcome:
    """Everything a scenario's assertions are judged on."""
    label, requests = dep.requests()
    max_len = dep.resolved.context_length(requests, bound=dep.choice(None).longest_request_bound)
    online = is_online(requests)
    layout, rec, report = chosen_layout(dep, online)
    memory = None if layout is None else dep.memory(layout, max_len)
    concurrency = default_concurrency(
        dep, layout, rec, max_model_len=max_len, num_requests=len(requests)
    )
    sims = None
    if layout is not None and memory is not None and memory.fits:
        sims = Simulations(dep, layout, max_len, online)
    grid = concurrency_grid(concurrency, len(requests))
    label = with_arrival(label, dep.choice(concurrency))
    return Outcome(
        dep=dep, workload=label, num_requests=len(requests), max_model_len=max_len,
        layout=layout, memory=memory, sims=sims, concurrency=concurrency,
        figures=figures_of(layout, memory, sims, grid, concurrency), recommended=rec,
        online_plan=report,
    )  # fmt: skip
