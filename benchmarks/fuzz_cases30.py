"""The thirtieth bad-input campaign's surfaces (issue 23), run by `fuzz_surfaces.py`:

    PYTHONPATH=. python benchmarks/fuzz_surfaces.py ckpt30 scheme30 ct30 flags30 logs30 check30 --jobs 1

The KV cache dtype a deployment stores (memory/kv_default.py, analysis/kv_cache_default.py):
checkpoints naming their own KV quantisation, read by each engine release as its source reads
them, crossed with `--kv-cache-dtype` and `--engine-version`:

- ckpt30: ModelOpt's `kv_cache_quant_algo` (FP8, fp8, " Fp8 ", NVFP4, INT8, null, "", "none",
  an unknown string, a number, a list, an object, a boolean) in hf_quant_config.json beside a
  config.json without a quantization_config (ModelOpt <= 0.29) and inline in config.json, for
  vLLM V1 (latest, 0.13, 0.14, 0.21), V0 0.6.3, SGLang (latest, 0.4.2) and TensorRT-LLM;
- scheme30: ModelOpt 1.x's flat config.json, its `kv_cache_scheme` an FP8 object, NVFP4 and INT8
  as strings or objects, an object of no known width, null, a list;
- ct30: compressed-tensors `kv_cache_scheme` shapes (per-tensor, per-attention-head, other
  strategies and widths, null, a string) and the flags given over them;
- flags30: every `--kv-cache-dtype` spelling on each engine, over a plain and an FP8-KV
  checkpoint, and `--engine-version` strings (valid, old, future, malformed, container tags);
  the engine lines of a plan;
- logs30: `calibrate` start-up logs that state a KV dtype (vLLM V1 0.15's line mutated to each
  spelling; SGLang 0.4.6's server_args);
- check30: the same through a check spec's `kv_cache_dtype` and `engine_version`.

Expected bytes per token are worked by hand from the engines' sources (read via the code
index; docs/validation.md lists each file): Llama 3.1 8B holds 2 x 32 layers x 8 KV heads x 128
= 65,536 K and V elements a token, 131,072 B at 16 bits and 65,536 B at FP8; Llama 3.3 70B
2 x 80 x 8 x 128 = 163,840 elements, 327,680 B and 163,840 B.

    PYTHONPATH=. python benchmarks/fuzz_cases30.py

runs every case and prints the classes the campaign counts (traceback, hang, valid input
refused, nonsense accepted, unclear error, lost file), then one line per finding.
"""

# Data tables: one case per line, some past 100 characters.
# ruff: noqa: E501
from __future__ import annotations

import json
import math
import tomllib
from collections.abc import Callable, Iterator
from pathlib import Path

from fuzz_cases23 import _cal
from fuzz_harness import Case, FileSpec
from fuzz_surfaces import SPEC

ROOT = Path(__file__).resolve().parent.parent
LOGS = ROOT / "tests" / "fixtures" / "logs"
B8_16, B8_FP8 = 131_072, 65_536  # Llama 3.1 8B: 2 x 32 x 8 x 128 elements a token
B70_16, B70_FP8 = 327_680, 163_840  # Llama 3.3 70B: 2 x 80 x 8 x 128

# (engine, --engine-version or None: the latest modelled release)
ENGINES: list[tuple[str, str | None]] = [
    ("vllm", None), ("vllm", "0.13.0"), ("vllm", "0.14.0"), ("vllm", "0.21.0"),
    ("vllm-v0", "0.6.3"), ("sglang", None), ("sglang", "0.4.2"), ("trtllm", None),
]  # fmt: skip


def _release(version: str | None) -> tuple[int, ...]:
    return (999,) if version is None else tuple(int(p) for p in version.split("."))


def _llama_config() -> dict[str, object]:
    card = tomllib.loads((ROOT / "model_cards" / "llama-3.1-8b.toml").read_text())
    return dict(card["config"])


Expect = int | tuple[str, ...] | None  # bytes per token, words a refusal names, None: either


