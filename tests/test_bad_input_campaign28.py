"""Families a twenty-eighth campaign (benchmarks/fuzz_cases28.py) found refused without a reason
or sized as Llama's although vLLM builds them otherwise. ChatGLM, JAIS, TeleChat2 and MiniCPM3
name their sizes under keys of their own (vLLM chatglm.py, jais.py, telechat2.py, minicpm3.py):
each was refused for the first Llama key it lacked ("num_hidden_layers: missing"), and sized as
Llama's layers where a config held those keys too; InternLM2VE (vLLM internlm2_ve.py) holds a
visual-expert MLP beside each MLP and was sized without it. Each is now refused naming the family
and why. EXAONE 3.x, Llama's layers with the count under num_layers (vLLM exaone.py), is sized;
its figures are worked by hand beside them. A required key missing from a config of a family
capcliff does not know names that family. ChatGLM is sized since 2026-12-07 (by vLLM
chatglm.py's rule; tests/test_chatglm_sizing.py), and left these refusals.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from test_bad_input import _one_line_error

from capcliff.catalog.architecture import architecture_from_config
from capcliff.errors import CatalogError
from capcliff.memory.params import param_count

# sizing keys of each family's released config.json
# inceptionai/jais-13b-chat
JAIS = {
    "architectures": ["JAISLMHeadModel"], "model_type": "jais", "n_embd": 5120, "n_layer": 40,
    "n_head": 40, "n_inner": 13653, "n_positions": 2048, "vocab_size": 84992,
    "position_embedding_type": "alibi", "activation_function": "swiglu",
}  # fmt: skip
# Tele-AI/TeleChat2-7B
TELECHAT2 = {
    "architectures": ["TeleChat2ForCausalLM"], "model_type": "telechat", "hidden_size": 4096,
    "n_layer": 30, "n_head": 32, "ffn_hidden_size": 12288, "vocab_size": 131072,
}  # fmt: skip
# openbmb/MiniCPM3-4B
MINICPM3 = {
    "architectures": ["MiniCPM3ForCausalLM"], "model_type": "minicpm3", "hidden_size": 2560,
    "num_hidden_layers": 62, "num_attention_heads": 40, "num_key_value_heads": 40,
    "intermediate_size": 6400, "vocab_size": 73448, "max_position_embeddings": 32768,
    "q_lora_rank": 768, "kv_lora_rank": 256, "qk_nope_head_dim": 64, "qk_rope_head_dim": 32,
    "tie_word_embeddings": False,
}  # fmt: skip
# OpenGVLab/Mono-InternVL-2B's llm_config: InternLM2's keys, InternLM2VE's class
INTERNLM2_VE = {
    "architectures": ["InternLM2VEForCausalLM"], "model_type": "internlm2", "hidden_size": 2048,
    "num_hidden_layers": 24, "num_attention_heads": 16, "num_key_value_heads": 8,
    "intermediate_size": 8192, "vocab_size": 92553, "max_position_embeddings": 32768,
    "tie_word_embeddings": False,
}  # fmt: skip
# LGAI-EXAONE/EXAONE-3.5-7.8B-Instruct
EXAONE = {
    "architectures": ["ExaoneForCausalLM"], "model_type": "exaone", "activation_function": "silu",
    "hidden_size": 4096, "intermediate_size": 14336, "num_attention_heads": 32,
    "num_key_value_heads": 8, "num_layers": 32, "vocab_size": 102400,
    "max_position_embeddings": 32768, "tie_word_embeddings": False, "torch_dtype": "bfloat16",
}  # fmt: skip


def _refusal(config: dict[str, object]) -> str:
    with pytest.raises(CatalogError) as info:
        architecture_from_config(config, path="config.json")
    return str(info.value)


@pytest.mark.parametrize(
    ("config", "named", "keys"),
    [
        (JAIS, "JAISLMHeadModel", "n_embd, n_layer, n_head, n_inner"),
        (TELECHAT2, "TeleChat2ForCausalLM", "n_layer, n_head, ffn_hidden_size"),
        (MINICPM3, "MiniCPM3ForCausalLM", "no v_head_dim"),
    ],
    ids=["jais", "telechat2", "minicpm3"],
)
def test_a_family_with_keys_of_its_own_is_refused_by_name(
    config: dict[str, object], named: str, keys: str
) -> None:
    line = _refusal(config)
    assert f"architectures: {named}: its config names the sizes under keys of its own" in line
    assert keys in line


@pytest.mark.parametrize(
    "config",
    [
        # TeleChat2's n_layer and ffn_hidden_size beside Llama's
        {**TELECHAT2, "num_hidden_layers": 30, "num_attention_heads": 32},
        # MiniCPM3's attention was sized as DeepSeek's MLA
        {**MINICPM3, "v_head_dim": 64},
    ],
    ids=["telechat2-with-llama-keys", "minicpm3-with-v_head_dim"],
)
def test_a_family_with_keys_of_its_own_is_refused_whatever_llama_keys_it_holds(
    config: dict[str, object],
) -> None:
    assert "its config names the sizes under keys of its own" in _refusal(config)


@pytest.mark.parametrize(
    ("config", "field"),
    [
        (INTERNLM2_VE, "architectures: InternLM2VEForCausalLM"),
        (
            {**INTERNLM2_VE, "architectures": [], "model_type": "internlm2_ve"},
            "model_type: internlm2_ve",
        ),
    ],
    ids=["class", "model_type"],
)  # fmt: skip
def test_internlm2_ve_is_refused_for_its_visual_expert(
    config: dict[str, object], field: str
) -> None:
    assert f"{field}: a visual-expert MLP (feed_forward_ve)" in _refusal(config)


@pytest.mark.parametrize("config", [JAIS, TELECHAT2, MINICPM3], ids=lambda c: c["model_type"])
def test_the_class_alone_names_the_family(config: dict[str, object]) -> None:
    arch = config["architectures"][0]  # type: ignore[index]
    line = _refusal({k: v for k, v in config.items() if k != "model_type"})
    assert f"architectures: {arch}: its config names the sizes" in line  # fmt: skip


def test_an_unknown_class_alone_is_not_called_missing() -> None:
    line = _refusal({"architectures": ["FooForCausalLM"], "hidden_size": 4096})
    assert "model_type: missing, and architectures ['FooForCausalLM'] names no family" in line


def test_exaone_3_5_is_sized_from_num_layers() -> None:
    # by hand: embedding and lm_head 2 x 102,400 x 4,096 = 838,860,800; a layer 4,096 x (4,096 +
    # 2 x 8 x 128) + 4,096 x 4,096 (q, k, v, out_proj) + 3 x 4,096 x 14,336 (c_fc_0, c_fc_1,
    # c_proj) + 2 x 4,096 (ln_1, ln_2) = 218,112,000, x 32 = 6,979,584,000; ln_f 4,096
    arch = architecture_from_config(EXAONE, path="config.json")
    assert arch.num_layers == 32
    assert param_count(arch).total == 7_818_448_896
    # the model card (LGAI-EXAONE/EXAONE-3.5-7.8B-Instruct): 6.98B without embeddings
    assert round((7_818_448_896 - 838_860_800) / 1e9, 2) == 6.98


def test_exaone_with_two_layer_counts_that_differ_is_refused() -> None:
    line = _refusal({**EXAONE, "num_hidden_layers": 30})
    assert "num_layers: 32 but num_hidden_layers 30: two layer counts" in line


def test_exaone_through_the_cli(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from capcliff.cli import main

    (tmp_path / "m").mkdir()
    (tmp_path / "m" / "config.json").write_text(json.dumps(EXAONE))
    assert (
        main(
            ["memory", str(tmp_path / "m"), "--gpu", "h200-sxm", "--gpus", "1", "--format", "json"]
        )
        == 0
    )
    # 32 layers x 2 (K, V) x 8 KV heads x 128 x 2 bytes (bf16)
    assert json.loads(capsys.readouterr().out)["kv_bytes_per_token"] == 131_072


@pytest.mark.parametrize(
    ("config", "line_part"),
    [
        ({"architectures": ["FooLMHeadModel"], "model_type": "foo", "n_embd": 4096},
         "hidden_size: missing (required to size the model); model_type 'foo', "
         "architectures ['FooLMHeadModel']"),
        ({"architectures": ["BazVL"], "model_type": "baz",
          "text_config": {"model_type": "baz_text", "hidden_size": 64}},
         "text_config.num_hidden_layers: missing (required to size the model); "
         "model_type 'baz_text', architectures ['BazVL']"),
    ],
    ids=["top", "text_config"],
)  # fmt: skip
def test_a_missing_key_of_an_unknown_family_names_the_family(
    config: dict[str, object], line_part: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "m").mkdir()
    (tmp_path / "m" / "config.json").write_text(json.dumps(config))
    line = _one_line_error(
        ["memory", str(tmp_path / "m"), "--gpu", "h200-sxm", "--gpus", "1"], capsys
    )
    assert line_part in line
    assert "a family capcliff does not know" in line


def test_a_missing_key_of_a_known_family_says_no_more() -> None:
    line = _refusal(
        {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 64}
    )
    assert line == "config.json: num_hidden_layers: missing (required to size the model)"
