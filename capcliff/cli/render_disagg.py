"""Disaggregated results (`plan --disagg`, `sweep --disagg`) as terminal screens. Renders only."""

from __future__ import annotations

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from capcliff.analysis.disagg.fleet import CheapestReport
from capcliff.analysis.disagg.plan import DisaggPlanReport
from capcliff.analysis.disagg.report import DisaggregatedReport, PoolReport
from capcliff.analysis.disagg.sweep import DisaggSweepReport
from capcliff.units import GB, counted


def _pool_line(role: str, pool: PoolReport) -> str:
    return (
        f"{role}: {pool.instances} x {pool.layout} on {pool.hardware} "
        f"({counted(pool.gpus, 'GPU')}, {counted(pool.replicas, 'replica')}, "
        f"{pool.kv_blocks_per_replica:,} KV blocks of {pool.block_size} each); busy "
        f"{pool.utilization:.0%}, KV peak {pool.peak_kv_utilization:.0%} "
        f"(mean {pool.mean_kv_utilization:.0%}), {pool.preemptions:,} preemptions"
    )


def disaggregated_lines(report: DisaggregatedReport) -> list[str]:
    """Both pools, the transfers and the serving figures, one line each."""
    t, s = report.kv_transfer, report.serving
    links = ", ".join(f"{name}: {count:,}" for name, count in t.links.items())
    cap = "engine default" if s.concurrency is None else f"{s.concurrency:,}"
    return [
        f"Disaggregated {report.name} on {report.gpus} GPUs "
        f"(decode cap {cap} across the decode pool)",
        "  " + _pool_line("prefill", report.prefill),
        "  " + _pool_line("decode", report.decode),
        f"  KV transfer: {t.bytes_per_request / GB:,.3f} GB per request, "
        f"{t.total_bytes / GB:,.1f} GB in all over {t.transfers:,} transfers ({links}); "
        f"on the link p50 {t.p50_transfer_s * 1e3:,.1f} ms, p99 {t.p99_transfer_s * 1e3:,.1f} ms; "
        f"link wait p99 {t.p99_link_wait_s * 1e3:,.1f} ms; link utilisation "
        f"{t.link_utilization:.1%}",
        f"  queueing before decode (KV landed -> admitted): p50 {t.decode_queue_p50_s:,.3f} s, "
        f"p99 {t.decode_queue_p99_s:,.3f} s",
        f"  serving: {s.output_throughput_tok_s:,.0f} tok/s, {s.request_throughput_req_s:,.2f} "
        f"req/s; TTFT p50 {s.ttft_p50_s:,.2f} s, p99 {s.ttft_p99_s:,.2f} s; TPOT p50 "
        f"{s.tpot_p50_s * 1e3:,.1f} ms, p99 {s.tpot_p99_s * 1e3:,.1f} ms; makespan "
        f"{s.makespan_s:,.0f} s; {s.gpu_hours_per_mtok:,.2f} GPU-h per M output tokens"
        + _dollars(s.usd_per_hour, s.usd_per_million_output_tokens),
    ]


def _gpus_text(report: DisaggregatedReport) -> str:
    """`N x gpu`, or per pool when the pools run on two GPU types."""
    pre, dec = report.prefill, report.decode
    if pre.hardware == dec.hardware:
        return f"{report.gpus} x {pre.hardware}"
    return f"{pre.gpus} x {pre.hardware} (prefill) + {dec.gpus} x {dec.hardware} (decode)"


def _dollars(per_hour: float | None, per_mtok: float | None) -> str:
    if per_hour is None:
        return ""
    mtok = "n/a" if per_mtok is None else f"${per_mtok:,.2f}"
    return f"; ${per_hour:,.2f} per hour, {mtok} per M output tokens"


def disagg_plan_view(report: DisaggPlanReport) -> RenderableType:
    """The candidates, the best split in full, the comparison and the engine settings."""
    table = Table(title="disaggregated candidates", title_justify="left")
    for head in ("split", "decode cap (pool)", "tok/s", "TTFT p99", "TPOT p99", "makespan",
                 "decode KV headroom", "preempt"):  # fmt: skip
        if head == "split":
            table.add_column(head, no_wrap=True)
        else:
            table.add_column(head, justify="right")
    for c in report.candidates:
        table.add_row(
            c.name, "default" if c.concurrency is None else f"{c.concurrency:,}",
            f"{c.output_throughput_tok_s:,.0f}", f"{c.ttft_p99_s:,.1f} s",
            f"{c.tpot_p99_s * 1e3:,.0f} ms", f"{c.makespan_s:,.0f} s",
            f"{c.decode_kv_headroom:.0%}", f"{c.preemptions:,}",
        )  # fmt: skip
    prices = ", ".join(f"{gpu} ${usd:,.2f}" for gpu, usd in report.usd_per_gpu_hour_by_type.items())
    lines = [
        f"{report.model} on {_gpus_text(report.disaggregated)}, engine {report.engine}; "
        f"workload {report.workload}, {report.num_requests:,} requests; splits ranked by "
        f"{report.ranked_by}, disaggregated vs aggregated by $ at {prices} per GPU-hour",
        f"Figures from {report.figures_from}",
    ]
    tail = [*disaggregated_lines(report.disaggregated)]
    agg = report.aggregated
    if agg is not None:
        where = (
            f"on the same {report.gpus} GPUs"
            if agg.gpus in (None, report.gpus) and agg.hardware in (None, report.hardware)
            else "compared"
        )
        on = "" if agg.hardware is None else f" on {agg.gpus} x {agg.hardware}"
        tail.append(
            f"Aggregated best {where}: {agg.layout}{on} at concurrency {agg.concurrency:,}"
            + _dollars(agg.usd_per_hour, agg.usd_per_million_output_tokens)
        )
    tail.append(f"Better here: {report.winner}")
    tail += [f"  - {reason}" for reason in report.reasons]
    tail += [f"{name}: {command}" for name, command in report.engine_settings.items()]
    return Group(Text("\n".join(lines)), table, Text("\n".join(tail)))


