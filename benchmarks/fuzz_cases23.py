"""The twenty-third bad-input campaign's surfaces (issue 23), run by `fuzz_surfaces.py`:

    PYTHONPATH=. python benchmarks/fuzz_surfaces.py quant23 safet23 bench23 traces23

Valid but unusual inputs, each read for its answer (`Case.answer`), on what the twenty-two
campaigns before tried least. Quantization configs as real checkpoints ship them (quant23):
AWQ and GPTQ at 4 and 8 bits, group_size -1, desc_act, `lm_head: true` (GPTQModel's quantised
output head), `modules_to_not_convert`, compressed-tensors per-group and per-tensor FP8 with
`ignore` lists of `re:` patterns and a `kv_cache_scheme`, ModelOpt FP8 and NVFP4 in
hf_quant_config.json and in config.json, block FP8, mxfp4, bitsandbytes; each valid one carries
the weight bytes of Llama 3.1 8B in that format worked out by hand (below). Safetensors headers
and `model.safetensors.index.json` (safet23): F8_E4M3, U8-packed, I8, F4 and F8_E8M0 tensors,
`__metadata__`, a padded header, an index whose `total_size` disagrees with the headers, a
tensor in two shards, a shard the index leaves out, numbered shards with no index; each valid
one carries its checkpoint bytes summed by hand from the tensors' dtypes and shapes. Benchmark
results calibrate reads (bench23): `vllm bench serve --save-result` with `--save-detailed`
lists, percentile keys, failed requests, a null cap, a null `ramp_up_strategy`, one-token
outputs (a TPOT of 0, as vLLM writes it), `--append-result` runs; SGLang bench_serving JSONL as
it writes them (`"request_rate": Infinity`, CRLF lines); the CSV form with a byte-order mark and
CRLF; each valid one carries the clients, lengths and measurements the rows say.

Llama 3.1 8B by hand (hidden 4,096, intermediate 14,336, 32 layers, 32 heads, 8 KV heads of
128, vocabulary 128,256, untied): a layer's linears hold 2 x 4,096^2 (q, o) + 2 x 4,096 x 1,024
(k, v) + 3 x 4,096 x 14,336 (gate, up, down) = 218,103,808 elements, 6,979,321,856 in all;
embedding and lm_head 525,336,576 each, norms 32 x 8,192 + 4,096 = 266,240: 1,050,939,392
elements never quantised (2,101,878,784 B at bf16). Rows of a layer's linears (output width):
4,096 + 1,024 + 1,024 + 4,096 + 2 x 14,336 + 4,096 = 43,008.
"""

# Data tables: one case per line, some past 100 characters.
# ruff: noqa: E501
from __future__ import annotations

import copy
import json
import struct
from collections.abc import Callable, Iterator

import fuzz_surfaces as fs
from fuzz_harness import Case, FileSpec

LLAMA = fs.llama_config()
MEMORY = ["memory", "{d}/m", "--gpu", "h200-sxm", "--gpus", "1", "--format", "json"]

# Llama 3.1 8B, by hand (module docstring)
LINEAR = 6_979_321_856  # elements of the decoder layers' linears
NATIVE_B = 2_101_878_784  # embedding, lm_head and norms at bf16, bytes
LM_HEAD = 525_336_576  # elements
ROWS = 32 * 43_008  # output rows of every linear
BF16_B = 2 * (LINEAR) + NATIVE_B  # 16,060,522,496
# int4, one fp16 scale + one 4-bit zero per 128: 4 + 20/128 bits = 532/1024 B an element
INT4_G128_ZP = LINEAR * 532 // 1024 + NATIVE_B  # 5,727,854,592
# int4, one fp16 (bf16) scale per 128, no zero: 528/1024 B an element
INT4_G128 = LINEAR * 528 // 1024 + NATIVE_B  # 5,700,591,616
# FP8, one scale per tensor (a few bytes, not counted)
FP8_TENSOR = LINEAR + NATIVE_B  # 9,081,200,640
# NVFP4: 4 bits + one FP8 scale per 16: 9/16 B an element
NVFP4 = LINEAR * 9 // 16 + NATIVE_B  # 6,027,747,328
# block FP8 128 x 128: one fp32 scale per 16,384 elements
FP8_BLOCK = LINEAR + LINEAR * 4 // 16_384 + NATIVE_B  # 9,082,904,576
# GPTQ int8 per row (group_size -1): one fp16 scale + one 8-bit zero a row: 3 B a row
GPTQ8_ROW = LINEAR + 3 * ROWS + NATIVE_B  # 9,085,329,408
# GPTQ int4 g128 with lm_head quantised (GPTQModel `lm_head: true`): the head at 532/1024 too
GPTQ4_LM_HEAD = INT4_G128_ZP - 2 * LM_HEAD + LM_HEAD * 532 // 1024  # 4,950,110,208
# compressed-tensors W4A16 g128 with layer 0 ignored (re:model.layers.0.): its 218,103,808
# elements at bf16
LAYER = 218_103_808
W4_LAYER0_NATIVE = (LINEAR - LAYER) * 528 // 1024 + NATIVE_B + 2 * LAYER  # 6,024,339,456


def _with(base: dict[str, object], **changes: object) -> dict[str, object]:
    out = copy.deepcopy(base)
    out.update(changes)
    return out


def _memory(**expected: object) -> Callable[[str], str | None]:
    """A reading of `memory --format json`: `weights` (whole model's weight bytes) and
    `checkpoint` (bytes the safetensors headers hold) must be the figures by hand."""

    def check(out: str) -> str | None:
        try:
            data = json.loads(out)
        except ValueError:
            return "not JSON"
        got = {"weights": data["weights_bytes_total"], "checkpoint": data["checkpoint_bytes"]}
        wrong = [f"{k} {got[k]:,} (by hand {v:,})" if isinstance(got[k], int) and isinstance(v, int)
                 else f"{k} {got[k]} (by hand {v})" for k, v in expected.items() if got[k] != v]  # fmt: skip
        return "; ".join(wrong) or None

    return check


