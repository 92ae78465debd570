"""The eleventh bad-input campaign's surfaces (issue 23), run by `fuzz_surfaces.py`:

    PYTHONPATH=. python benchmarks/fuzz_surfaces.py configs11 flags11 lists11 paths11

What the ten campaigns before did not try: the config.json of models users pass today as a local
folder (configs11: DeepSeek-V3.2, Kimi K2, GLM-4.5, Qwen3-Next, Llama 4, MiniMax-M2, Gemma 3,
Mistral Small 3.1, Phi-4, gpt-oss, Mamba hybrids, vision-language configs, and the quantization
formats their checkpoints ship in), each written with only the fields that size it, from the
published file named beside it; then every option of plan, sweep, check, memory and calibrate at
spellings campaign 4's thirteen values left out (-0.0, +2, 1E3, a zero-width space, fullwidth
digits, a NUL, mixed-case choices; flags11); options given twice, and lists that repeat an item or
run to thousands of items (lists11); every input path given as a folder, a FIFO, an unreadable
file, a dangling or looping symlink, an empty string or a path under a missing folder (paths11).
"""

# Data tables: one case per line, some past 100 characters, look-alike digits on purpose.
# ruff: noqa: E501, RUF001
from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path

import fuzz_surfaces as fs
from fuzz_cases6 import _symlink
from fuzz_cases7 import CAL, SW, _chmod, _lines
from fuzz_harness import Case, FileSpec

CAL_OK, PLAIN_ROWS, RUNS, SMALL, SPEC = fs.CAL_OK, fs.PLAIN_ROWS, fs.RUNS, fs.SMALL, fs.SPEC

# fmt: off
MEM = ["memory", "{d}/m", "--gpus", "8", "--gpu", "h200-sxm"]
FP8_BLOCK = {"quant_method": "fp8", "activation_scheme": "dynamic", "fmt": "e4m3", "weight_block_size": [128, 128]}

