"""The ninth bad-input campaign's surfaces (issue 23), run by `fuzz_surfaces.py`:

    PYTHONPATH=. python benchmarks/fuzz_surfaces.py calib9 trace9 offload9 disagg9 price9 \
        check9 quant9 st9 files9 num9 combo9

What the eight campaigns before did not try: calibration inputs whose figures are each
plausible but describe no run calibrate can fit (lengths past the model, a CSV with a column
twice, a trtllm-bench report, a calibration file applied to a fleet or to pools of another GPU)
(calib9); traces as JSON arrays, out of order, with keys of the wrong case and rows of both
kinds (trace9); offload sizes against the host they sit on and against every engine (offload9);
pools that cannot be laid out, or that leave no room for the model (disagg9); prices and GPU
lists against objectives and pools (price9); check specs whose relative paths, tables and
arrays are of the wrong shape (check9); skip lists whose patterns take exponential or
polynomial time, and other config shapes (quant9); checkpoints with a consolidated copy beside
their shards (st9); outputs over a checkpoint's other files and over the inputs a spec names
(files9); counts that blow memory or time on sweep, plan and calibrate (num9); options each
valid and nonsense together (combo9).
"""

# Data tables: one case per line, some past 100 characters, a fullwidth digit on purpose.
# ruff: noqa: E501, RUF001
from __future__ import annotations

import json
from collections.abc import Callable, Iterator

from fuzz_cases7 import (
    CAL,
    DISAGG,
    DISAGG_PLAN,
    FLEET,
    GOOD,
    INDEX,
    ONLINE,
    SHARDS,
    SW,
    SW_SESS,
    TRACE,
    Table,
    _cases,
    _lines,
    _scenario,
    _st,
)
from fuzz_harness import Case, FileSpec
from fuzz_surfaces import (
    CAL_OK,
    HUGE_INT,
    PLAIN_ROWS,
    RUNS,
    SESSION_ROWS,
    SG_RUNS,
    SMALL,
    SPEC,
    STEP_OK,
    llama_config,
)

# fmt: off
CSV_HEAD = "concurrency,input_len,output_len,output_throughput_tok_s,mean_tpot_ms,mean_ttft_ms\n"
CSV_ROWS = "8,1024,128,500,14,150\n32,1024,128,1200,24,160\n64,1024,128,1800,32,170\n"
CAL_CSV = ["calibrate", "{d}/b.csv", "--model", "llama-3.1-8b", "--gpu", "h100-sxm"]
STEP_CAL = CAL_OK + STEP_OK + 'profile = "vllm"\n'  # fuzz_surfaces.STEP_OK lacks the required profile
MODEL = json.dumps(llama_config())


# Calibration inputs that no run of calibrate fits ---------------------------------------------------

def calib9_cases() -> Iterator[Case]:
    def csv(rows: str, head: str = CSV_HEAD) -> dict[str, FileSpec]:
        return {"b.csv": head + rows}

    def one(**changes: object) -> dict[str, FileSpec]:
        return {"r.json": _lines([{**RUNS[0], **changes}, *RUNS[1:]])}

    trt_report = {"engine": {"model": "meta-llama/Llama-3.1-8B-Instruct", "backend": "pytorch"}, "performance": {"system_output_throughput_tok_s": 1200.0, "avg_request_latency_ms": 2000.0}, "request_info": {"num_requests": 200}}
    pretty = "".join(json.dumps(r, indent=4) + "\n" for r in RUNS)
    table: list[tuple[str, list[str], dict[str, FileSpec], bool | None]] = [
        ("csv-valid", CAL_CSV, csv(CSV_ROWS), False),
        ("csv-column-twice", CAL_CSV, csv("8,1024,128,500,14,150,64\n32,1024,128,1200,24,160,8\n64,1024,128,1800,32,170,32\n", CSV_HEAD.strip() + ",concurrency\n"), True),
        ("csv-input-past-model", CAL_CSV, csv("8,500000000,128,500,14,150\n32,500000000,128,1200,24,160\n"), True),
        ("csv-output-past-model", CAL_CSV, csv("1,100,900000000,50,14,150\n2,100,900000000,90,24,160\n"), True),
        ("csv-concurrency-million", CAL_CSV, csv("1000000,1024,128,500,14,150\n2000000,1024,128,1200,24,160\n"), True),
        ("csv-concurrency-30000-consistent", CAL_CSV, csv("30000,1024,128,1990000,14,150\n"), True),  # past the 20,000 a fit simulates
        ("csv-requests-under-clients", CAL_CSV, {"b.csv": CSV_HEAD.strip() + ",num_requests\n64,1024,128,1800,32,170,8\n32,1024,128,1200,24,160,8\n"}, None),
        ("csv-header-twice", CAL_CSV, csv(CSV_ROWS + CSV_HEAD + CSV_ROWS), True),
        ("csv-ttft-under-tpot", CAL_CSV, csv("8,1024,128,500,14,1.5\n32,1024,128,1200,24,1.6\n"), None),
        ("csv-throughput-past-clients", CAL_CSV, csv("1,1024,128,100000,14,150\n2,1024,128,200000,24,160\n"), None),
        ("csv-tpot-times-clients-contradicts", CAL_CSV, csv("8,1024,128,1,14,150\n32,1024,128,2,24,160\n"), True),
        ("csv-throughput-in-requests-per-s", CAL_CSV, csv("8,1024,128,4.1,14,150\n32,1024,128,10,24,160\n64,1024,128,14,32,170\n"), True),
        ("csv-gpus-other", [*CAL_CSV, "--gpus", "4"], {"b.csv": CSV_HEAD.strip() + ",num_gpus\n8,1024,128,500,14,150,8\n"}, True),
        ("csv-layout-other", [*CAL_CSV, "--layout", "tp2", "--gpus", "2"], {"b.csv": CSV_HEAD.strip() + ",parallelism\n8,1024,128,500,14,150,TP8\n"}, True),
        ("csv-engine-sglang-asked-vllm", [*CAL_CSV, "--engine", "vllm"], {"b.csv": CSV_HEAD.strip() + ",engine\n8,1024,128,500,14,150,sglang\n"}, True),
        ("csv-hardware-other", CAL_CSV, {"b.csv": CSV_HEAD.strip() + ",hardware\n8,1024,128,500,14,150,MI300X\n"}, True),
        ("json-pretty-appended", CAL, {"r.json": pretty}, False),
        ("json-trtllm-bench-report", CAL, {"r.json": json.dumps(trt_report)}, True),
        ("json-output-past-model", CAL, one(total_output_tokens=200 * 900_000), True),
        ("json-input-past-model", CAL, one(total_input_tokens=200 * 900_000), True),
        ("json-completed-1", CAL, one(completed=1, num_prompts=1), None),
        ("json-cap-1-of-200", CAL, one(max_concurrency=1), None),
        ("json-lists-nan", CAL, {"r.json": _lines([{**RUNS[0], "ttfts": [0.1, float("nan")]}, *RUNS[1:]])}, None),
        ("json-detailed-lists", CAL, {"r.json": _lines([{**run, "ttfts": [0.1] * 200, "itls": [[0.01] * 10] * 200, "generated_texts": ["x"] * 200, "errors": [""] * 200} for run in RUNS])}, False),
        ("json-two-dates", CAL, {"r.json": _lines([{**RUNS[0], "date": "20250101-000000"}, {**RUNS[1], "date": "20250301-000000"}, RUNS[2]])}, None),
        ("json-tokenizer-other", CAL, one(tokenizer_id="Qwen/Qwen3-8B"), None),
        ("sglang-jsonl-lengths-past-model", ["calibrate", "{d}/r.jsonl", "--model", "llama-3.1-8b", "--gpu", "h100-sxm"], {"r.jsonl": _lines([{**SG_RUNS[0], "random_input_len": 500_000_000}, *SG_RUNS[1:]])}, True),
        ("sglang-jsonl-valid", ["calibrate", "{d}/r.jsonl", "--model", "llama-3.1-8b", "--gpu", "h100-sxm"], {"r.jsonl": _lines(SG_RUNS)}, False),
        ("sglang-as-json-suffix", CAL, {"r.json": _lines(SG_RUNS)}, None),
        ("vllm-as-jsonl-suffix", ["calibrate", "{d}/r.jsonl", "--model", "llama-3.1-8b", "--gpu", "h100-sxm"], {"r.jsonl": _lines(RUNS)}, None),
        ("json-suffix-upper", ["calibrate", "{d}/r.JSON", "--model", "llama-3.1-8b", "--gpu", "h100-sxm"], {"r.JSON": _lines(RUNS)}, None),
        ("no-suffix-json", ["calibrate", "{d}/results", "--model", "llama-3.1-8b", "--gpu", "h100-sxm"], {"results": _lines(RUNS)}, False),  # read by its text (campaign 16)
        ("calibrate-max-model-len-under-runs", [*CAL, "--max-model-len", "512"], {"r.json": _lines(RUNS)}, True),
        ("calibrate-gpus-not-layout", [*CAL, "--gpus", "2", "--layout", "tp4"], {"r.json": _lines(RUNS)}, True),
        ("calibrate-model-folder-other-shape-force", ["calibrate", "{d}/r.json", "--model", "{d}/m", "--gpu", "h100-sxm", "--force"], {"r.json": _lines(RUNS), "m/config.json": json.dumps({**llama_config(), "num_hidden_layers": 2})}, None),
    ]
    for name, argv, files, invalid in table:
        yield Case("calib9", name, argv, files, invalid)
    # a calibration file applied where it was not fitted
    use = [*SW, "--calibration", "{d}/c.toml"]
    for name, argv, text, invalid in [
        ("apply-step-valid", use, STEP_CAL, False),
        ("apply-fleet-other-gpus", [*FLEET[:-2], "--gpu", "h100-sxm,b200", "--calibration", "{d}/c.toml"], STEP_CAL.replace('model = "llama-3.1-8b"', 'model = "llama-3.1-8b"\ngpu = "h100-sxm"'), True),
        ("apply-fleet-other-gpus-force", [*FLEET[:-2], "--gpu", "h100-sxm,b200", "--calibration", "{d}/c.toml", "--force"], STEP_CAL.replace('model = "llama-3.1-8b"', 'model = "llama-3.1-8b"\ngpu = "h100-sxm"'), False),
        ("apply-disagg-pool-other-gpu", [*SW, "--disagg", "1p:tp1@b200,1d:tp1", "--calibration", "{d}/c.toml"], STEP_CAL.replace('model = "llama-3.1-8b"', 'model = "llama-3.1-8b"\ngpu = "h100-sxm"'), True),
        ("apply-disagg-pool-other-gpu-force", [*SW, "--gpu", "h100-sxm", "--disagg", "1p:tp1@b200,1d:tp1", "--calibration", "{d}/c.toml", "--force"], STEP_CAL.replace('model = "llama-3.1-8b"', 'model = "llama-3.1-8b"\ngpu = "h100-sxm"'), False),
        ("apply-memory-all-layouts", ["memory", "llama-3.1-8b", "--gpus", "2", "--gpu", "h100-sxm", "--layout", "all", "--calibration", "{d}/c.toml"], STEP_CAL.replace('model = "llama-3.1-8b"', 'model = "llama-3.1-8b"\ngpu = "h100-sxm"'), None),  # said: a warning per layout
        ("apply-memory-all-layouts-force", ["memory", "llama-3.1-8b", "--gpus", "2", "--gpu", "h100-sxm", "--layout", "all", "--calibration", "{d}/c.toml", "--force"], STEP_CAL.replace('model = "llama-3.1-8b"', 'model = "llama-3.1-8b"\ngpu = "h100-sxm"'), False),
        ("apply-other-gpu-force-memory", ["memory", "llama-3.1-8b", "--gpus", "1", "--gpu", "l40s", "--calibration", "{d}/c.toml", "--force"], CAL_OK.replace('model = "llama-3.1-8b"', 'model = "llama-3.1-8b"\ngpu = "h100-sxm"').replace("weights_overhead = 0.0314", "activation_peak = 60.0"), None),
        ("apply-sglang-to-vllm-force", [*use, "--force"], STEP_CAL.replace('engine = "vllm"', 'engine = "sglang"'), None),
        ("apply-concurrency-range-outside", [*use, "--concurrency", "512"], STEP_CAL + "concurrency_min = 1\nconcurrency_max = 4\n", None),
        ("apply-profile-other-engine", use, STEP_CAL.replace('scale = 1.1', 'scale = 1.1\nprofile = "sglang 0.4"'), None),
        ("apply-speculative-without-flag", use, CAL_OK + '[speculative]\nspeculative = "ngram:3"\naccept_length = 2.0\nsource = "b.csv"\npoints = 3\n', None),
        ("apply-speculative-other-k", [*use, "--speculative", "ngram:5"], CAL_OK + '[speculative]\nspeculative = "ngram:3"\naccept_length = 3.9\nsource = "b.csv"\npoints = 3\n', None),
        ("apply-terms-bigger-than-gpu", use, CAL_OK.replace("weights_overhead = 0.0314", "activation_peak = 500.0"), None),
        ("apply-model-shape-other", use, 'model_shape = "2 layers"\n' + CAL_OK, True),
        ("apply-calibration-is-log", use, (CAL_OK.split("[terms_gib]")[0]), None),
    ]:
        yield Case("calib9", name, argv, {"c.toml": text}, invalid)


