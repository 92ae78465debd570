"""The eighteenth bad-input campaign's surfaces (issue 23), run by `fuzz_surfaces.py`:

    PYTHONPATH=. python benchmarks/fuzz_surfaces.py logs18 calfile18 traces18 models18

What the sixteen campaigns before did not try: engine start-up logs as terminals and log
collectors hand them over (ANSI colour codes around words and figures, every line printed twice
by two logging handlers, two ranks interleaved, CR-only line ends, figures in MiB or bytes, a
negative KV figure with no failed start, a crashed start, a start with `--enable-lora` or
`--enable-sleep-mode`, a log of another model or layout than the flags; logs18); calibration
files edited by hand (blank fields, a layout or KV dtype nothing reads, no terms at all, fields
from another engine or GPU, applied with --force; calfile18); `--workload` traces at their scale
edges (one row, 100,000 rows, equal and unsorted timestamps, millisecond and Unix timestamps,
giant token counts, a session of 1,000 turns; traces18); model folders with the files beside
config.json that capcliff must ignore (generation_config, tokenizer_config, a preprocessor
config), numbered shards with one missing and no index, a tensor two shards hold, an index
naming a tensor twice (models18).
"""

# Data tables: one case per line, some past 100 characters.
# ruff: noqa: E501
from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator

import fuzz_surfaces as fs
from fuzz_cases7 import _lines, _st
from fuzz_cases13 import LLAMA
from fuzz_harness import Case, FileSpec

# fmt: off
V16 = "vllm_v1_v16_llama31_8b_eager.txt"
SGL = "sglang_s02_qwq_32b_4xl4_tp4.txt"
TRT = "trtllm_t01_llama31_8b_rtx5090.txt"
V35 = "vllm_v1_v35_dsr1_0528_fp4_4xb200_tp4_ep4.txt"
V24 = "vllm_v0_v24_llama3_8b_a100_40gb.txt"
MODEL_OF = {V16: "llama-3.1-8b", SGL: "qwen3-32b", TRT: "llama-3.1-8b", V35: "deepseek-r1-0528-fp4", V24: "llama-3.1-8b"}
ESC = "\x1b"


def _log(name: str) -> str:
    return "\n".join(ln for ln in (fs.LOGS / name).read_text().splitlines() if not ln.startswith("#"))


def _colour_levels(text: str) -> str:
    """vLLM's coloured formatter (VLLM_LOGGING_COLOR): the level name and the file:line coloured."""
    return re.sub(r"\b(INFO|WARNING|DEBUG)\b", f"{ESC}[32m\\1{ESC}[0m", text)


def _colour_numbers(text: str) -> str:
    """Every figure wrapped in bold (a terminal capture of a highlighting log viewer)."""
    return re.sub(r"(?<![\w.\[;])(\d[\d,]*\.?\d*)(?= ?(?:GiB|GB|tokens|x\b))", f"{ESC}[1m\\1{ESC}[0m", text)


def _doubled_lines(text: str) -> str:
    """Every line printed twice in a row: vLLM's handler and the root logger's both attached."""
    return "\n".join(ln for ln in text.splitlines() for _ in (0, 1)) + "\n"


def _two_ranks(text: str) -> str:
    """Each EngineCore line followed by the same line of a second DP rank."""
    out: list[str] = []
    for ln in text.splitlines():
        out.append(ln)
        if "EngineCore_0" in ln:
            out.append(ln.replace("EngineCore_0", "EngineCore_1"))
    return "\n".join(out)


def _cut_before(text: str, phrase: str, tail: str) -> str:
    return text[: text.index(phrase)] + tail


