"""The first wave of an InferenceX run, measured against simulated: where the mean-TTFT tail is.

Run: python benchmarks/first_wave.py [--summary] [--write]   (prints Markdown; asserts nothing)

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
interval, every one of its N requests) but without a first wave. `--write` turns the Ds into the
calibrated figures capcliff ships (`capcliff/perf/first_wave.py`: the median D per engine and GPU
vendor over runs of two clients or more), and `held_out` gives each deployment the figure of the
other deployments, which the harnesses judge it with (docs/validation.md, "The first wave as a
calibrated term").
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from dataclasses import dataclass
from datetime import date
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent.parent))
sys.path.insert(0, str(Path(__file__).parent))

from fidelity import Row, load_public_rows, serving_rows

from capcliff.analysis.evaluate.replica_models import replica_models
from capcliff.analysis.evaluate.solver import config_at
from capcliff.analysis.sweep.step_fit import point_requests
from capcliff.catalog.catalogs import get_hardware
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
    group: tuple[str, ...]  # the deployment (fidelity.Row.group)
    family: tuple[str, str]  # engine and GPU vendor: what a first-wave figure is shared by
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
        family = (row.group[3], get_hardware(row.group[1]).vendor)
        out.append(
            Wave(row.row_id, f"{gpu} {engine} {release} {layout}", row.group, family,
                 row.point.input_len, row.point.concurrency, n, measured, sim)
        )  # fmt: skip
    return sorted(out, key=lambda w: (w.stack, w.input_len, w.clients, w.row_id))


def _mean_ttft_error(w: Wave, wave_s: float) -> float:
    """|predicted / measured - 1| of the run's mean TTFT with a first wave of `wave_s` seconds
    (the run's first C of N requests that much later: + wave_s x C / N on the mean)."""
    wave = wave_s if w.clients > 1 else 0.0  # one client sends no wave (perf/first_wave.py)
    predicted = w.simulated[0] + wave * w.clients / w.requests
    return abs(predicted / w.measured[0] - 1)


def held_out(rows: list[Wave]) -> dict[tuple[str, ...], float]:
    """Each deployment's first wave as the other deployments give it: the median D over the runs
    of the other deployments of its engine on its GPU vendor (0 where there are none)."""
    out = {}
    for group in {w.group for w in rows}:
        family = next(w.family for w in rows if w.group == group)
        others = [
            w.excess_s for w in rows if w.family == family and w.group != group and w.clients > 1
        ]
        out[group] = statistics.median(others) if others else 0.0
    return out


def figures(rows: list[Wave]) -> list[dict[str, object]]:
    """The shipped figures (capcliff/perf/first_wave.py): per engine and GPU vendor, the median
    D, its runs and deployments, and the median mean-TTFT error of those runs predicted with the
    held-out figure and with none."""
    loo = held_out(rows)
    out: list[dict[str, object]] = []
    for family in sorted({w.family for w in rows}):
        mine = [w for w in rows if w.family == family]
        waved = [w for w in mine if w.clients > 1]
        held = statistics.median(_mean_ttft_error(w, loo[w.group]) for w in mine)
        without = statistics.median(_mean_ttft_error(w, 0.0) for w in mine)
        out.append({
            "engine": family[0],
            "vendor": family[1],
            "seconds": round(statistics.median(w.excess_s for w in waved), 3),
            "runs": len(waved),
            "deployments": len({w.group for w in waved}),
            "held_out_error": round(held, 4),
            "without_error": round(without, 4),
        })  # fmt: skip
    return out


def write_figures(rows: list[Wave]) -> None:
    """Rewrite capcliff/perf/data/first_wave.json from `rows`."""
    table = {
        "about": (
            "Seconds each closed-loop client's first request of a benchmark run waits beyond "
            "its simulated steps, per engine and GPU vendor (capcliff/perf/first_wave.py)."
        ),
        "source": (
            "benchmarks/first_wave.py --write over the public InferenceX runs in "
            "benchmarks/data: per run D = N / C x ((measured mean - median) - (simulated mean "
            "- median)) TTFT, uncalibrated steps, every request simulated; the median D over "
            "the runs with two clients or more"
        ),
        "written": date.today().isoformat(),
        "figures": figures(rows),
    }
    path = Path(__file__).parent.parent / "capcliff" / "perf" / "data" / "first_wave.json"
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(table, indent=1) + "\n", encoding="utf-8")
    tmp.replace(path)


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
    parser.add_argument(
        "--write", action="store_true", help="rewrite capcliff/perf/data/first_wave.json"
    )
    args = parser.parse_args()
    rows = waves()
    if args.write:
        write_figures(rows)
    print(
        "First wave per engine and GPU vendor (median D; mean TTFT median |error| with the "
        "held-out figure / with none)\n"
    )
    for f in figures(rows):
        print(
            f"- {f['engine']} on {f['vendor']}: {f['seconds']:.2f} s over {f['runs']} runs, "
            f"{f['deployments']} deployments; mean TTFT {f['held_out_error']:.1%} held out, "
            f"{f['without_error']:.1%} without"
        )
    print()
    print("Median D (first-wave excess per request, measured - simulated; rows in brackets)\n")
    print_summary(rows)
    if not args.summary:
        print()
        print_rows(rows)


if __name__ == "__main__":
    main()
