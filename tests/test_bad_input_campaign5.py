"""Bad input that a fifth campaign (benchmarks/fuzz_surfaces.py's adp5, fleet5, check5 and left5
surfaces) found: one test per class of finding.

A digit that Python's `str.isdigit` takes but `int` refuses (a superscript "²", a circled "①")
passed the digit check of `--attention-dp-balance` and `--speculative`, and the answer was
`int()`'s own message ("invalid literal for int() with base 10") instead of the field's valid
forms. Decimal digits of other scripts (an Arabic-Indic 3) stay valid, as elsewhere in capcliff.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from test_bad_input import _one_line_error

from capcliff.calibrate.calibration_file import SpeculativeCalibration
from capcliff.cli import main
from capcliff.errors import InputError
from capcliff.perf.speculation import parse_speculative
from capcliff.sim.config import parse_adp_balance

SWEEP = ["sweep", "llama-3.1-8b", "--isl", "100", "--osl", "100", "--num-requests", "20",
         "--concurrency", "4"]  # fmt: skip
TRT = ["sweep", "qwen3-30b-a3b", "--gpus", "2", "--layout", "dpa2", "--engine", "trtllm",
       "--isl", "100", "--osl", "100", "--num-requests", "20", "--concurrency", "4"]  # fmt: skip


@pytest.mark.parametrize("value", ["²", "60:²", "①:0", "⁵"])
def test_a_superscript_digit_in_the_balance_is_refused_with_its_forms(
    value: str, capsys: pytest.CaptureFixture[str]
) -> None:
    line = _one_line_error([*TRT, "--attention-dp-balance", value], capsys)
    assert line == (
        f"error: --attention-dp-balance: {value!r} is not on, off or TIMEOUT[:BATCHING_WAIT] "
        "(whole iterations, e.g. 60:0)"
    )


@pytest.mark.parametrize("value", ["ngram:²", "mtp:①", "eagle:⁵"])
def test_a_superscript_k_in_speculative_is_refused_with_its_range(
    value: str, capsys: pytest.CaptureFixture[str]
) -> None:
    line = _one_line_error([*SWEEP, "--speculative", value], capsys)
    method = value.split(":")[0]
    assert line == (
        f"error: --speculative: K must be an integer from 1 to 16 ({method}:K), got {value!r}"
    )


def test_a_superscript_k_in_a_calibration_file_names_the_forms() -> None:
    with pytest.raises(ValueError, match=r"is not mtp:K, eagle:K\[:DRAFT\] or ngram:K"):
        SpeculativeCalibration(speculative="ngram:²", accept_length=1.5, source="b.csv", points=3)


def test_decimal_digits_of_other_scripts_stay_valid(capsys: pytest.CaptureFixture[str]) -> None:
    # Arabic-Indic 3 is a decimal digit: int() reads it as 3, as for every numeric flag
    assert parse_adp_balance("٣:٣") == (3, 3)
    assert parse_speculative("ngram:٣").num_speculative_tokens == 3
    with pytest.raises(InputError):
        parse_adp_balance("²")
    assert main([*TRT, "--attention-dp-balance", "٣:0", "--format", "json"]) == 0
    capsys.readouterr()


# Valid input simulated wrong: a fleet line on each GPU type past the first refined only the
# three replicas of highest first-cap saturation (tp2, tp4, tp8 of Llama-8B), never tp1, so the
# cheapest line was a 2-GPU replica where one GPU carries the load at half the price.


def test_every_gpu_types_fleet_line_is_its_cheapest_replica(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # By hand: Llama-3.1-8B in BF16 is 16 GB, one GPU of either type holds it with room for KV;
    # 2 requests/s x 100 output tokens is 200 tok/s, and one decode step reads the 16 GB at 3.35
    # (H100) or 4.8 TB/s (H200), 3-5 ms, so one request alone already streams 200-300 tok/s with
    # TPOT far inside 50 ms. One GPU thus carries the load on each type, and 1 GPU costs half of
    # 2 at one price: each type's cheapest line is 1 GPU.
    args = ["plan", "llama-3.1-8b", "--jobs", "1", "--isl", "100", "--osl", "100",
            "--num-requests", "20", "--rate", "2", "--slo-ttft", "2", "--slo-tpot", "0.05",
            "--gpu", "h200-sxm,h100-sxm", "--price-gpu-hour", "3", "--format", "json"]  # fmt: skip
    assert main(args) == 0
    fleet = json.loads(capsys.readouterr().out)["fleet"]
    assert {e["gpu"]: e["gpus"] for e in fleet} == {"h200-sxm": 1, "h100-sxm": 1}


# The attention-DP balance for named disaggregated pools without attention DP was dropped
# unsaid (a named aggregated layout without it is refused)


def test_the_balance_for_pools_without_attention_dp_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    sweep = ["sweep", "qwen3-30b-a3b", "--isl", "100", "--osl", "100", "--num-requests",
             "20", "--concurrency", "4", "--engine", "trtllm", "--attention-dp-balance",
             "on"]  # fmt: skip
    line = _one_line_error([*sweep, "--disagg", "1p:tp1,1d:tp1"], capsys)
    assert line == (
        "error: attention_dp_balance: neither pool of 1p:tp1,1d:tp1 has attention DP; it "
        "balances attention-DP ranks (a pool such as 1d:dpa8 or 1d:dp8-ep8), or leave it off"
    )
    spec = tmp_path / "s.toml"
    spec.write_text(
        '[[scenario]]\nname = "s"\nmodel = "qwen3-30b-a3b"\ngpu = "h200-sxm"\n'
        'engine = "trtllm"\ndisagg = "1p:tp1,1d:tp1"\nattention_dp_balance = "on"\n'
        '[scenario.workload]\nisl = 100\nosl = 100\narrival = "batch"\nnum_requests = 20\n'
        "concurrency = 4\n[scenario.expect]\nkv_headroom_min = 0.1\n"
    )
    assert "neither pool of 1p:tp1,1d:tp1 has attention DP" in _one_line_error(
        ["check", str(spec)], capsys
    )
    # a decode pool with attention DP takes it
    assert main([*sweep, "--disagg", "1p:tp1,1d:dpa2", "--format", "json"]) == 0
    capsys.readouterr()


def test_offload_tiers_with_prefix_caching_off_are_said_to_change_nothing() -> None:
    # The tiers extend the prefix cache (a lookup finds a block there after HBM evicted it);
    # with caching off nothing is looked up, so every figure is the one without tiers, and the
    # command says so instead of accepting the tiers without a word. (5 GiB of KV: the sessions
    # reach their 32,768-token limit, 4.3 GB of this model's KV in bf16.)
    import json as _json

    from typer.testing import CliRunner

    from capcliff.cli import app

    base = ["sweep", "llama-3.1-8b", "--workload", "multiturn-chat", "--clients", "8",
            "--num-requests", "40", "--concurrency", "4", "--kv-cache-memory", "5GiB",
            "--prefix-caching", "off"]  # fmt: skip
    runner = CliRunner()
    with_tiers = runner.invoke(app, [*base, "--offload", "cpu:64GiB"])
    assert with_tiers.exit_code == 0, with_tiers.output
    assert "offload: the tiers hold the prefix cache's evicted blocks" in with_tiers.output
    plain = runner.invoke(app, [*base, "--format", "json"])
    tiered = runner.invoke(app, [*base, "--offload", "cpu:64GiB", "--format", "json"])
    points = [_json.loads(r.stdout)["points"][0] for r in (plain, tiered)]
    figures = ("output_throughput_tok_s", "ttft_p99_s", "tpot_p99_s", "preemptions")
    assert [points[0][k] for k in figures] == [points[1][k] for k in figures]
