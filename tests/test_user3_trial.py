"""A third expert user's trial (2026-12-08, h-user3): reasoning models on 8 x H200 under vLLM,
SGLang and TensorRT-LLM; figures that contradicted each other or the engine."""

from __future__ import annotations

import json
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest

from capcliff.analysis.evaluate.cap_base import reserved_cliff
from capcliff.analysis.evaluate.capacity import cap_grid
from capcliff.analysis.plan import fleet
from capcliff.analysis.plan.online_rows import _cliff_reason
from capcliff.cli.main import main
from capcliff.sim.policies import policy
from capcliff.sim.traffic.workload import Requests

# --- 1. TensorRT-LLM's GUARANTEED_NO_EVICT: the cap grid starts where reservations fill KV -------


def _requests(inputs: list[int], output: int, max_output: int) -> Requests:
    n = len(inputs)
    return Requests(
        input_tokens=np.array(inputs), output_tokens=np.full(n, output),
        max_output_tokens=np.full(n, max_output), arrival_s=np.zeros(n),
    )  # fmt: skip


def test_only_the_no_evict_policy_reserves_each_requests_whole_sequence() -> None:
    # capacityScheduler.cpp GuaranteedNoEvictScheduler: a request's prompt + max_new blocks are
    # set aside at admission; vLLM, SGLang and MAX_UTILIZATION allocate as they go and preempt
    assert policy("trtllm-no-evict").reserves_full_sequence
    for name in ("vllm", "vllm-v0", "sglang", "trtllm-max-util"):
        assert not policy(name).reserves_full_sequence


def test_the_reserved_cliff_is_the_blocks_over_a_mean_reservation() -> None:
    # prompts 100 and 132 with max output 1,000 at 16-token blocks: ceil(1,100 / 16) = 69 and
    # ceil(1,132 / 16) = 71 blocks, 70 on average; 7,000 blocks hold 100 such reservations
    capacity: Any = SimpleNamespace(blocks=7_000, block_size=16)
    assert reserved_cliff(_requests([100, 132], 10, 1_000), capacity) == 100
    assert reserved_cliff(_requests([100, 132], 10, 1_000), SimpleNamespace(
        blocks=6_999, block_size=16)) == 99  # fmt: skip


def _grid_replica(policy_name: str) -> Any:
    # a step of B sequences takes (10 + B) ms (as tests/test_analysis_seed151_edges.py)
    return SimpleNamespace(
        capacity=SimpleNamespace(blocks=7_550, block_size=2, tokens=15_100),
        steps=SimpleNamespace(step_time_s=lambda _tokens, seqs, *_: 1e-3 * (10 + seqs)),
        config=SimpleNamespace(max_num_seqs=1_024, policy=policy_name),
    )


def test_a_no_evict_grid_starts_at_the_reservations_not_the_mean_kv_held() -> None:
    # 1,000 requests of 100 + 100 tokens with max output 1,000, 2-token blocks, 7,550 blocks.
    # vLLM: they hold 100 + 100 / 2 = 150 tokens on average (+1 for half a block): 15,100 / 151
    # = 100, and the knee (up to 200) gives round(70 / 1.41) = 50, so the base is 50.
    # No-evict: each reserves ceil(1,100 / 2) = 550 blocks; 7,550 / 550 = 13.7 -> 13 ever run.
    # Its knee up to 26: B / (10 + B) first reaches 90 % of 26 / 36 on round(26 / 1.19^k) at 22
    # (22 / 32 = 0.69 >= 0.65; 18 / 28 = 0.64 is not): round(22 / 1.41) = 16 > 13.
    workload: Any = SimpleNamespace(reference=lambda _: _requests([100] * 1_000, 100, 1_000))
    assert cap_grid(workload, _grid_replica("vllm"))[1] == 50
    assert cap_grid(workload, _grid_replica("trtllm-no-evict"))[1] == 13


def _plan_json(capsys: pytest.CaptureFixture[str], *args: str) -> dict[str, Any]:
    assert main(["plan", *args, "--jobs", "1", "--format", "json"]) == 0
    return json.loads(capsys.readouterr().out)  # type: ignore[no-any-return]


