"""A second expert user's trial (2026-12-07, h-user2): figures that contradicted each other."""

from __future__ import annotations

import json

import pytest

from capcliff.analysis.deployment import Deployment, resolve
from capcliff.analysis.deployment_settings import settings_of
from capcliff.catalog.catalogs import get_hardware, get_model
from capcliff.catalog.layout import Layout
from capcliff.cli.main import main


def _dep(model: str, gpu: str = "h200-sxm", engine: str = "vllm") -> Deployment:
    return resolve(get_model(model), get_hardware(gpu), settings_of({"engine": engine}))


# --- 1. another GPU type's fleet line is searched over the planned type's unit shapes ----------


def test_a_dense_models_fleet_units_are_one_replica_of_each_tp_size() -> None:
    from capcliff.analysis.plan.online import fleet_units

    # Llama-3.1-8B has no experts: the units are TP 1, 2, 4 and 8 (no PP: it adds latency)
    units = fleet_units(_dep("llama-3.1-8b"), 8)
    assert units == [Layout(tp=1), Layout(tp=2), Layout(tp=4), Layout(tp=8)]


def test_a_moe_models_fleet_units_include_the_attention_dp_group_and_ep_in_tp() -> None:
    from capcliff.analysis.plan.online import fleet_units

    # DeepSeek-R1 on 8 GPUs: dp8-ep8 (eight attention ranks in lockstep, one unit of 8 GPUs) and
    # tp8-ep8 (EP inside one TP8 replica) are layouts `plan` itself evaluates on the planned type
    units = fleet_units(_dep("deepseek-r1", engine="sglang"), 8)
    assert Layout(dp=8, ep=8) in units
    assert Layout(tp=8, ep=8) in units
    assert all(unit.pp == 1 for unit in units)


def test_fleet_units_stop_at_the_gpus_of_a_node() -> None:
    from capcliff.analysis.plan.online import fleet_units

    # GB200 nodes hold 4 GPUs: no 8-GPU unit; the 4-rank attention-DP group dp4-ep4 is one
    units = fleet_units(_dep("deepseek-r1", gpu="gb200", engine="sglang"), 4)
    assert max(unit.gpus for unit in units) == 4
    assert Layout(dp=4, ep=4) in units


def test_a_named_layouts_unit_joins_the_fleet_units() -> None:
    from capcliff.analysis.plan.online import fleet_units

    # a PP layout is never tried unasked, but one named is (its unit: one tp2-pp2 replica)
    units = fleet_units(_dep("llama-3.1-70b"), 8, (Layout(dp=2, tp=2, pp=2),))
    assert Layout(tp=2, pp=2) in units


