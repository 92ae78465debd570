"""The seventh bad-input campaign's surfaces (issue 23), run by `fuzz_surfaces.py`:

    PYTHONPATH=. python benchmarks/fuzz_surfaces.py moe7 prefix7 overhead7 gpulist7 calib7 \
        spec7 quant7 st7 trace7 num7 combo7 out7

What the six campaigns before did not try, on the surfaces changed since 2026-12-05: the MoE
backend against engines, models, GPUs and serve commands (moe7); prefix caching against
preemption, offload, disaggregation and every workload shape (prefix7); the request overhead and
the KV transfer cost against calibrations, engines and plans (overhead7); GPU lists with paths,
spaces, cases and price lists (gpulist7); calibration inputs against the options that frame them
(calib7); a check scenario's keys against each other (spec7); quantization_config variants and
side files (quant7); sharded and padded safetensors checkpoints (st7); session and plain traces
against the workload options (trace7); numbers at their limits on plan, memory and calibrate,
whose flags the earlier campaigns tried on sweep only (num7); options across plan, sweep, check,
calibrate and memory no campaign paired (combo7); outputs that name another input of the run
(out7).
"""

# Data tables: one case per line, some past 100 characters, some with look-alike letters on purpose.
# ruff: noqa: E501, RUF001
from __future__ import annotations

import json
import os
import struct
from collections.abc import Callable, Iterator
from pathlib import Path

from fuzz_harness import Case, FileSpec
from fuzz_surfaces import (
    CAL_OK,
    HUGE_INT,
    PLAIN_ROWS,
    RUNS,
    SESSION_ROWS,
    SMALL,
    SPEC,
    llama_config,
)

# fmt: off
SW = ["sweep", "llama-3.1-8b", *SMALL, "--concurrency", "4"]
MOE = ["sweep", "qwen3-30b-a3b", *SMALL, "--concurrency", "4"]
R1 = ["sweep", "deepseek-r1", *SMALL, "--concurrency", "4", "--gpu", "b200", "--gpus", "8"]
OSS = ["sweep", "gpt-oss-20b", *SMALL, "--concurrency", "4", "--gpu", "h100-sxm"]
PLAN = ["plan", "llama-3.1-8b", "--jobs", "1", *SMALL]
ONLINE = [*PLAN, "--gpus", "1", "--rate", "2", "--slo-ttft", "2"]
BATCH = [*PLAN, "--gpus", "1", "--arrival", "batch"]
FLEET = [*PLAN, "--rate", "2", "--slo-ttft", "2", "--gpus", "1"]
DISAGG_PLAN = [*PLAN, "--gpus", "2", "--rate", "2", "--slo-ttft", "2", "--disagg"]
SESS = ["--workload", "multiturn-chat", "--num-requests", "20"]
SW_SESS = ["sweep", "llama-3.1-8b", *SESS, "--concurrency", "4"]
MEM = ["memory", "llama-3.1-8b", "--gpus", "1"]
CAL = ["calibrate", "{d}/r.json", "--model", "llama-3.1-8b", "--gpu", "h100-sxm"]
TRACE = ["sweep", "llama-3.1-8b", "--workload", "{d}/t.jsonl", "--concurrency", "4"]
DISAGG = ["--disagg", "1p:tp1,1d:tp1"]
Table = list[tuple[str, list[str], bool | None]]


def _lines(rows: list[dict[str, object]]) -> str:
    return "\n".join(json.dumps(r, allow_nan=True) for r in rows) + "\n"


def _cases(surface: str, table: Table, files: dict[str, FileSpec] | None = None) -> Iterator[Case]:
    for name, argv, invalid in table:
        yield Case(surface, name, argv, dict(files or {}), invalid)


# The MoE backend --------------------------------------------------------------------------------


def moe7_cases() -> Iterator[Case]:
    table: Table = []
    for value, invalid in [("", True), (" ", True), ("nan", True), ("TRTLLM", None), (" cutlass ", None),
                           ("deep-gemm", True), ("trtllm,cutlass", True), ("ｔｒｔｌｌｍ", True),
                           ("auto", None), ("AUTO", None), ("marlin\x00", True), ("x" * 5000, True)]:
        table.append((f"trtllm-r1-{value[:10]!r}", [*R1, "--engine", "trtllm", "--moe-backend", value], invalid))
    serve = "python -m sglang.launch_server --model-path deepseek-ai/DeepSeek-R1 --tp 8 --moe-runner-backend"
    table += [
        ("vllm-r1-trtllm", [*R1, "--moe-backend", "trtllm"], None),
        ("sglang-r1-flashinfer-trtllm", [*R1, "--engine", "sglang", "--moe-backend", "flashinfer_trtllm"], None),
        ("sglang-r1-wideep", [*R1, "--engine", "sglang", "--moe-backend", "wideep"], None),
        ("trtllm-r1-marlin", [*R1, "--engine", "trtllm", "--moe-backend", "marlin"], None),
        ("vllm-oss-marlin-h100", [*OSS, "--moe-backend", "marlin"], None),
        ("vllm-oss-marlin-b200", [*OSS[:-2], "--gpu", "b200", "--moe-backend", "marlin"], None),
        ("vllm-oss-marlin-mi300x", [*OSS[:-2], "--gpu", "mi300x", "--moe-backend", "marlin"], None),
        ("vllm-oss-marlin-bf16", [*OSS, "--moe-backend", "marlin", "--weight-dtype", "bf16"], None),
        ("vllm-qwen-marlin", [*MOE, "--gpus", "2", "--moe-backend", "marlin"], None),
        ("dense-marlin", [*SW, "--moe-backend", "marlin"], True),
        ("dense-auto", [*SW, "--moe-backend", "auto"], None),
        ("memory-dense-moe-backend", [*MEM, "--moe-backend", "cutlass"], True),
        ("memory-moe-backend-moe", ["memory", "qwen3-30b-a3b", "--gpus", "2", "--moe-backend", "cutlass"], True),
        ("kernels-moe-backend", [*R1, "--engine", "trtllm", "--moe-backend", "cutlass", "--step-source", "kernels"], None),
        ("moe-backend-disagg", [*R1[:-2], "--gpus", "16", "--engine", "trtllm", "--moe-backend", "cutlass", "--disagg", "1p:tp8,1d:tp8"], None),
        ("moe-backend-serve-agree", [*R1[:-4], "--gpu", "b200", "--serve-command", f"{serve} triton"], None),
        ("moe-backend-serve-disagree", [*R1[:-4], "--gpu", "b200", "--moe-backend", "cutlass", "--serve-command", f"{serve} triton"], True),
        ("moe-backend-serve-bad", [*R1[:-4], "--gpu", "b200", "--serve-command", f"{serve} nope"], True),
        ("moe-backend-serve-vllm-flag", [*R1[:-4], "--gpu", "b200", "--serve-command", "vllm serve deepseek-ai/DeepSeek-R1 --tensor-parallel-size 8 --moe-backend marlin"], None),
        ("plan-moe-backend-fleet", ["plan", "qwen3-30b-a3b", "--jobs", "1", *SMALL, "--rate", "2", "--slo-ttft", "2", "--gpus", "2", "--layout", "tp2", "--gpu", "h100-sxm,b200", "--engine", "trtllm", "--moe-backend", "cutlass"], None),
    ]
    yield from _cases("moe7", table)
    spec = SPEC.replace('model = "llama-3.1-8b"', 'model = "qwen3-30b-a3b"').replace('layout = "tp1"', 'layout = "tp2"\ngpus = 2')
    for value, invalid in [('"cutlass"', None), ('""', True), ("1", True), ('"nope"', True), ("true", True)]:
        yield Case("moe7", f"spec-moe_backend={value}", ["check", "{d}/s.toml"],
                   {"s.toml": spec.replace('engine = "vllm"', f'engine = "trtllm"\nmoe_backend = {value}')}, invalid)
    yield Case("moe7", "spec-moe_backend-dense", ["check", "{d}/s.toml"],
               {"s.toml": SPEC.replace('engine = "vllm"', 'engine = "trtllm"\nmoe_backend = "cutlass"')}, True)


# Prefix caching ------------------------------------------------------------------------------------


