"""Bad input that an eighteenth campaign (benchmarks/fuzz_cases18.py) found in engine start-up
logs, hand-edited calibration files and model folders, and the valid logs it found refused or
misread. Each bad input exits 2 with one `error: ...` line naming the field and what is valid;
each valid one reads the figures worked out by hand from the log's own lines.
"""

from __future__ import annotations

import json
import re
import struct
from pathlib import Path

import pytest
from test_bad_input import ROOT, _one_line_error

from capcliff.calibrate.calibration_file import load_calibration
from capcliff.calibrate.startup_logs import parse_startup_log
from capcliff.catalog.catalogs import safetensors_bytes
from capcliff.cli import main
from capcliff.errors import CatalogError, InputError

LOGS = ROOT / "tests" / "fixtures" / "logs"
V16 = "vllm_v1_v16_llama31_8b_eager.txt"
SGL = "sglang_s02_qwq_32b_4xl4_tp4.txt"
KV_LINE = "Available KV cache memory: 85.79 GiB"
ESC = "\x1b"


def _log(name: str) -> str:
    lines = (LOGS / name).read_text().splitlines()
    return "\n".join(ln for ln in lines if not ln.startswith("#"))


def _figures(text: str) -> dict[str, float]:
    return {name: f.value for name, f in parse_startup_log(text).figures.items()}


# vLLM V1 0.10.2's own lines (tests/fixtures/logs/vllm_v1_v16_llama31_8b_eager.txt):
# "Model loading took 14.9889 GiB", "Available KV cache memory: 85.79 GiB",
# "GPU KV cache size: 702,800 tokens", "num_gpu_blocks is: 43925", "... per request: 5.36x"
V16_FIGURES = {
    "weights_gib": 14.9889,
    "kv_cache_gib": 85.79,
    "kv_tokens": 702_800,
    "gpu_blocks": 43_925,
    "max_concurrency": 5.36,
}


def _bold_figures(text: str) -> str:
    return re.sub(r"(\d[\d,]*\.?\d*)(?= ?(?:GiB|tokens|x\b))", f"{ESC}[1m\\1{ESC}[0m", text)


# ANSI colour codes (vLLM's coloured formatter, a terminal capture): a figure wrapped in them
# was dropped, and a log whose every figure was lost was refused as having nothing to fit.
def test_colour_codes_around_figures_read_as_the_plain_log() -> None:
    text = _bold_figures(_log(V16))
    assert ESC in text
    got = _figures(text)
    assert {k: got[k] for k in V16_FIGURES} == pytest.approx(V16_FIGURES)


def test_colour_codes_around_levels_read_as_the_plain_log() -> None:
    text = re.sub(r"\bINFO\b", f"{ESC}[32mINFO{ESC}[0m", _log(V16))
    got = _figures(text)
    assert {k: got[k] for k in V16_FIGURES} == pytest.approx(V16_FIGURES)


def test_a_colour_coded_log_writes_the_plain_logs_calibration(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for name, text in (("plain", _log(V16)), ("colour", _bold_figures(_log(V16)))):
        (tmp_path / f"{name}.txt").write_text(text)
        args = ["calibrate", str(tmp_path / f"{name}.txt"), "--model", "llama-3.1-8b"]
        assert main([*args, "-o", str(tmp_path / f"{name}.toml")]) == 0
    capsys.readouterr()
    plain, colour = (load_calibration(tmp_path / f"{n}.toml") for n in ("plain", "colour"))
    # 14.9889 GiB logged - 14.9575 GiB of Llama-3.1-8B's bf16 weights (8,030,261,248 params x 2
    # bytes / 2**30): the same weights_overhead from both
    assert colour.terms_gib == plain.terms_gib
    assert plain.terms_gib["weights_overhead"] == pytest.approx(
        14.9889 - 8_030_261_248 * 2 / 2**30, abs=1e-4
    )


# A memory figure in MiB or bytes was read as that many GiB (87,849 GiB of KV cache).
@pytest.mark.parametrize(
    ("written", "gib"),
    [("87849 MiB", 87849 / 1024), ("3221225472 bytes", 3.0), ("85.79 GB", 85.79)],
)
def test_a_kv_figure_in_mib_or_bytes_is_read_in_gib(written: str, gib: float) -> None:
    text = _log(V16).replace(KV_LINE, f"Available KV cache memory: {written}")
    figure = parse_startup_log(text).figures["kv_cache_gib"]
    assert figure.value == pytest.approx(gib)


# A negative KV figure in a log that records no failed start: vLLM refuses to start when the
# memory for the cache is not positive (kv_cache_utils.check_enough_kv_cache_memory).
@pytest.mark.parametrize(
    ("old", "new", "field"),
    [
        (KV_LINE, "Available KV cache memory: -3.20 GiB", "kv_cache_gib"),
        ("num_gpu_blocks is: 43925", "num_gpu_blocks is: -43925", "gpu_blocks"),
    ],
)
def test_a_negative_kv_figure_without_a_failed_start_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], old: str, new: str, field: str
) -> None:
    log = tmp_path / "log.txt"
    log.write_text(_log(V16).replace(old, new))
    line = _one_line_error(["calibrate", str(log), "--model", "llama-3.1-8b"], capsys)
    assert f"{field}: -" in line and "is negative" in line and "valid: a figure >= 0" in line


