"""The twenty-seventh bad-input campaign's surface (issue 23), run by `fuzz_surfaces.py`:

    PYTHONPATH=. python benchmarks/fuzz_surfaces.py archs27 mm27

Systematic over model architectures: every text-generation architecture of vLLM's model registry
(vllm/model_executor/models/registry.py, `_TEXT_GENERATION_MODELS`, main of 2026-12) given to
`memory` as a config.json (archs27), with the keys that tell its family apart as its released
config.json carries them (or its transformers / vLLM config class's defaults, where noted), and
the multimodal wrappers served on 8-GPU nodes (mm27). Each case says what capcliff must answer:
sized (exit 0, a hand-worked figure where one is given) or refused in one line (its layers are
not Llama's in a way capcliff does not size: a looped model, a dense MLP beside the experts, two
attention blocks a layer, sliding layers with head widths of their own, an MLP with no gate,
Mamba or linear-attention layers, shared experts or KV under keys capcliff does not read, or
keys of other names). docs/validation.md lists the classification of each.

By hand (tests/test_bad_input_campaign27.py works each out): Seed-OSS-36B 36,151,104,512
parameters (q, k, v biased, o not: vLLM seed_oss.py), MiMo-7B 7,622,619,136 (Qwen2's layers:
vLLM mimo.py), dots.llm1 142,774,358,016 (DeepSeek's keys: vLLM dots1.py; published 142B).
"""

# Data tables: one case per line, some past 100 characters.
# ruff: noqa: E501
from __future__ import annotations

import json
from collections.abc import Callable, Iterator

from fuzz_cases22 import DEL, _with
from fuzz_cases25 import _reading
from fuzz_harness import Case

MEMORY = ["memory", "{d}/m", "--gpu", "h200-sxm", "--gpus", "1", "--format", "json"]
# the keys every decoder config holds (a Llama 3 8B shape); each case adds its family's own
BASE = {
    "hidden_size": 4096, "num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 8,
    "intermediate_size": 14336, "vocab_size": 128000, "max_position_embeddings": 8192,
    "tie_word_embeddings": False, "torch_dtype": "bfloat16",
}  # fmt: skip
L = 32
MLA = {
    "kv_lora_rank": 512,
    "q_lora_rank": 1536,
    "qk_rope_head_dim": 64,
    "qk_nope_head_dim": 128,
    "v_head_dim": 128,
}

# ByteDance-Seed/Seed-OSS-36B-Instruct, XiaomiMiMo/MiMo-7B-RL, rednote-hilab/dots.llm1.inst config.json
SEED_OSS = {
    "architectures": ["SeedOssForCausalLM"], "model_type": "seed_oss", "attention_bias": True, "attention_out_bias": False,
    "head_dim": 128, "hidden_size": 5120, "intermediate_size": 27648, "max_position_embeddings": 524288,
    "num_attention_heads": 80, "num_hidden_layers": 64, "num_key_value_heads": 8, "tie_word_embeddings": False,
    "vocab_size": 155136, "torch_dtype": "bfloat16",
}  # fmt: skip
MIMO = {
    "architectures": ["MiMoForCausalLM"], "model_type": "mimo", "attention_bias": True, "hidden_size": 4096,
    "intermediate_size": 11008, "max_position_embeddings": 32768, "num_attention_heads": 32, "num_hidden_layers": 36,
    "num_key_value_heads": 8, "num_nextn_predict_layers": 1, "tie_word_embeddings": False, "vocab_size": 151680,
}  # fmt: skip
DOTS1 = {
    "architectures": ["Dots1ForCausalLM"], "model_type": "dots1", "hidden_size": 4096, "num_hidden_layers": 62,
    "intermediate_size": 10944, "num_attention_heads": 32, "num_key_value_heads": 32, "vocab_size": 152064,
    "first_k_dense_replace": 1, "moe_intermediate_size": 1408, "n_routed_experts": 128, "n_shared_experts": 2,
    "num_experts_per_tok": 6, "max_position_embeddings": 32768, "tie_word_embeddings": False,
}  # fmt: skip