def _quant(raw: dict[str, object]) -> dict[str, object]:
    return _with(LLAMA, quantization_config=raw)


AWQ = {
    "quant_method": "awq",
    "bits": 4,
    "group_size": 128,
    "zero_point": True,
    "version": "gemm",
    "modules_to_not_convert": None,
}
GPTQ = {
    "quant_method": "gptq",
    "bits": 4,
    "group_size": 128,
    "desc_act": False,
    "sym": True,
    "damp_percent": 0.01,
    "static_groups": False,
    "true_sequential": True,
    "checkpoint_format": "gptq",
    "model_name_or_path": None,
    "model_file_base_name": None,
}
W4A16 = {
    "quant_method": "compressed-tensors", "format": "pack-quantized", "quantization_status": "compressed",
    "global_compression_ratio": 1.89, "kv_cache_scheme": None, "ignore": ["lm_head"], "sparsity_config": {},
    "config_groups": {"group_0": {"targets": ["Linear"], "input_activations": None, "output_activations": None,
                                  "weights": {"num_bits": 4, "type": "int", "symmetric": True, "strategy": "group", "group_size": 128,
                                              "actorder": None, "block_structure": None, "dynamic": False, "observer": "minmax", "observer_kwargs": {}}}},
}  # fmt: skip
FP8_DYNAMIC = {
    "quant_method": "compressed-tensors", "format": "float-quantized", "ignore": ["lm_head"],
    "config_groups": {"group_0": {"targets": ["Linear"], "input_activations": {"num_bits": 8, "type": "float", "strategy": "token", "dynamic": True, "symmetric": True},
                                  "weights": {"num_bits": 8, "type": "float", "strategy": "tensor", "dynamic": False, "symmetric": True}}},
}  # fmt: skip
KV_FP8 = {
    "num_bits": 8,
    "type": "float",
    "strategy": "tensor",
    "dynamic": False,
    "symmetric": True,
    "group_size": None,
    "observer": "minmax",
}
MODELOPT_FP8 = {
    "producer": {"name": "modelopt", "version": "0.19.0"},
    "quantization": {
        "quant_algo": "FP8",
        "kv_cache_quant_algo": None,
        "exclude_modules": ["lm_head"],
    },
}
MODELOPT_NVFP4 = {
    "producer": {"name": "modelopt", "version": "0.27.1"},
    "quantization": {
        "quant_algo": "NVFP4",
        "kv_cache_quant_algo": "FP8",
        "group_size": 16,
        "exclude_modules": ["lm_head"],
    },
}

