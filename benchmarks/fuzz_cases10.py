"""The tenth bad-input campaign's surfaces (issue 23), run by `fuzz_surfaces.py`:

    PYTHONPATH=. python benchmarks/fuzz_surfaces.py issue10 calib10 trace10 offload10 \
        disagg10 price10 check10 quant10 st10 num10 out10

First, each example issue 23 names for the corpus kept outside the repository, written as it
reads (issue10). Then, with fresh eyes, what the nine campaigns before did not try: the number
spellings a JSON, CSV or log reader meets (NaN, Infinity, 1e999, -0, duplicate keys, BOMs, CRLF,
UTF-16) on every calibration input (calib10); traces whose times and counts are each at a limit
(trace10); offload sizes and disaggregated pools at their limits (offload10, disagg10); price
and GPU lists with empty, repeated and spaced items (price10); check spec keys of the wrong
type, bounds of inf and NaN, and outputs that name an input through another spelling (check10);
quantization configs per layer and of odd types (quant10); safetensors headers that lie about
their sizes (st10); CLI numbers as Python and TOML spell them (num10); outputs into folders,
missing folders and read-only folders (out10).
"""

# Data tables: one case per line, some past 100 characters, look-alike digits on purpose.
# ruff: noqa: E501, RUF001
from __future__ import annotations

import json
import struct
from collections.abc import Callable, Iterator
from pathlib import Path

import fuzz_surfaces as fs
from fuzz_cases6 import _hardlink, _symlink
from fuzz_cases7 import CAL, DISAGG, GOOD, SW, TRACE, _chmod, _lines, _scenario, _st
from fuzz_cases9 import CSV_HEAD, CSV_ROWS, MODEL, STEP_CAL
from fuzz_harness import Case, FileSpec

HUGE_INT, PLAIN_ROWS, RUNS, SESSION_ROWS, SMALL, SPEC = (
    fs.HUGE_INT, fs.PLAIN_ROWS, fs.RUNS, fs.SESSION_ROWS, fs.SMALL, fs.SPEC,
)  # fmt: skip

# fmt: off
ONLINE = ["plan", "llama-3.1-8b", "--jobs", "1", *SMALL, "--gpus", "1", "--slo-ttft", "2"]
CHECK = ["check", "{d}/s.toml"]


def _think(value: str) -> str:
    """The session rows with the second turn's think_s written as the raw JSON text `value`."""
    rows = [json.dumps(r) for r in SESSION_ROWS]
    rows[1] = rows[1].replace('"think_s": 1.0', f'"think_s": {value}')
    return "\n".join(rows) + "\n"


def _trace_spec(trace: str = "t.jsonl") -> str:
    """SPEC's scenario on a trace (its 3 or 4 requests at 2 clients)."""
    text = SPEC.replace("isl = 100\nosl = 100\n", "").replace("num_requests = 20\n", "").replace('arrival = "batch"\n', "")
    text = text.replace("concurrency = 4", "concurrency = 2").replace("no_preemption_at = 4", "no_preemption_at = 2")
    return text.replace("[scenario.workload]\n", f'[scenario.workload]\ntrace = "{trace}"\n')


# The examples issue 23 names, as written ---------------------------------------------------------

def issue10_cases() -> Iterator[Case]:
    mem = ["memory", "{d}/m", "--gpus", "1"]
    config = fs.llama_config()

    def quant(q: object) -> dict[str, FileSpec]:
        return {"m/config.json": json.dumps({**config, "quantization_config": q})}

    st_mem = {"m/config.json": MODEL}
    runs = _lines(RUNS)
    two_starts = (fs.LOGS / "vllm_v1_v16_llama31_8b_eager.txt").read_text()
    table: list[tuple[str, list[str], dict[str, FileSpec], bool | None]] = [
        ("trace-think-nan-sweep", TRACE, {"t.jsonl": _think("NaN")}, True),
        ("trace-think-nan-check", CHECK, {"s.toml": _trace_spec(), "t.jsonl": _think("NaN")}, True),
        ("think-time-nan-check-sessions", CHECK, {"s.toml": SPEC.replace("isl = 100\nosl = 100\n", 'preset = "multiturn-chat"\nthink_time = nan\n').replace('arrival = "batch"\n', "").replace("concurrency = 4", "clients = 2")}, True),
        ("trace-arrival-nan-sweep", TRACE, {"t.jsonl": _lines([{**PLAIN_ROWS[0], "arrival_s": float("nan")}, *PLAIN_ROWS[1:]])}, True),
        ("disagg-kv-transfer-inf", [*SW, *DISAGG, "--kv-transfer-overhead-ms", "inf"], {}, True),
        ("check-junit-over-model-safetensors-force", [*CHECK, "--junit", "{d}/m/model.safetensors", "--force"], {"s.toml": SPEC.replace('model = "llama-3.1-8b"', 'model = "m"'), "m/config.json": MODEL, "m/model.safetensors": _st(GOOD)}, True),
        ("quant-bits-neg-4", mem, quant({"quant_method": "gptq", "bits": -4, "group_size": 128}), True),
        ("quant-config-list", mem, quant([{"quant_method": "fp8"}]), True),
        ("quant-config-string", mem, quant("fp8"), True),
        ("quant-group-size-null", mem, quant({"quant_method": "gptq", "bits": 4, "group_size": None}), None),
        ("quant-bad-re-pattern", mem, quant({"quant_method": "fp8", "ignored_layers": ["re:("]}), True),
        ("st-truncated-header", mem, {**st_mem, "m/model.safetensors": _st(GOOD)[:20]}, True),
        ("st-header-past-file", mem, {**st_mem, "m/model.safetensors": b"\x00\x10\x00\x00\x00\x00\x00\x00{}"}, True),
        ("st-header-not-json", mem, {**st_mem, "m/model.safetensors": _st(b"not json at all")}, True),
        ("st-dtype-unknown", mem, {**st_mem, "m/model.safetensors": _st({"w": {"dtype": "Q3", "shape": [2, 2], "data_offsets": [0, 8]}})}, True),
        ("st-shape-negative", mem, {**st_mem, "m/model.safetensors": _st({"w": {"dtype": "BF16", "shape": [-2, 2], "data_offsets": [0, 8]}})}, True),
        ("calibrate-r1-rows-on-llama-folder", ["calibrate", "{d}/b.csv", "--model", "{d}/llama", "--gpu", "h200-sxm"], {"b.csv": fs.DSR1_CSV.read_text(), "llama/config.json": MODEL}, True),
        ("calibration-applied-to-folder-named-alike", ["sweep", "{d}/other/llama", *SMALL, "--concurrency", "4", "--gpus", "1", "--calibration", "{d}/c.toml"], {"c.toml": STEP_CAL.replace('model = "llama-3.1-8b"', 'model = "llama"\nmodel_shape = "32 layers"'), "other/llama/config.json": json.dumps({**config, "num_hidden_layers": 2})}, True),
        ("calibrate-log-two-starts", ["calibrate", "{d}/log.txt", "--model", "llama-3.1-8b", "--gpu", "h100-sxm"], {"log.txt": two_starts + "\n" + two_starts.replace("0.9", "0.8")}, True),
        ("calibrate-csv-tpot-seconds", ["calibrate", "{d}/b.csv", "--model", "llama-3.1-8b", "--gpu", "h100-sxm"], {"b.csv": CSV_HEAD + "8,1024,128,500,0.014,150\n32,1024,128,1200,0.024,160\n64,1024,128,1800,0.032,170\n"}, True),
        ("calibrate-throughput-negative", CAL, {"r.json": _lines([{**RUNS[0], "output_throughput": -500.0}, *RUNS[1:]])}, True),
        ("calibrate-tpot-infinite", CAL, {"r.json": _lines([{**RUNS[0], "mean_tpot_ms": float("inf")}, *RUNS[1:]])}, True),
        ("calibrate-rows-duplicated", CAL, {"r.json": _lines([RUNS[0], RUNS[0], *RUNS[1:]])}, True),
        ("calibration-term-nan", [*SW, "--calibration", "{d}/c.toml"], {"c.toml": STEP_CAL.replace("scale = 1.1", "scale = nan")}, True),
        ("calibration-term-inf", [*SW, "--calibration", "{d}/c.toml"], {"c.toml": STEP_CAL.replace("fixed_s = 0.002", "fixed_s = inf")}, True),
        ("plan-rate-1e9", [*ONLINE, "--rate", "1e9"], {}, None),
        ("plan-headroom-0.9999999", [*ONLINE, "--rate", "2", "--headroom", "0.9999999"], {}, None),
        ("sweep-disagg-million-decode", [*SW, "--disagg", "1p:tp1,1000000d:tp1"], {}, True),
        ("sweep-disagg-1e8-decode", [*SW, "--disagg", "1p:tp1,100000000d:tp1"], {}, True),
        ("offload-cpu-0", [*SW, "--offload", "cpu:0"], {}, True),
        ("offload-cpu-64-bytes", [*SW, "--offload", "cpu:64"], {}, True),
        ("check-tpot-p99-max-inf", CHECK, {"s.toml": _scenario(expect="tpot_p99_max_s = inf")}, True),
        ("json-nesting-deep", CAL, {"r.json": "[" * 200_000 + "]" * 200_000}, True),
        ("toml-nesting-deep", CHECK, {"s.toml": "a = " + "[" * 100_000 + "]" * 100_000 + "\n" + SPEC}, True),
        ("json-5000-digit-int", CAL, {"r.json": json.dumps(RUNS[0]).replace('"completed": 200', '"completed": ' + HUGE_INT)}, True),
        ("toml-5000-digit-int", CHECK, {"s.toml": SPEC.replace("num_requests = 20", "num_requests = " + HUGE_INT)}, True),
        ("price-twice-one-gpu", ["plan", "llama-3.1-8b", "--jobs", "1", *SMALL, "--rate", "2", "--slo-ttft", "2", "--gpus", "1", "--gpu", "h100-sxm,h100-sxm", "--price-gpu-hour", "2,3"], {}, True),
        ("vllm-append-result-jsonl", CAL, {"r.json": runs}, False),
        ("vllm-single-run-json", CAL, {"r.json": json.dumps(RUNS[1], indent=2)}, False),
        ("check-calibration-beside-spec", ["check", "{d}/sub/s.toml"], {"sub/s.toml": _scenario('calibration = "c.toml"'), "sub/c.toml": STEP_CAL}, False),
        ("online-1m-requests", [*ONLINE[:-6], "--num-requests", "1000000", "--gpus", "1", "--rate", "2"], {}, None),
    ]
    for name, argv, files, invalid in table:
        yield Case("issue10", name, argv, files, invalid)


