"""Bad input that a twenty-second campaign (benchmarks/fuzz_cases22.py) found: config.json shapes
real checkpoints ship (a multimodal wrapper over another family, transformers v5's per-layer
`rope_parameters`, a `layer_types` list beside a 0-token window), strings a spec or a path may
hold (U+FFFE in a scenario name, a folder name whose bytes are not UTF-8, a 5,000-digit engine
release) and the check report's percentages at the edges. Each expected figure is worked out by
hand from the config, in the comment beside it.
"""

from __future__ import annotations

import json
import os
import xml.dom.minidom
from pathlib import Path

import pytest
from test_bad_input import ROOT, _one_line_error
from test_bad_input_campaign4 import SPEC

from capcliff.catalog.architecture import architecture_from_config
from capcliff.check.output import format_value
from capcliff.cli import main

# Gemma 2 2B's text model as google/gemma-2-2b and google/paligemma2-3b-pt-224 ship it
GEMMA2_TEXT = {
    "model_type": "gemma2", "head_dim": 256, "hidden_size": 2304, "intermediate_size": 9216,
    "num_hidden_layers": 26, "num_attention_heads": 8, "num_key_value_heads": 4,
    "sliding_window": 4096, "vocab_size": 257216, "max_position_embeddings": 8192,
}  # fmt: skip
PALIGEMMA2 = {
    "architectures": ["PaliGemmaForConditionalGeneration"], "model_type": "paligemma",
    "text_config": GEMMA2_TEXT,
    "vision_config": {
        "model_type": "siglip_vision_model", "hidden_size": 1152, "intermediate_size": 4304,
        "num_hidden_layers": 27, "num_attention_heads": 16, "patch_size": 14, "image_size": 224,
        "vision_use_head": False,
    },
}  # fmt: skip
# a Qwen2 7B text model (LLaVA-OneVision's) with its window off; the window is set below the
# context so that a layer read as sliding would show
QWEN2_TEXT = {
    "model_type": "qwen2", "hidden_size": 3584, "intermediate_size": 18944,
    "num_hidden_layers": 28, "num_attention_heads": 28, "num_key_value_heads": 4,
    "max_position_embeddings": 32768, "sliding_window": 4096, "use_sliding_window": False,
    "vocab_size": 152128, "tie_word_embeddings": False,
}  # fmt: skip
ONEVISION = {
    "architectures": ["LlavaOnevisionForConditionalGeneration"],
    "model_type": "llava_onevision",
    "text_config": QWEN2_TEXT,
    "vision_config": {**PALIGEMMA2["vision_config"], "image_size": 384, "num_hidden_layers": 26},
}


def _llama() -> dict[str, object]:
    import tomllib

    card = tomllib.loads((ROOT / "model_cards" / "llama-3.1-8b.toml").read_text())
    return dict(card["config"])


def _folder(tmp_path: Path, config: dict[str, object], name: str = "m") -> Path:
    folder = tmp_path / name
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps(config))
    return folder


def _memory_json(folder: Path | str, capsys: pytest.CaptureFixture[str], *extra: str) -> dict:
    code = main(["memory", str(folder), "--gpu", "h200-sxm", "--gpus", "1", "--format", "json",
                 *extra])  # fmt: skip
    out, err = capsys.readouterr()
    assert code == 0, err
    return json.loads(out)


def test_a_wrappers_text_model_keeps_its_familys_windows() -> None:
    # transformers Gemma2Config: layer i slides when (i + 1) % 2 (the even layers)
    arch = architecture_from_config(PALIGEMMA2, path="config.json")
    assert arch.sliding_window_per_layer == (4096, None) * 13
    assert arch.norms_per_layer == 4  # Gemma2DecoderLayer: four RMSNorms
    qwen = architecture_from_config(ONEVISION, path="config.json")
    assert qwen.sliding_window_per_layer == (None,) * 28  # use_sliding_window: false
    assert qwen.qkv_bias  # Qwen2Attention: q, k, v biased


