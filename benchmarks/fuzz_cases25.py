"""The twenty-fifth bad-input campaign's surfaces (issue 23), run by `fuzz_surfaces.py`:

    PYTHONPATH=. python benchmarks/fuzz_surfaces.py rope25 ropeserve25 ropespec25 sgl25

The input surfaces the session before added. `--rope-scaling JSON` on plan/sweep/memory and a
check spec's `rope_scaling` (rope25, ropespec25): JSON that is no object, factors out of range,
types vLLM does not build, `type` against `rope_type`, YaRN's original context at 0 or past the
positions, a nesting past the parser's depth, a 5,000-digit integer, a --max-model-len past and
under the scaled context, trtllm (refused), a catalog model and a config folder; the table pasted
in a launch line (ropeserve25: vLLM's --hf-overrides, SGLang's --json-model-override-args) with
odd JSON. SGLang's reserve terms by release (sgl25): --engine-version around 0.5.3 and 0.5.10
under DP attention (`dpa8`), --flashinfer-sampler (vLLM's alone), --speculative, and `memory
--engine sglang` where the pool is shorter than the context (fits, serving pool - 1 tokens).

Each valid case carries its max_model_len (or static pool) by hand: vLLM's context is
max_position_embeddings x factor, YaRN's original_max_position_embeddings x factor
(vllm/config/model.py `_get_and_verify_max_len`).
"""

# Data tables: one case per line, some past 100 characters.
# ruff: noqa: E501
from __future__ import annotations

import json
from collections.abc import Callable, Iterator

import fuzz_surfaces as fs
from fuzz_cases24 import PLAIN, _memory, _spec, spec_cases
from fuzz_harness import Case, FileSpec

MEMORY = ["memory", "{d}/m", "--gpu", "h200-sxm", "--gpus", "1", "--format", "json"]
# Qwen3-8B's context keys on Llama's layers: 40,960 positions, no table
QWEN_KEYS = {**PLAIN, "max_position_embeddings": 40_960}
YARN = '{"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 32768}'
DEEP = '{"a": ' * 100_000 + "1" + "}" * 100_000
HUGE = "9" * 5000


def _len(tokens: int) -> Callable[[str], str | None]:
    return _memory(max_model_len=tokens)


