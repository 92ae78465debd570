"""The twenty-fourth bad-input campaign's surfaces (issue 23), run by `fuzz_surfaces.py`:

    PYTHONPATH=. python benchmarks/fuzz_surfaces.py ctx24 serve24 offload24 disagg24 gpus24 spec24

What the twenty-three campaigns before tried least. The context keys of config.json that vLLM
reads (ctx24): `_get_and_verify_max_len` (vllm/config/model.py; in later releases
`derive_max_model_len_and_key` of vllm/transformers_utils/model_arch_config_convertor.py, the
same rule) takes the least of `max_position_embeddings`, `n_positions`, `max_seq_len`,
`seq_length`, `model_max_length`, `max_target_positions`, `max_sequence_length`,
`max_seq_length` and `seq_len` present (not null) in the text config; then a truthy
`model_max_length` replaces it ("For Command-R / Cohere, Cohere2 / Aya Vision models"); then
each RoPE table not of type su/longrope/llama3 multiplies it by its `factor` (1 when absent;
the type `default` too), YaRN's counted from its `original_max_position_embeddings`; Gemma 3 is
not scaled. Left unset, max_model_len is that figure, except under LongRoPE: then the config's
top-level `original_max_position_embeddings` ("to avoid performance degradation for shorter
sequences"), the cap staying the derived figure. A `--max-model-len` past the cap is refused
unless it is at most `model_max_length`. The RoPE cos/sin table is built from
`max_position_embeddings` by the model's rotary embedding whatever the other keys say. Each
valid case carries max_model_len (and where it tells, the RoPE table's bytes) by hand.

Engine launch lines (serve24): `--flag=value`, underscores, argparse's last-wins repeats, short
`-tp=2`, human-readable lengths, env-var prefixes, `env`, quoting, `\\`-continued lines, JSON
values; each valid one carries the max_model_len, GPUs, memory fraction, KV dtype and block
size the line sets. --offload (offload24) and --disagg (disagg24) at their limits: the 1 GiB
tier at the byte, unit spellings, a tier past the host, 0 and 1 instance pools, pools past a
node; the GPUs a disaggregated sweep uses carried by hand. --gpu lists and prices (gpus24), and
check specs naming a config folder whose context keys bound max_model_len (spec24).
"""

# Data tables: one case per line, some past 100 characters; look-alike digits on purpose.
# ruff: noqa: E501, RUF001
from __future__ import annotations

import json
from collections.abc import Callable, Iterator

import fuzz_surfaces as fs
from fuzz_cases22 import DEL, _with
from fuzz_harness import Case, FileSpec

LLAMA = fs.llama_config()
MEMORY = ["memory", "{d}/m", "--gpu", "h200-sxm", "--gpus", "1", "--format", "json"]
# Llama 3.1 8B's shape with no RoPE scaling: a context of max_position_embeddings = 131,072
PLAIN = {**LLAMA, "rope_scaling": None}
# the RoPE cos/sin table: max_position_embeddings x head_dim 128 x 2 B
ROPE_131072 = 131_072 * 128 * 2  # 33,554,432
YARN4 = {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 32_768}
# Phi-3.5-mini-instruct as released (microsoft/Phi-3.5-mini-instruct config.json, sizing keys):
# LongRoPE, 131,072 positions, original_max_position_embeddings 4,096 at the top level
PHI35 = {
    "architectures": ["Phi3ForCausalLM"], "model_type": "phi3", "hidden_size": 3072,
    "intermediate_size": 8192, "max_position_embeddings": 131072, "num_attention_heads": 32,
    "num_hidden_layers": 32, "num_key_value_heads": 32, "original_max_position_embeddings": 4096,
    "rope_scaling": {"type": "longrope", "long_factor": [1.0] * 48, "short_factor": [1.0] * 48},
    "sliding_window": 262144, "tie_word_embeddings": False, "torch_dtype": "bfloat16", "vocab_size": 32064,
}  # fmt: skip
# Command-R's shape of context keys (CohereForAI/c4ai-command-r-v01: max_position_embeddings
# 8,192, model_max_length 131,072) on Llama's layers
COMMAND_R_KEYS = {**PLAIN, "max_position_embeddings": 8192, "model_max_length": 131072}