def _modelopt_expect(algo: object, engine: str, version: str | None) -> Expect:
    """What `engine` at `version` stores for ModelOpt's kv_cache_quant_algo `algo`:
    - SGLang from 0.4.3 (configure_kv_cache_dtype): FP8 where `algo.upper() == "FP8"`;
    - vLLM V1 from 0.14 (get_kv_cache_quant_algo_string): `algo.lower()` through
      MODELOPT_TO_VLLM_KV_CACHE_DTYPE_MAP: fp8, and nvfp4 from 0.21; else auto (16 bits);
    - TensorRT-LLM (load_modelopt_quant_config): QuantAlgo(algo), FP8/NVFP4/INT8 by exact name,
      any other name fails at load; "", "none", null: none.
    capcliff sizes 16-bit and FP8 caches: NVFP4 and INT8 caches are refused by name."""
    if algo is not None and not isinstance(algo, str):
        return ("kv_cache_quant_algo",)
    if algo is None or algo.strip().lower() in ("", "none", "null"):
        return B8_16
    release = _release(version)
    if engine == "trtllm":
        if algo not in ("FP8", "NVFP4", "INT8"):
            return ("kv_cache_quant_algo", "TensorRT-LLM")
        return B8_FP8 if algo == "FP8" else ("kv_cache_quant_algo", algo)
    takes = (engine == "sglang" and release >= (0, 4, 3)) or (
        engine == "vllm" and release >= (0, 14, 0)
    )
    if not takes:
        return B8_16
    if algo.lower() == "fp8":
        return B8_FP8
    if engine == "vllm" and algo.lower() == "nvfp4" and release >= (0, 21, 0):
        return ("kv_cache_quant_algo", "NVFP4")
    return B8_16


def _kv(expected: int) -> Callable[[str], str | None]:
    """A reading of `memory --format json`: the KV bytes per token worked by hand."""

    def check(out: str) -> str | None:
        try:
            got = json.loads(out)["kv_bytes_per_token"]
        except (ValueError, KeyError):
            return "not a memory report"
        return None if got == expected else f"kv_bytes_per_token {got} (by hand {expected})"

    return check


def _memory(model: str, engine: str, version: str | None, *extra: str) -> list[str]:
    argv = ["memory", model, "--gpu", "b200", "--gpus", "1", "--engine", engine, "--format", "json"]
    return argv + (["--engine-version", version] if version is not None else []) + list(extra)


Table30 = list[tuple[str, list[str], dict[str, FileSpec], Expect]]


def _side_file(algo: object) -> dict[str, FileSpec]:
    quant = {"producer": {"name": "modelopt", "version": "0.27.1"},
             "quantization": {"quant_algo": "FP8", "kv_cache_quant_algo": algo, "exclude_modules": ["lm_head"]}}  # fmt: skip
    return {
        "m/config.json": json.dumps(_llama_config()),
        "m/hf_quant_config.json": json.dumps(quant),
    }


def _inline(quant: dict[str, object]) -> dict[str, FileSpec]:
    return {"m/config.json": json.dumps({**_llama_config(), "quantization_config": quant})}


ALGOS: list[object] = [
    "FP8",
    "fp8",
    " Fp8 ",
    "NVFP4",
    "INT8",
    None,
    "",
    "none",
    "W4A8_AWQ",
    8,
    ["FP8"],
    {"num_bits": 8},
    True,
]


def ckpt30_table() -> Table30:
    rows: Table30 = []
    for algo in ALGOS:
        for engine, version in ENGINES:
            expect = _modelopt_expect(algo, engine, version)
            tag = f"{json.dumps(algo)}-{engine}-{version or 'latest'}"
            rows.append(
                (f"side-{tag}", _memory("{d}/m", engine, version), _side_file(algo), expect)
            )
            inline = {"quant_method": "modelopt", "quant_algo": "FP8", "kv_cache_quant_algo": algo}
            rows.append(
                (f"inline-{tag}", _memory("{d}/m", engine, version), _inline(inline), expect)
            )
    return rows


