"""Edges of the memory calculators that mutation testing found untested (benchmarks/mutation.py,
seed 3): each value worked out by hand in the comment next to it."""

from __future__ import annotations

import pytest

from capcliff.catalog.catalogs import get_hardware
from capcliff.catalog.layout import Layout
from capcliff.errors import InputError
from capcliff.memory.budget import BudgetSettings, EngineName
from capcliff.memory.draft import DraftMemory
from capcliff.memory.engines import _sglang_tier, sglang_mem_fraction_static, stage_budget
from capcliff.memory.layout_memory import LayoutMemory, layout_memory
from capcliff.memory.overheads import (
    ACTIVATION_BYTES,
    FUSED_MOE_CHUNK_TOKENS,
    _moe_workspace_elements,
    forward_peak_bytes,
)
from capcliff.memory.params import Component, ParamGroup, Shard, Storage
from capcliff.memory.weights import WeightScheme, elements_per_rank
from capcliff.units import GIB, MIB, KVDType
from tests.conftest import arch_of
from tests.test_engines import NO_OVERHEADS, _demand
from tests.test_memory import _memory


@pytest.mark.parametrize("name", ["gpu_memory_utilization", "mem_fraction_static"])
def test_a_memory_fraction_is_in_zero_one(name: str) -> None:
    BudgetSettings(**{name: 1.0})  # the whole device is allowed
    for bad in (1.5, 0.0, -0.1):
        with pytest.raises(InputError, match=name):
            BudgetSettings(**{name: bad})


def test_sglang_tiers_below_35_gib() -> None:
    # python/sglang/srt/server_args.py (late 2025): under 20 GiB chunked prefill 2048 and CUDA
    # graphs up to batch 8; 20-35 GiB: 2048, and 24 below TP 4, 80 from TP 4.
    assert _sglang_tier(16 * 1024, 1) == (2048, 8)
    assert _sglang_tier(24 * 1024, 1) == (2048, 24)
    assert _sglang_tier(24 * 1024, 4) == (2048, 80)


def test_fused_moe_workspaces_by_hand() -> None:
    # Mixtral 8x7B, TP 1: N = 2 x 14,336 = 28,672, K = 4,096, top-2.
    # modular kernel: 2 x (max(N, K) + max(N/2, K)) + K = 2 x (28,672 + 14,336) + 4,096 = 90,112
    # fused_experts_impl: 2 x (max(N, K) + N/2) = 2 x (28,672 + 14,336) = 86,016
    mixtral = arch_of("mixtral-8x7b")
    assert _moe_workspace_elements(mixtral, Layout(), modular=True) == 90_112
    assert _moe_workspace_elements(mixtral, Layout(), modular=False) == 86_016
    # Qwen3-30B-A3B, TP 1: N = 2 x 768 = 1,536 < K = 2,048, top-8:
    # modular 8 x (2,048 + 2,048) + 2,048 = 34,816; fused 8 x (2,048 + 768) = 22,528
    qwen = arch_of("qwen3-30b-a3b")
    assert _moe_workspace_elements(qwen, Layout(), modular=True) == 34_816
    assert _moe_workspace_elements(qwen, Layout(), modular=False) == 22_528


def test_moe_forward_peak_past_the_fused_chunk_adds_two_hidden_states_per_token() -> None:
    # Mixtral TP 1 per token: qkv (32 + 2 x 8) x 128 = 6,144; MLP max(3 x 14,336, 86,016) =
    # 86,016; h 4,096: 96,256 elements. T = 32,768 + 1,000: the fused MoE runs 32,768 tokens at
    # a time, the 1,000 beyond hold 2 x 4,096 elements each, all at 2 bytes:
    # 32,768 x 96,256 x 2 + 1,000 x 8,192 x 2 = 6,308,233,216 + 16,384,000 = 6,324,617,216
    assert FUSED_MOE_CHUNK_TOKENS == 32_768 and ACTIVATION_BYTES == 2
    mixtral = arch_of("mixtral-8x7b")
    peak = forward_peak_bytes(mixtral, Layout(), max_num_batched_tokens=32_768 + 1_000)
    assert peak == 6_324_617_216


def test_kv_heads_fewer_than_tp_ranks_are_replicated_one_per_rank() -> None:
    # 8 KV heads of 128 x 4,096 elements: TP 4 holds 2 heads per rank, TP 16 one (replicated).
    group = ParamGroup(
        Component.ATTENTION, 8 * 128 * 4096, Shard.KV_HEADS, Storage.NATIVE, 0,
        row_elements=128 * 4096,
    )  # fmt: skip
    assert elements_per_rank(group, Layout(tp=4)) == 2 * 128 * 4096
    assert elements_per_rank(group, Layout(tp=16)) == 128 * 4096


