"""The per-run table and JSON every benchmark fit prints: measured, modeled and calibrated."""

from __future__ import annotations

from capcliff.analysis.sweep.step_fit import PointFit, Timings


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{value * 100:+.1f} %"


POINT_TABLE_HEADER = (
    "| row | clients | isl/osl | output tok/s | modeled | calibrated | TPOT ms | modeled | "
    "calibrated | TTFT ms | modeled | calibrated |",
    "|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
)


def point_row(p: PointFit) -> str:
    """One run's row of the table: measured, then modeled and calibrated with their errors."""
    b = p.point
    measured_tp = "-" if b.output_throughput_tok_s is None else f"{b.output_throughput_tok_s:,.1f}"
    measured_tpot = "-" if b.mean_tpot_s is None else f"{b.mean_tpot_s * 1e3:.2f}"
    measured_ttft = "-" if b.mean_ttft_s is None else f"{b.mean_ttft_s * 1e3:.1f}"
    return (
        f"| {b.row_id} | {b.concurrency} | {b.input_len}/{b.output_len} | {measured_tp} | "
        f"{1 / p.modeled.s_per_token:,.1f} ({_pct(p.throughput_error(p.modeled))}) | "
        f"{1 / p.calibrated.s_per_token:,.1f} ({_pct(p.throughput_error(p.calibrated))}) | "
        f"{measured_tpot} | {p.modeled.tpot_s * 1e3:.2f} ({_pct(p.tpot_error(p.modeled))}) | "
        f"{p.calibrated.tpot_s * 1e3:.2f} ({_pct(p.tpot_error(p.calibrated))}) | "
        f"{measured_ttft} | {p.modeled.ttft_s * 1e3:.1f} ({_pct(p.ttft_error(p.modeled))}) | "
        f"{p.calibrated.ttft_s * 1e3:.1f} ({_pct(p.ttft_error(p.calibrated))}) |"
    )


def timings_json(t: Timings) -> dict[str, float]:
    return {
        "output_throughput_tok_s": 1 / t.s_per_token,
        "mean_tpot_s": t.tpot_s,
        "mean_ttft_s": t.ttft_s,
    }


def points_json(points: tuple[PointFit, ...]) -> list[dict[str, object]]:
    """Every point's measured, modeled and calibrated figures, JSON-ready."""
    return [
        {
            "row": p.point.row_id,
            "concurrency": p.point.concurrency,
            "input_len": p.point.input_len,
            "output_len": p.point.output_len,
            "measured": {
                "output_throughput_tok_s": p.point.output_throughput_tok_s,
                "mean_tpot_s": p.point.mean_tpot_s,
                "mean_ttft_s": p.point.mean_ttft_s,
            },
            "modeled": timings_json(p.modeled),
            "calibrated": timings_json(p.calibrated),
            "throughput_error": p.throughput_error(p.calibrated),
            "tpot_error": p.tpot_error(p.calibrated),
            "ttft_error": p.ttft_error(p.calibrated),
        }
        for p in points
    ]