# fmt: off
# (name, config.json, side files, extra flags, invalid, weight bytes by hand or None)
QUANT23: list[tuple[str, dict[str, object], dict[str, FileSpec], bool | None, int | None]] = [
    ("bf16-baseline", LLAMA, {}, False, BF16_B),
    ("awq-4-g128", _quant(AWQ), {}, False, INT4_G128_ZP),
    ("awq-4-g128-no-zero", _quant({**AWQ, "zero_point": False}), {}, False, INT4_G128),
    ("awq-upper-method", _quant({**AWQ, "quant_method": "AWQ"}), {}, False, INT4_G128_ZP),
    ("awq-in-quant-config-json", LLAMA, {"m/quant_config.json": json.dumps({"w_bit": 4, "q_group_size": 128, "zero_point": True, "version": "GEMM"})}, False, INT4_G128_ZP),
    ("awq-modules-to-not-convert-empty", _quant({**AWQ, "modules_to_not_convert": []}), {}, False, INT4_G128_ZP),
    ("awq-8-bits", _quant({**AWQ, "bits": 8}), {}, True, None),
    ("awq-lm-head-true", _quant({**AWQ, "lm_head": True}), {}, None, None),
    ("gptq-4-g128", _quant(GPTQ), {}, False, INT4_G128_ZP),
    ("gptq-4-g128-desc-act", _quant({**GPTQ, "desc_act": True}), {}, False, INT4_G128_ZP),
    ("gptq-4-g128-asym", _quant({**GPTQ, "sym": False}), {}, False, INT4_G128_ZP),
    ("gptq-8-row", _quant({**GPTQ, "bits": 8, "group_size": -1, "desc_act": True}), {}, False, GPTQ8_ROW),
    ("gptq-lm-head-true", _quant({**GPTQ, "lm_head": True}), {}, False, GPTQ4_LM_HEAD),
    ("gptq-lm-head-false", _quant({**GPTQ, "lm_head": False}), {}, False, INT4_G128_ZP),
    ("gptq-lm-head-string", _quant({**GPTQ, "lm_head": "true"}), {}, True, None),
    ("gptq-v2-format", _quant({**GPTQ, "checkpoint_format": "gptq_v2"}), {}, False, INT4_G128_ZP),
    ("gptq-in-quantize-config-json", LLAMA, {"m/quantize_config.json": json.dumps({k: v for k, v in GPTQ.items() if k != "quant_method"})}, False, INT4_G128_ZP),
    ("gptq-3-bits", _quant({**GPTQ, "bits": 3}), {}, False, None),
    ("gptq-group-0", _quant({**GPTQ, "group_size": 0}), {}, None, None),
    ("gptq-group-minus-2", _quant({**GPTQ, "group_size": -2}), {}, True, None),
    ("gptq-dynamic-layer0-8bit", _quant({**GPTQ, "dynamic": {r"+:model\.layers\.0\..*": {"bits": 8}}}), {}, False, None),
    ("ct-w4a16-g128", _quant(W4A16), {}, False, INT4_G128),
    ("ct-w4a16-g128-asym", _quant(_with(W4A16, config_groups={"group_0": {"targets": ["Linear"], "weights": {**W4A16["config_groups"]["group_0"]["weights"], "symmetric": False}}})), {}, False, INT4_G128_ZP),  # type: ignore[index]
    ("ct-w4a16-ignore-re-lm-head", _quant({**W4A16, "ignore": ["re:.*lm_head"]}), {}, False, INT4_G128),
    ("ct-w4a16-ignore-re-layer0", _quant({**W4A16, "ignore": ["lm_head", r"re:model\.layers\.0\..*"]}), {}, False, W4_LAYER0_NATIVE),
    ("ct-w4a16-ignore-layer0-names", _quant({**W4A16, "ignore": ["lm_head", *(f"model.layers.0.{m}" for m in ("self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj", "self_attn.o_proj", "mlp.gate_proj", "mlp.up_proj", "mlp.down_proj"))]}), {}, False, W4_LAYER0_NATIVE),
    ("ct-w4a16-targets-re", _quant(_with(W4A16, config_groups={"group_0": {"targets": [r"re:.*(q|k|v|o|gate|up|down)_proj$"], "weights": W4A16["config_groups"]["group_0"]["weights"]}})), {}, False, INT4_G128),  # type: ignore[index]
    ("ct-w4a16-kv-fp8-scheme", _quant({**W4A16, "kv_cache_scheme": KV_FP8}), {}, False, INT4_G128),
    ("ct-w4a16-kv-scheme-int8", _quant({**W4A16, "kv_cache_scheme": {**KV_FP8, "type": "int"}}), {}, False, INT4_G128),
    ("ct-w4a16-kv-scheme-channel", _quant({**W4A16, "kv_cache_scheme": {**KV_FP8, "strategy": "channel"}}), {}, True, None),
    ("ct-fp8-dynamic", _quant(FP8_DYNAMIC), {}, False, FP8_TENSOR),
    ("ct-fp8-block", _quant(_with(FP8_DYNAMIC, config_groups={"group_0": {"targets": ["Linear"], "weights": {"num_bits": 8, "type": "float", "strategy": "block", "block_structure": [128, 128], "dynamic": False, "symmetric": True}}})), {}, False, None),
    ("ct-nvfp4", _quant(_with(FP8_DYNAMIC, format="nvfp4-pack-quantized", config_groups={"group_0": {"targets": ["Linear"], "weights": {"num_bits": 4, "type": "float", "strategy": "tensor_group", "group_size": 16, "dynamic": False, "symmetric": True}}})), {}, False, NVFP4),
    ("ct-sparsity-dense", _quant({**W4A16, "sparsity_config": {"format": "dense", "sparsity_structure": "unstructured", "global_sparsity": 0.0}}), {}, False, INT4_G128),
    ("ct-sparsity-24", _quant({**W4A16, "sparsity_config": {"format": "sparse-24-bitmask", "sparsity_structure": "2:4"}}), {}, True, None),
    ("modelopt-fp8-side-file", LLAMA, {"m/hf_quant_config.json": json.dumps(MODELOPT_FP8)}, False, FP8_TENSOR),
    ("modelopt-nvfp4-side-file", LLAMA, {"m/hf_quant_config.json": json.dumps(MODELOPT_NVFP4)}, False, NVFP4),
    ("modelopt-nvfp4-in-config", _quant({"quant_method": "modelopt", "quant_algo": "NVFP4", "kv_cache_quant_algo": "FP8", "group_size": 16, "exclude_modules": ["lm_head"], "producer": {"name": "modelopt", "version": "0.31.0"}}), {}, False, NVFP4),
    ("modelopt-nvfp4-no-group", LLAMA, {"m/hf_quant_config.json": json.dumps({"quantization": {"quant_algo": "NVFP4", "exclude_modules": ["lm_head"]}})}, False, NVFP4),
    ("modelopt-glob-excludes-layer0", LLAMA, {"m/hf_quant_config.json": json.dumps({"quantization": {"quant_algo": "NVFP4", "exclude_modules": ["lm_head", "model.layers.0.*"]}})}, False, (LINEAR - LAYER) * 9 // 16 + NATIVE_B + 2 * LAYER),
    ("modelopt-config-beats-side-file", _quant({"quant_method": "modelopt", "quant_algo": "FP8", "exclude_modules": ["lm_head"]}), {"m/hf_quant_config.json": json.dumps(MODELOPT_NVFP4)}, False, FP8_TENSOR),
    ("modelopt-mixed-precision", LLAMA, {"m/hf_quant_config.json": json.dumps({"quantization": {"quant_algo": "MIXED_PRECISION", "quantized_layers": {"model.layers.0.mlp.down_proj": {"quant_algo": "FP8"}}}})}, True, None),
    ("modelopt-w4a8-awq", LLAMA, {"m/hf_quant_config.json": json.dumps({"quantization": {"quant_algo": "W4A8_AWQ"}})}, True, None),
    ("fp8-block-128", _quant({"quant_method": "fp8", "activation_scheme": "dynamic", "fmt": "e4m3", "weight_block_size": [128, 128]}), {}, False, FP8_BLOCK),
    ("fp8-block-ignored-layers-null", _quant({"quant_method": "fp8", "activation_scheme": "dynamic", "weight_block_size": [128, 128], "ignored_layers": None}), {}, False, FP8_BLOCK),
    ("fp8-static-tensor", _quant({"quant_method": "fp8", "activation_scheme": "static"}), {}, False, FP8_TENSOR),
    ("fp8-block-static", _quant({"quant_method": "fp8", "activation_scheme": "static", "weight_block_size": [128, 128]}), {}, True, None),
    ("fbgemm-fp8", _quant({"quant_method": "fbgemm_fp8", "activation_scale_ub": 1200.0, "modules_to_not_convert": ["lm_head"]}), {}, False, LINEAR + 4 * ROWS + NATIVE_B),
    ("bnb-4bit-nf4", _quant({"quant_method": "bitsandbytes", "load_in_4bit": True, "bnb_4bit_quant_type": "nf4", "bnb_4bit_use_double_quant": True, "bnb_4bit_compute_dtype": "bfloat16"}), {}, None, None),
    ("bnb-8bit", _quant({"quant_method": "bitsandbytes", "load_in_8bit": True, "llm_int8_threshold": 6.0}), {}, None, None),
    ("quant-config-empty", _quant({}), {}, None, None),
    ("quant-config-null", _quant(None), {}, False, BF16_B),  # type: ignore[arg-type]
]
# fmt: on


def quant23_cases() -> Iterator[Case]:
    for name, config, side, invalid, weights in QUANT23:
        files: dict[str, FileSpec] = {"m/config.json": json.dumps(config), **side}
        answer = _memory(weights=weights) if weights is not None else None
        yield Case("quant23", name, MEMORY, files, invalid, answer=answer)
    # mxfp4 gpt-oss and an AWQ MoE: answered (figures of their own cards' configs)
    # gpt-oss-20b by hand (hidden 2,880, 24 layers, 32 experts of 2,880, 64 heads and 8 KV heads
    # of 64, vocabulary 201,088, untied): experts 24 x 32 x 3 x 2,880^2 = 19,110,297,600 elements
    # at 4 + 8/32 bits = 10,152,345,600 B; at bf16: attention 24 x 26,542,080, its biases and
    # sinks 24 x 8,064, router 24 x 92,192, expert biases 24 x 32 x 8,640, norms 141,120,
    # embedding and head 2 x 579,133,440 = 1,804,459,584 elements, 3,608,919,168 B: 13,761,264,768 B
    oss = fs._card_config("gpt-oss-20b")
    yield Case(
        "quant23",
        "gpt-oss-mxfp4-released-excludes",
        MEMORY,
        {
            "m/config.json": json.dumps(
                _with(
                    oss,
                    quantization_config={
                        "quant_method": "mxfp4",
                        "modules_to_not_convert": [
                            "model.layers.*.self_attn",
                            "model.layers.*.mlp.router",
                            "model.embed_tokens",
                            "lm_head",
                        ],
                    },
                )
            )
        },
        False,
        answer=_memory(weights=13_761_264_768),
    )


# A safetensors file: 8-byte length, a JSON header padded with spaces to 8 bytes, then data.
DTYPE_BITS = {
    "F8_E4M3": 8,
    "F8_E5M2": 8,
    "F8_E8M0": 8,
    "U8": 8,
    "I8": 8,
    "BF16": 16,
    "F16": 16,
    "F32": 32,
    "I32": 32,
    "F4": 4,
    "I64": 64,
    "BOOL": 8,
}


def st(
    tensors: list[tuple[str, str, list[int]]],
    *,
    metadata: dict[str, object] | None = None,
    pad: str = " ",
    tail: int = 0,
) -> bytes:
    """A safetensors file of `tensors` (name, dtype, shape), end to end in the given order."""
    header: dict[str, object] = {}
    if metadata is not None:
        header["__metadata__"] = metadata
    at = 0
    for name, dtype, shape in tensors:
        elements = 1
        for d in shape:
            elements *= d
        size = elements * DTYPE_BITS[dtype] // 8
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [at, at + size]}
        at += size
    text = json.dumps(header).encode()
    text += pad.encode() * (-len(text) % 8)
    return struct.pack("<Q", len(text)) + text + b"\0" * (at + tail)


