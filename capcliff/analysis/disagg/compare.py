"""`plan --disagg`'s other side: the best aggregated layout of the same GPUs, and which of the two
wins and why (dollars per million output tokens, at the hardware's `usd_per_gpu_hour` or
--price-gpu-hour through `fleet.hourly_cost`).

At an offered rate both sides are measured by the same steady-state rule (`disagg_online`): the
aggregated layout `plan` recommends is simulated again at its cap on the same arrivals, grown by
the same stopping rule as the chosen split.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

from pydantic import BaseModel, ConfigDict

from capcliff.analysis.deployment import Deployment
from capcliff.analysis.disagg.online import OnlineSample, aggregated_steady, serves
from capcliff.analysis.disagg.report import DisaggregatedReport, SteadyFigures, steady_figures
from capcliff.analysis.evaluate.online_load import OnlineWorkload
from capcliff.analysis.evaluate.replica_models import p99_analytic_cliff, replica_models
from capcliff.analysis.evaluate.solver import Slo, config_at
from capcliff.analysis.plan.batch import build_plan_report
from capcliff.analysis.plan.fleet import gpu_hours_per_mtok, hourly_cost
from capcliff.analysis.plan.inputs import PlanInputs, resolve_inputs
from capcliff.analysis.plan.types import PlanReport
from capcliff.analysis.workloads import WorkloadChoice
from capcliff.catalog.layout import parse_layout
from capcliff.sim.simulate import PausedRun, simulate
from capcliff.sim.traffic.workload import Arrival
from capcliff.units import counted


class AggregatedSummary(BaseModel):
    """`plan`'s recommendation on the same GPUs, at its sweet spot."""

    model_config = ConfigDict(frozen=True, extra="forbid")

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
    hardware: str | None = None  # the GPU type it runs on
    gpus: int | None = None
    # at an offered rate: the steady state the latency and throughput figures come from
    steady: SteadyFigures | None = None


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
        hardware=report.hardware, gpus=report.gpus, layout=rec.layout,
        concurrency=sweet.concurrency, makespan_s=sweet.makespan_s,
        output_throughput_tok_s=sweet.output_throughput_tok_s, ttft_p99_s=sweet.ttft_p99_s,
        tpot_p99_s=sweet.tpot_p99_s,
        gpu_hours_per_mtok=sweet.gpu_hours_per_mtok if served is None
        else gpu_hours_per_mtok(report.gpus, served),
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
    """ours against theirs as a signed whole percentage; one that rounds to 0 reads "0%" (93
    against 93.2 tok/s printed "-0%")."""
    if not theirs:
        return "n/a"
    change = ours / theirs - 1
    return "0%" if round(change * 100) == 0 else f"{change:+.0%}"


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
        f"makespan {_seconds(s.makespan_s)} s vs {_seconds(agg.makespan_s)} s",
        f"$ per million output tokens {usd_text(s.usd_per_million_output_tokens)} vs "
        f"{usd_text(agg.usd_per_million_output_tokens)} ($ per hour {usd_text(s.usd_per_hour)} vs "
        f"{usd_text(agg.usd_per_hour)}; GPU-hours per million {s.gpu_hours_per_mtok:.2f} vs "
        f"{agg.gpu_hours_per_mtok:.2f})",
        f"KV headroom at peak {1 - best.decode.peak_kv_utilization:.0%} in the decode pool vs "
        f"{'n/a' if agg.kv_headroom is None else format(agg.kv_headroom, '.0%')} aggregated "
        f"(decode pool {counted(best.decode.gpus, 'GPU')}, prefill pool "
        f"{counted(best.prefill.gpus, 'GPU')}, "
        f"prefill busy {best.prefill.utilization:.0%}, decode busy {best.decode.utilization:.0%})",
    ]


