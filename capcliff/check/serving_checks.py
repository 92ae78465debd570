"""`capcliff check` assertions on online serving: sustained rate, replicas and cost.

They run the online plan (`analysis.serving`) once per scenario, on the scenario's GPUs: its
layout, or every layout for `auto`. The SLO is the scenario's `ttft_p99_max_s` / `tpot_p99_max_s`;
the load is the workload's `rate` or `clients` (none: the most the layout sustains).
"""

from __future__ import annotations

from capcliff.analysis.plan.types import PlanReport
from capcliff.check.report import AssertionResult, assertion, bound
from capcliff.check.scenario import Outcome, online_plan
from capcliff.check.spec import Expectations
from capcliff.units import counted


def serving_report(o: Outcome) -> PlanReport:
    """The online plan of the scenario: its layout's, or for `auto` the one that chose it."""
    if o.dep.scenario.layout == "auto" and o.online_plan is not None:
        return o.online_plan
    return online_plan(o.dep, () if o.layout is None else (o.layout,))


def _missing(name: str, comparison: str, expected: float, unit: str, why: str) -> AssertionResult:
    return assertion(name, comparison, expected, None, unit, passed=False, detail=why)


def serving_assertions(o: Outcome, e: Expectations) -> list[AssertionResult]:
    """sustained_rps_min, replicas_max and usd_per_million_tokens_max, as stated."""
    wanted = (e.sustained_rps_min, e.replicas_max, e.usd_per_million_tokens_max)
    if all(value is None for value in wanted):
        return []
    report = serving_report(o)
    why = report.reason or "nothing recommended"
    entry = next((f for f in report.fleet if f.gpu == report.hardware), None)
    out = []
    if e.sustained_rps_min is not None:
        load = report.load
        if report.recommended is None or load is None or load.sustained_rps is None:
            out.append(_missing("sustained_rps_min", ">=", e.sustained_rps_min, "req/s", why))
        else:
            # without ttft_p99_max_s / tpot_p99_max_s the capacity is the saturation rate: "within
            # the SLO" named one the spec did not set (fuzz_random seed 53, checks/online.toml)
            slo = report.slo_ttft_s is not None or report.slo_tpot_s is not None
            detail = (
                f"{report.recommended.layout} at max_num_seqs {report.recommended.max_num_seqs} "
                "per replica, "
                + ("steady state within the SLO" if slo else "its saturation rate (no SLO set)")
            )
            out.append(
                bound("sustained_rps_min", e.sustained_rps_min, load.sustained_rps, "req/s",
                      at_least=True, detail=detail)
            )  # fmt: skip
    if e.replicas_max is not None:
        if entry is None:
            out.append(_missing("replicas_max", "<=", e.replicas_max, "replicas", why))
        else:
            gpus = counted(entry.gpus, "GPU", "")  # "1 GPUs, 1 nodes"
            nodes = counted(entry.nodes, "node", "")
            detail = f"{entry.replicas} x {entry.layout} ({gpus}, {nodes})"
            out.append(
                bound("replicas_max", e.replicas_max, entry.replicas, "replicas",
                      at_least=False, detail=detail)
            )  # fmt: skip
    if e.usd_per_million_tokens_max is not None:
        if entry is None:
            out.append(_missing("usd_per_million_tokens_max", "<=", e.usd_per_million_tokens_max,
                                "$/M tok", why))  # fmt: skip
        else:
            detail = f"{counted(entry.gpus, 'GPU')} at ${entry.usd_per_gpu_hour:.2f}/GPU-hour"
            out.append(
                bound("usd_per_million_tokens_max", e.usd_per_million_tokens_max,
                      entry.usd_per_million_output_tokens, "$/M tok", at_least=False,
                      detail=detail)
            )  # fmt: skip
    return out