V16_TEXT = _log(V16)
KV_LINE = "Available KV cache memory: 85.79 GiB"
CRASH_NEG = "(EngineCore_0 pid=454) INFO 09-21 21:38:25 [gpu_worker.py:276] Available KV cache memory: -3.20 GiB\n(EngineCore_0 pid=454) ERROR 09-21 21:38:26 [core.py:700] ValueError: No available memory for the cache blocks. Try increasing `gpu_memory_utilization` when initializing the engine.\n"
CRASH_OOM = "(EngineCore_0 pid=454) ERROR 09-21 21:38:25 [core.py:700] torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB\n"
LORA_ARGS = "non-default args: {'enable_lora': True, 'max_loras': 4, 'max_lora_rank': 64, "
SLEEP_ARGS = "non-default args: {'enable_sleep_mode': True, "
SLEEP_LINE = "\n(EngineCore_0 pid=454) INFO 09-21 21:40:00 [gpu_worker.py:104] Sleep mode freed 85.79 GiB memory, 0.50 GiB memory is still in use."

# (name, log text, extra flags, invalid?)
LOGS18: list[tuple[str, str, list[str], bool | None]] = [
    ("v16-ansi-levels", _colour_levels(V16_TEXT), [], False),
    ("v16-ansi-figures", _colour_numbers(V16_TEXT), [], False),
    ("sglang-ansi-figures", _colour_numbers(_log(SGL)), [], False),
    ("trtllm-ansi-levels", _colour_levels(_log(TRT)), [], False),
    ("v16-lines-doubled", _doubled_lines(V16_TEXT), [], False),
    ("sglang-lines-doubled", _doubled_lines(_log(SGL)), [], False),
    ("v24-lines-doubled", _doubled_lines(_log(V24)), [], False),
    ("v16-two-ranks", _two_ranks(V16_TEXT), [], False),
    ("v16-cr-only", V16_TEXT.replace("\n", "\r"), [], False),
    ("v35-crlf", _log(V35).replace("\n", "\r\n"), [], False),
    ("v16-kv-in-mib", V16_TEXT.replace(KV_LINE, "Available KV cache memory: 87849 MiB"), [], False),
    ("v16-kv-in-gb", V16_TEXT.replace(KV_LINE, "Available KV cache memory: 85.79 GB"), [], False),
    ("v16-kv-negative", V16_TEXT.replace(KV_LINE, "Available KV cache memory: -3.20 GiB"), [], True),
    ("v16-blocks-negative", V16_TEXT.replace("num_gpu_blocks is: 43925", "num_gpu_blocks is: -43925"), [], True),
    ("v16-crash-no-room", _cut_before(V16_TEXT, "(EngineCore_0 pid=454) INFO 09-21 21:38:25", CRASH_NEG), [], None),
    ("v16-crash-oom", _cut_before(V16_TEXT, "(EngineCore_0 pid=454) INFO 09-21 21:38:25", CRASH_OOM), [], True),
    ("v16-lora", V16_TEXT.replace("non-default args: {", LORA_ARGS), [], True),
    ("v16-sleep-mode", V16_TEXT.replace("non-default args: {", SLEEP_ARGS) + SLEEP_LINE, [], False),
    ("v16-same-line-twice", V16_TEXT.replace(KV_LINE, KV_LINE + "\n" + V16_TEXT.splitlines()[12]), [], False),
    ("v16-other-model", V16_TEXT, ["--model", "qwen3-32b"], True),
    ("v16-other-tp", V16_TEXT, ["--layout", "tp2"], True),
    ("v35-other-tp", _log(V35), ["--layout", "tp8"], True),
    ("sglang-other-engine", _log(SGL), ["--engine", "vllm"], True),
    ("v16-header-only", "\n".join(V16_TEXT.splitlines()[:8]), [], True),
]


def logs18_cases() -> Iterator[Case]:
    for name, text, extra, invalid in LOGS18:
        source = next(k for k, v in {V16: "v16", SGL: "sglang", TRT: "trtllm", V35: "v35", V24: "v24"}.items() if name.startswith(v))
        has_model = any(a == "--model" for a in extra)
        argv = ["calibrate", "{d}/log.txt", *([] if has_model else ["--model", MODEL_OF[source]]), *extra]
        yield Case("logs18", name, argv, {"log.txt": text}, invalid)
    # written back and applied: the file a colour-coded log writes is the plain log's
    yield Case("logs18", "v16-ansi-write", ["calibrate", "{d}/log.txt", "--model", "llama-3.1-8b", "-o", "{d}/c.toml"],
               {"log.txt": _colour_numbers(V16_TEXT)}, False)


