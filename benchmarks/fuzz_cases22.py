"""The twenty-second bad-input campaign's surfaces (issue 23), run by `fuzz_surfaces.py`:

    PYTHONPATH=. python benchmarks/fuzz_surfaces.py configs22 names22 spec22 outputs22 gpu22

What the twenty-one campaigns before tried least. config.json shapes that real checkpoints
ship and no campaign wrote (configs22): a multimodal wrapper whose `text_config` is another
family than the wrapper (PaliGemma 2 over Gemma 2, LLaVA-OneVision over Qwen2), transformers
v5's `rope_parameters` (one table, or one per layer type), RoPE scalings of every kind vLLM
reads (dynamic, mrope, linear, YaRN under `type` and `rope_type`), `layer_types` lists against
`sliding_window` values (0, 1, past the context), Gemma 2 and 3, Phi-3 and gpt-oss as released,
the other context keys vLLM reads (`seq_length`, `max_sequence_length`, `model_max_length`),
`text_config` and top-level fields that disagree, a 16,777,216-token vocabulary, head_dim 1.
Valid shapes carry a reading of the answer (`Case.answer`): the KV bytes per token or the
context, worked out by hand from the config, so a shape answered wrongly counts as nonsense.
Strings (names22): scenario names with the two code points XML 1.0 forbids besides the controls
(U+FFFE, U+FFFF), a lone zero-width space, a right-to-left override, a line separator, 100,000
characters, emoji; ids with look-alike and invisible characters; `--engine-version` at 5,000
digits; and paths whose bytes are not UTF-8 (a Linux folder b"\\xffm", which Python holds as the
lone surrogate U+DCFF) for the model, a trace, a calibration, a spec and every output, with
`--format json`. Check specs with every key at a boundary at once (spec22). Output paths
(outputs22): the same file twice, one a link to the other, an output named like an input
through `..`, a folder, unicode names. `--gpu` given a file (gpu22): capcliff reads hardware
from its catalog only, so each is one line and exit 2, a contradictory file included.

Verdicts: vLLM builds a multimodal model's language model from `text_config` by that family's
class (`init_vllm_registered_model(hf_config=config.text_config)`), so its layer rules are the
text family's; vLLM's `_get_and_verify_max_len` reads a per-layer-type `rope_parameters` table
by table; a sliding layer of a 0-token window is no shape an engine serves; a JUnit report must
be XML (W3C XML 1.0, production [2] Char).
"""

# Data tables: one case per line, some past 100 characters; look-alike characters on purpose.
# ruff: noqa: E501, RUF001
from __future__ import annotations

import copy
import json
import tomllib
from collections.abc import Callable, Iterator

import fuzz_surfaces as fs
from fuzz_harness import Case, FileSpec

LLAMA = fs.llama_config()
DEL = object()
MEMORY = ["memory", "{d}/m", "--gpu", "h200-sxm", "--gpus", "1", "--format", "json"]


def _with(base: dict[str, object], **changes: object) -> dict[str, object]:
    out = copy.deepcopy(base)
    for key, value in changes.items():
        if value is DEL:
            out.pop(key, None)
        else:
            out[key] = value
    return out


def _reads(**expected: object) -> Callable[[str], str | None]:
    """A reading of `memory --format json`: each `key=value` must hold (`kv` is the first
    layout's KV bytes per token per GPU)."""

    def check(out: str) -> str | None:
        try:
            data = json.loads(out)
        except ValueError:
            return "not JSON"
        got = {
            "kv": data["layouts"][0]["kv_bytes_per_token_per_gpu"],
            "max_model_len": data["max_model_len"],
            "params": data["params_total"],
            "model": data["model"],
        }
        wrong = [f"{k} {got[k]} (by hand {v})" for k, v in expected.items() if got[k] != v]
        return "; ".join(wrong) or None

    return check


