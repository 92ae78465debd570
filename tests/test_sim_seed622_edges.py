"""Edges the seed-622 mutation sample (`benchmarks/mutation.py --packages sim --seed 622`) found
untested. Every expected value is worked out by hand in the comments."""

from __future__ import annotations

import pytest

from capcliff.sim.reuse.kv_tiers import KVTier
from capcliff.sim.reuse.prefix_reuse import PrefixReuse
from tests.simtools import fixed_batch


def test_write_back_copies_out_only_a_tail_hbm_evicts() -> None:
    # Write-back (SGLang's hicache write_back): a node goes to the tier when HBM evicts its
    # tail, and only then. 4-token blocks, 1,000 B a token (4,000 B a block), one DRAM tier
    # written at 4e6 B/s (1 ms a block), no latency.
    # t = 0: request 0 (preempted) releases 8 tokens: its 2 blocks are cached, unreferenced.
    # t = 1: it comes back with 12 tokens and hits both ((12 - 1) // 4 = 2): they are
    #   referenced again, none unreferenced; its node's LRU entry (t = 0) stays.
    # t = 2: request 1 finishes with 4 tokens: 1 block cached, unreferenced.
    # t = 3: no block free: HBM evicts 1 block. The oldest entry, request 0's node, has no
    #   unreferenced block (2 cached - 2 referenced): passed over, nothing written. Request
    #   1's block is evicted and written back: 4,000 B in 1 ms, no write skipped.
    # (Seed 622's `spare < 0` wrote request 0's 2 referenced blocks back first, 8,000 B that
    # HBM still holds, and with the link busy 2 ms skipped request 1's block.)
    dram = KVTier("cpu", 400, read_bytes_per_s=4e6, write_bytes_per_s=4e6, latency_s=0.0)
    reuse = PrefixReuse(
        fixed_batch(2, 8, 2), 4, radix=False, tiers=(dram,), kv_bytes_per_token=1000.0,
        recompute_s_per_token=1e-3, write_back=True,
    )  # fmt: skip
    reuse.release(0, 8, 0.0, finished=False)
    assert reuse.admit(0, 12, 1.0, resumed=True) == (2, 2)
    reuse.release(1, 4, 2.0, finished=True)
    reuse.settle(0, 3.0)
    assert reuse.cache.unreferenced == 0
    assert reuse.tiers is not None
    (record,) = reuse.tiers.records()
    assert (record.written_bytes, record.skipped_writes) == (4_000.0, 0)
    assert record.busy_s == pytest.approx(1e-3)