CAL_FILE = """engine = "vllm"
engine_version = "0.10.2"
source = "log.txt"
model = "llama-3.1-8b"
model_shape = "llama L32 h4096 a32/kv8 d128 i14336 v128256 bf16"
gpu = "h100-sxm"
layout = "tp1"
weight_dtype = "bf16"
kv_cache_dtype = "bf16"

[terms_gib]
weights_overhead = 0.0314
"""


def _set(key: str, raw: str) -> str:
    return re.sub(rf"^{key} = .*$", f"{key} = {raw}", CAL_FILE, count=1, flags=re.M)


CALFILE18: list[tuple[str, str, bool | None]] = [
    ("valid", CAL_FILE, False),
    ("kv-dtype-unknown", _set("kv_cache_dtype", '"banana"'), True),
    ("kv-dtype-fp8-e4m3", _set("kv_cache_dtype", '"fp8_e4m3"'), True),  # another deployment's
    ("kv-dtype-auto", _set("kv_cache_dtype", '"auto"'), False),
    ("layout-unreadable", _set("layout", '"banana"'), True),
    ("layout-tp0", _set("layout", '"tp0"'), True),
    ("layout-blank", _set("layout", '""'), True),
    ("gpu-blank", _set("gpu", '" "'), True),
    ("model-blank", _set("model", '""'), True),
    ("engine-version-blank", _set("engine_version", '""'), True),
    ("engine-version-other", _set("engine_version", '"0.4.3"'), False),
    ("model-shape-blank", _set("model_shape", '""'), True),
    ("no-terms-table", CAL_FILE.split("[terms_gib]")[0], True),
    ("empty-terms-table", CAL_FILE.split("[terms_gib]")[0] + "[terms_gib]\n", True),
    ("only-source-and-engine", 'engine = "vllm"\nsource = "x"\n', True),
    ("version-key", "version = 2\n" + CAL_FILE, True),
    ("engine-sglang", _set("engine", '"sglang"'), True),
    ("gpu-mi300x", _set("gpu", '"mi300x"'), True),
    ("gpu-unknown-id", _set("gpu", '"rtx-9090"'), True),
    ("model-other", _set("model", '"qwen3-32b"'), True),
]


def calfile18_cases() -> Iterator[Case]:
    sweep = ["sweep", "llama-3.1-8b", "--gpu", "h100-sxm", *fs.SMALL, "--concurrency", "4", "--calibration", "{d}/c.toml"]
    for name, text, invalid in CALFILE18:
        yield Case("calfile18", name, sweep, {"c.toml": text}, invalid)
        # --force applies another deployment's file, never a file that names nothing readable
        blank_or_unread = invalid and name not in {"kv-dtype-fp8-e4m3", "engine-sglang", "gpu-mi300x", "gpu-unknown-id", "model-other"}
        yield Case("calfile18", f"{name}-force", [*sweep, "--force"], {"c.toml": text}, True if blank_or_unread else (None if invalid else False))


def _row(arrival: float, isl: int, osl: int) -> dict[str, object]:
    return {"arrival_s": arrival, "input_tokens": isl, "output_tokens": osl}


def _session(turns: int, isl: int, osl: int) -> str:
    return _lines([{"session_id": "a", "turn": t, "input_tokens": isl, "output_tokens": osl,
                    **({"arrival_s": 0.0} if t == 0 else {"think_s": 0.1})} for t in range(turns)])


TRACES18: list[tuple[str, str, bool | None]] = [
    ("one-row", _lines([_row(0.0, 50, 20)]), False),
    ("rows-100k", _lines([_row(i * 0.001, 50, 2) for i in range(100_000)]), False),
    ("equal-timestamps", _lines([_row(1.0, 50, 20)] * 50), False),
    ("unsorted-timestamps", _lines([_row(3.0, 50, 20), _row(1.0, 60, 20), _row(2.0, 70, 20)]), False),
    ("millisecond-offsets", _lines([_row(i * 400.0, 50, 20) for i in range(50)]), False),
    ("unix-seconds", _lines([_row(1_733_500_000 + i * 0.4, 50, 20) for i in range(20)]), True),
    ("unix-milliseconds", _lines([_row(1_733_500_000_000 + i * 400, 50, 20) for i in range(20)]), True),
    ("input-1e9-tokens", _lines([_row(0.0, 10**9, 20)]), True),
    ("output-1e9-tokens", _lines([_row(0.0, 50, 10**9)]), True),
    ("input-1e18-tokens", _lines([_row(0.0, 10**18, 20)]), True),
    ("session-1000-turns", _session(1000, 20, 5), False),
    ("session-200-turns-past-context", _session(200, 2000, 500), True),
]


