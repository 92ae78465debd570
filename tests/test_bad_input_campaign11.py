"""Bad input that an eleventh campaign (benchmarks/fuzz_cases11.py) found, and the real model
configs it passes: each sized within a stated tolerance of a published or hand-worked count, or
refused with one line naming the field. The configs below hold only the fields that size each
model, copied from the published config.json named beside it.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from test_bad_input import _one_line_error

from capcliff.catalog.architecture import architecture_from_config
from capcliff.cli import main
from capcliff.errors import CatalogError
from capcliff.memory.params import Component, param_count

# zai-org/GLM-4.5 config.json
GLM_45 = {
    "architectures": ["Glm4MoeForCausalLM"], "model_type": "glm4_moe", "attention_bias": True,
    "first_k_dense_replace": 3, "head_dim": 128, "hidden_size": 5120, "intermediate_size": 12288,
    "max_position_embeddings": 131072, "moe_intermediate_size": 1536, "n_routed_experts": 160,
    "n_shared_experts": 1, "num_attention_heads": 96, "num_experts_per_tok": 8,
    "num_hidden_layers": 92, "num_key_value_heads": 8, "num_nextn_predict_layers": 1,
    "tie_word_embeddings": False, "torch_dtype": "bfloat16", "vocab_size": 151552,
}  # fmt: skip
# google/gemma-3-27b-it config.json: its text_config sets neither vocab_size nor
# max_position_embeddings (transformers' Gemma3TextConfig defaults, 262,208 and 131,072, apply)
GEMMA_3_27B = {
    "architectures": ["Gemma3ForConditionalGeneration"], "model_type": "gemma3",
    "torch_dtype": "bfloat16",
    "text_config": {
        "model_type": "gemma3_text", "head_dim": 128, "hidden_size": 5376,
        "intermediate_size": 21504, "num_attention_heads": 32, "num_hidden_layers": 62,
        "num_key_value_heads": 16, "sliding_window": 1024,
    },
    "vision_config": {
        "model_type": "siglip_vision_model", "hidden_size": 1152, "image_size": 896,
        "intermediate_size": 4304, "num_attention_heads": 16, "num_hidden_layers": 27,
        "patch_size": 14, "vision_use_head": False,
    },
}  # fmt: skip
# mistralai/Mistral-Small-3.1-24B-Instruct-2503 config.json: no tie_word_embeddings anywhere
MISTRAL_SMALL_31 = {
    "architectures": ["Mistral3ForConditionalGeneration"], "model_type": "mistral3",
    "torch_dtype": "bfloat16", "multimodal_projector_bias": False, "spatial_merge_size": 2,
    "text_config": {
        "model_type": "mistral", "head_dim": 128, "hidden_size": 5120, "intermediate_size": 32768,
        "max_position_embeddings": 131072, "num_attention_heads": 32, "num_hidden_layers": 40,
        "num_key_value_heads": 8, "sliding_window": None, "vocab_size": 131072,
    },
    "vision_config": {
        "model_type": "pixtral", "hidden_size": 1024, "image_size": 1540,
        "intermediate_size": 4096, "num_attention_heads": 16, "num_hidden_layers": 24,
        "patch_size": 14,
    },
}  # fmt: skip
# MiniMaxAI/MiniMax-M2 config.json
MINIMAX_M2 = {
    "architectures": ["MiniMaxM2ForCausalLM"], "model_type": "minimax_m2", "head_dim": 128,
    "hidden_size": 3072, "intermediate_size": 1536, "max_position_embeddings": 196608,
    "num_attention_heads": 48, "num_experts_per_tok": 8, "num_hidden_layers": 62,
    "num_key_value_heads": 8, "num_local_experts": 256, "vocab_size": 200064,
    "torch_dtype": "bfloat16",
}  # fmt: skip
# microsoft/phi-4 config.json, less its tie_word_embeddings (Phi3Config's default is False)
PHI_4 = {
    "architectures": ["Phi3ForCausalLM"], "model_type": "phi3", "hidden_size": 5120,
    "intermediate_size": 17920, "max_position_embeddings": 16384, "num_attention_heads": 40,
    "num_hidden_layers": 40, "num_key_value_heads": 10, "torch_dtype": "bfloat16",
    "vocab_size": 100352,
}  # fmt: skip


def _folder(tmp_path: Path, config: dict[str, object]) -> str:
    (tmp_path / "config.json").write_text(json.dumps(config))
    return str(tmp_path)


# GLM-4.5 (and DeepSeek-V3.2) keep DeepSeek's keys under their own model_type: the MoE layout
# was read by the Qwen rule, so first_k_dense_replace and n_shared_experts were ignored and the
# three dense layers were sized as MoE layers (361.5B, 2.6 % over).


def test_glm_4_5_keeps_its_first_three_layers_dense() -> None:
    moe = architecture_from_config(GLM_45, path="glm").moe
    assert moe is not None
    assert moe.is_moe_layer[:4] == (False, False, False, True)
    assert sum(moe.is_moe_layer) == 89
    assert moe.shared_intermediate_size == 1536  # n_shared_experts 1 x moe_intermediate_size


def test_glm_4_5_is_sized_within_one_percent_of_its_published_count() -> None:
    # attention 92 x (5120x12288 + 2x5120x1024 + 12288x5120) = 92 x 136,314,880 = 12,540,968,960
    # dense MLP 3 x 3x5120x12288 = 566,231,040
    # MoE 89 x (160x3x5120x1536 + 3x5120x1536 + 160x5120) = 89 x 3,799,285,760 = 338,136,432,640
    # embedding + lm_head 2 x 151552x5120 = 1,551,892,480; sum 352,795,525,120 (norms, biases
    # and the router's correction bias add under 0.01 %)
    total = param_count(architecture_from_config(GLM_45, path="glm")).total
    assert total == pytest.approx(352_795_525_120, rel=1e-4)
    # GLM-4.5's model card: 355 billion total parameters (its MTP layer included)
    assert total == pytest.approx(355e9, rel=0.01)


# Gemma 3 27B as released: the text_config without vocab_size was refused, and a vision tower
# would have been left out unsaid.


def test_gemma_3_27b_as_released_matches_its_published_count_exactly() -> None:
    count = param_count(architecture_from_config(GEMMA_3_27B, path="gemma"))
    # keras-hub gemma3_presets.py, gemma3_instruct_27b: 27,432,062,576 with a 262,144-row text
    # vocabulary; the checkpoint's 262,208 rows add 64 x 5376 = 344,064
    assert count.total == 27_432_062_576 + 344_064


def test_gemma_3_vision_tower_is_counted_tensor_by_tensor() -> None:
    # SigLIP: patch conv 3x14x14x1152 + 1152 = 678,528; positions (896/14)^2 x 1152 = 4,718,592;
    # 27 layers x (4 x (1152^2 + 1152) + 2 x 1152x4304 + 4304 + 1152 + 4 x 1152) = 27 x
    # 15,239,504 = 411,466,608; post LayerNorm 2,304; projector 1152x5376 + 1152 = 6,194,304
    count = param_count(architecture_from_config(GEMMA_3_27B, path="gemma"))
    assert count.by_component[Component.VISION] == 423_060_336


def test_mistral_small_3_1_is_sized_with_its_pixtral_tower() -> None:
    # text: 2 x 131072x5120 = 1,342,177,280; 40 x (5120x4096 x 2 + 2 x 5120x1024 +
    # 3 x 5120x32768 + 2 x 5120) = 40 x 555,755,520 = 22,230,220,800; final norm 5,120
    # Pixtral: conv 3x14x14x1024 = 602,112; ln_pre 1,024; 24 x (2x1024 + 4x1024^2 +
    # 3x1024x4096) = 402,702,336; projector: norm 1,024, merger 4096x1024 = 4,194,304,
    # 1024x5120 = 5,242,880, 5120x5120 = 26,214,400
    text = 1_342_177_280 + 22_230_220_800 + 5_120
    vision = 602_112 + 1_024 + 402_702_336 + 1_024 + 4_194_304 + 5_242_880 + 26_214_400
    assert param_count(architecture_from_config(MISTRAL_SMALL_31, path="m")).total == text + vision


def test_a_vision_tower_is_not_read_for_each_step(tmp_path: Path) -> None:
    # the tower's weights take memory on the first stage; a decode step reads only the text model
    from capcliff.catalog.layout import Layout
    from capcliff.memory.weights import WeightScheme
    from capcliff.perf.stage_cost import stage_cost

    with_tower = architecture_from_config(GEMMA_3_27B, path="g")
    without = architecture_from_config({**GEMMA_3_27B, "vision_config": None}, path="g")
    cost = [stage_cost(a, Layout(), WeightScheme.as_shipped(a), 0) for a in (with_tower, without)]
    assert cost[0] == cost[1]


# A family whose tie default capcliff did not know was refused with "must be true or false, got
# None" (Mistral Small 3.1 and Phi-4 as released).


@pytest.mark.parametrize("config", [MISTRAL_SMALL_31, PHI_4], ids=["mistral-small-3.1", "phi-4"])
def test_a_config_without_tie_word_embeddings_takes_its_family_default(
    tmp_path: Path, config: dict[str, object], capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["memory", _folder(tmp_path, config), "--gpus", "1", "--gpu", "h200-sxm"]) in (0, 1)
    assert "Traceback" not in capsys.readouterr().err


def test_an_unknown_family_without_tie_word_embeddings_is_asked_for_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = {**PHI_4, "architectures": ["Foo"], "model_type": "foo"}
    line = _one_line_error(["memory", _folder(tmp_path, config), "--gpus", "1"], capsys)
    assert line.endswith("tie_word_embeddings: missing, and capcliff knows no default for this "
                         "family; set true or false")  # fmt: skip


def test_phi_4_and_minimax_m2_are_sized_within_one_percent_of_their_published_counts() -> None:
    # Phi-4 technical report: 14B (the checkpoint's 14.66B); MiniMax-M2 model card: 230B total.
    # MiniMax-M2 by hand: 62 x (2 x 3072x6144 + 2 x 3072x1024 + 256 x 3x3072x1536 + 256x3072)
    # + 2 x 200064x3072 = 228,688,920,576
    phi = param_count(architecture_from_config({**PHI_4, "tie_word_embeddings": False}, path="p"))
    assert phi.total == pytest.approx(14.66e9, rel=0.01)
    minimax = param_count(architecture_from_config(MINIMAX_M2, path="m")).total
    assert minimax == pytest.approx(228_688_920_576, rel=1e-4)
    assert minimax == pytest.approx(230e9, rel=0.01)


# Layers capcliff does not size were sized as full attention unsaid: Qwen3-Next's 36 linear-
# attention layers as 48 full ones (4x its KV), Nemotron-H's and Jamba's Mamba layers as
# attention, Llama 4 without its shared expert (101.7B of 109B), DeepSeek-V3.2 without its
# indexer's cache; a Qwen2.5-VL vision tower was left out.

REFUSED = {
    "qwen3-next": ({"full_attention_interval": 4}, "full_attention_interval"),
    "nemotron-h": ({"hybrid_override_pattern": "M-M*"}, "hybrid_override_pattern"),
    "jamba": ({"attn_layer_period": 8, "attn_layer_offset": 4}, "attn_layer_period"),
    "mamba-2": ({"ssm_state_size": 128}, "ssm_state_size"),
    "deepseek-v3.2": ({"index_n_heads": 64, "index_head_dim": 128}, "index_n_heads"),
    "llama-4": ({"intermediate_size_mlp": 16384}, "intermediate_size_mlp"),
    "chunked-attention": ({"attention_chunk_size": 8192}, "attention_chunk_size"),
    "qwen2.5-vl": ({"vision_config": {"depth": 32}}, "vision_config.model_type"),
    "minimax-text-01": ({"attn_type_list": [0, 1]}, "attn_type_list"),
    "ernie-4.5-moe": ({"moe_num_experts": 64, "moe_k": 8}, "moe_num_experts"),
    "gemma-3n-audio": ({"audio_config": {"hidden_size": 1536}}, "audio_config"),
}  # fmt: skip


@pytest.mark.parametrize("name", list(REFUSED))
def test_a_layer_kind_capcliff_does_not_size_is_refused_by_its_field(
    name: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    extra, field = REFUSED[name]
    config = {**PHI_4, "tie_word_embeddings": False, **extra}
    line = _one_line_error(["memory", _folder(tmp_path, config), "--gpus", "1"], capsys)
    assert f"config.json: {field}: " in line
    assert "capcliff does not size" in line


def test_a_multimodal_configs_text_fields_are_checked_under_text_config(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # meta-llama/Llama-4-Scout-17B-16E-Instruct keeps its layer fields in text_config
    config = {
        "architectures": ["Llama4ForConditionalGeneration"],
        "model_type": "llama4",
        "text_config": {**PHI_4, "interleave_moe_layer_step": 1},
    }
    line = _one_line_error(["memory", _folder(tmp_path, config), "--gpus", "1"], capsys)
    assert "config.json: text_config.interleave_moe_layer_step: " in line


# A FIFO given as an input file (no program writing to it) blocked the run forever in open(2):
# `--calibration`, the check spec, the calibrate input and a `hist:` file.


@pytest.mark.parametrize(
    "args",
    [
        ["check", "{p}"],
        ["calibrate", "{p}", "--model", "llama-3.1-8b", "--gpu", "h100-sxm"],
        ["memory", "llama-3.1-8b", "--gpus", "1", "--calibration", "{p}"],
    ],
    ids=["check-spec", "calibrate-input", "memory-calibration"],
)
def test_a_fifo_nobody_writes_to_is_refused_not_waited_on(
    args: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import os
    import threading

    fifo = tmp_path / "f"
    os.mkfifo(fifo)
    done: list[int] = []
    argv = [a.replace("{p}", str(fifo)) for a in args]
    worker = threading.Thread(target=lambda: done.append(main(argv)), daemon=True)
    worker.start()
    worker.join(60)
    if not done:  # unblock the thread's open(2) so that the test run can go on
        os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)
    assert done == [2]
    err = capsys.readouterr().err
    assert err.startswith("error: ") and err.count("\n") == 1, err


# `sweep --layout tp1,tp1` ran and printed the same layout twice (plan reads a layout list once
# each); a list of 5,000 concurrencies was refused with all 24 KB of it echoed on the line.

SWEEP = ["sweep", "llama-3.1-8b", "--isl", "100", "--osl", "100", "--num-requests", "20"]


def test_sweep_runs_a_layout_named_twice_once(capsys: pytest.CaptureFixture[str]) -> None:
    assert main([*SWEEP, "--concurrency", "4", "--layout", "tp1,tp1", "--format", "json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert [s["layout"] for s in result["series"]] == ["tp1"]


def test_a_refused_list_is_echoed_in_part(capsys: pytest.CaptureFixture[str]) -> None:
    many = ",".join(str(i) for i in range(1, 5001))
    line = _one_line_error([*SWEEP, "--concurrency", many], capsys)
    assert len(line) < 400
    assert line.startswith("error: concurrency: cannot read '1,2,3,")


# An output path holding a NUL byte escaped as a traceback (os.stat: "embedded null byte").


@pytest.mark.parametrize("flag", ["--junit", "--markdown", "--write-baseline"])
def test_an_output_path_with_a_nul_byte_is_refused(
    flag: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    spec = tmp_path / "s.toml"
    spec.write_text("")  # never read: outputs are checked first
    line = _one_line_error(["check", str(spec), flag, "o\0.xml"], capsys)
    assert line == f"error: {flag}: 'o\\x00.xml' holds a NUL byte; give a file name"


def test_zero_experts_is_a_dense_model() -> None:
    # ibm-granite/granite-4.0-h-micro config.json: num_local_experts 0, num_experts_per_tok 0, a
    # plain MLP per layer (GraniteMoeHybrid); it was refused ("must be >= 1, got 0")
    config = {**PHI_4, "tie_word_embeddings": False, "num_local_experts": 0}
    assert architecture_from_config({**config, "num_experts_per_tok": 0}, path="g").moe is None


def test_zero_experts_routing_some_per_token_is_refused() -> None:
    config = {**PHI_4, "tie_word_embeddings": False, "num_experts": 0, "num_experts_per_tok": 8}
    with pytest.raises(CatalogError, match="num_experts: must be >= 1, got 0"):
        architecture_from_config(config, path="q")


# A blank model or --calibration was read as the current folder: "config.json: (file): no such
# config.json" and ".: (file): a directory, not a file", naming no field.


@pytest.mark.parametrize(
    ("args", "start"),
    [
        (["memory", " ", "--gpus", "1"], "error: model: blank;"),
        (
            ["memory", "llama-3.1-8b", "--gpus", "1", "--calibration", ""],
            "error: --calibration: blank;",
        ),
    ],
    ids=["model", "calibration"],
)
def test_a_blank_path_is_refused_naming_its_field(
    args: list[str], start: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert _one_line_error(args, capsys).startswith(start)


def _vision(config: dict[str, object], **changes: object) -> int:
    vision = {**config["vision_config"], **changes}  # type: ignore[dict-item]
    return architecture_from_config({**config, "vision_config": vision}, path="v").vision_params


def test_a_siglip_tower_without_vision_use_head_false_carries_its_pooling_head() -> None:
    # SiglipVisionTransformer builds the head unless vision_use_head is false: probe 1152,
    # attention 4 x 1152^2 + 4 x 1152 = 5,313,024, LayerNorm 2,304, MLP 2 x 1152x4304 + 4304 +
    # 1152 = 9,921,872: 15,238,352 in all
    with_head = _vision(GEMMA_3_27B, vision_use_head=True)
    assert with_head - _vision(GEMMA_3_27B) == 15_238_352


def test_a_biased_mistral_3_projector_adds_its_two_biases() -> None:
    config = {**MISTRAL_SMALL_31, "multimodal_projector_bias": True}
    biased = architecture_from_config(config, path="m").vision_params
    assert biased - _vision(MISTRAL_SMALL_31) == 2 * 5120