def prefix7_cases() -> Iterator[Case]:
    table: Table = []
    for value, invalid in [("on", False), ("off", False), ("On", None), ("", True), ("1", True),
                           ("true", True), ("on,off", True), ("ｏｎ", True), (" on", None)]:
        table.append((f"value-{value!r}", [*SW_SESS, "--clients", "4", "--prefix-caching", value], invalid))
    for engine in ("vllm", "vllm-v0", "sglang", "trtllm"):
        for pre in ("recompute", "swap"):
            table.append((f"{engine}-{pre}-on-sessions", [*SW_SESS, "--clients", "4", "--engine", engine, "--preemption", pre, "--prefix-caching", "on"], None))
        table.append((f"{engine}-off-offload", [*SW_SESS, "--clients", "4", "--engine", engine, "--prefix-caching", "off", "--offload", "cpu:64GiB"], None))
    sess = [*SW_SESS, "--clients", "4"]
    serve = "vllm serve meta-llama/Llama-3.1-8B"
    table += [
        ("on-batch-single-turn", [*SW, "--arrival", "batch", "--prefix-caching", "on"], None),
        ("on-rate", [*SW, "--rate", "2", "--prefix-caching", "on"], None),
        ("on-swap-small-kv", [*sess, "--preemption", "swap", "--prefix-caching", "on", "--kv-cache-memory", "1GiB"], None),
        ("on-recompute-tiny-kv", [*sess, "--prefix-caching", "on", "--kv-cache-memory", "0.2GiB"], None),
        ("on-disagg", [*sess, *DISAGG, "--prefix-caching", "on"], None),
        ("off-disagg-offload", [*sess, *DISAGG, "--prefix-caching", "off", "--offload", "cpu:64GiB"], None),
        ("on-disagg-write-back", [*sess, *DISAGG, "--offload", "cpu:64GiB", "--offload-policy", "write-back"], None),
        ("on-dp2-least-loaded", [*sess, "--gpus", "2", "--layout", "dp2", "--routing", "least-loaded", "--prefix-caching", "on"], None),
        ("on-spec-ngram", [*sess, "--prefix-caching", "on", "--speculative", "ngram:3", "--spec-accept-length", "1.5"], None),
        ("on-block-1", [*sess, "--prefix-caching", "on", "--block-size", "1"], None),
        ("on-block-1024", [*sess, "--prefix-caching", "on", "--block-size", "1024"], None),
        ("on-max-seqs-1", [*sess, "--prefix-caching", "on", "--max-num-seqs", "1"], None),
        ("on-batched-tokens-16", [*sess, "--prefix-caching", "on", "--max-num-batched-tokens", "16"], None),
        ("plan-online-on", [*ONLINE, *SESS, "--prefix-caching", "on"], None),
        ("plan-batch-on", [*BATCH, "--prefix-caching", "on"], None),
        # with a session preset the disaggregated online plan runs 38 s of CPU (past the
        # harness's 20 s): its cost, not a hang (docs/validation.md, the seventh campaign)
        ("plan-disagg-on", [*DISAGG_PLAN, "--prefix-caching", "on"], None),
        ("memory-prefix-caching", [*MEM, "--prefix-caching", "on"], True),
        ("serve-enable-prefix-caching-disagree", [*sess, "--prefix-caching", "off", "--serve-command", f"{serve} --enable-prefix-caching"], True),
        ("serve-no-prefix-caching-disagree", [*sess, "--prefix-caching", "on", "--serve-command", f"{serve} --no-enable-prefix-caching"], True),
        ("serve-sglang-disable-radix", [*sess, "--prefix-caching", "on", "--serve-command", "python -m sglang.launch_server --model-path meta-llama/Llama-3.1-8B --disable-radix-cache"], True),
    ]
    yield from _cases("prefix7", table)
    trace = {"t.jsonl": _lines(SESSION_ROWS)}
    for name, argv, invalid in [
        ("trace-off", [*TRACE, "--prefix-caching", "off"], False),
        ("trace-on-swap", [*TRACE, "--prefix-caching", "on", "--preemption", "swap"], None),
        ("trace-on-clients", [*TRACE, "--prefix-caching", "on", "--clients", "2"], None),
        ("trace-on-tiny-kv", [*TRACE, "--prefix-caching", "on", "--kv-cache-memory", "0.01GiB"], None),
    ]:
        yield Case("prefix7", name, argv, dict(trace), invalid)
    for value, invalid in [('"on"', False), ('"ON"', None), ("true", True), ('""', True), ("1", True)]:
        yield Case("prefix7", f"spec-prefix_caching={value}", ["check", "{d}/s.toml"],
                   {"s.toml": SPEC.replace('engine = "vllm"', f'engine = "vllm"\nprefix_caching = {value}')}, invalid)


# Request overhead and the KV transfer cost ---------------------------------------------------------

OVERHEAD_VALUES = [("0", False), ("-0", None), ("-0.0", None), ("1e-320", None), ("59999.9", None),
                   ("60000", None), ("60000.1", True), ("nan", True), ("inf", True), ("-inf", True),
                   ("1e308", True), (HUGE_INT, True), ("", True), ("٣", None), ("1_000", None), ("0x10", True),
                   ("5ms", True), (" 5", None)]


def overhead7_cases() -> Iterator[Case]:
    table: Table = []
    for value, invalid in OVERHEAD_VALUES:
        tag = value[:10]
        table.append((f"plan-online-{tag}", [*ONLINE, "--request-overhead-ms", value], invalid))
        table.append((f"plan-batch-{tag}", [*BATCH, "--request-overhead-ms", value], invalid))
        table.append((f"kv-transfer-sweep-disagg-{tag}", [*SW, *DISAGG, "--kv-transfer-overhead-ms", value], invalid))
    for engine in ("vllm", "vllm-v0", "sglang", "trtllm"):
        table.append((f"{engine}-default", [*SW, "--engine", engine, "--rate", "2"], False))
        table.append((f"{engine}-zero", [*SW, "--engine", engine, "--rate", "2", "--request-overhead-ms", "0"], False))
    table += [
        ("disagg-overhead", [*SW, *DISAGG, "--request-overhead-ms", "50"], None),
        ("disagg-both-max", [*SW, *DISAGG, "--request-overhead-ms", "60000", "--kv-transfer-overhead-ms", "60000"], None),
        ("plan-disagg-kv-max", [*DISAGG_PLAN, "--kv-transfer-overhead-ms", "60000"], None),
        ("overhead-past-slo", [*ONLINE, "--request-overhead-ms", "5000"], None),
        ("overhead-sessions-clients", [*SW_SESS, "--clients", "4", "--request-overhead-ms", "500"], None),
        ("overhead-serve-sglang", [*SW, "--request-overhead-ms", "5", "--serve-command", "python -m sglang.launch_server --model-path meta-llama/Llama-3.1-8B"], None),
        ("memory-overhead", [*MEM, "--request-overhead-ms", "5"], True),
        ("memory-kv-transfer", [*MEM, "--kv-transfer-overhead-ms", "5"], True),
    ]
    yield from _cases("overhead7", table)
    fitted = CAL_OK + '\n[step_time]\nfixed_s = 0.002\nscale = 1.1\npoints = 3\nsource = "r.json"\nrequest_overhead_s = {v}\n'
    for v, invalid in [("0.005", None), ("nan", True), ("inf", True), ("-0.001", True), ("1e308", True), ('"5"', True), ("61.0", True)]:
        yield Case("overhead7", f"calfile-request_overhead_s={v}", [*SW, "--calibration", "{d}/c.toml"],
                   {"c.toml": fitted.format(v=v)}, invalid)
        yield Case("overhead7", f"calfile-and-flag-{v}", [*SW, "--calibration", "{d}/c.toml", "--request-overhead-ms", "3"],
                   {"c.toml": fitted.format(v=v)}, invalid)


# GPU lists -----------------------------------------------------------------------------------------


def gpulist7_cases() -> Iterator[Case]:
    hw = {"g.toml": "x = 1\n"}
    online = [*PLAN, "--rate", "2", "--slo-ttft", "2"]
    two = ["--gpu", "h100-sxm,h200-sxm"]
    table: Table = [
        ("plan-path-item", [*FLEET, "--gpu", "h100-sxm,{d}/g.toml"], True),
        ("plan-path-only", [*FLEET, "--gpu", "{d}/g.toml"], True),
        ("plan-relative-path", [*FLEET, "--gpu", "h100-sxm,./g.toml"], True),
        ("plan-catalog-stem-path", [*FLEET, "--gpu", "h100-sxm,hardware/h100-sxm.toml"], True),
        ("plan-toml-suffix", [*FLEET, "--gpu", "h100-sxm.toml"], True),
        ("plan-dot", [*FLEET, "--gpu", "."], True),
        ("plan-dotdot", [*FLEET, "--gpu", "h100-sxm,.."], True),
        ("plan-backslash", [*FLEET, "--gpu", "h100-sxm,..\\h200-sxm"], True),
        ("plan-spaces", [*FLEET, "--gpu", " h100-sxm , h200-sxm "], None),
        ("plan-upper-dup", [*FLEET, "--gpu", "h100-sxm,H100-SXM"], True),
        ("plan-trailing-comma", [*FLEET, "--gpu", "h100-sxm,"], True),
        ("plan-only-commas", [*FLEET, "--gpu", ",,"], True),
        ("plan-semicolon", [*FLEET, "--gpu", "h100-sxm;h200-sxm"], True),
        ("plan-tab", [*FLEET, "--gpu", "h100-sxm\th200-sxm"], True),
        ("plan-newline", [*FLEET, "--gpu", "h100-sxm\nh200-sxm"], True),
        ("plan-nul", [*FLEET, "--gpu", "h100-sxm\x00"], True),
        ("plan-fullwidth-comma", [*FLEET, "--gpu", "h100-sxm，h200-sxm"], True),
        ("plan-five", [*FLEET, "--gpu", "h100-sxm,h200-sxm,b200,mi300x,nope"], True),
        ("plan-price-count-short", [*FLEET, *two, "--price-gpu-hour", "3,4,5"], True),
        ("plan-price-empty-item", [*FLEET, *two, "--price-gpu-hour", "3,"], True),
        ("plan-price-nan-item", [*FLEET, *two, "--price-gpu-hour", "3,nan"], True),
        ("plan-price-inf", [*FLEET, "--gpu", "h100-sxm", "--price-gpu-hour", "inf"], True),
        ("plan-price-underscore", [*FLEET, "--gpu", "h100-sxm", "--price-gpu-hour", "1_0"], None),
        ("plan-price-dollar", [*FLEET, "--gpu", "h100-sxm", "--price-gpu-hour", "$3"], True),
        ("plan-price-fullwidth", [*FLEET, "--gpu", "h100-sxm", "--price-gpu-hour", "３"], None),
        ("plan-price-space-list", [*FLEET, *two, "--price-gpu-hour", "3 4"], True),
        ("plan-price-semicolon", [*FLEET, *two, "--price-gpu-hour", "3;4"], True),
        ("plan-price-empty", [*FLEET, "--price-gpu-hour", ""], True),
        ("plan-price-hex", [*FLEET, "--price-gpu-hour", "0x3"], True),
        ("plan-price-huge", [*FLEET, "--price-gpu-hour", HUGE_INT], True),
        ("plan-disagg-gpu-list-path", [*DISAGG_PLAN, "--gpu", "h100-sxm,{d}/g.toml"], True),
        ("plan-batch-gpu-list", [*PLAN, "--arrival", "batch", *two], None),
        ("plan-clients-gpu-list", [*PLAN, "--clients", "4", "--slo-ttft", "2", *two], None),
        ("plan-gpus-not-fitting-one-type", [*online, "--gpus", "16", "--gpu", "h100-sxm,mi300x"], None),
        ("plan-nodes-gpu-list", [*online, "--nodes", "1", *two], None),
        ("plan-layout-gpu-list", [*online, "--layout", "tp1", *two], None),
        ("plan-serve-gpu-list", [*online, *two, "--serve-command", "vllm serve meta-llama/Llama-3.1-8B"], None),
        ("plan-kv-memory-gpu-list", [*online, "--gpu", "h100-sxm,mi300x", "--kv-cache-memory", "70GiB"], None),
        ("plan-total-memory-gpu-list", [*online, "--gpu", "h100-sxm,mi300x", "--gpu-total-memory", "79GiB"], True),
        ("plan-disagg-total-memory-gpu-list", [*DISAGG_PLAN, "--gpu", "h100-sxm,mi300x", "--gpu-total-memory", "79GiB"], True),
        ("sweep-disagg-pool-total-memory", [*SW, "--gpu", "h100-sxm", "--gpu-total-memory", "79GiB", "--disagg", "1p:tp1@mi300x,1d:tp1"], True),
        ("sweep-disagg-pool-own-gpu-total-memory", [*SW, "--gpu", "h100-sxm", "--gpu-total-memory", "79GiB", "--disagg", "1p:tp1@h100-sxm,1d:tp1"], None),
        ("plan-calibration-gpu-list", [*online, *two, "--calibration", "{d}/c.toml"], None),
        ("sweep-gpu-list", [*SW, *two], True),
        ("memory-gpu-list", [*MEM, *two], True),
        ("calibrate-gpu-list", ["calibrate", "{d}/r.json", "--model", "llama-3.1-8b", *two], True),
        ("calibrate-gpu-path", ["calibrate", "{d}/r.json", "--model", "llama-3.1-8b", "--gpu", "{d}/g.toml"], True),
        ("sweep-disagg-at-path", [*SW, "--disagg", "1p:tp1@{d}/g.toml,1d:tp1"], True),
        ("sweep-disagg-at-empty", [*SW, "--disagg", "1p:tp1@,1d:tp1"], True),
        ("sweep-disagg-at-twice", [*SW, "--disagg", "1p:tp1@h100-sxm@h200-sxm,1d:tp1"], True),
        ("sweep-disagg-at-space", [*SW, "--disagg", "1p:tp1@ h100-sxm,1d:tp1"], None),
        ("sweep-disagg-at-upper", [*SW, "--disagg", "1p:tp1@H100-SXM,1d:tp1"], None),
        ("sweep-disagg-at-other", [*SW, "--disagg", "1p:tp1@mi300x,1d:tp1@b200"], None),
    ]
    files: dict[str, FileSpec] = {**hw, "r.json": _lines(RUNS), "c.toml": CAL_OK}
    yield from _cases("gpulist7", table, files)
    spec = SPEC.replace('gpu = "h100-sxm"', 'gpu = "{g}"')
    for g, invalid in [("h100-sxm,h200-sxm", True), ("g.toml", True), ("./g.toml", True), (" h100-sxm", None), ("", True)]:
        yield Case("gpulist7", f"spec-gpu={g!r}", ["check", "{d}/s.toml"], {**hw, "s.toml": spec.replace("{g}", g)}, invalid)