def _memory(**expected: object) -> Callable[[str], str | None]:
    """A reading of `memory --format json`: `max_model_len`, `gpus`, `gpu_memory_utilization`,
    `kv_dtype`, `layout` (the first layout's name), `block_size`, `rope` (the RoPE table's
    bytes, the `weights_overhead` term) must be the figures by hand."""

    def check(out: str) -> str | None:
        try:
            data = json.loads(out)
        except ValueError:
            return "not JSON"
        first = data["layouts"][0]
        terms = {t["name"]: t["bytes"] for t in first["stages"][0]["terms"]}
        got = {
            "max_model_len": data["max_model_len"], "gpus": data["gpus"],
            "gpu_memory_utilization": data["gpu_memory_utilization"], "kv_dtype": data["kv_dtype"],
            "layout": first["name"], "block_size": first["stages"][0]["block_size"],
            "rope": terms.get("weights_overhead"),
        }  # fmt: skip
        wrong = [f"{k} {got[k]} (by hand {v})" for k, v in expected.items() if got[k] != v]
        return "; ".join(wrong) or None

    return check


def _ctx(length: int, rope: int | None = ROPE_131072) -> Callable[[str], str | None]:
    return (
        _memory(max_model_len=length) if rope is None else _memory(max_model_len=length, rope=rope)
    )