# fmt: off
# Gemma 2 2B as released (google/gemma-2-2b config.json, sizing fields)
GEMMA2_2B = {"architectures": ["Gemma2ForCausalLM"], "model_type": "gemma2", "head_dim": 256, "hidden_size": 2304, "intermediate_size": 9216, "num_hidden_layers": 26, "num_attention_heads": 8, "num_key_value_heads": 4, "query_pre_attn_scalar": 256, "sliding_window": 4096, "vocab_size": 256000, "max_position_embeddings": 8192, "final_logit_softcapping": 30.0, "attn_logit_softcapping": 50.0, "cache_implementation": "hybrid", "torch_dtype": "float32"}
# Gemma 2 9B (google/gemma-2-9b)
GEMMA2_9B = _with(GEMMA2_2B, hidden_size=3584, intermediate_size=14336, num_hidden_layers=42, num_attention_heads=16, num_key_value_heads=8)
# Gemma 3 1B, text only (google/gemma-3-1b-it)
GEMMA3_1B = {"architectures": ["Gemma3ForCausalLM"], "model_type": "gemma3_text", "head_dim": 256, "hidden_size": 1152, "intermediate_size": 6912, "max_position_embeddings": 32768, "num_attention_heads": 4, "num_hidden_layers": 26, "num_key_value_heads": 1, "query_pre_attn_scalar": 256, "rope_scaling": None, "sliding_window": 512, "sliding_window_pattern": 6, "torch_dtype": "bfloat16", "vocab_size": 262144}
# PaliGemma 2 3B (google/paligemma2-3b-pt-224): a SigLIP tower over Gemma 2 2B's text model
PALIGEMMA2 = {"architectures": ["PaliGemmaForConditionalGeneration"], "model_type": "paligemma", "torch_dtype": "bfloat16", "projection_dim": 2304, "hidden_size": 2304,
              "text_config": {**{k: v for k, v in GEMMA2_2B.items() if k not in ("architectures", "torch_dtype")}, "vocab_size": 257216},
              "vision_config": {"model_type": "siglip_vision_model", "hidden_size": 1152, "intermediate_size": 4304, "num_hidden_layers": 27, "num_attention_heads": 16, "patch_size": 14, "image_size": 224, "projection_dim": 2304, "vision_use_head": False}}
# LLaVA-OneVision 7B's shape (llava-hf/llava-onevision-qwen2-7b-ov-hf): SigLIP over a Qwen2 7B
# text model; the window is set below the context here so that sliding layers would show
QWEN2_7B = {"architectures": ["Qwen2ForCausalLM"], "model_type": "qwen2", "hidden_size": 3584, "intermediate_size": 18944, "num_hidden_layers": 28, "num_attention_heads": 28, "num_key_value_heads": 4, "max_position_embeddings": 32768, "sliding_window": 4096, "use_sliding_window": False, "max_window_layers": 28, "vocab_size": 152128, "tie_word_embeddings": False, "rope_theta": 1000000.0}
ONEVISION = {"architectures": ["LlavaOnevisionForConditionalGeneration"], "model_type": "llava_onevision", "torch_dtype": "bfloat16", "text_config": QWEN2_7B,
             "vision_config": {"model_type": "siglip_vision_model", "hidden_size": 1152, "intermediate_size": 4304, "num_hidden_layers": 26, "num_attention_heads": 16, "patch_size": 14, "image_size": 384, "vision_use_head": False}}
