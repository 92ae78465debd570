"""Findings of the random-combination campaign's seeds 67-74 (benchmarks/fuzz_random.py, issue 23),
each value worked by hand or read from the engines' source.

- vLLM V1's and TensorRT-LLM's `--enable-chunked-prefill` was refused ("modelled for vllm-v0,
  not vllm") though both are simulated chunking prefills, and the same flag inside a pasted
  `vllm serve` line was taken; trtllm-serve's line left chunked prefill at TensorRT-LLM's default,
  off (`enable_chunked_prefill: bool = Field(default=False)`, tensorrt_llm/llmapi/llm_args.py).
- A token budget below the running cap was refused for every engine with vLLM's rule, SGLang's
  own defaults on a GPU under 35 GiB included (`--chunked-prefill-size` 2,048 beside at least
  2,048 running requests): SGLang's prefill steps run alone, so its chunk does not bound the
  decode batch.
- SGLang lines were printed, and `--engine sglang` planned, for NVFP4 weights on Hopper and AMD
  GPUs, which SGLang's loader refuses: ModelOptFp4Config.get_min_capability() is 100
  (python/sglang/srt/layers/quantization/modelopt_quant.py), checked in `_get_quantization_config`
  (python/sglang/srt/model_loader/loader.py) against the GPU's 90 (H100, H200) or 94 / 95 (MI300X
  and MI325X's gfx942, MI355X's gfx950).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from capcliff.cli import main
from capcliff.errors import InputError
from capcliff.sim.config import SimConfig

PLAN = ["--num-requests", "40", "--jobs", "1", "--isl", "1000", "--osl", "500"]


def _words(line: str) -> list[str]:
    return line.replace("\\\n", " ").split()


def _flag(line: str, name: str) -> str | None:
    words = _words(line)
    return words[words.index(name) + 1] if name in words else None


def _plan(capsys: pytest.CaptureFixture[str], *argv: str) -> dict[str, object]:
    assert main(["plan", *argv, *PLAN, "--format", "json"]) == 0
    return json.loads(capsys.readouterr().out)


def _flags(report: dict[str, object]) -> dict[str, str]:
    """A plan's engine lines by engine."""
    flags = report["engine_flags"]
    assert isinstance(flags, dict)
    return flags


def _refusal(capsys: pytest.CaptureFixture[str], argv: list[str]) -> str:
    """The one line a refused command prints (exit 2, nothing on stdout)."""
    assert main(argv) == 2
    out, err = capsys.readouterr()
    assert out == ""
    lines = err.strip().splitlines()
    assert len(lines) == 1
    return lines[0]


# --- chunked prefill ------------------------------------------------------------------------


@pytest.mark.parametrize("engine", ["vllm", "trtllm"])
def test_enable_chunked_prefill_is_taken_where_the_engine_is_simulated_chunking(
    capsys: pytest.CaptureFixture[str], engine: str
) -> None:
    # the same pool as without the flag: it names the mode simulated, it changes nothing
    base = ["memory", "llama-3.1-8b", "--gpu", "h100-sxm", "--gpus", "1", "--engine", engine,
            "--format", "json"]  # fmt: skip
    assert main(base) == 0
    without = json.loads(capsys.readouterr().out)
    assert main([*base, "--enable-chunked-prefill"]) == 0
    with_it = json.loads(capsys.readouterr().out)
    assert with_it["layouts"] == without["layouts"]


def test_chunked_prefill_off_is_refused_outside_vllm_v0(
    capsys: pytest.CaptureFixture[str],
) -> None:
    argv = ["memory", "llama-3.1-8b", "--gpu", "h100-sxm", "--gpus", "1", "--engine", "vllm",
            "--no-enable-chunked-prefill"]  # fmt: skip
    line = _refusal(capsys, argv)
    assert line.startswith("error: enable_chunked_prefill: off is modelled for vllm-v0 only")
    sglang = ["memory", "llama-3.1-8b", "--gpu", "h100-sxm", "--gpus", "1", "--engine",
              "sglang", "--enable-chunked-prefill"]  # fmt: skip
    assert "SGLang chunks prefills by --chunked-prefill-size" in _refusal(capsys, sglang)


