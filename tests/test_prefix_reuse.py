"""Prefix caching inside the replica simulation: hits, block accounting at every event, and
caching off = the simulator without it."""

from __future__ import annotations

import math
from pathlib import Path
from unittest.mock import patch

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from capcliff.errors import InputError
from capcliff.sim.config import KVCapacity, SimConfig
from capcliff.sim.loop import replica as replica_module
from capcliff.sim.loop.fast_forward import fast_forward
from capcliff.sim.loop.replica import ReplicaSim
from capcliff.sim.loop.timeline import ReplicaResult
from capcliff.sim.reuse.kv_tiers import KVTier
from capcliff.sim.simulate import make_policy, simulate
from capcliff.sim.traffic.sessions import SessionSpec, generate_sessions
from capcliff.sim.traffic.workload import Requests, Uniform
from tests.checktools import check_file
from tests.reference_reuse import ReferenceReuseSim
from tests.simtools import constant_model, toy_model


def two_turn_session(*, think_s: float = 0.0) -> Requests:
    # one session: turn 1 prompt 100, output 30; turn 2 adds 50 new tokens -> prompt 180
    return Requests(
        input_tokens=np.array([100, 180]),
        output_tokens=np.array([30, 10]),
        max_output_tokens=np.array([30, 10]),
        arrival_s=np.array([0.0, math.nan]),
        client=np.array([0, 0]),
        closed_loop=True,
        think_s=np.array([0.0, think_s]),
        content_node=np.array([0, 0]),
        content_parent=np.array([-1]),
        content_fork_tokens=np.array([0]),
    )


def test_the_second_turn_hits_the_first_turns_full_blocks() -> None:
    # Turn 1 leaves 100 + 30 - 1 = 129 tokens of KV: 129 // 16 = 8 full blocks cached.
    # Turn 2 (180 tokens) could hit (180 - 1) // 16 = 11 blocks; 8 are there: 128 tokens.
    # Queried: 100 + 180 = 280 tokens; hit 128 -> 128 / 280.
    result = simulate(
        two_turn_session(), toy_model(), KVCapacity(100, 16), SimConfig(prefix_caching=True)
    )
    assert result.reuse is not None
    assert result.reuse.prefill_tokens_saved == 128
    assert result.prefix_cache_hit_rate == pytest.approx(128 / 280)


def test_a_hit_shortens_the_prefill_step() -> None:
    # Constant 1 ms per step and a budget of 64 tokens per step: turn 2 prefills 180 tokens in
    # ceil(180 / 64) = 3 steps without the cache, and 180 - 128 = 52 tokens in one step with it.
    # Turn 2 is sent when turn 1 finishes (think 0), so its TTFT is its prefill steps.
    config = SimConfig(max_num_seqs=4, max_num_batched_tokens=64)
    off = simulate(two_turn_session(), constant_model(1e-3), KVCapacity(100, 16), config)
    on = simulate(
        two_turn_session(),
        constant_model(1e-3),
        KVCapacity(100, 16),
        SimConfig(max_num_seqs=4, max_num_batched_tokens=64, prefix_caching=True),
    )
    assert off.ttft_s[1] == pytest.approx(3e-3)
    assert on.ttft_s[1] == pytest.approx(1e-3)


def test_caching_is_refused_where_it_is_not_modelled() -> None:
    with pytest.raises(InputError, match="prefix_caching"):
        SimConfig(policy="trtllm-no-evict", prefix_caching=True)


@settings(max_examples=20, deadline=None)
@given(st.integers(0, 10_000), st.sampled_from(["vllm", "sglang"]))
def test_caching_changes_nothing_without_reuse_or_preemption(seed: int, policy: str) -> None:
    # Distinct requests that all fit at once never hit anything: same timings with caching on.
    rng = np.random.default_rng(seed)
    n = int(rng.integers(2, 30))
    prompts, outputs = rng.integers(1, 200, n), rng.integers(1, 100, n)
    requests = Requests(prompts, outputs, outputs, np.cumsum(rng.exponential(0.01, n)))
    capacity = KVCapacity(blocks=n * 20, block_size=16)
    off = simulate(requests, toy_model(), capacity, SimConfig(policy=policy))
    on = simulate(requests, toy_model(), capacity, SimConfig(policy=policy, prefix_caching=True))
    assert off.total_preemptions == 0
    assert np.array_equal(off.ttft_s, on.ttft_s)
    assert np.array_equal(off.e2e_s, on.e2e_s)
    assert on.prefix_cache_hit_rate == 0.0


