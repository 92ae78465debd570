"""Online `capcliff plan` results: capacity per layout, load, fleet. Renders, never computes."""

from __future__ import annotations

from rich.console import Group, RenderableType
from rich.text import Text

from capcliff.analysis.plan.types import FleetEntry, PlanLayout, PlanReport
from capcliff.cli.step_text import step_text
from capcliff.cli.tables import Column, fitted_table
from capcliff.units import counted

LAYOUT_HEADERS = (
    "layout", "KV tok/rep", "cliff/rep a/s", "cap/rep", "sat rps", "rps", "tok/s", "TTFT p99",
    "TPOT p99",
)  # fmt: skip
FLEET_HEADERS = (
    "gpu", "replica", "replicas", "GPUs", "nodes", "$/GPU-h", "$/h", "$/M out tok", "± err",
    "TTFT p99", "TPOT p99",
)  # fmt: skip


def _seconds(value: float | None) -> str:
    return "-" if value is None else f"{value:,.2f} s"


def _millis(value: float | None) -> str:
    return "-" if value is None else f"{value * 1000:,.0f} ms"


def _dollars(value: float) -> str:
    """Dollars to the cent; past a billion in three figures (`--rate 1e-300` priced a million
    tokens in a 300-digit number)."""
    return f"{value:,.2f}" if value < 1e9 else f"{value:.3g}"


def _layout_cells(row: PlanLayout) -> list[str]:
    c, cliff = row.capacity, row.cliff
    assert c is not None and cliff is not None
    dp = row.dp  # the report's cliffs count every replica's requests; the table's, one's (as cap)
    simulated = (
        "-" if cliff.simulated_concurrency is None else f"{cliff.simulated_concurrency // dp:,}"
    )
    mark = "" if c.refined else "*"
    return [
        row.name + mark,
        f"{row.kv_capacity_tokens_per_replica or 0:,}",
        f"{(cliff.analytic_concurrency or 0) // dp:,}/{simulated}",
        f"{c.max_num_seqs:,}",
        f"{c.saturation_rps:,.2f}",
        "-" if c.sustained_rps is None else f"{c.sustained_rps:,.2f}",
        "-" if c.sustained_rps is None else f"{c.output_tok_s:,.0f}",  # at that rate
        _seconds(c.ttft_p99_s),
        _millis(c.tpot_p99_s),
    ]


def _fleet_cells(e: FleetEntry) -> list[str]:
    return [
        e.gpu, e.layout, f"{e.replicas:,}", f"{e.gpus:,}", f"{e.nodes:,}",
        f"{e.usd_per_gpu_hour:,.2f}", f"{e.usd_per_hour:,.2f}",
        _dollars(e.usd_per_million_output_tokens), _error(e.throughput_error),
        _seconds(e.ttft_p99_s), _millis(e.tpot_p99_s),
    ]  # fmt: skip


def fleet_basis(report: PlanReport) -> str | None:
    """The requests/s each fleet line's $ per million output tokens is costed on, where the
    user gave no rate: with no load the replicas run at their sustained rate less the headroom,
    not at the sustained rate the layouts table shows (0.14 against 0.11 $/M read from it)."""
    load = report.load
    if not report.fleet or (load is not None and load.offered_rps is not None):
        return None
    rates = ", ".join(
        f"{e.gpu} {e.served_rps:,.2f}" for e in report.fleet if e.served_rps is not None
    )
    if not rates:
        return None
    if load is not None and load.clients is not None:
        whose = "user's" if load.clients == 1 else "users'"  # "the 1 users' rate" (seed 25)
        why = f"the {load.clients:,} {whose} rate, at most what the replicas sustain"
    else:
        headroom = f"{report.headroom or 0:.0%}"
        why = f"no load given: the replicas' sustained rate less the {headroom} headroom"
    return f"fleet: $ per million output tokens at {rates} requests/s ({why})"


def _error(fraction: float | None) -> str:
    """A held-out error as a rounded percentage ('-': no validation rows)."""
    return "-" if fraction is None else f"±{fraction * 100:.0f}%"


