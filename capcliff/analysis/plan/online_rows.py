"""Online plan results in report form: a layout's row and the reasons for the choice, in numbers."""

from __future__ import annotations

import math

from capcliff.analysis.evaluate.capacity import THRASH_PREEMPTIONS, ReplicaCapacity
from capcliff.analysis.evaluate.layout_capacity import LayoutEval
from capcliff.analysis.plan.types import (
    CapSaturation,
    LayoutCapacity,
    LoadPoint,
    PlanCliff,
    PlanLayout,
    PlanSweetSpot,
)
from capcliff.analysis.sweep.failure import past_cliff
from capcliff.memory.layout_memory import LayoutMemory
from capcliff.memory.report import summary_fields
from capcliff.sim.policies import policy


def _capacity(ev: LayoutEval, *, within_slo: bool) -> LayoutCapacity:
    c = ev.capacity
    dp = ev.memory.layout.dp
    state = c.at_sustained
    # tokens/s at the rate of `sustained_rps`: within an SLO, the run at that rate; without
    # one, the saturation run at the cap (`at_sustained` is then at the headroom below it)
    at_rate = state if within_slo else next(p for p in c.points if p.cap == c.cap).state
    searched = ev.refined or not within_slo
    why_not = None
    if not searched:
        why_not = (
            "not searched within the SLO: its first cap's saturation rate ranked below the "
            "leaders' (name it with --layout to search it)"
        )
    elif within_slo and not c.meets_slo:
        why_not = "searched: no cap and rate tried meets the SLO"
    # nothing sustained, nothing delivered: 0 tokens/s at 0 requests/s (the latencies stay those
    # of the lightest load tried, the closest miss: they say by how much the SLO is missed)
    tok_s = 0.0 if searched and within_slo and not c.meets_slo else at_rate.output_tok_s * dp
    return LayoutCapacity(
        max_num_seqs=c.cap,
        saturation_rps=ev.saturation_rps,
        sustained_rps=ev.sustained_rps if searched else None,
        why_not=why_not,
        output_tok_s=tok_s,
        ttft_p99_s=state.ttft_p99_s if ev.refined else None,
        tpot_p99_s=state.tpot_p99_s if ev.refined else None,
        ttft_p99_half_width=_finite_or_none(state.ttft_p99_half_width) if ev.refined else None,
        tpot_p99_half_width=_finite_or_none(state.tpot_p99_half_width) if ev.refined else None,
        best_ttft_p99_s=c.best_ttft_p99_s,
        best_tpot_p99_s=c.best_tpot_p99_s,
        refined=ev.refined,
        settled=c.settled,
        simulated_requests=c.simulated_requests,
        caps=[
            CapSaturation(max_num_seqs=p.cap, saturation_rps=p.state.throughput_rps * dp,
                          kv_ran_short=p.hit_cliff, thrashing=p.thrashing, requests=p.requests)
            for p in sorted(c.points, key=lambda p: p.cap)
        ],
        load_curve=[
            LoadPoint(max_num_seqs=p.cap, offered_rps=p.rate_rps * dp,
                      ttft_p99_s=_finite(p.state.ttft_p99_s),
                      tpot_p99_s=_finite(p.state.tpot_p99_s), meets_slo=p.meets)
            for p in sorted(c.probes, key=lambda p: (p.cap, p.rate_rps))
        ],
    )  # fmt: skip


def _finite(value: float) -> float:
    return value if math.isfinite(value) else 0.0


def _sweet(ev: LayoutEval, gpus: int) -> PlanSweetSpot:
    c = ev.capacity
    dp = ev.memory.layout.dp
    state = c.at_sustained
    tok_s = state.output_tok_s * dp
    chosen = next((p for p in c.points if p.cap == c.cap), c.points[0])
    return PlanSweetSpot(
        concurrency=c.cap * dp,
        output_throughput_tok_s=tok_s,
        ttft_p99_s=state.ttft_p99_s,
        tpot_p99_s=state.tpot_p99_s,
        makespan_s=chosen.result.makespan_s,
        goodput_req_s=ev.sustained_rps,
        gpu_hours_per_mtok=gpus / (tok_s * 3600) * 1e6 if tok_s > 0 else float("inf"),
    )