# Traces of other shapes -----------------------------------------------------------------------------

def trace9_cases() -> Iterator[Case]:
    s, p = SESSION_ROWS, PLAIN_ROWS
    table: list[tuple[str, str, FileSpec, list[str], bool | None]] = [
        ("json-array-plain", "t.json", json.dumps(p), [], None),
        ("json-array-session", "t.json", json.dumps(s), [], None),
        ("json-object-rows", "t.json", json.dumps({"requests": p}), [], True),
        ("csv-trace", "t.csv", "arrival_s,input_tokens,output_tokens\n0,50,20\n", [], None),
        ("plain-unsorted", "t.jsonl", _lines([p[2], p[0], p[1]]), [], None),
        ("plain-all-same-time", "t.jsonl", _lines([{**r, "arrival_s": 0.0} for r in p]), [], None),
        ("plain-key-case", "t.jsonl", _lines([{"Arrival_S": 0.0, "Input_Tokens": 50, "Output_Tokens": 20}]), [], True),
        ("plain-then-session-rows", "t.jsonl", _lines([*p, *s]), [], True),
        ("session-then-plain-rows", "t.jsonl", _lines([*s, *p]), [], True),
        ("plain-session-id-null-first", "t.jsonl", _lines([{**p[0], "session_id": None}, *p[1:]]), [], True),
        ("plain-output-0", "t.jsonl", _lines([{**p[0], "output_tokens": 0}, *p[1:]]), [], True),
        ("plain-input-float", "t.jsonl", _lines([{**p[0], "input_tokens": 50.0}, *p[1:]]), [], None),
        ("plain-input-float-frac", "t.jsonl", _lines([{**p[0], "input_tokens": 50.5}, *p[1:]]), [], True),
        ("plain-arrival-string", "t.jsonl", _lines([{**p[0], "arrival_s": "0.5"}, *p[1:]]), [], True),
        ("plain-arrival-bool", "t.jsonl", _lines([{**p[0], "arrival_s": True}, *p[1:]]), [], True),
        ("plain-arrival-neg-zero", "t.jsonl", _lines([{**p[0], "arrival_s": -0.0}, *p[1:]]), [], None),
        ("plain-arrival-tiny", "t.jsonl", _lines([{**p[0], "arrival_s": 1e-300}, *p[1:]]), [], None),
        ("plain-arrival-1e9-gap", "t.jsonl", _lines([p[0], {**p[1], "arrival_s": 1e9}]), [], None),
        ("plain-think-on-plain", "t.jsonl", _lines([{**p[0], "think_s": 1.0}, *p[1:]]), [], True),
        ("plain-100k-rows", "t.jsonl", _lines([{"arrival_s": i * 0.001, "input_tokens": 10, "output_tokens": 2} for i in range(100_000)]), [], None),
        ("session-think-on-first", "t.jsonl", _lines([{**s[0], "think_s": 5.0}, *s[1:]]), [], None),
        ("session-arrival-on-later-and-think", "t.jsonl", _lines([s[0], {**s[1], "arrival_s": 9.0}, *s[2:]]), [], None),
        ("session-turn-starts-at-1", "t.jsonl", _lines([{**r, "turn": r["turn"] + 1} for r in s]), [], None),
        ("session-turn-float", "t.jsonl", _lines([{**s[0], "turn": 0.0}, *s[1:]]), [], True),
        ("session-id-empty", "t.jsonl", _lines([{**r, "session_id": ""} for r in s[:2]]), [], None),
        ("session-id-int-and-str", "t.jsonl", _lines([{**s[0], "session_id": 1}, {**s[1], "session_id": "1"}]), [], None),  # campaign 7: one session
        ("session-think-nan-text", "t.jsonl", '{"session_id": "a", "turn": 0, "input_tokens": 5, "output_tokens": 5}\n{"session_id": "a", "turn": 1, "input_tokens": 5, "output_tokens": 5, "think_s": NaN}\n', [], True),
        ("session-prefix-past-context", "t.jsonl", _lines([{**s[2], "prefix_tokens": 200_000}, s[3]]), [], True),
        ("session-prefix-shared-different-sizes", "t.jsonl", _lines([s[2], {**s[2], "session_id": "c", "prefix_tokens": 64}]), [], None),
        ("session-5000-sessions-at-0", "t.jsonl", _lines([{"session_id": str(i), "turn": 0, "input_tokens": 10, "output_tokens": 2, "arrival_s": 0.0} for i in range(5000)]), [], None),
        ("session-one-session-2000-turns", "t.jsonl", _lines([{"session_id": "a", "turn": i, "input_tokens": 10, "output_tokens": 2, **({"arrival_s": 0.0} if i == 0 else {"think_s": 0.0})} for i in range(2000)]), [], None),
        ("plain-with-disagg-offload-clients", "t.jsonl", _lines(p), [*DISAGG, "--offload", "cpu:64GiB", "--clients", "2"], None),
        ("session-with-disagg-offload", "t.jsonl", _lines(s), [*DISAGG, "--offload", "cpu:64GiB"], None),
        ("session-with-think-time-flag", "t.jsonl", _lines(s), ["--think-time", "1e9"], None),
        ("session-with-turns-flag", "t.jsonl", _lines(s), ["--turns", "3"], True),
        ("session-with-context-flag", "t.jsonl", _lines(s), ["--context", "100"], True),
        ("session-with-num-requests-1", "t.jsonl", _lines(s), ["--num-requests", "1"], None),
        ("session-with-num-requests-huge", "t.jsonl", _lines(s), ["--num-requests", "10000000"], None),
        ("plain-with-seed-huge", "t.jsonl", _lines(p), ["--seed", "18446744073709551616"], None),
        ("plain-speculative", "t.jsonl", _lines(p), ["--speculative", "ngram:3", "--spec-accept-length", "2"], None),
        ("plain-slo-on-batch-trace", "t.jsonl", _lines([{k: v for k, v in r.items() if k != "arrival_s"} for r in p]), ["--slo-ttft", "1"], None),
    ]
    for name, file, data, extra, invalid in table:
        argv = [*TRACE, *extra]
        argv[argv.index("{d}/t.jsonl")] = "{d}/" + file
        yield Case("trace9", name, argv, {file: data}, invalid)
    plan = ["plan", "llama-3.1-8b", "--gpus", "1", "--jobs", "1", "--workload", "{d}/t.jsonl"]
    for name, extra, invalid in [
        ("plan-trace-rate", ["--rate", "3"], None),
        ("plan-trace-rate-1e9", ["--rate", "1e9"], None),
        ("plan-trace-batch", ["--arrival", "batch"], None),
        ("plan-trace-headroom", ["--rate", "2", "--headroom", "0.5"], None),
        ("plan-trace-disagg", ["--rate", "2", "--disagg", "--gpus", "2"], None),
        ("plan-trace-fleet", ["--rate", "2", "--gpu", "h100-sxm,h200-sxm"], None),
    ]:
        yield Case("trace9", name, [*plan, *extra], {"t.jsonl": _lines(p)}, invalid)


