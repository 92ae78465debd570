"""The twelfth bad-input campaign's surfaces (issue 23), run by `fuzz_surfaces.py`:

    PYTHONPATH=. python benchmarks/fuzz_surfaces.py quants12 big12 spec12 flags12 stdin12

What the eleven campaigns before did not try: quantization_config fields that change which
layers are quantised or how they are stored (GPTQ's `modules_in_block_to_quantize`,
compressed-tensors' `sparsity_config`, GPTQ at 2, 3 and 8 bits, AWQ without zero points, the
methods transformers knows that capcliff does not size: bitsandbytes, torchao, quark, auto-round,
HQQ, EETQ, AQLM, VPTQ, ModelOpt's W4A8 and mixed precision; quants12); inputs far larger than
any before but valid or refused by one rule: a 100,000-session trace to sweep and plan, 100,000
`--append-result` runs, 20,000 distinct runs, 100,000 CSV rows, a log of 1,000 server starts, a
100,000-bucket `hist:` file (big12); a check spec's keys in the wrong case, numbers TOML spells
oddly (0x4, 1_00, 100.0, -0.0, 1e-320) and paths relative to a spec in a sub-folder, with an
output that names one of them through `..` (spec12); size, tier and pool options at spellings
the flag corpora left out (lower-case units, Arabic-Indic digits, leading zeros, upper-case
pools; flags12); standard input (`-`, /dev/stdin) given for every input that reads a file
(stdin12).
"""

# Data tables: one case per line, some past 100 characters, look-alike digits on purpose.
# ruff: noqa: E501, RUF001
from __future__ import annotations

import json
from collections.abc import Callable, Iterator

import fuzz_surfaces as fs
from fuzz_cases7 import CAL, SW, _lines
from fuzz_cases9 import CSV_HEAD, CSV_ROWS
from fuzz_cases11 import LLAMA_70B
from fuzz_harness import Case, FileSpec

# fmt: off
MEM = ["memory", "{d}/m", "--gpus", "8", "--gpu", "h200-sxm"]
GPTQ4 = {"quant_method": "gptq", "bits": 4, "group_size": 128, "desc_act": False, "sym": True}
CT_FP8 = {"quant_method": "compressed-tensors", "format": "float-quantized", "ignore": ["lm_head"], "config_groups": {"group_0": {
    "targets": ["Linear"], "weights": {"num_bits": 8, "type": "float", "symmetric": True, "strategy": "channel"}}}}
# Qwen/Qwen3-30B-A3B-GPTQ-Int4 style: every linear of a block listed, an expert by its index
ALL_IN_BLOCK = [["self_attn.k_proj", "self_attn.v_proj", "self_attn.q_proj"], ["self_attn.o_proj"],
                ["mlp.gate_proj", "mlp.up_proj"], ["mlp.down_proj"]]
