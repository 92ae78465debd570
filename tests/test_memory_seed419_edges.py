"""Edges the memory mutation sample of seed 419 found untested (benchmarks/mutation.py --packages
memory --sample 40 --seed 419): each value worked out by hand in its comment."""

from __future__ import annotations

from typing import Any

import pytest

from capcliff.catalog.catalogs import get_hardware, get_model
from capcliff.catalog.layout import Layout
from capcliff.errors import InputError
from capcliff.memory.budget import BudgetSettings, EngineName
from capcliff.memory.deepep import low_latency_rdma_bytes
from capcliff.memory.layout_memory import layout_memory
from capcliff.memory.weights import WeightScheme
from capcliff.units import KVDType


@pytest.mark.parametrize("name", ["max_num_batched_tokens", "max_num_seqs", "block_size",
                                  "max_tokens"])  # fmt: skip
def test_a_budget_count_of_zero_is_refused_and_one_is_read(name: str) -> None:
    zero: dict[str, Any] = {name: 0}
    with pytest.raises(InputError, match=f"{name}: must be >= 1, got 0"):
        BudgetSettings(**zero)
    one: dict[str, Any] = {name: 1}
    assert getattr(BudgetSettings(**one), name) == 1


def test_vllm_v0_budgets_a_non_mla_sliding_window_model_past_32k_with_chunked_prefill() -> None:
    # Gemma-3-27B: 62 layers, 52 of them sliding (window 1,024), 16 KV heads of 128 in BF16:
    # 2 x 16 x 128 x 2 B = 8,192 B per layer per token. vLLM V0 turns chunked prefill on above
    # 32K for a model without MLA, so at 65,536 tokens the step budget is 2,048 and a sliding
    # layer keeps 1,024 + 2,048 = 3,072 tokens of a request's 65,536:
    # 8,192 x (10 + 52 x 3,072 / 65,536) = 8,192 x 12.4375 = 101,888 B per token.
    # (Budgeted without chunking, 65,536 tokens a step, every layer would keep all 65,536.)
    arch = get_model("gemma-3-27b").arch
    memory = layout_memory(
        arch, get_hardware("h200-sxm"), Layout(), scheme=WeightScheme.as_shipped(arch),
        kv_dtype=KVDType.BF16, max_model_len=65_536,
        settings=BudgetSettings(engine=EngineName.VLLM_V0),
    )  # fmt: skip
    assert memory.kv_bytes_per_token_per_gpu == 101_888


def test_deepeps_low_latency_buffer_has_one_scale_per_128_channels() -> None:
    # hidden 16,384: 16,384 / 128 = 128 scales of 4 B. Dispatch message 16 + max(2 x 16,384,
    # 16,384 + 512) = 32,784 B; combine message 512 + 32,768 = 33,280 B. 128 tokens, 1 expert:
    # send = max(128 x 32,784, 128 x 33,280) = 4,259,840; recv = 128 x 33,280 = 4,259,840;
    # signals 4 B aligned to 128. 2 x 4,259,840 x 2 + 2 x 128 = 17,039,616, + 128 rounded
    # down to 128 B: 17,039,744. (At the widths the catalog's MoE models have, 7,168 and less,
    # hidden // 127 is the same count, so only a width from 16,256 up shows the divisor.)
    assert low_latency_rdma_bytes(128, 16_384, 1) == 17_039_744
