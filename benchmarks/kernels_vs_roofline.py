"""Measured kernels (aiconfigurator) against the roofline on the public serving rows.

Run: python benchmarks/kernels_vs_roofline.py [--rows B52,B53,...]
(needs `pip install '.[kernels]'`; prints Markdown, asserts nothing)

Every serving row that both step-time sources can price (benchmarks/fidelity.py turns a row into
a deployment and a benchmark point; the kernels source needs a model, GPU and engine that
aiconfigurator has tables for) is simulated twice as the benchmark ran it, uncalibrated: with
the engine's roofline profile and with `--step-source kernels`. Printed: mean TPOT and output
throughput, measured and predicted, and the relative errors; then the median absolute error per
engine and GPU. No term of either source was chosen on these rows here.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from fidelity import Row, serving_rows

from capcliff.analysis.deployment import Deployment, resolve
from capcliff.analysis.sweep.step_fit import Timings, simulate_point
from capcliff.errors import CapcliffError


@dataclass(frozen=True)
class Compared:
    """One row, simulated with both sources."""

    row: Row
    roofline: Timings
    kernels: Timings


def _kernels_deployment(dep: Deployment) -> Deployment:
    """The same deployment with --step-source kernels (CapcliffError when not priceable)."""
    settings = dep.settings.model_copy(update={"step_source": "kernels"})
    return resolve(dep.model, dep.hardware, settings)


def compare(rows: list[Row]) -> tuple[list[Compared], list[tuple[str, str]]]:
    """Both sources' timings for every row they can price, and the rows left out with why."""
    done, skipped = [], []
    for row in rows:
        if row.reason or row.dep is None or row.layout is None or row.point is None:
            continue
        try:
            kernels_dep = _kernels_deployment(row.dep)
            roofline = simulate_point(row.dep, row.layout, row.point, {})
            kernels = simulate_point(kernels_dep, row.layout, row.point, {})
        except CapcliffError as exc:
            skipped.append((row.row_id, str(exc)))
            continue
        done.append(Compared(row, roofline, kernels))
    return done, skipped


def _error(predicted: float, measured: float | None) -> float | None:
    return None if not measured else (predicted - measured) / measured


def _pct(x: float | None) -> str:
    return "" if x is None else f"{100 * x:+.0f} %"


def _throughput(t: Timings) -> float:
    return 1 / t.s_per_token


def print_rows(done: list[Compared]) -> None:
    """One line per row."""
    print("| row | deployment | conc | TPOT ms measured | roofline | kernels | "
          "tok/s measured | roofline | kernels |")  # fmt: skip
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|")
    for c in done:
        p, (_, gpu, layout, engine, release) = c.row.point, c.row.group
        assert p is not None
        tpot = 1e3 * p.mean_tpot_s if p.mean_tpot_s else None
        tput = p.output_throughput_tok_s
        print(
            f"| {c.row.row_id} | {c.row.group[0]} {layout} {gpu} {engine} {release} | "
            f"{p.concurrency} | {'' if tpot is None else f'{tpot:.1f}'} | "
            f"{1e3 * c.roofline.tpot_s:.1f} ({_pct(_error(c.roofline.tpot_s, p.mean_tpot_s))}) | "
            f"{1e3 * c.kernels.tpot_s:.1f} ({_pct(_error(c.kernels.tpot_s, p.mean_tpot_s))}) | "
            f"{'' if tput is None else f'{tput:,.0f}'} | "
            f"{_pct(_error(_throughput(c.roofline), tput))} | "
            f"{_pct(_error(_throughput(c.kernels), tput))} |"
        )


def _median_abs(errors: list[float | None]) -> str:
    kept = [abs(e) for e in errors if e is not None]
    return f"{100 * statistics.median(kept):.0f} % ({len(kept)})" if kept else ""


def print_summary(done: list[Compared]) -> None:
    """Median absolute errors per engine and GPU, and over every row."""
    groups: dict[str, list[Compared]] = {}
    for c in done:
        groups.setdefault(f"{c.row.group[3]} on {c.row.group[1]}", []).append(c)
    groups["every row"] = done
    print("| engine on GPU | TPOT roofline | TPOT kernels | tok/s roofline | tok/s kernels |")
    print("|---|---:|---:|---:|---:|")
    for name, members in groups.items():
        cells = []
        for metric in ("tpot", "tput"):
            for source in ("roofline", "kernels"):
                errors = []
                for c in members:
                    t: Timings = getattr(c, source)
                    p = c.row.point
                    assert p is not None
                    errors.append(
                        _error(t.tpot_s, p.mean_tpot_s)
                        if metric == "tpot"
                        else _error(_throughput(t), p.output_throughput_tok_s)
                    )
                cells.append(_median_abs(errors))
        print(f"| {name} | " + " | ".join(cells) + " |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", help="comma-separated row ids (default: every row)")
    args = parser.parse_args()
    rows = serving_rows()
    if args.rows:
        wanted = set(args.rows.split(","))
        rows = [r for r in rows if r.row_id in wanted]
    start = time.perf_counter()
    done, skipped = compare(rows)
    print("## Measured kernels (aiconfigurator) against the roofline\n")
    print(f"{len(done)} rows priced by both sources ({time.perf_counter() - start:.0f} s).\n")
    print_summary(done)
    print("\nMedian absolute error (rows). Every row:\n")
    print_rows(done)
    reasons: dict[str, list[str]] = {}
    for row_id, why in skipped:
        reasons.setdefault(why, []).append(row_id)
    if reasons:
        print("\nRows the kernels source cannot price:")
        for why, ids in reasons.items():
            print(f"- {', '.join(ids)}: {why}")


if __name__ == "__main__":
    main()
