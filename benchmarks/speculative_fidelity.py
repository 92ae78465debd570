"""capcliff against the public speculative-decoding (MTP) serving rows, uncalibrated.

Run: python benchmarks/speculative_fidelity.py [--jobs N] [--rows S023,S024] [--script-memory-flags]
(prints Markdown; asserts nothing)

Each row of benchmarks/data/public_speculative_rows.csv (InferenceX's MTP runs of
DeepSeek-R1-0528, with K from the run's launch script) is simulated as the benchmark ran it
(benchmarks/fidelity.py turns a row into a deployment and a closed-loop benchmark point:
clients = concurrency, 10 requests per client, lengths uniform in [0.8, 1] x ISL/OSL) with the
engine's uncalibrated step-time profile, three ways:

- with the row's speculation (`--speculative mtp:K`) and the published default acceptance
  (perf/speculation.py: DeepSeek-V3 report and the nebius MTP card; never fitted to these rows);
- with the acceptance length the row records, where it records one (InferenceX records none);
- without speculation, to show what the term changes.

Where benchmarks/data/public_serving_rows.csv holds the same deployment and load without MTP
(same model, GPU, layout, engine, lengths and clients), the measured MTP gain in output
throughput is printed next to the predicted one.
"""

from __future__ import annotations

import argparse
import datetime
import json
import statistics
import sys
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

import pandas as pd

sys.path.insert(0, str(Path(__file__).parent))

from fidelity import PUBLIC_ROWS, Row, held_out_first_waves, resolve_rows, with_first_wave

from capcliff.analysis.deployment import Deployment, resolve
from capcliff.analysis.sweep.step_fit import Timings, simulate_point
from capcliff.errors import CapcliffError

SPECULATIVE_ROWS = Path(__file__).parent / "data" / "public_speculative_rows.csv"
# The plain row that measures the same load without MTP: these columns equal.
SAME_LOAD = ["model", "hardware", "parallelism", "engine", "input_len", "output_len",
             "concurrency"]  # fmt: skip


# What each InferenceX SGLang MTP launch script (named in the rows' spec_source, read at the
# commit given there, github.com/SemiAnalysisAI/InferenceX) passes as --max-running-requests
# (a number, "conc": the row's clients, "h200": 512 at 1k/1k and 256 otherwise, or None where
# it passes none and SGLang's own cap with speculation applies, 48) and whether it exports
# SGLANG_ENABLE_SPEC_V2=1 (the overlap scheduler with EAGLE/MTP). The B200-FP8 and B300 scripts
# write `SGLANG_ENABLE_SPEC_V2=1` on a line of its own, without `export` and without `set -a`
# anywhere in the script or benchmark_lib.sh, so the server never sees it.
_SGLANG_SCRIPTS: dict[str, tuple[int | str | None, bool]] = {
    "benchmarks/dsr1_fp8_b200_mtp.sh": (512, False),
    "benchmarks/single_node/dsr1_fp4_b200_mtp.sh": (512, True),
    "benchmarks/single_node/dsr1_fp8_b300_mtp.sh": (512, False),
    "benchmarks/single_node/dsr1_fp8_h200_mtp.sh": ("h200", True),
    "benchmarks/single_node/dsr1_fp8_mi325x_mtp.sh": (None, True),
    "benchmarks/single_node/dsr1_fp4_mi355x_mtp.sh": (None, True),
    "benchmarks/single_node/dsr1_fp8_mi355x_mtp.sh": ("conc", True),  # ${..:-$CONC}
}

# The memory and batch flags of the same scripts (same commits): --kv-cache-dtype (every script
# but H200's passes fp8_e4m3; H200's passes none, so SGLang's "auto" keeps the model's BF16),
# --mem-fraction-static, and --chunked-prefill-size (= --max-prefill-tokens in each; "mi355x-fp4":
# 196608, or 32768 at 8k/1k above 32 clients, as that script sets PREFILL_SIZE).
_SGLANG_MEMORY: dict[str, tuple[str, float, int | str]] = {
    "benchmarks/dsr1_fp8_b200_mtp.sh": ("fp8", 0.82, 16384),
    "benchmarks/single_node/dsr1_fp4_b200_mtp.sh": ("fp8", 0.82, 16384),
    "benchmarks/single_node/dsr1_fp8_b300_mtp.sh": ("fp8", 0.82, 16384),
    "benchmarks/single_node/dsr1_fp8_h200_mtp.sh": ("bf16", 0.82, 32768),
    "benchmarks/single_node/dsr1_fp8_mi325x_mtp.sh": ("fp8", 0.8, 131072),
    "benchmarks/single_node/dsr1_fp4_mi355x_mtp.sh": ("fp8", 0.8, "mi355x-fp4"),
    "benchmarks/single_node/dsr1_fp8_mi355x_mtp.sh": ("fp8", 0.8, 196608),
}