# Phi-3 mini 4K (microsoft/Phi-3-mini-4k-instruct): a 2,047-token window on every layer
PHI3 = {"architectures": ["Phi3ForCausalLM"], "model_type": "phi3", "hidden_size": 3072, "intermediate_size": 8192, "max_position_embeddings": 4096, "num_attention_heads": 32, "num_hidden_layers": 32, "num_key_value_heads": 32, "original_max_position_embeddings": 4096, "rope_scaling": None, "sliding_window": 2047, "tie_word_embeddings": False, "torch_dtype": "bfloat16", "vocab_size": 32064}
QWEN3_8B = fs._card_config("qwen3-8b")
YARN4 = {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 32768}
PER_LAYER = {"full_attention": {**YARN4, "rope_theta": 1e6}, "sliding_attention": {**YARN4, "rope_theta": 1e6}}
# Llama 3.1 8B: 32 layers x 8 KV heads x 128 x 2 (K, V) x 2 B = 131,072 B a token
LLAMA_KV = 131_072
# (name, config, extra flags, invalid, reading of the answer)
CONFIGS22: list[tuple[str, dict[str, object], list[str], bool | None, Callable[[str], str | None] | None]] = [
    # multimodal wrappers over another family
    ("paligemma2-text-gemma2", PALIGEMMA2, ["--max-model-len", "65536", "--allow-long-max-model-len", "--max-num-batched-tokens", "2048"], False,
     # 26 layers, 4 KV heads x 256 x 2 x 2 B = 4,096 B a layer; Gemma 2 alternates: 13 full layers hold 65,536 tokens, 13 sliding
     # ones 4,096 + 2,048 (window + chunk): 4,096 x (13 + 13 x 6,144 / 65,536) = 58,240 B a token of a 65,536-token request
     _reads(kv=58_240)),
    ("gemma2-2b-flat", GEMMA2_2B, ["--max-model-len", "65536", "--allow-long-max-model-len", "--max-num-batched-tokens", "2048"], False, _reads(kv=58_240, params=2_614_341_888)),
    ("onevision-text-qwen2-no-sliding", ONEVISION, ["--max-model-len", "32768"], False,
     # use_sliding_window false: every layer full: 28 x 4 x 128 x 2 x 2 B = 57,344
     _reads(kv=57_344)),
    ("qwen2-7b-flat-no-sliding", QWEN2_7B, ["--max-model-len", "32768"], False, _reads(kv=57_344)),
    ("onevision-text-model-type-number", _with(ONEVISION, text_config=_with(QWEN2_7B, model_type=7)), [], True, None),
    ("onevision-text-model-type-blank", _with(ONEVISION, text_config=_with(QWEN2_7B, model_type=" ")), [], True, None),
    ("wrapper-text-qwen1", _with(ONEVISION, text_config=_with(QWEN2_7B, model_type="qwen")), [], True, None),
    ("wrapper-text-gpt-neox", _with(ONEVISION, text_config=_with(QWEN2_7B, model_type="gpt_neox")), [], True, None),
    ("wrapper-tie-disagrees", {"architectures": ["LlavaForConditionalGeneration"], "model_type": "llava", "tie_word_embeddings": True, "text_config": _with(LLAMA, tie_word_embeddings=False)}, [], None, None),
    ("wrapper-text-config-empty", _with(LLAMA, text_config={}), [], None, None),
    ("wrapper-text-only-same-family", {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "text_config": LLAMA}, [], False, _reads(kv=LLAMA_KV)),
    # RoPE tables
    ("v5-rope-parameters-per-layer-yarn", _with(QWEN3_8B, rope_parameters=PER_LAYER), [], False, _reads(max_model_len=131_072)),  # 32,768 x 4
    ("v5-rope-parameters-one-table-yarn", _with(QWEN3_8B, rope_parameters={**YARN4, "rope_theta": 1e6}), [], False, _reads(max_model_len=131_072)),
    ("v5-rope-parameters-per-layer-differ", _with(QWEN3_8B, rope_parameters={**PER_LAYER, "sliding_attention": {"rope_type": "default", "rope_theta": 1e4}}), [], True, None),
    ("v5-rope-parameters-per-layer-text", _with(QWEN3_8B, rope_parameters={"full_attention": "yarn"}), [], True, None),
    ("v5-rope-parameters-per-layer-bad-factor", _with(QWEN3_8B, rope_parameters={"full_attention": {**YARN4, "factor": "4"}}), [], True, None),
    ("v5-rope-parameters-per-layer-yarn-no-original", _with(QWEN3_8B, rope_parameters={"full_attention": {"rope_type": "yarn", "factor": 4.0}}), [], True, None),
    ("v5-rope-parameters-default", _with(QWEN3_8B, rope_parameters={"rope_type": "default", "rope_theta": 1e6}), [], False, _reads(max_model_len=40_960)),
    ("gemma3-v5-per-layer-rope", _with(GEMMA3_1B, rope_parameters={"full_attention": {"rope_type": "linear", "factor": 8.0, "rope_theta": 1e6}, "sliding_attention": {"rope_type": "default", "rope_theta": 1e4}}), [], False, _reads(max_model_len=32_768)),
    ("rope-yarn-rope-type", _with(QWEN3_8B, rope_scaling=YARN4), [], False, _reads(max_model_len=131_072)),
    ("rope-yarn-type-key", _with(QWEN3_8B, rope_scaling={"type": "yarn", "factor": 4.0, "original_max_position_embeddings": 32768}), [], False, _reads(max_model_len=131_072)),
    ("rope-dynamic-2", _with(LLAMA, rope_scaling={"type": "dynamic", "factor": 2.0}), [], False, _reads(max_model_len=262_144)),
    ("rope-linear-4", _with(LLAMA, rope_scaling={"rope_type": "linear", "factor": 4.0}), [], False, _reads(max_model_len=524_288)),
    ("rope-mrope-no-factor", _with(LLAMA, rope_scaling={"type": "mrope", "mrope_section": [16, 24, 24]}), [], False, _reads(max_model_len=131_072)),
    ("rope-empty-table", _with(LLAMA, rope_scaling={}), [], None, None),
    ("rope-yarn-original-1e9", _with(LLAMA, rope_scaling={**YARN4, "original_max_position_embeddings": 10**9}), [], True, None),
    ("phi35-longrope", _with(PHI3, max_position_embeddings=131072, sliding_window=262144, rope_scaling={"type": "longrope", "long_factor": [1.0] * 48, "short_factor": [1.0] * 48}), [], None, None),
    # windows and layer lists
    ("layer-types-sliding-window-0", _with(LLAMA, layer_types=["sliding_attention"] * 32, sliding_window=0), [], True, None),
    ("layer-types-sliding-window-null", _with(LLAMA, layer_types=["sliding_attention"] * 32, sliding_window=None), [], True, None),
    ("layer-types-half-sliding-window-0", _with(LLAMA, layer_types=["sliding_attention", "full_attention"] * 16, sliding_window=0), [], True, None),
    ("layer-types-all-full-window-0", _with(LLAMA, layer_types=["full_attention"] * 32, sliding_window=0), [], False, _reads(kv=LLAMA_KV)),
    ("layer-types-window-1", _with(LLAMA, layer_types=["sliding_attention"] * 32, sliding_window=1), [], None, None),
    ("layer-types-window-past-context", _with(LLAMA, layer_types=["sliding_attention"] * 32, sliding_window=10**6), [], False, _reads(kv=LLAMA_KV)),
    ("layer-types-chunked", _with(LLAMA, layer_types=["chunked_attention"] * 32), [], True, None),
    ("layer-types-31-of-32", _with(LLAMA, layer_types=["full_attention"] * 31, sliding_window=4096), [], True, None),
    ("sliding-window-0-no-layer-types", _with(LLAMA, sliding_window=0), [], False, _reads(kv=LLAMA_KV)),
    ("gemma2-9b-released", GEMMA2_9B, [], False, _reads(params=9_241_705_984)),
    ("gemma3-1b-released", GEMMA3_1B, [], None, None),
    ("gemma3-1b-layer-types", _with(GEMMA3_1B, layer_types=["full_attention" if (i + 1) % 6 == 0 else "sliding_attention" for i in range(26)]), [], None, None),
    ("gemma3-pattern-0", _with(GEMMA3_1B, sliding_window_pattern=0), [], True, None),
    ("phi3-mini-4k-released", PHI3, [], False, _reads(params=3_821_079_552)),
    ("gpt-oss-20b-no-layer-types", {k: v for k, v in fs._card_config("gpt-oss-20b").items() if k != "layer_types"}, [], None, None),
    ("qwen2-use-sliding-window-string", _with(QWEN2_7B, use_sliding_window="false"), [], True, None),
    ("qwen2-max-window-layers-negative", _with(QWEN2_7B, use_sliding_window=True, max_window_layers=-1), [], True, None),
    # context keys other than max_position_embeddings (vLLM takes the least; capcliff reads max_position_embeddings)
    ("seq-length-8192", _with(LLAMA, seq_length=8192), [], None, None),
    ("max-sequence-length-4096", _with(LLAMA, max_sequence_length=4096), [], None, None),
    ("model-max-length-262144", _with(LLAMA, model_max_length=262144), [], None, None),
    ("no-max-position", _with(LLAMA, max_position_embeddings=DEL, rope_scaling=None), [], None, None),
    # sizes at their edges
    ("vocab-16777216", _with(LLAMA, vocab_size=16_777_216), [], False, None),
    ("vocab-16777217", _with(LLAMA, vocab_size=16_777_217), [], True, None),
    ("head-dim-1", _with(LLAMA, head_dim=1), [], None, None),
    ("kv-heads-past-heads", _with(LLAMA, num_key_value_heads=64), [], True, None),
    ("kv-heads-3-of-32", _with(LLAMA, num_key_value_heads=3), [], True, None),
    ("hidden-not-divisible-no-head-dim", _with(LLAMA, hidden_size=4100), [], True, None),
    ("zero-layers", _with(LLAMA, num_hidden_layers=0), [], True, None),
    ("tie-word-embeddings-string", _with(LLAMA, tie_word_embeddings="true"), [], True, None),
]
# fmt: on


