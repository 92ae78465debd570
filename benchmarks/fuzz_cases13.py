"""The thirteenth bad-input campaign's surfaces (issue 23), run by `fuzz_surfaces.py`:

    PYTHONPATH=. python benchmarks/fuzz_surfaces.py configs13 quants13 st13 traces13 cal13 flags13 outputs13 spec13

What the twelve campaigns before did not try: config.json values of the right type that no model
has (a MoE routing more experts per token than it has, zero heads, zero layers, a vocabulary of
none, MLA with a zero latent rank, a head_dim that does not divide hidden_size but is given;
configs13); quantization bit widths and group sizes no kernel packs (GPTQ at 0, 1, 2.5, 16 bits,
groups of 0, -2, 7 or past the hidden width; compressed-tensors num_bits 0 and 3; FP8 blocks of
0 or one dimension; quants13); safetensors headers whose tensors overlap, run past the data,
end before they begin, claim an unknown dtype or a negative or 2^80-element shape (st13);
session traces out of order, with a turn -1, only a turn 1, prefixes longer than their input,
a 10M-token turn, output 0, a plain trace's arrivals going backwards (traces13); vLLM bench
results with zero completed or zero duration, another model's id, runs all at one concurrency,
CSV with semicolons or tabs or quoted thousands, logs with NUL bytes mid-line (cal13); numeric
flags at sizes that could make the simulator run forever (a rate of 1e-9, 10^9 requests,
10^6 concurrency, 10^6 GPUs), GPU lists with empty and repeated entries, model names with path
separators, a Cyrillic look-alike or 5,000 characters (flags13); outputs that name an input
(calibrate -o onto its own input, even with --force; --plot onto the trace; --serve-command onto
the calibration file; outputs13); check spec values and JSON specs (spec13).
"""

# Data tables: one case per line, some past 100 characters, look-alike letters on purpose.
# ruff: noqa: E501, RUF001
from __future__ import annotations

import json
from collections.abc import Callable, Iterator

import fuzz_surfaces as fs
from fuzz_cases7 import CAL, SW, _lines, _st
from fuzz_cases9 import CSV_HEAD, CSV_ROWS
from fuzz_cases11 import LLAMA_70B
from fuzz_harness import Case, FileSpec

# fmt: off
MEM8 = ["memory", "{d}/m", "--gpus", "1", "--gpu", "h200-sxm", "--format", "json"]
MEM70 = ["memory", "{d}/m", "--gpus", "8", "--gpu", "h200-sxm"]
SWEEP_M = ["sweep", "{d}/m", "--gpus", "1", "--gpu", "h200-sxm", *fs.SMALL, "--concurrency", "4"]
LLAMA = fs.llama_config()
QWEN_MOE = {"model_type": "qwen3_moe", "head_dim": 128, "hidden_size": 2048, "intermediate_size": 6144,
            "max_position_embeddings": 40960, "moe_intermediate_size": 768, "num_attention_heads": 32,
            "num_experts": 128, "num_experts_per_tok": 8, "num_hidden_layers": 48, "num_key_value_heads": 4,
            "tie_word_embeddings": False, "torch_dtype": "bfloat16", "vocab_size": 151936, "decoder_sparse_step": 1}
DSV3 = {"model_type": "deepseek_v3", "first_k_dense_replace": 3, "hidden_size": 7168, "intermediate_size": 18432,
        "kv_lora_rank": 512, "max_position_embeddings": 163840, "moe_intermediate_size": 2048, "moe_layer_freq": 1,
        "n_routed_experts": 256, "n_shared_experts": 1, "num_attention_heads": 128, "num_experts_per_tok": 8,
        "num_hidden_layers": 61, "num_key_value_heads": 128, "q_lora_rank": 1536, "qk_nope_head_dim": 128,
        "qk_rope_head_dim": 64, "v_head_dim": 128, "vocab_size": 129280, "torch_dtype": "bfloat16",
        "tie_word_embeddings": False}


def _raw(obj: dict[str, object], key: str, raw: str) -> str:
    return fs._json_with(obj, key, raw)


# config.json values of the right type that no model has ----------------------------------------

