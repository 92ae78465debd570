"""`capcliff plan --plot`: each layout's climb to the cliff and its latency against load."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from capcliff.analysis.plan.types import LayoutCapacity, PlanReport

if TYPE_CHECKING:
    from matplotlib.axes import Axes


def _climb(ax: Axes, name: str, c: LayoutCapacity, recommended_cap: int | None) -> Any:
    """Saturation rate against the cap; x where KV first ran short, a ring at the cap chosen."""
    line = ax.plot([p.max_num_seqs for p in c.caps], [p.saturation_rps for p in c.caps],
                   marker="o", label=name)[0]  # fmt: skip
    color = line.get_color()
    short = next((p for p in c.caps if p.kv_ran_short), None)
    if short is not None:
        ax.plot([short.max_num_seqs], [short.saturation_rps], "x", color="red", ms=10)
    at = next((p for p in c.caps if p.max_num_seqs == recommended_cap), None)
    if at is not None:
        ax.plot([at.max_num_seqs], [at.saturation_rps], "o", ms=14, mfc="none", color=color)
    return color


def _latency(ttft: Axes, tpot: Axes, name: str, c: LayoutCapacity, color: Any) -> None:
    """TTFT and TPOT p99 at each offered rate the search ran; the sustained rate dotted."""
    points = sorted(c.load_curve, key=lambda p: p.offered_rps)
    rates = [p.offered_rps for p in points]
    ttft.plot(rates, [p.ttft_p99_s for p in points], ".", color=color, label=name)
    tpot.plot(rates, [p.tpot_p99_s * 1000 for p in points], ".", color=color, label=name)
    if c.sustained_rps:
        for ax in (ttft, tpot):
            ax.axvline(c.sustained_rps, linestyle=":", color=color)


def plan_figure_bytes(report: PlanReport, fmt: str) -> bytes:
    """Four panels, one line per searched layout, as PNG or SVG bytes: the saturation rate
    against the cap per replica, TTFT p99 and TPOT p99 against the offered rate (SLO lines
    dashed), and the sustained rate of every layout. Needs matplotlib."""
    import io

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(2, 2, figsize=(12, 8))
    (sat, bars), (ttft, tpot) = (axes[0][0], axes[0][1]), (axes[1][0], axes[1][1])
    rec = report.recommended
    rows = [(row.name, row.capacity) for row in report.layouts if row.capacity is not None]
    for name, c in rows:
        if c.refined:
            cap = rec.max_num_seqs if rec is not None and rec.layout == name else None
            _latency(ttft, tpot, name, c, _climb(sat, name, c, cap))
    for ax, slo, scale in ((ttft, report.slo_ttft_s, 1), (tpot, report.slo_tpot_s, 1000)):
        if slo is not None:
            ax.axhline(slo * scale, linestyle="--", color="black", label="SLO")
    colors = ["tab:green" if rec and name == rec.layout else "tab:gray" for name, _ in rows]
    bars.barh([n for n, _ in rows], [c.sustained_rps or 0.0 for _, c in rows], color=colors)
    sat.set_xscale("log", base=2)
    sat.set_xlabel("max_num_seqs per replica (x: KV ran short; ring: recommended)")
    sat.set_ylabel("requests/s with a backlog")
    # without an SLO the plan searches no offered rates (every load curve empty): a log axis of
    # no data is an error in matplotlib, so the panels say why they are empty instead
    curves = any(c.refined and c.load_curve for _, c in rows)
    for ax, label in ((ttft, "TTFT p99 (s)"), (tpot, "TPOT p99 (ms)")):
        ax.set_xlabel("offered requests/s (dotted: sustained within the SLO)")
        ax.set_ylabel(label)
        if curves:
            ax.set_yscale("log")
        else:
            ax.text(0.5, 0.5, "no latency search: no SLO given (--slo-ttft, --slo-tpot)",
                    ha="center", va="center", transform=ax.transAxes, fontsize=8)  # fmt: skip
    bars.set_xlabel("sustained requests/s within the SLO (green: recommended)")
    for ax in (sat, ttft, tpot):
        if ax.get_legend_handles_labels()[0]:  # no labelled line: no legend (nor its warning)
            ax.legend(fontsize=7)
    fig.suptitle(f"{report.model} on {report.gpus} x {report.hardware}: {report.workload}")
    fig.tight_layout()
    buffer = io.BytesIO()
    fig.savefig(buffer, format=fmt)
    plt.close(fig)
    return buffer.getvalue()
