"""Edges of the memory calculators that mutation testing found untested (benchmarks/mutation.py,
seed 3): each value worked out by hand in the comment next to it."""

from __future__ import annotations

import pytest

from capcliff.catalog.layout import Layout
from capcliff.errors import InputError
from capcliff.memory.budget import BudgetSettings
from capcliff.memory.engines import _sglang_tier
from capcliff.memory.layout_memory import LayoutMemory
from capcliff.memory.overheads import (
    ACTIVATION_BYTES,
    FUSED_MOE_CHUNK_TOKENS,
    _moe_workspace_elements,
    forward_peak_bytes,
)
from capcliff.memory.params import Component, ParamGroup, Shard, Storage
from capcliff.memory.weights import elements_per_rank
from tests.conftest import arch_of
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
