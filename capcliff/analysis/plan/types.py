"""Result types of `capcliff plan` (what its table, Markdown and JSON views show)."""

from __future__ import annotations

from enum import StrEnum

from pydantic import BaseModel, ConfigDict, Field

from capcliff.analysis.evaluate.session_load import SessionCapacity
from capcliff.analysis.plan.reuse_advice import ReuseAdvice
from capcliff.memory.report import LayoutSummary
from capcliff.report_header import SimulationHeader


class Mode(StrEnum):
    """The question a plan or sweep answers."""

    ONLINE = "online"  # traffic over time (a rate, users or a trace): the steady state
    BATCH = "batch"  # the study's experiment: N requests at t = 0, judged by makespan


class Objective(StrEnum):
    """What `plan` ranks layouts by."""

    MAKESPAN = "makespan"  # a batch job: least time to finish every request
    GOODPUT = "goodput"  # online: most requests/s within the TTFT/TPOT limits
    COST = "cost"  # GPU-hours per million output tokens


class _Result(BaseModel):
    # validators built on first use: a command pays only for the models it makes (~1 ms each)
    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)


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


class LoadPoint(_Result):
    """Online: one replica at one offered rate and cap, in steady state (a plot's point)."""

    max_num_seqs: int  # per replica
    offered_rps: float  # all replicas of the layout together
    ttft_p99_s: float
    tpot_p99_s: float
    meets_slo: bool


class CapSaturation(_Result):
    """Online: the layout's rate with a backlog at one cap (the climb to the cliff)."""

    max_num_seqs: int  # per replica
    saturation_rps: float  # all replicas together
    kv_ran_short: bool  # preempted or refused a waiting request for lack of KV
    # more than 0.5 preemptions per request (`capacity.THRASH_PREEMPTIONS`): never chosen, and
    # its rate is read from the short run that showed it (`requests`), not settled
    thrashing: bool
    requests: int  # the sample its rate came from (per replica)


class LayoutCapacity(_Result):
    """Online: what one layout (all its replicas) sustains, at its admission cap."""

    max_num_seqs: int  # per replica
    saturation_rps: float  # the most it finishes with a backlog: queues grow past it
    # the most within the SLO (no SLO: the saturation rate); None: not searched within the SLO
    # (only its first cap was simulated: `why_not` says so). 0.0 is a searched answer: nothing
    # tried met the SLO
    sustained_rps: float | None
    # at sustained_rps (within no SLO: at saturation; not refined: saturation; 0 where a search
    # met no rate)
    output_tok_s: float
    # at the rate it is run at (None: only its saturation was simulated; where no rate met the
    # SLO, the lightest load tried: the closest miss)
    ttft_p99_s: float | None
    tpot_p99_s: float | None
    # relative 95 % half-widths of those p99s (batch quantiles); None: not estimated
    ttft_p99_half_width: float | None = None
    tpot_p99_half_width: float | None = None
    best_ttft_p99_s: float | None  # at light load: the least this layout can do
    best_tpot_p99_s: float | None
    refined: bool  # searched over caps and rates, not only its first cap
    settled: bool  # the stopping rule's confidence interval closed
    simulated_requests: int
    why_not: str | None = None  # why sustained_rps is None or 0.0
    caps: list[CapSaturation] = []  # each cap simulated with a backlog
    load_curve: list[LoadPoint] = []  # each offered rate the SLO search simulated


class PlanLayout(LayoutSummary):
    """One layout's row of the plan."""

    cliff: PlanCliff | None
    sweet_spot: PlanSweetSpot | None
    stranded_kv_fraction: float | None
    capacity: LayoutCapacity | None = None


class Load(_Result):
    """Online: the offered load against what the planned GPUs sustain."""

    kind: str  # rate, clients, trace or saturation (none given)
    offered_rps: float | None
    clients: int | None
    sustained_rps: float | None  # the recommended layout on the planned GPUs, within the SLO
    saturated: bool  # more is offered than those GPUs sustain
    replicas_needed: int | None  # of the recommended replica, with headroom, to carry the load


class FleetEntry(_Result):
    """Online: one GPU type's cheapest deployment for the load."""

    gpu: str
    layout: str  # one replica's layout
    max_num_seqs: int  # per replica
    replicas: int
    gpus: int
    nodes: int
    usd_per_gpu_hour: float
    usd_per_hour: float
    usd_per_million_output_tokens: float
    sustained_rps_per_replica: float
    ttft_p99_s: float | None  # the whole fleet simulated at the load with routing (when checked)
    tpot_p99_s: float | None
    meets_slo: bool | None  # None: not simulated as a fleet
    # the held-out median |error| of throughput for the engine on this GPU type (a fraction,
    # perf/error_band.py): what its $/M output tokens may be off by; None: no validation rows
    throughput_error: float | None = None
    # requests/s its $ per million output tokens is costed on: the offered rate; with users,
    # theirs (at most what the replicas sustain); with no load, the replicas' sustained rate
    # less the headroom (None: not given, an older report)
    served_rps: float | None = None


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

    mode: str = Mode.BATCH.value
    objective: str
    layouts: list[PlanLayout]
    recommended: Recommendation | None
    fixes: list[str]  # what would fit, when nothing does (online: what would meet the SLO)
    engine_flags: dict[str, str]
    flag_warnings: list[str]
    simulated_requests: int | None = None  # online: the most one simulation used
    settled: bool | None = None  # online: every searched layout's interval closed
    slo_ttft_s: float | None = None
    slo_tpot_s: float | None = None
    headroom: float | None = None
    load: Load | None = None
    reason: str | None = None  # why nothing is recommended
    notes: list[str] = Field(default_factory=list)  # overload, small samples
    fleet: list[FleetEntry] = Field(default_factory=list)  # cheapest first
    reuse: ReuseAdvice | None = None  # prefix caching and offload, for workloads that share content
    sessions: SessionCapacity | None = None  # online session workloads: sessions, users, hits