# Minimal config.json files: the fields that size each model, copied from the published file.
REAL: dict[str, dict[str, object]] = {
    # deepseek-ai/DeepSeek-V3.2-Exp config.json (as quoted in full by a public DeepSeek-V3.2 write-up)
    "deepseek-v3.2-exp": {
        "architectures": ["DeepseekV32ForCausalLM"], "model_type": "deepseek_v32", "first_k_dense_replace": 3,
        "hidden_size": 7168, "index_head_dim": 128, "index_n_heads": 64, "index_topk": 2048, "intermediate_size": 18432,
        "kv_lora_rank": 512, "max_position_embeddings": 163840, "moe_intermediate_size": 2048, "moe_layer_freq": 1,
        "n_routed_experts": 256, "n_shared_experts": 1, "num_attention_heads": 128, "num_experts_per_tok": 8,
        "num_hidden_layers": 61, "num_key_value_heads": 128, "num_nextn_predict_layers": 1, "q_lora_rank": 1536,
        "qk_nope_head_dim": 128, "qk_rope_head_dim": 64, "v_head_dim": 128, "vocab_size": 129280,
        "tie_word_embeddings": False, "topk_method": "noaux_tc", "torch_dtype": "bfloat16",
        "quantization_config": {**FP8_BLOCK, "scale_fmt": "ue8m0"}},
    # moonshotai/Kimi-K2-Instruct config.json
    "kimi-k2": {
        "architectures": ["DeepseekV3ForCausalLM"], "model_type": "kimi_k2", "first_k_dense_replace": 1,
        "hidden_size": 7168, "intermediate_size": 18432, "kv_lora_rank": 512, "max_position_embeddings": 131072,
        "moe_intermediate_size": 2048, "moe_layer_freq": 1, "n_routed_experts": 384, "n_shared_experts": 1,
        "num_attention_heads": 64, "num_experts_per_tok": 8, "num_hidden_layers": 61, "num_key_value_heads": 64,
        "num_nextn_predict_layers": 0, "q_lora_rank": 1536, "qk_nope_head_dim": 128, "qk_rope_head_dim": 64,
        "v_head_dim": 128, "vocab_size": 163840, "tie_word_embeddings": False, "topk_method": "noaux_tc",
        "torch_dtype": "bfloat16", "quantization_config": FP8_BLOCK},
    # zai-org/GLM-4.5 config.json
    "glm-4.5": {
        "architectures": ["Glm4MoeForCausalLM"], "model_type": "glm4_moe", "attention_bias": True,
        "first_k_dense_replace": 3, "head_dim": 128, "hidden_size": 5120, "intermediate_size": 12288,
        "max_position_embeddings": 131072, "moe_intermediate_size": 1536, "n_group": 1, "n_routed_experts": 160,
        "n_shared_experts": 1, "num_attention_heads": 96, "num_experts_per_tok": 8, "num_hidden_layers": 92,
        "num_key_value_heads": 8, "num_nextn_predict_layers": 1, "partial_rotary_factor": 0.5,
        "tie_word_embeddings": False, "torch_dtype": "bfloat16", "use_qk_norm": True, "vocab_size": 151552},
    # Qwen/Qwen3-Next-80B-A3B-Instruct config.json
    "qwen3-next-80b": {
        "architectures": ["Qwen3NextForCausalLM"], "model_type": "qwen3_next", "decoder_sparse_step": 1,
        "full_attention_interval": 4, "head_dim": 256, "hidden_size": 2048, "intermediate_size": 5120,
        "linear_conv_kernel_dim": 4, "linear_key_head_dim": 128, "linear_num_key_heads": 16,
        "linear_num_value_heads": 32, "linear_value_head_dim": 128, "max_position_embeddings": 262144,
        "mlp_only_layers": [], "moe_intermediate_size": 512, "num_attention_heads": 16, "num_experts": 512,
        "num_experts_per_tok": 10, "num_hidden_layers": 48, "num_key_value_heads": 2,
        "shared_expert_intermediate_size": 512, "tie_word_embeddings": False, "torch_dtype": "bfloat16",
        "vocab_size": 151936},
    # meta-llama/Llama-4-Scout-17B-16E-Instruct config.json
    "llama-4-scout": {
        "architectures": ["Llama4ForConditionalGeneration"], "model_type": "llama4", "torch_dtype": "bfloat16",
        "text_config": {"model_type": "llama4_text", "attention_chunk_size": 8192, "head_dim": 128,
                        "hidden_size": 5120, "interleave_moe_layer_step": 1, "intermediate_size": 8192,
                        "intermediate_size_mlp": 16384, "max_position_embeddings": 10485760,
                        "num_attention_heads": 40, "num_experts_per_tok": 1, "num_hidden_layers": 48,
                        "num_key_value_heads": 8, "num_local_experts": 16, "vocab_size": 202048},
        "vision_config": {"model_type": "llama4_vision_model", "hidden_size": 1408, "image_size": 336,
                          "intermediate_size": 5632, "num_hidden_layers": 34, "patch_size": 14}},
    # MiniMaxAI/MiniMax-M2 config.json
    "minimax-m2": {
        "architectures": ["MiniMaxM2ForCausalLM"], "model_type": "minimax_m2", "head_dim": 128,
        "hidden_size": 3072, "intermediate_size": 1536, "max_position_embeddings": 196608,
        "num_attention_heads": 48, "num_experts_per_tok": 8, "num_hidden_layers": 62, "num_key_value_heads": 8,
        "num_local_experts": 256, "num_mtp_modules": 3, "rotary_dim": 64, "use_qk_norm": True,
        "vocab_size": 200064, "tie_word_embeddings": False, "torch_dtype": "bfloat16",
        "quantization_config": {**FP8_BLOCK, "modules_to_not_convert": ["gate", "e_score_correction_bias", "lm_head"]}},
    # google/gemma-3-27b-it config.json: text_config sets neither vocab_size nor max_position_embeddings
    "gemma-3-27b-it": {
        "architectures": ["Gemma3ForConditionalGeneration"], "model_type": "gemma3", "torch_dtype": "bfloat16",
        "mm_tokens_per_image": 256, "image_token_index": 262144,
        "text_config": {"model_type": "gemma3_text", "head_dim": 128, "hidden_size": 5376,
                        "intermediate_size": 21504, "num_attention_heads": 32, "num_hidden_layers": 62,
                        "num_key_value_heads": 16, "query_pre_attn_scalar": 168, "sliding_window": 1024,
                        "rope_scaling": {"factor": 8.0, "rope_type": "linear"}},
        "vision_config": {"model_type": "siglip_vision_model", "hidden_size": 1152, "image_size": 896,
                          "intermediate_size": 4304, "num_attention_heads": 16, "num_hidden_layers": 27,
                          "patch_size": 14, "vision_use_head": False}},
    # mistralai/Mistral-Small-3.1-24B-Instruct-2503 config.json: no tie_word_embeddings anywhere
    "mistral-small-3.1": {
        "architectures": ["Mistral3ForConditionalGeneration"], "model_type": "mistral3", "torch_dtype": "bfloat16",
        "multimodal_projector_bias": False, "spatial_merge_size": 2,
        "text_config": {"model_type": "mistral", "head_dim": 128, "hidden_size": 5120, "intermediate_size": 32768,
                        "max_position_embeddings": 131072, "num_attention_heads": 32, "num_hidden_layers": 40,
                        "num_key_value_heads": 8, "sliding_window": None, "vocab_size": 131072},
        "vision_config": {"model_type": "pixtral", "head_dim": 64, "hidden_size": 1024, "image_size": 1540,
                          "intermediate_size": 4096, "num_attention_heads": 16, "num_hidden_layers": 24,
                          "patch_size": 14}},
    # microsoft/phi-4 config.json
    "phi-4": {
        "architectures": ["Phi3ForCausalLM"], "model_type": "phi3", "hidden_size": 5120, "intermediate_size": 17920,
        "max_position_embeddings": 16384, "num_attention_heads": 40, "num_hidden_layers": 40,
        "num_key_value_heads": 10, "sliding_window": None, "tie_word_embeddings": False,
        "torch_dtype": "bfloat16", "vocab_size": 100352},
    # openai/gpt-oss-120b config.json
    "gpt-oss-120b": {
        "architectures": ["GptOssForCausalLM"], "model_type": "gpt_oss", "head_dim": 64, "hidden_size": 2880,
        "intermediate_size": 2880, "layer_types": ["sliding_attention", "full_attention"] * 18,
        "max_position_embeddings": 131072, "num_attention_heads": 64, "num_experts_per_tok": 4,
        "num_hidden_layers": 36, "num_key_value_heads": 8, "num_local_experts": 128, "sliding_window": 128,
        "tie_word_embeddings": False, "vocab_size": 201088, "torch_dtype": "bfloat16",
        "quantization_config": {"quant_method": "mxfp4", "modules_to_not_convert": [
            "model.layers.*.self_attn", "model.layers.*.mlp.router", "model.embed_tokens", "lm_head"]}},
    # nvidia/Nemotron-H-8B-Base-8K config.json (Mamba-2 layers by hybrid_override_pattern)
    "nemotron-h-8b": {
        "architectures": ["NemotronHForCausalLM"], "model_type": "nemotron_h", "hidden_size": 4096,
        "hybrid_override_pattern": "M-M-M-MM-M-M-M*-M-M-M*-M-M-M-M*-M-M-M-M*-M-MM-M-M-M-M-M-",
        "intermediate_size": 21504, "num_attention_heads": 32, "num_hidden_layers": 52, "num_key_value_heads": 8,
        "head_dim": 128, "mamba_num_heads": 128, "mamba_head_dim": 64, "ssm_state_size": 128,
        "vocab_size": 131072, "max_position_embeddings": 8192, "tie_word_embeddings": False},
    # ai21labs/AI21-Jamba-Mini-1.5 config.json (attention every 8th layer, MoE every 2nd)
    "jamba-mini-1.5": {
        "architectures": ["JambaForCausalLM"], "model_type": "jamba", "attn_layer_offset": 4,
        "attn_layer_period": 8, "expert_layer_offset": 1, "expert_layer_period": 2, "hidden_size": 4096,
        "intermediate_size": 14336, "mamba_d_state": 16, "num_attention_heads": 32, "num_experts": 16,
        "num_experts_per_tok": 2, "num_hidden_layers": 32, "num_key_value_heads": 8, "vocab_size": 65536,
        "max_position_embeddings": 262144, "tie_word_embeddings": False},
    # Qwen/Qwen2.5-VL-7B-Instruct config.json (a vision tower capcliff does not size)
    "qwen2.5-vl-7b": {
        "architectures": ["Qwen2_5_VLForConditionalGeneration"], "model_type": "qwen2_5_vl", "hidden_size": 3584,
        "intermediate_size": 18944, "num_attention_heads": 28, "num_hidden_layers": 28, "num_key_value_heads": 4,
        "vocab_size": 152064, "max_position_embeddings": 128000, "tie_word_embeddings": False,
        "vision_config": {"depth": 32, "hidden_size": 1280, "intermediate_size": 3420, "num_heads": 16,
                          "out_hidden_size": 3584, "patch_size": 14}},
}
# sized (False: valid, must answer) or refused with the field named (True)
REFUSED = {"deepseek-v3.2-exp", "qwen3-next-80b", "llama-4-scout", "nemotron-h-8b", "jamba-mini-1.5", "qwen2.5-vl-7b"}
LLAMA_70B = {
    "architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 8192, "intermediate_size": 28672,
    "num_attention_heads": 64, "num_hidden_layers": 80, "num_key_value_heads": 8, "vocab_size": 128256,
    "max_position_embeddings": 131072, "tie_word_embeddings": False, "torch_dtype": "bfloat16"}