# fmt: off
# (name, config or None for the catalog's llama-3.1-8b, --rope-scaling text, extra flags, invalid, reading)
ROPE25: list[tuple[str, dict[str, object] | None, str, list[str], bool | None, Callable[[str], str | None] | None]] = [
    # YaRN on 40,960 positions: 32,768 x 4 = 131,072
    ("yarn-qwen-keys", QWEN_KEYS, YARN, [], False, _len(131_072)),
    ("yarn-given-65536", QWEN_KEYS, YARN, ["--max-model-len", "65536"], False, _len(65_536)),
    ("yarn-given-131072", QWEN_KEYS, YARN, ["--max-model-len", "131072"], False, _len(131_072)),
    ("yarn-given-131073", QWEN_KEYS, YARN, ["--max-model-len", "131073"], True, None),
    ("yarn-given-past-allowed", QWEN_KEYS, YARN, ["--max-model-len", "200000", "--allow-long-max-model-len"], False, _len(200_000)),
    # linear / dynamic: 131,072 x 2 = 262,144
    ("linear-2", PLAIN, '{"rope_type": "linear", "factor": 2.0}', [], False, _len(262_144)),
    ("dynamic-2-legacy-type", PLAIN, '{"type": "dynamic", "factor": 2}', [], False, _len(262_144)),
    ("type-equals-rope-type", PLAIN, '{"type": "linear", "rope_type": "linear", "factor": 2}', [], False, _len(262_144)),
    ("type-vs-rope-type", PLAIN, '{"type": "yarn", "rope_type": "linear", "factor": 2}', [], True, None),
    ("unknown-rope-type", PLAIN, '{"rope_type": "ntk-magic", "factor": 2}', [], True, None),
    ("rope-type-number", PLAIN, '{"rope_type": 7, "factor": 2}', [], True, None),
    ("missing-factor-linear", PLAIN, '{"rope_type": "linear"}', [], None, None),
    ("no-rope-type", PLAIN, '{"factor": 2.0}', [], None, None),
    ("factor-nan", PLAIN, '{"rope_type": "linear", "factor": NaN}', [], True, None),
    ("factor-infinity", PLAIN, '{"rope_type": "linear", "factor": Infinity}', [], True, None),
    ("factor-negative", PLAIN, '{"rope_type": "linear", "factor": -2}', [], True, None),
    ("factor-zero", PLAIN, '{"rope_type": "linear", "factor": 0}', [], True, None),
    ("factor-huge", PLAIN, '{"rope_type": "linear", "factor": 1e308}', [], True, None),
    ("factor-string", PLAIN, '{"rope_type": "linear", "factor": "2"}', [], True, None),
    ("factor-true", PLAIN, '{"rope_type": "linear", "factor": true}', [], True, None),
    ("factor-5000-digits", PLAIN, '{"rope_type": "linear", "factor": ' + HUGE + "}", [], True, None),
    ("original-zero", QWEN_KEYS, '{"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 0}', [], True, None),
    ("original-negative", QWEN_KEYS, '{"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": -32768}', [], True, None),
    ("original-past-positions", QWEN_KEYS, '{"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 65536}', [], None, None),
    ("original-5000-digits", QWEN_KEYS, '{"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": ' + HUGE + "}", [], True, None),
    # JSON that is no table
    ("invalid-json", PLAIN, '{"rope_type": "yarn", factor: 4}', [], True, None),
    ("a-list", PLAIN, '[{"rope_type": "linear", "factor": 2}]', [], True, None),
    ("a-string", PLAIN, '"yarn"', [], True, None),
    ("a-number", PLAIN, "4", [], True, None),
    ("empty-object", PLAIN, "{}", [], True, None),
    ("null", PLAIN, "null", [], None, None),
    ("empty-text", PLAIN, "", [], True, None),
    ("deep-nesting", PLAIN, DEEP, [], True, None),
    ("long-invalid-text", PLAIN, "{" + "x" * 50_000, [], True, None),
    ("trailing-garbage", PLAIN, '{"rope_type": "linear", "factor": 2} extra', [], True, None),
    ("duplicate-factor-last-wins", PLAIN, '{"rope_type": "linear", "factor": 8, "factor": 2}', [], False, _len(262_144)),
    # nested 900 deep inside a key no engine reads: parsed, then the table's keys are read
    ("deep-but-parsed", PLAIN, '{"rope_type": "linear", "factor": 2, "x": ' + "[" * 900 + "]" * 900 + "}", [], None, None),
    ("per-layer-tables", PLAIN, '{"full_attention": {"rope_type": "linear", "factor": 2}, "sliding_attention": {"rope_type": "default"}}', [], None, None),
    # engines and sources
    ("trtllm-refused", PLAIN, YARN, ["--engine", "trtllm"], True, None),
    # SGLang keeps the 40,960 positions where the table holds an original context
    ("sglang-yarn-keeps-positions", QWEN_KEYS, YARN, ["--engine", "sglang"], False, _len(40_960)),
    ("catalog-llama-linear-2", None, '{"rope_type": "linear", "factor": 2}', [], False, _len(262_144)),
    ("catalog-llama-yarn-factor-1", None, '{"rope_type": "yarn", "factor": 1.0, "original_max_position_embeddings": 8192}', [], False, _len(8192)),
]


def rope25_cases() -> Iterator[Case]:
    for name, config, text, extra, invalid, answer in ROPE25:
        files: dict[str, FileSpec] = {}
        argv = list(MEMORY)
        if config is None:
            argv[1] = "llama-3.1-8b"
        else:
            files["m/config.json"] = json.dumps(config)
        yield Case("rope25", name, [*argv, "--rope-scaling", text, *extra], files, invalid, answer=answer)
    small = ["--isl", "100", "--osl", "100", "--num-requests", "10", "--gpu", "h100-sxm"]
    yield Case("rope25", "sweep-yarn", ["sweep", "{d}/m", *small, "--concurrency", "2", "--rope-scaling", YARN], {"m/config.json": json.dumps(QWEN_KEYS)}, False)
    yield Case("rope25", "plan-bad-json", ["plan", "{d}/m", *small, "--gpus", "1", "--arrival", "batch", "--rope-scaling", "{nope"], {"m/config.json": json.dumps(QWEN_KEYS)}, True)
    yield Case("rope25", "sweep-trtllm", ["sweep", "{d}/m", *small, "--concurrency", "2", "--engine", "trtllm", "--rope-scaling", YARN], {"m/config.json": json.dumps(QWEN_KEYS)}, True)