# fmt: off
# (name, config, extra flags, invalid, reading)
CTX24: list[tuple[str, dict[str, object], list[str], bool | None, Callable[[str], str | None] | None]] = [
    # the least of the keys present
    ("plain-131072", PLAIN, [], False, _ctx(131_072)),
    ("seq-length-8192", _with(PLAIN, seq_length=8192), [], False, _ctx(8192)),
    ("n-positions-4096", _with(PLAIN, n_positions=4096), [], False, _ctx(4096)),
    ("max-seq-len-16384", _with(PLAIN, max_seq_len=16384), [], False, _ctx(16_384)),
    ("max-sequence-length-2048", _with(PLAIN, max_sequence_length=2048), [], False, _ctx(2048)),
    ("max-seq-length-32768", _with(PLAIN, max_seq_length=32768), [], False, _ctx(32_768)),
    ("seq-len-1000", _with(PLAIN, seq_len=1000), [], False, _ctx(1000)),
    ("max-target-positions-448", _with(PLAIN, max_target_positions=448), [], False, _ctx(448)),
    ("seq-length-past-positions", _with(PLAIN, seq_length=262_144), [], False, _ctx(131_072)),
    ("three-keys-least-wins", _with(PLAIN, seq_length=65_536, n_positions=16_384, max_seq_len=32_768), [], False, _ctx(16_384)),
    ("seq-length-null", _with(PLAIN, seq_length=None), [], False, _ctx(131_072)),
    ("seq-length-equal", _with(PLAIN, seq_length=131_072), [], False, _ctx(131_072)),
    # model_max_length replaces the least when truthy (Command-R)
    ("model-max-length-past-positions", COMMAND_R_KEYS, [], False, _ctx(131_072, 8192 * 128 * 2)),
    ("model-max-length-under-positions", _with(PLAIN, model_max_length=4096), [], False, _ctx(4096)),
    ("model-max-length-over-seq-length", _with(PLAIN, seq_length=8192, model_max_length=65_536), [], False, _ctx(65_536)),
    ("model-max-length-null", _with(PLAIN, model_max_length=None), [], False, _ctx(131_072)),
    ("model-max-length-given-under-it", COMMAND_R_KEYS, ["--max-model-len", "100000"], False, _ctx(100_000, 8192 * 128 * 2)),
    ("model-max-length-given-past-it", COMMAND_R_KEYS, ["--max-model-len", "131073"], True, None),
    # a length past the derived one is refused
    ("seq-length-8192-given-8192", _with(PLAIN, seq_length=8192), ["--max-model-len", "8192"], False, _ctx(8192)),
    ("seq-length-8192-given-8193", _with(PLAIN, seq_length=8192), ["--max-model-len", "8193"], True, None),
    ("seq-length-8192-given-long-allowed", _with(PLAIN, seq_length=8192), ["--max-model-len", "16384", "--allow-long-max-model-len"], False, _ctx(16_384)),
    ("n-positions-given-4096", _with(PLAIN, n_positions=4096), ["--max-model-len", "4096"], False, _ctx(4096)),
    # keys vLLM cannot compare or that give no context
    ("seq-length-string", _with(PLAIN, seq_length="8192"), [], True, None),
    ("seq-length-zero", _with(PLAIN, seq_length=0), [], True, None),
    ("seq-length-negative", _with(PLAIN, seq_length=-1), [], True, None),
    ("seq-length-true", _with(PLAIN, seq_length=True), [], True, None),
    ("seq-length-list", _with(PLAIN, seq_length=[8192]), [], True, None),
    ("seq-length-huge", _with(PLAIN, seq_length=10**30), [], False, _ctx(131_072)),
    ("seq-length-float", _with(PLAIN, seq_length=8192.0), [], None, None),
    ("model-max-length-zero", _with(PLAIN, model_max_length=0), [], True, None),
    ("model-max-length-string", _with(PLAIN, model_max_length="131072"), [], True, None),
    ("n-positions-nan", _with(PLAIN, n_positions=float("nan")), [], True, None),
    ("no-positions-seq-length", _with(PLAIN, max_position_embeddings=DEL, seq_length=4096), [], None, None),
    # RoPE scalings over the derived length
    ("yarn-over-seq-length", _with(PLAIN, seq_length=8192, rope_scaling=YARN4), [], False, _ctx(131_072, None)),
    ("dynamic-2-over-seq-length", _with(PLAIN, seq_length=8192, rope_scaling={"rope_type": "dynamic", "factor": 2.0}), [], False, _ctx(16_384, None)),
    ("linear-4-over-seq-length", _with(PLAIN, seq_length=8192, rope_scaling={"type": "linear", "factor": 4.0}), [], False, _ctx(32_768, None)),
    ("llama3-over-seq-length", _with(LLAMA, seq_length=8192), [], False, _ctx(8192)),
    ("dynamic-2-over-model-max-length", _with(PLAIN, model_max_length=65_536, rope_scaling={"type": "dynamic", "factor": 2.0}), [], False, _ctx(131_072, None)),
    ("default-type-factor-2", _with(PLAIN, rope_scaling={"rope_type": "default", "factor": 2.0}), [], False, _ctx(262_144, None)),
    ("linear-factor-2.5", _with(PLAIN, max_position_embeddings=32_768, rope_scaling={"rope_type": "linear", "factor": 2.5}), [], False, _ctx(81_920, None)),
    ("linear-factor-0.5", _with(PLAIN, rope_scaling={"rope_type": "linear", "factor": 0.5}), [], False, _ctx(65_536, None)),
    ("type-and-rope-type-disagree", _with(PLAIN, rope_scaling={"type": "yarn", "rope_type": "linear", "factor": 4.0, "original_max_position_embeddings": 32_768}), [], True, None),
    ("type-and-rope-type-agree", _with(PLAIN, max_position_embeddings=40_960, rope_scaling={**YARN4, "type": "yarn"}), [], False, _ctx(131_072, None)),
    ("yarn-original-string", _with(PLAIN, rope_scaling={**YARN4, "original_max_position_embeddings": "32768"}), [], True, None),
    ("yarn-factor-zero", _with(PLAIN, rope_scaling={**YARN4, "factor": 0}), [], True, None),
    ("rope-type-number", _with(PLAIN, rope_scaling={"rope_type": 3, "factor": 2.0}), [], True, None),
    ("rope-type-unknown", _with(PLAIN, rope_scaling={"rope_type": "ntk-by-parts", "factor": 2.0}), [], True, None),
    # LongRoPE: unset, max_model_len is the top-level original_max_position_embeddings
    ("phi35-longrope-default", PHI35, [], False, _memory(max_model_len=4096)),
    ("phi35-longrope-given-131072", PHI35, ["--max-model-len", "131072"], False, _memory(max_model_len=131_072)),
    ("phi35-longrope-given-131073", PHI35, ["--max-model-len", "131073"], True, None),
    ("phi35-su-legacy-default", _with(PHI35, rope_scaling={"type": "su", "long_factor": [1.0] * 48, "short_factor": [1.0] * 48}), [], False, _memory(max_model_len=4096)),
    ("phi35-longrope-rope-type-key", _with(PHI35, rope_scaling={"rope_type": "longrope", "long_factor": [1.0] * 48, "short_factor": [1.0] * 48}), [], False, _memory(max_model_len=4096)),
    ("phi35-longrope-seq-length", _with(PHI35, seq_length=65_536), ["--max-model-len", "65536"], False, _memory(max_model_len=65_536)),
    ("phi35-longrope-original-past-context", _with(PHI35, original_max_position_embeddings=262_144), [], None, None),
    # the keys come from the text config of a wrapper
    ("wrapper-text-seq-length", {"architectures": ["LlavaForConditionalGeneration"], "model_type": "llava", "text_config": _with(PLAIN, seq_length=8192)}, [], False, _ctx(8192)),
    ("wrapper-top-seq-length-ignored", {"architectures": ["LlavaForConditionalGeneration"], "model_type": "llava", "seq_length": 8192, "text_config": PLAIN}, [], False, _ctx(131_072)),
]