# Calibration inputs against the options that frame them ------------------------------------------


def calib7_cases() -> Iterator[Case]:
    runs = _lines(RUNS)
    csv = "concurrency,isl,osl,output_tok_s,tpot_ms,ttft_ms\n8,1024,128,500,14,150\n32,1024,128,1200,24,300\n64,1024,128,1800,32,500\n"
    csv_cal = ["calibrate", "{d}/b.csv", "--model", "llama-3.1-8b", "--gpu", "h100-sxm"]
    r = {"r.json": runs}

    def each(**changes: object) -> dict[str, FileSpec]:
        return {"r.json": _lines([{**run, **changes} for run in RUNS])}

    table: list[tuple[str, list[str], bool | None, dict[str, FileSpec]]] = [
        ("layout-dp2-gpus1", [*CAL, "--layout", "dp2", "--gpus", "1"], True, r),
        ("layout-tp2-gpus4", [*CAL, "--layout", "tp2", "--gpus", "4"], True, r),
        ("layout-pp2", [*CAL, "--layout", "pp2", "--gpus", "2"], None, r),
        ("layout-list", [*CAL, "--layout", "tp1,tp2"], True, r),
        ("layout-all", [*CAL, "--layout", "all"], True, r),
        ("gpus-0", [*CAL, "--gpus", "0"], True, r),
        ("gpus-huge", [*CAL, "--gpus", HUGE_INT], True, r),
        ("max-model-len-1", [*CAL, "--max-model-len", "1"], True, r),
        ("max-model-len-nan", [*CAL, "--max-model-len", "nan"], True, r),
        ("kv-dtype-fp8", [*CAL, "--kv-cache-dtype", "fp8"], None, r),
        ("weight-dtype-int4", [*CAL, "--weight-dtype", "int4"], None, r),
        ("weight-dtype-bad", [*CAL, "--weight-dtype", "int3"], True, r),
        ("engine-trtllm-vllm-rows", [*CAL, "--engine", "trtllm"], None, r),
        ("engine-bad", [*CAL, "--engine", "tgi"], True, r),
        ("engine-version-future", [*CAL, "--engine-version", "99.0.0"], None, r),  # the newest profile, named
        ("engine-version-empty", [*CAL, "--engine-version", ""], True, r),
        ("speculative-mtp-llama", [*CAL, "--speculative", "mtp:2"], True, r),
        ("speculative-ngram", [*CAL, "--speculative", "ngram:3"], None, r),
        ("speculative-empty", [*CAL, "--speculative", ""], True, r),
        ("calibration-chain", [*CAL, "--calibration", "{d}/c.toml"], None, {**r, "c.toml": CAL_OK}),
        ("calibration-chain-other-model", [*CAL, "--calibration", "{d}/c.toml"], True, {**r, "c.toml": CAL_OK.replace("llama-3.1-8b", "qwen3-8b")}),
        ("calibration-is-input", [*CAL, "--calibration", "{d}/r.json"], True, r),
        ("model-path-folder", ["calibrate", "{d}/r.json", "--model", "{d}/m", "--gpu", "h100-sxm"], None, {**r, "m/config.json": json.dumps(llama_config())}),
        ("model-empty", ["calibrate", "{d}/r.json", "--model", "", "--gpu", "h100-sxm"], True, r),
        ("no-model", ["calibrate", "{d}/r.json", "--gpu", "h100-sxm"], None, r),
        ("csv-no-model", ["calibrate", "{d}/b.csv", "--gpu", "h100-sxm"], True, {"b.csv": csv}),
        ("csv-llama", csv_cal, None, {"b.csv": csv}),
        ("csv-tsv", csv_cal, True, {"b.csv": csv.replace(",", "\t")}),
        ("csv-semicolon", csv_cal, True, {"b.csv": csv.replace(",", ";")}),
        ("csv-header-only", csv_cal, True, {"b.csv": csv.splitlines()[0] + "\n"}),
        ("csv-one-row", csv_cal, None, {"b.csv": "\n".join(csv.splitlines()[:2]) + "\n"}),
        ("csv-isl-0", csv_cal, True, {"b.csv": csv.replace("8,1024", "8,0")}),
        ("csv-concurrency-huge", csv_cal, True, {"b.csv": csv.replace("\n8,", f"\n{HUGE_INT},")}),
        ("csv-isl-past-context", csv_cal, True, {"b.csv": csv.replace("8,1024", "8,10000000")}),
        ("csv-dup-header", csv_cal, True, {"b.csv": csv.replace("tpot_ms,", "tpot_ms,tpot_ms,").replace(",14,", ",14,14,").replace(",24,", ",24,24,").replace(",32,500", ",32,32,500")}),
        ("vllm-mixed-models", CAL, True, {"r.json": _lines([RUNS[0], {**RUNS[1], "model_id": "Qwen/Qwen3-8B"}, RUNS[2]])}),
        ("vllm-mixed-backends", CAL, True, {"r.json": _lines([RUNS[0], {**RUNS[1], "backend": "sglang"}, RUNS[2]])}),
        ("vllm-same-concurrency-differ", CAL, None, {"r.json": _lines([RUNS[0], {**RUNS[0], "output_throughput": 9000.0}, RUNS[2]])}),
        ("vllm-throughput-past-roofline", CAL, True, each(output_throughput=1e9)),
        ("vllm-tpot-1e-9", CAL, True, each(mean_tpot_ms=1e-9)),
        ("vllm-tpot-seconds", CAL, True, {"r.json": _lines([{**run, "mean_tpot_ms": float(str(run["mean_tpot_ms"])) / 1000} for run in RUNS])}),
        ("vllm-concurrency-0", CAL, True, each(max_concurrency=0)),
        ("vllm-request-rate-nan", CAL, True, each(request_rate="nan")),
        ("vllm-request-rate-num", CAL, None, each(request_rate=4.0)),  # under a cap: its clients
        ("vllm-request-rate-no-cap", CAL, True, each(request_rate=4.0, max_concurrency=None)),
        ("vllm-request-rate-neg", CAL, True, each(request_rate=-4.0)),
        ("vllm-duration-0", CAL, None, each(duration=0)),  # not read
        ("vllm-duration-neg", CAL, None, each(duration=-5.0)),
        ("vllm-input-tokens-0", CAL, True, each(total_input_tokens=0)),
        ("vllm-extra-list", CAL, None, each(ttfts=[0.1] * 200, itls=[[0.01]] * 200)),
        ("vllm-json-array", CAL, None, {"r.json": json.dumps(RUNS)}),
        ("vllm-json-array-empty", CAL, True, {"r.json": "[]"}),
        ("vllm-object-of-runs", CAL, True, {"r.json": json.dumps({"a": RUNS[0], "b": RUNS[1]})}),
        ("vllm-deep-nesting", CAL, True, {"r.json": "[" * 200_000 + "]" * 200_000}),
        ("vllm-5000-digit", CAL, True, {"r.json": _lines([RUNS[0]]).replace("200", HUGE_INT, 1)}),
        ("vllm-yaml-suffix", ["calibrate", "{d}/r.yaml", "--model", "llama-3.1-8b", "--gpu", "h100-sxm"], None, {"r.yaml": runs}),
        ("vllm-no-suffix", ["calibrate", "{d}/r", "--model", "llama-3.1-8b", "--gpu", "h100-sxm"], None, {"r": runs}),
        ("two-inputs", ["calibrate", "{d}/r.json", "{d}/r.json", "--model", "llama-3.1-8b", "--gpu", "h100-sxm"], True, r),
        ("input-dir", ["calibrate", "{d}", "--model", "llama-3.1-8b", "--gpu", "h100-sxm"], True, {}),
        # a FIFO nobody writes blocks any reader (cat too): not tried (campaign 4's rule)
        ("input-dev-null", ["calibrate", "/dev/null", "--model", "llama-3.1-8b", "--gpu", "h100-sxm"], True, {}),
        ("input-dash", ["calibrate", "-", "--model", "llama-3.1-8b", "--gpu", "h100-sxm"], True, {}),
        ("output-json-format", [*CAL, "-o", "{d}/o.toml", "--format", "json"], None, r),
        ("output-suffix-json", [*CAL, "-o", "{d}/o.json"], None, r),
        ("output-in-missing-dir", [*CAL, "-o", "{d}/no/o.toml"], True, r),
        ("output-existing", [*CAL, "-o", "{d}/o.toml"], True, {**r, "o.toml": "keep"}),
    ]
    for name, argv, invalid, files in table:
        yield Case("calib7", name, argv, files, invalid)