CONFIGS13: list[tuple[str, dict[str, object] | str, bool | None]] = [
    ("moe-topk-above-experts", {**QWEN_MOE, "num_experts_per_tok": 256}, True),
    ("moe-topk-zero", {**QWEN_MOE, "num_experts_per_tok": 0}, True),
    ("moe-topk-equal-experts", {**QWEN_MOE, "num_experts": 8, "num_experts_per_tok": 8}, None),
    ("moe-one-expert", {**QWEN_MOE, "num_experts": 1, "num_experts_per_tok": 1}, None),
    ("moe-intermediate-zero", {**QWEN_MOE, "moe_intermediate_size": 0}, True),
    ("moe-sparse-step-zero", {**QWEN_MOE, "decoder_sparse_step": 0}, None),
    ("moe-sparse-step-past-layers", {**QWEN_MOE, "decoder_sparse_step": 1000}, None),
    ("moe-experts-negative", {**QWEN_MOE, "num_experts": -8}, True),
    ("moe-topk-float", {**QWEN_MOE, "num_experts_per_tok": 8.0}, None),
    ("moe-topk-string", {**QWEN_MOE, "num_experts_per_tok": "8"}, True),
    ("mla-kv-lora-zero", {**DSV3, "kv_lora_rank": 0}, True),
    ("mla-rope-dim-zero", {**DSV3, "qk_rope_head_dim": 0}, None),
    ("mla-v-head-zero", {**DSV3, "v_head_dim": 0}, True),
    ("mla-q-lora-null", {**DSV3, "q_lora_rank": None}, False),
    ("mla-shared-negative", {**DSV3, "n_shared_experts": -1}, True),
    ("mla-dense-replace-past-layers", {**DSV3, "first_k_dense_replace": 100}, None),
    ("mla-dense-replace-negative", {**DSV3, "first_k_dense_replace": -3}, True),
    ("mla-topk-above-routed", {**DSV3, "num_experts_per_tok": 300}, True),
    ("layers-zero", {**LLAMA, "num_hidden_layers": 0}, True),
    ("layers-minus-zero-json", _raw(LLAMA, "num_hidden_layers", "-0"), True),
    ("layers-true", {**LLAMA, "num_hidden_layers": True}, True),
    ("layers-1e400", _raw(LLAMA, "num_hidden_layers", "1e400"), True),
    ("layers-list", {**LLAMA, "num_hidden_layers": [32]}, True),
    ("layers-arabic-string", {**LLAMA, "num_hidden_layers": "٣٢"}, True),
    ("heads-zero", {**LLAMA, "num_attention_heads": 0}, True),
    ("kv-heads-zero", {**LLAMA, "num_key_value_heads": 0}, True),
    ("kv-heads-negative", {**LLAMA, "num_key_value_heads": -8}, True),
    ("head-dim-zero", {**LLAMA, "head_dim": 0}, True),
    ("head-dim-not-dividing-given", {**LLAMA, "head_dim": 96}, None),
    ("hidden-negative", {**LLAMA, "hidden_size": -4096}, True),
    ("hidden-not-divisible-no-head-dim", {**{k: v for k, v in LLAMA.items() if k != "head_dim"}, "hidden_size": 4100}, True),
    ("vocab-zero", {**LLAMA, "vocab_size": 0}, True),
    ("vocab-one", {**LLAMA, "vocab_size": 1}, None),
    ("vocab-float-integral", {**LLAMA, "vocab_size": 128256.0}, None),
    ("intermediate-negative", {**LLAMA, "intermediate_size": -1}, True),
    ("max-pos-zero", {**LLAMA, "max_position_embeddings": 0}, True),
    ("max-pos-negative", {**LLAMA, "max_position_embeddings": -1}, True),
    ("tie-string-false", {**LLAMA, "tie_word_embeddings": "false"}, True),
    ("tie-int-one", {**LLAMA, "tie_word_embeddings": 1}, None),
    ("torch-dtype-float64", {**LLAMA, "torch_dtype": "float64"}, None),
    ("torch-dtype-list", {**LLAMA, "torch_dtype": ["bfloat16"]}, True),
    ("model-type-number", {**LLAMA, "model_type": 7}, True),
    ("quant-under-text-config", {"model_type": "llava", "architectures": ["LlavaForConditionalGeneration"],
                                 "text_config": {**LLAMA, "quantization_config": {"quant_method": "fp8"}}}, None),  # fp8, read by hand
    ("top-level-list", json.dumps([LLAMA]), True),
    ("top-level-null", "null", True),
    ("dup-key-layers-last-zero", json.dumps(LLAMA)[:-1] + ', "num_hidden_layers": 0}', True),
    ("nan-literal-hidden", _raw(LLAMA, "hidden_size", "NaN"), True),
    ("utf16-config", ("utf16", json.dumps(LLAMA)), True),
    ("bom-config", ("bom", json.dumps(LLAMA)), False),
    ("crlf-indented-config", json.dumps(LLAMA, indent=2).replace("\n", "\r\n"), False),
    ("nul-after-config", json.dumps(LLAMA) + "\x00", True),
]


def _encode(spec: dict[str, object] | str | tuple[str, str]) -> FileSpec:
    if isinstance(spec, tuple):
        kind, text = spec
        return text.encode("utf-16") if kind == "utf16" else b"\xef\xbb\xbf" + text.encode()
    return spec if isinstance(spec, str) else json.dumps(spec)


def configs13_cases() -> Iterator[Case]:
    for name, spec, invalid in CONFIGS13:
        gpus = "8" if spec is DSV3 or (isinstance(spec, dict) and spec.get("model_type") == "deepseek_v3") else "1"
        argv = [*MEM8[:3], gpus, *MEM8[4:]]
        yield Case("configs13", name, argv, {"m/config.json": _encode(spec)}, invalid)  # type: ignore[arg-type]
    yield Case("configs13", "sweep-moe-topk-above-experts", SWEEP_M, {"m/config.json": json.dumps({**QWEN_MOE, "num_experts_per_tok": 256})}, True)
    yield Case("configs13", "sweep-head-dim-zero", SWEEP_M, {"m/config.json": json.dumps({**LLAMA, "head_dim": 0})}, True)


# Quantization bit widths and group sizes no kernel packs ---------------------------------------

GPTQ = {"quant_method": "gptq", "bits": 4, "group_size": 128, "desc_act": False, "sym": True}
AWQ = {"quant_method": "awq", "bits": 4, "group_size": 128, "zero_point": True, "version": "gemm"}
CT = {"quant_method": "compressed-tensors", "format": "pack-quantized", "config_groups": {"g": {"targets": ["Linear"],
      "weights": {"num_bits": 4, "type": "int", "strategy": "group", "group_size": 128, "symmetric": True}}}}


def _ct_bits(bits: object, **extra: object) -> dict[str, object]:
    group = CT["config_groups"]["g"]  # type: ignore[index]
    return {**CT, "config_groups": {"g": {**group, "weights": {**group["weights"], "num_bits": bits, **extra}}}}