def test_a_negative_kv_figure_of_a_failed_start_is_read_with_its_failure() -> None:
    text = _log(V16)
    cut = text.index("(EngineCore_0 pid=454) INFO 09-21 21:38:25")
    text = (
        text[:cut]
        + "(EngineCore_0 pid=454) INFO [gpu_worker.py:276] Available KV cache memory: -3.20 GiB\n"
        "ValueError: No available memory for the cache blocks. Try increasing "
        "`gpu_memory_utilization` when initializing the engine.\n"
    )
    log = parse_startup_log(text)
    assert log.failure is not None and log.failure.startswith("No available memory")
    assert log.figures["kv_cache_gib"].value == -3.2


# Every line printed twice in a row (vLLM's handler and the root logger's both attached) was
# refused as two server starts; a log holding two whole starts still is.
@pytest.mark.parametrize("name", [V16, SGL])
def test_every_line_printed_twice_reads_as_the_log(name: str) -> None:
    text = _log(name)
    doubled = "\n".join(ln for ln in text.splitlines() for _ in (0, 1))
    assert _figures(doubled) == _figures(text)


def test_two_whole_starts_are_still_refused() -> None:
    text = _log(V16)
    with pytest.raises(InputError, match=r"holds 2 server starts"):
        parse_startup_log(text + "\n" + text)


# --enable-lora: the adapter slots are in vLLM's "Model loading took" figure (load_lora_model
# runs inside the load profiler, v1/worker/gpu_model_runner.py); capcliff models no LoRA, and
# the fit pinned them as weights overhead for every later plan.
def test_a_log_of_a_lora_start_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    log = tmp_path / "log.txt"
    log.write_text(
        _log(V16).replace("non-default args: {", "non-default args: {'enable_lora': True, ")
    )
    line = _one_line_error(["calibrate", str(log), "--model", "llama-3.1-8b"], capsys)
    assert "enable_lora=True" in line and "valid: the log of a start without" in line


# Calibration files edited by hand: blank deployment fields matched no deployment (only a
# mismatch --force passed), a layout or KV dtype no flag reads was applied with --force, and a
# file with no term at all "calibrated" silently.
CAL_FILE = """engine = "vllm"
engine_version = "0.10.2"
source = "log.txt"
model = "llama-3.1-8b"
gpu = "h100-sxm"
layout = "tp1"
weight_dtype = "bf16"
kv_cache_dtype = "bf16"

[terms_gib]
weights_overhead = 0.0314
"""
SWEEP = ["sweep", "llama-3.1-8b", "--gpu", "h100-sxm", "--isl", "100", "--osl", "100"]
SWEEP += ["--num-requests", "20", "--concurrency", "4"]


