"""Edges the seed-83 mutation sample (`benchmarks/mutation.py --packages sim --seed 83`) found
untested. Every expected value is worked out by hand in the comments."""

from __future__ import annotations

import numpy as np
import pytest

from capcliff.sim.config import KVCapacity, SimConfig
from capcliff.sim.reuse.kv_tiers import KVTier
from capcliff.sim.simulate import simulate
from capcliff.sim.traffic.workload import Requests
from tests.simtools import toy_model


@pytest.mark.parametrize("mixed_prefill", [False, True])
def test_a_load_from_the_host_tier_lengthens_the_prefill_step(mixed_prefill: bool) -> None:
    # SGLang with a 4-block HBM cache (16-token blocks, 1,000 B of KV per token) and a host tier
    # at 32 MB/s with 1 ms latency. A (content 0, 33 tokens) finishes and writes its 2 full
    # blocks through to the host; B (content 1, 60 tokens, 4 blocks) evicts them from HBM; C
    # (content 0 again, 33 tokens) misses in HBM and looks up (33 - 1) // 16 = 2 blocks in the
    # host tier. Loading them takes 1 ms + 32,000 B / 32 MB/s = 2 ms, less than recomputing 32
    # tokens (10 GFLOP each at 100 TFLOP/s: 3.2 ms), so C loads them. Its prefill step (the
    # exclusive one with mixed chunks off, the mixed one with them on) lasts the load on top of
    # its compute: at least 1 ms of step overhead + 1 GB of weights at 1 TB/s (1 ms) + 2 ms.
    cpu = KVTier("cpu", 100 * 16, read_bytes_per_s=32e6, write_bytes_per_s=32e6, latency_s=1e-3)
    capacity = KVCapacity(blocks=4, block_size=16, kv_bytes_per_token=1000, tiers=(cpu,))
    requests = Requests(
        input_tokens=np.array([33, 60, 33]), output_tokens=np.array([1, 1, 1]),
        max_output_tokens=np.array([1, 1, 1]), arrival_s=np.array([0.0, 1.0, 2.0]),
        content_node=np.array([0, 1, 0]), content_parent=np.array([-1, -1]),
        content_fork_tokens=np.array([0, 0]),
    )  # fmt: skip
    config = SimConfig(
        policy="sglang", prefix_caching=True, mixed_prefill=mixed_prefill,
        max_num_batched_tokens=64, max_num_seqs=4,
    )  # fmt: skip
    result = simulate(requests, toy_model(), capacity, config)
    assert result.reuse is not None
    tier = result.reuse.tiers[0]
    assert tier.hit_tokens == 32
    assert tier.read_bytes == 32_000
    # written: A's 2 blocks and B's 60 // 16 = 3, 16,000 B each
    assert tier.written_bytes == 80_000
    assert result.swap_s == pytest.approx(2e-3)
    assert result.ttft_s[2] >= 4e-3
