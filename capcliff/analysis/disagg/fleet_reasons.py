"""The rows of the options the cheapest-cluster walk simulated (`disagg_fleet`), and why its answer
is the cheapest, in numbers: the options below its price, why the walk could stop, and the best
of each kind.

After the answer, the walk goes on over the other kind's options alone, up to `COMPARE_FACTOR`
times the answer's price, so that the comparison names the cheapest deployment of the other kind
that meets the SLOs (and how much more it costs), or says that none does up to that price.
"""

from __future__ import annotations

from dataclasses import dataclass

from pydantic import BaseModel, ConfigDict

from capcliff.analysis.disagg.compare import AggregatedSummary, kept_up, usd_text
from capcliff.analysis.disagg.options import MAX_NODES, Option, gpu_types
from capcliff.analysis.disagg.plan import DisaggPlanReport, Evaluated
from capcliff.analysis.evaluate.solver import Slo
from capcliff.units import counted

COMPARE_FACTOR = 2.0  # the other kind is walked up to this many times the answer's $ per hour


class OptionTried(BaseModel):
    """One simulated option: the best split of one price, or one aggregated layout."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: str  # "disaggregated" or "aggregated"
    deployment: str | None  # the split or the layout (None: `plan` recommends none)
    hardware: str  # its GPU type, or prefill-type+decode-type
    gpus: int
    usd_per_hour: float
    meets: bool  # p99 within the SLOs and the queue bounded, in the steady state
    ttft_p99_s: float | None
    tpot_p99_s: float | None
    usd_per_million_output_tokens: float | None
    splits: int = 0  # splits simulated at this price (disaggregated rows)
    compared_only: bool = False  # simulated after the answer, for the other kind's cheapest


@dataclass(frozen=True)
class Spent:
    """What the walk did: the options, the rows simulated and the price it stopped at."""

    options: list[Option]
    tried: list[OptionTried]
    stop: float | None  # the answer's $ per hour; None when nothing meets
    rate_per_s: float
    offered_tok_s: float  # rate x mean output tokens
    types: list[str]
    skipped: int = 0  # splits not simulated: their prefill pool cannot keep up


def split_row(
    level: list[Option], evaluated: list[Evaluated], best: Evaluated, ok: bool, home: str,
    offered_tok_s: float | None,
) -> OptionTried:  # fmt: skip
    """The row of one price's best split (`best` of `evaluated`; `ok`: it serves the rate),
    costed per token served: the offered tokens/s when it meets, else its own throughput."""
    spec, state = best.spec, best.state
    assert state is not None
    cost = next(o.usd_per_hour for o in level if o.spec == spec)
    tokens = offered_tok_s if ok and offered_tok_s else state.output_tok_s
    return OptionTried(
        kind="disaggregated", deployment=spec.name, hardware=gpu_types(spec, home),
        gpus=spec.gpus, usd_per_hour=cost, meets=ok, ttft_p99_s=state.ttft_p99_s,
        tpot_p99_s=state.tpot_p99_s,
        usd_per_million_output_tokens=cost / (tokens * 3600) * 1e6 if tokens > 0 else None,
        splits=len({ev.spec.name for ev in evaluated}),
    )  # fmt: skip


def aggregated_row(option: Option, agg: AggregatedSummary | None, slo: Slo) -> OptionTried:
    """The row of one aggregated option (`agg`: `plan`'s layout there, None when none)."""
    return OptionTried(
        kind="aggregated", deployment=None if agg is None else agg.layout,
        hardware=option.hardware, gpus=option.gpus, usd_per_hour=option.usd_per_hour,
        meets=agg is not None and kept_up(agg.ttft_p99_s, agg.tpot_p99_s, agg.steady, slo),
        ttft_p99_s=None if agg is None else agg.ttft_p99_s,
        tpot_p99_s=None if agg is None else agg.tpot_p99_s,
        usd_per_million_output_tokens=None if agg is None else agg.usd_per_million_output_tokens,
    )  # fmt: skip


# (the best split meets, the best aggregated deployment, it meets)
Found = tuple[bool, AggregatedSummary | None, bool]


def cheapest_reasons(spent: Spent, plan: DisaggPlanReport | None, found: Found) -> list[str]:
    """Why the answer is the cheapest: the options below its price, why the walk could stop,
    and the best split and aggregated deployment found, each against the SLOs."""
    stop, options = spent.stop, spent.options
    if stop is None:
        top = max((o.usd_per_hour for o in options), default=0.0)
        return [
            f"no option up to {MAX_NODES} nodes of {', '.join(spent.types)} (${top:,.2f} per "
            f"hour) meets the SLOs at this rate ({counted(len(options) - spent.skipped, 'option')} "
            f"simulated, {counted(spent.skipped, 'split')} skipped as their prefill pool falls "
            "behind)"
        ]
    cheaper = [t for t in spent.tried if t.usd_per_hour < stop - 1e-6]
    out = [
        f"{counted(len(cheaper), 'cheaper option')} (${cheaper[0].usd_per_hour:,.2f} to "
        f"${cheaper[-1].usd_per_hour:,.2f} per hour) "
        f"{'misses' if len(cheaper) == 1 else 'miss'} the SLOs"
        if cheaper
        else "it is the cheapest option of the search space",
        f"the other {sum(o.price_level > stop for o in options)} of the {len(options)} "
        f"options all cost more than ${stop:,.2f} per hour; at {spent.rate_per_s:g} req/s "
        f"every option that meets serves the same {spent.offered_tok_s:,.0f} output tokens/s, "
        f"so they cost more per million tokens too "
        f"({counted(sum(o.price_level <= stop for o in options), 'option')} up to the answer)",
    ]
    if spent.skipped:
        out.append(
            f"{counted(spent.skipped, 'split')} not simulated: a prefill pool of as many or more "
            "instances of the same type and layout was seen falling behind the rate (of the N "
            "prompts that arrived in the steady window it finished fewer than N - max(0.2 N, "
            "4 sqrt(2 N))), so they cannot meet any TTFT limit"
        )
    return out + _kinds(spent, plan, found)


def _kinds(spent: Spent, plan: DisaggPlanReport | None, found: Found) -> list[str]:
    """The best split and the best aggregated deployment, each with its price and figures; the
    kind that lost says what it would cost, or that nothing of it meets up to the bound."""
    split_ok, agg, agg_ok = found
    stop = spent.stop
    assert stop is not None
    out = []
    split = None if plan is None else plan.disaggregated
    if split is not None:
        s = split.serving
        out.append(
            f"best split {split.name} ({split.gpus} GPUs, ${s.usd_per_hour or 0:,.2f} per "
            f"hour{_more(s.usd_per_hour or 0.0, stop, split_ok)}): "
            f"{'meets' if split_ok else 'misses'} the SLOs, TTFT p99 {s.ttft_p99_s:,.2f} s, "
            f"TPOT p99 {s.tpot_p99_s * 1e3:,.1f} ms, "
            f"{usd_text(s.usd_per_million_output_tokens)} per million output tokens"
        )
    if agg is not None:
        out.append(
            f"best aggregated {agg.layout} on {agg.gpus} x {agg.hardware} "
            f"(${agg.usd_per_hour:,.2f} per hour{_more(agg.usd_per_hour, stop, agg_ok)}): "
            f"{'meets' if agg_ok else 'misses'} the SLOs, TTFT p99 {agg.ttft_p99_s:,.2f} s, "
            f"TPOT p99 {agg.tpot_p99_s * 1e3:,.1f} ms, "
            f"{usd_text(agg.usd_per_million_output_tokens)} per million output tokens"
            + (" (its queue grows at this rate)" if agg.steady and agg.steady.saturated else "")
        )
    for kind, ok in (("disaggregated", split_ok), ("aggregated", agg_ok)):
        if not ok:
            out.append(
                f"no {kind} deployment up to ${stop * COMPARE_FACTOR:,.2f} per hour "
                f"({COMPARE_FACTOR:g} x the answer) meets the SLOs"
            )
    return out


def _more(usd_per_hour: float, stop: float, ok: bool) -> str:
    """`, +N % over the answer` for a deployment that meets at a higher price."""
    if not ok or usd_per_hour <= stop + 1e-6:
        return ""
    return f", {usd_per_hour / stop - 1:+.0%} over the answer"
