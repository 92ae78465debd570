"""Bad input on the surfaces issue 23 lists: session traces, outputs over model files,
quantization configs, safetensors headers, calibration inputs, fleet and pool sizes, offload
tiers, check keys, deep or huge numbers in JSON/TOML, GPU price lists, SLOs in milliseconds; and
the valid vLLM result files that were refused.

Each case exits 2 with one `error: ...` line naming the flag, field or file and what is valid
(never a traceback, a hang or a silently simulated nonsense); no input file is ever replaced.
"""

from __future__ import annotations

import json
import math
import re
import struct
import tomllib
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_bad_input import _one_line_error

from capcliff.calibrate.benchmarks import DeploymentFilter, read_benchmark_file
from capcliff.calibrate.startup_logs import parse_startup_log
from capcliff.catalog.catalogs import get_model, safetensors_bytes
from capcliff.catalog.quantization import quantization_from_config
from capcliff.cli import main
from capcliff.errors import CatalogError, InputError
from capcliff.files import is_model_file, parse_json, parse_toml, write_text_atomic
from capcliff.sim.traffic.sessions import parse_session_trace
from tests.bench_csv import csv_with

ROOT = Path(__file__).resolve().parent.parent
LOGS = ROOT / "tests" / "fixtures" / "logs"
V16 = LOGS / "vllm_v1_v16_llama31_8b_eager.txt"  # vLLM V1 0.10.2, llama-3.1-8b, one start
DSR1_CSV = ROOT / "tests" / "fixtures" / "bench" / "dsr1_0528_h200_tp8_sglang.csv"
SMALL = ["llama-3.1-8b", "--isl", "100", "--osl", "100", "--num-requests", "20"]
LLAMA_REPO = "meta-llama/Llama-3.1-8B-Instruct"


def _llama_config() -> dict[str, object]:
    card = tomllib.loads((ROOT / "model_cards" / "llama-3.1-8b.toml").read_text())
    return dict(card["config"])


def _model_folder(tmp_path: Path, **changes: object) -> Path:
    folder = tmp_path / "model"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps({**_llama_config(), **changes}))
    return folder


def _safetensors(
    folder: Path, header: bytes, *, length: int | None = None, data: bytes = b""
) -> Path:
    """A safetensors file: the u64 header length (`length`: a false one), header, data."""
    path = folder / "model.safetensors"
    size = len(header) if length is None else length
    path.write_bytes(struct.pack("<Q", size) + header + data)
    return path


# Session traces: non-finite numbers hung sweep and check (NaN passes `value < 0`)

SESSION_FIRST = {"session_id": "a", "turn": 0, "input_tokens": 10, "output_tokens": 10}