SERVE = ["memory", "--gpu", "h200-sxm", "--format", "json", "--serve-command"]
M = "{d}/m"
SG = f"python -m sglang.launch_server --model-path {M}"
# (name, command line, invalid, reading)
ROPESERVE25: list[tuple[str, str, bool | None, Callable[[str], str | None] | None]] = [
    ("hf-overrides-yarn", f"vllm serve {M} --hf-overrides '{{\"rope_scaling\": {YARN}}}'", False, _len(131_072)),
    ("hf-overrides-linear-eq", f"vllm serve {M} --hf-overrides='{{\"rope_scaling\": {{\"rope_type\": \"linear\", \"factor\": 2}}}}'", False, _len(81_920)),
    ("hf-overrides-rope-list", f"vllm serve {M} --hf-overrides '{{\"rope_scaling\": [1, 2]}}'", True, None),
    ("hf-overrides-rope-string", f"vllm serve {M} --hf-overrides '{{\"rope_scaling\": \"yarn\"}}'", True, None),
    ("hf-overrides-rope-null", f"vllm serve {M} --hf-overrides '{{\"rope_scaling\": null}}'", None, None),
    ("hf-overrides-broken", f"vllm serve {M} --hf-overrides '{{\"rope_scaling\": {{'", True, None),
    ("hf-overrides-a-list", f"vllm serve {M} --hf-overrides '[1]'", True, None),
    ("hf-overrides-factor-nan", f"vllm serve {M} --hf-overrides '{{\"rope_scaling\": {{\"rope_type\": \"linear\", \"factor\": NaN}}}}'", True, None),
    ("hf-overrides-deep", f"vllm serve {M} --hf-overrides '{DEEP[:20_000]}'", True, None),
    ("hf-overrides-huge-int", f"vllm serve {M} --hf-overrides '{{\"rope_scaling\": {{\"rope_type\": \"linear\", \"factor\": {HUGE}}}}}'", True, None),
    ("rope-scaling-flag-and-override", f"vllm serve {M} --rope-scaling '{{\"rope_type\": \"linear\", \"factor\": 2}}' --max-model-len 81920", False, _len(81_920)),
    ("rope-flag-and-capcliff-flag-disagree", f"vllm serve {M} --rope-scaling '{{\"rope_type\": \"linear\", \"factor\": 2}}'", None, None),
    ("sglang-override-yarn", f"{SG} --json-model-override-args '{{\"rope_scaling\": {YARN}}}'", False, _len(40_960)),
    ("sglang-override-linear", f"{SG} --json-model-override-args '{{\"rope_scaling\": {{\"rope_type\": \"linear\", \"factor\": 2}}}}'", False, _len(81_920)),
    ("sglang-override-broken", f"{SG} --json-model-override-args '{{rope_scaling'", True, None),
    ("sglang-override-a-number", f"{SG} --json-model-override-args 7", True, None),
    ("sglang-override-empty", f"{SG} --json-model-override-args '{{}}'", False, _len(40_960)),
    ("sglang-override-context-past", f"{SG} --json-model-override-args '{{\"rope_scaling\": {{\"rope_type\": \"linear\", \"factor\": 2}}}}' --context-length 81921", True, None),
    ("trtllm-with-hf-overrides-text", f"trtllm-serve {M} --hf-overrides '{{\"rope_scaling\": {YARN}}}'", None, None),
]


def ropeserve25_cases() -> Iterator[Case]:
    for name, line, invalid, answer in ROPESERVE25:
        files: dict[str, FileSpec] = {"m/config.json": json.dumps(QWEN_KEYS)}
        yield Case("ropeserve25", name, [*SERVE, line], files, invalid, answer=answer)
    # the flag and the pasted line disagree: a capcliff flag that says otherwise is an error
    line = f"vllm serve {M} --hf-overrides '{{\"rope_scaling\": {YARN}}}'"
    argv = [*SERVE, line, "--rope-scaling", '{"rope_type": "linear", "factor": 2}']
    yield Case("ropeserve25", "flag-disagrees-with-line", argv, {"m/config.json": json.dumps(QWEN_KEYS)}, True)