def layout_row(
    memory: LayoutMemory, ev: LayoutEval | None, gpus: int, *, within_slo: bool
) -> PlanLayout:
    """A layout's row: memory, and for a fitting layout its cliff, sweet spot and capacity
    (`within_slo`: the capacity is the rate within an SLO, not the saturation rate)."""
    if ev is None:
        return PlanLayout(
            **summary_fields(memory), cliff=None, sweet_spot=None, stranded_kv_fraction=None
        )
    dp = memory.layout.dp
    simulated = ev.capacity.simulated_cliff
    return PlanLayout(
        **summary_fields(memory),
        cliff=PlanCliff(
            analytic_concurrency=ev.capacity.analytic_cliff * dp,
            simulated_concurrency=None if simulated is None else simulated * dp,
        ),
        # a layout not searched within the SLO has no sweet spot within it
        sweet_spot=_sweet(ev, gpus) if ev.refined or not within_slo else None,
        stranded_kv_fraction=None,  # replicas are searched one at a time; the fleet check routes
        capacity=_capacity(ev, within_slo=within_slo),
    )


def _cliff_reason(c: ReplicaCapacity, *, preempts: bool = True) -> str:
    """The three cliffs of the cap recommended, each named for what it is: the analytic p99
    cliff (every running request at the p99 length), the burst cliff (a backlog: every request
    waiting at once, as after a restart), and what serving the planned rate did at the cap.
    `preempts`: False for a policy that reserves each request's whole sequence and never
    preempts (TensorRT-LLM GUARANTEED_NO_EVICT), where a backlog past the cliff waits."""
    cliff = c.simulated_cliff
    where = (
        f"cliffs per replica: analytic p99 {c.analytic_cliff:,} (every running request at the "
        f"p99 length); burst {'-' if cliff is None else f'{cliff:,}'} (the cap at which a "
        "backlog, as after a restart or a burst of arrivals, first runs KV short)"
    )
    steady = ""
    if c.sustained is not None:
        n = max(1, c.sustained.requests)
        steady = (
            f"; at {c.sustained.rate_rps:,.2f} requests/s per replica in steady state: "
            f"{c.sustained.preemptions / n:.3f} preemptions per request"
        )
    past = next((p for p in c.points if p.cap == cliff), None)
    failing = None if past is None else past_cliff(past.result)
    if failing is not None:
        where += f"; at the burst cliff, {failing.statement()}"
    if cliff is None or c.cap < cliff:
        return f"{where}{steady}; the cap is below the burst cliff"
    if not preempts:
        return (
            f"{where}{steady}; the cap is at or past the burst cliff, so with a backlog requests "
            "wait for KV blocks: the engine reserves each request's prompt + max output blocks "
            "at admission and never preempts"
        )
    point = next(p for p in c.points if p.cap == c.cap)
    per_request = point.result.total_preemptions / max(1, len(point.result.finish_s))
    why = (
        f"every cap tried preempts more than {THRASH_PREEMPTIONS} per request (thrashing)"
        if point.thrashing
        else f"it is kept for its throughput, under the {THRASH_PREEMPTIONS} per request that "
        "counts as thrashing"
    )
    warn = ""
    if c.sustained is not None and c.sustained.preemptions == 0:
        warn = (
            "; safe at the planned rate, but a restart or a burst preempts at this cap: a cap "
            f"below {cliff:,} rides it out"
        )
    return (
        f"{where}{steady}; the cap is at or past the burst cliff, so with a backlog requests are "
        f"preempted ({per_request:.2f} per request); {why}{warn}"
    )