def configs22_cases() -> Iterator[Case]:
    for name, config, extra, invalid, answer in CONFIGS22:
        files: dict[str, FileSpec] = {"m/config.json": json.dumps(config)}
        yield Case("configs22", name, [*MEMORY, *extra], files, invalid, answer=answer)


FF = "\udcff"  # the byte 0xFF of a Linux name, as Python holds it (surrogateescape)
SMALL = ["--isl", "100", "--osl", "100", "--num-requests", "20"]
SWEEP = ["sweep", "llama-3.1-8b", "--gpu", "h100-sxm", "--gpus", "1", *SMALL, "--concurrency", "4"]
CONFIG = {"config.json": json.dumps(LLAMA)}
TRACE = "\n".join(json.dumps(r) for r in fs.PLAIN_ROWS) + "\n"


def _spec_named(name: str) -> str:
    return fs.SPEC.replace('name = "s"', f"name = {json.dumps(name, ensure_ascii=False)}")


# (name, argv, files, invalid)
# fmt: off
NAMES22: list[tuple[str, list[str], dict[str, FileSpec], bool | None]] = [
    # scenario names through JUnit XML
    ("name-ufffe-junit", ["check", "{d}/s.toml", "--junit", "{d}/r.xml"], {"s.toml": _spec_named("a\ufffeb")}, True),
    ("name-uffff-junit", ["check", "{d}/s.toml", "--junit", "{d}/r.xml"], {"s.toml": _spec_named("a\uffffb")}, True),
    ("name-ufffe-json-spec", ["check", "{d}/s.json", "--junit", "{d}/r.xml"], {"s.json": json.dumps({"scenario": [{**tomllib.loads(fs.SPEC)["scenario"][0], "name": "a\ufffeb"}]})}, True),
    ("name-lone-surrogate-json-spec", ["check", "{d}/s.json"], {"s.json": json.dumps({"scenario": [{**tomllib.loads(fs.SPEC)["scenario"][0], "name": "a\ud800b"}]})}, True),
    ("name-zero-width-space-only", ["check", "{d}/s.toml"], {"s.toml": _spec_named("\u200b")}, True),
    ("name-zero-width-joiner-emoji", ["check", "{d}/s.toml", "--junit", "{d}/r.xml"], {"s.toml": _spec_named("\U0001f468\u200d\U0001f469\u200d\U0001f467")}, False),
    ("name-rtl-override", ["check", "{d}/s.toml", "--junit", "{d}/r.xml", "--markdown", "{d}/r.md"], {"s.toml": _spec_named("a\u202eb")}, None),
    ("name-line-separator", ["check", "{d}/s.toml", "--junit", "{d}/r.xml"], {"s.toml": _spec_named("a\u2028b")}, None),
    ("name-next-line-c1", ["check", "{d}/s.toml"], {"s.toml": _spec_named("a\u0085b")}, True),
    ("name-100000-chars", ["check", "{d}/s.toml", "--junit", "{d}/r.xml", "--markdown", "{d}/r.md"], {"s.toml": _spec_named("x" * 100_000)}, False),
    ("name-markup", ["check", "{d}/s.toml", "--junit", "{d}/r.xml", "--markdown", "{d}/r.md"], {"s.toml": _spec_named("a&<]]>\"'b|c")}, False),
    ("name-emoji", ["check", "{d}/s.toml", "--junit", "{d}/r.xml"], {"s.toml": _spec_named("\U0001f680" * 10)}, False),
    # ids and versions with look-alike or invisible characters
    ("spec-model-zero-width", ["check", "{d}/s.toml"], {"s.toml": fs.SPEC.replace('"llama-3.1-8b"', '"llama-3.1-8b\u200b"')}, True),
    ("spec-gpu-fullwidth", ["check", "{d}/s.toml"], {"s.toml": fs.SPEC.replace('"h100-sxm"', '"ｈ100-sxm"')}, True),
    ("spec-engine-version-zero-width", ["check", "{d}/s.toml"], {"s.toml": fs.SPEC.replace('engine = "vllm"\n', 'engine = "vllm"\nengine_version = "0.14.0\u200b"\n')}, None),
    ("flag-gpu-zero-width", [*SWEEP[:3], "h100-sxm\u200b", *SWEEP[4:]], {}, True),
    ("flag-engine-version-5000-digits", [*SWEEP, "--engine-version", "9" * 5000], {}, True),
    ("flag-engine-version-5000-digit-major", [*SWEEP, "--engine-version", "9" * 5000 + ".1"], {}, True),
    ("flag-engine-version-10-digit-patch", [*SWEEP, "--engine-version", "0.14.9999999999"], {}, None),
    ("flag-engine-version-fullwidth", [*SWEEP, "--engine-version", "０.14.0"], {}, None),
    ("flag-engine-version-local", [*SWEEP, "--engine-version", "0.14.0.post1+cu129"], {}, False),
    ("flag-layout-100000", [*SWEEP, "--layout", "tp" * 50_000], {}, True),
    ("flag-offload-100000", [*SWEEP, "--offload", "cpu:" + "9" * 100_000], {}, True),
    ("flag-speculative-unicode", [*SWEEP, "--speculative", "ｅagle:3"], {}, True),
    # values of 5,000 to 100,000 characters: one error line, not the value echoed whole
    ("flag-spec-acceptance-20000-items", [*SWEEP, "--speculative", "eagle:3", "--spec-acceptance", "0.5," * 20_000], {}, True),
    ("flag-gpu-list-10000-items", [*SWEEP[:3], "h100-sxm," * 10_000, *SWEEP[4:]], {}, True),
    ("flag-workload-100000", [*SWEEP, "--workload", "x" * 100_000], {}, True),
    ("flag-policy-100000", [*SWEEP, "--policy", "x" * 100_000], {}, True),
    ("flag-adp-balance-100000", [*SWEEP, "--attention-dp-balance", "x" * 100_000], {}, True),
    ("flag-kv-cache-memory-5000-digits", [*SWEEP, "--kv-cache-memory", "9" * 5000 + "GiB"], {}, True),
    ("flag-speculative-5000-digit-k", [*SWEEP, "--speculative", "eagle:" + "9" * 5000], {}, True),
    ("flag-calibration-100000", [*SWEEP, "--calibration", "x" * 100_000], {}, True),
    ("spec-engine-version-100000", ["check", "{d}/s.toml"], {"s.toml": fs.SPEC.replace('engine = "vllm"\n', 'engine = "vllm"\nengine_version = "' + "x" * 100_000 + '"\n')}, True),
    ("spec-gpu-100000", ["check", "{d}/s.toml"], {"s.toml": fs.SPEC.replace('"h100-sxm"', '"' + "h" * 100_000 + '"')}, True),
    # paths whose bytes are not UTF-8
    ("model-folder-ff-json", ["memory", "{d}/" + FF + "m", "--gpu", "h100-sxm", "--gpus", "1", "--format", "json"], {FF + "m/config.json": json.dumps(LLAMA)}, False),
    ("model-folder-ff-table", ["memory", "{d}/" + FF + "m", "--gpu", "h100-sxm", "--gpus", "1"], {FF + "m/config.json": json.dumps(LLAMA)}, False),
    ("sweep-model-folder-ff-json", ["sweep", "{d}/" + FF + "m", "--gpu", "h100-sxm", "--gpus", "1", *SMALL, "--concurrency", "4", "--format", "json"], {FF + "m/config.json": json.dumps(LLAMA)}, False),
    ("sweep-model-folder-ff-csv", ["sweep", "{d}/" + FF + "m", "--gpu", "h100-sxm", "--gpus", "1", *SMALL, "--concurrency", "4", "--format", "csv"], {FF + "m/config.json": json.dumps(LLAMA)}, False),
    ("plan-model-folder-ff-json", ["plan", "{d}/" + FF + "m", "--gpu", "h100-sxm", "--gpus", "1", "--jobs", "1", *SMALL, "--arrival", "batch", "--format", "json"], {FF + "m/config.json": json.dumps(LLAMA)}, False),
    ("plan-model-folder-ff-markdown", ["plan", "{d}/" + FF + "m", "--gpu", "h100-sxm", "--gpus", "1", "--jobs", "1", *SMALL, "--arrival", "batch", "--format", "markdown"], {FF + "m/config.json": json.dumps(LLAMA)}, False),
    ("sweep-trace-ff-json", ["sweep", "llama-3.1-8b", "--gpu", "h100-sxm", "--gpus", "1", "--workload", "{d}/" + FF + ".jsonl", "--concurrency", "4", "--format", "json"], {FF + ".jsonl": TRACE}, False),
    ("sweep-disagg-model-ff-json", ["sweep", "{d}/" + FF + "m", "--gpu", "h100-sxm", *SMALL, "--concurrency", "4", "--disagg", "1p:tp1,1d:tp1", "--format", "json"], {FF + "m/config.json": json.dumps(LLAMA)}, False),
    ("sweep-calibration-ff-json", [*SWEEP, "--calibration", "{d}/" + FF + ".toml", "--format", "json"], {FF + ".toml": fs.CAL_OK}, None),
    ("sweep-plot-ff", [*SWEEP, "--plot", "{d}/" + FF + ".svg"], {}, False),
    ("check-spec-ff-json", ["check", "{d}/" + FF + ".toml", "--format", "json"], {FF + ".toml": fs.SPEC}, False),
    ("check-junit-ff", ["check", "{d}/s.toml", "--junit", "{d}/" + FF + ".xml", "--markdown", "{d}/" + FF + ".md", "--write-baseline", "{d}/" + FF + ".json"], {"s.toml": fs.SPEC}, False),
    ("check-spec-model-folder-ff", ["check", "{d}/s.toml", "--format", "json"], {"s.toml": fs.SPEC.replace('"llama-3.1-8b"', '"m"'), "m/config.json": json.dumps(LLAMA)}, False),
    ("calibrate-output-ff-json", ["calibrate", "{d}/r.json", "--model", "llama-3.1-8b", "--gpu", "h100-sxm", "-o", "{d}/" + FF + ".toml", "--format", "json"], {"r.json": "\n".join(json.dumps(r) for r in fs.RUNS) + "\n"}, False),
    ("calibrate-input-ff-json", ["calibrate", "{d}/" + FF + ".json", "--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--format", "json"], {FF + ".json": "\n".join(json.dumps(r) for r in fs.RUNS) + "\n"}, False),
    ("model-folder-unicode-json", ["memory", "{d}/モデル", "--gpu", "h100-sxm", "--gpus", "1", "--format", "json"], {"モデル/config.json": json.dumps(LLAMA)}, False),
    ("model-folder-newline-json", ["memory", "{d}/a\nb", "--gpu", "h100-sxm", "--gpus", "1", "--format", "json"], {"a\nb/config.json": json.dumps(LLAMA)}, False),
]
# fmt: on