QUANTS13: list[tuple[str, object, bool | None]] = [
    ("gptq-bits-0", {**GPTQ, "bits": 0}, True),
    ("gptq-bits-1", {**GPTQ, "bits": 1}, True),
    ("gptq-bits-2.5", {**GPTQ, "bits": 2.5}, True),
    ("gptq-bits-16", {**GPTQ, "bits": 16}, True),
    ("gptq-bits-negative", {**GPTQ, "bits": -4}, True),
    ("gptq-bits-string", {**GPTQ, "bits": "4"}, True),
    ("gptq-bits-true", {**GPTQ, "bits": True}, True),
    ("gptq-bits-4.0", {**GPTQ, "bits": 4.0}, None),
    ("gptq-group-0", {**GPTQ, "group_size": 0}, None),  # a row, as -1 (by design)
    ("gptq-group-minus-2", {**GPTQ, "group_size": -2}, True),
    ("gptq-group-7", {**GPTQ, "group_size": 7}, True),
    ("gptq-group-past-hidden", {**GPTQ, "group_size": 16384}, True),
    ("gptq-group-equals-hidden", {**GPTQ, "group_size": 8192}, None),
    ("gptq-group-1e400", fs._json_with(GPTQ, "group_size", "1e400"), True),
    ("gptq-group-null", {**GPTQ, "group_size": None}, None),
    ("gptq-bits-missing", {k: v for k, v in GPTQ.items() if k != "bits"}, None),
    ("awq-bits-8", {**AWQ, "bits": 8}, None),
    ("awq-bits-3", {**AWQ, "bits": 3}, None),
    ("awq-group-0", {**AWQ, "group_size": 0}, None),
    ("ct-num-bits-0", _ct_bits(0), True),
    ("ct-num-bits-3", _ct_bits(3), None),
    ("ct-num-bits-16-int", _ct_bits(16), None),
    ("ct-num-bits-float", _ct_bits(4.5), True),
    ("ct-group-0", _ct_bits(4, group_size=0), True),
    ("ct-group-negative", _ct_bits(4, group_size=-128), True),
    ("fp8-block-zero", {"quant_method": "fp8", "weight_block_size": [0, 128]}, True),
    ("fp8-block-one-dim", {"quant_method": "fp8", "weight_block_size": [128]}, True),
    ("fp8-block-three-dims", {"quant_method": "fp8", "weight_block_size": [128, 128, 128]}, True),
    ("fp8-block-negative", {"quant_method": "fp8", "weight_block_size": [-128, 128]}, True),
    ("fp8-block-strings", {"quant_method": "fp8", "weight_block_size": ["128", "128"]}, True),
    ("quant-method-empty", {"quant_method": "", "bits": 4}, True),
    ("quant-method-null", {"quant_method": None, "bits": 4}, True),
]


def quants13_cases() -> Iterator[Case]:
    for name, quant, invalid in QUANTS13:
        if isinstance(quant, str):  # JSON text of the quantization_config
            text = json.dumps({**LLAMA_70B, "quantization_config": "__Q__"}).replace('"__Q__"', quant)
        else:
            text = json.dumps({**LLAMA_70B, "quantization_config": quant})
        yield Case("quants13", name, MEM70, {"m/config.json": text}, invalid)


# Safetensors headers: overlaps, ranges, dtypes, shapes ------------------------------------------

def _t(dtype: str, shape: list[int], begin: int, end: int) -> dict[str, object]:
    return {"dtype": dtype, "shape": shape, "data_offsets": [begin, end]}


ST13: list[tuple[str, bytes, bool | None]] = [
    ("overlapping", _st({"a": _t("BF16", [2, 2], 0, 8), "b": _t("BF16", [2, 2], 4, 12)}, b"\0" * 12), True),
    ("out-of-range", _st({"a": _t("BF16", [2, 2], 0, 8), "b": _t("BF16", [2, 2], 8, 16)}, b"\0" * 8), True),
    ("end-before-begin", _st({"a": _t("BF16", [2, 2], 8, 0)}, b"\0" * 8), True),
    ("size-mismatch-shape", _st({"a": _t("BF16", [4, 4], 0, 8)}, b"\0" * 8), True),
    ("unknown-dtype", _st({"a": _t("BF17", [2, 2], 0, 8)}), True),
    ("dtype-lowercase", _st({"a": _t("bf16", [2, 2], 0, 8)}), True),
    ("shape-negative", _st({"a": _t("BF16", [-2, -2], 0, 8)}), True),
    ("shape-huge-product", _st({"a": _t("BF16", [2**40, 2**40], 0, 8)}), True),
    ("shape-string", _st({"a": {"dtype": "BF16", "shape": "2,2", "data_offsets": [0, 8]}}), True),
    ("offsets-three", _st({"a": {"dtype": "BF16", "shape": [2, 2], "data_offsets": [0, 4, 8]}}), True),
    ("offsets-negative", _st({"a": _t("BF16", [2, 2], -8, 0)}), True),
    ("dtype-missing", _st({"a": {"shape": [2, 2], "data_offsets": [0, 8]}}), True),
    ("tensor-is-string", _st({"a": "BF16"}), True),
    ("header-is-list", _st(b"[]"), True),
    ("header-len-zero", b"\0" * 8 + b"{}", True),
    ("header-len-past-file", b"\xff\x00\x00\x00\x00\x00\x00\x00{}", True),
    ("file-seven-bytes", b"\x02\x00\x00\x00\x00\x00\x00", True),
    ("header-not-utf8", _st(b'{"\xff\xfe": 1}'), True),
    ("dup-tensor-names", _st(b'{"a": {"dtype": "BF16", "shape": [2, 2], "data_offsets": [0, 8]}, "a": {"dtype": "BF16", "shape": [2, 2], "data_offsets": [0, 8]}}'), None),  # the last kept, as safetensors' serde map
    ("hole-between-tensors", _st({"a": _t("BF16", [2], 0, 4), "b": _t("BF16", [2], 8, 12)}, b"\0" * 12), True),
]


def st13_cases() -> Iterator[Case]:
    cfg = {"m/config.json": json.dumps(LLAMA)}
    for name, data, invalid in ST13:
        yield Case("st13", name, MEM8, {**cfg, "m/model.safetensors": data}, invalid)
    # a shard that is a directory, a FIFO or /dev/null where a file is expected
    for name, spec in [("shard-dir", ("dir",)), ("shard-fifo", ("fifo",)), ("shard-devnull", ("symlink", "/dev/null"))]:
        yield Case("st13", name, MEM8, {**cfg, "m/model.safetensors": spec}, True)  # type: ignore[dict-item]


# Session and plain traces ------------------------------------------------------------------------