def recommendation_reasons_online(
    best: LayoutEval, found: dict[str, LayoutEval], headroom: float | None = None
) -> list[str]:
    """Why `best`: its sustained rate against the runner-up and the pure data-parallel layout.

    `headroom`: given when there is no SLO, where `at_sustained` is the run at (1 - headroom) x
    the saturation rate, not at it; the latencies are said to be there (2026-12-07, h-user:
    DeepSeek-R1 dp8-ep8 printed "sustains 0.80 requests/s ...; saturation 0.80; there TTFT p99
    254 s", a TTFT measured at 0.64 requests/s)."""
    lay = best.memory.layout
    c = best.capacity
    at = c.at_sustained
    there = "there"
    if headroom is not None:
        there = (
            f"at the {headroom:.0%} headroom below it "
            f"({best.sustained_rps * (1 - headroom):,.2f} requests/s)"
        )
    ttft_pm, tpot_pm = _pm(at.ttft_p99_half_width), _pm(at.tpot_p99_half_width)
    # said where an interval is printed: a sample too small for one (a 40-request trace) printed
    # none and the explanation of the "±" all the same (fuzz_random seed 55)
    interval = (
        " (95 % sampling interval of the p99s: another sample of the same load lands within it)"
        if ttft_pm or tpot_pm
        else ""
    )
    reasons = [
        f"sustains {best.sustained_rps:,.2f} requests/s ({best.sustained_rps * 3600:,.0f} an "
        f"hour) at max_num_seqs {c.cap:,} per replica; {_saturation_text(best)}; {there} "
        f"TTFT p99 {at.ttft_p99_s:,.3g} s{ttft_pm}, TPOT p99 {at.tpot_p99_s * 1e3:,.3g} ms"
        f"{tpot_pm}{interval}",
    ]
    if c.simulated_cliff is not None:
        preempts = not policy(best.replica.config.policy).reserves_full_sequence
        reasons.append(_cliff_reason(c, preempts=preempts))
    others = sorted(
        (ev for ev in found.values() if ev is not best and ev.refined and ev.capacity.meets_slo),
        key=lambda ev: -ev.sustained_rps,
    )
    dp_only = next(
        (ev for ev in found.values() if ev.memory.layout.tp == ev.memory.layout.pp == 1), None
    )
    compared = others[:1]
    if dp_only is not None and dp_only is not best and all(o is not dp_only for o in compared):
        compared.append(dp_only)  # not twice when the runner-up is the data-parallel layout
    for other in compared:
        name = other.memory.layout.name
        if other.sustained_rps > 0:
            ratio = best.sustained_rps / other.sustained_rps
            reasons.append(
                f"{ratio:.2f}x the rate of {name} ({other.sustained_rps:,.2f} requests/s"
                f"{'' if other.refined else ', first cap only'})"
            )
    if lay.dp > 1:
        reasons.append(f"{lay.dp} replicas do not share KV: each holds its own requests")
    return reasons


def _saturation_text(ev: LayoutEval) -> str:
    """The saturation rate at the chosen cap, requests/s (all replicas), and the layout's best
    (`saturation_rps`, another cap's) where the two differ: beside the cap, the best alone read
    as that cap's (fuzz_random seed 14: Qwen3-30B-A3B dpa2 on 2 x H200 printed "max_num_seqs
    238 per replica; saturation 2.51", the saturation of cap 476; cap 238 saturates at 1.96)."""
    c = ev.capacity
    dp = ev.memory.layout.dp
    own = next((p.state.throughput_rps * dp for p in c.points if p.cap == c.cap), None)
    if own is None or f"{own:,.2f}" == f"{ev.saturation_rps:,.2f}":
        return f"saturation {ev.saturation_rps:,.2f}"
    top = next((p.cap for p in c.points if p.state.throughput_rps == c.saturation_rps), None)
    where = f" at max_num_seqs {top:,}" if top is not None else " at another cap"
    return f"saturation {own:,.2f} at this cap ({ev.saturation_rps:,.2f}{where})"


def _finite_or_none(value: float) -> float | None:
    return value if math.isfinite(value) else None


def _pm(half_width: float) -> str:
    return f" ±{half_width:.0%}" if math.isfinite(half_width) else ""