def test_another_gpu_types_fleet_line_of_deepseek_is_its_attention_dp_group(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # Before: `--gpu h200-sxm,b200` sized B200's line on TP replicas only (tp8, $3.59 per million
    # output tokens) beside H200's dp8-ep8 ($2.01), while `--gpu b200` alone recommends dp8-ep8
    # at 4.36x tp8's rate. B200's line is now the layout its own plan recommends.
    args = ["plan", "deepseek-r1", "--engine", "sglang", "--gpus", "8", "--layout",
            "tp8,dp8-ep8", "--workload", "reasoning", "--gpu", "h200-sxm,b200", "--jobs", "1",
            "--format", "json"]  # fmt: skip
    assert main(args) == 0
    fleet = {line["gpu"]: line for line in json.loads(capsys.readouterr().out)["fleet"]}
    assert fleet["b200"]["layout"] == "dp8-ep8"
    assert fleet["h200-sxm"]["layout"] == "dp8-ep8"


# --- 2. the past-the-cliff advice agrees with the sweet spot ------------------------------------


def _sweep(capsys: pytest.CaptureFixture[str], *extra: str) -> str:
    # DeepSeek-R1-Distill-Qwen-32B on 8 x H200, dp4-tp2: 1,000 + 16,000 tokens peak at 16,999
    # tokens = 1,063 blocks of 16; 45,178 blocks per replica hold 42 such requests, 168 over the
    # 4 replicas (the analytic cliff)
    args = ["sweep", "deepseek-r1-distill-qwen-32b", "--gpus", "8", "--layout", "dp4-tp2",
            "--isl", "1000", "--osl", "16000", "--num-requests", "400", *extra]  # fmt: skip
    assert main(args) == 0
    return capsys.readouterr().out


def test_the_analytic_cliff_of_several_replicas_says_each_ones_share(
    capsys: pytest.CaptureFixture[str],
) -> None:
    out = _sweep(capsys, "--concurrency", "128")
    assert "analytic p99 cliff: 168 concurrent requests over 4 replicas, 42 each" in out


def test_past_the_cliff_at_the_sweet_spot_the_advice_does_not_lower_the_cap(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # 400 requests at once (cap 400 over 4 replicas, 100 each > 42) preempt, yet finish sooner
    # than at 128 (32 each, no preemption): the sweet spot is the point past the cliff, so
    # "lower the cap" would lose throughput
    out = _sweep(capsys, "--concurrency", "128,400", "--format", "json")
    series = json.loads(out)["series"][0]
    assert series["sweet_spot"]["concurrency"] == 400
    past = series["points"][-1]["past_cliff"]
    assert past["dominant"] == "preemption"
    assert "lower the cap" not in past["advice"]
    assert "no lower cap of this sweep does better" in past["advice"]


def test_past_the_sweet_spot_the_advice_still_lowers_the_cap() -> None:
    from capcliff.analysis.sweep.failure import ADVICE, PastCliff, within_sweet_spot

    past = PastCliff(
        preemptions_per_request=1.0, peak_waiting=0, mean_waiting=0, mean_wait_s=0,
        kv_blocked_s=0, hit_rate=None, hit_rate_before_cliff=None, hit_rate_after_cliff=None,
        recompute_share=0.3, cache_loss_share=0.0, dominant="preemption",
        advice=ADVICE["preemption"],
    )  # fmt: skip
    assert "lower the cap" in past.advice  # a point past the sweet spot keeps it
    assert "lower the cap" not in within_sweet_spot(past).advice
    queueing = past.model_copy(update={"dominant": "queueing", "advice": ADVICE["queueing"]})
    assert within_sweet_spot(queueing).advice == ADVICE["queueing"]


# --- 3. calibrate: a negative figure the log states is not blamed on the modeled weights --------


def test_a_negative_graph_figure_in_a_vllm_log_is_said_to_be_the_logs(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # the V37 log (vLLM 0.15.0, Llama-3.3-70B FP4, one B200) says "Graph capturing finished in 1
    # secs, took -8.31 GiB" and "Model loading took 39.89 GiB", above the modeled 39.81 GiB: the
    # modeled weights are smaller, so they cannot explain the negative figure
    notes = _calibration_notes(capsys, "vllm_v1_v37_llama33_70b_fp4_b200_tp1.txt", "b200")
    assert notes == [
        "note: cudagraph: the log states -8.31 GiB: free memory rose during that stage (memory "
        "released there, not the term's), so the term is taken as 0"
    ]


def _calibration_notes(capsys: pytest.CaptureFixture[str], log: str, gpu: str) -> list[str]:
    assert main(["calibrate", f"tests/fixtures/logs/{log}", "--gpu", gpu]) == 0
    return [line for line in capsys.readouterr().out.splitlines() if line.startswith("note:")]


def test_a_negative_trtllm_runtime_buffer_is_blamed_on_the_modeled_weights() -> None:
    from types import SimpleNamespace

    from capcliff.calibrate.compare import _negative_note
    from capcliff.calibrate.startup_logs import LogFormat

    # TensorRT-LLM's buffers are total - free - modeled weights - context: below 0 only where
    # the modeled weights exceed what the engine loaded
    log = SimpleNamespace(format=LogFormat.TRTLLM)
    note = _negative_note("activation_peak", -1.5, log)  # type: ignore[arg-type]
    assert "modeled weights are larger" in note


# --- 4. the reuse advice measures the offload size given ----------------------------------------


def test_the_offload_sizes_tried_include_the_one_given() -> None:
    from capcliff.analysis.plan.reuse_advice import offload_sizes
    from capcliff.units import GIB

    # one H200's share of its node's host DRAM is 2 TB / 8 = 250 GB: 64 GiB (68.7 GB) and
    # 128 GiB (137.4 GB) fit, 256 GiB (274.9 GB) does not; the 100 GiB given is tried between
    settings = settings_of({"offload": "cpu:100GiB"})
    dep = resolve(get_model("llama-3.1-8b"), get_hardware("h200-sxm"), settings)
    sizes = offload_sizes(dep, dep.memory(Layout(tp=1), 32_768))
    assert sizes == [64 * GIB, 100 * GIB, 128 * GIB]


# --- 5. counts of one read in the singular ------------------------------------------------------


def test_a_one_gpu_pool_reads_one_gpu_and_one_replica() -> None:
    from types import SimpleNamespace

    from capcliff.cli.render_disagg import _pool_line

    # `plan --disagg` printed "prefill: 1 x tp1 on h200-sxm (1 GPUs, 1 replicas, ..."
    pool = SimpleNamespace(
        instances=1, layout="tp1", hardware="h200-sxm", gpus=1, replicas=1,
        kv_blocks_per_replica=14_777, block_size=16, utilization=0.08, peak_kv_utilization=0.03,
        mean_kv_utilization=0.0, preemptions=0,
    )  # fmt: skip
    line = _pool_line("prefill", pool)  # type: ignore[arg-type]
    assert line.startswith("prefill: 1 x tp1 on h200-sxm (1 GPU, 1 replica, 14,777 KV blocks")


# --- 6. plan --disagg at a rate compares the splits with the layout and cap plan recommends -----


def test_the_disagg_plans_aggregated_side_at_a_rate_is_the_online_plans_recommendation(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # Before: the aggregated side was the batch plan's sweet spot on the same arrivals (dp2 at
    # 140 running requests, 70 a replica), while `plan` without --disagg recommends dp2 at
    # max_num_seqs 236 a replica; the two commands now agree: 236 x 2 replicas = 472
    args = ["plan", "deepseek-r1-distill-llama-8b", "--gpus", "2", "--isl", "2048", "--osl",
            "1024", "--rate", "8", "--slo-ttft", "2", "--slo-tpot", "0.05", "--jobs", "1",
            "--format", "json"]  # fmt: skip
    assert main(args) == 0
    rec = json.loads(capsys.readouterr().out)["recommended"]
    assert main([*args, "--disagg"]) == 0
    agg = json.loads(capsys.readouterr().out)["aggregated"]
    assert (agg["layout"], agg["concurrency"]) == (rec["layout"], rec["max_num_seqs"] * rec["dp"])


# --- 7. SGLang pools a sliding-window model's KV by its own rule -------------------------------


def _memory_kv(capsys: pytest.CaptureFixture[str], model: str, *extra: str) -> dict[str, int]:
    assert main(["memory", model, "--layout", "tp1", "--gpus", "1", "--format", "json",
                 *extra]) == 0  # fmt: skip
    layout = json.loads(capsys.readouterr().out)["layouts"][0]
    return {k: layout[k] for k in ("kv_bytes_per_token_per_gpu", "kv_capacity_tokens_per_replica")}


def test_sglang_pools_gpt_oss_sliding_layers_at_four_fifths_of_the_full_pool(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # gpt-oss-120b: 18 full and 18 sliding layers of 2 x 8 KV heads x 64 x 2 B = 2,048 B a token.
    # SGLang's hybrid-SWA pool (GptOssForCausalLM): full x 18 + 0.8 full x 18 = the tokens all 36
    # layers would hold, so a full-pool token costs 2,048 x (18 + 0.8 x 18) = 66,355.2 -> 66,356 B
    # (before: vLLM's window rule, 2,048 x 18 x (1 + (128 + 8,192) / 32,768) = 46,224 B)
    kv = _memory_kv(capsys, "gpt-oss-120b", "--engine", "sglang", "--max-model-len", "32768")
    assert kv["kv_bytes_per_token_per_gpu"] == 66_356


def test_sglang_pools_gemma_3_sliding_layers_in_full(capsys: pytest.CaptureFixture[str]) -> None:
    # Gemma3ForConditionalGeneration is not a hybrid-SWA class in SGLang: one pool for every layer,
    # 62 x 2 x 16 KV heads x 128 x 2 B = 507,904 B a token
    kv = _memory_kv(capsys, "gemma-3-27b", "--engine", "sglang")
    assert kv["kv_bytes_per_token_per_gpu"] == 507_904


def test_vllm_still_counts_a_sliding_layer_up_to_its_window_and_chunk(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # vLLM at 131,072 tokens: 18 x 2,048 + 18 x 2,048 x (128 + 8,192) / 131,072 = 39,204 B
    assert _memory_kv(capsys, "gpt-oss-120b")["kv_bytes_per_token_per_gpu"] == 39_204
