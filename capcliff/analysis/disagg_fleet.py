"""The cheapest cluster that meets the SLOs at a rate, disaggregated or not (`plan --disagg` with
`--rate` and `--slo-ttft`/`--slo-tpot`, without `--gpus`/`--nodes`).

Budgets are tried from the smallest: 2, 4, ... GPUs up to a node, then 1, 2, 4 and 8 nodes. At
each, `build_disagg_plan` ranks the splits and the aggregated layouts by goodput. A deployment
meets the SLOs when its TTFT p99 and TPOT p99 are within them (a queue that grows at this rate
shows up in TTFT p99). Costs are `fleet.hourly_cost` at the hardware's $/GPU-hour (or
--price-gpu-hour): $ per hour = GPUs x price; $ per million output tokens = that over the tokens
the rate asks for per hour (rate x mean output tokens x 3600, as fleet sizing counts them). The
first budget where either kind meets is the answer: at one offered rate a deployment that meets
serves the same tokens, so more GPUs cost more per hour and per token. There the one that meets
wins, or, if both do, the one with the fewer $ per million output tokens (then per hour).
With prefill GPU types besides --gpu (`--gpu a,b`), a split may cost less per hour than its GPU
count at a's price; the walk still stops at the first budget that meets, so a larger budget of
cheaper GPUs is not compared (a known limitation).
"""

from __future__ import annotations

from collections.abc import Callable

from pydantic import BaseModel, ConfigDict

from capcliff.analysis.deployment import Deployment
from capcliff.analysis.disagg_compare import (
    AggregatedSummary,
    aggregated_online,
    aggregated_summary,
    kept_up,
    usd_text,
    winner_by_cost,
)
from capcliff.analysis.disagg_online import OnlineSample
from capcliff.analysis.disagg_plan import DisaggPlanReport, build_disagg_plan, offered_tokens_per_s
from capcliff.analysis.fleet import price_of
from capcliff.analysis.plan import build_plan_report, resolve_inputs
from capcliff.analysis.solver import Slo
from capcliff.analysis.workloads import WorkloadChoice
from capcliff.errors import InputError

SCHEMA_VERSION = 1
NODE_BUDGETS = (1, 2, 4, 8)


class BudgetTried(BaseModel):
    """One budget: the best of each kind there and whether it meets the SLOs."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    gpus: int
    disaggregated: str | None  # None: no split fits this budget
    disaggregated_meets: bool
    disaggregated_ttft_p99_s: float | None
    disaggregated_tpot_p99_s: float | None
    disaggregated_usd_per_hour: float | None
    disaggregated_usd_per_million_output_tokens: float | None
    aggregated: str | None
    aggregated_meets: bool
    aggregated_ttft_p99_s: float | None
    aggregated_tpot_p99_s: float | None
    aggregated_usd_per_hour: float | None
    aggregated_usd_per_million_output_tokens: float | None


class CheapestReport(BaseModel):
    """Everything `plan --disagg --rate R --slo-...` prints."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    schema_version: int
    model: str
    hardware: str
    rate_per_s: float
    usd_per_gpu_hour: float
    slo_ttft_s: float | None
    slo_tpot_s: float | None
    tried: list[BudgetTried]
    choice: str | None  # "disaggregated", "aggregated", or None when no budget meets the SLOs
    gpus: int | None
    reasons: list[str]
    plan: DisaggPlanReport | None  # the chosen budget's full comparison (None: no split fits)
    aggregated: AggregatedSummary | None  # the chosen budget's best aggregated layout


def _aggregated_only(
    dep: Deployment, gpus: int, workload: WorkloadChoice, slo: Slo, seed: int, price: float
) -> AggregatedSummary | None:  # fmt: skip
    """`plan`'s best aggregated layout of `gpus` GPUs by goodput, in its steady state at the
    rate (None when nothing fits)."""
    report = build_plan_report(dep, gpus=gpus, workload=workload, objective="goodput", slo=slo,
                               seed=seed)  # fmt: skip
    inputs = resolve_inputs(dep, workload, seed=seed)
    offered = offered_tokens_per_s(workload, inputs)
    agg = aggregated_summary(report, price, offered, slo)
    sample = OnlineSample.of(workload, seed)
    if agg is None or sample is None:
        return agg
    return aggregated_online(agg, dep, inputs, sample, gpus=gpus, price=price,
                             offered_tok_s=offered, slo=slo)  # fmt: skip