def ctx24_cases() -> Iterator[Case]:
    for name, config, extra, invalid, answer in CTX24:
        files: dict[str, FileSpec] = {"m/config.json": json.dumps(config)}
        yield Case("ctx24", name, [*MEMORY, *extra], files, invalid, answer=answer)


SERVE = ["memory", "--gpu", "h200-sxm", "--format", "json", "--serve-command"]
M = "{d}/m"
# (name, command line, invalid, reading)
SERVE24: list[tuple[str, str, bool | None, Callable[[str], str | None] | None]] = [
    ("eq-max-model-len", f"vllm serve {M} --max-model-len=4096", False, _memory(max_model_len=4096)),
    ("underscore-max-model-len", f"vllm serve {M} --max_model_len 4096", False, _memory(max_model_len=4096)),
    ("underscore-eq", f"vllm serve {M} --max_model_len=4096 --gpu_memory_utilization=0.85", False, _memory(max_model_len=4096, gpu_memory_utilization=0.85)),
    ("repeated-last-wins", f"vllm serve {M} --max-model-len 4096 --max-model-len=8192", False, _memory(max_model_len=8192)),
    ("repeated-tp-last-wins", f"vllm serve {M} -tp 4 --tensor-parallel-size 2", False, _memory(gpus=2, layout="tp2")),
    ("short-tp-eq", f"vllm serve {M} -tp=2", False, _memory(gpus=2, layout="tp2")),
    ("short-pp", f"vllm serve {M} -pp 2", False, _memory(gpus=2)),
    ("tp2-pp2", f"vllm serve {M} --tensor-parallel-size=2 --pipeline-parallel-size=2", False, _memory(gpus=4)),
    ("len-1k", f"vllm serve {M} --max-model-len 1k", False, _memory(max_model_len=1000)),
    ("len-1K", f"vllm serve {M} --max-model-len 1K", False, _memory(max_model_len=1024)),
    ("len-25.6k", f"vllm serve {M} --max-model-len=25.6k", False, _memory(max_model_len=25_600)),
    ("len-128K", f"vllm serve {M} --max-model-len 128K", False, _memory(max_model_len=131_072)),
    ("len-128k-past-context", f"vllm serve {M} --max-model-len 132k", True, None),
    ("len-1.5K", f"vllm serve {M} --max-model-len 1.5K", True, None),
    ("len-1e3", f"vllm serve {M} --max-model-len 1e3", True, None),
    ("len-zero", f"vllm serve {M} --max-model-len 0", True, None),
    ("len-quoted", f"vllm serve {M} --max-model-len '4096'", False, _memory(max_model_len=4096)),
    ("len-underscore-digits", f"vllm serve {M} --max-model-len 4_096", False, _memory(max_model_len=4096)),
    ("gmu-dot85", f"vllm serve {M} --gpu-memory-utilization=.85", False, _memory(gpu_memory_utilization=0.85)),
    ("gmu-1", f"vllm serve {M} --gpu-memory-utilization 1", False, _memory(gpu_memory_utilization=1.0)),
    ("gmu-1.01", f"vllm serve {M} --gpu-memory-utilization 1.01", True, None),
    ("env-prefix-long-len", f"VLLM_ALLOW_LONG_MAX_MODEL_LEN=1 vllm serve {M} --max-model-len 200000", False, _memory(max_model_len=200_000)),
    ("env-command-long-len", f"env VLLM_ALLOW_LONG_MAX_MODEL_LEN=1 vllm serve {M} --max-model-len 200000", False, _memory(max_model_len=200_000)),
    ("long-len-no-env", f"vllm serve {M} --max-model-len 200000", True, None),
    ("env-visible-two-tp2", f"CUDA_VISIBLE_DEVICES=0,1 vllm serve {M} -tp 2", False, _memory(gpus=2)),
    ("env-visible-one-tp2", f"CUDA_VISIBLE_DEVICES=0 vllm serve {M} -tp 2", True, None),
    ("kv-fp8-eq", f"vllm serve {M} --kv-cache-dtype=fp8", False, _memory(kv_dtype="fp8")),
    ("kv-fp8-e4m3", f"vllm serve {M} --kv_cache_dtype fp8_e4m3", False, _memory(kv_dtype="fp8")),
    ("block-32-eq", f"vllm serve {M} --block-size=32", False, _memory(block_size=32)),
    ("continued-lines", f"vllm serve {M} \\\n  --max-model-len 4096 \\\n  -tp 2", False, _memory(max_model_len=4096, gpus=2)),
    ("continued-crlf", f"vllm serve {M} \\\r\n  --max-model-len 4096", False, _memory(max_model_len=4096)),
    ("model-flag", f"vllm serve --model {M} --max-model-len 4096", False, _memory(max_model_len=4096)),
    ("api-server-module", f"python -m vllm.entrypoints.openai.api_server --model {M} --max-model-len 4096", False, _memory(max_model_len=4096)),
    ("hf-overrides-json", f"vllm serve {M} --hf-overrides '{{\"max_position_embeddings\": 4096}}'", None, None),
    ("speculative-config-json", f"vllm serve {M} --speculative-config '{{\"method\": \"ngram\", \"num_speculative_tokens\": 3, \"prompt_lookup_max\": 4}}'", None, None),
    ("speculative-config-broken-json", f"vllm serve {M} --speculative-config '{{method: ngram'", True, None),
    # Qwen3's model card enables YaRN at launch on its 40,960 positions (`--rope-scaling '{...}'
    # --max-model-len 131072`; newer vLLM: `--hf-overrides '{"rope_scaling": {...}}'`): 32,768 x
    # 4 = 131,072 served
    ("rope-scaling-flag-yarn", "vllm serve Qwen/Qwen3-8B --rope-scaling '{\"rope_type\": \"yarn\", \"factor\": 4.0, \"original_max_position_embeddings\": 32768}' --max-model-len 131072", False, _memory(max_model_len=131_072)),
    ("hf-overrides-rope-yarn", "vllm serve Qwen/Qwen3-8B --hf-overrides '{\"rope_scaling\": {\"rope_type\": \"yarn\", \"factor\": 4.0, \"original_max_position_embeddings\": 32768}}' --max-model-len 131072", False, _memory(max_model_len=131_072)),
    ("compilation-config-json", f"vllm serve {M} --compilation-config '{{\"cudagraph_capture_sizes\": [1, 2, 4]}}'", None, None),
    ("sglang-context-length-eq", f"python -m sglang.launch_server --model-path={M} --context-length=4096 --tp-size=2", False, _memory(max_model_len=4096, gpus=2)),
    ("sglang-underscores", f"python3 -m sglang.launch_server --model_path {M} --context_length 4096 --tp 2", False, _memory(max_model_len=4096, gpus=2)),
    ("sglang-context-past-model", f"python -m sglang.launch_server --model-path {M} --context-length 200000", True, None),
    ("trtllm-max-seq-len", f"trtllm-serve {M} --tp_size 2 --max_seq_len 4096", False, _memory(max_model_len=4096, gpus=2)),
    ("trtllm-serve-subcommand", f"trtllm-serve serve {M} --max_seq_len=4096", False, _memory(max_model_len=4096)),
    ("trtllm-dashes", f"trtllm-serve {M} --max-seq-len 4096", None, None),
]