def _rows(report: PlanReport) -> list[PlanLayout]:
    rows = [r for r in report.layouts if r.capacity is not None]

    def key(row: PlanLayout) -> tuple[bool, float, float]:
        c = row.capacity
        assert c is not None
        return (
            not c.refined,
            -(c.sustained_rps or 0.0),
            -c.saturation_rps,
        )  # first-cap rows: 0 within an SLO

    return sorted(rows, key=key)


def _target(report: PlanReport) -> str:
    if report.slo_ttft_s is None and report.slo_tpot_s is None:
        return "no SLO: capacity is the saturation rate, latencies shown at the headroom below it"
    parts = []
    if report.slo_ttft_s is not None:
        parts.append(f"TTFT p99 <= {report.slo_ttft_s:g} s")
    if report.slo_tpot_s is not None:
        parts.append(f"TPOT p99 <= {report.slo_tpot_s * 1000:g} ms")
    return "SLO " + " and ".join(parts)


def _load_text(report: PlanReport) -> str:
    load = report.load
    if load is None or (load.offered_rps is None and load.clients is None):
        return "no load given: the most each layout sustains"
    if load.offered_rps is not None:
        return f"offered {load.offered_rps:,.2f} requests/s ({load.kind})"
    assert load.clients is not None  # neither a rate nor users returned above
    return counted(load.clients, "closed-loop user")


def online_header(report: PlanReport) -> str:
    """The line above the table."""
    return (
        f"{report.model} on {report.gpus} x {report.hardware}, engine {report.engine} (policy "
        f"{report.policy}, {report.overheads} overheads). Online serving, steady state: "
        f"workload {report.workload}, {_load_text(report)}; {_target(report)}; "
        + (
            f"up to {report.simulated_requests:,} requests per simulation, "
            if report.simulated_requests
            else "nothing simulated, "
        )
        + f"max_model_len {report.max_model_len:,}; step times: {step_text(report)}"
    )


def online_lines(report: PlanReport) -> list[str]:
    """The recommendation (or why none), the load against capacity, the notes."""
    rec = report.recommended
    if rec is None:
        lines = [f"No recommendation: {report.reason}."]
        if report.fixes:
            fits = not any(row.fits for row in report.layouts)  # else: the SLO is missed
            lines += [f"What would {'fit' if fits else 'meet it'}:"]
            lines += [f"  - {fix}" for fix in report.fixes]
        return lines + [f"note: {n}" for n in report.notes]
    lines = [f"Recommended: {rec.layout}, max_num_seqs {rec.max_num_seqs:,} per replica"]
    lines += [f"  - {reason}" for reason in rec.reasons]
    load = report.load
    if load is not None and load.replicas_needed is not None and not load.saturated:
        lines.append(_load_line(report, load.sustained_rps or 0.0, load.replicas_needed))
    return lines + session_lines(report) + [f"note: {n}" for n in report.notes]


def _load_line(report: PlanReport, sustained_rps: float, replicas: int) -> str:
    """The offered load against the planned GPUs: within them, and whether with the headroom
    (else the fleet row's GPUs, which carry it with the headroom)."""
    head = f"Load: {_load_text(report)}, within these GPUs ({sustained_rps:,.2f} requests/s)"
    headroom = f"{report.headroom or 0:.0%} headroom"
    entry = next((f for f in report.fleet if f.gpu == report.hardware), None)
    if entry is None or entry.gpus <= report.gpus:
        plural = "replica carries" if replicas == 1 else "replicas carry"
        return f"{head}; {replicas:,} {plural} it with {headroom}"
    return (
        f"{head} at full load, but not with {headroom}, which takes {entry.replicas:,} x "
        f"{entry.layout} ({entry.gpus:,} GPUs)"
    )