def test_the_trtllm_line_turns_on_the_chunked_prefill_simulated(
    capsys: pytest.CaptureFixture[str],
) -> None:
    argv = ("llama-3.1-8b", "--gpu", "h200-sxm", "--gpus", "1", "--engine", "trtllm")
    trtllm = _flags(_plan(capsys, *argv))
    assert "--enable_chunked_prefill" in _words(trtllm["trtllm"])


# --- a token budget below the running cap ---------------------------------------------------


def test_sglang_plans_its_own_default_chunk_on_a_smaller_gpu(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # server_args.py: a GPU of 20 to 35 GiB gets --chunked-prefill-size 2048; the model runner
    # allows at least 2,048 running requests (4,096 here): refused before, as vLLM refuses it
    report = _plan(capsys, "llama-3.1-8b", "--gpu", "h100-sxm", "--gpus", "1", "--engine",
                   "sglang", "--gpu-total-memory", "30GiB")  # fmt: skip
    flags = _flags(report)
    assert _flag(flags["sglang"], "--chunked-prefill-size") == "2048"


def test_an_sglang_chunk_below_the_cap_is_served_as_given(
    capsys: pytest.CaptureFixture[str],
) -> None:
    report = _plan(capsys, "qwen3-8b", "--gpu", "h200-sxm", "--gpus", "1", "--engine", "sglang",
                   "--max-num-batched-tokens", "256")  # fmt: skip
    rec = report["recommended"]
    assert isinstance(rec, dict)
    flags = _flags(report)
    # the chunk simulated, not raised to the cap as vLLM's budget is
    assert _flag(flags["sglang"], "--chunked-prefill-size") == "256"
    assert rec["max_num_seqs"] > 256
    # vLLM's line, which vLLM would refuse below its cap, takes the budget up to it
    vllm = flags["vllm"]
    assert _flag(vllm, "--max-num-batched-tokens") == _flag(vllm, "--max-num-seqs")
    assert _flag(flags["sglang"], "--max-running-requests") == str(rec["max_num_seqs"])


def test_vllm_refuses_a_budget_below_its_default_cap_with_the_fix(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # vLLM's default max_num_seqs on a GPU of 70 GiB or more is 1,024 (arg_utils.py); its
    # SchedulerConfig raises "max_num_batched_tokens (512) must be greater than or equal to
    # max_num_seqs (1024)"
    argv = ["plan", "qwen3-8b", "--gpu", "h200-sxm", "--gpus", "1", "--engine", "vllm",
            "--max-num-batched-tokens", "512", *PLAN]  # fmt: skip
    assert _refusal(capsys, argv) == (
        "error: max_num_batched_tokens: 512 is below max_num_seqs 1024 (vllm's default cap), "
        "which vLLM refuses (every running request takes a token of each step's budget); give "
        "--max-num-batched-tokens 1024 or more, or --max-num-seqs 512 or less"
    )


def test_trtllm_below_its_default_batch_is_refused_naming_its_scheduler(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # TensorRT-LLM's default max_batch_size is 2,048 (BaseLlmArgs)
    argv = ["plan", "qwen3-8b", "--gpu", "h200-sxm", "--gpus", "1", "--engine", "trtllm",
            "--max-num-batched-tokens", "1024", *PLAN]  # fmt: skip
    line = _refusal(capsys, argv)
    assert line.startswith(
        "error: max_num_batched_tokens: 1024 is below max_num_seqs 2048 (trtllm's default cap): "
        "TensorRT-LLM then schedules at most 1024 tokens a step"
    )
    assert line.endswith(
        "give --max-num-batched-tokens 2048 or more, or --max-num-seqs 1024 or less"
    )


def test_the_simulator_budgets_decodes_only_where_they_share_the_step() -> None:
    from capcliff.analysis.evaluate.solver import config_at

    with pytest.raises(InputError, match=r"max_num_batched_tokens \(512\) must be >="):
        SimConfig(max_num_seqs=1024, max_num_batched_tokens=512)
    alone = SimConfig(policy="sglang", max_num_seqs=1024, max_num_batched_tokens=512,
                      mixed_prefill=False)  # fmt: skip
    # a sweep point of 2,048 keeps SGLang's 512-token chunk, and raises vLLM's budget to it
    assert config_at(alone, 2048, 1).max_num_batched_tokens == 512
    mixed = SimConfig(max_num_seqs=256, max_num_batched_tokens=512)
    assert config_at(mixed, 2048, 1).max_num_batched_tokens == 2048


# --- SGLang and NVFP4 weights below compute capability 10.0 --------------------------------


@pytest.mark.parametrize(
    ("gpu", "capability"),
    [("h100-sxm", 9.0), ("h200-sxm", 9.0), ("b200", 10.0), ("gb200", 10.0), ("b300", 10.3),
     ("mi300x", 9.4), ("mi325x", 9.4), ("mi355x", 9.5)],
)  # fmt: skip
def test_each_gpu_carries_the_capability_the_engines_gate_on(gpu: str, capability: float) -> None:
    from capcliff.catalog.catalogs import get_hardware

    assert get_hardware(gpu).compute_capability == capability


@pytest.mark.parametrize("gpu", ["h200-sxm", "mi300x"])
def test_sglang_is_refused_nvfp4_weights_below_blackwell(
    capsys: pytest.CaptureFixture[str], gpu: str
) -> None:
    argv = ["memory", "deepseek-r1-0528-fp4", "--gpu", gpu, "--engine", "sglang"]
    line = _refusal(capsys, argv)
    assert line.startswith(
        "error: engine: SGLang loads nvfp4 weights only on GPUs of compute capability 10.0 or more"
    )
    assert f"{gpu} is 9." in line


def test_sglang_sizes_nvfp4_weights_on_blackwell(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["memory", "deepseek-r1-0528-fp4", "--gpu", "b200", "--gpus", "4", "--layout", "tp4",
            "--engine", "sglang", "--format", "json"]  # fmt: skip
    assert main(argv) == 0
    assert json.loads(capsys.readouterr().out)["weight_dtype"].startswith("nvfp4")


def test_a_vllm_plan_of_nvfp4_weights_on_hopper_prints_no_sglang_line(
    capsys: pytest.CaptureFixture[str],
) -> None:
    report = _plan(capsys, "llama-3.3-70b-fp4", "--gpu", "h200-sxm", "--gpus", "2", "--layout",
                   "tp2")  # fmt: skip
    flags = _flags(report)
    assert set(flags) == {"vllm"}
    warnings = report["flag_warnings"]
    assert isinstance(warnings, list)
    assert any(w.startswith("sglang: no line: SGLang loads nvfp4 weights") for w in warnings)
    # on B200 the same plan prints both
    argv = ("llama-3.3-70b-fp4", "--gpu", "b200", "--gpus", "2", "--layout", "tp2")
    assert set(_flags(_plan(capsys, *argv))) == {"vllm", "sglang"}


# --- lines past one node --------------------------------------------------------------------
# Seed 71 (`plan deepseek-r1 --nodes 2 ...`, dp16-ep16) printed `vllm serve ...
# --data-parallel-size 16` and `sglang.launch_server --tp 16 --dp 16` with no node flags, as one
# server of 16 GPUs on nodes of 8 (`gpus_per_node = 8`, hardware/h200-sxm.toml).


def test_independent_replicas_past_a_node_are_one_nodes_line(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # dp16 of Llama-3.1-8B on 2 x 8 H200: 16 replicas of 1 GPU, 16 / 8 = 2 nodes of 8 replicas
    argv = ("llama-3.1-8b", "--gpu", "h200-sxm", "--gpus", "16", "--layout", "dp16")
    report = _plan(capsys, *argv)
    flags = _flags(report)
    assert _flag(flags["vllm"], "--data-parallel-size") == "8"
    assert _flag(flags["sglang"], "--dp") == "8"
    assert "--nnodes" not in _words(flags["sglang"])
    warnings = report["flag_warnings"]
    assert isinstance(warnings, list)
    assert (
        "sglang: the line is one node's 8 replicas: run it on each of the 2 nodes, behind a "
        "load balancer"
    ) in warnings


def test_a_lockstep_group_or_a_replica_past_a_node_gets_the_engines_node_flags() -> None:
    from capcliff.analysis.node_span import node_span, sglang_node_flags, vllm_node_flags

    # attention DP over 16 GPUs of 8 a node: one group on 2 nodes, 8 DP ranks on each
    group = node_span(dp=16, tp=1, pp=1, attention_dp=True, gpus_per_node=8)
    assert group is not None
    assert (group.nodes, group.local_dp) == (2, None)
    assert vllm_node_flags(group, 1, 1) == [
        "--data-parallel-size-local", "8", "--data-parallel-address", "HEAD_NODE_IP",
        "--data-parallel-rpc-port", "13345",
    ]  # fmt: skip
    assert sglang_node_flags(group) == [
        "--nnodes", "2", "--node-rank", "0", "--dist-init-addr", "HEAD_NODE_IP:20000",
    ]  # fmt: skip
    # tp8-pp2: one replica of 16 GPUs; vLLM runs it over Ray
    wide = node_span(dp=1, tp=8, pp=2, attention_dp=False, gpus_per_node=8)
    assert wide is not None
    assert vllm_node_flags(wide, 8, 2) == ["--distributed-executor-backend", "ray"]
    # dp2-tp4 on 8 GPUs a node fits: nothing to add
    assert node_span(dp=2, tp=4, pp=1, attention_dp=False, gpus_per_node=8) is None


def test_three_replicas_of_four_gpus_say_what_the_second_node_runs() -> None:
    from capcliff.analysis.node_span import node_span, node_warning

    # 12 GPUs: two 4-GPU replicas fill a node of 8, the third runs alone on a second node
    span = node_span(dp=3, tp=4, pp=1, attention_dp=False, gpus_per_node=8)
    assert span is not None
    assert (span.nodes, span.local_dp) == (2, 2)
    assert node_warning("vllm", span, 4, 1) == (
        "vllm: the line is one node's 2 replicas: run it on 1 node and, with "
        "--data-parallel-size 1, on one more, behind a load balancer"
    )


def test_the_node_flags_read_back_as_the_same_deployment(
    capsys: pytest.CaptureFixture[str],
) -> None:
    line = (
        "python -m sglang.launch_server --model-path deepseek-ai/DeepSeek-R1 --tp 16 --dp 16 "
        "--nnodes 2 --node-rank 0 --dist-init-addr HEAD_NODE_IP:20000 --enable-dp-attention "
        "--ep-size 16"
    )
    assert main(["memory", "--gpus", "16", "--serve-command", line, "--format", "json"]) == 0
    out, err = capsys.readouterr()
    assert "does not model" not in err  # launch flags, inert as --host and --port are
    assert json.loads(out)["layouts"][0]["name"] == "dp16-ep16"


# --- wording -------------------------------------------------------------------------------


def test_an_nvme_tier_alone_says_the_lines_set_no_offload_tier() -> None:
    # seed 67 `plan gpt-oss-120b --offload nvme:1TiB`: "the line above sets the CPU tier only",
    # with no CPU tier and no offload flag on either line
    from capcliff.analysis.flags import Deployment, unexpressed
    from capcliff.catalog.layout import Layout
    from capcliff.units import GIB

    def dep(cpu_gib: int) -> Deployment:
        return Deployment(
            model="org/m", layout=Layout(), max_num_seqs=64, max_num_batched_tokens=8192,
            max_model_len=8192, gpu_memory_utilization=0.9, mem_fraction_static=0.85,
            kv_cache_dtype="auto", moe=False, mla=False, offload_cpu_bytes=cpu_gib * GIB,
            offload_nvme_bytes=1024 * GIB,
        )  # fmt: skip

    assert unexpressed(dep(0), "vllm")[0].endswith("the line above sets no offload tier")
    assert unexpressed(dep(64), "vllm")[0].endswith("the line above sets the CPU tier only")


def test_a_fleet_line_cheaper_at_the_same_gpus_says_by_how_much(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # seed 67 `plan deepseek-r1 --clients 1 --think-time 0`: "1 x dp4-tp2-ep8 (8 GPUs) carries
    # the load for less than 1 x dpa8 (8 GPUs)": the same $32 an hour, so "less" is per million
    # output tokens (one user waits on each answer: the quicker layout serves more tokens)
    argv = ["plan", "deepseek-r1", "--clients", "1", "--think-time", "0", "--num-requests",
            "40", "--jobs", "1", "--format", "json"]  # fmt: skip
    assert main(argv) == 0
    report = json.loads(capsys.readouterr().out)
    fleet = report["fleet"][0]
    notes = [n for n in report["notes"] if "carries the load for less" in n]
    assert len(notes) == 1
    cheaper = f"(${fleet['usd_per_million_output_tokens']:,.2f} against $"
    assert cheaper in notes[0]
    dearer = float(notes[0].split(" against $")[1].split(" per million")[0].replace(",", ""))
    assert dearer > fleet["usd_per_million_output_tokens"]


# Seed 73 `plan {d}/hf/qwen3-30b-a3b --disagg`: a config.json naming no HF repo printed
# `vllm serve qwen3-30b-a3b` and `--model-path qwen3-30b-a3b` (the folder's name, which no hub
# holds), where the aggregated plan prints HF_REPO_ID and says why; --serve-local-path was ignored.
def test_disagg_lines_of_a_config_without_a_repo_name_the_placeholder(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    import tomllib

    card = tomllib.loads(Path("model_cards/llama-3.1-8b.toml").read_text())
    assert "_name_or_path" not in card["config"]
    folder = tmp_path / "llama-3.1-8b"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps(card["config"]))
    argv = ["plan", str(folder), "--gpus", "2", "--disagg", "--num-requests", "1", "--jobs", "1",
            "--format", "json"]  # fmt: skip
    assert main(argv) == 0
    settings = json.loads(capsys.readouterr().out)["engine_settings"]
    assert _flag(settings["vllm prefill"], "serve") == "HF_REPO_ID"
    assert _flag(settings["sglang decode"], "--model-path") == "HF_REPO_ID"
    assert settings["model"].startswith("HF_REPO_ID in the lines: the config names no HF repo")
    line = _refusal(capsys, [*argv, "--serve-local-path"])
    assert line.startswith("error: serve_local_path: not with --disagg")


# vLLM V0 turns chunked prefill on by itself above 32K context (arg_utils.py, 0.6-0.7): a plan
# simulated with it off at 65,536 tokens printed a line without the flag, which V0 would run
# chunked. V0's --enable-chunked-prefill takes a value (StoreBoolean, nargs="?").
def test_a_v0_line_carries_the_chunked_prefill_simulated(
    capsys: pytest.CaptureFixture[str],
) -> None:
    report = _plan(capsys, "llama-3.1-8b", "--gpu", "h100-sxm", "--gpus", "1", "--engine",
                   "vllm-v0", "--no-enable-chunked-prefill", "--max-model-len", "65536",
                   "--arrival", "batch")  # fmt: skip
    flags = _flags(report)
    # V0 releases before 0.8.5 spell off `--enable-chunked-prefill=False` (StoreBoolean)
    assert "--enable-chunked-prefill=False" in flags["vllm"].split()
    # V0's 2,048-token budget is raised to max_model_len without chunked prefill
    assert _flag(flags["vllm"], "--max-num-batched-tokens") == "65536"


# Seed 74 `memory {d}/hf/llama-3.1-8b/config.json --max-num-batched-tokens 16` answered (a budget
# sized with a 16-token profile pass) where plan and sweep refuse it, as vLLM refuses to start
def test_memory_refuses_the_budget_vllm_refuses(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["memory", "llama-3.1-8b", "--gpu", "h100-sxm", "--gpus", "1",
            "--max-num-batched-tokens", "16"]  # fmt: skip
    line = _refusal(capsys, argv)
    assert line.startswith("error: max_num_batched_tokens: 16 is below max_num_seqs 1024")
    assert main([*argv, "--max-num-seqs", "16"]) == 0  # vLLM accepts tokens == seqs
    capsys.readouterr()
