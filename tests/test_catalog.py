"""Catalog files validate; malformed files fail with `path: field: message`."""

from __future__ import annotations

import json
import struct
from fractions import Fraction
from pathlib import Path

import pytest

from capcliff.catalog.catalogs import (
    catalog_dir,
    get_hardware,
    get_model,
    hardware_catalog,
    load_entry,
    load_folder,
    model_catalog,
    model_from_card,
)
from capcliff.catalog.quantization import (
    FP8_CHANNEL,
    MXFP4,
    NVFP4,
    WeightFormat,
    fp8_block,
    int_grouped,
    module_matches,
    quantization_from_config,
)
from capcliff.catalog.specs import HardwareSpec, ModelCard
from capcliff.errors import CatalogError, UnknownIdError

REQUIRED_MODELS = {
    "llama-3.1-8b", "llama-3.1-70b", "llama-3.1-405b", "deepseek-r1-distill-llama-8b",
    "deepseek-r1-distill-qwen-14b", "deepseek-r1-distill-qwen-32b", "deepseek-r1-distill-llama-70b",
    "deepseek-r1", "qwen3-8b", "qwen3-32b", "qwen3-30b-a3b", "qwen3-235b-a22b", "mixtral-8x7b",
    "gpt-oss-20b", "gpt-oss-120b", "gemma-3-27b",
    # checkpoints: a catalog id may name a served checkpoint, not only an architecture
    "deepseek-r1-0528-fp4", "llama-3.1-405b-fp8", "llama-3.3-70b-fp4", "llama-3.3-70b-fp8",
    "qwen3-235b-a22b-fp8",
}  # fmt: skip
REQUIRED_HARDWARE = {"h100-sxm", "h200-sxm", "b200", "b300", "gb200", "mi300x", "mi325x", "mi355x"}


def test_catalog_holds_every_required_model() -> None:
    assert set(model_catalog()) >= REQUIRED_MODELS


def test_catalog_holds_every_required_gpu() -> None:
    assert set(hardware_catalog()) >= REQUIRED_HARDWARE


@pytest.mark.parametrize("model_id", sorted(REQUIRED_MODELS))
def test_every_model_card_config_normalises(model_id: str) -> None:
    card = model_catalog()[model_id]
    model = model_from_card(card, path=model_id)
    assert model.arch.num_layers > 0
    assert card.source.strip()


@pytest.mark.parametrize("gpu_id", sorted(REQUIRED_HARDWARE))
def test_every_gpu_states_its_scale_out_fabric(gpu_id: str) -> None:
    spec = hardware_catalog()[gpu_id]
    assert spec.scaleout_fabric
    assert spec.scaleout_bw_gb_s_per_gpu is not None
    assert spec.scaleout_latency_us is not None
    assert spec.scaleup_latency_us is not None


def test_h200_scale_out_is_one_400_gbit_nic_per_gpu() -> None:
    # 400 Gb/s / 8 bits per byte = 50 GB/s one way (DGX H200: eight ConnectX-7 at 400 Gb/s)
    assert get_hardware("h200-sxm").scaleout_bw_gb_s_per_gpu == 50


def test_h200_driver_memory_is_143771_mib() -> None:
    assert get_hardware("h200-sxm").hbm_driver_bytes == 143_771 * 2**20


def _write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def _hardware_text(**overrides: object) -> str:
    base = (catalog_dir("hardware") / "h200-sxm.toml").read_text()
    for key, value in overrides.items():
        base = "\n".join(
            line if not line.startswith(f"{key} =") else f"{key} = {value}"
            for line in base.splitlines()
        )
    return base


def test_hardware_figure_without_a_source_is_rejected(tmp_path: Path) -> None:
    lines = _hardware_text().splitlines()
    text = "\n".join(line for line in lines if not line.startswith('tdp_w = "'))
    path = _write(tmp_path, "h200-sxm.toml", text)
    with pytest.raises(CatalogError, match=r"h200-sxm\.toml: \(file\): .*no source for tdp_w"):
        load_entry(path, HardwareSpec)


def test_negative_bandwidth_names_the_field(tmp_path: Path) -> None:
    path = _write(tmp_path, "h200-sxm.toml", _hardware_text(hbm_bandwidth_tb_s=-1))
    with pytest.raises(CatalogError, match=r"h200-sxm\.toml: hbm_bandwidth_tb_s: "):
        load_entry(path, HardwareSpec)


