"""Memory survivors of mutation seed 107 (benchmarks/mutation.py), each value worked by hand."""

from __future__ import annotations

import dataclasses

from capcliff.catalog.layout import Layout
from capcliff.memory.budget import BudgetSettings, EngineName, StageDemand
from capcliff.memory.engines import _sglang_tier, sglang_mem_fraction_static, stage_budget
from capcliff.memory.overheads import rope_cache_bytes
from capcliff.units import GIB, MIB
from tests.conftest import arch_of


def test_sglang_reserves_at_least_10_gib_only_above_60_gib() -> None:
    # 59.5 GiB = 60,928 MiB, tier "< 60 GiB": chunk 4,096, graph bs 32 (TP 1). reserved = 512 +
    # 1.5 x 4,096 + 2 x 32 + 1 x 1 / 8 x 1,024 = 6,848 MiB; not above 60 x 1,024 MiB, so no 10 GiB
    # floor: (60,928 - 6,848) / 60,928 = 0.8876 -> 0.888 (with the floor: 0.832). At 0.5.9, no
    # piecewise CUDA graphs (tests/test_sglang_reserve.py has them).
    assert sglang_mem_fraction_static(60_928 * MIB, tp=1, pp=1, release=(0, 5, 9)) == 0.888
    # 64 GiB = 65,536 MiB, tier "< 160": chunk 8,192, graph bs 256. reserved = 512 + 12,288 + 512
    # + 128 = 13,440 MiB, above the floor: (65,536 - 13,440) / 65,536 = 0.79492 -> 0.795.
    assert sglang_mem_fraction_static(64 * GIB, tp=1, pp=1, release=(0, 5, 9)) == 0.795


def test_sglang_tiers_by_gpu_memory() -> None:
    # SGLang server_args.py (late 2025): 60-160 GB GPUs chunk 8,192 and capture graphs up to
    # 256 sequences below TP 4, 512 from TP 4.
    assert _sglang_tier(80 * 1024, 1) == (8192, 256)
    assert _sglang_tier(80 * 1024, 4) == (8192, 512)
    assert _sglang_tier(40 * 1024, 1) == (4096, 32)


def test_sglang_keeps_cuda_graph_memory_outside_its_pool_unless_eager() -> None:
    demand = StageDemand(
        arch=arch_of("llama-3.1-8b"), layout=Layout(), stage=0, total_memory_bytes=80 * GIB,
        weights_bytes=16 * GIB, kv_bytes_per_token=131_072, max_model_len=8192,
    )  # fmt: skip
    graphs = stage_budget(demand, BudgetSettings(engine=EngineName.SGLANG))
    eager = stage_budget(demand, BudgetSettings(engine=EngineName.SGLANG, enforce_eager=True))
    assert "cudagraph" in [t.name for t in graphs.outside_terms]
    assert "cudagraph" not in [t.name for t in eager.outside_terms]


def test_a_model_without_a_position_limit_builds_no_rope_table() -> None:
    # Llama-3.1-8B: 131,072 positions x 128 rotary dims x 2 B = 32 MiB (its logs, V01/V16);
    # no max_position_embeddings: no table, 0 B (never negative).
    arch = arch_of("llama-3.1-8b")
    assert rope_cache_bytes(arch) == 131_072 * 128 * 2
    assert rope_cache_bytes(dataclasses.replace(arch, max_position_embeddings=None)) == 0
