"""ChatGLM (ChatGLM3, GLM-4-9B: model_type chatglm) sized by vLLM chatglm.py's rule
(capcliff/catalog/chatglm.py), and EXAONE 3.x's config-class defaults. Campaign 28 refused
ChatGLM by name; every figure here is worked by hand from the published config.json.

GLM-4-9B-chat by hand: a layer holds query_key_value 4,096 x (32 + 2 x 2) x 128 = 18,874,368
and its bias (add_qkv_bias) 4,608, dense 4,096 x 4,096 = 16,777,216 (no bias), dense_h_to_4h
4,096 x 2 x 13,696 and dense_4h_to_h 13,696 x 4,096 = 168,296,448, two RMSNorms 8,192:
203,960,832, x 40 = 8,158,433,280; embedding and output_layer 2 x 151,552 x 4,096 =
1,241,513,984; final RMSNorm 4,096: 9,399,951,360 (its model card: 9.40B). ChatGLM3-6B: 28
layers of the same, 2 x 65,024 x 4,096: 5,710,903,296 + 532,676,608 + 4,096 = 6,243,584,000
(6.24B).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from test_bad_input_campaign28 import EXAONE  # EXAONE-3.5-7.8B's sizing keys

from capcliff.catalog.architecture import architecture_from_config
from capcliff.errors import CatalogError
from capcliff.memory.params import param_count

# THUDM/glm-4-9b-chat config.json, its sizing keys and flags as published
GLM4_9B = {
    "architectures": ["ChatGLMModel"], "model_type": "chatglm", "add_bias_linear": False,
    "add_qkv_bias": True, "ffn_hidden_size": 13696, "hidden_size": 4096, "kv_channels": 128,
    "multi_query_attention": True, "multi_query_group_num": 2, "num_attention_heads": 32,
    "num_hidden_layers": 40, "num_layers": 40, "padded_vocab_size": 151552, "vocab_size": 151552,
    "post_layer_norm": True, "rmsnorm": True, "rope_ratio": 500, "seq_length": 131072,
    "original_rope": True, "tie_word_embeddings": False, "torch_dtype": "bfloat16",
}  # fmt: skip
# THUDM/chatglm3-6b config.json
CHATGLM3_6B = {
    "architectures": ["ChatGLMModel"], "model_type": "chatglm", "add_bias_linear": False,
    "add_qkv_bias": True, "ffn_hidden_size": 13696, "hidden_size": 4096, "kv_channels": 128,
    "multi_query_attention": True, "multi_query_group_num": 2, "num_attention_heads": 32,
    "num_layers": 28, "padded_vocab_size": 65024, "vocab_size": 65024, "post_layer_norm": True,
    "rmsnorm": True, "seq_length": 8192, "original_rope": True, "tie_word_embeddings": False,
    "torch_dtype": "float16",
}  # fmt: skip


def _params(config: dict[str, object]) -> int:
    return param_count(architecture_from_config(config, path="config.json")).total


def _refusal(config: dict[str, object]) -> str:
    with pytest.raises(CatalogError) as info:
        architecture_from_config(config, path="config.json")
    return str(info.value)


def _memory_json(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], config: dict[str, object]
) -> dict[str, object]:
    from capcliff.cli import main

    (tmp_path / "m").mkdir()
    (tmp_path / "m" / "config.json").write_text(json.dumps(config))
    argv = ["memory", str(tmp_path / "m"), "--gpu", "h200-sxm", "--gpus", "1", "--format", "json"]
    assert main(argv) == 0
    out: dict[str, object] = json.loads(capsys.readouterr().out)
    return out


def test_glm_4_9b_chat_holds_its_published_parameters() -> None:
    assert _params(GLM4_9B) == 9_399_951_360  # module docstring
    assert round(9_399_951_360 / 1e9, 2) == 9.40


def test_chatglm3_6b_holds_its_published_parameters() -> None:
    assert _params(CHATGLM3_6B) == 6_243_584_000
    assert round(6_243_584_000 / 1e9, 2) == 6.24


def test_the_chatglm_class_alone_names_the_family() -> None:
    for cls in ("ChatGLMModel", "ChatGLMForConditionalGeneration"):
        config = {k: v for k, v in GLM4_9B.items() if k != "model_type"}
        assert _params({**config, "architectures": [cls]}) == 9_399_951_360


@pytest.mark.parametrize(
    ("config", "kv_bytes", "context"),
    [
        # 2 (K, V) x 40 layers x 2 groups x 128 x 2 bytes
        (GLM4_9B, 40_960, 131_072),
        # 2 x 28 x 2 x 128 x 2
        (CHATGLM3_6B, 28_672, 8_192),
    ],
    ids=["glm-4-9b-chat", "chatglm3-6b"],
)
def test_kv_bytes_per_token_are_the_groups_and_the_context_is_seq_length(
    config: dict[str, object],
    kv_bytes: int,
    context: int,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert _memory_json(tmp_path, capsys, config)["kv_bytes_per_token"] == kv_bytes
    assert architecture_from_config(config, path="c").max_position_embeddings == context


def test_llama_keys_beside_are_not_read() -> None:
    # vLLM's ChatGLMConfig overwrites vocab_size and max_position_embeddings with
    # padded_vocab_size and seq_length; intermediate_size is no key its model reads
    config = {**GLM4_9B, "vocab_size": 150000, "intermediate_size": 1, "num_key_value_heads": 32,
              "max_position_embeddings": 999}  # fmt: skip
    arch = architecture_from_config(config, path="c")
    assert (arch.vocab_size, arch.intermediate_size) == (151_552, 13_696)
    assert (arch.num_kv_heads, arch.max_position_embeddings) == (2, 131_072)


def test_without_multi_query_attention_every_head_has_its_kv() -> None:
    # vLLM GLMAttention: total_num_kv_heads = num_attention_heads; a layer's query_key_value is
    # 4,096 x 3 x 4,096 = 50,331,648 and its bias 12,288: 235,425,792 a layer, x 40 =
    # 9,417,031,680, + 1,241,513,984 + 4,096
    config = {**GLM4_9B, "multi_query_attention": False}
    assert _params(config) == 10_658_549_760
    assert architecture_from_config(config, path="c").num_kv_heads == 32


def test_add_bias_linear_biases_the_dense_and_mlp_projections() -> None:
    # dense 4,096 + dense_h_to_4h 2 x 13,696 + dense_4h_to_h 4,096 = 35,584 a layer, x 40
    assert _params({**GLM4_9B, "add_bias_linear": True}) == 9_399_951_360 + 1_423_360


def test_qkv_bias_unset_is_none() -> None:
    # ChatGLMConfig(add_qkv_bias=False): 40 x 4,608 fewer
    config = {k: v for k, v in GLM4_9B.items() if k != "add_qkv_bias"}
    assert _params(config) == 9_399_951_360 - 184_320


def test_tie_word_embeddings_unset_ties_as_pretrained_config_does() -> None:
    # PretrainedConfig(tie_word_embeddings=True); vLLM ChatGLMBaseModel ties output_layer
    config = {k: v for k, v in GLM4_9B.items() if k != "tie_word_embeddings"}
    assert _params(config) == 9_399_951_360 - 151_552 * 4_096


@pytest.mark.parametrize(
    ("change", "named"),
    [
        ({"rmsnorm": False}, "rmsnorm: false: LayerNorms with biases"),
        ({"post_layer_norm": False}, "post_layer_norm: false"),
        ({"kv_channels": 64}, "kv_channels: 64 but hidden_size / num_attention_heads is 128"),
        ({"multi_query_group_num": 3}, "multi_query_group_num: 3 does not divide 32 heads"),
        ({"num_hidden_layers": 30}, "num_layers: 40 but num_hidden_layers 30: two layer counts"),
        ({"num_attention_heads": 30}, "num_attention_heads: 30 does not divide hidden_size"),
        ({"ffn_hidden_size": None}, "ffn_hidden_size: missing"),
        ({"padded_vocab_size": None}, "padded_vocab_size: missing"),
        ({"seq_length": None}, "seq_length: missing"),
        ({"multi_query_group_num": None}, "multi_query_group_num: missing"),
        ({"add_qkv_bias": "yes"}, "add_qkv_bias: must be true or false"),
        ({"padded_vocab_size": 1 << 30}, "padded_vocab_size: 1073741824 is past the sanity"),
        ({"seq_length": 1 << 31}, "seq_length: 2147483648 is past the sanity bound"),
    ],
    ids=lambda v: str(v)[:30],
)
def test_a_chatglm_config_capcliff_cannot_size_names_its_own_key(
    change: dict[str, object], named: str
) -> None:
    assert named in _refusal({**GLM4_9B, **change})


def test_exaone_tie_word_embeddings_unset_ties() -> None:
    # ExaoneConfig(tie_word_embeddings=True): campaign 28's 7,818,448,896 less the lm_head's
    # 102,400 x 4,096 = 419,430,400
    config = {k: v for k, v in EXAONE.items() if k != "tie_word_embeddings"}
    assert _params(config) == 7_399_018_496


@pytest.mark.parametrize("unset", [None, 0, "absent"])
def test_exaone_intermediate_size_unset_is_four_hidden(unset: object) -> None:
    # ExaoneConfig: `if intermediate_size: ... else: hidden_size * 4` = 16,384: 32 x 3 x 4,096 x
    # (16,384 - 14,336) = 805,306,368 more than campaign 28's 7,818,448,896
    config = {k: v for k, v in EXAONE.items() if k != "intermediate_size"}
    if unset != "absent":
        config["intermediate_size"] = unset
    assert _params(config) == 8_623_755_264


def test_exaone_intermediate_size_false_is_refused() -> None:
    assert "intermediate_size: must be an integer" in _refusal(
        {**EXAONE, "intermediate_size": False}
    )
