"""Findings of the random-combination campaign's seeds 53-58 (benchmarks/fuzz_random.py, issue 23),
each value worked by hand or read from the engines' source."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from capcliff.cli import main

FIXTURES = Path(__file__).parent / "fixtures"
LOG = FIXTURES / "logs" / "vllm_v1_v35_dsr1_0528_fp4_4xb200_tp4_ep4.txt"
OTHER_LOG = FIXTURES / "logs" / "vllm_v1_v16_llama31_8b_eager.txt"
BENCH = FIXTURES / "bench" / "dsr1_0528_h200_tp8_sglang.csv"
BENCH_ARGS = ["--model", "deepseek-r1", "--gpu", "h200-sxm", "--gpus", "8", "--layout", "tp8"]


# `calibrate --force -o FILE` keeps the sections of the calibration it replaces, so it reads FILE
# as one. Seed 57 (random: `calibrate LOG --kv-cache-dtype fp8 --force --output logs/log.txt`, a
# start-up log there) printed the comparison and "written: .../logs/log.txt", then "error: ...:
# (toml): Invalid statement (at line 6, column 1)", exit 2, with the log unchanged.
@pytest.mark.parametrize(
    "argv",
    [
        [str(LOG)],
        [str(BENCH), *BENCH_ARGS, "--engine", "sglang"],
    ],
    ids=["start-up log", "benchmark"],
)
def test_replacing_a_file_that_is_no_calibration_is_refused_before_any_answer(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, argv: list[str]
) -> None:
    target = tmp_path / "log.txt"
    target.write_bytes(OTHER_LOG.read_bytes())
    assert main(["calibrate", *argv, "--force", "--output", str(target)]) == 2
    out, err = capsys.readouterr()
    assert out == ""  # no table, no "written:"
    lines = err.strip().splitlines()
    assert len(lines) == 1
    assert lines[0].startswith(f"error: --output: {target} is no calibration file ((toml): ")
    assert target.read_bytes() == OTHER_LOG.read_bytes()


def test_a_calibration_is_still_replaced_with_force_keeping_its_step_time(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    target = tmp_path / "cal.toml"
    assert (
        main(["calibrate", str(BENCH), *BENCH_ARGS, "--engine", "sglang", "-o", str(target)]) == 0
    )
    assert main(["calibrate", str(LOG), "--gpu", "b200", "--force", "-o", str(target)]) == 0
    capsys.readouterr()
    text = target.read_text()
    assert "[step_time]" in text  # the benchmark's section, kept
    assert 'source = "' + str(LOG) + '"' in text  # the log's start-up terms, written


def _plan(capsys: pytest.CaptureFixture[str], *argv: str) -> dict[str, object]:
    args = ["plan", *argv, "--isl", "1000", "--osl", "200", "--num-requests", "40", "--jobs", "1"]
    assert main([*args, "--format", "json"]) == 0
    data: dict[str, object] = json.loads(capsys.readouterr().out)
    return data


# vLLM loads a quantized checkpoint in its own quantization_config's method only: another
# --quantization is refused ("Quantization method specified in the model config (...) does not
# match the quantization method specified in the `quantization` argument (...)",
# `_verify_quantization` in vllm/config/model.py; SGLang's model_config.py says the same). Seed 56
# (random: `plan deepseek-r1-0528-fp4 --weight-dtype fp16`, 8 x H200): nothing fits, since FP16
# weights are 671B x 2 B = 1.34 TB against 8 x 135.7 GB usable, and the fixes said "FP8 weights
# (--weight-dtype fp8) fit as dpa8", weights no engine makes from NVFP4 ones, not that the
# checkpoint's own NVFP4 weights fit (4 GPUs hold them as dpa4, seed 56's case 3).
def test_a_wider_dtype_than_the_checkpoints_is_answered_with_its_own_weights(
    capsys: pytest.CaptureFixture[str],
) -> None:
    plan = _plan(capsys, "deepseek-r1-0528-fp4", "--weight-dtype", "fp16", "--gpus", "8")
    assert plan["recommended"] is None
    assert plan["reason"] == "no layout fits"
    fixes = [str(f) for f in plan["fixes"]]  # type: ignore[attr-defined]
    assert fixes[0].startswith("the checkpoint's own nvfp4 weights (--weight-dtype left out) fit")
    assert not any("--weight-dtype fp8" in f for f in fixes)


# The same rule for gpt-oss (BF16 attention, MXFP4 experts under a quantization_config): vLLM and
# SGLang refuse `--quantization fp8` there, so `--weight-dtype fp8` is a checkpoint to find, not a
# flag; the line carried `--quantization fp8`.
def test_fp8_weights_of_an_mxfp4_checkpoint_are_not_quantized_while_loading(
    capsys: pytest.CaptureFixture[str],
) -> None:
    plan = _plan(capsys, "gpt-oss-120b", "--weight-dtype", "fp8", "--gpus", "1", "--layout", "tp1")
    flags = plan["engine_flags"]
    assert isinstance(flags, dict)
    assert "--quantization" not in flags["vllm"]
    assert "--quantization" not in flags["sglang"]
    assert (
        "--weight-dtype fp8: the engines cannot quantize bf16 (experts mxfp4) weights to it while "
        "loading; serve a checkpoint quantized to fp8"
    ) in plan["flag_warnings"]  # type: ignore[operator]


# `--weight-dtype fp8` of a checkpoint shipped in FP8 is the checkpoint as shipped (vLLM's
# `--quantization fp8` on it is its own method): the plan said "the engines cannot quantize fp8
# weights to it while loading; serve a checkpoint quantized to fp8", and sized every linear weight
# in FP8 where the checkpoint's quantization_config keeps some modules wider.
def test_the_checkpoints_own_dtype_named_is_the_checkpoint_as_shipped(
    capsys: pytest.CaptureFixture[str],
) -> None:
    argv = ["memory", "llama-3.3-70b-fp8", "--gpus", "2", "--layout", "tp2", "--format", "json"]
    assert main(argv) == 0
    bare = json.loads(capsys.readouterr().out)
    assert main([*argv, "--weight-dtype", "fp8"]) == 0
    named = json.loads(capsys.readouterr().out)
    assert named["layouts"] == bare["layouts"]
    plan = _plan(
        capsys, "llama-3.3-70b-fp8", "--weight-dtype", "fp8", "--gpus", "2", "--layout", "tp2"
    )
    assert not any("cannot quantize" in w for w in plan["flag_warnings"])  # type: ignore[attr-defined]


# Llama 3.3 70B in BF16 is 70.6B x 2 B = 141 GB, past one H200's 135.7 GB usable; its FP8
# checkpoint's 70.6 GB fit. The fix names the checkpoint's own weights once (not again as "FP8
# weights (--weight-dtype fp8)", the same weights).
def test_the_checkpoints_own_fp8_weights_are_named_once(
    capsys: pytest.CaptureFixture[str],
) -> None:
    plan = _plan(capsys, "llama-3.3-70b-fp8", "--weight-dtype", "bf16", "--gpus", "1")
    assert plan["reason"] == "no layout fits"
    fixes = [str(f) for f in plan["fixes"]]  # type: ignore[attr-defined]
    assert fixes[0] == "the checkpoint's own fp8 weights (--weight-dtype left out) fit as tp1"
    assert not any("(--weight-dtype fp8)" in f for f in fixes)


# A 40-request trace is the whole sample: too small for a 95 % interval of the p99s (JSON
# `ttft_p99_half_width: null`; a note says so). Seed 55 (valid: `plan llama-3.1-8b --gpus 2
# --workload trace.jsonl`) printed "TTFT p99 0.0246 s, TPOT p99 5.2 ms (95 % sampling interval of
# the p99s: another sample of the same load lands within it)", explaining an interval it did not
# print.
def test_no_interval_is_explained_where_none_is_printed(
    capsys: pytest.CaptureFixture[str],
) -> None:
    trace = str(FIXTURES / "checks" / "traces" / "short.jsonl")
    argv = ["plan", "llama-3.1-8b", "--gpu", "h200-sxm", "--gpus", "2", "--workload", trace]
    assert main([*argv, "--layout", "dp2", "--jobs", "1", "--format", "json"]) == 0
    plan = json.loads(capsys.readouterr().out)
    assert plan["layouts"][0]["capacity"]["ttft_p99_half_width"] is None
    first = plan["recommended"]["reasons"][0]
    assert "TTFT p99" in first
    assert "±" not in first
    assert "sampling interval" not in first
    assert any("too small for a 5 % confidence interval" in n for n in plan["notes"])


ONLINE_SPEC = """[[scenario]]
name = "online"
model = "llama-3.1-8b"
gpu = "h100-sxm"
layout = "tp1"
[scenario.workload]
isl = 200
osl = 100
num_requests = 30
arrival = "poisson"
rate = 2
[scenario.expect]
sustained_rps_min = 0.1
usd_per_million_tokens_max = 100
"""


# Seed 53 (valid: `check checks/online.toml`, no ttft_p99_max_s / tpot_p99_max_s) said the
# sustained rate was the "steady state within the SLO": without either limit it is the saturation
# rate (docs/check.md). The cost's detail read "1 GPUs". One H100 at $3.00 an hour serving 2
# requests/s x 100 output tokens = 0.72 M tokens an hour costs 3 / 0.72 = $4.1667 per million.
@pytest.mark.parametrize(
    ("slo", "said"),
    [("", "its saturation rate (no SLO set)"), ("ttft_p99_max_s = 30\n", "within the SLO")],
)
def test_the_sustained_rate_names_an_slo_only_where_the_spec_sets_one(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, slo: str, said: str
) -> None:
    spec = tmp_path / "online.toml"
    spec.write_text(ONLINE_SPEC + slo)
    assert main(["check", str(spec), "--format", "json"]) == 0
    found = json.loads(capsys.readouterr().out)["scenarios"][0]["assertions"]
    by_name = {a["name"]: a for a in found}
    assert by_name["sustained_rps_min"]["detail"].endswith(said)
    cost = by_name["usd_per_million_tokens_max"]
    assert cost["detail"] == "1 GPU at $3.00/GPU-hour"
    assert cost["actual"] == pytest.approx(3.0 / 0.72, rel=1e-4)


# A layout that cannot exist for the model is bad input, as `plan` and `sweep` refuse it
# (`what_fits.refuse_impossible`). Seed 60 (random: `memory llama-3.1-405b --layout dpa8-ep8`,
# a dense model) answered exit 0, "no layout of 8 GPUs fits; see the reasons per layout", though
# its 811.7 GB of BF16 weights fit 8 H200s as tp8 (101.5 GB a GPU against 135.7 usable).
def test_memory_refuses_a_layout_that_cannot_exist_as_plan_and_sweep_do(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["memory", "llama-3.1-405b", "--layout", "dpa8-ep8"]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert err.count("\n") == 1
    assert "attention DP applies only to MoE models" in err
    assert "valid: tp8, " in err and "fit these 8 GPUs as they are (--layout tp8)" in err
