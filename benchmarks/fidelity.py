"""The fidelity harness: capcliff against every public serving benchmark and start-up log row.

Run: python benchmarks/fidelity.py   (prints the Markdown tables of docs/validation.md; asserts
nothing: the tests assert the rules with stated tolerances)

Serving rows (shared/reference/serving_benchmarks.csv): each row is simulated as the benchmark
ran it (closed-loop clients, the row's lengths and request count) and its output throughput and
mean TPOT compared with the measurement, uncalibrated (the engine's step-time profile) and
calibrated leave-one-out (step-time terms fitted to the other rows of the same deployment:
model, GPU, layout, engine and version; two terms from two or more rows, the scale alone from
one). Online rows' clients reach the engine one request at a time
(calibrate.benchmarks.CLIENT_TURNAROUND_S); offline rows (vLLM's benchmark_throughput.py) queue
every prompt at once and, in the 0.6 releases, run without chunked prefill
(`_offline_chunked_prefill`). Each row's engine release picks its step-time profile. Start-up log
rows: KV tokens predicted from the configuration the log states
(benchmarks/engine_validation.py's fixtures). Rows capcliff cannot express are listed with why.
"""

from __future__ import annotations

import os
import re
import statistics
import sys
from dataclasses import dataclass, replace
from pathlib import Path

import pandas as pd

from capcliff.analysis.deployment import Deployment, resolve, settings_of
from capcliff.analysis.sweep.step_fit import (
    Basis,
    PointFit,
    fit_bases,
    modeled_fixed_s,
    point_bases,
)
from capcliff.calibrate.benchmarks import (
    CLIENT_TURNAROUND_S,
    BenchmarkPoint,
    engine_of,
    layout_of,
)
from capcliff.catalog.catalogs import get_hardware, get_model, model_catalog
from capcliff.catalog.layout import Layout, parse_layout
from capcliff.errors import CapcliffError

ROOT = Path(__file__).parent.parent
# shared/reference next to the repository (or $CAPCLIFF_REFERENCE).
REFERENCE = Path(
    os.environ.get("CAPCLIFF_REFERENCE")
    or next(
        (p for p in (ROOT.parent / "shared" / "reference", Path("/work/shared/reference"))
         if p.is_dir()),
        ROOT.parent / "shared" / "reference",
    )
)  # fmt: skip
# Served checkpoints -> (catalog id, weight dtype when the card is the BF16 architecture).
CHECKPOINTS = {
    "meta-llama/llama-3.1-405b-fp8": ("llama-3.1-405b-fp8", ("llama-3.1-405b", "fp8")),
    "deepseek-ai/deepseek-r1": ("deepseek-r1", None),
    "deepseek-ai/deepseek-r1-0528": ("deepseek-r1", None),  # same architecture and FP8 format
    "nvidia/llama-3.3-70b-instruct-fp4": ("llama-3.3-70b-fp4", None),
    "nvidia/deepseek-r1-0528-fp4": ("deepseek-r1-0528-fp4", None),
}
GPUS = {"h100": "h100-sxm", "h200": "h200-sxm", "b200": "b200"}
# InferenceX (bench_serving with --random-range-ratio 0.8, num_prompts = 10 x conc: the row
# notes quote the InferenceMAX README).
INFERENCEX_RANGE_RATIO = 0.8


@dataclass(frozen=True)
class Row:
    """A serving row resolved to a deployment and a point, or the reason it cannot be."""

    row_id: str
    engine: str
    group: tuple[str, ...] = ()  # rows of one deployment share it
    point: BenchmarkPoint | None = None
    dep: Deployment | None = None
    layout: Layout | None = None
    reason: str = ""


def _model(cell: str) -> tuple[str, str | None] | None:
    """(catalog id, weight dtype) of a served checkpoint, or None when no card describes it."""
    repo = cell.split()[0].lower()
    found = CHECKPOINTS.get(repo)
    if found is None:
        return None
    cards = model_catalog()
    card, fallback = found
    if card in cards:
        return card, None
    return fallback if fallback and fallback[0] in cards else None


def _point(r: dict[str, object], row_id: str) -> BenchmarkPoint:
    """The row as its benchmark ran it (see the notes column of each source)."""
    c = int(re.match(r"\d+", str(r["concurrency"])).group())  # type: ignore[union-attr]
    isl, osl = int(float(str(r["input_len"]))), int(float(str(r["output_len"])))
    tool = str(r["benchmark_tool"])
    tpot = r["mean_tpot_ms"]
    point = BenchmarkPoint(
        row_id, c, isl, osl,
        client_turnaround_s=CLIENT_TURNAROUND_S,
        num_requests=None if pd.isna(r["num_requests"]) else int(float(str(r["num_requests"]))),
        output_throughput_tok_s=float(str(r["output_throughput_tok_s"])),
        mean_tpot_s=None if pd.isna(tpot) else float(str(tpot)) / 1e3,
        mean_ttft_s=None if pd.isna(r["mean_ttft_ms"]) else float(str(r["mean_ttft_ms"])) / 1e3,
    )  # fmt: skip
    if "benchmark_throughput" in tool:
        # Offline: num_prompts = the batch; the published tokens_per_second counts input and
        # output tokens (B34: 4 x (128 + 2,048) / 71.27 s = 122.1): output = c x osl / e2e.
        e2e_s = float(str(r["mean_e2e_latency_ms"])) / 1e3
        return replace(
            point, num_requests=c, output_throughput_tok_s=c * osl / e2e_s, client_turnaround_s=0.0
        )
    if "InferenceX" in tool:
        return replace(point, num_requests=10 * c, range_ratio=INFERENCEX_RANGE_RATIO)
    return point


