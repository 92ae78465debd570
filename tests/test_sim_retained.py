"""vLLM V1's default prefix cache on a workload that shares nothing: a preempted request's
recompute skips its blocks not yet reused (`capcliff.sim.reuse.retained_kv`)."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from capcliff.errors import InputError
from capcliff.sim.config import KVCapacity, PreemptionMode, SimConfig, resolved_prefix_caching
from capcliff.sim.result import SimResult
from capcliff.sim.reuse.retained_kv import RetainedKV
from capcliff.sim.simulate import simulate
from capcliff.sim.traffic.workload import Requests
from tests.simtools import constant_model, fixed_batch, pressure_case, toy_model


def test_a_preempted_request_hits_all_its_full_blocks_when_nothing_was_reused() -> None:
    # 18 tokens of KV in blocks of 4: 18 // 4 = 4 full blocks; a prefill of 19 may hit
    # (19 - 1) // 4 = 4 of them.
    kv = RetainedKV(4)
    kv.preempted(7, 18, free=10)
    assert kv.hit_blocks(7, 19, free=10) == 4


def test_the_hit_leaves_the_last_token_to_compute() -> None:
    # 16 tokens: 4 full blocks cached, but a prefill of 16 hits at most (16 - 1) // 4 = 3.
    kv = RetainedKV(4)
    kv.preempted(0, 16, free=10)
    assert kv.hit_blocks(0, 16, free=10) == 3


def test_allocations_evict_the_request_freed_first() -> None:
    # Request 1 frees 2 full blocks, then request 2 frees 3: 5 cached. With 3 blocks free the 2
    # oldest are gone: all of request 1's, none of request 2's.
    kv = RetainedKV(4)
    kv.preempted(1, 8, free=10)
    kv.preempted(2, 12, free=10)
    assert kv.hit_blocks(1, 9, free=3) == 0
    assert kv.hit_blocks(2, 13, free=3) == 3


def test_blocks_freed_later_are_evicted_after_the_request() -> None:
    # Request 7's 4 blocks, then a finish's 2 (8 // 4): 6 cached. With 5 free, one is evicted,
    # from the head: request 7's last block (its tail goes first), so 3 remain.
    kv = RetainedKV(4)
    kv.preempted(7, 18, free=10)
    kv.finished(8, free=10)
    assert kv.hit_blocks(7, 19, free=5) == 3


def test_blocks_a_hit_took_are_not_evicted_for_others() -> None:
    # Request 1 (2 blocks) then request 2 (3 blocks). Request 2 is admitted with 5 free and takes
    # its 3: 2 cached (request 1's). 1 free after that allocation: one of request 1's goes.
    kv = RetainedKV(4)
    kv.preempted(1, 8, free=10)
    kv.preempted(2, 12, free=10)
    kv.take(2, kv.hit_blocks(2, 13, free=5), free=5)
    assert kv.hit_blocks(1, 9, free=1) == 1


def test_the_resumed_request_recomputes_exactly_its_evicted_tokens() -> None:
    # Blocks of 4 tokens, 6 blocks; two requests of 8-token prompts and 10 output tokens, 1 ms
    # per step. Step 0 prefills both (2 + 2 blocks); step 1 writes token 1's KV (9 tokens: a
    # 3rd block each, 0 free). After step 4 each holds 8 + 4 = 12 tokens; step 5 needs a 4th
    # block each: B (the later admission) is preempted with 12 tokens, 3 full blocks cached and
    # free. A allocates one block in step 5 and one in step 9 (17 tokens), both taken from the
    # head of the free queue: B's last two blocks. A finishes in step 9 (10 tokens generated);
    # B is admitted again with 1 block of 4 tokens still cached: it recomputes 12 - 4 = 8
    # tokens, the 2 evicted blocks. Without the cache it recomputes all 12.
    requests = fixed_batch(2, 8, 10)
    capacity = KVCapacity(6, 4)
    keeps = simulate(requests, constant_model(1e-3), capacity, SimConfig(keeps_preempted_kv=True))
    drops = simulate(requests, constant_model(1e-3), capacity, SimConfig())
    assert list(keeps.preemptions) == [0, 1]
    assert list(keeps.recomputed_tokens) == [0, 8]
    assert list(drops.recomputed_tokens) == [0, 12]


def test_the_engine_default_keeps_preempted_kv_for_vllm_v1_only() -> None:
    v1 = resolved_prefix_caching(SimConfig(prefix_caching=None), shares_content=False)
    v0 = resolved_prefix_caching(
        SimConfig(policy="vllm-v0", prefix_caching=None), shares_content=False
    )
    swap = resolved_prefix_caching(
        SimConfig(prefix_caching=None, preemption=PreemptionMode.SWAP), shares_content=False
    )
    shared = resolved_prefix_caching(SimConfig(prefix_caching=None), shares_content=True)
    assert (v1.prefix_caching, v1.keeps_preempted_kv) == (False, True)
    assert not v0.keeps_preempted_kv and not swap.keeps_preempted_kv
    assert (shared.prefix_caching, shared.keeps_preempted_kv) == (True, False)


def test_keeping_preempted_kv_is_refused_for_sglang() -> None:
    with pytest.raises(InputError, match="keeps_preempted_kv: modelled for vllm"):
        SimConfig(policy="sglang", keeps_preempted_kv=True)


def _pressure_run(seed: int, policy: str, **cache: bool) -> tuple[Requests, SimResult]:
    """`pressure_case(seed, policy)` under recompute, with `cache` set in its SimConfig."""
    requests, capacity, config, _ = pressure_case(seed, policy, PreemptionMode.RECOMPUTE)
    return requests, simulate(requests, toy_model(), capacity, dataclasses.replace(config, **cache))


V1 = st.sampled_from(["vllm", "vllm-first-chunk"])


@settings(max_examples=25, deadline=None)
@given(st.integers(0, 10_000), V1)
def test_the_same_runs_as_the_general_prefix_cache(seed: int, policy: str) -> None:
    # Two implementations of one model: the general cache (content nodes, an LRU heap, no fast
    # paths) and the queue of released blocks (with the fast paths). The general one counts a
    # preempted request's whole context as recomputed and its resumed hits apart.
    _, general = _pressure_run(seed, policy, prefix_caching=True)
    _, kept = _pressure_run(seed, policy, keeps_preempted_kv=True)
    assert general.reuse is not None
    assert np.array_equal(kept.ttft_s, general.ttft_s)
    assert np.array_equal(kept.e2e_s, general.e2e_s)
    assert np.array_equal(kept.preemptions, general.preemptions)
    resumed_hits = general.reuse.resumed_hit_tokens
    assert kept.total_recomputed_tokens == general.total_recomputed_tokens - resumed_hits


@settings(max_examples=25, deadline=None)
@given(st.integers(0, 10_000), V1)
def test_kv_stays_within_capacity_and_every_token_is_generated(seed: int, policy: str) -> None:
    requests, kept = _pressure_run(seed, policy, keeps_preempted_kv=True)
    assert kept.peak_kv_utilization <= 1.0
    assert np.isfinite(kept.e2e_s).all()  # every request finished
    assert np.array_equal(kept.output_tokens, requests.output_tokens)
    # what it recomputes is at most what it held when preempted: prompt + output - 1 each time
    held_most = (requests.input_tokens + requests.output_tokens - 1) * kept.preemptions
    assert ((kept.recomputed_tokens >= 0) & (kept.recomputed_tokens <= held_most)).all()