def _script(r: dict[str, Any]) -> str | None:
    """The launch script a row's spec_source names, where it is one of _SGLANG_SCRIPTS."""
    source = str(r.get("spec_source", ""))
    return next((s for s in _SGLANG_SCRIPTS if f"InferenceX {s} @" in source), None)


def _max_running_requests(r: dict[str, Any]) -> int | None:
    """--max-running-requests as the row's launch script passed it (None: not passed)."""
    script = _script(r)
    given = None if script is None else _SGLANG_SCRIPTS[script][0]
    if given == "conc":
        return int(r["concurrency"])
    if given == "h200":
        return 512 if (int(r["input_len"]), int(r["output_len"])) == (1024, 1024) else 256
    return given if isinstance(given, int) else None


def _memory_flags(script: str, r: dict[str, Any]) -> dict[str, Any]:
    """KV dtype, mem_fraction_static and chunked prefill size as the row's script passed them."""
    kv, fraction, chunk = _SGLANG_MEMORY[script]
    if chunk == "mi355x-fp4":
        long_prompt = (int(r["input_len"]), int(r["output_len"])) == (8192, 1024)
        chunk = 32768 if long_prompt and int(r["concurrency"]) > 32 else 196608
    return {"kv_cache_dtype": kv, "mem_fraction_static": fraction, "max_num_batched_tokens": chunk}


def _speculation(r: dict[str, Any], *, memory_flags: bool = False) -> dict[str, Any]:
    """A row's speculation and the launch script's batch flags; with `memory_flags`, its KV
    dtype, mem_fraction_static and chunked prefill size too (`_memory_flags`)."""
    settings: dict[str, Any] = {
        "speculative": f"{r['spec_method']}:{int(r['spec_num_draft_tokens'])}"
    }
    running = _max_running_requests(r)
    if running is not None:
        settings["max_num_seqs"] = running
    script = _script(r)
    if script is not None:
        settings["spec_overlap"] = _SGLANG_SCRIPTS[script][1]
        if memory_flags:
            settings.update(_memory_flags(script, r))
    return settings


@dataclass(frozen=True)
class Predicted:
    """One row: measured, and simulated with default acceptance, recorded, and without."""

    row: Row
    k: int
    default: Timings
    tokens_per_step: float  # E of the default acceptance
    recorded: Timings | None  # with the row's acceptance length (None: not recorded)
    plain: Timings  # without speculation
    plain_measured_tok_s: float | None  # the same load measured without MTP, if published


def _variant(dep: Deployment, **update: object) -> Deployment:
    return resolve(dep.model, dep.hardware, dep.settings.model_copy(update=update))


def _plain_throughputs() -> dict[tuple[str, ...], float]:
    """Measured output tok/s of the plain public rows by SAME_LOAD (the latest run where a load
    was measured more than once, as the file orders them: newer fixture first)."""
    table = pd.read_csv(PUBLIC_ROWS)
    out: dict[tuple[str, ...], float] = {}
    for r in table.to_dict("records"):
        out.setdefault(tuple(str(r[c]) for c in SAME_LOAD), float(r["output_throughput_tok_s"]))
    return out


def predict(args: tuple[Row, dict[str, Any], float | None]) -> Predicted | tuple[str, str]:
    """A row's three simulations, or (row id, why not)."""
    row, r, plain_tok_s = args
    assert row.dep is not None and row.layout is not None and row.point is not None
    dep, layout, point = row.dep, row.layout, row.point
    try:
        default = simulate_point(dep, layout, point, {})
        length = r.get("spec_accept_length")
        recorded = None
        if length is not None and not pd.isna(length):
            with_length = _variant(dep, spec_accept_length=float(length))
            recorded = simulate_point(with_length, layout, point, {})
        plain_dep = _variant(dep, speculative=None, spec_overlap=None)
        plain = simulate_point(plain_dep, layout, point, {})
    except CapcliffError as exc:
        return row.row_id, str(exc)
    assert dep.acceptance is not None and dep.speculation is not None
    return Predicted(
        row, dep.speculation.num_speculative_tokens, default, dep.acceptance.tokens_per_step,
        recorded, plain, plain_tok_s,
    )  # fmt: skip