def test_trtllm_recommends_no_more_requests_than_its_reservations_hold(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # Before: Qwen3-235B-A22B tp4-pp2 under TensorRT-LLM, reasoning preset, recommended
    # max_batch_size 230 ("burst cliff 230 ... requests are preempted (0.00 per request)") while
    # no more than 101 ever ran (the sweep's rows at 115 and 230 were the same run). By hand:
    # 94 layers / PP2 = 47 a GPU, 4 KV heads / TP4 = 1: 2 x 47 x 128 x 2 B = 24,064 B a token a
    # GPU; the pool is 3,331,392 tokens = 104,106 blocks of 32. A request reserves its prompt
    # (110 mean) + 32,768 tokens: ceil(32,878 / 32) = 1,028 blocks; 104,106 / 1,028 = 101.3.
    plan = _plan_json(
        capsys, "qwen3-235b-a22b", "--engine", "trtllm", "--gpus", "8", "--layout", "tp4-pp2",
        "--workload", "reasoning", "--slo-ttft", "10", "--slo-tpot", "0.05",
    )  # fmt: skip
    [row] = plan["layouts"]
    assert row["kv_capacity_tokens_per_replica"] == 3_331_392
    assert 99 <= row["capacity"]["max_num_seqs"] <= 101
    assert row["cliff"]["simulated_concurrency"] > row["capacity"]["max_num_seqs"]
    assert "--max_batch_size 230" not in plan["engine_flags"]["trtllm"]
    assert not any("preempted" in reason for reason in plan["recommended"]["reasons"])


def test_past_the_burst_cliff_a_no_evict_engine_is_said_to_queue_not_preempt() -> None:
    c: Any = SimpleNamespace(simulated_cliff=18, analytic_cliff=17, sustained=None, points=(),
                             cap=24)  # fmt: skip
    text = _cliff_reason(c, preempts=False)
    assert "the cap is at or past the burst cliff" in text
    assert "requests wait for KV blocks" in text
    assert "preempt" not in text.replace("never preempts", "")


# --- 2. a users' fleet is priced on the whole fleet's requests, not the units simulated ---------


def test_a_fleet_checked_on_a_share_of_its_users_serves_that_share_scaled_up() -> None:
    # 64 users on 6 x tp2; the check simulated 2 units with round(64 x 2 / 6) = 21 users, which
    # served 2.77 requests/s: the fleet serves 2.77 x 64 / 21 = 8.44
    state: Any = SimpleNamespace(throughput_rps=2.77)
    checked = fleet.Checked(6, state, True, 21 / 64)
    assert checked.fleet_rps == pytest.approx(8.442, abs=1e-3)


def test_the_fleet_check_records_the_share_of_the_users_it_simulated(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # a replica's sample of 10,000 requests: 16,000 // 10,000 = 1 unit of 4 simulated, with
    # round(64 x 1 / 4) = 16 of the 64 users: a quarter of the load
    from capcliff.analysis.evaluate.online_load import LoadKind

    seen: list[int] = []
    state = SimpleNamespace(throughput_rps=3.0, ttft_p99_s=1.0, tpot_p99_s=0.02)
    monkeypatch.setattr(fleet, "config_at", lambda *a: None)
    monkeypatch.setattr(fleet, "_fleet_run", lambda *a: None)
    monkeypatch.setattr(fleet, "steady_state", lambda *a, **k: state)
    monkeypatch.setattr(fleet, "meets_slo", lambda *a: True)
    workload: Any = SimpleNamespace(
        kind=LoadKind.CLIENTS, choice=SimpleNamespace(clients=64),
        with_clients=lambda n, share: seen.append(share),
    )  # fmt: skip
    ev: Any = SimpleNamespace(capacity=SimpleNamespace(simulated_requests=10_000),
                              replica=SimpleNamespace(config=None))  # fmt: skip
    unit: Any = SimpleNamespace(cap=33, dp=1)
    checked = fleet.check_fleet(ev, unit, 4, workload, None)
    assert seen == [16]
    assert checked.load_share == 16 / 64
    assert checked.fleet_rps == 12.0  # 3.0 / 0.25


# --- 3. a sweep's concurrency counts every replica --------------------------------------------


def test_a_dp_sweeps_table_says_its_concurrency_is_all_replicas_together(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # `plan` prints max_num_seqs per replica (dp2-tp4: 166); `sweep --concurrency 166` runs 83
    # on each replica: the table says so
    args = ["sweep", "qwen3-32b", "--gpus", "8", "--layout", "dp2-tp4,tp8", "--isl", "100",
            "--osl", "100", "--num-requests", "40", "--concurrency", "8"]  # fmt: skip
    assert main(args) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "conc: all 2 replicas together, conc / 2 each" in out
    assert out.count("conc: all") == 1  # tp8 has one replica


# --- 4. `vllm serve --data-parallel-size` by release ------------------------------------------


def _served(layout: str, **changes: Any) -> Any:
    from capcliff.analysis.flags import Deployment
    from capcliff.catalog.layout import parse_layout

    base: dict[str, Any] = dict(
        model="meta-llama/Llama-3.1-70B", layout=parse_layout(layout), max_num_seqs=36,
        max_num_batched_tokens=8192, max_model_len=40960, gpu_memory_utilization=0.9,
        mem_fraction_static=0.9, kv_cache_dtype="auto", moe=False, mla=False,
    )  # fmt: skip
    return Deployment(**{**base, **changes})


def _flag_words(line: str) -> list[str]:
    return line.replace("\\\n", " ").split()


def test_vllm_serve_takes_data_parallel_size_from_0_8_3() -> None:
    # vLLM v0.8.3's release notes: "Single node data parallel with API server support (#13923)";
    # on 0.8.2 a dense dp4-tp2 is four `vllm serve --tensor-parallel-size 2` behind a balancer
    from capcliff.analysis.flags import vllm_command, vllm_separate_replicas

    new = _served("dp4-tp2", releases=(("vllm", (0, 8, 3)),))
    old = _served("dp4-tp2", releases=(("vllm", (0, 8, 2)),))
    words = _flag_words(vllm_command(new))
    assert words[words.index("--data-parallel-size") + 1] == "4"
    assert not vllm_separate_replicas(new)
    assert "--data-parallel-size" not in _flag_words(vllm_command(old))
    assert vllm_separate_replicas(old)
    v0 = _served("dp4-tp2", vllm_v0=True)
    assert "--data-parallel-size" not in _flag_words(vllm_command(v0))


def test_an_old_vllm_releases_dp_line_is_one_replica_of_several() -> None:
    from capcliff.analysis.flags import flag_warnings

    old = _served("dp4-tp2", releases=(("vllm", (0, 7, 3)),))
    [said] = [w for w in flag_warnings(old, sweet_spot=36, one_request_fits=True,
                                       graphs_fit=True) if w.startswith("vllm:")]  # fmt: skip
    assert "run 4 of them behind a load balancer" in said
    assert "vLLM 0.7.3 takes no --data-parallel-size" in said
    latest = _served("dp4-tp2")
    assert not any(w.startswith("vllm:") for w in flag_warnings(
        latest, sweet_spot=36, one_request_fits=True, graphs_fit=True))  # fmt: skip


def test_an_attention_dp_layout_before_0_8_3_is_said_to_need_a_later_vllm() -> None:
    from capcliff.analysis.flags import flag_warnings

    dep = _served("dpa8-ep8", moe=True, releases=(("vllm", (0, 8, 0)),))
    said = [w for w in flag_warnings(dep, sweet_spot=8, one_request_fits=True, graphs_fit=True)]
    assert any("vLLM 0.8.0 serves no attention-DP layout" in w for w in said)


def test_plan_reads_the_vllm_release_of_the_line_from_engine_version(
    capsys: pytest.CaptureFixture[str],
) -> None:
    plan = _plan_json(
        capsys, "llama-3.1-8b", "--gpus", "2", "--layout", "dp2", "--isl", "512", "--osl",
        "256", "--arrival", "batch", "--num-requests", "40", "--engine-version", "0.7.3",
    )  # fmt: skip
    assert "--data-parallel-size" not in plan["engine_flags"]["vllm"]
    assert any("run 2 of them behind a load balancer" in w for w in plan["flag_warnings"])


# --- 5. counts and empty lists said in words ---------------------------------------------------


def test_sglangs_hicache_note_counts_one_rank_in_the_singular() -> None:
    # 64 GiB = 68.72 GB on one rank, said as 69 GB: 69 x 10^9 / 2^30 = 64.26 GiB
    from capcliff.analysis.flags import unexpressed
    from capcliff.units import GIB

    [said] = unexpressed(_served("tp1", offload_cpu_bytes=64 * GIB), "sglang")
    assert "69 GB x 1 rank = 64.26 GiB per replica" in said


def test_the_offload_advice_says_when_no_flag_is_needed() -> None:
    # SGLang's radix cache is on unless --disable-radix-cache: with no offload there is no flag
    from capcliff.analysis.plan.reuse_advice import reuse_flags
    from capcliff.cli.render_reuse import reuse_lines
    from capcliff.memory.budget import EngineName

    assert reuse_flags(EngineName.SGLANG, 0, 2) == []
    advice = SimpleNamespace(points=[], recommended_offload_bytes=0, flags=[])
    [_, line] = reuse_lines(SimpleNamespace(reuse=advice, mode="online"))  # type: ignore[arg-type]
    assert line.endswith("recommended host offload: none (it would not pay); flags: none (the "
                         "engine's defaults)")  # fmt: skip


# --- 6. offload tiers no simulated prefix cache looks up ---------------------------------------


def test_offload_where_no_prefix_cache_is_simulated_is_said_to_change_nothing() -> None:
    from capcliff.analysis.deployment_settings import settings_of
    from capcliff.analysis.setting_refusals import unused_tiers

    trt = settings_of({"engine": "trtllm", "offload": "cpu:64GiB"})
    [said] = unused_tiers(trt, policy="trtllm-no-evict")
    assert "no prefix cache is simulated under policy trtllm-no-evict" in said
    assert "they change no figure" in said
    vllm = settings_of({"engine": "vllm", "offload": "cpu:64GiB"})
    assert unused_tiers(vllm, policy="vllm") == []
    assert unused_tiers(settings_of({"engine": "trtllm"}), policy="trtllm-no-evict") == []


# --- 7. TensorRT-LLM's attention-DP line -------------------------------------------------------


def test_a_trtllm_attention_dp_plan_prints_its_server_and_reads_back(
    capsys: pytest.CaptureFixture[str], tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Before: DeepSeek-R1 dp8-ep8 under TensorRT-LLM printed vLLM's and SGLang's lines and none
    # for the engine planned. TensorRT-LLM's R1 recipe: one server of --tp_size 8 --ep_size 8,
    # `enable_attention_dp: true` in its --extra_llm_api_options file, --max_batch_size a rank.
    plan = _plan_json(
        capsys, "deepseek-r1", "--engine", "trtllm", "--gpus", "8", "--layout", "dp8-ep8",
        "--workload", "reasoning",
    )  # fmt: skip
    line = plan["engine_flags"]["trtllm"]
    words = _flag_words(line)
    cap = plan["recommended"]["max_num_seqs"]
    assert words[words.index("--tp_size") + 1] == "8"
    assert words[words.index("--ep_size") + 1] == "8"
    assert words[words.index("--max_batch_size") + 1] == str(cap)
    assert words[words.index("--extra_llm_api_options") + 1] == "extra-llm-api-config.yml"
    assert any("`enable_attention_dp: true`" in w for w in plan["flag_warnings"])
    # the line read back with that file beside it is the same group and cap
    monkeypatch.chdir(tmp_path)
    (tmp_path / "extra-llm-api-config.yml").write_text("enable_attention_dp: true\n")
    assert main(["memory", "--serve-command", line, "--format", "json"]) == 0
    memory = json.loads(capsys.readouterr().out)
    assert [row["name"] for row in memory["layouts"]] == ["dp8-ep8"]
