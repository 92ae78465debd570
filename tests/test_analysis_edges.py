"""Edges of the analysis layer that mutation testing found untested (benchmarks/mutation.py,
analysis, seed 3): each expected value worked out by hand in the comment next to it."""

from __future__ import annotations

from dataclasses import replace

import pytest

from capcliff.analysis.deployment_settings import check_gpu_count
from capcliff.analysis.flags import Deployment, unexpressed, vllm_command
from capcliff.analysis.offload import offload_tiers
from capcliff.analysis.serve_command import merged_settings, parse_serve_command
from capcliff.catalog.catalogs import get_hardware
from capcliff.catalog.layout import MAX_GPUS, Layout
from capcliff.errors import InputError
from capcliff.units import GB


def test_a_gpu_count_outside_one_to_the_limit_is_refused_at_either_end() -> None:
    assert check_gpu_count(8, gpus_per_node=8) == 8
    for gpus in (0, MAX_GPUS + 8):  # the second is whole nodes, so only the limit refuses it
        with pytest.raises(InputError, match="outside 1 to"):
            check_gpu_count(gpus, gpus_per_node=8)


def test_the_nvme_tier_of_one_b200_by_hand() -> None:
    # hardware/b200.toml: 56 GB/s read and 28 GB/s write per node of 8 GPUs, 92 us latency.
    # 1 TB on one GPU at 131,072 B per token: floor(1e12 / 131,072) = 7,629,394 tokens;
    # read 56e9 / 8 = 7e9 B/s, write 3.5e9 B/s, latency 92e-6 s.
    (tier,) = offload_tiers(
        {"nvme": 1000 * GB}, get_hardware("b200"), gpus_per_replica=1,
        kv_bytes_per_token_per_gpu=131_072,
    )  # fmt: skip
    assert tier.tokens == 7_629_394
    assert tier.read_bytes_per_s == pytest.approx(7e9)
    assert tier.write_bytes_per_s == pytest.approx(3.5e9)
    assert tier.latency_s == pytest.approx(92e-6)


@pytest.mark.parametrize("missing", ["nvme_read_gb_s_per_node", "nvme_write_gb_s_per_node"])
def test_an_nvme_tier_needs_every_nvme_figure(missing: str) -> None:
    hardware = get_hardware("b200").model_copy(update={missing: None})
    with pytest.raises(InputError, match="no NVMe figures"):
        offload_tiers(
            {"nvme": GB}, hardware, gpus_per_replica=1, kv_bytes_per_token_per_gpu=131_072
        )


def _deployment(layout: Layout, **changes: object) -> Deployment:
    base = Deployment(
        model="Qwen/Qwen3-30B-A3B", layout=layout, max_num_seqs=64, max_num_batched_tokens=8192,
        max_model_len=4096, gpu_memory_utilization=0.9, mem_fraction_static=0.8,
        kv_cache_dtype="auto", moe=True, mla=False,
    )  # fmt: skip
    return replace(base, **changes)  # type: ignore[arg-type]


def test_vllm_expert_parallel_only_when_the_layout_has_it() -> None:
    assert "--enable-expert-parallel" not in vllm_command(_deployment(Layout(tp=2)))
    assert "--enable-expert-parallel" in vllm_command(_deployment(Layout(tp=2, ep=2)))


def test_write_back_is_said_for_vllm_only() -> None:
    dep = _deployment(Layout(), offload_cpu_bytes=10 * GB, offload_write_back=True)
    assert any("write-back" in line for line in unexpressed(dep, "vllm"))
    assert not any("write-back" in line for line in unexpressed(dep, "sglang"))
    plain = _deployment(Layout(), offload_cpu_bytes=10 * GB)
    assert not any("write-back" in line for line in unexpressed(plain, "vllm"))


def test_a_vllm_mtp_config_naming_a_model_reads_as_mtp_without_a_draft() -> None:
    line = (
        "vllm serve deepseek-ai/DeepSeek-R1 --speculative-config "
        '\'{"method": "mtp", "num_speculative_tokens": 1, "model": "x/y"}\''
    )
    assert parse_serve_command(line).settings["speculative"] == "mtp:1"


def test_a_size_given_with_other_spacing_agrees_with_the_command() -> None:
    command = parse_serve_command("vllm serve m/x --swap-space 4")
    assert command.settings["swap_space"] == "4GiB"
    assert merged_settings(command, {"swap_space": "4 GiB"})["swap_space"] == "4 GiB"
    with pytest.raises(InputError, match="swap"):
        merged_settings(command, {"swap_space": "8GiB"})


def test_speculation_reserves_each_running_sequences_lookahead_blocks() -> None:
    # n-gram K = 3 on vLLM: 3 lookahead slots per sequence (no draft model, so not 2K); at
    # max_num_seqs 100 and 16-token blocks the reserve is ceil(100 x 3 / 16) = 19 blocks.
    from capcliff.analysis.deployment import resolve
    from capcliff.analysis.deployment_settings import DeploymentSettings
    from capcliff.catalog.catalogs import get_model

    settings = DeploymentSettings(max_num_seqs=100, speculative="ngram:3", spec_accept_length=2.0)
    dep = resolve(get_model("llama-3.1-8b"), get_hardware("h200-sxm"), settings)
    plain = resolve(get_model("llama-3.1-8b"), get_hardware("h200-sxm"),
                    DeploymentSettings(max_num_seqs=100))  # fmt: skip
    memory = plain.memory(Layout(), 4096)
    assert dep.lookahead_tokens_per_sequence() == 3
    assert memory.stages[0].block_size == 16
    assert dep.capacity(memory).blocks == plain.capacity(memory).blocks - 19


def test_a_disaggregated_spec_counts_every_pool_gpu_against_the_limit() -> None:
    # 1 x tp8 prefill + 8,192 x tp8 decode = 8 + 65,536 = 65,544 GPUs: 8 past MAX_GPUS (65,536)
    from capcliff.analysis.disagg.pools import parse_disagg

    with pytest.raises(InputError, match="spans 65,544 GPUs"):
        parse_disagg("1p:tp8,8192d:tp8")
    assert parse_disagg("1p:tp8,8191d:tp8").decode_instances == 8191  # 65,536: at the limit
