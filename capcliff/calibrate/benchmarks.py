"""Serving benchmark results -> points to fit step times on.

Three formats, told apart by the file name:

- `*.json`: `vllm bench serve --save-result` (also `benchmarks/benchmark_serving.py`): one run,
  keys `model_id`, `max_concurrency`, `num_prompts`, `completed`, `total_input_tokens`,
  `total_output_tokens`, `output_throughput`, `mean_tpot_ms`, `mean_ttft_ms`; with
  `--append-result` one such object per run, one after another (one per line).
- `*.jsonl`: SGLang `bench_serving --output-file`: one run per line, keys `max_concurrency`,
  `random_input_len`, `random_output_len`, `random_range_ratio`, `completed`,
  `total_input_tokens`, `total_output_tokens`, `output_throughput`, `mean_tpot_ms`,
  `mean_ttft_ms`; the `random_*` lengths only where `dataset_name` is a random dataset
  (RANDOM_DATASETS), else the totals' means.
- `*.csv`: columns named as in shared/reference/serving_benchmarks.csv: `concurrency`,
  `input_len`, `output_len`, `output_throughput_tok_s`, `mean_tpot_ms`, `mean_ttft_ms` (and
  optionally `row_id`, `num_requests`, `model`, `hardware` (the GPU as a whole word:
  `gpu_matches`), `num_gpus`, `parallelism`, `engine`, `engine_version`, used to keep the rows
  of one deployment; other columns are ignored).

Times in the files are milliseconds; points carry seconds. A run whose TPOT or TTFT is under
1 ms is refused as seconds written where milliseconds belong (no engine decodes a token in under
a millisecond: a TPOT of 0.024 is 24 ms), as is a TPOT past 10 s (units.MAX_SLO_TPOT_S); so are
non-positive or infinite measurements (but a TPOT of 0 beside outputs of one token, which
both bench tools write where no request had a second token, is read as no TPOT), a true or
false for a number, `1,024` for 1024, a row that repeats another, rows of another model than
the one calibrated (unless forced), a run paced at a finite `request_rate` (open loop, or
paced under a `max_concurrency`) or on a `ramp_up_strategy`, a result of another tool (no
`completed`), runs of different `backend`s in one file, a CSV column named twice, and a
throughput more than 4x off what the run's own clients, lengths and latencies give
(MAX_LITTLE_RATIO).
"""

from __future__ import annotations

import csv
import io
import json
import math
import re
import stat
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from capcliff.catalog.catalogs import current_repo_name
from capcliff.catalog.layout import MAX_GPUS
from capcliff.errors import InputError
from capcliff.files import (
    DuplicateKeyError,
    finite_number,
    number_text,
    parse_json,
    read_text,
    refuse_non_finite,
    unique_object,
)
from capcliff.units import MAX_SLO_TPOT_S

MS = 1e-3
# Sanity bounds on a run's counts (the simulator's own, sim.workload_rules, which this layer sits
# below): requests or clients, and tokens per request.
MAX_REQUESTS = 10_000_000
MAX_TOKENS_PER_REQUEST = 1 << 30
# Set: a mean TTFT past a day (86,400,000 ms) is another unit or figure (1e12 ms was accepted).
MAX_MEAN_TTFT_MS = 86_400_000.0
# Under this many milliseconds a mean TPOT or TTFT is taken to be seconds in a ms column.
LEAST_PLAUSIBLE_MS = 1.0
REQUIRED_COLUMNS = ("concurrency", "input_len", "output_len")
MEASURED_COLUMNS = ("output_throughput_tok_s", "mean_tpot_ms")


# Named assumption: an online benchmark's requests reach the engine one at a time, never in the
# same instant: a client sends its next request only once the last streamed chunk of the previous
# one reached it over HTTP, and the server tokenizes requests in turn before the scheduler, which
# polls for new requests once per step (SGLang's event loop: recv_requests() at the top of each
# iteration; vLLM's engine core likewise between steps) and starts its next step as soon as one
# ends. So a closed-loop client's next request (and each request of a concurrent burst after the
# first) misses the step already under way and joins at the one after it. That is all the figure
# models: 1 us, shorter than any step, keeps the timings linear in the fitted step terms
# (analysis.step_fit); a real turnaround (HTTP and tokenization, about a millisecond) also falls
# inside a step of these engines. Under attention DP it is what splits ranks into groups whose
# prefills stall each other (docs/validation.md, SGLang 0.4.3 rows).
CLIENT_TURNAROUND_S = 1e-6


@dataclass(frozen=True)
class BenchmarkPoint:
    """One measured run: `concurrency` clients, fixed (or ranged) lengths, what it measured.
    `client_turnaround_s`: see CLIENT_TURNAROUND_S (0 for an offline batch, whose requests are
    all queued before the first step)."""

    row_id: str
    concurrency: int
    input_len: int
    output_len: int
    num_requests: int | None = None
    range_ratio: float = 1.0  # lengths uniform in [ratio x len, len] (SGLang random dataset)
    output_throughput_tok_s: float | None = None
    mean_tpot_s: float | None = None
    mean_ttft_s: float | None = None
    client_turnaround_s: float = 0.0  # set from CLIENT_TURNAROUND_S by the readers
    # leading prompt tokens every request of the run shares (a chat template's system message):
    # the engine's prefix cache computes them once (0: the prompts share nothing)
    shared_prefix_tokens: int = 0


@dataclass(frozen=True)
class DeploymentFilter:
    """Which rows of a benchmark CSV describe the deployment being calibrated (None: any)."""

    hf_repo: str | None = None  # the model card's repository; revisions (-0528) match too
    gpu: str | None = None  # hardware id, e.g. h200-sxm: its chip (H200) must appear (gpu_matches)
    gpus: int | None = None
    layout: str | None = None  # e.g. tp8, tp4-ep4
    engine: str | None = None  # vllm, vllm-v0, sglang, trtllm
    model_names: tuple[str, ...] = ()  # other names of the model (its id, its folder's name)
    any_model: bool = False  # --force: fit rows whatever model they name