QUANTS12: list[tuple[str, object, bool | None]] = [
    # GPTQ: which modules of a block were quantised
    ("gptq-in-block-all", {**GPTQ4, "modules_in_block_to_quantize": ALL_IN_BLOCK}, False),
    ("gptq-in-block-flat", {**GPTQ4, "modules_in_block_to_quantize": ["self_attn.q_proj", "mlp.down_proj"]}, False),
    ("gptq-in-block-empty", {**GPTQ4, "modules_in_block_to_quantize": []}, False),
    ("gptq-in-block-null", {**GPTQ4, "modules_in_block_to_quantize": None}, False),
    ("gptq-in-block-string", {**GPTQ4, "modules_in_block_to_quantize": "mlp.down_proj"}, None),
    ("gptq-in-block-numbers", {**GPTQ4, "modules_in_block_to_quantize": [[1, 2]]}, True),
    ("gptq-in-block-blank-name", {**GPTQ4, "modules_in_block_to_quantize": [[""]]}, True),
    ("gptq-in-block-object", {**GPTQ4, "modules_in_block_to_quantize": {"a": 1}}, True),
    ("gptq-2-bits", {**GPTQ4, "bits": 2}, False),
    ("gptq-3-bits", {**GPTQ4, "bits": 3}, False),
    ("gptq-8-bits", {**GPTQ4, "bits": 8}, False),
    ("gptq-v2-format", {**GPTQ4, "checkpoint_format": "gptq_v2"}, False),
    ("gptq-asym", {**GPTQ4, "sym": False}, False),
    ("gptq-marlin-name", {**GPTQ4, "quant_method": "gptq_marlin"}, None),
    ("awq-no-zero-point", {"quant_method": "awq", "bits": 4, "group_size": 128, "zero_point": False, "version": "gemm"}, False),
    ("awq-gemv-fast", {"quant_method": "awq", "bits": 4, "group_size": 128, "zero_point": True, "version": "gemv_fast"}, None),
    ("awq-group-row", {"quant_method": "awq", "bits": 4, "group_size": -1, "zero_point": True}, None),
    # compressed-tensors: sparse storage, KV scheme, NVFP4 packing, quantised activations only
    ("ct-sparse-24-bitmask", {**CT_FP8, "sparsity_config": {"format": "sparse-24-bitmask", "sparsity_structure": "2:4", "targets": ["Linear"], "ignore": ["lm_head"]}}, True),
    ("ct-sparse-bitmask", {**CT_FP8, "sparsity_config": {"format": "sparse-bitmask", "global_sparsity": 0.5, "targets": ["Linear"]}}, True),
    ("ct-sparse-dense", {**CT_FP8, "sparsity_config": {"format": "dense", "targets": []}}, False),
    ("ct-sparse-empty", {**CT_FP8, "sparsity_config": {}}, False),
    ("ct-sparse-null", {**CT_FP8, "sparsity_config": None}, False),
    ("ct-marlin-24-no-sparsity", {**CT_FP8, "format": "marlin-24"}, None),
    ("ct-kv-cache-scheme", {**CT_FP8, "kv_cache_scheme": {"num_bits": 8, "type": "float", "strategy": "tensor", "dynamic": False}}, None),
    ("ct-nvfp4", {**CT_FP8, "format": "nvfp4-pack-quantized", "config_groups": {"group_0": {"targets": ["Linear"], "weights": {
        "num_bits": 4, "type": "float", "strategy": "tensor_group", "group_size": 16, "symmetric": True}}}}, False),
    ("ct-only-sparsity", {"quant_method": "compressed-tensors", "format": "dense", "config_groups": {},
                          "sparsity_config": {"format": "sparse-24-bitmask", "targets": ["Linear"]}}, True),
    # FP8 block sizes at their edges
    ("fp8-block-1x1", {"quant_method": "fp8", "weight_block_size": [1, 1]}, None),
    ("fp8-block-past-matrix", {"quant_method": "fp8", "weight_block_size": [100000, 100000]}, None),
    ("fp8-static-activations", {"quant_method": "fp8", "activation_scheme": "static"}, False),
    # methods transformers knows: sized, or refused naming quant_method (never sized as bf16)
    *[(f"method-{m}", {"quant_method": m, "bits": 4}, None) for m in (
        "bitsandbytes", "torchao", "quark", "auto-round", "hqq", "eetq", "aqlm", "vptq", "higgs", "spqr",
        "bitnet", "fp_quant", "quanto", "fbgemm_fp8", "compressed_tensors", "GPTQ", "AWQ", "Fp8")],
    ("bnb-4bit", {"quant_method": "bitsandbytes", "load_in_4bit": True, "bnb_4bit_quant_type": "nf4"}, None),
    ("modelopt-w4a8-awq", {"quant_method": "modelopt", "quant_algo": "W4A8_AWQ", "group_size": 128}, True),
    ("modelopt-mixed", {"quant_method": "modelopt", "quant_algo": "MIXED_PRECISION", "quantized_layers": {}}, True),
    ("modelopt-fp8-pb-wo", {"quant_method": "modelopt", "quant_algo": "FP8_PB_WO"}, True),
    ("modelopt-lowercase", {"quant_method": "modelopt", "quant_algo": "nvfp4", "group_size": 16}, None),
]