# ModelOpt 1.x flat config.json (TensorRT-LLM's modelopt_config.py: FP8 as an object, NVFP4 and
# INT8 as strings; the objects of other widths map as _KV_SCHEME_DICT_MAP maps them)
SCHEMES: list[tuple[str, object, object]] = [
    ("fp8-object", {"dynamic": False, "num_bits": 8, "type": "float"}, "FP8"),
    ("nvfp4-string", "NVFP4", "NVFP4"),
    ("nvfp4-object", {"dynamic": False, "num_bits": 4, "type": "float"}, "NVFP4"),
    ("int8-string", "INT8", "INT8"),
    ("int8-object", {"dynamic": False, "num_bits": 8, "type": "int"}, "INT8"),
    ("null", None, None),
    (
        "unknown-object",
        {"num_bits": 6, "type": "float"},
        None,
    ),  # TensorRT-LLM: "KV-cache quant disabled"
    ("unknown-string", "FP6", None),
    ("list", [8], "bad"),
    ("number", 8, "bad"),
]


def _scheme_expect(algo: object, engine: str, version: str | None) -> Expect:
    if algo == "bad":
        return ("kv_cache_scheme",)
    if algo == "NVFP4" and engine == "vllm" and (0, 14, 0) <= _release(version) < (0, 21, 0):
        return B8_16  # vLLM's map held fp8 alone: auto
    return _modelopt_expect(algo, engine, version)


def scheme30_table() -> Table30:
    rows: Table30 = []
    for name, scheme, algo in SCHEMES:
        quant = {"quant_method": "modelopt", "quant_algo": "FP8", "producer": {"name": "modelopt", "version": "0.37.0"},
                 "config_groups": {"group_0": {"targets": ["Linear"], "weights": {"num_bits": 8, "type": "float"}}},
                 "ignore": ["lm_head"], "kv_cache_scheme": scheme}  # fmt: skip
        for engine, version in ENGINES:
            rows.append(
                (
                    f"{name}-{engine}-{version or 'latest'}",
                    _memory("{d}/m", engine, version),
                    _inline(quant),
                    _scheme_expect(algo, engine, version),
                )
            )
    return rows


def _ct(scheme: object) -> dict[str, FileSpec]:
    quant = {"quant_method": "compressed-tensors", "format": "float-quantized", "ignore": ["lm_head"],
             "config_groups": {"group_0": {"targets": ["Linear"], "weights": {"num_bits": 8, "type": "float", "strategy": "channel", "symmetric": True},
                                           "input_activations": {"num_bits": 8, "type": "float", "strategy": "token", "dynamic": True}}},
             "kv_cache_scheme": scheme}  # fmt: skip
    return _inline(quant)


CT_TENSOR = {
    "num_bits": 8,
    "type": "float",
    "strategy": "tensor",
    "dynamic": False,
    "symmetric": True,
}
CT_HEAD = {**CT_TENSOR, "strategy": "attn_head"}


def _ct_expect(engine: str, version: str | None, given: str | None = None) -> Expect:
    """vLLM's Attention sets `fp8` for any kv_cache_scheme, over the flag (from 0.14, PR 30141);
    SGLang and TensorRT-LLM read no KV dtype from it (the flag, else 16 bits)."""
    forced = engine == "vllm" and _release(version) >= (0, 14, 0)
    if forced:
        return B8_FP8 if given in (None, "fp8") else ("kv-cache-dtype", "FP8")
    return B8_FP8 if given == "fp8" else B8_16