# A check scenario's keys against each other ---------------------------------------------------------


def _scenario(extra: str = "", workload: str = "", expect: str = "") -> str:
    text = SPEC.replace('engine = "vllm"', 'engine = "vllm"\n' + extra) if extra else SPEC
    if workload:
        text = text.replace("[scenario.workload]\n", "[scenario.workload]\n" + workload + "\n")
    if expect:
        text = text.replace("[scenario.expect]\n", "[scenario.expect]\n" + expect + "\n")
    return text


def spec7_cases() -> Iterator[Case]:
    online = 'arrival = "poisson"\nrate = 2.0'
    sess = 'preset = "multiturn-chat"'
    serve = "vllm serve meta-llama/Llama-3.1-8B"
    untimed = SPEC.replace("isl = 100\nosl = 100\n", "").replace("num_requests = 20\n", "")
    table: list[tuple[str, str, bool | None, dict[str, FileSpec]]] = [
        ("disagg-offload", _scenario('disagg = "1p:tp1,1d:tp1"\noffload = "cpu:64GiB"\nprefix_caching = "on"'), None, {}),
        ("disagg-layout-too", _scenario('disagg = "1p:tp1,1d:tp1"'), None, {}),
        ("disagg-gpus-disagree", _scenario('disagg = "1p:tp1,1d:tp1"\ngpus = 5'), True, {}),
        ("disagg-at-path", _scenario('disagg = "1p:tp1@g.toml,1d:tp1"'), True, {"g.toml": "x = 1\n"}),
        ("disagg-pool-total-memory", _scenario('disagg = "1p:tp1@mi300x,1d:tp1"\ngpu_total_memory = "79GiB"'), True, {}),
        ("serve-command-and-keys-agree", _scenario(f'serve_command = "{serve} --max-num-seqs 8"\nmax_num_seqs = 8'), None, {}),
        ("serve-command-and-keys-disagree", _scenario(f'serve_command = "{serve} --max-num-seqs 8"\nmax_num_seqs = 16'), True, {}),
        ("serve-command-other-engine", _scenario('serve_command = "python -m sglang.launch_server --model-path meta-llama/Llama-3.1-8B"'), True, {}),
        ("serve-command-empty", _scenario('serve_command = ""'), True, {}),
        ("serve-command-other-model", _scenario('serve_command = "vllm serve Qwen/Qwen3-8B"'), True, {}),
        ("kv-transfer-no-disagg", _scenario("kv_transfer_overhead_ms = 5.0"), True, {}),
        ("request-overhead-max", _scenario("request_overhead_ms = 60000.0", online), None, {}),
        ("request-overhead-nan", _scenario("request_overhead_ms = nan"), True, {}),
        ("step-source-kernels", _scenario('step_source = "kernels"'), None, {}),
        ("step-source-upper", _scenario('step_source = "ROOFLINE"'), True, {}),
        ("attention-dp-balance-dense", _scenario('engine_version = "1.2.0rc6"\nattention_dp_balance = "on"'), True, {}),
        ("overlap-schedule-vllm", _scenario("overlap_schedule = true"), None, {}),
        ("spec-overlap-vllm", _scenario('spec_overlap = true\nspeculative = "ngram:3"\nspec_accept_length = 1.5'), True, {}),
        ("spec-acceptance-and-length", _scenario('speculative = "ngram:3"\nspec_acceptance = "0.8,0.6,0.4"\nspec_accept_length = 1.5'), True, {}),
        ("spec-acceptance-no-speculative", _scenario('spec_acceptance = "0.8,0.6,0.4"'), True, {}),
        ("spec-accept-length-no-speculative", _scenario("spec_accept_length = 1.5"), True, {}),
        ("spec-accept-length-past-k", _scenario('speculative = "ngram:3"\nspec_accept_length = 4.5'), True, {}),
        ("offload-policy-no-offload", _scenario('offload_policy = "write-back"'), True, {}),
        ("swap-space-no-swap", _scenario('swap_space = "4GiB"'), None, {}),  # a warning, by design
        ("routing-no-dp", _scenario('routing = "least-loaded"'), None, {}),
        ("policy-unknown", _scenario('policy = "lifo"'), True, {}),
        ("all2all-dense", _scenario('all2all_backend = "deepep"'), True, {}),
        ("weight-dtype-upcast", _scenario('weight_dtype = "fp16"'), None, {}),
        ("kv-dtype-nvfp4", _scenario('kv_cache_dtype = "nvfp4"'), None, {}),
        ("enable-chunked-prefill-v1", _scenario("enable_chunked_prefill = false"), True, {}),
        ("allow-long-no-max-model-len", _scenario("allow_long_max_model_len = true"), None, {}),
        ("max-model-len-past-context-allowed", _scenario("allow_long_max_model_len = true\nmax_model_len = 10000000"), None, {}),
        ("engine-version-other-engine", _scenario('engine_version = "0.5.9"'), None, {}),
        ("calibration-relative", _scenario('calibration = "c.toml"'), None, {"c.toml": CAL_OK}),
        ("calibration-dotdot", _scenario('calibration = "../c.toml"'), True, {}),
        ("calibration-absolute-missing", _scenario('calibration = "/nonexistent/c.toml"'), True, {}),
        ("calibration-is-spec", _scenario('calibration = "s.toml"'), True, {}),
        ("trace-is-spec", untimed.replace("[scenario.workload]\n", '[scenario.workload]\ntrace = "s.toml"\n'), True, {}),
        ("trace-and-preset", _scenario(workload='trace = "t.jsonl"\n' + sess), True, {"t.jsonl": _lines(SESSION_ROWS)}),
        ("trace-and-isl", _scenario(workload='trace = "t.jsonl"'), True, {"t.jsonl": _lines(PLAIN_ROWS)}),
        ("preset-and-isl", _scenario(workload=sess), None, {}),
        ("rate-batch", _scenario(workload="rate = 2.0"), True, {}),
        ("clients-poisson", _scenario(workload=online + "\nclients = 4"), True, {}),
        ("think-time-batch", _scenario(workload="think_time = 5.0"), True, {}),
        ("turns-no-preset", _scenario(workload="turns = 3.0"), True, {}),
        ("context-no-preset", _scenario(workload="context = 1000"), True, {}),
        ("osl-hist-missing", _scenario().replace("osl = 100", 'osl = "hist:h.csv"'), True, {}),
        ("osl-hist-dir", _scenario().replace("osl = 100", 'osl = "hist:."'), True, {}),
        ("osl-lognormal", _scenario().replace("osl = 100", 'osl = "lognormal:100:300"'), None, {}),
        # online assertions in a batch scenario read the most the layout sustains (documented)
        ("sustained-batch", _scenario(expect="sustained_rps_min = 1.0"), None, {}),
        ("replicas-batch", _scenario(expect="replicas_max = 1"), None, {}),
        ("usd-batch", _scenario(expect="usd_per_million_tokens_max = 1.0"), None, {}),
        ("prefix-hit-no-cache", _scenario('prefix_caching = "off"', sess, "prefix_hit_rate_min = 0.5"), True, {}),
        ("prefix-hit-single-turn", _scenario(expect="prefix_hit_rate_min = 0.5"), None, {}),
        ("cliff-rate", _scenario(workload=online, expect="cliff_concurrency_min = 2"), None, {}),
        ("ttft-batch", _scenario(expect="ttft_p99_max_s = 1.0"), None, {}),
        ("tpot-inf", _scenario(expect="tpot_p99_max_s = inf"), True, {}),
        ("recommended-layout-bad", _scenario(expect='recommended_layout = "tp0"'), True, {}),
        ("recommended-layout-not-auto", _scenario(expect='recommended_layout = "tp1"'), None, {}),
        ("max-model-len-fits-huge", _scenario(expect=f"max_model_len_fits = {2**63 - 1}"), None, {}),
        ("two-scenarios-same-name", _scenario() + _scenario(), True, {}),
        ("scenario-name-case-dup", _scenario() + _scenario().replace('name = "s"', 'name = "S"'), None, {}),
        ("baseline-tolerance-zero", "baseline_tolerance = 0.0\n" + _scenario(), True, {}),
        ("unknown-top-key", "foo = 1\n" + _scenario(), True, {}),
        ("no-scenarios", "baseline_tolerance = 0.1\n", True, {}),
        ("scenario-table-not-array", _scenario().replace("[[scenario]]", "[scenario]"), True, {}),
        ("headroom-batch", _scenario("headroom = 0.5"), None, {}),
        ("usd-per-gpu-hour-batch", _scenario("usd_per_gpu_hour = 3.0"), None, {}),
        ("gpus-past-layout", _scenario("gpus = 2"), None, {}),
        ("gpus-not-node-multiple", _scenario("gpus = 12").replace('layout = "tp1"', 'layout = "auto"'), True, {}),
        ("layout-auto-online", _scenario(workload=online).replace('layout = "tp1"', 'layout = "auto"'), None, {}),
        ("layout-auto-disagg", _scenario('disagg = "1p:tp1,1d:tp1"').replace('layout = "tp1"', 'layout = "auto"'), None, {}),
        ("model-folder-relative", _scenario().replace('model = "llama-3.1-8b"', 'model = "m"'), None, {"m/config.json": json.dumps(llama_config())}),
        ("model-folder-bad-quant", _scenario().replace('model = "llama-3.1-8b"', 'model = "m"'), True, {"m/config.json": json.dumps({**llama_config(), "quantization_config": {"quant_method": "awq", "bits": 8}})}),
        ("model-folder-mxfp4-dense", _scenario().replace('model = "llama-3.1-8b"', 'model = "m"'), True, {"m/config.json": json.dumps({**llama_config(), "quantization_config": {"quant_method": "mxfp4"}})}),
    ]
    for name, text, invalid, files in table:
        yield Case("spec7", name, ["check", "{d}/s.toml"], {"s.toml": text, **files}, invalid)