def names22_cases() -> Iterator[Case]:
    for name, argv, files, invalid in NAMES22:
        yield Case("names22", name, argv, dict(files), invalid)


# Every key at a boundary at once, and pairs that meet at one.
# fmt: off
# (table, key, value) in order; {name} fields are EDGE's, which a case may change
EDGE_KEYS = [
    ("", "baseline_tolerance", "{tol}"),
    ("scenario", "name", '"edge"'), ("scenario", "model", '"llama-3.1-8b"'), ("scenario", "gpu", '"h100-sxm"'),
    ("scenario", "gpus", "8"), ("scenario", "layout", '"dp8"'), ("scenario", "engine", '"vllm"'),
    ("scenario", "headroom", "{headroom}"), ("scenario", "usd_per_gpu_hour", "{price}"), ("scenario", "seed", "{seed}"),
    ("scenario", "gpu_memory_utilization", "{util}"), ("scenario", "max_model_len", "{mml}"),
    ("scenario", "max_num_seqs", "{seqs}"), ("scenario", "max_num_batched_tokens", "{mbt}"),
    ("scenario", "block_size", "{block}"), ("scenario", "request_overhead_ms", "{overhead}"),
    ("scenario.workload", "isl", "{isl}"), ("scenario.workload", "osl", "{osl}"),
    ("scenario.workload", "num_requests", "{n}"), ("scenario.workload", "concurrency", "{conc}"),
    ("scenario.workload", "rate", "{rate}"),
    ("scenario.expect", "fits", "true"), ("scenario.expect", "kv_headroom_min", "{headroom_min}"),
    ("scenario.expect", "no_preemption_at", "1"), ("scenario.expect", "cliff_concurrency_min", "1"),
    ("scenario.expect", "ttft_p99_max_s", "{ttft}"), ("scenario.expect", "tpot_p99_max_s", "{tpot}"),
    ("scenario.expect", "output_throughput_min_tok_s", "1e-9"), ("scenario.expect", "max_model_len_fits", "1"),
    ("scenario.expect", "sustained_rps_min", "1e-9"), ("scenario.expect", "replicas_max", "1"),
    ("scenario.expect", "usd_per_million_tokens_max", "1e6"),
]
EDGE = {"tol": "0.999999", "headroom": "0.999", "price": "1000", "seed": "9223372036854775807", "util": "1.0", "mml": "256", "seqs": "1",
        "mbt": "256", "block": "16", "overhead": "0", "isl": "1", "osl": "1", "n": "8", "conc": "1", "rate": "1e-4",
        "headroom_min": "0.999999", "ttft": "1e-6", "tpot": "1e-6"}
