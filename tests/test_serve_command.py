"""`--serve-command`: an engine launch line read into the deployment, and the printed lines read
back into the same deployment (the round trip)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from capcliff.analysis.serve_command import (
    ServeCommand,
    merged_settings,
    merged_target,
    parse_serve_command,
)
from capcliff.catalog.layout import Layout
from capcliff.cli import main
from capcliff.errors import InputError

VLLM_70B = (
    "vllm serve meta-llama/Llama-3.1-70B --tensor-parallel-size 4 --pipeline-parallel-size 2 "
    "--max-num-seqs 256 --max-num-batched-tokens 4096 --max-model-len 32k "
    "--gpu-memory-utilization 0.92 --kv-cache-dtype fp8 --enable-prefix-caching "
    "--block-size 32 --port 8000 --host 0.0.0.0"
)


def test_a_vllm_line_gives_model_layout_and_settings() -> None:
    command = parse_serve_command(VLLM_70B)
    assert command.engine == "vllm" and command.model == "meta-llama/Llama-3.1-70B"
    assert command.layout == Layout(tp=4, pp=2)
    assert command.settings == {
        "engine": "vllm", "max_num_seqs": 256, "max_num_batched_tokens": 4096,
        "max_model_len": 32_000,  # vLLM's lower-case k is 1,000
        "gpu_memory_utilization": 0.92, "kv_cache_dtype": "fp8", "prefix_caching": "on",
        "block_size": 32,
    }  # fmt: skip
    assert command.unmodelled == ()  # --port and --host change no capacity


def test_shell_continuations_and_equals_signs_read_the_same() -> None:
    text = (
        "vllm serve \\\n  meta-llama/Llama-3.1-70B \\\n  --tensor-parallel-size=8 \\\n"
        "  --max-num-seqs=64"
    )
    command = parse_serve_command(text)
    assert command.layout == Layout(tp=8) and command.settings["max_num_seqs"] == 64


def test_vllm_expert_parallel_spans_every_rank_of_the_moe_layer() -> None:
    # vLLM's FusedMoEParallelConfig: with --enable-expert-parallel EP = TP x DP = 8 x 1 ... and
    # DP 8 x TP 1 gives EP 8 with attention DP (dp8-ep8).
    command = parse_serve_command(
        "vllm serve deepseek-ai/DeepSeek-R1 --data-parallel-size 8 --enable-expert-parallel"
    )
    assert command.layout == Layout(dp=8, ep=8)
    assert command.layout.name == "dp8-ep8"


def test_sglang_dp_attention_tp_counts_every_rank_and_the_cap_is_the_group_total() -> None:
    # --tp 8 --dp 8 --enable-dp-attention: 8 attention replicas of TP 1 (8 / 8); the
    # --max-running-requests 1024 is the group's, so 1024 / 8 = 128 per replica.
    command = parse_serve_command(
        "python3 -m sglang.launch_server --model-path deepseek-ai/DeepSeek-R1 --tp 8 --dp 8 "
        "--enable-dp-attention --ep-size 8 --max-running-requests 1024 --mem-fraction-static "
        "0.85 --context-length 16384 --chunked-prefill-size 4096 --kv-cache-dtype fp8_e4m3 "
        "--disable-radix-cache"
    )
    assert command.engine == "sglang" and command.layout == Layout(dp=8, tp=1, ep=8)
    assert command.settings["max_num_seqs"] == 128
    assert command.settings["mem_fraction_static"] == 0.85
    assert command.settings["max_model_len"] == 16384
    assert command.settings["max_num_batched_tokens"] == 4096
    assert command.settings["kv_cache_dtype"] == "fp8"
    assert command.settings["prefix_caching"] == "off"


def test_sglang_dp_attention_cap_below_one_request_per_rank_is_refused() -> None:
    # --max-running-requests 4 over 4 attention-DP ranks is 4 // 4 = 1 each; 3 is 3 // 4 = 0
    # each, which SGLang's tp_worker asserts against ("max_running_request is zero")
    line = (
        "python -m sglang.launch_server --model-path deepseek-ai/DeepSeek-R1 --tp 4 --dp 4 "
        "--enable-dp-attention --max-running-requests {}"
    )
    assert parse_serve_command(line.format(4)).settings["max_num_seqs"] == 1
    with pytest.raises(InputError, match=r"--max-running-requests 3 .* give at least 4$"):
        parse_serve_command(line.format(3))
    # without attention DP the cap is per replica: 3 on each of the 4 replicas
    plain = parse_serve_command(line.format(3).replace(" --enable-dp-attention", ""))
    assert plain.settings["max_num_seqs"] == 3


def test_sglang_plain_dp_cap_is_per_replica() -> None:
    command = parse_serve_command(
        "python -m sglang.launch_server --model-path m/x --tp 2 --dp 4 --max-running-requests 96"
    )
    assert command.layout == Layout(dp=4, tp=2) and command.settings["max_num_seqs"] == 96


def test_sglang_hicache_size_is_gb_per_rank() -> None:
    # 40 GB per rank x 4 ranks = 160e9 bytes = 160e9 / 2^30 = 149.0116... GiB per replica.
    command = parse_serve_command(
        "python -m sglang.launch_server --model-path m/x --tp 4 --enable-hierarchical-cache "
        "--hicache-size 40 --hicache-write-policy write_back"
    )
    assert command.settings["offload"] == f"cpu:{160e9 / 2**30:g}GiB"
    assert command.settings["offload_policy"] == "write-back"


def test_vllm_native_offload_is_the_replicas_total() -> None:
    command = parse_serve_command(
        "vllm serve m/x --tensor-parallel-size 2 --kv-offloading-backend native "
        "--kv-offloading-size 256"
    )
    assert command.settings["offload"] == "cpu:256GiB"


def test_trtllm_serve_flags(tmp_path: Path) -> None:
    # Before 1.2 the YAML overrides the flags (tensorrt_llm/commands/serve.py:
    # update_llm_args_with_extra_dict after get_llm_args): the KV share is the file's 0.8, not
    # the flag's 0.85. From 1.2 (NVIDIA/TensorRT-LLM PR 14812) a typed flag wins: 0.85. CUDA
    # graph capture sizes nothing capcliff models.
    (tmp_path / "extra.yaml").write_text(
        "cuda_graph_config:\n  enable_padding: true\n"
        "kv_cache_config:\n  free_gpu_memory_fraction: 0.8\n"
    )
    line = (
        "trtllm-serve meta-llama/Llama-3.1-8B --backend pytorch --tp_size 2 --pp_size 1 "
        "--max_batch_size 128 --max_num_tokens 8192 --max_seq_len 4096 "
        "--kv_cache_free_gpu_memory_fraction 0.85 --extra_llm_api_options extra.yaml"
    )
    expected = {
        "engine": "trtllm", "max_num_seqs": 128, "max_num_batched_tokens": 8192,
        "max_model_len": 4096,
    }  # fmt: skip
    for release, share in (("1.1.0", 0.8), ("1.2.0", 0.85), ("1.3.0rc20", 0.85), (None, 0.85)):
        command = parse_serve_command(line, base_dir=tmp_path, release=release)
        assert command.engine == "trtllm" and command.layout == Layout(tp=2)
        assert command.settings == {**expected, "free_gpu_memory_fraction": share}, release
        assert command.unmodelled == ()


def test_flags_not_modelled_are_named_in_one_line() -> None:
    command = parse_serve_command(
        'VLLM_USE_DEEP_GEMM=1 vllm serve m/x --speculative-config \'{"method": "eagle"}\' '
        "--quantization bitsandbytes --tensor-parallel-size 2"
    )
    warning = command.warning()
    assert warning is not None and "\n" not in warning
    assert "VLLM_USE_DEEP_GEMM=1" in warning
    assert '--speculative-config {"method": "eagle"}' in warning
    assert "--quantization bitsandbytes" in warning


def test_allow_long_max_model_len_from_the_environment() -> None:
    command = parse_serve_command("VLLM_ALLOW_LONG_MAX_MODEL_LEN=1 vllm serve m/x")
    assert command.settings["allow_long_max_model_len"] is True


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "empty"),
        ("docker run vllm", "cannot tell the engine"),
        ("vllm serve", "names no model"),
        ("vllm serve m/x --max-num-seqs many", "--max-num-seqs wants a whole number"),
        ("vllm serve 'm/x", "cannot read"),
        ("python -m sglang.launch_server --model-path m --tp 6 --dp 4 --enable-dp-attention",
         "--dp 4 does not divide --tp 6"),
    ],
    ids=["empty", "unknown-engine", "no-model", "bad-number", "bad-quote", "dp-not-dividing-tp"],
)  # fmt: skip
def test_unreadable_commands_are_one_line_errors(text: str, message: str) -> None:
    with pytest.raises(InputError, match=message) as caught:
        parse_serve_command(text)
    assert str(caught.value).startswith("serve_command: ") and "\n" not in str(caught.value)


def test_an_explicit_flag_that_agrees_is_kept_and_one_that_differs_is_an_error() -> None:
    command = ServeCommand("vllm", "m/x", Layout(tp=2), {"engine": "vllm", "max_num_seqs": 128})
    merged = merged_settings(command, {"engine": None, "max_num_seqs": 128, "block_size": 32})
    assert merged == {"engine": "vllm", "max_num_seqs": 128, "block_size": 32}
    with pytest.raises(InputError, match="--max-num-seqs 64 conflicts with the command's 128"):
        merged_settings(command, {"max_num_seqs": 64})


def test_a_byte_setting_agrees_with_the_commands_bytes_only_at_the_same_size() -> None:
    # --kv-cache-memory-bytes 21474836480 is 20 x 2^30 B: "20GiB" given agrees (kept as
    # given), "40GiB" conflicts
    command = parse_serve_command("vllm serve m/x --kv-cache-memory-bytes 21474836480")
    assert merged_settings(command, {"kv_cache_memory": "20GiB"})["kv_cache_memory"] == "20GiB"
    with pytest.raises(InputError, match="--kv-cache-memory 40GiB conflicts with the command's"):
        merged_settings(command, {"kv_cache_memory": "40GiB"})


def test_the_model_is_found_by_its_hf_repo_and_a_layout_conflict_is_an_error() -> None:
    command = parse_serve_command("vllm serve meta-llama/llama-3.1-8b --tensor-parallel-size 2")
    assert merged_target(command, model=None, layout=None) == ("llama-3.1-8b", "tp2")
    assert merged_target(command, model="llama-3.1-8b", layout="tp2") == ("llama-3.1-8b", "tp2")
    with pytest.raises(InputError, match="--layout tp4 conflicts with the command's tp2"):
        merged_target(command, model=None, layout="tp4")
    with pytest.raises(InputError, match=r"model llama-3\.1-70b .* conflicts"):
        merged_target(command, model="llama-3.1-70b", layout=None)


def _json(capsys: pytest.CaptureFixture[str], *args: str) -> dict[str, Any]:
    assert main(list(args)) == 0
    result: dict[str, Any] = json.loads(capsys.readouterr().out)
    return result


def test_memory_reads_the_command_and_warns_once(capsys: pytest.CaptureFixture[str]) -> None:
    line = "vllm serve meta-llama/Llama-3.1-8B --tensor-parallel-size 2 --foo-bar 3"
    report = _json(capsys, "memory", "--serve-command", line, "--format", "json")
    assert report["model"] == "llama-3.1-8b" and [lay["name"] for lay in report["layouts"]] == [
        "tp2"
    ]


def test_a_conflicting_capcliff_flag_exits_2_in_one_line(
    capsys: pytest.CaptureFixture[str],
) -> None:
    line = "vllm serve meta-llama/Llama-3.1-8B --tensor-parallel-size 2 --max-num-seqs 64"
    assert main(["memory", "--serve-command", line, "--max-num-seqs", "32"]) == 2
    err = capsys.readouterr().err
    assert err.strip().splitlines() == [
        "error: serve_command: --max-num-seqs 32 conflicts with the command's 64; drop one of them"
    ]


PLAN = (
    "deepseek-r1-distill-llama-8b", "--gpus", "2", "--isl", "512", "--osl", "256",
    "--arrival", "batch", "--num-requests", "60",
)  # fmt: skip
WORKLOAD = ("--isl", "512", "--osl", "256", "--arrival", "batch", "--num-requests", "60")


def _points(report: dict[str, Any]) -> list[Any]:
    return [point for series in report["series"] for point in series["points"]]


@pytest.mark.parametrize("engine", ["vllm", "sglang"])
def test_the_printed_line_read_back_is_the_same_deployment(
    capsys: pytest.CaptureFixture[str], engine: str
) -> None:
    plan = _json(capsys, "plan", *PLAN, "--engine", engine, "--format", "json")
    line = plan["engine_flags"][engine]
    rec = plan["recommended"]
    # the same settings: planning that line again prints it unchanged
    again = _json(capsys, "plan", "--serve-command", line, *WORKLOAD, "--format", "json")
    assert again["recommended"]["layout"] == rec["layout"]
    assert again["engine_flags"][engine] == line
    assert again["layouts"][0]["sweet_spot"] == next(
        row["sweet_spot"] for row in plan["layouts"] if row["name"] == rec["layout"]
    )
    # ... and the same simulated result at the plan's cap as the deployment the line states
    # (--max-num-seqs is the cap; the plan sized KV at the engine's default cap and says so)
    assert any(w.startswith(f"--max-num-seqs {rec['max_num_seqs']}: the plan sized KV")
               for w in plan["flag_warnings"]) or engine == "sglang"  # fmt: skip
    cap = str(rec["max_num_seqs"] * rec["dp"])
    given = ("--layout", rec["layout"], "--concurrency", cap, "--format", "json")
    capped = ("--max-num-seqs", str(rec["max_num_seqs"]))
    original = _json(
        capsys, "sweep", PLAN[0], "--engine", engine, *capped, *WORKLOAD, *given
    )  # fmt: skip
    read_back = _json(capsys, "sweep", "--serve-command", line, *WORKLOAD, *given)
    assert _points(read_back) == _points(original)


SPEC = """
[[scenario]]
name = "today"
gpu = "h200-sxm"
serve_command = '''vllm serve meta-llama/Llama-3.1-8B --tensor-parallel-size 2 \\
  --max-num-seqs 64 --swap-space 4'''
{extra}
[scenario.workload]
isl = 256
osl = 64
num_requests = 64
"""


def test_a_spec_scenario_reads_its_serve_command(tmp_path: Any) -> None:
    from capcliff.check.spec import load_spec

    path = tmp_path / "capcliff.toml"
    path.write_text(SPEC.format(extra=""))
    scenario = load_spec(path).spec.scenario[0]
    assert (scenario.model, scenario.layout, scenario.max_num_seqs) == ("llama-3.1-8b", "tp2", 64)
    assert scenario.swap_space == 4 * 2**30  # --swap-space 4 (GiB)


def test_a_spec_key_that_contradicts_the_command_is_refused(
    tmp_path: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "capcliff.toml"
    path.write_text(SPEC.format(extra="max_num_seqs = 32"))
    assert main(["check", str(path)]) == 2
    err = capsys.readouterr().err
    assert "--max-num-seqs 32 conflicts with the command's 64" in err


def _speculative_line(engine: str, spec: tuple[str, int, str | None]) -> str:
    from capcliff.analysis.flags import sglang_speculative_flags, vllm_speculative_flags

    if engine == "sglang":
        head = "python -m sglang.launch_server --model-path deepseek-ai/DeepSeek-R1 --tp 8"
        return " ".join([head, *sglang_speculative_flags(spec)])
    words = vllm_speculative_flags(spec)
    return f"vllm serve deepseek-ai/DeepSeek-R1 --tensor-parallel-size 8 {words[0]} '{words[1]}'"


@pytest.mark.parametrize(
    ("engine", "spec", "setting"),
    [
        ("sglang", ("mtp", 3, None), "mtp:3"),
        ("sglang", ("eagle", 2, "org/draft"), "eagle:2:org/draft"),
        ("sglang", ("ngram", 4, None), "ngram:4"),
        ("vllm", ("mtp", 1, None), "mtp:1"),
        ("vllm", ("eagle", 3, "org/draft"), "eagle:3:org/draft"),
        ("vllm", ("ngram", 5, None), "ngram:5"),
    ],
)
def test_the_printed_speculative_flags_read_back_as_the_same_speculation(
    engine: str, spec: tuple[str, int, str | None], setting: str
) -> None:
    command = parse_serve_command(_speculative_line(engine, spec))
    assert command.settings["speculative"] == setting
    assert command.unmodelled == ()


def test_sglangs_spec_v2_variable_is_the_overlap_setting_and_a_draft_tree_is_named() -> None:
    line = _speculative_line("sglang", ("mtp", 3, None))
    assert parse_serve_command("SGLANG_ENABLE_SPEC_V2=1 " + line).settings["spec_overlap"] is True
    assert parse_serve_command("SGLANG_ENABLE_SPEC_V2=0 " + line).settings["spec_overlap"] is False
    assert "spec_overlap" not in parse_serve_command(line).settings
    # SGLang's EAGLE on a model's own MTP layers (no draft checkpoint) is NEXTN: mtp
    eagle = line.replace("NEXTN", "EAGLE")
    assert parse_serve_command(eagle).settings["speculative"] == "mtp:3"
    tree = parse_serve_command(
        line.replace("--speculative-eagle-topk 1", "--speculative-eagle-topk 4")
    )
    assert "speculative" not in tree.settings
    assert any("tree of drafts" in flag for flag in tree.unmodelled)


def test_the_sglang_line_carries_spec_v2_only_with_speculation_under_overlap() -> None:
    from dataclasses import replace

    from capcliff.analysis.flags import Deployment, sglang_command

    base = Deployment(
        model="deepseek-ai/DeepSeek-R1", layout=Layout(tp=8), max_num_seqs=48,
        max_num_batched_tokens=8192, max_model_len=4096, gpu_memory_utilization=0.9,
        mem_fraction_static=0.8, kv_cache_dtype="auto", moe=True, mla=True,
    )  # fmt: skip
    spec = replace(base, speculative=("mtp", 3, None))
    assert sglang_command(replace(spec, spec_overlap=True)).startswith("SGLANG_ENABLE_SPEC_V2=1 ")
    assert sglang_command(spec).startswith("python -m sglang.launch_server")
    assert sglang_command(replace(base, spec_overlap=True)).startswith("python")
    read = parse_serve_command(sglang_command(replace(spec, spec_overlap=True)))
    assert (read.settings["speculative"], read.settings["spec_overlap"]) == ("mtp:3", True)


def test_a_vllm_line_with_dp_reads_a_moe_model_as_lockstep_ranks() -> None:
    # vLLM runs a MoE model's --data-parallel-size ranks in lockstep with the MoE layers over
    # all dp x tp ranks (docs.vllm.ai, serving/data_parallel_deployment): attention DP, dpa4-tp2
    # here; a dense model's DP replicas stay independent
    from capcliff.analysis.serve_command import merged_target

    moe = parse_serve_command(
        "vllm serve Qwen/Qwen3-30B-A3B --tensor-parallel-size 2 --data-parallel-size 4"
    )
    assert merged_target(moe, model=None, layout=None) == ("qwen3-30b-a3b", "dpa4-tp2")
    dense = parse_serve_command(
        "vllm serve meta-llama/Llama-3.1-8B --tensor-parallel-size 2 --data-parallel-size 4"
    )
    assert merged_target(dense, model=None, layout=None)[1] == "dp4-tp2"


def test_independent_replicas_of_a_moe_model_are_printed_as_separate_vllm_servers(
    capsys: pytest.CaptureFixture[str],
) -> None:
    plan = _json(capsys, "plan", "qwen3-30b-a3b", "--gpus", "8", "--layout", "dp4-tp2",
                 "--isl", "1024", "--osl", "256", "--rate", "5", "--format", "json")  # fmt: skip
    line = plan["engine_flags"]["vllm"]
    assert "--data-parallel-size 1" in line and "--tensor-parallel-size 2" in line
    assert any(w.startswith("vllm: the line is one replica of dp4-tp2: run 4 of them")
               for w in plan["flag_warnings"])  # fmt: skip


def test_vllms_async_scheduling_is_the_overlap_setting() -> None:
    # vLLM V1's AsyncScheduler schedules step N + 1 while step N runs: its overlap scheduler
    line = "vllm serve openai/gpt-oss-20b"
    assert parse_serve_command(line + " --async-scheduling").settings["overlap_schedule"] is True
    assert (
        parse_serve_command(line + " --no-async-scheduling").settings["overlap_schedule"] is False
    )
    assert "overlap_schedule" not in parse_serve_command(line).settings


def test_memory_lays_out_the_trtllm_release_s_winner(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # --tp_size 2 typed, tensor_parallel_size: 4 in the YAML: TensorRT-LLM 1.1 runs tp4 (the YAML
    # overrides), 1.2 runs tp2 (NVIDIA/TensorRT-LLM PR 14812: typed flags win)
    monkeypatch.chdir(tmp_path)
    (tmp_path / "x.yml").write_text("tensor_parallel_size: 4\n")
    line = "trtllm-serve meta-llama/Llama-3.1-8B --tp_size 2 --config x.yml"
    for release, layout in (("1.1.0", "tp4"), ("1.2.0", "tp2")):
        args = ("memory", "--serve-command", line, "--engine-version", release)
        report = _json(capsys, *args, "--format", "json")
        assert [lay["name"] for lay in report["layouts"]] == [layout], release