# quantization_config as shipped (hugging-quants/Meta-Llama-3.1-70B-Instruct-AWQ-INT4, -GPTQ-INT4;
# RedHatAI/Llama-3.3-70B-Instruct-quantized.w4a16 and -FP8-dynamic; nvidia/Llama-3.3-70B-Instruct-FP4)
QUANTS: dict[str, dict[str, object]] = {
    "awq": {"quant_method": "awq", "bits": 4, "group_size": 128, "version": "gemm", "zero_point": True, "modules_to_not_convert": None},
    "gptq": {"quant_method": "gptq", "bits": 4, "group_size": 128, "desc_act": True, "sym": True, "checkpoint_format": "gptq"},
    "ct-w4a16": {"quant_method": "compressed-tensors", "format": "pack-quantized", "ignore": ["lm_head"], "config_groups": {"group_0": {
        "targets": ["Linear"], "weights": {"num_bits": 4, "type": "int", "symmetric": True, "strategy": "group", "group_size": 128}}}},
    "ct-fp8": {"quant_method": "compressed-tensors", "format": "float-quantized", "ignore": ["lm_head"], "config_groups": {"group_0": {
        "targets": ["Linear"], "weights": {"num_bits": 8, "type": "float", "symmetric": True, "strategy": "channel"},
        "input_activations": {"num_bits": 8, "type": "float", "strategy": "token", "dynamic": True}}}},
    "modelopt-nvfp4": {"quant_method": "modelopt", "quant_algo": "NVFP4", "group_size": 16, "exclude_modules": ["lm_head"]},
}


