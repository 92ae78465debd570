"""Results to terminal tables and JSON. Knows only result types, never computes."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from pydantic import BaseModel
from pydantic_core import PydanticSerializationError, to_json
from rich.console import Console, Group, RenderableType
from rich.text import Text

from capcliff.catalog.specs import HardwareSpec, ModelCard
from capcliff.cli.step_text import step_text
from capcliff.cli.tables import Column, fitted_table
from capcliff.memory.report import LayoutResult, MemoryReport
from capcliff.units import GB, GIB, format_bytes

if TYPE_CHECKING:  # the simulator stack loads only for the commands that render it
    from capcliff.analysis.sweep.report import (
        LeftOut,
        PointResult,
        SeriesResult,
        SweepNoFit,
        SweepReport,
    )
    from capcliff.analysis.sweep.speculation_gain import SpeculationGain

# Columns of piped output when $COLUMNS is not set: wide enough that nothing wraps (tables do not
# stretch to it; they take the width their cells need).
PIPE_WIDTH = 4096


def report_json(report: BaseModel) -> str:
    """A report as indented JSON. A path whose bytes are not UTF-8 (a Linux folder name such as
    b"\\xffm", which Python holds as the lone surrogate U+DCFF) cannot be encoded by pydantic's
    serializer, and `--format json` failed with an internal error after the work was done; such a
    name is written with the byte escaped (`\\xffm`, as Python prints the bytes)."""
    try:
        return report.model_dump_json(indent=2)
    except PydanticSerializationError:
        data = _escaped_bytes(report.model_dump(mode="json"))
        return to_json(data, indent=2).decode()


def _escaped_bytes(value: object) -> object:
    """`value` with every string's undecodable bytes (surrogate escapes) as `\\xNN` text."""
    if isinstance(value, str):
        try:
            raw = value.encode("utf-8", "surrogateescape")
        except UnicodeEncodeError:  # a surrogate no byte escape made: its code point as text
            return value.encode("utf-8", "backslashreplace").decode("utf-8")
        return raw.decode("utf-8", "backslashreplace")
    if isinstance(value, dict):
        return {_escaped_bytes(k): _escaped_bytes(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_escaped_bytes(v) for v in value]
    return value


def _gb(n_bytes: int | None) -> str:
    return "-" if n_bytes is None else f"{n_bytes / GB:,.1f}"


def _count(n: int | None) -> str:
    return "-" if n is None else f"{n:,}"


def _params(n: int) -> str:
    return f"{n / 1e9:,.2f}B"


def memory_header(report: MemoryReport) -> Text:
    """The lines above the layout table: model, hardware, totals."""
    lines = [
        f"{report.model} on {report.gpus} x {report.hardware}, engine {report.engine}  "
        f"(weights {report.weight_dtype}, KV {report.kv_dtype}, "
        f"max_model_len {report.max_model_len:,})",
        f"parameters: {_params(report.params_total)} total, {_params(report.params_active)} active"
        + (
            f" (published {_params(report.published_params_total)})"
            if report.published_params_total
            else ""
        ),
        f"weights: {format_bytes(report.weights_bytes_total)} in all"
        + (
            f"; checkpoint files {format_bytes(report.checkpoint_bytes)} (safetensors headers)"
            if report.checkpoint_bytes
            else ""
        ),
        f"KV cache: {report.kv_bytes_per_token:,} bytes per token (all layers, whole model)",
    ]
    return Text("\n".join(lines))


def memory_table(layouts: Iterable[LayoutResult], *, max_model_len: int) -> RenderableType:
    """One row per valid layout: weights, KV cost and capacity, fit."""
    columns = [
        Column("layout", "left"), Column("weights GB/GPU"), Column("KV B/tok/GPU"),
        Column("KV tok/replica"), Column("KV tok total"), Column(f"conc/rep@{max_model_len:,}"),
        Column("fits", "left"),
    ]  # fmt: skip
    rows = [
        [
            lay.name,
            _gb(lay.weights_bytes_per_gpu),
            _count(lay.kv_bytes_per_token_per_gpu),
            _count(lay.kv_capacity_tokens_per_replica),
            _count(lay.kv_capacity_tokens_total),
            _count(lay.max_concurrency_at_max_model_len),
            "yes" if lay.fits else "no",
        ]
        for lay in layouts
    ]
    title = "Memory per layout (GB = 10^9 bytes; capacity in tokens)"
    return fitted_table(title, columns, rows, droppable=("KV B/tok/GPU", "KV tok total"))


def _gib(n_bytes: int) -> str:
    return f"{n_bytes / GIB:,.2f}"


def _loss_text(loss: float) -> str:
    """The worst throughput loss past the sweet spot (a fraction), as printed: "none" where it
    prints as 0 % or less (online, the sweet spot is the smallest cap within a tolerance of the
    most tokens/s, so a point past it may hold more: a loss below 0, never "-0%")."""
    percent = round(loss * 100)
    return f"up to {percent}%" if percent > 0 else "none"


def budget_table(lay: LayoutResult, engine: str) -> RenderableType:
    """Where one GPU's memory goes under the engine's rule, term by term (the fullest stage)."""
    stage = max(lay.stages, key=lambda s: s.weights_bytes)
    rows = [
        ["device total", _gib(stage.total_memory_bytes), "", "driver (or --gpu-total-memory)"],
        ["budget", _gib(stage.usable_bytes), "", "what the engine lets weights + KV use"],
    ]
    rows += [
        [f"  - {term.name}", _gib(term.bytes), term.provenance, term.source]
        for term in stage.terms
        if term.inside_budget
    ]
    kv_source = (
        f"none: the terms above overrun the budget by {_gib(stage.kv_shortfall_bytes)} GiB"
        if stage.kv_shortfall_bytes
        else f"{stage.kv_blocks:,} blocks x {stage.block_size} tokens x "
        f"{stage.kv_bytes_per_token:,} B/token"
    )
    rows.append(["= KV cache", _gib(stage.kv_bytes), "", kv_source])
    rows += [
        [f"outside: {term.name}", _gib(term.bytes), term.provenance, term.source]
        for term in stage.terms
        if not term.inside_budget
    ]
    headroom_source = (
        f"none: budget + outside overrun the device by {_gib(stage.headroom_shortfall_bytes)} GiB"
        if stage.headroom_shortfall_bytes
        else "total - budget - outside"
    )
    rows.append(["headroom outside", _gib(stage.headroom_bytes), "", headroom_source])
    columns = [
        Column("term", "left"), Column("GiB"), Column("label", "left"),
        Column("source", "left", prose=True),
    ]  # fmt: skip
    title = f"{engine} budget per GPU, {lay.name} (GiB = 2^30 bytes)"
    return fitted_table(title, columns, rows, droppable=("label",))


def _fixes(lay: LayoutResult, report: MemoryReport) -> str:
    """What would make a layout that fails the one-request check start."""
    if lay.weights_bytes_per_gpu is None or not lay.largest_max_model_len:
        return ""
    fixes = [f"--max-model-len {lay.largest_max_model_len}"]
    if lay.utilization_needed is not None:
        fixes.append(f"--gpu-memory-utilization {lay.utilization_needed:.2f}")
    if report.fitting_layouts:
        fixes.append("layouts " + ", ".join(report.fitting_layouts[:4]))
    return "\n    fits with: " + "; or ".join(fixes)


def memory_view(report: MemoryReport) -> RenderableType:
    """The full `capcliff memory` screen: header, table, reasons, warnings, invalid layouts."""
    valid = [lay for lay in report.layouts if lay.valid]
    parts: list[RenderableType] = [memory_header(report)]
    if valid:
        parts.append(memory_table(valid, max_model_len=report.max_model_len))
        # a layout that fits first (the most KV); where none fits, the one nearest to fitting
        # (the smallest overrun of its fullest stage)
        best = max(
            valid,
            key=lambda lay: (
                lay.fits,
                lay.kv_capacity_tokens_total or 0,
                -max(s.kv_shortfall_bytes for s in lay.stages),
            ),
        )
        parts.append(budget_table(best, report.engine))
    notes = [f"{lay.name}: {lay.reason}{_fixes(lay, report)}" for lay in valid if lay.reason]
    notes += [f"{lay.name}: {w}" for lay in valid for w in lay.warnings]
    if notes:
        parts.append(Text("\n".join(notes)))
    if report.verdict:
        parts.append(Text(report.verdict, style="bold"))
    invalid = [f"{lay.name}: {lay.reason}" for lay in report.layouts if not lay.valid]
    if invalid:
        parts.append(Text("invalid layouts:\n  " + "\n  ".join(invalid), style="dim"))
    return Group(*parts)


def models_table(cards: Iterable[ModelCard]) -> RenderableType:
    """The model catalog."""
    columns = [
        Column("id", "left"), Column("weights", "left"), Column("published total"),
        Column("active"), Column("HF repo", "left", prose=True),
    ]  # fmt: skip
    rows = []
    for card in cards:
        pub = card.published_params
        rows.append(
            [
                card.id,
                card.native_dtype.value,
                _params(pub.total) if pub else "-",
                _params(pub.active) if pub and pub.active else "-",
                card.hf_repo,
            ]
        )
    return fitted_table("Model cards", columns, rows, droppable=("weights",))


def hardware_table(specs: Iterable[HardwareSpec]) -> RenderableType:
    """The hardware catalog."""
    columns = [Column("id", "left"), Column("name", "left", prose=True)] + [
        Column(h) for h in ("HBM GB", "driver GiB", "TB/s", "BF16 TF", "FP8 TF", "GPUs/node")
    ]
    rows = [
        [
            spec.id,
            spec.name,
            f"{spec.hbm_nominal_gb:g}",
            f"{spec.hbm_driver_mib / 1024:.2f}",
            f"{spec.hbm_bandwidth_tb_s:g}",
            f"{spec.dense_tflops_bf16:g}",
            f"{spec.dense_tflops_fp8:g}",
            str(spec.gpus_per_node),
        ]
        for spec in specs
    ]
    return fitted_table("Hardware", columns, rows, droppable=("HBM GB", "name"))


def make_console(width: int | None = None) -> Console:
    """A console for command output: `width` columns, else the terminal's (or $COLUMNS); piped
    with no $COLUMNS, as wide as the output needs (tables take their natural width)."""
    import os

    console = Console(width=width, soft_wrap=False, highlight=False)
    if width is None and not console.is_terminal and not os.environ.get("COLUMNS", "").isdigit():
        console.width = PIPE_WIDTH
    return console


def _bar(value: float, top: float, width: int = 10) -> str:
    filled = round(width * value / top) if top > 0 else 0
    return "█" * filled + "·" * (width - filled)


def _marks(point: PointResult, series: SeriesResult) -> str:
    marks = []
    if point.concurrency == series.sweet_spot.concurrency:
        marks.append("sweet")
    if point.concurrency == series.cliff.simulated_concurrency:
        marks.append("cliff")
    return "+".join(marks)


def _secs(value: float) -> str:
    return f"{value:,.0f}" if value >= 100 else f"{value:.1f}"


def _steady_marks(point: PointResult, series: SeriesResult) -> str:
    steady = point.steady
    assert steady is not None
    marks = [_marks(point, series)] if _marks(point, series) else []
    if steady.saturated:
        marks.append("saturated")
    elif not steady.settled:
        marks.append("unsettled")
    return "+".join(marks)


def _pm(half_width: float | None) -> str:
    """' ±6%': a figure's relative 95 % sampling half-width, when estimated."""
    return "" if half_width is None else f" ±{half_width:.0%}"


def online_series_table(series: SeriesResult) -> RenderableType:
    """One online series: each point's steady state (warm-up and drain left out), the sample it
    came from (the stopping rule may grow it per point), and whether its queue grows."""
    title = (
        f"{series.layout}, {series.output_tokens_label}: {series.kv_blocks_per_replica:,} blocks "
        f"x {series.block_size} per replica (steady state; requests: the sample of each point"
        f"{_conc_note(series)})"
    )
    heads = ["conc", "req/s", "tok/s", "TTFT p99 s", "TPOT p99 ms", "preempt", "KV peak"]
    caching = any(p.prefix_cache_hit_rate is not None for p in series.points)
    heads += ["requests", *(["hit"] if caching else [])]
    columns = [Column(h) for h in heads] + [Column("mark", "left")]
    rows = []
    for p in series.points:
        st = p.steady
        assert st is not None
        rows.append([
            f"{p.concurrency:,}", f"{st.throughput_rps:,.2f}", f"{st.output_tok_s:,.0f}",
            _secs(st.ttft_p99_s), f"{st.tpot_p99_s * 1000:.1f}{_pm(st.tpot_p99_half_width)}",
            f"{p.preemptions:,}",
            f"{p.peak_kv_utilization:.0%}", f"{st.requests:,}",
            *([f"{p.prefix_cache_hit_rate or 0.0:.0%}"] if caching else []),
            _steady_marks(p, series),
        ])  # fmt: skip
    return fitted_table(title, columns, rows, droppable=("requests",))


def _conc_note(series: SeriesResult) -> str:
    """Where a layout has several DP replicas: that `conc` counts them all, so that the cap
    `plan` prints per replica is not typed into a sweep as the total (2026-12-08, h-user3:
    Qwen3-32B dp2-tp4 at `plan`'s max_num_seqs 166 swept as `--concurrency 166` ran 83 a
    replica, TTFT p99 28 s against the plan's 0.09 s)."""
    if series.dp <= 1:
        return ""
    return f"; conc: all {series.dp} replicas together, conc / {series.dp} each"


def series_table(series: SeriesResult) -> RenderableType:
    """One series: throughput (with a bar), latency percentiles, preemptions, peak KV, marks."""
    if series.points and all(p.steady is not None for p in series.points):
        return online_series_table(series)
    title = (
        f"{series.layout}, {series.output_tokens_label}: {series.kv_blocks_per_replica:,} blocks "
        f"x {series.block_size} per replica (latencies p50/p99{_conc_note(series)})"
    )
    columns = [Column("conc"), Column("tok/s"), Column("tok/s bar", "left")]
    columns += [Column(h) for h in ("TTFT s", "TPOT ms", "makespan s", "preempt", "KV peak")]
    caching = any(p.prefix_cache_hit_rate is not None for p in series.points)
    if caching:
        columns.append(Column("hit"))
    columns.append(Column("mark", "left"))
    top = max((p.output_throughput_tok_s for p in series.points), default=0.0)
    rows = [
        [
            f"{p.concurrency:,}",
            f"{p.output_throughput_tok_s:,.0f}",
            _bar(p.output_throughput_tok_s, top),
            f"{_secs(p.ttft_p50_s)}/{_secs(p.ttft_p99_s)}",
            f"{p.tpot_p50_s * 1000:.1f}/{p.tpot_p99_s * 1000:.1f}",
            _secs(p.makespan_s),
            f"{p.preemptions:,}",
            f"{p.peak_kv_utilization:.0%}",
            *([f"{p.prefix_cache_hit_rate or 0.0:.0%}"] if caching else []),
            _marks(p, series),
        ]
        for p in series.points
    ]
    return fitted_table(title, columns, rows, droppable=("tok/s bar", "makespan s"))


# Which cliff a sweep's simulated one is, by its arrival mode (the three cliffs of docs/serving.md:
# the analytic p99 cliff, the burst cliff a backlog or restart hits, the steady-state one).
_SIMULATED_CLIFF = {
    "batch": (
        "burst cliff (simulated: every request waiting at t = 0, as after a restart or a burst)"
    ),
    "online": (
        "steady-state cliff (simulated while serving the offered load; a restart or a burst "
        "hits the lower burst cliff: `capcliff plan` names both)"
    ),
}


def series_summary(series: SeriesResult, mode: str = "batch") -> Text:
    """The cliffs, the sweet spot and the collapse of one series in words."""
    simulated = series.cliff.simulated_concurrency
    analytic = series.cliff.analytic_concurrency
    # the concurrency is the sweep's, over every replica: with several, each replica's share is
    # said beside the per-replica blocks (2026-12-07, h-user2: "168 concurrent requests (... vs
    # 45,178 blocks per replica)" for dp4-tp2, where one replica holds 42)
    over = f" over {series.dp} replicas, {analytic // series.dp:,} each" if series.dp > 1 else ""
    lines = [
        f"analytic p99 cliff: {analytic:,} concurrent requests{over} (every running request at "
        f"the p99 peak KV, vs {series.kv_blocks_per_replica:,} blocks per replica)",
        _SIMULATED_CLIFF.get(mode, _SIMULATED_CLIFF["batch"])
        + ": "
        + (
            f"{simulated:,} (first preemption or blocked admission)" if simulated else "not reached"
        ),
        f"sweet spot: {series.sweet_spot.concurrency:,} ({series.sweet_spot.objective}); "
        f"throughput lost past it: {_loss_text(series.sweet_spot.collapse_worst_loss)}",
    ]
    worst = [p for p in series.points if p.past_cliff is not None]
    if worst:  # the most loaded point past the cliff says how the engine fails
        point = worst[-1]
        assert point.past_cliff is not None
        lines.append(f"past the cliff ({point.concurrency:,}): {point.past_cliff.statement()}")
    if series.speculation is not None:
        lines.append(speculation_text(series.speculation))
    return Text("\n".join(lines))


def speculation_text(gain: SpeculationGain) -> str:
    """Where speculation stops paying, against the same points simulated without it."""
    spec = f"{gain.method}:{gain.num_speculative_tokens}, E {gain.tokens_per_step:.2f}"
    by_c = {p.concurrency: p for p in gain.points}

    def at(c: int) -> str:
        p = by_c[c]
        return f"{c:,} (output tok/s {p.throughput_gain:+.0%}, per user {p.per_user_gain:+.0%})"

    if gain.loses_from is None:
        assert gain.pays_up_to is not None
        verdict = f"pays at every swept concurrency, up to {at(gain.pays_up_to)}"
    elif gain.pays_up_to is None:
        verdict = f"loses at every swept concurrency, from {at(gain.loses_from)}"
    else:
        verdict = f"pays up to {at(gain.pays_up_to)}; loses from {at(gain.loses_from)} on"
    return (
        f"speculation ({spec}): {verdict}; against the same {gain.extra_points} points "
        "simulated without it"
    )


def sweep_view(report: SweepReport) -> RenderableType:
    """The full `capcliff sweep` screen."""
    header = Text(
        f"{report.model} on {report.gpus} x {report.hardware}, engine {report.engine} "
        f"({report.overheads} overheads), policy {report.policy}; workload {report.workload}, "
        f"{report.num_requests:,} requests, seed {report.seed}; step times: {step_text(report)}"
    )
    parts: list[RenderableType] = [header]
    for series in report.series:
        parts += [series_table(series), series_summary(series, report.mode)]
    if report.left_out:
        parts.append(Text(_left_out_text(report.left_out), style="dim"))
    return Group(*parts)


def _left_out_text(left_out: Iterable[LeftOut]) -> str:
    return "left out:\n  " + "\n  ".join(f"{out.layout}: {out.reason}" for out in left_out)


def no_fit_view(answer: SweepNoFit) -> RenderableType:
    """`capcliff sweep` where no layout fits: each layout's reason and what would fit."""
    header = (
        f"{answer.model} on {answer.gpus} x {answer.hardware}, engine {answer.engine} "
        f"({answer.overheads} overheads), weights {answer.weight_dtype}, KV cache "
        f"{answer.kv_dtype}, max_model_len {answer.max_model_len:,}"
    )
    fixes = "\n".join(["Nothing fits. What would:", *[f"  - {fix}" for fix in answer.fixes]])
    return Group(
        Text(header), Text(_left_out_text(answer.left_out), style="dim"), Text(fixes, style="bold")
    )


def no_fit_line(answer: SweepNoFit) -> str:
    """The same answer on one line (beside a CSV that has no rows)."""
    why = "; ".join(f"{out.layout}: {out.reason}" for out in answer.left_out)
    return f"nothing fits ({why}); what would: {'; '.join(answer.fixes)}"


def _point_columns() -> tuple[list[str], list[str]]:
    """A point's own columns and its steady state's (empty cells in a batch sweep)."""
    from capcliff.analysis.evaluate.steady_point import SteadyPoint
    from capcliff.analysis.sweep.report import PointResult

    fields = [f for f in PointResult.model_fields if f not in ("offload", "steady")]
    return fields, [f"steady_{k}" for k in SteadyPoint.model_fields]


def _csv_columns(tier_cols: Iterable[tuple[str, str]]) -> list[str]:
    fields, steady = _point_columns()
    return ["layout", "output_tokens", *fields, *steady, *(f"{t}_{k}" for t, k in tier_cols)]


def sweep_csv_header() -> str:
    """A sweep CSV's column names with no rows (no offload tier columns): nothing was swept."""
    return ",".join(_csv_columns(())) + "\n"


def sweep_csv(report: SweepReport) -> str:
    """One row per (series, concurrency)."""
    import csv
    import io

    buffer = io.StringIO()
    fields, steady = _point_columns()
    # offload tiers flattened: one column per tier and figure (cpu_hit_rate, nvme_read_bytes ...)
    first = next((p.offload for s in report.series for p in s.points), [])
    tier_cols = [(t.tier, k) for t in first for k in type(t).model_fields if k != "tier"]
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(_csv_columns(tier_cols))
    for series in report.series:
        for point in series.points:
            row = point.model_dump()
            tiers = {t.tier: t.model_dump() for t in point.offload}
            state = row["steady"] or {}
            cells = [row[f] for f in fields] + [state.get(k[7:], "") for k in steady]
            cells += [tiers.get(t, {}).get(k, "") for t, k in tier_cols]
            writer.writerow([series.layout, series.output_tokens_label, *cells])
    return buffer.getvalue()


def sweep_figure_bytes(report: SweepReport, fmt: str) -> bytes:
    """Throughput, TTFT and TPOT against concurrency (cliff and sweet spot marked) and KV
    utilisation over time, as PNG or SVG bytes. Needs matplotlib (`pip install capcliff[plot]`)."""
    import io

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(2, 2, figsize=(11, 7))
    for series in report.series:
        label = f"{series.layout} {series.output_tokens_label}"
        xs = [p.concurrency for p in series.points]
        for ax, values in (
            (axes[0][0], [p.output_throughput_tok_s for p in series.points]),
            (axes[0][1], [p.ttft_p99_s for p in series.points]),
            (axes[1][0], [p.tpot_p99_s * 1000 for p in series.points]),
        ):
            ax.plot(xs, values, marker="o", label=label)
            ax.axvline(series.sweet_spot.concurrency, linestyle=":", color="green")
            if series.cliff.simulated_concurrency:
                ax.axvline(series.cliff.simulated_concurrency, linestyle="--", color="red")
        for name, samples in series.kv_over_time.items():
            axes[1][1].plot([t for t, _ in samples], [u for _, u in samples], label=name)
    titles = ("output tok/s", "TTFT p99 (s)", "TPOT p99 (ms)", "KV utilisation over time")
    for ax, title in zip((axes[0][0], axes[0][1], axes[1][0], axes[1][1]), titles, strict=True):
        ax.set_title(title)
        ax.legend(fontsize=7)
    for ax in (axes[0][0], axes[0][1], axes[1][0]):
        ax.set_xscale("log", base=2)
        ax.set_xlabel("concurrency (green: sweet spot, red: simulated cliff)")
    axes[1][1].set_xlabel("time (s)")
    fig.tight_layout()
    buffer = io.BytesIO()
    fig.savefig(buffer, format=fmt)
    plt.close(fig)
    return buffer.getvalue()
