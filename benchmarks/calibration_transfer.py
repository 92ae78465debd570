"""Does a calibration transfer? Fit on a deployment's low and medium loads, predict the rest.

Issue 19's test of `capcliff calibrate`: from one deployment's benchmark at low and medium load,
predict its high-load and longer-output points. For every public deployment (model, GPU,
layout, engine, release; `benchmarks/fidelity.py`'s rows) with at least two points at no more
than LOW_CLIENTS clients and one point outside them (more clients, or an output longer than any
fitted), this fits the step terms and the request overhead on the low points exactly as
`capcliff calibrate` does (`analysis.sweep.step_fit.fit_bases`) and predicts the others. It
prints, per engine, the median |error| of output throughput and mean TTFT on the predicted
points, uncalibrated and calibrated. Asserts nothing.

Run: PYTHONPATH=. python benchmarks/calibration_transfer.py [--jobs 2]
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from fidelity import Row, _deployment_bases, held_out_first_waves, serving_rows, with_first_wave

from capcliff.analysis.sweep.step_fit import Basis, PointFit, fit_bases, modeled_fixed_s
from capcliff.errors import CapcliffError

LOW_CLIENTS = 16  # set: "low and medium load", the points a user would benchmark first


def _job(members: list[Row]) -> tuple[list[Row], list[Basis] | str]:
    return members, _deployment_bases(members)


def transfer(members: list[Row], bases: list[Basis]) -> list[tuple[PointFit, float]]:
    """Fit on the points at <= LOW_CLIENTS clients, predict the rest ((point, the fitted request
    overhead, s)); [] when not possible."""
    low = [b for b in bases if b.point.concurrency <= LOW_CLIENTS]
    longest = max((b.point.output_len for b in low), default=0)
    rest = [b for b in bases if b.point.concurrency > LOW_CLIENTS or b.point.output_len > longest]
    if len(low) < 2 or not rest:
        return []
    dep, layout = members[0].dep, members[0].layout
    assert dep is not None and layout is not None
    fixed0, label = modeled_fixed_s(dep, layout)
    try:
        fit = fit_bases(low, fixed0=fixed0, label=label, predict=rest)
    except CapcliffError:
        return []
    return [(p, fit.request_overhead_s) for p in fit.points]


def _without(fit: PointFit, overhead_s: float) -> float | None:
    """The calibrated TTFT error without the fitted request overhead (step terms only)."""
    measured = fit.point.mean_ttft_s
    return None if not measured else (fit.calibrated.ttft_s - overhead_s - measured) / measured


def _median(values: list[float | None]) -> str:
    kept = [abs(v) for v in values if v is not None]
    return f"{100 * statistics.median(kept):.0f} %" if kept else "-"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=1, help="processes simulating deployments")
    args = parser.parse_args()
    groups: dict[tuple[str, ...], list[Row]] = {}
    waves = held_out_first_waves()  # the uncalibrated column: a first wave not chosen on it
    for row in serving_rows():
        if not row.reason and row.point is not None:
            groups.setdefault(row.group, []).append(with_first_wave(row, waves.get(row.group)))
    work = list(groups.values())
    if args.jobs > 1:
        from multiprocessing import Pool

        with Pool(args.jobs) as pool:
            done = pool.map(_job, work, chunksize=1)
    else:
        done = [_job(w) for w in work]
    by_engine: dict[str, list[tuple[PointFit, float]]] = {}
    deployments: dict[str, int] = {}
    for members, bases in done:
        if isinstance(bases, str):
            continue
        fits = transfer(members, bases)
        if fits:
            engine = members[0].engine
            by_engine.setdefault(engine, []).extend(fits)
            by_engine.setdefault("all", []).extend(fits)
            deployments[engine] = deployments.get(engine, 0) + 1
            deployments["all"] = deployments.get("all", 0) + 1
    print(f"Fitted on each deployment's points at <= {LOW_CLIENTS} clients; predicted: its "
          "points at more clients or with a longer output.\n")  # fmt: skip
    print("| engine | deployments | predicted points | throughput: uncal. | calibrated | "
          "mean TTFT: uncal. | calibrated, step terms only | calibrated |")  # fmt: skip
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for engine in sorted(by_engine, key=lambda e: (e == "all", e)):
        fits = by_engine[engine]
        cells = [
            _median([f.throughput_error(f.modeled) for f, _ in fits]),
            _median([f.throughput_error(f.calibrated) for f, _ in fits]),
            _median([f.ttft_error(f.modeled) for f, _ in fits]),
            _median([_without(f, overhead) for f, overhead in fits]),
            _median([f.ttft_error(f.calibrated) for f, _ in fits]),
        ]
        print(f"| {engine} | {deployments[engine]} | {len(fits)} | {' | '.join(cells)} |")
    print("\nCells: median |error| over the predicted points (issue 19's bar: throughput 20 %, "
          "mean TTFT 35 %).")  # fmt: skip


if __name__ == "__main__":
    main()
