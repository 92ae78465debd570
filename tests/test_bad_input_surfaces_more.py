"""Bad input that a third campaign (benchmarks/fuzz_surfaces.py, 3,100 mutated-valid cases over
every surface of issue 23) still found: one test per class of finding.

Each case exits 2 with one `error: ...` line naming the field and what is valid (never a
traceback, a hang or a silently simulated nonsense), and no file is lost.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_bad_input import _one_line_error

from capcliff.calibrate.benchmarks import DeploymentFilter, read_benchmark_file
from capcliff.catalog.architecture import architecture_from_config
from capcliff.catalog.quantization import quantization_from_config
from capcliff.cli import main
from capcliff.errors import CatalogError, InputError
from capcliff.sim.traffic.sessions import parse_session_trace
from tests.bench_csv import csv_with

ROOT = Path(__file__).resolve().parent.parent
V16 = ROOT / "tests" / "fixtures" / "logs" / "vllm_v1_v16_llama31_8b_eager.txt"
DSR1_CSV = ROOT / "tests" / "fixtures" / "bench" / "dsr1_0528_h200_tp8_sglang.csv"
LLAMA_REPO = "meta-llama/Llama-3.1-8B-Instruct"
SMALL = ["llama-3.1-8b", "--isl", "100", "--osl", "100", "--num-requests", "20"]
LONG_NAME = "x" * 5000  # past the 255 bytes a file name may have (ENAMETOOLONG)
BIG_INT = 10**400  # parses (under 4,300 digits) but no float holds it


def _llama_config() -> dict[str, object]:
    card = tomllib.loads((ROOT / "model_cards" / "llama-3.1-8b.toml").read_text())
    return dict(card["config"])


def _vllm_run(**changes: object) -> dict[str, object]:
    run: dict[str, object] = {
        "backend": "vllm", "model_id": LLAMA_REPO, "num_prompts": 200, "max_concurrency": 32,
        "completed": 200, "total_input_tokens": 204_800, "total_output_tokens": 25_600,
        "output_throughput": 1200.0, "mean_ttft_ms": 150.0, "mean_tpot_ms": 24.0,
    }  # fmt: skip
    return {**run, **changes}


def _runs_file(tmp_path: Path, *runs: dict[str, object]) -> Path:
    path = tmp_path / "r.json"
    path.write_text("\n".join(json.dumps(r) for r in runs))
    return path


ANY = DeploymentFilter(hf_repo=LLAMA_REPO)


# Names the system refuses (ENAMETOOLONG): an OSError traceback before, wherever a flag named one


@pytest.mark.parametrize(
    ("args", "start"),
    [
        (["memory", LONG_NAME], "error: 'xxx"),
        (["memory", LONG_NAME + ".json"], "error: 'xxx"),
        (["sweep", LONG_NAME], "error: 'xxx"),
        (["sweep", "llama-3.1-8b", "--workload", LONG_NAME + ".jsonl"], "error: workload: cannot"),
        (["sweep", "llama-3.1-8b", "--gpu", "h100-sxm," * 40], "error: gpu: unknown id"),
    ],
    ids=["model", "model-json", "sweep-model", "trace", "gpu-list"],
)
def test_a_name_past_the_system_limit_is_one_line(
    args: list[str], start: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert _one_line_error(args, capsys).startswith(start)


# Counts in layouts and disagg specs: 5,000 digits crashed int(); an Arabic-Indic digit read as 1


@pytest.mark.parametrize(
    ("flag", "value", "start"),
    [
        ("--layout", "tp" + "9" * 5000, "error: layout: cannot read 'tp999"),
        ("--disagg", "1p:tp1,1d:tp" + "9" * 5000, "error: disagg: cannot read layout 'tp999"),
        ("--disagg", "\u0661p:tp1,1d:tp1", "error: disagg: cannot read '\u0661p:tp1,1d:tp1'"),
    ],
    ids=["layout-5000-digits", "disagg-5000-digits", "disagg-arabic-indic-digit"],
)
def test_a_count_of_5000_or_non_ascii_digits_is_refused(
    flag: str, value: str, start: str, capsys: pytest.CaptureFixture[str]
) -> None:
    line = _one_line_error(["sweep", *SMALL, "--concurrency", "4", flag, value], capsys)
    assert line.startswith(start)
    assert len(line) < 400  # the value is cut, not printed whole


# Session traces: a prefix named by NaN, 1.5 or [1] shared a prefix with any other so named


@pytest.mark.parametrize("prefix", [float("nan"), 1.5, [1], {"a": 1}, True])
def test_a_prefix_id_that_is_no_name_is_refused(prefix: object) -> None:
    row = {"session_id": "a", "turn": 0, "input_tokens": 5, "output_tokens": 5,
           "prefix_id": prefix, "prefix_tokens": 4}  # fmt: skip
    with pytest.raises(InputError, match=r"^trace line 1: prefix_id: must be a string or an"):
        parse_session_trace([json.dumps(row)])


# A number no float holds (309 to 4,300 digits): OverflowError in math.isfinite before


@pytest.mark.parametrize("session", [True, False], ids=["session-trace", "plain-trace"])
def test_a_400_digit_arrival_is_refused(
    session: bool, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ids = '"session_id": "a", "turn": 0, ' if session else ""
    trace = tmp_path / "t.jsonl"
    trace.write_text(f'{{{ids}"input_tokens": 5, "output_tokens": 5, "arrival_s": {BIG_INT}}}\n')
    line = _one_line_error(["sweep", "llama-3.1-8b", "--workload", str(trace)], capsys)
    assert line == (
        "error: trace line 1: arrival_s: must be a finite number >= 0 (seconds), got an integer "
        "of 401 digits"
    )


def test_a_400_digit_benchmark_figure_is_refused(tmp_path: Path) -> None:
    path = _runs_file(tmp_path, _vllm_run(mean_tpot_ms=BIG_INT))
    with pytest.raises(InputError, match=r"mean_tpot_ms: must be a finite number, got an integer"):
        read_benchmark_file(path, ANY)


# Settings that were ignored without a word


def test_a_rate_with_a_trace_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    trace = tmp_path / "t.jsonl"
    trace.write_text(
        '{"arrival_s": 0, "input_tokens": 50, "output_tokens": 20}\n'
        '{"arrival_s": 0.4, "input_tokens": 50, "output_tokens": 20}\n'
    )
    args = ["plan", "llama-3.1-8b", "--gpus", "1", "--workload", str(trace), "--rate", "3"]
    # the plan said "offered 2.50 requests/s (trace)" and dropped --rate 3
    assert _one_line_error(args, capsys) == (
        "error: rate: a trace with arrival times replays them (or --clients); drop --rate "
        "(a trace without times arrives at the rate given)"
    )


@pytest.mark.parametrize("command", ["sweep", "plan"])
def test_a_request_count_with_a_trace_is_refused(
    command: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    trace = tmp_path / "t.jsonl"
    trace.write_text('{"arrival_s": 0, "input_tokens": 50, "output_tokens": 20}\n')
    args = [command, "llama-3.1-8b", "--workload", str(trace), "--num-requests", "5"]
    # the sweep replayed the trace's one request and never said --num-requests 5 went unused
    assert _one_line_error(args, capsys) == (
        "error: num_requests: a trace has as many requests as lines; drop --num-requests"
    )


def test_write_back_without_offload_tiers_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    args = ["sweep", *SMALL, "--concurrency", "4", "--offload-policy", "write-back"]
    assert _one_line_error(args, capsys) == (
        "error: --offload-policy: needs offload tiers to write to (offload, e.g. cpu:512GiB), "
        "got 'write-back'"
    )


@pytest.mark.parametrize("flag", [["--engine-version", "0.0.0"], ["--gpu", ""]])
def test_a_calibrate_flag_a_log_cannot_use_is_refused(
    flag: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    line = _one_line_error(["calibrate", str(V16), "--model", "llama-3.1-8b", *flag], capsys)
    assert line in (
        "error: engine-version: applies to benchmark results, not a start-up log",
        "error: gpu: empty; give a value or leave the flag out",
    )


# A price per GPU-second given as per GPU-hour: an H100 at $2/hour is $0.00056/second


def test_a_price_under_a_cent_per_gpu_hour_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    args = ["plan", "llama-3.1-8b", "--isl", "10", "--osl", "10", "--rate", "2"]
    line = _one_line_error([*args, "--gpu", "h100-sxm", "--price-gpu-hour", "0.00056"], capsys)
    assert line.startswith("error: price-gpu-hour: cannot read '0.00056'; give one price in [0.01")


# Benchmark results: a JSON value that is no number was read as absent (and fitted without it)


@pytest.mark.parametrize("value", ["abc", "12", [1], {"a": 1}, ""])
@pytest.mark.parametrize("key", ["max_concurrency", "mean_tpot_ms", "output_throughput"])
def test_a_benchmark_figure_that_is_no_json_number_is_refused(
    key: str, value: object, tmp_path: Path
) -> None:
    path = _runs_file(tmp_path, _vllm_run(**{key: value}))
    with pytest.raises(InputError, match=rf"^r\.json:1: {key}: must be a number"):
        read_benchmark_file(path, ANY)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"completed": 0}, "r.json:1: completed: no finished requests in the result"),
        ({"num_prompts": 100}, "r.json:1: completed: 200 requests finished of 100 sent"),
        ({"model_id": ["x"]}, "r.json:1: model_id: must be the model's name, got ['x']"),
        ({"mean_ttft_ms": 1e12}, "r.json:1: mean_ttft_ms: 1e+12 ms is past a day"),
        (
            {"max_concurrency": 1e308},
            "r.json:1: max_concurrency: must be a number in 1 to 10,000,000, got 1e+308",
        ),
    ],
    ids=[
        "completed-0",
        "more-completed-than-sent",
        "model-id-list",
        "ttft-past-a-day",
        "cap-1e308",
    ],
)
def test_a_benchmark_run_that_contradicts_itself_is_refused(
    change: dict[str, object], message: str, tmp_path: Path
) -> None:
    with pytest.raises(InputError) as caught:
        read_benchmark_file(_runs_file(tmp_path, _vllm_run(**change)), ANY)
    assert str(caught.value).startswith(message)


def test_a_concurrency_cap_past_the_requests_is_the_requests(tmp_path: Path) -> None:
    # 200 requests under a cap of 10,000,000 run 200 at once at most (the fit ran for minutes);
    # 200 x 128 tokens / (150 ms + 127 x 24 ms) = 8,005 tok/s is what 200 at once produce
    path = _runs_file(tmp_path, _vllm_run(max_concurrency=10_000_000, output_throughput=8000.0))
    assert [p.concurrency for p in read_benchmark_file(path, ANY)] == [200]


@pytest.mark.parametrize(
    ("column", "value", "message"),
    [
        ("concurrency", "abc", "B53: concurrency: must be a number, got 'abc'"),
        ("mean_tpot_ms", "nan", "B53: mean_tpot_ms: must be a number, got 'nan'"),
        ("input_len", "true", "B53: input_len: must be a number, got 'true'"),
        ("num_gpus", "-1", "B53: num_gpus: must be a number in 1 to 65,536, got -1.0"),
        ("num_gpus", "abc", "B53: num_gpus: must be a number, got 'abc'"),
    ],
    ids=["concurrency-text", "tpot-nan", "length-true", "gpus-negative", "gpus-text"],
)
def test_a_csv_cell_that_is_no_number_is_refused_not_dropped(
    column: str, value: str, message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # the row was read as lacking the figure (or as another deployment) and left out unsaid
    path = csv_with(tmp_path, column, value, row=1)
    args = ["calibrate", str(path), "--model", "deepseek-r1", "--gpu", "h200-sxm", "--gpus", "8"]
    line = _one_line_error([*args, "--engine", "sglang"], capsys)
    assert message in line


def test_an_empty_csv_cell_still_leaves_its_row_out(tmp_path: Path) -> None:
    keep = DeploymentFilter(hf_repo="deepseek-ai/DeepSeek-R1", gpus=8, engine="sglang")
    assert [
        p.row_id for p in read_benchmark_file(csv_with(tmp_path, "input_len", "", row=1), keep)
    ] == ["B52"]


@settings(max_examples=100, deadline=None)
@given(
    key=st.sampled_from(
        [
            "max_concurrency",
            "completed",
            "total_output_tokens",
            "mean_tpot_ms",
            "output_throughput",
            "random_input_len",
            "mean_ttft_ms",
        ]
    ),
    value=st.one_of(
        st.text(max_size=8),
        st.booleans(),
        st.lists(st.integers(), max_size=2),
        st.dictionaries(st.text(max_size=2), st.integers(), max_size=1),
    ),
)
def test_any_non_number_in_a_benchmark_run_is_refused_naming_its_key(
    key: str, value: object, tmp_path_factory: pytest.TempPathFactory
) -> None:
    path = _runs_file(tmp_path_factory.mktemp("b"), _vllm_run(**{key: value}))
    with pytest.raises(InputError) as caught:
        read_benchmark_file(path, ANY)
    assert str(caught.value).startswith(f"r.json:1: {key}: ") and "\n" not in str(caught.value)


# Quantization configs and model configs: values read by their truth or their text


def _config(**changes: object) -> dict[str, object]:
    return {**_llama_config(), **changes}


@pytest.mark.parametrize(
    ("weights", "field"),
    [
        ({"symmetric": "false"}, "config_groups.weights.symmetric: must be true or false"),
        ({"symmetric": 0}, "config_groups.weights.symmetric: must be true or false"),
        ({"strategy": "x"}, "config_groups.weights.strategy: must be one of tensor, channel"),
    ],
    ids=["symmetric-text", "symmetric-zero", "unknown-strategy"],
)
def test_a_compressed_tensors_scheme_read_by_its_truth_is_refused(
    weights: dict[str, object], field: str
) -> None:
    scheme = {"num_bits": 4, "type": "int", "strategy": "group", "group_size": 128, **weights}
    raw = {"quant_method": "compressed-tensors", "config_groups": {"g": {"weights": scheme}}}
    with pytest.raises(CatalogError, match=rf"^c: quantization_config\.{field}"):
        quantization_from_config(raw, path="c")


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ({"quant_method": "awq", "bits": 3}, "bits: AWQ takes 4 bits per weight, got 3"),
        ({"quant_method": "fbgemm_fp8", "modules_to_not_convert": {}},
         "modules_to_not_convert: must be a list of module names or patterns"),
    ],
    ids=["awq-3-bits", "skip-list-object"],
)  # fmt: skip
def test_a_quantization_no_engine_loads_is_refused(raw: dict[str, object], message: str) -> None:
    with pytest.raises(CatalogError, match=rf"^c: quantization_config\.{message}"):
        quantization_from_config(raw, path="c")


@pytest.mark.parametrize("pattern", ["re:(.*)*x$", "re:(\\w+\\.?)*x$", "re:(a+)+"])
def test_a_skip_regex_that_backtracks_forever_is_refused(pattern: str) -> None:
    # re.match("(.*)*x$", "model.layers.10.self_attn.q_proj_weights") ran for minutes: a hang
    raw = {"quant_method": "fp8", "ignored_layers": [pattern]}
    with pytest.raises(CatalogError, match=r"repeats a group that itself repeats"):
        quantization_from_config(raw, path="c")


@pytest.mark.parametrize("pattern", ["re:.*lm_head", "re:model.layers.*self_attn.*", "re:(q|k)_p"])
def test_an_engine_style_skip_regex_is_read(pattern: str) -> None:
    raw = {"quant_method": "fp8", "ignored_layers": [pattern]}
    assert quantization_from_config(raw, path="c").excluded == (pattern,)


@pytest.mark.parametrize("dtype", [False, "", {}, 0.0])
def test_a_torch_dtype_that_is_no_name_is_refused(dtype: object) -> None:
    # false, "" or {} read as "not given" and sized the weights in bf16
    with pytest.raises(CatalogError, match=r"^c: torch_dtype: must be a dtype name such as"):
        architecture_from_config(_config(torch_dtype=dtype), path="c")


def test_a_safetensors_dtype_list_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import struct

    folder = tmp_path / "m"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps(_llama_config()))
    header = json.dumps({"w": {"dtype": ["BF16"], "shape": [2, 2], "data_offsets": [0, 8]}})
    data = struct.pack("<Q", len(header)) + header.encode() + bytes(8)
    (folder / "model.safetensors").write_bytes(data)  # TypeError: unhashable type before
    line = _one_line_error(["memory", str(folder), "--gpus", "1"], capsys)
    assert line.startswith(f"error: {folder / 'model.safetensors'}: (safetensors): w.dtype: ")


# Outputs: --force renamed a file over a device or a pipe (`--junit /dev/null --force` as root
# replaced /dev/null itself)


def test_an_output_onto_a_pipe_is_refused_and_the_pipe_kept(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    fifo = tmp_path / "out.toml"
    os.mkfifo(fifo)
    args = ["calibrate", str(V16), "--model", "llama-3.1-8b", "-o", str(fifo), "--force"]
    assert _one_line_error(args, capsys) == (
        f"error: --output: {fifo} is a device, pipe or socket, not a file; capcliff writes a "
        "file whole by renaming over it; give a file path"
    )
    assert fifo.is_fifo()


@pytest.mark.parametrize("flag", ["--junit", "--markdown", "--write-baseline"])
def test_an_output_path_ending_in_a_separator_is_refused(
    flag: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Path("out/") is Path("out"): a file named out was written where a folder was meant
    target = f"{tmp_path}/out/"
    line = _one_line_error(["check", str(tmp_path / "s.toml"), flag, target], capsys)
    assert line == f"error: {flag}: {target} ends in a separator, which names a folder; give a file"
    assert not (tmp_path / "out").exists()


def test_a_cost_limit_no_deployment_can_pass_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    spec = tmp_path / "s.toml"
    spec.write_text(
        '[[scenario]]\nname = "s"\nmodel = "llama-3.1-8b"\ngpu = "h100-sxm"\ngpus = 1\n'
        "[scenario.workload]\nisl = 100\nosl = 100\nrate = 2\nnum_requests = 20\n"
        "[scenario.expect]\nusd_per_million_tokens_max = 1e308\n"
    )
    assert _one_line_error(["check", str(spec)], capsys) == (
        f"error: {spec}: scenario[0].expect.usd_per_million_tokens_max: Input should be less "
        "than or equal to 1000000"
    )


@pytest.mark.parametrize(
    ("tp", "message"),
    [
        ("1e3", "serve_command: --tensor-parallel-size wants a whole number >= 1, got '1e3'"),
        (
            "2 2",
            "serve_command: '2' is neither the model nor a flag's value; the engine refuses it",
        ),
    ],
    ids=["exponent", "extra-word"],
)
def test_a_serve_command_the_engine_refuses_is_refused(
    tp: str, message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    # vLLM's argparse takes neither: "1e3" is no int, the second "2" an unrecognized argument
    command = f"vllm serve meta-llama/Llama-3.1-8B --tensor-parallel-size {tp}"
    assert _one_line_error(["memory", "--serve-command", command], capsys).startswith(
        f"error: {message}"
    )


def test_main_still_runs_a_valid_command_after_these_guards(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["memory", "llama-3.1-8b", "--gpus", "1"]) == 0
    assert "Traceback" not in capsys.readouterr().err


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs Linux's /dev/full")
@pytest.mark.parametrize("args", [["memory", "llama-3.1-8b"], ["models"]], ids=["memory", "models"])
def test_standard_output_on_a_full_disk_is_one_line(args: list[str]) -> None:
    # `capcliff memory ... > /dev/full`: rich's write failed with ENOSPC, an OSError traceback and
    # exit 4, as if capcliff had a bug.
    with open("/dev/full", "w") as full:
        done = subprocess.run(
            [sys.executable, "-m", "capcliff", *args], stdout=full, stderr=subprocess.PIPE,
            text=True, cwd=ROOT, check=False,
        )  # fmt: skip
    assert done.returncode == 2
    assert done.stderr == ("error: output: cannot write standard output: No space left on device\n")


@pytest.mark.parametrize(
    ("value", "shown"), [("1", "1"), ("1KiB", "1,024"), ("1048575", "1,048,575")]
)
def test_a_kv_pool_under_one_mebibyte_is_refused(
    value: str, shown: str, capsys: pytest.CaptureFixture[str]
) -> None:
    # `--kv-cache-memory 1` is one byte (vLLM reads a bare number as bytes too): less than one
    # 16-token block of Llama-3.1-8B (16 x 131,072 B = 2 MiB). It was simulated as a pool that
    # holds nothing; it is a unit slip, refused in one line.
    line = _one_line_error(["memory", "llama-3.1-8b", "--gpus", "1", "--kv-cache-memory", value],
                           capsys)  # fmt: skip
    assert line.startswith(f"error: --kv-cache-memory: {shown} bytes is under 1 MiB")


def test_a_kv_pool_of_one_mebibyte_is_read(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["memory", "llama-3.1-8b", "--gpus", "1", "--kv-cache-memory", "1MiB"]) == 0