# Offload sizes against the host and the engines ----------------------------------------------------

def offload9_cases() -> Iterator[Case]:
    table: Table = []
    for value, invalid in [
        ("cpu:64GiB", False), ("cpu:64 GiB", None), ("cpu:64gib", None), ("cpu:64G", None), ("cpu:64GB", None),
        ("CPU:64GiB", None), ("cpu :64GiB", None), ("cpu:64GiB,", True), (",cpu:64GiB", True), ("cpu:64GiB,,nvme:1TiB", True),
        ("cpu:1.5GiB", None), ("cpu:1023MiB", True), ("cpu:1GiB", None), ("cpu:1e3GiB", None), ("cpu:1e30GiB", True),
        ("cpu:inf", True), ("cpu:nanGiB", True), ("cpu:-64GiB", True), ("cpu:0x40GiB", True), ("cpu:64GiB64", True),
        ("cpu:" + HUGE_INT, True), ("cpu:64GiB:ssd", True), ("gpu:64GiB", True), ("disk:1TiB", None), ("nvme:1TiB", None),
        ("nvme:1TiB,cpu:64GiB", None), ("cpu:1TiB,nvme:2GiB", None), ("cpu:２GiB", True), ("cpu:64GiB\n", None), ("cpu:64GiB\x00", True),
    ]:
        table.append((f"sweep-{value[:16]!r}", [*SW, "--offload", value], invalid))
    table += [
        ("sglang", [*SW, "--engine", "sglang", "--offload", "cpu:64GiB"], None),
        ("trtllm", [*SW, "--engine", "trtllm", "--offload", "cpu:64GiB"], None),
        ("vllm-v0", [*SW, "--engine", "vllm-v0", "--offload", "cpu:64GiB"], None),
        ("swap-and-offload", [*SW, "--preemption", "swap", "--swap-space", "16GiB", "--offload", "cpu:64GiB"], None),
        # answered: the layouts past their share of host memory do not fit, and the sweep says
        # what would (a model that does not fit is an answer, as in plan and memory)
        ("swap-plus-offload-past-host", [*SW, "--preemption", "swap", "--swap-space", "1000GiB", "--offload", "cpu:1900GiB"], False),
        ("offload-dp8-host", ["sweep", "llama-3.1-8b", *SMALL, "--concurrency", "4", "--gpus", "8", "--layout", "dp8", "--offload", "cpu:500GiB"], False),
        ("offload-policy-bad", [*SW, "--offload", "cpu:64GiB", "--offload-policy", "write-around"], True),
        ("offload-policy-empty", [*SW, "--offload", "cpu:64GiB", "--offload-policy", ""], True),
        ("offload-memory-cmd", ["memory", "llama-3.1-8b", "--gpus", "1", "--offload", "cpu:64GiB"], True),
        ("offload-plan-batch", ["plan", "llama-3.1-8b", "--gpus", "1", "--jobs", "1", *SMALL, "--arrival", "batch", "--offload", "cpu:64GiB"], None),
        ("offload-plan-fleet", [*FLEET[:-2], "--gpu", "h100-sxm,mi300x", "--offload", "nvme:1TiB"], None),
        ("offload-on-mi300x", [*SW, "--gpu", "mi300x", "--offload", "nvme:1TiB"], None),
        ("offload-kv-cache-memory-tiny", [*SW, "--kv-cache-memory", "0.01GiB", "--offload", "cpu:64GiB"], None),
    ]
    yield from _cases("offload9", table)


# Pools that cannot be laid out ----------------------------------------------------------------------

def disagg9_cases() -> Iterator[Case]:
    table: Table = []
    for spec, invalid in [
        ("1p:tp1,1d:tp1", False), ("1p:tp2,1d:tp1", None), ("1p:tp1,1d:tp2", None), ("1p:tp3,1d:tp1", True), ("1p:tp16,1d:tp1", True),
        ("1p:pp2,1d:tp1", None), ("1p:dp2,1d:tp1", None), ("1p:tp1-ep2,1d:tp1", True), ("1p:dpa2,1d:tp1", True), ("1p:tp0,1d:tp1", True),
        ("1p:,1d:tp1", True), ("1p:tp1 ,1d:tp1", None), ("1P:TP1,1D:TP1", None), ("1p:tp1;1d:tp1", True), ("1p:tp1,1d:tp1,", True),
        ("1.5p:tp1,1d:tp1", True), ("-1p:tp1,1d:tp1", True), ("1e3p:tp1,1d:tp1", True), ("0x1p:tp1,1d:tp1", True), ("01p:tp1,01d:tp1", None),
        ("1p:tp1@h100-sxm,1d:tp1@mi300x", None), ("1p:tp1@mi300x,1d:tp1@mi300x", None), ("1p:tp1@nope,1d:tp1", True), ("1p:tp1@,1d:tp1", True),
        ("1p:tp1,1d:tp1@h100-sxm@b200", True), ("1d:tp1,1p:tp1", None), ("1p:tp1,1x:tp1", True), ("p:tp1,d:tp1", True),
        ("1p:tp1,1d:tp1," + "1d:tp1," * 50, True), ("1000p:tp1,1d:tp1", None), ("1p:tp8,1d:tp8", None),
    ]:
        table.append((f"sweep-{spec[:30]}", [*SW, "--disagg", spec], invalid))
    r1 = ["sweep", "deepseek-r1", *SMALL, "--concurrency", "4", "--gpu", "h200-sxm"]
    table += [
        # a pool that does not fit is an answer (campaign 24: as `sweep --layout` answers one)
        ("r1-pools-too-small", [*r1, "--disagg", "1p:tp1,1d:tp1"], False),
        ("r1-pools-dpa8", [*r1, "--disagg", "1p:dpa8,1d:dpa8"], None),
        ("r1-pools-ep-decode", [*r1, "--disagg", "1p:tp8,1d:tp8-ep8"], None),
        ("disagg-with-layout", [*SW, *DISAGG, "--layout", "tp1"], True),
        ("disagg-with-gpus", [*SW, *DISAGG, "--gpus", "4"], None),
        ("disagg-with-serve-command", [*SW, *DISAGG, "--serve-command", "vllm serve meta-llama/Llama-3.1-8B-Instruct --tp 1"], None),
        ("disagg-with-kv-cache-memory", [*SW, *DISAGG, "--kv-cache-memory", "4GiB"], None),
        ("disagg-with-speculative", [*SW, *DISAGG, "--speculative", "ngram:3", "--spec-accept-length", "2"], None),
        ("disagg-with-routing", [*SW, "--disagg", "1p:dp2,1d:dp2", "--routing", "least-loaded"], None),
        ("disagg-with-concurrency-huge", [*SW[:-1], "1000000", *DISAGG], None),
        ("disagg-with-batch", [*SW, *DISAGG, "--arrival", "batch"], None),
        ("disagg-with-preemption-swap", [*SW, *DISAGG, "--preemption", "swap", "--swap-space", "8GiB"], None),
        ("disagg-with-max-model-len-tiny", [*SW, *DISAGG, "--max-model-len", "64"], True),
        ("disagg-with-calibration", [*SW, *DISAGG, "--calibration", "{d}/c.toml"], None),
        ("disagg-sessions-offload-trtllm", [*SW_SESS, "--clients", "4", *DISAGG, "--offload", "cpu:64GiB", "--engine", "trtllm"], None),
        ("disagg-sessions-offload-sglang-prefix-off", [*SW_SESS, "--clients", "4", *DISAGG, "--offload", "cpu:64GiB", "--engine", "sglang", "--prefix-caching", "off"], None),
        ("plan-disagg-objective-cost-batch", ["plan", "llama-3.1-8b", "--gpus", "2", "--jobs", "1", *SMALL, "--arrival", "batch", "--disagg", "--objective", "cost"], None),
        ("plan-disagg-layout", [*DISAGG_PLAN, "--layout", "tp1"], None),
        ("plan-disagg-nodes", [*DISAGG_PLAN[:-1], "--nodes", "2", "--disagg"], None),
        ("plan-disagg-gpus-3", [*DISAGG_PLAN[:DISAGG_PLAN.index("--gpus")], "--gpus", "3", "--rate", "2", "--slo-ttft", "2", "--disagg"], None),
        ("plan-disagg-transfer-60s", [*DISAGG_PLAN, "--kv-transfer-overhead-ms", "60000"], None),
    ]
    for name, argv, invalid in table:
        files = {"c.toml": STEP_CAL} if "calibration" in name else {}
        yield Case("disagg9", name, argv, files, invalid)