def _tried(
    gpus: int, report: DisaggPlanReport | None, agg: AggregatedSummary | None, slo: Slo
) -> BudgetTried:
    s = None if report is None else report.disaggregated.serving
    return BudgetTried(
        gpus=gpus, disaggregated=None if report is None else report.disaggregated.name,
        disaggregated_meets=s is not None
        and kept_up(s.ttft_p99_s, s.tpot_p99_s, s.steady, slo),
        disaggregated_ttft_p99_s=None if s is None else s.ttft_p99_s,
        disaggregated_tpot_p99_s=None if s is None else s.tpot_p99_s,
        disaggregated_usd_per_hour=None if s is None else s.usd_per_hour,
        disaggregated_usd_per_million_output_tokens=(
            None if s is None else s.usd_per_million_output_tokens
        ),
        aggregated=None if agg is None else agg.layout,
        aggregated_meets=agg is not None
        and kept_up(agg.ttft_p99_s, agg.tpot_p99_s, agg.steady, slo),
        aggregated_ttft_p99_s=None if agg is None else agg.ttft_p99_s,
        aggregated_tpot_p99_s=None if agg is None else agg.tpot_p99_s,
        aggregated_usd_per_hour=None if agg is None else agg.usd_per_hour,
        aggregated_usd_per_million_output_tokens=(
            None if agg is None else agg.usd_per_million_output_tokens
        ),
    )  # fmt: skip


def _choice(tried: BudgetTried, report: DisaggPlanReport | None, slo: Slo) -> tuple[str, list[str]]:
    """Which kind wins at the first budget that meets, and why, in numbers."""
    if report is None:
        return "aggregated", [f"{tried.aggregated} meets the SLOs; no split of these GPUs fits"]
    s, agg = report.disaggregated.serving, report.aggregated
    if agg is None:
        return "disaggregated", [f"{report.disaggregated.name} meets the SLOs; nothing "
                                 "aggregated fits"]  # fmt: skip
    kind, why = winner_by_cost(report.disaggregated, agg, slo)
    return kind, [
        why,
        f"$ per million output tokens {usd_text(s.usd_per_million_output_tokens)} "
        f"(disaggregated {report.disaggregated.name}) vs "
        f"{usd_text(agg.usd_per_million_output_tokens)} (aggregated {agg.layout}); "
        f"$ per hour {usd_text(s.usd_per_hour)} vs {usd_text(agg.usd_per_hour)}",
        f"TTFT p99 {s.ttft_p99_s:.2f} s vs {agg.ttft_p99_s:.2f} s; TPOT p99 "
        f"{s.tpot_p99_s * 1e3:.1f} ms vs {agg.tpot_p99_s * 1e3:.1f} ms",
    ]


def cheapest_cluster(
    dep: Deployment,
    *,
    workload: WorkloadChoice,
    slo: Slo,
    seed: int,
    prices: dict[str, float] | None = None,
    progress: Callable[[], None] | None = None,
    prefill_gpus: tuple[str, ...] = (),
) -> CheapestReport:
    """The fewest GPUs (whole nodes) on which a split or an aggregated layout meets `slo`, at
    the hardware's $/GPU-hour or `prices`'."""
    if workload.rate_per_s is None:
        raise InputError("rate: the cheapest cluster needs --rate (requests/s) and an SLO")
    price = price_of(dep.hardware, prices or {})
    node = dep.hardware.gpus_per_node
    tried: list[BudgetTried] = []
    for gpus in budgets(node):
        try:
            report = build_disagg_plan(dep, gpus=gpus, workload=workload, objective="goodput",
                                       slo=slo, seed=seed, prices=prices,
                                       prefill_gpus=prefill_gpus,
                                       progress=progress)  # fmt: skip
        except InputError:
            report = None  # no split of this budget fits: the aggregated layouts alone
        agg = (
            report.aggregated if report else _aggregated_only(dep, gpus, workload, slo, seed, price)
        )
        row = _tried(gpus, report, agg, slo)
        tried.append(row)
        if row.disaggregated_meets or row.aggregated_meets:
            choice, reasons = _choice(row, report, slo)
            return CheapestReport(
                schema_version=SCHEMA_VERSION, model=dep.model.id, hardware=dep.hardware.id,
                rate_per_s=workload.rate_per_s, usd_per_gpu_hour=price,
                slo_ttft_s=_limit(slo.ttft_s), slo_tpot_s=_limit(slo.tpot_s),
                tried=tried, choice=choice, gpus=gpus,
                reasons=reasons, plan=report, aggregated=agg,
            )  # fmt: skip
    return CheapestReport(
        schema_version=SCHEMA_VERSION, model=dep.model.id, hardware=dep.hardware.id,
        rate_per_s=workload.rate_per_s, usd_per_gpu_hour=price,
        slo_ttft_s=_limit(slo.ttft_s), slo_tpot_s=_limit(slo.tpot_s),
        tried=tried, choice=None, gpus=None,
        reasons=[f"no budget up to {node * NODE_BUDGETS[-1]} GPUs meets the SLOs at this rate"],
        plan=None, aggregated=None,
    )  # fmt: skip


def budgets(gpus_per_node: int) -> list[int]:
    """GPU counts to try: powers of two from 2 below a node, then whole nodes."""
    small = [2**k for k in range(1, 16) if 2**k < gpus_per_node]
    return small + [gpus_per_node * n for n in NODE_BUDGETS]


def _limit(value: float) -> float | None:
    return None if value == float("inf") else value
