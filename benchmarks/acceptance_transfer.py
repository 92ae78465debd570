"""Does a calibrated acceptance length transfer? Fit E on a speculative deployment's low loads,
predict its high loads.

Issue 21's calibration (`capcliff calibrate BENCH --speculative mtp:K`): for every public MTP
deployment (`benchmarks/speculative_fidelity.py`'s rows, grouped as `fidelity.py` groups them)
with points at no more than LOW_CLIENTS clients and points above, fit the mean acceptance length
on the low points exactly as `calibrate` does (`analysis.sweep.accept_fit.fit_accept_length`,
step times as the profile prices them) and predict the others. Prints the median |error| of
output throughput and TPOT on the predicted points, at the default acceptance and at the fitted
one, per engine and GPU. Asserts nothing.

Run: PYTHONPATH=. python benchmarks/acceptance_transfer.py [--jobs 2]
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

import pandas as pd

sys.path.insert(0, str(Path(__file__).parent))

from calibration_transfer import _median
from fidelity import Row, resolve_rows
from speculative_fidelity import SPECULATIVE_ROWS, _speculation

from capcliff.analysis.sweep.accept_fit import fit_accept_length, with_accept_length
from capcliff.analysis.sweep.step_fit import PointFit, simulate_point
from capcliff.errors import CapcliffError

LOW_CLIENTS = 16  # set: the loads a user benchmarks first (as calibration_transfer.py)


def transfer(members: list[Row]) -> tuple[str, float, float, list[PointFit]] | None:
    """(engine and GPU, default E, fitted E, the predicted points), or None when the deployment
    has no low or no high points or cannot be simulated."""
    low = [m.point for m in members if m.point and m.point.concurrency <= LOW_CLIENTS]
    high = [m.point for m in members if m.point and m.point.concurrency > LOW_CLIENTS]
    dep, layout = members[0].dep, members[0].layout
    if not low or not high or dep is None or layout is None or dep.acceptance is None:
        return None
    try:
        fit = fit_accept_length(dep, layout, low)
        fitted = with_accept_length(dep, fit.accept_length)
        points = [
            PointFit(p, simulate_point(dep, layout, p, {}), simulate_point(fitted, layout, p, {}))
            for p in high
        ]
    except CapcliffError:
        return None
    where = f"{members[0].engine} {dep.hardware.id}"
    return where, dep.acceptance.tokens_per_step, fit.accept_length, points


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=1, help="processes fitting deployments")
    args = parser.parse_args()
    rows = resolve_rows(pd.read_csv(SPECULATIVE_ROWS), _speculation)
    groups: dict[tuple[str, ...], list[Row]] = {}
    for row in rows:
        if not row.reason and row.point is not None:
            groups.setdefault(row.group, []).append(row)
    from multiprocessing import Pool

    with Pool(max(args.jobs, 1)) as pool:  # one process: as fast as none for 8 deployments
        done = pool.map(transfer, list(groups.values()), chunksize=1)
    by: dict[str, list[tuple[float, float, list[PointFit]]]] = {}
    for result in done:
        if result is not None:
            where, default, fitted, points = result
            for key in (where, "all"):
                by.setdefault(key, []).append((default, fitted, points))
    print(f"Fitted on each MTP deployment's points at <= {LOW_CLIENTS} clients; predicted: its "
          "points at more clients.\n")  # fmt: skip
    print("| engine and GPU | deployments | predicted points | E default | E fitted (median) | "
          "throughput: default E | fitted E | TPOT: default E | fitted E |")  # fmt: skip
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for key in sorted(by, key=lambda k: (k == "all", k)):
        fits = [p for _, _, points in by[key] for p in points]
        defaults = statistics.median(d for d, _, _ in by[key])
        fitted = statistics.median(f for _, f, _ in by[key])
        cells = [
            _median([p.throughput_error(p.modeled) for p in fits]),
            _median([p.throughput_error(p.calibrated) for p in fits]),
            _median([p.tpot_error(p.modeled) for p in fits]),
            _median([p.tpot_error(p.calibrated) for p in fits]),
        ]
        print(f"| {key} | {len(by[key])} | {len(fits)} | {defaults:.2f} | {fitted:.2f} | "
              f"{' | '.join(cells)} |")  # fmt: skip
    print("\nCells: median |error| over the predicted points.")


if __name__ == "__main__":
    main()