def _params(expected: int) -> Callable[[str], str | None]:
    return _reading("params_total", lambda d: d["params_total"], expected)


# fmt: off
# (vLLM architecture, model_type, the family's own keys, invalid, reading); invalid True: refused
ARCHS27: list[tuple[str, str, dict[str, object], bool, Callable[[str], str | None] | None]] = [
    ("AfmoeForCausalLM", "afmoe", {"num_experts": 128, "num_experts_per_tok": 8, "num_shared_experts": 1, "num_dense_layers": 2, "moe_intermediate_size": 1024}, True, None),
    ("ApertusForCausalLM", "apertus", {"hidden_act": "xielu"}, True, None),
    ("AquilaForCausalLM", "aquila", {}, False, None),
    ("ArceeForCausalLM", "arcee", {"hidden_act": "relu2"}, True, None),
    ("ArcticForCausalLM", "arctic", {"num_local_experts": 128, "num_experts_per_tok": 2, "moe_layer_frequency": 1, "use_residual": True, "parallel_attn_mlp_res": True}, True, None),
    ("BaichuanForCausalLM", "baichuan", {}, False, None),
    ("BailingMoeForCausalLM", "bailing_moe", {"num_experts": 64, "num_shared_experts": 2, "num_experts_per_tok": 6, "moe_intermediate_size": 1408}, True, None),
    ("BailingMoeV2ForCausalLM", "bailing_moe_v2", {"num_experts": 256, "num_shared_experts": 1, "num_experts_per_tok": 8, "first_k_dense_replace": 1}, True, None),
    ("BambaForCausalLM", "bamba", {"mamba_n_heads": 128, "mamba_d_state": 128, "attn_layer_indices": [9, 18]}, True, None),
    ("BloomForCausalLM", "bloom", {}, True, None),
    ("ChatGLMModel", "chatglm", {"num_layers": 40, "ffn_hidden_size": 13696, "multi_query_group_num": 2, "padded_vocab_size": 151552, "num_hidden_layers": DEL, "intermediate_size": DEL}, True, None),
    ("CohereForCausalLM", "cohere", {}, False, None),
    ("Cohere2ForCausalLM", "cohere2", {"sliding_window": 4096}, False, None),
    ("CwmForCausalLM", "cwm", {"sliding_window": 8192, "layer_types": (["sliding_attention"] * 3 + ["full_attention"]) * 8}, False, None),
    ("DbrxForCausalLM", "dbrx", {"ffn_config": {"moe_num_experts": 16, "moe_top_k": 4}}, True, None),
    ("DeciLMForCausalLM", "nemotron-nas", {"block_configs": [{}] * L}, True, None),
    ("DeepseekForCausalLM", "deepseek", {"n_routed_experts": 64, "n_shared_experts": 2, "num_experts_per_tok": 6, "first_k_dense_replace": 1, "moe_intermediate_size": 1408}, False, None),
    ("DeepseekV2ForCausalLM", "deepseek_v2", {"n_routed_experts": 160, "n_shared_experts": 2, "num_experts_per_tok": 6, "first_k_dense_replace": 1, "moe_intermediate_size": 1536, **MLA}, False, None),
    ("DeepseekV3ForCausalLM", "deepseek_v3", {"n_routed_experts": 256, "n_shared_experts": 1, "num_experts_per_tok": 8, "first_k_dense_replace": 3, "moe_intermediate_size": 2048, "topk_method": "noaux_tc", **MLA}, False, None),
    ("DeepseekV32ForCausalLM", "deepseek_v32", {"index_n_heads": 64, "n_routed_experts": 256, "num_experts_per_tok": 8, **MLA}, True, None),
    ("Dots1ForCausalLM", "dots1", DOTS1, False, _params(142_774_358_016)),
    ("Ernie4_5ForCausalLM", "ernie4_5", {"use_bias": False}, False, None),
    ("Ernie4_5_MoeForCausalLM", "ernie4_5_moe", {"moe_num_experts": 64, "moe_k": 8, "moe_num_shared_experts": 2}, True, None),
    # sized since campaign 28 (Llama's layers, the count under num_layers: vLLM exaone.py): BASE's
    # 2 x 128,000 x 4,096 + 32 x (4,096 x 6,144 + 4,096^2 + 3 x 4,096 x 14,336 + 8,192) + 4,096
    ("ExaoneForCausalLM", "exaone", {"num_layers": 32, "num_hidden_layers": DEL}, False, _params(8_028_164_096)),
    ("Exaone4ForCausalLM", "exaone4", {"sliding_window": 4096, "sliding_window_pattern": "LLLG"}, False, None),
    ("FalconForCausalLM", "falcon", {}, True, None),
    ("RWForCausalLM", "RefinedWeb", {}, True, None),
    ("FalconMambaForCausalLM", "falcon_mamba", {"state_size": 16}, True, None),
    ("FalconH1ForCausalLM", "falcon_h1", {"mamba_d_ssm": 1024}, True, None),
    ("FlexOlmoForCausalLM", "flex_olmo", {"num_experts": 8, "num_experts_per_tok": 2}, False, None),
    ("GemmaForCausalLM", "gemma", {}, False, None),
    ("Gemma2ForCausalLM", "gemma2", {"sliding_window": 4096}, False, None),
    ("Gemma3ForCausalLM", "gemma3_text", {"sliding_window": 1024}, False, None),
    ("Gemma3nForCausalLM", "gemma3n_text", {"altup_num_inputs": 4}, True, None),
    ("Qwen3NextForCausalLM", "qwen3_next", {"full_attention_interval": 4, "num_experts": 512, "num_experts_per_tok": 10}, True, None),
    ("GlmForCausalLM", "glm", {}, False, None),
    ("Glm4ForCausalLM", "glm4", {"attention_bias": True}, False, None),
    ("Glm4MoeForCausalLM", "glm4_moe", {"attention_bias": True, "n_routed_experts": 160, "n_shared_experts": 1, "num_experts_per_tok": 8, "first_k_dense_replace": 3, "moe_intermediate_size": 1536}, False, None),
    ("GptOssForCausalLM", "gpt_oss", {"num_local_experts": 128, "num_experts_per_tok": 4, "sliding_window": 128}, False, None),
    ("GPT2LMHeadModel", "gpt2", {}, True, None),
    ("GPTBigCodeForCausalLM", "gpt_bigcode", {}, True, None),
    ("GPTJForCausalLM", "gptj", {}, True, None),
    ("GPTNeoXForCausalLM", "gpt_neox", {}, True, None),
    ("GraniteForCausalLM", "granite", {}, False, None),
    ("GraniteMoeForCausalLM", "granitemoe", {"num_local_experts": 40, "num_experts_per_tok": 8}, False, None),
    ("GraniteMoeHybridForCausalLM", "granitemoehybrid", {"mamba_n_heads": 128, "layer_types": ["mamba"] * L, "shared_intermediate_size": 8192}, True, None),
    ("GraniteMoeSharedForCausalLM", "granitemoeshared", {"num_local_experts": 40, "num_experts_per_tok": 8, "shared_intermediate_size": 1024}, True, None),
    ("Grok1ModelForCausalLM", "grok-1", {"num_experts": 8, "num_experts_per_tok": 2}, False, None),
    ("Grok1ForCausalLM", "grok-1", {"num_local_experts": 8, "num_experts_per_tok": 2, "moe_intermediate_size": 16384, "residual_moe": True}, True, None),
    ("HunYuanMoEV1ForCausalLM", "hunyuan_v1_moe", {"num_experts": 64, "moe_topk": [8] * L, "num_shared_expert": [1] * L, "moe_intermediate_size": [3072] * L, "use_cla": False}, True, None),
    ("HunYuanDenseV1ForCausalLM", "hunyuan_v1_dense", {"use_cla": False, "use_qk_norm": True}, False, None),
    ("HunYuanDenseV1ForCausalLM", "hunyuan_v1_dense", {"use_cla": True, "cla_share_factor": 2}, True, None),
    ("InternLMForCausalLM", "internlm", {}, False, None),
    ("InternLM2ForCausalLM", "internlm2", {}, False, None),
    ("InternLM3ForCausalLM", "internlm3", {}, False, None),
    ("JAISLMHeadModel", "jais", {"n_embd": 4096, "n_layer": 32, "hidden_size": DEL, "num_hidden_layers": DEL}, True, None),
    ("Jais2ForCausalLM", "jais2", {"hidden_act": "relu2"}, True, None),
    ("JambaForCausalLM", "jamba", {"attn_layer_period": 8, "num_experts": 16, "num_experts_per_tok": 2}, True, None),
    ("KimiLinearForCausalLM", "kimi_linear", {"linear_attn_config": {"kda_layers": [1]}}, True, None),
    ("Lfm2ForCausalLM", "lfm2", {"layer_types": ["conv"] * L}, True, None),
    ("Lfm2MoeForCausalLM", "lfm2_moe", {"layer_types": ["conv"] * L, "num_experts": 32, "num_experts_per_tok": 4}, True, None),
    ("LlamaForCausalLM", "llama", {}, False, None),
    ("Llama4ForCausalLM", "llama4_text", {"intermediate_size_mlp": 16384, "interleave_moe_layer_step": 1, "attention_chunk_size": 8192}, True, None),
    ("LongcatFlashForCausalLM", "longcat_flash", {"num_layers": 28, "n_routed_experts": 512, "zero_expert_num": 256, "moe_topk": 12, "expert_ffn_hidden_size": 2048, **MLA}, True, None),
    ("MambaForCausalLM", "mamba", {"state_size": 16}, True, None),
    ("Mamba2ForCausalLM", "mamba2", {"state_size": 128}, True, None),
    ("MiniCPMForCausalLM", "minicpm", {"scale_emb": 12, "dim_model_base": 256}, False, None),
    ("MiniCPM3ForCausalLM", "minicpm3", {"kv_lora_rank": 256, "q_lora_rank": 768, "qk_rope_head_dim": 32, "qk_nope_head_dim": 64}, True, None),
    ("MiniMaxText01ForCausalLM", "minimax", {"attn_type_list": [0] * 7 + [1] + [0] * 24, "num_local_experts": 32, "num_experts_per_tok": 2}, True, None),
    ("MiniMaxM2ForCausalLM", "minimax_m2", {"num_local_experts": 256, "num_experts_per_tok": 8, "attn_type_list": [1] * L, "shared_intermediate_size": 0}, False, None),
    ("MistralForCausalLM", "mistral", {}, False, None),
    ("MixtralForCausalLM", "mixtral", {"num_local_experts": 8, "num_experts_per_tok": 2}, False, None),
    ("MPTForCausalLM", "mpt", {}, True, None),
    ("MiMoForCausalLM", "mimo", MIMO, False, _params(7_622_619_136)),
    ("MiMoV2FlashForCausalLM", "mimo_v2_flash", {"hybrid_layer_pattern": [0] + [1] * (L - 1), "swa_num_key_value_heads": 8, "head_dim": 192, "v_head_dim": 128, "sliding_window": 128, "n_routed_experts": 256, "num_experts_per_tok": 8}, True, None),
    ("NemotronForCausalLM", "nemotron", {}, True, None),
    ("NemotronHForCausalLM", "nemotron_h", {"hybrid_override_pattern": "M-M*" * 8}, True, None),
    ("OlmoForCausalLM", "olmo", {}, False, None),
    ("Olmo2ForCausalLM", "olmo2", {}, False, None),
    ("Olmo3ForCausalLM", "olmo3", {"sliding_window": 4096, "layer_types": (["sliding_attention"] * 3 + ["full_attention"]) * 8}, False, None),
    ("OlmoeForCausalLM", "olmoe", {"num_experts": 64, "num_experts_per_tok": 8, "intermediate_size": 1024}, False, None),
    ("OPTForCausalLM", "opt", {}, True, None),
    ("OrionForCausalLM", "orion", {}, False, None),
    ("OuroForCausalLM", "ouro", {"total_ut_steps": 4}, True, None),
    ("PanguEmbeddedForCausalLM", "PanguEmbedded", {}, False, None),
    ("PanguUltraMoEForCausalLM", "pangu_ultra_moe", {"n_routed_experts": 256, "n_shared_experts": 1, "num_experts_per_tok": 8, "first_k_dense_replace": 3, "moe_intermediate_size": 2048, **MLA}, False, None),
    ("PersimmonForCausalLM", "persimmon", {}, True, None),
    ("PhiForCausalLM", "phi", {}, True, None),
    ("Phi3ForCausalLM", "phi3", {}, False, None),
    ("PhiMoEForCausalLM", "phimoe", {"num_local_experts": 16, "num_experts_per_tok": 2}, False, None),
    ("Plamo2ForCausalLM", "plamo2", {"mamba_d_state": 64, "mamba_num_heads": 64}, True, None),
    ("Plamo3ForCausalLM", "plamo3", {"window_size": 2048, "sliding_window_pattern": 8}, True, None),
    ("QWenLMHeadModel", "qwen", {}, True, None),
    ("Qwen2ForCausalLM", "qwen2", {}, False, None),
    ("Qwen2MoeForCausalLM", "qwen2_moe", {"num_experts": 60, "num_experts_per_tok": 4, "moe_intermediate_size": 1408, "shared_expert_intermediate_size": 5632}, False, None),
    ("Qwen3ForCausalLM", "qwen3", {}, False, None),
    ("Qwen3MoeForCausalLM", "qwen3_moe", {"num_experts": 128, "num_experts_per_tok": 8, "moe_intermediate_size": 768}, False, None),
    ("SeedOssForCausalLM", "seed_oss", SEED_OSS, False, _params(36_151_104_512)),
    ("Step3TextForCausalLM", "step3_text", {"moe_num_experts": 48, "moe_top_k": 3, "share_q_dim": 2048}, True, None),
    ("StableLmForCausalLM", "stablelm", {}, False, None),
    ("Starcoder2ForCausalLM", "starcoder2", {}, True, None),
    ("SolarForCausalLM", "solar", {}, False, None),
    ("TeleChat2ForCausalLM", "telechat", {"n_layer": 32, "num_hidden_layers": DEL, "ffn_hidden_size": 12288}, True, None),
    ("TeleFLMForCausalLM", "teleflm", {}, False, None),
    ("XverseForCausalLM", "xverse", {}, False, None),
    ("Zamba2ForCausalLM", "zamba2", {"mamba_d_state": 64, "layers_block_type": ["mamba"] * L}, True, None),
]
# fmt: on

