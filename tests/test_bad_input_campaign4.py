"""Bad input that a fourth campaign (benchmarks/fuzz_surfaces.py's every-flag, combos, paths,
traces4, check4, calfiles and configs4 surfaces) found: one test per class of finding.

Each case exits 2 with one `error: ...` line naming the field and what is valid, where before it
was simulated or sized with the input dropped unsaid (or crashed).
"""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

import pytest
from test_bad_input import _one_line_error

from capcliff.calibrate.calibration_file import load_calibration
from capcliff.catalog.architecture import architecture_from_config
from capcliff.cli import main
from capcliff.errors import CatalogError, InputError
from capcliff.sim.traffic.sessions import parse_session_trace
from capcliff.sim.traffic.workload import parse_trace

ROOT = Path(__file__).resolve().parent.parent
V16 = ROOT / "tests" / "fixtures" / "logs" / "vllm_v1_v16_llama31_8b_eager.txt"
SWEEP = ["sweep", "llama-3.1-8b", "--isl", "100", "--osl", "100", "--num-requests", "20",
         "--concurrency", "4"]  # fmt: skip
PLAN = ["plan", "llama-3.1-8b", "--gpus", "1", "--jobs", "1", "--isl", "100", "--osl", "100",
        "--num-requests", "20"]  # fmt: skip


SPEC = """[[scenario]]
name = "s"
model = "llama-3.1-8b"
gpu = "h100-sxm"
layout = "tp1"
[scenario.workload]
isl = 100
osl = 100
arrival = "batch"
num_requests = 20
concurrency = 4
[scenario.expect]
fits = true
"""


def _card_config(model: str) -> dict[str, object]:
    card = tomllib.loads((ROOT / "model_cards" / f"{model}.toml").read_text())
    return dict(card["config"])


# An engine's own memory setting given for another engine was dropped unsaid: SGLang sized its
# own fraction under `--gpu-memory-utilization 0.5`, vLLM ignored `--mem-fraction-static`


@pytest.mark.parametrize(
    ("args", "start"),
    [
        (["--engine", "sglang", "--gpu-memory-utilization", "0.5"],
         "error: gpu_memory_utilization: vLLM's --gpu-memory-utilization, not a sglang setting"),
        (["--engine", "trtllm", "--kv-cache-memory", "10GiB"],
         "error: kv_cache_memory: vLLM's --kv-cache-memory, not a trtllm setting"),
        (["--mem-fraction-static", "0.5"],
         "error: mem_fraction_static: SGLang's --mem-fraction-static, not a vllm setting"),
        (["--engine", "sglang", "--free-gpu-memory-fraction", "0.5"],
         "error: free_gpu_memory_fraction: TensorRT-LLM's kv_cache_free_gpu_memory_fraction, "
         "not a sglang setting"),
    ],
    ids=["gmu-sglang", "kv-memory-trtllm", "mem-fraction-vllm", "free-fraction-sglang"],
)  # fmt: skip
@pytest.mark.parametrize("command", ["memory", "sweep"])
def test_another_engines_memory_setting_is_refused(
    command: str, args: list[str], start: str, capsys: pytest.CaptureFixture[str]
) -> None:
    base = SWEEP if command == "sweep" else ["memory", "llama-3.1-8b", "--gpus", "1"]
    assert _one_line_error([*base, *args], capsys).startswith(start)


def test_a_spec_key_of_another_engine_is_refused_and_its_own_engine_keeps_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    spec = SPEC
    bad = tmp_path / "bad.toml"
    bad.write_text(spec.replace('layout = "tp1"', 'layout = "tp1"\nmem_fraction_static = 0.5'))
    line = _one_line_error(["check", str(bad)], capsys)
    assert line == (
        f"error: {bad}: scenario[0].mem_fraction_static: SGLang's --mem-fraction-static, not a "
        "vllm setting; leave it unset"
    )
    good = tmp_path / "good.toml"
    good.write_text(
        spec.replace(
            'layout = "tp1"', 'layout = "tp1"\nengine = "sglang"\nmem_fraction_static = 0.8'
        )
    )
    assert main(["check", str(good), "--format", "json"]) in (0, 1)  # judged, not refused
    assert "error" not in capsys.readouterr().err


def test_a_swap_pool_without_swap_preemption_is_said(capsys: pytest.CaptureFixture[str]) -> None:
    # a `vllm serve` command carries --swap-space whatever it preempts with: a warning, not an error
    assert main([*SWEEP, "--swap-space", "4GiB", "--format", "json"]) == 0
    err = capsys.readouterr().err
    assert "warning: swap_space: unused: only swap preemption (preemption swap)" in err


# Releases that name no such engine: vLLM V0 is gone from 0.11.0; TensorRT-LLM began at 0.5.0


