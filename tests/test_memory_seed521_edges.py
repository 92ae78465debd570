"""Edges the memory mutation sample of seed 521 found untested (benchmarks/mutation.py --packages
memory --sample 40 --seed 521). Every expected value is worked out by hand in the comments."""

from __future__ import annotations

import dataclasses

import pytest

from capcliff.memory.budget import BudgetSettings, EngineName
from capcliff.memory.deepep import normal_nvl_bytes
from capcliff.memory.engines import sglang_mem_fraction_static, stage_budget
from capcliff.units import GIB, MIB
from tests.test_engines import _demand


def test_a_four_rank_nvlink_buffer_counts_one_rdma_rank() -> None:
    # DeepEP normal mode, 4 ranks in one node (Config::get_nvl_buffer_size_hint: RDMA ranks =
    # max(4 / 8, 1) = 1), hidden 7,168 x 2 B, 256 NVL receive tokens:
    #   queues = 20 SMs / 2 x 4 peers = 40; counters 40 x (2 x 1 + 3) x 4 = 800
    #   per token = 14,336 + 8 + 128 x (8 + 4) + 128 x 4 = 16,392
    #   40 x 256 x 16,392 = 167,854,080; + 800 = 167,854,880 -> 128-aligned 167,854,976
    # (seed 521's max(4 // 8, 0) = 0 RDMA ranks: 480 B of counters, 167,854,592)
    assert normal_nvl_bytes(7168 * 2, 4, 256) == 167_854_976


@pytest.mark.parametrize(
    ("gib", "tp", "pp", "fraction"), [(16, 1, 1, 0.772), (141, 8, 8, 0.848)], ids=["16g", "141g"]
)
def test_sglangs_reserve_by_hand(gib: int, tp: int, pp: int, fraction: float) -> None:
    # server_args.py: reserved = 512 + 1.5 x max(chunk, 2048) + 2 x cuda_graph_max_bs +
    # TP x PP / 8 x 1024 MiB, at least 10 GiB above 60 GB; rounded to three decimals (0.5.9: no
    # piecewise CUDA graphs; PP 8 turns them off in every release).
    # 16 GiB (16,384 MiB; under 20 GiB: chunk 2,048, graphs to 8), TP 1 x PP 1:
    #   512 + 3,072 + 16 + 128 = 3,728 MiB; 12,656 / 16,384 = 0.772461 -> 0.772
    #   (seed 521's 511 MiB: 12,657 / 16,384 = 0.772522 -> 0.773)
    # 141 GiB (144,384 MiB; 60-160 GiB: chunk 8,192, graphs to 512 at TP >= 4), TP 8 x PP 8:
    #   512 + 12,288 + 1,024 + 8,192 = 22,016 MiB (over the floor);
    #   122,368 / 144,384 = 0.847518 -> 0.848 (x 1025 MiB per 8 ranks: 22,024, 0.847463 -> 0.847)
    assert sglang_mem_fraction_static(gib * GIB, tp=tp, pp=pp, release=(0, 5, 9)) == fraction


ROPE_BYTES = 131_072 * 128 * 2  # Llama-3.1-8B: max_position_embeddings x head_dim x 2 B


@pytest.mark.parametrize(
    ("engine", "rounding", "overhead", "named"),
    [
        # SGLang measures the weights as free memory lost, so it sees the allocator's rounding
        (EngineName.SGLANG, 6 * MIB, ROPE_BYTES + 6 * MIB, True),
        (EngineName.SGLANG, 0, ROPE_BYTES, False),  # no tensor rounded: nothing to name
        (EngineName.VLLM, 6 * MIB, ROPE_BYTES, False),  # vLLM counts the tensors' own sizes
    ],
    ids=["sglang-rounded", "sglang-none", "vllm"],
)
def test_the_allocators_rounding_is_sglangs_alone(
    engine: EngineName, rounding: int, overhead: int, named: bool
) -> None:
    demand = dataclasses.replace(
        _demand(total=80 * GIB, weights=16 * GIB), allocator_rounding_bytes=rounding
    )
    budget = stage_budget(demand, BudgetSettings(engine=engine))
    (term,) = [t for t in budget.terms if t.name == "weights_overhead"]
    assert term.bytes == overhead
    assert ("caching-allocator rounding" in term.source) is named


def test_vllm_attention_dp_without_expert_parallel_allocates_no_deepep_buffers() -> None:
    from capcliff.catalog.catalogs import get_model
    from capcliff.catalog.layout import parse_layout
    from capcliff.memory.deepep import AllToAllBackend, deepep_buffers

    # vLLM's FusedMoEParallelConfig.use_all2all_kernels = dp_size > 1 and use_ep: DPA8 runs its
    # MoE layers over the 8 ranks (moe_ranks 8) with their width split, EP 1, so no all-to-all
    # and no DeepEP buffer, in either mode. (seed 521's `ep >= 1` allocated them.)
    dpa8 = parse_layout("dpa8")
    assert (dpa8.attention_dp, dpa8.ep, dpa8.moe_ranks) == (True, 1, 8)
    r1 = get_model("deepseek-r1").arch
    for backend in (AllToAllBackend.DEEPEP_HIGH_THROUGHPUT, AllToAllBackend.DEEPEP_LOW_LATENCY):
        assert deepep_buffers(r1, dpa8, engine="vllm", backend=backend).total_bytes == 0
