"""Edges the sim mutation sample of seed 626 found untested (benchmarks/mutation.py --packages
sim --sample 40 --seed 626). Every expected value is worked out by hand in the comments."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from capcliff.errors import InputError
from capcliff.perf.attention_dp import MoEGroup
from capcliff.perf.communication import ExchangeCost
from capcliff.sim.config import KVCapacity, SimConfig
from capcliff.sim.core import core_name
from capcliff.sim.disagg.closed_loop import Round, simulate_clients
from capcliff.sim.disagg.kv_transfer import Fabric, Path
from capcliff.sim.disagg.pools import DisaggResult, Pool, simulate_disaggregated
from capcliff.sim.disagg.resume import ResumedRounds
from capcliff.sim.reuse.prefix_cache import PrefixCache
from capcliff.sim.traffic.workload import Requests
from capcliff.sim.traffic.workload_rules import check_workload_numbers
from tests.simtools import toy_model, two_decoding_and_a_long_arrival


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


def test_a_prefill_step_of_its_own_sets_the_decoders_blocks_aside_and_gives_them_back() -> None:
    # SGLang without mixed chunks (exclusive_prefill): 1-token blocks, 1,000 of them, 8 tokens a
    # step. A and B (4-token prompts, 5 out) prefill in step 0 (8 blocks); steps 1-2 each write
    # the KV of one generated token apiece (6 + 6 = 12 blocks). C (12-token prompt, 2 out)
    # arrives at 2.5 s: steps 3 and 4 run its chunks of 8 and 4 alone (20, then 24 blocks held).
    # Each of those steps sets A's and B's next block aside while it admits (SGLang's
    # PrefillAdder takes the running requests' tokens out of what it may admit first) and hands
    # the 2 blocks back, unused, as the step only prefills: they are never free twice over.
    # Step 5 writes A's and B's third generated token (7 each) and C's first (13): 27 blocks,
    # the peak; step 6 writes A's and B's fourth (8 each) with C's 13 freed at 6 s: 16. Every
    # block is free at the end.
    sim = two_decoding_and_a_long_arrival(mixed=False)
    result = sim.run()
    assert (result.steps, result.peak_used_blocks) == (7, 27)
    assert (sim.free, sim.total) == (1000, 1000)


def test_a_moe_pool_whose_replicas_step_alone_resumes_its_replicas() -> None:
    # ResumedRounds copies a replica that steps alone; only attention-DP ranks in lockstep (an
    # MoE model with lockstep_ranks > 1) are run from t = 0 each round. An MoE model with one
    # rank per instance steps alone: one client, 30 requests one after another, each round
    # settling one more, so from the second round on both pools' replica resumes (rounds 2-30,
    # 2 x 28), as a dense model's does (test_disagg_resume's long loop). Two ranks in lockstep
    # over 2 replicas: never resumed.
    n = 30
    outputs = np.full(n, 20, dtype=np.int64)
    requests = Requests(
        np.full(n, 40, dtype=np.int64), outputs, outputs,
        np.where(np.arange(n) < 1, 0.0, np.nan), np.zeros(n, dtype=np.int64),
        closed_loop=True, think_s=np.full(n, 0.2),
    )  # fmt: skip
    fabric = Fabric(Path("nvlink", 100e9, 1e-6), Path("rdma", 50e9, 5e-6), domain_gpus=8,
                    overhead_s=1e-3)  # fmt: skip
    for ranks, replicas in ((1, 1), (2, 2)):
        group = MoEGroup(
            ranks=ranks, expert_bytes=0.0, expert_choice_fraction=0.0,
            expert_flops_per_token=0.0, moe_layers=0, exchange=ExchangeCost(0.0, 0.0),
        )  # fmt: skip
        pool = Pool(
            model=dataclasses.replace(toy_model(), moe=group),
            capacity=KVCapacity(blocks=400, block_size=4),
            config=SimConfig(policy="vllm", max_num_seqs=8, max_num_batched_tokens=256),
            replicas=replicas, gpus_per_replica=4, lockstep_ranks=ranks,
        )  # fmt: skip
        rounds = ResumedRounds(requests)

        def run(
            timed: Requests, rnd: Round, pool: Pool = pool, rounds: ResumedRounds = rounds
        ) -> DisaggResult:
            return simulate_disaggregated(timed, np.full(len(timed), 1e8), prefill=pool,
                                          decode=pool, fabric=fabric,
                                          pool_runner=rounds.runner(rnd))  # fmt: skip

        simulate_clients(requests, run)
        if ranks > 1 or core_name() == "compiled":  # a compiled state is never copied
            assert rounds.resumed == 0
        else:
            assert rounds.resumed >= 2 * 28