def test_max_concurrency_of_an_empty_and_a_one_token_request() -> None:
    # 56,254 blocks of 16 tokens (tests/test_memory.py): a 1-token request needs one block.
    mem: LayoutMemory = _memory("llama-3.1-8b", Layout())
    assert mem.max_concurrency(1) == 56_254
    assert mem.max_concurrency(0) == 0


# Seed 31 (benchmarks/mutation.py --packages memory --seed 31): survivors' values by hand.


def test_sglang_tier_35_to_60_gib() -> None:
    # python/sglang/srt/server_args.py: `elif gpu_mem < 60 * 1024` (A100 40GB, L40): chunked
    # prefill 4096, cuda_graph_max_bs 32 if tp_size < 4 else 160.
    assert _sglang_tier(48 * 1024, 2) == (4096, 32)
    assert _sglang_tier(48 * 1024, 4) == (4096, 160)


def test_sglang_tiers_from_60_gib() -> None:
    # server_args.py: below 160 GiB (H100, H20, H200) chunked prefill 8192 and graphs up to 256
    # sequences while tp_size < 4 (TP 3 included), 512 from TP 4; from 160 GiB (B200, MI300)
    # 16384 and 512 at any TP.
    assert _sglang_tier(80 * 1024, 3) == (8192, 256)
    assert _sglang_tier(80 * 1024, 4) == (8192, 512)
    assert _sglang_tier(180 * 1024, 1) == (16384, 512)
    assert _sglang_tier(180 * 1024, 8) == (16384, 512)


def test_sglang_reserve_counts_a_2048_token_chunk_as_3072_mib() -> None:
    # 18,688 MiB at TP 1 (< 20 GiB: chunk 2048, graphs up to 8): reserved = 512 + 1.5 x
    # max(2048, 2048) + 2 x 8 + 1/8 x 1,024 = 512 + 3,072 + 16 + 128 = 3,728 MiB;
    # (18,688 - 3,728) / 18,688 = 14,960 / 18,688 = 0.80051 -> 0.801. One MiB more reserved
    # (a 2049-token floor gives 3,729.5) falls to 0.80043 -> 0.800. At 0.5.9: no piecewise
    # CUDA graphs (from 0.5.10 42 sizes up to 2,048 tokens add 336 MiB).
    assert sglang_mem_fraction_static(18_688 * MIB, tp=1, pp=1, release=(0, 5, 9)) == 0.801


def test_trtllm_reserve_is_free_memory_minus_the_rounded_up_pool() -> None:
    # 100,000 B free, nothing else used, 1,000 B per token, 32-token blocks: 0.9 x 100,000 =
    # 90,000 B -> 90 tokens -> ceil(90 / 32) = 3 blocks = 96 tokens = 96,000 B of KV (the
    # round-up takes 6,000 B of the reserve), leaving 100,000 - 96,000 = 4,000 B.
    settings = BudgetSettings(engine=EngineName.TRTLLM, term_overrides=NO_OVERHEADS)
    budget = stage_budget(_demand(total=100_000, weights=0, per_token=1_000), settings)
    assert (budget.blocks, budget.kv_bytes) == (3, 96_000)
    assert budget.term("fraction_reserve") == 4_000


@pytest.mark.parametrize("engine", list(EngineName))
def test_weights_overhead_is_the_rope_cache_on_every_engine(engine: EngineName) -> None:
    # Llama 3.1 8B, a GQA model (no MLA copies), allocator rounding not given: the only load-time
    # extra is the RoPE table, 131,072 positions x 128 rotary dims x 2 B = 33,554,432 B.
    budget = stage_budget(_demand(total=80 * GIB, weights=16 * GIB), BudgetSettings(engine=engine))
    assert budget.term("weights_overhead") == 33_554_432


def test_a_draft_loads_its_weights_on_the_last_pipeline_stage() -> None:
    # A draft of 1,000,000 B: with one stage (stage 0 is the last) its weights are a term there;
    # at PP 2 only stage 1 carries them and stage 0 has none.
    arch = arch_of("llama-3.1-8b")

    def draft_bytes(layout: Layout) -> list[int]:
        mem = layout_memory(
            arch, get_hardware("h200-sxm"), layout, scheme=WeightScheme.as_shipped(arch),
            kv_dtype=KVDType.BF16, max_model_len=8_192, settings=BudgetSettings(),
            draft=DraftMemory(weights_bytes=1_000_000),
        )  # fmt: skip
        return [s.term("draft_weights") for s in mem.stages]

    assert draft_bytes(Layout()) == [1_000_000]
    assert draft_bytes(Layout(pp=2)) == [0, 1_000_000]