def _folder(config: dict[str, object], **side: FileSpec) -> dict[str, FileSpec]:
    return {"m/config.json": json.dumps(config), **{f"m/{k}": v for k, v in side.items()}}


def _in_text(name: str, **changes: object) -> dict[str, object]:
    """REAL[name] with `changes` made in its text_config."""
    config = dict(REAL[name])
    config["text_config"] = {**config["text_config"], **changes}  # type: ignore[dict-item]
    return config


def configs11_cases() -> Iterator[Case]:
    for name, config in REAL.items():
        yield Case("configs11", f"real-{name}", MEM, _folder(config), name in REFUSED)
        if name not in REFUSED:  # every other command on it too
            yield Case("configs11", f"real-{name}-sweep", ["sweep", "{d}/m", *SMALL, "--concurrency", "4", "--gpus", "8", "--gpu", "h200-sxm"], _folder(config), None)
    for name, quant in QUANTS.items():
        yield Case("configs11", f"llama-70b-{name}", MEM, _folder({**LLAMA_70B, "quantization_config": quant}), False)
        # the same format as a ModelOpt side file, a config.json quantization_config null
        yield Case("configs11", f"llama-70b-{name}-side-file", MEM, _folder(LLAMA_70B, **{"hf_quant_config.json": json.dumps(quant)}), None)
    # nvidia/DeepSeek-R1-FP4 hf_quant_config.json (ModelOpt 0.23): the format under "quantization"
    r1 = {**REAL["kimi-k2"], "model_type": "deepseek_v3", "n_routed_experts": 256, "num_attention_heads": 128,
          "num_key_value_heads": 128, "first_k_dense_replace": 3, "vocab_size": 129280}
    r1.pop("quantization_config")
    side = {"producer": {"name": "modelopt", "version": "0.23.0"}, "quantization": {
        "quant_algo": "NVFP4", "kv_cache_quant_algo": None, "group_size": 16,
        "exclude_modules": ["lm_head", "model.layers.0.self_attn*", "model.layers.*.self_attn*"]}}
    yield Case("configs11", "deepseek-r1-fp4-modelopt-side-file", MEM, _folder(r1, **{"hf_quant_config.json": json.dumps(side)}), None)
    # the fields that matter, at odd values, in the families added
    g, m = "gemma-3-27b-it", "mistral-small-3.1"
    for label, config, invalid in [
        ("gemma-vocab-null", _in_text(g, vocab_size=None), False),
        ("gemma-vocab-zero", _in_text(g, vocab_size=0), True),
        ("gemma-vocab-string", _in_text(g, vocab_size="262208"), True),
        ("gemma-window-pattern-0", _in_text(g, sliding_window_pattern=0), True),
        ("gemma-layer-types-chunked", _in_text(g, layer_types=["chunked_attention"] * 62), True),
        ("gemma-layer-types-short", _in_text(g, layer_types=["full_attention"] * 61), True),
        ("gemma-vision-null", {**REAL[g], "vision_config": None}, False),
        ("gemma-vision-list", {**REAL[g], "vision_config": [1152]}, True),
        ("gemma-vision-empty", {**REAL[g], "vision_config": {}}, True),
        ("gemma-vision-hidden-negative", {**REAL[g], "vision_config": {**REAL[g]["vision_config"], "hidden_size": -1}}, True),  # type: ignore[dict-item]
        ("gemma-vision-layers-huge", {**REAL[g], "vision_config": {**REAL[g]["vision_config"], "num_hidden_layers": 10**9}}, True),  # type: ignore[dict-item]
        ("gemma-vision-patch-bigger-than-image", {**REAL[g], "vision_config": {**REAL[g]["vision_config"], "patch_size": 1000}}, None),  # type: ignore[dict-item]
        ("gemma-vision-type-upper", {**REAL[g], "vision_config": {**REAL[g]["vision_config"], "model_type": "SIGLIP_VISION_MODEL"}}, True),  # type: ignore[dict-item]
        ("gemma-text-config-empty", {**REAL[g], "text_config": {}}, True),
        ("mistral-tie-null", _in_text(m, tie_word_embeddings=None), False),
        ("mistral-tie-string", _in_text(m, tie_word_embeddings="false"), True),
        ("mistral-top-model-type-only", {k: v for k, v in REAL[m].items() if k != "architectures"}, False),
        ("mistral-text-type-unknown", _in_text(m, model_type="mistral9"), True),
        ("glm-first-dense-all", {**REAL["glm-4.5"], "first_k_dense_replace": 92}, True),
        ("glm-first-dense-negative", {**REAL["glm-4.5"], "first_k_dense_replace": -1}, True),
        ("glm-shared-experts-null", {**REAL["glm-4.5"], "n_shared_experts": None}, None),
        ("glm-shared-experts-float", {**REAL["glm-4.5"], "n_shared_experts": 1.0}, True),
        ("kimi-layer-freq-0", {**REAL["kimi-k2"], "moe_layer_freq": 0}, True),
        ("kimi-experts-per-tok-over", {**REAL["kimi-k2"], "num_experts_per_tok": 385}, True),
        ("dsv32-indexer-null", {**REAL["deepseek-v3.2-exp"], "index_n_heads": None, "index_head_dim": None, "index_topk": None}, None),
        ("qwen3-next-layer-types", {**REAL["qwen3-next-80b"], "full_attention_interval": None, "linear_num_value_heads": None,
                                     "layer_types": ["linear_attention", "linear_attention", "linear_attention", "full_attention"] * 12}, True),
        ("minimax-swa-layers", {**REAL["minimax-m2"], "sliding_window": 4096, "layer_types": ["sliding_attention", "full_attention"] * 31}, None),
        ("phi4-window-string", {**REAL["phi-4"], "sliding_window": "131072"}, True),
        ("phi4-tie-missing", {k: v for k, v in REAL["phi-4"].items() if k != "tie_word_embeddings"}, False),
        # baidu/ERNIE-4.5-21B-A3B-PT, google/gemma-3n-E4B-it, MiniMaxAI/MiniMax-Text-01,
        # ibm-granite/granite-4.0-h-micro: the field that tells their layers, on Phi-4's sizes
        ("ernie-4.5-moe-keys", {**REAL["phi-4"], "moe_num_experts": 64, "moe_k": 6, "moe_layer_start_index": 1}, True),
        ("gemma-3n-audio-tower", {**REAL["phi-4"], "audio_config": {"hidden_size": 1536}}, True),
        ("gemma-3n-altup", {**REAL["phi-4"], "altup_num_inputs": 4}, True),
        ("minimax-text-01-lightning", {**REAL["phi-4"], "attn_type_list": [0] * 7 + [1]}, True),
        ("granite-zero-experts", {**REAL["phi-4"], "num_local_experts": 0, "num_experts_per_tok": 0}, False),
    ]:
        yield Case("configs11", label, MEM, _folder(config), invalid)