S = fs.SESSION_ROWS
P = fs.PLAIN_ROWS
TRACES13: list[tuple[str, list[dict[str, object]] | str, bool | None]] = [
    ("turn-minus-one", [S[0], {**S[1], "turn": -1}, S[2], S[3]], True),
    ("only-turn-one", [{**S[0], "turn": 1}, S[2], S[3]], None),
    ("turn-float", [S[0], {**S[1], "turn": 1.0}, S[2], S[3]], None),
    ("turn-bool", [S[0], {**S[1], "turn": True}, S[2], S[3]], True),
    ("turn-huge", [S[0], {**S[1], "turn": 10**30}, S[2], S[3]], None),
    ("input-one-output-one", [{**r, "input_tokens": 1, "output_tokens": 1} for r in S], False),
    ("input-10m", [S[0], {**S[1], "input_tokens": 10_000_000}, S[2], S[3]], True),
    ("output-zero", [S[0], {**S[1], "output_tokens": 0}, S[2], S[3]], True),
    ("output-10m", [S[0], {**S[1], "output_tokens": 10_000_000}, S[2], S[3]], True),
    ("input-string-digits", [S[0], {**S[1], "input_tokens": "30"}, S[2], S[3]], True),
    ("input-arabic-digits", [S[0], {**S[1], "input_tokens": "٣٠"}, S[2], S[3]], True),
    ("input-1e400", '{"session_id": "a", "turn": 0, "input_tokens": 1e400, "output_tokens": 20, "arrival_s": 0.0}\n', True),
    ("think-negative", [S[0], {**S[1], "think_s": -1.0}, S[2], S[3]], True),
    ("think-subnormal", [S[0], {**S[1], "think_s": 5e-324}, S[2], S[3]], None),
    ("think-list", [S[0], {**S[1], "think_s": [1.0]}, S[2], S[3]], True),
    ("prefix-longer-than-input", [S[0], S[1], {**S[2], "prefix_tokens": 400}, S[3]], None),  # on top of input_tokens
    ("prefix-negative", [S[0], S[1], {**S[2], "prefix_tokens": -16}, S[3]], True),
    ("prefix-id-inconsistent-size", [{**S[0], "prefix_id": "sys", "prefix_tokens": 8}, S[1], S[2], S[3]], None),
    ("prefix-tokens-without-id", [S[0], S[1], {k: v for k, v in S[2].items() if k != "prefix_id"}, S[3]], None),
    ("extra-field", [{**r, "foo": 1} for r in S], None),
    ("session-id-empty", [{**r, "session_id": ""} for r in S[:2]], None),
    ("session-id-null", [{**r, "session_id": None} for r in S[:2]], True),
    ("same-session-two-arrivals", [S[0], {**S[1], "arrival_s": 3.0}, S[2], S[3]], None),
    ("turns-interleaved-ids", [S[0], S[2], S[1], S[3]], None),
    ("rows-are-lists", "[0, 50, 20]\n[1, 30, 20]\n", True),
    ("whole-file-json-array", json.dumps(S), None),
    ("comment-line", "# trace\n" + _lines(S), True),
    ("blank-lines-between", "\n\n".join(json.dumps(r) for r in S) + "\n", None),
    ("plain-arrival-backwards", [P[2], P[0], P[1]], None),
    ("plain-arrival-all-equal", [{**r, "arrival_s": 1.0} for r in P], None),
    ("plain-arrival-negative", [{**P[0], "arrival_s": -5.0}, *P[1:]], True),
    ("plain-and-session-rows-mixed", [*P, *S], True),
    ("crlf-nul-mid-line", _lines(S).replace('"turn": 1', '"turn": 1\x00'), True),
]


def traces13_cases() -> Iterator[Case]:
    sweep = ["sweep", "llama-3.1-8b", "--workload", "{d}/t.jsonl", "--concurrency", "4"]
    plan = ["plan", "llama-3.1-8b", "--gpus", "1", "--jobs", "1", "--workload", "{d}/t.jsonl"]
    for name, rows, invalid in TRACES13:
        text = rows if isinstance(rows, str) else _lines(rows)
        yield Case("traces13", name, sweep, {"t.jsonl": text}, invalid)
        if name in ("input-10m", "output-zero", "plain-arrival-backwards", "turn-minus-one", "think-subnormal"):
            yield Case("traces13", f"plan-{name}", plan, {"t.jsonl": text}, invalid)


# Calibration inputs: vLLM bench JSON, CSV, server logs -------------------------------------------