def traces18_cases() -> Iterator[Case]:
    for name, text, invalid in TRACES18:
        yield Case("traces18", name, fs.TRACE_SWEEP, {"t.jsonl": text}, invalid)
    plan = ["plan", "llama-3.1-8b", "--gpus", "1", "--jobs", "1", "--workload", "{d}/t.jsonl"]
    yield Case("traces18", "plan-equal-timestamps", plan, {"t.jsonl": _lines([_row(1.0, 50, 20)] * 50)}, False)
    yield Case("traces18", "plan-session-1000-turns", plan, {"t.jsonl": _session(1000, 20, 5)}, False)


W = {"dtype": "BF16", "shape": [2, 2], "data_offsets": [0, 8]}
SH = ("model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors")
SH3 = tuple(f"model-0000{i}-of-00003.safetensors" for i in (1, 2, 3))
CFG = {"m/config.json": json.dumps(LLAMA)}
MODELS18: list[tuple[str, dict[str, FileSpec], bool | None]] = [
    ("generation-config", {**CFG, "m/generation_config.json": json.dumps({"max_length": 4096, "eos_token_id": [1, 2]})}, False),
    ("generation-config-garbage", {**CFG, "m/generation_config.json": "{not json"}, False),
    ("tokenizer-max-length-1e30", {**CFG, "m/tokenizer_config.json": json.dumps({"model_max_length": 1e30})}, False),
    ("tokenizer-max-length-512", {**CFG, "m/tokenizer_config.json": json.dumps({"model_max_length": 512})}, False),
    ("preprocessor-config", {**CFG, "m/preprocessor_config.json": json.dumps({"image_size": 336})}, False),
    ("numbered-shard-missing-no-index", {**CFG, f"m/{SH[0]}": _st({"a": W})}, True),
    ("numbered-middle-shard-missing", {**CFG, f"m/{SH3[0]}": _st({"a": W}), f"m/{SH3[2]}": _st({"c": W})}, True),
    ("numbered-shards-complete", {**CFG, f"m/{SH[0]}": _st({"a": W}), f"m/{SH[1]}": _st({"b": W})}, False),
    ("numbered-shard-k-past-n", {**CFG, f"m/{SH[0]}": _st({"a": W}), f"m/{SH[1]}": _st({"b": W}), "m/model-00003-of-00002.safetensors": _st({"c": W})}, None),
    ("numbered-5000-digit-count", {**CFG, "m/model-1-of-" + "9" * 200 + ".safetensors": _st({"a": W})}, None),
    ("tensor-in-two-shards-no-index", {**CFG, f"m/{SH[0]}": _st({"a": W}), f"m/{SH[1]}": _st({"a": W})}, False),
    ("index-lists-tensor-twice", {**CFG, "m/model.safetensors.index.json": '{"weight_map": {"a": "' + SH[0] + '", "a": "' + SH[1] + '"}}', f"m/{SH[0]}": _st({"a": W}), f"m/{SH[1]}": _st({"b": W})}, None),
]


def models18_cases() -> Iterator[Case]:
    for name, files, invalid in MODELS18:
        yield Case("models18", name, ["memory", "{d}/m", "--gpus", "1", "--gpu", "h200-sxm"], files, invalid)


SURFACES18: dict[str, Callable[[], Iterator[Case]]] = {
    "logs18": logs18_cases, "calfile18": calfile18_cases, "traces18": traces18_cases,
    "models18": models18_cases,
}
# fmt: on
