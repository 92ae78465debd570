"""Ranking layouts and explaining the choice in numbers (pure functions over plan results)."""

from __future__ import annotations

from capcliff.analysis.plan.types import Objective, PlanLayout
from capcliff.units import GB


def _percent(new: float, old: float) -> str:
    return f"{(new / old - 1) * 100:+.0f} %" if old else "n/a"


def recommendation_reasons(best: PlanLayout, other: PlanLayout, objective: Objective) -> list[str]:
    """Why `best` beats `other`, in numbers."""
    reasons = []
    assert best.weights_bytes_per_gpu is not None and other.weights_bytes_per_gpu is not None
    freed = other.weights_bytes_per_gpu - best.weights_bytes_per_gpu
    if freed > 0:
        reasons.append(
            f"{best.name} holds {freed / GB:,.1f} GB less weight per GPU than {other.name}, "
            "freeing it for KV cache"
        )
    cap_best, cap_other = best.kv_capacity_tokens_per_replica, other.kv_capacity_tokens_per_replica
    if cap_best and cap_other:
        reasons.append(
            f"KV capacity per replica: {cap_best:,} vs {cap_other:,} tokens "
            f"({cap_best / cap_other:.1f}x); in all {best.kv_capacity_tokens_total:,} vs "
            f"{other.kv_capacity_tokens_total:,}"
        )
    if best.cliff and other.cliff:
        reasons.append(
            f"the analytic cliff moves from {other.cliff.analytic_concurrency:,} to "
            f"{best.cliff.analytic_concurrency:,} concurrent requests"
        )
    if best.sweet_spot and other.sweet_spot:
        b, o = best.sweet_spot, other.sweet_spot
        if objective is Objective.GOODPUT:
            reasons.append(
                f"goodput {b.goodput_req_s:,.2f} vs {o.goodput_req_s:,.2f} requests/s in the SLO"
            )
        else:
            reasons.append(
                f"makespan {b.makespan_s:,.0f} s vs {o.makespan_s:,.0f} s "
                f"({_percent(b.makespan_s, o.makespan_s)}) at their sweet spots"
            )
    return reasons


def ranked(rows: list[PlanLayout], objective: Objective) -> list[PlanLayout]:
    """Layouts with a sweet spot, best first."""
    scored = [r for r in rows if r.sweet_spot is not None]

    def key(row: PlanLayout) -> float:
        s = row.sweet_spot
        assert s is not None
        if objective is Objective.GOODPUT:
            return -s.goodput_req_s
        return s.gpu_hours_per_mtok if objective is Objective.COST else s.makespan_s

    return sorted(scored, key=lambda r: (key(r), r.tp, r.pp, r.name))


def merit(row: PlanLayout, objective: Objective) -> float:
    """The objective as a figure where higher is better: goodput (requests/s), else the inverse
    of the makespan (1/s) or of the GPU-hours per million output tokens."""
    s = row.sweet_spot
    assert s is not None
    if objective is Objective.GOODPUT:
        return s.goodput_req_s
    cost = s.gpu_hours_per_mtok if objective is Objective.COST else s.makespan_s
    return 1 / cost if cost > 0 else 0.0


def merit_shown(row: PlanLayout, objective: Objective) -> str:
    """The objective's figure of `row` as a reader knows it."""
    s = row.sweet_spot
    assert s is not None
    if objective is Objective.GOODPUT:
        return f"{s.goodput_req_s:,.2f} requests/s within the SLO"
    if objective is Objective.COST:
        return f"{s.gpu_hours_per_mtok:,.3g} GPU-hours per million output tokens"
    return f"makespan {s.makespan_s:,.0f} s"
