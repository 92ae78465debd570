"""Bad input never reaches the simulator: every case of issue 9's list through the real entry point.

Each case exits 2 with one line on stderr naming the flag, field or file (never a traceback), or,
for an output, refuses without --force and leaves the file as it was.
"""

from __future__ import annotations

import json
import os
import tomllib
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from capcliff.cli import main

ROOT = Path(__file__).resolve().parent.parent
LOGS = ROOT / "tests" / "fixtures" / "logs"
V01 = LOGS / "vllm_v0_v01_llama31_8b_rtx3090_20k.txt"  # vLLM V0, llama-3.1-8b, tp1
SMALL = ["llama-3.1-8b", "--isl", "100", "--osl", "100", "--num-requests", "20"]


def _one_line_error(args: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    """Run `args`; assert exit 2 and a single `error: ...` line; return that line."""
    code = main(args)
    err = capsys.readouterr().err
    assert code == 2, err
    assert "Traceback" not in err
    assert err.startswith("error: ") and err.count("\n") == 1, err
    return err.strip()


def _llama_config(tmp_path: Path, **changes: object) -> Path:
    card = tomllib.loads((ROOT / "model_cards" / "llama-3.1-8b.toml").read_text())
    path = tmp_path / "config.json"
    path.write_text(json.dumps({**card["config"], **changes}))
    return path


# Tracebacks (exit 4) before


@pytest.mark.parametrize("command", ["plan", "sweep"])
def test_a_negative_seed_is_refused(command: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert "--seed: must be an integer >= 0, got -1" in _one_line_error(
        [command, *SMALL, "--seed", "-1"], capsys
    )


def test_an_infinite_gpu_memory_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    line = _one_line_error(["memory", "--gpu-total-memory", "1e400GiB"], capsys)
    assert line.startswith("error: --gpu-total-memory: '1e400GiB' is past")


def test_a_config_of_random_bytes_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "config.json"
    path.write_bytes(bytes(range(256)) * 8)  # NUL bytes and invalid UTF-8
    assert _one_line_error(["memory", str(path)], capsys) == (
        f"error: {path}: (file): a binary file, not text"
    )


def test_a_binary_calibration_file_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "cal.toml"
    path.write_bytes(b"\x00\xff\xfe" * 100)
    line = _one_line_error(["memory", "llama-3.1-8b", "--calibration", str(path)], capsys)
    assert line == f"error: {path}: (file): a binary file, not text"


def test_a_latin1_trace_names_its_byte(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "trace.jsonl"
    path.write_bytes(
        '{"input_tokens": 10, "output_tokens": 10, "note": "café"}\n'.encode("latin-1")
    )
    line = _one_line_error(["sweep", "llama-3.1-8b", "--workload", str(path)], capsys)
    # "café" in Latin-1: é is the single byte 0xe9 at offset 54 (counted by hand: 54 characters
    # of ASCII before it).
    assert line == f"error: workload: cannot read {path}: not UTF-8 text (byte 0xe9 at offset 54)"


def test_a_directory_given_as_a_trace_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = tmp_path / "t.jsonl"
    folder.mkdir()
    line = _one_line_error(["sweep", "llama-3.1-8b", "--workload", str(folder)], capsys)
    assert line == f"error: workload: cannot read {folder}: a directory, not a file"


def test_a_truncated_config_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _llama_config(tmp_path)
    path.write_text(path.read_text()[:200])
    assert _one_line_error(["memory", str(path)], capsys).startswith(f"error: {path}: (json): ")


@pytest.mark.parametrize("layers", [10**12, 10**7], ids=["1e12", "1e7"])
def test_absurd_layer_counts_are_refused_before_any_allocation(
    layers: int, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _llama_config(tmp_path, num_hidden_layers=layers)
    line = _one_line_error(["memory", str(path)], capsys)
    assert f"num_hidden_layers: {layers} is past the sanity bound 4,096" in line


@pytest.mark.parametrize(
    ("field", "value"),
    [("hidden_size", 10**9), ("num_attention_heads", 10**6), ("vocab_size", 10**9)],
)
def test_config_sanity_bounds_name_the_field(
    field: str, value: int, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _llama_config(tmp_path, **{field: value})
    assert f"{field}: {value} is past the sanity bound" in _one_line_error(
        ["memory", str(path)], capsys
    )


def test_a_moe_config_with_absurd_experts_names_the_field(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _llama_config(tmp_path, num_local_experts=10**8, num_experts_per_tok=2)
    line = _one_line_error(["memory", str(path)], capsys)
    assert "num_local_experts: 100000000 is past the sanity bound" in line


def test_a_nan_arrival_in_a_trace_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    trace = tmp_path / "t.jsonl"
    trace.write_text('{"input_tokens": 10, "output_tokens": 10, "arrival_s": NaN}\n')
    line = _one_line_error(["sweep", "llama-3.1-8b", "--workload", str(trace)], capsys)
    assert line == "error: trace line 1: arrival_s: must be a finite number >= 0 (seconds), got nan"


# Silent nonsense from `x or default` before


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["plan", "--gpus", "0"], "--gpus: must be an integer >= 1, got 0"),
        (["sweep", *SMALL, "--gpus", "0"], "--gpus: must be an integer >= 1, got 0"),
        (["plan", "--gpus", "-8"], "--gpus: must be an integer >= 1, got -8"),
        (["plan", "--nodes", "0"], "--nodes: must be an integer >= 1, got 0"),
        (["memory", "--max-model-len", "0"], "--max-model-len: wants a whole number >= 1, got '0'"),
        (["memory", "--gpu-total-memory", "0"], "--gpu-total-memory: Input should be greater"),
        (["plan", "--num-requests", "0"], "num_requests: must be an integer >= 1, got 0"),
        (["memory", "--max-num-seqs", "0"], "--max-num-seqs: Input should be greater than"),
        (["memory", "--gpu-memory-utilization", "nan"], "--gpu-memory-utilization: "),
    ],
    ids=["plan-gpus-0", "sweep-gpus-0", "plan-gpus-neg", "nodes-0", "max-model-len-0",
         "gpu-total-memory-0", "num-requests-0", "max-num-seqs-0", "utilization-nan"],
)  # fmt: skip
def test_a_zero_or_negative_setting_is_refused_not_defaulted(
    args: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert message in _one_line_error(args, capsys)


# Impossible workloads before


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--isl", "-1", "--osl", "10"], "isl: must be an integer >= 1, got -1"),
        (["--isl", "0", "--osl", "10"], "isl: must be an integer >= 1, got 0"),
        (["--isl", "10", "--osl", "0"], "osl: must be an integer >= 1, got 0"),
        (["--isl", "10", "--osl", "-5"], "osl: must be an integer >= 1, got -5"),
        (
            ["--isl", "10", "--osl", "10", "--arrival", "poisson", "--rate", "inf"],
            "rate: must be a finite number > 0, got inf",
        ),
        (["--isl", "10", "--osl", "10", "--slo-ttft", "0"], "--slo-ttft: "),
    ],
    ids=["isl-neg", "isl-0", "osl-0", "osl-neg", "rate-inf", "slo-0"],
)
@pytest.mark.parametrize("command", ["sweep", "plan"])
def test_impossible_workloads_are_refused(
    command: str, flags: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert message in _one_line_error([command, "llama-3.1-8b", *flags], capsys)


def test_a_request_longer_than_max_model_len_is_refused_with_the_numbers(
    capsys: pytest.CaptureFixture[str],
) -> None:
    line = _one_line_error(
        ["plan", "llama-3.1-8b", "--max-model-len", "50", "--isl", "100", "--osl", "100"], capsys
    )
    assert line == (
        "error: max_model_len: 50 is shorter than the longest request (200 tokens: 100 input + "
        "100 output); give at least 200 or leave it unset"
    )


@pytest.mark.parametrize("command", ["plan", "sweep", "memory"])
def test_max_model_len_past_the_model_context_is_refused(
    command: str, capsys: pytest.CaptureFixture[str]
) -> None:
    # llama-3.1-8b: max_position_embeddings 131,072
    args = [command, "llama-3.1-8b", "--max-model-len", "1000000"]
    if command != "memory":
        args += ["--isl", "100", "--osl", "100"]
    line = _one_line_error(args, capsys)
    assert "max_model_len: 1000000 is longer than the model's context (131072 tokens" in line


def test_allow_long_max_model_len_lets_it_through(capsys: pytest.CaptureFixture[str]) -> None:
    args = ["memory", "llama-3.1-8b", "--layout", "tp8", "--max-model-len", "1000000"]
    assert main([*args, "--allow-long-max-model-len", "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["max_model_len"] == 1_000_000


def test_a_kv_pool_larger_than_the_device_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    # H200: 143,771 MiB reported by the driver = 140.40 GiB
    line = _one_line_error(["memory", "--layout", "tp8", "--kv-cache-memory", "200GiB"], capsys)
    assert line == (
        "error: kv_cache_memory: 200.00 GiB per GPU is more than the device's 140.40 GiB"
    )


def test_a_kv_pool_that_leaves_no_room_for_the_weights_does_not_fit(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # 135 GiB of KV + 16.4 GiB of llama-3.1-70b weights per GPU at TP8 > 140.4 GiB
    args = ["memory", "llama-3.1-70b", "--layout", "tp8", "--kv-cache-memory", "135GiB"]
    assert main([*args, "--format", "json"]) == 0
    layout = json.loads(capsys.readouterr().out)["layouts"][0]
    assert not layout["fits"]
    assert "weights, reserves and KV cache need" in layout["reason"]


# Files before


def _spec(tmp_path: Path) -> Path:
    spec = tmp_path / "capcliff.toml"
    spec.write_text(
        '[[scenario]]\nname = "s"\nmodel = "llama-3.1-8b"\ngpu = "h200-sxm"\nlayout = "tp1"\n'
        "[scenario.workload]\nisl = 100\nosl = 100\nnum_requests = 20\nconcurrency = 4\n"
    )
    return spec


@pytest.mark.parametrize("force", [False, True])
def test_a_baseline_never_replaces_the_spec(
    force: bool, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    spec = _spec(tmp_path)
    before = spec.read_text()
    args = ["check", str(spec), "--write-baseline", str(spec)] + (["--force"] if force else [])
    line = _one_line_error(args, capsys)
    assert line == f"error: --write-baseline: {spec} is an input of this run; write elsewhere"
    assert spec.read_text() == before


def test_a_trace_named_by_the_spec_is_an_input_too(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    trace = tmp_path / "t.jsonl"
    trace.write_text('{"input_tokens": 10, "output_tokens": 10}\n' * 4)
    spec = tmp_path / "capcliff.toml"
    spec.write_text(
        '[[scenario]]\nname = "s"\nmodel = "llama-3.1-8b"\ngpu = "h200-sxm"\nlayout = "tp1"\n'
        '[scenario.workload]\ntrace = "t.jsonl"\n'
    )
    line = _one_line_error(["check", str(spec), "--junit", str(trace), "--force"], capsys)
    assert line.endswith("is an input of this run; write elsewhere")


def test_two_outputs_on_one_path_are_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "report.txt"
    line = _one_line_error(
        ["check", str(_spec(tmp_path)), "--junit", str(out), "--markdown", str(out)], capsys
    )
    assert line == f"error: --markdown: {out} is also the path of --junit; give each its own"


def test_an_existing_report_needs_force(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    spec, junit = _spec(tmp_path), tmp_path / "junit.xml"
    junit.write_text("mine\n")
    line = _one_line_error(["check", str(spec), "--junit", str(junit)], capsys)
    assert line == f"error: --junit: {junit} exists; pass --force to replace it"
    assert junit.read_text() == "mine\n"
    assert main(["check", str(spec), "--junit", str(junit), "--force"]) == 0
    assert junit.read_text().startswith("<?xml")


def _never(*args: object, **kwargs: object) -> None:
    raise AssertionError("simulated although an output path is invalid")


def test_a_bad_markdown_path_is_refused_before_simulating(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("capcliff.check.runner.check_spec_file", _never)
    target = tmp_path / "missing" / "summary.md"
    line = _one_line_error(["check", str(_spec(tmp_path)), "--markdown", str(target)], capsys)
    assert line == f"error: --markdown: the folder {target.parent} does not exist"


def test_an_existing_plot_is_refused_before_simulating(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("capcliff.analysis.sweep.report.build_sweep_report", _never)
    plot = tmp_path / "cliff.png"
    plot.write_bytes(b"mine")
    line = _one_line_error(["sweep", *SMALL, "--plot", str(plot)], capsys)
    assert line == f"error: --plot: {plot} exists; pass --force to replace it"
    assert plot.read_bytes() == b"mine"


def test_when_writing_fails_at_the_end_the_table_still_prints(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from capcliff.errors import InputError

    def fail(*args: object, **kwargs: object) -> None:
        raise InputError("output: cannot write x: No space left on device")

    monkeypatch.setattr("capcliff.files.write_text_atomic", fail)
    code = main(["check", str(_spec(tmp_path)), "--junit", str(tmp_path / "j.xml")])
    out, err = capsys.readouterr()
    assert code == 2
    assert "capcliff check" in out or "s" in out.splitlines()[0]
    assert err == "error: output: cannot write x: No space left on device\n"


def test_calibrate_writes_nothing_without_o(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    log = tmp_path / "v01.txt"
    log.write_text(V01.read_text())
    assert main(["calibrate", str(log), "--model", "llama-3.1-8b", "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["written"] is None
    assert sorted(p.name for p in tmp_path.iterdir()) == ["v01.txt"]


def test_calibrate_never_writes_over_its_log(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    log = tmp_path / "v01.txt"
    log.write_text(V01.read_text())
    line = _one_line_error(["calibrate", str(log), "-o", str(log), "--force"], capsys)
    assert line == f"error: --output: {log} is an input of this run; write elsewhere"


def test_calibrate_refuses_a_log_that_names_another_model(
    capsys: pytest.CaptureFixture[str],
) -> None:
    log = LOGS / "vllm_v1_v04_qwen3_235b_fp8_8xl40s_tp8.txt"
    line = _one_line_error(["calibrate", str(log), "--model", "llama-3.1-8b"], capsys)
    assert line.startswith("error: model: the log serves Qwen/Qwen3-235B-A22B")
    assert line.endswith("(qwen3-235b-a22b), not --model llama-3.1-8b")


def test_calibrate_refuses_a_log_whose_weights_are_far_off(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # The log names no model; it loaded 14.99 GiB of weights (Llama-3.1-8B). llama-3.1-70b at
    # TP1 is 70.55e9 params x 2 B = 131.4 GiB: 14.99 / 131.42 - 1 = -89 %.
    line = _one_line_error(["calibrate", str(V01), "--model", "llama-3.1-70b"], capsys)
    assert "the log's weights (14.99 GiB per GPU) are -89% off llama-3.1-70b's (131.42 GiB)" in line


def test_calibrate_refuses_a_log_whose_weights_are_another_models(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # A config path cannot be matched to the log by name: the weights give it away.
    config = _llama_config(tmp_path, num_hidden_layers=2)  # ~2 GiB of weights, not ~15
    line = _one_line_error(["calibrate", str(V01), "--model", str(config)], capsys)
    assert "model: the log's weights (14.99 GiB per GPU) are +" in line


def test_calibrate_refuses_another_engine_or_layout(capsys: pytest.CaptureFixture[str]) -> None:
    named = ["calibrate", str(V01), "--model", "llama-3.1-8b"]
    engine = _one_line_error([*named, "--engine", "sglang"], capsys)
    assert (
        engine == "error: engine: the log is from vllm-v0 (its vllm-v0 format), not --engine sglang"
    )
    layout = _one_line_error([*named, "--layout", "tp8"], capsys)
    assert layout == "error: layout: the log ran tp1 (tp 1, pp 1, dp 1), not --layout tp8"


def test_calibrate_refuses_a_half_written_log(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    log = tmp_path / "half.txt"
    lines = V01.read_text().splitlines(keepends=True)
    cut = next(i for i, line in enumerate(lines) if line.startswith("Memory profiling"))
    log.write_text("".join(lines[:cut]))  # stops after the weights loaded
    line = _one_line_error(["calibrate", str(log), "--model", "llama-3.1-8b"], capsys)
    assert line.startswith("error: logfile: the log stops before the engine sized its KV cache")


def test_a_calibration_records_its_deployment(tmp_path: Path) -> None:
    out = tmp_path / "v01.toml"
    assert main(["calibrate", str(V01), "--model", "llama-3.1-8b", "-o", str(out)]) == 0
    data = tomllib.loads(out.read_text())
    assert {k: data[k] for k in ("engine", "model", "layout", "weight_dtype")} == {
        "engine": "vllm-v0", "model": "llama-3.1-8b", "layout": "tp1", "weight_dtype": "bf16",
    }  # fmt: skip
    assert data["kv_cache_dtype"] == "bf16"
    # the log (an RTX 3090's) names no GPU and none was given: none is recorded, never the
    # default GPU; a GPU given on the command line is
    assert "gpu" not in data
    assert main(["calibrate", str(V01), "--model", "llama-3.1-8b", "--gpu", "h100-sxm",
                 "-o", str(out), "--force"]) == 0  # fmt: skip
    assert tomllib.loads(out.read_text())["gpu"] == "h100-sxm"


def test_a_calibration_without_its_gpu_warns_where_it_is_applied(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "v01.toml"
    assert main(["calibrate", str(V01), "--model", "llama-3.1-8b", "-o", str(out)]) == 0
    assert "note: no --gpu" in capsys.readouterr().err
    args = ["memory", "llama-3.1-8b", "--layout", "tp1", "--engine", "vllm-v0"]
    assert main([*args, "--calibration", str(out), "--format", "json"]) == 0
    assert "does not record the GPU it was made on" in capsys.readouterr().err


def _v01_calibration(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> Path:
    """V01 (vLLM V0, llama-3.1-8b, tp1, no GPU recorded) calibrated to a file."""
    out = tmp_path / "v01.toml"
    assert main(["calibrate", str(V01), "--model", "llama-3.1-8b", "-o", str(out)]) == 0
    capsys.readouterr()
    return out


def test_a_calibration_for_another_engine_needs_force_and_warns(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = _v01_calibration(tmp_path, capsys)
    args = ["memory", "llama-3.1-8b", "--layout", "tp1", "--calibration", str(out)]
    line = _one_line_error(args, capsys)
    assert "made for another deployment (engine vllm-v0 != vllm)" in line
    assert main([*args, "--force", "--format", "json"]) == 0
    err = capsys.readouterr().err
    assert err.startswith("warning: calibration ") and "engine vllm-v0 != vllm" in err


def test_calibration_toml_escapes_control_characters() -> None:
    from capcliff.calibrate.calibration_file import Calibration, calibration_toml
    from capcliff.memory.budget import EngineName

    source = 'logs/odd"name\\with\x07bell\nand newline.txt'
    cal = Calibration(engine=EngineName.VLLM, source=source, terms_gib={"non_torch": 0.25})
    assert tomllib.loads(calibration_toml(cal))["source"] == source


def test_no_output_file_is_left_half_written(tmp_path: Path) -> None:
    from capcliff.files import write_text_atomic

    target = tmp_path / "out.txt"
    write_text_atomic(target, "whole\n", overwrite=False)
    assert [p.name for p in tmp_path.iterdir()] == ["out.txt"]  # no temporary file left
    assert os.stat(target).st_size == len("whole\n")


def test_calibrate_refuses_a_log_with_nothing_to_fit(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    log = tmp_path / "kv-only.txt"
    log.write_text("".join(V01.read_text().splitlines(keepends=True)[-2:]))  # blocks lines only
    line = _one_line_error(["calibrate", str(log), "--model", "llama-3.1-8b"], capsys)
    assert line.startswith("error: logfile: nothing to fit")


# Sanity bounds that keep a run from running out of memory or never finishing


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["memory", "--gpus", "1073741824"], "gpus: 1,073,741,824 is outside 1 to 65,536"),
        (["plan", "--num-requests", "1000000000"], "num_requests: 1,000,000,000 is past the"),
        (
            ["sweep", *SMALL, "--concurrency", "1..100:100000"],
            "(at most 256 values, each >= 1 and <= 10,000,000)",
        ),
    ],
    ids=["gpus", "requests", "concurrency-points"],
)
def test_sizes_that_cannot_finish_are_refused(
    args: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert message in _one_line_error(args, capsys)


def test_a_spec_calibration_for_another_engine_needs_check_force(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert (
        main(["calibrate", str(V01), "--model", "llama-3.1-8b", "-o", str(tmp_path / "c.toml")])
        == 0
    )
    spec = _spec(tmp_path)
    spec.write_text(
        spec.read_text().replace('layout = "tp1"\n', 'layout = "tp1"\ncalibration = "c.toml"\n')
    )
    capsys.readouterr()
    assert main(["check", str(spec)]) == 2
    assert "engine vllm-v0 != vllm); pass --force" in capsys.readouterr().err
    assert main(["check", str(spec), "--force"]) == 0
    err = capsys.readouterr().err
    assert err.startswith(f"warning: {spec}: scenario[0]: calibration ")


# A corpus of random bad values: never a crash


FLAGS = ["--gpus", "--max-model-len", "--gpu-memory-utilization", "--gpu-total-memory",
         "--kv-cache-memory", "--max-num-seqs", "--max-num-batched-tokens", "--block-size",
         "--mem-fraction-static", "--free-gpu-memory-fraction", "--weight-dtype",
         "--kv-cache-dtype", "--engine"]  # fmt: skip
VALUES = st.one_of(
    st.integers(min_value=-(2**70), max_value=2**70).map(str),
    st.floats(allow_nan=True, allow_infinity=True).map(repr),
    st.sampled_from(["", "nan", "-inf", "1e400", "0x10", "1GiB", "-1GiB", "1e-400", "fp3", "∞"]),
    st.text(max_size=8),
)


@settings(max_examples=20, deadline=None)
@given(flag=st.sampled_from(FLAGS), value=VALUES)
def test_memory_never_crashes_on_a_bad_value(flag: str, value: str) -> None:
    code = main(
        ["memory", "llama-3.1-8b", "--layout", "tp1", f"{flag}={value}", "--format", "json"]
    )
    assert code in (0, 2), (flag, value)


CONFIG_FIELDS = ["num_hidden_layers", "hidden_size", "num_attention_heads", "num_key_value_heads",
                 "head_dim", "intermediate_size", "vocab_size", "max_position_embeddings",
                 "num_local_experts", "num_experts_per_tok", "sliding_window"]  # fmt: skip
CONFIG_VALUES = st.one_of(
    st.integers(min_value=-(2**64), max_value=2**64),
    st.floats(allow_nan=True, allow_infinity=True),
    st.none(),
    st.booleans(),
    st.text(max_size=4),
    st.lists(st.integers(), max_size=2),
)


@settings(max_examples=80, deadline=None)
@given(changes=st.dictionaries(st.sampled_from(CONFIG_FIELDS), CONFIG_VALUES, max_size=3))
def test_a_corrupt_config_is_a_catalog_error_or_a_model(changes: dict[str, object]) -> None:
    from capcliff.catalog.architecture import architecture_from_config
    from capcliff.errors import CatalogError
    from capcliff.memory.kv import kv_bytes_per_token
    from capcliff.memory.params import all_param_groups
    from capcliff.units import KVDType

    card = tomllib.loads((ROOT / "model_cards" / "llama-3.1-8b.toml").read_text())
    try:
        arch = architecture_from_config({**card["config"], **changes}, path="config.json")
    except CatalogError as exc:
        assert str(exc).startswith("config.json: ") and "\n" not in str(exc)
        return
    assert all_param_groups(arch)
    assert kv_bytes_per_token(arch, kv_dtype=KVDType.BF16) > 0


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        # plan reads --rate alone as Poisson and --clients alone as users (online serving); with
        # an explicit batch arrival either would be ignored.
        (
            ["--rate", "5", "--arrival", "batch"],
            "rate: only a poisson arrival has a rate (the arrival is batch)",
        ),
        (
            ["--clients", "3", "--arrival", "batch"],
            "clients: only a clients arrival has clients (the arrival is batch)",
        ),
        (["--arrival", "poisson"], "rate: a poisson arrival needs a rate (requests/s)"),
    ],
    ids=["rate-without-poisson", "clients-without-clients", "poisson-without-rate"],
)
def test_an_arrival_setting_that_would_be_ignored_is_refused(
    flags: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    line = _one_line_error(["plan", "llama-3.1-8b", "--isl", "10", "--osl", "10", *flags], capsys)
    assert line == f"error: {message}"


def test_a_calibration_for_another_layout_needs_force(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "v01.toml"  # fitted at tp1
    assert main(["calibrate", str(V01), "--model", "llama-3.1-8b", "-o", str(out)]) == 0
    capsys.readouterr()
    args = ["memory", "llama-3.1-8b", "--engine", "vllm-v0", "--calibration", str(out)]
    assert "(layout tp1 != tp2)" in _one_line_error([*args, "--layout", "tp2"], capsys)
    assert main([*args, "--layout", "tp1", "--format", "json"]) == 0


# Usage errors: click printed three lines (Usage, Try, Error) before


@pytest.mark.parametrize(
    ("args", "start"),
    [
        (["plan", "--gpus", "nan"], "error: Invalid value for '--gpus': "),
        (["sweep", "--rate", "abc"], "error: Invalid value for '--rate': "),
        (["memory", "--max-num-seqs", "1e3"], "error: Invalid value for '--max-num-seqs': "),
        (["plan", "--gpu-s", "3"], "error: No such option: --gpu-s"),
        (["calibrate"], "error: Missing argument 'logfile'"),
        (["nope"], "error: No such command 'nope'"),
    ],
    ids=["int-flag-nan", "float-flag-text", "int-flag-exponent", "unknown-option",
         "missing-argument", "unknown-command"],
)  # fmt: skip
def test_a_usage_error_is_one_line_naming_the_flag(
    args: list[str], start: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert _one_line_error(args, capsys).startswith(start)


def test_capcliff_alone_still_prints_the_help(capsys: pytest.CaptureFixture[str]) -> None:
    assert main([]) == 2
    captured = capsys.readouterr()
    assert "Commands" in captured.out + captured.err and "error:" not in captured.err


def test_a_sweep_without_a_layout_checks_the_calibration_against_the_layout_it_picks(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # V01 is a one-GPU (tp1) log; a sweep of 2 GPUs with no --layout picks a 2-GPU layout, to
    # which the calibration is refused as to a named one
    out = _v01_calibration(tmp_path, capsys)
    args = ["sweep", "llama-3.1-8b", "--engine", "vllm-v0", "--gpus", "2", "--calibration",
            str(out), "--isl", "64", "--osl", "16", "--num-requests", "20",
            "--concurrency", "4"]  # fmt: skip
    line = _one_line_error(args, capsys)
    assert "made for another deployment (layout tp1 != " in line
