"""The first wave of an InferenceX run, measured against simulated: where the mean-TTFT tail is.

Run: python benchmarks/first_wave.py [--summary]   (prints Markdown; asserts nothing)

InferenceX's client (`benchmark_serving.py`, num_prompts = 10 x clients, `--request-rate inf`, a
`--max-concurrency` semaphore) starts every client at once, so a run's first `clients` requests
arrive together on an idle server and its later ones one at a time. Only the published mean,
median and p99 of TTFT are known per run, not each request's, so the first wave's excess is
estimated as the mean's excess over the median, in seconds per first-wave request:

    D = N / C x ((measured mean - measured median) - (simulated mean - simulated median))

(N requests, C clients): the extra time each first-wave request waited beyond what the simulator
gives it, if the requests past the first wave sit at the median (the rows at 1 client, whose
first request repeats the client's warm-up prompt, give D ~ 0). Every row is simulated as
`benchmarks/fidelity.py` simulates it uncalibrated (the engine's profile, the scripts' receive
interval) but with all of its N requests (the harness caps a point at 320, which gives the first
wave of 64 or 128 clients two or four times its weight in the simulated mean). Nothing here is
fitted; the figures are the evidence behind docs/validation.md's "The first wave" section.
"""

from __future__ import annotations

import argparse
import statistics
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent.parent))
sys.path.insert(0, str(Path(__file__).parent))

from fidelity import Row, load_public_rows, serving_rows

from capcliff.analysis.evaluate.replica_models import replica_models
from capcliff.analysis.evaluate.solver import config_at
from capcliff.analysis.sweep.step_fit import point_requests
from capcliff.errors import CapcliffError
from capcliff.sim.simulate import simulate

LOW_CLIENTS = (2, 8)  # "a small first wave": 2-8 clients
HIGH_CLIENTS = 32  # and a large one: 32 clients or more


@dataclass(frozen=True)
class Wave:
    """One InferenceX row: its stack, its point and the TTFT statistics measured and simulated
    (seconds)."""

    row_id: str
    stack: str  # GPU, engine, release, layout
    input_len: int
    clients: int
    requests: int
    measured: tuple[float, float, float]  # mean, median, p99
    simulated: tuple[float, float, float]

    @property
    def excess_s(self) -> float:
        """D: the first wave's excess per request, measured minus simulated."""
        (mm, md, _), (sm, sd, _) = self.measured, self.simulated
        return self.requests / self.clients * ((mm - md) - (sm - sd))


def _simulated(row: Row, requests: int) -> tuple[float, float, float] | None:
    """Mean, median and p99 TTFT of the row's `requests` requests, uncalibrated."""
    dep, layout, point = row.dep, row.layout, row.point
    assert dep is not None and layout is not None and point is not None
    reqs = point_requests(point, max_requests=requests)
    length = dep.context_length(reqs)
    memory = dep.memory(layout, length)
    if not memory.fits:
        return None
    capacity, steps = replica_models(dep, memory, {})
    config = config_at(dep.sim_config(length), point.concurrency, layout.dp)
    try:
        ttft = simulate(reqs, steps, capacity, config, dp=layout.dp).ttft_s
    except CapcliffError:
        return None
    return float(ttft.mean()), float(np.median(ttft)), float(np.percentile(ttft, 99))


def waves() -> list[Wave]:
    """Every InferenceX row capcliff can simulate, with its first-wave figures."""
    table = load_public_rows().set_index("row_id")
    out = []
    for row in serving_rows():
        if row.reason or row.row_id not in table.index or row.point is None:
            continue
        r = table.loc[row.row_id]
        if "InferenceX" not in str(r["notes"]) or row.point.num_requests is None:
            continue
        n = row.point.num_requests
        sim = _simulated(row, n)
        if sim is None:
            continue
        gpu, engine, release, layout = row.group[1].split("-")[0], *row.group[3:], row.group[2]
        measured = (r["mean_ttft_ms"] / 1e3, r["median_ttft_ms"] / 1e3, r["p99_ttft_ms"] / 1e3)
        out.append(
            Wave(row.row_id, f"{gpu} {engine} {release} {layout}", row.point.input_len,
                 row.point.concurrency, n, measured, sim)
        )  # fmt: skip
    return sorted(out, key=lambda w: (w.stack, w.input_len, w.clients, w.row_id))


def _median(values: list[float]) -> str:
    return f"{statistics.median(values):.2f} s ({len(values)})" if values else "-"


def print_rows(rows: list[Wave]) -> None:
    print("| row | stack | ISL | clients | mean TTFT meas. / sim. | median | p99 | D |")
    print("|---|---|---:|---:|---:|---:|---:|---:|")
    for w in rows:
        (mm, md, mp), (sm, sd, sp) = w.measured, w.simulated
        print(
            f"| {w.row_id} | {w.stack} | {w.input_len} | {w.clients} | {mm:.3f} / {sm:.3f} s "
            f"| {md:.3f} / {sd:.3f} s | {mp:.2f} / {sp:.2f} s | {w.excess_s:+.2f} s |"
        )


def print_summary(rows: list[Wave]) -> None:
    """Median D per GPU, engine and release, by prompt length and first-wave size."""
    print("| GPU, engine, release | ISL | D at 1 client | 2-8 clients | 32+ clients |")
    print("|---|---:|---:|---:|---:|")
    keys = sorted({(" ".join(w.stack.split()[:3]), w.input_len) for w in rows})
    for stack, isl in keys:
        mine = [w for w in rows if w.stack.startswith(stack + " ") and w.input_len == isl]
        one = [w.excess_s for w in mine if w.clients == 1]
        low = [w.excess_s for w in mine if LOW_CLIENTS[0] <= w.clients <= LOW_CLIENTS[1]]
        high = [w.excess_s for w in mine if w.clients >= HIGH_CLIENTS]
        print(f"| {stack} | {isl} | {_median(one)} | {_median(low)} | {_median(high)} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--summary", action="store_true", help="only the per-stack medians")
    args = parser.parse_args()
    rows = waves()
    print("Median D (first-wave excess per request, measured - simulated; rows in brackets)\n")
    print_summary(rows)
    if not args.summary:
        print()
        print_rows(rows)


if __name__ == "__main__":
    main()