# Prices and GPU lists against objectives and pools --------------------------------------------------

def price9_cases() -> Iterator[Case]:
    batch = ["plan", "llama-3.1-8b", "--gpus", "1", "--jobs", "1", *SMALL, "--arrival", "batch"]
    table: Table = [
        ("cost-price-0", [*batch, "--objective", "cost", "--price-gpu-hour", "0"], True),
        ("cost-price-tiny", [*batch, "--objective", "cost", "--price-gpu-hour", "1e-300"], None),
        ("cost-price-huge", [*batch, "--objective", "cost", "--price-gpu-hour", "1e300"], None),
        ("cost-price-neg-zero", [*batch, "--objective", "cost", "--price-gpu-hour", "-0"], True),
        ("online-price-0", [*ONLINE, "--price-gpu-hour", "0"], True),
        ("online-price-1e12", [*ONLINE, "--price-gpu-hour", "1e12"], None),
        ("fleet-prices-swapped-count", [*FLEET[:-2], "--gpu", "h100-sxm,b200,mi300x", "--price-gpu-hour", "3,4"], True),
        ("fleet-price-one-zero", [*FLEET[:-2], "--gpu", "h100-sxm,b200", "--price-gpu-hour", "3,0"], True),
        ("fleet-price-one-nan", [*FLEET[:-2], "--gpu", "h100-sxm,b200", "--price-gpu-hour", "3,nan"], True),
        ("fleet-same-gpu-twice-same-price", [*FLEET[:-2], "--gpu", "h100-sxm,h100-sxm", "--price-gpu-hour", "3,3"], True),
        ("fleet-gpu-alias-case", [*FLEET[:-2], "--gpu", "h100-sxm,H100-SXM"], True),
        ("fleet-price-spaces", [*FLEET[:-2], "--gpu", "h100-sxm,b200", "--price-gpu-hour", " 3 , 4 "], None),
        ("fleet-price-with-disagg", [*DISAGG_PLAN, "--gpu", "h100-sxm,b200", "--price-gpu-hour", "3,4"], None),
        ("disagg-pools-price-list", [*SW, "--disagg", "1p:tp1@b200,1d:tp1", "--price-gpu-hour", "3,4"], True),
        ("sweep-price", [*SW, "--price-gpu-hour", "3"], True),
        ("memory-gpu-list", ["memory", "llama-3.1-8b", "--gpus", "1", "--gpu", "h100-sxm,b200"], True),
        ("check-price-list-key", [], True),
        ("objective-goodput-online", [*ONLINE, "--objective", "goodput"], True),
        ("objective-cost-no-price-catalog", [*batch, "--objective", "cost", "--gpu", "h100-sxm"], None),
        ("objective-upper", [*batch, "--objective", "COST"], None),
        ("gpu-list-40-types", [*FLEET[:-2], "--gpu", ",".join(["h100-sxm"] * 40)], True),
        ("gpu-list-all-known", [*FLEET[:-2], "--gpu", "h100-sxm,h200-sxm,b200,mi300x,a100-sxm-80gb,l40s"], None),
    ]
    for name, argv, invalid in table:
        if name == "check-price-list-key":
            yield Case("price9", name, ["check", "{d}/s.toml"], {"s.toml": _scenario("usd_per_gpu_hour = [3.0, 4.0]")}, invalid)
            yield Case("price9", "check-price-inf", ["check", "{d}/s.toml"], {"s.toml": _scenario("usd_per_gpu_hour = inf")}, True)
            yield Case("price9", "check-price-zero-cost-expect", ["check", "{d}/s.toml"], {"s.toml": _scenario("usd_per_gpu_hour = 0.0", expect="usd_per_million_tokens_max = 1.0")}, True)
            continue
        yield Case("price9", name, argv, {}, invalid)


# Check specs: relative paths, tables and arrays of the wrong shape ---------------------------------

def check9_cases() -> Iterator[Case]:
    # the trace's 3 requests: 2 clients, no preemption at 2
    trace_spec = SPEC.replace("isl = 100\nosl = 100\n", "").replace("num_requests = 20\n", "").replace('arrival = "batch"\n', "").replace("concurrency = 4", "concurrency = 2").replace("no_preemption_at = 4", "no_preemption_at = 2")
    def with_trace(path: str) -> str:
        return trace_spec.replace("[scenario.workload]\n", f'[scenario.workload]\ntrace = "{path}"\n')
    trace = _lines(PLAIN_ROWS)
    table: list[tuple[str, list[str], dict[str, FileSpec], bool | None]] = [
        ("trace-beside-spec", ["check", "{d}/sub/s.toml"], {"sub/s.toml": with_trace("t.jsonl"), "sub/t.jsonl": trace}, False),
        ("trace-only-in-cwd", ["check", "{d}/sub/s.toml"], {"sub/s.toml": with_trace("t.jsonl"), "t.jsonl": trace}, True),
        ("trace-parent", ["check", "{d}/sub/s.toml"], {"sub/s.toml": with_trace("../t.jsonl"), "t.jsonl": trace}, False),
        ("trace-absolute-missing", ["check", "{d}/s.toml"], {"s.toml": with_trace("/nonexistent/t.jsonl")}, True),
        ("trace-tilde", ["check", "{d}/s.toml"], {"s.toml": with_trace("~/t.jsonl")}, True),
        ("trace-empty", ["check", "{d}/s.toml"], {"s.toml": with_trace("")}, True),
        ("trace-dot", ["check", "{d}/s.toml"], {"s.toml": with_trace(".")}, True),
        ("trace-is-spec", ["check", "{d}/s.toml"], {"s.toml": with_trace("s.toml")}, True),
        ("trace-with-isl", ["check", "{d}/s.toml"], {"s.toml": with_trace("t.jsonl").replace("[scenario.workload]\n", "[scenario.workload]\nisl = 100\n"), "t.jsonl": trace}, True),
        ("trace-session-with-disagg-offload", ["check", "{d}/s.toml"], {"s.toml": with_trace("t.jsonl").replace('engine = "vllm"', 'engine = "vllm"\ndisagg = "1p:tp1,1d:tp1"\noffload = "cpu:64GiB"'), "t.jsonl": _lines(SESSION_ROWS)}, None),
        ("calibration-beside-spec", ["check", "{d}/sub/s.toml"], {"sub/s.toml": _scenario('calibration = "c.toml"'), "sub/c.toml": STEP_CAL}, False),
        ("calibration-in-cwd-only", ["check", "{d}/sub/s.toml"], {"sub/s.toml": _scenario('calibration = "c.toml"'), "c.toml": STEP_CAL}, True),
        ("calibration-other-gpu", ["check", "{d}/s.toml"], {"s.toml": _scenario('calibration = "c.toml"').replace('gpu = "h100-sxm"', 'gpu = "b200"'), "c.toml": STEP_CAL.replace('model = "llama-3.1-8b"', 'model = "llama-3.1-8b"\ngpu = "h100-sxm"')}, True),
        ("calibration-other-gpu-force", ["check", "{d}/s.toml", "--force"], {"s.toml": _scenario('calibration = "c.toml"').replace('gpu = "h100-sxm"', 'gpu = "b200"'), "c.toml": STEP_CAL.replace('model = "llama-3.1-8b"', 'model = "llama-3.1-8b"\ngpu = "h100-sxm"')}, None),
        ("calibration-is-trace", ["check", "{d}/s.toml"], {"s.toml": _scenario('calibration = "t.jsonl"'), "t.jsonl": trace}, True),
        ("model-folder-relative", ["check", "{d}/sub/s.toml"], {"sub/s.toml": SPEC.replace('model = "llama-3.1-8b"', 'model = "m"'), "sub/m/config.json": MODEL}, None),
        ("osl-hist-relative", ["check", "{d}/sub/s.toml"], {"sub/s.toml": SPEC.replace("osl = 100", 'osl = "hist:h.csv"'), "sub/h.csv": "tokens,count\n50,3\n100,5\n"}, False),
        ("scenario-table-not-array", ["check", "{d}/s.toml"], {"s.toml": SPEC.replace("[[scenario]]", "[scenario]")}, True),
        ("expect-array-of-tables", ["check", "{d}/s.toml"], {"s.toml": SPEC.replace("[scenario.expect]", "[[scenario.expect]]")}, True),
        ("workload-array-of-tables", ["check", "{d}/s.toml"], {"s.toml": SPEC.replace("[scenario.workload]", "[[scenario.workload]]")}, True),
        ("workload-nested-table", ["check", "{d}/s.toml"], {"s.toml": SPEC + "[scenario.workload.extra]\na = 1\n"}, True),
        ("expect-nested-inline", ["check", "{d}/s.toml"], {"s.toml": _scenario(expect="fits = {value = true}")}, True),
        ("expect-ttft-inf", ["check", "{d}/s.toml"], {"s.toml": _scenario(workload='arrival = "poisson"\nrate = 2.0'.replace('arrival = "poisson"\n', ""), expect="ttft_p99_max_s = inf").replace('arrival = "batch"', 'arrival = "poisson"')}, True),
        ("expect-only-empty", ["check", "{d}/s.toml"], {"s.toml": SPEC.split("[scenario.expect]")[0] + "[scenario.expect]\n"}, None),
        ("no-expect", ["check", "{d}/s.toml"], {"s.toml": SPEC.split("[scenario.expect]")[0]}, None),
        ("two-scenarios-one-trace-each", ["check", "{d}/s.toml"], {"s.toml": with_trace("t.jsonl") + with_trace("t.jsonl").replace('name = "s"', 'name = "s2"'), "t.jsonl": trace}, None),
        ("scenario-200", ["check", "{d}/s.toml"], {"s.toml": "".join(SPEC.replace('name = "s"', f'name = "s{i}"') for i in range(200))}, None),
        ("name-newline", ["check", "{d}/s.toml"], {"s.toml": SPEC.replace('name = "s"', 'name = "a\\nb"')}, True),
        ("name-ansi", ["check", "{d}/s.toml"], {"s.toml": SPEC.replace('name = "s"', 'name = "\\u001b[31mred"')}, True),
        ("name-5000", ["check", "{d}/s.toml"], {"s.toml": SPEC.replace('name = "s"', f'name = "{"x" * 5000}"')}, None),
        ("junit-name-xml-chars", ["check", "{d}/s.toml", "--junit", "{d}/j.xml"], {"s.toml": SPEC.replace('name = "s"', 'name = "<a&b>\\"]]>"')}, None),
        ("json-spec", ["check", "{d}/s.json"], {"s.json": json.dumps({"scenario": [{"name": "s", "model": "llama-3.1-8b", "gpu": "h100-sxm", "layout": "tp1", "engine": "vllm", "workload": {"isl": 100, "osl": 100, "arrival": "batch", "num_requests": 20, "concurrency": 4}, "expect": {"fits": True}}]})}, None),
        ("json-spec-nan", ["check", "{d}/s.json"], {"s.json": '{"scenario": [{"name": "s", "model": "llama-3.1-8b", "gpu": "h100-sxm", "layout": "tp1", "workload": {"isl": NaN, "osl": 100, "arrival": "batch", "num_requests": 20, "concurrency": 4}}]}'}, True),
        ("json-spec-5000-digit", ["check", "{d}/s.json"], {"s.json": '{"scenario": [{"name": "s", "model": "llama-3.1-8b", "gpu": "h100-sxm", "workload": {"isl": ' + HUGE_INT + ', "osl": 100, "arrival": "batch", "num_requests": 20}}]}'}, True),
        ("json-spec-list-top", ["check", "{d}/s.json"], {"s.json": "[]"}, True),
        ("yaml-suffix", ["check", "{d}/s.yaml"], {"s.yaml": SPEC}, None),
        ("baseline-is-calibration", ["check", "{d}/s.toml", "--baseline", "{d}/c.toml"], {"s.toml": SPEC, "c.toml": STEP_CAL}, True),
        ("baseline-is-trace", ["check", "{d}/s.toml", "--baseline", "{d}/t.jsonl"], {"s.toml": SPEC, "t.jsonl": trace}, True),
        ("tolerance-inf", ["check", "{d}/s.toml"], {"s.toml": "baseline_tolerance = inf\n" + SPEC}, True),
        ("tolerance-1", ["check", "{d}/s.toml"], {"s.toml": "baseline_tolerance = 1.0\n" + SPEC}, None),
        ("spec-disagg-offload-sessions-speculative", ["check", "{d}/s.toml"], {"s.toml": _scenario('disagg = "1p:tp1,1d:tp1"\noffload = "cpu:64GiB"\nspeculative = "ngram:3"\nspec_accept_length = 2.0', workload='preset = "multiturn-chat"\nclients = 2').replace("isl = 100\nosl = 100\n", "").replace('arrival = "batch"\n', "")}, None),
        ("spec-disagg-layout", ["check", "{d}/s.toml"], {"s.toml": _scenario('disagg = "1p:tp1,1d:tp1"')}, True),
        ("spec-gpu-list", ["check", "{d}/s.toml"], {"s.toml": SPEC.replace('gpu = "h100-sxm"', 'gpu = "h100-sxm,b200"')}, True),
        ("spec-gpu-array", ["check", "{d}/s.toml"], {"s.toml": SPEC.replace('gpu = "h100-sxm"', 'gpu = ["h100-sxm", "b200"]')}, True),
    ]
    for name, argv, files, invalid in table:
        yield Case("check9", name, argv, files, invalid)


