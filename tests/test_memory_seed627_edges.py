"""Edges the memory mutation sample of seed 627 found untested (benchmarks/mutation.py --packages
memory --sample 40 --seed 627). Every expected value is worked out by hand in the comments."""

from __future__ import annotations

from capcliff.memory.engines import _sglang_tier


def test_sglangs_35_gib_tier_bound_on_both_sides() -> None:
    # python/sglang/srt/server_args.py (late 2025): `elif gpu_mem < 35 * 1024` -> chunked prefill
    # 2048, cuda_graph_max_bs 24 below TP 4; `elif gpu_mem < 60 * 1024` -> 4096 and 32. 34.5 GiB
    # (35,328 MiB) is below 35 GiB: the first; 35 GiB itself (35,840 MiB) is not: the second.
    assert _sglang_tier(34.5 * 1024, 1) == (2048, 24)
    assert _sglang_tier(35 * 1024, 1) == (4096, 32)