def _index(weight_map: dict[str, str], **metadata: object) -> str:
    return json.dumps({"metadata": metadata, "weight_map": weight_map})


CONFIG = json.dumps(LLAMA)
# (F8_E4M3 16x16 = 256 B, its F32 scale [] = 4 B, BF16 norm [16] = 32 B)
FP8_ST = [
    ("model.layers.0.mlp.down_proj.weight", "F8_E4M3", [16, 16]),
    ("model.layers.0.mlp.down_proj.weight_scale", "F32", []),
    ("model.norm.weight", "BF16", [16]),
]
# NVFP4 as ModelOpt writes it: U8 [16, 8] packs 16 x 16 FP4 (128 B), F8_E4M3 scale [16, 1] per 16 (16 B), F32 scale_2 [] (4 B)
NVFP4_ST = [
    ("model.layers.0.mlp.up_proj.weight", "U8", [16, 8]),
    ("model.layers.0.mlp.up_proj.weight_scale", "F8_E4M3", [16, 1]),
    ("model.layers.0.mlp.up_proj.weight_scale_2", "F32", []),
]
# mxfp4 as gpt-oss writes it: U8 blocks [2, 4, 2, 16] (256 B), U8 scales [2, 4, 2] (16 B)
MXFP4_ST = [
    ("model.layers.0.mlp.experts.gate_up_proj_blocks", "U8", [2, 4, 2, 16]),
    ("model.layers.0.mlp.experts.gate_up_proj_scales", "U8", [2, 4, 2]),
]
# GPTQ: I32 qweight [2, 16] (128 B), I32 qzeros [1, 2] (8 B), F16 scales [1, 16] (32 B), I32 g_idx [16] (64 B)
GPTQ_ST = [
    ("model.layers.0.mlp.down_proj.qweight", "I32", [2, 16]),
    ("model.layers.0.mlp.down_proj.qzeros", "I32", [1, 2]),
    ("model.layers.0.mlp.down_proj.scales", "F16", [1, 16]),
    ("model.layers.0.mlp.down_proj.g_idx", "I32", [16]),
]
EMBED = [("model.embed_tokens.weight", "BF16", [8, 4])]  # 64 B

