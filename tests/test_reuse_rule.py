"""The offload recommendation rule and flags (capcliff/analysis/reuse_advice.py), on points
written by hand: the rule's thresholds are MIN_HIT_GAIN 0.05, HIT_GAIN_SHARE 0.95 and
OFFLOAD_TOLERANCE 0.10 (named assumptions in its docstring)."""

from __future__ import annotations

from capcliff.analysis.plan.reuse_advice import ReusePoint, recommended_size, reuse_flags
from capcliff.memory.budget import EngineName
from capcliff.units import GIB


def _p(offload_gib: int, hbm: float, offload: float, ttft: float) -> ReusePoint:
    label = f"offload {offload_gib} GiB" if offload_gib else "caching on"
    return ReusePoint(
        label=label, offload_bytes=offload_gib * GIB, prefix_cache_hit_rate=hbm,
        offload_hit_rate=offload, ttft_p99_s=ttft, output_throughput_tok_s=1.0, preemptions=0,
    )  # fmt: skip


BASE = _p(0, 0.40, 0.0, 1.0)


def test_no_offload_size_means_no_recommendation() -> None:
    assert recommended_size([BASE]) == 0


def test_a_gain_under_five_points_without_a_ttft_cut_is_not_worth_it() -> None:
    # Best total 0.44: +0.04 < 0.05; best TTFT 0.95 >= 1.0 x 0.9.
    assert recommended_size([BASE, _p(64, 0.40, 0.04, 0.95)]) == 0


def test_a_gain_of_exactly_five_points_is_worth_it() -> None:
    # From a 0.0 hit rate to 0.05 the gain is the float 0.05 itself: not < 0.05.
    base = _p(0, 0.0, 0.0, 1.0)
    assert recommended_size([base, _p(64, 0.0, 0.05, 1.0)]) == 64 * GIB


def test_a_ttft_cut_alone_is_worth_it() -> None:
    # No hit gain, but TTFT p99 0.5 < 1.0 x 0.9.
    assert recommended_size([BASE, _p(64, 0.40, 0.0, 0.5)]) == 64 * GIB


def test_the_smallest_size_with_95_percent_of_the_gain_wins() -> None:
    # Gains over 0.40: 64 GiB +0.10 (50 % of 0.20), 128 GiB +0.19 (95 %), 256 GiB +0.20.
    # TTFT all within 10 % of the best 0.60 (0.60 x 1.1 = 0.66). 128 GiB is the smallest at 95 %.
    points = [BASE, _p(64, 0.40, 0.10, 0.65), _p(128, 0.40, 0.19, 0.62), _p(256, 0.40, 0.20, 0.60)]
    assert recommended_size(points) == 128 * GIB


def test_a_size_slower_than_ten_percent_over_the_best_ttft_is_passed_over() -> None:
    # 64 GiB reaches the whole gain but its TTFT 0.70 > 0.60 x 1.1 = 0.66; 128 GiB is taken.
    points = [BASE, _p(64, 0.40, 0.20, 0.70), _p(128, 0.40, 0.20, 0.60)]
    assert recommended_size(points) == 128 * GIB


def test_sglang_hicache_size_is_per_rank_in_gb() -> None:
    # 128 GiB = 137.4 GB over 4 ranks = 34.4 GB per rank, printed as 34.
    flags = reuse_flags(EngineName.SGLANG, 128 * GIB, 4)
    assert flags == ["--enable-hierarchical-cache", "--hicache-size 34"]


def test_vllm_offload_size_is_the_replica_total_in_gib() -> None:
    assert reuse_flags(EngineName.VLLM, 128 * GIB, 4) == [
        "--enable-prefix-caching", "--kv-offloading-backend native", "--kv-offloading-size 128",
    ]  # fmt: skip


def test_sglang_needs_no_flag_for_caching_alone() -> None:
    assert reuse_flags(EngineName.SGLANG, 0, 4) == []