def ct30_table() -> Table30:
    rows: Table30 = []
    for engine, version in ENGINES:
        tag = f"{engine}-{version or 'latest'}"
        rows.append(
            (
                f"tensor-{tag}",
                _memory("{d}/m", engine, version),
                _ct(CT_TENSOR),
                _ct_expect(engine, version),
            )
        )
        rows.append(
            (
                f"attn-head-{tag}",
                _memory("{d}/m", engine, version),
                _ct(CT_HEAD),
                _ct_expect(engine, version),
            )
        )
        for given in ("bf16", "fp8"):
            rows.append(
                (
                    f"tensor-given-{given}-{tag}",
                    _memory("{d}/m", engine, version, "--kv-cache-dtype", given),
                    _ct(CT_TENSOR),
                    _ct_expect(engine, version, given),
                )
            )
    rows += [
        ("null-vllm", _memory("{d}/m", "vllm", None), _ct(None), B8_16),
        (
            "strategy-channel",
            _memory("{d}/m", "vllm", None),
            _ct({**CT_TENSOR, "strategy": "channel"}),
            ("kv_cache_scheme.strategy",),
        ),
        (
            "strategy-missing",
            _memory("{d}/m", "vllm", None),
            _ct({"num_bits": 8, "type": "float"}),
            ("kv_cache_scheme.strategy",),
        ),
        (
            "int4",
            _memory("{d}/m", "vllm", None),
            _ct({**CT_TENSOR, "num_bits": 4, "type": "int"}),
            ("kv_cache_scheme.num_bits",),
        ),
        ("string", _memory("{d}/m", "vllm", None), _ct("fp8"), ("kv_cache_scheme",)),
        ("list", _memory("{d}/m", "vllm", None), _ct([CT_TENSOR]), ("kv_cache_scheme",)),
    ]
    return rows


# --kv-cache-dtype spellings: (value, bytes a token on Llama 3.1 8B; a tuple: refused naming)
GIVEN: list[tuple[str, Expect]] = [
    ("auto", B8_16), ("AUTO", B8_16), ("fp8", B8_FP8), ("FP8", B8_FP8), (" fp8 ", B8_FP8), ("fp8_e4m3", B8_FP8),
    ("fp8_e5m2", B8_FP8), ("float8_e4m3fn", B8_FP8), ("bf16", B8_16), ("bfloat16", B8_16), ("fp16", B8_16),
    ("float16", B8_16), ("half", B8_16), ("nvfp4", ("kv",)), ("fp4_e2m1", ("kv",)), ("int8", ("kv",)),
    ("fp8_inc", None), ("", ("kv",)), ("fp32", ("kv",)), ("8", ("kv",)),
]  # fmt: skip
VERSIONS: list[tuple[str, str, Expect]] = [
    # (engine, --engine-version, bytes a token of llama-3.3-70b-fp4 with no --kv-cache-dtype)
    ("vllm", "0.14.0", B70_FP8), ("vllm", "v0.14.0", B70_FP8), ("vllm", "0.14.0rc1", B70_FP8),
    ("vllm", "0.14.0-cu129", B70_FP8), ("vllm", "0.13.0", B70_16), ("vllm", "0.10.1.1", B70_16),
    ("vllm", "99.0.0", B70_FP8), ("vllm", "0.14", B70_FP8), ("vllm", "0.x", ("version",)),
    ("vllm", "latest", ("version",)), ("vllm", "25.01", ("version",)), ("vllm", "", ("version",)),
    ("vllm", "0.5.0", ("version",)), ("vllm-v0", "0.6.3", B70_16), ("vllm-v0", "0.11.0", ("version",)),
    ("sglang", "0.4.3", B70_FP8), ("sglang", "0.4.3.post2", B70_FP8), ("sglang", "0.4.2", B70_16),
    ("sglang", "0.5.0rc1", B70_FP8), ("sglang", "9" * 12, ("version",)), ("trtllm", "1.0.0", B70_FP8),
    ("trtllm", "1.3.0rc20", B70_FP8), ("trtllm", "0.20.0", None),
]  # fmt: skip