def test_unknown_key_is_rejected_with_its_name(tmp_path: Path) -> None:
    path = _write(tmp_path, "h200-sxm.toml", "hbm_speed = 3\n" + _hardware_text())
    with pytest.raises(CatalogError, match=r"h200-sxm\.toml: hbm_speed: Extra inputs"):
        load_entry(path, HardwareSpec)


def test_id_must_match_file_name(tmp_path: Path) -> None:
    path = _write(tmp_path, "h201.toml", _hardware_text())
    with pytest.raises(CatalogError, match=r"h201\.toml: id: 'h200-sxm' must equal"):
        load_entry(path, HardwareSpec)


def test_toml_syntax_error_names_the_file(tmp_path: Path) -> None:
    path = _write(tmp_path, "bad.toml", "id = \n")
    with pytest.raises(CatalogError, match=r"bad\.toml: \(toml\): "):
        load_entry(path, HardwareSpec)


def test_duplicate_ids_are_errors(tmp_path: Path) -> None:
    _write(tmp_path, "h200-sxm.toml", _hardware_text())
    _write(tmp_path, "H200-SXM.toml", _hardware_text().replace('"h200-sxm"', '"H200-SXM"'))
    with pytest.raises(CatalogError, match="id: duplicate of"):
        load_folder(tmp_path, HardwareSpec)


def test_model_card_with_bad_config_field_names_its_path(tmp_path: Path) -> None:
    text = (catalog_dir("model_cards") / "llama-3.1-8b.toml").read_text()
    path = _write(
        tmp_path, "llama-3.1-8b.toml", text.replace("hidden_size = 4096", 'hidden_size = "x"')
    )
    card = load_entry(path, ModelCard)
    with pytest.raises(CatalogError, match=r"config: hidden_size: must be an integer"):
        model_from_card(card, path=str(path))


def test_unknown_model_id_suggests_close_ids() -> None:
    with pytest.raises(UnknownIdError, match=r"did you mean llama-3\.1-8b"):
        get_model("llama-3.1-8")


def test_unknown_gpu_suggests_close_ids() -> None:
    with pytest.raises(UnknownIdError, match="did you mean h200-sxm"):
        get_hardware("h200")


def _llama_config() -> dict[str, object]:
    return dict(model_catalog()["llama-3.1-8b"].config)


def test_config_json_path_is_a_model(tmp_path: Path) -> None:
    path = tmp_path / "config.json"
    path.write_text(json.dumps(_llama_config()))
    assert get_model(str(path)).arch.num_kv_heads == 8


def test_config_json_missing_field_names_it(tmp_path: Path) -> None:
    config = _llama_config()
    del config["num_hidden_layers"]
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config))
    with pytest.raises(CatalogError, match=r"config\.json: num_hidden_layers: missing"):
        get_model(str(path))


def test_contradictory_heads_are_rejected(tmp_path: Path) -> None:
    config = _llama_config() | {"num_key_value_heads": 5}
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config))
    with pytest.raises(CatalogError, match="num_key_value_heads: 5 does not divide 32 heads"):
        get_model(str(path))


def _safetensors(path: Path, tensors: dict[str, tuple[str, list[int], int]]) -> None:
    header: dict[str, object] = {"__metadata__": {"format": "pt"}}
    offset = 0
    for name, (dtype, shape, nbytes) in tensors.items():
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [offset, offset + nbytes]}
        offset += nbytes
    blob = json.dumps(header).encode()
    path.write_bytes(struct.pack("<Q", len(blob)) + blob + b"\0" * offset)


def test_model_directory_reads_exact_bytes_from_safetensors_headers(tmp_path: Path) -> None:
    (tmp_path / "config.json").write_text(json.dumps(_llama_config()))
    # Two shards: 4x8 bf16 (64 B) + 16 fp32 (64 B), then 10 fp8 (10 B): 138 B in all.
    _safetensors(tmp_path / "a.safetensors", {"w": ("BF16", [4, 8], 64), "b": ("F32", [16], 64)})
    _safetensors(tmp_path / "b.safetensors", {"q": ("F8_E4M3", [10], 10)})
    assert get_model(str(tmp_path)).checkpoint_bytes == 138


def test_corrupt_safetensors_is_a_clear_error(tmp_path: Path) -> None:
    (tmp_path / "config.json").write_text(json.dumps(_llama_config()))
    (tmp_path / "x.safetensors").write_bytes(b"\x05")
    with pytest.raises(CatalogError, match=r"x\.safetensors: \(safetensors\): shorter than"):
        get_model(str(tmp_path))


# --- quantization_config: per-module formats (catalog/quantization.py) ---


