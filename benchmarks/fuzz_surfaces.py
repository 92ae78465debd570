"""A bad-input campaign over every input surface of issue 23, run through the CLI in-process.

    PYTHONPATH=. python benchmarks/fuzz_surfaces.py [SURFACE ...] [--jobs 2] [--show 400]

Each case mutates a valid input (calibration CSV, vLLM JSON, SGLang JSONL, start-up logs,
session and plain traces, --offload, --disagg, price and GPU lists, check specs, baselines,
quantization configs, safetensors headers, older numeric flags, output paths; then, from the
fourth campaign, every option of every command at 13 boundary values, contradicting flags, paths,
trace, spec, calibration-file and config.json shapes: every-flag, combos, paths, traces4,
check4, calfiles, configs4; the sixth, in `fuzz_cases6.py`: combos6, cards6, configs6, spec6,
files6, outputs6, env6; campaigns 7 to 30 in `fuzz_cases7.py` to `fuzz_cases30.py`) and is
classed by
`fuzz_harness`: traceback, hang (past 20 s or out of memory), nonsense (exit 0 on invalid
input), lost (an input file changed), lines (exit 2 but not one `error:` line), refused-valid.
Prints a table of classes per surface, then one line per finding. The figures are what the
campaign finds on the tree it runs on; nothing here is asserted (tests/ holds the regressions).
"""

# The tables below are data: mutated inputs one per line, some past 100 characters, some with
# look-alike characters (fullwidth and Arabic-Indic digits, a Unicode hyphen) on purpose; the
# case builders are long lists of cases, not logic.
# ruff: noqa: E501, RUF001, C901
from __future__ import annotations

import argparse
import csv
import io
import json
import re
import struct
import sys
import tomllib
from collections.abc import Callable, Iterator
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from fuzz_harness import Case, FileSpec, report, run_all

ROOT = Path(__file__).resolve().parent.parent
LOGS = ROOT / "tests" / "fixtures" / "logs"
DSR1_CSV = ROOT / "tests" / "fixtures" / "bench" / "dsr1_0528_h200_tp8_sglang.csv"
LLAMA_REPO = "meta-llama/Llama-3.1-8B-Instruct"
SMALL = ["--isl", "100", "--osl", "100", "--num-requests", "20"]
SWEEP = ["sweep", "llama-3.1-8b", *SMALL, "--concurrency", "4"]
PLAN = ["plan", "llama-3.1-8b", "--gpus", "1", "--jobs", "1", *SMALL, "--arrival", "batch"]
HUGE_INT = "9" * 5000

# Bad numbers as text (flags, CSV cells, log figures).
BAD_TEXT = ["nan", "inf", "-inf", "-1", "1e308", "1e999", HUGE_INT, "-" + HUGE_INT, "abc", ""]
EDGE_TEXT = ["0", "-0", "0.0", "1e-300", "１２", "1_000", " 5", "0x10"]
# Bad JSON values (a JSON text each) for a field that holds a positive number.
BAD_JSON = [
    "NaN", "Infinity", "-Infinity", "-1", "1e308", "1e400", HUGE_INT, "null", "true", "false",
    '"12"', '"abc"', "[1]", "{}", '""', "-0.0",
]  # fmt: skip


def llama_config() -> dict[str, object]:
    card = tomllib.loads((ROOT / "model_cards" / "llama-3.1-8b.toml").read_text())
    return dict(card["config"])


def vllm_run(concurrency: int, throughput: float, tpot_ms: float) -> dict[str, object]:
    return {
        "date": "20250101-000000", "backend": "vllm", "model_id": LLAMA_REPO,
        "tokenizer_id": LLAMA_REPO, "num_prompts": 200, "request_rate": "inf",
        "burstiness": 1.0, "max_concurrency": concurrency, "duration": 60.0, "completed": 200,
        "total_input_tokens": 204_800, "total_output_tokens": 25_600,
        "request_throughput": 3.3, "output_throughput": throughput,
        "total_token_throughput": 4600.0, "mean_ttft_ms": 150.0, "median_ttft_ms": 140.0,
        "p99_ttft_ms": 300.0, "mean_tpot_ms": tpot_ms, "median_tpot_ms": tpot_ms,
        "p99_tpot_ms": tpot_ms * 1.2, "mean_itl_ms": tpot_ms,
    }  # fmt: skip


RUNS = [vllm_run(8, 500.0, 14.0), vllm_run(32, 1200.0, 24.0), vllm_run(64, 1800.0, 32.0)]
CAL_VLLM = ["calibrate", "{d}/r.json", "--model", "llama-3.1-8b", "--gpu", "h100-sxm"]
CAL_CSV = ["calibrate", "{d}/b.csv", "--model", "deepseek-r1", "--gpu", "h200-sxm", "--gpus", "8",
           "--layout", "tp8", "--engine", "sglang"]  # fmt: skip


def sglang_run(concurrency: int, throughput: float, tpot_ms: float) -> dict[str, object]:
    return {
        "backend": "sglang", "dataset_name": "random", "max_concurrency": concurrency,
        "random_input_len": 1024, "random_output_len": 128, "random_range_ratio": 1.0,
        "completed": 200, "total_input_tokens": 204_800, "total_output_tokens": 25_600,
        "output_throughput": throughput, "mean_tpot_ms": tpot_ms, "mean_ttft_ms": 150.0,
    }  # fmt: skip


SG_RUNS = [sglang_run(8, 500.0, 14.0), sglang_run(32, 1200.0, 24.0), sglang_run(64, 1800.0, 32.0)]


def _json_with(obj: dict[str, object], key: str, raw: str) -> str:
    """`obj` as JSON with `key`'s value replaced by the raw JSON text `raw`."""
    marker = "__FUZZ__"
    return json.dumps({**obj, key: marker}).replace(f'"{marker}"', raw)