def test_a_wrappers_text_model_kv_by_hand(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # 4 KV heads x 256 x 2 (K, V) x 2 B = 4,096 B a layer and token. At 65,536 tokens with
    # chunks of 2,048: 13 full layers hold all of them, 13 sliding ones 4,096 + 2,048:
    # 4,096 x (13 + 13 x 6,144 / 65,536) = 58,240 B a token (all 26 sliding: 9,984)
    data = _memory_json(
        _folder(tmp_path, PALIGEMMA2), capsys, "--max-model-len", "65536",
        "--allow-long-max-model-len", "--max-num-batched-tokens", "2048",
    )  # fmt: skip
    assert data["layouts"][0]["kv_bytes_per_token_per_gpu"] == 58_240
    # every layer full: 28 x 4 x 128 x 2 x 2 B = 57,344 (21,504 when read as sliding)
    data = _memory_json(_folder(tmp_path, ONEVISION, "o"), capsys, "--max-model-len", "32768")
    assert data["layouts"][0]["kv_bytes_per_token_per_gpu"] == 57_344


@pytest.mark.parametrize("family", [7, " "])
def test_a_text_family_that_is_no_name_is_refused(
    tmp_path: Path, family: object, capsys: pytest.CaptureFixture[str]
) -> None:
    config = {**ONEVISION, "text_config": {**QWEN2_TEXT, "model_type": family}}
    line = _one_line_error(["memory", str(_folder(tmp_path, config)), "--gpus", "1"], capsys)
    assert "text_config.model_type" in line, line


YARN4 = {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 32768}


def test_per_layer_type_rope_parameters_scale_the_context() -> None:
    # transformers v5 writes one table per layer type; YaRN x4 from 32,768 positions: 131,072
    config = {**_llama(), "max_position_embeddings": 40960, "rope_scaling": None}
    config["rope_parameters"] = {"full_attention": YARN4, "sliding_attention": YARN4}
    assert architecture_from_config(config, path="c").max_position_embeddings == 131_072
    config["rope_parameters"] = {"rope_type": "default", "rope_theta": 1e6}
    assert architecture_from_config(config, path="c").max_position_embeddings == 40_960


def test_per_layer_type_rope_parameters_that_disagree_are_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # full layers: 32,768 x 4 = 131,072 tokens; sliding layers unscaled: 40,960
    config = {**_llama(), "max_position_embeddings": 40960, "rope_scaling": None}
    sliding = {"rope_type": "default"}
    config["rope_parameters"] = {"full_attention": YARN4, "sliding_attention": sliding}
    line = _one_line_error(["memory", str(_folder(tmp_path, config)), "--gpus", "1"], capsys)
    assert "rope_parameters" in line and "(40,960, 131,072 tokens)" in line, line


SLIDING = "sliding_attention"


@pytest.mark.parametrize("types", [[SLIDING] * 32, [SLIDING, "full_attention"] * 16])
def test_sliding_layers_of_a_zero_token_window_are_refused(
    tmp_path: Path, types: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    config = {**_llama(), "layer_types": types, "sliding_window": 0}
    line = _one_line_error(["memory", str(_folder(tmp_path, config)), "--gpus", "1"], capsys)
    assert "sliding_window: 0 while layer_types has sliding layers" in line, line


def test_full_layers_beside_a_zero_window_are_answered() -> None:
    config = {**_llama(), "layer_types": ["full_attention"] * 32, "sliding_window": 0}
    arch = architecture_from_config(config, path="c")
    assert arch.sliding_window_per_layer == (None,) * 32


def _spec_named(name: str) -> str:
    """campaign 4's one-scenario spec, its scenario named `name` (a TOML string as written)."""
    return SPEC.replace('name = "s"', f"name = {name}")


@pytest.mark.parametrize("name", ['"a\\uFFFEb"', '"a\\uFFFFb"', '"\\u200B"'])
def test_a_scenario_name_no_report_can_hold_is_refused(
    tmp_path: Path, name: str, capsys: pytest.CaptureFixture[str]
) -> None:
    spec = tmp_path / "s.toml"
    spec.write_text(_spec_named(name))
    line = _one_line_error(["check", str(spec), "--junit", str(tmp_path / "r.xml")], capsys)
    assert "scenario[0].name" in line, line
    assert not (tmp_path / "r.xml").exists()


def test_a_joined_emoji_name_makes_well_formed_junit(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    spec = tmp_path / "s.toml"
    family = "\U0001f468\u200d\U0001f469\u200d\U0001f467"  # ZWJ sequence: U+200D is a Cf
    spec.write_text(_spec_named(json.dumps(family, ensure_ascii=False)))
    assert main(["check", str(spec), "--junit", str(tmp_path / "r.xml")]) == 0, capsys
    suite = xml.dom.minidom.parse(str(tmp_path / "r.xml")).getElementsByTagName("testsuite")[0]
    assert suite.getAttribute("name") == family


def test_a_folder_name_of_non_utf8_bytes_is_answered_in_json(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = os.fsdecode(bytes(tmp_path) + b"/\xffm")  # Python holds 0xFF as U+DCFF
    Path(folder).mkdir()
    (Path(folder) / "config.json").write_text(json.dumps(_llama()))
    data = _memory_json(folder, capsys)
    assert data["model"] == "\\xffm"  # the byte written as Python prints it
    assert data["params_total"] == 8_030_261_248  # Llama 3.1 8B, as from the catalog


@pytest.mark.parametrize("version", ["9" * 5000, "9" * 5000 + ".1", "0.14.9999999999"])
def test_an_engine_release_of_runaway_digits_is_one_short_line(
    version: str, capsys: pytest.CaptureFixture[str]
) -> None:
    args = ["sweep", "llama-3.1-8b", "--gpus", "1", "--isl", "10", "--osl", "10",
            "--num-requests", "4", "--concurrency", "2", "--engine-version", version]  # fmt: skip
    line = _one_line_error(args, capsys)
    assert "is not a release like 0.4.3" in line and len(line) < 160, line


@pytest.mark.parametrize(
    ("fraction", "text"),
    [
        (0.999999, "99.9999%"),  # a bound: 99.9999 %, not 100.0 %
        (0.99997, "99.997%"),
        (3e-5, "0.003%"),  # a margin of 0.003 percentage points, not -0.0 %
        (1e-9, "1e-07%"),  # past six decimals: 1e-9 x 100 = 1e-7 %
        (0.15, "15.0%"),
        (1.0, "100.0%"),
        (-0.0, "0.0%"),
    ],
)
def test_a_fraction_near_its_ends_prints_what_it_is(fraction: float, text: str) -> None:
    assert format_value(fraction, "fraction") == text


@pytest.mark.parametrize(
    ("flag", "value"),
    [
        ("--offload", "cpu:" + "9" * 100_000),
        ("--spec-acceptance", "0.5," * 20_000),
        ("--policy", "x" * 100_000),
        ("--workload", "x" * 100_000),
        ("--speculative", "eagle:" + "9" * 5000),
    ],
)
def test_an_error_echoes_at_most_a_thousand_characters(
    flag: str, value: str, capsys: pytest.CaptureFixture[str]
) -> None:
    args = ["sweep", "llama-3.1-8b", "--gpus", "1", "--isl", "10", "--osl", "10",
            "--num-requests", "4", "--concurrency", "2", flag, value]  # fmt: skip
    line = _one_line_error(args, capsys)
    # "error: " and the clipped message: 2 x 460 kept + the note of what was cut
    assert len(line) <= len("error: ") + 1000, len(line)
    assert line.startswith(f"error: {flag}") or line.startswith("error: isl: preset"), line[:80]
    if flag != "--speculative":  # the speculative K is quoted to 60 characters at its source
        assert "characters cut ...]" in line, line[:80]