@pytest.mark.parametrize(
    ("engine", "version", "start"),
    [
        ("vllm-v0", "0.11.0", "error: engine_version: '0.11.0' has no vllm-v0 engine: vLLM "
                              "removed"),
        ("vllm-v0", "0.24.1", "error: engine_version: '0.24.1' has no vllm-v0 engine"),
        ("trtllm", "0.4.3", "error: engine_version: '0.4.3' is older than the earliest trtllm "
                            "release (0.5.0)"),
    ],
)  # fmt: skip
def test_a_release_without_the_engine_is_refused(
    engine: str, version: str, start: str, capsys: pytest.CaptureFixture[str]
) -> None:
    args = [*SWEEP, "--engine", engine, "--engine-version", version]
    assert _one_line_error(args, capsys).startswith(start)


def test_the_last_v0_release_still_runs(capsys: pytest.CaptureFixture[str]) -> None:
    assert main([*SWEEP, "--engine", "vllm-v0", "--engine-version", "0.10.2"]) == 0


# plan: flags the plan being made does not read were dropped unsaid (a batch plan over
# h100-sxm,h200-sxm sized h100-sxm alone; its prices, and an online plan's objective, unused)


@pytest.mark.parametrize(
    ("args", "start"),
    [
        (["--arrival", "batch", "--gpu", "h100-sxm,h200-sxm"],
         "error: gpu: a batch plan sizes one GPU type, got 2"),
        (["--arrival", "batch", "--price-gpu-hour", "3"],
         "error: price-gpu-hour: a batch plan ranks by GPU-hours"),
        (["--arrival", "batch", "--headroom", "0.5"],
         "error: headroom: only an online aggregated plan sizes a fleet"),
        (["--rate", "2", "--objective", "makespan"],
         "error: objective: an online plan ranks by the sustained rate"),
    ],
    ids=["batch-gpu-list", "batch-price", "batch-headroom", "online-objective"],
)  # fmt: skip
def test_a_plan_flag_the_plan_does_not_read_is_refused(
    args: list[str], start: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert _one_line_error([*PLAN, *args], capsys).startswith(start)


def test_an_empty_objective_is_still_refused(capsys: pytest.CaptureFixture[str]) -> None:
    line = _one_line_error([*PLAN, "--arrival", "batch", "--objective", ""], capsys)
    assert line == "error: objective: unknown ''; valid: makespan, goodput, cost"


# calibrate: --gpus with a start-up log (the log states its layout) was ignored unsaid


def test_gpus_with_a_start_up_log_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    args = ["calibrate", str(V16), "--model", "llama-3.1-8b", "--gpus", "4"]
    assert _one_line_error(args, capsys) == (
        "error: gpus: applies to benchmark results, not a start-up log"
    )


# Traces: a key the format does not have was dropped unsaid (a misspelt `think_time`, a session
# row in a plain trace simulated as a plain request)


def test_an_unknown_trace_key_is_refused() -> None:
    with pytest.raises(InputError, match=r"trace line 2: 'priority': unknown key; valid: "
                                         r"input_tokens, output_tokens, arrival_s"):  # fmt: skip
        parse_trace(['{"input_tokens": 5, "output_tokens": 5}',
                     '{"input_tokens": 5, "output_tokens": 5, "priority": 1}'])  # fmt: skip
    with pytest.raises(InputError, match=r"trace line 1: 'session_id': unknown key"):
        parse_trace(['{"session_id": "a", "input_tokens": 5, "output_tokens": 5}'])
    rows = [
        '{"session_id": "a", "turn": 0, "input_tokens": 5, "output_tokens": 5}',
        '{"session_id": "a", "turn": 1, "input_tokens": 5, "output_tokens": 5, "think_time": 3}',
    ]
    with pytest.raises(InputError, match=r"trace line 2: 'think_time': unknown key; valid: "):
        parse_session_trace(rows)


def test_an_unknown_trace_key_through_the_cli(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    trace = tmp_path / "t.jsonl"
    trace.write_text('{"arrival_s": 0, "input_tokens": 50, "output_tokens": 20, "prio": 1}\n')
    line = _one_line_error(["sweep", "llama-3.1-8b", "--workload", str(trace)], capsys)
    assert line.startswith("error: trace line 1: 'prio': unknown key; valid: input_tokens")


# Calibration files: an empty concurrency range (min past max) was applied as fitted


@pytest.mark.parametrize("section", ["speculative", "step_time"])
def test_a_calibration_whose_concurrency_range_is_empty_is_refused(
    section: str, tmp_path: Path
) -> None:
    body = (
        'speculative = "ngram:3"\naccept_length = 2.0\n'
        if section == "speculative"
        else 'fixed_s = 0.002\nscale = 1.1\nprofile = "x"\n'
    )
    path = tmp_path / "c.toml"
    path.write_text(
        f'engine = "vllm"\nsource = "b.csv"\n[{section}]\n{body}source = "b.csv"\npoints = 3\n'
        "concurrency_min = 64\nconcurrency_max = 8\n"
    )
    with pytest.raises(CatalogError, match=f"{section}: .*concurrency_min: 64 is past "
                                           "concurrency_max 8; the range is empty"):  # fmt: skip
        load_calibration(path)


# config.json: a bad sliding window, an unknown layer type or a bad mlp_only_layers list was read
# as no window, full attention or no dense layer


@pytest.mark.parametrize(
    ("model", "changes", "message"),
    [
        ("llama-3.1-8b", {"sliding_window": "4096"}, "sliding_window: must be an integer"),
        ("llama-3.1-8b", {"sliding_window": -5}, "sliding_window: must be >= 0 tokens"),
        ("llama-3.1-8b", {"sliding_window": 4096.0}, "sliding_window: must be an integer"),
        ("llama-3.1-8b", {"layer_types": ["linear_attention"] * 32},
         "layer_types: 'linear_attention' is not a layer capcliff sizes; valid: full_attention, "
         "sliding_attention"),
        ("qwen3-30b-a3b", {"mlp_only_layers": [999]},
         r"mlp_only_layers: must list layer indices in 0\.\.47"),
        ("qwen3-30b-a3b", {"mlp_only_layers": "0,1"}, "mlp_only_layers: must list layer indices"),
    ],
)  # fmt: skip
def test_a_config_field_read_as_absent_is_refused(
    model: str, changes: dict[str, object], message: str
) -> None:
    with pytest.raises(CatalogError, match=message):
        architecture_from_config({**_card_config(model), **changes}, path="config.json")


def test_a_window_of_zero_or_null_is_none_and_dense_layers_count(tmp_path: Path) -> None:
    llama = _card_config("llama-3.1-8b")
    for window in (0, None):
        arch = architecture_from_config({**llama, "sliding_window": window}, path="config.json")
        assert not arch.has_sliding_window
    qwen = _card_config("qwen3-30b-a3b")
    arch = architecture_from_config({**qwen, "mlp_only_layers": [0, 47]}, path="config.json")
    assert arch.moe is not None
    # 48 layers, every one MoE (decoder_sparse_step 1) but the two listed
    assert sum(arch.moe.is_moe_layer) == 46
    assert not arch.moe.is_moe_layer[0] and not arch.moe.is_moe_layer[47]
    path = tmp_path / "m" / "config.json"
    path.parent.mkdir()
    path.write_text(json.dumps({**llama, "sliding_window": None}))
    assert main(["memory", str(path.parent), "--gpus", "1", "--format", "json"]) == 0


# Output names that are only blanks (an unset shell variable, quoted) wrote a file named " "


@pytest.mark.parametrize("name", [" ", "\u00a0", "\t"])
@pytest.mark.parametrize("flag", ["--junit", "--markdown", "--write-baseline"])
def test_a_blank_output_name_is_refused(
    flag: str, name: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    spec = tmp_path / "s.toml"
    spec.write_text(SPEC)
    line = _one_line_error(["check", str(spec), flag, name], capsys)
    assert line == f"error: {flag}: {name!r} is blank; give a file name"


def test_a_blank_calibration_output_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    args = ["calibrate", str(V16), "--model", "llama-3.1-8b", "-o", " "]
    assert _one_line_error(args, capsys) == "error: --output: ' ' is blank; give a file name"


# calibrate: --max-model-len against a log that states another was dropped unsaid


def test_a_max_model_len_the_log_contradicts_is_refused(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # the v16 log runs Llama-3.1-8B at its full context, 131,072 tokens
    args = ["calibrate", str(V16), "--model", "llama-3.1-8b", "--max-model-len", "4096"]
    assert _one_line_error(args, capsys) == (
        "error: max-model-len: the log ran 131,072 tokens, not 4,096 (the flag stands in only "
        "where a log omits it)"
    )
    assert main([*args[:-1], "131072"]) == 0  # the log's own length agrees


# A KV block of 10**26 tokens was sized as "0 blocks" needing 10**19 TB per request


@pytest.mark.parametrize("size", ["2048", "9" * 30])
def test_a_block_size_past_any_engines_page_is_refused(
    size: str, capsys: pytest.CaptureFixture[str]
) -> None:
    line = _one_line_error(["memory", "llama-3.1-8b", "--gpus", "1", "--block-size", size], capsys)
    assert line.startswith("error: --block-size: Input should be less than or equal to 1024")


# A latency limit under a microsecond (1e-320 s) printed "still inf x over the limit"


@pytest.mark.parametrize("flag", ["--slo-ttft", "--slo-tpot"])
@pytest.mark.parametrize("value", ["1e-320", "1e-7"])
def test_a_latency_limit_under_a_microsecond_is_refused(
    flag: str, value: str, capsys: pytest.CaptureFixture[str]
) -> None:
    line = _one_line_error([*PLAN, "--rate", "2", flag, value], capsys)
    assert line.startswith(f"error: {flag}: ")
    assert line.endswith("s is under 1e-06 s, which no engine step meets; give seconds")


def test_a_spec_latency_limit_under_a_microsecond_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    spec = tmp_path / "s.toml"
    spec.write_text(SPEC + "ttft_p99_max_s = 1e-320\n")
    line = _one_line_error(["check", str(spec)], capsys)
    assert "scenario[0].expect.ttft_p99_max_s: " in line
    assert "is under 1e-06 s, which no engine step meets" in line