# fmt: off
# (name, files in m/, invalid, checkpoint bytes by hand or None)
SAFET23: list[tuple[str, dict[str, FileSpec], bool | None, int | None]] = [
    ("fp8-scale-norm", {"model.safetensors": st(FP8_ST, metadata={"format": "pt"})}, False, 292),
    ("nvfp4-u8-packed", {"model.safetensors": st(NVFP4_ST, metadata={"format": "pt"})}, False, 148),
    ("mxfp4-u8-blocks", {"model.safetensors": st(MXFP4_ST)}, False, 272),
    ("gptq-i32-f16", {"model.safetensors": st(GPTQ_ST)}, False, 232),
    ("f4-half-bytes", {"model.safetensors": st([("w", "F4", [16, 16]), ("s", "F8_E8M0", [16, 1])])}, False, 144),
    ("i8-and-bool", {"model.safetensors": st([("w", "I8", [8, 8]), ("mask", "BOOL", [8])])}, False, 72),
    ("scalar-and-empty", {"model.safetensors": st([("a", "F32", []), ("b", "BF16", [0, 4096]), ("c", "F16", [2])])}, False, 8),
    ("header-no-padding", {"model.safetensors": st(FP8_ST, pad="")}, False, 292),
    ("metadata-many-strings", {"model.safetensors": st(FP8_ST, metadata={"format": "pt", "quantization": "modelopt", "total_size": "292"})}, False, 292),
    ("metadata-not-strings", {"model.safetensors": st(FP8_ST, metadata={"format": "pt", "total_size": 292})}, True, None),
    ("offsets-out-of-name-order", {"model.safetensors": st([("z", "BF16", [4]), ("a", "F32", [4])])}, False, 24),
    ("empty-header", {"model.safetensors": st([])}, None, None),
    ("trailing-bytes", {"model.safetensors": st(FP8_ST, tail=8)}, True, None),
    ("two-shards-indexed", {"model-00001-of-00002.safetensors": st(FP8_ST), "model-00002-of-00002.safetensors": st(EMBED), "model.safetensors.index.json": _index({n: "model-00001-of-00002.safetensors" for n, _, _ in FP8_ST} | {"model.embed_tokens.weight": "model-00002-of-00002.safetensors"}, total_size=356)}, False, 356),
    ("index-total-size-disagrees", {"model-00001-of-00002.safetensors": st(FP8_ST), "model-00002-of-00002.safetensors": st(EMBED), "model.safetensors.index.json": _index({n: "model-00001-of-00002.safetensors" for n, _, _ in FP8_ST} | {"model.embed_tokens.weight": "model-00002-of-00002.safetensors"}, total_size=16_060_522_496)}, None, 356),
    ("index-metadata-total-parameters", {"model-00001-of-00002.safetensors": st(FP8_ST), "model-00002-of-00002.safetensors": st(EMBED), "model.safetensors.index.json": _index({n: "model-00001-of-00002.safetensors" for n, _, _ in FP8_ST} | {"model.embed_tokens.weight": "model-00002-of-00002.safetensors"}, total_size=356, total_parameters=308)}, False, 356),
    ("index-shard-missing", {"model-00001-of-00002.safetensors": st(FP8_ST), "model.safetensors.index.json": _index({"a": "model-00001-of-00002.safetensors", "b": "model-00002-of-00002.safetensors"})}, True, None),
    ("index-leaves-consolidated", {"model-00001-of-00001.safetensors": st(FP8_ST), "consolidated.safetensors": st(FP8_ST + EMBED), "model.safetensors.index.json": _index({n: "model-00001-of-00001.safetensors" for n, _, _ in FP8_ST})}, False, 292),
    ("tensor-in-two-shards", {"model-00001-of-00002.safetensors": st(FP8_ST), "model-00002-of-00002.safetensors": st([FP8_ST[2], *EMBED]), "model.safetensors.index.json": _index({n: "model-00001-of-00002.safetensors" for n, _, _ in FP8_ST} | {"model.embed_tokens.weight": "model-00002-of-00002.safetensors"})}, None, None),
    ("numbered-no-index-complete", {"model-00001-of-00002.safetensors": st(FP8_ST), "model-00002-of-00002.safetensors": st(EMBED)}, False, 356),
    ("numbered-no-index-one-missing", {"model-00001-of-00003.safetensors": st(FP8_ST), "model-00003-of-00003.safetensors": st(EMBED)}, True, None),
    ("index-no-metadata-key", {"model-00001-of-00002.safetensors": st(FP8_ST), "model-00002-of-00002.safetensors": st(EMBED), "model.safetensors.index.json": json.dumps({"weight_map": {n: "model-00001-of-00002.safetensors" for n, _, _ in FP8_ST} | {"model.embed_tokens.weight": "model-00002-of-00002.safetensors"}})}, False, 356),
    ("index-empty-weight-map", {"model.safetensors": st(FP8_ST), "model.safetensors.index.json": _index({})}, True, None),
    ("shard-u8-dtype-shape-mismatch", {"model.safetensors": st(NVFP4_ST).replace(b'"shape": [16, 8]', b'"shape": [16, 16]')}, True, None),
]
# fmt: on


def safet23_cases() -> Iterator[Case]:
    for name, files, invalid, checkpoint in SAFET23:
        spec: dict[str, FileSpec] = {
            "m/config.json": CONFIG,
            **{f"m/{k}": v for k, v in files.items()},
        }
        answer = _memory(checkpoint=checkpoint) if checkpoint is not None else None
        yield Case("safet23", name, MEMORY, spec, invalid, answer=answer)