# Suffixes that name a variant of the same weights' shape (chat tuning, HF conversion, a dated
# revision such as DeepSeek-R1-0528): a fit on one holds for the other.
_VARIANT = re.compile(r"(-(instruct|chat|hf|it|base|\d{4}))+$")


def _base_name(name: str) -> str:
    """A model name's last part, variants (`_VARIANT`) stripped, under the Hub's current name
    (`Meta-Llama-3.1-8B-Instruct` is `Llama-3.1-8B`'s: a vLLM 0.6 result was refused as another
    model's)."""
    last = current_repo_name(name.strip().lower().rstrip("/").split("/")[-1])
    return _VARIANT.sub("", last)


def model_matches(row_model: str, keep: DeploymentFilter) -> bool:
    """Whether a row's model (`deepseek-ai/DeepSeek-R1-0528 (FP8 ...)`) is the calibrated one:
    the same last name as its repository or any of its names, variants (`_VARIANT`) alike."""
    words = row_model.split()
    names = {_base_name(n) for n in (keep.hf_repo or "", *keep.model_names)} - {""}
    return bool(words) and _base_name(words[0]) in names


# A number at the start of a cell, or an infinity (read so that it is refused, not skipped).
_CELL_NUMBER = re.compile(
    r"\s*([-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?|[-+]?inf(?:inity)?(?![a-z]))", re.I
)


def _number(value: Any) -> float | None:
    """A float from a cell (`4 (batch_size column)` reads 4); None when empty. A JSON true or
    false, or a number written with thousands separators (`1,024`, which read as 1), is an
    InputError: neither says which number was meant."""
    if value is None:
        return None
    if isinstance(value, bool):
        raise InputError(f"must be a number, got {str(value).lower()}")
    if isinstance(value, int | float):
        return None if value != value else float(value)  # NaN is empty
    if not str(value).strip():
        return None
    found = _CELL_NUMBER.match(str(value))
    if found is None:  # "abc", "nan", "true" were read as an empty cell: the row was dropped
        raise InputError(f"must be a number, got {str(value).strip()!r:.40}")
    if re.match(r",\d{3}", str(value)[found.end() :]):
        raise InputError(f"{str(value).strip()!r}: write numbers without thousands separators")
    return float(found.group(1))  # "inf": refused by the caller


# A word after a cell's number that changes its meaning: a time unit other than a ms column's
# ("1.5 s" was read as 1.5 ms), or a multiplier ("1.2k" as 1.2 tokens/s).
_CELL_UNIT = re.compile(r"\s*(µs|μs|[a-z]+)", re.I)
_OTHER_TIME_UNITS = frozenset({
    "s", "sec", "secs", "second", "seconds", "min", "mins", "minute", "minutes",
    "h", "hr", "hrs", "hour", "hours", "us", "µs", "μs", "ns",
})  # fmt: skip
_MULTIPLIERS = frozenset({"k", "m", "g", "b"})  # thousand, million, billion (1.2k, 3M)


def _unit_problem(value: str, key: str) -> str | None:
    """Why the word after a cell's number contradicts its column (None: it does not)."""
    found = _CELL_NUMBER.match(value)
    unit = _CELL_UNIT.match(value[found.end() :]) if found else None
    word = unit.group(1) if unit else ""
    if key.endswith("_ms") and word.lower() in _OTHER_TIME_UNITS:
        return f"{value.strip()!r:.40} is in {word}; the column holds milliseconds"
    if word.lower() in _MULTIPLIERS:
        return f"{value.strip()!r:.40}: write the number whole, without the {word}"
    return None


def _cell(row: dict[str, Any], key: str, row_id: str) -> float | None:
    """`_number` of `row[key]`, its InputError naming the row and the column."""
    try:
        number = _number(row.get(key))
    except InputError as exc:
        raise InputError(f"{row_id}: {key}: {exc}") from None
    if number is not None and isinstance(row.get(key), str):
        problem = _unit_problem(row[key], key)
        if problem is not None:
            raise InputError(f"{row_id}: {key}: {problem}")
    return number


def layout_of(parallelism: str) -> str:
    """capcliff's layout name for a `parallelism` cell: `TP8` tp8, `TP4 + EP4 (no DP
    attention)` tp4-ep4, `TP8 + DP attention` dpa8 (SGLang's --enable-dp-attention sets dp_size
    to tp_size: every rank runs its own attention, the MoE layers span all of them)."""
    text = parallelism.lower().replace("no dp attention", "")
    tp = re.search(r"tp\s*(\d+)", text)
    ep = re.search(r"ep\s*(\d+)", text)
    if "dp attention" in text or "dp-attention" in text:
        ranks = tp.group(1) if tp else "1"
        return f"dpa{ranks}" + (f"-ep{ep.group(1)}" if ep and int(ep.group(1)) > 1 else "")
    name = f"tp{tp.group(1)}" if tp else "tp1"
    if ep and int(ep.group(1)) > 1:
        name += f"-ep{ep.group(1)}"
    return name


def engine_of(engine: str, version: str) -> str | None:
    """capcliff's engine name for an `engine` and `engine_version` cell. vLLM before 0.8 ran
    the V0 engine by default (V1 became the default in 0.8.0)."""
    name = engine.lower()
    if "sglang" in name:
        return "sglang"
    if "tensorrt" in name or "trt" in name:
        return "trtllm"
    if "vllm" not in name:
        return None
    if "v1 engine" in version.lower():
        return "vllm"
    release = re.search(r"(\d+)\.(\d+)", version)
    if release and (int(release.group(1)), int(release.group(2))) < (0, 8):
        return "vllm-v0"
    return "vllm"