def _set(key: str, raw: str) -> str:
    return re.sub(rf"^{key} = .*$", f"{key} = {raw}", CAL_FILE, count=1, flags=re.M)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (_set("kv_cache_dtype", '"banana"'), "kv_cache_dtype: unknown KV cache dtype 'banana'"),
        (_set("layout", '"tp0"'), "layout: cannot read 'tp0'"),
        (_set("layout", '""'), "layout: blank"),
        (_set("gpu", '"  "'), "gpu: blank"),
        (_set("model", '""'), "model: blank"),
        (_set("engine_version", '""'), "engine_version: blank"),
        (CAL_FILE.split("[terms_gib]")[0], "the file calibrates nothing"),
        (CAL_FILE.split("[terms_gib]")[0] + "[terms_gib]\n", "the file calibrates nothing"),
    ],
)
@pytest.mark.parametrize("force", [[], ["--force"]])
def test_a_hand_edited_calibration_naming_nothing_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str, message: str, force: list[str]
) -> None:
    path = tmp_path / "c.toml"
    path.write_text(text)
    line = _one_line_error([*SWEEP, "--calibration", str(path), *force], capsys)
    assert message in line


@pytest.mark.parametrize("kv", ['"auto"', '"fp8_e4m3"', '"BF16"'])
def test_kv_dtype_spellings_calibrate_writes_still_load(tmp_path: Path, kv: str) -> None:
    path = tmp_path / "c.toml"
    path.write_text(_set("kv_cache_dtype", kv))
    assert load_calibration(path).terms_gib == {"weights_overhead": 0.0314}


def test_a_file_of_step_terms_alone_still_loads(tmp_path: Path) -> None:
    path = tmp_path / "c.toml"
    path.write_text(
        CAL_FILE.split("[terms_gib]")[0]
        + '[step_time]\nfixed_s = 0.003\nscale = 1.5\nprofile = "p"\nsource = "r.json"\n'
        "points = 3\n"
    )
    assert load_calibration(path).step_time is not None


def test_a_blank_field_names_itself_in_the_catalog_error(tmp_path: Path) -> None:
    path = tmp_path / "c.toml"
    path.write_text(_set("gpu", '""'))
    with pytest.raises(CatalogError, match=r"c\.toml: gpu: blank"):
        load_calibration(path)


# Model folders: huggingface_hub's numbered shards without an index, one missing (a partial
# download whose headers' bytes were printed as the checkpoint's), and a tensor two files hold.
W = {"dtype": "BF16", "shape": [2, 2], "data_offsets": [0, 8]}


def _st(header: dict[str, object]) -> bytes:
    raw = json.dumps(header).encode()
    return struct.pack("<Q", len(raw)) + raw + b"\0" * 8


def _folder(tmp_path: Path, shards: dict[str, dict[str, object]]) -> Path:
    folder = tmp_path / "m"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps(_LLAMA))
    for name, header in shards.items():
        (folder / name).write_bytes(_st(header))
    return folder


_LLAMA = {
    "architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 4096,
    "intermediate_size": 14336, "num_attention_heads": 32, "num_hidden_layers": 32,
    "num_key_value_heads": 8, "vocab_size": 128256, "max_position_embeddings": 131072,
    "torch_dtype": "bfloat16", "rms_norm_eps": 1e-5, "rope_theta": 500000.0,
}  # fmt: skip


@pytest.mark.parametrize(
    ("present", "total", "lacking"),
    [((1,), 2, 2), ((1, 3), 3, 2), ((2,), 2, 1)],
)
def test_numbered_shards_missing_one_without_an_index_are_refused(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    present: tuple[int, ...],
    total: int,
    lacking: int,
) -> None:
    folder = _folder(
        tmp_path, {f"model-{k:05d}-of-{total:05d}.safetensors": {f"t{k}": W} for k in present}
    )
    line = _one_line_error(["memory", str(folder), "--gpus", "1"], capsys)
    assert f"holds {len(present)} of the {total} shards" in line
    assert f"lacks K = {lacking}" in line and "finish the download" in line


def test_complete_numbered_shards_count_every_tensor(tmp_path: Path) -> None:
    folder = _folder(
        tmp_path,
        {
            "model-00001-of-00002.safetensors": {"a": W},
            "model-00002-of-00002.safetensors": {"b": W},
        },
    )
    assert safetensors_bytes(folder) == 2 * 2 * 2 * 2  # two 2x2 BF16 tensors, 8 bytes each


def test_a_tensor_two_files_hold_counts_once(tmp_path: Path) -> None:
    folder = _folder(
        tmp_path,
        {
            "model-00001-of-00002.safetensors": {"a": W},
            "model-00002-of-00002.safetensors": {"a": W},
        },
    )
    assert safetensors_bytes(folder) == 2 * 2 * 2  # one 2x2 BF16 parameter