def flags30_table() -> Table30:
    rows: Table30 = []
    for value, expect in GIVEN:
        for engine in ("vllm", "vllm-v0", "sglang", "trtllm"):
            version = "0.6.3" if engine == "vllm-v0" else None
            rows.append(
                (
                    f"plain-{engine}-{value!r}",
                    _memory("llama-3.1-8b", engine, version, "--kv-cache-dtype", value),
                    {},
                    expect,
                )
            )
    # over the FP8-KV checkpoint: a 16-bit cache named by vLLM and SGLang; TensorRT-LLM refuses
    # any dtype but the checkpoint's own (validate_and_set_kv_cache_quant)
    for value in ("auto", "fp8", "fp8_e4m3", "bf16", "bfloat16", "fp16"):
        fp8 = value.startswith("fp8") or value == "auto"
        for engine in ("vllm", "sglang", "trtllm"):
            expect: Expect = B70_FP8 if fp8 else B70_16
            if engine == "trtllm" and not fp8:
                expect = ("kv-cache-dtype", "fp8")
            rows.append(
                (
                    f"fp4ckpt-{engine}-{value}",
                    _memory("llama-3.3-70b-fp4", engine, None, "--kv-cache-dtype", value),
                    {},
                    expect,
                )
            )
    for engine, version, expect in VERSIONS:
        rows.append(
            (
                f"version-{engine}-{version!r}",
                _memory("llama-3.3-70b-fp4", engine, version),
                {},
                expect,
            )
        )
    return rows


def _lines(*want: str, absent: tuple[str, ...] = ()) -> Callable[[str], str | None]:
    """A reading of a plan's printed engine lines: each of `want` printed, none of `absent`."""

    def check(out: str) -> str | None:
        missing = [w for w in want if w not in out]
        extra = [a for a in absent if a in out]
        return (
            "; ".join([*(f"no {w!r}" for w in missing), *(f"printed {a!r}" for a in extra)]) or None
        )

    return check


PLAN = [
    "plan",
    "--gpu",
    "b200",
    "--gpus",
    "1",
    "--jobs",
    "1",
    "--isl",
    "100",
    "--osl",
    "100",
    "--num-requests",
    "20",
    "--arrival",
    "batch",
]
PLANS: list[
    tuple[str, list[str], dict[str, FileSpec], bool | None, Callable[[str], str | None] | None]
] = [
    (
        "fp4ckpt-sglang-auto",
        [*PLAN[:1], "llama-3.3-70b-fp4", *PLAN[1:], "--engine", "sglang"],
        {},
        False,
        _lines("--kv-cache-dtype fp8_e4m3", "--kv-cache-dtype fp8"),
    ),
    (
        "fp4ckpt-vllm-bf16",
        [*PLAN[:1], "llama-3.3-70b-fp4", *PLAN[1:], "--engine", "vllm", "--kv-cache-dtype", "bf16"],
        {},
        False,
        _lines("--kv-cache-dtype bfloat16", "--kv-cache-dtype bf16"),
    ),
    # a compressed-tensors FP8-KV checkpoint planned on SGLang at 16 bits: vLLM's line cannot
    # store 16 bits (its Attention sets fp8 over the flag), which the answer must say
    (
        "ct-sglang-bf16-vllm-line",
        [*PLAN[:1], "{d}/m", *PLAN[1:], "--engine", "sglang"],
        _ct(CT_TENSOR),
        False,
        _lines("kv_cache_scheme", absent=("--kv-cache-dtype bfloat16",)),
    ),
]


# --- calibrate start-up logs that state a KV dtype ---------------------------------------------

V37 = (LOGS / "vllm_v1_v37_llama33_70b_fp4_b200_tp1.txt").read_text()
CAL_V37 = ["calibrate", "{d}/server.log", "--gpu", "b200", "--format", "json"]


def _v37(kv: str, version: str = "0.15.0") -> str:
    text = V37.replace("kv_cache_dtype=fp8", f"kv_cache_dtype={kv}").replace(
        "'kv_cache_dtype': 'fp8'", f"'kv_cache_dtype': '{kv}'"
    )
    return text.replace("(v0.15.0)", f"(v{version})")


