"""Bad input that a seventh campaign (benchmarks/fuzz_cases7.py: moe7, prefix7, overhead7,
gpulist7, calib7, spec7, quant7, st7, trace7, num7, combo7, out7) found: one test per class of
finding, each case named for it.
"""

from __future__ import annotations

import json
import struct
from pathlib import Path

import numpy as np
import pytest
from test_bad_input import _one_line_error
from test_bad_input_campaign4 import _card_config

from capcliff.analysis.workloads import WorkloadChoice, parse_concurrency, plan_workloads
from capcliff.catalog.architecture import architecture_from_config
from capcliff.catalog.catalogs import model_from_path
from capcliff.cli import main
from capcliff.errors import CatalogError, InputError
from capcliff.sim.traffic.workload import Arrival

SMALL = ["--isl", "100", "--osl", "100", "--num-requests", "20"]
SWEEP = ["sweep", "llama-3.1-8b", *SMALL, "--concurrency", "4"]
ROWS = [{"input_tokens": 50, "output_tokens": 20}, {"input_tokens": 60, "output_tokens": 30}]


def _write(path: Path, text: str | bytes) -> str:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(text if isinstance(text, bytes) else text.encode())
    return str(path)


def _jsonl(rows: list[dict[str, object]]) -> str:
    return "\n".join(json.dumps(r) for r in rows) + "\n"


# `--concurrency 1..4096:1` (a step of 1 written where the count of points goes) swept
# concurrency 1 alone: one point cannot hold both ends of a span.


@pytest.mark.parametrize("text", ["1..4096:1", "1..1000000:1", "2..3:1"])
def test_a_span_of_one_point_is_refused(text: str) -> None:
    with pytest.raises(InputError, match=r"16 counts points \(2 or more: both ends\)"):
        parse_concurrency(text)


def test_a_span_of_one_value_may_have_one_point() -> None:
    assert parse_concurrency("4..4:1") == (4,)
    assert parse_concurrency("1..8:2") == (1, 8)  # both ends, as geomspace gives them


def test_a_span_of_one_point_is_one_line_at_the_cli(capsys: pytest.CaptureFixture[str]) -> None:
    line = _one_line_error([*SWEEP[:-2], "--concurrency", "1..4096:1"], capsys)
    assert line.startswith("error: concurrency: cannot read '1..4096:1'")


# A trace gives each request's lengths and its own arrivals: --isl, --osl and
# --random-range-ratio beside one, an --arrival it does not have, and sweep's --rate on an
# untimed trace were all dropped unsaid (the sweep ran the trace as recorded).