# Quantization configs: skip lists that take exponential time, other shapes -------------------------

def quant9_cases() -> Iterator[Case]:
    mem = ["memory", "{d}/m", "--gpus", "1", "--format", "json"]
    config = llama_config()

    def cfg(q: object, **extra: object) -> dict[str, FileSpec]:
        return {"m/config.json": json.dumps({**config, "quantization_config": q, **extra}, allow_nan=True)}

    fp8 = {"quant_method": "fp8", "weight_block_size": [128, 128]}
    ct = {"quant_method": "compressed-tensors", "config_groups": {"g": {"weights": {"num_bits": 8, "type": "float", "strategy": "channel"}, "targets": ["Linear"]}}}
    slow = ["re:(.|.)*X$", "re:(a|a|a|.)*Z$", "re:" + ".*" * 12 + "Z$", "re:(.*){20}Z", "re:(?:.+)+Z", "re:(\\w|\\d)*Z$", "re:(.?){40}.{40}", "re:([a-z.0-9_]|[a-z])*#"]
    table: list[tuple[str, dict[str, FileSpec], bool | None]] = [
        *[(f"ignore-slow-{i}", cfg({**fp8, "ignored_layers": [p]}), True) for i, p in enumerate(slow)],
        *[(f"ct-ignore-slow-{i}", cfg({**ct, "ignore": [p]}), True) for i, p in enumerate(slow[:3])],
        *[(f"ct-targets-slow-{i}", cfg({**ct, "config_groups": {"g": {**ct["config_groups"]["g"], "targets": [p]}}}), True) for i, p in enumerate(slow[:2])],  # type: ignore[index]
        ("ignore-10000-regexes", cfg({**fp8, "ignored_layers": [f"re:model\\.layers\\.{i}\\..*" for i in range(10_000)]}), None),
        ("ignore-long-literal", cfg({**fp8, "ignored_layers": ["x" * 1_000_000]}), None),
        ("ignore-regex-count-overflow", cfg({**fp8, "ignored_layers": ["re:a{99999999999}"]}), True),
        ("ignore-regex-count-5000-digits", cfg({**fp8, "ignored_layers": ["re:a{" + HUGE_INT + "}"]}), True),
        ("ct-targets-count-overflow", cfg({**ct, "config_groups": {"g": {**ct["config_groups"]["g"], "targets": ["re:a{4294967295}"]}}}), True),  # type: ignore[index]
        ("ignore-regex-lookbehind-var", cfg({**fp8, "ignored_layers": ["re:(?<=a+)b"]}), True),
        ("ignore-regex-backref", cfg({**fp8, "ignored_layers": ["re:(.)\\1"]}), None),
        ("ignore-regex-empty", cfg({**fp8, "ignored_layers": ["re:"]}), None),
        ("ignore-glob-brackets", cfg({**fp8, "ignored_layers": ["[!a]*"]}), None),
        ("ignore-glob-unclosed", cfg({**fp8, "ignored_layers": ["model.layers.[0"]}), None),
        ("awq-bits-4-group-0", cfg({"quant_method": "awq", "bits": 4, "group_size": 0}), None),
        ("gptq-bits-4-group-neg-2", cfg({"quant_method": "gptq", "bits": 4, "group_size": -2}), True),
        ("gptq-group-past-hidden", cfg({"quant_method": "gptq", "bits": 4, "group_size": 1 << 20}), None),
        ("gptq-desc-act-str", cfg({"quant_method": "gptq", "bits": 4, "group_size": 128, "desc_act": "yes"}), None),
        ("gptq-bits-float", cfg({"quant_method": "gptq", "bits": 4.0, "group_size": 128}), True),
        ("quant-method-null", cfg({"quant_method": None, "bits": 4}), True),
        ("quant-method-list", cfg({"quant_method": ["fp8"]}), True),
        ("quant-method-int", cfg({"quant_method": 8}), True),
        ("config-empty-dict", cfg({}), True),
        ("config-false", cfg(False), True),
        ("config-zero", cfg(0), True),
        ("config-nan", cfg(float("nan")), True),
        ("modelopt-nested-not-dict", cfg({"quant_method": "modelopt", "quantization": "NVFP4"}), True),
        ("modelopt-algo-null", cfg({"quant_method": "modelopt", "quant_algo": None}), True),
        ("modelopt-group-0", cfg({"quant_method": "modelopt", "quant_algo": "NVFP4", "group_size": 0}), True),
        ("modelopt-fp8-group", cfg({"quant_method": "modelopt", "quant_algo": "FP8", "group_size": 7}), None),
        ("awq-with-quantization-key", cfg({"quant_method": "awq", "bits": 4, "group_size": 128, "quantization": {"x": 1}}), None),
        ("text-config-quant", cfg(None, text_config={**config, "quantization_config": fp8}), None),
        ("compression-config-key", {"m/config.json": json.dumps({**config, "compression_config": ct})}, None),
        ("quantization-config-and-compression", {"m/config.json": json.dumps({**config, "quantization_config": fp8, "compression_config": ct})}, None),
        ("torch-dtype-float8", {"m/config.json": json.dumps({**config, "torch_dtype": "float8_e4m3fn"})}, None),
        ("torch-dtype-int", {"m/config.json": json.dumps({**config, "torch_dtype": 16})}, True),
        ("torch-dtype-nonsense", {"m/config.json": json.dumps({**config, "torch_dtype": "float3"})}, True),
        ("fp8-with-dtype-flag-int4", {**cfg(fp8)}, None),
    ]
    for name, files, invalid in table:
        argv = [*mem, "--weight-dtype", "int4"] if name == "fp8-with-dtype-flag-int4" else mem
        yield Case("quant9", name, argv, files, invalid)
    # the same through sweep and plan (a skip list is matched once per module and layout)
    for name in ("ignore-slow-0", "ignore-slow-2"):
        q = {**fp8, "ignored_layers": [slow[0] if name.endswith("0") else slow[2]]}
        yield Case("quant9", f"plan-{name}", ["plan", "{d}/m", "--gpus", "8", "--jobs", "1", *SMALL, "--arrival", "batch"], cfg(q), True)