R = fs.RUNS
LOG = (fs.LOGS / "vllm_v1_v16_llama31_8b_eager.txt").read_text()
CSV_CAL = ["calibrate", "{d}/b.csv", "--model", "llama-3.1-8b", "--gpu", "h100-sxm"]
LOG_CAL = ["calibrate", "{d}/log.txt", "--model", "llama-3.1-8b"]
CAL13: list[tuple[str, list[str], dict[str, FileSpec], bool | None]] = [
    ("completed-zero", CAL, {"r.json": _lines([{**R[0], "completed": 0}, *R[1:]])}, True),
    ("duration-zero", CAL, {"r.json": _lines([{**R[0], "duration": 0.0}, *R[1:]])}, None),
    ("other-model-id", CAL, {"r.json": _lines([{**r, "model_id": "Qwen/Qwen3-32B", "tokenizer_id": "Qwen/Qwen3-32B"} for r in R])}, True),
    ("all-one-concurrency", CAL, {"r.json": _lines([{**r, "max_concurrency": 32} for r in R])}, True),
    ("concurrency-null", CAL, {"r.json": _lines([{**r, "max_concurrency": None} for r in R])}, None),
    ("concurrency-string", CAL, {"r.json": _lines([{**r, "max_concurrency": "8"} for r in R])}, True),
    ("concurrency-true", CAL, {"r.json": _lines([{**R[0], "max_concurrency": True}, *R[1:]])}, True),
    ("throughput-zero", CAL, {"r.json": _lines([{**R[0], "output_throughput": 0.0}, *R[1:]])}, True),
    ("tpot-zero", CAL, {"r.json": _lines([{**R[0], "mean_tpot_ms": 0.0}, *R[1:]])}, True),
    ("tpot-subnormal", CAL, {"r.json": _lines([{**R[0], "mean_tpot_ms": 5e-324}, *R[1:]])}, True),
    ("output-tokens-zero", CAL, {"r.json": _lines([{**R[0], "total_output_tokens": 0}, *R[1:]])}, True),
    ("num-prompts-below-concurrency", CAL, {"r.json": _lines([{**r, "num_prompts": 2, "completed": 2} for r in R])}, None),
    ("backend-mixed", CAL, {"r.json": _lines([R[0], fs.SG_RUNS[1], R[2]])}, None),
    ("jsonl-broken-middle-line", CAL, {"r.json": json.dumps(R[0]) + "\n{\"date\": \n" + json.dumps(R[2]) + "\n"}, True),
    ("top-level-array", CAL, {"r.json": json.dumps(R)}, None),
    ("top-level-string", CAL, {"r.json": '"runs"'}, True),
    ("runs-are-dirs", CAL, {"r.json": ("dir",)}, True),
    ("input-is-fifo", CAL, {"r.json": ("fifo",)}, True),
    ("csv-semicolons", CSV_CAL, {"b.csv": (CSV_HEAD + CSV_ROWS).replace(",", ";")}, True),
    ("csv-tabs", CSV_CAL, {"b.csv": (CSV_HEAD + CSV_ROWS).replace(",", "\t")}, True),
    ("csv-quoted-thousands", CSV_CAL, {"b.csv": CSV_HEAD + '8,1024,128,"1,500",14,150\n32,1024,128,1200,24,160\n64,1024,128,1800,32,170\n'}, True),
    ("csv-quoted-numbers", CSV_CAL, {"b.csv": CSV_HEAD + "".join(",".join(f'"{c}"' for c in row.split(",")) + "\n" for row in CSV_ROWS.splitlines())}, None),
    ("csv-header-only", CSV_CAL, {"b.csv": CSV_HEAD}, True),
    ("csv-short-row", CSV_CAL, {"b.csv": CSV_HEAD + "8,1024,128\n" + CSV_ROWS}, None),  # missing cells are empty: row left out
    ("csv-long-row", CSV_CAL, {"b.csv": CSV_HEAD + "8,1024,128,500,14,150,9,9\n32,1024,128,1200,24,160\n64,1024,128,1800,32,170\n"}, True),
    ("csv-concurrency-zero", CSV_CAL, {"b.csv": CSV_HEAD + "0,1024,128,500,14,150\n32,1024,128,1200,24,160\n64,1024,128,1800,32,170\n"}, True),
    ("csv-header-repeated-mid", CSV_CAL, {"b.csv": CSV_HEAD + CSV_ROWS.splitlines(keepends=True)[0] + CSV_HEAD + "".join(CSV_ROWS.splitlines(keepends=True)[1:])}, True),
    ("csv-input-len-zero", CSV_CAL, {"b.csv": CSV_HEAD + CSV_ROWS.replace(",1024,", ",0,")}, True),
    ("csv-input-len-past-context", CSV_CAL, {"b.csv": CSV_HEAD + CSV_ROWS.replace(",1024,", ",10000000,")}, True),
    ("log-nul-mid-line", LOG_CAL, {"log.txt": LOG.replace("GiB", "G\x00iB", 3)}, None),
    ("log-crlf", LOG_CAL, {"log.txt": LOG.replace("\n", "\r\n")}, False),
    ("log-another-model", ["calibrate", "{d}/log.txt", "--model", "qwen3-30b-a3b"], {"log.txt": LOG}, True),
    ("log-every-line-twice", LOG_CAL, {"log.txt": "".join(ln + ln for ln in LOG.splitlines(keepends=True))}, None),
    ("log-utf16-le-no-bom", LOG_CAL, {"log.txt": LOG.encode("utf-16-le")}, True),
]


def cal13_cases() -> Iterator[Case]:
    for name, argv, files, invalid in CAL13:
        yield Case("cal13", name, argv, files, invalid)


# Numeric flags at sizes that could run forever; lists; model names -----------------------------