def _calibrated(
    points: list[tuple[int, int, int, float | None, float | None]],
) -> Callable[[str], str | None]:
    """A reading of `calibrate --format json`: each point's clients, input and output lengths,
    measured output tok/s and TPOT (s), in file order, as the rows say (None: not measured)."""

    def check(out: str) -> str | None:
        try:
            data = json.loads(out[out.index("{") :])
        except ValueError:
            return "not JSON"
        got = [
            (
                p["concurrency"],
                p["input_len"],
                p["output_len"],
                p["measured"]["output_throughput_tok_s"],
                p["measured"]["mean_tpot_s"],
            )
            for p in data["points"]
        ]
        want = [(c, i, o, t, None if s is None else round(s, 9)) for c, i, o, t, s in points]
        got = [(c, i, o, t, None if s is None else round(s, 9)) for c, i, o, t, s in got]
        return None if got == want else f"points {got} (by hand {want})"

    return check


def _cal(name: str) -> list[str]:
    """`calibrate --format json` of the case's file `name` for Llama 3.1 8B on an H100."""
    return [
        "calibrate",
        "{d}/" + name,
        "--model",
        "llama-3.1-8b",
        "--gpu",
        "h100-sxm",
        "--format",
        "json",
    ]


CAL, CAL_JSONL, CAL_CSV = _cal("r.json"), _cal("r.jsonl"), _cal("r.csv")
# fs.RUNS: 200 prompts, 204,800 input and 25,600 output tokens: 1,024 / 128 a request
ONE_TOKEN = [(8, 1024, 1, 36.0, None), (32, 1024, 1, 38.0, None), (64, 1024, 1, 39.0, None)]
BY_HAND = [
    (8, 1024, 128, 500.0, 0.014),
    (32, 1024, 128, 1200.0, 0.024),
    (64, 1024, 128, 1800.0, 0.032),
]


def _detailed(run: dict[str, object]) -> dict[str, object]:
    """A run as `--save-result --save-detailed` writes it: per-request lists beside the means."""
    n = 200
    return {**run, "endpoint_type": "openai", "label": None, "failed": 0, "request_goodput": None,
            "max_output_tokens_per_s": 700.0, "max_concurrent_requests": run["max_concurrency"],
            "input_lens": [1024] * n, "output_lens": [128] * n, "ttfts": [0.15] * n,
            "itls": [[0.014] * 127] * n, "generated_texts": ["x"] * n, "errors": [""] * n,
            "std_ttft_ms": 1.0, "p25_ttft_ms": 120.0, "p99.9_ttft_ms": 320.0, "std_tpot_ms": 0.5,
            "p25_tpot_ms": 13.0, "p99.9_tpot_ms": 20.0, "median_itl_ms": 14.0, "p99_itl_ms": 20.0,
            "std_itl_ms": 1.0, "mean_e2el_ms": 1900.0, "median_e2el_ms": 1900.0, "p99_e2el_ms": 2500.0}  # fmt: skip


def _failed(run: dict[str, object]) -> dict[str, object]:
    """10 of 200 failed: vLLM sums the totals over the 190 that finished (calculate_metrics)."""
    return {
        **run,
        "completed": 190,
        "failed": 10,
        "total_input_tokens": 190 * 1024,
        "total_output_tokens": 190 * 128,
    }


def _one_token(run: dict[str, object]) -> dict[str, object]:
    """`--random-output-len 1`: no request has a second token, so vLLM's TPOT list is empty and
    it writes `np.mean(tpots or 0) * 1000` = 0 for the mean, median and every percentile."""
    clients = run["max_concurrency"]
    return {
        **run,
        **_ONE_TOKEN[clients],
        "total_output_tokens": 200,
        "median_tpot_ms": 0.0,
        "p99_tpot_ms": 0.0,
        "mean_itl_ms": 0.0,
    }  # type: ignore[index]


# One-token runs of 1,024-token prompts on an H100: prefill-bound at about 40 requests a second
# (1,024 x 16 GFLOP a token in about 25 ms), so TTFT grows with the clients (Little's law:
# 8 / 0.2 s, 32 / 0.8 s, 64 / 1.6 s = 40 a second) and each finished request is one token
_ONE_TOKEN = {
    c: {"mean_tpot_ms": 0.0, "output_throughput": t, "mean_ttft_ms": ttft}
    for c, t, ttft in ((8, 36.0, 200.0), (32, 38.0, 800.0), (64, 39.0, 1600.0))
}


def _lines(runs: list[dict[str, object]], sep: str = "\n", end: str = "") -> str:
    return sep.join(json.dumps(r) for r in runs) + end


SG = fs.SG_RUNS
CSV_HEAD = "concurrency,input_len,output_len,output_throughput_tok_s,mean_tpot_ms,mean_ttft_ms"
CSV_ROWS = [
    "8,1024,128,500.0,14.0,150.0",
    "32,1024,128,1200.0,24.0,150.0",
    "64,1024,128,1800.0,32.0,150.0",
]