@pytest.mark.parametrize(
    ("second", "field"),
    [
        ('"think_s": NaN', "think_s"),
        ('"think_s": Infinity', "think_s"),
        ('"think_s": 1e400', "think_s"),  # overflows to inf
        ('"arrival_s": NaN', "arrival_s"),
    ],
    ids=["think-nan", "think-infinity", "think-1e400", "arrival-nan"],
)
def test_a_session_trace_with_a_non_finite_time_is_refused(
    second: str, field: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    trace = tmp_path / "sessions.jsonl"
    later = '{"session_id": "a", "turn": 1, "input_tokens": 10, "output_tokens": 10, ' + second
    trace.write_text(json.dumps({**SESSION_FIRST, "arrival_s": 0}) + "\n" + later + "}\n")
    line = _one_line_error(["sweep", "llama-3.1-8b", "--workload", str(trace)], capsys)
    assert line.startswith(f"error: trace line 2: {field}: must be a finite number >= 0")


LATER = {"session_id": "a", "input_tokens": 10, "output_tokens": 10, "think_s": 1}


@pytest.mark.parametrize(
    ("rows", "line"),
    [
        # 1e300 s: a 5 ms step no longer moves a clock that large, every latency read 0
        ([{"input_tokens": 10, "output_tokens": 10, "arrival_s": 1e300}],
         "trace line 1: arrival_s: 1e+300 s is past 1e+09 s (31 years)"),
        ([{**SESSION_FIRST, "arrival_s": 0}, {**LATER, "turn": 1, "think_s": 1e300}],
         "trace line 2: think_s: 1e+300 s is past 1e+09 s (31 years)"),
        ([{**SESSION_FIRST, "arrival_s": 1e10}],
         "trace line 1: arrival_s: 1e+10 s is past 1e+09 s (31 years)"),
        # two turn 0 of one session: which comes first is not said
        ([{**SESSION_FIRST, "arrival_s": 0}, {**LATER, "turn": 0}],
         "trace line 2: turn: session 'a' turn 0 is also line 1; give each turn once"),
        ([{**SESSION_FIRST, "session_id": ["a"]}],
         "trace line 1: session_id: must be a string or an integer, got ['a']"),
        # 10**40 tokens overflowed numpy's int64: a traceback before
        ([{"input_tokens": 10**40, "output_tokens": 5}],
         "trace line 1: input_tokens: 1e+40 is past the sanity bound 1,073,741,824"),
        ([{**SESSION_FIRST, "output_tokens": 10**40}],
         "trace line 1: output_tokens: 1e+40 is past the sanity bound 1,073,741,824"),
    ],
    ids=["arrival-1e300", "think-1e300", "arrival-1e10", "turn-twice", "session-id-list",
         "plain-tokens-1e40", "session-tokens-1e40"],
)  # fmt: skip
def test_a_trace_time_or_turn_no_run_has_is_refused(
    rows: list[dict[str, object]], line: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    trace = tmp_path / "t.jsonl"
    trace.write_text("".join(json.dumps(r) + "\n" for r in rows))
    error = _one_line_error(["sweep", "llama-3.1-8b", "--workload", str(trace)], capsys)
    assert error.startswith(f"error: {line}"), error


def test_a_think_time_flag_past_31_years_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    args = ["sweep", *SMALL, "--arrival", "clients", "--clients", "4", "--think-time", "1e300"]
    assert _one_line_error(args, capsys).startswith(
        "error: think_time: 1e+300 s is past 1e+09 s (31 years)"
    )


def test_a_plain_trace_with_an_overflowing_arrival_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    trace = tmp_path / "t.jsonl"
    trace.write_text('{"input_tokens": 10, "output_tokens": 10, "arrival_s": 1e400}\n')
    line = _one_line_error(["sweep", "llama-3.1-8b", "--workload", str(trace)], capsys)
    assert line == "error: trace line 1: arrival_s: must be a finite number >= 0 (seconds), got inf"


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("inf", "Input should be a finite number, got inf"),
        ("1e300", "Input should be less than or equal to 60000, got 1e+300"),
    ],
    ids=["inf", "1e300"],
)
def test_a_non_finite_or_huge_kv_transfer_overhead_is_refused(
    value: str, message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    args = ["sweep", *SMALL, "--disagg", "1p:tp1,1d:tp1", "--kv-transfer-overhead-ms", value]
    assert _one_line_error(args, capsys) == f"error: --kv-transfer-overhead-ms: {message}"


# Outputs: --force never makes a model file (or an input) an output


def _spec(tmp_path: Path, **expect: object) -> Path:
    limits = "\n".join(f"{k} = {v}" for k, v in expect.items()) or "fits = true"
    spec = tmp_path / "s.toml"
    spec.write_text(
        '[[scenario]]\nname = "s"\nmodel = "llama-3.1-8b"\ngpu = "h200-sxm"\nlayout = "tp1"\n'
        "[scenario.workload]\nisl = 16\nosl = 16\nnum_requests = 4\n"
        f"[scenario.expect]\n{limits}\n"
    )
    return spec


@pytest.mark.parametrize("name", ["model.safetensors", "config.json", "consolidated.pt", "m.gguf"])
@pytest.mark.parametrize("flag", ["--junit", "--markdown", "--write-baseline"])
def test_force_never_writes_over_a_model_file(
    name: str, flag: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = _model_folder(tmp_path)
    target = folder / name
    if not target.exists():
        target.write_bytes(b"checkpoint bytes")
    before = target.read_bytes()
    line = _one_line_error(["check", str(_spec(tmp_path)), flag, str(target), "--force"], capsys)
    assert line.startswith(f"error: {flag}: {target} is a model checkpoint's file name")
    assert target.read_bytes() == before


def test_calibrate_never_writes_over_a_model_config(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = _model_folder(tmp_path)
    before = (folder / "config.json").read_text()
    args = ["calibrate", str(V16), "-o", str(folder / "config.json"), "--force"]
    assert _one_line_error(args, capsys).startswith("error: --output: ")
    assert (folder / "config.json").read_text() == before


def test_the_atomic_writer_itself_refuses_a_model_file(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="model checkpoint's file"):
        write_text_atomic(tmp_path / "model-00001-of-00002.safetensors", "x", overwrite=True)


@pytest.mark.parametrize(
    ("name", "model_file"),
    [("model.safetensors", True), ("pytorch_model.bin", True), ("CONFIG.JSON", True),
     ("report.md", False), ("baseline.json", False), ("junit.xml", False)],
)  # fmt: skip
def test_model_files_are_told_by_name(name: str, model_file: bool) -> None:
    assert is_model_file(Path("somewhere") / name) is model_file


# quantization_config: every bad shape is one line naming the field


@pytest.mark.parametrize(
    ("quant", "field"),
    [
        ({"quant_method": "awq", "bits": -4, "group_size": 128}, "quantization_config.bits"),
        ({"quant_method": "gptq", "bits": 4, "group_size": None}, "quantization_config.group_size"),
        ({"quant_method": "awq", "bits": 4, "group_size": True}, "quantization_config.group_size"),
        ([1, 2], "quantization_config"),
        ("awq", "quantization_config"),
        ({"quant_method": "modelopt", "quant_algo": "NVFP4", "group_size": 0},
         "quantization_config.group_size"),
        ({"quant_method": "fp8", "weight_block_size": [True, 128]},
         "quantization_config.weight_block_size"),
        ({"quant_method": "compressed-tensors", "ignore": ["re:(["],
          "config_groups": {"g": {"weights": {"num_bits": 4, "type": "int"}}}},
         "quantization_config.ignore"),
        ({"quant_method": "compressed-tensors", "config_groups": {"g": {"weights": {
            "num_bits": 4, "type": "int", "strategy": "group", "group_size": None}}}},
         "quantization_config.config_groups.weights.group_size"),
        ({"quant_method": "compressed-tensors",
          "config_groups": {"g": {"weights": {"num_bits": -4, "type": "int"}}}},
         "quantization_config.config_groups.weights.num_bits"),
        ({"quant_method": "compressed-tensors", "config_groups": {"g": {
            "targets": ["re:(["], "weights": {"num_bits": 4, "type": "int"}}}},
         "quantization_config.config_groups.g.targets"),
        ({"quant_method": "compressed-tensors", "config_groups": [{"weights": {"num_bits": 4}}]},
         "quantization_config.config_groups"),
        # "false" read as true (zero points stored); strategy 5 read as per-tensor
        ({"quant_method": "awq", "bits": 4, "zero_point": "false"},
         "quantization_config.zero_point"),
        ({"quant_method": "compressed-tensors", "config_groups": {"g": {"weights": {
            "num_bits": 4, "type": "int", "strategy": 5}}}},
         "quantization_config.config_groups.weights.strategy"),
        # groups of 7 do not split a layer's input width evenly (the folder's hidden_size)
        ({"quant_method": "awq", "bits": 4, "group_size": 7}, "quantization_config.group_size"),
    ],
    ids=["bits-negative", "group-null", "group-bool", "a-list", "a-string", "modelopt-group-0",
         "block-bool", "bad-regex", "ct-group-null", "ct-bits-negative", "ct-targets-regex",
         "ct-groups-list", "zero-point-text", "ct-strategy-number", "awq-group-uneven"],
)  # fmt: skip
def test_a_bad_quantization_config_names_its_field(
    quant: object, field: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = _model_folder(tmp_path, quantization_config=quant)
    line = _one_line_error(["memory", str(folder)], capsys)
    assert line.startswith(f"error: {folder / 'config.json'}: {field}: ")


def test_gptq_group_size_minus_one_is_one_scale_per_row() -> None:
    quant = quantization_from_config(
        {"quant_method": "gptq", "bits": 4, "group_size": -1}, path="config.json"
    )
    assert quant.main_format.group_size is None  # per row: group = fan_in


# safetensors headers


HEADER_OK = {"w": {"dtype": "BF16", "shape": [2, 2], "data_offsets": [0, 8]}}


@pytest.mark.parametrize(
    ("header", "length", "problem"),
    [
        (b"\x01\x02", None, "shorter than the 8-byte header length; truncated"),
        (b'{"a": 1}', 10**6, "header length 1000000 is past the file's 8 bytes; truncated"),
        (b"hello", None, "(safetensors) header: (json): Expecting value at line 1"),
        (b"[1, 2]", None, "header must be a JSON object of tensors"),
        (json.dumps({"w": {"dtype": "Q9", "shape": [2], "data_offsets": [0, 4]}}).encode(),
         None, "w.dtype: unknown 'Q9'"),
        (json.dumps({"w": {"dtype": "BF16", "shape": [-2], "data_offsets": [0, 4]}}).encode(),
         None, "w.shape: must be a list of integers >= 0, got [-2]"),
        (json.dumps({"w": {"dtype": "BF16", "shape": "2", "data_offsets": [0, 4]}}).encode(),
         None, "w.shape: must be a list of integers >= 0, got '2'"),
        (json.dumps({"w": {"dtype": "BF16", "shape": [2], "data_offsets": [4, 0]}}).encode(),
         None, "w.data_offsets: must be [start, end] within the 0 data bytes"),
        (json.dumps({"__metadata__": [1], "w": {"dtype": "BF16", "shape": [2],
                     "data_offsets": [0, 4]}}).encode(),
         None, "__metadata__: must be an object of strings, got [1]"),
        (json.dumps({"__metadata__": {"format": "pt"}, "w": {"dtype": "BF16", "shape": [2],
                     "data_offsets": [0, 4]}}).encode(), None, None),
        (json.dumps({"w": {"dtype": "BF16", "shape": [2], "data_offsets": [0, 4]}}).encode(),
         None, None),  # ok: 2 x 2 bytes, with 4 data bytes after the header
    ],
    ids=["truncated", "length-past-file", "not-json", "json-list", "unknown-dtype",
         "negative-shape", "shape-not-list", "offsets-reversed", "metadata-not-strings",
         "metadata-valid", "valid"],
)  # fmt: skip
def test_a_corrupt_safetensors_header_is_one_line(
    header: bytes, length: int | None, problem: str | None, tmp_path: Path
) -> None:
    folder = _model_folder(tmp_path)
    if header == b"\x01\x02":
        (folder / "model.safetensors").write_bytes(header)
    else:
        _safetensors(folder, header, length=length, data=b"" if problem else b"\0" * 4)
    if problem is None:
        assert safetensors_bytes(folder) == 4
        return
    with pytest.raises(CatalogError) as caught:
        get_model(str(folder))
    message = str(caught.value)
    assert "\n" not in message and problem in message, message


@pytest.mark.parametrize(
    ("b_offsets", "problem"),
    [
        ([4, 12], "b.data_offsets: [4, 12] overlaps a (ends at 8); tensors lie end to end"),
        ([0, 8], "b.data_offsets: [0, 8] overlaps a (ends at 8); tensors lie end to end"),
        (
            [12, 20],
            "b.data_offsets: [12, 20] leaves a gap after a (ends at 8); tensors lie end to end",
        ),
    ],
    ids=["overlap", "duplicate", "gap"],
)
def test_tensors_that_share_bytes_or_leave_gaps_are_refused(
    b_offsets: list[int], problem: str, tmp_path: Path
) -> None:
    # safetensors' Metadata::validate: sorted by offset, each start is the previous end; two
    # 8-byte tensors on 12 bytes were counted as 16 before
    folder = _model_folder(tmp_path)
    header = {"a": {"dtype": "BF16", "shape": [2, 2], "data_offsets": [0, 8]},
              "b": {"dtype": "BF16", "shape": [2, 2], "data_offsets": b_offsets}}  # fmt: skip
    path = _safetensors(folder, json.dumps(header).encode(), data=b"\0" * 20)
    with pytest.raises(CatalogError) as caught:
        safetensors_bytes(folder)
    assert str(caught.value) == f"{path}: (safetensors): {problem}"


def test_a_tensor_whose_bytes_disagree_with_its_shape_is_refused(tmp_path: Path) -> None:
    folder = _model_folder(tmp_path)
    # 2 x 2 BF16 is 8 bytes, the offsets say 6
    entry = {"w": {"dtype": "BF16", "shape": [2, 2], "data_offsets": [0, 6]}}
    _safetensors(folder, json.dumps(entry).encode(), data=b"\0" * 6)
    with pytest.raises(CatalogError, match=r"w\.data_offsets: 6 bytes do not hold BF16"):
        safetensors_bytes(folder)


# Calibration inputs


def _vllm_run(concurrency: int, throughput: float, tpot_ms: float) -> dict[str, object]:
    """A `vllm bench serve --save-result` object (keys of vllm/benchmarks/serve.py)."""
    return {
        "date": "20250101-000000", "backend": "vllm", "model_id": LLAMA_REPO,
        "tokenizer_id": LLAMA_REPO, "num_prompts": 200, "request_rate": "inf",
        "burstiness": 1.0, "max_concurrency": concurrency, "duration": 60.0, "completed": 200,
        "total_input_tokens": 204_800, "total_output_tokens": 25_600,
        "request_throughput": 3.3, "request_goodput": None, "output_throughput": throughput,
        "total_token_throughput": 4600.0, "mean_ttft_ms": 150.0, "median_ttft_ms": 140.0,
        "p99_ttft_ms": 300.0, "mean_tpot_ms": tpot_ms, "median_tpot_ms": tpot_ms,
        "p99_tpot_ms": tpot_ms * 1.2, "mean_itl_ms": tpot_ms,
    }  # fmt: skip


RUNS = [_vllm_run(8, 500.0, 14.0), _vllm_run(32, 1200.0, 24.0), _vllm_run(64, 1800.0, 32.0)]
ANY = DeploymentFilter(hf_repo=LLAMA_REPO)


@pytest.mark.parametrize(
    "text",
    [
        "\n".join(json.dumps(r) for r in RUNS),  # --append-result: one object per line
        "".join("\n" + json.dumps(r) for r in RUNS),  # vLLM writes a newline before each
        "\n".join(json.dumps(r, indent=2) for r in RUNS),  # indented objects, one after another
    ],
    ids=["one-per-line", "newline-first", "indented"],
)
def test_appended_vllm_results_are_read_run_by_run(text: str, tmp_path: Path) -> None:
    path = tmp_path / "results.json"
    path.write_text(text)
    points = read_benchmark_file(path, ANY)
    assert [p.concurrency for p in points] == [8, 32, 64]
    # 24 ms TPOT read as 0.024 s; 204,800 input tokens over 200 requests = 1,024 each
    assert points[1].mean_tpot_s == pytest.approx(0.024)
    assert points[1].input_len == 1024 and points[1].output_len == 128


def test_a_single_vllm_run_is_fitted_with_the_scale_alone(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "one.json"
    path.write_text(json.dumps(RUNS[1], indent=2))
    code = main(["calibrate", str(path), "--model", "llama-3.1-8b", "--gpu", "h100-sxm"])
    out = capsys.readouterr().out
    assert code == 0
    assert "from 1 point (one run: the scale alone, fixed kept as modeled)" in out


def test_a_single_vllm_run_writes_a_calibration_that_loads(tmp_path: Path) -> None:
    from capcliff.calibrate.calibration_file import load_calibration

    path, out = tmp_path / "one.json", tmp_path / "cal.toml"
    path.write_text(json.dumps(RUNS[1]))
    args = ["calibrate", str(path), "--model", "llama-3.1-8b", "--gpu", "h100-sxm", "-o", str(out)]
    assert main(args) == 0
    step = load_calibration(out).step_time
    assert step is not None and step.points == 1 and step.scale > 0


def test_benchmark_rows_of_another_model_are_refused_without_force(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = _model_folder(tmp_path)  # a local Llama folder: no repo name to filter rows by
    args = ["calibrate", str(DSR1_CSV), "--model", str(folder), "--gpu", "h200-sxm"]
    line = _one_line_error([*args, "--gpus", "8", "--engine", "sglang"], capsys)
    assert line.startswith(
        f"error: {DSR1_CSV}: model: the rows are of deepseek-ai/DeepSeek-R1-0528, not model;"
    )
    assert "pass --force" in line


def test_force_fits_rows_of_another_model(tmp_path: Path) -> None:
    import csv

    keep = DeploymentFilter(model_names=("model",), gpus=8, engine="sglang", any_model=True)
    rows = list(csv.DictReader(DSR1_CSV.open()))  # every one an 8-GPU SGLang DeepSeek-R1 run
    assert len(read_benchmark_file(DSR1_CSV, keep)) == len(rows)


def test_a_calibration_applied_to_a_folder_named_alike_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # a/model holds Llama-3.1-8B, b/model Qwen3-8B: both read as the model id "model"
    for where, card in (("a", "llama-3.1-8b"), ("b", "qwen3-8b")):
        (tmp_path / where / "model").mkdir(parents=True)
        config = tomllib.loads((ROOT / "model_cards" / f"{card}.toml").read_text())["config"]
        (tmp_path / where / "model" / "config.json").write_text(json.dumps(config))
    runs, cal = tmp_path / "runs.json", tmp_path / "cal.toml"
    runs.write_text(json.dumps(RUNS[1]))
    monkeypatch.chdir(tmp_path / "a")
    args = ["--gpu", "h100-sxm", "--calibration", str(cal)]
    fit = ["calibrate", str(runs), "--model", "model", "--gpu", "h100-sxm", "-o", str(cal)]
    assert main([*fit, "--force"]) == 0  # --force: the rows name the repo, not the folder
    assert main(["memory", "model", *args]) == 0  # the same folder: applied
    monkeypatch.chdir(tmp_path / "b")
    capsys.readouterr()
    line = _one_line_error(["memory", "model", *args], capsys)
    # sizes from the two config.json files: 32 vs 36 layers, 14,336 vs 12,288 MLP width
    assert line == (
        f"error: calibration: {cal} was made for another deployment (model shape llama L32 "
        "h4096 a32/kv8 d128 i14336 v128256 bf16 != qwen3 L36 h4096 a32/kv8 d128 i12288 v151936 "
        "bf16); pass --force to apply it anyway"
    )


def test_a_vllm_result_of_another_model_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "r.json"
    path.write_text(json.dumps(RUNS[0]))
    with pytest.raises(InputError, match=r"model: the rows are of meta-llama/Llama-3\.1-8B"):
        read_benchmark_file(path, DeploymentFilter(hf_repo="Qwen/Qwen3-32B"))


@pytest.mark.parametrize(
    ("column", "value", "extra_row", "message"),
    [
        ("mean_tpot_ms", "0.0097", False,
         "B52: mean_tpot_ms: 0.0097 ms is under 1 ms; these look like seconds: give milliseconds "
         "(0.0097 s = 9.7 ms)"),
        ("output_throughput_tok_s", "-5", False,
         "B52: output_throughput_tok_s: must be a finite number > 0, got -5"),
        ("mean_tpot_ms", "inf", False, "B52: mean_tpot_ms: must be a finite number > 0, got inf"),
        ("row_id", "B52", True, "B99: duplicates B52 (same run, same figures)"),
        ("concurrency", "2.5", False, "B52: concurrency: must be a whole number, got 2.5"),
    ],
    ids=["tpot-in-seconds", "negative-throughput", "infinite-tpot", "duplicated-row",
         "fractional-clients"],
)  # fmt: skip
def test_a_benchmark_csv_with_impossible_figures_is_refused(
    column: str,
    value: str,
    extra_row: bool,
    message: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    path = csv_with(tmp_path, column, value, extra_row=extra_row)
    args = ["calibrate", str(path), "--model", "deepseek-r1", "--gpu", "h200-sxm", "--gpus", "8"]
    line = _one_line_error([*args, "--engine", "sglang"], capsys)
    assert line.startswith(f"error: bench.csv: {message}"), line


def test_a_vllm_result_with_a_fractional_request_count_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "r.json"
    path.write_text(json.dumps({**RUNS[0], "max_concurrency": 7.5}))  # read as 8 clients before
    with pytest.raises(InputError, match=r"max_concurrency: must be a whole number, got 7\.5$"):
        read_benchmark_file(path, ANY)


def test_a_log_with_two_server_starts_is_refused() -> None:
    text = V16.read_text()
    with pytest.raises(InputError) as caught:
        parse_startup_log(text + text)
    lines = len(text.splitlines())
    # the API server's version line is line 6 of the fixture, so line 6 + its length the second
    assert str(caught.value) == (
        f"logfile: holds 2 server starts ('vLLM API server version' at lines 6, {6 + lines}); "
        f"cut it to one start (the last begins near line {6 + lines})"
    )


def test_a_garbled_figure_in_a_startup_log_names_its_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # line 39 of the SGLang fixture is its server_args; a cut there read as float() crashed
    log = tmp_path / "sglang.txt"
    text = (LOGS / "sglang_s02_qwq_32b_4xl4_tp4.txt").read_text()
    log.write_text(text.replace("max_total_num_tokens=46611", "max_total_num_tokens=46611true"))
    args = ["calibrate", str(log), "--model", "deepseek-r1-distill-qwen-32b", "--gpu", "h100-sxm"]
    assert _one_line_error(args, capsys) == (
        "error: logfile: line 39: kv_tokens: cannot read '46611true' as a number"
    )


@pytest.mark.parametrize("value", ["nan", "inf", "-inf"])
def test_a_non_finite_calibration_term_is_refused_on_read(
    value: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cal = tmp_path / "cal.toml"
    cal.write_text(f'engine = "vllm"\nsource = "x"\n[terms_gib]\nactivation_peak = {value}\n')
    line = _one_line_error(["memory", "llama-3.1-8b", "--calibration", str(cal)], capsys)
    assert line == f"error: {cal}: terms_gib.activation_peak: must be a finite number, got {value}"


def test_a_calibration_term_past_the_whole_gpu_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cal = tmp_path / "cal.toml"  # 5,000 GiB of activations printed a KV cache of -4,894 GiB
    cal.write_text('engine = "vllm"\nsource = "x"\n[terms_gib]\nactivation_peak = 5000.0\n')
    line = _one_line_error(["memory", "llama-3.1-8b", "--calibration", str(cal)], capsys)
    # h200-sxm: the driver's 143,771 MiB / 1,024 = 140.40 GiB
    assert line == (
        f"error: calibration: {cal}: terms_gib.activation_peak: 5,000.00 GiB per GPU is more "
        "than h200-sxm's 140.40 GiB; a term of another deployment or unit"
    )


@pytest.mark.parametrize(
    ("speculative", "message"),
    [("ngram:" + "9" * 30, "speculative: K is at most 16, got 999999999999"),
     ("mtp:17", "speculative: K is at most 16, got 17")],
    ids=["k-30-digits", "k-17"],
)  # fmt: skip
def test_a_calibrated_speculation_past_16_drafts_is_refused(
    speculative: str, message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cal = tmp_path / "cal.toml"  # kept before, to apply to no deployment ever
    cal.write_text(
        'engine = "vllm"\nsource = "x"\n[terms_gib]\n[speculative]\n'
        f'speculative = "{speculative}"\naccept_length = 2.0\nsource = "b"\npoints = 1\n'
    )
    line = _one_line_error(["memory", "llama-3.1-8b", "--calibration", str(cal)], capsys)
    assert line == f"error: {cal}: speculative: {message}"


def test_a_calibration_term_past_an_exbibyte_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cal = tmp_path / "cal.toml"  # 1e300 GiB is inf bytes: an OverflowError traceback before
    cal.write_text('engine = "vllm"\nsource = "x"\n[terms_gib]\nactivation_peak = 1e300\n')
    line = _one_line_error(["memory", "llama-3.1-8b", "--calibration", str(cal)], capsys)
    assert line == (
        f"error: {cal}: terms_gib: activation_peak: past 1,073,741,824 GiB (1 EiB) per GPU"
    )


STEP_TIME = (
    '[step_time]\nprofile = "vllm"\nsource = "b.csv"\npoints = 3\nfixed_s = {fixed}\n'
    "scale = {scale}\n"
)


@pytest.mark.parametrize(
    ("fixed", "scale", "message"),
    [
        # scale 1e300 printed TTFTs of 300 digits in every sweep row
        ("0.001", "1e300", "scale: 1e+300 x the modeled step time is outside [0.01, 100]"),
        ("0.001", "1e-9", "scale: 1e-09 x the modeled step time is outside [0.01, 100]"),
        ("1e6", "1.0", "fixed_s: 1e+06 s per step is outside [0, 10] s"),
    ],
    ids=["scale-1e300", "scale-1e-9", "fixed-11-days"],
)
def test_step_time_terms_of_no_deployment_are_refused_on_read(
    fixed: str, scale: str, message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cal = tmp_path / "cal.toml"
    cal.write_text('engine = "vllm"\nsource = "x"\n' + STEP_TIME.format(fixed=fixed, scale=scale))
    line = _one_line_error(["sweep", *SMALL, "--calibration", str(cal)], capsys)
    assert line.startswith(f"error: {cal}: step_time: {message}: "), line


def test_a_fit_past_100x_the_model_is_refused_and_nothing_written(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # 2,400 ms per token at 32 clients on an H100: the modeled 8B step is near 12 ms (the
    # 24 ms run of RUNS[1] fits a scale near 2), so the scale alone is about 200
    path, out = tmp_path / "slow.json", tmp_path / "cal.toml"
    path.write_text(json.dumps(_vllm_run(32, 12.0, 2400.0)))
    args = ["calibrate", str(path), "--model", "llama-3.1-8b", "--gpu", "h100-sxm", "-o", str(out)]
    line = _one_line_error(args, capsys)
    assert line.startswith("error: benchmark: the fit's scale: ")
    assert "outside [0.01, 100]" in line and not out.exists()


# Sizes that would never finish: fleets and pools


@pytest.mark.parametrize(
    ("flags", "start"),
    [
        (["--rate", "1e9"], "error: rate: 1e+09 requests/s at headroom 0.2 needs "),
        (["--rate", "2", "--headroom", "0.9999999"], "error: rate: 2 requests/s at headroom "),
    ],
    ids=["rate-1e9", "headroom-0.9999999"],
)
def test_a_fleet_past_100k_gpus_is_refused_with_its_size(
    flags: list[str], start: str, capsys: pytest.CaptureFixture[str]
) -> None:
    args = ["plan", "llama-3.1-8b", "--isl", "100", "--osl", "100", "--slo-tpot", "0.05"]
    line = _one_line_error([*args, "--slo-ttft", "2", "--jobs", "1", *flags], capsys)
    assert line.startswith(start)
    assert "past the 100,000 GPUs a fleet is sized to" in line


@pytest.mark.parametrize(
    ("flags", "size"),
    [
        # 1e300 / (0.8 x the tp1 replica's sustained rate, tens to hundreds of requests/s) is
        # of the order e+297 to e+298: three figures (the rate itself is the model's, not this
        # test's business)
        (["--rate", "1e300"], r"\d\.\d\de\+29[78] replicas of tp1"),
        # 1e308 / (1e-7 x the sustained rate) overflows to inf (math.ceil(inf) was a traceback)
        (["--rate", "1e308", "--headroom", "0.9999999"], r"needs inf replicas of tp1 \(inf GPUs\)"),
    ],
    ids=["rate-1e300", "rate-1e308-infinite-count"],
)
def test_an_astronomical_fleet_is_one_short_line(
    flags: list[str], size: str, capsys: pytest.CaptureFixture[str]
) -> None:
    args = ["plan", "llama-3.1-8b", "--isl", "100", "--osl", "100", "--slo-tpot", "0.05"]
    line = _one_line_error([*args, "--slo-ttft", "2", "--jobs", "1", *flags], capsys)
    assert re.search(size, line) and "past the 100,000 GPUs a fleet is sized to" in line
    assert len(line) < 250  # not a 300-digit count


@pytest.mark.parametrize("command", ["plan", "sweep"])
def test_a_rate_under_one_request_in_hours_is_refused(
    command: str, capsys: pytest.CaptureFixture[str]
) -> None:
    # arrivals near 1e300 s: a step no longer moved the clock, the plan printed TPOT 0 ms and
    # $1.11e+301 per million tokens (as a 300-digit number)
    line = _one_line_error([command, *SMALL, "--rate", "1e-300"], capsys)
    assert line.startswith("error: rate: 1e-300 requests/s is under 0.0001 (one request in 2.8")


@pytest.mark.parametrize("decode", ["1000000d:tp1", "100000000d:tp1"])
def test_disagg_pools_past_one_deployment_are_refused(
    decode: str, capsys: pytest.CaptureFixture[str]
) -> None:
    line = _one_line_error(["sweep", *SMALL, "--disagg", f"1p:tp1,{decode}"], capsys)
    assert line.startswith(f"error: disagg: '1p:tp1,{decode}' spans ")
    assert "past the 65,536 one deployment may span" in line


@pytest.mark.parametrize("size", ["0", "64", "512MiB"])
def test_an_offload_tier_under_1_gib_is_refused(
    size: str, capsys: pytest.CaptureFixture[str]
) -> None:
    line = _one_line_error(["sweep", *SMALL, "--offload", f"cpu:{size}"], capsys)
    assert line.startswith(f"error: --offload: the cpu tier's '{size}' is under the 1 GiB")


def test_a_gpu_type_listed_twice_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    args = ["plan", "llama-3.1-8b", "--isl", "10", "--osl", "10", "--rate", "2"]
    line = _one_line_error([*args, "--gpu", "h100-sxm,h100-sxm", "--price-gpu-hour", "2,3"], capsys)
    assert line.startswith("error: gpu: h100-sxm listed more than once; give each GPU type once")


@pytest.mark.parametrize(
    ("gpus", "price"),
    # "2," for two GPU types read as the one price 2 for both; 1e308 printed "inf" $/M tokens
    [("h100-sxm,h200-sxm", "2,"), ("h100-sxm", "1e308"), ("h100-sxm", "10001")],
    ids=["price-left-out", "1e308", "past-10000"],
)
def test_a_price_list_left_short_or_past_any_gpu_is_refused(
    gpus: str, price: str, capsys: pytest.CaptureFixture[str]
) -> None:
    args = ["plan", "llama-3.1-8b", "--isl", "10", "--osl", "10", "--rate", "2"]
    line = _one_line_error([*args, "--gpu", gpus, "--price-gpu-hour", price], capsys)
    assert line == (
        f"error: price-gpu-hour: cannot read {price!r}; give one price in [0.01, 10,000] "
        f"$/GPU-hour, or one per --gpu ({gpus.count(',') + 1})"
    )


def test_a_spec_price_past_any_gpu_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    spec = _spec(tmp_path)
    spec.write_text(spec.read_text().replace('layout = "tp1"', 'layout = "tp1"\n'
                    "usd_per_gpu_hour = 1e308"))  # fmt: skip
    line = _one_line_error(["check", str(spec)], capsys)
    assert line == (
        f"error: {spec}: scenario[0].usd_per_gpu_hour: Input should be less than or equal to 10000"
    )


@pytest.mark.parametrize("gpus", ["h100-sxm,", "h100-sxm,,h200-sxm", ",h100-sxm"])
def test_a_gpu_list_with_an_empty_item_is_refused(
    gpus: str, capsys: pytest.CaptureFixture[str]
) -> None:
    args = ["plan", "llama-3.1-8b", "--isl", "10", "--osl", "10", "--rate", "2", "--gpu", gpus]
    line = _one_line_error(args, capsys)
    assert line == f"error: gpu: {gpus!r} has an empty item; give hardware ids between the commas"


# Check keys and SLO flags


@pytest.mark.parametrize(
    ("key", "value", "message"),
    [
        ("tpot_p99_max_s", "inf", "Input should be a finite number"),
        ("ttft_p99_max_s", "-inf", "Input should be a finite number"),
        ("tpot_p99_max_s", "60",
         "60 s is past 10 s, a limit typed in milliseconds? did you mean 0.06 (seconds)?"),
        ("ttft_p99_max_s", "2000",
         "2000 s is past 600 s, a limit typed in milliseconds? did you mean 2 (seconds)?"),
    ],
    ids=["tpot-inf", "ttft-minus-inf", "tpot-ms", "ttft-ms"],
)  # fmt: skip
def test_a_spec_limit_that_is_not_a_latency_is_refused(
    key: str, value: str, message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    spec = _spec(tmp_path, **{key: value})
    line = _one_line_error(["check", str(spec)], capsys)
    assert line == f"error: {spec}: scenario[0].expect.{key}: {message}"


@pytest.mark.parametrize(
    ("key", "line"),
    [
        ("tpot_p99_max_s = true", "scenario[0].expect.tpot_p99_max_s: must be a number, got true"),
        ("kv_headroom_min = false",
         "scenario[0].expect.kv_headroom_min: must be a number, got false"),
        ("max_num_seqs = true", "scenario[0].max_num_seqs: must be a number, got true"),
        ("headroom = true", "scenario[0].headroom: must be a number, got true"),
    ],
    ids=["expect-limit", "expect-fraction", "engine-setting", "scenario-key"],
)  # fmt: skip
def test_a_boolean_for_a_spec_number_is_refused(
    key: str, line: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # pydantic's lax mode read true as 1: a 1 s TPOT limit, one sequence, headroom 1
    spec = _spec(tmp_path)
    text = spec.read_text()
    if key.startswith(("tpot", "kv_")):  # [scenario.expect] is the file's last table
        spec.write_text(f"{text}{key}\n")
    else:
        spec.write_text(text.replace("[scenario.workload]", f"{key}\n[scenario.workload]"))
    assert _one_line_error(["check", str(spec)], capsys) == f"error: {spec}: {line}"


@pytest.mark.parametrize(
    ("old", "new", "line"),
    [
        # pydantic's lax mode read "16" as 16, "yes" and 1 as true: a spec typed by hand passed
        ("isl = 16", 'isl = "16"',
         "scenario[0].workload.isl: must be a number, not text, got '16'"),
        ("fits = true", 'ttft_p99_max_s = "30"',
         "scenario[0].expect.ttft_p99_max_s: must be a number, not text, got '30'"),
        ("fits = true", 'fits = "yes"',
         "scenario[0].expect.fits: must be true or false, got 'yes'"),
        ("fits = true", "fits = 1", "scenario[0].expect.fits: must be true or false, got 1"),
        ('layout = "tp1"', 'layout = "tp1"\nenforce_eager = "false"',
         "scenario[0].enforce_eager: must be true or false, got 'false'"),
    ],
    ids=["text-length", "text-limit", "yes-for-true", "one-for-true", "text-for-false"],
)  # fmt: skip
def test_text_for_a_spec_number_or_a_number_for_a_boolean_is_refused(
    old: str, new: str, line: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    spec = _spec(tmp_path)
    spec.write_text(spec.read_text().replace(old, new))
    assert _one_line_error(["check", str(spec)], capsys) == f"error: {spec}: {line}"


def test_a_byte_size_in_a_spec_is_still_text(tmp_path: Path) -> None:
    from capcliff.check.spec import parse_spec

    spec = _spec(tmp_path)
    text = spec.read_text().replace('layout = "tp1"', 'layout = "tp1"\nswap_space = "8GiB"')
    parsed = parse_spec(text, path=spec).spec.scenario[0]
    assert parsed.swap_space == 8 * 1024**3  # 8 GiB = 8,589,934,592 bytes


def test_a_boolean_for_a_workload_length_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    spec = _spec(tmp_path)
    spec.write_text(spec.read_text().replace("isl = 16", "isl = true"))
    line = _one_line_error(["check", str(spec)], capsys)
    assert line == f"error: {spec}: scenario[0].workload.isl: must be a number, got true"


@pytest.mark.parametrize(
    ("body", "line"),
    [
        ("[terms_gib]\nactivation_peak = true\n",
         "terms_gib.activation_peak: Input should be a valid number"),
        ('[step_time]\nprofile = "v"\nsource = "b"\npoints = true\nfixed_s = 0.001\nscale = 1\n',
         "step_time.points: must be a number, got true"),
    ],
    ids=["memory-term", "step-time-points"],
)  # fmt: skip
def test_a_boolean_for_a_calibration_number_is_refused(
    body: str, line: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cal = tmp_path / "cal.toml"
    cal.write_text('engine = "vllm"\nsource = "x"\n' + body)
    args = ["memory", "llama-3.1-8b", "--calibration", str(cal)]
    assert _one_line_error(args, capsys) == f"error: {cal}: {line}"


@pytest.mark.parametrize(
    "text",
    ["64..99999999999999999999999:16",  # past int64: numpy's geomspace raised a TypeError
     "64..20000000", "4,100000000000",  # more clients than the 10,000,000 requests a run has
     "64..-5:16"],  # numpy warned on stderr (log10 of a negative) before the refusal
    ids=["span-past-int64", "span-past-requests", "list-past-requests", "span-negative"],
)  # fmt: skip
def test_a_concurrency_past_any_run_is_refused(
    text: str, capsys: pytest.CaptureFixture[str]
) -> None:
    line = _one_line_error(["sweep", *SMALL, "--concurrency", text], capsys)
    assert line.startswith(f"error: concurrency: cannot read {text!r}; ")
    assert line.endswith("(at most 256 values, each >= 1 and <= 10,000,000)")


def test_a_serve_command_count_past_a_double_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    spec = _spec(tmp_path)  # --max-num-seqs 1e400 was int(inf): an OverflowError traceback
    command = "vllm serve meta-llama/Llama-3.1-8B --max-num-seqs 1e400"
    spec.write_text(spec.read_text().replace('layout = "tp1"', f'serve_command = "{command}"'))
    assert _one_line_error(["check", str(spec)], capsys) == (
        f"error: {spec}: scenario[0].serve_command: --max-num-seqs wants a whole number >= 1, "
        "got '1e400'"
    )


@pytest.mark.parametrize("command", ["sweep", "plan"])
@pytest.mark.parametrize(
    ("flag", "value", "hint"),
    [("--slo-tpot", "60", "0.06"), ("--slo-ttft", "2000", "2")],
    ids=["tpot", "ttft"],
)
def test_an_slo_flag_in_milliseconds_gets_a_seconds_hint(
    command: str, flag: str, value: str, hint: str, capsys: pytest.CaptureFixture[str]
) -> None:
    line = _one_line_error([command, *SMALL, flag, value], capsys)
    assert line.startswith(f"error: {flag}: {value} s is past ")
    assert line.endswith(f"did you mean {hint} (seconds)?")


def test_a_spec_calibration_is_read_from_the_spec_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    specs = tmp_path / "specs"
    (specs / "cal").mkdir(parents=True)
    cal = specs / "cal" / "v16.toml"
    assert main(["calibrate", str(V16), "--gpu", "h100-sxm", "-o", str(cal)]) == 0
    spec = _spec(specs, fits="true")
    spec.write_text(spec.read_text().replace('layout = "tp1"', 'layout = "tp1"\ncalibration = '
                    '"cal/v16.toml"').replace("h200-sxm", "h100-sxm"))  # fmt: skip
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)  # not the spec's folder: a CWD-relative read would miss it
    capsys.readouterr()
    assert main(["check", str(spec)]) == 0, capsys.readouterr().err


def test_a_spec_model_folder_is_not_read_from_the_current_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    specs = tmp_path / "specs"
    specs.mkdir()
    spec = _spec(specs)
    spec.write_text(spec.read_text().replace('"llama-3.1-8b"', '"model"'))
    _model_folder(tmp_path)  # tmp_path/model: beside the current directory, not the spec
    monkeypatch.chdir(tmp_path)  # it was read from here and the check passed
    line = _one_line_error(["check", str(spec)], capsys)
    assert (
        line == f"error: {spec}: scenario[0].model: {specs / 'model'}: (file): no such config.json"
    )


# Readers: nesting too deep for Python's parsers, integers past its 4,300-digit conversion


DEEP_JSON = "[" * 100_000 + "]" * 100_000
DEEP_TOML = "x = " + "[" * 100_000 + "]" * 100_000 + "\n"
# a dotted key: tomllib takes minutes and gigabytes (its time grows with the square of the parts)
DOTTED_TOML = "a" + ".a" * 100_000 + " = 1\n"
BIG_INT = "9" * 5000


@pytest.mark.parametrize(
    ("name", "text", "problem"),
    [
        ("t.jsonl", DEEP_JSON + "\n", "(json): nested too deeply"),
        ("t.jsonl", '{"input_tokens": ' + BIG_INT + ', "output_tokens": 1}\n',
         "(json): an integer with more than 4,300 digits"),
    ],
    ids=["deep", "5000-digits"],
)  # fmt: skip
def test_a_trace_too_deep_or_too_long_is_one_line(
    name: str, text: str, problem: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    trace = tmp_path / name
    trace.write_text(text)
    line = _one_line_error(["sweep", "llama-3.1-8b", "--workload", str(trace)], capsys)
    assert line.startswith(f"error: trace line 1: {problem}")


@pytest.mark.parametrize(
    ("suffix", "text", "problem"),
    [
        (".json", '{"a": ' + DEEP_JSON + "}", "(json): nested too deeply"),
        (".json", '{"a": ' + BIG_INT + "}", "(json): an integer with more than 4,300 digits"),
    ],
    ids=["deep", "5000-digits"],
)
def test_a_model_config_too_deep_or_too_long_is_one_line(
    suffix: str, text: str, problem: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = tmp_path / "model"
    folder.mkdir()
    (folder / f"config{suffix}").write_text(text)
    line = _one_line_error(["memory", str(folder)], capsys)
    assert line.startswith(f"error: {folder / 'config.json'}: {problem}")


@pytest.mark.parametrize(
    ("text", "problem"),
    [(DEEP_TOML, "(toml): nested too deeply"),
     (f"x = {BIG_INT}\n", "(toml): an integer with more than 4,300 digits"),
     (DOTTED_TOML, "(toml): line 1: a key 100,001 levels deep; keys nest at most 100 levels"),
     ("[" + ".".join(["t"] * 101) + "]\nx = 1\n", "(toml): line 1: a key 101 levels deep")],
    ids=["deep", "5000-digits", "dotted-key", "table-header"],
)  # fmt: skip
@pytest.mark.parametrize("surface", ["spec", "calibration"])
def test_a_toml_file_too_deep_or_too_long_is_one_line(
    surface: str, text: str, problem: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / f"{surface}.toml"
    path.write_text(text)
    args = (
        ["check", str(path)]
        if surface == "spec"
        else ["memory", "llama-3.1-8b", "--calibration", str(path)]
    )
    assert _one_line_error(args, capsys).startswith(f"error: {path}: {problem}")


def test_a_key_of_100_parts_is_read_and_a_long_string_value_is_no_key() -> None:
    data = parse_toml("a" + ".a" * 99 + " = 1\n" + 'x = """\n' + "." * 500 + '\n"""\n', source="f")
    inner = data
    for _ in range(99):
        inner = inner["a"]
    assert inner == {"a": 1} and data["x"] == "." * 500 + "\n"


def test_a_baseline_too_deep_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    baseline = tmp_path / "base.json"
    baseline.write_text(DEEP_JSON)
    line = _one_line_error(["check", str(_spec(tmp_path)), "--baseline", str(baseline)], capsys)
    assert line == f"error: {baseline}: (json): nested too deeply"


# Hypothesis corpora over the new surfaces: a refusal (one line) or a sound value, never a crash


JSON_SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=6),
)
JSON_VALUES = st.recursive(
    JSON_SCALARS,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner),
    max_leaves=8,
)


@settings(max_examples=150, deadline=None)
@given(
    fields=st.dictionaries(
        st.sampled_from(["turn", "input_tokens", "output_tokens", "arrival_s", "think_s",
                         "prefix_id", "prefix_tokens"]),
        JSON_SCALARS,
        max_size=4,
    )
)  # fmt: skip
def test_a_fuzzed_session_trace_row_is_refused_or_finite(fields: dict[str, object]) -> None:
    row = {"session_id": "s", "turn": 0, "input_tokens": 5, "output_tokens": 5, **fields}
    try:
        rows = parse_session_trace([json.dumps(row)])
    except InputError as exc:
        assert str(exc).startswith("trace line 1: ") and "\n" not in str(exc)
        return
    for r in rows:
        assert all(v is None or (math.isfinite(v) and v >= 0) for v in (r.arrival_s, r.think_s))


QUANT_FIELDS = ["quant_method", "bits", "group_size", "weight_block_size", "quant_algo",
                "config_groups", "ignore", "modules_to_not_convert", "zero_point"]  # fmt: skip


@settings(max_examples=200, deadline=None)
@given(
    method=st.sampled_from(["awq", "gptq", "fp8", "modelopt", "compressed-tensors", "mxfp4", "?"]),
    fields=st.dictionaries(st.sampled_from(QUANT_FIELDS), JSON_VALUES, max_size=4),
)
def test_a_fuzzed_quantization_config_is_refused_or_sound(
    method: str, fields: dict[str, object]
) -> None:
    try:
        quant = quantization_from_config({"quant_method": method, **fields}, path="c.json")
        for fmt in (quant.linear, quant.expert):
            if fmt is not None:
                assert fmt.bytes_per_element(4096) > 0
        quant.format_of("model.layers.0.mlp.down_proj", expert=False)
    except CatalogError as exc:
        assert str(exc).startswith("c.json: quantization_config.") and "\n" not in str(exc)


@settings(max_examples=150, deadline=None)
@given(header=JSON_VALUES, extra=st.binary(max_size=16), lie=st.booleans())
def test_a_fuzzed_safetensors_header_is_refused_or_counted(
    header: object, extra: bytes, lie: bool, tmp_path_factory: pytest.TempPathFactory
) -> None:
    folder = tmp_path_factory.mktemp("st")
    raw = json.dumps(header).encode()
    path = folder / "m.safetensors"
    path.write_bytes(struct.pack("<Q", len(raw) + (1000 if lie else 0)) + raw + extra)
    try:
        total = safetensors_bytes(folder)
    except CatalogError as exc:
        assert str(exc).startswith(f"{path}: (safetensors)") and "\n" not in str(exc)
        return
    assert total is not None and 0 <= total <= len(extra)


RUN_KEYS = ["completed", "num_prompts", "max_concurrency", "total_input_tokens",
            "total_output_tokens", "output_throughput", "mean_tpot_ms", "mean_ttft_ms",
            "random_input_len", "random_output_len", "model_id"]  # fmt: skip


# cells as people write them: thousands separators, units, text booleans
CELL_TEXTS = st.sampled_from(["1,024", "12 ms", "nan", "true", "1e3", " 8 ", "-0"])


@settings(max_examples=150, deadline=None)
@given(
    fields=st.dictionaries(
        st.sampled_from(RUN_KEYS), st.one_of(JSON_SCALARS, CELL_TEXTS), max_size=5
    )
)
def test_a_fuzzed_benchmark_run_is_refused_or_plausible(
    fields: dict[str, object], tmp_path_factory: pytest.TempPathFactory
) -> None:
    run = {**_vllm_run(8, 500.0, 14.0), **fields}
    path = tmp_path_factory.mktemp("bench") / "r.json"
    path.write_text(json.dumps(run))  # NaN / Infinity written as JSON's non-standard literals
    try:
        points = read_benchmark_file(path, ANY)
    except InputError as exc:
        assert "\n" not in str(exc)
        return
    for p in points:
        assert p.concurrency >= 1 and p.input_len >= 1 and p.output_len >= 1
        for value in (p.output_throughput_tok_s, p.mean_tpot_s, p.mean_ttft_s):
            assert value is None or (math.isfinite(value) and value > 0)
        # never seconds read as ms, never microseconds (or days) read as ms
        assert p.mean_tpot_s is None or 1e-3 <= p.mean_tpot_s <= 10


@settings(max_examples=150, deadline=None)
@given(text=st.text(alphabet='[]{}"0123456789.eE-+:, NaInfity\ntrue', max_size=60))
def test_fuzzed_text_is_parsed_or_refused_in_one_line(text: str) -> None:
    for parse in (parse_json, parse_toml):
        try:
            parse(text, source="f")
        except InputError as exc:
            assert str(exc).startswith("f: ") and "\n" not in str(exc).strip()


@settings(max_examples=150, deadline=None)
@given(text=st.text(alphabet="0123456789pd:tpe,@-h1x", max_size=24))
def test_a_fuzzed_disagg_spec_is_refused_or_within_one_deployment(text: str) -> None:
    from capcliff.analysis.disagg.pools import parse_disagg
    from capcliff.catalog.layout import MAX_GPUS

    try:
        spec = parse_disagg(text)
    except InputError as exc:
        assert str(exc).startswith("disagg: ") and "\n" not in str(exc)
        return
    gpus = spec.prefill_instances * spec.prefill.gpus + spec.decode_instances * spec.decode.gpus
    assert 2 <= gpus <= MAX_GPUS


@settings(max_examples=150, deadline=None)
@given(text=st.text(alphabet="cpunvme:,0123456789.eGiBTMK", max_size=20))
def test_a_fuzzed_offload_spec_is_refused_or_at_least_a_gib_per_tier(text: str) -> None:
    from capcliff.analysis.offload import parse_offload
    from capcliff.units import GIB

    try:
        sizes = parse_offload(text)
    except InputError as exc:
        assert "\n" not in str(exc)
        return
    assert sizes and all(size >= GIB for size in sizes.values())


EXPECT_KEYS = ["ttft_p99_max_s", "tpot_p99_max_s", "kv_headroom_min", "sustained_rps_min",
               "output_throughput_min_tok_s", "usd_per_million_tokens_max"]  # fmt: skip


@settings(max_examples=60, deadline=None)
@given(
    expect=st.dictionaries(
        st.sampled_from(EXPECT_KEYS),
        st.one_of(  # numbers, and what a hand-typed spec holds instead: text, booleans
            st.floats(allow_nan=True, allow_infinity=True), st.booleans(), CELL_TEXTS
        ),
        max_size=3,
    )
)
def test_fuzzed_check_limits_are_refused_or_finite(
    expect: dict[str, object], tmp_path_factory: pytest.TempPathFactory
) -> None:
    import tomli_w

    from capcliff.check.spec import parse_spec

    scenario = {"name": "s", "model": "llama-3.1-8b", "gpu": "h200-sxm", "layout": "tp1",
                "workload": {"isl": 10, "osl": 10}, "expect": expect}  # fmt: skip
    path = tmp_path_factory.mktemp("spec") / "s.toml"
    try:
        spec = parse_spec(tomli_w.dumps({"scenario": [scenario]}), path=path)
    except CatalogError as exc:
        assert all(line.startswith(f"{path}: ") for line in str(exc).splitlines())
        return
    limits = spec.spec.scenario[0].expect
    for key in expect:
        value = getattr(limits, key)
        assert isinstance(value, float) and math.isfinite(value)
        assert not isinstance(expect[key], bool | str)  # never read as 1, 0 or the text's number
    assert (limits.tpot_p99_max_s or 0) <= 10 and (limits.ttft_p99_max_s or 0) <= 600


# Fuzz round 2 (issue 23 item 5): what a fresh corpus of 1,903 cases still found


@pytest.mark.parametrize(
    ("change", "message"),
    [
        # no throughput and no TPOT: nothing to fit (LinAlgError traceback before)
        ({"output_throughput": None, "mean_tpot_ms": None, "mean_ttft_ms": None},
         "r.json:2: output_throughput and mean_tpot_ms: both missing; a run needs one to fit"),
        # true read as 1 token per answer (an SVD that did not converge before)
        ({"random_output_len": True}, "r.json:2: random_output_len: must be a number, got true"),
        # 1e9 ms (11.6 days) per token was fitted as "scale 1.9"
        ({"mean_tpot_ms": 1e9},
         "r.json:2: mean_tpot_ms: 1e+09 ms per token is past 10 s; these look like microseconds"),
        ({"max_concurrency": "1,024"},
         "r.json:2: max_concurrency: '1,024': write numbers without thousands separators"),
    ],
    ids=["no-measurement", "bool-length", "tpot-past-10s", "thousands-separator"],
)  # fmt: skip
def test_a_benchmark_run_that_cannot_be_fitted_is_one_line(
    change: dict[str, object], message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    runs = [dict(r) for r in RUNS]
    runs[1] = {k: v for k, v in {**runs[1], **change}.items() if v is not None}
    path = tmp_path / "r.json"
    path.write_text("\n".join(json.dumps(r) for r in runs))
    line = _one_line_error(["calibrate", str(path), "--model", "llama-3.1-8b"], capsys)
    assert line.startswith(f"error: {message}"), line


def test_a_csv_length_with_a_thousands_separator_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "b.csv"  # "1,024" was read as 1 token: a one-token answer has no TPOT
    path.write_text('concurrency,input_len,output_len,mean_tpot_ms\n8,1024,"1,024",14\n')
    with pytest.raises(InputError, match=r"^b\.csv: row 2: output_len: '1,024': write numbers"):
        read_benchmark_file(path, ANY)


@pytest.mark.parametrize("name", ["r.json", "r.jsonl", "b.csv"])
def test_a_result_file_saved_with_a_byte_order_mark_is_read(name: str, tmp_path: Path) -> None:
    # Excel and Notepad save UTF-8 with a BOM; it was read as part of the first key or column
    path = tmp_path / name
    if name == "b.csv":
        body = "concurrency,input_len,output_len,mean_tpot_ms\n8,1024,128,14\n32,1024,128,24\n"
    else:
        body = "\n".join(json.dumps(r) for r in RUNS)
    path.write_bytes(b"\xef\xbb\xbf" + body.encode())
    assert [p.concurrency for p in read_benchmark_file(path, ANY)][:2] == [8, 32]


def test_a_model_config_with_a_byte_order_mark_is_read(tmp_path: Path) -> None:
    folder = tmp_path / "m"
    folder.mkdir()
    (folder / "config.json").write_bytes(b"\xef\xbb\xbf" + json.dumps(_llama_config()).encode())
    assert get_model(str(folder)).arch.num_layers == 32  # Llama-3.1-8B's 32 layers


@pytest.mark.parametrize("size", ["0", "-2", "2.5"])
def test_a_log_parallel_size_under_one_or_fractional_is_one_line(
    size: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import re

    log = tmp_path / "v.log"  # tensor_parallel_size=0 divided by zero in the layout check before
    log.write_text(
        re.sub(r"tensor_parallel_size=\d+", f"tensor_parallel_size={size}", V16.read_text())
    )
    line = _one_line_error(["calibrate", str(log)], capsys)
    assert line == f"error: logfile: tensor_parallel_size: must be an integer >= 1, got {size}"


def test_an_output_length_list_past_64_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    osl = ",".join(str(n) for n in range(10, 75))  # 65 lengths: each a whole sweep (5,000 hung)
    args = ["sweep", "llama-3.1-8b", "--isl", "10", "--osl", osl, "--concurrency", "4"]
    line = _one_line_error(args, capsys)
    assert line.startswith("error: osl: cannot read '10,11,12,") and "at most 64 lengths" in line


def test_a_repeated_output_length_is_swept_once() -> None:
    from capcliff.cli.workload_options import workload_choice

    # 5,000 repeats of one length ran 5,000 identical sweeps (past 60 s)
    choice = workload_choice(
        10, ",".join(["10"] * 5000 + ["20", "10"]), None, 20, "batch", None, None
    )
    assert choice.osl == (10, 20)