def _error(predicted: float, measured: float | None) -> float | None:
    return None if not measured else (predicted - measured) / measured


def _tok_s(t: Timings) -> float:
    return 1 / t.s_per_token


def _pct(x: float | None) -> str:
    return "-" if x is None else f"{100 * x:+.0f} %"


def _errors(p: Predicted, t: Timings) -> tuple[float | None, float | None]:
    """(output throughput, mean TPOT) relative errors of timings `t` for row `p`."""
    point = p.row.point
    assert point is not None
    return _error(_tok_s(t), point.output_throughput_tok_s), _error(t.tpot_s, point.mean_tpot_s)


def print_rows(done: list[Predicted]) -> None:
    print("| row | engine | GPU | layout | release | K | E | clients | isl/osl | tok/s | "
          "mtp | no spec | TPOT ms | mtp | no spec | MTP gain measured | predicted |")  # fmt: skip
    print("|---|---|---|---|---|---:|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for p in done:
        point, layout = p.row.point, p.row.layout
        assert point is not None and layout is not None
        spec_tok, spec_tpot = _errors(p, p.default)
        plain_tok, plain_tpot = _errors(p, p.plain)
        measured_gain = (
            _pct(point.output_throughput_tok_s / p.plain_measured_tok_s - 1)
            if p.plain_measured_tok_s
            else "-"
        )
        tpot = "-" if point.mean_tpot_s is None else f"{point.mean_tpot_s * 1e3:.1f}"
        print(
            f"| {p.row.row_id} | {p.row.engine} | {p.row.group[1]} | {layout.name} | "
            f"{p.row.group[4]} | {p.k} | {p.tokens_per_step:.2f} | {point.concurrency} | "
            f"{point.input_len}/{point.output_len} | {point.output_throughput_tok_s:,.0f} | "
            f"{_pct(spec_tok)} | {_pct(plain_tok)} | {tpot} | {_pct(spec_tpot)} | "
            f"{_pct(plain_tpot)} | {measured_gain} | "
            f"{_pct(_tok_s(p.default) / _tok_s(p.plain) - 1)} |"
        )


def _median(values: list[float | None]) -> str:
    kept = [abs(v) for v in values if v is not None]
    return f"{100 * statistics.median(kept):.0f} %" if kept else "-"


def _groups(done: list[Predicted]) -> dict[str, list[Predicted]]:
    """Per engine and GPU, the issue's focus (NVIDIA, 4-64 clients), and every row."""
    groups: dict[str, list[Predicted]] = {}
    for p in done:
        groups.setdefault(f"{p.row.engine} {p.row.group[1]}", []).append(p)
    groups["focus: H200/B200, 4-64 clients"] = [
        p
        for p in done
        if p.row.group[1] in ("h200-sxm", "b200")
        and p.row.point is not None
        and 4 <= p.row.point.concurrency <= 64
    ]
    groups["all"] = done
    return groups


def print_summary(done: list[Predicted]) -> None:
    print("| rows | n | tok/s: mtp (default E) | recorded E | no spec | "
          "TPOT: mtp (default E) | recorded E | no spec |")  # fmt: skip
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for name, chosen in _groups(done).items():
        cells = []
        for metric in (0, 1):
            for which in ("default", "recorded", "plain"):
                cells.append(
                    _median([_errors(p, t)[metric] for p in chosen if (t := getattr(p, which))])
                )
        print(f"| {name} | {len(chosen)} | {' | '.join(cells)} |")
    print()
    print("Cells: median |error|, uncalibrated. recorded E: '-' where no row records an "
          "acceptance length (InferenceX records none).")  # fmt: skip
    print()
    print_gains(done)


def print_gains(done: list[Predicted]) -> None:
    """The MTP gain in output throughput, measured (an MTP row over the plain row of the same
    load) and predicted (capcliff with over without speculation), per engine and GPU."""
    print("| paired rows | n | MTP gain measured (median) | predicted (median) | "
          "speed-up predicted / measured (median) |")  # fmt: skip
    print("|---|---:|---:|---:|---:|")
    paired: dict[str, list[tuple[float, float]]] = {}
    for p in done:
        point = p.row.point
        if not p.plain_measured_tok_s or point is None:
            continue
        measured = point.output_throughput_tok_s / p.plain_measured_tok_s
        predicted = _tok_s(p.default) / _tok_s(p.plain)
        for key in (f"{p.row.engine} {p.row.group[1]}", "all"):
            paired.setdefault(key, []).append((measured, predicted))
    for name, gains in sorted(paired.items(), key=lambda kv: (kv[0] == "all", kv[0])):
        measured = statistics.median(m - 1 for m, _ in gains)
        predicted = statistics.median(q - 1 for _, q in gains)
        ratio = statistics.median(q / m for m, q in gains)
        print(f"| {name} | {len(gains)} | {_pct(measured)} | {_pct(predicted)} | {ratio:.2f} |")


def speculative_bands(done: list[Predicted]) -> dict[str, Any]:
    """Median |error| of throughput and TPOT with the default acceptance, per engine (any GPU)
    and over every row: the band `perf/error_band.py` prints with speculative figures."""
    groups: dict[str, list[Predicted]] = {"all": done}
    for p in done:
        groups.setdefault(p.row.engine, []).append(p)
    bands: dict[str, Any] = {}
    for name, chosen in groups.items():
        figures = {}
        for metric, key in ((0, "throughput"), (1, "tpot")):
            kept = [abs(e) for p in chosen if (e := _errors(p, p.default)[metric]) is not None]
            figures[key] = round(statistics.median(kept), 4) if kept else None
        bands[name] = {"rows": len(chosen), **figures}
    return bands


def write_bands(done: list[Predicted]) -> None:
    """Put the speculative bands into error_bands.json beside the plain ones."""
    path = Path(__file__).parent.parent / "capcliff" / "perf" / "error_bands.json"
    data = json.loads(path.read_text())
    data["speculative"] = {
        "about": "Median absolute error of capcliff's output throughput and mean TPOT against "
        "InferenceX's public MTP rows (benchmarks/data/public_speculative_rows.csv) with the "
        "published default acceptance, uncalibrated, per engine (any GPU). Written by `python "
        f"benchmarks/speculative_fidelity.py --write-bands` on {datetime.date.today()}.",
        "engines": speculative_bands(done),
    }
    path.write_text(json.dumps(data, indent=2) + "\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=1, help="processes simulating rows")
    parser.add_argument("--rows", help="comma-separated row ids (default: every row)")
    parser.add_argument(
        "--write-bands", action="store_true",
        help="write the per-engine speculative error bands into capcliff/perf/error_bands.json",
    )  # fmt: skip
    parser.add_argument(
        "--script-memory-flags", action="store_true",
        help="also pass each launch script's --kv-cache-dtype, --mem-fraction-static and "
        "--chunked-prefill-size (SGLang rows)",
    )  # fmt: skip
    args = parser.parse_args()
    table = pd.read_csv(SPECULATIVE_ROWS)
    if args.rows:
        table = table[table["row_id"].isin(args.rows.split(","))]
    rows = resolve_rows(table, partial(_speculation, memory_flags=args.script_memory_flags))
    waves = held_out_first_waves()  # a deployment's own runs chose no figure it is judged with
    rows = [with_first_wave(r, waves.get(r.group)) for r in rows]
    records = {str(r["row_id"]): r for r in table.to_dict("records")}
    plain = _plain_throughputs()
    work = [
        (row, records[row.row_id], plain.get(tuple(str(records[row.row_id][c]) for c in SAME_LOAD)))
        for row in rows
        if not row.reason
    ]
    if args.jobs > 1:
        from multiprocessing import Pool

        with Pool(args.jobs) as pool:
            results = pool.map(predict, work, chunksize=1)
    else:
        results = [predict(w) for w in work]
    done = [r for r in results if isinstance(r, Predicted)]
    if args.write_bands:
        write_bands(done)
    print("## Speculative (MTP) rows, uncalibrated\n")
    print_summary(done)
    print()
    print_rows(done)
    print("\nRows capcliff cannot express:")
    for row in rows:
        if row.reason:
            print(f"- {row.row_id} ({row.engine}): {row.reason}")
    for r in results:
        if not isinstance(r, Predicted):
            print(f"- {r[0]}: {r[1]}")


if __name__ == "__main__":
    main()