# fmt: off
# (name, argv, files, invalid, points by hand or None)
BENCH23: list[tuple[str, list[str], dict[str, FileSpec], bool | None, list[tuple[int, int, int, float | None, float | None]] | None]] = [
    ("vllm-append-result", CAL, {"r.json": _lines(fs.RUNS)}, False, BY_HAND),
    ("vllm-save-detailed", CAL, {"r.json": _lines([_detailed(r) for r in fs.RUNS])}, False, BY_HAND),
    ("vllm-failed-requests", CAL, {"r.json": _lines([_failed(r) for r in fs.RUNS])}, False, BY_HAND),
    ("vllm-one-run-indented", CAL, {"r.json": json.dumps(fs.RUNS[1], indent=4)}, False, [BY_HAND[1]]),
    ("vllm-max-concurrency-null", CAL, {"r.json": _lines([{**fs.RUNS[0], "max_concurrency": None, "output_throughput": 6000.0}])}, False, [(200, 1024, 128, 6000.0, 0.014)]),
    ("vllm-ramp-up-null", CAL, {"r.json": _lines([{**r, "ramp_up_strategy": None, "ramp_up_start_rps": None, "ramp_up_end_rps": None} for r in fs.RUNS])}, False, BY_HAND),
    ("vllm-metadata-keys", CAL, {"r.json": _lines([{**r, "gpu": "H100", "note": "run 1", "tensor_parallel_size": "1"} for r in fs.RUNS])}, False, BY_HAND),
    ("vllm-append-trailing-newline", CAL, {"r.json": _lines(fs.RUNS, end="\n")}, False, BY_HAND),
    ("vllm-append-crlf", CAL, {"r.json": _lines(fs.RUNS, sep="\r\n", end="\r\n")}, False, BY_HAND),
    ("vllm-one-token-outputs", CAL, {"r.json": _lines([_one_token(r) for r in fs.RUNS])}, False, ONE_TOKEN),
    ("vllm-model-id-local-path", CAL, {"r.json": _lines([{**r, "model_id": "/models/Meta-Llama-3.1-8B-Instruct"} for r in fs.RUNS])}, None, None),
    ("vllm-request-rate-number", CAL, {"r.json": _lines([{**r, "request_rate": 4.0} for r in fs.RUNS])}, True, None),
    ("vllm-cap-past-prompts", CAL, {"r.json": _lines([{**fs.RUNS[0], "max_concurrency": 1000, "output_throughput": 6000.0}])}, False, [(200, 1024, 128, 6000.0, 0.014)]),
    ("sglang-request-rate-infinity", CAL_JSONL, {"r.jsonl": "\n".join(json.dumps({**r, "request_rate": float("inf")}) for r in SG) + "\n"}, False, BY_HAND),
    ("sglang-crlf", CAL_JSONL, {"r.jsonl": _lines(SG, sep="\r\n", end="\r\n")}, False, BY_HAND),
    ("sglang-sharegpt-means", CAL_JSONL, {"r.jsonl": _lines([{**r, "dataset_name": "sharegpt", "total_input_tokens": 200 * 300, "total_output_tokens": 200 * 250} for r in SG])}, False, [(8, 300, 250, 500.0, 0.014), (32, 300, 250, 1200.0, 0.024), (64, 300, 250, 1800.0, 0.032)]),
    ("sglang-max-concurrency-null", CAL_JSONL, {"r.jsonl": _lines([{**SG[0], "max_concurrency": None, "output_throughput": 6000.0}])}, False, [(200, 1024, 128, 6000.0, 0.014)]),
    ("sglang-extra-keys", CAL_JSONL, {"r.jsonl": _lines([{**r, "backend": "sglang-oai", "sglang_version": "0.5.2", "server_info": {"tp_size": 1}, "concurrency": 1.0, "accept_length": None, "p90_ttft_ms": 200.0, "std_e2e_latency_ms": 3.0} for r in SG])}, False, BY_HAND),
    ("sglang-one-token-outputs", CAL_JSONL, {"r.jsonl": _lines([{**r, "random_output_len": 1, "total_output_tokens": 200, **_ONE_TOKEN[r["max_concurrency"]]} for r in SG])}, False, ONE_TOKEN),  # type: ignore[index]
    ("csv-plain", CAL_CSV, {"r.csv": "\n".join([CSV_HEAD, *CSV_ROWS]) + "\n"}, False, BY_HAND),
    ("csv-bom-crlf", CAL_CSV, {"r.csv": "\ufeff" + "\r\n".join([CSV_HEAD, *CSV_ROWS]) + "\r\n"}, False, BY_HAND),
    ("csv-extra-columns-quoted", CAL_CSV, {"r.csv": "\n".join(['row_id,' + CSV_HEAD + ',notes', *(f'r{i},{row},"tp1, bf16"' for i, row in enumerate(CSV_ROWS))]) + "\n"}, False, BY_HAND),
    ("csv-tpot-column-blank", CAL_CSV, {"r.csv": "\n".join([CSV_HEAD, *(",".join([*row.split(",")[:4], "", "150.0"]) for row in CSV_ROWS)]) + "\n"}, False, [(8, 1024, 128, 500.0, None), (32, 1024, 128, 1200.0, None), (64, 1024, 128, 1800.0, None)]),
    ("csv-one-token-tpot-0", CAL_CSV, {"r.csv": "\n".join([CSV_HEAD, "8,1024,1,36.0,0,200.0", "32,1024,1,38.0,0,800.0", "64,1024,1,39.0,0,1600.0"]) + "\n"}, False, ONE_TOKEN),
    ("csv-tpot-0-longer-outputs", CAL_CSV, {"r.csv": "\n".join([CSV_HEAD, "8,1024,128,500.0,0,150.0"]) + "\n"}, True, None),
    ("vllm-tpot-0-longer-outputs", CAL, {"r.json": _lines([{**fs.RUNS[0], "mean_tpot_ms": 0.0}])}, True, None),
    ("csv-columns-reordered", CAL_CSV, {"r.csv": "\n".join(["mean_ttft_ms,mean_tpot_ms,output_throughput_tok_s,output_len,input_len,concurrency", *(",".join(reversed(row.split(","))) for row in CSV_ROWS)]) + "\n"}, False, BY_HAND),
    ("csv-tpot-in-seconds-header", CAL_CSV, {"r.csv": "\n".join(["concurrency,input_len,output_len,output_throughput_tok_s,mean_tpot_s,mean_ttft_ms", "8,1024,128,500.0,0.014,150.0"]) + "\n"}, None, None),
]
# fmt: on


def bench23_cases() -> Iterator[Case]:
    for name, argv, files, invalid, points in BENCH23:
        answer = _calibrated(points) if points is not None else None
        yield Case("bench23", name, argv, dict(files), invalid, answer=answer)


SURFACES23: dict[str, Callable[[], Iterator[Case]]] = {
    "quant23": quant23_cases,
    "safet23": safet23_cases,
    "bench23": bench23_cases,
}