# AutoGPTQ's quantize_config.json and AutoAWQ's quant_config.json beside a config.json without
# quantization_config (TheBloke-era int4 checkpoints): int4, or refused naming the side file
SIDE12: list[tuple[str, str, object, bool | None]] = [
    ("autogptq-side-file", "quantize_config.json", {"bits": 4, "group_size": 128, "desc_act": False, "sym": True}, False),
    ("autoawq-side-file", "quant_config.json", {"zero_point": True, "q_group_size": 128, "w_bit": 4, "version": "GEMM"}, False),
    ("autogptq-side-file-bits-5", "quantize_config.json", {"bits": 5, "group_size": 128}, True),
    ("autogptq-side-file-list", "quantize_config.json", [4, 128], True),
    ("autoawq-side-file-text", "quant_config.json", "not json", True),
]


def quants12_cases() -> Iterator[Case]:
    for name, quant, invalid in QUANTS12:
        yield Case("quants12", name, MEM, {"m/config.json": json.dumps({**LLAMA_70B, "quantization_config": quant})}, invalid)
    for name, side, content, invalid in SIDE12:
        text = content if isinstance(content, str) else json.dumps(content)
        yield Case("quants12", name, MEM, {"m/config.json": json.dumps(LLAMA_70B), f"m/{side}": text}, invalid)


# Inputs far larger than any before --------------------------------------------------------------

def _sessions(n: int) -> str:
    return "".join(json.dumps({"session_id": f"s{i}", "turn": 0, "input_tokens": 50, "output_tokens": 20,
                                "arrival_s": i * 0.01}) + "\n" for i in range(n))


def big12_cases() -> Iterator[Case]:
    runs = [fs.vllm_run(8 + i % 512, 500.0 + i * 0.01, 14.0 + i * 1e-4) for i in range(20_000)]
    repeated = _lines(fs.RUNS * 33_334)
    log = (fs.LOGS / "vllm_v1_v16_llama31_8b_eager.txt").read_text()
    hist = "tokens,count\n" + "".join(f"{i},1\n" for i in range(1, 100_001))
    table: list[tuple[str, list[str], dict[str, FileSpec], bool | None]] = [
        ("sweep-100k-sessions", ["sweep", "llama-3.1-8b", "--workload", "{d}/t.jsonl", "--concurrency", "4"], {"t.jsonl": _sessions(100_000)}, None),
        ("plan-100k-sessions", ["plan", "llama-3.1-8b", "--gpus", "1", "--jobs", "1", "--workload", "{d}/t.jsonl"], {"t.jsonl": _sessions(100_000)}, None),
        ("plan-10k-sessions", ["plan", "llama-3.1-8b", "--gpus", "1", "--jobs", "1", "--workload", "{d}/t.jsonl"], {"t.jsonl": _sessions(10_000)}, None),
        ("calibrate-100k-appended-repeats", CAL, {"r.json": repeated}, True),
        ("calibrate-20k-distinct-runs", CAL, {"r.json": _lines(runs)}, None),
        ("calibrate-100k-csv-rows", ["calibrate", "{d}/b.csv", "--model", "llama-3.1-8b", "--gpu", "h100-sxm"], {"b.csv": CSV_HEAD + CSV_ROWS * 33_334}, True),
        ("calibrate-log-1000-starts", ["calibrate", "{d}/log.txt", "--model", "llama-3.1-8b"], {"log.txt": log * 1000}, True),
        ("sweep-hist-100k-buckets", ["sweep", "llama-3.1-8b", "--isl", "100", "--osl", "hist:{d}/h.csv", "--num-requests", "20", "--concurrency", "4"], {"h.csv": hist}, None),
    ]
    for name, argv, files, invalid in table:
        yield Case("big12", name, argv, files, invalid)