# Checkpoints with a consolidated copy beside the shards --------------------------------------------

def st9_cases() -> Iterator[Case]:
    mem = ["memory", "{d}/m", "--gpus", "1", "--format", "json"]
    cfg = {"m/config.json": MODEL}
    shards = {f"m/{SHARDS[0]}": _st({"a": GOOD["w"]}), f"m/{SHARDS[1]}": _st({"b": GOOD["w"]})}
    big = {"w": {"dtype": "BF16", "shape": [4, 4], "data_offsets": [0, 32]}}
    table: list[tuple[str, dict[str, FileSpec], bool | None]] = [
        ("index-plus-consolidated", {"m/model.safetensors.index.json": INDEX, **shards, "m/consolidated.safetensors": _st(big, b"\0" * 32)}, False),
        ("index-plus-adapter", {"m/model.safetensors.index.json": INDEX, **shards, "m/adapter_model.safetensors": _st(GOOD)}, False),
        ("index-names-shard-in-subfolder", {"m/model.safetensors.index.json": json.dumps({"weight_map": {"a": "sub/x.safetensors"}}), "m/sub/x.safetensors": _st(GOOD)}, None),
        ("index-shard-path-traversal", {"m/model.safetensors.index.json": json.dumps({"weight_map": {"a": "../x.safetensors"}}), "x.safetensors": _st(GOOD), "m/y.safetensors": _st(GOOD)}, True),
        ("index-weight-map-empty", {"m/model.safetensors.index.json": json.dumps({"weight_map": {}}), **shards}, None),
        ("index-total-size-wrong", {"m/model.safetensors.index.json": json.dumps({"metadata": {"total_size": 10**12}, "weight_map": {"a": SHARDS[0], "b": SHARDS[1]}}), **shards}, None),
        ("index-weight-map-nan-key", {"m/model.safetensors.index.json": '{"weight_map": {"a": NaN}}', **shards}, True),
        ("shard-is-dir", {f"m/{SHARDS[0]}": ("dir",)}, True),
        ("shard-symlink-dev-zero", {"m/model.safetensors": ("symlink", "/dev/zero")}, True),
        ("shard-symlink-loop", {"m/model.safetensors": ("symlink", "model.safetensors")}, True),
        ("shard-symlink-dangling", {"m/model.safetensors": ("symlink", "nowhere.safetensors")}, True),
        ("header-dup-key", {"m/model.safetensors": _st(b'{"w": {"dtype": "BF16", "shape": [2, 2], "data_offsets": [0, 8]}, "w": {"dtype": "BF16", "shape": [2, 2], "data_offsets": [0, 8]}}')}, None),  # serde keeps the last, as json
        ("header-shape-huge-dims", {"m/model.safetensors": _st({"w": {"dtype": "BF16", "shape": [2**62, 2**62, 0], "data_offsets": [0, 0]}}, b"")}, None),
        ("header-shape-float", {"m/model.safetensors": _st({"w": {"dtype": "BF16", "shape": [2.0, 2], "data_offsets": [0, 8]}})}, True),
        ("header-shape-5000-digits", {"m/model.safetensors": _st(('{"w": {"dtype": "BF16", "shape": [' + HUGE_INT + ', 0], "data_offsets": [0, 0]}}').encode(), b"")}, True),
        ("header-dtype-lower", {"m/model.safetensors": _st({"w": {"dtype": "bf16", "shape": [2, 2], "data_offsets": [0, 8]}})}, True),
        ("header-extra-entry-key", {"m/model.safetensors": _st({"w": {**GOOD["w"], "extra": 1}})}, None),
        ("header-name-empty", {"m/model.safetensors": _st({"": GOOD["w"]})}, None),
        ("header-length-zero", {"m/model.safetensors": b"\0" * 8}, True),
        ("header-length-max-u64", {"m/model.safetensors": b"\xff" * 8 + b"{}"}, True),
        ("header-f4-odd-elements", {"m/model.safetensors": _st({"w": {"dtype": "F4", "shape": [3], "data_offsets": [0, 2]}}, b"\0\0")}, True),
        ("header-f6", {"m/model.safetensors": _st({"w": {"dtype": "F6_E2M3", "shape": [4], "data_offsets": [0, 3]}}, b"\0" * 3)}, None),
    ]
    for name, files, invalid in table:
        yield Case("st9", name, mem, {**cfg, **files}, invalid)
    yield Case("st9", "sweep-index-plus-consolidated", ["sweep", "{d}/m", *SMALL, "--concurrency", "4", "--gpus", "1"], {**cfg, "m/model.safetensors.index.json": INDEX, **shards, "m/consolidated.safetensors": _st(big, b"\0" * 32)}, False)


# Outputs over a checkpoint's other files and the inputs a spec names ---------------------------------

def files9_cases() -> Iterator[Case]:
    runs = _lines(RUNS)
    cal_m = ["calibrate", "{d}/r.json", "--model", "{d}/m", "--gpu", "h100-sxm", "-o"]
    spec_m = SPEC.replace('model = "llama-3.1-8b"', 'model = "m"')
    for model_file in ("quantize_config.json", "tf_model.h5", "flax_model.msgpack", "tokenizer.model.v3", "tekken.json", "adapter_config.json", "model.npz", "sentencepiece.bpe.model"):
        yield Case("files9", f"calibrate-out-over-{model_file}", [*cal_m, "{d}/m/" + model_file, "--force"],
                   {"r.json": runs, "m/config.json": MODEL, f"m/{model_file}": "keep"}, True)
        yield Case("files9", f"check-junit-over-{model_file}", ["check", "{d}/s.toml", "--junit", "{d}/m/" + model_file, "--force"],
                   {"s.toml": spec_m, "m/config.json": MODEL, f"m/{model_file}": "keep"}, True)
    yield Case("files9", "check-junit-over-index-backup", ["check", "{d}/s.toml", "--junit", "{d}/m/model.safetensors.index.json.bak", "--force"],
               {"s.toml": spec_m, "m/config.json": MODEL, "m/model.safetensors.index.json.bak": "old"}, None, replaced=("m/model.safetensors.index.json.bak",))
    spec_trace = SPEC.replace("isl = 100\nosl = 100\n", "").replace("num_requests = 20\n", "").replace('arrival = "batch"\n', "").replace("[scenario.workload]\n", '[scenario.workload]\ntrace = "sub/t.jsonl"\n').replace("concurrency = 4", "concurrency = 2").replace("no_preemption_at = 4", "no_preemption_at = 2")
    spec_model = SPEC.replace('model = "llama-3.1-8b"', 'model = "m"')
    spec_cal = _scenario('calibration = "c.toml"')
    table: list[tuple[str, list[str], dict[str, FileSpec], bool | None, tuple[str, ...]]] = [
        ("check-junit-over-spec-trace-relative", ["check", "{d}/s.toml", "--junit", "{d}/sub/t.jsonl", "--force"], {"s.toml": spec_trace, "sub/t.jsonl": _lines(PLAIN_ROWS)}, True, ()),
        ("check-junit-over-spec-trace-dotted", ["check", "{d}/s.toml", "--junit", "{d}/sub/../sub/./t.jsonl", "--force"], {"s.toml": spec_trace, "sub/t.jsonl": _lines(PLAIN_ROWS)}, True, ()),
        ("check-markdown-over-spec-model-config", ["check", "{d}/s.toml", "--markdown", "{d}/m/config.json", "--force"], {"s.toml": spec_model, "m/config.json": MODEL}, True, ()),
        ("check-markdown-over-model-safetensors", ["check", "{d}/s.toml", "--markdown", "{d}/m/model.safetensors", "--force"], {"s.toml": spec_model, "m/config.json": MODEL, "m/model.safetensors": _st(GOOD)}, True, ()),
        ("check-junit-over-model-readme", ["check", "{d}/s.toml", "--junit", "{d}/m/README.md", "--force"], {"s.toml": spec_model, "m/config.json": MODEL, "m/README.md": "x"}, None, ("m/README.md",)),
        ("check-baseline-write-over-calibration", ["check", "{d}/s.toml", "--write-baseline", "{d}/c.toml", "--force"], {"s.toml": spec_cal, "c.toml": STEP_CAL}, True, ()),
        ("check-baseline-write-over-baseline-read", ["check", "{d}/s.toml", "--baseline", "{d}/b.json", "--write-baseline", "{d}/b.json", "--force"], {"s.toml": SPEC, "b.json": "{}"}, True, ()),
        ("check-junit-over-symlink-to-spec", ["check", "{d}/s.toml", "--junit", "{d}/l.xml", "--force"], {"s.toml": SPEC, "l.xml": ("symlink", "s.toml")}, True, ()),
        ("check-junit-in-missing-folder", ["check", "{d}/s.toml", "--junit", "{d}/no/j.xml"], {"s.toml": SPEC}, True, ()),
        ("check-junit-and-markdown-same-via-dots", ["check", "{d}/s.toml", "--junit", "{d}/o.txt", "--markdown", "{d}/./o.txt"], {"s.toml": SPEC}, True, ()),
        ("sweep-plot-over-calibration", [*SW, "--calibration", "{d}/c.toml", "--plot", "{d}/c.toml", "--force"], {"c.toml": STEP_CAL}, True, ()),
        ("sweep-plot-over-model-folder-file", ["sweep", "{d}/m", *SMALL, "--concurrency", "4", "--gpus", "1", "--plot", "{d}/m/tokenizer.json", "--force"], {"m/config.json": MODEL, "m/tokenizer.json": "{}"}, True, ()),
        ("sweep-plot-over-serve-config", [*SW, "--plot", "{d}/x.png", "--force"], {"x.png": "old"}, None, ("x.png",)),
        ("sweep-plot-suffix-upper", [*SW, "--plot", "{d}/x.PNG"], {}, None, ()),
        ("sweep-plot-no-suffix", [*SW, "--plot", "{d}/x"], {}, True, ()),
        ("sweep-plot-suffix-pdf", [*SW, "--plot", "{d}/x.pdf"], {}, True, ()),
        ("plan-plot-over-trace", ["plan", "llama-3.1-8b", "--gpus", "1", "--jobs", "1", "--workload", "{d}/t.jsonl", "--rate", "2", "--plot", "{d}/t.jsonl", "--force"], {"t.jsonl": _lines(PLAIN_ROWS)}, True, ()),
        ("calibrate-out-over-calibration-read", ["calibrate", "{d}/b.csv", "--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--speculative", "ngram:3", "--calibration", "{d}/c.toml", "-o", "{d}/c.toml", "--force"], {"b.csv": CSV_HEAD + CSV_ROWS, "c.toml": STEP_CAL}, True, ()),
        ("calibrate-out-exists-no-force", ["calibrate", "{d}/b.csv", "--model", "llama-3.1-8b", "--gpu", "h100-sxm", "-o", "{d}/o.toml"], {"b.csv": CSV_HEAD + CSV_ROWS, "o.toml": "keep"}, True, ()),
        ("calibrate-out-over-model-folder", [*cal_m, "{d}/m", "--force"], {"r.json": runs, "m/config.json": MODEL}, True, ()),
        ("calibrate-out-over-hist", ["calibrate", "{d}/b.csv", "--model", "llama-3.1-8b", "--gpu", "h100-sxm", "-o", "{d}/b.csv", "--force"], {"b.csv": CSV_HEAD + CSV_ROWS}, True, ()),
        ("memory-has-no-output", ["memory", "{d}/m", "--gpus", "1", "--force"], {"m/config.json": MODEL}, None, ()),
    ]
    for name, argv, files, invalid, replaced in table:
        yield Case("files9", name, argv, files, invalid, replaced=replaced)