def _max_model_len(flags: str) -> int | None:
    found = re.search(r"--max-model-len[ =](\d+)", flags)
    return int(found.group(1)) if found else None


def _server_context(context: int | None, engine: str) -> int | None:
    """A vLLM V0 server started without --max-model-len serves the model's whole context
    (`ModelConfig` derives max_model_len from max_position_embeddings), which decides V0's
    chunked-prefill default and its profile run (`engines.vllm_v0_chunked_prefill`). Other
    engines' rows keep the workload's length, as before (their budgets do not depend on it)."""
    return context if engine == "vllm-v0" else None


def _offline_chunked_prefill(r: dict[str, object], engine: str) -> bool | None:
    """vLLM V0's benchmark_throughput.py (0.6.x) declares `--enable-chunked-prefill` as a
    store_true flag and passes `enable_chunked_prefill=False` to LLM(...) unless it is given, so
    the engine's long-context default (chunked prefill above 32K) never applies: SchedulerConfig
    budgets max(max_model_len, 2048) tokens per step, the profile run (which sizes the
    activation peak, hence the KV pool) runs that many tokens, and prefills run in steps of their
    own. None: the engine's own default."""
    flags, tool = str(r["server_flags"]), str(r["benchmark_tool"])
    if engine != "vllm-v0" or "benchmark_throughput" not in tool or "chunked" in flags:
        return None
    return False


def _release(cell: str) -> str | None:
    """The release a row's engine_version cell names (sglang 0.4.3.post2, v0.5.12-cu130), or
    None (not recorded: the latest modelled profile)."""
    found = re.search(r"\d+\.\d+(?:\.\d+)?", cell)
    return found.group(0) if found else None


def serving_rows() -> list[Row]:
    """Every row of serving_benchmarks.csv, resolved or with the reason it is not."""
    table = pd.read_csv(REFERENCE / "serving_benchmarks.csv")
    rows = []
    for r in table.to_dict("records"):
        row_id = str(r["row_id"])
        engine = engine_of(str(r["engine"]), str(r["engine_version"])) or str(r["engine"])
        layout = layout_of(str(r["parallelism"]))
        model = _model(str(r["model"]))
        gpu = next((v for k, v in GPUS.items() if k in str(r["hardware"]).lower()), None)
        if pd.isna(r["input_len"]):
            reason = (
                "multi-turn/agentic trace replay: the row gives mean lengths and a prefix-cache "
                "hit rate, not the conversations to replay"
            )
        elif model is None:
            reason = f"no catalog card for {str(r['model']).split()[0]}"
        elif gpu is None:
            reason = f"no hardware card for {r['hardware']}"
        else:
            reason = ""
        if reason:
            rows.append(Row(row_id, engine, reason=reason))
            continue
        assert model is not None and gpu is not None
        settings = settings_of(
            {"engine": engine, "weight_dtype": model[1],
             "max_model_len": _max_model_len(str(r["server_flags"]))
             or _server_context(get_model(model[0]).arch.max_position_embeddings, engine),
             "enable_chunked_prefill": _offline_chunked_prefill(r, engine),
             "engine_version": _release(str(r["engine_version"]))}
        )  # fmt: skip
        try:
            dep = resolve(get_model(model[0]), get_hardware(gpu), settings)
        except CapcliffError as exc:
            rows.append(Row(row_id, engine, reason=str(exc)))
            continue
        group = (model[0], gpu, layout, engine, str(r["engine_version"]))
        rows.append(Row(row_id, engine, group, _point(r, row_id), dep, parse_layout(layout)))
    return rows


@dataclass(frozen=True)
class Outcome:
    """One row: uncalibrated and leave-one-out calibrated predictions."""

    row: Row
    fit: PointFit  # modeled = uncalibrated; calibrated = fitted on the other rows
    loo_terms: str  # what the leave-one-out fit used ("fixed_s+scale", "scale", "none")


def _loo(bases: list[Basis], i: int, fixed0: float, label: str) -> tuple[PointFit, str]:
    others = bases[:i] + bases[i + 1 :]
    terms = ("fixed_s", "scale") if len(others) >= 2 else ("scale",)
    if not others:
        modeled = bases[i].fixed.combine(fixed0, bases[i].variable, 1.0)
        return PointFit(bases[i].point, modeled, modeled), "none"
    fit = fit_bases(others, fixed0=fixed0, label=label, terms=terms, predict=[bases[i]])
    return fit.points[0], "+".join(terms)