def _served(rows: int, out_tokens: int, saved: int | None = None) -> Callable[[str], str | None]:
    """A reading of `sweep --format json` on a trace: every point served the trace's `rows`
    requests and its `out_tokens` output tokens (output tok/s x makespan, to half a token), and
    where given saved `saved` prefill tokens from the prefix cache (whole 16-token blocks of a
    session's earlier context, worked by hand)."""

    def check(out: str) -> str | None:
        try:
            data = json.loads(out)
        except ValueError:
            return "not JSON"
        wrong = []
        if data["num_requests"] != rows:
            wrong.append(f"num_requests {data['num_requests']} (by hand {rows})")
        for p in data["points"]:
            tokens = p["output_throughput_tok_s"] * p["makespan_s"]
            if abs(tokens - out_tokens) > 0.5:
                wrong.append(
                    f"concurrency {p['concurrency']}: {tokens:.1f} output tokens (by hand {out_tokens})"
                )
            if saved is not None and p["prefill_tokens_saved"] != saved:
                wrong.append(
                    f"concurrency {p['concurrency']}: prefill_tokens_saved {p['prefill_tokens_saved']} (by hand {saved})"
                )
        return "; ".join(wrong) or None

    return check


def _jsonl(rows: list[dict[str, object]]) -> str:
    return "".join(json.dumps(r) + "\n" for r in rows)


TRACE = [
    "sweep",
    "llama-3.1-8b",
    "--gpu",
    "h100-sxm",
    "--workload",
    "{d}/t.jsonl",
    "--concurrency",
    "1,4",
    "--format",
    "json",
]
S = fs.SESSION_ROWS  # 4 turns, 80 output tokens; 64 + 64 tokens saved (module _served)


def _session(sid: str, turns: int, inp: int, out: int, think: float) -> list[dict[str, object]]:
    return [
        {
            "session_id": sid,
            "turn": t,
            "input_tokens": inp,
            "output_tokens": out,
            **({"arrival_s": 0.0} if t == 0 else {"think_s": think}),
        }
        for t in range(turns)
    ]


# fmt: off
# (name, argv, trace rows, invalid, reading)
TRACES23: list[tuple[str, list[str], list[dict[str, object]], bool | None, Callable[[str], str | None] | None]] = [
    ("sessions-as-shipped", TRACE, S, False, _served(4, 80, 128)),
    ("sessions-think-0", TRACE, [{**r, "think_s": 0.0} if "think_s" in r else r for r in S], False, _served(4, 80, 128)),
    ("sessions-think-1e5", TRACE, [{**r, "think_s": 1e5} if "think_s" in r else r for r in S], False, _served(4, 80)),
    ("sessions-arrival-1e6", TRACE, [{**r, "arrival_s": 1e6} if r.get("arrival_s") == 0.5 else r for r in S], False, _served(4, 80)),
    ("sessions-one-token-outputs", TRACE, [{**r, "output_tokens": 1} for r in S], False, _served(4, 4)),
    ("sessions-one-turn-each", TRACE, [r for r in S if r["turn"] == 0], False, _served(2, 40, 0)),
    ("sessions-numeric-ids", TRACE, [{**r, "session_id": 7 if r["session_id"] == "a" else 8} for r in S], None, None),
    # 50 sessions of 8 turns, 100 in and 10 out a turn: 400 requests, 4,000 output tokens;
    # turn t > 0 holds 110 x t earlier tokens: floor(110 t / 16) x 16 saved, 50 x sum over t = 1..7
    ("sessions-50x8", TRACE, [r for s in range(50) for r in _session(f"s{s}", 8, 100, 10, 0.5)], False,
     _served(400, 4000, 50 * sum(110 * t // 16 * 16 for t in range(1, 8)))),
    ("plain-burst-equal-arrivals", TRACE, [{"arrival_s": 0.0, "input_tokens": 64, "output_tokens": 16}] * 40, False, _served(40, 640)),
    ("plain-one-token-in-out", TRACE, [{"arrival_s": 0.1 * i, "input_tokens": 1, "output_tokens": 1} for i in range(10)], False, _served(10, 10)),
    ("plain-at-context-limit", [*TRACE, "--max-model-len", "4096"], [{"arrival_s": 0.0, "input_tokens": 4095, "output_tokens": 1}, {"arrival_s": 0.0, "input_tokens": 1, "output_tokens": 4095}], False, _served(2, 4096)),
    # two sessions, each one turn at the 4,096-token limit (4,000 + 10 and 10 + 4,000 with no other)
    ("sessions-at-context-limit", [*TRACE, "--max-model-len", "4096"], [{"session_id": "a", "turn": 0, "input_tokens": 4000, "output_tokens": 10, "arrival_s": 0.0}, {"session_id": "b", "turn": 0, "input_tokens": 10, "output_tokens": 4000, "arrival_s": 0.0}], False, _served(2, 4010)),
    ("plain-unsorted-arrivals", TRACE, list(reversed(fs.PLAIN_ROWS)), None, None),
    ("plain-gap-1e6", TRACE, [*fs.PLAIN_ROWS, {"arrival_s": 1e6, "input_tokens": 50, "output_tokens": 20}], False, _served(4, 80)),
    ("plain-offload-tiny", [*TRACE, "--offload", "cpu:1GiB"], fs.PLAIN_ROWS, False, _served(3, 60)),
    ("sessions-offload-huge", [*TRACE, "--offload", "cpu:2TiB"], S, None, None),
    ("sessions-disagg", [*TRACE, "--disagg", "1p:tp1,1d:tp1"], S, None, None),
]
# fmt: on


def traces23_cases() -> Iterator[Case]:
    for name, argv, rows, invalid, reading in TRACES23:
        yield Case("traces23", name, argv, {"t.jsonl": _jsonl(rows)}, invalid, answer=reading)


SURFACES23["traces23"] = traces23_cases