def disagg_sweep_view(report: DisaggSweepReport) -> RenderableType:
    """The concurrency table, the cliff and sweet spot, and the sweet spot's pools in full."""
    table = Table(title=f"{report.series.layout} across decode concurrency", title_justify="left")
    online = any(p.steady is not None for p in report.series.points)  # arrivals over time
    for head in ("concurrency", "tok/s", "TTFT p99", "TPOT p99", "decode KV peak",
                 "decode queue p99", "preempt", "makespan"):  # fmt: skip
        table.add_column(head, justify="right")
    if online:
        table.add_column("queue", justify="left")  # whether more arrived than was served
    for p, d in zip(report.series.points, report.per_point, strict=True):
        queue = [] if p.steady is None else ["grows" if p.steady.saturated else "bounded"]
        table.add_row(
            f"{p.concurrency:,}", f"{p.output_throughput_tok_s:,.0f}", f"{p.ttft_p99_s:,.2f} s",
            f"{p.tpot_p99_s * 1e3:,.1f} ms", f"{d.decode.peak_kv_utilization:.0%}",
            f"{d.kv_transfer.decode_queue_p99_s:,.2f} s", f"{p.preemptions:,}",
            f"{p.makespan_s:,.0f} s", *queue,
        )  # fmt: skip
    cliff, sweet = report.series.cliff, report.series.sweet_spot
    simulated = "none in the sweep" if cliff.simulated_concurrency is None else (
        f"{cliff.simulated_concurrency:,}"
    )  # fmt: skip
    lines = [
        f"{report.model} on {_gpus_text(report.disaggregated)}, engine {report.engine}; "
        f"workload {report.workload}, {report.num_requests:,} requests",
    ]
    tail = [
        f"Decode cliff: analytic {cliff.analytic_concurrency:,}, simulated {simulated}; sweet "
        f"spot {sweet.concurrency:,} ({sweet.objective})",
        *disaggregated_lines(report.disaggregated),
    ]
    return Group(Text("\n".join(lines)), table, Text("\n".join(tail)))


def cheapest_view(report: CheapestReport) -> RenderableType:
    """The options simulated, cheapest first, the choice and why, then the best split's
    comparison."""
    table = Table(title="options simulated, cheapest first (p99 against the SLOs)",
                  title_justify="left")  # fmt: skip
    for head in ("$/hour", "kind", "deployment", "GPUs", "meets", "TTFT / TPOT", "$/M tok"):
        table.add_column(head, no_wrap=head != "deployment")
    for t in report.tried:
        what = t.deployment or "nothing fits"
        if t.kind == "disaggregated" and t.splits > 1:
            what += f" (best of {t.splits})"
        if t.compared_only:
            what += " (comparison)"
        table.add_row(
            f"${t.usd_per_hour:,.2f}", "split" if t.kind == "disaggregated" else t.kind, what,
            f"{t.gpus:,} x {t.hardware}",
            "yes" if t.meets else "no", _pair(t.ttft_p99_s, t.tpot_p99_s),
            _usd(t.usd_per_million_output_tokens),
        )  # fmt: skip
    limits = (
        f"TTFT p99 <= {report.slo_ttft_s or 'any'} s, TPOT p99 <= {report.slo_tpot_s or 'any'} s"
    )
    prices = ", ".join(f"{gpu} ${usd:,.2f}" for gpu, usd in report.usd_per_gpu_hour.items())
    head = (
        f"{report.model} at {report.rate_per_s:g} requests/s; {limits}; $ per GPU-hour: "
        f"{prices}\nSearch: {report.search}"
    )
    verdict = (
        f"Cheapest: {report.choice}, {counted(report.gpus or 0, 'GPU')}, "
        f"${report.usd_per_hour or 0:,.2f} per hour"
        if report.choice is not None
        else "Nothing tried meets the SLOs"
    )
    tail = [verdict, *(f"  - {reason}" for reason in report.reasons)]
    parts: list[RenderableType] = [Text(head), table, Text("\n".join(tail))]
    if report.plan is not None:
        parts.append(disagg_plan_view(report.plan))
    elif report.aggregated is not None:
        a = report.aggregated
        parts.append(
            Text(
                f"Aggregated {a.layout} on {a.gpus} x {a.hardware} at concurrency "
                f"{a.concurrency:,}: {a.output_throughput_tok_s:,.0f} tok/s, TTFT p99 "
                f"{a.ttft_p99_s:,.2f} s, TPOT p99 {a.tpot_p99_s * 1e3:,.1f} ms"
                + _dollars(a.usd_per_hour, a.usd_per_million_output_tokens)
            )
        )
    return Group(*parts)


def _usd(value: float | None) -> str:
    return "-" if value is None else f"${value:,.2f}"


def _pair(ttft_s: float | None, tpot_s: float | None) -> str:
    if ttft_s is None or tpot_s is None:
        return "-"
    return f"{ttft_s:,.2f} s / {tpot_s * 1e3:,.1f} ms"