# quantization_config variants and side files ------------------------------------------------------

CT_GROUP = {"weights": {"num_bits": 4, "type": "int", "strategy": "group", "group_size": 128, "symmetric": True}, "targets": ["Linear"]}
CT = {"quant_method": "compressed-tensors", "config_groups": {"g": CT_GROUP}}


def _ct(weights: object, **group: object) -> dict[str, object]:
    return {**CT, "config_groups": {"g": {"weights": weights, "targets": ["Linear"], **group}}}


QUANT7: list[tuple[str, object, bool | None]] = [
    ("fp8-upper", {"quant_method": "FP8"}, None),
    ("fp8-spaces", {"quant_method": " fp8 "}, None),
    ("fp8-activation-dynamic", {"quant_method": "fp8", "activation_scheme": "dynamic"}, None),
    ("fp8-block-floats", {"quant_method": "fp8", "weight_block_size": [128.0, 128.0]}, True),
    ("fp8-block-tuple-3", {"quant_method": "fp8", "weight_block_size": [1, 128, 128]}, True),
    ("fp8-block-huge", {"quant_method": "fp8", "weight_block_size": [1 << 30, 1 << 30]}, True),
    ("fp8-ignored-glob", {"quant_method": "fp8", "ignored_layers": ["*"]}, None),
    ("fp8-ignored-everything-regex", {"quant_method": "fp8", "ignored_layers": ["re:.*"]}, None),
    ("fp8-ignored-non-ascii", {"quant_method": "fp8", "ignored_layers": ["ｍｌｐ"]}, None),
    ("fp8-ignored-empty-string", {"quant_method": "fp8", "ignored_layers": [""]}, None),
    ("fp8-ignored-regex-lookbehind", {"quant_method": "fp8", "ignored_layers": ["re:(?<=a+)b"]}, True),
    ("fp8-ignored-regex-backref-blowup", {"quant_method": "fp8", "ignored_layers": ["re:(a+)+$"]}, True),
    ("fp8-ignored-regex-alternation-blowup", {"quant_method": "fp8", "ignored_layers": ["re:(a|a)+$"]}, None),
    ("fp8-ignored-regex-nested-question", {"quant_method": "fp8", "ignored_layers": ["re:(.*?)*x"]}, True),
    ("fp8-ignored-regex-huge-repeat", {"quant_method": "fp8", "ignored_layers": ["re:a{1000000000}"]}, None),
    ("fp8-ignored-10k", {"quant_method": "fp8", "ignored_layers": [f"model.layers.{i}.mlp" for i in range(10_000)]}, None),
    ("gptq-bits-2", {"quant_method": "gptq", "bits": 2, "group_size": 128}, None),
    ("gptq-bits-3", {"quant_method": "gptq", "bits": 3, "group_size": 128}, None),
    ("gptq-bits-8-float", {"quant_method": "gptq", "bits": 8.0, "group_size": 128}, True),
    ("gptq-desc-act", {"quant_method": "gptq", "bits": 4, "group_size": 128, "desc_act": True}, None),
    ("gptq-group-minus-2", {"quant_method": "gptq", "bits": 4, "group_size": -2}, True),
    ("gptq-group-odd", {"quant_method": "gptq", "bits": 4, "group_size": 7}, None),
    ("gptq-group-past-hidden", {"quant_method": "gptq", "bits": 4, "group_size": 1 << 20}, None),
    ("awq-w-bit", {"quant_method": "awq", "w_bit": 4, "q_group_size": 128}, None),
    ("awq-w-bit-8", {"quant_method": "awq", "w_bit": 8, "q_group_size": 128}, True),
    ("awq-both-bits", {"quant_method": "awq", "bits": 4, "w_bit": 8}, None),
    ("awq-version-gemv", {"quant_method": "awq", "bits": 4, "group_size": 128, "version": "gemv"}, None),
    ("awq-marlin", {"quant_method": "awq_marlin", "bits": 4, "group_size": 128}, True),
    ("gptq-marlin", {"quant_method": "gptq_marlin", "bits": 4, "group_size": 128}, True),
    ("bitsandbytes", {"quant_method": "bitsandbytes", "load_in_4bit": True}, True),
    ("hqq", {"quant_method": "hqq"}, True),
    ("quant-method-null", {"quant_method": None, "bits": 4}, True),
    ("quant-method-list", {"quant_method": ["fp8"]}, True),
    ("quant-method-number", {"quant_method": 8}, True),
    ("modelopt-fp8", {"quant_method": "modelopt", "quant_algo": "FP8"}, None),
    ("modelopt-lower", {"quant_method": "modelopt", "quant_algo": "nvfp4"}, None),
    ("modelopt-w4a8-awq", {"quant_method": "modelopt", "quant_algo": "W4A8_AWQ"}, True),
    ("modelopt-mixed", {"quant_method": "modelopt", "quant_algo": "MIXED_PRECISION"}, True),
    ("modelopt-nested-nonobject", {"quant_method": "modelopt", "quantization": "NVFP4"}, True),
    ("modelopt-nested-empty", {"quant_method": "modelopt", "quantization": {}}, True),
    ("modelopt-group-0", {"quant_method": "modelopt", "quant_algo": "NVFP4", "group_size": 0}, True),
    ("modelopt-group-32", {"quant_method": "modelopt", "quant_algo": "NVFP4", "group_size": 32}, None),
    ("modelopt-kv-fp8", {"quant_method": "modelopt", "quant_algo": "FP8", "kv_cache_quant_algo": "FP8"}, None),
    ("modelopt-exclude-glob-all", {"quant_method": "modelopt", "quant_algo": "FP8", "exclude_modules": ["*"]}, None),
    ("quant-algo-without-method", {"quant_algo": "FP8"}, None),
    ("ct-two-groups", {**CT, "config_groups": {"a": CT_GROUP, "b": {"weights": {"num_bits": 8, "type": "float", "strategy": "channel"}, "targets": ["re:.*mlp.*"]}}}, None),
    ("ct-float-16", _ct({"num_bits": 16, "type": "float"}), True),
    ("ct-int-16", _ct({"num_bits": 16, "type": "int"}), True),
    ("ct-type-upper", _ct({"num_bits": 8, "type": "FLOAT"}), True),
    ("ct-strategy-block", _ct({"num_bits": 8, "type": "float", "strategy": "block", "block_structure": [128, 128]}), None),
    ("ct-strategy-tensor-group-int", _ct({"num_bits": 4, "type": "int", "strategy": "tensor_group", "group_size": 16}), None),
    ("ct-bits-bool", _ct({"num_bits": True, "type": "int"}), True),
    ("ct-weights-null", _ct(None), True),
    ("ct-input-only", {**CT, "config_groups": {"g": {"input_activations": {"num_bits": 8}, "targets": ["Linear"]}}}, True),
    ("ct-targets-string", {**CT, "config_groups": {"g": {**CT_GROUP, "targets": "Linear"}}}, True),
    ("ct-ignore-lm-head", {**CT, "ignore": ["lm_head"]}, None),
    ("ct-format-dense", {**CT, "format": "dense"}, None),
    ("ct-kv-cache-scheme", {**CT, "kv_cache_scheme": {"num_bits": 8, "type": "float"}}, None),
    ("mxfp4-on-dense", {"quant_method": "mxfp4"}, True),
    ("fbgemm-ignore-bad-type", {"quant_method": "fbgemm_fp8", "modules_to_not_convert": "lm_head"}, True),
    ("qc-nested-200", {"quant_method": "fp8", "x": json.loads("[" * 200 + "]" * 200)}, None),
]