# Every option at spellings campaign 4 did not try ------------------------------------------------

NEW_VALUES = ["-0.0", "+2", "2\u200b", "２", "2\x00", "2,2"]
NEW_FINE = {"-0.0", "+2", "２"}  # may be valid for a flag: crashes only
# options that take a list: "2,2" is the one item (each once)
LIST_OPTIONS = {"--concurrency", "--osl", "--layout", "--gpu", "--spec-acceptance", "--price-gpu-hour"}
# choices with their valid spelling: given upper-cased, title-cased and padded
CHOICES = {
    "--engine": "sglang", "--format": "json", "--arrival": "poisson", "--objective": "cost",
    "--policy": "fcfs", "--preemption": "swap", "--routing": "round-robin", "--prefix-caching": "off",
    "--offload-policy": "lru", "--kv-cache-dtype": "fp8", "--weight-dtype": "fp8", "--gpu": "h200-sxm",
    "--workload": "multiturn-chat", "--step-source": "roofline", "--all2all-backend": "deepep",
    "--moe-backend": "cutlass", "--fp8-gemm-backend": "cutlass", "--attention-dp-balance": "on",
}


def flags11_cases() -> Iterator[Case]:
    v16 = (fs.LOGS / "vllm_v1_v16_llama31_8b_eager.txt").read_text()
    for command, (base, files) in fs.FLAG_BASES.items():
        if command in ("models", "hardware"):
            continue
        files = {k: (v16 if v == "V16" else v) for k, v in files.items()}
        for option, is_flag in fs._options(command):
            if is_flag or option == "--help":
                continue
            for value in NEW_VALUES:
                fine = value in NEW_FINE or (option in fs.OUTPUT_OPTIONS and "\0" not in value)
                fine = fine or (value == "2,2" and option in LIST_OPTIONS)
                yield Case("flags11", f"{command}{option}={value!r}", [*base, option, value], files, None if fine else True)
            if option in CHOICES:
                good = CHOICES[option]
                for label, value in [("upper", good.upper()), ("title", good.title()), ("padded", f" {good} ")]:
                    yield Case("flags11", f"{command}{option}-{label}", [*base, option, value], files, None)