def _matches(row: dict[str, Any], keep: DeploymentFilter) -> bool:
    """Whether a CSV row belongs to the deployment (columns it lacks do not exclude it)."""
    checks: list[bool] = []
    if not keep.any_model and _named(row.get("model")):
        checks.append(model_matches(str(row["model"]), keep))
    if keep.gpu and "hardware" in row:
        checks.append(gpu_matches(keep.gpu, str(row["hardware"])))
    if keep.gpus is not None and "num_gpus" in row:
        checks.append(_gpu_count(row) == keep.gpus)
    if keep.layout and "parallelism" in row:
        checks.append(layout_of(str(row["parallelism"])) == keep.layout)
    if keep.engine and "engine" in row:
        found = engine_of(str(row["engine"]), str(row.get("engine_version", "")))
        checks.append(found == keep.engine)
    return all(checks)


# Form factors a `hardware` cell may name; a row of another one than the GPU id's is another GPU
# (an H100 PCIe reads 2.0 TB/s, the SXM 3.35).
_FORM_FACTORS = ("sxm", "pcie", "nvl")


def gpu_matches(gpu: str, hardware: str) -> bool:
    """Whether a `hardware` cell (`8x NVIDIA H200 SXM5 141GB`, `8xH200`) names the GPU id `gpu`
    (h200-sxm): its chip as a whole word, so that GH200 is not H200 nor GB200 B200 (a substring
    test fitted GH200 rows as H200's), and no other form factor than the id's."""
    # 8xH200: a count, then the chip (MI300X's x is its own)
    text = re.sub(r"(?<![a-z0-9])(\d+)\s*x\s*", r"\1 x ", hardware.lower())
    chip, _, form = gpu.lower().partition("-")
    if not re.search(rf"(?<![a-z0-9]){re.escape(chip)}(?![a-z0-9])", text):
        return False
    if form not in _FORM_FACTORS:  # GB200 NVL72 names a rack, not a form factor of the id
        return True
    named = {f for f in _FORM_FACTORS if re.search(rf"(?<![a-z]){f}", text)}
    return not named or form in named


def _gpu_count(row: dict[str, Any]) -> int | None:
    """A row's `num_gpus` (None when empty); a cell that is no whole count >= 1 is an
    InputError (-1 or "abc" read as another deployment and the row was dropped unsaid)."""
    row_id = row.get("row_id") or "a row"
    value = _cell(row, "num_gpus", row_id)
    if value is None:
        return None
    return _count(value, row_id, "num_gpus", MAX_GPUS, whole=True)


def _named(value: Any) -> bool:
    return isinstance(value, str) and bool(value.strip())


def _other_models(rows: list[dict[str, Any]], key: str, keep: DeploymentFilter) -> list[str]:
    """The models rows name that are not the calibrated one (empty under --force)."""
    if keep.any_model:
        return []
    named = [str(r[key]).split()[0] for r in rows if _named(r.get(key))]
    return sorted({m for m in named if not model_matches(m, keep)})


def _refuse_other_model(path: Path, others: list[str], keep: DeploymentFilter) -> None:
    target = keep.hf_repo or (keep.model_names[0] if keep.model_names else "--model")
    raise InputError(
        f"{path}: model: the rows are of {', '.join(others)}, not {target}; calibrate with "
        "--model naming that model, or pass --force to fit them to this one"
    )


def _measure(value: float | None, row_id: str, column: str, *, ms: bool) -> float | None:
    """`value` (None: not measured) if positive and finite; in ms columns at least 1 ms, and a
    TPOT at most MAX_SLO_TPOT_S."""
    if value is None:
        return None
    if not math.isfinite(value) or value <= 0:
        raise InputError(f"{row_id}: {column}: must be a finite number > 0, got {value:g}")
    if ms and value < LEAST_PLAUSIBLE_MS:
        raise InputError(
            f"{row_id}: {column}: {value:g} ms is under 1 ms; these look like seconds: give "
            f"milliseconds ({value:g} s = {value * 1e3:g} ms)"
        )
    if column == "mean_ttft_ms" and value > MAX_MEAN_TTFT_MS:
        raise InputError(
            f"{row_id}: {column}: {value:g} ms is past a day; these look like microseconds or "
            "another figure: give milliseconds to the first token"
        )
    if column == "mean_tpot_ms" and value * MS > MAX_SLO_TPOT_S:
        raise InputError(
            f"{row_id}: {column}: {value:g} ms per token is past {MAX_SLO_TPOT_S:g} s; these look "
            "like microseconds or another figure: give milliseconds per output token"
        )
    return value * MS if ms else value


def _tpot_of(tpot_ms: float | None, output_len: float | None) -> float | None:
    """The run's TPOT in ms, None where it measured none: a run whose requests produced one
    output token each has no time per output token after the first, and `vllm bench serve` and
    SGLang's bench_serving write 0 for it (`np.mean(tpots or 0) * 1000`, tpots gathered only
    `if output_len > 1`: vllm/benchmarks/serve.py and python/sglang/bench_serving.py,
    calculate_metrics); it was refused as a TPOT <= 0. A 0 beside longer outputs is refused."""
    if tpot_ms == 0 and output_len is not None and output_len <= 1:
        return None
    return tpot_ms