def _modeled_bytes(expected: int) -> Callable[[str], str | None]:
    """A reading of `calibrate LOG --format json`: the KV bytes per token the comparison sized,
    its modeled KV pool over its modeled tokens."""

    def check(out: str) -> str | None:
        try:
            figures = {f["name"]: f for f in json.loads(out)["figures"]}
            per = figures["kv_cache_gib"]["modeled"] * (1 << 30) / figures["kv_tokens"]["modeled"]
        except (ValueError, KeyError, TypeError, ZeroDivisionError):
            return "no modeled KV pool and tokens"
        return (
            None
            if math.isclose(per, expected, rel_tol=0.01)
            else f"{per:,.0f} B a token modeled (by hand {expected:,})"
        )

    return check


SG046 = """[2025-05-01 10:00:00] server_args=ServerArgs(model_path='meta-llama/Meta-Llama-3.1-8B-Instruct', tokenizer_path='meta-llama/Meta-Llama-3.1-8B-Instruct', tokenizer_mode='auto', load_format='auto', trust_remote_code=False, dtype='auto', kv_cache_dtype='KVDT', quantization=None, context_length=None, device='cuda', served_model_name='meta-llama/Meta-Llama-3.1-8B-Instruct', mem_fraction_static=0.88, max_running_requests=None, max_total_tokens=None, chunked_prefill_size=8192, max_prefill_tokens=16384, schedule_policy='fcfs', tp_size=1, pp_size=1, dp_size=1, page_size=1, disable_cuda_graph=False)
[2025-05-01 10:00:06 TP0] Load weight begin. avail mem=78.58 GB
[2025-05-01 10:00:20 TP0] Load weight end. type=LlamaForCausalLM, dtype=torch.bfloat16, avail mem=63.52 GB, mem usage=15.06 GB.
[2025-05-01 10:00:20 TP0] KV Cache is allocated. #tokens: TOKENS, K size: 25.22 GB, V size: 25.22 GB
[2025-05-01 10:00:20 TP0] Memory pool end. avail mem=12.37 GB
[2025-05-01 10:00:41 TP0] max_total_num_tokens=TOKENS, chunked_prefill_size=8192, max_prefill_tokens=16384, max_running_requests=4097, context_len=131072, available_gpu_mem=11.05 GB
"""
CAL_SG = _cal("server.log")


def _sg(kv: str, tokens: int) -> str:
    return SG046.replace("KVDT", kv).replace("TOKENS", str(tokens))


# The pool capcliff models for this log (Llama 3.1 8B, one H100 at --mem-fraction-static 0.88):
# 58,155,073,024 B whatever the KV dtype, which decides only how many tokens it holds.
SG_POOL_BYTES = 58_155_073_024


def _sg_tokens(expected: int) -> Callable[[str], str | None]:
    """A reading of `calibrate LOG --format json` of the SGLang log: its modeled tokens at
    `expected` bytes a token fill the modeled pool."""

    def check(out: str) -> str | None:
        try:
            tokens = {f["name"]: f for f in json.loads(out)["figures"]}["kv_tokens"]["modeled"]
        except (ValueError, KeyError, TypeError):
            return "no modeled KV tokens"
        per = SG_POOL_BYTES / tokens
        return (
            None
            if math.isclose(per, expected, rel_tol=0.01)
            else f"{per:,.0f} B a token modeled (by hand {expected:,})"
        )

    return check


