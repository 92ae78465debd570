"""Result types of `capcliff plan` (what its table, Markdown and JSON views show)."""

from __future__ import annotations

from enum import StrEnum

from pydantic import BaseModel, ConfigDict

from capcliff.analysis.reuse_advice import ReuseAdvice
from capcliff.memory.report import LayoutSummary
from capcliff.report_header import SimulationHeader


class Objective(StrEnum):
    """What `plan` ranks layouts by."""

    MAKESPAN = "makespan"  # a batch job: least time to finish every request
    GOODPUT = "goodput"  # online: most requests/s within the TTFT/TPOT limits
    COST = "cost"  # GPU-hours per million output tokens


class _Result(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class PlanCliff(_Result):
    """Concurrency where the KV cache runs out (all replicas together)."""

    analytic_concurrency: int | None
    simulated_concurrency: int | None


class PlanSweetSpot(_Result):
    """The best concurrency of a layout and what it delivers."""

    concurrency: int
    output_throughput_tok_s: float
    ttft_p99_s: float
    tpot_p99_s: float
    makespan_s: float
    goodput_req_s: float
    gpu_hours_per_mtok: float


class PlanLayout(LayoutSummary):
    """One layout's row of the plan."""

    cliff: PlanCliff | None
    sweet_spot: PlanSweetSpot | None
    stranded_kv_fraction: float | None


class Recommendation(_Result):
    """The layout to deploy, its admission cap and why."""

    layout: str
    dp: int
    tp: int
    pp: int
    ep: int
    max_num_seqs: int  # per replica
    reasons: list[str]
    tie: list[str]  # other layouts within noise of it
    kv_aware_makespan_s: float | None
    kv_aware_gain: float | None  # 1 - kv-aware makespan / capped makespan


class PlanReport(SimulationHeader):
    """Everything `capcliff plan` prints."""

    objective: str
    layouts: list[PlanLayout]
    recommended: Recommendation | None
    fixes: list[str]  # what would fit, when nothing does
    engine_flags: dict[str, str]
    flag_warnings: list[str]
    reuse: ReuseAdvice | None = None  # prefix caching and offload, for workloads that share content