# the text model under a multimodal wrapper, and its tower (vision_config's model_type)
QWEN3_TEXT = {**BASE, "model_type": "qwen3_vl_text", "head_dim": 128}
PIXTRAL = {
    "model_type": "pixtral",
    "hidden_size": 1024,
    "intermediate_size": 4096,
    "num_hidden_layers": 24,
    "patch_size": 14,
    "num_attention_heads": 16,
}
# fmt: off
# (name, config.json, invalid)
MM27: list[tuple[str, dict[str, object], bool]] = [
    # Qwen3-VL and Qwen3-VL-MoE: their vision tower (qwen3_vl) is not one capcliff sizes
    ("qwen3-vl", {"architectures": ["Qwen3VLForConditionalGeneration"], "model_type": "qwen3_vl", "text_config": QWEN3_TEXT, "vision_config": {"model_type": "qwen3_vl", "depth": 27}}, True),
    ("qwen3-vl-moe", {"architectures": ["Qwen3VLMoeForConditionalGeneration"], "model_type": "qwen3_vl_moe", "text_config": {**QWEN3_TEXT, "model_type": "qwen3_vl_moe_text", "num_experts": 128, "num_experts_per_tok": 8, "moe_intermediate_size": 1536}, "vision_config": {"model_type": "qwen3_vl_moe", "depth": 27}}, True),
    # Llama 4 Scout / Maverick: chunked attention, the shared expert and interleaved dense layers
    ("llama4-scout", {"architectures": ["Llama4ForConditionalGeneration"], "model_type": "llama4", "text_config": {**BASE, "model_type": "llama4_text", "num_local_experts": 16, "num_experts_per_tok": 1, "intermediate_size_mlp": 16384, "interleave_moe_layer_step": 1, "attention_chunk_size": 8192}, "vision_config": {"model_type": "llama4_vision_model"}}, True),
    # Ministral 3 and Mistral Large 3: Pixtral's tower, Llama's and DeepSeek-V3's text layers
    ("ministral3", {"architectures": ["Mistral3ForConditionalGeneration"], "model_type": "mistral3", "text_config": {**BASE, "model_type": "ministral3"}, "vision_config": PIXTRAL}, False),
    ("mistral-large-3", {"architectures": ["Mistral3ForConditionalGeneration"], "model_type": "mistral3", "text_config": {**BASE, "model_type": "deepseek_v3", "n_routed_experts": 128, "n_shared_experts": 1, "num_experts_per_tok": 4, "first_k_dense_replace": 3, "moe_intermediate_size": 4096, **MLA}, "vision_config": PIXTRAL}, False),
    # Gemma 3n: AltUp, per-layer embeddings and an audio tower
    ("gemma3n", {"architectures": ["Gemma3nForConditionalGeneration"], "model_type": "gemma3n", "text_config": {**BASE, "model_type": "gemma3n_text", "altup_num_inputs": 4}, "audio_config": {"model_type": "gemma3n_audio"}}, True),
    # GLM-4.5V, Kimi-VL, InternVL 3.5, Step 3: towers capcliff does not size
    ("glm-4.5v", {"architectures": ["Glm4vMoeForConditionalGeneration"], "model_type": "glm4v_moe", "text_config": {**BASE, "model_type": "glm4v_moe_text", "n_routed_experts": 128, "num_experts_per_tok": 8}, "vision_config": {"model_type": "glm4v_moe"}}, True),
    ("kimi-vl", {"architectures": ["KimiVLForConditionalGeneration"], "model_type": "kimi_vl", "text_config": {**BASE, "model_type": "deepseek_v3", "n_routed_experts": 64, "num_experts_per_tok": 6, **MLA}, "vision_config": {"model_type": "moonvit"}}, True),
    ("internvl-3.5", {"architectures": ["InternVLChatModel"], "model_type": "internvl_chat", "text_config": {**BASE, "model_type": "qwen3"}, "vision_config": {"model_type": "intern_vit_6b"}}, True),
    ("step3", {"architectures": ["Step3VLForConditionalGeneration"], "model_type": "step3_vl", "text_config": {**BASE, "model_type": "step3_text", "moe_num_experts": 48, "moe_top_k": 3}, "vision_config": {"model_type": "step3_vision_encoder"}}, True),
]
# fmt: on


def archs27_cases() -> Iterator[Case]:
    for arch, model_type, keys, invalid, answer in ARCHS27:
        config = _with({**BASE, "architectures": [arch], "model_type": model_type}, **keys)
        name = f"{model_type}-{arch}" + ("-cla" if keys.get("use_cla") else "")
        yield Case(
            "archs27",
            name,
            list(MEMORY),
            {"m/config.json": json.dumps(config)},
            invalid,
            answer=answer,
        )
    # a config that names its class only (no model_type): the class says the family
    for arch in ("OuroForCausalLM", "ArcticForCausalLM", "Jais2ForCausalLM", "RWForCausalLM"):
        config = {**BASE, "architectures": [arch]}
        yield Case(
            "archs27",
            f"class-only-{arch}",
            list(MEMORY),
            {"m/config.json": json.dumps(config)},
            True,
        )


def mm27_cases() -> Iterator[Case]:
    for name, config, invalid in MM27:
        yield Case("mm27", name, list(MEMORY), {"m/config.json": json.dumps(config)}, invalid)


SURFACES27: dict[str, Callable[[], Iterator[Case]]] = {
    "archs27": archs27_cases,
    "mm27": mm27_cases,
}