def quant7_cases() -> Iterator[Case]:
    config = llama_config()
    mem = ["memory", "{d}/m", "--gpus", "1", "--format", "json"]
    sweep = ["sweep", "{d}/m", *SMALL, "--concurrency", "4", "--gpus", "1"]

    def cfg(q: object) -> dict[str, FileSpec]:
        return {"m/config.json": json.dumps({**config, "quantization_config": q}, allow_nan=True)}

    for name, q, invalid in QUANT7:
        yield Case("quant7", name, mem, cfg(q), invalid)
        if name in ("fp8-upper", "gptq-bits-3", "ct-two-groups", "mxfp4-on-dense", "modelopt-lower"):
            yield Case("quant7", f"sweep-{name}", sweep, cfg(q), invalid)
    fp8 = cfg({"quant_method": "fp8", "weight_block_size": [128, 128]})
    for dtype in ("bf16", "fp8", "int4", "nvfp4", "mxfp4"):  # against --weight-dtype
        yield Case("quant7", f"fp8-checkpoint-weight-dtype-{dtype}", [*mem, "--weight-dtype", dtype], fp8, None)
    side = {"producer": {"name": "modelopt"}, "quantization": {"quant_algo": "NVFP4", "group_size": 16, "exclude_modules": ["lm_head"]}}
    plain = {"m/config.json": json.dumps(config)}
    for name, files, invalid in [
        ("side-file", {**plain, "m/hf_quant_config.json": json.dumps(side)}, None),
        ("side-file-and-config", {**cfg({"quant_method": "fp8"}), "m/hf_quant_config.json": json.dumps(side)}, None),
        ("side-file-list", {**plain, "m/hf_quant_config.json": "[]"}, True),
        ("side-file-empty", {**plain, "m/hf_quant_config.json": ""}, True),
        ("side-file-bad-algo", {**plain, "m/hf_quant_config.json": json.dumps({"quantization": {"quant_algo": "INT3"}})}, True),
        ("side-file-dir", {**plain, "m/hf_quant_config.json": ("dir",)}, None),
        ("side-file-dangling", {**plain, "m/hf_quant_config.json": ("symlink", "nowhere")}, None),
        ("side-file-fifo", {**plain, "m/hf_quant_config.json": ("fifo",)}, None),  # no file: unread
        ("side-file-deep", {**plain, "m/hf_quant_config.json": "[" * 100_000 + "]" * 100_000}, True),
        ("config-json-path-with-side", {**plain, "m/hf_quant_config.json": json.dumps(side)}, None),
        ("qc-null-side-file", {**cfg(None), "m/hf_quant_config.json": json.dumps(side)}, None),
    ]:
        argv = ["memory", "{d}/m/config.json", "--gpus", "1"] if name.startswith("config-json-path") else mem
        yield Case("quant7", name, argv, files, invalid)


# Safetensors checkpoints ----------------------------------------------------------------------------


def _st(header: dict[str, object] | bytes, data: bytes = b"\0" * 8, *, pad: bytes = b"") -> bytes:
    raw = (header if isinstance(header, bytes) else json.dumps(header).encode()) + pad
    return struct.pack("<Q", len(raw)) + raw + data


GOOD = {"w": {"dtype": "BF16", "shape": [2, 2], "data_offsets": [0, 8]}}
SHARDS = ("model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors")
INDEX = json.dumps({"metadata": {"total_size": 16}, "weight_map": {"a": SHARDS[0], "b": SHARDS[1]}})
ST7: list[tuple[str, dict[str, FileSpec], bool | None]] = [
    ("padded-spaces", {"m/model.safetensors": _st(GOOD, pad=b"      ")}, None),
    ("padded-nul", {"m/model.safetensors": _st(GOOD, pad=b"\0\0\0")}, True),
    ("trailing-bytes-after-data", {"m/model.safetensors": _st(GOOD, b"\0" * 16)}, True),
    ("scalar-shape", {"m/model.safetensors": _st({"w": {"dtype": "F32", "shape": [], "data_offsets": [0, 4]}}, b"\0" * 4)}, None),
    ("zero-dim", {"m/model.safetensors": _st({"w": {"dtype": "F32", "shape": [0, 4], "data_offsets": [0, 0]}}, b"")}, None),
    ("offsets-floats", {"m/model.safetensors": _st({"w": {"dtype": "BF16", "shape": [2, 2], "data_offsets": [0.0, 8.0]}})}, True),
    ("offsets-bool", {"m/model.safetensors": _st({"w": {"dtype": "U8", "shape": [1], "data_offsets": [False, True]}}, b"\0")}, True),
    ("offsets-huge", {"m/model.safetensors": _st({"w": {"dtype": "BF16", "shape": [2, 2], "data_offsets": [0, 2**70]}})}, True),
    ("dtype-f8-e4m3fn", {"m/model.safetensors": _st({"w": {"dtype": "F8_E4M3FN", "shape": [8], "data_offsets": [0, 8]}})}, True),
    ("dtype-c64", {"m/model.safetensors": _st({"w": {"dtype": "C64", "shape": [1], "data_offsets": [0, 8]}})}, True),
    ("meta-only", {"m/model.safetensors": _st({"__metadata__": {"format": "pt"}}, b"")}, None),
    ("meta-nested", {"m/model.safetensors": _st({"__metadata__": {"a": {"b": "c"}}}, b"")}, True),
    ("two-files", {"m/a.safetensors": _st(GOOD), "m/b.safetensors": _st(GOOD)}, None),
    ("one-good-one-bad", {"m/a.safetensors": _st(GOOD), "m/b.safetensors": b"\x01"}, True),
    ("hidden-file", {"m/.x.safetensors": b"\x01"}, None),
    ("uppercase-suffix", {"m/model.SAFETENSORS": b"\x01"}, None),
    ("subfolder", {"m/sub/model.safetensors": b"\x01"}, None),
    ("index-missing-shard", {"m/model.safetensors.index.json": INDEX, f"m/{SHARDS[0]}": _st({"a": GOOD["w"]})}, True),
    ("index-all-shards", {"m/model.safetensors.index.json": INDEX, f"m/{SHARDS[0]}": _st({"a": GOOD["w"]}), f"m/{SHARDS[1]}": _st({"b": GOOD["w"]})}, None),
    ("index-bad-json", {"m/model.safetensors.index.json": "{", "m/model.safetensors": _st(GOOD)}, True),
    ("index-weight-map-list", {"m/model.safetensors.index.json": json.dumps({"weight_map": []}), "m/model.safetensors": _st(GOOD)}, True),
    ("index-no-shards", {"m/model.safetensors.index.json": INDEX}, None),  # a config-only copy
    ("header-bom", {"m/model.safetensors": _st(b"\xef\xbb\xbf" + json.dumps(GOOD).encode())}, True),
    ("header-utf16", {"m/model.safetensors": _st(json.dumps(GOOD).encode("utf-16"))}, True),
    ("header-100mb-claim", {"m/model.safetensors": struct.pack("<Q", 100_000_001) + b"{}"}, True),
    ("header-many-tensors", {"m/model.safetensors": _st({f"t{i}": {"dtype": "U8", "shape": [1], "data_offsets": [i, i + 1]} for i in range(50_000)}, b"\0" * 50_000)}, None),
    ("header-deep-metadata", {"m/model.safetensors": _st(b'{"__metadata__": ' + b"[" * 50_000 + b"]" * 50_000 + b"}")}, True),
    ("header-5000-digit-offset", {"m/model.safetensors": _st(('{"w": {"dtype": "BF16", "shape": [2, 2], "data_offsets": [0, ' + HUGE_INT + "]}}").encode())}, True),
    ("file-unreadable", {"m/model.safetensors": _st(GOOD)}, None),  # root reads it anyway
]


def st7_cases() -> Iterator[Case]:
    mem = ["memory", "{d}/m", "--gpus", "1", "--format", "json"]
    cfg = {"m/config.json": json.dumps(llama_config())}
    for name, files, invalid in ST7:
        setup = _chmod("m/model.safetensors", 0) if name == "file-unreadable" else None
        yield Case("st7", name, mem, {**cfg, **files}, invalid, setup)
        if name in ("index-missing-shard", "trailing-bytes-after-data", "header-many-tensors"):
            yield Case("st7", f"sweep-{name}", ["sweep", "{d}/m", *SMALL, "--concurrency", "4", "--gpus", "1"], {**cfg, **files}, invalid)


def _chmod(name: str, mode: int) -> Callable[[Path], None]:
    def make(folder: Path) -> None:
        os.chmod(folder / name, mode)

    return make


# Traces against the workload options --------------------------------------------------------------


def _turns(count: int, tokens: int) -> list[dict[str, object]]:
    return [{"session_id": "a", "turn": i, "input_tokens": tokens, "output_tokens": 10, **({"arrival_s": 0.0} if i == 0 else {"think_s": 0.0})} for i in range(count)]