def aggregated_online(
    agg: AggregatedSummary, dep: Deployment, inputs: PlanInputs, sample: OnlineSample,
    *, gpus: int, price: float, offered_tok_s: float | None, slo: Slo | None,
    grow_behind: bool = True,
) -> AggregatedSummary:  # fmt: skip
    """`agg` measured in its steady state at the offered rate (its layout at its cap, the same
    arrivals as the splits), costed per token served: the offered tokens when it serves the rate
    within `slo`, else its steady-state throughput. Unless `grow_behind`, a first sample that
    falls behind the rate is not grown (`disagg_online.aggregated_steady`)."""
    layout = parse_layout(agg.layout)
    capacity, steps = replica_models(dep, dep.memory(layout, inputs.max_model_len))
    config = config_at(inputs.config, agg.concurrency, layout.dp)
    result, state = aggregated_steady(
        lambda requests: simulate(requests, steps, capacity, config, dp=layout.dp),
        sample,
        min(agg.concurrency, p99_analytic_cliff(inputs.reference, capacity, layout.dp)),
        behind_at=None if grow_behind else slo,
        paused=None if layout.dp > 1 else lambda r: PausedRun(r, steps, capacity, config),
    )
    served = (offered_tok_s if serves(state, slo) else None) or state.output_tok_s
    usd_per_hour, usd_per_mtok = hourly_cost(gpus, price, served)
    return agg.model_copy(
        update={
            "makespan_s": result.makespan_s,
            # on the tokens/s the $ figure is costed on, not the sweet spot's batch makespan
            "gpu_hours_per_mtok": gpu_hours_per_mtok(gpus, served),
            "output_throughput_tok_s": state.output_tok_s,
            "ttft_p99_s": state.ttft_p99_s,
            "tpot_p99_s": state.tpot_p99_s,
            "usd_per_hour": usd_per_hour,
            "usd_per_million_output_tokens": usd_per_mtok if math.isfinite(usd_per_mtok) else None,
            "kv_headroom": 1 - result.peak_kv_utilization,
            "steady": steady_figures(state),
        }
    )


def meets(ttft_p99_s: float, tpot_p99_s: float, slo: Slo | None) -> bool:
    """Whether p99 TTFT and TPOT are within `slo` (always, without one)."""
    return slo is None or (ttft_p99_s <= slo.ttft_s and tpot_p99_s <= slo.tpot_s)


def kept_up(
    ttft_p99_s: float, tpot_p99_s: float, steady: SteadyFigures | None, slo: Slo | None
) -> bool:
    """`meets`, and at an offered rate a bounded queue too (`steady` not saturated)."""
    return meets(ttft_p99_s, tpot_p99_s, slo) and not (steady is not None and steady.saturated)


def _cost_key(usd_per_mtok: float | None) -> float:
    return math.inf if usd_per_mtok is None else usd_per_mtok


def winner_by_cost(
    best: DisaggregatedReport, agg: AggregatedSummary, slo: Slo | None
) -> tuple[str, str]:
    """(winner, why): the one that meets the SLOs, or when both or neither do, the one with the
    fewer $ per million output tokens (then the fewer $ per hour)."""
    s = best.serving
    ok_d = kept_up(s.ttft_p99_s, s.tpot_p99_s, s.steady, slo)
    ok_a = kept_up(agg.ttft_p99_s, agg.tpot_p99_s, agg.steady, slo)
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


def offered_tokens_per_s(workload: WorkloadChoice) -> float | None:
    """Output tokens/s an offered rate asks for (rate x the workload's expected output tokens,
    as `plan`'s fleet costs it: not the mean of the run's sample, which moved with --seed and
    --num-requests); None in a batch."""
    if workload.arrival is Arrival.BATCH or workload.rate_per_s is None:
        return None
    return workload.rate_per_s * OnlineWorkload.expected_output_tokens(workload)