def _count(value: float | None, row_id: str, column: str, most: int, *, whole: bool = False) -> int:
    """A count (clients, tokens, requests) from a cell: finite, 1 to `most`, rounded; `whole`:
    a count of clients or requests, which has no fraction (2.5 clients was read as 2)."""
    if value is None or not math.isfinite(value) or not 1 <= round(value) <= most:
        raise InputError(f"{row_id}: {column}: must be a number in 1 to {most:,}, got {value}")
    if whole and value != round(value):
        raise InputError(f"{row_id}: {column}: must be a whole number, got {value:g}")
    return round(value)


def _ratio(value: float | None, row_id: str) -> float:
    """SGLang's random_range_ratio: lengths uniform in [ratio x len, len]; 1 when absent."""
    if value is None:
        return 1.0
    if not 0 <= value <= 1:  # NaN fails too
        raise InputError(f"{row_id}: random_range_ratio: must be in [0, 1], got {value}")
    return value


# Set: how far a run's output throughput may sit from what its own clients, lengths and mean
# latencies give by Little's law (clients x output_len / (TTFT + (output_len - 1) x TPOT) for
# closed-loop clients); the public rows shipped (shared/reference/serving_benchmarks.csv) sit
# within 4 % of it. Past 4x either way the figures are of different runs or in other units (a
# throughput of 1 tok/s beside 8 clients at 14 ms TPOT was fitted, with a +46,398 % residual).
MAX_LITTLE_RATIO = 4.0


def _refuse_inconsistent(point: BenchmarkPoint) -> None:
    """An InputError when `point`'s throughput and latencies cannot describe one run."""
    throughput, tpot, ttft = point.output_throughput_tok_s, point.mean_tpot_s, point.mean_ttft_s
    if throughput is None or tpot is None or ttft is None:
        return
    clients = min(point.concurrency, point.num_requests or point.concurrency)
    implied = clients * point.output_len / (ttft + (point.output_len - 1) * tpot)
    if not 1 / MAX_LITTLE_RATIO <= throughput / implied <= MAX_LITTLE_RATIO:
        raise InputError(
            f"{point.row_id}: output_throughput: {throughput:,.4g} tok/s, where {clients:,} "
            f"clients of {point.output_len:,} output tokens at TTFT {ttft * 1e3:,.4g} ms and TPOT "
            f"{tpot * 1e3:,.4g} ms give about {implied:,.4g} tok/s; the figures are of different "
            "runs or units"
        )


def _refuse_duplicates(points: list[BenchmarkPoint]) -> list[BenchmarkPoint]:
    """`points`, or an InputError naming a row that repeats another (same run, same figures)
    or whose figures contradict each other (`_refuse_inconsistent`)."""
    seen: dict[tuple[object, ...], str] = {}
    for p in points:
        _refuse_inconsistent(p)
        key = (
            p.concurrency, p.input_len, p.output_len, p.num_requests, p.range_ratio,
            p.output_throughput_tok_s, p.mean_tpot_s, p.mean_ttft_s,
        )  # fmt: skip
        if key in seen:
            raise InputError(
                f"{p.row_id}: duplicates {seen[key]} (same run, same figures); remove one"
            )
        seen[key] = p.row_id
    return points


def _point(row: dict[str, Any], row_id: str) -> BenchmarkPoint | None:
    """A point from a CSV row, or None when it lacks lengths, concurrency or a measurement."""
    values = {k: _cell(row, k, row_id) for k in REQUIRED_COLUMNS}
    if any(v is None for v in values.values()):
        return None
    throughput = _cell(row, "output_throughput_tok_s", row_id)
    throughput = _measure(throughput, row_id, "output_throughput_tok_s", ms=False)
    tpot = _cell(row, "mean_tpot_ms", row_id)
    tpot = _measure(_tpot_of(tpot, values["output_len"]), row_id, "mean_tpot_ms", ms=True)
    if throughput is None and tpot is None:
        return None
    requests = _cell(row, "num_requests", row_id)
    return BenchmarkPoint(
        row_id=row_id,
        concurrency=_count(values["concurrency"], row_id, "concurrency", MAX_REQUESTS, whole=True),
        input_len=_count(values["input_len"], row_id, "input_len", MAX_TOKENS_PER_REQUEST),
        output_len=_count(values["output_len"], row_id, "output_len", MAX_TOKENS_PER_REQUEST),
        num_requests=None
        if requests is None
        else _count(requests, row_id, "num_requests", MAX_REQUESTS, whole=True),
        output_throughput_tok_s=throughput,
        mean_tpot_s=tpot,
        mean_ttft_s=_measure(_cell(row, "mean_ttft_ms", row_id), row_id, "mean_ttft_ms", ms=True),
        # vLLM's offline benchmark_throughput.py queues every prompt before the first step
        client_turnaround_s=0.0
        if "benchmark_throughput" in str(row.get("benchmark_tool", ""))
        else CLIENT_TURNAROUND_S,
    )


def _csv_rows(path: Path) -> tuple[list[str], list[tuple[int, dict[str, str]]]]:
    """(the header's column names, each non-blank data row with its line number) of a CSV file;
    cells are strings, a missing cell is empty (the standard library's reader: no dependency)."""
    text = read_text(path, field="benchmark")
    try:
        reader = csv.DictReader(io.StringIO(text, newline=""), restval="")
        columns = list(reader.fieldnames or [])
        rows = [(reader.line_num, row) for row in reader if any(v for v in row.values() if v)]
    except csv.Error as exc:
        raise InputError(f"{path}: cannot read as CSV ({exc})") from None
    if not columns:
        raise InputError(f"{path}: cannot read as CSV (no header row)")
    for line, row in rows:  # the reader files cells past the header under None, unread
        extra = row.get(None)
        if extra:
            raise InputError(
                f"{path}: line {line}: {len(columns) + len(extra)} cells where the header names "
                f'{len(columns)}; quote a cell that holds a comma ("1,500") or name the column'
            )
    _refuse_other_csv(path, columns)
    twice = [c for n, c in enumerate(columns) if c.strip() and c in columns[:n]]
    if twice:  # the reader keeps the last cell of a name: the first column's figures were lost
        raise InputError(
            f"{path}: column {twice[0]!r:.40} is named twice in the header; keep one (which "
            "of them holds the run's figures is not said)"
        )
    return columns, rows