def session_lines(report: PlanReport) -> list[str]:
    """Session workloads: capacity per replica in sessions and users, the hit rate, and what
    prefix caching and host offload are worth at the online load."""
    from capcliff.cli.render_reuse import reuse_lines

    s = report.sessions
    if s is None:
        return reuse_lines(report)
    hit = "-" if s.prefix_cache_hit_rate is None else f"{s.prefix_cache_hit_rate:.0%}"
    return [
        f"Sessions: one replica carries {s.sessions_per_s:,.3f} sessions/s "
        f"({s.requests_per_session:.2f} requests each); at its operating load "
        f"{s.users:,.1f} users send {s.users_rps:,.2f} requests/s (a {s.cycle_s:.2f} s cycle "
        f"per request: think {s.mean_think_s:.2f} s + end to end "
        f"{s.cycle_s - s.mean_think_s:.2f} s); at the load: prefix-cache hit {hit}, "
        f"{counted(s.preemptions, 'preemption')}",
        *reuse_lines(report),
    ]


# Columns left out first when a table is wider than the terminal (the JSON keeps them all).
LAYOUT_DROPPABLE = ("KV tok/rep", "tok/s", "sat rps", "cliff/rep a/s")
FLEET_DROPPABLE = ("$/GPU-h", "nodes", "TTFT p99", "TPOT p99", "$/h")


def _table(
    title: str, headers: tuple[str, ...], rows: list[list[str]], droppable: tuple[str, ...]
) -> RenderableType:
    """Never a cut number: columns dropped, then one figure per line, when it is too wide."""
    columns = [Column(h, justify="left" if i == 0 else "right") for i, h in enumerate(headers)]
    return fitted_table(title, columns, rows, droppable=droppable)


def online_view(report: PlanReport) -> RenderableType:
    """The online `capcliff plan` screen."""
    parts: list[RenderableType] = [Text(online_header(report))]
    if rows := _rows(report):
        parts.append(
            _table(
                "Layouts by sustained requests/s (cliff and cap per replica; * first cap only)",
                LAYOUT_HEADERS, [_layout_cells(r) for r in rows], LAYOUT_DROPPABLE,
            )
        )  # fmt: skip
    left = [f"{r.name}: {r.reason}" for r in report.layouts if not r.fits]
    if left:
        parts.append(Text("left out:\n  " + "\n  ".join(left), style="dim"))
    if report.fleet:
        parts.append(
            _table("Fleet per GPU type, cheapest first", FLEET_HEADERS,
                   [_fleet_cells(e) for e in report.fleet], FLEET_DROPPABLE)
        )  # fmt: skip
        if (basis := fleet_basis(report)) is not None:
            parts.append(Text(basis))
    parts.append(Text("\n".join(online_lines(report)), style="bold"))
    for engine, command in report.engine_flags.items():
        parts.append(Text(f"{engine}: {command}"))
    for warning in report.flag_warnings:
        parts.append(Text(f"warning: {warning}", style="yellow"))
    return Group(*parts)


def _markdown_table(headers: tuple[str, ...], rows: list[list[str]]) -> list[str]:
    out = ["| " + " | ".join(headers) + " |"]
    out.append("|" + "|".join("---" if i == 0 else "---:" for i in range(len(headers))) + "|")
    return out + ["| " + " | ".join(cells) + " |" for cells in rows] + [""]


def online_markdown(report: PlanReport) -> str:
    """The same as a Markdown document."""
    out = [f"### capcliff plan (online): {report.model}", "", online_header(report), ""]
    if rows := _rows(report):
        out += _markdown_table(LAYOUT_HEADERS, [_layout_cells(r) for r in rows])
    if report.fleet:
        out += _markdown_table(FLEET_HEADERS, [_fleet_cells(e) for e in report.fleet])
        if (basis := fleet_basis(report)) is not None:
            out += [basis, ""]
    out += [*online_lines(report), ""]
    for engine, command in report.engine_flags.items():
        out += [f"{engine}:", "", "```bash", command, "```", ""]
    out += [f"> warning: {w}" for w in report.flag_warnings]
    return "\n".join(out).rstrip() + "\n"
