"""Findings of the random-combination campaign's seeds 25-34 (benchmarks/fuzz_random.py, issue 23),
each value worked by hand."""

from __future__ import annotations

import json
import math

import pytest

from capcliff.cli import main

USERS = ["plan", "llama-3.1-8b", "--gpu", "h100-sxm", "--gpus", "1", "--engine", "vllm",
         "--isl", "100", "--osl", "100", "--arrival", "clients", "--clients", "8",
         "--jobs", "1"]  # fmt: skip


def _plan(args: list[str], capsys: pytest.CaptureFixture[str]) -> dict:
    assert main([*args, "--format", "json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_plan_users_wait_their_think_time_as_sweeps_do(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # fuzz_random seed 25: `plan ... --clients 8 --think-time 10` simulated users who send at
    # once (the think time was dropped), so the fleet was priced at 11.98 requests/s where
    # `sweep` of the same users serves 0.76. Each user sends one request per think + its own
    # latency: at most 8 / 10 = 0.8 requests/s; at least 8 / (10 + TTFT + 99 x TPOT) with the
    # fleet row's p99s (the users' latencies at their load, an upper bound of the mean).
    fleet = _plan([*USERS, "--think-time", "10"], capsys)["fleet"][0]
    served = fleet["served_rps"]
    assert served <= 8 / 10
    assert served >= 8 / (10 + fleet["ttft_p99_s"] + 99 * fleet["tpot_p99_s"])
    # $ per million output tokens = $3.00 an hour / (served x 100 tokens x 3,600 s) x 1e6
    usd = fleet["usd_per_million_output_tokens"]
    assert usd == pytest.approx(3.0 / (served * 100 * 3600) * 1e6)


def test_plan_names_the_users_think_time_in_its_header(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main([*USERS, "--think-time", "10"]) == 0
    assert "workload isl 100, osl 100, think 10 s, 8 closed-loop users" in capsys.readouterr().out


def test_users_without_a_think_time_send_as_each_request_ends(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # no think time: 8 users, each with one request in flight, are 8 / E[e2e] requests/s, far past
    # 0.8; E[e2e] <= TTFT + 99 x TPOT at their p99s bounds it from below
    fleet = _plan(USERS, capsys)["fleet"][0]
    assert fleet["served_rps"] >= 8 / (fleet["ttft_p99_s"] + 99 * fleet["tpot_p99_s"])


def test_a_session_fleet_is_priced_at_its_users_rate_at_their_load(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # fuzz_random seed 25: 8 multiturn-chat users on one H200 (SGLang, TTFT p99 <= 2 s) were
    # priced at 0.34 requests/s, 8 / (think 9.9 s + the e2e at the sustained rate, 13.5 s), where
    # they send 0.66 (the plan's own reuse line: 305 tok/s). Their mean think before a request
    # is at most the preset's 10 s and their latency at 8 users is seconds (441 output tokens
    # at a few ms each), so they send more than 8 / (10 + 441 x 0.02) = 0.42 requests/s.
    args = ["plan", "llama-3.1-8b", "--gpu", "h200-sxm", "--gpus", "1", "--engine", "sglang",
            "--workload", "multiturn-chat", "--clients", "8", "--jobs", "1",
            "--num-requests", "40", "--slo-ttft", "2"]  # fmt: skip
    fleet = _plan(args, capsys)["fleet"][0]
    assert fleet["tpot_p99_s"] < 0.02
    assert 8 / (10 + 441 * 0.02) < fleet["served_rps"] <= 8 / 9.0


@pytest.mark.parametrize(
    ("ours", "theirs", "text"),
    [
        (93.0, 93.2, "0%"),  # 93 / 93.2 - 1 = -0.2 %: printed "-0%" (plan --disagg, 8 users)
        (93.2, 93.0, "0%"),  # +0.2 %
        (5.8, 5.8, "0%"),
        (0.04, 0.01, "+300%"),  # 0.04 / 0.01 - 1
        (90.0, 100.0, "-10%"),
        (1.0, 0.0, "n/a"),
    ],
)
def test_a_disagg_comparison_never_prints_a_signed_zero(
    ours: float, theirs: float, text: str
) -> None:
    from capcliff.analysis.disagg.compare import _change

    assert _change(ours, theirs) == text


def _sweep_cliff(extra: list[str], capsys: pytest.CaptureFixture[str]) -> int:
    # SGLang 0.5.9: the pool of 914,024 tokens below (0.5.10's piecewise graphs reserve 464 MiB
    # more: 909,451)
    args = ["sweep", "llama-3.1-8b", "--gpu", "h200-sxm", "--gpus", "1", "--engine", "sglang",
            "--engine-version", "0.5.9", "--workload", "multiturn-chat", "--num-requests", "40",
            "--concurrency", "64", "--format", "json", *extra]  # fmt: skip
    assert main(args) == 0
    (series,) = json.loads(capsys.readouterr().out)["series"]
    return series["cliff"]["analytic_concurrency"]


def test_a_session_presets_analytic_cliff_is_the_plans_whatever_the_load(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # fuzz_random seed 25: multiturn-chat on one H200 (SGLang): `plan` named an analytic p99
    # cliff of 93, `sweep` of the same deployment 88 with users thinking (think draws took
    # bits of the Generator the lengths come from) and 93 at --think-time 0. The cliff is the
    # p99 peak KV (input + output - 1) of the 1,000-request reference sample of the plan's
    # backlog, drawn with seed 0 without think times (`OnlineWorkload.reference`): 914,024
    # one-token blocks // that p99.
    from capcliff.analysis.evaluate.online_load import OnlineWorkload
    from capcliff.analysis.workloads import WorkloadChoice
    from capcliff.sim.result import linear_quantiles

    choice = WorkloadChoice(num_requests=1, preset_name="multiturn-chat", clients=8)
    sample = OnlineWorkload(choice, seed=3).reference(1000)
    p99 = linear_quantiles(sample.input_tokens + sample.output_tokens - 1, [0.99])[0]
    expected = 914_024 // math.ceil(p99)
    assert expected == 93
    loads = [["--clients", "8"], ["--clients", "8", "--think-time", "0"],
             ["--clients", "16", "--think-time", "1"],
             ["--arrival", "poisson", "--rate", "2"]]  # fmt: skip
    for load in loads:
        assert _sweep_cliff(load, capsys) == expected


def test_the_batch_grid_never_passes_the_cap_given() -> None:
    from capcliff.analysis.plan.batch import COARSE_FACTORS, FINE_FACTORS, concurrency_grid

    # analytic cliff 301, 400 requests, one replica: 1 x 301, 4 x 301 = 1,204 (past the batch)
    # and every request at once, 400; the fine pass 0.25, 0.5, 2 x 301 = 75, 150, 602
    assert concurrency_grid(301, 400, 1, COARSE_FACTORS) == (301, 400)
    assert concurrency_grid(301, 400, 1, FINE_FACTORS, everything=False) == (75, 150)
    # --max-num-seqs 64: every cap past it is that engine's 64
    assert concurrency_grid(301, 400, 1, COARSE_FACTORS, most=64) == (64,)
    assert concurrency_grid(301, 400, 1, FINE_FACTORS, everything=False, most=64) == (64,)


def test_a_batch_plan_keeps_to_the_max_num_seqs_given(capsys: pytest.CaptureFixture[str]) -> None:
    # fuzz_random seed 25 (read by hand): `plan --arrival batch --max-num-seqs 64` with 400
    # requests recommended max_num_seqs 301 (the analytic cliff) on a KV pool sized at 64, with
    # no line saying so; the online plan's caps never pass the cap given (`sweep_caps`)
    args = ["plan", "llama-3.1-8b", "--gpu", "h100-sxm", "--gpus", "1", "--engine", "vllm",
            "--num-requests", "400", "--max-num-seqs", "64", "--arrival", "batch",
            "--isl", "1000", "--osl", "500", "--jobs", "1"]  # fmt: skip
    report = _plan(args, capsys)
    assert report["recommended"]["max_num_seqs"] == 64
    assert all(lay["sweet_spot"]["concurrency"] <= 64 * lay["dp"] for lay in report["layouts"])
    assert any("the --max-num-seqs given (64" in r for r in report["recommended"]["reasons"])
    assert not any("admits the whole batch" in r for r in report["recommended"]["reasons"])


def _sweep_warnings(concurrency: str, capsys: pytest.CaptureFixture[str]) -> str:
    """stderr of a sweep at --max-num-seqs 64 over `concurrency`."""
    code = main(["sweep", "llama-3.1-8b", "--gpu", "h100-sxm", "--gpus", "1", "--engine",
                 "vllm", "--num-requests", "40", "--max-num-seqs", "64", "--isl", "1000",
                 "--osl", "500", "--concurrency", concurrency])  # fmt: skip
    assert code == 0
    return capsys.readouterr().err


def test_a_sweep_past_the_max_num_seqs_given_says_so(capsys: pytest.CaptureFixture[str]) -> None:
    # a sweep's concurrency is the cap on running requests (one replica: 128 per replica)
    said = "warning: --max-num-seqs 64: concurrency 128 runs more requests per replica"
    assert said in _sweep_warnings("32,64,128", capsys)
    assert "--max-num-seqs 64:" not in _sweep_warnings("32,64", capsys)


T01 = "tests/fixtures/logs/trtllm_t01_llama31_8b_rtx5090.txt"


def test_a_log_whose_kv_pool_is_fp8_says_so_when_bf16_is_modeled(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # fuzz_random seeds 25-34 (read by hand): calibrating row T01 (an FP8 TensorRT-LLM engine)
    # as bf16 KV printed "calibrated" 118,144 KV tokens against the 263,008 logged, with a note
    # on the weights only. Its pool: 16.05 GiB x 2^30 / 263,008 tokens = 65,525 B per token;
    # Llama-3.1-8B's KV is 2 x 32 layers x 8 heads x 128 x 2 B = 131,072 B in bf16, half in fp8.
    assert main(["calibrate", T01, "--model", "llama-3.1-8b"]) == 0
    err = capsys.readouterr().out
    assert "the log's KV pool holds 65,525 B per token per GPU (16.05 GiB over 263,008" in err
    assert "not the 131,072 B of the bf16 KV modeled" in err
    assert "pass --kv-cache-dtype fp8" in err
    assert main(["calibrate", T01, "--model", "llama-3.1-8b", "--kv-dtype", "fp8"]) == 0
    assert "kv_cache_dtype:" not in capsys.readouterr().out


def test_a_log_of_fp8_weights_calibrated_as_bf16_is_refused(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # fuzz_random seed 26 (random): row V04 (Qwen3-235B-A22B-FP8, tp8-ep8 on L40S) with
    # --weight-dtype bf16 printed a modeled KV cache of -16.78 GiB: the logged 27.72 GiB of
    # weights per GPU are half the bf16 model's (235B x 2 B / 8 GPUs = 58.7 GB = 54.7 GiB), and
    # the guard measured logged / modeled - 1 = -50 %, inside its 50 %, where modeled / logged - 1
    # = +98 % is not: the guard is now either way
    log = "tests/fixtures/logs/vllm_v1_v04_qwen3_235b_fp8_8xl40s_tp8.txt"
    assert main(["calibrate", log, "--weight-dtype", "bf16"]) == 2
    err = capsys.readouterr().err
    assert "error: model: the log's weights (27.72 GiB per GPU) are -50% off" in err
    assert main(["calibrate", log]) == 0  # its own FP8 weights: 27.66 modeled


def test_one_user_reads_singular_and_sends_one_request_at_a_time(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # fuzz_random seed 25 (random): "the 1 users' rate"; one user with no think time sends
    # 1 / E[e2e] requests/s, E[e2e] <= TTFT + 99 x TPOT at the fleet row's p99s
    args = [*USERS[:-4], "--clients", "1", "--jobs", "1"]
    fleet = _plan(args, capsys)["fleet"][0]
    assert fleet["served_rps"] >= 1 / (fleet["ttft_p99_s"] + 99 * fleet["tpot_p99_s"])
    assert main(args) == 0
    out = capsys.readouterr().out
    assert "1 closed-loop user;" in out and "(the 1 user's rate," in out