# Counts that blow memory or time ------------------------------------------------------------------

def num9_cases() -> Iterator[Case]:
    plan_online = ["plan", "llama-3.1-8b", "--gpus", "1", "--jobs", "1", *SMALL, "--slo-ttft", "2"]
    table: Table = [
        ("sweep-concurrency-1e7", [*SW[:-1], "10000000"], None),
        ("sweep-concurrency-range-wide", [*SW[:-1], "1..10000000"], None),
        ("sweep-concurrency-range-step-tiny", [*SW[:-1], "1..100000:100000"], None),
        ("sweep-concurrency-list-5000", [*SW[:-1], ",".join(str(i) for i in range(1, 5001))], True),
        ("sweep-osl-list-5000", ["sweep", "llama-3.1-8b", "--isl", "100", "--osl", ",".join(str(i) for i in range(1, 5001)), "--num-requests", "20", "--concurrency", "4"], True),
        ("sweep-num-requests-1e7", ["sweep", "llama-3.1-8b", "--isl", "100", "--osl", "100", "--num-requests", "10000000", "--concurrency", "4"], None),
        ("sweep-num-requests-1e7-batch", ["sweep", "llama-3.1-8b", "--isl", "100", "--osl", "100", "--num-requests", "10000000", "--concurrency", "4", "--arrival", "batch"], None),
        ("sweep-clients-1e7", [*SW, "--clients", "10000000"], None),
        ("sweep-rate-1e9", [*SW, "--rate", "1e9"], None),
        ("sweep-rate-1e-300", [*SW, "--rate", "1e-300"], None),
        ("sweep-osl-1e8", ["sweep", "llama-3.1-8b", "--isl", "100", "--osl", "100000000", "--num-requests", "20", "--concurrency", "4"], True),
        ("sweep-osl-1e8-allow-long", ["sweep", "llama-3.1-8b", "--isl", "100", "--osl", "100000000", "--num-requests", "20", "--concurrency", "4", "--allow-long-max-model-len"], None),
        ("sweep-isl-1e8-allow-long", ["sweep", "llama-3.1-8b", "--isl", "100000000", "--osl", "10", "--num-requests", "20", "--concurrency", "4", "--allow-long-max-model-len"], None),
        ("sweep-max-model-len-1e9-allow-long", [*SW, "--max-model-len", "1000000000", "--allow-long-max-model-len"], None),
        ("sweep-block-1", [*SW, "--block-size", "1"], None),
        ("sweep-max-num-seqs-1e7", [*SW, "--max-num-seqs", "10000000"], None),
        ("sweep-batched-tokens-1e9", [*SW, "--max-num-batched-tokens", "1000000000"], None),
        ("sweep-batched-tokens-1", [*SW, "--max-num-batched-tokens", "1"], True),
        ("sweep-gpus-1e6-dp", ["sweep", "llama-3.1-8b", *SMALL, "--concurrency", "4", "--gpus", "1000000"], True),
        ("sweep-layout-dp4096", ["sweep", "llama-3.1-8b", *SMALL, "--concurrency", "4", "--layout", "dp4096"], None),
        ("sweep-kv-cache-memory-1e-300", [*SW, "--kv-cache-memory", "1e-300GiB"], True),
        ("sweep-kv-cache-memory-1PiB", [*SW, "--kv-cache-memory", "1PiB"], True),
        ("sweep-swap-space-1e300", [*SW, "--preemption", "swap", "--swap-space", "1e300GiB"], True),
        ("sweep-gpu-total-memory-1TiB", [*SW, "--gpu-total-memory", "1TiB"], None),
        ("sweep-gpu-total-memory-1MiB", [*SW, "--gpu-total-memory", "1MiB"], True),
        ("sweep-think-1e-300", [*SW_SESS, "--clients", "4", "--think-time", "1e-300"], None),
        ("sweep-turns-1e6", [*SW_SESS, "--clients", "4", "--turns", "1000000"], None),
        ("sweep-context-1e9", [*SW_SESS, "--clients", "4", "--context", "1000000000"], True),
        ("sweep-scheduler-recv-1e9", [*SW, "--engine", "sglang", "--scheduler-recv-interval", "1000000000"], None),
        ("sweep-spec-acceptance-1000", [*SW, "--speculative", "ngram:3", "--spec-acceptance", ",".join(["0.5"] * 1000)], True),
        ("sweep-spec-acceptance-above-1", [*SW, "--speculative", "ngram:3", "--spec-acceptance", "1.5,0.5,0.5"], True),
        ("sweep-engine-version-5000", [*SW, "--engine-version", "0." + HUGE_INT], True),
        ("sweep-engine-version-huge-minor", [*SW, "--engine-version", "0.99999999999999999999"], None),
        ("plan-rate-1e7", [*plan_online, "--rate", "1e7"], None),
        ("plan-rate-1e5-fleet", [*plan_online, "--rate", "100000", "--gpu", "h100-sxm,b200"], None),
        ("plan-clients-1e7", [*plan_online, "--clients", "10000000"], None),
        ("plan-headroom-1e-300", [*plan_online, "--rate", "2", "--headroom", "1e-300"], None),
        ("plan-nodes-1e6", ["plan", "llama-3.1-8b", "--jobs", "1", *SMALL, "--arrival", "batch", "--nodes", "1000000"], True),
        ("plan-gpus-1e6", ["plan", "llama-3.1-8b", "--jobs", "1", *SMALL, "--arrival", "batch", "--gpus", "1000000"], True),
        ("plan-jobs-1e6", ["plan", "llama-3.1-8b", "--gpus", "1", "--jobs", "1000000", *SMALL, "--arrival", "batch"], None),
        ("plan-slo-ttft-1e-300", [*plan_online[:-2], "--rate", "2", "--slo-ttft", "1e-300"], None),
        ("plan-slo-tpot-1e-300", [*plan_online, "--rate", "2", "--slo-tpot", "1e-300"], None),
        ("plan-batch-num-requests-1e7", ["plan", "llama-3.1-8b", "--gpus", "1", "--jobs", "1", "--isl", "100", "--osl", "100", "--num-requests", "10000000", "--arrival", "batch"], None),
        ("memory-gpus-1e6", ["memory", "llama-3.1-8b", "--gpus", "1000000"], True),
        ("memory-layout-all-512", ["memory", "llama-3.1-8b", "--gpus", "512", "--layout", "all"], None),
        ("memory-max-model-len-1e9-allow", ["memory", "llama-3.1-8b", "--gpus", "1", "--max-model-len", "1000000000", "--allow-long-max-model-len"], None),
        ("memory-max-num-seqs-1e9", ["memory", "llama-3.1-8b", "--gpus", "1", "--max-num-seqs", "1000000000"], None),
        ("calibrate-gpus-1e6", [*CAL, "--gpus", "1000000"], True),
    ]
    for name, argv, invalid in table:
        files = {"r.json": _lines(RUNS)} if argv[0] == "calibrate" else {}
        yield Case("num9", name, argv, files, invalid)