@pytest.mark.parametrize(
    ("extra", "fragment"),
    [
        (["--isl", "5000"], "error: isl: a trace gives each request's own lengths; drop --isl"),
        (["--osl", "100"], "error: osl: a trace gives each request's own lengths; drop --osl"),
        (["--random-range-ratio", "0.5"], "error: random_range_ratio: a trace gives each"),
        (["--arrival", "poisson"], "error: rate: a poisson arrival needs a rate"),
        (["--arrival", "clients"], "error: clients: a clients arrival needs at least one client"),
        (["--arrival", "batch"], "error: arrival: a trace replays its own arrival times"),
        (["--clients", "2", "--arrival", "poisson"], "error: clients: "),
    ],
    ids=["isl", "osl", "range-ratio", "poisson-no-rate", "clients-no-clients", "batch",
         "clients-under-poisson"],
)  # fmt: skip
def test_a_flag_a_trace_does_not_read_is_refused(
    extra: list[str], fragment: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    trace = _write(tmp_path / "t.jsonl", _jsonl(ROWS))
    line = _one_line_error(
        ["sweep", "llama-3.1-8b", "--workload", trace, "--concurrency", "4", *extra], capsys
    )
    assert line.startswith(fragment)


def test_plan_refuses_lengths_beside_a_trace(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    trace = _write(tmp_path / "t.jsonl", _jsonl(ROWS))
    argv = ["plan", "llama-3.1-8b", "--jobs", "1", "--gpus", "1", "--workload", trace,
            "--slo-ttft", "2", "--isl", "100"]  # fmt: skip
    assert _one_line_error(argv, capsys).startswith("error: isl: a trace gives")


def test_an_untimed_trace_at_a_rate_arrives_as_poisson() -> None:
    # 4,000 rows at 4 requests/s: the last arrival is a sum of 4,000 exponential gaps of mean
    # 0.25 s, 1,000 s give or take sqrt(4000) x 0.25 = 15.8 s (one standard deviation)
    rows = tuple(json.dumps({"input_tokens": 10, "output_tokens": 5}) for _ in range(4000))
    choice = WorkloadChoice(
        num_requests=4000, trace_lines=rows, rate_per_s=4.0, arrival=Arrival.POISSON
    )
    label, [(_, requests)] = plan_workloads(choice, seed=0)
    arrivals = requests.arrival_s
    assert "4 requests/s (Poisson)" in label
    assert np.all(np.diff(arrivals) >= 0) and arrivals[0] > 0
    assert abs(arrivals[-1] - 1000.0) < 5 * 15.8


def test_an_untimed_trace_without_a_rate_is_one_batch() -> None:
    rows = tuple(json.dumps(r) for r in ROWS)
    _, [(_, requests)] = plan_workloads(WorkloadChoice(num_requests=2, trace_lines=rows), seed=0)
    assert list(requests.arrival_s) == [0.0, 0.0]


# `--gpu-total-memory` is one GPU's driver-reported memory: a fleet over several types, or a
# disaggregated pool on another type, sized each of them with it (79 GiB for an MI300X).


def test_a_driver_total_for_a_fleet_of_types_is_refused(
    capsys: pytest.CaptureFixture[str],
) -> None:
    argv = ["plan", "llama-3.1-8b", "--jobs", "1", *SMALL, "--rate", "2", "--slo-ttft", "2",
            "--gpus", "1", "--gpu", "h100-sxm,mi300x", "--gpu-total-memory", "79GiB"]  # fmt: skip
    line = _one_line_error(argv, capsys)
    assert line == (
        "error: gpu_total_memory: one GPU's driver-reported memory, given for 2 GPU types "
        "(h100-sxm, mi300x); size one type at a time, or leave it unset"
    )


def test_a_driver_total_for_a_pool_on_another_type_is_refused(
    capsys: pytest.CaptureFixture[str],
) -> None:
    argv = [*SWEEP, "--gpu", "h100-sxm", "--gpu-total-memory", "79GiB",
            "--disagg", "1p:tp1@mi300x,1d:tp1"]  # fmt: skip
    assert _one_line_error(argv, capsys).startswith("error: gpu_total_memory: one GPU's")


# calibrate: a run paced at a finite request_rate (an open-loop Poisson run) was fitted as
# clients sending at will; runs of two backends in one file were fitted as one deployment.

LLAMA_REPO = "meta-llama/Llama-3.1-8B-Instruct"


def _run(concurrency: int, throughput: float, tpot_ms: float, **changes: object) -> str:
    run = {
        "backend": "vllm", "model_id": LLAMA_REPO, "num_prompts": 200, "request_rate": "inf",
        "max_concurrency": concurrency, "completed": 200, "total_input_tokens": 204_800,
        "total_output_tokens": 25_600, "output_throughput": throughput,
        "mean_ttft_ms": 150.0, "mean_tpot_ms": tpot_ms,
    }  # fmt: skip
    return json.dumps({**run, **changes})


@pytest.mark.parametrize(
    ("rate", "cap", "fragment"),
    [(4.0, None, "4 requests/s with no max_concurrency: an open-loop run"),
     (-4.0, 8, 'must be "inf" or a rate > 0 (requests/s), got -4.0'),
     ("nan", 8, "must be \"inf\" or a rate > 0 (requests/s), got 'nan'"),
     (0, 8, 'must be "inf" or a rate > 0 (requests/s), got 0')],
    ids=["paced-no-cap", "negative", "text", "zero"],
)  # fmt: skip
def test_a_paced_run_without_a_cap_or_a_bad_rate_is_refused(
    rate: object, cap: int | None, fragment: str, tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:  # fmt: skip
    lines = [_run(8, 500.0, 14.0, request_rate=rate, max_concurrency=cap), _run(32, 1200.0, 24.0)]
    path = _write(tmp_path / "r.json", "\n".join(lines))
    line = _one_line_error(["calibrate", path, "--model", "llama-3.1-8b"], capsys)
    assert line.startswith("error: r.json:1: request_rate: ")
    assert fragment in line


def test_runs_of_two_backends_are_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    lines = [_run(8, 500.0, 14.0), _run(32, 1200.0, 24.0, backend="sglang")]
    path = _write(tmp_path / "r.json", "\n".join(lines))
    line = _one_line_error(["calibrate", path, "--model", "llama-3.1-8b"], capsys)
    assert line == (
        "error: r.json:2: backend: 'sglang', where r.json:1 is 'vllm'; one calibration fits "
        "one deployment's runs: split the file"
    )


def test_runs_sent_at_will_of_one_backend_are_fitted(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    lines = [_run(8, 500.0, 14.0), _run(32, 1200.0, 24.0), _run(64, 1800.0, 32.0)]
    path = _write(tmp_path / "r.json", "\n".join(lines))
    assert main(["calibrate", path, "--model", "llama-3.1-8b", "--gpu", "h100-sxm"]) == 0
    assert "fitted: fixed" in capsys.readouterr().out


# mxfp4 quantises routed experts only: on a dense model the checkpoint was sized at its native
# dtype, its quantization_config dropped unsaid.


def test_mxfp4_on_a_dense_model_is_refused() -> None:
    config = {**_card_config("llama-3.1-8b"), "quantization_config": {"quant_method": "mxfp4"}}
    with pytest.raises(CatalogError, match=r"^c: quantization_config.quant_method: mxfp4 "):
        architecture_from_config(config, path="c")


def test_mxfp4_on_a_moe_model_quantises_its_experts() -> None:
    arch = architecture_from_config(_card_config("gpt-oss-20b"), path="c")
    assert arch.quantization is not None and arch.quantization.method == "mxfp4"


# Safetensors: bytes past the last tensor (the format's reader refuses such a file:
# MetadataIncompleteBuffer), and a shard index naming shards the folder lacks (a partial
# download printed as the checkpoint's size).


def _st(header: dict[str, object], data: bytes) -> bytes:
    raw = json.dumps(header).encode()
    return struct.pack("<Q", len(raw)) + raw + data


W = {"dtype": "BF16", "shape": [2, 2], "data_offsets": [0, 8]}  # 2 x 2 x 2 bytes = 8


def _folder(tmp_path: Path, files: dict[str, bytes | str]) -> Path:
    folder = tmp_path / "m"
    _write(folder / "config.json", json.dumps(_card_config("llama-3.1-8b")))
    for name, data in files.items():
        _write(folder / name, data)
    return folder


def test_bytes_past_the_last_tensor_are_refused(tmp_path: Path) -> None:
    folder = _folder(tmp_path, {"model.safetensors": _st({"w": W}, b"\0" * 16)})
    with pytest.raises(CatalogError, match=r"holds 16 bytes and its tensors end at 8"):
        model_from_path(folder)


def test_tensors_that_fill_the_data_are_counted(tmp_path: Path) -> None:
    folder = _folder(tmp_path, {"model.safetensors": _st({"w": W}, b"\0" * 8)})
    assert model_from_path(folder).checkpoint_bytes == 8


SHARDS = ("model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors")
INDEX = json.dumps({"weight_map": {"a": SHARDS[0], "b": SHARDS[1]}})


def test_an_index_naming_a_missing_shard_is_refused(tmp_path: Path) -> None:
    folder = _folder(
        tmp_path, {"model.safetensors.index.json": INDEX, SHARDS[0]: _st({"a": W}, b"\0" * 8)}
    )
    with pytest.raises(CatalogError, match=r"names 1 shard\(s\) not in the folder .*incomplete"):
        model_from_path(folder)


def test_an_index_with_every_shard_counts_both(tmp_path: Path) -> None:
    shards = {name: _st({k: W}, b"\0" * 8) for name, k in zip(SHARDS, "ab", strict=True)}
    folder = _folder(tmp_path, {"model.safetensors.index.json": INDEX, **shards})
    assert model_from_path(folder).checkpoint_bytes == 16


def test_an_index_without_shards_is_a_config_only_copy(tmp_path: Path) -> None:
    folder = _folder(tmp_path, {"model.safetensors.index.json": INDEX})
    assert model_from_path(folder).checkpoint_bytes is None


# A spec's unknown moe_backend read "scenario[0].moe_backend.valid: auto, ...": the message began
# "valid: ", which the spec's error lines take for a sub-field's name.


def test_an_unknown_moe_backend_in_a_spec_names_the_key(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from test_bad_input_campaign6 import SPEC

    spec = SPEC.replace('engine = "vllm"', 'engine = "trtllm"\nmoe_backend = "nope"')
    path = _write(tmp_path / "s.toml", spec)
    line = _one_line_error(["check", path], capsys)
    assert line.startswith(f"error: {path}: scenario[0].moe_backend: must be one of auto, trtllm")
