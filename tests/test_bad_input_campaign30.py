"""What the thirtieth campaign (benchmarks/fuzz_cases30.py) found in checkpoints that name their
own KV cache quantisation, read as each engine release reads them (memory/kv_default.py):
ModelOpt 1.x's flat `kv_cache_scheme` and compressed-tensors' `kv_cache_scheme` were sized at 16
bits where the engines store FP8; NVFP4 and INT8 caches, and names TensorRT-LLM cannot load,
were sized at 16 bits unsaid; a start-up log that ran `bfloat16` or `nvfp4` was compared as FP8.

Bytes per token are worked by hand: Llama 3.1 8B holds 2 (K and V) x 32 layers x 8 KV heads x
128 = 65,536 elements a token, 65,536 B at FP8 and 131,072 B at 16 bits; Llama 3.3 70B
2 x 80 x 8 x 128 = 163,840 elements, 327,680 B at 16 bits.
"""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

import pytest
from test_bad_input import _one_line_error

from capcliff.cli.main import main

ROOT = Path(__file__).resolve().parent.parent
FP8, SIXTEEN = 65_536, 131_072
LLAMA70_SIXTEEN = 327_680
FP8_OBJECT = {"dynamic": False, "num_bits": 8, "type": "float"}
CT_SCHEME = {"num_bits": 8, "type": "float", "strategy": "tensor", "dynamic": False}


def _checkpoint(tmp_path: Path, quant: dict[str, object]) -> str:
    """A Llama 3.1 8B folder whose config.json carries `quant` as its quantization_config."""
    card = tomllib.loads((ROOT / "model_cards" / "llama-3.1-8b.toml").read_text())
    folder = tmp_path / "m"
    folder.mkdir()
    (folder / "config.json").write_text(
        json.dumps({**card["config"], "quantization_config": quant})
    )
    return str(folder)


def _modelopt(tmp_path: Path, **kv: object) -> str:
    return _checkpoint(tmp_path, {"quant_method": "modelopt", "quant_algo": "FP8", **kv})


def _compressed(tmp_path: Path, scheme: object) -> str:
    weights = {"num_bits": 8, "type": "float", "strategy": "channel", "symmetric": True}
    quant = {
        "quant_method": "compressed-tensors",
        "config_groups": {"group_0": {"targets": ["Linear"], "weights": weights}},
        "ignore": ["lm_head"],
        "kv_cache_scheme": scheme,
    }
    return _checkpoint(tmp_path, quant)


def _kv_bytes(capsys: pytest.CaptureFixture[str], model: str, *args: str) -> int:
    code = main(["memory", model, "--gpu", "b200", "--gpus", "1", *args, "--format", "json"])
    out = capsys.readouterr()
    assert code == 0, out.err
    return int(json.loads(out.out)["kv_bytes_per_token"])


@pytest.mark.parametrize("engine", ["vllm", "sglang", "trtllm"])
def test_modelopt_1x_flat_kv_cache_scheme_of_fp8_is_stored_as_fp8(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], engine: str
) -> None:
    # ModelOpt 1.x writes an FP8 cache as kv_cache_scheme {"type": "float", "num_bits": 8}
    # (TensorRT-LLM modelopt_config.py _KV_SCHEME_DICT_MAP; vLLM ModelOptQuantConfigBase)
    model = _modelopt(tmp_path, kv_cache_scheme=FP8_OBJECT)
    assert _kv_bytes(capsys, model, "--engine", engine) == FP8


@pytest.mark.parametrize(
    ("engine", "version"), [("trtllm", None), ("vllm", None), ("vllm", "0.21.0")]
)
def test_an_nvfp4_kv_cache_is_refused_where_the_release_stores_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], engine: str, version: str | None
) -> None:
    model = _modelopt(tmp_path, kv_cache_quant_algo="NVFP4")
    args = ["memory", model, "--gpu", "b200", "--engine", engine]
    line = _one_line_error(args + (["--engine-version", version] if version else []), capsys)
    assert "kv_cache_quant_algo" in line and "NVFP4" in line and "does not size" in line


@pytest.mark.parametrize(("engine", "version"), [("vllm", "0.20.0"), ("sglang", None)])
def test_an_nvfp4_kv_cache_is_16_bit_where_the_release_maps_fp8_alone(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], engine: str, version: str | None
) -> None:
    # vLLM's map before PR 40177 held fp8 alone ("Falling back to 'auto'"); SGLang compares
    # kv_cache_quant_algo.upper() with "FP8"
    model = _modelopt(tmp_path, kv_cache_quant_algo="NVFP4")
    extra = ["--engine-version", version] if version else []
    assert _kv_bytes(capsys, model, "--engine", engine, *extra) == SIXTEEN