def wrappers(text: str) -> Iterator[tuple[str, bytes, bool | None]]:
    """Whole-file mutations of a valid text: (name, bytes, invalid?)."""
    yield "bom", b"\xef\xbb\xbf" + text.encode(), False
    yield "crlf", text.replace("\n", "\r\n").encode(), False
    yield "empty", b"", True
    yield "whitespace", b"  \n\n\t\n", True
    # a cut that ends a line cleanly cannot be told from a shorter file: only crashes count
    yield "truncated-half", text.encode()[: len(text) // 2], None
    yield "truncated-end", text.encode()[:-3], None
    yield "nul", text.encode() + b"\x00", True
    yield "latin1", text.encode() + "\ncafé".encode("latin-1"), True
    yield "utf16", text.encode("utf-16"), True
    yield "doubled", (text + "\n" + text).encode(), None
    yield "cr-only", text.replace("\n", "\r").encode(), None


# Calibration: vLLM JSON, SGLang JSONL, CSV ---------------------------------------------------


def calibration_cases() -> Iterator[Case]:
    one = json.dumps(RUNS[1], indent=2)
    lines = "\n".join(json.dumps(r) for r in RUNS)
    yield Case("cal-vllm", "valid-one", CAL_VLLM, {"r.json": one}, False)
    yield Case("cal-vllm", "valid-appended", CAL_VLLM, {"r.json": lines}, False)
    for name, data, invalid in wrappers(lines):
        yield Case("cal-vllm", f"file-{name}", CAL_VLLM, {"r.json": data}, invalid)
    keys = ["max_concurrency", "num_prompts", "completed", "total_input_tokens",
            "total_output_tokens", "output_throughput", "mean_tpot_ms", "mean_ttft_ms", "model_id"]  # fmt: skip
    for key in keys:
        for raw in BAD_JSON:
            # null is "not measured" (vLLM writes max_concurrency null); "" an unnamed model
            valid_alike = raw == "null" or (key == "model_id" and raw == '""')
            text = "\n".join(
                [json.dumps(RUNS[0]), _json_with(RUNS[1], key, raw), json.dumps(RUNS[2])]
            )
            yield Case("cal-vllm", f"{key}={raw[:12]}", CAL_VLLM, {"r.json": text},
                       None if valid_alike or raw == "-0.0" else True)  # fmt: skip
    # structure
    for name, text, invalid in [
        ("list-of-runs", json.dumps(RUNS), None),
        ("nested-deep", "[" * 100_000 + "]" * 100_000, True),
        ("object-deep", '{"a":' * 50_000 + "1" + "}" * 50_000, True),
        ("dup-key", json.dumps(RUNS[1])[:-1] + ', "mean_tpot_ms": 0.001}', True),
        ("unknown-key-only", '{"hello": 1}', True),
        ("all-zero-completed", _json_with(RUNS[1], "completed", "0"), True),
        ("tokens-zero", _json_with(RUNS[1], "total_output_tokens", "0"), True),
        ("tiny-output", _json_with(RUNS[1], "total_output_tokens", "1"), None),
        ("concurrency-1e7", _json_with(RUNS[1], "max_concurrency", "10000000"), None),
        ("duplicated-runs", json.dumps(RUNS[1]) + "\n" + json.dumps(RUNS[1]), True),
        ("model-unicode", _json_with(RUNS[1], "model_id", '"ﾒﾀ/Llama\\u0000"'), None),
        ("tpot-seconds", _json_with(RUNS[1], "mean_tpot_ms", "0.024"), True),
        ("tpot-us", _json_with(RUNS[1], "mean_tpot_ms", "24000"), True),
        ("throughput-absurd", _json_with(RUNS[1], "output_throughput", "1e12"), True),
        ("ttft-absurd", _json_with(RUNS[1], "mean_ttft_ms", "1e12"), True),
        ("range-ratio-2", _json_with(RUNS[1], "random_range_ratio", "2"), True),
        ("range-ratio-nan", _json_with(RUNS[1], "random_range_ratio", "NaN"), True),
        ("trailing-garbage", json.dumps(RUNS[1]) + " xyz", True),
        ("inconsistent-tput-tpot", _json_with(_json_obj(RUNS[1], "output_throughput", 1e6),
                                              "mean_tpot_ms", "500"), True),
    ]:  # fmt: skip
        yield Case("cal-vllm", name, CAL_VLLM, {"r.json": text}, invalid)
    # SGLang JSONL
    sg = "\n".join(json.dumps(r) for r in SG_RUNS)
    cal_sg = ["calibrate", "{d}/r.jsonl", "--model", "llama-3.1-8b", "--gpu", "h100-sxm"]
    yield Case("cal-sglang", "valid", cal_sg, {"r.jsonl": sg}, False)
    for name, data, invalid in wrappers(sg):
        yield Case("cal-sglang", f"file-{name}", cal_sg, {"r.jsonl": data}, invalid)
    for key in ["random_input_len", "random_output_len", "random_range_ratio", "max_concurrency",
                "completed", "output_throughput", "mean_tpot_ms"]:  # fmt: skip
        for raw in BAD_JSON:
            text = "\n".join(
                [json.dumps(SG_RUNS[0]), _json_with(SG_RUNS[1], key, raw), json.dumps(SG_RUNS[2])]
            )
            ok_null = raw == "null"  # not measured: the totals or the other figure stand
            yield Case("cal-sglang", f"{key}={raw[:12]}", cal_sg, {"r.jsonl": text},
                       None if ok_null or raw == "-0.0" else True)  # fmt: skip
    # CSV
    rows = list(csv.DictReader(DSR1_CSV.open()))
    base = _csv_text(rows)
    yield Case("cal-csv", "valid", CAL_CSV, {"b.csv": base}, False)
    for name, data, invalid in wrappers(base):
        yield Case("cal-csv", f"file-{name}", CAL_CSV, {"b.csv": data}, invalid)
    for column in ["concurrency", "input_len", "output_len", "num_requests",
                   "output_throughput_tok_s", "mean_tpot_ms", "mean_ttft_ms", "num_gpus"]:  # fmt: skip
        for value in BAD_TEXT + EDGE_TEXT + ["1,024", "12 ms", "1e3", "true", "NaN", "Infinity"]:
            changed = [dict(r) for r in rows]
            changed[1][column] = value
            # an empty cell leaves the row out (the reference CSV has such rows); "12 ms" reads
            # 12 as "4 (batch_size column)" reads 4; fullwidth digits are digits
            empty_ok = value in ("", "12 ms", "１２")
            invalid: bool | None = True
            if empty_ok or value in ("1e-300", " 5", "1e3", "1_000", "-0", "0.0", "0"):
                invalid = None
            yield Case("cal-csv", f"{column}={value[:10]}", CAL_CSV,
                       {"b.csv": _csv_text(changed)}, invalid)  # fmt: skip
    header = list(rows[0])
    for name, text, invalid in [
        ("dup-column", base.replace("concurrency", "concurrency,concurrency", 1), None),
        ("header-only", ",".join(header) + "\n", True),
        ("no-header", "\n".join(base.splitlines()[1:]), True),
        ("semicolons", base.replace(",", ";"), True),
        ("tabs", base.replace(",", "\t"), True),
        ("one-row", "\n".join(base.splitlines()[:2]), None),
        ("quote-unclosed", base + '\nB99,"unclosed\n', None),
        ("huge-field", base + "\n" + "x" * 200_000 + "\n", None),
        ("dup-rows", base + "\n".join(base.splitlines()[1:2]) + "\n", True),
        ("mixed-models", base + base.splitlines()[1].replace("DeepSeek-R1-0528", "Llama-3.1-8B")
         .replace("B52", "B98") + "\n", None),
        ("many-cols", ",".join(header + [f"c{i}" for i in range(5000)]) + "\n"
         + "\n".join(base.splitlines()[1:]), None),
    ]:  # fmt: skip
        yield Case("cal-csv", name, CAL_CSV, {"b.csv": text}, invalid)


def _json_obj(obj: dict[str, object], key: str, value: object) -> dict[str, object]:
    return {**obj, key: value}


def _csv_text(rows: list[dict[str, str]]) -> str:
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=list(rows[0]), lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    return out.getvalue()


# Calibration: start-up logs -------------------------------------------------------------------

LOG_RUNS = {
    "vllm_v1_v16_llama31_8b_eager.txt": ["--model", "llama-3.1-8b"],
    "trtllm_t01_llama31_8b_rtx5090.txt": ["--model", "llama-3.1-8b"],
    "vllm_v0_v01_llama31_8b_rtx3090_20k.txt": ["--model", "llama-3.1-8b"],
    "sglang_s02_qwq_32b_4xl4_tp4.txt": ["--model", "qwen3-32b"],
}
NUMBER = re.compile(r"(?<![\w.])\d+(?:\.\d+)?(?![\w.])")


def log_cases(per_log: int = 45) -> Iterator[Case]:
    import random

    rng = random.Random(23)
    for name, extra in LOG_RUNS.items():
        text = "\n".join(
            ln for ln in (LOGS / name).read_text().splitlines() if not ln.startswith("#")
        )
        argv = ["calibrate", "{d}/log.txt", *extra]
        yield Case("cal-log", f"{name[:10]}-valid", argv, {"log.txt": text}, None)
        for wname, data, invalid in wrappers(text):
            if wname == "doubled":  # two starts: refused where the log marks a start, else
                invalid = True if "vllm_v1" in name or "sglang" in name else None  # same figures
            yield Case("cal-log", f"{name[:10]}-{wname}", argv, {"log.txt": data}, invalid)
        spots = [(i, m) for i, ln in enumerate(text.splitlines()) for m in NUMBER.finditer(ln)]
        rng.shuffle(spots)
        for i, m in spots[:per_log]:
            value = rng.choice(["nan", "inf", "-1", "0", "1e308", HUGE_INT, "99999999999999", "-0"])
            lines = text.splitlines()
            lines[i] = lines[i][: m.start()] + value + lines[i][m.end() :]
            yield Case("cal-log", f"{name[:10]}-L{i}:{m.group()}={value[:8]}", argv,
                       {"log.txt": "\n".join(lines)}, None)  # fmt: skip
        yield Case("cal-log", f"{name[:10]}-out-is-log",
                   [*argv, "-o", "{d}/log.txt", "--force"], {"log.txt": text}, True)  # fmt: skip
        yield Case("cal-log", f"{name[:10]}-out-symlink-to-log",
                   [*argv, "-o", "{d}/link.toml", "--force"],
                   {"log.txt": text, "link.toml": ("symlink", "log.txt")}, None)  # fmt: skip
    # flag mutations of calibrate itself
    v16 = (LOGS / "vllm_v1_v16_llama31_8b_eager.txt").read_text()
    base = ["calibrate", "{d}/log.txt", "--model", "llama-3.1-8b"]
    for flag, values in {
        "--gpus": ["0", "-1", HUGE_INT, "3"],
        "--max-model-len": ["0", "-1", HUGE_INT, "1e3"],
        "--kv-cache-dtype": ["fp3", "", "FP8"],
        "--weight-dtype": ["int1", "", "nan"],
        "--layout": ["tp0", "tp3", "dp1-tp1-pp1-ep1-x", ""],
        "--engine": ["vllm2", ""],
        "--engine-version": ["0.0.0", "99.99.99", "x", ""],
        "--speculative": ["mtp:0", "mtp:-1", "mtp:100", "eagle:", "ngram:nan", "x:1"],
        "--gpu": ["h100", "", "H100-SXM"],
    }.items():
        for value in values:
            yield Case("cal-flags", f"{flag}={value[:10]}", [*base, flag, value],
                       {"log.txt": v16}, True if value not in ("FP8", "3", "H100-SXM") else None)  # fmt: skip


# Session and plain traces ---------------------------------------------------------------------

SESSION_ROWS = [
    {"session_id": "a", "turn": 0, "input_tokens": 50, "output_tokens": 20, "arrival_s": 0.0},
    {"session_id": "a", "turn": 1, "input_tokens": 30, "output_tokens": 20, "think_s": 1.0},
    {"session_id": "b", "turn": 0, "input_tokens": 40, "output_tokens": 20, "arrival_s": 0.5,
     "prefix_id": "sys", "prefix_tokens": 16},
    {"session_id": "b", "turn": 1, "input_tokens": 30, "output_tokens": 20, "think_s": 2.0},
]  # fmt: skip
PLAIN_ROWS = [
    {"arrival_s": 0.0, "input_tokens": 50, "output_tokens": 20},
    {"arrival_s": 0.4, "input_tokens": 60, "output_tokens": 30},
    {"arrival_s": 1.1, "input_tokens": 70, "output_tokens": 10},
]
TRACE_SWEEP = ["sweep", "llama-3.1-8b", "--workload", "{d}/t.jsonl", "--concurrency", "4"]


def trace_cases() -> Iterator[Case]:
    for kind, rows in (("session", SESSION_ROWS), ("plain", PLAIN_ROWS)):
        text = "\n".join(json.dumps(r) for r in rows) + "\n"
        yield Case(f"trace-{kind}", "valid", TRACE_SWEEP, {"t.jsonl": text}, False)
        for name, data, invalid in wrappers(text):
            if name == "doubled" and kind == "session":
                invalid = True
            yield Case(f"trace-{kind}", f"file-{name}", TRACE_SWEEP, {"t.jsonl": data}, invalid)
        keys = sorted({k for r in rows for k in r})
        for key in keys:
            for raw in BAD_JSON:
                changed = [json.dumps(r) for r in rows]
                changed[1] = _json_with(rows[1], key, raw)
                ok = raw == "null" and key in ("think_s", "arrival_s", "prefix_id")
                ok = ok or (
                    key in ("session_id", "prefix_id") and raw in ('"12"', '"abc"', '""', "-1")
                )
                ok = ok or (raw == "-0.0" and key in ("arrival_s", "think_s"))
                ok = ok or (key == "prefix_tokens" and raw == "null")
                yield Case(f"trace-{kind}", f"{key}={raw[:12]}", TRACE_SWEEP,
                           {"t.jsonl": "\n".join(changed)}, None if ok else True)  # fmt: skip
        for name, text2, invalid in [
            ("unknown-key", text.replace('"input_tokens"', '"inptu_tokens"', 1), True),
            ("dup-key", json.dumps(rows[0])[:-1] + ', "input_tokens": -5}\n' + text, True),
            ("array-row", "[1,2,3]\n" + text, True),
            ("string-row", '"hello"\n' + text, True),
            ("deep-row", "[" * 50_000 + "]" * 50_000 + "\n", True),
            ("huge-int-row", '{"input_tokens": ' + HUGE_INT + ', "output_tokens": 1}\n', True),
            ("blank-lines", "\n\n" + text.replace("\n", "\n\n"), False),
            ("comment-line", "# comment\n" + text, True),
            ("one-line-array", json.dumps(rows), True),
            ("unicode-session", text.replace('"a"', '"ä\\u202e"'), None),
        ]:  # fmt: skip
            if kind == "plain" and name == "unicode-session":
                continue
            yield Case(f"trace-{kind}", name, TRACE_SWEEP, {"t.jsonl": text2}, invalid)
    # trace through plan and check; flags that shape sessions
    stext = "\n".join(json.dumps(r) for r in SESSION_ROWS) + "\n"
    plan_t = ["plan", "llama-3.1-8b", "--gpus", "1", "--jobs", "1", "--workload", "{d}/t.jsonl"]
    yield Case("trace-session", "plan-valid", plan_t, {"t.jsonl": stext}, None)
    for flag, values in {
        "--think-time": ["nan", "inf", "-1", "1e308", "-0"],
        "--clients": ["0", "-1", HUGE_INT, "100000000"],
        "--num-requests": ["5"],
        "--rate": ["1"],
        "--max-model-len": ["10"],
    }.items():
        for value in values:
            invalid = value not in ("-0",)
            if flag == "--num-requests" or flag == "--rate":
                invalid = True  # a trace has its own count and arrivals
            yield Case("trace-session", f"flag{flag}={value[:8]}", [*TRACE_SWEEP, flag, value],
                       {"t.jsonl": stext}, invalid)  # fmt: skip
    for name, target, invalid in [
        ("dir", ("dir",), True),
        ("symlink-loop", ("symlink", "t.jsonl"), True),
        ("fifo", None, True),
    ]:
        files: dict[str, object] = {}
        if target is not None:
            files["t.jsonl"] = target
        if name == "fifo":
            continue  # a FIFO nobody writes blocks any reader (cat too); not a capcliff bug
        yield Case("trace-file", name, TRACE_SWEEP, files, invalid)  # type: ignore[arg-type]
    yield Case("trace-file", "missing", TRACE_SWEEP, {}, True)
    yield Case("trace-file", "name-too-long", ["sweep", "llama-3.1-8b", "--workload",
               "x" * 5000 + ".jsonl"], {}, True)  # fmt: skip
    yield Case("trace-file", "not-a-dir-component", ["sweep", "llama-3.1-8b", "--workload",
               "{d}/f/t.jsonl"], {"f": "x"}, True)  # fmt: skip


# --offload, --disagg, prices, GPU lists -------------------------------------------------------

OFFLOAD_BASE = ["sweep", "llama-3.1-8b", *SMALL, "--concurrency", "4", "--workload",
                "multiturn-chat", "--clients", "4"]  # fmt: skip


def spec_string_cases() -> Iterator[Case]:
    offloads = [
        "cpu:nanGiB", "cpu:infGiB", "cpu:-1GiB", "cpu:-0GiB", "cpu:1e308GiB", "cpu:1e999GiB",
        f"cpu:{HUGE_INT}GiB", "cpu:64GiB,cpu:64GiB", "gpu:64GiB", "cpu:64GiB,", ",cpu:64GiB",
        "CPU:64GiB", "cpu:64gib", "cpu:64 GiB", "cpu: 64GiB", "cpu:1.5GiB", "cpu:0x10GiB",
        "cpu:６４GiB", "cpu:64GiB,nvme:", "nvme:1e30TiB", "cpu:64GB", "cpu:64G", "cpu:64",
        "cpu:64KiB", "cpu:1_024GiB", "cpu:", ":64GiB", "cpu64GiB", "cpu:64GiB:1", "", " ",
        "cpu:64GiB,nvme:4TiB,cpu:1GiB", "nvme:4TiB,cpu:64GiB", "cpu:99999TiB", "cpu:1.0000001GiB",
    ]  # fmt: skip
    ok = {"cpu:64gib", "cpu:64 GiB", "cpu: 64GiB", "cpu:1.5GiB", "cpu:64GB", "cpu:64G",
          "nvme:4TiB,cpu:64GiB", "cpu:1.0000001GiB", "CPU:64GiB"}  # fmt: skip
    for value in offloads:
        yield Case("offload", f"{value[:24]}", [*OFFLOAD_BASE, "--offload", value], {},
                   None if value in ok else True)  # fmt: skip
    for policy in ["", "write_back", "WRITE-BACK", "nan"]:
        yield Case("offload", f"policy={policy}", [*OFFLOAD_BASE, "--offload", "cpu:64GiB",
                   "--offload-policy", policy], {}, None if policy == "WRITE-BACK" else True)  # fmt: skip
    yield Case("offload", "policy-without-offload", [*OFFLOAD_BASE, "--offload-policy",
               "write-back"], {}, True)  # fmt: skip
    disaggs = [
        "0p:tp1,1d:tp1", "1p:tp0,1d:tp1", "1p:tp1", "1d:tp1", "1p:tp1,1p:tp1,1d:tp1",
        "1p:tp1@nonexist,1d:tp1", "1p:tp1@h100-sxm@h200-sxm,1d:tp1", "1p:tp1,1d:tp1,",
        "١p:tp1,1d:tp1", "1p:tp3,1d:tp1", "1p:tp1-ep8,1d:tp1", "+1p:tp1,1d:tp1",
        " 1p:tp1 , 1d:tp1 ", "1P:TP1,1D:TP1", "1e3d:tp1,1p:tp1", "1p:tp1,1d:dpa2",
        "1p:tp1,1d:tp1@", "1p:tp1,1d:tp1@H100-SXM", "1p:tp16,1d:tp1", "1p:pp2,1d:tp1",
        "99999999999999999999p:tp1,1d:tp1", "1p:tp1,1d:tp" + HUGE_INT, "1p:dp2-tp1,1d:tp1",
        "", ",", "1p:,1d:tp1", "p:tp1,d:tp1", "01p:tp1,01d:tp1", "1p:tp1,1d:tp1,1x:tp1",
        "1p:tp1;1d:tp1", "1p:tp1,1d:tp1@h100-sxm", "1p:tp2-ep2,1d:tp1",
    ]  # fmt: skip
    good = {" 1p:tp1 , 1d:tp1 ", "1P:TP1,1D:TP1", "01p:tp1,01d:tp1", "1p:tp1,1d:tp1@h100-sxm",
            "1p:tp1,1d:tp1@H100-SXM", "1p:tp1,1d:dpa2", "1p:tp16,1d:tp1", "1p:pp2,1d:tp1",
            "1p:dp2-tp1,1d:tp1", "1p:tp3,1d:tp1"}  # fmt: skip
    dis = ["sweep", "llama-3.1-8b", *SMALL, "--concurrency", "4", "--disagg"]
    for value in disaggs:
        yield Case("disagg", value[:28], [*dis, value], {}, None if value in good else True)
    for value in ["nan", "inf", "-1", "-0", "1e308", "1e999", HUGE_INT, "0"]:
        yield Case("disagg", f"kv-overhead={value[:8]}", [*dis, "1p:tp1,1d:tp1",
                   "--kv-transfer-overhead-ms", value], {}, value not in ("0", "-0"))  # fmt: skip
        yield Case("disagg", f"kv-overhead-nodisagg={value[:8]}",
                   ["sweep", "llama-3.1-8b", *SMALL, "--concurrency", "4",
                    "--kv-transfer-overhead-ms", value], {}, None if value in ("0", "-0") else True)  # fmt: skip
    plan_d = ["plan", "llama-3.1-8b", "--gpus", "2", "--jobs", "1", *SMALL, "--arrival", "batch"]
    yield Case("disagg", "plan-disagg-valid", [*plan_d, "--disagg"], {}, None)
    yield Case("disagg", "plan-disagg-1gpu", [*PLAN, "--disagg"], {}, None)
    # prices and GPU lists
    online = ["plan", "llama-3.1-8b", "--gpus", "1", "--jobs", "1", "--isl", "100", "--osl",
              "100", "--num-requests", "50", "--rate", "2"]  # fmt: skip
    for gpus, prices, invalid in [
        ("h100-sxm", "nan", True), ("h100-sxm", "inf", True), ("h100-sxm", "-1", True),
        ("h100-sxm", "0", True), ("h100-sxm", "-0", True), ("h100-sxm", "1e308", True),
        ("h100-sxm", HUGE_INT, True), ("h100-sxm", "$2", True), ("h100-sxm", "2,3", True),
        ("h100-sxm,h200-sxm", "2", None), ("h100-sxm,h200-sxm", "2,", True),
        ("h100-sxm,h200-sxm", "2,,3", True), ("h100-sxm,h200-sxm", "2,3,4", True),
        ("h100-sxm,h200-sxm", "２,3", None), ("h100-sxm", "1e-300", True),
        ("h100-sxm", "2 ", None), ("h100-sxm", "", True), ("h100-sxm", "2;3", True),
        ("h100-sxm,h100-sxm", "2,3", True), ("h100-sxm,H100-SXM", "2,3", True),
        ("h100-sxm,nonexist", "2,3", True), ("h100-sxm,", "2", True), (" h100-sxm", "2", None),
        ("h100-sxm", "h100-sxm:2", True), ("h100-sxm", "0.0000001", True),
    ]:  # fmt: skip
        yield Case("prices", f"{gpus}|{prices[:10]}", [*online, "--gpu", gpus,
                   "--price-gpu-hour", prices], {}, invalid)  # fmt: skip
    for gpus in ["", ",", "h100-sxm,,", "nonexist", "h100-sxm," * 40, "all", "H200-SXM",
                 "h200-sxm\u200b", "h200‐sxm"]:  # fmt: skip
        yield Case("gpus", gpus[:20] or "empty", [*online, "--gpu", gpus], {},
                   None if gpus == "H200-SXM" else True)  # fmt: skip
        yield Case("gpus", f"sweep-{gpus[:16]}", [*SWEEP, "--gpu", gpus], {},
                   None if gpus == "H200-SXM" else True)  # fmt: skip
    for value in ["0", "-1", "1", "1e9", "0.9999999", "1.0", "nan", "inf", "-0"]:
        yield Case("prices", f"headroom={value}", [*online, "--headroom", value], {},
                   value not in ("0", "-0"))  # fmt: skip
    for value in ["1e9", "1e7", "1e-9", "nan", "inf", "-1", "0", HUGE_INT]:
        yield Case("prices", f"rate={value[:8]}", [*online[:-2], "--rate", value,
                   "--slo-ttft", "2", "--slo-tpot", "0.05"], {}, True)  # fmt: skip


# check specs and baselines --------------------------------------------------------------------

SPEC = """
[[scenario]]
name = "s"
model = "llama-3.1-8b"
gpu = "h100-sxm"
layout = "tp1"
engine = "vllm"
[scenario.workload]
isl = 100
osl = 100
arrival = "batch"
num_requests = 20
concurrency = 4
[scenario.expect]
fits = true
kv_headroom_min = 0.1
no_preemption_at = 4
"""

SPEC_KEYS = {
    "": ["baseline_tolerance"],
    "scenario": [
        "gpus", "headroom", "usd_per_gpu_hour", "seed", "gpu_memory_utilization",
        "max_model_len", "max_num_seqs", "max_num_batched_tokens", "block_size",
        "kv_cache_memory", "swap_space", "request_overhead_ms", "offload", "disagg",
        "calibration", "engine_version", "speculative", "spec_accept_length",
        "mem_fraction_static", "free_gpu_memory_fraction", "scheduler_recv_interval",
        "gpu_total_memory", "kv_transfer_overhead_ms", "layout", "model", "gpu", "name",
    ],
    "scenario.workload": [
        "isl", "osl", "num_requests", "concurrency", "rate", "clients", "random_range_ratio",
        "think_time", "turns", "context", "preset", "trace", "arrival",
    ],
    "scenario.expect": [
        "kv_headroom_min", "no_preemption_at", "cliff_concurrency_min", "ttft_p99_max_s",
        "tpot_p99_max_s", "output_throughput_min_tok_s", "prefix_hit_rate_min",
        "max_model_len_fits", "sustained_rps_min", "replicas_max", "usd_per_million_tokens_max",
        "fits", "recommended_layout",
    ],
}  # fmt: skip
BAD_TOML = ["nan", "inf", "-inf", "-1", "0", "-0.0", "1e308", HUGE_INT, "true", '"abc"', "[1]",
            "{a = 1}", '""', '"-1"', "1979-05-27"]  # fmt: skip


def _spec_with(table: str, key: str, raw: str) -> str:
    """SPEC with `key = raw` set in `table` ('' the top level)."""
    lines = SPEC.strip("\n").splitlines()
    lines = [ln for ln in lines if not ln.startswith(f"{key} =")] if table else lines
    if table == "":
        return f"{key} = {raw}\n" + "\n".join(lines) + "\n"
    header = {"scenario": "[[scenario]]", "scenario.workload": "[scenario.workload]",
              "scenario.expect": "[scenario.expect]"}[table]  # fmt: skip
    at = lines.index(header) + 1
    # drop an existing key of that name within the table
    end = next((i for i in range(at, len(lines)) if lines[i].startswith("[")), len(lines))
    body = [ln for ln in lines[at:end] if not ln.startswith(f"{key} =")]
    return "\n".join([*lines[:at], f"{key} = {raw}", *body, *lines[end:]]) + "\n"


def check_cases() -> Iterator[Case]:
    argv = ["check", "{d}/s.toml", "--format", "json"]
    yield Case("check", "valid", argv, {"s.toml": SPEC}, False)
    for name, data, invalid in wrappers(SPEC):
        if name in ("truncated-end",):
            invalid = True
        if name == "doubled":
            invalid = True
        yield Case("check", f"file-{name}", argv, {"s.toml": data}, invalid)
    for table, keys in SPEC_KEYS.items():
        for key in keys:
            for raw in BAD_TOML:
                text = _spec_with(table, key, raw)
                invalid: bool | None = True
                if raw in ("0", "-0.0") and key in ("seed", "headroom", "kv_headroom_min",
                                                    "prefix_hit_rate_min", "request_overhead_ms",
                                                    "think_time", "kv_transfer_overhead_ms"):  # fmt: skip
                    invalid = None
                if (key == "name" and raw in ('"abc"', '"-1"')) or (key, raw) == ("fits", "true"):
                    invalid = False  # a scenario's name is any text; fits = true is the spec's own
                yield Case("check", f"{table or 'top'}.{key}={raw[:10]}", argv,
                           {"s.toml": text}, invalid)  # fmt: skip
    for name, text, invalid, files in [
        ("unknown-key", SPEC.replace("fits = true", "fits = true\nfitz = true"), True, {}),
        ("unknown-table", SPEC + "\n[scenario.extra]\na = 1\n", True, {}),
        ("dup-key", SPEC.replace("isl = 100", "isl = 100\nisl = 200"), True, {}),
        ("dup-name", SPEC + SPEC, True, {}),
        ("no-scenario", "baseline_tolerance = 0.1\n", True, {}),
        ("scenario-table-not-array", SPEC.replace("[[scenario]]", "[scenario]"), True, {}),
        ("unicode-name", SPEC.replace('name = "s"', 'name = "s\\u202e\\u0000x"'), None, {}),
        ("deep-key", "a" + ".a" * 500 + " = 1\n" + SPEC, True, {}),
        ("deep-inline", "a = " + "[" * 5000 + "]" * 5000 + "\n" + SPEC, True, {}),
        ("huge-string", 'x = "' + "a" * 1_000_000 + '"\n' + SPEC, True, {}),
        ("trace-relative", SPEC.replace("isl = 100\nosl = 100\narrival = \"batch\"\n"
                                        "num_requests = 20\n", 'trace = "t.jsonl"\n'), False,
         {"t.jsonl": "\n".join(json.dumps(r) for r in PLAIN_ROWS) + "\n"}),
        ("trace-missing", SPEC.replace("isl = 100\nosl = 100\narrival = \"batch\"\n"
                                       "num_requests = 20\n", 'trace = "nope.jsonl"\n'), True, {}),
        ("trace-is-spec", SPEC.replace("isl = 100\nosl = 100\narrival = \"batch\"\n"
                                       "num_requests = 20\n", 'trace = "s.toml"\n'), True, {}),
        ("trace-dir", SPEC.replace("isl = 100\nosl = 100\narrival = \"batch\"\n"
                                   "num_requests = 20\n", 'trace = "."\n'), True, {}),
        ("calibration-relative", SPEC.replace('engine = "vllm"', 'engine = "vllm"\n'
                                              'calibration = "cal.toml"'), True,
         {"cal.toml": "[terms]\nactivation_peak_bytes = nan\n"}),
        ("calibration-is-spec", SPEC.replace('engine = "vllm"', 'engine = "vllm"\n'
                                             'calibration = "s.toml"'), True, {}),
        ("model-folder-relative", SPEC.replace('model = "llama-3.1-8b"', 'model = "m"'), None,
         {"m/config.json": json.dumps(llama_config())}),
        ("osl-hist-missing", SPEC.replace("osl = 100", 'osl = "hist:h.csv"'), True, {}),
        ("osl-hist-bad", SPEC.replace("osl = 100", 'osl = "hist:h.csv"'), True,
         {"h.csv": "tokens,count\n100,nan\n200,-1\n"}),
        ("osl-lognormal-bad", SPEC.replace("osl = 100", 'osl = "lognormal:100:50"'), True, {}),
        ("osl-lognormal-nan", SPEC.replace("osl = 100", 'osl = "lognormal:nan:200"'), True, {}),
        ("osl-lognormal-huge", SPEC.replace("osl = 100", 'osl = "lognormal:100:1e300"'), True, {}),
        ("serve-command-bad", SPEC.replace('engine = "vllm"', 'serve_command = "vllm serve x '
                                           '--max-num-seqs nan"'), True, {}),
    ]:  # fmt: skip
        yield Case("check", name, argv, {"s.toml": text, **files}, invalid)
    # outputs of check
    for flag in ["--junit", "--markdown", "--write-baseline"]:
        for name, target, files, invalid in [
            ("spec", "{d}/s.toml", {}, True),
            ("symlink-to-spec", "{d}/l.xml", {"l.xml": ("symlink", "s.toml")}, True),
            ("hardlink-dir", "{d}", {}, True),
            ("model-file", "{d}/m/model.safetensors", {"m/model.safetensors": b"12345678"}, True),
            ("trailing-slash", "{d}/out/", {}, True),
            ("missing-dir", "{d}/no/such/out.xml", {}, True),
            ("devnull-link", "{d}/dn", {"dn": ("symlink", "/dev/null")}, None),
            ("fifo", "{d}/ff", {"ff": ("fifo",)}, True),
        ]:  # fmt: skip
            yield Case("check-out", f"{flag}-{name}", [*argv, flag, target, "--force"],
                       {"s.toml": SPEC, **files}, invalid)  # fmt: skip
    # baselines
    baseline_ok = None
    yield Case("check-baseline", "missing", [*argv, "--baseline", "{d}/b.json"],
               {"s.toml": SPEC}, True)  # fmt: skip
    for name, text in [
        ("empty", ""), ("list", "[]"), ("nan", '{"s": NaN}'), ("deep", "[" * 100000),
        ("garbage", "xyz"), ("wrong-schema", '{"schema_version": 99}'),
        ("huge-int", '{"schema_version": ' + HUGE_INT + "}"),
        ("scenarios-str", '{"schema_version": 1, "scenarios": "x"}'),
        ("scenario-nan", '{"schema_version": 1, "scenarios": {"s": {"cliff_concurrency": NaN}}}'),
        ("scenario-neg", '{"schema_version": 1, "scenarios": {"s": {"output_throughput_tok_s": -1}}}'),
    ]:  # fmt: skip
        yield Case("check-baseline", name, [*argv, "--baseline", "{d}/b.json"],
                   {"s.toml": SPEC, "b.json": text}, baseline_ok if name == "wrong-schema" else True)  # fmt: skip


# Model configs: quantization_config and safetensors headers -----------------------------------

QUANTS: list[dict[str, object]] = [
    {"quant_method": "fp8", "weight_block_size": [128, 128]},
    {"quant_method": "fbgemm_fp8", "modules_to_not_convert": ["lm_head"]},
    {"quant_method": "modelopt", "quant_algo": "NVFP4", "group_size": 16},
    {"quant_method": "compressed-tensors", "config_groups": {"g": {"weights": {
        "num_bits": 4, "type": "int", "strategy": "group", "group_size": 128,
        "symmetric": True}, "targets": ["Linear"]}}, "ignore": ["lm_head"]},
    {"quant_method": "awq", "bits": 4, "group_size": 128, "zero_point": True},
    {"quant_method": "gptq", "bits": 4, "group_size": 128},
    {"quant_method": "mxfp4", "modules_to_not_convert": ["lm_head"]},
]  # fmt: skip


def _mutations(
    obj: object, path: tuple[object, ...] = ()
) -> Iterator[tuple[tuple[object, ...], object]]:
    """Every (path, replacement) for each leaf of `obj`."""
    if isinstance(obj, dict):
        for k, v in obj.items():
            yield from _mutations(v, (*path, k))
        yield (*path, "__extra__"), 1
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            yield from _mutations(v, (*path, i))
    bad: list[object] = [None, True, -4, 0, 3, 1.5, float("nan"), 10**40, "x", [], {}, "re:("]
    for b in bad:
        yield path, b


def _set(obj: object, path: tuple[object, ...], value: object) -> object:
    if not path:
        return value
    head, rest = path[0], path[1:]
    if isinstance(obj, dict):
        new = dict(obj)
        if head == "__extra__":
            new["extra_unknown_key"] = value
            return new
        new[head] = _set(obj[head], rest, value)  # type: ignore[index]
        return new
    assert isinstance(obj, list) and isinstance(head, int)
    new_list = list(obj)
    new_list[head] = _set(obj[head], rest, value)
    return new_list


def model_cases() -> Iterator[Case]:
    config = llama_config()
    mem = ["memory", "{d}/m", "--gpus", "1", "--format", "json"]
    yield Case("quant", "valid-none", mem, {"m/config.json": json.dumps(config)}, False)
    for q in QUANTS:
        method = str(q["quant_method"])
        yield Case("quant", f"{method}-valid", mem,
                   {"m/config.json": json.dumps({**config, "quantization_config": q})}, None)  # fmt: skip
        for path, value in _mutations(q):
            mutated = _set(q, path, value)
            where = ".".join(map(str, path)) or "(whole)"
            text = json.dumps({**config, "quantization_config": mutated}, allow_nan=True)
            yield Case("quant", f"{method}:{where}={str(value)[:8]}", mem,
                       {"m/config.json": text}, None)  # fmt: skip
    for pattern in ["re:(.*)*x$", "re:(\\w+\\.?)*x$", "re:(a|aa)*b$"]:  # backtracking
        q = {"quant_method": "fp8", "ignored_layers": [pattern]}
        yield Case("quant", f"redos-{pattern}", mem,
                   {"m/config.json": json.dumps({**config, "quantization_config": q})}, None)  # fmt: skip
    for name, raw in [("list", [QUANTS[0]]), ("string", "fp8"), ("number", 8), ("empty", {}),
                      ("null", None), ("bool", True)]:  # fmt: skip
        yield Case("quant", f"qc-{name}", mem,
                   {"m/config.json": json.dumps({**config, "quantization_config": raw})},
                   name not in ("null",))  # fmt: skip
    # safetensors headers
    good = {"w": {"dtype": "BF16", "shape": [2, 2], "data_offsets": [0, 8]}}
    cfg = {"m/config.json": json.dumps(config)}

    def st(header: bytes, *, length: int | None = None, data: bytes = b"\0" * 8) -> bytes:
        size = len(header) if length is None else length
        return struct.pack("<Q", size) + header + data

    yield Case("safetensors", "valid", mem, {**cfg, "m/model.safetensors": st(json.dumps(good).encode())}, None)  # fmt: skip
    variants: list[tuple[str, bytes]] = [
        ("empty-file", b""), ("short", b"\x01\x02"), ("len-huge", st(b"{}", length=2**63)),
        ("len-zero", st(b"", length=0)), ("len-past", st(b"{}", length=10**6)),
        ("not-json", st(b"\xff\xfe")), ("json-list", st(b"[]")), ("json-nan", st(b'{"a": NaN}')),
        ("deep", st(b"[" * 100_000 + b"]" * 100_000)),
        ("huge-int", st(('{"w": {"dtype": "BF16", "shape": [' + HUGE_INT + '], "data_offsets": [0, 8]}}').encode())),
        ("dup-key", st(b'{"w": {"dtype": "BF16", "shape": [2,2], "data_offsets": [0,8]}, "w": 1}')),
        ("meta-nonstr", st(b'{"__metadata__": {"a": 1}}')), ("meta-list", st(b'{"__metadata__": []}')),
        ("shape-huge", st(json.dumps({"w": {"dtype": "BF16", "shape": [2**62, 2**62], "data_offsets": [0, 8]}}).encode())),
        ("shape-neg", st(json.dumps({"w": {"dtype": "BF16", "shape": [-2, -2], "data_offsets": [0, 8]}}).encode())),
        ("shape-float", st(json.dumps({"w": {"dtype": "BF16", "shape": [2.0, 2.0], "data_offsets": [0, 8]}}).encode())),
        ("shape-bool", st(json.dumps({"w": {"dtype": "BF16", "shape": [True, 4], "data_offsets": [0, 8]}}).encode())),
        ("dtype-lower", st(json.dumps({"w": {"dtype": "bf16", "shape": [2, 2], "data_offsets": [0, 8]}}).encode())),
        ("dtype-list", st(json.dumps({"w": {"dtype": ["BF16"], "shape": [2, 2], "data_offsets": [0, 8]}}).encode())),
        ("offsets-rev", st(json.dumps({"w": {"dtype": "BF16", "shape": [2, 2], "data_offsets": [8, 0]}}).encode())),
        ("offsets-3", st(json.dumps({"w": {"dtype": "BF16", "shape": [2, 2], "data_offsets": [0, 4, 8]}}).encode())),
        ("offsets-past", st(json.dumps({"w": {"dtype": "BF16", "shape": [2, 2], "data_offsets": [0, 8]}}).encode(), data=b"")),
        ("entry-null", st(b'{"w": null}')), ("entry-list", st(b'{"w": [1]}')),
        ("zero-tensors", st(b"{}", data=b"")),
        ("overlap", st(json.dumps({"a": {"dtype": "BF16", "shape": [2, 2], "data_offsets": [0, 8]},
                                   "b": {"dtype": "BF16", "shape": [2, 2], "data_offsets": [0, 8]}}).encode())),
        ("f4-odd", st(json.dumps({"w": {"dtype": "F4", "shape": [3], "data_offsets": [0, 2]}}).encode(), data=b"\0\0")),
        ("unicode-name", st(json.dumps({"w\u202e\u0000": {"dtype": "BF16", "shape": [2, 2], "data_offsets": [0, 8]}}).encode())),
    ]  # fmt: skip
    for name, data in variants:
        yield Case("safetensors", name, mem, {**cfg, "m/model.safetensors": data},
                   None if name in ("zero-tensors", "unicode-name", "f4-odd") else True)  # fmt: skip
    yield Case("safetensors", "dir-named-safetensors", mem, {**cfg, "m/x.safetensors": ("dir",)}, True)  # fmt: skip
    yield Case("safetensors", "symlink-loop", mem, {**cfg, "m/x.safetensors": ("symlink", "x.safetensors")}, True)  # fmt: skip
    yield Case("safetensors", "dangling-symlink", mem, {**cfg, "m/x.safetensors": ("symlink", "nowhere")}, True)  # fmt: skip
    # the config itself
    for key in ["hidden_size", "num_hidden_layers", "num_attention_heads", "num_key_value_heads",
                "intermediate_size", "vocab_size", "max_position_embeddings", "head_dim",
                "torch_dtype", "tie_word_embeddings", "rope_scaling", "model_type", "architectures"]:  # fmt: skip
        for raw in BAD_JSON:
            text = _json_with(config, key, raw)
            # null is unset: transformers' LlamaConfig takes the heads for num_key_value_heads
            ok = raw == "null" and key in ("head_dim", "rope_scaling", "tie_word_embeddings",
                                           "torch_dtype", "num_key_value_heads")  # fmt: skip
            ok = ok or (key == "tie_word_embeddings" and raw in ("true", "false"))
            yield Case("config", f"{key}={raw[:10]}", mem, {"m/config.json": text},
                       None if ok or key in ("architectures", "model_type", "rope_scaling") else True)  # fmt: skip
    for name, data, invalid in wrappers(json.dumps(config)):
        yield Case("config", f"file-{name}", mem, {"m/config.json": data}, invalid)
    yield Case("config", "text_config-list", mem, {"m/config.json": json.dumps({**config, "text_config": []})}, None)  # fmt: skip
    yield Case("config", "config-is-dir", mem, {"m/config.json": ("dir",)}, True)
    yield Case("config", "name-too-long", ["memory", "x" * 5000, "--gpus", "1"], {}, True)
    yield Case("config", "json-too-long", ["memory", "x" * 5000 + ".json", "--gpus", "1"], {}, True)  # fmt: skip


# Older numeric flags ---------------------------------------------------------------------------

FLAGS: dict[str, tuple[list[str], list[str]]] = {
    # flag: (base command, extra args needed)
    "--gpus": (SWEEP, []), "--isl": (SWEEP, []), "--num-requests": (SWEEP, []),
    "--random-range-ratio": (SWEEP, []), "--rate": (SWEEP, []), "--clients": (SWEEP, []),
    "--slo-ttft": (SWEEP, ["--rate", "2"]), "--slo-tpot": (SWEEP, ["--rate", "2"]),
    "--seed": (SWEEP, []), "--gpu-memory-utilization": (SWEEP, []),
    "--max-num-seqs": (SWEEP, []), "--max-num-batched-tokens": (SWEEP, []),
    "--block-size": (SWEEP, []), "--mem-fraction-static": (SWEEP, ["--engine", "sglang"]),
    "--free-gpu-memory-fraction": (SWEEP, ["--engine", "trtllm"]),
    "--request-overhead-ms": (SWEEP, []), "--max-model-len": (SWEEP, []),
    "--spec-accept-length": (SWEEP, ["--speculative", "ngram:3"]),
    "--scheduler-recv-interval": (SWEEP, ["--engine", "sglang"]),
    "--think-time": (SWEEP, ["--workload", "multiturn-chat", "--clients", "4"]),
    "--turns": (SWEEP, ["--workload", "multiturn-chat", "--clients", "4"]),
    "--context": (SWEEP, ["--workload", "multiturn-chat", "--clients", "4"]),
    "--nodes": (PLAN[:3] + PLAN[4:], []), "--jobs": (PLAN[:5] + PLAN[6:], []),
}  # fmt: skip
TEXT_FLAGS: dict[str, list[str]] = {
    "--osl": ["nan", "0", "-1", "lognormal:nan:1", "lognormal:100:50", "lognormal:100:200:150",
              "lognormal:1e308:1e308", "100,100", "100," * 70, "lognormal:100:200:" + HUGE_INT,
              "hist:nope.csv", "1e3", "100..200"],
    "--concurrency": ["0", "-1", "4..2", "4..8:0", "4..8:-1", "4..8:" + HUGE_INT, "1..1e9",
                      "4,4,4", "nan", "4..", "..4", "4..8:1.5", ",", "4,,8"],
    "--gpu-total-memory": ["nan", "infGiB", "-1GiB", "0", "1e308GiB", "80", "80 GiB", "80XB"],
    "--kv-cache-memory": ["nan", "-1GiB", "0", "1e308GiB", "1", "1KiB"],
    "--swap-space": ["nan", "-1GiB", "1e308GiB", "0"],
    "--spec-acceptance": ["nan", "1.5", "-0.1", "0.8,nan", "", "0.8,,0.6", "0.8,0.9"],
    "--speculative": ["ngram:0", "ngram:" + HUGE_INT, "mtp:3", "eagle:3:nope", "eagle:nan"],
    "--layout": ["tp0", "dp0", "tp" + HUGE_INT, "dp1000000", "tp2,tp2", "tp1,", "TP1", "ep2"],
    "--engine-version": ["0.0.1", "nan", "9" * 50],
    "--policy": ["nope", ""], "--routing": ["nope"], "--prefix-caching": ["maybe", "ON"],
    "--preemption": ["nope"], "--all2all-backend": ["nope"], "--moe-backend": ["nope"],
    "--attention-dp-balance": ["nan", "-1", "60:0:1", "60:x", "1e9", HUGE_INT, "60:0", ""],
    "--arrival": ["nope", "batch"], "--weight-dtype": ["fp3"], "--kv-cache-dtype": ["int4"],
    "--plot": ["{d}/x.gif", "{d}/nodir/x.png", "{d}"],
    "--calibration": ["{d}", "{d}/nope.toml"],
}  # fmt: skip


def flag_cases() -> Iterator[Case]:
    values = ["nan", "inf", "-inf", "-1", "0", "-0", "1e308", "1e999", HUGE_INT, "1e9"]
    for flag, (base, extra) in FLAGS.items():
        for value in values:
            fine = value in ("0", "-0") or (flag == "--think-time" and value == "1e9")  # 31 y
            fine = fine or (flag == "--rate" and value in ("1e9", "1e308"))  # a sweep's burst
            yield Case("flags", f"{flag}={value[:8]}", [*base, *extra, flag, value], {},
                       None if fine else True)  # fmt: skip
    for flag, texts in TEXT_FLAGS.items():
        for value in texts:
            ok = value in ("TP1", "ON", "batch", "1e3", "80 GiB", "4,4,4", "0.8,0.9", "80",
                           "100,100", "100," * 70, "tp2,tp2", "tp1,", "eagle:3:nope")  # fmt: skip
            yield Case("flags", f"{flag}={value[:12]}", [*SWEEP, flag, value], {},
                       None if ok else True)  # fmt: skip
    for command in (["memory", "llama-3.1-8b"], PLAN):
        for flag in ["--gpus", "--max-model-len", "--gpu-memory-utilization", "--max-num-seqs"]:
            for value in ["nan", "-1", HUGE_INT, "1e9"]:
                yield Case("flags", f"{command[0]}{flag}={value[:6]}", [*command, flag, value],
                           {}, True)  # fmt: skip
    serve = "vllm serve meta-llama/Llama-3.1-8B --tensor-parallel-size {v}"
    for v in ["nan", "-1", HUGE_INT, "0", "1e3", "2 2"]:
        yield Case("flags", f"serve-command-tp={v[:6]}", ["memory", "--serve-command",
                   serve.format(v=v)], {}, True)  # fmt: skip
    for cmd in ["vllm serve", "", "vllm serve m --max-num-seqs", "'unclosed", "sglang x",
                "vllm serve m --gpu-memory-utilization nan"]:  # fmt: skip
        yield Case("flags", f"serve-command={cmd[:14]}", ["memory", "--serve-command", cmd], {}, True)  # fmt: skip


# A fourth campaign (2026-12-06, h-fuzz4): every flag of every command, flags that contradict
# each other, paths, and shapes of traces, specs, calibration files and configs not tried above.

# Boundary values given to every option of every command (typer's own list of them).
EVERY_VALUE = ["0", "-0", "1e-320", "1e308", "inf", "nan", "9" * 40, "", " ", "5 s", "٣",
               "\u00a0", "1e3x"]  # fmt: skip
OUTPUT_OPTIONS = {"--output", "--junit", "--markdown", "--write-baseline"}  # "nan" names a file
EVERY_FINE = {"0", "-0", "1e-320", "9" * 40, "٣"}  # may be valid for some flag: crashes only
FLAG_BASES: dict[str, tuple[list[str], dict[str, FileSpec]]] = {
    "sweep": (SWEEP, {}),
    "plan": (PLAN, {}),
    "memory": (["memory", "llama-3.1-8b", "--gpus", "1"], {}),
    "calibrate": (["calibrate", "{d}/log.txt", "--model", "llama-3.1-8b"], {"log.txt": "V16"}),
    "check": (["check", "{d}/s.toml"], {"s.toml": SPEC}),
    "models": (["models"], {}),
    "hardware": (["hardware"], {}),
}


def _options(command: str) -> list[tuple[str, bool]]:
    """(option, is a bare on/off flag) for every option of `command`, from typer's own list."""
    import typer

    from capcliff.cli.main import app

    group = typer.main.get_command(app)
    params = group.commands[command].params  # type: ignore[attr-defined]
    return [
        (p.opts[0], bool(getattr(p, "is_flag", False))) for p in params if p.opts[0].startswith("-")
    ]


def every_flag_cases() -> Iterator[Case]:
    v16 = (LOGS / "vllm_v1_v16_llama31_8b_eager.txt").read_text()
    for command, (base, files) in FLAG_BASES.items():
        files = {k: (v16 if v == "V16" else v) for k, v in files.items()}
        for option, is_flag in _options(command):
            if is_flag or option == "--help":
                continue
            for value in EVERY_VALUE:
                fine = value in EVERY_FINE or (option in OUTPUT_OPTIONS and value.strip() != "")
                fine = fine or (command, option, value) == ("sweep", "--rate", "1e308")  # a burst
                yield Case("every-flag", f"{command}{option}={value[:8]!r}", [*base, option, value],
                           files, None if fine else True)  # fmt: skip
        # the positional argument itself
        for value in EVERY_VALUE:
            argv = [base[0], value, *base[2:]] if len(base) > 1 else [*base, value]
            yield Case("every-flag", f"{command}-arg={value[:8]!r}", argv, files, True)


COMBOS: list[tuple[str, list[str], bool | None]] = [
    # (name, argv after the base, invalid?)
    ("batch+rate", ["--arrival", "batch", "--rate", "2"], True),
    ("batch+clients", ["--arrival", "batch", "--clients", "4"], True),
    ("poisson-no-rate", ["--arrival", "poisson"], None),
    ("poisson+clients", ["--arrival", "poisson", "--clients", "4"], True),
    ("clients-arrival-no-clients", ["--arrival", "clients"], None),
    ("rate+clients", ["--rate", "2", "--clients", "4"], True),
    ("slo-without-rate", ["--slo-ttft", "2"], None),
    ("layout-not-dividing-gpus", ["--gpus", "3", "--layout", "tp2"], True),
    ("layout-bigger-than-gpus", ["--gpus", "1", "--layout", "tp8"], True),
    ("layout-dp-not-dividing", ["--gpus", "4", "--layout", "dp3"], True),
    ("disagg+offload", ["--disagg", "1p:tp1,1d:tp1", "--offload", "cpu:64GiB"], None),
    ("disagg+layout", ["--disagg", "1p:tp1,1d:tp1", "--layout", "tp2"], True),
    ("disagg+gpus", ["--disagg", "1p:tp1,1d:tp1", "--gpus", "8"], True),
    ("disagg+spec", ["--disagg", "1p:tp1,1d:tp1", "--speculative", "ngram:3"], None),
    ("disagg+swap", ["--disagg", "1p:tp1,1d:tp1", "--preemption", "swap", "--swap-space", "4GiB"], None),
    ("engine-version-other-engine", ["--engine", "sglang", "--engine-version", "0.10.2"], None),  # a later SGLang
    ("engine-version-future", ["--engine-version", "99.0.0"], None),  # the latest profile, named
    ("engine-version-v0-removed", ["--engine", "vllm-v0", "--engine-version", "0.11.0"], True),
    ("engine-version-v0-last", ["--engine", "vllm-v0", "--engine-version", "0.10.2"], False),
    ("trtllm-version-vllm", ["--engine", "trtllm", "--engine-version", "0.4.3"], True),
    ("mem-fraction-on-vllm", ["--mem-fraction-static", "0.5"], True),
    ("free-fraction-on-sglang", ["--engine", "sglang", "--free-gpu-memory-fraction", "0.5"], True),
    ("gmu-on-sglang", ["--engine", "sglang", "--gpu-memory-utilization", "0.5"], True),
    ("kv-cache-memory-on-sglang", ["--engine", "sglang", "--kv-cache-memory", "10GiB"], True),
    ("recv-interval-on-vllm", ["--scheduler-recv-interval", "4"], True),
    ("overlap-schedule-on-vllm", ["--overlap-schedule"], None),  # vLLM's async scheduling
    ("moe-backend-on-dense", ["--moe-backend", "cutlass", "--engine", "trtllm"], None),
    ("all2all-on-dense", ["--all2all-backend", "deepep"], None),
    ("swap-space-without-swap", ["--swap-space", "4GiB"], None),  # a warning: serve commands carry it
    ("swap-without-space", ["--preemption", "swap"], None),
    ("spec-accept-without-spec", ["--spec-accept-length", "2"], True),
    ("spec-acceptance-without-spec", ["--spec-acceptance", "0.8,0.6"], True),
    ("spec-acceptance-and-length", ["--speculative", "ngram:2", "--spec-acceptance", "0.8,0.6",
                                    "--spec-accept-length", "2"], True),
    ("spec-acceptance-wrong-k", ["--speculative", "ngram:2", "--spec-acceptance", "0.8,0.6,0.5"], True),
    ("spec-overlap-without-spec", ["--spec-overlap"], True),
    ("mtp-on-llama", ["--speculative", "mtp:2"], True),
    ("eagle-on-sglang-v0", ["--engine", "vllm-v0", "--speculative", "eagle:2"], None),
    ("think-time-single-turn", ["--think-time", "5"], True),
    ("turns-single-turn", ["--turns", "3"], True),
    ("context-single-turn", ["--context", "1000"], True),
    ("range-ratio-with-trace", ["--workload", "{d}/t.jsonl", "--random-range-ratio", "0.5"], True),
    ("isl-with-trace", ["--workload", "{d}/t.jsonl", "--isl", "5000"], True),
    ("osl-with-trace", ["--workload", "{d}/t.jsonl", "--osl", "5000"], True),
    ("arrival-with-trace", ["--workload", "{d}/t.jsonl", "--arrival", "batch"], None),
    ("clients-with-plain-trace", ["--workload", "{d}/t.jsonl", "--clients", "4"], True),
    ("osl-list-and-hist", ["--osl", "100,hist:h.csv"], True),
    ("max-model-len-below-isl", ["--max-model-len", "50", "--isl", "100"], True),
    ("max-model-len-below-isl+osl", ["--max-model-len", "150"], None),
    ("block-size-odd", ["--block-size", "7"], None),
    ("block-size-sglang", ["--engine", "sglang", "--block-size", "16"], None),
    ("batched-tokens-below-isl-no-chunk", ["--max-num-batched-tokens", "50", "--no-enable-chunked-prefill"], True),
    ("max-num-seqs-0", ["--max-num-seqs", "0"], True),
    ("kv-dtype-fp8-v0", ["--engine", "vllm-v0", "--kv-cache-dtype", "fp8"], None),
    ("weight-int4-on-fp-model", ["--weight-dtype", "int4"], None),
    ("prefix-caching-off-sessions", ["--workload", "multiturn-chat", "--clients", "4", "--prefix-caching", "off"], None),
    ("offload-with-prefix-off", ["--offload", "cpu:64GiB", "--prefix-caching", "off"], None),
    ("routing-without-dp", ["--routing", "least-loaded"], None),
    ("step-source-bad-with-calibration", ["--step-source", "aiconfigurator"], None),
    ("step-source-calibration-no-file", ["--step-source", "calibration"], True),
    ("serve-command-and-engine", ["--serve-command", "sglang.launch_server --model-path x --tp 1", "--engine", "vllm"], True),
    ("serve-command-other-model", ["--serve-command", "vllm serve Qwen/Qwen3-8B"], True),
    ("gpu-total-memory-below-weights", ["--gpu-total-memory", "4GiB"], None),
    ("kv-cache-memory-above-gpu", ["--kv-cache-memory", "500GiB"], True),
    ("kv-cache-memory+gmu", ["--kv-cache-memory", "10GiB", "--gpu-memory-utilization", "0.5"], None),
    ("concurrency-above-requests", ["--concurrency", "64..4096"], None),
    ("plot-and-csv", ["--plot", "{d}/x.png", "--format", "csv"], None),
]  # fmt: skip
PLAN_COMBOS: list[tuple[str, list[str], bool | None]] = [
    ("gpus+nodes-contradict", ["--gpus", "3", "--nodes", "2"], True),
    ("nodes-0", ["--nodes", "0"], True),
    ("objective-online", ["--rate", "2", "--arrival", "poisson", "--objective", "makespan"], True),
    ("objective-bad", ["--objective", "speed"], True),
    ("headroom-batch", ["--headroom", "0.5"], True),
    ("price-batch-makespan", ["--price-gpu-hour", "3"], None),
    ("slo-batch", ["--slo-ttft", "2"], None),  # goodput reads it
    ("disagg-1gpu", ["--disagg"], None),
    ("disagg+layout", ["--disagg", "--gpus", "2", "--layout", "tp1"], None),
    ("serve-local-path-catalog", ["--serve-local-path"], True),
    ("plot-batch", ["--plot", "{d}/x.png"], True),
    ("format-markdown-plot", ["--format", "markdown", "--plot", "{d}/x.svg"], None),
    ("jobs-huge", ["--jobs", "100000"], None),  # capped at idle cores
    ("layout-not-dividing", ["--gpus", "3", "--layout", "tp2"], True),
    ("gpu-list-one-price-each-bad", ["--gpu", "h100-sxm,h200-sxm", "--price-gpu-hour", "2,nan"], True),
]  # fmt: skip


def combo_cases() -> Iterator[Case]:
    trace = "\n".join(json.dumps(r) for r in PLAIN_ROWS) + "\n"
    files: dict[str, FileSpec] = {"t.jsonl": trace, "h.csv": "tokens,count\n100,1\n"}
    for name, extra, invalid in COMBOS:
        yield Case("combo", f"sweep-{name}", [*SWEEP, *extra], files, invalid)
        if not any(x in name for x in ("plot", "concurrency", "disagg")):
            mem_ok = not any(f in extra for f in ("--arrival", "--rate", "--clients", "--workload",
                             "--think-time", "--turns", "--context", "--osl", "--isl", "--concurrency",
                             "--routing", "--preemption", "--swap-space", "--offload", "--speculative",
                             "--spec-accept-length", "--spec-acceptance", "--spec-overlap", "--step-source",
                             "--engine-version", "--prefix-caching", "--slo-ttft", "--random-range-ratio",
                             "--scheduler-recv-interval", "--overlap-schedule", "--moe-backend"))  # fmt: skip
            if mem_ok:
                yield Case(
                    "combo", f"memory-{name}", ["memory", "llama-3.1-8b", *extra], files, invalid
                )
    for name, extra, invalid in PLAN_COMBOS:
        yield Case("combo", f"plan-{name}", [*PLAN, *extra], files, invalid)
    # calibrate: flags that contradict the input
    v16 = (LOGS / "vllm_v1_v16_llama31_8b_eager.txt").read_text()
    rows = "\n".join(json.dumps(r) for r in RUNS)
    for name, argv, fs, invalid in [
        ("log-other-engine", ["calibrate", "{d}/l.txt", "--model", "llama-3.1-8b", "--engine", "sglang"], {"l.txt": v16}, True),
        ("log-other-model", ["calibrate", "{d}/l.txt", "--model", "qwen3-8b"], {"l.txt": v16}, True),
        ("log-other-layout", ["calibrate", "{d}/l.txt", "--model", "llama-3.1-8b", "--layout", "tp2"], {"l.txt": v16}, True),
        ("log-gpus-4", ["calibrate", "{d}/l.txt", "--model", "llama-3.1-8b", "--gpus", "4"], {"l.txt": v16}, True),
        ("log-speculative", ["calibrate", "{d}/l.txt", "--model", "llama-3.1-8b", "--speculative", "ngram:3"], {"l.txt": v16}, True),
        ("log-calibration", ["calibrate", "{d}/l.txt", "--model", "llama-3.1-8b", "--calibration", "{d}/l.txt"], {"l.txt": v16}, True),
        ("bench-other-model", ["calibrate", "{d}/r.json", "--model", "deepseek-r1", "--gpu", "h100-sxm"], {"r.json": rows}, True),
        ("bench-layout-vs-gpus", [*CAL_VLLM, "--layout", "tp2", "--gpus", "1"], {"r.json": rows}, True),
        ("bench-speculative-mtp-llama", [*CAL_VLLM, "--speculative", "mtp:2"], {"r.json": rows}, True),
        ("bench-calibration-without-spec", [*CAL_VLLM, "--calibration", "{d}/c.toml"], {"r.json": rows, "c.toml": "x = 1\n"}, True),
        ("bench-max-model-len", [*CAL_VLLM, "--max-model-len", "10"], {"r.json": rows}, True),
        ("bench-output-is-input", [*CAL_VLLM, "-o", "{d}/r.json", "--force"], {"r.json": rows}, True),
        ("bench-output-dot-spelling", [*CAL_VLLM, "-o", "./r.json", "--force"], {"r.json": rows}, True),
        ("bench-output-hardlink", [*CAL_VLLM, "-o", "{d}/h.json", "--force"], {"r.json": rows}, True),
        ("bench-output-missing-dir", [*CAL_VLLM, "-o", "{d}/no/c.toml"], {"r.json": rows}, True),
        ("bench-output-dir", [*CAL_VLLM, "-o", "{d}", "--force"], {"r.json": rows}, True),
        ("bench-output-devnull", [*CAL_VLLM, "-o", "/dev/null", "--force"], {"r.json": rows}, None),
        ("bench-output-dotdot", [*CAL_VLLM, "-o", "{d}/x/../r.json", "--force"], {"r.json": rows, "x": ("dir",)}, True),
        ("bench-format-json-and-out", [*CAL_VLLM, "--format", "json", "-o", "{d}/c.toml"], {"r.json": rows}, None),
    ]:  # fmt: skip
        setup = _hardlink("r.json", "h.json") if "hardlink" in name else None
        yield Case("combo", f"calibrate-{name}", argv, fs, invalid, setup)


def _hardlink(source: str, link: str) -> Callable[[Path], None]:
    def make(folder: Path) -> None:
        (folder / link).hardlink_to(folder / source)

    return make


def _chmod(name: str, mode: int) -> Callable[[Path], None]:
    def make(folder: Path) -> None:
        (folder / name).chmod(mode)

    return make


def path_cases() -> Iterator[Case]:
    config = json.dumps(llama_config())
    trace = "\n".join(json.dumps(r) for r in PLAIN_ROWS) + "\n"
    mem = ["memory", "{d}/m", "--gpus", "1"]
    for name, argv, fs, invalid, setup in [
        ("model-empty-dir", mem, {"m": ("dir",)}, True, None),
        ("model-devnull", ["memory", "/dev/null", "--gpus", "1"], {}, True, None),
        ("model-config-devnull", mem, {"m/config.json": ("symlink", "/dev/null")}, True, None),
        ("model-config-dangling", mem, {"m/config.json": ("symlink", "nowhere")}, True, None),
        ("model-config-symlink-ok", mem, {"real.json": config, "m/config.json": ("symlink", "../real.json")}, False, None),
        ("model-json-file", ["memory", "{d}/c.json", "--gpus", "1"], {"c.json": config}, None, None),
        ("model-json-not-config", ["memory", "{d}/c.json", "--gpus", "1"], {"c.json": "[1,2]"}, True, None),
        ("model-toml-card", ["memory", "{d}/c.toml", "--gpus", "1"], {"c.toml": "x = 1\n"}, True, None),
        ("model-dot", ["memory", ".", "--gpus", "1"], {"config.json": config}, None, None),
        ("model-relative-dotslash", ["memory", "./m", "--gpus", "1"], {"m/config.json": config}, None, None),
        ("model-trailing-slash", ["memory", "{d}/m/", "--gpus", "1"], {"m/config.json": config}, None, None),
        ("model-catalog-name-as-dir", ["memory", "llama-3.1-8b", "--gpus", "1"], {"llama-3.1-8b": ("dir",)}, None, None),
        ("model-unreadable", mem, {"m/config.json": config}, None, _chmod("m/config.json", 0)),
        ("trace-devnull", ["sweep", "llama-3.1-8b", "--workload", "/dev/null", "--concurrency", "4"], {}, True, None),
        ("trace-dotslash", ["sweep", "llama-3.1-8b", "--workload", "./t.jsonl", "--concurrency", "4"], {"t.jsonl": trace}, False, None),
        ("trace-no-suffix", ["sweep", "llama-3.1-8b", "--workload", "{d}/t", "--concurrency", "4"], {"t": trace}, None, None),
        ("trace-json-suffix", ["sweep", "llama-3.1-8b", "--workload", "{d}/t.json", "--concurrency", "4"], {"t.json": trace}, None, None),
        ("trace-named-like-preset", ["sweep", "llama-3.1-8b", "--workload", "chat", "--concurrency", "4"], {"chat": trace}, None, None),
        ("plot-is-trace", ["sweep", "llama-3.1-8b", "--workload", "{d}/t.png", "--concurrency", "4", "--plot", "{d}/t.png", "--force"], {"t.png": trace}, True, None),
        ("plot-is-trace-dotslash", ["sweep", "llama-3.1-8b", "--workload", "t.svg", "--concurrency", "4", "--plot", "./t.svg", "--force"], {"t.svg": trace}, True, None),
        ("plot-hardlink-to-trace", ["sweep", "llama-3.1-8b", "--workload", "{d}/t.jsonl", "--concurrency", "4", "--plot", "{d}/h.png", "--force"], {"t.jsonl": trace}, True, _hardlink("t.jsonl", "h.png")),
        ("plot-is-calibration", [*SWEEP, "--calibration", "{d}/c.svg", "--plot", "{d}/c.svg", "--force"], {"c.svg": "engine = \"vllm\"\nsource = \"x\"\n"}, True, None),
        ("plot-missing-dir", [*SWEEP, "--plot", "{d}/no/x.png"], {}, True, None),
        ("plot-devnull", [*SWEEP, "--plot", "/dev/null"], {}, True, None),
        ("plot-existing-no-force", [*SWEEP, "--plot", "{d}/x.png"], {"x.png": b"keep"}, True, None),
        ("plan-plot-is-model-config", ["plan", "{d}/m", "--gpus", "1", "--jobs", "1", *SMALL, "--rate", "1", "--plot", "{d}/m/config.png", "--force"], {"m/config.json": config, "m/config.png": ("symlink", "config.json")}, True, None),
        ("check-junit-equals-markdown", ["check", "{d}/s.toml", "--junit", "{d}/o.txt", "--markdown", "{d}/o.txt"], {"s.toml": SPEC}, True, None),
        ("check-junit-equals-baseline-out", ["check", "{d}/s.toml", "--junit", "{d}/o.json", "--write-baseline", "{d}/o.json"], {"s.toml": SPEC}, True, None),
        ("check-baseline-equals-write", ["check", "{d}/s.toml", "--baseline", "{d}/b.json", "--write-baseline", "./b.json", "--force"], {"s.toml": SPEC}, None, None),
        ("check-junit-dotslash-spec", ["check", "s.toml", "--junit", "./s.toml", "--force"], {"s.toml": SPEC}, True, None),
        ("check-junit-hardlink-spec", ["check", "{d}/s.toml", "--junit", "{d}/h.xml", "--force"], {"s.toml": SPEC}, True, _hardlink("s.toml", "h.xml")),
        ("check-markdown-is-trace", ["check", "{d}/s.toml", "--markdown", "{d}/t.jsonl", "--force"],
         {"s.toml": SPEC.replace("isl = 100\nosl = 100\narrival = \"batch\"\nnum_requests = 20\n", 'trace = "t.jsonl"\n').replace("no_preemption_at = 4", "no_preemption_at = 2").replace("concurrency = 4", "concurrency = 2"), "t.jsonl": trace}, True, None),
        ("check-markdown-is-calibration", ["check", "{d}/s.toml", "--markdown", "{d}/c.toml", "--force"],
         {"s.toml": SPEC.replace('engine = "vllm"', 'engine = "vllm"\ncalibration = "c.toml"'), "c.toml": "engine = \"vllm\"\nsource = \"x\"\n"}, True, None),
        ("check-spec-devnull", ["check", "/dev/null"], {}, True, None),
        ("check-spec-dir", ["check", "{d}"], {}, True, None),
        ("check-spec-unreadable", ["check", "{d}/s.toml"], {"s.toml": SPEC}, None, _chmod("s.toml", 0)),
        ("calibrate-log-devnull", ["calibrate", "/dev/null", "--model", "llama-3.1-8b"], {}, True, None),
        ("calibrate-log-dir", ["calibrate", "{d}", "--model", "llama-3.1-8b"], {}, True, None),
        ("calibrate-out-is-model-config", ["calibrate", "{d}/l.txt", "--model", "{d}/m", "-o", "{d}/m/config.json", "--force"],
         {"l.txt": (LOGS / "vllm_v1_v16_llama31_8b_eager.txt").read_text(), "m/config.json": config}, True, None),
        ("calibrate-out-symlink-to-model-config", ["calibrate", "{d}/l.txt", "--model", "{d}/m", "-o", "{d}/o.toml", "--force"],
         {"l.txt": (LOGS / "vllm_v1_v16_llama31_8b_eager.txt").read_text(), "m/config.json": config, "o.toml": ("symlink", "m/config.json")}, True, None),
    ]:  # fmt: skip
        yield Case("paths", name, argv, fs, invalid, setup)


def trace4_cases() -> Iterator[Case]:
    def text(rows: list[dict[str, object]]) -> str:
        return "\n".join(json.dumps(r) for r in rows) + "\n"

    plain = PLAIN_ROWS
    sess = SESSION_ROWS
    same = [dict(plain[0]) for _ in range(50)]
    out_of_order = [plain[2], plain[0], plain[1]]
    big = [{"arrival_s": i * 0.001, "input_tokens": 50, "output_tokens": 5} for i in range(200_000)]
    for name, body, invalid in [
        ("out-of-order", text(out_of_order), None),
        ("all-identical", text(same), None),
        ("one-request", text(plain[:1]), None),
        ("huge-200k", text(big), None),
        ("trailing-comma", text(plain).replace("}\n", "},\n"), True),
        ("trailing-comma-in-object", text(plain).replace("}", ", }"), True),
        ("single-quotes", text(plain).replace('"', "'"), True),
        ("arrival-negative", text([{**plain[0], "arrival_s": -5.0}, *plain[1:]]), True),
        ("arrival-1e9", text([*plain[:2], {**plain[2], "arrival_s": 1e9}]), None),  # under 31 years
        ("arrival-1e300", text([*plain[:2], {**plain[2], "arrival_s": 1e300}]), True),
        ("arrival-all-1e6", text([{**r, "arrival_s": 1e6 + i} for i, r in enumerate(plain)]), None),
        ("arrival-denormal", text([{**r, "arrival_s": 5e-324 * i} for i, r in enumerate(plain)]), None),
        ("arrival-as-string", text([{**plain[0], "arrival_s": "0.5"}, *plain[1:]]), True),
        ("output-zero", text([{**plain[0], "output_tokens": 0}, *plain[1:]]), True),
        ("input-zero", text([{**plain[0], "input_tokens": 0}, *plain[1:]]), True),
        ("input-past-context", text([{**plain[0], "input_tokens": 10_000_000}, *plain[1:]]), True),
        ("input-float", text([{**plain[0], "input_tokens": 50.5}, *plain[1:]]), True),
        ("input-float-integral", text([{**plain[0], "input_tokens": 50.0}, *plain[1:]]), None),
        ("output-bool", text([{**plain[0], "output_tokens": True}, *plain[1:]]), True),
        ("mixed-plain-and-session", text([plain[0], sess[0], sess[1]]), True),
        ("dup-keys-differ", '{"arrival_s": 0, "input_tokens": 50, "output_tokens": 20, "output_tokens": 999999}\n', True),
        ("bom-every-line", "".join("\ufeff" + json.dumps(r) + "\n" for r in plain), True),
        ("crlf-and-lf-mixed", json.dumps(plain[0]) + "\r\n" + json.dumps(plain[1]) + "\n" + json.dumps(plain[2]) + "\r\n", False),
        ("nul-inside", text(plain).replace("}", "}\x00", 1), True),
        ("only-blank", "\n\n\n", True),
        ("zero-requests-array", "[]\n", True),
        ("empty-objects", "{}\n{}\n", True),
        ("extra-field", text([{**r, "priority": 1} for r in plain]), True),
        ("unicode-key", text([{"arrival_s": 0.0, "ínput_tokens": 5, "output_tokens": 5}]), True),
        ("number-1e400", '{"arrival_s": 1e400, "input_tokens": 50, "output_tokens": 20}\n', True),
        ("arrival-minus-0", text([{**plain[0], "arrival_s": -0.0}, *plain[1:]]), None),
    ]:  # fmt: skip
        yield Case("trace4", f"plain-{name}", TRACE_SWEEP, {"t.jsonl": body}, invalid)
        if name in (
            "out-of-order",
            "huge-200k",
            "arrival-1e9",
            "all-identical",
            "arrival-negative",
        ):
            yield Case("trace4", f"plan-plain-{name}", ["plan", "llama-3.1-8b", "--gpus", "1", "--jobs", "1",
                       "--workload", "{d}/t.jsonl"], {"t.jsonl": body}, invalid)  # fmt: skip
    s = sess
    for name, rows, invalid in [
        ("turn-gap", [s[0], {**s[1], "turn": 5}, s[2], s[3]], None),  # turns order
        ("turn-dup", [s[0], {**s[1], "turn": 0}, s[2], s[3]], True),
        ("turn-starts-1", [{**s[0], "turn": 1}, {**s[1], "turn": 2}, s[2], s[3]], None),
        ("turn-only-later", [s[1], s[3]], None),
        ("turns-out-of-order", [s[1], s[0], s[2], s[3]], None),
        ("turn-negative", [{**s[0], "turn": -1}, s[1], s[2], s[3]], True),
        ("turn-float", [s[0], {**s[1], "turn": 1.5}, s[2], s[3]], True),
        ("turn-huge", [s[0], {**s[1], "turn": 10**15}, s[2], s[3]], True),
        ("think-1e9", [s[0], {**s[1], "think_s": 1e9}, s[2], s[3]], None),
        ("think-1e300", [s[0], {**s[1], "think_s": 1e300}, s[2], s[3]], True),
        ("think-on-first-turn", [{**s[0], "think_s": 3.0}, s[1], s[2], s[3]], None),
        ("arrival-on-later-turn", [s[0], {**s[1], "arrival_s": 2.0}, s[2], s[3]], None),
        ("prefix-longer-than-input", [s[0], s[1], {**s[2], "prefix_tokens": 400}, s[3]], None),  # on top
        ("prefix-tokens-no-id", [s[0], s[1], {k: v for k, v in s[2].items() if k != "prefix_id"}, s[3]], None),
        ("prefix-id-no-tokens", [s[0], s[1], {k: v for k, v in s[2].items() if k != "prefix_tokens"}, s[3]], None),
        ("prefix-same-id-diff-tokens", [{**s[0], "prefix_id": "sys", "prefix_tokens": 8}, s[1], s[2], s[3]], None),
        ("session-id-int", [{**r, "session_id": 7} for r in s], None),
        ("session-id-mixed-types", [{**s[0], "session_id": 1}, {**s[1], "session_id": "1"}, s[2], s[3]], None),
        ("session-1000-turns", [{**s[0], "turn": t, "think_s": 0.1} if t else s[0] for t in range(1000)], None),
        ("session-no-arrival", [{k: v for k, v in s[0].items() if k != "arrival_s"}, s[1], s[2], s[3]], None),
        ("all-sessions-at-1e9", [{**s[0], "arrival_s": 1e9}, s[1], {**s[2], "arrival_s": 1e9}, s[3]], None),
        ("context-grows-past-max", [s[0], *[{**s[1], "turn": t, "input_tokens": 50_000, "think_s": 0.1} for t in range(1, 6)]], None),
    ]:  # fmt: skip
        rows2 = (
            [r for r in rows if r.get("turn", 0) != 0 or r is rows[0] or r.get("session_id") != "a"]
            if name == "session-1000-turns"
            else rows
        )
        yield Case("trace4", f"session-{name}", TRACE_SWEEP, {"t.jsonl": text(rows2)}, invalid)
    # check with traces
    argv = ["check", "{d}/s.toml", "--format", "json"]
    tspec = (
        SPEC.replace(
            'isl = 100\nosl = 100\narrival = "batch"\nnum_requests = 20\n', 'trace = "t.jsonl"\n'
        )
        .replace("concurrency = 4", "concurrency = 2")
        .replace("no_preemption_at = 4", "no_preemption_at = 2")
    )
    for name, spec, invalid in [
        ("trace+isl", tspec.replace('trace = "t.jsonl"', 'trace = "t.jsonl"\nisl = 5000'), True),
        ("trace+rate", tspec.replace('trace = "t.jsonl"', 'trace = "t.jsonl"\nrate = 5.0'), True),
        ("trace+num_requests", tspec.replace('trace = "t.jsonl"', 'trace = "t.jsonl"\nnum_requests = 5'), True),
        ("trace+preset", tspec.replace('trace = "t.jsonl"', 'trace = "t.jsonl"\npreset = "chat"'), True),
        ("trace-absolute-dotdot", tspec.replace('"t.jsonl"', '"sub/../t.jsonl"'), False),
        ("trace-empty-string", tspec.replace('"t.jsonl"', '""'), True),
    ]:  # fmt: skip
        yield Case(
            "trace4",
            f"check-{name}",
            argv,
            {"s.toml": spec, "t.jsonl": text(plain), "sub": ("dir",)},
            invalid,
        )


def check4_cases() -> Iterator[Case]:
    argv = ["check", "{d}/s.toml", "--format", "json"]
    exp = "[scenario.expect]\n"
    for name, spec, invalid in [
        ("unknown-key-workload", SPEC.replace("isl = 100", "isl = 100\nisl_tokens = 5"), True),
        ("unknown-key-top", "baseline_tolerence = 0.1\n" + SPEC, True),
        ("unknown-key-scenario", SPEC.replace('gpu = "h100-sxm"', 'gpu = "h100-sxm"\ngpu_count = 2'), True),
        ("expect-nested-table", SPEC.replace(exp, exp + "fits = true\n[scenario.expect.more]\na = 1\n").replace("fits = true\nkv_headroom", "kv_headroom"), True),
        ("workload-nested-table", SPEC.replace("[scenario.expect]", "[scenario.workload.more]\na = 1\n[scenario.expect]"), True),
        ("expect-array-of-tables", SPEC.replace("[scenario.expect]", "[[scenario.expect]]"), True),
        ("workload-array-of-tables", SPEC.replace("[scenario.workload]", "[[scenario.workload]]"), True),
        ("expect-empty", SPEC.split("[scenario.expect]")[0] + "[scenario.expect]\n", None),  # baselines
        ("no-expect", SPEC.split("[scenario.expect]")[0], None),
        ("no-workload", SPEC.split("[scenario.workload]")[0] + "[scenario.expect]\nfits = true\n", None),
        ("headroom-min-1", SPEC.replace("kv_headroom_min = 0.1", "kv_headroom_min = 1.0"), True),
        ("headroom-min-2", SPEC.replace("kv_headroom_min = 0.1", "kv_headroom_min = 2.0"), True),
        ("prefix-hit-1.5", SPEC.replace("kv_headroom_min = 0.1", "prefix_hit_rate_min = 1.5"), True),
        ("ttft-max-0", SPEC.replace("kv_headroom_min = 0.1", "ttft_p99_max_s = 0.0"), True),
        ("ttft-max-1e-320", SPEC.replace("kv_headroom_min = 0.1", "ttft_p99_max_s = 1e-320"), True),
        ("ttft-max-1e300", SPEC.replace("kv_headroom_min = 0.1", "ttft_p99_max_s = 1e300"), True),
        ("throughput-min-0", SPEC.replace("kv_headroom_min = 0.1", "output_throughput_min_tok_s = 0.0"), True),
        ("no-preempt-above-requests", SPEC.replace("no_preemption_at = 4", "no_preemption_at = 1000000"), True),
        ("cliff-min-above-requests", SPEC.replace("no_preemption_at = 4", "cliff_concurrency_min = 1000000"), True),
        ("replicas-max-0", SPEC.replace("no_preemption_at = 4", "replicas_max = 0"), True),
        ("sustained-rps-batch", SPEC.replace("no_preemption_at = 4", "sustained_rps_min = 1.0"), None),
        ("usd-max-batch", SPEC.replace("no_preemption_at = 4", "usd_per_million_tokens_max = 1.0"), None),
        ("layout-expect-impossible", SPEC.replace("no_preemption_at = 4", 'recommended_layout = "tp3"'), True),
        ("max-model-len-fits-0", SPEC.replace("no_preemption_at = 4", "max_model_len_fits = 0"), True),
        ("max-model-len-fits-huge", SPEC.replace("no_preemption_at = 4", "max_model_len_fits = 10000000000"), None),
        ("fits-false-and-limits", SPEC.replace("fits = true", "fits = false"), True),
        ("fits-string", SPEC.replace("fits = true", 'fits = "yes"'), True),
        ("rate-and-batch", SPEC.replace('arrival = "batch"', 'arrival = "batch"\nrate = 2.0'), True),
        ("clients-and-rate", SPEC.replace('arrival = "batch"', 'arrival = "poisson"\nrate = 2.0\nclients = 4'), True),
        ("concurrency-list", SPEC.replace("concurrency = 4", "concurrency = [4, 8]"), None),
        ("concurrency-string-range", SPEC.replace("concurrency = 4", 'concurrency = "4..8"'), None),
        ("concurrency-string-bad", SPEC.replace("concurrency = 4", 'concurrency = "4..2"'), True),
        ("osl-list", SPEC.replace("osl = 100", "osl = [100, 200]"), None),
        ("gpus-not-dividing", SPEC.replace('layout = "tp1"', 'layout = "tp2"\ngpus = 3'), True),
        ("engine-version-other", SPEC.replace('engine = "vllm"', 'engine = "sglang"\nengine_version = "0.10.2"'), None),
        ("engine-unknown", SPEC.replace('engine = "vllm"', 'engine = "vllm2"'), True),
        ("mem-fraction-on-vllm", SPEC.replace('engine = "vllm"', 'engine = "vllm"\nmem_fraction_static = 0.5'), True),
        ("offload-and-prefix-off", SPEC.replace('engine = "vllm"', 'engine = "vllm"\noffload = "cpu:64GiB"\nprefix_caching = "off"'), None),
        ("baseline-tolerance-2", "baseline_tolerance = 2.0\n" + SPEC, True),
        ("scenario-1000", SPEC * 0 + "".join(SPEC.replace('name = "s"', f'name = "s{i}"') for i in range(300)), None),
        ("datetime-value", SPEC.replace("isl = 100", "isl = 1979-05-27T07:32:00Z"), True),
        ("key-quoted-dotted", SPEC.replace("isl = 100", '"isl.x" = 100\nisl = 100'), True),
        ("multiline-name", SPEC.replace('name = "s"', 'name = """s\nsecond line"""'), None),
        ("name-empty", SPEC.replace('name = "s"', 'name = ""'), True),
        ("name-missing", SPEC.replace('name = "s"\n', ""), None),
        ("model-missing", SPEC.replace('model = "llama-3.1-8b"\n', ""), True),
        ("gpu-missing", SPEC.replace('gpu = "h100-sxm"\n', ""), None),
        ("top-level-scalars-only", "name = 1\n", True),
        ("scenario-empty-table", "[[scenario]]\n", True),
        ("expect-int-for-float", SPEC.replace("kv_headroom_min = 0.1", "kv_headroom_min = 0"), None),
        ("expect-float-for-int", SPEC.replace("no_preemption_at = 4", "no_preemption_at = 4.0"), None),
        ("isl-float", SPEC.replace("isl = 100", "isl = 100.5"), True),
        ("num-requests-1e6", SPEC.replace("num_requests = 20", "num_requests = 100000000"), True),
        ("seed-huge", SPEC.replace('engine = "vllm"', 'engine = "vllm"\nseed = 9223372036854775807'), None),
    ]:  # fmt: skip
        yield Case("check4", name, argv, {"s.toml": spec}, invalid)


CAL_OK = """engine = "vllm"
engine_version = "0.10.2"
source = "log.txt"
model = "llama-3.1-8b"
layout = "tp1"
weight_dtype = "bf16"
kv_cache_dtype = "bf16"

[terms_gib]
weights_overhead = 0.0314
"""
STEP_OK = """
[step_time]
fixed_s = 0.002
scale = 1.1
points = 3
source = "r.json"
"""


def calfile_cases() -> Iterator[Case]:
    use = [*SWEEP, "--calibration", "{d}/c.toml"]
    yield Case("calfile", "valid", use, {"c.toml": CAL_OK}, False)
    for name, text, invalid in [
        ("schema-version-2", "schema_version = 2\n" + CAL_OK, True),
        ("schema-version-0", "schema_version = 0\n" + CAL_OK, True),
        ("older-no-source", CAL_OK.replace('source = "log.txt"\n', ""), True),
        ("unknown-top-key", CAL_OK.replace('engine = "vllm"', 'engine = "vllm"\nfitted_at = "2030"'), True),
        ("unknown-term", CAL_OK + "future_term = 0.5\n", True),
        ("term-string", CAL_OK.replace("0.0314", '"0.0314"'), True),
        ("term-int", CAL_OK.replace("0.0314", "1"), None),
        ("term-bool", CAL_OK.replace("0.0314", "true"), True),
        ("term-nan", CAL_OK.replace("0.0314", "nan"), True),
        ("term-inf", CAL_OK.replace("0.0314", "inf"), True),
        ("term-neg", CAL_OK.replace("0.0314", "-1.0"), True),
        ("term-huge", CAL_OK.replace("0.0314", "1e300"), True),
        ("term-past-gpu", CAL_OK.replace("0.0314", "500.0"), True),
        ("term-table", CAL_OK.replace("weights_overhead = 0.0314", "[terms_gib.weights_overhead]\na = 1"), True),
        ("terms-scalar", CAL_OK.replace("[terms_gib]\nweights_overhead = 0.0314\n", "terms_gib = 3\n"), True),
        ("engine-other", CAL_OK.replace('engine = "vllm"', 'engine = "sglang"'), True),
        ("engine-unknown", CAL_OK.replace('engine = "vllm"', 'engine = "vllm9"'), True),
        ("engine-version-num", CAL_OK.replace('"0.10.2"', "0.1"), True),
        ("engine-version-future", CAL_OK.replace('"0.10.2"', '"99.0.0"'), None),
        ("model-other", CAL_OK.replace('model = "llama-3.1-8b"', 'model = "qwen3-8b"'), True),
        ("layout-other", CAL_OK.replace('layout = "tp1"', 'layout = "tp2"'), True),
        ("layout-garbage", CAL_OK.replace('layout = "tp1"', 'layout = "zz"'), True),
        ("weight-dtype-other", CAL_OK.replace('weight_dtype = "bf16"', 'weight_dtype = "fp8"'), True),
        ("kv-dtype-garbage", CAL_OK.replace('kv_cache_dtype = "bf16"', 'kv_cache_dtype = "fp3"'), True),
        ("gpu-other", CAL_OK.replace('layout = "tp1"', 'layout = "tp1"\ngpu = "h100-sxm"'), True),
        ("gpu-unknown", CAL_OK.replace('layout = "tp1"', 'layout = "tp1"\ngpu = "zz"'), True),
        ("step-ok", CAL_OK + STEP_OK, None),
        ("step-scale-0", CAL_OK + STEP_OK.replace("scale = 1.1", "scale = 0.0"), True),
        ("step-scale-1e-3", CAL_OK + STEP_OK.replace("scale = 1.1", "scale = 0.001"), True),
        ("step-fixed-neg", CAL_OK + STEP_OK.replace("fixed_s = 0.002", "fixed_s = -1.0"), True),
        ("step-fixed-huge", CAL_OK + STEP_OK.replace("fixed_s = 0.002", "fixed_s = 100.0"), True),
        ("step-points-0", CAL_OK + STEP_OK.replace("points = 3", "points = 0"), True),
        ("step-unknown-key", CAL_OK + STEP_OK + "alpha = 1.0\n", True),
        ("step-as-array", CAL_OK + STEP_OK.replace("[step_time]", "[[step_time]]"), True),
        ("spec-only", 'engine = "vllm"\nsource = "b.csv"\n[speculative]\nspeculative = "ngram:3"\naccept_length = 2.0\nsource = "b.csv"\npoints = 3\n', None),
        ("spec-accept-past-k", 'engine = "vllm"\nsource = "b.csv"\n[speculative]\nspeculative = "ngram:3"\naccept_length = 9.0\nsource = "b.csv"\npoints = 3\n', True),
        ("spec-method-bad", 'engine = "vllm"\nsource = "b.csv"\n[speculative]\nspeculative = "magic:3"\naccept_length = 2.0\nsource = "b.csv"\npoints = 3\n', True),
        ("spec-conc-min-gt-max", 'engine = "vllm"\nsource = "b.csv"\n[speculative]\nspeculative = "ngram:3"\naccept_length = 2.0\nsource = "b.csv"\npoints = 3\nconcurrency_min = 64\nconcurrency_max = 8\n', True),
        ("json-not-toml", json.dumps({"engine": "vllm", "source": "x"}), True),
        ("bom", "\ufeff" + CAL_OK, None),
        ("empty", "", True),
        ("only-comment", "# nothing\n", True),
    ]:  # fmt: skip
        yield Case("calfile", name, use, {"c.toml": text}, invalid)
        if name in (
            "term-past-gpu",
            "engine-other",
            "model-other",
            "step-ok",
            "spec-only",
            "schema-version-2",
        ):
            yield Case("calfile", f"memory-{name}", ["memory", "llama-3.1-8b", "--gpus", "1",
                       "--calibration", "{d}/c.toml"], {"c.toml": text}, invalid)  # fmt: skip
            yield Case("calfile", f"plan-{name}", [*PLAN, "--calibration", "{d}/c.toml"],
                       {"c.toml": text}, invalid)  # fmt: skip
    yield Case("calfile", "spec-with-calibration-force", [*SWEEP, "--calibration", "{d}/c.toml", "--force"],
               {"c.toml": CAL_OK.replace('model = "llama-3.1-8b"', 'model = "qwen3-8b"')}, None)  # fmt: skip


def _card_config(model: str) -> dict[str, object]:
    return dict(tomllib.loads((ROOT / "model_cards" / f"{model}.toml").read_text())["config"])


def config4_cases() -> Iterator[Case]:
    mem = ["memory", "{d}/m", "--gpus", "1", "--format", "json"]
    sweep = ["sweep", "{d}/m", "--gpus", "1", *SMALL, "--concurrency", "4"]
    llama = llama_config()
    variants: list[tuple[str, dict[str, object], bool | None]] = [
        ("heads-not-dividing-hidden", {**llama, "num_attention_heads": 30}, None),
        ("kv-heads-not-dividing-heads", {**llama, "num_key_value_heads": 5}, True),
        ("kv-heads-above-heads", {**llama, "num_key_value_heads": 64}, True),
        ("head-dim-odd", {**llama, "head_dim": 7}, None),
        ("head-dim-huge", {**llama, "head_dim": 10**9}, True),
        ("hidden-1", {**llama, "hidden_size": 1, "head_dim": 1}, None),
        ("layers-1e6", {**llama, "num_hidden_layers": 1_000_000}, None),
        ("layers-1e12", {**llama, "num_hidden_layers": 10**12}, True),
        ("vocab-1e12", {**llama, "vocab_size": 10**12}, None),
        ("intermediate-0", {**llama, "intermediate_size": 0}, True),
        ("max-pos-1", {**llama, "max_position_embeddings": 1}, None),
        ("max-pos-1e15", {**llama, "max_position_embeddings": 10**15}, None),
        (
            "rope-scaling-factor-nan",
            {**llama, "rope_scaling": {"rope_type": "llama3", "factor": float("nan")}},
            None,
        ),  # not read
        (
            "rope-scaling-factor-neg",
            {
                **llama,
                "rope_scaling": {
                    "rope_type": "yarn",
                    "factor": -4.0,
                    "original_max_position_embeddings": 8192,
                },
            },
            None,
        ),
        ("rope-scaling-list", {**llama, "rope_scaling": [1, 2]}, None),
        ("sliding-window-0", {**llama, "sliding_window": 0}, None),
        ("sliding-window-neg", {**llama, "sliding_window": -5}, True),
        ("sliding-window-str", {**llama, "sliding_window": "4096"}, True),
        ("text-config-empty", {"model_type": "llava", "text_config": {}}, True),
        (
            "text-config-llama",
            {
                "model_type": "llava",
                "architectures": ["LlavaForConditionalGeneration"],
                "text_config": llama,
            },
            None,
        ),
        (
            "text-config-nested-twice",
            {"model_type": "x", "text_config": {"text_config": llama}},
            None,
        ),
        ("num-layers-missing", {k: v for k, v in llama.items() if k != "num_hidden_layers"}, True),
        ("hidden-missing", {k: v for k, v in llama.items() if k != "hidden_size"}, True),
        ("vocab-missing", {k: v for k, v in llama.items() if k != "vocab_size"}, True),
        ("kv-heads-missing", {k: v for k, v in llama.items() if k != "num_key_value_heads"}, None),
        ("torch-dtype-int8", {**llama, "torch_dtype": "int8"}, None),
        ("torch-dtype-unknown", {**llama, "torch_dtype": "bfloat17"}, True),
        (
            "dtype-key-new",
            {**{k: v for k, v in llama.items() if k != "torch_dtype"}, "dtype": "float16"},
            None,
        ),
        ("layer-types-short", {**llama, "layer_types": ["full_attention"]}, True),
        ("layer-types-bad", {**llama, "layer_types": ["warp_attention"] * 32}, True),
    ]
    qwen = _card_config("qwen3-30b-a3b")
    variants += [
        ("moe-experts-0", {**qwen, "num_experts": 0}, True),
        ("moe-topk-above-experts", {**qwen, "num_experts_per_tok": 200}, True),
        ("moe-topk-0", {**qwen, "num_experts_per_tok": 0}, True),
        ("moe-intermediate-0", {**qwen, "moe_intermediate_size": 0}, True),
        ("moe-sparse-step-0", {**qwen, "decoder_sparse_step": 0}, True),
        ("moe-sparse-step-huge", {**qwen, "decoder_sparse_step": 1000}, None),
        ("moe-experts-1e9", {**qwen, "num_experts": 10**9}, None),
        ("moe-mlp-only-layers-bad", {**qwen, "mlp_only_layers": [999]}, True),
        ("moe-mlp-only-layers-str", {**qwen, "mlp_only_layers": "0,1"}, True),
    ]
    ds = _card_config("deepseek-r1")
    variants += [
        ("mla-kv-lora-0", {**ds, "kv_lora_rank": 0}, True),
        ("mla-rope-dim-0", {**ds, "qk_rope_head_dim": 0}, None),
        ("mla-q-lora-null", {**ds, "q_lora_rank": None}, None),
        ("mla-first-dense-above-layers", {**ds, "first_k_dense_replace": 100}, None),
        ("mla-first-dense-neg", {**ds, "first_k_dense_replace": -1}, True),
        ("mla-routed-0", {**ds, "n_routed_experts": 0}, True),
        ("mla-shared-neg", {**ds, "n_shared_experts": -1}, True),
        ("mla-topk-group-above-groups", {**ds, "topk_group": 16}, None),  # routing groups: not read
        ("mla-n-group-not-dividing", {**ds, "n_group": 7}, None),
        ("mla-nextn-huge", {**ds, "num_nextn_predict_layers": 1000}, None),
        ("mla-moe-layer-freq-0", {**ds, "moe_layer_freq": 0}, True),
    ]
    oss = _card_config("gpt-oss-20b")
    variants += [
        ("oss-window-0", {**oss, "sliding_window": 0}, None),
        ("oss-local-experts-0", {**oss, "num_local_experts": 0}, True),
        ("oss-experts-per-token-mismatch", {**oss, "experts_per_token": 8}, None),
    ]
    for name, config, invalid in variants:
        yield Case(
            "config4", name, mem, {"m/config.json": json.dumps(config, allow_nan=True)}, invalid
        )
        yield Case(
            "config4",
            f"sweep-{name}",
            sweep,
            {"m/config.json": json.dumps(config, allow_nan=True)},
            invalid,
        )


# Fifth campaign: attention-DP balance, the fleet's error column and tie note, check limits at
# the simulated value, --offload without prefix caching, tiny samples at a rate ---------------

# fmt: off
SMALL_SWEEP = ["sweep", "llama-3.1-8b", *SMALL, "--concurrency", "4"]
MOE_SWEEP = ["sweep", "qwen3-30b-a3b", "--gpus", "2", *SMALL, "--concurrency", "4"]
ADP_VALUES: list[tuple[str, bool | None]] = [
    ("on", False), ("off", False), ("ON", False), (" on ", False), ("Off", False),
    ("60:0", False), ("60", False), ("0", False), ("0:0", False), ("100000:100000", False),
    ("٣:٣", None), ("１:0", None), ("100001", True), ("0:100001", True), ("60:0:0", True),
    (":", True), ("60:", True), (":0", True), ("-1", True), ("-1:0", True), ("+5", True),
    ("1e3", True), ("nan", True), ("inf", True), ("", True), (" ", True), ("\u00a0", True),
    ("²", True), ("60:²", True), ("on:5", True), ("true", True), ("yes", True), ("0x10", True),
    ("9" * 40, True), ("60 :0", True), ("1_000", True), ("60,0", True), ("60/0", True),
    ("5 s", True), ("onn", True),
]  # fmt: skip


def adp5_cases() -> Iterator[Case]:
    trt = [*MOE_SWEEP, "--engine", "trtllm"]
    for value, invalid in ADP_VALUES:
        for layout in ("dpa2", "dp2-ep2"):
            yield Case("adp5", f"value={value[:12]!r}@{layout}",
                       [*trt, "--layout", layout, "--attention-dp-balance", value], {}, invalid)  # fmt: skip
    # engines x layouts: on is TensorRT-LLM's and an attention-DP layout's only; off is anyone's
    for engine in ("trtllm", "vllm", "sglang", "vllm-v0"):
        for layout in ("tp2", "dp2", "dpa2", "dp2-ep2", "tp2-ep2", "ep2", "dpa2-ep2"):
            for value in ("on", "off", "60:0"):
                valid = value == "off" or (engine == "trtllm" and layout in ("dpa2", "dp2-ep2", "dpa2-ep2"))
                yield Case("adp5", f"{engine}-{layout}-{value}",
                           [*MOE_SWEEP, "--engine", engine, "--layout", layout,
                            "--attention-dp-balance", value], {}, None if valid else True)  # fmt: skip
    # a dense model: attention DP is a layout word (dpa2), not an MoE property
    dense = ["sweep", "llama-3.1-8b", "--gpus", "2", *SMALL, "--concurrency", "4", "--engine", "trtllm"]
    for layout, invalid in (("dpa2", None), ("dp2", True), ("tp2", True)):
        yield Case("adp5", f"dense-{layout}", [*dense, "--layout", layout, "--attention-dp-balance", "on"], {}, invalid)
    # no layout: the sweep's default layout; plan over every layout applies it where it can
    yield Case("adp5", "sweep-no-layout", [*trt, "--attention-dp-balance", "on"], {}, None)
    plan = ["plan", "qwen3-30b-a3b", "--gpus", "2", "--jobs", "1", *SMALL, "--arrival", "batch"]
    for engine, invalid in (("trtllm", False), ("vllm", True), ("sglang", True)):
        yield Case("adp5", f"plan-{engine}", [*plan, "--engine", engine, "--attention-dp-balance", "on"], {}, invalid)
        yield Case("adp5", f"plan-{engine}-layout-tp2", [*plan, "--engine", engine, "--layout", "tp2", "--attention-dp-balance", "on"], {}, True)
    yield Case("adp5", "plan-trtllm-bad", [*plan, "--engine", "trtllm", "--attention-dp-balance", "60:"], {}, True)
    yield Case("adp5", "plan-online-trtllm", ["plan", "qwen3-30b-a3b", "--gpus", "2", "--jobs", "1", "--isl", "100", "--osl", "100", "--rate", "2", "--slo-ttft", "2", "--engine", "trtllm", "--attention-dp-balance", "60:0"], {}, None)
    # with speculation, disaggregation, memory, calibrate
    for spec in ("ngram:3", "eagle3:2", "mtp:1"):
        yield Case("adp5", f"speculative-{spec}", [*trt, "--layout", "dpa2", "--speculative", spec, "--spec-accept-length", "1.5", "--attention-dp-balance", "on"], {}, None)
    for dis, invalid in (("1p:tp1,1d:dpa2", None), ("1p:dpa2,1d:tp1", None), ("1p:tp1,1d:tp1", True), ("1p:tp2,1d:tp2", True)):
        yield Case("adp5", f"disagg-{dis}", [*MOE_SWEEP[:2], *SMALL, "--concurrency", "4", "--engine", "trtllm", "--disagg", dis, "--attention-dp-balance", "on"], {}, invalid)
    yield Case("adp5", "disagg-vllm", [*MOE_SWEEP[:2], *SMALL, "--concurrency", "4", "--engine", "vllm", "--disagg", "1p:tp1,1d:dpa2", "--attention-dp-balance", "on"], {}, True)
    yield Case("adp5", "memory", ["memory", "qwen3-30b-a3b", "--gpus", "2", "--layout", "dpa2", "--engine", "trtllm", "--attention-dp-balance", "on"], {}, None)
    yield Case("adp5", "with-calibration-log", ["calibrate", "{d}/l.txt", "--model", "llama-3.1-8b", "--attention-dp-balance", "on"],
               {"l.txt": (LOGS / "vllm_v1_v16_llama31_8b_eager.txt").read_text()}, True)
    # the check spec key
    argv = ["check", "{d}/s.toml", "--format", "json"]
    moe = SPEC.replace('model = "llama-3.1-8b"', 'model = "qwen3-30b-a3b"').replace('layout = "tp1"', 'layout = "dpa2"\ngpus = 2')
    for engine in ("trtllm", "vllm", "sglang"):
        for layout in ("dpa2", "tp2", "dp2-ep2"):
            for raw in ('"on"', '"off"', '"60:0"'):
                valid = raw == '"off"' or (engine == "trtllm" and layout != "tp2")
                spec = moe.replace('engine = "vllm"', f'engine = "{engine}"\nattention_dp_balance = {raw}').replace('layout = "dpa2"', f'layout = "{layout}"')
                yield Case("adp5", f"spec-{engine}-{layout}-{raw}", argv, {"s.toml": spec}, None if valid else True)
    trt_spec = moe.replace('engine = "vllm"', 'engine = "trtllm"')
    for raw in ["true", "60", "0", "-1", "nan", "inf", '"60:"', '""', '"²"', "[60, 0]", "{timeout = 60}", '"on:5"', '"100001"', "1979-05-27"]:
        spec = trt_spec.replace('engine = "trtllm"', f'engine = "trtllm"\nattention_dp_balance = {raw}')
        yield Case("adp5", f"spec-value-{raw[:10]}", argv, {"s.toml": spec}, True)
    spec = trt_spec.replace('layout = "dpa2"\ngpus = 2', 'gpus = 2').replace('engine = "trtllm"', 'engine = "trtllm"\nattention_dp_balance = "on"')
    yield Case("adp5", "spec-no-layout-plan", argv, {"s.toml": spec.replace("[scenario.expect]", '[scenario.expect]\nrecommended_layout = "dpa2"')}, None)
    yield Case("adp5", "spec-workload-key", argv, {"s.toml": trt_spec.replace("isl = 100", 'isl = 100\nattention_dp_balance = "on"')}, True)


FLEET = ["plan", "llama-3.1-8b", "--jobs", "1", "--isl", "100", "--osl", "100", "--num-requests",
         "20", "--rate", "2", "--slo-ttft", "2", "--slo-tpot", "0.05"]  # fmt: skip


def fleet5_cases() -> Iterator[Case]:
    gpus: list[tuple[str, bool | None]] = [
        ("h100-sxm", False), ("h100-sxm,h200-sxm", False), ("h200-sxm,h100-sxm", False),
        ("h100-sxm,h100-sxm", True), ("h100-sxm,h200-sxm,h100-sxm", True), ("h100-sxm,nope", True),
        ("nope", True), ("h100-sxm,H100-SXM", True), ("h100-sxm, h200-sxm", False),
        ("h100-sxm,h200-sxm,", True), (",h100-sxm", True), ("h100-sxm;h200-sxm", True),
        ("h100-sxm,mi300x", False), ("h100-sxm,b200", False), ("h100-sxm,h200-sxm,b200,mi300x", None),
        ("h100-sxm,gb200", None),
    ]  # fmt: skip
    for gpu, invalid in gpus:
        yield Case("fleet5", f"gpu={gpu[:30]}", [*FLEET, "--gpu", gpu], {}, invalid)
    two = [*FLEET, "--gpu", "h100-sxm,h200-sxm"]
    prices: list[tuple[str, bool | None]] = [
        ("0", True), ("-1", True), ("inf", True), ("nan", True), ("-inf", True), ("0,3", True),
        ("3,0", True), ("3,-1", True), ("3,inf", True), ("3,nan", True), ("nan,nan", True),
        ("0.001", True), ("0.01", False), ("10000", False), ("10001", True), ("3,3", False),
        ("3", False), ("3,4,5", True), ("3,", True), (",3", True), ("3;4", True), ("1e-320", True),
        ("-0", True), ("4,2", False), ("2,1", False), ("2,4", False), ("0.02,0.01", False),
        ("3 ,4", False), ("３,4", None), ("1_0,4", None), ("0x10,4", True), ("1e308,4", True),
    ]  # fmt: skip
    for price, invalid in prices:
        yield Case("fleet5", f"price={price}", [*two, "--price-gpu-hour", price], {}, invalid)
        yield Case("fleet5", f"price-json={price}", [*two, "--price-gpu-hour", price, "--format", "json"], {}, invalid)
    one = [*FLEET, "--gpu", "h100-sxm"]
    for price, invalid in [("3", False), ("3,4", True), ("0", True), ("nan", True)]:
        yield Case("fleet5", f"one-gpu-price={price}", [*one, "--price-gpu-hour", price], {}, invalid)
    # ties at exactly equal cost: one type's replica is tp1, the other's tp2 at half the price
    for a, b in (("4", "2"), ("2", "1"), ("4", "4"), ("1", "2")):
        yield Case("fleet5", f"tie-{a}-{b}", [*two, "--price-gpu-hour", f"{a},{b}"], {}, False)
    # GPU types whose fleet finds no replica, or has no measured error
    yield Case("fleet5", "model-too-big-one-type", ["plan", "llama-3.1-70b", "--jobs", "1", "--isl", "100", "--osl", "100", "--num-requests", "20", "--rate", "2", "--slo-ttft", "2", "--gpu", "h100-sxm,h200-sxm", "--gpus", "1"], {}, None)
    yield Case("fleet5", "slo-unmeetable", [*two, "--slo-ttft", "1e-5"], {}, None)
    yield Case("fleet5", "clients", [*two[:10], *two[12:], "--clients", "4"], {}, None)
    yield Case("fleet5", "no-load", [*two[:10], *two[12:]], {}, None)
    yield Case("fleet5", "sglang", [*two, "--engine", "sglang"], {}, False)
    yield Case("fleet5", "trtllm", [*two, "--engine", "trtllm"], {}, False)
    yield Case("fleet5", "speculative", [*two, "--speculative", "ngram:3", "--spec-accept-length", "1.5"], {}, None)
    yield Case("fleet5", "disagg", [*two, "--disagg"], {}, None)
    yield Case("fleet5", "batch-fleet", ["plan", "llama-3.1-8b", "--jobs", "1", *SMALL, "--arrival", "batch", "--gpu", "h100-sxm,h200-sxm"], {}, True)
    yield Case("fleet5", "rate-1e-9", [*two[:11], "1e-9", *two[12:]], {}, None)
    yield Case("fleet5", "rate-1e6", [*two[:11], "1000000", *two[12:]], {}, None)


# SPEC's scenario with its expectations left for each case to add
CHECK5 = SPEC.split("[scenario.expect]\n", 1)[0] + "[scenario.expect]\n"
# the figures CHECK5 simulates, as `check --format json` prints them (6 significant figures)
CHECK5_ACTUAL = {"ttft_p99_max_s": 2.34754, "tpot_p99_max_s": 0.00581724,
                 "output_throughput_min_tok_s": 684.124}  # fmt: skip


def check5_cases() -> Iterator[Case]:
    argv = ["check", "{d}/s.toml", "--format", "json"]
    text = ["check", "{d}/s.toml"]
    for key, actual in CHECK5_ACTUAL.items():
        at_least = key.startswith("output")
        for label, value, invalid in [
            ("at", repr(actual), False), ("at-shown-4", f"{actual:.4g}", False),
            ("at-shown-3", f"{actual:.3g}", False), ("1ulp-up", repr(actual * (1 + 2e-16)), False),
            ("1ppm-down", repr(actual * (1 - 1e-6)), False), ("1ppm-up", repr(actual * (1 + 1e-6)), False),
            ("x0.5", repr(actual * 0.5), False), ("x2", repr(actual * 2), False),
            ("x1e6", repr(actual * 1e6), None), ("x1e-6", repr(actual * 1e-6), None),
            ("0", "0.0", True), ("-0", "-0.0", True), ("neg", f"-{actual}", True), ("inf", "inf", True),
            ("-inf", "-inf", True), ("nan", "nan", True), ("1e-320", "1e-320", None if at_least else True), ("1e308", "1e308", None if at_least else True),
            ("int", str(max(1, round(actual))), None), ("string", f'"{actual}"', True),
        ]:  # fmt: skip
            spec = CHECK5 + f"{key} = {value}\n"
            yield Case("check5", f"{key}-{label}", argv, {"s.toml": spec}, invalid)
            if label in ("at", "1ppm-down", "1ppm-up", "x1e6", "x1e-6", "1e308", "int"):
                yield Case("check5", f"{key}-{label}-text", text, {"s.toml": spec}, invalid)
    both = CHECK5 + "".join(f"{k} = {v!r}\n" for k, v in CHECK5_ACTUAL.items())
    yield Case("check5", "all-at", argv, {"s.toml": both}, False)
    yield Case("check5", "all-at-text", text, {"s.toml": both}, False)
    # calibrated: the band is the calibrated one; an online scenario; another engine and GPU
    online = both.replace('arrival = "batch"', 'arrival = "poisson"\nrate = 2.0')
    yield Case("check5", "online-at", argv, {"s.toml": online}, None)
    for engine in ("sglang", "trtllm"):
        yield Case("check5", f"{engine}-at", text, {"s.toml": both.replace('"vllm"', f'"{engine}"')}, None)
    yield Case("check5", "mi300x-at", text, {"s.toml": both.replace('"h100-sxm"', '"mi300x"')}, None)
    yield Case("check5", "speculative-at", text, {"s.toml": both.replace('engine = "vllm"', 'engine = "vllm"\nspeculative = "ngram:3"')}, None)
    yield Case("check5", "baseline-write-at", [*text, "--write-baseline", "{d}/b.json"], {"s.toml": both}, False)


def left5_cases() -> Iterator[Case]:
    # --offload with prefix caching off: the tiers hold prefix KV, which the cache reads back
    base = ["sweep", "llama-3.1-8b", *SMALL, "--concurrency", "4"]
    sess = [*OFFLOAD_BASE]
    for name, argv in [
        ("single", [*base, "--offload", "cpu:64GiB", "--prefix-caching", "off"]),
        ("single-on", [*base, "--offload", "cpu:64GiB", "--prefix-caching", "on"]),
        ("sessions", [*sess, "--offload", "cpu:64GiB", "--prefix-caching", "off"]),
        ("sessions-write-back", [*sess, "--offload", "cpu:64GiB", "--offload-policy", "write-back", "--prefix-caching", "off"]),
        ("sglang-sessions", [*sess, "--engine", "sglang", "--offload", "cpu:64GiB", "--prefix-caching", "off"]),
        ("plan", ["plan", "llama-3.1-8b", "--gpus", "1", "--jobs", "1", "--workload", "multiturn-chat", "--clients", "4", "--offload", "cpu:64GiB", "--prefix-caching", "off"]),
        ("memory", ["memory", "llama-3.1-8b", "--offload", "cpu:64GiB", "--prefix-caching", "off"]),
    ]:  # fmt: skip
        yield Case("left5", f"offload-prefix-off-{name}", argv, {}, None)
    spec = SPEC.replace('engine = "vllm"', 'engine = "vllm"\noffload = "cpu:64GiB"\nprefix_caching = "off"')
    yield Case("left5", "offload-prefix-off-spec", ["check", "{d}/s.toml"], {"s.toml": spec}, None)
    # tiny samples at a rate: at_rate(0, rate) of a single-turn workload
    for n in ("0", "1", "2", "3"):
        for rate in ("1", "1e-6", "1000"):
            yield Case("left5", f"sweep-n{n}-rate{rate}", ["sweep", "llama-3.1-8b", "--isl", "100", "--osl", "100", "--num-requests", n, "--rate", rate, "--concurrency", "4"], {}, True if n == "0" else None)
            yield Case("left5", f"plan-n{n}-rate{rate}", ["plan", "llama-3.1-8b", "--gpus", "1", "--jobs", "1", "--isl", "100", "--osl", "100", "--num-requests", n, "--rate", rate], {}, True if n == "0" else None)
        yield Case("left5", f"plan-fleet-n{n}", [*FLEET[:9], n, *FLEET[10:], "--gpu", "h100-sxm,h200-sxm"], {}, True if n == "0" else None)
        yield Case("left5", f"plan-disagg-n{n}", ["plan", "llama-3.1-8b", "--gpus", "2", "--jobs", "1", "--isl", "100", "--osl", "100", "--num-requests", n, "--rate", "2", "--disagg"], {}, True if n == "0" else None)
        yield Case("left5", f"sweep-clients-n{n}", ["sweep", "llama-3.1-8b", "--isl", "100", "--osl", "100", "--num-requests", n, "--clients", "4", "--concurrency", "4"], {}, True if n == "0" else None)
        yield Case("left5", f"plan-sessions-n{n}", ["plan", "llama-3.1-8b", "--gpus", "1", "--jobs", "1", "--workload", "multiturn-chat", "--num-requests", n, "--rate", "1"], {}, True if n == "0" else None)

    # digits Python's str.isdigit takes and int() refuses (superscripts, circled): one line
    # naming what is valid, not int()'s own message
    for odd in ("²", "⁵", "①", "٣"):
        yield Case("left5", f"speculative-ngram:{odd}", [*SMALL_SWEEP, "--speculative", f"ngram:{odd}", "--spec-accept-length", "1.5"], {}, odd != "٣")
        yield Case("left5", f"speculative-eagle3:{odd}", [*SMALL_SWEEP, "--speculative", f"eagle3:{odd}"], {}, None if odd == "٣" else True)
        yield Case("left5", f"spec-speculative-{odd}", ["check", "{d}/s.toml"],
                   {"s.toml": SPEC.replace('engine = "vllm"', f'engine = "vllm"\nspeculative = "ngram:{odd}"\nspec_accept_length = 1.5')}, odd != "٣")
        yield Case("left5", f"calfile-speculative-{odd}", [*SMALL_SWEEP, "--speculative", "ngram:3", "--calibration", "{d}/c.toml"],
                   {"c.toml": CAL_OK + f'[speculative]\nspeculative = "ngram:{odd}"\naccept_length = 1.5\nsource = \"b.csv\"\npoints = 3\n'}, True)

# fmt: on


SURFACES: dict[str, Callable[[], Iterator[Case]]] = {
    "calibration": calibration_cases, "logs": log_cases, "traces": trace_cases,
    "specs": spec_string_cases, "check": check_cases, "models": model_cases,
    "flags": flag_cases, "every-flag": every_flag_cases, "combos": combo_cases,
    "paths": path_cases, "traces4": trace4_cases, "check4": check4_cases,
    "calfiles": calfile_cases, "configs4": config4_cases, "adp5": adp5_cases,
    "fleet5": fleet5_cases, "check5": check5_cases, "left5": left5_cases,
}  # fmt: skip


def main() -> None:
    from fuzz_cases6 import SURFACES6  # imports this module's tables: loaded once they exist
    from fuzz_cases7 import SURFACES7
    from fuzz_cases8 import SURFACES8
    from fuzz_cases9 import SURFACES9
    from fuzz_cases10 import SURFACES10
    from fuzz_cases11 import SURFACES11
    from fuzz_cases12 import SURFACES12
    from fuzz_cases13 import SURFACES13
    from fuzz_cases14 import SURFACES14
    from fuzz_cases15 import SURFACES15
    from fuzz_cases16 import SURFACES16
    from fuzz_cases17 import SURFACES17
    from fuzz_cases18 import SURFACES18
    from fuzz_cases19 import SURFACES19
    from fuzz_cases20 import SURFACES20
    from fuzz_cases21 import SURFACES21
    from fuzz_cases22 import SURFACES22
    from fuzz_cases23 import SURFACES23
    from fuzz_cases24 import SURFACES24
    from fuzz_cases25 import SURFACES25
    from fuzz_cases26 import SURFACES26
    from fuzz_cases27 import SURFACES27
    from fuzz_cases28 import SURFACES28
    from fuzz_cases29 import SURFACES29
    from fuzz_cases30 import SURFACES30

    SURFACES.update(SURFACES6)
    SURFACES.update(SURFACES7)
    SURFACES.update(SURFACES8)
    SURFACES.update(SURFACES9)
    SURFACES.update(SURFACES10)
    SURFACES.update(SURFACES11)
    SURFACES.update(SURFACES12)
    SURFACES.update(SURFACES13)
    SURFACES.update(SURFACES14)
    SURFACES.update(SURFACES15)
    SURFACES.update(SURFACES16)
    SURFACES.update(SURFACES17)
    SURFACES.update(SURFACES18)
    SURFACES.update(SURFACES19)
    SURFACES.update(SURFACES20)
    SURFACES.update(SURFACES21)
    SURFACES.update(SURFACES22)
    SURFACES.update(SURFACES23)
    SURFACES.update(SURFACES24)
    SURFACES.update(SURFACES25)
    SURFACES.update(SURFACES26)
    SURFACES.update(SURFACES27)
    SURFACES.update(SURFACES28)
    SURFACES.update(SURFACES29)
    SURFACES.update(SURFACES30)
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("surfaces", nargs="*", default=list(SURFACES))
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--show", type=int, default=400)
    parser.add_argument("--match", default="")
    parser.add_argument("--list", action="store_true", help="every outcome, ok ones too")
    args = parser.parse_args()
    cases = [c for s in args.surfaces for c in SURFACES[s]()]
    cases = [c for c in cases if args.match in f"{c.surface}/{c.name}"]
    outcomes = run_all(cases, jobs=args.jobs)
    report(outcomes, show=args.show)
    if args.list:
        for o in outcomes:
            first = (o.stderr.strip().splitlines() or [""])[0]
            print(
                f"{o.kind:<9} rc={o.code} invalid={o.case.invalid} {o.case.surface}/{o.case.name} :: {first[:200]}"
            )


if __name__ == "__main__":
    main()