def serve24_cases() -> Iterator[Case]:
    for name, line, invalid, answer in SERVE24:
        files: dict[str, FileSpec] = {"m/config.json": json.dumps(PLAIN)}
        yield Case("serve24", name, [*SERVE, line], files, invalid, answer=answer)


SMALL = ["--isl", "100", "--osl", "100", "--num-requests", "20"]
SWEEP = ["sweep", "llama-3.1-8b", "--gpu", "h100-sxm", *SMALL, "--concurrency", "4", "--format", "json"]
GIB = 1 << 30
# (name, --offload text, invalid)
OFFLOAD24: list[tuple[str, str, bool | None]] = [
    ("cpu-1GiB-exact", "cpu:1GiB", False),
    ("cpu-1GiB-in-bytes", f"cpu:{GIB}", False),
    ("cpu-1GiB-less-a-byte", f"cpu:{GIB - 1}", True),
    ("cpu-1024MiB", "cpu:1024MiB", False),
    ("cpu-1048576KiB", "cpu:1048576KiB", False),
    ("cpu-1.073741824GB", "cpu:1.073741824GB", False),
    ("cpu-1.07GB-under", "cpu:1.07GB", True),
    ("cpu-lower-gib", "cpu:64gib", False),
    ("cpu-plus-sign", "cpu:+64GiB", None),
    ("cpu-unit-space", "cpu:64 GiB", None),
    ("cpu-suffix-s", "cpu:64GiBs", True),
    ("cpu-1EiB", "cpu:1EiB", None),
    ("cpu-past-1EiB", "cpu:1.5EiB", True),
    ("cpu-1e18-bytes", "cpu:1e18", None),
    ("nvme-only-1TiB", "nvme:1TiB", False),
    ("nvme-first", "nvme:1TiB,cpu:64GiB", False),
    ("nvme-1GiB-exact", "nvme:1GiB", False),
    ("gpu-tier", "gpu:64GiB", True),
    ("ssd-tier", "ssd:1TiB", True),
    ("cpu-colon-twice", "cpu:64GiB:2", True),
    ("cpu-nan", "cpu:nanGiB", True),
    ("cpu-inf", "cpu:infGiB", True),
    ("cpu-negative", "cpu:-64GiB", True),
]


