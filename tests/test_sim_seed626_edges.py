"""Edges the sim mutation sample of seed 626 found untested (benchmarks/mutation.py --packages
sim --sample 40 --seed 626). Every expected value is worked out by hand in the comments."""

from __future__ import annotations

import pytest

from capcliff.errors import InputError
from capcliff.sim.reuse.prefix_cache import PrefixCache
from capcliff.sim.traffic.workload_rules import check_workload_numbers


def test_a_cached_prefix_frees_only_the_blocks_no_running_request_still_reads() -> None:
    # One content node (a root, from token 0), blocks of 16 tokens. A first request publishes
    # 8 blocks, then three requests hit 2, 5 and 8 of them: each block is referenced by the
    # requests whose hit covers it, so blocks 0-1 by three, 2-4 by two, 5-7 by one.
    cache = PrefixCache([-1], [0], 16)
    cache.acquire(0, 0)
    assert cache.release(0, 0, 8, 0.0) == 0
    assert (cache.unreferenced, cache.in_use) == (8, 0)
    assert [cache.acquire(0, hit) for hit in (2, 5, 8)] == [2, 3, 3]
    assert (cache.unreferenced, cache.in_use) == (0, 8)
    # the 8-block request ends: blocks 5-7 were read by it alone and are free (still cached);
    # blocks 0-4 are still read by the 5-block request
    assert cache.release(0, 8, 8, 1.0) == 3
    assert (cache.unreferenced, cache.in_use) == (3, 5)
    # a new 200-token prompt hits (200 - 1) // 16 = 12 blocks at most, 8 cached: all 8 hit, and
    # 3 of them (5-7) are taken back out of the free count
    assert cache.lookup_revivable(0, 200) == (8, 3)
    # then the 5-block request ends (blocks 2-4 free) and the 2-block one (blocks 0-1)
    assert cache.release(0, 5, 5, 2.0) == 3
    assert cache.release(0, 2, 2, 3.0) == 2
    assert (cache.unreferenced, cache.in_use) == (8, 0)


def test_the_lowest_rate_taken_is_one_request_in_ten_thousand_seconds() -> None:
    # MIN_RATE: 1e-4 requests/s, one request in 10,000 s (2.8 hours), is taken; anything under
    # it is refused by name
    check_workload_numbers(rate=1e-4)
    with pytest.raises(InputError, match=r"^rate: 9\.9e-05 requests/s is under 0\.0001 "):
        check_workload_numbers(rate=9.9e-5)