# 50.44 GB of K and V: 413,292 tokens at 131,072 B, 826,584 at 65,536 B
LOGS30: list[
    tuple[
        str,
        list[str],
        dict[str, FileSpec],
        bool | None,
        Callable[[str], str | None] | tuple[str, ...],
    ]
] = [
    ("v37-as-logged-fp8", CAL_V37, {"server.log": V37}, False, _modeled_bytes(B70_FP8)),
    (
        "v37-auto-0.15",
        CAL_V37,
        {"server.log": _v37("auto")},
        False,
        _modeled_bytes(B70_FP8),
    ),  # auto takes the FP8 from 0.14
    (
        "v37-auto-0.13",
        CAL_V37,
        {"server.log": _v37("auto", "0.13.0")},
        False,
        _modeled_bytes(B70_16),
    ),
    ("v37-bfloat16", CAL_V37, {"server.log": _v37("bfloat16")}, False, _modeled_bytes(B70_16)),
    ("v37-fp8_e4m3", CAL_V37, {"server.log": _v37("fp8_e4m3")}, False, _modeled_bytes(B70_FP8)),
    ("v37-fp8_e5m2", CAL_V37, {"server.log": _v37("fp8_e5m2")}, False, _modeled_bytes(B70_FP8)),
    ("v37-nvfp4", CAL_V37, {"server.log": _v37("nvfp4")}, True, ("kv_cache_dtype", "nvfp4")),
    (
        "v37-int8_per_token_head",
        CAL_V37,
        {"server.log": _v37("int8_per_token_head")},
        True,
        ("kv_cache_dtype",),
    ),
    ("v37-garbage", CAL_V37, {"server.log": _v37("zzz")}, True, ("kv_cache_dtype",)),
    ("sg-auto", CAL_SG, {"server.log": _sg("auto", 413_292)}, False, _sg_tokens(B8_16)),
    ("sg-bf16", CAL_SG, {"server.log": _sg("bf16", 413_292)}, False, _sg_tokens(B8_16)),
    (
        "sg-fp8_e4m3",
        CAL_SG,
        {"server.log": _sg("fp8_e4m3", 826_584)},
        False,
        _sg_tokens(B8_FP8),
    ),
    (
        "sg-fp8_e5m2",
        CAL_SG,
        {"server.log": _sg("fp8_e5m2", 826_584)},
        False,
        _sg_tokens(B8_FP8),
    ),
    (
        "sg-fp4_e2m1",
        CAL_SG,
        {"server.log": _sg("fp4_e2m1", 1_469_000)},
        True,
        ("kv_cache_dtype", "fp4_e2m1"),
    ),
    # the flag beside a log that states its own dtype: the log's stands, another is refused
    (
        "sg-fp8-log-bf16-flag",
        [*CAL_SG, "--kv-cache-dtype", "bf16"],
        {"server.log": _sg("fp8_e4m3", 826_584)},
        True,
        ("kv-cache-dtype",),
    ),
    (
        "sg-auto-log-fp8-flag",
        [*CAL_SG, "--kv-cache-dtype", "fp8"],
        {"server.log": _sg("auto", 413_292)},
        True,
        ("kv-cache-dtype",),
    ),
]


def _spec(*lines: str) -> str:
    return SPEC.replace(
        'engine = "vllm"\n', 'engine = "vllm"\n' + "".join(f"{line}\n" for line in lines)
    )


def _spec_model(model: str, engine: str, *lines: str) -> str:
    text = SPEC.replace('model = "llama-3.1-8b"', f'model = "{model}"').replace(
        'gpu = "h100-sxm"', 'gpu = "b200"'
    )
    return text.replace(
        'engine = "vllm"\n', f'engine = "{engine}"\n' + "".join(f"{line}\n" for line in lines)
    )