# Options twice, repeated items, long lists -------------------------------------------------------

def lists11_cases() -> Iterator[Case]:
    plan = ["plan", "llama-3.1-8b", "--jobs", "1", *SMALL]
    fleet = [*plan, "--rate", "2", "--slo-ttft", "2", "--gpus", "1"]
    many_gpus = ",".join(["h100-sxm"] * 2000)
    table: list[tuple[str, list[str], bool | None]] = [
        ("sweep-gpus-twice", [*SW, "--gpus", "1", "--gpus", "2"], None),
        ("sweep-engine-twice", [*SW, "--engine", "vllm", "--engine", "sglang"], None),
        ("memory-gpu-twice", ["memory", "llama-3.1-8b", "--gpu", "h100-sxm", "--gpu", "b200"], None),
        ("check-junit-twice", ["check", "{d}/s.toml", "--junit", "{d}/a.xml", "--junit", "{d}/b.xml"], None),
        ("calibrate-model-twice", [*CAL, "--model", "qwen3-8b"], None),
        ("sweep-concurrency-repeated", [*SW[:-1], "4,4,4"], None),
        ("sweep-concurrency-5000-items", [*SW[:-1], ",".join(str(i) for i in range(1, 5001))], True),
        ("sweep-concurrency-descending", [*SW[:-1], "8,4,2,1"], None),
        ("sweep-concurrency-empty-items", [*SW[:-1], "4,,8"], True),
        ("sweep-concurrency-trailing-comma", [*SW[:-1], "4,"], True),
        ("plan-gpu-repeated", [*fleet, "--gpu", "h100-sxm,h100-sxm"], None),
        ("plan-gpu-2000-items", [*fleet, "--gpu", many_gpus], None),
        ("plan-gpu-case-twins", [*fleet, "--gpu", "h100-sxm,H100-SXM"], None),
        ("plan-price-repeated-same", [*fleet, "--gpu", "h100-sxm", "--price-gpu-hour", "h100-sxm=2,h100-sxm=2"], None),
        ("plan-price-2000-items", [*fleet, "--gpu", "h100-sxm", "--price-gpu-hour", ",".join(["h100-sxm=2"] * 2000)], None),
        ("sweep-spec-acceptance-1000", [*SW, "--speculative", "ngram:1000", "--spec-acceptance", ",".join(["0.5"] * 1000)], None),
        ("sweep-spec-acceptance-repeated", [*SW, "--speculative", "ngram:3", "--spec-acceptance", "0.8,0.8,0.8"], None),
        ("sweep-disagg-repeated-pools", [*SW, "--disagg", "1p:tp1,1p:tp1,1d:tp1"], None),
        ("sweep-disagg-1000-pools", [*SW, "--disagg", ",".join(["1p:tp1"] * 500 + ["1d:tp1"] * 500)], True),
        ("sweep-offload-twice", [*SW, "--offload", "cpu:64GiB", "--offload", "cpu:32GiB"], None),
        ("sweep-offload-repeated-tier", [*SW, "--offload", "cpu:64GiB,cpu:32GiB"], True),
        ("sweep-layout-list", [*SW, "--layout", "tp1,tp1"], False),  # once, as plan reads it
        ("sweep-slo-ttft-list", [*SW, "--slo-ttft", "2,2"], True),
        ("sweep-think-time-list", [*SW, "--workload", "multiturn-chat", "--think-time", "5,5"], True),
        ("sweep-seed-twice", [*SW, "--seed", "1", "--seed", "2"], None),
        ("sweep-long-serve-command", [*SW, "--serve-command", "vllm serve m " + " ".join(["--max-num-seqs 4"] * 2000)], None),
    ]
    spec_files: dict[str, FileSpec] = {"s.toml": SPEC}
    for name, argv, invalid in table:
        files = spec_files if "check" in name else {"r.json": _lines(RUNS)} if "calibrate" in name else {}
        yield Case("lists11", name, argv, files, invalid)