def small_sessions(seed: int) -> Requests:
    spec = SessionSpec(
        mean_turns=3,
        user_input=Uniform(5, 60),
        output=Uniform(1, 40),
        prefix_tokens=int(np.random.default_rng(seed).integers(0, 50)),
        think_time_s=0.002,
        fanout_probability=0.3,
        fanout_width=2,
        max_context_tokens=400,
        max_output_tokens=64,
    )
    return generate_sessions(spec, 40, np.random.default_rng(seed), clients=4)


def check_partition(sim: ReplicaSim) -> None:
    """Blocks held by running requests past their hits + cached blocks they reference + free
    blocks (never-hashed + cached unreferenced) = the pool, between events."""
    reuse = sim.reuse
    assert reuse is not None
    size, exclusive = sim.block_size, 0
    for i in sim.running:
        decoding = i in sim.cohort
        held = -(-sim.cohort.context(i, sim.step) // size) if decoding else sim.held[i]
        exclusive += held - reuse.shared[i]
    cache = reuse.cache
    assert exclusive + cache.in_use + sim.free == sim.total
    assert 0 <= cache.unreferenced <= sim.free


def checked_fast_forward(sim: ReplicaSim) -> bool:
    check_partition(sim)
    return fast_forward(sim)


@settings(max_examples=25, deadline=None)
@given(
    st.integers(0, 10_000), st.sampled_from(["vllm", "sglang"]), st.integers(30, 120)
)  # fmt: skip
def test_cached_in_use_and_free_blocks_make_the_pool(seed: int, policy: str, blocks: int) -> None:
    requests = small_sessions(seed)
    config = SimConfig(policy=policy, max_num_seqs=8, max_num_batched_tokens=64,
                       prefix_caching=True)  # fmt: skip
    capacity = KVCapacity(blocks=max(blocks, 30), block_size=16)
    rule = make_policy(config, requests)
    with patch.object(replica_module, "fast_forward", checked_fast_forward):
        result = ReplicaSim(requests, toy_model(), capacity, config, rule).run()
    assert np.isfinite(result.finish_s).all()
    reuse = result.reuse
    assert reuse is not None
    assert reuse.hit_tokens <= reuse.queried_tokens


def test_a_fan_out_wave_is_sent_together() -> None:
    # session: turn 1, then two branches sent together once turn 1 finishes (think 0.5 s)
    requests = Requests(
        input_tokens=np.array([100, 150, 160]),
        output_tokens=np.array([10, 10, 10]),
        max_output_tokens=np.array([10, 10, 10]),
        arrival_s=np.array([0.0, math.nan, math.nan]),
        client=np.array([0, 0, 0]),
        closed_loop=True,
        think_s=np.array([0.0, 0.5, 0.5]),
        joins_previous=np.array([False, False, True]),
        content_node=np.array([0, 1, 2]),
        content_parent=np.array([-1, 0, 0]),
        content_fork_tokens=np.array([0, 109, 109]),
    )
    result = simulate(requests, constant_model(1e-3), KVCapacity(100, 16), SimConfig())
    first_end = result.e2e_s[0]  # arrival 0
    arrivals = result.e2e_s[1:] - (result.e2e_s[1:] - result.ttft_s[1:])  # = ttft
    assert first_end == pytest.approx(10e-3)
    # both branches arrive at 10 ms + 0.5 s and are prefilled in the same step
    assert arrivals[0] == pytest.approx(arrivals[1])


def _both_with_caching(
    seed: int, policy: str, blocks: int
) -> tuple[ReplicaResult, ReferenceReuseSim]:
    requests = small_sessions(seed)
    config = SimConfig(policy=policy, max_num_seqs=8, max_num_batched_tokens=64,
                       prefix_caching=True)  # fmt: skip
    capacity = KVCapacity(blocks=blocks, block_size=16)
    rule = make_policy(config, requests)
    fast = ReplicaSim(requests, toy_model(), capacity, config, rule).run()
    slow = ReferenceReuseSim(requests, toy_model(), capacity, config, rule)
    slow.run()
    return fast, slow


@pytest.mark.parametrize("policy", ["vllm", "sglang"])
@pytest.mark.parametrize("seed", range(6))
def test_event_driven_equals_block_by_block_reference_with_caching(seed: int, policy: str) -> None:
    fast, slow = _both_with_caching(seed, policy, 30 + 7 * seed)
    reqs = slow.reqs
    assert np.allclose(fast.first_token_s, [r.first_token for r in reqs], rtol=1e-9)
    assert np.allclose(fast.finish_s, [r.finish for r in reqs], rtol=1e-9)
    assert list(fast.preemptions) == [r.preemptions for r in reqs]
    assert fast.reuse is not None
    assert fast.reuse.hit_tokens == slow.hit_tokens
    assert fast.reuse.queried_tokens == slow.queried
    assert fast.reuse.evicted_blocks == slow.cache.evicted


def test_reference_cases_with_caching_hit_evict_and_preempt() -> None:
    # The comparison above is only as strong as its cases: they must hit, evict and preempt.
    hits = evictions = preemptions = 0
    for seed in range(6):
        for policy in ("vllm", "sglang"):
            fast, _ = _both_with_caching(seed, policy, 30 + 7 * seed)
            assert fast.reuse is not None
            hits += fast.reuse.hit_tokens > 0
            evictions += fast.reuse.evicted_blocks > 0
            preemptions += int(fast.preemptions.sum()) > 0
    assert hits and evictions and preemptions


def test_check_asserts_a_minimum_prefix_hit_rate(tmp_path: Path) -> None:
    # Multi-turn chat on a KV cache far larger than its working set: most of each prompt is the
    # history the previous turn left cached, so the hit rate is high; no hit rate reaches 100 %
    # (first turns miss, the last token of a prompt is always computed).
    spec = tmp_path / "capcliff.toml"
    spec.write_text(
        '[[scenario]]\nname = "chat"\nmodel = "llama-3.1-8b"\ngpu = "h100-sxm"\ngpus = 1\n'
        'layout = "tp1"\n[scenario.workload]\npreset = "multiturn-chat"\narrival = "clients"\n'
        "clients = 8\nnum_requests = 100\nconcurrency = 8\n"
        "[scenario.expect]\nprefix_hit_rate_min = 0.3\n"
    )
    report = check_file(spec)
    (result,) = report.scenarios[0].assertions
    assert result.passed
    assert 0.3 <= float(result.actual) < 1.0  # type: ignore[arg-type]


@pytest.mark.parametrize("policy", ["vllm", "sglang"])
@pytest.mark.parametrize("seed", range(4))
def test_event_driven_equals_reference_with_offload_tiers(seed: int, policy: str) -> None:
    # Write-through only: with write-back a store happens when HBM evicts, which the event-driven
    # simulator settles at the end of a run of decode steps and the reference at every step, so
    # the link-busy checks see different times (a documented approximation, in kv_tiers).
    # A host tier of 40 blocks and an NVMe tier of 200 behind a 30-block HBM cache: histories
    # are evicted, stored, loaded back (or not, when recomputing is faster), and tiers evict too
    tiers = (KVTier("cpu", 40 * 16, 2e8, 1e8, 1e-5), KVTier("nvme", 200 * 16, 5e7, 2e7, 1e-4))
    capacity = KVCapacity(
        blocks=30 + 5 * seed, block_size=16, kv_bytes_per_token=1000, tiers=tiers
    )  # fmt: skip
    requests = small_sessions(seed)
    config = SimConfig(policy=policy, max_num_seqs=8, max_num_batched_tokens=64,
                       prefix_caching=True)  # fmt: skip
    rule = make_policy(config, requests)
    fast = ReplicaSim(requests, toy_model(), capacity, config, rule).run()
    slow = ReferenceReuseSim(requests, toy_model(), capacity, config, rule)
    slow.run()
    assert np.allclose(fast.first_token_s, [r.first_token for r in slow.reqs], rtol=1e-9)
    assert np.allclose(fast.finish_s, [r.finish for r in slow.reqs], rtol=1e-9)
    assert fast.reuse is not None
    assert [t.hit_tokens for t in fast.reuse.tiers] == [t.hit_tokens for t in slow.tiers]
    assert [t.skipped_writes for t in fast.reuse.tiers] == [t.skipped for t in slow.tiers]
    assert fast.reuse.hit_tokens == slow.hit_tokens


def test_reference_cases_with_offload_load_from_both_tiers() -> None:
    # The comparison above is only as strong as its cases: both tiers must serve hits.
    served = [0, 0]
    for seed in range(4):
        tiers = (KVTier("cpu", 40 * 16, 2e8, 1e8, 1e-5), KVTier("nvme", 200 * 16, 5e7, 2e7, 1e-4))
        capacity = KVCapacity(
            blocks=30 + 5 * seed, block_size=16, kv_bytes_per_token=1000, tiers=tiers
        )  # fmt: skip
        config = SimConfig(max_num_seqs=8, max_num_batched_tokens=64, prefix_caching=True)
        result = simulate(small_sessions(seed), toy_model(), capacity, config)
        assert result.reuse is not None
        for k, tier in enumerate(result.reuse.tiers):
            served[k] += tier.hit_tokens
    assert all(served)


def _sessions(
    prompt: list[int], output: list[int], arrival: list[float], client: list[int],
    think: list[float], node: list[int],
) -> Requests:  # fmt: skip
    n = len(prompt)
    nodes = max(node) + 1
    return Requests(
        input_tokens=np.array(prompt), output_tokens=np.array(output),
        max_output_tokens=np.array(output), arrival_s=np.array(arrival),
        client=np.array(client), closed_loop=True, think_s=np.array(think),
        joins_previous=np.zeros(n, dtype=bool), content_node=np.array(node),
        content_parent=np.full(nodes, -1), content_fork_tokens=np.zeros(nodes, dtype=np.int64),
    )  # fmt: skip


def test_a_user_whose_session_ends_takes_the_next_session_of_the_pool() -> None:
    # Sessions A (user 0, 100 tokens out), B (user 1, 10 out), then C and D (10 out each), which
    # the generator lists as users 0 and 1's second sessions. At 1 ms a step, a request of 10
    # output tokens takes 10 steps (prefill + first token, then 9 decode steps). User 1 ends B at
    # 10 ms and takes C (10 -> 20 ms), then D (20 -> 30 ms); user 0 ends A at 100 ms and finds
    # the pool empty. Bound to user 0, C would have started only at 100 ms.
    nan = math.nan
    requests = _sessions(
        prompt=[20, 20, 20, 20], output=[100, 10, 10, 10], arrival=[0.0, 0.0, nan, nan],
        client=[0, 1, 0, 1], think=[0.0] * 4, node=[0, 1, 2, 3],
    )  # fmt: skip
    result = simulate(requests, constant_model(1e-3), KVCapacity(100, 16), SimConfig())
    finish = result.arrival_s + result.e2e_s
    assert finish == pytest.approx([0.100, 0.010, 0.020, 0.030])


def test_requests_finishing_in_one_step_are_evicted_in_running_order() -> None:
    # 8 blocks of 16 tokens, 1 ms a step. Y1 (request 1) arrives at 0 and is admitted in step 0;
    # X1 (request 0) arrives at 0.5 ms and is admitted in step 1. Both finish at the end of step
    # 2 (Y1: 3 tokens out, X1: 2) with 34 and 33 tokens of KV: 2 full blocks each join the cache,
    # Y1's first (it is first in the running list: vLLM's update_from_output frees in that
    # order, and free_blocks appends to the free queue's tail). Z (96 tokens, 1 out) at 0.5 s
    # needs 6 blocks of 8 free, 4 of them cached: 2 are evicted, the least recently freed, Y1's.
    # X2 and Y2 arrive 1 s after their first turns with 16 new tokens: X2 (50 tokens) hits its
    # 2 blocks, 32 tokens; Y2 (51) hits nothing. Freed in index order, X1's would have gone.
    nan = math.nan
    requests = _sessions(
        prompt=[32, 32, 96, 50, 51], output=[2, 3, 1, 2, 2], arrival=[5e-4, 0.0, 0.5, nan, nan],
        client=[0, 1, 2, 0, 1], think=[0.0, 0.0, 0.0, 1.0, 1.0], node=[0, 1, 2, 0, 1],
    )  # fmt: skip
    config = SimConfig(prefix_caching=True)
    rule = make_policy(config, requests)
    result = ReplicaSim(requests, constant_model(1e-3), KVCapacity(8, 16), config, rule).run()
    assert result.finish_s[:2] == pytest.approx([0.003, 0.003])
    reuse = result.reuse
    assert reuse is not None
    looked_up = dict(zip(reuse.lookup_queried.tolist(), reuse.lookup_hit.tolist(), strict=True))
    assert looked_up[50] == 32  # X2
    assert looked_up[51] == 0  # Y2
    assert reuse.evicted_blocks >= 2
