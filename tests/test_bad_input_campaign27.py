"""Model architectures a twenty-seventh campaign (benchmarks/fuzz_cases27.py) found sized as
Llama's although vLLM builds them otherwise: each text-generation architecture of vLLM's model
registry (vllm/model_executor/models/registry.py) given to capcliff as a config.json. Those whose
layers hold what no config key says (a looped model, a dense MLP beside the experts, two
attention blocks a layer, sliding layers of their own head widths, an MLP with no gate, shared
experts or shared KV under keys capcliff did not read, a sliding pattern it did not know) are
refused in one line naming the field; the families whose o_proj carries no bias although
attention_bias says true (Seed-OSS, MiMo, GLM-4-0414, GLM-4.5) are sized without it. Each
expected figure is worked out by hand beside it.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from test_bad_input import _one_line_error

from capcliff.catalog.architecture import architecture_from_config
from capcliff.memory.params import param_count

# ByteDance-Seed/Seed-OSS-36B-Instruct config.json, sizing keys
SEED_OSS = {
    "architectures": ["SeedOssForCausalLM"], "model_type": "seed_oss", "attention_bias": True,
    "attention_out_bias": False, "head_dim": 128, "hidden_size": 5120, "intermediate_size": 27648,
    "max_position_embeddings": 524288, "mlp_bias": False, "num_attention_heads": 80,
    "num_hidden_layers": 64, "num_key_value_heads": 8, "tie_word_embeddings": False,
    "vocab_size": 155136, "torch_dtype": "bfloat16",
}  # fmt: skip
# rednote-hilab/dots.llm1.inst config.json, sizing keys
DOTS1 = {
    "architectures": ["Dots1ForCausalLM"], "model_type": "dots1", "hidden_size": 4096,
    "num_hidden_layers": 62, "intermediate_size": 10944, "num_attention_heads": 32,
    "num_key_value_heads": 32, "vocab_size": 152064, "first_k_dense_replace": 1,
    "moe_intermediate_size": 1408, "n_routed_experts": 128, "n_shared_experts": 2,
    "num_experts_per_tok": 6, "max_position_embeddings": 32768, "scoring_func": "sigmoid",
    "attention_bias": False, "tie_word_embeddings": False, "torch_dtype": "bfloat16",
}  # fmt: skip
# XiaomiMiMo/MiMo-7B-RL config.json, sizing keys
MIMO = {
    "architectures": ["MiMoForCausalLM"], "model_type": "mimo", "attention_bias": True,
    "hidden_size": 4096, "intermediate_size": 11008, "max_position_embeddings": 32768,
    "num_attention_heads": 32, "num_hidden_layers": 36, "num_key_value_heads": 8,
    "num_nextn_predict_layers": 1, "tie_word_embeddings": False, "torch_dtype": "bfloat16",
    "vocab_size": 151680,
}  # fmt: skip
# ByteDance/Ouro-1.4B config.json, sizing keys
OURO = {
    "architectures": ["OuroForCausalLM"], "model_type": "ouro", "hidden_size": 2048,
    "intermediate_size": 5632, "num_attention_heads": 16, "num_key_value_heads": 16,
    "num_hidden_layers": 24, "vocab_size": 49152, "max_position_embeddings": 65536,
    "total_ut_steps": 4, "tie_word_embeddings": False, "torch_dtype": "bfloat16",
}  # fmt: skip
# Snowflake/snowflake-arctic-instruct config.json, sizing keys
ARCTIC = {
    "architectures": ["ArcticForCausalLM"], "model_type": "arctic", "hidden_size": 7168,
    "intermediate_size": 4864, "num_attention_heads": 56, "num_key_value_heads": 8,
    "num_hidden_layers": 35, "num_local_experts": 128, "num_experts_per_tok": 2,
    "moe_layer_frequency": 1, "use_residual": True, "parallel_attn_mlp_res": True,
    "vocab_size": 32000, "max_position_embeddings": 4096, "tie_word_embeddings": False,
}  # fmt: skip
# tencent/Hunyuan-A13B-Instruct config.json, sizing keys (per-layer lists)
HUNYUAN_A13B = {
    "architectures": ["HunYuanMoEV1ForCausalLM"], "model_type": "hunyuan_v1_moe",
    "hidden_size": 4096, "num_hidden_layers": 32, "num_attention_heads": 32,
    "num_key_value_heads": 8, "head_dim": 128, "intermediate_size": 3072, "vocab_size": 128167,
    "num_experts": 64, "moe_intermediate_size": [3072] * 32, "moe_topk": [8] * 32,
    "num_shared_expert": [1] * 32, "use_cla": False, "use_qk_norm": True,
    "tie_word_embeddings": True, "torch_dtype": "bfloat16",
}  # fmt: skip

# xai-org/grok-2's shape as vLLM grok1.py reads it (residual_moe: a dense MLP beside the experts)
GROK2 = {
    "architectures": ["Grok1ForCausalLM"], "model_type": "grok-1", "hidden_size": 8192,
    "num_hidden_layers": 64, "num_attention_heads": 64, "num_key_value_heads": 8,
    "intermediate_size": 32768, "moe_intermediate_size": 16384, "num_local_experts": 8,
    "num_experts_per_tok": 2, "residual_moe": True, "vocab_size": 131072,
}  # fmt: skip
# a Jais 2 shape (transformers Jais2Config keys: relu2, LayerNorms)
JAIS2 = {
    "architectures": ["Jais2ForCausalLM"], "model_type": "jais2", "hidden_act": "relu2",
    "hidden_size": 3072, "num_hidden_layers": 32, "num_attention_heads": 24,
    "intermediate_size": 12288, "vocab_size": 150272,
}  # fmt: skip
# tiiuae/falcon-40b's shape under the first configs' names
FALCON_RW = {
    "architectures": ["RWForCausalLM"], "model_type": "RefinedWeb", "hidden_size": 8192,
    "num_hidden_layers": 60, "num_attention_heads": 128, "num_key_value_heads": 8,
    "intermediate_size": 32768, "vocab_size": 65024,
}  # fmt: skip
# PLaMo 3's keys as Plamo3Config names them (window_size, sliding_window_pattern 8)
PLAMO3 = {
    "architectures": ["Plamo3ForCausalLM"], "model_type": "plamo3", "hidden_size": 4096,
    "num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 4, "head_dim": 128,
    "intermediate_size": 13312, "vocab_size": 32000, "window_size": 2048,
    "sliding_window_pattern": 8, "tie_word_embeddings": True,
}  # fmt: skip


def _folder(tmp_path: Path, config: dict[str, object]) -> str:
    (tmp_path / "m").mkdir()
    (tmp_path / "m" / "config.json").write_text(json.dumps(config))
    return str(tmp_path / "m")


def test_seed_oss_36b_has_q_k_v_biases_and_no_o_bias() -> None:
    # vLLM seed_oss.py: qkv_proj bias=True, o_proj bias=False (its config's attention_bias: true
    # sits beside attention_out_bias: false); sized with o biases, it read 327,680 more.
    # By hand: embedding and head 2 x 155,136 x 5,120 = 1,588,592,640; a layer: q and o
    # 2 x 5,120 x 10,240 = 104,857,600, k and v 2 x 5,120 x 1,024 = 10,485,760, their biases
    # 10,240 + 2,048 = 12,288, MLP 3 x 5,120 x 27,648 = 424,673,280, norms 2 x 5,120 = 10,240:
    # 540,039,168 x 64 = 34,562,506,752; final norm 5,120: 36,151,104,512 (published: 36B)
    arch = architecture_from_config(SEED_OSS, path="seed")
    assert (arch.qkv_bias, arch.o_bias) == (True, False)
    assert param_count(arch).total == 36_151_104_512


def test_mimo_7b_is_qwen2s_layers_without_an_o_bias() -> None:
    # vLLM mimo.py builds Qwen2's layers (Qwen2Attention: q, k, v biased, o not). By hand:
    # embedding and head 2 x 151,680 x 4,096 = 1,242,562,560; a layer: q and o 2 x 4,096^2 =
    # 33,554,432, k and v 2 x 4,096 x 1,024 = 8,388,608, biases 4,096 + 2,048 = 6,144, MLP
    # 3 x 4,096 x 11,008 = 135,266,304, norms 8,192: 177,223,680 x 36 = 6,380,052,480; final
    # norm 4,096: 7,622,619,136 (its MTP layer is the draft's, loaded only when speculating)
    arch = architecture_from_config(MIMO, path="mimo")
    assert (arch.qkv_bias, arch.o_bias) == (True, False)
    assert param_count(arch).total == 7_622_619_136


@pytest.mark.parametrize("model_type", ["glm4", "glm4_moe"])
def test_glm_4_attention_bias_is_on_q_k_v_only(model_type: str) -> None:
    # vLLM glm4.py and glm4_moe.py: QKVParallelLinear(bias=attention_bias), o_proj bias=False;
    # GLM-4-0414's layers hold four RMSNorms (input, post_self_attn, post_attention, post_mlp)
    config = {
        "architectures": ["X"], "model_type": model_type, "attention_bias": True,
        "hidden_size": 6144, "num_hidden_layers": 61, "num_attention_heads": 48,
        "num_key_value_heads": 2, "head_dim": 128, "intermediate_size": 23040,
        "vocab_size": 151552, "tie_word_embeddings": False,
    }  # fmt: skip
    arch = architecture_from_config(config, path="glm")
    assert (arch.qkv_bias, arch.o_bias) == (True, False)
    assert arch.norms_per_layer == (4 if model_type == "glm4" else 2)


def test_dots_llm1_is_sized_as_its_published_142b_and_14b_active() -> None:
    # DeepSeek's keys in dots1 keep their meaning (vLLM dots1.py: dense layers below
    # first_k_dense_replace, moe_intermediate_size x n_shared_experts shared). By hand:
    # embedding and head 2 x 152,064 x 4,096 = 1,245,708,288; attention 62 x 4 x 4,096^2 =
    # 4,160,749,568; layer 0's MLP 3 x 4,096 x 10,944 = 134,479,872; 61 MoE layers x (130
    # experts x 3 x 4,096 x 1,408 + router 128 x 4,096) = 61 x 2,249,719,808 =
    # 137,232,908,288; norms 62 x 2 x 4,096 + 4,096 = 512,000: 142,774,358,016. Active: 8 of
    # the 130 a token, 61 x (8 x 17,301,504 + 524,288) = 8,475,115,520 in place of the MoE
    # total: 14,016,565,248. Its model card: 142B total, 14B activated.
    count = param_count(architecture_from_config(DOTS1, path="dots"))
    assert count.total == 142_774_358_016
    assert count.active == 14_016_565_248


@pytest.mark.parametrize(
    ("config", "field", "words"),
    [
        # vLLM ouro.py: every layer runs total_ut_steps (4) times, each pass with its own
        # Attention and KV cache: 4 x 24 x 2 x 16 x 128 x 2 B = 786,432 B a token, sized as
        # 196,608 (a quarter)
        (OURO, "model_type", "looped"),
        ({**OURO, "total_ut_steps": None, "model_type": None}, "model_type", "looped"),
        # vLLM arctic.py: a dense residual MLP of intermediate_size beside the 128 experts
        # (35 x 3 x 7,168 x 4,864 = 3.66B left out)
        (ARCTIC, "model_type", "residual"),
        # Hunyuan-A13B: shared experts and per-layer widths as lists; refused before for
        # "num_experts_per_tok: missing", which named no cause
        (HUNYUAN_A13B, "num_shared_expert", "shared experts"),
        # Hunyuan's cross-layer attention: layers read another's KV (vLLM hunyuan_v1.py)
        (
            {**HUNYUAN_A13B, "num_shared_expert": 0, "num_experts": 0, "use_cla": True},
            "use_cla",
            "cross-layer",
        ),
        # Grok 2 (vLLM grok1.py residual_moe): a dense MLP beside the experts
        (GROK2, "residual_moe", "dense MLP"),
        # vLLM jais2.py Jais2MLP: up_proj and down_proj (ReLU^2), no gate
        (JAIS2, "model_type", "no gate"),
        # Falcon's first configs name it RefinedWeb (vLLM registry: RWForCausalLM -> falcon)
        (FALCON_RW, "model_type", "no gate"),
        # PLaMo 3: all but every 8th layer slide over window_size (Plamo3Config); every
        # layer was sized as full attention
        (PLAMO3, "sliding_window_pattern", "layer_types"),
    ],
)
def test_layers_no_config_key_sizes_are_refused_in_one_line(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    config: dict[str, object],
    field: str,
    words: str,
) -> None:
    config = {k: v for k, v in config.items() if v is not None}
    line = _one_line_error(["memory", _folder(tmp_path, config), "--gpu", "h100-sxm"], capsys)
    assert f"{field}:" in line and words in line


@pytest.mark.parametrize(
    "config",
    [
        # meituan-longcat/LongCat-Flash-Chat's keys: two attention and MLP blocks a layer,
        # zero-computation experts (vLLM longcat_flash.py)
        {
            "architectures": ["LongcatFlashForCausalLM"],
            "model_type": "longcat_flash",
            "hidden_size": 6144,
            "num_layers": 28,
            "num_hidden_layers": 28,
            "num_attention_heads": 64,
            "n_routed_experts": 512,
            "zero_expert_num": 256,
            "moe_topk": 12,
            "expert_ffn_hidden_size": 2048,
            "ffn_hidden_size": 12288,
            "vocab_size": 131072,
        },
        # XiaomiMiMo/MiMo-V2-Flash's keys: sliding layers with 8 KV heads beside 4 in the full
        # ones (vLLM mimo_v2_flash.py)
        {
            "architectures": ["MiMoV2FlashForCausalLM"],
            "model_type": "mimo_v2_flash",
            "hidden_size": 4096,
            "num_hidden_layers": 48,
            "num_attention_heads": 64,
            "num_key_value_heads": 4,
            "head_dim": 192,
            "v_head_dim": 128,
            "swa_num_key_value_heads": 8,
            "sliding_window": 128,
            "intermediate_size": 16384,
            "n_routed_experts": 256,
            "num_experts_per_tok": 8,
            "moe_intermediate_size": 2048,
            "hybrid_layer_pattern": [0] + [1] * 47,
            "vocab_size": 152576,
        },
    ],
)
def test_families_of_other_layers_are_refused_by_name(config: dict[str, object]) -> None:
    with pytest.raises(Exception, match=f"model_type: {config['model_type']}:"):
        architecture_from_config(config, path="c")


def test_flags_that_say_none_are_not_refused() -> None:
    # use_cla and residual_moe false are their config classes' defaults: no shared KV, no
    # dense MLP beside the experts; a Hunyuan dense model of Llama's layers is sized
    dense = {
        "architectures": ["HunYuanDenseV1ForCausalLM"], "model_type": "hunyuan_v1_dense",
        "hidden_size": 4096, "num_hidden_layers": 32, "num_attention_heads": 32,
        "num_key_value_heads": 8, "intermediate_size": 14336, "vocab_size": 128167,
        "use_cla": False, "residual_moe": False, "num_shared_expert": 0,
        "tie_word_embeddings": True,
    }  # fmt: skip
    assert architecture_from_config(dense, path="c").moe is None