PLAN1 = ["plan", "llama-3.1-8b", "--gpus", "1", "--jobs", "1", *fs.SMALL]
FLAGS13: list[tuple[str, list[str], bool | None]] = [
    ("rate-1e-9", [*PLAN1, "--rate", "1e-9"], None),
    ("rate-1e9", [*PLAN1, "--rate", "1e9"], None),
    ("sweep-rate-1e-9", [*SW, "--rate", "1e-9"], None),
    ("num-requests-1e9", ["sweep", "llama-3.1-8b", "--isl", "100", "--osl", "100", "--num-requests", "1000000000", "--concurrency", "4"], None),
    ("num-requests-1e9-plan", ["plan", "llama-3.1-8b", "--gpus", "1", "--jobs", "1", "--isl", "100", "--osl", "100", "--num-requests", "1000000000", "--arrival", "batch"], None),
    ("concurrency-1e6", ["sweep", "llama-3.1-8b", *fs.SMALL, "--concurrency", "1000000"], None),
    ("concurrency-list-1e6", ["sweep", "llama-3.1-8b", *fs.SMALL, "--concurrency", ",".join(str(i) for i in range(1, 2001))], None),
    ("clients-1e6", [*PLAN1, "--clients", "1000000"], None),
    ("gpus-1e6-plan", ["plan", "llama-3.1-8b", "--gpus", "1000000", "--jobs", "1", *fs.SMALL, "--rate", "2"], None),
    ("gpus-1e6-memory", ["memory", "llama-3.1-8b", "--gpus", "1000000"], None),
    ("nodes-1e6", ["plan", "llama-3.1-8b", "--nodes", "1000000", "--jobs", "1", *fs.SMALL, "--rate", "2"], None),
    ("isl-1e7", ["sweep", "llama-3.1-8b", "--isl", "10000000", "--osl", "100", "--num-requests", "20", "--concurrency", "4"], True),
    ("osl-1e7", ["sweep", "llama-3.1-8b", "--isl", "100", "--osl", "10000000", "--num-requests", "20", "--concurrency", "4"], True),
    ("isl-1-osl-1", ["sweep", "llama-3.1-8b", "--isl", "1", "--osl", "1", "--num-requests", "20", "--concurrency", "4"], False),
    ("headroom-0.999999", [*PLAN1, "--rate", "2", "--headroom", "0.999999"], None),
    ("headroom-subnormal", [*PLAN1, "--rate", "2", "--headroom", "5e-324"], None),
    ("slo-ttft-1e-9", [*PLAN1, "--rate", "2", "--slo-ttft", "1e-9"], None),
    ("slo-tpot-1e-9", [*PLAN1, "--rate", "2", "--slo-tpot", "1e-9"], None),
    ("slo-ttft-with-units", [*PLAN1, "--rate", "2", "--slo-ttft", "2s"], True),
    ("rate-with-units", [*PLAN1, "--rate", "2/s"], True),
    ("price-1e-300", [*PLAN1, "--rate", "2", "--price-gpu-hour", "1e-300", "--objective", "cost"], None),
    ("price-1e300", [*PLAN1, "--rate", "2", "--price-gpu-hour", "1e300"], None),
    ("price-with-dollar", [*PLAN1, "--rate", "2", "--price-gpu-hour", "$2"], True),
    ("think-time-1e9", ["sweep", "llama-3.1-8b", "--workload", "multiturn-chat", "--num-requests", "20", "--concurrency", "4", "--think-time", "1e9"], None),
    ("turns-1e6", ["sweep", "llama-3.1-8b", "--workload", "multiturn-chat", "--num-requests", "20", "--concurrency", "4", "--turns", "1000000"], None),
    ("context-1e9", ["sweep", "llama-3.1-8b", "--workload", "multiturn-chat", "--num-requests", "20", "--concurrency", "4", "--context", "1000000000"], True),
    ("offload-1B", [*SW, "--offload", "cpu:1B"], None),
    ("offload-1e15GiB", [*SW, "--offload", "cpu:1e15GiB"], None),
    ("disagg-zero-prefill", [*SW, "--disagg", "0p:tp1,1d:tp1"], True),
    ("disagg-1000-prefill", [*SW, "--gpus", "2", "--disagg", "1000p:tp1,1d:tp1"], None),
    ("disagg-tp-zero", [*SW, "--disagg", "1p:tp0,1d:tp1"], True),
    ("gpu-empty-entry", [*PLAN1, "--rate", "2", "--gpu", "h100-sxm,,h200-sxm"], True),
    ("gpu-trailing-comma", [*PLAN1, "--rate", "2", "--gpu", "h100-sxm,"], True),
    ("gpu-repeated", [*PLAN1, "--rate", "2", "--gpu", "h200-sxm,h200-sxm"], None),
    ("gpu-upper", [*PLAN1, "--rate", "2", "--gpu", "H200-SXM"], None),
    ("gpu-padded", [*PLAN1, "--rate", "2", "--gpu", " h200-sxm "], None),
    ("gpu-repeated-flag", [*PLAN1, "--rate", "2", "--gpu", "h100-sxm", "--gpu", "h200-sxm"], None),
    ("isl-repeated-flag", ["sweep", "llama-3.1-8b", "--isl", "100", "--isl", "200", "--osl", "100", "--num-requests", "20", "--concurrency", "4"], None),
    ("model-dotdot", ["memory", "../llama-3.1-8b", "--gpus", "1"], True),
    ("model-trailing-slash", ["memory", "llama-3.1-8b/", "--gpus", "1"], None),
    ("model-cyrillic-a", ["memory", "llаma-3.1-8b", "--gpus", "1"], True),
    ("model-5000-chars", ["memory", "x" * 5000, "--gpus", "1"], True),
    ("model-nul", ["memory", "llama-3.1-8b\x00", "--gpus", "1"], True),
    ("model-newline", ["memory", "llama-3.1-8b\nqwen3-8b", "--gpus", "1"], True),
    ("model-empty", ["memory", "", "--gpus", "1"], True),
    ("layout-repeated", [*SW, "--gpus", "2", "--layout", "tp2,tp2"], None),
    ("layout-empty-entry", [*SW, "--gpus", "2", "--layout", "tp2,,dp2"], True),
    # answered: no layout holds one such request; the sweep names the longest that fits
    ("max-model-len-1e18", [*SW, "--max-model-len", "1000000000000000000", "--allow-long-max-model-len"], False),
    ("block-size-1e9", [*SW, "--block-size", "1000000000"], True),
    ("max-num-seqs-1e9", [*SW, "--max-num-seqs", "1000000000"], None),
    ("seed-huge", [*SW, "--seed", "9" * 40], None),  # any seed is a seed
    ("random-range-ratio-subnormal", [*SW, "--random-range-ratio", "5e-324"], None),
]


def flags13_cases() -> Iterator[Case]:
    for name, argv, invalid in FLAGS13:
        yield Case("flags13", name, argv, {}, invalid)


# Outputs that name an input: files are never lost ----------------------------------------------

