"""The KV cache dtype an engine stores by default: the checkpoint's own KV quantisation where the
engine release takes it (analysis/kv_cache_default.py).

Bytes per token are worked out by hand from the model cards:
- Llama-3.3-70B (80 layers, 8 KV heads of 128): K and V, 80 x 2 x 8 x 128 = 163,840 elements a
  token; 163,840 B at FP8, 327,680 B at BF16.
- DeepSeek-R1 (MLA, 61 layers, kv_lora_rank 512 + qk_rope_head_dim 64 = 576 elements a layer):
  35,136 elements a token; 35,136 B at FP8, 70,272 B at BF16.
"""

from __future__ import annotations

import json

import pytest

from capcliff.calibrate.startup_logs import StartupLog
from capcliff.catalog.quantization import quantization_from_config
from capcliff.cli.main import main
from capcliff.errors import CatalogError

LLAMA_FP8, LLAMA_BF16 = 163_840, 327_680
DSR1_FP8, DSR1_BF16 = 35_136, 70_272


def _memory(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[dict[str, object], str]:
    assert main(["memory", *args, "--format", "json"]) == 0
    out = capsys.readouterr()
    return json.loads(out.out), out.err


@pytest.mark.parametrize(
    ("engine", "version", "expected"),
    [
        ("trtllm", "1.1.0", LLAMA_FP8),  # validate_and_set_kv_cache_quant: auto keeps it
        ("sglang", "0.5.9", LLAMA_FP8),
        ("sglang", "0.4.3", LLAMA_FP8),  # PR 3223's first release
        ("vllm", "0.15.0", LLAMA_FP8),
        ("vllm", "0.14.0", LLAMA_FP8),
        ("vllm", "0.10.1", LLAMA_BF16),  # before vLLM read hf_quant_config's KV dtype
        ("vllm-v0", "0.6.3", LLAMA_BF16),
    ],
)
def test_the_checkpoints_fp8_kv_is_the_default_where_the_engine_release_takes_it(
    capsys: pytest.CaptureFixture[str], engine: str, version: str, expected: int
) -> None:
    report, err = _memory(
        capsys, "llama-3.3-70b-fp4", "--gpu", "b200", "--engine", engine,
        "--engine-version", version,
    )  # fmt: skip
    assert report["kv_bytes_per_token"] == expected
    assert report["kv_dtype"] == ("fp8" if expected == LLAMA_FP8 else "bf16")
    assert ("kv_cache_quant_algo" in err) is (expected == LLAMA_FP8)


def test_the_latest_release_of_each_engine_takes_it_for_mla_too(
    capsys: pytest.CaptureFixture[str],
) -> None:
    for engine in ("vllm", "sglang", "trtllm"):
        report, _ = _memory(capsys, "deepseek-r1-0528-fp4", "--gpu", "b200", "--engine", engine)
        assert report["kv_bytes_per_token"] == DSR1_FP8, engine


@pytest.mark.parametrize(("given", "expected"), [("bf16", DSR1_BF16), ("auto", DSR1_FP8)])
def test_a_kv_dtype_given_wins_and_auto_is_the_default(
    capsys: pytest.CaptureFixture[str], given: str, expected: int
) -> None:
    # SGLang (`--kv-cache-dtype bf16`); TensorRT-LLM refuses any dtype but the checkpoint's own
    # (validate_and_set_kv_cache_quant: tests/test_random_combos9.py)
    report, err = _memory(
        capsys, "deepseek-r1-0528-fp4", "--gpu", "b200", "--engine", "sglang",
        "--kv-cache-dtype", given,
    )  # fmt: skip
    assert report["kv_bytes_per_token"] == expected
    assert ("kv_cache_quant_algo" in err) is (given == "auto")


def test_weights_quantised_to_another_format_are_another_checkpoint(
    capsys: pytest.CaptureFixture[str],
) -> None:
    report, err = _memory(
        capsys, "llama-3.3-70b-fp4", "--gpu", "b200", "--engine", "trtllm",
        "--weight-dtype", "fp8",
    )  # fmt: skip
    assert report["kv_bytes_per_token"] == LLAMA_BF16
    assert "kv_cache_quant_algo" not in err


def test_models_without_the_directive_keep_a_16_bit_cache(
    capsys: pytest.CaptureFixture[str],
) -> None:
    report, _ = _memory(capsys, "llama-3.3-70b-fp8", "--gpu", "h200-sxm", "--engine", "trtllm")
    assert report["kv_bytes_per_token"] == LLAMA_BF16


@pytest.mark.parametrize(
    ("algo", "expected"),
    [("FP8", "FP8"), ("fp8", "fp8"), (None, None), ("NVFP4", "NVFP4"), ("none", None), ("", None)],
)
def test_modelopt_kv_cache_quant_algo_is_kept_as_written_for_each_engine_to_read(
    algo: str | None, expected: str | None
) -> None:
    # SGLang upper-cases it, vLLM lower-cases it, TensorRT-LLM takes QuantAlgo's exact names
    # (memory/kv_default.py); "none" and "" are no quantisation (TensorRT-LLM's _algo_or_none)
    raw = {"quant_method": "modelopt", "quant_algo": "NVFP4", "kv_cache_quant_algo": algo}
    assert quantization_from_config(raw, path="config.json").kv_cache == expected
    nested = {"quantization": {"quant_algo": "FP8", "kv_cache_quant_algo": algo}}
    assert quantization_from_config(nested, path="hf_quant_config.json").kv_cache == expected


def test_a_kv_cache_quant_algo_that_is_not_a_string_is_refused_by_name() -> None:
    raw = {"quant_method": "modelopt", "quant_algo": "NVFP4", "kv_cache_quant_algo": 8}
    with pytest.raises(CatalogError, match="kv_cache_quant_algo: must be a string or null"):
        quantization_from_config(raw, path="config.json")


def _log(fmt: str, **config: str) -> StartupLog:
    from capcliff.calibrate.startup_logs import LogFormat

    return StartupLog(LogFormat(fmt), {}, dict(config), None, ())


@pytest.mark.parametrize(
    ("version", "expected"), [("0.5.9", "fp8"), ("0.4.2", "bf16"), (None, "fp8")]
)
def test_a_log_of_auto_stored_what_its_release_takes_from_the_checkpoint(
    version: str | None, expected: str
) -> None:
    from capcliff.calibrate.compare import auto_kv_dtype
    from capcliff.catalog.catalogs import get_model
    from capcliff.memory.budget import EngineName

    config = {"kv_cache_dtype": "auto"} | ({"engine_version": version} if version else {})
    log = _log("sglang", **config)
    model = get_model("llama-3.3-70b-fp4")
    got = auto_kv_dtype(log, model, EngineName.SGLANG, None, True)
    assert got.value == expected
    # weights given in another format are another checkpoint: its auto is 16-bit
    other = auto_kv_dtype(log, model, EngineName.SGLANG, None, False)
    assert other.value == "bf16"


def test_a_flag_of_another_width_than_the_logs_auto_is_refused() -> None:
    from capcliff.calibrate.compare import auto_kv_dtype
    from capcliff.catalog.catalogs import get_model
    from capcliff.errors import InputError
    from capcliff.memory.budget import EngineName
    from capcliff.units import KVDType

    log = _log("sglang", kv_cache_dtype="auto", engine_version="0.5.9")
    model = get_model("llama-3.3-70b-fp4")
    with pytest.raises(InputError, match="kv_cache_dtype=auto, which stored fp8"):
        auto_kv_dtype(log, model, EngineName.SGLANG, KVDType.BF16, True)
    # the same flag on a checkpoint without the directive agrees with auto's 16 bits
    plain = get_model("llama-3.1-70b")
    assert auto_kv_dtype(log, plain, EngineName.SGLANG, KVDType.BF16, True) is KVDType.BF16