# (name, config or None, spec text, invalid)
ROPESPEC25: list[tuple[str, dict[str, object] | None, str, bool | None]] = [
    ("table-yarn", QWEN_KEYS, _spec("m", 'rope_scaling = {rope_type = "yarn", factor = 4.0, original_max_position_embeddings = 32768}\nmax_model_len = 131072'), False),
    ("json-string-yarn", QWEN_KEYS, _spec("m", f"rope_scaling = '{YARN}'\nmax_model_len = 131072"), False),
    ("yarn-len-past", QWEN_KEYS, _spec("m", f"rope_scaling = '{YARN}'\nmax_model_len = 131073"), True),
    ("a-list", QWEN_KEYS, _spec("m", "rope_scaling = [1, 2]"), True),
    ("a-number", QWEN_KEYS, _spec("m", "rope_scaling = 4"), True),
    ("bad-json-string", QWEN_KEYS, _spec("m", "rope_scaling = '{nope'"), True),
    ("empty-table", QWEN_KEYS, _spec("m", "rope_scaling = {}"), True),
    ("factor-nan", QWEN_KEYS, _spec("m", 'rope_scaling = {rope_type = "linear", factor = nan}'), True),
    ("factor-inf", QWEN_KEYS, _spec("m", 'rope_scaling = {rope_type = "linear", factor = inf}'), True),
    ("trtllm", QWEN_KEYS, _spec("m", f"rope_scaling = '{YARN}'").replace('engine = "vllm"', 'engine = "trtllm"'), True),
    ("catalog-linear", None, _spec("llama-3.1-8b", 'rope_scaling = {rope_type = "linear", factor = 2.0}\nmax_model_len = 262144'), False),
    ("deep-json-string", QWEN_KEYS, _spec("m", "rope_scaling = '" + DEEP[:30_000] + "'"), True),
]


def ropespec25_cases() -> Iterator[Case]:
    return spec_cases("ropespec25", ROPESPEC25)


def _reading(label: str, pick: Callable[[dict], object], expected: object) -> Callable[[str], str | None]:
    """A reading of `memory --format json`: `pick` of it must be `expected`, worked by hand."""

    def check(out: str) -> str | None:
        try:
            got = pick(json.loads(out))
        except ValueError:
            return "not JSON"
        return None if got == expected else f"{label} {got} (by hand {expected})"

    return check


def _usable(nbytes: int) -> Callable[[str], str | None]:
    """The first layout's static pool (usable bytes per GPU)."""
    return _reading("usable_bytes", lambda d: d["layouts"][0]["stages"][0]["usable_bytes"], nbytes)


def _served(fits: bool, largest: int) -> Callable[[str], str | None]:
    """The first layout's fit and the longest request it serves."""
    pick = lambda d: (d["layouts"][0]["fits"], d["layouts"][0]["largest_max_model_len"])  # noqa: E731
    return _reading("fits, largest", pick, (fits, largest))