# Check specs: key case, TOML's number spellings, paths relative to a spec in a sub-folder -------

def _spec(old: str, new: str) -> str:
    assert old in fs.SPEC
    return fs.SPEC.replace(old, new)


TRACE_SPEC = fs.SPEC.replace('isl = 100\nosl = 100\narrival = "batch"\nnum_requests = 20\n', 'trace = "../t.jsonl"\n').replace(
    "no_preemption_at = 4", "no_preemption_at = 2").replace("concurrency = 4", "concurrency = 2")


def spec12_cases() -> Iterator[Case]:
    chk = ["check", "{d}/s.toml"]
    edits: list[tuple[str, str, str, bool | None]] = [
        ("key-name-title", 'name = "s"', 'Name = "s"', True),
        ("key-model-upper", 'model = "llama', 'MODEL = "llama', True),
        ("key-workload-title", "[scenario.workload]", "[scenario.Workload]", True),
        ("arrival-upper", 'arrival = "batch"', 'arrival = "BATCH"', None),
        ("engine-upper", 'engine = "vllm"', 'engine = "VLLM"', None),
        ("layout-upper", 'layout = "tp1"', 'layout = "TP1"', None),
        ("headroom-minus-zero", "kv_headroom_min = 0.1", "kv_headroom_min = -0.0", False),
        ("headroom-subnormal", "kv_headroom_min = 0.1", "kv_headroom_min = 1e-320", False),
        ("headroom-one", "kv_headroom_min = 0.1", "kv_headroom_min = 1.0", True),
        ("headroom-nan", "kv_headroom_min = 0.1", "kv_headroom_min = nan", True),
        ("concurrency-hex", "concurrency = 4", "concurrency = 0x4", False),
        ("isl-underscore", "isl = 100", "isl = 1_00", False),
        ("isl-float-integral", "isl = 100", "isl = 100.0", None),
        ("isl-float-fraction", "isl = 100", "isl = 100.5", True),
        ("isl-bool", "isl = 100", "isl = true", True),
        ("num-requests-int64-max", "num_requests = 20", "num_requests = 9223372036854775807", True),
        ("isl-date", "isl = 100", "isl = 1979-05-27", True),
        ("name-multiline", 'name = "s"', 'name = """s\nt"""', None),
        ("name-empty", 'name = "s"', 'name = ""', None),
    ]
    for label, old, new, invalid in edits:
        yield Case("spec12", label, chk, {"s.toml": _spec(old, new)}, invalid)
    sub = {"sub/s.toml": TRACE_SPEC, "t.jsonl": _lines(fs.PLAIN_ROWS)}
    sub_chk = ["check", "{d}/sub/s.toml"]
    for label, extra, invalid in [
        ("sub-trace-dotdot", [], False),
        ("sub-markdown-is-trace-dotdot", ["--markdown", "{d}/sub/../t.jsonl", "--force"], True),
        ("sub-junit-is-spec-dotdot", ["--junit", "{d}/sub/../sub/s.toml", "--force"], True),
        ("sub-baseline-is-trace", ["--baseline", "{d}/t.jsonl"], True),
        ("sub-write-baseline-is-trace", ["--write-baseline", "{d}/t.jsonl", "--force"], True),
        ("sub-junit-and-markdown-same", ["--junit", "{d}/o", "--markdown", "{d}/sub/../o"], True),
    ]:
        yield Case("spec12", label, [*sub_chk, *extra], sub, invalid)
    # the spec itself reached through a symlink from another folder: its paths stay relative to
    # the folder the link is in (or its target): either answer, never a crash
    yield Case("spec12", "spec-via-symlink", ["check", "{d}/l.toml"], {**sub, "l.toml": ("symlink", "sub/s.toml")}, None)


# Size, tier and pool options at spellings left out -----------------------------------------------