def _fixes(expected: list[str]) -> Callable[[str], str | None]:
    def check(out: str) -> str | None:
        try:
            data = json.loads(out)
        except ValueError:
            return "not JSON"
        return None if data.get("fixes") == expected else f"fixes {data.get('fixes')} (by hand {expected})"

    return check


def offload24_cases() -> Iterator[Case]:
    for name, text, invalid in OFFLOAD24:
        yield Case("offload24", name, [*SWEEP, "--gpus", "1", "--offload", text], {}, invalid)
    # past the host: an H100 node's 2 TB of DRAM / 8 GPUs = 250 GB, 30.72 TB of NVMe / 8 =
    # 3,840 GB; the model fits one GPU without offload, so the fix is the tiers' size
    fix = "offload tiers its 1 GPU(s) hold: at most --offload cpu:250GB,nvme:3840GB per replica (tp1)"
    past = [*SWEEP, "--gpus", "1", "--offload", "cpu:1e18,nvme:1e18"]
    yield Case("offload24", "past-host-fix", past, {}, False, answer=_fixes([fix]))


def _gpus(count: int) -> Callable[[str], str | None]:
    def check(out: str) -> str | None:
        try:
            data = json.loads(out)
        except ValueError:
            return "not JSON"
        return None if data["gpus"] == count else f"gpus {data['gpus']} (by hand {count})"

    return check


