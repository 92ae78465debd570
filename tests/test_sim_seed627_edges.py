"""Edges the sim mutation sample of seed 627 found untested (benchmarks/mutation.py --packages
sim --sample 40 --seed 627). Every expected value is worked out by hand in the comments."""

from __future__ import annotations

from tests.test_kv_tiers import cpu_tiers


def test_a_write_larger_than_the_whole_tier_is_skipped_not_squeezed_in() -> None:
    # A 5-block host tier: 8 blocks of node 0 cannot fit even with every other node evicted
    # (nothing else is held), so the write is skipped: nothing held, nothing written, one skip.
    tiers = cpu_tiers(5)
    tiers.write(0, 8, now_s=0.0)
    assert tiers.plan(0, 0, 30) == (0, 0.0)
    (record,) = tiers.records()
    assert (record.written_bytes, record.skipped_writes) == (0.0, 1)
    # Node 0's 4 blocks, then the same node grown to 7: its 4 held blocks stay (a write never
    # evicts its own node), and 4 + 3 new = 7 > 5, so this write is skipped too; node 0 still
    # loads its 4 blocks (4 x 16 kB at 16 MB/s = 4 ms, + 1 ms latency).
    tiers = cpu_tiers(5)
    tiers.write(0, 4, now_s=0.0)
    tiers.write(0, 7, now_s=1.0)
    reach, load_s = tiers.plan(0, 0, 30)
    assert (reach, round(load_s, 9)) == (4, 5e-3)
    assert tiers.records()[0].skipped_writes == 1