# Other tools' CSV exports, by their header: genai-perf's profile_export_genai_perf.csv (one row
# per metric under `Metric`), guidellm's benchmarks.csv (a header of three rows, groups first:
# "Run Info" named once per column, read as a column named twice).
_OTHER_CSVS = (
    (("Metric",), "genai-perf's profile_export_genai_perf.csv (one row per metric)"),
    (("Run Info", "Benchmark"), "guidellm's benchmarks.csv (a header of three rows)"),
)


def _refuse_other_csv(path: Path, columns: list[str]) -> None:
    """An InputError naming the tool when the header is another tool's CSV export."""
    if any(c in columns for c in (*REQUIRED_COLUMNS, *MEASURED_COLUMNS)):
        return
    for names, tool in _OTHER_CSVS:
        if all(n in columns for n in names):
            raise InputError(
                f"{path}: column concurrency, input_len, output_len missing: this is {tool}, "
                f"which capcliff does not read; it reads {READS}"
            )


# The latency columns read, in milliseconds; one named in another unit (mean_tpot_s,
# mean_ttft_us) was read as missing and the fit ran unsaid on the other figures.
MS_COLUMNS = ("mean_tpot_ms", "mean_ttft_ms")
_OTHER_UNIT_COLUMN = re.compile(r"^(mean_tpot|mean_ttft)_([a-zµμ]+)$")


def _refuse_other_units(path: Path, columns: list[str]) -> None:
    for column in columns:
        found = _OTHER_UNIT_COLUMN.match(column.strip().lower())
        want = f"{found.group(1)}_ms" if found else ""
        if found and found.group(2) != "ms" and want not in columns:
            raise InputError(
                f"{path}: column {column!r:.40}: capcliff reads {want} (milliseconds); give the "
                "figures in ms under that name"
            )


def read_benchmark_csv(path: Path, keep: DeploymentFilter) -> list[BenchmarkPoint]:
    """The rows of a benchmark CSV that belong to `keep`'s deployment and can be fitted."""
    columns, rows = _csv_rows(path)
    _refuse_other_units(path, columns)
    missing = [c for c in REQUIRED_COLUMNS if c not in columns]
    if missing or not any(c in columns for c in MEASURED_COLUMNS):
        need = ", ".join(REQUIRED_COLUMNS) + " and " + " or ".join(MEASURED_COLUMNS)
        what = ", ".join(missing) if missing else " and ".join(MEASURED_COLUMNS)
        raise InputError(f"{path}: column {what} missing; a benchmark CSV needs {need}")
    points = []
    for line, row in rows:
        if not _matches(row, keep):
            continue
        row_id = row.get("row_id") or f"row {line}"
        try:
            point = _point(row, row_id)
        except InputError as exc:
            raise InputError(f"{path.name}: {exc}") from None
        if point is not None:
            points.append(point)
    if not points and not keep.any_model:  # rows of the deployment, but of another model?
        anyone = replace(keep, any_model=True)
        others = _other_models([r for _, r in rows if _matches(r, anyone)], "model", keep)
        if others:
            _refuse_other_model(path, others, keep)
    try:
        return _refuse_duplicates(points)
    except InputError as exc:
        raise InputError(f"{path.name}: {exc}") from None


def _json_number(run: dict[str, Any], key: str, row_id: str) -> float | None:
    """`run[key]` as a float (None when absent or null); text, a list, an object or a boolean is
    an InputError (`"abc"` or `[1]` read as absent, `"12"` as 12)."""
    value = run.get(key)
    if value is None:
        return None
    if isinstance(value, str):
        _cell(run, key, row_id)  # "1,024": its own hint
        raise InputError(f"{row_id}: {key}: must be a number, not text, got {value!r:.40}")
    if isinstance(value, bool) or not isinstance(value, int | float):
        shown = str(value).lower() if isinstance(value, bool) else f"{value!r:.40}"
        raise InputError(f"{row_id}: {key}: must be a number, got {shown}")
    return float(value)


