"""Findings of the random-combination campaign's seeds 36-41 (benchmarks/fuzz_random.py, issue 23),
each value worked by hand or read from another command's answer."""

from __future__ import annotations

import json
import re
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from capcliff.analysis.deployment import resolve
from capcliff.analysis.deployment_settings import DeploymentSettings
from capcliff.analysis.plan import feasibility
from capcliff.catalog.catalogs import get_hardware, get_model
from capcliff.catalog.layout import Layout
from capcliff.cli import main

T01 = str(Path(__file__).parent / "fixtures" / "logs" / "trtllm_t01_llama31_8b_rtx5090.txt")


def test_calibrate_refuses_a_trtllm_log_whose_memory_in_use_cannot_hold_the_weights(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # fuzz_random seed 39 (random): row T01, Llama-3.1-8B on an RTX 5090, calibrated as
    # qwen3-32b printed a modeled KV cache of -32.619 GiB (calibrated -30.044) with exit 0.
    # The log's "total: 31.84 GiB, available: 17.83 GiB" leaves 31.84 - 17.83 = 14.01 GiB in
    # use before the KV cache, weights included. Qwen3-32B in bf16: 64 layers x (5,120 x 8,192
    # x 2 (q, o) + 5,120 x 1,024 x 2 (k, v) + 3 x 5,120 x 25,600 (MLP)) = 31.206e9, + 2 x
    # 151,936 x 5,120 (embedding, head) = 32.761e9 parameters x 2 B / 2^30 = 61.02 GiB, past
    # 1.5 x 14.01 = 21.0.
    assert main(["calibrate", T01, "--model", "qwen3-32b"]) == 2
    err = capsys.readouterr().err
    assert "qwen3-32b's weights (61.02 GiB per GPU) do not fit in the 14.01 GiB" in err
    assert "31.84 GiB total less 17.83 available" in err


def test_calibrate_keeps_a_trtllm_log_of_the_model_named(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # Llama-3.1-8B: 8.030e9 parameters x 2 B / 2^30 = 14.96 GiB, 1.07 x the 14.01 in use (the
    # log's FP8 checkpoint is smaller): within the set 1.5, still calibrated
    assert main(["calibrate", T01, "--model", "llama-3.1-8b", "--kv-cache-dtype", "fp8"]) == 0
    assert "kv_cache_gib" in capsys.readouterr().out


AGENTS = ["plan", "llama-3.1-8b", "--gpu", "h100-sxm", "--gpus", "1", "--engine", "trtllm",
          "--workload", "agentic", "--arrival", "clients", "--clients", "4", "--slo-tpot", "0.2",
          "--max-num-seqs", "64", "--num-requests", "40", "--jobs", "1"]  # fmt: skip


def _plan(args: list[str], capsys: pytest.CaptureFixture[str]) -> dict[str, Any]:
    assert main([*args, "--format", "json"]) == 0
    return dict(json.loads(capsys.readouterr().out))


def test_a_fix_said_to_meet_the_slo_is_one_the_plan_with_it_recommends(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # fuzz_random seed 40: 4 agentic users (TRT-LLM on one H100, TPOT p99 <= 200 ms) miss it
    # even at light load (270 ms), and the plan listed "an FP8 KV cache (--kv-cache-dtype fp8):
    # ... TPOT p99 7.18 ms: meets it at light load", from one user's first 30 requests at a cap
    # of 1; the same plan with --kv-cache-dtype fp8 recommends nothing.
    base = _plan(AGENTS, capsys)
    assert base["recommended"] is None
    assert _plan([*AGENTS, "--kv-cache-dtype", "fp8"], capsys)["recommended"] is None
    assert not [f for f in base["fixes"] if "--kv-cache-dtype fp8" in f]
    # FP8 weights do meet it, and the figure the fix quotes is the light-load TPOT the plan
    # with FP8 weights reads itself (5 % of its own saturation, a rate within a few % of it)
    fp8 = _plan([*AGENTS, "--weight-dtype", "fp8"], capsys)
    assert fp8["recommended"] is not None
    [line] = [f for f in base["fixes"] if "--weight-dtype fp8" in f]
    match = re.search(r"TPOT p99 ([\d.]+) ms", line)
    assert match is not None
    best = fp8["layouts"][0]["capacity"]["best_tpot_p99_s"]
    assert float(match[1]) / 1000 == pytest.approx(best, rel=0.05)


def test_light_latency_runs_the_sample_rate_and_cap_of_the_light_probe(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    seen: list[Any] = []

    def simulate(requests: Any, _steps: Any, _capacity: Any, config: Any) -> Any:
        seen.append((requests, config.max_num_seqs))
        return SimpleNamespace(ttft=SimpleNamespace(p99=9.0), tpot=SimpleNamespace(p99=9.0))

    def steady_state(_result: Any, **_: Any) -> Any:
        return SimpleNamespace(ttft_p99_s=0.5, tpot_p99_s=0.02)

    monkeypatch.setattr(feasibility, "simulate", simulate)
    monkeypatch.setattr(feasibility, "steady_state", steady_state)
    dep = resolve(get_model("llama-3.1-8b"), get_hardware("h200-sxm"), DeploymentSettings())
    workload: Any = SimpleNamespace(
        at_rate=lambda n, rate: ("at_rate", n, rate), mean_output_tokens=lambda: 100.0
    )
    alt = feasibility.Alternative("x", dep, Layout())
    load = feasibility.LightLoad(rate_rps=0.0146, requests=200, cap=4)
    light = feasibility.light_latency(alt, workload, 4096, load)
    # the probe's 200 requests at 0.0146 requests/s, cap 4; its steady-state p99s, not the raw
    assert seen == [(("at_rate", 200, 0.0146), 4)]
    assert (light.ttft_p99_s, light.tpot_p99_s) == (0.5, 0.02)


def test_an_overload_note_counts_one_gpu_in_the_singular(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # fuzz_random seed 37: "tp1 on 1 GPUs sustains 0.18 requests/s"; seed 38: "5 x tp1 (5 GPUs,
    # 1 nodes)". 2 requests/s over 0.18 sustained with 20 % headroom: 2 / (0.8 x 0.18) = 13.9,
    # 14 replicas of one GPU; 8 to a node: 2 nodes. (Until 2026-12-08 the replica's cap was 26,
    # past the 13 requests TensorRT-LLM's no-evict reservations hold (457,184 tokens / 32,896 a
    # request, h-user3), and the fleet check's queue grew at 14 and 15 replicas: 16.)
    args = ["plan", "llama-3.1-8b", "--gpu", "h100-sxm", "--gpus", "1", "--engine", "trtllm",
            "--arrival", "poisson", "--rate", "2", "--num-requests", "40",
            "--jobs", "1"]  # fmt: skip
    [note] = _plan(args, capsys)["notes"]
    assert "; tp1 on 1 GPU sustains " in note
    assert "14 x tp1 (14 GPUs, 2 nodes) carry it" in note


def test_one_preemption_is_counted_in_the_singular() -> None:
    from capcliff.cli.render_reuse import reuse_lines

    point = SimpleNamespace(label="caching on", ttft_p99_s=19.21, prefix_cache_hit_rate=0.85,
                            offload_hit_rate=0.0, output_throughput_tok_s=212.0,
                            preemptions=1)  # fmt: skip
    reuse = SimpleNamespace(points=[point, SimpleNamespace(**{**vars(point), "preemptions": 2})],
                            recommended_offload_bytes=0, flags=[])  # fmt: skip
    lines = reuse_lines(SimpleNamespace(reuse=reuse, mode="batch"))  # type: ignore[arg-type]
    # fuzz_random seed 38 printed "hit 85% / 0%, 212 tok/s, 1 preemptions"
    assert lines[1] == "  - caching on: TTFT p99 19.21 s, hit 85% / 0%, 212 tok/s, 1 preemption"
    assert lines[2].endswith(", 2 preemptions")


def test_a_one_turn_session_says_one_turn() -> None:
    from capcliff.sim.traffic.sessions import SessionShape, describe_sessions, shaped_session_spec

    # fuzz_random seed 36 (a sweep of multiturn-chat at --turns 1 read "(1 turns, isl 289, ...")
    one = describe_sessions(shaped_session_spec("multiturn-chat", SessionShape(turns=1)))
    assert one.startswith("1 turn, isl ")
    three = describe_sessions(shaped_session_spec("multiturn-chat", SessionShape(turns=3)))
    assert three.startswith("3 turns, isl ")


def test_a_check_of_one_scenario_and_one_replica_reads_in_the_singular(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # fuzz_random seeds 36-41: "1 scenarios, 2 assertions" and "1 x tp1 (1 GPUs, 1 nodes)"
    spec = tmp_path / "online.toml"
    spec.write_text(
        '[[scenario]]\nname = "online"\nmodel = "llama-3.1-8b"\ngpu = "h100-sxm"\n'
        'layout = "tp1"\n[scenario.workload]\nisl = 200\nosl = 100\nnum_requests = 30\n'
        'arrival = "poisson"\nrate = 2\n[scenario.expect]\nreplicas_max = 4\n'
    )
    assert main(["check", str(spec)]) == 0
    out = capsys.readouterr().out
    assert "1 scenario, 1 assertion: all hold" in out
    assert "1 x tp1 (1 GPU, 1 node)" in out