CHECK = ["check", "{d}/s.toml"]
CHECK30: list[tuple[str, list[str], dict[str, FileSpec], bool | None, tuple[str, ...]]] = [
    ("kv-fp8", CHECK, {"s.toml": _spec('kv_cache_dtype = "fp8"')}, False, ()),
    ("kv-auto", CHECK, {"s.toml": _spec('kv_cache_dtype = "auto"')}, False, ()),
    ("kv-bfloat16", CHECK, {"s.toml": _spec('kv_cache_dtype = "bfloat16"')}, False, ()),
    ("kv-nvfp4", CHECK, {"s.toml": _spec('kv_cache_dtype = "nvfp4"')}, True, ("kv_cache_dtype",)),
    ("kv-number", CHECK, {"s.toml": _spec("kv_cache_dtype = 8")}, True, ("kv_cache_dtype",)),
    ("kv-empty", CHECK, {"s.toml": _spec('kv_cache_dtype = ""')}, True, ("kv_cache_dtype",)),
    ("version-0.14", CHECK, {"s.toml": _spec('engine_version = "0.14.0"')}, False, ()),
    (
        "version-garbage",
        CHECK,
        {"s.toml": _spec('engine_version = "0.x"')},
        True,
        ("version",),
    ),
    (
        "version-number",
        CHECK,
        {"s.toml": _spec("engine_version = 0.14")},
        True,
        ("version",),
    ),
    (
        "fp4ckpt-trtllm-bf16",
        CHECK,
        {"s.toml": _spec_model("llama-3.3-70b-fp4", "trtllm", 'kv_cache_dtype = "bf16"')},
        True,
        ("kv-cache-dtype",),
    ),
    (
        "fp4ckpt-sglang-old",
        CHECK,
        {"s.toml": _spec_model("llama-3.3-70b-fp4", "sglang", 'engine_version = "0.4.2"')},
        None,
        (),
    ),
]


def _cases(surface: str, table: Table30) -> Iterator[Case]:
    for name, argv, files, expect in table:
        if isinstance(expect, int):
            yield Case(surface, name, list(argv), dict(files), False, answer=_kv(expect))
        else:
            yield Case(surface, name, list(argv), dict(files), None if expect is None else True)


def ckpt30_cases() -> Iterator[Case]:
    yield from _cases("ckpt30", ckpt30_table())


def scheme30_cases() -> Iterator[Case]:
    yield from _cases("scheme30", scheme30_table())


def ct30_cases() -> Iterator[Case]:
    yield from _cases("ct30", ct30_table())


def flags30_cases() -> Iterator[Case]:
    yield from _cases("flags30", flags30_table())
    for name, argv, files, invalid, answer in PLANS:
        yield Case("flags30", f"plan-{name}", list(argv), dict(files), invalid, answer=answer)


def logs30_cases() -> Iterator[Case]:
    for name, argv, files, invalid, reading in LOGS30:
        yield Case(
            "logs30",
            name,
            list(argv),
            dict(files),
            invalid,
            answer=reading if callable(reading) else None,
        )


def check30_cases() -> Iterator[Case]:
    for name, argv, files, invalid, _ in CHECK30:
        yield Case("check30", name, list(argv), dict(files), invalid)


SURFACES30: dict[str, Callable[[], Iterator[Case]]] = {
    "ckpt30": ckpt30_cases, "scheme30": scheme30_cases, "ct30": ct30_cases,
    "flags30": flags30_cases, "logs30": logs30_cases, "check30": check30_cases,
}  # fmt: skip


def _words() -> dict[tuple[str, str], tuple[str, ...]]:
    """The words each refusal must name (unclear where its line lacks one)."""
    words: dict[tuple[str, str], tuple[str, ...]] = {}
    for surface, table in (
        ("ckpt30", ckpt30_table()),
        ("scheme30", scheme30_table()),
        ("ct30", ct30_table()),
        ("flags30", flags30_table()),
    ):
        for name, _, _, expect in table:
            if isinstance(expect, tuple):
                words[(surface, name)] = expect
    for name, _, _, _, reading in LOGS30:
        if isinstance(reading, tuple):
            words[("logs30", name)] = reading
    for name, _, _, _, need in CHECK30:
        words[("check30", name)] = need
    return words


def _classes() -> None:
    """Run every case; print the campaign's classes and one line per finding."""
    from fuzz_harness import print_classes, run_all

    words = _words()
    cases = [c for s in SURFACES30 for c in SURFACES30[s]()]
    counts = dict.fromkeys(("traceback", "hang", "refused-valid", "nonsense", "unclear", "lost"), 0)
    print_classes(
        run_all(cases, jobs=1),
        counts,
        lambda kind: kind if kind in counts else "unclear" if kind == "lines" else None,
        words,
    )


if __name__ == "__main__":
    _classes()
