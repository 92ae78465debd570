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
from pathlib import Path

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


# --- compressed-tensors: vLLM >= 0.15 stores a kv_cache_scheme in FP8 (a 16-bit flag is refused)
# vllm/model_executor/layers/attention/attention.py (vllm-project/vllm PR 30141): the Attention
# layer sets cache_dtype "fp8" when the quant config has a kv_cache_scheme. Llama-3.3-70B's
# shape (80 layers, 8 KV heads of 128): 163,840 B a token at FP8, 327,680 B at BF16.

CT_FP8_KV = {
    "quant_method": "compressed-tensors", "format": "float-quantized", "ignore": ["lm_head"],
    "config_groups": {"group_0": {"targets": ["Linear"], "weights": {
        "num_bits": 8, "type": "float", "strategy": "channel", "symmetric": True}}},
    "kv_cache_scheme": {"num_bits": 8, "type": "float", "strategy": "tensor", "symmetric": True},
}  # fmt: skip


def _ct_model(tmp_path: Path, **scheme: object) -> str:
    from test_bad_input_campaign12 import LLAMA_70B

    quant = {**CT_FP8_KV, "kv_cache_scheme": {**CT_FP8_KV["kv_cache_scheme"], **scheme}}  # type: ignore[dict-item]
    (tmp_path / "config.json").write_text(json.dumps({**LLAMA_70B, "quantization_config": quant}))
    return str(tmp_path)


@pytest.mark.parametrize(
    ("engine", "version", "given", "expected"),
    [
        ("vllm", None, None, LLAMA_FP8),
        ("vllm", "0.15.0", None, LLAMA_FP8),
        ("vllm", "0.14.0", None, LLAMA_BF16),  # before PR 30141: the flag decides
        ("vllm", "0.14.0", "fp8", LLAMA_FP8),
        ("sglang", None, None, LLAMA_BF16),  # no rule of SGLang's read: the model's dtype
        ("trtllm", None, "bf16", LLAMA_BF16),  # not ModelOpt's: no refusal either
    ],
)
def test_vllm_from_0_15_stores_a_compressed_tensors_kv_scheme_in_fp8(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    engine: str,
    version: str | None,
    given: str | None,
    expected: int,
) -> None:
    args = [_ct_model(tmp_path), "--gpus", "8", "--gpu", "h200-sxm", "--engine", engine]
    args += [] if version is None else ["--engine-version", version]
    args += [] if given is None else ["--kv-cache-dtype", given]
    report, err = _memory(capsys, *args)
    assert report["kv_bytes_per_token"] == expected
    assert ("kv_cache_scheme" in err) is (
        engine == "vllm" and expected == LLAMA_FP8 and given != "fp8"
    )


def test_a_per_attention_head_kv_scheme_loads(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # vLLM 0.15 loads per-attention-head KV scales (PR 30141); per-channel ones it refuses
    report, _ = _memory(capsys, _ct_model(tmp_path, strategy="attn_head"), "--gpu", "h200-sxm")
    assert report["kv_bytes_per_token"] == LLAMA_FP8
    assert main(["memory", _ct_model(tmp_path, strategy="channel"), "--gpu", "h200-sxm"]) == 2
    assert "kv_cache_scheme.strategy" in capsys.readouterr().err


def test_an_sglang_plan_says_vllm_would_store_the_scheme_in_fp8(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # SGLang sizes a 16-bit cache; the vllm line beside it cannot ask for one (a
    # --kv-cache-dtype bfloat16 there would be overridden), so it keeps auto and says so
    args = ["plan", _ct_model(tmp_path), "--gpu", "h200-sxm", "--engine", "sglang"]
    args += ["--isl", "1000", "--osl", "500", "--arrival", "batch", "--num-requests", "60"]
    assert main(args) == 0
    out = capsys.readouterr()
    assert "--kv-cache-dtype auto" in out.out and "bfloat16" not in out.out
    assert "vllm: stores the checkpoint's FP8 KV cache whatever --kv-cache-dtype says" in out.out


def test_a_16_bit_flag_over_a_compressed_tensors_scheme_is_refused_on_vllm_0_15(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # vLLM 0.15 would store FP8 whatever the flag; 0.14 stores what it names (before PR 30141)
    model = _ct_model(tmp_path)
    args = ["memory", model, "--gpu", "h200-sxm", "--engine", "vllm", "--kv-cache-dtype", "bf16"]
    assert main([*args, "--engine-version", "0.15.0"]) == 2
    assert "kv_cache_scheme" in capsys.readouterr().err
    report, _ = _memory(capsys, *args[1:], "--engine-version", "0.14.0")
    assert report["kv_bytes_per_token"] == LLAMA_BF16
