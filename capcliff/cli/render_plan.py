"""`capcliff plan` results as a terminal screen or a Markdown summary. Renders, never computes."""

from __future__ import annotations

from rich.console import Group, RenderableType
from rich.text import Text

from capcliff.analysis.plan.types import PlanLayout, PlanReport
from capcliff.cli.step_text import step_text
from capcliff.cli.tables import Column, fitted_table
from capcliff.units import GB

HEADERS = (
    "layout", "GB/GPU", "KV tok/rep", "cliff a/s", "best conc", "tok/s", "TTFT p99",
    "TPOT p99", "makespan",
)  # fmt: skip


def _cells(row: PlanLayout) -> list[str]:
    s, c = row.sweet_spot, row.cliff
    assert s is not None and c is not None
    simulated = "-" if c.simulated_concurrency is None else f"{c.simulated_concurrency:,}"
    return [
        row.name,
        f"{(row.weights_bytes_per_gpu or 0) / GB:,.1f}",
        f"{row.kv_capacity_tokens_per_replica or 0:,}",
        f"{c.analytic_concurrency or 0:,}/{simulated}",
        f"{s.concurrency:,}",
        f"{s.output_throughput_tok_s:,.0f}",
        f"{s.ttft_p99_s:,.1f} s",
        f"{s.tpot_p99_s * 1000:,.0f} ms",
        f"{s.makespan_s:,.0f} s",
    ]


def _ranked(report: PlanReport) -> list[PlanLayout]:
    rows = [r for r in report.layouts if r.sweet_spot is not None]
    if report.objective == "goodput":
        return sorted(rows, key=lambda r: -(r.sweet_spot.goodput_req_s if r.sweet_spot else 0))
    return sorted(rows, key=lambda r: r.sweet_spot.makespan_s if r.sweet_spot else 0)


def _header(report: PlanReport) -> str:
    return (
        f"{report.model} on {report.gpus} x {report.hardware}, engine {report.engine} (policy "
        f"{report.policy}, {report.overheads} overheads); workload {report.workload}, "
        f"{report.num_requests:,} requests at t = 0 (offline batch), max_model_len "
        f"{report.max_model_len:,}; "
        f"ranked by {report.objective}; step times: {step_text(report)}"
    )


def _left_out(report: PlanReport) -> list[str]:
    return [f"{r.name}: {r.reason}" for r in report.layouts if not r.fits]


def _recommendation_lines(report: PlanReport) -> list[str]:
    rec = report.recommended
    if rec is None:
        return ["Nothing fits. What would:", *[f"  - {fix}" for fix in report.fixes]]
    lines = [f"Recommended: {rec.layout}, max_num_seqs {rec.max_num_seqs:,} per replica"]
    lines += [f"  - {reason}" for reason in rec.reasons]
    if rec.kv_aware_gain is not None and rec.kv_aware_makespan_s is not None:
        gain, makespan = rec.kv_aware_gain, rec.kv_aware_makespan_s
        # by the printed percent, so that a gain of 0 (or under 0.5 %) never reads "-0% longer"
        percent = round(gain * 100)
        verdict = (
            f"would gain {percent}% (makespan {makespan:,.0f} s)" if percent > 0
            else f"would not help: makespan {makespan:,.0f} s, {-percent}% longer" if percent < 0
            else f"would not change the makespan ({makespan:,.0f} s)"
        )  # fmt: skip
        lines.append(f"  - KV-aware admission {verdict}")
    from capcliff.cli.render_reuse import reuse_lines

    return lines + reuse_lines(report)


def plan_view(report: PlanReport) -> RenderableType:
    """The `capcliff plan` screen: ranking, layouts left out, recommendation, flags."""
    if report.mode == "online":
        from capcliff.cli.render_serving import online_view

        return online_view(report)
    parts: list[RenderableType] = [Text(_header(report))]
    rows = _ranked(report)
    if rows:
        columns = [Column(h, "left" if h == "layout" else "right") for h in HEADERS]
        title = "Layouts by the objective (cliff: analytic/simulated concurrency)"
        parts.append(
            fitted_table(
                title, columns, [_cells(r) for r in rows], droppable=("GB/GPU", "TPOT p99")
            )
        )
    if left := _left_out(report):
        parts.append(Text("left out:\n  " + "\n  ".join(left), style="dim"))
    parts.append(Text("\n".join(_recommendation_lines(report)), style="bold"))
    for engine, command in report.engine_flags.items():
        # The command on lines of its own, never wrapped: it pastes into a shell as printed.
        parts.append(Text(f"{engine}:"))
        parts.append(Text(command, no_wrap=True, overflow="ignore"))
    for warning in report.flag_warnings:
        parts.append(Text(f"warning: {warning}", style="yellow"))
    return Group(*parts)


def plan_markdown(report: PlanReport) -> str:
    """The same as a Markdown document (a pull-request comment)."""
    if report.mode == "online":
        from capcliff.cli.render_serving import online_markdown

        return online_markdown(report)
    out = [f"### capcliff plan: {report.model}", "", _header(report), ""]
    rows = _ranked(report)
    if rows:
        out.append("| " + " | ".join(HEADERS) + " |")
        out.append("|" + "|".join("---" if h == "layout" else "---:" for h in HEADERS) + "|")
        out += ["| " + " | ".join(_cells(row)) + " |" for row in rows]
        out.append("")
    out += [f"- {line}" for line in _left_out(report)]
    out += ["", *(_recommendation_lines(report)), ""]
    for engine, command in report.engine_flags.items():
        out += [f"{engine}:", "", "```bash", command, "```", ""]
    out += [f"> warning: {w}" for w in report.flag_warnings]
    return "\n".join(out).rstrip() + "\n"