def aggregated_at(
    dep: Deployment, *, gpus: int, workload: WorkloadChoice, objective: str, slo: Slo | None,
    seed: int, price: float, progress: Callable[[], None] | None = None,
    grow_behind: bool = True,
) -> AggregatedSummary | None:  # fmt: skip
    """`plan`'s recommended layout of `gpus` GPUs of `dep`'s type (None when nothing fits),
    costed at `price` $/GPU-hour: at an offered rate the online plan's layout and cap
    (`online_pick`; the batch plan's where it recommends none) in its steady state
    (`aggregated_online`), in a batch the batch plan's at its sweet spot with its KV headroom."""
    inputs = resolve_inputs(dep, workload, seed=seed)
    offered = offered_tokens_per_s(workload)
    sample = OnlineSample.of(workload, seed)
    online = None if sample is None else online_pick(dep, gpus, workload, slo, seed)
    if online is not None:  # every figure is the steady state's (`aggregated_online`)
        agg: AggregatedSummary | None = AggregatedSummary(
            layout=online[0], concurrency=online[1], hardware=dep.hardware.id, gpus=gpus,
            makespan_s=0.0, output_throughput_tok_s=0.0, ttft_p99_s=0.0, tpot_p99_s=0.0,
            gpu_hours_per_mtok=0.0, usd_per_hour=0.0, usd_per_million_output_tokens=None,
        )  # fmt: skip
    else:
        report = build_plan_report(dep, gpus=gpus, workload=workload, objective=objective,
                                   slo=slo, seed=seed, progress=progress)  # fmt: skip
        agg = aggregated_summary(report, price, offered, slo)
    if agg is None:
        return None
    if sample is None:
        return with_kv_headroom(agg, dep, inputs)
    return aggregated_online(agg, dep, inputs, sample, gpus=gpus, price=price,
                             offered_tok_s=offered, slo=slo, grow_behind=grow_behind)  # fmt: skip


def online_pick(
    dep: Deployment, gpus: int, workload: WorkloadChoice, slo: Slo | None, seed: int
) -> tuple[str, int] | None:
    """The layout and cap (all replicas) `plan` recommends at the offered rate: its online search
    (`recommended_layout`), not the batch plan's sweet spot; None where it recommends none (no
    layout meets the SLO at any rate). (2026-12-07, h-user2: DeepSeek-R1-Distill-Qwen-32B, isl
    4,000, osl 16,000, 0.4 requests/s, TTFT 5 s / TPOT 50 ms on 8 x H200: `plan` recommended
    dp2-tp4 (tie with tp8, 0.35 requests/s within the SLO) while `plan --disagg` compared the
    splits with dp4-tp2, the batch plan's least makespan, which `plan` ranks third at 0.27.)"""
    from capcliff.analysis.plan.online import OnlineOptions, recommended_layout

    found = recommended_layout(dep, gpus=gpus, workload=workload, seed=seed,
                               options=OnlineOptions(slo=slo))  # fmt: skip
    if found is None:
        return None
    layout, cap = found
    return layout.name, cap * layout.dp


def best_aggregated(
    aggs: Sequence[AggregatedSummary | None], slo: Slo | None
) -> AggregatedSummary | None:
    """Of aggregated deployments (one per GPU type), the one that meets the SLOs with a bounded
    queue, then the fewer $ per million output tokens, then per hour (the first on a tie)."""
    found = [a for a in aggs if a is not None]
    if not found:
        return None
    return min(
        found,
        key=lambda a: (
            not kept_up(a.ttft_p99_s, a.tpot_p99_s, a.steady, slo),
            _cost_key(a.usd_per_million_output_tokens),
            a.usd_per_hour,
        ),
    )


def _seconds(value: float) -> str:
    """Three significant figures without an exponent: '504', '4,310', '12.3' (2026-12-07,
    h-user: 'makespan 504 s vs 4.31e+03 s' beside lines in plain numbers)."""
    if not math.isfinite(value) or abs(value) < 100:
        return f"{value:.3g}"
    return f"{float(f'{value:.3g}'):,.0f}"