def _no_fit(count: int) -> Callable[[str], str | None]:
    def check(out: str) -> str | None:
        try:
            data = json.loads(out)
        except ValueError:
            return "not JSON"
        if data.get("fits") is not False or data["gpus"] != count:
            return f"fits {data.get('fits')}, gpus {data['gpus']} (by hand: false, {count})"
        return None

    return check


# (name, --disagg text, extra flags, invalid, reading)
DISAGG24: list[tuple[str, str, list[str], bool | None, Callable[[str], str | None] | None]] = [
    ("one-one", "1p:tp1,1d:tp1", [], False, _gpus(2)),
    ("two-three-tp2", "2p:tp1,3d:tp2", [], False, _gpus(8)),  # 2 x 1 + 3 x 2
    ("decode-first", "1d:tp2,1p:tp1", [], False, _gpus(3)),
    ("tp8-both", "1p:tp8,1d:tp8", [], False, _gpus(16)),
    ("dp2-decode", "1p:tp1,1d:dp2", [], False, _gpus(3)),
    ("tp16-past-node", "1p:tp16,1d:tp1", [], True, None),
    ("pp2-prefill", "1p:tp1-pp2,1d:tp1", [], None, None),
    ("ep-dense-model", "1p:tp2-ep2,1d:tp2-ep2", [], True, None),
    ("no-count", "p:tp1,d:tp1", [], True, None),
    ("zero-decode", "1p:tp1,0d:tp1", [], True, None),
    ("zero-prefill", "0p:tp1,1d:tp1", [], True, None),
    ("count-1e3", "1e3p:tp1,1d:tp1", [], True, None),
    ("count-fullwidth", "１p:tp1,1d:tp1", [], True, None),
    ("tp-x", "1p:tpx,1d:tp1", [], True, None),
    ("pool-on-h200", "1p:tp1@h200-sxm,1d:tp1", [], None, None),
    ("gpus-disagree", "1p:tp1,1d:tp1", ["--gpus", "4"], True, None),
    ("gpus-agree", "1p:tp1,1d:tp1", ["--gpus", "2"], False, _gpus(2)),
    ("with-offload", "1p:tp1,1d:tp1", ["--offload", "cpu:64GiB"], None, None),
    ("pools-tp8-dp8-ep8", "1p:tp8,3d:dp8-ep8", [], True, None),  # a dense model has no experts
]


def disagg24_cases() -> Iterator[Case]:
    for name, text, extra, invalid, answer in DISAGG24:
        yield Case("disagg24", name, [*SWEEP, "--disagg", text, *extra], {}, invalid, answer=answer)
    # a model that does not fit a pool's GPU: an answer, not an error: Llama 3.1 70B's
    # 70,553,706,496 parameters x 2 B = 141.1 GB of bf16 weights on one 80 GB H100
    seventy = ["sweep", "llama-3.1-70b", *SWEEP[2:], "--disagg", "1p:tp1,1d:tp1"]
    yield Case("disagg24", "70b-tp1-cannot-fit", seventy, {}, False, answer=_no_fit(2))