# Options each valid, nonsense together --------------------------------------------------------------

def combo9_cases() -> Iterator[Case]:
    plan_b = ["plan", "llama-3.1-8b", "--gpus", "1", "--jobs", "1", *SMALL, "--arrival", "batch"]
    table: Table = [
        ("sweep-slo-batch", [*SW, "--arrival", "batch", "--slo-ttft", "1"], None),
        ("sweep-headroom", [*SW, "--headroom", "0.2"], True),
        ("sweep-objective", [*SW, "--objective", "cost"], True),
        ("plan-batch-headroom", [*plan_b, "--headroom", "0.3"], True),
        ("plan-batch-slo", [*plan_b, "--slo-ttft", "1"], None),
        ("plan-batch-plot", [*plan_b, "--plot", "{d}/p.png"], None),
        ("plan-online-objective-makespan", [*ONLINE, "--objective", "makespan"], True),
        ("plan-layout-and-nodes", [*plan_b, "--layout", "tp8", "--nodes", "1"], None),
        ("plan-serve-command-other-model", [*ONLINE, "--serve-command", "vllm serve Qwen/Qwen3-8B"], True),
        ("plan-serve-command-and-engine-other", [*ONLINE, "--engine", "sglang", "--serve-command", "vllm serve meta-llama/Llama-3.1-8B-Instruct"], True),
        ("plan-serve-command-5000-flags", [*ONLINE, "--serve-command", "vllm serve meta-llama/Llama-3.1-8B-Instruct " + "--enforce-eager " * 5000], None),
        ("plan-serve-command-unbalanced-quote", [*ONLINE, "--serve-command", "vllm serve 'meta-llama/Llama-3.1-8B-Instruct"], True),
        ("sweep-serve-command-tp-vs-layout", [*SW, "--layout", "tp2", "--gpus", "2", "--serve-command", "vllm serve meta-llama/Llama-3.1-8B-Instruct --tensor-parallel-size 4"], True),
        ("sweep-serve-command-max-model-len-vs-flag", [*SW, "--max-model-len", "4096", "--serve-command", "vllm serve meta-llama/Llama-3.1-8B-Instruct --max-model-len 8192"], True),
        ("sweep-serve-command-gmu-2", [*SW, "--serve-command", "vllm serve meta-llama/Llama-3.1-8B-Instruct --gpu-memory-utilization 2"], True),
        ("sweep-serve-command-gmu-nan", [*SW, "--serve-command", "vllm serve meta-llama/Llama-3.1-8B-Instruct --gpu-memory-utilization nan"], True),
        ("sweep-serve-command-max-num-seqs-huge", [*SW, "--serve-command", "vllm serve meta-llama/Llama-3.1-8B-Instruct --max-num-seqs " + HUGE_INT], True),
        ("sweep-serve-command-block-size-0", [*SW, "--serve-command", "vllm serve meta-llama/Llama-3.1-8B-Instruct --block-size 0"], True),
        ("sweep-serve-command-kv-offload", [*SW, "--serve-command", "vllm serve meta-llama/Llama-3.1-8B-Instruct --kv-offloading-size 64", "--offload", "cpu:32GiB"], None),
        ("sweep-serve-command-sglang-mem-fraction-2", [*SW, "--engine", "sglang", "--serve-command", "python -m sglang.launch_server --model-path meta-llama/Llama-3.1-8B-Instruct --mem-fraction-static 2"], True),
        ("sweep-sglang-with-gmu", [*SW, "--engine", "sglang", "--gpu-memory-utilization", "0.9"], None),
        ("sweep-vllm-with-mem-fraction", [*SW, "--mem-fraction-static", "0.8"], None),
        ("sweep-trtllm-with-kv-cache-memory", [*SW, "--engine", "trtllm", "--kv-cache-memory", "4GiB"], None),
        ("sweep-kv-cache-memory-and-gmu", [*SW, "--kv-cache-memory", "4GiB", "--gpu-memory-utilization", "0.5"], None),
        ("sweep-kv-cache-memory-past-gpu", [*SW, "--kv-cache-memory", "200GiB"], True),
        ("sweep-gpu-total-memory-past-catalog", [*SW, "--gpu-total-memory", "500GiB"], None),
        ("sweep-kv-dtype-fp8-on-a100", ["sweep", "llama-3.1-8b", *SMALL, "--concurrency", "4", "--gpu", "a100-sxm-80gb", "--kv-cache-dtype", "fp8"], None),
        ("sweep-weight-nvfp4-on-h100", [*SW, "--weight-dtype", "nvfp4"], None),
        ("sweep-weight-mxfp4-dense", [*SW, "--weight-dtype", "mxfp4"], None),
        ("sweep-speculative-mtp-on-llama", [*SW, "--speculative", "mtp:3"], True),
        ("sweep-spec-acceptance-and-length", [*SW, "--speculative", "ngram:3", "--spec-acceptance", "0.8,0.6,0.4", "--spec-accept-length", "2.5"], None),
        ("sweep-spec-length-past-k", [*SW, "--speculative", "ngram:3", "--spec-accept-length", "5"], True),
        ("sweep-spec-overlap-without-spec", [*SW, "--spec-overlap"], None),
        ("sweep-attention-dp-balance-dense", [*SW, "--engine", "trtllm", "--attention-dp-balance", "on"], True),
        ("sweep-routing-on-one-replica", [*SW, "--routing", "least-loaded"], None),
        ("sweep-all2all-on-dense", [*SW, "--all2all-backend", "deepep"], None),
        ("sweep-step-source-kernels-on-mi300x", ["sweep", "llama-3.1-8b", *SMALL, "--concurrency", "4", "--gpu", "mi300x", "--step-source", "kernels"], None),
        ("sweep-overlap-schedule-vllm", [*SW, "--no-overlap-schedule"], None),
        ("sweep-enforce-eager-sglang", [*SW, "--engine", "sglang", "--enforce-eager"], None),
        ("sweep-engine-version-v0-on-vllm", [*SW, "--engine", "vllm", "--engine-version", "0.6.0"], None),
        ("sweep-engine-version-v1-on-v0", [*SW, "--engine", "vllm-v0", "--engine-version", "0.10.0"], None),
        ("sweep-isl-list-with-session", [*SW_SESS, "--clients", "4", "--isl", "100,200"], True),
        ("sweep-osl-hist-with-session", [*SW_SESS, "--clients", "4", "--osl", "hist:{d}/h.csv"], None),
        ("sweep-workload-preset-and-trace-file-name", ["sweep", "llama-3.1-8b", "--workload", "chat", "--num-requests", "20", "--concurrency", "4"], False),
        ("sweep-workload-file-named-like-preset", ["sweep", "llama-3.1-8b", "--workload", "chat.jsonl", "--num-requests", "20", "--concurrency", "4"], True),
        ("memory-offload-flag", ["memory", "llama-3.1-8b", "--gpus", "1", "--disagg", "1p:tp1,1d:tp1"], True),
        ("memory-calibration-step-only", ["memory", "llama-3.1-8b", "--gpus", "1", "--calibration", "{d}/c.toml"], None),
        ("calibrate-log-with-speculative", ["calibrate", "{d}/r.json", "--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--speculative", "ngram:3"], None),
        ("calibrate-calibration-without-speculative", ["calibrate", "{d}/r.json", "--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--calibration", "{d}/c.toml"], True),
        ("calibrate-engine-version-on-log", ["calibrate", "{d}/log.txt", "--model", "llama-3.1-8b", "--engine-version", "0.8.5"], True),
        ("check-with-sweep-flags", ["check", "{d}/s.toml", "--gpus", "2"], True),
    ]
    for name, argv, invalid in table:
        files: dict[str, FileSpec] = {}
        if "{d}/c.toml" in argv:
            files["c.toml"] = STEP_CAL
        if "{d}/r.json" in argv:
            files["r.json"] = _lines(RUNS)
        if "{d}/h.csv" in " ".join(argv):
            files["h.csv"] = "tokens,count\n50,3\n100,5\n"
        if "{d}/log.txt" in argv:
            files["log.txt"] = "INFO vllm\n"
        if "{d}/s.toml" in argv:
            files["s.toml"] = SPEC
        yield Case("combo9", name, argv, files, invalid)
    yield Case("combo9", "sweep-sess-disagg-offload-calibration-force", [*SW_SESS, "--clients", "4", *DISAGG, "--offload", "cpu:64GiB", "--calibration", "{d}/c.toml", "--force"],
               {"c.toml": STEP_CAL.replace('engine = "vllm"', 'engine = "sglang"')}, None)
    yield Case("combo9", "sweep-sessions-trace-and-preset", [*SW_SESS, "--workload", "{d}/t.jsonl"], {"t.jsonl": _lines(SESSION_ROWS)}, None)


SURFACES9: dict[str, Callable[[], Iterator[Case]]] = {
    "calib9": calib9_cases, "trace9": trace9_cases, "offload9": offload9_cases,
    "disagg9": disagg9_cases, "price9": price9_cases, "check9": check9_cases,
    "quant9": quant9_cases, "st9": st9_cases, "files9": files9_cases, "num9": num9_cases,
    "combo9": combo9_cases,
}
# fmt: on
