"""Bad input that a ninth campaign (benchmarks/fuzz_cases9.py) found: one test per class of
finding, each case named for it.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from test_bad_input import _one_line_error
from test_bad_input_campaign7 import INDEX, SHARDS, W, _folder, _st

from capcliff.catalog.catalogs import model_from_path
from capcliff.catalog.quantization import quantization_from_config, slow_regex_problem
from capcliff.cli import main
from capcliff.errors import CatalogError

SMALL_SWEEP = ["sweep", "llama-3.1-8b", "--isl", "100", "--osl", "100", "--num-requests", "20",
               "--concurrency", "4"]  # fmt: skip


# Skip-list regexes: a repeated group that branches, `(.|.)*X$`, or a dozen `.*` in a row ran
# for minutes against one module name (the check caught only a group holding a repeat), and a
# repeat count past the regex engine's limit, `a{99999999999}`, was a traceback (OverflowError).


@pytest.mark.parametrize(
    "pattern",
    ["(.|.)*X$", "(\\w|\\d)*Z$", "(.?){40}.{40}", "(.*){20}Z", "((a|b)c)*", ".*" * 12 + "Z$"],
    ids=["branch-star", "class-branch", "optional-times-40", "star-times-20", "nested-branch",
         "twelve-stars"],
)  # fmt: skip
def test_a_skip_regex_that_takes_exponential_time_is_refused(pattern: str) -> None:
    raw = {"quant_method": "fp8", "ignored_layers": [f"re:{pattern}"]}
    with pytest.raises(
        CatalogError, match=r"ignored_layers: regex .* exponential \(or high-polynomial\) time"
    ):
        quantization_from_config(raw, path="c")


@pytest.mark.parametrize(
    "pattern",
    [".*lm_head", "model.layers.*self_attn.*", ".*mlp.gate$", r".*\.experts\.(\d+)\..*",
     "(q|k|v)_proj", "(ab){3}", "(a|b)?", r"\(.*\)*", "[(|]*x"],
)  # fmt: skip
def test_engine_style_regexes_are_not_called_slow(pattern: str) -> None:
    # a branch or a repeat inside a group that is not itself repeated backtracks boundedly
    assert slow_regex_problem(pattern) is None


def test_four_unbounded_repeats_pass_and_five_do_not() -> None:
    # each unbounded repeat past a few multiplies a failing match's time by the name's length
    assert slow_regex_problem(".*a.*b.*c.*") is None
    assert slow_regex_problem(".*a.*b.*c.*d+") == ("holds 5 unbounded repeats (*, +), more than 4")


@pytest.mark.parametrize("count", ["99999999999", "9" * 5000])
def test_a_repeat_count_past_the_regex_engine_is_one_line(count: str) -> None:
    raw = {"quant_method": "compressed-tensors", "ignore": [f"re:a{{{count}}}"],
           "config_groups": {"g": {"weights": {"num_bits": 8, "type": "float"}}}}  # fmt: skip
    with pytest.raises(CatalogError, match=r"^c: quantization_config\.ignore: bad regex"):
        quantization_from_config(raw, path="c")


# A shard index beside a consolidated copy (Mistral-7B-v0.3 ships consolidated.safetensors
# with its shards): every *.safetensors was counted, the weights twice. vLLM loads only the
# files the index names (weight_utils.py, filter_duplicate_safetensors_files).

BIG = {"w": {"dtype": "BF16", "shape": [4, 4], "data_offsets": [0, 32]}}  # 4 x 4 x 2 = 32 bytes


def test_a_consolidated_copy_beside_indexed_shards_is_not_counted(tmp_path: Path) -> None:
    folder = _folder(tmp_path, {
        "model.safetensors.index.json": INDEX, SHARDS[0]: _st({"a": W}, b"\0" * 8),
        SHARDS[1]: _st({"b": W}, b"\0" * 8), "consolidated.safetensors": _st(BIG, b"\0" * 32),
    })  # fmt: skip
    assert model_from_path(folder).checkpoint_bytes == 16  # the two 8-byte shards


def test_a_shard_index_naming_no_shard_is_refused(tmp_path: Path) -> None:
    folder = _folder(tmp_path, {
        "model.safetensors.index.json": json.dumps({"weight_map": {}}),
        "model.safetensors": _st({"w": W}, b"\0" * 8),
    })  # fmt: skip
    with pytest.raises(CatalogError, match=r"weight_map: names no shard"):
        model_from_path(folder)


# A benchmark CSV with a column named twice: the reader kept the last one's cells unsaid.


def test_a_csv_column_named_twice_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "b.csv"
    path.write_text(
        "concurrency,input_len,output_len,output_throughput_tok_s,mean_tpot_ms,concurrency\n"
        "8,1024,128,500,14,64\n32,1024,128,1200,24,8\n"
    )
    line = _one_line_error(
        ["calibrate", str(path), "--model", "llama-3.1-8b", "--gpu", "h100-sxm"], capsys
    )
    assert line.endswith("column 'concurrency' is named twice in the header; keep one (which of "
                         "them holds the run's figures is not said)")  # fmt: skip


def test_blank_column_names_may_repeat(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # trailing commas (a spreadsheet's empty columns) name no figure
    path = tmp_path / "b.csv"
    path.write_text(
        "concurrency,input_len,output_len,output_throughput_tok_s,mean_tpot_ms,,\n"
        "8,1024,128,500,14,,\n32,1024,128,1200,24,,\n64,1024,128,1800,32,,\n"
    )
    args = ["calibrate", str(path), "--model", "llama-3.1-8b", "--gpu", "h100-sxm"]
    assert main(args) == 0, capsys.readouterr().err


# TensorRT-LLM's attention-DP balancing on a dense model: no layout of it has attention DP, and
# the setting was dropped unsaid (the MoE backends were already refused there).


def test_attention_dp_balance_on_a_dense_model_is_refused(
    capsys: pytest.CaptureFixture[str],
) -> None:
    line = _one_line_error(
        [*SMALL_SWEEP, "--engine", "trtllm", "--attention-dp-balance", "on"], capsys
    )
    assert line == (
        "error: attention_dp_balance: balances attention-DP ranks, which only MoE models have; "
        "llama-3.1-8b is dense (no experts); leave it unset"
    )


def test_attention_dp_balance_off_on_a_dense_model_is_accepted(
    capsys: pytest.CaptureFixture[str],
) -> None:
    args = [*SMALL_SWEEP, "--engine", "trtllm", "--attention-dp-balance", "off"]
    assert main([*args, "--format", "json"]) == 0, capsys.readouterr().err


# A run whose throughput contradicts its own latencies: 1 tok/s beside 8 clients at 14 ms TPOT
# and 150 ms TTFT for 128 tokens (8 x 128 / (0.150 + 127 x 0.014) = 531 tok/s) was fitted, with
# a +46,398 % residual printed beside the calibration.


def test_a_throughput_its_latencies_contradict_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "b.csv"
    path.write_text(
        "concurrency,input_len,output_len,output_throughput_tok_s,mean_tpot_ms,mean_ttft_ms\n"
        "8,1024,128,1,14,150\n32,1024,128,2,24,160\n"
    )
    line = _one_line_error(
        ["calibrate", str(path), "--model", "llama-3.1-8b", "--gpu", "h100-sxm"], capsys
    )
    assert line == (
        "error: b.csv: row 2: output_throughput: 1 tok/s, where 8 clients of 128 output tokens at "
        "TTFT 150 ms and TPOT 14 ms give about 531.1 tok/s; the figures are of different runs or "
        "units"
    )


def test_a_throughput_within_four_times_its_latencies_is_fitted(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # 531 tok/s by Little's law; 140 tok/s is 3.8x under it, within the bound
    path = tmp_path / "b.csv"
    path.write_text(
        "concurrency,input_len,output_len,output_throughput_tok_s,mean_tpot_ms,mean_ttft_ms\n"
        "8,1024,128,140,14,150\n32,1024,128,1300,24,160\n"
    )
    args = ["calibrate", str(path), "--model", "llama-3.1-8b", "--gpu", "h100-sxm"]
    assert main(args) == 0, capsys.readouterr().err


# A benchmark run of 1,000,000 clients: the fit simulates one request per client at least, and
# ran for hours; past the sample a fit simulates (20,000 requests) a run is refused.


def test_a_run_of_more_clients_than_a_fit_simulates_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # figures consistent by Little's law: 30,000 x 128 / (0.150 + 127 x 0.014) = 1.99M tok/s
    path = tmp_path / "b.csv"
    path.write_text(
        "concurrency,input_len,output_len,output_throughput_tok_s,mean_tpot_ms,mean_ttft_ms\n"
        "30000,1024,128,1990000,14,150\n"
    )
    line = _one_line_error(
        ["calibrate", str(path), "--model", "llama-3.1-8b", "--gpu", "h100-sxm"], capsys
    )
    assert line == (
        "error: row 2: concurrency: 30,000 clients is past the 20,000 requests a fitted run "
        "simulates; give runs of fewer clients"
    )


# A workload that names a JSON (not JSON Lines) trace read "unknown preset 't.json'; known:
# reasoning, chat, chat-short": neither what a trace is nor the two session presets.


def test_a_workload_that_is_no_preset_says_what_a_trace_is(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    trace = tmp_path / "t.json"
    trace.write_text('[{"input_tokens": 5, "output_tokens": 5}]')
    line = _one_line_error(["sweep", "llama-3.1-8b", "--workload", str(trace)], capsys)
    assert line.startswith("error: workload: unknown '")  # the name, cut at 80 characters
    assert line.endswith(
        "; give a preset (reasoning, chat, chat-short, multiturn-chat, agentic) or a trace: a "
        "JSON Lines file, one request per line, named *.jsonl"
    )


# A calibration of another GPU with --force: a fleet's other GPU types and a pool's GPU were
# re-resolved without the flag, so the run refused it there ("pass --force to apply it anyway",
# with --force given).

CALIBRATION = """engine = "vllm"
source = "r.json"
model = "llama-3.1-8b"
gpu = "h100-sxm"
layout = "tp1"
weight_dtype = "bf16"
kv_cache_dtype = "bf16"
[step_time]
fixed_s = 0.002
scale = 1.1
points = 3
source = "r.json"
profile = "vllm"
"""


@pytest.fixture
def cal(tmp_path: Path) -> Path:
    """A calibration fitted on one H100 as tp1."""
    path = tmp_path / "c.toml"
    path.write_text(CALIBRATION)
    return path


def test_a_forced_calibration_reaches_a_fleets_other_gpu(
    cal: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = ["plan", "llama-3.1-8b", "--jobs", "1", "--isl", "100", "--osl", "100",
            "--num-requests", "20", "--rate", "2", "--slo-ttft", "2", "--gpu", "h100-sxm,b200",
            "--calibration", str(cal), "--force", "--format", "json"]  # fmt: skip
    assert main(args) == 0
    err = capsys.readouterr().err
    assert f"warning: calibration {cal} applied to another deployment: gpu h100-sxm != b200" in err


def test_a_forced_calibration_reaches_a_pools_gpu(
    cal: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = [*SMALL_SWEEP, "--gpu", "h100-sxm", "--disagg", "1p:tp1@b200,1d:tp1",
            "--calibration", str(cal), "--force", "--format", "json"]  # fmt: skip
    assert main(args) == 0, capsys.readouterr().err


# `memory --layout all` (the default) with a calibration made on tp1 applied its per-GPU terms
# to every layout unsaid; each other layout is said now (a named one refuses it unforced).


def test_memory_over_all_layouts_says_another_layouts_calibration(
    cal: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = ["memory", "llama-3.1-8b", "--gpus", "2", "--gpu", "h100-sxm", "--calibration",
            str(cal), "--format", "json"]  # fmt: skip
    assert main(args) == 0
    err = capsys.readouterr().err
    # one line for the three other layouts of 2 GPUs (dp2, tp2, pp2), not one each
    assert f"calibration {cal} applied to another deployment: layout tp1 != dp2, tp2, pp2\n" in err
    assert err.count("applied to another deployment") == 1