SPEC22: list[tuple[str, dict[str, str], bool | None]] = [
    ("every-key-at-an-edge", {}, None),  # a valid spec whose checks fail: exit 1
    ("rate-under-resolution", {"rate": "1e-6"}, True),
    ("seed-past-int64", {"seed": "9223372036854775808"}, None),  # past TOML's 64 bits; tomllib reads it, and any seed is a seed
    ("block-size-1", {"block": "1"}, None),
    ("overhead-60000", {"overhead": "60000"}, None),
    ("overhead-60001", {"overhead": "60001"}, True),
    ("tolerance-1", {"tol": "1.0"}, True),
    ("headroom-1", {"headroom": "1.0"}, True),
    ("headroom-min-1", {"headroom_min": "1.0"}, True),
    ("max-model-len-under-request", {"mml": "1"}, True),
    ("batched-under-max-model-len", {"mbt": "128"}, None),
    ("util-0", {"util": "0.0"}, True),
    ("price-past-max", {"price": "1e9"}, True),
    ("concurrency-past-requests", {"conc": "9"}, True),
    ("tpot-1e-300", {"tpot": "1e-300"}, True),
]
# fmt: on


def _edge_spec(values: dict[str, str]) -> str:
    """EDGE_KEYS as a spec, each table's header before its first key."""
    lines, table = [], ""
    for where, key, value in EDGE_KEYS:
        if where != table:
            table = where
            lines.append("[[scenario]]" if where == "scenario" else f"[{where}]")
        lines.append(f"{key} = {value.format(**values)}")
    return "\n".join(lines) + "\n"


