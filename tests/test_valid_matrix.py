"""Valid input the matrix run (`benchmarks/valid_matrix.py`) answered wrongly, one claim each."""

from __future__ import annotations

import json

import pytest

from capcliff.analysis.deployment import resolve
from capcliff.analysis.deployment_settings import settings_of
from capcliff.catalog.catalogs import get_hardware, get_model
from capcliff.catalog.layout import parse_layout
from capcliff.cli import main
from capcliff.memory.layout_memory import LayoutMemory


def _run(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main(args)
    out, err = capsys.readouterr()
    return code, out, err


def _memory_405b_h100(capsys: pytest.CaptureFixture[str], *extra: str) -> tuple[int, str]:
    code, out, _ = _run(
        ["memory", "llama-3.1-405b", "--gpu", "h100-sxm", "--gpus", "8", "--layout", "tp8", *extra],
        capsys,
    )
    return code, out


def test_a_layout_that_does_not_fit_reports_no_negative_kv_pool(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # 405.85B bf16 parameters over TP 8: >= 405.85e9 x 2 B / 8 = 101.46e9 B a GPU; vLLM's budget is
    # 0.9 x 81,559 MiB = 0.9 x 85,520,809,984 B = 76,968,728,985 B: short by >= 24.49e9 B.
    code, out = _memory_405b_h100(capsys, "--format", "json")
    assert code == 0
    (stage,) = json.loads(out)["layouts"][0]["stages"]
    assert stage["kv_bytes"] == 0
    assert stage["kv_blocks"] == 0
    assert stage["kv_shortfall_bytes"] > 24_490_000_000


def test_the_shortfall_is_what_the_budget_terms_overrun(capsys: pytest.CaptureFixture[str]) -> None:
    code, out = _memory_405b_h100(capsys, "--format", "json")
    assert code == 0
    (stage,) = json.loads(out)["layouts"][0]["stages"]
    inside = sum(t["bytes"] for t in stage["terms"] if t["inside_budget"])
    assert stage["kv_shortfall_bytes"] == inside - stage["usable_bytes"]


def test_the_budget_table_of_a_layout_that_does_not_fit_prints_no_negative_gib(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, out = _memory_405b_h100(capsys)
    assert code == 0
    kv_row = next(line for line in out.splitlines() if "= KV cache" in line)
    assert "-" not in kv_row.split("│")[2]
    assert "overrun the budget by" in kv_row


def test_where_no_layout_fits_the_budget_shown_is_the_nearest_to_fitting(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # 8 x H100 for 405B bf16: every layout is short; tp8 (101.5 GB of weights a GPU) is nearer
    # to fitting than dp8 (811.7 GB a GPU), which the table showed before.
    code, out, _ = _run(["memory", "llama-3.1-405b", "--gpu", "h100-sxm", "--gpus", "8"], capsys)
    assert code == 0
    title = next(line for line in out.splitlines() if "budget per GPU" in line)
    assert "dp8" not in title


def _qwen14b_gb200(layout: str, offload: str) -> LayoutMemory:
    settings = settings_of({"engine": "sglang", "offload": offload})
    dep = resolve(get_model("deepseek-r1-distill-qwen-14b"), get_hardware("gb200"), settings)
    return dep.memory(parse_layout(layout), 4096)


def test_a_replica_whose_host_dram_share_cannot_hold_the_offload_tier_does_not_fit() -> None:
    # GB200: 0.96 TB of Grace DRAM per 4-GPU tray = 240 GB a GPU; cpu:256GiB = 274.9 GB > 240 GB
    # on a 1-GPU replica, 137.4 GB a GPU on a 2-GPU replica.
    alone = _qwen14b_gb200("tp1", "cpu:256GiB")
    assert not alone.fits
    assert alone.reason.startswith("does not fit: offload cpu: 275 GB per replica")
    assert _qwen14b_gb200("tp2", "cpu:256GiB").fits


def test_an_offload_tier_one_gpu_holds_leaves_the_verdict_alone() -> None:
    # cpu:200GiB = 214.7 GB <= 240 GB a GPU
    assert _qwen14b_gb200("tp1", "cpu:200GiB").fits


def test_plan_answers_an_offload_that_only_wider_replicas_hold(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # it refused the whole plan (exit 2) because a 1-GPU replica cannot hold 256 GiB of it
    code, out, err = _run(
        ["plan", "deepseek-r1-distill-qwen-14b", "--gpu", "gb200", "--engine", "sglang",
         "--gpus", "4", "--isl", "1000", "--osl", "200", "--num-requests", "100", "--jobs", "1",
         "--arrival", "batch", "--offload", "cpu:256GiB", "--format", "json"],
        capsys,
    )  # fmt: skip
    assert code == 0, err
    report = json.loads(out)
    rec = report["recommended"]
    assert rec["tp"] * rec["pp"] >= 2
    dp4 = next(lay for lay in report["layouts"] if lay["name"] == "dp4")
    assert not dp4["fits"]
    assert "offload cpu" in dp4["reason"]


def test_plan_disagg_where_no_split_fits_answers_aggregated_and_says_why(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # Llama-3.1-70B in bf16: 70.55B x 2 B = 141 GB, more than one H200's 141 GB (126 GB usable),
    # so 2 GPUs hold no 1-GPU prefill and 1-GPU decode instance; tp2 (70.5 GB a GPU) fits.
    # It exited 2 before, though the aggregated half of the question has an answer.
    code, out, err = _run(
        ["plan", "llama-3.1-70b", "--gpu", "h200-sxm", "--gpus", "2", "--disagg", "--isl", "100",
         "--osl", "100", "--num-requests", "50", "--jobs", "1", "--format", "json"],
        capsys,
    )  # fmt: skip
    assert code == 0, err
    assert err.startswith("warning: disagg: no layout of up to 1 GPUs fits this model")
    assert "the plan is aggregated" in err.splitlines()[0]
    report = json.loads(out)
    assert report["recommended"]["layout"] == "tp2"
    # what the splits are compared with when no rate is given: the batch plan by its objective
    assert (report["mode"], report["objective"]) == ("batch", "makespan")


def test_plan_disagg_on_one_gpu_is_still_refused(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = _run(
        ["plan", "llama-3.1-8b", "--gpus", "1", "--disagg", "--isl", "100", "--osl", "100",
         "--num-requests", "50", "--jobs", "1"],
        capsys,
    )  # fmt: skip
    assert code == 2
    assert err.startswith("error: gpus: a split needs at least 2 GPUs")


def _sweep(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    small = ["--isl", "100", "--osl", "100", "--num-requests", "20", "--concurrency", "4"]
    return _run(["sweep", *args, *small], capsys)


def test_sweep_without_gpus_runs_the_fewest_gpus_the_model_fits(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # Qwen3-235B-A22B-FP8: 235B parameters at 1 B = 235 GB, more than one GB200's 186 GB; two
    # hold 118 GB each. It exited 2 ("no layout of 1 GPUs fits") before.
    code, out, err = _sweep(capsys, "qwen3-235b-a22b-fp8", "--gpu", "gb200", "--engine", "sglang")
    assert code == 0, err
    assert out.startswith("qwen3-235b-a22b-fp8 on 2 x gb200")


def test_sweep_with_gpus_given_keeps_them(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _sweep(capsys, "llama-3.1-8b", "--gpus", "2")
    assert code == 0
    assert out.startswith("llama-3.1-8b on 2 x h200-sxm")


def test_sweep_of_a_model_no_node_holds_names_the_node(capsys: pytest.CaptureFixture[str]) -> None:
    # Llama-3.1-405B in bf16: 811.7 GB, more than 8 x H100 (8 x 77.0 GB usable). Not fitting is
    # the answer (exit 0, as `plan` says it), over a whole node: every layout of 8 GPUs and why.
    # In FP8 it is 405.9 GB, 50.7 GB a GPU at TP 8; 16 GPUs hold 50.7 GB each in BF16.
    code, out, err = _sweep(capsys, "llama-3.1-405b", "--gpu", "h100-sxm")
    assert code == 0, err
    assert out.startswith("llama-3.1-405b on 8 x h100-sxm")
    assert "  dp8: does not fit: weights 811.7 GB/GPU > 77.0 GB usable" in out
    assert "  tp8: does not fit: weights 101.5 GB/GPU > 77.0 GB usable" in out
    assert "  - FP8 weights (--weight-dtype fp8) fit as tp8" in out
    assert "  - 16 GPUs (2 nodes) fit as" in out


def test_speculation_on_a_small_kv_pool_reserves_lookahead_for_the_sequences_it_holds(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # DeepSeek-R1-Distill-Qwen-32B with an EAGLE-3 head on one H100: 425 blocks of KV are left
    # (283 while the graph term counted 67 sizes; vLLM 0.24's list has 51, so 16 x 64 layers x
    # 588,188 B = 602,304,512 B more KV, 141.4 blocks of 16 x 65 layers x 4,096 B = 4,259,840 B:
    # 283.9 + 141.4 = 425.3); reserving 6 lookahead slots for max_num_seqs 1,024 sequences
    # (ceil(1,024 x 6 / 16) = 384 blocks) left too little and refused a 1,067-token request
    # (exit 2) before; at most 425 sequences run, ceil(425 x 6 / 16) = 160 blocks reserved,
    # 265 left.
    code, out, err = _run(
        ["sweep", "deepseek-r1-distill-qwen-32b", "--gpu", "h100-sxm", "--workload", "chat-short",
         "--num-requests", "20", "--concurrency", "4", "--speculative", "eagle:3", "--format",
         "json"],
        capsys,
    )  # fmt: skip
    assert code == 0, err
    assert json.loads(out)["series"][0]["kv_blocks_per_replica"] == 265