def test_trtllm_given_fp8_over_an_nvfp4_kv_checkpoint_names_what_is_not_sized(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # "give nvfp4" was advised, a dtype capcliff refuses
    model = _modelopt(tmp_path, kv_cache_quant_algo="NVFP4")
    args = ["memory", model, "--gpu", "b200", "--engine", "trtllm", "--kv-cache-dtype", "fp8"]
    line = _one_line_error(args, capsys)
    assert "NVFP4" in line and "does not size" in line


def test_an_int8_kv_cache_is_refused_on_trtllm_and_16_bit_on_vllm(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # TensorRT-LLM stores INT8 at 1 byte an element (get_kv_cache_dtype_byte_size), which
    # capcliff does not size; vLLM's map has no int8: auto, the model's 16 bits
    model = _modelopt(tmp_path, kv_cache_quant_algo="INT8")
    line = _one_line_error(["memory", model, "--gpu", "b200", "--engine", "trtllm"], capsys)
    assert "INT8" in line
    assert _kv_bytes(capsys, model, "--engine", "vllm") == SIXTEEN


@pytest.mark.parametrize(("engine", "expected"), [("vllm", FP8), ("sglang", FP8)])
def test_a_lower_case_fp8_is_fp8_on_vllm_and_sglang(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], engine: str, expected: int
) -> None:
    model = _modelopt(tmp_path, kv_cache_quant_algo="fp8")
    assert _kv_bytes(capsys, model, "--engine", engine) == expected


def test_a_name_tensorrt_llm_cannot_load_is_refused_on_trtllm(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # QuantAlgo(value) takes the exact member names: "fp8" fails at TensorRT-LLM's load
    model = _modelopt(tmp_path, kv_cache_quant_algo="fp8")
    line = _one_line_error(["memory", model, "--gpu", "b200", "--engine", "trtllm"], capsys)
    assert "kv_cache_quant_algo" in line and "TensorRT-LLM" in line


@pytest.mark.parametrize("scheme", [[8], 8])
def test_a_modelopt_kv_cache_scheme_of_no_shape_is_refused_by_name(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], scheme: object
) -> None:
    model = _modelopt(tmp_path, kv_cache_scheme=scheme)
    assert "kv_cache_scheme" in _one_line_error(["memory", model, "--gpu", "b200"], capsys)


@pytest.mark.parametrize(
    ("engine", "version", "expected"),
    [
        ("vllm", None, FP8),  # Attention sets fp8 for any kv_cache_scheme
        ("vllm", "0.15.0", FP8),  # PR 30141 merged in the week to 2026-01-23
        ("vllm", "0.14.0", SIXTEEN),
        ("sglang", None, SIXTEEN),  # reads no KV dtype from the scheme
        ("trtllm", None, SIXTEEN),
    ],
)
def test_a_compressed_tensors_kv_cache_scheme_is_fp8_where_vllm_follows_it(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    engine: str,
    version: str | None,
    expected: int,
) -> None:
    model = _compressed(tmp_path, CT_SCHEME)
    extra = ["--engine-version", version] if version else []
    assert _kv_bytes(capsys, model, "--engine", engine, *extra) == expected


def test_a_per_attention_head_kv_cache_scheme_is_loaded(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # vLLM PR 30141: per-attention-head FP8 KV scales (strategy attn_head); it was refused
    model = _compressed(tmp_path, {**CT_SCHEME, "strategy": "attn_head"})
    assert _kv_bytes(capsys, model, "--engine", "vllm") == FP8


def test_vllm_refuses_a_16_bit_flag_over_a_kv_cache_scheme(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    model = _compressed(tmp_path, CT_SCHEME)
    args = ["memory", model, "--gpu", "b200", "--engine", "vllm", "--kv-cache-dtype", "bf16"]
    line = _one_line_error(args, capsys)
    assert "--kv-cache-dtype" in line and "kv_cache_scheme" in line
    assert _kv_bytes(capsys, model, "--engine", "sglang", "--kv-cache-dtype", "bf16") == SIXTEEN


def test_a_plan_says_the_vllm_line_stores_the_schemes_fp8(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    model = _compressed(tmp_path, CT_SCHEME)
    args = ["plan", model, "--gpu", "b200", "--gpus", "1", "--jobs", "1", "--engine", "sglang",
            "--isl", "100", "--osl", "100", "--num-requests", "20",
            "--arrival", "batch"]  # fmt: skip
    assert main(args) == 0
    out = capsys.readouterr().out
    assert "vllm: stores the checkpoint's FP8 KV cache whatever --kv-cache-dtype" in out
    assert "--kv-cache-dtype bfloat16" not in out  # vLLM would override it


V37 = (
    ROOT / "tests" / "fixtures" / "logs" / "vllm_v1_v37_llama33_70b_fp4_b200_tp1.txt"
).read_text()


def _log(tmp_path: Path, kv: str) -> str:
    path = tmp_path / "server.log"
    text = V37.replace("kv_cache_dtype=fp8", f"kv_cache_dtype={kv}")
    path.write_text(text.replace("'kv_cache_dtype': 'fp8'", f"'kv_cache_dtype': '{kv}'"))
    return str(path)


def test_a_log_that_ran_bfloat16_is_compared_at_16_bits(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # the FP4 Llama's auto is FP8 on vLLM 0.15; the log's bfloat16 was read as that auto
    args = ["calibrate", _log(tmp_path, "bfloat16"), "--gpu", "b200", "--format", "json"]
    assert main(args) == 0
    figures = {f["name"]: f for f in json.loads(capsys.readouterr().out)["figures"]}
    per_token = figures["kv_cache_gib"]["modeled"] * 2**30 / figures["kv_tokens"]["modeled"]
    assert per_token == pytest.approx(LLAMA70_SIXTEEN, rel=0.01)


@pytest.mark.parametrize("kv", ["nvfp4", "int8_per_token_head"])
def test_a_log_that_ran_a_cache_capcliff_does_not_size_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], kv: str
) -> None:
    args = ["calibrate", _log(tmp_path, kv), "--gpu", "b200"]
    line = _one_line_error(args, capsys)
    assert "kv_cache_dtype" in line and kv in line