def _run_point(run: dict[str, Any], row_id: str) -> BenchmarkPoint:
    """A point from one vLLM or SGLang result object (`random_input_len` and
    `random_output_len`, SGLang's, else the token totals over the completed requests)."""

    def cell(key: str) -> float | None:
        return _json_number(run, key, row_id)

    _refuse_paced(run, row_id)
    _refuse_other_tool(run, row_id)
    model = run.get("model_id")
    if model is not None and not isinstance(model, str):  # -1 or [1]: no model to check
        raise InputError(f"{row_id}: model_id: must be the model's name, got {model!r:.40}")
    prompts = cell("num_prompts")
    found = cell("completed")
    if found is None:
        found = prompts
    if not found:  # completed 0 fell back to num_prompts and was fitted
        raise InputError(f"{row_id}: completed: no finished requests in the result")
    completed = _count(found, row_id, "completed", MAX_REQUESTS, whole=True)
    if prompts is not None and _count(prompts, row_id, "num_prompts", MAX_REQUESTS, whole=True) < (
        completed
    ):
        raise InputError(
            f"{row_id}: completed: {completed:,} requests finished of {prompts:,.0f} sent"
        )
    inputs = cell("total_input_tokens") or 0
    outputs = cell("total_output_tokens") or 0
    # the lengths asked (SGLang's random datasets), else the mean over the finished requests;
    # 0 asked is refused as asked, not read as absent (it fell back to the totals)
    random = _random_lengths(run, row_id)
    asked_in = cell("random_input_len") if random else None
    asked_out = cell("random_output_len") if random else None
    ratio = _ratio(cell("random_range_ratio") if random else None, row_id)
    asked_in, asked_out, ratio = _lengths_run(
        run, (asked_in, asked_out, ratio), (inputs, outputs), completed
    )
    isl, isl_name = _asked_or_mean(asked_in, inputs / completed, "input")
    osl, osl_name = _asked_or_mean(asked_out, outputs / completed, "output")
    # no cap: all at once; a cap past the requests sent caps nothing (10,000,000 ran for minutes)
    cap = cell("max_concurrency")
    clients = completed if cap is None or completed < cap <= MAX_REQUESTS else cap
    throughput = cell("output_throughput")
    streamed = _streamed(cell("mean_itl_ms"), osl)
    tpot = _tpot_of(cell("mean_tpot_ms"), osl) if streamed else None
    if throughput is None and tpot is None:  # a fit had nothing to fit (a traceback before)
        raise InputError(
            f"{row_id}: output_throughput and mean_tpot_ms: both missing; a run needs one to fit"
        )
    return BenchmarkPoint(
        row_id=row_id,
        concurrency=_count(clients, row_id, "max_concurrency", MAX_REQUESTS, whole=True),
        input_len=_count(isl, row_id, isl_name, MAX_TOKENS_PER_REQUEST),
        output_len=_count(osl, row_id, osl_name, MAX_TOKENS_PER_REQUEST),
        num_requests=completed,
        range_ratio=ratio,
        output_throughput_tok_s=_measure(throughput, row_id, "output_throughput", ms=False),
        mean_tpot_s=_measure(tpot, row_id, "mean_tpot_ms", ms=True),
        mean_ttft_s=_measure(
            cell("mean_ttft_ms") if streamed else None, row_id, "mean_ttft_ms", ms=True
        ),
        client_turnaround_s=CLIENT_TURNAROUND_S,
    )


def _streamed(itl_ms: float | None, output_len: float) -> bool:
    """Whether the run streamed its tokens, so that its TTFT and TPOT were timed. A run without
    streaming times neither: vLLM writes a TTFT of 0 for a backend that does not stream
    (benchmark_serving.py: "ttfts is empty if streaming is not supported by backend",
    `np.mean(ttfts or 0)`), and SGLang's `--disable-stream` sets a request's TTFT to its whole
    latency (bench_serving.py: "For non-streaming, TTFT = total latency"), so that its TPOT is 0
    or, timed a hair after the latency, a hair below 0; either tool's ITLs are then empty, a mean
    ITL of 0 beside outputs of more than one token. Such a run was refused ("mean_tpot_ms: must
    be a finite number > 0, got 0") or had its TPOT read as seconds; its throughput stands. A TTFT
    of 0 beside timed ITLs is no run's, and is refused as before."""
    return not (itl_ms == 0 and output_len > 1)


# Set: how far, in standard errors of the mean, a run's mean length (its token totals over the
# finished requests) may sit from the mean of the random lengths it asked, plus 2 % for counts
# the server and the client tokenize apart, before the asked lengths are taken not to be what
# ran. Requests of a chat backend (whose payload sends no ignore_eos) or of
# `--disable-ignore-eos` stop at the model's end of sequence; SGLang 0.2 wrote its random_*
# defaults on every row, ShareGPT's too, with no dataset_name to say so: fitted at 1,024 tokens out
# where the totals said 412.
LENGTH_SPREAD_SE = 3.0
LENGTH_SLACK = 0.02


def _lengths_run(
    run: dict[str, Any],
    asked: tuple[float | None, float | None, float],
    totals: tuple[float, float],
    completed: int,
) -> tuple[float | None, float | None, float]:
    """(input length, output length, range ratio) the requests ran, of those asked (None: the
    totals' mean). A random dataset sends the input lengths it draws (SGLang records each
    prompt_len as drawn), so totals that contradict them are refused downstream as asked; its
    outputs may stop at EOS short of the length asked: then the outputs' mean, and one range
    for both lengths no longer holds (the inputs' mean too, unless the lengths were fixed). A
    row that names no dataset (SGLang 0.2 wrote the random_* defaults on every row) ran the
    totals' means where either length contradicts them."""
    asked_in, asked_out, ratio = asked
    inputs, outputs = totals
    ran_in = _ran_as_asked(asked_in, ratio, inputs, completed)
    ran_out = _ran_as_asked(asked_out, ratio, outputs, completed)
    if run.get("dataset_name") is None and not (ran_in and ran_out):
        return None, None, 1.0
    if not ran_out:
        return (asked_in if ratio == 1 else None), None, 1.0
    return asked_in, asked_out, ratio


def _ran_as_asked(asked: float | None, ratio: float, total: float, completed: int) -> bool:
    """Whether `total` tokens over `completed` requests fit lengths drawn as SGLang's random
    dataset draws them, uniform integers in [max(int(asked x ratio), 1), asked]
    (bench_serving.py, sample_random_requests); True where there is nothing to compare."""
    if asked is None or not total or not math.isfinite(asked) or asked < 1:
        return True
    low = max(int(asked * ratio), 1)
    mean = (low + asked) / 2
    spread = (asked - low + 1) / math.sqrt(12 * completed)  # a uniform's spread, n / sqrt(12)
    return abs(total / completed - mean) <= LENGTH_SPREAD_SE * spread + LENGTH_SLACK * mean