def spec22_cases() -> Iterator[Case]:
    for name, changes, invalid in SPEC22:
        text = _edge_spec({**EDGE, **changes})
        yield Case(
            "spec22",
            name,
            ["check", "{d}/s.toml", "--junit", "{d}/r.xml"],
            {"s.toml": text},
            invalid,
        )


# (name, argv, files, invalid)
# fmt: off
CHECK = ["check", "{d}/s.toml"]
OUTPUTS22: list[tuple[str, list[str], dict[str, FileSpec], bool | None]] = [
    ("junit-markdown-same", [*CHECK, "--junit", "{d}/o", "--markdown", "{d}/o"], {"s.toml": fs.SPEC}, True),
    ("junit-markdown-via-link", [*CHECK, "--junit", "{d}/o", "--markdown", "{d}/l"], {"s.toml": fs.SPEC, "l": ("symlink", "o")}, True),
    ("junit-baseline-same", [*CHECK, "--junit", "{d}/o", "--write-baseline", "{d}/o"], {"s.toml": fs.SPEC}, True),
    ("junit-dotdot-spelling-of-markdown", [*CHECK, "--junit", "{d}/o", "--markdown", "{d}/sub/../o"], {"s.toml": fs.SPEC, "sub/": ("dir",)}, True),
    ("baseline-read-and-written", [*CHECK, "--baseline", "{d}/b.json", "--write-baseline", "{d}/b.json", "--force"], {"s.toml": fs.SPEC}, True),
    ("junit-is-spec-via-dotdot", [*CHECK, "--junit", "{d}/sub/../s.toml", "--force"], {"s.toml": fs.SPEC, "sub/": ("dir",)}, True),
    ("junit-is-folder", [*CHECK, "--junit", "{d}/sub"], {"s.toml": fs.SPEC, "sub/": ("dir",)}, True),
    ("junit-unicode-name", [*CHECK, "--junit", "{d}/報告.xml"], {"s.toml": fs.SPEC}, False),
    ("markdown-name-newline", [*CHECK, "--markdown", "{d}/a\nb.md"], {"s.toml": fs.SPEC}, False),
    ("plot-is-model-config-via-link", ["sweep", "{d}/m", "--gpu", "h100-sxm", "--gpus", "1", *SMALL, "--concurrency", "4", "--plot", "{d}/p.svg", "--force"], {"m/config.json": json.dumps(LLAMA), "p.svg": ("symlink", "m/config.json")}, True),
    ("plot-twice", [*SWEEP, "--plot", "{d}/a.svg", "--plot", "{d}/b.svg"], {}, None),
    ("calibrate-output-is-calibration-input", ["calibrate", "{d}/r.json", "--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--calibration", "{d}/c.toml", "-o", "{d}/c.toml", "--force"], {"r.json": "\n".join(json.dumps(r) for r in fs.RUNS) + "\n", "c.toml": fs.CAL_OK}, True),
]
# fmt: on


