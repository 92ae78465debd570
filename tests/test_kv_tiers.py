"""KV offload tiers: what they hold, when loading beats recomputing, and their links' traffic."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from capcliff.analysis.offload import offload_tiers, parse_offload
from capcliff.analysis.plan.reuse_advice import ReusePoint, recommended_size, reuse_flags
from capcliff.catalog.catalogs import get_hardware
from capcliff.errors import InputError
from capcliff.memory.budget import EngineName
from capcliff.sim.config import KVCapacity, SimConfig
from capcliff.sim.reuse.kv_tiers import KVTier, KVTiers
from capcliff.sim.reuse.prefix_cache import PrefixCache
from capcliff.sim.simulate import simulate
from capcliff.units import GB, GIB, TIB
from tests.simtools import toy_model
from tests.test_prefix_reuse import small_sessions

B = 16


def cpu_tiers(blocks: int, *, recompute_s_per_token: float = 1.0) -> KVTiers:
    # 1,000 bytes of KV per token: a block is 16 kB; the link moves 16 MB/s with 1 ms latency
    tier = KVTier("cpu", blocks * B, read_bytes_per_s=16e6, write_bytes_per_s=16e6, latency_s=1e-3)
    cache = PrefixCache([-1, -1], [0, 0], B)
    return KVTiers(
        (tier,), cache, kv_bytes_per_token=1000, recompute_s_per_token=recompute_s_per_token
    )


def test_a_written_prefix_is_loaded_on_a_miss_in_hbm() -> None:
    tiers = cpu_tiers(100)
    tiers.write(0, 10, now_s=0.0)
    # 10 blocks of 16 kB at 16 MB/s = 10 ms, + 1 ms latency
    reach, load_s = tiers.plan(0, 0, 30)
    assert reach == 10
    assert load_s == pytest.approx(11e-3)


def test_loading_is_skipped_when_recomputing_is_faster() -> None:
    tiers = cpu_tiers(100, recompute_s_per_token=1e-6)  # 160 tokens recompute in 0.16 ms < 11 ms
    tiers.write(0, 10, now_s=0.0)
    assert tiers.plan(0, 0, 30) == (0, 0.0)


def test_a_full_tier_evicts_its_least_recently_written_tail() -> None:
    tiers = cpu_tiers(5)
    tiers.write(0, 4, now_s=0.0)
    tiers.write(1, 4, now_s=1.0)  # needs 3 more blocks than fit: node 0 keeps 4 - 3 = 1
    assert tiers.plan(0, 0, 30)[0] == 1
    assert tiers.plan(1, 0, 30)[0] == 4


def test_a_write_is_skipped_while_the_link_is_busy() -> None:
    tiers = cpu_tiers(100)
    tiers.write(0, 10, now_s=0.0)  # busy until 11 ms
    tiers.write(1, 10, now_s=0.005)
    assert tiers.plan(1, 0, 30)[0] == 0
    assert tiers.records()[0].skipped_writes == 1


def test_a_write_waits_for_a_load_on_the_same_link() -> None:
    tiers = cpu_tiers(100)
    tiers.write(0, 10, now_s=0.0)  # busy until 11 ms
    # at 20 ms, node 0's 10 blocks load in 10 ms + 1 ms latency: the link is busy until 31 ms
    assert tiers.load(0, 0, 10, now_s=0.020) == pytest.approx(11e-3)
    tiers.write(1, 10, now_s=0.025)  # during the load: skipped
    assert tiers.plan(1, 0, 30)[0] == 0
    tiers.write(1, 10, now_s=0.032)  # after it: written
    assert tiers.plan(1, 0, 30)[0] == 10
    assert tiers.records()[0].skipped_writes == 1


def test_offload_flag_reads_tiers_in_speed_order() -> None:
    assert parse_offload("nvme:4TiB,cpu:512GiB") == {"cpu": 512 * GIB, "nvme": 4 * TIB}


@pytest.mark.parametrize("bad", ["cpu", "disk:1TiB", "cpu:1GiB,cpu:2GiB", "cpu:lots"])
def test_a_bad_offload_names_the_flag(bad: str) -> None:
    with pytest.raises(InputError, match="offload"):
        parse_offload(bad)


def test_host_tier_per_gpu_of_a_tp8_b200_replica() -> None:
    # 512 GiB per replica over 8 GPUs = 64 GiB per GPU; at 160 kB of KV per token per GPU that is
    # 68,719,476,736 / 160,000 = 429,496 tokens; the link is PCIe Gen5 x16, 128 GB/s bidir -> 64.
    (tier,) = offload_tiers(
        {"cpu": 512 * GIB}, get_hardware("b200"), gpus_per_replica=8,
        kv_bytes_per_token_per_gpu=160_000,
    )  # fmt: skip
    assert tier.tokens == 429_496
    assert tier.read_bytes_per_s == pytest.approx(64 * GB)


def test_host_offload_past_the_nodes_dram_is_refused() -> None:
    # DGX B200: 2 TB of DRAM for 8 GPUs; 4 TiB = 4.4 TB per 8-GPU replica is more
    with pytest.raises(InputError, match="host DRAM"):
        offload_tiers(
            {"cpu": 4 * TIB}, get_hardware("b200"), gpus_per_replica=8,
            kv_bytes_per_token_per_gpu=1000,
        )  # fmt: skip


@settings(max_examples=15, deadline=None)
@given(st.integers(0, 10_000), st.integers(30, 80), st.integers(0, 400), st.booleans())
def test_tier_traffic_never_exceeds_bandwidth_times_time(
    seed: int, blocks: int, tier_blocks: int, write_back: bool
) -> None:
    cpu = KVTier("cpu", tier_blocks * B, 2e8, 1e8, 1e-5)
    nvme = KVTier("nvme", 4 * tier_blocks * B, 5e7, 2e7, 1e-4)
    capacity = KVCapacity(
        blocks=blocks, block_size=B, kv_bytes_per_token=1000, tiers=(cpu, nvme),
        offload_write_back=write_back,
    )  # fmt: skip
    result = simulate(
        small_sessions(seed), toy_model(), capacity,
        SimConfig(max_num_seqs=8, max_num_batched_tokens=64, prefix_caching=True),
    )  # fmt: skip
    assert result.reuse is not None
    for spec, record in zip((cpu, nvme), result.reuse.tiers, strict=True):
        moved_s = record.read_bytes / spec.read_bytes_per_s
        moved_s += record.written_bytes / spec.write_bytes_per_s
        assert moved_s <= record.busy_s + 1e-12
        # transfers never overlap on a link, and the last one starts before the run ends
        longest = spec.latency_s + spec.tokens * 1000 / min(spec.write_bytes_per_s, 1e9)
        assert record.busy_s <= result.makespan_s + longest
        assert record.hit_tokens <= result.reuse.queried_tokens
    assert np.isfinite(result.e2e_s).all()


def test_a_small_hbm_cache_reuses_prefixes_from_host_memory() -> None:
    # The property test above is only as strong as its cases: on a 30-block pool the sessions'
    # histories are evicted from HBM, and the host tier serves some of them back.
    cpu = KVTier("cpu", 400 * B, 2e8, 1e8, 1e-5)
    capacity = KVCapacity(blocks=30, block_size=B, kv_bytes_per_token=1000, tiers=(cpu,))
    config = SimConfig(max_num_seqs=8, max_num_batched_tokens=64, prefix_caching=True)
    result = simulate(small_sessions(0), toy_model(), capacity, config)
    assert result.reuse is not None
    assert result.reuse.tiers[0].hit_tokens > 0
    assert result.reuse.evicted_blocks > 0


def test_write_back_stores_what_hbm_evicts() -> None:
    # With write-back nothing is copied when requests finish, only when HBM evicts; the host tier
    # still serves evicted histories back, and its writes are no more than write-through's.
    cpu = KVTier("cpu", 400 * B, 2e8, 1e8, 1e-5)
    config = SimConfig(max_num_seqs=8, max_num_batched_tokens=64, prefix_caching=True)
    written = []
    for back in (False, True):
        capacity = KVCapacity(
            blocks=30, block_size=B, kv_bytes_per_token=1000, tiers=(cpu,),
            offload_write_back=back,
        )  # fmt: skip
        result = simulate(small_sessions(0), toy_model(), capacity, config)
        assert result.reuse is not None
        assert result.reuse.tiers[0].hit_tokens > 0
        written.append(result.reuse.tiers[0].written_bytes)
    assert 0 < written[1] <= written[0]


def _reuse_point(label: str, size_gib: int, hbm: float, host: float, ttft: float) -> ReusePoint:
    return ReusePoint(
        label=label, offload_bytes=size_gib * GIB, prefix_cache_hit_rate=hbm,
        offload_hit_rate=host, ttft_p99_s=ttft, output_throughput_tok_s=1.0, preemptions=0,
    )  # fmt: skip


def test_the_smallest_offload_that_gets_most_of_the_gain_is_recommended() -> None:
    # hit rate gain of the best size: 0.80 - 0.40 = 0.40; 95 % of it is 0.38 -> 0.78 needed:
    # 128 GiB (0.79) is the smallest that reaches it.
    points = [
        _reuse_point("caching off", 0, 0.0, 0.0, 9.0),
        _reuse_point("caching on", 0, 0.40, 0.0, 5.0),
        _reuse_point("offload 64 GiB", 64, 0.41, 0.30, 4.0),
        _reuse_point("offload 128 GiB", 128, 0.41, 0.38, 3.0),
        _reuse_point("offload 256 GiB", 256, 0.41, 0.39, 3.0),
    ]
    assert recommended_size(points) == 128 * GIB


def test_no_offload_when_it_gains_little() -> None:
    # +3 points of hit rate and no TTFT gain: under the 5-point floor
    points = [
        _reuse_point("caching off", 0, 0.0, 0.0, 1.0),
        _reuse_point("caching on", 0, 0.80, 0.0, 1.0),
        _reuse_point("offload 64 GiB", 64, 0.80, 0.03, 1.0),
    ]
    assert recommended_size(points) == 0


def test_offload_flags_per_engine() -> None:
    # 512 GiB per replica over 8 ranks: vLLM takes the total in GiB, SGLang GB per rank
    # (549.76 GB / 8 = 68.7 GB)
    assert reuse_flags(EngineName.VLLM, 512 * GIB, 8) == [
        "--enable-prefix-caching", "--kv-offloading-backend native", "--kv-offloading-size 512",
    ]  # fmt: skip
    assert reuse_flags(EngineName.SGLANG, 512 * GIB, 8) == [
        "--enable-hierarchical-cache", "--hicache-size 69",
    ]  # fmt: skip