FLEET = ["plan", "llama-3.1-8b", "--jobs", "1", *SMALL, "--rate", "2", "--slo-ttft", "2", "--gpus", "1"]
# (name, --gpu, --price-gpu-hour or None, invalid)
GPUS24: list[tuple[str, str, str | None, bool | None]] = [
    ("duplicate", "h100-sxm,h100-sxm", None, True),
    ("duplicate-spaced", "h100-sxm, h100-sxm", None, True),
    ("upper-case", "H100-SXM", None, True),
    ("alias-h100", "h100", None, True),
    ("trailing-comma", "h100-sxm,", None, True),
    ("price-fullwidth-digit", "h100-sxm", "３", None),
    ("price-underscore", "h100-sxm", "1_0", None),
    ("price-two-for-one", "h100-sxm", "2,3", True),
    ("price-one-for-two", "h100-sxm,h200-sxm", "2", None),
    ("price-exp", "h100-sxm", "2e0", False),
    ("price-negative-zero", "h100-sxm", "-0", True),
    ("price-hex", "h100-sxm", "0x2", True),
]


def gpus24_cases() -> Iterator[Case]:
    for name, gpu, price, invalid in GPUS24:
        argv = [*FLEET, "--gpu", gpu, *(["--price-gpu-hour", price] if price is not None else [])]
        yield Case("gpus24", name, argv, {}, invalid)


def _spec(model: str, extra: str = "", expect: str = "fits = true") -> str:
    """fs.SPEC (llama-3.1-8b on one H200 here, tp1, a batch of 20) with `model`, `extra` keys of
    the scenario and `expect` as its only assertion."""
    text = fs.SPEC.replace('model = "llama-3.1-8b"', f'model = "{model}"')
    text = text.replace('gpu = "h100-sxm"', f'gpu = "h200-sxm"\n{extra}')
    return text.split("[scenario.expect]")[0] + f"[scenario.expect]\n{expect}\n"


# (name, config.json or None for the catalog's llama-3.1-8b, spec text, invalid)
SPEC24: list[tuple[str, dict[str, object] | None, str, bool | None]] = [
    ("config-seq-length-max-model-len-under", _with(PLAIN, seq_length=8192), _spec("m", "max_model_len = 8192"), False),
    ("config-seq-length-max-model-len-past", _with(PLAIN, seq_length=8192), _spec("m", "max_model_len = 8193"), True),
    ("config-model-max-length-allows", COMMAND_R_KEYS, _spec("m", "max_model_len = 100000"), False),
    ("config-longrope-fits", PHI35, _spec("m"), False),
    ("offload-1GiB", None, _spec("llama-3.1-8b", 'offload = "cpu:1GiB"'), False),
    ("offload-under-1GiB", None, _spec("llama-3.1-8b", 'offload = "cpu:1023MiB"'), True),
    ("offload-nvme-first", None, _spec("llama-3.1-8b", 'offload = "nvme:1TiB,cpu:64GiB"'), False),
    ("disagg-zero-decode", None, _spec("llama-3.1-8b", 'disagg = "1p:tp1,0d:tp1"'), True),
    ("max-model-len-fits-true", None, _spec("llama-3.1-8b", "max_model_len = 131072", "max_model_len_fits = true"), None),
    ("max-model-len-past-context", None, _spec("llama-3.1-8b", "max_model_len = 131073"), True),
]


def spec_cases(
    surface: str, table: list[tuple[str, dict[str, object] | None, str, bool | None]]
) -> Iterator[Case]:
    """`check` of each (name, config.json or None, spec text, invalid) of `table`."""
    for name, config, text, invalid in table:
        files: dict[str, FileSpec] = {"s.toml": text}
        if config is not None:
            files["m/config.json"] = json.dumps(config)
        yield Case(surface, name, ["check", "{d}/s.toml"], files, invalid)


def spec24_cases() -> Iterator[Case]:
    return spec_cases("spec24", SPEC24)


# fmt: on
SURFACES24: dict[str, Callable[[], Iterator[Case]]] = {
    "ctx24": ctx24_cases,
    "serve24": serve24_cases,
    "offload24": offload24_cases,
    "disagg24": disagg24_cases,
    "gpus24": gpus24_cases,
    "spec24": spec24_cases,
}