# Calibration inputs: number spellings, duplicate keys, encodings, units ------------------------

def _raw_run(key: str, raw: str, run: dict[str, object] | None = None) -> str:
    """A vLLM run as JSON with `key`'s value replaced by the raw text `raw`."""
    return json.dumps({**(run or RUNS[1]), key: "__X__"}).replace('"__X__"', raw)


def calib10_cases() -> Iterator[Case]:
    cal_csv = ["calibrate", "{d}/b.csv", "--model", "llama-3.1-8b", "--gpu", "h100-sxm"]
    table: list[tuple[str, list[str], dict[str, FileSpec], bool | None]] = []
    # a single-run JSON and an appended JSONL, each figure spelled as JSON readers meet it
    spellings = [("NaN", True), ("-NaN", True), ("Infinity", True), ("-Infinity", True), ("1e999", True), ("-1e999", True),
                 ("1E400", True), ("1e-400", True), ("4.9e-324", True), ("-0", True), ("0", True), ("-0.0", True), ("1e308", True), ("10" + "0" * 400, True)]
    for key in ("output_throughput", "mean_tpot_ms", "mean_ttft_ms", "max_concurrency", "completed"):
        for raw, invalid in spellings:
            single = _raw_run(key, raw)
            appended = "\n".join([json.dumps(RUNS[0]), _raw_run(key, raw), json.dumps(RUNS[2])]) + "\n"
            table.append((f"single-{key}={raw[:10]}", CAL, {"r.json": single}, invalid))
            table.append((f"append-{key}={raw[:10]}", CAL, {"r.json": appended}, invalid))
    one = json.dumps(RUNS[1])
    appended = _lines(RUNS)
    table += [
        ("dup-key-plausible-tpot", CAL, {"r.json": one[:-1] + ', "mean_tpot_ms": 30.0}'}, True),
        ("dup-key-plausible-concurrency", CAL, {"r.json": one[:-1] + ', "max_concurrency": 64}'}, True),
        ("dup-key-same-value", CAL, {"r.json": one[:-1] + ', "mean_tpot_ms": 24.0}'}, None),
        ("dup-key-appended-line", CAL, {"r.json": appended.replace('"completed": 200', '"completed": 200, "completed": 100', 1)}, True),
        ("dup-key-sglang", ["calibrate", "{d}/r.jsonl", "--model", "llama-3.1-8b", "--gpu", "h100-sxm"], {"r.jsonl": appended.replace('"output_throughput": 500.0', '"output_throughput": 500.0, "output_throughput": 900.0')}, True),
        ("bom-single", CAL, {"r.json": b"\xef\xbb\xbf" + one.encode()}, False),
        ("bom-each-appended", CAL, {"r.json": b"".join(b"\xef\xbb\xbf" + json.dumps(r).encode() + b"\n" for r in RUNS)}, False),
        ("crlf-appended", CAL, {"r.json": appended.replace("\n", "\r\n")}, False),
        ("utf16-single", CAL, {"r.json": one.encode("utf-16")}, True),
        ("utf16le-nobom", CAL, {"r.json": one.encode("utf-16-le")}, True),
        ("utf32", CAL, {"r.json": one.encode("utf-32")}, True),
        ("empty", CAL, {"r.json": ""}, True),
        ("only-newlines", CAL, {"r.json": "\n\n\r\n"}, True),
        ("json-null", CAL, {"r.json": "null"}, True),
        ("json-empty-object", CAL, {"r.json": "{}"}, True),
        ("json-array-of-runs", CAL, {"r.json": json.dumps(RUNS)}, None),
        ("json-array-empty", CAL, {"r.json": "[]"}, True),
        ("json-string", CAL, {"r.json": '"run"'}, True),
        ("appended-with-null-line", CAL, {"r.json": appended + "null\n"}, True),
        ("appended-with-comma", CAL, {"r.json": ",\n".join(json.dumps(r) for r in RUNS)}, True),
        ("appended-trailing-junk", CAL, {"r.json": appended + "}\n"}, True),
        ("appended-nul-line", CAL, {"r.json": appended + "\x00\n"}, True),
        ("appended-5000-runs", CAL, {"r.json": _lines([{**RUNS[i % 3], "date": f"2025{i:06d}"} for i in range(5000)])}, None),
        ("model-id-other-single", CAL, {"r.json": json.dumps({**RUNS[1], "model_id": "deepseek-ai/DeepSeek-R1"})}, True),
        ("model-id-list", CAL, {"r.json": json.dumps({**RUNS[1], "model_id": ["a"]})}, True),
        ("model-id-number", CAL, {"r.json": json.dumps({**RUNS[1], "model_id": 8})}, True),
        ("backend-null", CAL, {"r.json": json.dumps({**RUNS[1], "backend": None})}, None),
        ("request-rate-nan-string", CAL, {"r.json": json.dumps({**RUNS[1], "request_rate": "nan"})}, True),
        ("request-rate-Infinity", CAL, {"r.json": json.dumps({**RUNS[1], "request_rate": "Infinity"})}, None),
        ("request-rate-INF", CAL, {"r.json": json.dumps({**RUNS[1], "request_rate": "INF"})}, None),
        ("request-rate-number-inf", CAL, {"r.json": _raw_run("request_rate", "Infinity")}, None),
        ("request-rate-1e999", CAL, {"r.json": _raw_run("request_rate", "1e999")}, None),
        ("completed-over-prompts", CAL, {"r.json": json.dumps({**RUNS[1], "completed": 400})}, True),
        ("completed-float", CAL, {"r.json": json.dumps({**RUNS[1], "completed": 200.5})}, True),
        ("concurrency-float-whole", CAL, {"r.json": json.dumps({**RUNS[1], "max_concurrency": 32.0})}, None),
        ("concurrency-float-frac", CAL, {"r.json": json.dumps({**RUNS[1], "max_concurrency": 32.5})}, True),
        ("concurrency-string", CAL, {"r.json": json.dumps({**RUNS[1], "max_concurrency": "32"})}, True),
        ("tpot-string", CAL, {"r.json": json.dumps({**RUNS[1], "mean_tpot_ms": "24"})}, True),
        ("duration-negative", CAL, {"r.json": json.dumps({**RUNS[1], "duration": -60.0})}, None),
    ]
    # CSVs: units mixed up, spellings, encodings
    def csv(rows: str, head: str = CSV_HEAD) -> dict[str, FileSpec]:
        return {"b.csv": head + rows}

    table += [
        ("csv-valid", cal_csv, csv(CSV_ROWS), False),
        ("csv-ttft-seconds-with-unit", cal_csv, csv("8,1024,128,500,14,1.5 s\n32,1024,128,1200,24,1.6 s\n64,1024,128,1800,32,1.7 s\n"), True),
        ("csv-tpot-us-with-unit", cal_csv, csv("8,1024,128,500,14000 us,150\n32,1024,128,1200,24000 us,160\n64,1024,128,1800,32000 us,170\n"), True),
        ("csv-tpot-micro-sign", cal_csv, csv("8,1024,128,500,14000µs,150\n32,1024,128,1200,24000µs,160\n64,1024,128,1800,32000µs,170\n"), True),
        ("csv-throughput-k-suffix", cal_csv, csv("8,1024,128,0.5k,14,150\n32,1024,128,1.2k,24,160\n64,1024,128,1.8k,32,170\n"), True),
        ("csv-throughput-tok-per-ms", cal_csv, csv("8,1024,128,0.5,14,150\n32,1024,128,1.2,24,160\n64,1024,128,1.8,32,170\n"), True),
        ("csv-ttft-ms-unit", cal_csv, csv("8,1024,128,500,14 ms,150 ms\n32,1024,128,1200,24 ms,160 ms\n64,1024,128,1800,32 ms,170 ms\n"), None),
        ("csv-ttft-min-unit", cal_csv, csv("8,1024,128,500,14,2 min\n32,1024,128,1200,24,2 min\n64,1024,128,1800,32,2 min\n"), True),
        ("csv-header-seconds", cal_csv, csv("8,1024,128,500,0.014,0.15\n32,1024,128,1200,0.024,0.16\n", CSV_HEAD.replace("mean_tpot_ms", "mean_tpot_s").replace("mean_ttft_ms", "mean_ttft_s")), True),
        ("csv-header-upper", cal_csv, csv(CSV_ROWS, CSV_HEAD.upper()), None),
        ("csv-header-spaces", cal_csv, csv(CSV_ROWS, CSV_HEAD.replace(",", ", ")), None),
        ("csv-cells-quoted", cal_csv, csv('"8","1024","128","500","14","150"\n"32","1024","128","1200","24","160"\n'), None),
        ("csv-cells-nan-spellings", cal_csv, csv("8,1024,128,NaN,14,150\n32,1024,128,1200,-nan,160\n"), True),
        ("csv-cells-infinity", cal_csv, csv("8,1024,128,Infinity,14,150\n32,1024,128,1200,24,160\n"), True),
        ("csv-cells-1e999", cal_csv, csv("8,1024,128,1e999,14,150\n32,1024,128,1200,24,160\n"), True),
        ("csv-cells-neg-zero", cal_csv, csv("8,1024,128,-0,14,150\n32,1024,128,1200,24,160\n"), True),
        ("csv-concurrency-neg", cal_csv, csv("-8,1024,128,500,14,150\n32,1024,128,1200,24,160\n"), True),
        ("csv-concurrency-zero", cal_csv, csv("0,1024,128,500,14,150\n32,1024,128,1200,24,160\n"), True),
        ("csv-concurrency-1e308", cal_csv, csv("1e308,1024,128,500,14,150\n32,1024,128,1200,24,160\n"), True),
        ("csv-input-hex", cal_csv, csv("8,0x400,128,500,14,150\n32,1024,128,1200,24,160\n"), True),
        ("csv-input-underscore", cal_csv, csv("8,1_024,128,500,14,150\n32,1024,128,1200,24,160\n"), None),
        ("csv-rows-duplicated", cal_csv, csv(CSV_ROWS + CSV_ROWS), True),
        ("csv-rows-duplicated-spaced", cal_csv, csv(CSV_ROWS + CSV_ROWS.replace(",", ", ")), True),
        ("csv-rows-duplicated-float-spelling", cal_csv, csv(CSV_ROWS + CSV_ROWS.replace(",1024,", ",1024.0,")), True),
        ("csv-bom", cal_csv, {"b.csv": b"\xef\xbb\xbf" + (CSV_HEAD + CSV_ROWS).encode()}, False),
        ("csv-crlf", cal_csv, {"b.csv": (CSV_HEAD + CSV_ROWS).replace("\n", "\r\n")}, False),
        ("csv-utf16", cal_csv, {"b.csv": (CSV_HEAD + CSV_ROWS).encode("utf-16")}, True),
        ("csv-empty", cal_csv, {"b.csv": ""}, True),
        ("csv-sep-line", cal_csv, {"b.csv": "sep=,\n" + CSV_HEAD + CSV_ROWS}, None),
        ("csv-comment-line", cal_csv, {"b.csv": "# run of 2025-01-01\n" + CSV_HEAD + CSV_ROWS}, None),
        ("csv-one-row-huge-line", cal_csv, csv("8,1024,128,500,14,150" + "," * 1_000_000 + "\n"), None),
        ("csv-cell-5000-digits", cal_csv, csv(f"8,{HUGE_INT},128,500,14,150\n"), True),
        ("csv-model-column-other", cal_csv, {"b.csv": CSV_HEAD.strip() + ",model\n8,1024,128,500,14,150,deepseek-ai/DeepSeek-R1\n32,1024,128,1200,24,160,deepseek-ai/DeepSeek-R1\n"}, True),
        ("csv-model-column-blank", cal_csv, {"b.csv": CSV_HEAD.strip() + ",model\n8,1024,128,500,14,150,\n32,1024,128,1200,24,160,\n"}, None),
    ]
    # logs: two starts, encodings, cut short
    log = (fs.LOGS / "vllm_v1_v16_llama31_8b_eager.txt").read_text()
    log_cal = ["calibrate", "{d}/log.txt", "--model", "llama-3.1-8b", "--gpu", "h100-sxm"]
    table += [
        ("log-valid", log_cal, {"log.txt": log}, None),
        ("log-two-starts-identical", log_cal, {"log.txt": log + log}, None),
        ("log-two-starts-crlf", log_cal, {"log.txt": (log + log.replace("0.9", "0.8")).replace("\n", "\r\n")}, True),
        ("log-bom", log_cal, {"log.txt": b"\xef\xbb\xbf" + log.encode()}, None),
        ("log-crlf", log_cal, {"log.txt": log.replace("\n", "\r\n")}, None),
        ("log-utf16", log_cal, {"log.txt": log.encode("utf-16")}, True),
        ("log-cr-only", log_cal, {"log.txt": log.replace("\n", "\r")}, None),
        ("log-empty", log_cal, {"log.txt": ""}, True),
        ("log-first-half", log_cal, {"log.txt": log[: len(log) // 2]}, None),
        ("log-numbers-nan", log_cal, {"log.txt": log.replace("GiB", "nan GiB", 1)}, None),
        ("log-ansi-colors", log_cal, {"log.txt": log.replace("INFO", "\x1b[32mINFO\x1b[0m")}, None),
    ]
    for name, argv, files, invalid in table:
        yield Case("calib10", name, argv, files, invalid)


# Traces: times and counts at their limits --------------------------------------------------------

def trace10_cases() -> Iterator[Case]:
    s, p = SESSION_ROWS, PLAIN_ROWS

    def sess(**changes: object) -> str:
        return _lines([s[0], {**s[1], **changes}, *s[2:]])

    def plain(**changes: object) -> str:
        return _lines([{**p[0], **changes}, *p[1:]])

    def raw(rows: list[dict[str, object]], at: int, key: str, text: str) -> str:
        lines = [json.dumps(r) for r in rows]
        lines[at] = json.dumps({**rows[at], key: "__X__"}).replace('"__X__"', text)
        return "\n".join(lines) + "\n"

    table: list[tuple[str, FileSpec, list[str], bool | None]] = []
    for text, invalid in [("NaN", True), ("Infinity", True), ("-Infinity", True), ("1e999", True), ("-1", True), ("-1e-300", True),
                          ("1e308", True), ("1e300", None), ("1e15", None), ("-0.0", None), ("4.9e-324", None), ('"1"', True),
                          ("true", True), ("null", None), ("[1]", True), ("1" + "0" * 400, True)]:
        table.append((f"think-{text[:10]}", raw(s, 1, "think_s", text), [], invalid))
        table.append((f"arrival-{text[:10]}", raw(p, 1, "arrival_s", text), [], invalid if text not in ("null",) else True))
        table.append((f"session-arrival-{text[:10]}", raw(s, 2, "arrival_s", text), [], invalid))
    for key in ("input_tokens", "output_tokens"):
        for text, invalid in [("0", True), ("-1", True), ("1.5", True), ("1e3", None), ('"10"', True), ("true", True), ("null", True),
                              ("1" + "0" * 20, True), ("NaN", True), ("Infinity", True)]:
            table.append((f"plain-{key}={text[:10]}", raw(p, 0, key, text), [], invalid))
            table.append((f"session-{key}={text[:10]}", raw(s, 1, key, text), [], invalid))
    table += [
        ("session-think-1e308-twice", _lines([s[0], {**s[1], "think_s": 1e308}, {**s[1], "turn": 2, "think_s": 1e308}]), [], True),
        ("session-arrival-1e308-think-1e308", _lines([{**s[0], "arrival_s": 1e308}, {**s[1], "think_s": 1e308}]), [], True),
        ("plain-arrival-1e300", plain(arrival_s=1e300), [], None),
        ("plain-arrivals-unsorted-big-gap", _lines([{**p[0], "arrival_s": 1e12}, *p[1:]]), [], None),
        ("plain-arrivals-descending", _lines([{**r, "arrival_s": 100.0 - i} for i, r in enumerate(p)]), [], None),
        ("session-turn-duplicated", _lines([s[0], s[1], {**s[1], "input_tokens": 31}]), [], True),
        ("session-turn-gap", _lines([s[0], {**s[1], "turn": 2}]), [], None),
        ("session-turn-negative", _lines([{**s[0], "turn": -1}, {**s[1], "turn": 0}]), [], True),
        ("session-turn-huge", _lines([s[0], {**s[1], "turn": 10**18}]), [], None),
        ("session-turn-5000-digits", raw(s, 1, "turn", HUGE_INT), [], True),
        ("session-turn-descending", _lines([{**s[1], "turn": 1}, {**s[0], "turn": 0}]), [], None),
        ("session-no-turn-0-arrival", _lines([{**s[1], "turn": 0}]), [], None),
        ("session-id-float", _lines([{**r, "session_id": 1.5} for r in s[:2]]), [], None),
        ("session-id-list", _lines([{**r, "session_id": ["a"]} for r in s[:2]]), [], True),
        ("session-id-object", _lines([{**r, "session_id": {"a": 1}} for r in s[:2]]), [], True),
        ("session-id-bool", _lines([{**r, "session_id": True} for r in s[:2]]), [], True),
        ("session-id-null-later", _lines([s[0], {**s[1], "session_id": None}]), [], True),
        ("session-id-nan", raw(s[:2], 1, "session_id", "NaN"), [], True),
        ("session-prefix-over-input", _lines([s[0], s[1], {**s[2], "prefix_tokens": 41}, s[3]]), [], None),  # on top of input_tokens
        ("session-prefix-zero", _lines([s[0], s[1], {**s[2], "prefix_tokens": 0}, s[3]]), [], None),
        ("session-prefix-negative", _lines([s[0], s[1], {**s[2], "prefix_tokens": -16}, s[3]]), [], True),
        ("session-prefix-nan", raw(s, 2, "prefix_tokens", "NaN"), [], True),
        ("session-prefix-id-only", _lines([s[0], s[1], {k: v for k, v in s[2].items() if k != "prefix_tokens"}, s[3]]), [], True),
        ("session-prefix-tokens-only", _lines([s[0], s[1], {k: v for k, v in s[2].items() if k != "prefix_id"}, s[3]]), [], True),
        ("session-prefix-id-int", _lines([s[0], s[1], {**s[2], "prefix_id": 7}, s[3]]), [], None),
        ("session-prefix-id-list", _lines([s[0], s[1], {**s[2], "prefix_id": ["x"]}, s[3]]), [], True),
        ("session-dup-key-think", raw(s, 1, "think_s", "1.0").replace("}\n", ', "think_s": 500.0}\n', 2), [], True),
        ("plain-dup-key-arrival", plain().replace('"arrival_s": 0.0', '"arrival_s": 0.0, "arrival_s": 9.0', 1), [], True),
        ("trace-bom", b"\xef\xbb\xbf" + _lines(p).encode(), [], False),
        ("trace-crlf", _lines(p).replace("\n", "\r\n"), [], False),
        ("trace-utf16", _lines(p).encode("utf-16"), [], True),
        ("trace-empty", "", [], True),
        ("trace-blank-lines", "\n \n\t\n", [], True),
        ("trace-null-line", _lines(p) + "null\n", [], True),
        ("trace-array-line", _lines(p) + "[]\n", [], True),
        ("trace-one-session-300k-turns", _lines([{"session_id": "a", "turn": i, "input_tokens": 10, "output_tokens": 2, **({"arrival_s": 0.0} if i == 0 else {"think_s": 0.0})} for i in range(300_000)]), [], True),
        ("trace-300k-plain-rows", _lines([{"arrival_s": i * 0.001, "input_tokens": 10, "output_tokens": 2} for i in range(300_000)]), [], True),
        ("trace-20000-sessions-one-turn-each", _lines([{"session_id": str(i), "turn": 0, "input_tokens": 10, "output_tokens": 2, "arrival_s": i * 0.01} for i in range(20_000)]), [], None),
        ("session-think-huge-with-rate", _lines(s), ["--rate", "1e-300"], None),
        ("session-think-time-flag-nan", _lines(s), ["--think-time", "nan"], True),
        ("session-think-time-flag-inf", _lines(s), ["--think-time", "inf"], True),
        ("session-think-time-flag-1e308", _lines(s), ["--think-time", "1e308"], None),
        ("session-think-time-flag-neg", _lines(s), ["--think-time", "-1"], True),
    ]
    for name, data, extra, invalid in table:
        yield Case("trace10", name, [*TRACE, *extra], {"t.jsonl": data}, invalid)
    plan = ["plan", "llama-3.1-8b", "--gpus", "1", "--jobs", "1", "--workload", "{d}/t.jsonl", "--rate", "2"]
    for name, data, invalid in [
        ("plan-think-1e300", sess(think_s=1e300), None),
        ("plan-arrival-1e300", plain(arrival_s=1e300), None),
        ("plan-think-nan", _think("NaN"), True),
        ("plan-session-1e15-arrival", _lines([{**s[0], "arrival_s": 1e15}, s[1]]), None),
    ]:
        yield Case("trace10", name, plan, {"t.jsonl": data}, invalid)
    for name, data, invalid in [
        ("check-arrival-1e300", plain(arrival_s=1e300), None),
        ("check-arrival-inf-text", raw(p, 1, "arrival_s", "Infinity"), True),
        ("check-tokens-zero", plain(input_tokens=0), True),
    ]:
        yield Case("trace10", name, CHECK, {"s.toml": _trace_spec(), "t.jsonl": data}, invalid)


# Offload sizes -----------------------------------------------------------------------------------

def offload10_cases() -> Iterator[Case]:
    table: list[tuple[str, list[str], bool | None]] = []
    for value, invalid in [
        ("cpu:1KiB", True), ("cpu:1 TiB", None), ("cpu:1tb", None), ("cpu:1.0e3GiB", None), ("cpu:1e-3TiB", None), ("cpu:0.9GiB", True),
        ("cpu:NaNGiB", True), ("cpu:infGiB", True), ("cpu:InfinityGiB", True), ("cpu:1e999GiB", True), ("cpu:-0GiB", True), ("cpu:0GiB", True),
        ("cpu:1_000GiB", None), ("cpu:64GiB,cpu:64GiB", True), ("nvme:1TiB,nvme:2TiB", True), ("cpu:64GiB nvme:1TiB", True), ("cpu=64GiB", True),
        ("cpu:64GiB;nvme:1TiB", True), ("cpu:", True), (":64GiB", True), ("cpu:99999999PiB", True), ("cpu:1EiB", True), ("cpu:1ZiB", True),
        ("cpu:1YiB", True), ("cpu:64GIB", None), ("cpu:64Gi", None), ("cpu:64 G i B", True), ("cpu:+64GiB", None), ("cpu:64.GiB", None),
        ("cpu:.5TiB", None), ("cpu:64e0GiB", None), ("cpu:6.4e1GiB", None), ("cpu:1e-400GiB", True), ("", True), (" ", True), (",", True),
        ("cpu:64GiB" + "x" * 10_000, True), ("nvme:" + "9" * 400 + "B", True), ("Cpu:64GiB", None), ("NVME:1TiB", None),
    ]:
        table.append((f"sweep-{value[:20]!r}", [*SW, "--offload", value], invalid))
    table += [
        ("plan-offload-zero", ["plan", "llama-3.1-8b", "--gpus", "1", "--jobs", "1", *SMALL, "--arrival", "batch", "--offload", "cpu:0"], True),
        ("disagg-offload-tiny", [*SW, *DISAGG, "--offload", "cpu:64"], True),
    ]
    for name, argv, invalid in table:
        yield Case("offload10", name, argv, {}, invalid)
    for raw, invalid in [('"cpu:0"', True), ('"cpu:64"', True), ("64", True), ('["cpu:64GiB"]', True), ("{cpu = \"64GiB\"}", True),
                         ('"cpu:nanGiB"', True), ('""', True), ('"cpu:64GiB"', None)]:
        yield Case("offload10", f"check-offload={raw[:14]}", CHECK, {"s.toml": _scenario(f"offload = {raw}")}, invalid)


# Disaggregated pools ---------------------------------------------------------------------------

def disagg10_cases() -> Iterator[Case]:
    table: list[tuple[str, list[str], bool | None]] = []
    for spec, invalid in [
        ("0p:tp1,1d:tp1", True), ("1p:tp1,0d:tp1", True), ("0p:tp1,0d:tp1", True), ("1p:tp1", True), ("1d:tp1", True),
        ("1p:tp1,1d:tp1,1p:tp1", True), ("1p:tp1,1d:tp1,1d:tp2", None), ("1p:tp1@h100-sxm,1d:tp1@b200", None), ("1p:tp1@H100-SXM,1d:tp1", None),
        ("1p:tp1@ h100-sxm,1d:tp1", None), ("1p:tp1@mi300x,1d:tp1@h100-sxm", None), ("1p:tp1@l40s,1d:tp1@b200", None),
        ("65536p:tp1,1d:tp1", True), ("1p:tp65536,1d:tp1", True), ("99999999999999999999p:tp1,1d:tp1", True), ("9" * 5000 + "p:tp1,1d:tp1", True),
        ("1p:tp1,1d:tp" + "9" * 30, True), ("1p:tp1,1d:tp1@" + "x" * 300, True), ("1p:tp1@h100-sxm,1d:tp1@h100-sxm,1d:tp1@b200", None),
        ("1p:tp1,1d:tp1@./gpu.toml", True), ("1p:tp1,1d:tp1@../h100-sxm", True), ("1p:tp1\x00,1d:tp1", True), ("1p:tp1,\n1d:tp1", None),
        ("２p:tp1,1d:tp1", True), ("1p:tp１,1d:tp1", True), ("1p:tp1,1d:tp1" + ",1d:tp1" * 2000, True), ("", True), (",", True),
        ("1p:tp1,,1d:tp1", True), ("1p:tp1, 1d:tp1", None),
    ]:
        table.append((f"sweep-{spec[:24]!r}", [*SW, "--disagg", spec], invalid))
    for value, invalid in [("inf", True), ("nan", True), ("-1", True), ("-0", None), ("1e308", True), ("0x10", True), ("1_000", None),
                           ("Infinity", True), ("1e-400", None), ("9" * 400, True), ("+inf", True), ("-nan", True)]:
        table.append((f"kv-transfer-{value[:12]}", [*SW, *DISAGG, "--kv-transfer-overhead-ms", value], invalid))
    plan = ["plan", "llama-3.1-8b", "--jobs", "1", *SMALL, "--rate", "2", "--slo-ttft", "2", "--disagg"]
    table += [
        ("plan-disagg-gpus-1", [*plan, "--gpus", "1"], True),
        ("plan-disagg-gpus-65537", [*plan, "--gpus", "65537"], True),
        ("plan-disagg-kv-inf", [*plan, "--gpus", "2", "--kv-transfer-overhead-ms", "inf"], True),
        ("plan-disagg-gpu-list-mixed", [*plan, "--gpus", "2", "--gpu", "h100-sxm,mi300x"], None),
        ("plan-disagg-rate-1e9", ["plan", "llama-3.1-8b", "--jobs", "1", *SMALL, "--rate", "1e9", "--slo-ttft", "2", "--disagg", "--gpus", "2"], None),
        ("sweep-disagg-engine-vllm-v0", [*SW, *DISAGG, "--engine", "vllm-v0"], None),
        ("sweep-disagg-engine-trtllm", [*SW, *DISAGG, "--engine", "trtllm"], None),
        ("sweep-disagg-headroom", [*SW, *DISAGG, "--headroom", "0.5"], True),
    ]
    for name, argv, invalid in table:
        yield Case("disagg10", name, argv, {}, invalid)
    for raw, invalid in [('"0p:tp1,1d:tp1"', True), ('"1p:tp1,1000000d:tp1"', True), ("true", True), ("1", True), ('["1p:tp1", "1d:tp1"]', True), ('""', True)]:
        yield Case("disagg10", f"check-disagg={raw[:16]}", CHECK, {"s.toml": _scenario(f"disagg = {raw}").replace('layout = "tp1"\n', "")}, invalid)
    for raw, invalid in [("inf", True), ("nan", True), ("-1.0", True), ("1e308", True), ('"5"', True)]:
        yield Case("disagg10", f"check-kv-transfer={raw}", CHECK, {"s.toml": _scenario(f'disagg = "1p:tp1,1d:tp1"\nkv_transfer_overhead_ms = {raw}').replace('layout = "tp1"\n', "")}, invalid)


# Price and GPU lists ------------------------------------------------------------------------------

def price10_cases() -> Iterator[Case]:
    fleet = ["plan", "llama-3.1-8b", "--jobs", "1", *SMALL, "--rate", "2", "--slo-ttft", "2", "--gpus", "1"]
    table: list[tuple[str, list[str], bool | None]] = []
    for gpus, invalid in [
        ("h100-sxm,H100-SXM", True), ("h100-sxm, h100-sxm", True), ("h100-sxm,h100-sxm ", True), ("h100-sxm,,b200", True), (",h100-sxm", True),
        ("h100-sxm,", True), (" ", True), ("h100-sxm,nope", True), ("H100-SXM", None), ("h100-sxm\t", None), ("h100_sxm", True), ("h100-sxm;b200", True),
        ("h100-sxm b200", True), ("h100-sxm,b200,h100-sxm", True), ("h100-sxm,h100-sxm.toml", True), ("./h100-sxm", True), ("h100-sxm," * 200, True),
        ("ｈ100-sxm", True), ("h100-sxm\u200b", True), ("\u00a0h100-sxm", None),
    ]:
        table.append((f"gpu-{gpus[:24]!r}", [*fleet, "--gpu", gpus], invalid))
    two = ["--gpu", "h100-sxm,b200"]
    for prices, invalid in [
        ("2,3", False), ("2, 3", None), (" 2,3 ", None), ("2,,3", True), ("2,3,", True), ("2;3", True), ("$2,$3", True), ("2/h,3/h", True),
        ("2,nan", True), ("2,inf", True), ("2,-3", True), ("2,0", True), ("2,-0", True), ("2,1e-300", True), ("2,1e308", True), ("2,0x3", True),
        ("2,3_0", None), ("2,Infinity", True), ("2", None), ("2,3,4", True), ("h100-sxm=2,b200=3", True), ("", True), (",", True),
    ]:
        table.append((f"price-{prices[:16]!r}", [*fleet, *two, "--price-gpu-hour", prices], invalid))
    table += [
        ("price-one-gpu-two-prices", [*fleet, "--gpu", "h100-sxm", "--price-gpu-hour", "2,3"], True),
        ("price-dup-gpu-case", [*fleet, "--gpu", "h100-sxm,H100-SXM", "--price-gpu-hour", "2,3"], True),
        ("price-on-sweep", [*SW, "--price-gpu-hour", "2"], None),
        ("price-on-memory", ["memory", "llama-3.1-8b", "--gpus", "1", "--price-gpu-hour", "2"], True),
        ("gpu-list-on-memory", ["memory", "llama-3.1-8b", "--gpus", "1", "--gpu", "h100-sxm,b200"], True),
        ("gpu-list-on-sweep", [*SW, "--gpu", "h100-sxm,b200"], True),
        ("gpu-list-on-calibrate", ["calibrate", "{d}/r.json", "--model", "llama-3.1-8b", "--gpu", "h100-sxm,b200"], True),
        ("gpu-list-on-batch-plan", ["plan", "llama-3.1-8b", "--jobs", "1", *SMALL, "--arrival", "batch", "--gpus", "1", "--gpu", "h100-sxm,H100-SXM"], True),
    ]
    for name, argv, invalid in table:
        files: dict[str, FileSpec] = {"r.json": _lines(RUNS)} if argv[0] == "calibrate" else {}
        yield Case("price10", name, argv, files, invalid)
    for raw, invalid in [("nan", True), ("inf", True), ("-1.0", True), ("0.0", True), ('"2"', True), ("[2.0, 3.0]", True), ("1e308", True)]:
        yield Case("price10", f"check-price={raw}", CHECK, {"s.toml": _scenario(f"usd_per_gpu_hour = {raw}")}, invalid)


# check specs: keys, types, bounds, paths, outputs -------------------------------------------------

def check10_cases() -> Iterator[Case]:
    table: list[tuple[str, list[str], dict[str, FileSpec], bool | None]] = []
    for table_name, header in (("top", ""), ("scenario", "[[scenario]]"), ("workload", "[scenario.workload]"), ("expect", "[scenario.expect]")):
        for key, raw in (("colour", '"red"'), ("Name", '"s"'), ("isl ", "100"), ("\u00e9", "1")):
            text = f"{key} = {raw}\n" + SPEC if not header else SPEC.replace(header + "\n", f'{header}\n"{key}" = {raw}\n')
            table.append((f"unknown-key-{table_name}-{key.strip()!r}", CHECK, {"s.toml": text}, True))
    wrong = [("isl", '"100"'), ("isl", "100.0"), ("isl", "100.5"), ("isl", "true"), ("isl", "[100]"), ("osl", "{a = 1}"), ("concurrency", '"4"'),
             ("concurrency", "4.0"), ("num_requests", "1e3"), ("num_requests", "-20"), ("arrival", "1"), ("arrival", '"Batch"'), ("arrival", '"batch "')]
    for key, raw in wrong:
        table.append((f"workload-{key}={raw[:10]}", CHECK, {"s.toml": SPEC.replace(f"{key} = ", f"{key}_was = ", 1).replace("[scenario.workload]\n", f"[scenario.workload]\n{key} = {raw}\n").replace(f"{key}_was = ", "# ")}, None if raw in ('"Batch"', '"batch "', "100.0", "4.0", "1e3") else True))
    for key, raw in [("gpus", '"1"'), ("gpus", "1.0"), ("layout", "1"), ("engine", '"VLLM"'), ("engine", '"vllm "'), ("model", "8"), ("gpu", '"H100-SXM"'),
                     ("seed", "-1"), ("seed", "1.5"), ("seed", "1" + "0" * 30), ("max_model_len", '"8k"'), ("block_size", "0"), ("gpu_memory_utilization", "1.5"),
                     ("gpu_memory_utilization", "nan"), ("gpu_memory_utilization", "-0.0"), ("headroom", "1.0"), ("headroom", "-inf")]:
        table.append((f"scenario-{key}={raw[:10]}", CHECK, {"s.toml": _scenario(f"{key} = {raw}") if key not in ("layout", "engine", "model", "gpu") else SPEC.replace(f'{key} = "', f'{key}_old = "', 1).replace(f"{key}_old = ", f"{key} = {raw}\n# ")}, None if raw in ('"VLLM"', '"vllm "', '"H100-SXM"', "1.0", "1" + "0" * 30) else True))
    for key in ("ttft_p99_max_s", "tpot_p99_max_s", "output_throughput_min_tok_s", "kv_headroom_min", "prefix_hit_rate_min", "sustained_rps_min", "usd_per_million_tokens_max", "cliff_concurrency_min"):
        for raw in ("inf", "-inf", "nan", "+nan", "-0.0", "1e308", "1e-320"):
            spec = SPEC.replace("kv_headroom_min = 0.1", f"kv_headroom_min = {raw}") if key == "kv_headroom_min" else _scenario(expect=f"{key} = {raw}")
            table.append((f"expect-{key}={raw}", CHECK, {"s.toml": spec}, None if raw in ("1e308", "1e-320", "-0.0") else True))
    spec_json = {"scenario": [{"name": "s", "model": "llama-3.1-8b", "gpu": "h100-sxm", "layout": "tp1", "engine": "vllm",
                               "workload": {"isl": 100, "osl": 100, "arrival": "batch", "num_requests": 20, "concurrency": 4}, "expect": {"fits": True}}]}
    good_json = json.dumps(spec_json)
    table += [
        ("json-valid", ["check", "{d}/s.json"], {"s.json": good_json}, False),
        ("json-bom", ["check", "{d}/s.json"], {"s.json": b"\xef\xbb\xbf" + good_json.encode()}, False),
        ("json-utf16", ["check", "{d}/s.json"], {"s.json": good_json.encode("utf-16")}, True),
        ("json-expect-Infinity", ["check", "{d}/s.json"], {"s.json": good_json.replace('"fits": true', '"ttft_p99_max_s": Infinity')}, True),
        ("json-expect-1e999", ["check", "{d}/s.json"], {"s.json": good_json.replace('"fits": true', '"ttft_p99_max_s": 1e999')}, True),
        ("json-dup-key-isl", ["check", "{d}/s.json"], {"s.json": good_json.replace('"isl": 100', '"isl": 100, "isl": 5000')}, True),
        ("json-dup-key-scenario", ["check", "{d}/s.json"], {"s.json": good_json[:-1] + ', "scenario": []}'}, True),
        ("json-isl-float-whole", ["check", "{d}/s.json"], {"s.json": good_json.replace('"isl": 100', '"isl": 100.0')}, None),
        ("json-deep", ["check", "{d}/s.json"], {"s.json": '{"scenario": ' + "[" * 100_000 + "]" * 100_000 + "}"}, True),
        ("toml-dup-key", CHECK, {"s.toml": SPEC.replace("isl = 100", "isl = 100\nisl = 200")}, True),
        ("toml-crlf", CHECK, {"s.toml": SPEC.replace("\n", "\r\n")}, False),
        ("toml-bom", CHECK, {"s.toml": b"\xef\xbb\xbf" + SPEC.encode()}, False),
        ("toml-utf16", CHECK, {"s.toml": SPEC.encode("utf-16")}, True),
        ("toml-empty", CHECK, {"s.toml": ""}, True),
        ("toml-no-scenario", CHECK, {"s.toml": "baseline_tolerance = 0.1\n"}, True),
        ("toml-scenario-empty-array", CHECK, {"s.toml": "scenario = []\n"}, True),
        ("tolerance-nan", CHECK, {"s.toml": "baseline_tolerance = nan\n" + SPEC}, True),
        ("tolerance-neg-zero", CHECK, {"s.toml": "baseline_tolerance = -0.0\n" + SPEC}, None),
        # relative paths against the spec's folder
        ("calibration-dot-slash", ["check", "{d}/sub/s.toml"], {"sub/s.toml": _scenario('calibration = "./c.toml"'), "sub/c.toml": STEP_CAL}, False),
        ("calibration-dot-dot", ["check", "{d}/sub/s.toml"], {"sub/s.toml": _scenario('calibration = "../c.toml"'), "c.toml": STEP_CAL}, False),
        ("calibration-only-cwd-dot-slash", ["check", "{d}/sub/s.toml"], {"sub/s.toml": _scenario('calibration = "./c.toml"'), "c.toml": STEP_CAL}, True),
        ("trace-dot-slash", ["check", "{d}/sub/s.toml"], {"sub/s.toml": _trace_spec("./t.jsonl"), "sub/t.jsonl": _lines(PLAIN_ROWS)}, False),
        ("model-dot-slash-folder", ["check", "{d}/sub/s.toml"], {"sub/s.toml": SPEC.replace('model = "llama-3.1-8b"', 'model = "./m"'), "sub/m/config.json": MODEL}, None),
        ("model-folder-only-in-cwd", ["check", "{d}/sub/s.toml"], {"sub/s.toml": SPEC.replace('model = "llama-3.1-8b"', 'model = "./m"'), "m/config.json": MODEL}, True),
        ("hist-dot-slash", ["check", "{d}/sub/s.toml"], {"sub/s.toml": SPEC.replace("osl = 100", 'osl = "hist:./h.csv"'), "sub/h.csv": "tokens,count\n50,3\n100,5\n"}, False),
        ("spec-via-symlink-folder", ["check", "{d}/link/s.toml"], {"sub/s.toml": _scenario('calibration = "c.toml"'), "sub/c.toml": STEP_CAL, "link": ("symlink", "sub")}, False),
        ("spec-is-symlink-calibration-beside-target", ["check", "{d}/s.toml"], {"sub/s.toml": _scenario('calibration = "c.toml"'), "sub/c.toml": STEP_CAL, "s.toml": ("symlink", "sub/s.toml")}, None),
    ]
    # outputs that are inputs through another spelling
    spec_trace = _trace_spec("t.jsonl")
    for name, argv, files, setup in [
        ("junit-is-spec-dot-slash", [*CHECK, "--junit", "./s.toml", "--force"], {"s.toml": SPEC}, None),
        ("junit-is-spec-double-slash", [*CHECK, "--junit", "{d}//s.toml", "--force"], {"s.toml": SPEC}, None),
        ("junit-is-spec-dot-dot", [*CHECK, "--junit", "{d}/sub/../s.toml", "--force"], {"s.toml": SPEC, "sub/x": "x"}, None),
        ("junit-is-spec-hardlink", [*CHECK, "--junit", "{d}/h.xml", "--force"], {"s.toml": SPEC}, _hardlink("s.toml", "h.xml")),
        ("junit-is-spec-symlink", [*CHECK, "--junit", "{d}/l.xml", "--force"], {"s.toml": SPEC}, _symlink("s.toml", "l.xml")),
        ("junit-via-symlinked-folder", [*CHECK, "--junit", "{d}/link/s.toml", "--force"], {"s.toml": SPEC}, _symlink(".", "link")),
        ("markdown-is-trace-dot-slash", [*CHECK, "--markdown", "./t.jsonl", "--force"], {"s.toml": spec_trace, "t.jsonl": _lines(PLAIN_ROWS)}, None),
        ("markdown-is-trace-hardlink", [*CHECK, "--markdown", "{d}/t.md", "--force"], {"s.toml": spec_trace, "t.jsonl": _lines(PLAIN_ROWS)}, _hardlink("t.jsonl", "t.md")),
        ("write-baseline-is-calibration-hardlink", [*CHECK, "--write-baseline", "{d}/b.json", "--force"], {"s.toml": _scenario('calibration = "c.toml"'), "c.toml": STEP_CAL}, _hardlink("c.toml", "b.json")),
        ("write-baseline-is-hist-symlink", [*CHECK, "--write-baseline", "{d}/b.json", "--force"], {"s.toml": SPEC.replace("osl = 100", 'osl = "hist:h.csv"'), "h.csv": "tokens,count\n50,3\n100,5\n"}, _symlink("h.csv", "b.json")),
        ("write-baseline-is-baseline-symlink", [*CHECK, "--baseline", "{d}/b.json", "--write-baseline", "{d}/l.json", "--force"], {"s.toml": SPEC, "b.json": "{}"}, _symlink("b.json", "l.json")),
        ("junit-is-model-config-via-link", [*CHECK, "--junit", "{d}/j.xml", "--force"], {"s.toml": SPEC.replace('model = "llama-3.1-8b"', 'model = "m"'), "m/config.json": MODEL}, _symlink("m/config.json", "j.xml")),
        ("junit-is-model-safetensors-via-hardlink", [*CHECK, "--junit", "{d}/j.xml", "--force"], {"s.toml": SPEC.replace('model = "llama-3.1-8b"', 'model = "m"'), "m/config.json": MODEL, "m/model.safetensors": _st(GOOD)}, _hardlink("m/model.safetensors", "j.xml")),
        ("junit-and-markdown-hardlinked", [*CHECK, "--junit", "{d}/a.txt", "--markdown", "{d}/b.txt", "--force"], {"s.toml": SPEC, "a.txt": "old"}, _hardlink("a.txt", "b.txt")),
    ]:
        # a rename over a hard link replaces that name only: the file it shared stays whole
        replaced = {"junit-is-model-safetensors-via-hardlink": ("j.xml",), "junit-and-markdown-hardlinked": ("a.txt", "b.txt")}.get(name, ())
        yield Case("check10", name, argv, files, None if replaced else True, setup=setup, replaced=replaced)
    for name, argv, files, invalid in table:
        yield Case("check10", name, argv, files, invalid)


# Quantization configs -------------------------------------------------------------------------------

def quant10_cases() -> Iterator[Case]:
    mem = ["memory", "{d}/m", "--gpus", "1", "--format", "json"]
    config = fs.llama_config()

    def cfg(q: object) -> dict[str, FileSpec]:
        return {"m/config.json": json.dumps({**config, "quantization_config": q}, allow_nan=True)}

    def gptq(**f: object) -> dict[str, FileSpec]:
        return cfg({"quant_method": "gptq", "bits": 4, "group_size": 128, **f})

    def ct(*groups: dict[str, object], **f: object) -> dict[str, FileSpec]:
        return cfg({"quant_method": "compressed-tensors", "config_groups": {f"group_{i}": g for i, g in enumerate(groups)}, **f})

    w4 = {"weights": {"num_bits": 4, "type": "int", "strategy": "group", "group_size": 128, "symmetric": True}, "targets": ["Linear"]}
    w8 = {"weights": {"num_bits": 8, "type": "float", "strategy": "channel"}, "targets": ["Linear"]}
    table: list[tuple[str, dict[str, FileSpec], bool | None]] = []
    for bits, invalid in [(0, True), (-4, True), (3, None), (2, None), (8, None), (5, True), (16, True), (32, True), (1000, True), (2**64, True), (4.0, True), ("4", True), (True, True), (None, True)]:
        table.append((f"gptq-bits={bits!r:.10}", gptq(bits=bits), invalid))
    for group, invalid in [(None, None), (0, None), (-1, None), (-2, True), (1.5, True), (128.0, True), ("128", True), (True, True), (2**70, True), (7, None), (1, None)]:
        table.append((f"gptq-group={group!r:.10}", gptq(group_size=group), invalid))
    for bits, invalid in [(0, True), (-4, True), (3, None), (16, True), (4.0, True), (None, True)]:
        g = {**w4, "weights": {**w4["weights"], "num_bits": bits}}  # type: ignore[dict-item]
        table.append((f"ct-num-bits={bits!r}", ct(g), invalid))
    for group, invalid in [(None, True), (0, True), (-1, True), (1.5, True), (2**70, True)]:
        g = {**w4, "weights": {**w4["weights"], "group_size": group}}  # type: ignore[dict-item]
        table.append((f"ct-group={group!r}", ct(g), invalid))
    table += [
        ("ct-mixed-w4-mlp-w8-attn", ct({**w4, "targets": ["re:.*mlp.*"]}, {**w8, "targets": ["re:.*self_attn.*"]}), None),
        ("ct-mixed-w8-attn-first", ct({**w8, "targets": ["re:.*self_attn.*"]}, {**w4, "targets": ["re:.*mlp.*"]}), None),
        ("ct-mixed-same-targets", ct(w4, w8), True),
        ("ct-targets-empty", ct({**w4, "targets": []}), None),
        ("ct-targets-string", ct({**w4, "targets": "Linear"}), True),
        ("ct-targets-int", ct({**w4, "targets": [1]}), True),
        ("ct-weights-null", ct({**w4, "weights": None}), True),
        ("ct-weights-list", ct({**w4, "weights": [1]}), True),
        ("ct-type-other", ct({**w4, "weights": {**w4["weights"], "type": "complex"}}), True),  # type: ignore[dict-item]
        ("ct-strategy-block", ct({**w4, "weights": {**w4["weights"], "strategy": "block", "block_structure": [128, 128]}}), None),  # type: ignore[dict-item]
        ("ct-ignore-string", ct(w4, ignore="lm_head"), True),
        ("ct-ignore-null", ct(w4, ignore=None), None),
        ("ct-ignore-bad-regex", ct(w4, ignore=["re:[a-"]), True),
        ("ct-groups-empty", cfg({"quant_method": "compressed-tensors", "config_groups": {}}), True),
        ("ct-groups-list", cfg({"quant_method": "compressed-tensors", "config_groups": [w4]}), True),
        ("gptq-dynamic-per-layer", gptq(dynamic={"+:.*mlp.*": {"bits": 8}, "-:.*lm_head": {}}), None),
        ("gptq-dynamic-bits-neg", gptq(dynamic={"+:.*mlp.*": {"bits": -4}}), True),
        ("gptq-dynamic-list", gptq(dynamic=[1, 2]), True),
        ("gptq-dynamic-group-null", gptq(dynamic={"+:.*mlp.*": {"group_size": None}}), True),
        ("gptq-dynamic-slow-regex", gptq(dynamic={"+:(.|.)*X$": {"bits": 8}}), True),
        ("gptq-dynamic-skip-all", gptq(dynamic={"-:.*": {}}), None),
        ("gptq-modules-not-convert-string", gptq(modules_to_not_convert="lm_head"), True),
        ("gptq-modules-not-convert-ints", gptq(modules_to_not_convert=[1, 2]), True),
        ("gptq-modules-not-convert-bad-regex", gptq(modules_to_not_convert=["re:*"]), True),
        ("awq-bits-8", cfg({"quant_method": "awq", "bits": 8, "group_size": 128}), True),
        ("awq-w-bit-neg", cfg({"quant_method": "awq", "w_bit": -4, "q_group_size": 128}), True),
        ("awq-zero-point-string", cfg({"quant_method": "awq", "bits": 4, "group_size": 128, "zero_point": "false"}), True),
        ("fp8-block-zero", cfg({"quant_method": "fp8", "weight_block_size": [0, 128]}), True),
        ("fp8-block-negative", cfg({"quant_method": "fp8", "weight_block_size": [-128, 128]}), True),
        ("fp8-block-one", cfg({"quant_method": "fp8", "weight_block_size": [128]}), True),
        ("fp8-block-float", cfg({"quant_method": "fp8", "weight_block_size": [128.5, 128]}), True),
        ("fp8-block-string", cfg({"quant_method": "fp8", "weight_block_size": "128"}), True),
        ("fp8-ignored-null", cfg({"quant_method": "fp8", "ignored_layers": None}), None),
        ("fp8-ignored-string", cfg({"quant_method": "fp8", "ignored_layers": "lm_head"}), True),
        ("fp8-ignore-everything", cfg({"quant_method": "fp8", "ignored_layers": ["re:.*"]}), None),
        ("method-upper", cfg({"quant_method": "FP8"}), None),
        ("method-spaced", cfg({"quant_method": " fp8 "}), None),
        ("method-unknown", cfg({"quant_method": "hqq"}), True),
        ("method-bnb", cfg({"quant_method": "bitsandbytes", "load_in_4bit": True}), True),
        ("modelopt-nvfp4-group-15", cfg({"quant_method": "modelopt", "quant_algo": "NVFP4", "group_size": 15}), None),
        ("modelopt-algo-mixed", cfg({"quant_method": "modelopt", "quant_algo": "MIXED_PRECISION", "quantized_layers": {"model.layers.0.mlp": {"quant_algo": "NVFP4"}}}), True),
        ("modelopt-algo-lower", cfg({"quant_method": "modelopt", "quant_algo": "nvfp4"}), None),
        ("modelopt-exclude-string", cfg({"quant_method": "modelopt", "quant_algo": "FP8", "exclude_modules": "lm_head"}), True),
        ("mxfp4-dense", cfg({"quant_method": "mxfp4"}), None),
        ("config-true", cfg(True), True),
        ("config-int-list", cfg([4, 128]), True),
        ("config-nested-quantization-config", cfg({"quantization_config": {"quant_method": "fp8"}}), True),
        ("hf-quant-config-list", {"m/config.json": MODEL, "m/hf_quant_config.json": "[1, 2]"}, True),
        ("hf-quant-config-bits-neg", {"m/config.json": MODEL, "m/hf_quant_config.json": json.dumps({"quantization": {"quant_algo": "NVFP4", "group_size": -16}})}, True),
    ]
    for name, files, invalid in table:
        yield Case("quant10", name, mem, files, invalid)
    # through sweep: the weights priced per module
    for name, files, invalid in [("sweep-ct-mixed", ct({**w4, "targets": ["re:.*mlp.*"]}, {**w8, "targets": ["re:.*self_attn.*"]}), None), ("sweep-gptq-bits-3", gptq(bits=3), None)]:
        yield Case("quant10", name, ["sweep", "{d}/m", *SMALL, "--concurrency", "4", "--gpus", "1"], files, invalid)


# Safetensors headers that lie ------------------------------------------------------------------------

def st10_cases() -> Iterator[Case]:
    mem = ["memory", "{d}/m", "--gpus", "1", "--format", "json"]
    w = GOOD["w"]
    def one(entry: object, data: bytes = b"\0" * 8) -> dict[str, FileSpec]:
        return {"m/model.safetensors": _st({"w": entry}, data)}

    header = json.dumps(GOOD).encode()
    table: list[tuple[str, dict[str, FileSpec], bool | None]] = [
        ("length-1", {"m/model.safetensors": struct.pack("<Q", 1) + b"{"}, True),
        ("length-fills-file-no-data", {"m/model.safetensors": struct.pack("<Q", len(header)) + header}, True),
        ("length-cuts-utf8", {"m/model.safetensors": _st('{"é": {"dtype": "U8", "shape": [1], "data_offsets": [0, 1]}}'.encode())[:-3] + b"\0"}, True),
        ("length-7-bytes-file", {"m/model.safetensors": b"\x02\0\0\0\0\0\0"}, True),
        ("empty-file", {"m/model.safetensors": b""}, True),
        ("header-list", {"m/model.safetensors": _st(b"[]")}, True),
        ("header-null", {"m/model.safetensors": _st(b"null")}, True),
        ("header-number", {"m/model.safetensors": _st(b"1")}, True),
        ("header-string", {"m/model.safetensors": _st(b'"x"')}, True),
        ("header-NaN-offset", {"m/model.safetensors": _st(b'{"w": {"dtype": "BF16", "shape": [2, 2], "data_offsets": [0, NaN]}}')}, True),
        ("header-Infinity-shape", {"m/model.safetensors": _st(b'{"w": {"dtype": "BF16", "shape": [Infinity, 2], "data_offsets": [0, 8]}}')}, True),
        ("header-dup-tensor-different", {"m/model.safetensors": _st(b'{"w": {"dtype": "BF16", "shape": [2, 2], "data_offsets": [0, 8]}, "w": {"dtype": "BF16", "shape": [1], "data_offsets": [0, 2]}}')}, None),
        ("entry-list", one([1, 2]), True),
        ("entry-null", one(None), True),
        ("entry-no-dtype", one({"shape": [2, 2], "data_offsets": [0, 8]}), True),
        ("entry-no-shape", one({"dtype": "BF16", "data_offsets": [0, 8]}), True),
        ("entry-no-offsets", one({"dtype": "BF16", "shape": [2, 2]}), True),
        ("offsets-reversed", one({**w, "data_offsets": [8, 0]}), True),
        ("offsets-three", one({**w, "data_offsets": [0, 8, 16]}), True),
        ("offsets-negative", one({**w, "data_offsets": [-8, 0]}), True),
        ("offsets-past-file", one({**w, "data_offsets": [0, 10**6]}), True),
        ("offsets-span-not-shape", one({**w, "data_offsets": [0, 6]}), True),
        ("offsets-string", one({**w, "data_offsets": ["0", "8"]}), True),
        ("shape-times-dtype-overflows", one({"dtype": "BF16", "shape": [2**40, 2**40], "data_offsets": [0, 8]}), True),
        ("shape-huge-product-no-data", one({"dtype": "F32", "shape": [2**63, 2**63], "data_offsets": [0, 0]}, b""), True),
        ("shape-negative-zero-product", one({"dtype": "BF16", "shape": [-1, 0], "data_offsets": [0, 0]}, b""), True),
        ("shape-string", one({"dtype": "BF16", "shape": "2,2", "data_offsets": [0, 8]}), True),
        ("shape-nested", one({"dtype": "BF16", "shape": [[2], 2], "data_offsets": [0, 8]}), True),
        ("shape-10000-dims", one({"dtype": "BF16", "shape": [1] * 10_000 + [4], "data_offsets": [0, 8]}), None),
        ("dtype-empty", one({**w, "dtype": ""}), True),
        ("dtype-null", one({**w, "dtype": None}), True),
        ("dtype-number", one({**w, "dtype": 16}), True),
        ("dtype-lower-f32", one({**w, "dtype": "f32"}), True),
        ("two-tensors-overlap", {"m/model.safetensors": _st({"a": {**w, "data_offsets": [0, 8]}, "b": {**w, "data_offsets": [4, 12]}}, b"\0" * 12)}, True),
        ("two-tensors-same-bytes", {"m/model.safetensors": _st({"a": w, "b": w})}, True),
        ("two-tensors-gap", {"m/model.safetensors": _st({"a": {**w, "data_offsets": [0, 8]}, "b": {**w, "data_offsets": [16, 24]}}, b"\0" * 24)}, True),
        ("metadata-list", {"m/model.safetensors": _st({"__metadata__": ["pt"], **GOOD})}, True),
        ("metadata-int-value", {"m/model.safetensors": _st({"__metadata__": {"format": 1}, **GOOD})}, True),
        ("metadata-as-tensor", {"m/model.safetensors": _st({"__metadata__": w})}, True),
        ("100k-zero-tensors", {"m/model.safetensors": _st({f"t{i}": {"dtype": "U8", "shape": [0], "data_offsets": [0, 0]} for i in range(100_000)}, b"")}, None),
        ("index-weight-map-values-int", {"m/model.safetensors.index.json": json.dumps({"weight_map": {"a": 1}}), "m/model.safetensors": _st(GOOD)}, True),
        ("index-weight-map-absolute", {"m/model.safetensors.index.json": json.dumps({"weight_map": {"a": "/etc/passwd"}}), "m/model.safetensors": _st(GOOD)}, True),
        ("index-dup-key", {"m/model.safetensors.index.json": '{"weight_map": {"a": "model.safetensors", "a": "other.safetensors"}}', "m/model.safetensors": _st(GOOD)}, None),
    ]
    for name, files, invalid in table:
        yield Case("st10", name, mem, {"m/config.json": MODEL, **files}, invalid)
    yield Case("st10", "sweep-offsets-past-file", ["sweep", "{d}/m", *SMALL, "--concurrency", "4", "--gpus", "1"], {"m/config.json": MODEL, **one({**w, "data_offsets": [0, 10**6]})}, True)
    yield Case("st10", "plan-shape-negative", ["plan", "{d}/m", "--gpus", "1", "--jobs", "1", *SMALL, "--arrival", "batch"], {"m/config.json": MODEL, **one({**w, "shape": [-2, 2]})}, True)


# CLI numbers as Python, TOML and shells spell them ------------------------------------------------

NUM_TEXT = ["1e308", "-0", "0x10", "1_000", "9" * 100_000, "1e-400", "+inf", "Infinity", "-nan", "0b11", "1.5e3", "١٠", "1e400", "0o17", "  7  "]


def num10_cases() -> Iterator[Case]:
    plan_online = ["plan", "llama-3.1-8b", "--gpus", "1", "--jobs", "1", *SMALL, "--slo-ttft", "2"]
    flags: list[tuple[str, list[str], list[str]]] = [
        ("sweep", SW[:-2], ["--concurrency"]),
        ("sweep", SW, ["--rate", "--num-requests", "--isl", "--max-model-len", "--gpu-memory-utilization", "--seed", "--request-overhead-ms", "--block-size"]),
        ("plan", plan_online, ["--rate", "--headroom"]),
        ("memory", ["memory", "llama-3.1-8b"], ["--gpus"]),
    ]
    for command, base, options in flags:
        for option in options:
            for value in NUM_TEXT:
                argv = [*base, option, value] if option != "--num-requests" else [*[a for a in base if a not in ("--num-requests", "20")], option, value]
                if option == "--isl":
                    argv = ["sweep", "llama-3.1-8b", "--osl", "100", "--num-requests", "20", "--concurrency", "4", option, value]
                # -0, 1e-400 (zero), 0b11/0o17 (not decimal), huge: invalid for every one of these
                # a rate of 1e308 under a concurrency cap is a burst; 0 overhead and 0 headroom are valid
                zero_ok = value in ("-0", "1e-400") and option in ("--seed", "--request-overhead-ms", "--headroom")
                fine = value in ("0x10", "1_000", "1.5e3", "١٠", "  7  ") or zero_ok or (command, option, value) == ("sweep", "--rate", "1e308")
                yield Case("num10", f"{command}{option}={value[:10]!r}", argv, {}, None if fine else True)


# Outputs into folders, missing folders, read-only folders, the inputs -----------------------------

def out10_cases() -> Iterator[Case]:
    cal = ["calibrate", "{d}/r.json", "--model", "llama-3.1-8b", "--gpu", "h100-sxm"]
    runs = {"r.json": _lines(RUNS)}
    sweep_out = [*SW, "--format", "json", "--plot"]
    table: list[tuple[str, list[str], dict[str, FileSpec], bool | None, Callable[[Path], None] | None]] = [
        ("calibrate-out-dir", [*cal, "-o", "{d}/sub"], {**runs, "sub/x": "x"}, True, None),
        ("calibrate-out-dir-dot", [*cal, "-o", "."], runs, True, None),
        ("calibrate-out-dir-dotdot", [*cal, "-o", ".."], runs, True, None),
        ("calibrate-out-missing-dir", [*cal, "-o", "{d}/no/c.toml"], runs, True, None),
        ("calibrate-out-under-file", [*cal, "-o", "{d}/r.json/c.toml"], runs, True, None),
        ("calibrate-out-is-input", [*cal, "-o", "{d}/r.json", "--force"], runs, True, None),
        ("calibrate-out-is-input-dot-slash", [*cal, "-o", "./r.json", "--force"], runs, True, None),
        ("calibrate-out-is-input-hardlink", [*cal, "-o", "{d}/c.toml", "--force"], runs, True, _hardlink("r.json", "c.toml")),
        ("calibrate-out-model-file", [*cal, "-o", "{d}/model.safetensors", "--force"], {**runs, "model.safetensors": _st(GOOD)}, True, None),
        ("calibrate-out-model-file-new", [*cal, "-o", "{d}/pytorch_model.bin"], runs, True, None),
        ("calibrate-out-readonly-dir", [*cal, "-o", "{d}/ro/c.toml"], {**runs, "ro/x": "x"}, None, _chmod("ro", 0o555)),
        ("calibrate-out-long-name", [*cal, "-o", "{d}/" + "c" * 300 + ".toml"], runs, True, None),
        ("calibrate-out-newline-name", [*cal, "-o", "{d}/c\n.toml"], runs, None, None),
        ("calibrate-out-dangling-symlink", [*cal, "-o", "{d}/l.toml"], runs, None, _symlink("nowhere.toml", "l.toml")),
        ("calibrate-out-symlink-loop", [*cal, "-o", "{d}/l.toml", "--force"], runs, None, _symlink("l.toml", "l.toml")),  # --force replaces a link to nowhere
        ("calibrate-out-fifo", [*cal, "-o", "{d}/p.toml", "--force"], {**runs, "p.toml": ("fifo",)}, True, None),
        ("calibrate-out-dev-null", [*cal, "-o", "/dev/null", "--force"], runs, True, None),
        ("calibrate-out-empty", [*cal, "-o", ""], runs, True, None),
        ("sweep-plot-dir", [*sweep_out, "{d}/sub"], {"sub/x": "x"}, True, None),
        ("sweep-plot-missing-dir", [*sweep_out, "{d}/no/p.png"], {}, True, None),
        ("sweep-plot-model-file", [*sweep_out, "{d}/p.safetensors"], {}, True, None),
        ("sweep-plot-trace-input", ["sweep", "llama-3.1-8b", "--workload", "{d}/t.jsonl", "--concurrency", "4", "--plot", "{d}/t.png", "--force"], {"t.jsonl": _lines(PLAIN_ROWS)}, None, _hardlink("t.jsonl", "t.png")),
        ("sweep-plot-hist-input-symlink", ["sweep", "llama-3.1-8b", "--isl", "100", "--osl", "hist:{d}/h.csv", "--num-requests", "20", "--concurrency", "4", "--plot", "{d}/p.png", "--force"], {"h.csv": "tokens,count\n50,3\n100,5\n"}, True, _symlink("h.csv", "p.png")),
        ("check-junit-dir", [*CHECK, "--junit", "{d}/sub"], {"s.toml": SPEC, "sub/x": "x"}, True, None),
        ("check-junit-missing-dir", [*CHECK, "--junit", "{d}/no/j.xml"], {"s.toml": SPEC}, True, None),
        ("check-junit-readonly-dir", [*CHECK, "--junit", "{d}/ro/j.xml"], {"s.toml": SPEC, "ro/x": "x"}, None, _chmod("ro", 0o555)),
        ("check-junit-exists-no-force", [*CHECK, "--junit", "{d}/j.xml"], {"s.toml": SPEC, "j.xml": "keep"}, True, None),
        ("check-markdown-is-spec-folder", [*CHECK, "--markdown", "{d}"], {"s.toml": SPEC}, True, None),
        ("check-write-baseline-dot", [*CHECK, "--write-baseline", "."], {"s.toml": SPEC}, True, None),
        ("check-baseline-is-dir", [*CHECK, "--baseline", "{d}/sub"], {"s.toml": SPEC, "sub/x": "x"}, True, None),
        ("check-baseline-missing", [*CHECK, "--baseline", "{d}/no.json"], {"s.toml": SPEC}, True, None),
        ("plan-plot-missing-dir", ["plan", "llama-3.1-8b", "--gpus", "1", "--jobs", "1", *SMALL, "--arrival", "batch", "--plot", "{d}/no/p.png"], {}, True, None),
        ("plan-plot-model-folder-file", ["plan", "{d}/m", "--gpus", "1", "--jobs", "1", *SMALL, "--arrival", "batch", "--plot", "{d}/m/config.json", "--force"], {"m/config.json": MODEL}, True, None),
    ]
    for name, argv, files, invalid, setup in table:
        yield Case("out10", name, argv, files, invalid, setup=setup)


SURFACES10: dict[str, Callable[[], Iterator[Case]]] = {
    "issue10": issue10_cases, "calib10": calib10_cases, "trace10": trace10_cases,
    "offload10": offload10_cases, "disagg10": disagg10_cases, "price10": price10_cases,
    "check10": check10_cases, "quant10": quant10_cases, "st10": st10_cases, "num10": num10_cases,
    "out10": out10_cases,
}
# fmt: on