def trace7_cases() -> Iterator[Case]:
    s, p = SESSION_ROWS, PLAIN_ROWS
    untimed = [{k: v for k, v in r.items() if k != "arrival_s"} for r in p]
    rows: list[tuple[str, list[dict[str, object]], list[str], bool | None]] = [
        ("sess-think-1e308", [s[0], {**s[1], "think_s": 1e308}, s[2], s[3]], [], True),
        ("sess-think-1e9", [s[0], {**s[1], "think_s": 1e9}, s[2], s[3]], [], None),
        ("sess-arrival-1e308", [{**s[0], "arrival_s": 1e308}, *s[1:]], [], True),
        ("sess-arrival-1e12", [{**s[0], "arrival_s": 1e12}, *s[1:]], [], None),
        ("sess-arrival-neg-zero", [{**s[0], "arrival_s": -0.0}, *s[1:]], [], None),
        ("sess-think-on-turn-0", [{**s[0], "think_s": 5.0}, *s[1:]], [], None),
        ("sess-turn-gap", [s[0], {**s[1], "turn": 7}, s[2], s[3]], [], None),
        ("sess-turn-order-reversed", [s[1], s[0], s[3], s[2]], [], None),
        ("sess-int-and-str-id", [{**s[0], "session_id": 1}, {**s[1], "session_id": "1"}, s[2], s[3]], [], None),
        ("sess-prefix-past-context", [{**s[0], "prefix_id": "p", "prefix_tokens": 10_000_000}, *s[1:]], [], True),
        ("sess-prefix-tokens-no-id", [{**s[0], "prefix_tokens": 40}, *s[1:]], [], None),
        ("sess-prefix-same-id-other-length", [{**s[0], "prefix_id": "sys", "prefix_tokens": 8}, *s[1:]], [], None),
        ("sess-3000-turns", _turns(3000, 10), [], None),
        ("sess-context-grows-past-model", _turns(5, 60_000), [], True),
        ("sess-rate", s, ["--rate", "2"], True),
        ("sess-clients", s, ["--clients", "1"], None),
        ("sess-arrival-batch", s, ["--arrival", "batch"], True),
        ("sess-arrival-poisson-no-rate", s, ["--arrival", "poisson"], True),
        ("sess-arrival-clients-no-clients", s, ["--arrival", "clients"], True),
        ("sess-isl", s, ["--isl", "100"], True),
        ("sess-osl", s, ["--osl", "100"], True),
        ("sess-osl-lognormal", s, ["--osl", "lognormal:100:300"], True),
        ("sess-turns", s, ["--turns", "3"], True),
        ("sess-context", s, ["--context", "1000"], True),
        ("sess-random-range", s, ["--random-range-ratio", "0.5"], True),
        ("sess-think-time", s, ["--think-time", "0"], None),
        ("sess-max-model-len-short", s, ["--max-model-len", "60"], True),
        ("sess-slo-no-rate", s, ["--slo-ttft", "1"], None),
        ("sess-seed-huge", s, ["--seed", str(2**64)], None),
        ("plain-rate-untimed", untimed, ["--rate", "2"], False),
        ("plain-rate-untimed-arrival-poisson", untimed, ["--rate", "2", "--arrival", "poisson"], False),
        ("plain-rate-timed", p, ["--rate", "2"], True),
        ("plain-clients", p, ["--clients", "2"], None),
        ("plain-clients-arrival-poisson", p, ["--clients", "2", "--arrival", "poisson"], True),
        ("plain-isl", p, ["--isl", "100"], True),
        ("plain-range-ratio", p, ["--random-range-ratio", "0.5"], True),
        ("plain-untimed-arrival-batch", untimed, ["--arrival", "batch"], True),
        ("plain-arrival-1e308", [*p[:2], {**p[2], "arrival_s": 1e308}], [], True),
        ("plain-arrival-nan-text", [*p[:2], {**p[2], "arrival_s": "nan"}], [], True),
        ("plain-arrival-unsorted", [p[2], p[0], p[1]], [], None),
        ("plain-all-at-1e9", [{**r, "arrival_s": 1e9} for r in p], [], None),
        ("plain-output-tokens-float", [*p[:2], {**p[2], "output_tokens": 10.0}], [], True),
        ("plain-extra-key", [*p[:2], {**p[2], "model": "x"}], [], True),
        ("mixed-session-and-plain", [s[0], p[1]], [], True),
    ]
    for name, trace, extra, invalid in rows:
        yield Case("trace7", name, [*TRACE, *extra], {"t.jsonl": _lines(trace)}, invalid)
    plan = ["plan", "llama-3.1-8b", "--jobs", "1", "--workload", "{d}/t.jsonl"]
    for name, argv, invalid in [
        ("plan-online-trace", [*plan, "--gpus", "1", "--slo-ttft", "2"], None),
        ("plan-batch-trace", [*plan, "--gpus", "1", "--arrival", "batch"], None),
        ("plan-trace-num-requests", [*plan, "--gpus", "1", "--num-requests", "5"], True),
        ("plan-trace-isl", [*plan, "--gpus", "1", "--slo-ttft", "2", "--isl", "100"], True),
        ("plan-trace-disagg", [*plan, "--gpus", "2", "--slo-ttft", "2", "--disagg"], None),
        ("sweep-trace-disagg", [*TRACE, *DISAGG], None),
        ("sweep-trace-offload", [*TRACE, "--offload", "cpu:64GiB", "--prefix-caching", "on"], None),
        ("sweep-trace-is-calibration", [*TRACE, "--calibration", "{d}/t.jsonl"], True),
        ("sweep-trace-dir", ["sweep", "llama-3.1-8b", "--workload", "{d}", "--concurrency", "4"], True),
        ("sweep-trace-no-suffix", ["sweep", "llama-3.1-8b", "--workload", "{d}/t", "--concurrency", "4"], True),
    ]:
        yield Case("trace7", name, argv, {"t.jsonl": _lines(s), "t": _lines(s)}, invalid)


# Numbers at their limits on plan, memory and calibrate --------------------------------------------

NUMS = ["nan", "inf", "-inf", "-0", "1e308", HUGE_INT, "", "٣", " ", "1e-320", "0x10", "+5", "5.", ".5", "1_0", "١٠"]
INTS = {"+5", "٣", "1_0", "١٠"}  # integers as Python's int() reads them
EXTRA = {"--spec-accept-length": ["--speculative", "ngram:3"], "--mem-fraction-static": ["--engine", "sglang"],
         "--free-gpu-memory-fraction": ["--engine", "trtllm"], "--swap-space": ["--preemption", "swap"],
         "--think-time": ["--workload", "multiturn-chat"]}


def num7_cases() -> Iterator[Case]:
    cal = ["calibrate", "{d}/r.json", "--model", "llama-3.1-8b", "--gpu", "h100-sxm"]
    flags: list[tuple[list[str], str, set[str]]] = [  # base command, flag, values that are valid
        (ONLINE, "--headroom", {"-0", "1e-320", ".5"}),
        (FLEET, "--price-gpu-hour", {"5.", ".5", "+5", "1_0", "٣", "١٠"}),
        ([*PLAN, "--rate", "2", "--slo-ttft", "2"], "--nodes", INTS),
        (ONLINE, "--jobs", {*INTS, "0x10"}),
        (ONLINE, "--slo-tpot", {"1e-320", ".5", "5.", "+5", "٣", "1_0"}),
        (ONLINE, "--slo-ttft", {".5", "5.", "+5", "٣", "1_0", "١٠"}),
        (ONLINE, "--spec-accept-length", set()),
        (ONLINE, "--think-time", {"-0", "1e-320", "+5", "5.", ".5", "1_0", "٣", "١٠"}),
        (BATCH, "--num-requests", INTS),
        (BATCH, "--seed", {"-0", *INTS}),
        (BATCH, "--random-range-ratio", {".5", "1e-320"}),
        (MEM, "--max-num-batched-tokens", INTS),
        (MEM, "--block-size", INTS),
        (MEM, "--swap-space", set()),
        (MEM, "--mem-fraction-static", {".5", "1e-320"}),  # 1e-320: does not fit, an answer
        (MEM, "--free-gpu-memory-fraction", {".5", "1e-320"}),
        (cal, "--gpus", INTS),
        (cal, "--max-model-len", INTS),
    ]
    for base, flag, fine in flags:
        for value in NUMS:
            yield Case("num7", f"{base[0]}{flag}={value[:8]!r}", [*base, *EXTRA.get(flag, []), flag, value],
                       {"r.json": _lines(RUNS)}, None if value in fine else True)


# Options across commands that no campaign paired ----------------------------------------------------