def outputs13_cases() -> Iterator[Case]:
    runs = {"r.json": _lines(R)}
    cal = ["calibrate", "{d}/r.json", "--model", "llama-3.1-8b", "--gpu", "h100-sxm"]
    trace = {"t.jsonl": _lines(S)}
    plot_sw = ["sweep", "llama-3.1-8b", "--workload", "{d}/t.jsonl", "--concurrency", "4"]
    table: list[tuple[str, list[str], dict[str, FileSpec], bool | None]] = [
        ("calibrate-out-is-input", [*cal, "-o", "{d}/r.json"], runs, True),
        ("calibrate-out-is-input-force", [*cal, "-o", "{d}/r.json", "--force"], runs, True),
        ("calibrate-out-is-input-via-symlink-force", [*cal, "-o", "{d}/l.json", "--force"], {**runs, "l.json": ("symlink", "r.json")}, True),
        ("calibrate-out-is-input-dotdot-force", [*cal, "-o", "{d}/sub/../r.json", "--force"], {**runs, "sub": ("dir",)}, True),
        ("calibrate-out-missing-dir", [*cal, "-o", "{d}/no/such/c.toml"], runs, None),
        ("calibrate-out-is-dir", [*cal, "-o", "{d}/sub"], {**runs, "sub": ("dir",)}, True),
        ("calibrate-out-devnull", [*cal, "-o", "/dev/null"], runs, None),
        ("calibrate-out-existing-no-force", [*cal, "-o", "{d}/c.toml"], {**runs, "c.toml": "keep me\n"}, True),
        ("calibrate-calibration-is-output", [*cal, "--calibration", "{d}/c.toml", "-o", "{d}/c.toml", "--force"], {**runs, "c.toml": "x = 1\n"}, True),
        ("sweep-plot-is-trace", [*plot_sw, "--plot", "{d}/t.jsonl", "--force"], trace, True),
        ("sweep-plot-is-trace-png-link", [*plot_sw, "--plot", "{d}/p.png", "--force"], {**trace, "p.png": ("symlink", "t.jsonl")}, True),
        ("sweep-plot-missing-dir", [*SW, "--plot", "{d}/no/p.png"], {}, None),
        ("sweep-plot-existing-no-force", [*SW, "--plot", "{d}/p.png"], {"p.png": b"\x89PNG keep"}, True),
        ("sweep-serve-command-is-trace", [*plot_sw, "--serve-command", "{d}/t.jsonl", "--force"], trace, True),
        ("plan-plot-is-osl-hist", ["plan", "llama-3.1-8b", "--gpus", "1", "--jobs", "1", "--isl", "100", "--osl", "hist:{d}/h.csv", "--num-requests", "20", "--rate", "2", "--plot", "{d}/h.csv", "--force"], {"h.csv": "tokens,count\n100,1\n"}, True),
        ("memory-serve-command-is-model-config", ["memory", "{d}/m", "--gpus", "1", "--serve-command", "{d}/m/config.json", "--force"], {"m/config.json": json.dumps(LLAMA)}, True),
    ]
    for name, argv, files, invalid in table:
        yield Case("outputs13", name, argv, files, invalid)


# Check specs: values and JSON specs --------------------------------------------------------------

def _spec(old: str, new: str) -> str:
    assert old in fs.SPEC, old
    return fs.SPEC.replace(old, new)


def spec13_cases() -> Iterator[Case]:
    chk = ["check", "{d}/s.toml"]
    edits: list[tuple[str, str, str, bool | None]] = [
        ("gpus-zero", 'layout = "tp1"', 'layout = "tp1"\ngpus = 0', True),
        ("gpus-float", 'layout = "tp1"', 'layout = "tp1"\ngpus = 1.5', True),
        ("gpus-string", 'layout = "tp1"', 'layout = "tp1"\ngpus = "1"', True),
        ("headroom-percent-string", 'layout = "tp1"', 'layout = "tp1"\nheadroom = "20%"', True),
        ("price-negative", 'layout = "tp1"', 'layout = "tp1"\nusd_per_gpu_hour = -1.0', True),
        ("offload-list", 'layout = "tp1"', 'layout = "tp1"\noffload = ["cpu:64GiB"]', True),
        ("disagg-int", 'layout = "tp1"', 'layout = "tp1"\ndisagg = 1', True),
        ("model-path-sep", 'model = "llama-3.1-8b"', 'model = "../llama-3.1-8b"', True),
        ("gpu-list-string", 'gpu = "h100-sxm"', 'gpu = "h100-sxm,h200-sxm"', None),
        ("gpu-array", 'gpu = "h100-sxm"', 'gpu = ["h100-sxm"]', True),
        ("isl-huge", "isl = 100", "isl = 10000000", True),
        ("osl-zero", "osl = 100", "osl = 0", True),
        ("concurrency-inline-array", "concurrency = 4", "concurrency = [4, 8]", None),
        ("concurrency-empty-array", "concurrency = 4", "concurrency = []", True),
        ("no-preemption-at-zero", "no_preemption_at = 4", "no_preemption_at = 0", True),
        ("expect-fits-string", "fits = true", 'fits = "true"', True),
        ("expect-unknown-key", "fits = true", "fits = true\nfits_always = true", True),
        ("scenario-table-not-array", "[[scenario]]", "[scenario]", True),
        ("workload-inline-table", "[scenario.workload]\nisl = 100\nosl = 100\narrival = \"batch\"\nnum_requests = 20\nconcurrency = 4\n",
         '[scenario.workload]\nisl = 100\nosl = 100\narrival = "batch"\nnum_requests = 20\nconcurrency = 4\nextra = { a = 1 }\n', True),
        ("crlf-spec", "\n", "\r\n", False),
    ]
    for label, old, new, invalid in edits:
        yield Case("spec13", label, chk, {"s.toml": _spec(old, new)}, invalid)
    parsed = {"scenario": [{"name": "s", "model": "llama-3.1-8b", "gpu": "h100-sxm", "layout": "tp1", "engine": "vllm",
                            "workload": {"isl": 100, "osl": 100, "arrival": "batch", "num_requests": 20, "concurrency": 4},
                            "expect": {"fits": True, "kv_headroom_min": 0.1, "no_preemption_at": 4}}]}
    js = json.dumps(parsed)
    for label, text, invalid in [
        ("json-spec", js, None),
        ("json-spec-dup-scenario-key", js[:-1] + ', "scenario": []}', True),
        ("json-spec-isl-1e400", js.replace('"isl": 100', '"isl": 1e400'), True),
        ("json-spec-isl-true", js.replace('"isl": 100', '"isl": true'), True),
        ("json-spec-isl-string", js.replace('"isl": 100', '"isl": "100"'), True),
        ("json-spec-nan-headroom", js.replace('"kv_headroom_min": 0.1', '"kv_headroom_min": NaN'), True),
        ("json-spec-top-list", json.dumps(parsed["scenario"]), True),
    ]:
        yield Case("spec13", label, ["check", "{d}/s.json"], {"s.json": text}, invalid)
    for label, spec in [("spec-is-dir", ("dir",)), ("spec-is-fifo", ("fifo",)), ("spec-symlink-loop", ("symlink", "s.toml"))]:
        yield Case("spec13", label, chk, {"s.toml": spec}, True)  # type: ignore[dict-item]