FLAGS12: list[tuple[str, list[str], bool | None]] = [
    ("offload-lower-gb", ["--offload", "cpu:64gb"], None),
    ("offload-arabic-digits", ["--offload", "cpu:١٢GiB"], True),
    ("offload-upper-tier", ["--offload", "CPU:64GIB"], None),
    ("offload-subnormal", ["--offload", "cpu:1e-320GiB"], True),
    ("offload-half-byte", ["--offload", "cpu:0.5B"], True),
    ("offload-space-in-size", ["--offload", "cpu:64 GiB"], None),
    ("offload-nvme-only", ["--offload", "nvme:4TiB"], None),
    ("gpu-total-memory-subnormal", ["--gpu-total-memory", "1e-320GiB"], True),
    ("gpu-total-memory-arabic", ["--gpu-total-memory", "٨٠GiB"], True),
    ("kv-cache-memory-minus-zero", ["--kv-cache-memory", "-0GiB"], True),
    ("kv-cache-memory-subnormal", ["--kv-cache-memory", "1e-320GiB"], True),
    ("swap-space-huge", ["--swap-space", "1e308GiB", "--preemption", "swap"], True),
    ("disagg-upper", ["--disagg", "1P:TP1,1D:TP1"], None),
    ("disagg-leading-zeros", ["--disagg", "01p:tp01,1d:tp1"], None),
    ("disagg-trailing-comma", ["--disagg", "1p:tp1,1d:tp1,"], True),
    ("disagg-spaces", ["--disagg", " 1p:tp1 , 1d:tp1 "], None),
    ("spec-accept-subnormal", ["--speculative", "ngram:1", "--spec-accept-length", "1e-320"], True),
    ("spec-accept-max", ["--speculative", "ngram:1", "--spec-accept-length", "2"], False),
    ("request-overhead-minus-zero", ["--request-overhead-ms", "-0"], False),
    ("request-overhead-huge", ["--request-overhead-ms", "1e308"], True),
    ("block-size-1", ["--block-size", "1"], None),
    ("max-num-seqs-exponent", ["--max-num-seqs", "1e3"], True),
    ("max-num-batched-tokens-1", ["--max-num-batched-tokens", "1"], True),
    ("max-model-len-just-enough", ["--max-model-len", "200"], False),
    ("max-model-len-one-short", ["--max-model-len", "199"], True),
]


def flags12_cases() -> Iterator[Case]:
    for name, extra, invalid in FLAGS12:
        yield Case("flags12", name, [*SW, *extra], {}, invalid)


# Standard input for every input that reads a file ------------------------------------------------

def stdin12_cases() -> Iterator[Case]:
    for src in ("-", "/dev/stdin"):
        for name, argv in [
            ("workload", ["sweep", "llama-3.1-8b", "--workload", src, "--concurrency", "4"]),
            ("calibration", [*SW, "--calibration", src]),
            ("model", ["memory", src, "--gpus", "1"]),
            ("check-spec", ["check", src]),
            ("check-baseline", ["check", "{d}/s.toml", "--baseline", src]),
            ("osl-hist", ["sweep", "llama-3.1-8b", "--isl", "100", "--osl", f"hist:{src}", "--num-requests", "20", "--concurrency", "4"]),
            ("gpu-file", [*SW, "--gpus", "1", "--gpu", src]),
            ("calibrate-input", ["calibrate", src, "--model", "llama-3.1-8b", "--gpu", "h100-sxm"]),
        ]:
            files: dict[str, FileSpec] = {"s.toml": fs.SPEC} if "baseline" in name else {}
            yield Case("stdin12", f"{name}-{'dash' if src == '-' else 'dev-stdin'}", argv, files, True)


SURFACES12: dict[str, Callable[[], Iterator[Case]]] = {
    "quants12": quants12_cases, "big12": big12_cases, "spec12": spec12_cases,
    "flags12": flags12_cases, "stdin12": stdin12_cases,
}
# fmt: on
