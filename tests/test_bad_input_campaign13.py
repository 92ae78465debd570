"""Bad input that a thirteenth campaign (benchmarks/fuzz_cases13.py) found, and the label of a
GPTQ checkpoint at other than 4 bits. Each bad input exits 2 with one `error: ...` line naming
the field and what is valid; valid input is sized by its own rule.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from test_bad_input import _one_line_error
from test_bad_input_campaign12 import LLAMA_70B, _memory_json

from capcliff.cli import main

# Linear weights of Llama-3.1-70B per layer: q and o 8192 x 8192, k and v 8192 x 1024, gate, up
# and down 8192 x 28672: 134,217,728 + 16,777,216 + 704,643,072 = 855,638,016; x 80 layers
LINEAR_PARAMS = 68_451_041_280
# embeddings and lm_head 2 x 128,256 x 8,192 + norms (2 x 80 + 1) x 8,192, in bf16 (2 B)
NATIVE_BYTES = (2 * 128_256 * 8_192 + 161 * 8_192) * 2


@pytest.mark.parametrize(
    ("bits", "label", "weights_bytes"),
    [
        # GPTQ g128 with zero points: bits/8 + (16-bit scale + bits-bit zero) / 8 / 128 B each
        (3, "int3", LINEAR_PARAMS * (3 * 128 + 16 + 3) // 1024 + NATIVE_BYTES),  # 31,144,558,592
        (4, "int4", LINEAR_PARAMS * (4 * 128 + 16 + 4) // 1024 + NATIVE_BYTES),  # 39,767,785,472
        (8, "int8", LINEAR_PARAMS * (8 * 128 + 16 + 8) // 1024 + NATIVE_BYTES),  # 74,260,692,992
    ],
    ids=["gptq-3-bit", "gptq-4-bit", "gptq-8-bit"],
)
def test_gptq_checkpoint_is_labelled_and_sized_by_its_bits(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], bits: int, label: str, weights_bytes: int
) -> None:
    quant = {"quant_method": "gptq", "bits": bits, "group_size": 128, "desc_act": False}
    report = _memory_json(tmp_path, quant, capsys)
    assert (report["weight_dtype"], report["weights_bytes_total"]) == (label, weights_bytes)


def test_gptq_8_bit_table_header_says_int8(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = tmp_path / "m"
    folder.mkdir()
    quant = {"quant_method": "gptq", "bits": 8, "group_size": 128}
    (folder / "config.json").write_text(json.dumps({**LLAMA_70B, "quantization_config": quant}))
    assert main(["memory", str(folder), "--gpus", "8", "--gpu", "h200-sxm"]) == 0
    assert "(weights int8, KV bf16" in capsys.readouterr().out


# --- bad input the campaign found -------------------------------------------------------------

SMALL_SWEEP = ["sweep", "llama-3.1-8b", "--isl", "100", "--osl", "100", "--num-requests", "20",
               "--concurrency", "4"]  # fmt: skip
CSV_HEAD = "concurrency,input_len,output_len,output_throughput_tok_s,mean_tpot_ms,mean_ttft_ms\n"


def _model_folder(tmp_path: Path, config: dict[str, object]) -> Path:
    folder = tmp_path / "m"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps(config))
    return folder


def test_fifo_safetensors_shard_is_refused_not_waited_on(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = _model_folder(tmp_path, LLAMA_70B)
    os.mkfifo(folder / "model.safetensors")  # open(2) on it blocked until a writer came
    err = _one_line_error(["memory", str(folder), "--gpus", "8"], capsys)
    assert "model.safetensors: (safetensors): a device, pipe or socket, not a file" in err


@pytest.mark.parametrize("device", ["/dev/zero", "/dev/urandom"])
def test_endless_device_as_a_trace_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], device: str
) -> None:
    trace = tmp_path / "t.jsonl"
    trace.symlink_to(device)  # read whole, it never ended: MemoryError, exit 4
    err = _one_line_error(
        [*SMALL_SWEEP[:2], "--workload", str(trace), "--concurrency", "4"], capsys
    )
    assert err == f"error: workload: cannot read {trace}: a device or socket, not a file"


def test_endless_device_as_a_check_spec_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    spec = tmp_path / "s.toml"
    spec.symlink_to("/dev/zero")
    err = _one_line_error(["check", str(spec)], capsys)
    assert err == f"error: spec: cannot read {spec}: a device or socket, not a file"


def test_csv_row_with_more_cells_than_its_header_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bench = tmp_path / "b.csv"
    # the two cells past the six columns were dropped unread and the row fitted
    rows = "8,1024,128,500,14,150,9,9\n32,1024,128,1200,24,160\n64,1024,128,1800,32,170\n"
    bench.write_text(CSV_HEAD + rows)
    err = _one_line_error(
        ["calibrate", str(bench), "--model", "llama-3.1-8b", "--gpu", "h100-sxm"], capsys
    )
    assert "line 2: 8 cells where the header names 6" in err


@pytest.mark.parametrize("layouts", ["tp2,,dp2", "tp2,", ",tp2"])
@pytest.mark.parametrize("command", ["sweep", "plan"])
def test_layout_list_with_an_empty_item_is_refused(
    capsys: pytest.CaptureFixture[str], layouts: str, command: str
) -> None:
    args = [*SMALL_SWEEP, "--gpus", "2", "--layout", layouts]
    if command == "plan":
        args = ["plan", *SMALL_SWEEP[1:8], "--gpus", "2", "--jobs", "1", "--arrival", "batch",
                "--layout", layouts]  # fmt: skip
    err = _one_line_error(args, capsys)
    assert err.startswith(f"error: layout: {layouts!r} has an empty item; give layout names")


def test_layout_list_named_twice_is_swept_once(capsys: pytest.CaptureFixture[str]) -> None:
    assert main([*SMALL_SWEEP, "--gpus", "2", "--layout", "tp2, tp2", "--format", "json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert [series["layout"] for series in report["series"]] == ["tp2"]


@pytest.mark.parametrize("model_type", [7, False, ["llama"]])
def test_model_type_that_is_not_a_name_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], model_type: object
) -> None:
    folder = _model_folder(tmp_path, {**LLAMA_70B, "model_type": model_type})
    err = _one_line_error(["memory", str(folder), "--gpus", "8"], capsys)
    assert "config.json: model_type: must be a family name such as llama" in err


@pytest.mark.parametrize(
    ("quant", "field"),
    [
        ({"quant_method": "gptq", "group_size": 128}, "bits: missing"),
        ({"quant_method": "awq", "bits": 4, "zero_point": True}, "group_size: missing"),
        ({"quant_method": "gptq", "bits": 8}, "group_size: missing"),
    ],
    ids=["gptq-no-bits", "awq-no-group", "gptq-no-group"],
)
def test_awq_gptq_without_bits_or_group_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], quant: dict[str, object], field: str
) -> None:
    folder = _model_folder(tmp_path, {**LLAMA_70B, "quantization_config": quant})
    err = _one_line_error(["memory", str(folder), "--gpus", "8"], capsys)
    assert f"quantization_config.{field}" in err


@pytest.mark.parametrize(
    "name", ["quantize_config.json", "hf_quant_config.json", "model.safetensors.index.json"]
)
def test_side_file_that_is_a_device_is_refused_not_skipped(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str
) -> None:
    folder = _model_folder(tmp_path, LLAMA_70B)
    # a shard, so that the index is read (a folder of config.json alone skips it by design)
    header = json.dumps({"w": {"dtype": "BF16", "shape": [2, 2], "data_offsets": [0, 8]}})
    (folder / "model.safetensors").write_bytes(
        len(header).to_bytes(8, "little") + header.encode() + bytes(8)
    )
    (folder / name).symlink_to("/dev/zero")  # skipped as absent: a GPTQ side file sized as bf16
    err = _one_line_error(["memory", str(folder), "--gpus", "8"], capsys)
    assert f"{name}: (file): not a regular file" in err


def test_quantization_config_under_text_config_is_read(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # vLLM reads a multimodal config's text_config.quantization_config when the top level has
    # none (ModelConfig._verify_quantization); capcliff sized such a checkpoint at bf16.
    text = {
        "model_type": "llama", "hidden_size": 4096, "intermediate_size": 14336,
        "num_attention_heads": 32, "num_hidden_layers": 32, "num_key_value_heads": 8,
        "vocab_size": 128256, "max_position_embeddings": 131072, "tie_word_embeddings": False,
        "quantization_config": {"quant_method": "fp8", "activation_scheme": "dynamic"},
    }  # fmt: skip
    config = {"model_type": "llava", "architectures": ["LlavaForConditionalGeneration"],
              "text_config": text}  # fmt: skip
    folder = _model_folder(tmp_path, config)
    assert main(["memory", str(folder), "--gpus", "1", "--format", "json"]) == 0
    report = json.loads(capsys.readouterr().out)
    # linears per layer 2 x 4096^2 + 2 x 4096 x 1024 + 3 x 4096 x 14336 = 218,103,808, x 32
    # layers at 1 B (per-tensor FP8; its one fp32 scale is not counted); embeddings, lm_head
    # (2 x 128,256 x 4,096) and 65 norms of 4,096 at 2 B
    linear = 218_103_808 * 32
    native = (2 * 128_256 * 4_096 + 65 * 4_096) * 2
    assert (report["weight_dtype"], report["weights_bytes_total"]) == ("fp8", linear + native)
