"""Bad input a twenty-sixth campaign (benchmarks/fuzz_cases26.py) found answered, and valid
input it found refused: model folders of families sized as Llama although their layers differ
(an MLP with no gate, shared experts and dense layers under keys capcliff did not read, towers
under keys it did not know), Cohere 2's and EXAONE 4's sliding windows on all but every fourth
layer read as sliding on every layer, MiniMax-M2 as released refused for keys that say "none",
vLLM's release 0.10.1.1 refused, and another command's output given as a baseline or a spec
answered with a line per key. Each expected figure is worked out by hand beside it.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from test_bad_input import _one_line_error
from test_bad_input_campaign6 import SPEC
from test_bad_input_campaign11 import MINIMAX_M2 as MINIMAX_M2_KEYS

from capcliff.catalog.architecture import architecture_from_config
from capcliff.cli import main
from capcliff.releases import parse_version

# swiss-ai/Apertus-8B-2509 and arcee-ai/AFM-4.5B config.json, sizing keys
APERTUS = {
    "architectures": ["ApertusForCausalLM"], "model_type": "apertus", "hidden_act": "xielu",
    "hidden_size": 4096, "intermediate_size": 21504, "max_position_embeddings": 65536,
    "num_attention_heads": 32, "num_hidden_layers": 32, "num_key_value_heads": 8,
    "tie_word_embeddings": False, "torch_dtype": "bfloat16", "vocab_size": 131072,
}  # fmt: skip
ARCEE = {
    "architectures": ["ArceeForCausalLM"], "model_type": "arcee", "hidden_act": "relu2",
    "hidden_size": 2560, "intermediate_size": 18432, "max_position_embeddings": 65536,
    "num_attention_heads": 20, "num_hidden_layers": 36, "num_key_value_heads": 4, "head_dim": 128,
    "tie_word_embeddings": False, "torch_dtype": "bfloat16", "vocab_size": 128004,
}  # fmt: skip
# inclusionAI/Ling-lite-1.5 config.json, sizing keys
LING = {
    "architectures": ["BailingMoeForCausalLM"], "model_type": "bailing_moe", "hidden_size": 2048,
    "intermediate_size": 5632, "moe_intermediate_size": 1408, "num_experts": 64,
    "num_shared_experts": 2, "num_experts_per_tok": 6, "first_k_dense_replace": 0,
    "num_attention_heads": 16, "num_key_value_heads": 4, "num_hidden_layers": 28,
    "vocab_size": 126464, "max_position_embeddings": 32768, "use_bias": False,
    "tie_word_embeddings": False, "torch_dtype": "bfloat16",
}  # fmt: skip
# MiniMaxAI/MiniMax-M2 config.json (campaign 11's sizing keys) with the two keys that say "none"
# as released
MINIMAX_M2 = {
    **MINIMAX_M2_KEYS, "tie_word_embeddings": False, "attn_type_list": [1] * 62,
    "shared_intermediate_size": 0,
}  # fmt: skip
# CohereLabs/c4ai-command-a-03-2025 config.json, sizing keys
COMMAND_A = {
    "architectures": ["Cohere2ForCausalLM"], "model_type": "cohere2", "hidden_size": 12288,
    "intermediate_size": 36864, "num_attention_heads": 96, "num_key_value_heads": 8,
    "num_hidden_layers": 64, "vocab_size": 256000, "max_position_embeddings": 131072,
    "sliding_window": 4096, "sliding_window_pattern": 4, "torch_dtype": "bfloat16",
    "tie_word_embeddings": True,
}  # fmt: skip
# LGAI-EXAONE/EXAONE-4.0-32B config.json, sizing keys, the pattern as letters
EXAONE4 = {
    "architectures": ["Exaone4ForCausalLM"], "model_type": "exaone4", "hidden_size": 5120,
    "intermediate_size": 27392, "num_attention_heads": 40, "num_key_value_heads": 8,
    "head_dim": 128, "num_hidden_layers": 64, "vocab_size": 102400,
    "max_position_embeddings": 131072, "sliding_window": 4096, "sliding_window_pattern": "LLLG",
    "tie_word_embeddings": False, "torch_dtype": "bfloat16",
}  # fmt: skip
CHUNK = ["--max-num-batched-tokens", "8192"]


def _folder(tmp_path: Path, config: dict[str, object]) -> str:
    (tmp_path / "m").mkdir()
    (tmp_path / "m" / "config.json").write_text(json.dumps(config))
    return str(tmp_path / "m")


def _memory(argv: list[str], capsys: pytest.CaptureFixture[str]) -> dict:
    assert main([*argv, "--format", "json"]) == 0
    return json.loads(capsys.readouterr().out)


@pytest.mark.parametrize("config", [APERTUS, ARCEE, {**APERTUS, "model_type": None}])
def test_a_two_matrix_mlp_is_refused_not_sized_as_gated(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], config: dict[str, object]
) -> None:
    # vLLM apertus.py ApertusMLP and arcee.py ArceeMLP: up_proj and down_proj, no gate_proj;
    # sized as gated, Apertus-8B read 10.87B parameters (published 8.05B: 32 x 2 x 4,096 x
    # 21,504 = 5.64B in its MLPs, not 8.46B)
    line = _one_line_error(["memory", _folder(tmp_path, config), "--gpu", "h100-sxm"], capsys)
    assert "no gate" in line and "model_type" in line


@pytest.mark.parametrize(
    ("changes", "field"),
    [
        ({}, "num_shared_experts"),  # Ling-lite: 2 shared experts of 1,408
        ({"num_shared_experts": 1, "first_k_dense_replace": 1}, "num_shared_experts"),
        ({"num_shared_experts": 0, "first_k_dense_replace": 1}, "first_k_dense_replace"),
    ],
)
def test_shared_experts_and_dense_layers_under_unread_keys_are_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], changes: dict[str, object], field: str
) -> None:
    # vLLM bailing_moe.py: a shared MLP of moe_intermediate_size x num_shared_experts in every
    # MoE layer; sized without it, Ling-lite read 16.32B of its 16.8B (28 x 3 x 2,048 x 2,816 =
    # 484,442,112 elements left out)
    folder = _folder(tmp_path, {**LING, **changes})
    line = _one_line_error(["memory", folder, "--gpu", "h100-sxm"], capsys)
    assert f"{field}:" in line


def test_a_granite_shared_expert_is_refused_and_a_zero_width_one_is_none(tmp_path: Path) -> None:
    granite = {
        "architectures": ["GraniteMoeSharedForCausalLM"], "model_type": "granitemoeshared",
        "hidden_size": 1024, "intermediate_size": 512, "num_local_experts": 32,
        "num_experts_per_tok": 8, "num_attention_heads": 16, "num_hidden_layers": 24,
        "vocab_size": 49155, "tie_word_embeddings": True,
    }  # fmt: skip
    with pytest.raises(Exception, match="shared_intermediate_size"):
        architecture_from_config({**granite, "shared_intermediate_size": 1024}, path="c")
    # 0 says "no shared expert": the same architecture as the key left out
    zero = architecture_from_config({**granite, "shared_intermediate_size": 0}, path="c")
    assert zero == architecture_from_config(granite, path="c")


def test_minimax_m2_as_released_is_sized(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # attn_type_list of 1s (softmax attention in every layer: type 0 marks a linear layer,
    # SGLang configs/minimax; vLLM minimax_m2.py reads no list) and a shared width of 0 were
    # refused as lightning layers and a shared expert. By hand: embedding and head 2 x 200,064 x
    # 3,072 = 1,229,193,216; attention 62 x (2 x 3,072 x 6,144 + 2 x 3,072 x 1,024) =
    # 2,730,491,904; experts 62 x 256 x 3 x 3,072 x 1,536 = 224,680,476,672; router 62 x 3,072 x
    # 256 = 48,758,784; norms 62 x 2 x 3,072 + 3,072 = 384,000
    folder = _folder(tmp_path, MINIMAX_M2)
    data = _memory(["memory", folder, "--gpu", "h200-sxm", "--gpus", "8"], capsys)
    assert data["params_total"] == 228_689_304_576


@pytest.mark.parametrize("types", [[0, 0, 0, 1] * 15 + [0, 1], [True] * 62, [], "1" * 62])
def test_an_attn_type_list_with_linear_layers_or_no_list_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], types: object
) -> None:
    folder = _folder(tmp_path, {**MINIMAX_M2, "attn_type_list": types})
    assert "attn_type_list:" in _one_line_error(["memory", folder, "--gpu", "h200-sxm"], capsys)


@pytest.mark.parametrize(
    "changes",
    [
        {},
        {"sliding_window_pattern": None},  # Cohere2Config's default pattern, 4
        {"layer_types": (["sliding_attention"] * 3 + ["full_attention"]) * 16},
    ],
)
def test_command_a_slides_on_three_layers_of_four(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], changes: dict[str, object]
) -> None:
    # transformers Cohere2Config: layer i slides where (i + 1) % sliding_window_pattern, and
    # vLLM commandr.py slides where layer_types says; every layer slid (3,072 B a token a GPU,
    # 236 requests of 131,072 tokens on 8 H200 instead of 69). tp8: one KV head a GPU, 512 B a
    # layer a token; 16 full layers + 48 holding window + chunk = 4,096 + 8,192 of 131,072:
    # 16 x 512 + 48 x 512 x 12,288 / 131,072 = 8,192 + 2,304 = 10,496
    folder = _folder(tmp_path, {**COMMAND_A, **changes})
    argv = ["memory", folder, "--gpu", "h200-sxm", "--gpus", "8", "--layout", "tp8", *CHUNK]
    assert _memory(argv, capsys)["layouts"][0]["kv_bytes_per_token_per_gpu"] == 10_496


def test_command_r7b_ties_and_holds_one_norm_a_layer(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Cohere2Config ties by default (refused as "no default" before); one input_layernorm a
    # layer (vLLM commandr.py). By hand: embedding 256,000 x 4,096 = 1,048,576,000 (no head);
    # attention 32 x (2 x 4,096^2 + 2 x 4,096 x 1,024) = 1,342,177,280; MLP 32 x 3 x 4,096 x
    # 14,336 = 5,637,144,576; norms 33 x 4,096 = 135,168: 8,028,033,024
    r7b = {
        **COMMAND_A, "hidden_size": 4096, "intermediate_size": 14336, "num_attention_heads": 32,
        "num_hidden_layers": 32, "max_position_embeddings": 8192,
    }  # fmt: skip
    del r7b["tie_word_embeddings"]
    data = _memory(["memory", _folder(tmp_path, r7b), "--gpu", "h100-sxm", "--gpus", "1"], capsys)
    assert data["params_total"] == 8_028_033_024


@pytest.mark.parametrize("pattern", ["LLLG", 4, None])
def test_exaone4_slides_on_three_layers_of_four(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], pattern: object
) -> None:
    # one GPU, 8 KV heads of 128: 4,096 B a layer a token; 16 full + 48 sliding layers holding
    # 12,288 of 131,072 tokens: 16 x 4,096 + 48 x 4,096 x 12,288 / 131,072 = 83,968 (every layer
    # slid: 24,576)
    folder = _folder(tmp_path, {**EXAONE4, "sliding_window_pattern": pattern})
    argv = ["memory", folder, "--gpu", "h200-sxm", "--gpus", "1", *CHUNK]
    assert _memory(argv, capsys)["layouts"][0]["kv_bytes_per_token_per_gpu"] == 83_968


def test_exaone4_letters_other_than_l_and_g_are_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = _folder(tmp_path, {**EXAONE4, "sliding_window_pattern": "LLXG"})
    line = _one_line_error(["memory", folder, "--gpu", "h200-sxm"], capsys)
    assert "sliding_window_pattern" in line


PHI4MM = {
    "architectures": ["Phi4MMForCausalLM"], "model_type": "phi4mm", "hidden_size": 3072,
    "intermediate_size": 8192, "num_attention_heads": 24, "num_key_value_heads": 8,
    "num_hidden_layers": 32, "vocab_size": 200064, "tie_word_embeddings": True,
    "embd_layer": {"embedding_cls": "image_audio"}, "audio_processor": {"name": "cascades"},
}  # fmt: skip
# vLLM nemotron_nas.py builds each layer from its block_configs entry (an FFN of its own width,
# or none; attention or none): Llama-3.3-Nemotron-Super-49B's shape was sized as 80 uniform
# layers, 70.55B parameters
NEMOTRON_NAS = {
    "architectures": ["DeciLMForCausalLM"], "model_type": "nemotron-nas", "hidden_size": 8192,
    "intermediate_size": 28672, "num_attention_heads": 64, "num_key_value_heads": 8,
    "num_hidden_layers": 80, "vocab_size": 128256, "tie_word_embeddings": False,
    "block_configs": [{"attention": {"no_op": False}, "ffn": {"ffn_mult": 2.625}}] * 80,
}  # fmt: skip


@pytest.mark.parametrize(
    ("config", "field"),
    [(PHI4MM, "embd_layer"), (NEMOTRON_NAS, "block_configs:")],
    ids=["phi4-multimodal-towers", "nemotron-nas-layers-of-their-own-widths"],
)
def test_a_family_not_sized_as_llama_is_refused(
    config: dict[str, object], field: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    line = _one_line_error(["memory", _folder(tmp_path, config), "--gpu", "h100-sxm"], capsys)
    assert field in line


@pytest.mark.parametrize(
    ("text", "release"),
    [
        ("0.10.1.1", (0, 10, 1)),  # vLLM on PyPI, 2025-08
        ("v0.10.1.1", (0, 10, 1)),
        ("vllm/vllm-openai:v0.10.1.1", (0, 10, 1)),
        ("vllm-0.10.1.1+cu128", (0, 10, 1)),
        ("0.10.1.1rc1", (0, 10, 1)),
    ],
)
def test_a_fourth_release_part_is_the_third_parts_release(
    text: str, release: tuple[int, int, int]
) -> None:
    assert parse_version(text) == release


@pytest.mark.parametrize("text", ["0.10.1.x", "0.10.1.1x", "0.10.1." + "9" * 50])
def test_a_fourth_part_that_is_no_number_is_refused(text: str) -> None:
    with pytest.raises(Exception, match="not a release"):
        parse_version(text)


def test_a_check_report_as_a_baseline_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # check's --format json report and a sweep's JSON were answered with one line per key of
    # theirs (24 for a sweep's)
    spec = tmp_path / "s.toml"
    spec.write_text(SPEC)
    report = tmp_path / "r.json"
    report.write_text(json.dumps({"baseline_compared": False, "scenarios": [], "summary": {}}))
    line = _one_line_error(["check", str(spec), "--baseline", str(report)], capsys)
    assert "kind:" in line and "--write-baseline" in line


def test_a_json_file_with_no_scenario_as_a_spec_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "sweep.json"
    path.write_text(json.dumps({"schema_version": 2, "model": "x", "points": [], "cliff": {}}))
    line = _one_line_error(["check", str(path)], capsys)
    assert "scenario: missing" in line


def test_a_misspelt_scenario_key_is_still_named(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "s.toml"
    path.write_text("[[scenarios]]\nname = 's'\n")
    assert main(["check", str(path)]) == 2
    assert "did you mean scenario" in capsys.readouterr().err