# SGLang bench_serving's datasets whose lengths are its `--random-input-len`,
# `--random-output-len` and `--random-range-ratio` (bench_serving.py: sample_random_requests
# serves "random" and "random-ids"). Its result row writes those three arguments whatever the
# dataset (`"random_input_len": args.random_input_len`), so a ShareGPT run's row carries the
# defaults (1024/1024), which were fitted as its lengths; any other dataset's lengths are the
# means of its totals, as for a vLLM result.
RANDOM_DATASETS = ("random", "random-ids")


def _random_lengths(run: dict[str, Any], row_id: str) -> bool:
    """Whether the run's `random_*` fields are its lengths (no `dataset_name`, as older SGLang
    rows and capcliff's own tests write, or a random dataset)."""
    dataset = run.get("dataset_name")
    if dataset is None:
        return True
    if not isinstance(dataset, str):  # 7 or ["random"] read as a random dataset unsaid
        raise InputError(
            f"{row_id}: dataset_name: must be the bench tool's dataset name (random, sharegpt "
            f"...), got {dataset!r:.40}"
        )
    return dataset in RANDOM_DATASETS


# Keys that say a result object is a run of `vllm bench serve` or SGLang's `bench_serving`
# (vllm/benchmarks/serve.py and python/sglang/bench_serving.py both write `completed`; vLLM also
# `num_prompts`).
_RUN_KEYS = ("completed", "num_prompts")


# What capcliff reads as benchmark results, for the refusals of what it does not.
READS = (
    "`vllm bench serve --save-result` JSON, SGLang `bench_serving --output-file` JSONL, or a CSV "
    "with concurrency, input_len, output_len and output_throughput_tok_s or mean_tpot_ms"
)
# Other tools' result files, told by keys only they write (each tool's source: genai-perf
# json_exporter.py, AIPerf's export, perf_analyzer's profile_export.json, trtllm-bench
# reporting.py get_statistics_dict, guidellm's GenerativeBenchmarksReport, llmperf's flattened
# LLMPerfResults, vllm bench throughput/latency --output-json, SGLang bench_offline_throughput and
# bench_one_batch_server): the refusal names the file's tool. Their figures are aggregates over a
# run whose clients the file does not say alike (genai-perf's concurrency sits in a version's
# own input_config, guidellm's in its strategy, llmperf's per-request throughput beside the
# overall one, trtllm-bench's measured mean concurrency of an offline run).
_OTHER_TOOLS: tuple[tuple[frozenset[str], str], ...] = (
    (frozenset({"records", "input_config"}), "AIPerf's profile_export_aiperf.json"),
    (frozenset({"input_config"}), "genai-perf's profile_export_genai_perf.json"),
    (frozenset({"experiments", "service_kind"}), "perf_analyzer's profile_export.json"),
    (frozenset({"engine", "performance"}), "a `trtllm-bench --report_json` report"),
    (frozenset({"benchmarks"}), "a guidellm report"),
    (frozenset({"results_num_completed_requests"}), "an llmperf summary"),
    (frozenset({"elapsed_time", "requests_per_second"}), "`vllm bench throughput --output-json`"),
    (frozenset({"avg_latency"}), "`vllm bench latency --output-json`"),
    (frozenset({"successful_requests"}), "SGLang bench_offline_throughput's result"),
    (frozenset({"batch_size", "last_ttft"}), "SGLang bench_one_batch_server's result"),
)


def _other_tool(run: dict[str, Any]) -> str | None:
    """The tool whose result file `run` is (`_OTHER_TOOLS`), None if none is recognised."""
    return next((name for keys, name in _OTHER_TOOLS if keys <= run.keys()), None)


def _refuse_other_tool(run: dict[str, Any], row_id: str) -> None:
    """A result of another tool (genai-perf's profile export, `vllm bench throughput` or `latency`,
    SGLang's bench_one_batch_server or bench_offline_throughput, a trtllm-bench report) read as
    a run with nothing finished: "completed: no finished requests", which named no cause."""
    if any(key in run for key in _RUN_KEYS):
        return
    tool = _other_tool(run)
    if tool is not None:
        raise InputError(
            f"{row_id}: completed: missing: this is {tool}, which capcliff does not read; it "
            f"reads {READS}"
        )
    raise InputError(
        f"{row_id}: completed: missing, so not a result of `vllm bench serve --save-result` or "
        "SGLang `bench_serving --output-file` (genai-perf, offline throughput and latency "
        "results are not read); give those, or a CSV with concurrency, input_len, output_len "
        "and output_throughput_tok_s or mean_tpot_ms"
    )


def _asked_or_mean(asked: float | None, mean: float, kind: str) -> tuple[float, str]:
    """(tokens per request, the field they come from): `random_{kind}_len` as asked, else
    `mean` (the totals over the finished requests)."""
    if asked is None:
        return mean, f"{kind} tokens per request"
    return asked, f"random_{kind}_len"


def _refuse_mixed_backends(path: Path, runs: list[dict[str, Any]]) -> None:
    """Runs of one file against servers of different `backend`s (the bench tool's `--backend`:
    vllm, sglang, openai ...) are not one deployment's; they were fitted together."""
    named = [(n, r["backend"]) for n, r in enumerate(runs, start=1) if r.get("backend") is not None]
    for n, backend in named[1:]:
        if backend != named[0][1]:
            raise InputError(
                f"{path.name}:{n}: backend: {backend!r:.40}, where {path.name}:{named[0][0]} is "
                f"{named[0][1]!r:.40}; one calibration fits one deployment's runs: split the file"
            )


