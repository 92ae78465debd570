"""`capcliff plan`: every layout of the GPUs, simulated across concurrency, ranked, with reasons.

For each valid layout: memory (weights per GPU, KV capacity per replica), the analytic and
simulated cliff, the sweet spot by the objective, and stranded KV under DP. The best layout is
recommended with the reasons in numbers against the pure data-parallel layout (or the runner-up),
an admission cap, what KV-aware admission would gain, and engine flags.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

from capcliff.analysis.deployment import Deployment
from capcliff.analysis.evaluate.replica_models import (
    band_of,
    p99_analytic_cliff,
    replica_models,
    step_label,
)
from capcliff.analysis.evaluate.solver import Slo, SweepPoint, simulated_cliff, sweep
from capcliff.analysis.plan.advice import merit, merit_shown, ranked, recommendation_reasons
from capcliff.analysis.plan.commands import engine_flags, served_model
from capcliff.analysis.plan.inputs import PlanInputs, resolve_inputs
from capcliff.analysis.plan.reuse_advice import ReuseAdvice, given_offload_note, reuse_advice
from capcliff.analysis.plan.ties import Option, decide, tie_band, tie_reason
from capcliff.analysis.plan.types import (
    Objective,
    PlanCliff,
    PlanLayout,
    PlanReport,
    PlanSweetSpot,
    Recommendation,
)
from capcliff.analysis.what_fits import fit_fixes, refuse_impossible
from capcliff.analysis.workloads import WorkloadChoice
from capcliff.catalog.layout import Layout, enumerate_layouts
from capcliff.memory.layout_memory import LayoutMemory
from capcliff.memory.report import report_header, summary_fields
from capcliff.perf.step_time import StepTimeModel
from capcliff.sim.config import KVCapacity, SimConfig
from capcliff.sim.traffic.workload import Requests


@dataclass(frozen=True)
class _Evaluated:
    memory: LayoutMemory
    points: tuple[SweepPoint, ...]
    sweet: SweepPoint
    cliff: PlanCliff
    capacity: KVCapacity
    steps: StepTimeModel


# Coarse-to-fine search: every layout is simulated at its analytic cliff, 4x past it and with every
# request at once; the REFINE_TOP leaders are then refined at 1/4, 1/2 and 2x the cliff.
COARSE_FACTORS = (1.0, 4.0)
FINE_FACTORS = (0.25, 0.5, 2.0)
REFINE_TOP = 3


def concurrency_grid(
    analytic_cliff: int,
    num_requests: int,
    dp: int,
    factors: tuple[float, ...] = COARSE_FACTORS + FINE_FACTORS,
    *,
    everything: bool = True,
    most: int | None = None,
) -> tuple[int, ...]:
    """Caps at `factors` x the analytic cliff (at least one request per replica), plus every
    request at once when `everything`; none above the number of requests, and none above
    `most` (the --max-num-seqs the user gave, all replicas: that engine never runs more, as the
    online search's caps never pass it, `capacity.sweep_caps`)."""
    top = num_requests if most is None else min(num_requests, most)
    base = max(analytic_cliff, dp)
    grid = {max(dp, round(base * f)) for f in factors} | ({top} if everything else set())
    return tuple(sorted({min(c, top) for c in grid if c <= num_requests}))


def score(point: SweepPoint, objective: Objective, slo: Slo | None) -> float:
    """Higher is better: -makespan, goodput (requests/s in SLO), or -cost."""
    if objective is Objective.GOODPUT:
        assert point.result is not None
        limits = Slo.unlimited() if slo is None else slo
        return point.result.goodput_requests_per_s(ttft_s=limits.ttft_s, tpot_s=limits.tpot_s)
    return -point.makespan_s


@dataclass(frozen=True)
class _Sim:
    """What one layout's simulations need besides the concurrency."""

    requests: Requests
    config: SimConfig
    objective: Objective
    slo: Slo | None
    reference: Requests  # the fixed sample the analytic cliff comes from (`PlanInputs`)
    progress: Callable[[], None] | None = None  # called once per simulated point
    cap: int | None = None  # the --max-num-seqs given, per replica (None: the plan picks it)


def _judge(
    memory: LayoutMemory,
    points: tuple[SweepPoint, ...],
    analytic: int,
    models: tuple[KVCapacity, StepTimeModel],
    sim: _Sim,
) -> _Evaluated:
    # the best cap the plan would serve: one that runs clean where any does (`_admission_cap`),
    # so that the layout is ranked, tied and quoted at the cap its engine line sets (dp2-tp4 was
    # ranked at 40 requests past its cliff, 89.6 s, and served at 16, 114 s: fuzz_random seed 46)
    clean = [p for p in points if not p.hit_cliff] or list(points)
    sweet = max(clean, key=lambda p: (score(p, sim.objective, sim.slo), -p.concurrency))
    first = simulated_cliff(points)
    cliff = PlanCliff(
        analytic_concurrency=analytic,
        simulated_concurrency=None if first is None else first.concurrency,
    )
    return _Evaluated(memory, points, sweet, cliff, *models)


def _evaluate(
    dep: Deployment, memory: LayoutMemory, sim: _Sim, memo: dict[object, _Evaluated]
) -> _Evaluated:
    """The coarse pass over one layout; a layout whose KV capacity, step-time model and DP are
    those of one already simulated (tp8, tp8-ep4) reuses its points (`memo`)."""
    layout = memory.layout
    capacity, steps = replica_models(dep, memory)
    key = (capacity, steps, layout.dp)
    if key in memo:
        return replace(memo[key], memory=memory)
    analytic = p99_analytic_cliff(sim.reference, capacity, layout.dp)
    most = None if sim.cap is None else sim.cap * layout.dp
    grid = concurrency_grid(
        analytic, len(sim.requests.input_tokens), layout.dp, COARSE_FACTORS, most=most
    )
    points = sweep(
        sim.requests, steps, capacity, sim.config, grid, dp=layout.dp, on_point=sim.progress
    )
    memo[key] = _judge(memory, points, analytic, (capacity, steps), sim)
    return memo[key]


def _refine(ev: _Evaluated, sim: _Sim) -> _Evaluated:
    """The fine pass: more caps below the coarse ones, merged with them."""
    layout = ev.memory.layout
    analytic = ev.cliff.analytic_concurrency
    analytic = 0 if analytic is None else analytic
    n = len(sim.requests.input_tokens)
    done = {p.concurrency for p in ev.points}
    most = None if sim.cap is None else sim.cap * layout.dp
    fine = concurrency_grid(analytic, n, layout.dp, FINE_FACTORS, everything=False, most=most)
    extra = [c for c in fine if c not in done]
    more = sweep(
        sim.requests, ev.steps, ev.capacity, sim.config, extra, dp=layout.dp,
        on_point=sim.progress,
    )  # fmt: skip
    points = tuple(sorted((*ev.points, *more), key=lambda p: p.concurrency))
    return _judge(ev.memory, points, analytic, (ev.capacity, ev.steps), sim)


def sweet_spot_figures(sweet: SweepPoint, gpus: int, slo: Slo | None) -> PlanSweetSpot:
    """The figures `plan` reports for a layout's sweet spot: throughput, p99 latencies, goodput
    within `slo`, and GPU-hours per million output tokens = gpus x makespan / 3,600 / tokens x
    1e6."""
    r = sweet.result
    assert r is not None
    tokens = max(1, int(r.output_tokens.sum()))
    limits = Slo.unlimited() if slo is None else slo
    return PlanSweetSpot(
        concurrency=sweet.concurrency,
        output_throughput_tok_s=r.output_tokens_per_s,
        ttft_p99_s=r.ttft.p99,
        tpot_p99_s=r.tpot.p99 if r.tpot.p99 == r.tpot.p99 else 0.0,
        makespan_s=r.makespan_s,
        goodput_req_s=r.goodput_requests_per_s(ttft_s=limits.ttft_s, tpot_s=limits.tpot_s),
        gpu_hours_per_mtok=gpus * r.makespan_s / 3600 / tokens * 1e6,
    )


def _layout_row(
    memory: LayoutMemory, ev: _Evaluated | None, gpus: int, slo: Slo | None
) -> PlanLayout:
    lay = memory.layout
    stranded = None
    if ev is not None and lay.dp > 1:
        stranded = max(p.result.stranded_kv_fraction for p in ev.points if p.result is not None)
    return PlanLayout(
        **summary_fields(memory),
        cliff=None if ev is None else ev.cliff,
        sweet_spot=None if ev is None else sweet_spot_figures(ev.sweet, gpus, slo),
        stranded_kv_fraction=stranded,
    )


def kv_aware_gain(ev: _Evaluated, inputs: PlanInputs) -> tuple[float, float]:
    """(makespan, gain) of KV-aware admission with a generous cap, against the chosen cap."""
    from capcliff.analysis.evaluate.solver import config_at
    from capcliff.sim.simulate import simulate

    layout = ev.memory.layout
    cap = max(p.concurrency for p in ev.points)
    aware = replace(  # KV-aware admission chunks prefills (prefill-only steps are V0's)
        config_at(inputs.config, cap, layout.dp), policy="kv-aware", output_quantile=0.9,
        chunked_prefill=True,
    )  # fmt: skip
    result = simulate(inputs.requests, ev.steps, ev.capacity, aware, dp=layout.dp)
    base = ev.sweet.makespan_s
    return result.makespan_s, 1 - result.makespan_s / base if base else 0.0


def _recommend(
    rows: list[PlanLayout],
    evaluated: dict[str, _Evaluated],
    objective: Objective,
    band: float,
    requests: int,
) -> tuple[PlanLayout, Recommendation] | None:
    order = ranked(rows, objective)
    if not order:
        return None
    options = {
        r.name: Option(r.name, merit(r, objective), r.tp, r.pp, shown=merit_shown(r, objective))
        for r in order
    }
    chosen, tied, fastest = decide(list(options.values()), band)
    best = next(r for r in order if r.name == chosen.name)
    dp_only = next((r for r in order if r.tp == 1 and r.pp == 1 and r.ep == 1), None)
    runner = next((r for r in order if r is not best), None)
    other = dp_only if dp_only is not None and dp_only is not best else runner
    reasons = recommendation_reasons(best, other, objective) if other else []
    ties = [t.name for t in tied]
    if line := tie_reason(chosen, tied, fastest, band):
        reasons.append(line)
    ev = evaluated[best.name]
    cap = _admission_cap(ev)
    reasons += _whole_batch_reason(ev, cap, requests)
    rec = Recommendation(
        layout=best.name, dp=best.dp, tp=best.tp, pp=best.pp, ep=best.ep,
        max_num_seqs=-(-cap // best.dp), reasons=reasons, tie=ties,
        kv_aware_makespan_s=None, kv_aware_gain=None,
    )  # fmt: skip
    return best, rec


def _whole_batch_reason(ev: _Evaluated, cap: int, requests: int) -> list[str]:
    """When the cap is the largest swept without preemption: every request of the batch at
    once, or the --max-num-seqs given (the sweep cannot see past either)."""
    top = max(p.concurrency for p in ev.points)
    if cap < top or any(p.hit_cliff for p in ev.points):
        return []
    cliff = f"the analytic p99 cliff is {ev.cliff.analytic_concurrency:,}"
    if top < requests:  # the grid stopped at the cap given
        return [
            f"the cap is the --max-num-seqs given ({top:,} requests at once, all replicas), "
            f"without preemption: the sweep does not go past it ({cliff})"
        ]
    return [
        f"the cap admits the whole batch ({top:,} requests at once) without preemption: the "
        f"sweep cannot tell where KV would run short past it; a larger batch may ({cliff}); "
        "--num-requests sets the batch"
    ]


def _admission_cap(ev: _Evaluated) -> int:
    """The sweet spot's concurrency when it runs clean; else the largest clean swept cap."""
    if not ev.sweet.hit_cliff:
        return ev.sweet.concurrency
    clean = [p.concurrency for p in ev.points if not p.hit_cliff]
    return max(clean) if clean else ev.sweet.concurrency


def build_plan_report(
    dep: Deployment,
    *,
    gpus: int,
    workload: WorkloadChoice,
    objective: str,
    slo: Slo | None,
    seed: int,
    progress: Callable[[], None] | None = None,
    serve_local_path: bool = False,
    layouts: tuple[Layout, ...] = (),
) -> PlanReport:
    """Evaluate every layout of `gpus` GPUs and recommend one (`progress`: called once per
    simulated point; `layouts`: these only, each refined, instead of every layout)."""
    goal = Objective(objective)
    inputs = resolve_inputs(dep, workload, seed=seed)
    sim = _Sim(
        inputs.requests, inputs.config, goal, slo, inputs.reference, progress,
        dep.settings.max_num_seqs,
    )  # fmt: skip
    memories = [
        dep.memory(lay, inputs.max_model_len)
        for lay in (layouts or enumerate_layouts(gpus, arch=dep.model.arch))
    ]
    memo: dict[object, _Evaluated] = {}
    evaluated = {m.layout.name: _evaluate(dep, m, sim, memo) for m in memories if m.fits}
    top = len(evaluated) if layouts else REFINE_TOP
    leaders = sorted(evaluated.values(), key=lambda ev: -score(ev.sweet, goal, slo))[:top]
    for ev in leaders:
        evaluated[ev.memory.layout.name] = _refine(ev, sim)
    rows = [_layout_row(m, evaluated.get(m.layout.name), gpus, slo) for m in memories]
    band = tie_band(band_of(dep).throughput)
    chosen = _recommend(rows, evaluated, goal, band, len(inputs.requests.input_tokens))
    fixes: list[str] = []
    flags: dict[str, str] = {}
    warnings: list[str] = []
    rec = None
    reuse: ReuseAdvice | None = None
    if chosen is None:
        refuse_impossible(dep, tuple(layouts), inputs.max_model_len)
        fixes = fit_fixes(dep, gpus, inputs.max_model_len, given=tuple(layouts))
    else:
        best, rec = chosen
        makespan, gain = kv_aware_gain(evaluated[best.name], inputs)
        rec = rec.model_copy(update={"kv_aware_makespan_s": makespan, "kv_aware_gain": gain})
        ev = evaluated[best.name]
        flags, warnings = engine_flags(
            dep, (ev.memory, ev.sweet.concurrency), rec, inputs,
            served_model(dep, local=serve_local_path),
        )  # fmt: skip
        cap = replace(inputs.config, max_num_seqs=rec.max_num_seqs)
        reuse = reuse_advice(dep, ev.memory, inputs.requests, cap)
        warnings += given_offload_note(dep, reuse)
    header = report_header(
        dep.model, dep.hardware, gpus=gpus, settings=dep.budget, scheme=dep.scheme,
        kv_dtype=dep.kv_dtype, max_model_len=inputs.max_model_len,
    )  # fmt: skip
    return PlanReport(
        **header.model_dump(),
        policy=inputs.config.policy, workload=inputs.workload_label,
        num_requests=len(inputs.requests.input_tokens), seed=seed, objective=goal.value,
        step_profile=step_label(dep), error_band=band_of(dep),
        layouts=rows, recommended=rec, fixes=fixes, engine_flags=flags, flag_warnings=warnings,
        reuse=reuse,
    )  # fmt: skip