def serving_outcomes(rows: list[Row]) -> list[Outcome]:
    """Simulate every expressible row; leave-one-out within each deployment."""
    out = []
    groups: dict[tuple[str, ...], list[Row]] = {}
    for row in rows:
        if not row.reason:
            groups.setdefault(row.group, []).append(row)
    for members in groups.values():
        dep, layout = members[0].dep, members[0].layout
        assert dep is not None and layout is not None
        bases = point_bases(dep, layout, [m.point for m in members if m.point is not None])
        fixed0, label = modeled_fixed_s(dep, layout)
        for i, member in enumerate(members):
            fit, terms = _loo(bases, i, fixed0, label)
            out.append(Outcome(member, fit, terms))
    return out


def _pct(x: float | None) -> str:
    return "-" if x is None else f"{x * 100:+.1f} %"


def _median(values: list[float]) -> str:
    if not values:
        return "-"
    signed = statistics.median(values) * 100
    absolute = statistics.median(abs(v) for v in values) * 100
    return f"{signed:+.1f} % (abs {absolute:.1f} %)"


def print_serving(outcomes: list[Outcome], rows: list[Row]) -> None:
    print("| row | engine | layout | clients | isl/osl | output tok/s | uncalibrated | LOO | "
          "TPOT ms | uncalibrated | LOO | TTFT s | uncalibrated | LOO fit | "
          "past cliff |")  # fmt: skip
    print("|---|---|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---|---|")
    for o in outcomes:
        p, f = o.row.point, o.fit
        assert p is not None and o.row.layout is not None
        tpot = "-" if p.mean_tpot_s is None else f"{p.mean_tpot_s * 1e3:.2f}"
        ttft = "-" if p.mean_ttft_s is None else f"{p.mean_ttft_s:.2f}"
        ttft_err = _pct(f.modeled.ttft_s / p.mean_ttft_s - 1) if p.mean_ttft_s else "-"
        print(
            f"| {o.row.row_id} | {o.row.engine} | {o.row.layout.name} | {p.concurrency} | "
            f"{p.input_len}/{p.output_len} | {p.output_throughput_tok_s:,.1f} | "
            f"{1 / f.modeled.s_per_token:,.1f} ({_pct(f.throughput_error(f.modeled))}) | "
            f"{1 / f.calibrated.s_per_token:,.1f} ({_pct(f.throughput_error(f.calibrated))}) | "
            f"{tpot} | {_pct(f.tpot_error(f.modeled))} | {_pct(f.tpot_error(f.calibrated))} | "
            f"{ttft} | {f.modeled.ttft_s:.2f} ({ttft_err}) | {o.loo_terms} | "
            f"{'yes' if f.modeled.preemptions else 'no'} |"
        )
    print()
    print("| engine | rows | throughput: uncalibrated | LOO | TPOT: uncalibrated | LOO |")
    print("|---|---:|---:|---:|---:|---:|")
    engines = sorted({o.row.engine for o in outcomes})
    for engine in [*engines, "modern (vllm V1, sglang, trtllm)", "all"]:
        chosen = [
            o for o in outcomes
            if engine == "all" or o.row.engine == engine
            or (engine.startswith("modern") and o.row.engine in ("vllm", "sglang", "trtllm"))
        ]  # fmt: skip
        cells = []
        for which in ("modeled", "calibrated"):
            errors = [o.fit.throughput_error(getattr(o.fit, which)) for o in chosen]
            cells.append(_median([e for e in errors if e is not None]))
        for which in ("modeled", "calibrated"):
            errors = [o.fit.tpot_error(getattr(o.fit, which)) for o in chosen]
            cells.append(_median([e for e in errors if e is not None]))
        print(f"| {engine} | {len(chosen)} | {' | '.join(cells)} |")
    print()
    print("Rows capcliff cannot express yet:")
    for row in rows:
        if row.reason:
            print(f"- {row.row_id} ({row.engine}): {row.reason}")


def print_startup() -> None:
    """KV tokens of the start-up logs: benchmarks/engine_validation.py's table over the rows
    with a fixture log, then the reference rows it cannot express and why."""
    sys.path.insert(0, str(Path(__file__).parent))
    import engine_validation  # type: ignore[import-not-found]

    engine_validation.main()
    covered = {row.row for row in engine_validation.ROWS}
    cards = model_catalog()
    repos = {card.hf_repo.lower() for card in cards.values()}
    print()
    print("Start-up log rows capcliff cannot express yet:")
    for name in ("vllm_kv_logs.csv", "sglang_trtllm_kv_logs.csv"):
        for r in pd.read_csv(REFERENCE / name).to_dict("records"):
            if r["row_id"] in covered:
                continue
            repo = str(r["model_hf_id"]).lower()
            why = "no catalog card for it" if repo not in repos else "no fixture log in tests/"
            print(f"- {r['row_id']} ({r['model_hf_id']}): {why}")


def main() -> None:
    rows = serving_rows()
    print("## Serving benchmarks\n")
    print_serving(serving_outcomes(rows), rows)
    print("\n## Start-up logs\n")
    print_startup()


if __name__ == "__main__":
    main()