def combo7_cases() -> Iterator[Case]:
    online = [*PLAN, "--gpus", "2", "--rate", "2", "--slo-ttft", "2"]
    table: Table = [
        ("plan-batch-disagg", [*PLAN, "--gpus", "2", "--arrival", "batch", "--disagg"], None),
        ("plan-batch-rate", [*BATCH, "--rate", "2"], True),
        ("plan-batch-clients", [*BATCH, "--clients", "4"], True),
        ("plan-batch-slo", [*BATCH, "--slo-ttft", "2"], None),
        ("plan-batch-objective-goodput-no-slo", [*BATCH, "--objective", "goodput"], None),  # every request counts
        ("plan-batch-plot", [*BATCH, "--plot", "{d}/p.png"], True),
        ("plan-batch-price", [*BATCH, "--price-gpu-hour", "3"], True),
        ("plan-batch-sessions", [*BATCH, *SESS], None),
        ("plan-batch-think-time", [*BATCH, "--think-time", "3"], True),
        ("plan-clients-and-rate", [*PLAN, "--clients", "4", "--rate", "2", "--slo-ttft", "2"], True),
        ("plan-poisson-no-rate", [*PLAN, "--arrival", "poisson", "--slo-ttft", "2"], True),
        ("plan-clients-arrival-poisson", [*PLAN, "--arrival", "poisson", "--clients", "4", "--slo-ttft", "2"], True),
        ("plan-online-no-slo", [*PLAN, "--gpus", "1", "--rate", "2"], None),
        ("plan-rate-tiny", [*PLAN, "--gpus", "1", "--rate", "1e-9", "--slo-ttft", "2"], None),
        ("plan-rate-1e6", [*PLAN, "--gpus", "1", "--rate", "1e6", "--slo-ttft", "2"], None),
        ("plan-headroom-near-1", [*ONLINE, "--headroom", "0.999"], None),
        ("plan-disagg-plot", [*DISAGG_PLAN, "--plot", "{d}/p.png"], True),
        ("plan-disagg-one-gpu", [*ONLINE, "--disagg"], True),
        ("plan-disagg-layout", [*DISAGG_PLAN, "--layout", "tp1"], True),
        ("plan-disagg-objective", [*DISAGG_PLAN, "--objective", "cost"], None),  # --gpus: a ranked split search
        ("plan-disagg-offload", [*DISAGG_PLAN, "--offload", "cpu:64GiB", "--prefix-caching", "on"], None),
        ("plan-disagg-speculative", [*DISAGG_PLAN, "--speculative", "ngram:3", "--spec-accept-length", "1.5"], None),
        ("plan-serve-local-path-folder", ["plan", "{d}/m", *ONLINE[2:], "--serve-local-path"], None),
        ("plan-serve-command-and-layout", [*ONLINE, "--layout", "tp1", "--serve-command", "vllm serve meta-llama/Llama-3.1-8B --tensor-parallel-size 2"], True),
        ("plan-serve-command-gpus", [*ONLINE, "--serve-command", "vllm serve meta-llama/Llama-3.1-8B --tensor-parallel-size 2"], True),
        ("plan-nodes-0", [*PLAN, "--nodes", "0", "--rate", "2", "--slo-ttft", "2"], True),
        ("plan-nodes-huge", [*PLAN, "--nodes", "100000", "--rate", "2", "--slo-ttft", "2"], True),
        ("plan-jobs-0", [*ONLINE, "--jobs", "0"], True),
        ("plan-jobs-1000", [*ONLINE, "--jobs", "1000"], None),
        ("plan-format-json-plot", [*ONLINE, "--format", "json", "--plot", "{d}/p.svg"], None),
        ("plan-format-markdown", [*ONLINE, "--format", "markdown"], False),
        ("plan-format-csv", [*ONLINE, "--format", "csv"], True),
        ("plan-step-source-kernels-mi300x", [*ONLINE, "--gpu", "mi300x", "--step-source", "kernels"], None),
        ("plan-engine-version-sglang-vllm-release", [*ONLINE, "--engine", "sglang", "--engine-version", "0.10.2"], None),  # the newest profile, named
        ("plan-disagg-two-gpu-types", [*online, "--disagg", "--gpu", "h100-sxm,h200-sxm"], None),
        ("sweep-rate-and-concurrency-list", [*SW[:-2], "--concurrency", "2,4", "--rate", "2"], None),
        ("sweep-clients-and-concurrency", [*SW, "--clients", "8"], None),
        ("sweep-slo-batch", [*SW, "--arrival", "batch", "--slo-tpot", "0.05"], None),
        ("sweep-disagg-layout", [*SW, *DISAGG, "--layout", "tp1"], True),
        ("sweep-disagg-gpus-match", [*SW, *DISAGG, "--gpus", "2"], None),
        ("sweep-disagg-pp", [*SW, "--disagg", "1p:pp2,1d:tp1"], None),
        ("sweep-disagg-dpa", [*SW, "--disagg", "1p:tp1,1d:dpa2"], None),
        ("sweep-disagg-ep-dense", [*SW, "--disagg", "1p:tp1,1d:tp2-ep2"], True),
        ("sweep-disagg-three-parts", [*SW, "--disagg", "1p:tp1,1d:tp1,1d:tp1"], True),
        ("sweep-disagg-upper", [*SW, "--disagg", "1P:TP1,1D:TP1"], None),
        ("sweep-disagg-spaces", [*SW, "--disagg", " 1p:tp1 , 1d:tp1 "], None),
        ("sweep-disagg-leading-zero", [*SW, "--disagg", "01p:tp1,1d:tp1"], None),
        ("sweep-disagg-huge-decode", [*SW, "--disagg", "1p:tp1,65535d:tp1"], None),
        ("sweep-disagg-attention-dp-balance", [*SW, "--disagg", "1p:tp1,1d:dpa2", "--engine", "trtllm", "--attention-dp-balance", "on"], None),
        ("sweep-disagg-routing", [*SW, "--disagg", "1p:tp1,2d:tp1", "--routing", "least-loaded"], None),
        ("sweep-disagg-max-seqs-1", [*SW, *DISAGG, "--max-num-seqs", "1"], None),
        ("sweep-disagg-swap-space", [*SW, *DISAGG, "--preemption", "swap", "--swap-space", "1GiB"], None),
        ("sweep-plot-format-json", [*SW, "--format", "json", "--plot", "{d}/p.png"], None),
        ("sweep-osl-list-sessions", [*SW_SESS, "--clients", "4", "--osl", "50,100"], True),
        ("sweep-osl-lognormal-sessions", [*SW_SESS, "--clients", "4", "--osl", "lognormal:100:300"], True),
        ("sweep-random-range-1", [*SW, "--random-range-ratio", "1.0"], None),
        ("sweep-concurrency-one-point-span", [*SW[:-2], "--concurrency", "1..1000000:1"], True),
        ("sweep-concurrency-step-written-as-count", [*SW[:-2], "--concurrency", "1..4096:1"], True),
        ("sweep-concurrency-one-point-one-value", [*SW[:-2], "--concurrency", "4..4:1"], False),
        ("sweep-concurrency-two-points", [*SW[:-2], "--concurrency", "1..8:2"], False),
        ("sweep-num-requests-1", [*SW[:-4], "--num-requests", "1", "--concurrency", "4"], None),
        ("sweep-num-requests-huge", [*SW[:-4], "--num-requests", "100000000", "--concurrency", "4"], True),
        ("memory-format-markdown", [*MEM, "--format", "markdown"], None),
        ("memory-serve-command-and-model", [*MEM, "--serve-command", "vllm serve Qwen/Qwen3-8B"], True),
        ("memory-serve-command-catalog", ["memory", "--serve-command", "vllm serve meta-llama/Llama-3.1-8B --max-model-len 4096"], None),
        ("memory-layout-all-and-gpus", ["memory", "llama-3.1-8b", "--layout", "all", "--gpus", "8"], None),
        ("memory-layout-dp2-gpus-1", [*MEM, "--layout", "dp2"], True),
        ("memory-kv-memory-and-util", [*MEM, "--kv-cache-memory", "10GiB", "--gpu-memory-utilization", "0.5"], None),
        ("memory-calibration-other-model", [*MEM, "--calibration", "{d}/c.toml"], True),
        ("memory-model-path-and-serve", ["memory", "{d}/m", "--gpus", "1", "--model-path", "{d}/m"], None),
        ("memory-offload", [*MEM, "--offload", "cpu:64GiB"], True),
        ("memory-speculative", [*MEM, "--speculative", "ngram:3"], True),
        ("check-format-markdown-and-markdown-file", ["check", "{d}/s.toml", "--format", "markdown", "--markdown", "{d}/o.md"], None),
        ("check-baseline-missing", ["check", "{d}/s.toml", "--baseline", "{d}/nope.json"], True),
        ("check-baseline-is-spec", ["check", "{d}/s.toml", "--baseline", "{d}/s.toml"], True),
        ("check-write-baseline-and-baseline-same", ["check", "{d}/s.toml", "--baseline", "{d}/b.json", "--write-baseline", "{d}/b.json", "--force"], True),
        ("check-two-specs", ["check", "{d}/s.toml", "{d}/s.toml"], True),
        ("check-spec-dir", ["check", "{d}"], True),
    ]
    files: dict[str, FileSpec] = {"m/config.json": json.dumps(llama_config()), "c.toml": CAL_OK.replace("llama-3.1-8b", "qwen3-8b"), "s.toml": SPEC, "b.json": "{}"}
    yield from _cases("combo7", table, files)


# Outputs that name another input of the run ---------------------------------------------------------


def out7_cases() -> Iterator[Case]:
    spec_trace = SPEC.replace("isl = 100\nosl = 100\n", "").replace("num_requests = 20\n", "").replace("[scenario.workload]\n", '[scenario.workload]\ntrace = "t.jsonl"\n')
    spec_hist = SPEC.replace("osl = 100", 'osl = "hist:h.csv"')
    spec_cal = SPEC.replace('engine = "vllm"', 'engine = "vllm"\ncalibration = "c.toml"')
    hist = "tokens,count\n50,3\n100,5\n"
    trace, runs, model = _lines(PLAIN_ROWS), _lines(RUNS), json.dumps(llama_config())
    cal_m = ["calibrate", "{d}/r.json", "--model", "{d}/m", "--gpu", "h100-sxm", "-o"]
    for name, argv, files, invalid in [
        ("check-junit-is-spec-trace", ["check", "{d}/s.toml", "--junit", "{d}/t.jsonl", "--force"], {"s.toml": spec_trace, "t.jsonl": trace}, True),
        ("check-markdown-is-spec-hist", ["check", "{d}/s.toml", "--markdown", "{d}/h.csv", "--force"], {"s.toml": spec_hist, "h.csv": hist}, True),
        ("check-baseline-out-is-spec-cal", ["check", "{d}/s.toml", "--write-baseline", "{d}/c.toml", "--force"], {"s.toml": spec_cal, "c.toml": CAL_OK}, True),
        ("check-junit-is-spec", ["check", "{d}/s.toml", "--junit", "{d}/s.toml", "--force"], {"s.toml": SPEC}, True),
        ("check-junit-is-baseline", ["check", "{d}/s.toml", "--baseline", "{d}/b.json", "--junit", "{d}/b.json", "--force"], {"s.toml": SPEC, "b.json": "{}"}, True),
        ("sweep-plot-is-trace", [*TRACE, "--plot", "{d}/t.jsonl", "--force"], {"t.jsonl": trace}, True),
        ("sweep-plot-is-osl-hist", [*SW, "--osl", "hist:{d}/h.png", "--plot", "{d}/h.png", "--force"], {"h.png": hist}, True),
        ("plan-plot-is-model-config", ["plan", "{d}/m/config.json", *ONLINE[2:], "--plot", "{d}/m/config.json", "--force"], {"m/config.json": model}, True),
        ("plan-plot-is-calibration", [*ONLINE, "--calibration", "{d}/c.svg", "--plot", "{d}/c.svg", "--force"], {"c.svg": CAL_OK}, True),
        ("calibrate-out-is-model-config", [*cal_m, "{d}/m/config.json", "--force"], {"r.json": runs, "m/config.json": model}, True),
        ("calibrate-out-is-side-quant", [*cal_m, "{d}/m/hf_quant_config.json", "--force"], {"r.json": runs, "m/config.json": model}, True),
        ("calibrate-out-in-model-dir-new", [*cal_m, "{d}/m/cal.toml"], {"r.json": runs, "m/config.json": model}, None),
        ("calibrate-out-hardlink-input", [*CAL, "-o", "{d}/o.toml", "--force"], {"r.json": runs}, True),
        ("check-write-baseline-hardlink-spec", ["check", "{d}/s.toml", "--write-baseline", "{d}/b.json", "--force"], {"s.toml": SPEC}, True),
        ("check-junit-dev-stdout", ["check", "{d}/s.toml", "--junit", "/dev/stdout"], {"s.toml": SPEC}, None),
        ("check-junit-proc", ["check", "{d}/s.toml", "--junit", "/proc/self/fd/1", "--force"], {"s.toml": SPEC}, None),
    ]:
        links = {"calibrate-out-hardlink-input": ("r.json", "o.toml"), "check-write-baseline-hardlink-spec": ("s.toml", "b.json")}
        setup = _hardlink(*links[name]) if name in links else None
        yield Case("out7", name, argv, files, invalid, setup)


def _hardlink(source: str, link: str) -> Callable[[Path], None]:
    def make(folder: Path) -> None:
        (folder / link).hardlink_to(folder / source)

    return make


SURFACES7: dict[str, Callable[[], Iterator[Case]]] = {
    "moe7": moe7_cases, "prefix7": prefix7_cases, "overhead7": overhead7_cases,
    "gpulist7": gpulist7_cases, "calib7": calib7_cases, "spec7": spec7_cases,
    "quant7": quant7_cases, "st7": st7_cases, "trace7": trace7_cases, "num7": num7_cases,
    "combo7": combo7_cases, "out7": out7_cases,
}
# fmt: on