def _refuse_paced(run: dict[str, Any], row_id: str) -> None:
    """`request_rate` is "inf" (vLLM's word for none) or a rate > 0, and calibrate fits only "inf".
    A run paced at a rate with no max_concurrency sent its requests over time, and was fitted as
    every request at t = 0. Under a cap (`--request-rate R --max-concurrency C`) each request
    waits for its paced time and then for a free slot (vLLM benchmark_serving: the pacing loop
    starts a task per request, which takes the semaphore), and it was fitted as C clients
    sending at will: right only where R outruns what C clients send, which the file does not
    say, and the simulator has no such arrivals (timed ones, or clients sending at will)."""
    ramp = run.get("ramp_up_strategy")
    if ramp not in (None, ""):
        # vllm/benchmarks/serve.py writes request_rate "inf" beside a ramp (its --request-rate
        # is unused then): the requests were paced from ramp_up_start_rps to ramp_up_end_rps
        raise InputError(
            f"{row_id}: ramp_up_strategy: {ramp!r:.20}: requests paced at a rising rate, not the "
            "burst or the closed-loop clients calibrate fits; give runs without --ramp-up-strategy"
        )
    rate = run.get("request_rate")
    if rate is None or rate == "inf":
        return
    if not finite_number(rate) or rate <= 0:
        raise InputError(
            f'{row_id}: request_rate: must be "inf" or a rate > 0 (requests/s), got '
            f"{number_text(rate):.40}"
        )
    cap = run.get("max_concurrency")
    if cap is None:
        raise InputError(
            f"{row_id}: request_rate: {rate:g} requests/s with no max_concurrency: an open-loop "
            "run paced over time, not the burst or the closed-loop clients calibrate fits; give "
            'runs of request_rate "inf" (with max_concurrency for clients)'
        )
    raise InputError(
        f"{row_id}: request_rate: {rate:g} requests/s under max_concurrency "
        f"{number_text(cap):.20}: requests paced and capped, not the closed-loop clients "
        "calibrate fits (the cap's clients only where the rate outruns them); give runs of "
        'request_rate "inf"'
    )


def _json_objects(path: Path, text: str) -> list[dict[str, Any]]:
    """The JSON objects of a result file, one after another: one run (a `--save-result`
    file, indented or not), or one per line (`--append-result`, SGLang's JSONL)."""
    decoder = json.JSONDecoder(object_pairs_hook=unique_object)
    out: list[dict[str, Any]] = []
    at = 0
    line, counted = 1, 0  # newlines counted up to `counted` (from the start: quadratic)
    while True:
        # a byte-order mark before each run: results of a Windows tool joined with `cat`
        while at < len(text) and (text[at].isspace() or text[at] == "\ufeff"):
            at += 1
        if at == len(text):
            break
        line, counted = line + text.count("\n", counted, at), at
        source = f"{path}: line {line}"
        try:
            value, at = decoder.raw_decode(text, at)
        except json.JSONDecodeError as exc:
            raise InputError(f"{source}: (json): {exc.msg}") from None
        except DuplicateKeyError as exc:
            raise InputError(f"{source}: (json): {exc}") from None
        except (RecursionError, ValueError):  # too deep, or past the int-string limit
            parse_json(text[at:], source=source)  # raises the reader's one-line reason
            raise
        if isinstance(value, dict) and value.get("request_rate") == math.inf:
            # SGLang's bench_serving writes its default rate, float("inf"), as JSON's Infinity;
            # vLLM writes the string "inf". Both mean no pacing.
            value = {**value, "request_rate": "inf"}
        refuse_non_finite(value, source=source)
        out.append(_run_object(value, source))
    if not out:
        raise InputError(f"{path}: no runs in the file")
    return out


def _run_object(value: Any, source: str) -> dict[str, Any]:
    """`value` if it is a JSON object (a run), else an InputError saying what it is."""
    if isinstance(value, list):  # llmperf's individual responses, vLLM's .pytorch.json
        raise InputError(f"{source}: {_array_of(value)}, not a run; capcliff reads {READS}")
    if not isinstance(value, dict):
        raise InputError(f"{source}: expected a JSON object per run")
    return value


def _array_of(value: list[Any]) -> str:
    """What a JSON array given as results is, where its first item says (each tool's source)."""
    first = value[0] if value and isinstance(value[0], dict) else {}
    if "end_to_end_latency_s" in first or "ttft_s" in first:
        return "a JSON array of llmperf's individual responses (one per request)"
    if "benchmark" in first and "metric" in first:
        return "a JSON array of PyTorch benchmark records (vLLM's .pytorch.json beside a result)"
    return "a JSON array"


def read_benchmark_file(path: Path, keep: DeploymentFilter) -> list[BenchmarkPoint]:
    """Points from a vLLM result JSON (one run or appended runs), an SGLang JSONL or a
    benchmark CSV (by suffix)."""
    suffix = path.suffix.lower()
    if suffix == ".csv":
        return read_benchmark_csv(path, keep)
    runs = _json_objects(path, read_text(path, field="benchmark"))
    others = _other_models(runs, "model_id", keep)
    if others:
        _refuse_other_model(path, others, keep)
    _refuse_mixed_backends(path, runs)
    points = []
    for n, run in enumerate(runs, start=1):
        points.append(_run_point(run, f"{path.name}:{n}"))
    return _refuse_duplicates(points)


def is_benchmark_file(path: Path) -> bool:
    """Whether `capcliff calibrate` should read `path` as benchmark results (not a log): by its
    suffix, else by its text starting with a JSON object (`vllm bench serve --result-filename`
    takes any name: results saved as `run.txt` were read as a log with no start-up line). A
    start-up log never starts with `{`."""
    if path.suffix.lower() in (".csv", ".json", ".jsonl"):
        return True
    try:
        if not stat.S_ISREG(path.stat().st_mode):  # a FIFO would block the read
            return False
        with path.open("rb") as handle:
            head = handle.read(4096)
    except (OSError, ValueError):  # the log reader names the problem
        return False
    return head.lstrip(b"\xef\xbb\xbf \t\r\n").startswith(b"{")