R1 = ["memory", "deepseek-r1", "--gpu", "h200-sxm", "--gpus", "8", "--engine", "sglang", "--format", "json"]
# tests/test_sglang_reserve.py: DeepSeek-R1 dpa8 on H200 from 0.5.3 on reserves 33,280 MiB:
# (143,771 - 33,280) / 143,771 = 0.76852 -> 0.769; int(149,831,402,127 x 0.769) = 115,220,348,235.
# tp8 (no DP attention) 0.5.9: 14,848 MiB -> 0.897; 0.5.10 on: + 1,536 (MLA piecewise) -> 0.886.
DPA8 = 115_220_348_235
LLAMA_SGL = ["memory", "llama-3.1-8b", "--gpu", "h200-sxm", "--gpus", "1", "--engine", "sglang", "--engine-version", "0.5.12", "--format", "json"]
# (name, argv, invalid, reading)
SGL25: list[tuple[str, list[str], bool | None, Callable[[str], str | None] | None]] = [
    ("dpa8-0.5.3", [*R1, "--layout", "dpa8", "--engine-version", "0.5.3"], False, _usable(DPA8)),
    ("dpa8-0.5.9", [*R1, "--layout", "dpa8", "--engine-version", "0.5.9"], False, _usable(DPA8)),
    ("dpa8-0.5.10", [*R1, "--layout", "dpa8", "--engine-version", "0.5.10"], False, _usable(DPA8)),
    ("dpa8-0.5.10.post1", [*R1, "--layout", "dpa8", "--engine-version", "0.5.10.post1"], False, _usable(DPA8)),
    ("dpa8-99.0", [*R1, "--layout", "dpa8", "--engine-version", "99.0"], False, _usable(DPA8)),
    # before 0.5.3 no DP-attention term: the tp8 reserve, 14,848 MiB -> 0.897
    ("dpa8-0.5.2", [*R1, "--layout", "dpa8", "--engine-version", "0.5.2"], False, _usable(int(149_831_402_127 * 0.897))),
    ("tp8-0.5.9", [*R1, "--layout", "tp8", "--engine-version", "0.5.9"], False, _usable(int(149_831_402_127 * 0.897))),
    ("tp8-0.5.10", [*R1, "--layout", "tp8", "--engine-version", "0.5.10"], False, _usable(int(149_831_402_127 * 0.886))),
    ("version-garbage", [*R1, "--layout", "dpa8", "--engine-version", "0.5.x"], True, None),
    ("version-post-garbage", [*R1, "--layout", "dpa8", "--engine-version", "0.5.10.postX"], True, None),
    ("version-0.5.3x", [*R1, "--layout", "dpa8", "--engine-version", "0.5.3x"], True, None),
    ("version-0.5.10-space-post1", [*R1, "--layout", "dpa8", "--engine-version", "0.5.10 post1"], True, None),
    ("version-sglang-prefix", [*R1, "--layout", "dpa8", "--engine-version", "sglang 0.5.2"], False, _usable(int(149_831_402_127 * 0.897))),
    ("version-image-tag", [*R1, "--layout", "dpa8", "--engine-version", "lmsysorg/sglang:v0.5.10.post1-cu129"], False, _usable(DPA8)),
    ("version-v-prefix", [*R1, "--layout", "dpa8", "--engine-version", "v0.5.10"], None, None),
    ("version-empty", [*R1, "--layout", "dpa8", "--engine-version", ""], True, None),
    ("version-huge", [*R1, "--layout", "dpa8", "--engine-version", "9" * 5000 + ".0"], None, None),
    ("version-rc", [*R1, "--layout", "dpa8", "--engine-version", "0.5.10rc1"], None, None),
    ("flashinfer-sampler-sglang", [*R1, "--layout", "dpa8", "--flashinfer-sampler"], True, None),
    ("flashinfer-sampler-trtllm", ["memory", "llama-3.1-8b", "--gpu", "h100-sxm", "--gpus", "1", "--engine", "trtllm", "--flashinfer-sampler"], True, None),
    ("flashinfer-sampler-vllm", ["memory", "llama-3.1-8b", "--gpu", "h100-sxm", "--gpus", "1", "--flashinfer-sampler", "--engine-version", "0.11.1"], False, None),
    ("dpa8-on-dense", ["memory", "llama-3.1-8b", "--gpu", "h100-sxm", "--gpus", "8", "--engine", "sglang", "--layout", "dpa8", "--engine-version", "0.5.10"], None, None),
    # a pool shorter than the context: fits, serving pool - 1 tokens (SGLang max_req_len).
    # Llama 3.1 8B, linear x8: context 1,048,576; weights 16,060,522,496 + RoPE table 1,048,576
    # x 128 x 2 = 16,328,957,952 B; 0.5.12 H200 TP1 fraction 0.903: int(149,831,402,127 x
    # 0.903) = 135,297,756,120; (135,297,756,120 - 16,328,957,952) / 131,072 = 907,659 tokens
    ("pool-under-rope-context", [*LLAMA_SGL, "--rope-scaling", '{"rope_type": "linear", "factor": 8}'], False, _served(True, 907_659)),
    ("pool-under-given-len", [*LLAMA_SGL, "--rope-scaling", '{"rope_type": "linear", "factor": 8}', "--max-model-len", "950000"], False, _served(True, 907_659)),
    ("pool-under-vllm-same", [*LLAMA_SGL[:6], "--format", "json", "--rope-scaling", '{"rope_type": "linear", "factor": 8}'], None, None),
    ("pool-under-context", [*R1, "--layout", "tp8", "--engine-version", "0.5.9", "--mem-fraction-static", "0.75"], None, None),
]


def sgl25_cases() -> Iterator[Case]:
    for name, argv, invalid, answer in SGL25:
        yield Case("sgl25", name, argv, {}, invalid, answer=answer)
    small = ["--isl", "100", "--osl", "50", "--num-requests", "8", "--gpu", "h200-sxm", "--engine", "sglang", "--gpus", "8"]
    for version in ("0.5.9", "0.5.10", "0.5.10.post1", "99.0"):
        argv = ["sweep", "deepseek-r1", *small, "--layout", "dpa8", "--concurrency", "8", "--speculative", "mtp:3", "--engine-version", version]
        yield Case("sgl25", f"sweep-dpa8-mtp-{version}", argv, {}, None)
    yield Case("sgl25", "sweep-flashinfer-sglang", ["sweep", "llama-3.1-8b", *fs.SMALL, "--engine", "sglang", "--concurrency", "2", "--flashinfer-sampler"], {}, True)
    yield Case("sgl25", "plan-dpa8-mtp-bad-version", ["plan", "deepseek-r1", *small, "--layout", "dpa8", "--arrival", "batch", "--speculative", "mtp:3", "--engine-version", "0.5"], {}, None)


# fmt: on
SURFACES25: dict[str, Callable[[], Iterator[Case]]] = {
    "rope25": rope25_cases,
    "ropeserve25": ropeserve25_cases,
    "ropespec25": ropespec25_cases,
    "sgl25": sgl25_cases,
}