def outputs22_cases() -> Iterator[Case]:
    for name, argv, files, invalid in OUTPUTS22:
        files = dict(files)
        if name == "baseline-read-and-written":
            files["b.json"] = _baseline()
        yield Case("outputs22", name, argv, files, invalid)


def _baseline() -> str:
    """A baseline of fs.SPEC as `check --write-baseline` writes it (written once, here)."""
    import contextlib
    import io
    import tempfile
    from pathlib import Path

    from capcliff.cli import main

    with tempfile.TemporaryDirectory() as folder:
        spec = Path(folder) / "s.toml"
        spec.write_text(fs.SPEC)
        with contextlib.redirect_stdout(io.StringIO()):
            main(["check", str(spec), "--write-baseline", f"{folder}/b.json"])
        return (Path(folder) / "b.json").read_text()


HARDWARE = (fs.ROOT / "hardware" / "h100-sxm.toml").read_text()
# fmt: off
GPU22: list[tuple[str, list[str], dict[str, FileSpec], bool | None]] = [
    ("gpu-file-catalog-copy", ["memory", "llama-3.1-8b", "--gpus", "1", "--gpu", "{d}/h100-sxm.toml"], {"h100-sxm.toml": HARDWARE}, True),
    ("gpu-file-relative", ["memory", "llama-3.1-8b", "--gpus", "1", "--gpu", "./h100-sxm.toml"], {"h100-sxm.toml": HARDWARE}, True),
    ("gpu-file-no-suffix", ["memory", "llama-3.1-8b", "--gpus", "1", "--gpu", "{d}/h100-sxm"], {"h100-sxm": HARDWARE}, True),
    ("gpu-file-bandwidth-past-peak", ["memory", "llama-3.1-8b", "--gpus", "1", "--gpu", "{d}/g.toml"], {"g.toml": HARDWARE.replace("hbm_bandwidth_tb_s = 3.35", "hbm_bandwidth_tb_s = 3.35\nhbm_achievable_tb_s = 9.0")}, True),
    ("gpu-file-node-past-domain", ["memory", "llama-3.1-8b", "--gpus", "1", "--gpu", "{d}/g.toml"], {"g.toml": HARDWARE.replace("gpus_per_node = 8", "gpus_per_node = 16")}, True),
    ("gpu-file-in-list", ["plan", "llama-3.1-8b", "--gpus", "1", "--jobs", "1", *SMALL, "--arrival", "batch", "--gpu", "h100-sxm,{d}/g.toml"], {"g.toml": HARDWARE}, True),
    ("gpu-file-in-spec", ["check", "{d}/s.toml"], {"s.toml": fs.SPEC.replace('gpu = "h100-sxm"', 'gpu = "g.toml"'), "g.toml": HARDWARE}, True),
    ("gpu-file-in-disagg-pool", [*SWEEP, "--disagg", "1p:tp1,1d:tp1@{d}/g.toml"], {"g.toml": HARDWARE}, True),
    ("gpu-id-with-toml-suffix", ["memory", "llama-3.1-8b", "--gpus", "1", "--gpu", "h100-sxm.toml"], {}, True),
]
# fmt: on


def gpu22_cases() -> Iterator[Case]:
    for name, argv, files, invalid in GPU22:
        yield Case("gpu22", name, argv, dict(files), invalid)


SURFACES22: dict[str, Callable[[], Iterator[Case]]] = {
    "configs22": configs22_cases,
    "names22": names22_cases,
    "spec22": spec22_cases,
    "outputs22": outputs22_cases,
    "gpu22": gpu22_cases,
}