@pytest.mark.parametrize(
    ("module", "pattern", "expected"),
    [
        ("model.layers.0.self_attn.q_a_proj", "model.layers.*.self_attn*", True),  # ModelOpt glob
        ("model.layers.7.self_attn.o_proj", "model.layers.*.self_attn", True),  # gpt-oss glob
        ("lm_head", "lm_head", True),
        ("model.layers.0.mlp.down_proj", "model.layers.0.mlp.down_proj", True),  # fbgemm path
        ("model.layers.3.mlp.gate", "re:.*mlp.gate$", True),  # compressed-tensors regex
        ("model.layers.3.mlp.gate_proj", "re:.*mlp.gate$", False),
        ("model.layers.12.mlp.down_proj", "model.layers.1.mlp", False),  # 1 is not 12
        ("model.layers.5.self_attn.k_proj", "self_attn", True),  # bare name (transformers)
        ("model.layers.5.mlp.up_proj", "self_attn", False),
    ],
)
def test_skip_patterns_match_like_the_engines(module: str, pattern: str, expected: bool) -> None:
    assert module_matches(module, pattern) is expected


@pytest.mark.parametrize(
    ("fmt", "fan_in", "expected"),
    [
        (NVFP4, 7168, Fraction(4 * 16 + 8, 8 * 16)),  # 4 bits + FP8 scale per 16 = 0.5625 B
        (MXFP4, 2880, Fraction(4 * 32 + 8, 8 * 32)),  # 4 bits + E8M0 scale per 32 = 0.53125 B
        (fp8_block(128, 128), 7168, 1 + Fraction(4, 128 * 128)),  # fp32 per 128 x 128 block
        (FP8_CHANNEL, 8192, 1 + Fraction(4, 8192)),  # fp32 per output row of 8192 inputs
        (int_grouped(4, 128, zero_point=True), 4096, Fraction(128 * 4 + 16 + 4, 128 * 8)),
        (int_grouped(4, 128, zero_point=False), 4096, Fraction(128 * 4 + 16, 128 * 8)),
    ],
    ids=["nvfp4", "mxfp4", "fp8-block", "fp8-channel", "awq-g128-zp", "int4-g128-sym"],
)
def test_bytes_per_element_count_scales_and_zero_points(
    fmt: WeightFormat, fan_in: int, expected: Fraction
) -> None:
    assert fmt.bytes_per_element(fan_in) == expected


def test_compressed_tensors_ignore_leaves_lm_head_and_regex_matches_native() -> None:
    quant = quantization_from_config(
        {
            "quant_method": "compressed-tensors",
            "config_groups": {"g": {"weights": {"num_bits": 4, "type": "int",
                                                "strategy": "group", "group_size": 128}}},
            "ignore": ["lm_head", "re:.*self_attn.*"],
        },
        path="x.toml",
    )  # fmt: skip
    assert quant.format_of("model.layers.2.self_attn.q_proj", expert=False) is None
    mlp = quant.format_of("model.layers.2.mlp.up_proj", expert=False)
    assert mlp == int_grouped(4, 128, zero_point=False)


def test_gptq_always_counts_zero_points() -> None:
    # GPTQ checkpoints carry qzeros even when sym is true; group_size -1 means one group per row.
    quant = quantization_from_config(
        {"quant_method": "gptq", "bits": 4, "group_size": -1}, path="x"
    )
    assert quant.linear == int_grouped(4, None, zero_point=True)


def test_unsupported_quant_method_names_the_field() -> None:
    with pytest.raises(
        CatalogError, match=r"x.toml: quantization_config.quant_method: unsupported"
    ):
        quantization_from_config({"quant_method": "bitsandbytes"}, path="x.toml")


def test_bad_weight_block_size_names_the_field() -> None:
    with pytest.raises(CatalogError, match=r"quantization_config\.weight_block_size"):
        quantization_from_config({"quant_method": "fp8", "weight_block_size": [128]}, path="x")


@pytest.mark.parametrize(
    ("model_id", "method"),
    [
        ("deepseek-r1-0528-fp4", "modelopt"),
        ("llama-3.1-405b-fp8", "fbgemm_fp8"),
        ("llama-3.3-70b-fp4", "modelopt"),
        ("llama-3.3-70b-fp8", "compressed-tensors"),
        ("qwen3-235b-a22b-fp8", "fp8"),
    ],
)
def test_checkpoint_cards_record_their_quantization_config(model_id: str, method: str) -> None:
    card = model_catalog()[model_id]
    assert card.config["quantization_config"] and card.source
    quant = get_model(model_id).arch.quantization
    assert quant is not None and quant.method == method