# Devices and pipes where a file is expected: /dev/zero and /dev/urandom never end ------------

def devices13_cases() -> Iterator[Case]:
    spec = {"s.toml": fs.SPEC}
    cfg = {"m/config.json": json.dumps(LLAMA)}
    inputs: list[tuple[str, list[str], str, dict[str, FileSpec]]] = [
        ("trace", ["sweep", "llama-3.1-8b", "--workload", "{d}/t.jsonl", "--concurrency", "4"], "t.jsonl", {}),
        ("check-spec", ["check", "{d}/s.toml"], "s.toml", {}),
        ("check-baseline", ["check", "{d}/s.toml", "--baseline", "{d}/b.json"], "b.json", spec),
        ("calibrate-json", CAL, "r.json", {}),
        ("calibrate-csv", CSV_CAL, "b.csv", {}),
        ("calibrate-log", LOG_CAL, "log.txt", {}),
        ("calibration-file", [*SW, "--calibration", "{d}/c.toml"], "c.toml", {}),
        ("osl-hist", ["sweep", "llama-3.1-8b", "--isl", "100", "--osl", "hist:{d}/h.csv", "--num-requests", "20", "--concurrency", "4"], "h.csv", {}),
        ("gpu-file", [*SW, "--gpus", "1", "--gpu", "{d}/g.toml"], "g.toml", {}),
        ("model-config", ["memory", "{d}/m", "--gpus", "1"], "m/config.json", {}),
        ("model-index", ["memory", "{d}/m", "--gpus", "1"], "m/model.safetensors.index.json", {**cfg, "m/model.safetensors": _st({"w": _t("BF16", [2, 2], 0, 8)})}),
        ("model-gptq-side-file", ["memory", "{d}/m", "--gpus", "1"], "m/quantize_config.json", cfg),
        ("model-modelopt-side-file", ["memory", "{d}/m", "--gpus", "1"], "m/hf_quant_config.json", cfg),
    ]
    for label, argv, name, extra in inputs:
        for device in ("/dev/zero", "/dev/urandom"):
            files: dict[str, FileSpec] = {**extra, name: ("symlink", device)}
            yield Case("devices13", f"{label}-{device.rsplit('/', 1)[1]}", argv, files, True)
        if name.startswith("m/"):  # a FIFO no program writes to, inside a model folder
            yield Case("devices13", f"{label}-fifo", argv, {**extra, name: ("fifo",)}, True)


# JSON number spellings the BAD_JSON lists left out, in every file that holds counts or figures --

# (JSON text, invalid for a count, invalid for a positive figure); None: either answer is right
ODD_NUMBERS: list[tuple[str, bool | None, bool | None]] = [
    ("1E-400", True, True),  # underflows to 0.0
    ("-0", True, True),  # an integer zero
    ("5e-324", True, None),  # the least subnormal
    ('"٨"', True, True),  # an Arabic-Indic digit as text
    ("1" + "0" * 30, True, None),  # an integer no count reaches
    ("8.000000000000001", True, None),  # a float one ulp past an integer
]


def numbers13_cases() -> Iterator[Case]:
    run_fields = [("max_concurrency", True), ("completed", True), ("output_throughput", False), ("mean_tpot_ms", False), ("mean_ttft_ms", False)]
    for key, count in run_fields:
        for raw, bad_count, bad_figure in ODD_NUMBERS:
            text = fs._json_with(R[1], key, raw) + "\n" + json.dumps(R[0]) + "\n" + json.dumps(R[2]) + "\n"
            yield Case("numbers13", f"run-{key}-{raw[:12]}", CAL, {"r.json": text}, bad_count if count else bad_figure)
    trace_fields = [("input_tokens", True), ("output_tokens", True), ("think_s", False), ("prefix_tokens", True)]
    for key, count in trace_fields:
        for raw, bad_count, bad_figure in ODD_NUMBERS:
            row = S[2] if key == "prefix_tokens" else S[1]
            lines = [json.dumps(S[0]), json.dumps(S[1]), json.dumps(S[2]), json.dumps(S[3])]
            lines[S.index(row)] = fs._json_with(row, key, raw)
            invalid = bad_count if count else (None if raw in ("-0", "1E-400", "5e-324") else bad_figure)
            if key == "prefix_tokens" and raw == "-0":  # 0 shared tokens under a prefix_id: valid
                invalid = None
            yield Case("numbers13", f"trace-{key}-{raw[:12]}", ["sweep", "llama-3.1-8b", "--workload", "{d}/t.jsonl", "--concurrency", "4"],
                       {"t.jsonl": "\n".join(lines) + "\n"}, invalid)
    for key in ("hidden_size", "num_hidden_layers", "intermediate_size"):
        for raw, bad_count, _ in ODD_NUMBERS:
            yield Case("numbers13", f"config-{key}-{raw[:12]}", MEM8, {"m/config.json": _raw(LLAMA, key, raw)}, bad_count)


SURFACES13: dict[str, Callable[[], Iterator[Case]]] = {
    "configs13": configs13_cases, "quants13": quants13_cases, "st13": st13_cases,
    "traces13": traces13_cases, "cal13": cal13_cases, "flags13": flags13_cases,
    "outputs13": outputs13_cases, "spec13": spec13_cases, "devices13": devices13_cases,
    "numbers13": numbers13_cases,
}
# fmt: on