# Input paths that are not plain readable files ---------------------------------------------------

def _loop(name: str) -> Callable[[Path], None]:
    def make(folder: Path) -> None:
        (folder / name).symlink_to(name)

    return make


def paths11_cases() -> Iterator[Case]:
    spec_cal = SPEC.replace('engine = "vllm"', 'engine = "vllm"\ncalibration = "c.toml"')
    trace_spec = SPEC.replace('isl = 100\nosl = 100\narrival = "batch"\nnum_requests = 20\n', 'trace = "t.jsonl"\n').replace(
        "no_preemption_at = 4", "no_preemption_at = 2").replace("concurrency = 4", "concurrency = 2")
    # (label, argv with the path as {p}, other files, the name {p} points at)
    inputs: list[tuple[str, list[str], dict[str, FileSpec]]] = [
        ("memory-model", ["memory", "{p}", "--gpus", "1"], {}),
        ("sweep-calibration", [*SW, "--calibration", "{p}"], {}),
        ("sweep-trace", ["sweep", "llama-3.1-8b", "--workload", "{p}", "--concurrency", "4"], {}),
        ("sweep-osl-hist", ["sweep", "llama-3.1-8b", "--isl", "100", "--osl", "hist:{p}", "--num-requests", "20", "--concurrency", "4"], {}),
        ("sweep-gpu-file", [*SW, "--gpus", "1", "--gpu", "{p}"], {}),
        ("check-spec", ["check", "{p}"], {}),
        ("check-baseline", ["check", "{d}/s.toml", "--baseline", "{p}"], {"s.toml": SPEC}),
        ("check-spec-calibration", ["check", "{d}/s.toml"], {"s.toml": spec_cal}),
        ("check-spec-trace", ["check", "{d}/s.toml"], {"s.toml": trace_spec}),
        ("calibrate-input", ["calibrate", "{p}", "--model", "llama-3.1-8b", "--gpu", "h100-sxm"], {}),
        ("calibrate-calibration", [*CAL, "--speculative", "ngram:3", "--calibration", "{p}"], {"r.json": _lines(RUNS)}),
    ]
    kinds: list[tuple[str, dict[str, FileSpec], Callable[[Path], None] | None]] = [
        ("dir", {"x": ("dir",)}, None),
        ("fifo", {"x": ("fifo",)}, None),
        ("unreadable", {"x": "x"}, _chmod("x", 0o000)),
        ("dangling-symlink", {}, _symlink("nowhere", "x")),
        ("symlink-loop", {}, _loop("x")),
        ("missing-parent", {}, None),
        ("dev-null", {}, None),
    ]
    spec_named = {"check-spec-calibration": "c.toml", "check-spec-trace": "t.jsonl"}
    for label, argv, files in inputs:
        for kind, made, setup in kinds:
            name = spec_named.get(label, "x")
            target = "/dev/null" if kind == "dev-null" else ("{d}/no/x" if kind == "missing-parent" else "{d}/x")
            if label in spec_named:  # the spec names the path: make the bad thing under that name
                made = {name if k == "x" else k: v for k, v in made.items()}
                setup = {"unreadable": _chmod(name, 0o000), "dangling-symlink": _symlink("nowhere", name),
                         "symlink-loop": _loop(name)}.get(kind, setup)
                if kind in ("missing-parent", "dev-null"):
                    continue
            yield Case("paths11", f"{label}-{kind}", [a.replace("{p}", target) for a in argv], {**files, **made}, True, setup)
        if label not in spec_named:
            yield Case("paths11", f"{label}-empty-string", [a.replace("{p}", "") for a in argv], files, True)


SURFACES11: dict[str, Callable[[], Iterator[Case]]] = {
    "configs11": configs11_cases, "flags11": flags11_cases, "lists11": lists11_cases,
    "paths11": paths11_cases,
}
# fmt: on
