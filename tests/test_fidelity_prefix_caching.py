"""benchmarks/fidelity.py's vLLM V1 rows under capcliff's default: V1's prefix cache (on by default)
gives a preempted request back its own cached blocks (vllm/v1/core/block_pool.py `free_blocks`
keeps a freed block's hash; `capcliff.sim.reuse.retained_kv`)."""

from __future__ import annotations

from pathlib import Path
from types import ModuleType

from tests.simtools import benchmark_module

ROOT = Path(__file__).resolve().parents[1]


def _fidelity() -> ModuleType:
    return benchmark_module("fidelity")


def test_the_p210_burst_does_not_thrash_with_the_cache() -> None:
    """P210 (gpt-oss-120b on one H100, 100 prompts of 32,000 tokens at once, a KV pool of about
    47,500 tokens: one prompt and a part of the next), as the harness runs it, with no prefix
    caching setting (V1's default): with the cache a preempted prompt's
    recompute hits its own blocks, so the run gives up fewer requests than it serves; without it
    the same run recomputed them over and over (4,851 preemptions)."""
    fidelity = _fidelity()
    (row,) = [r for r in fidelity.serving_rows() if r.row_id == "P210"]
    (basis,) = fidelity.point_bases(row.dep, row.layout, [row.point])
    assert 0 < basis.variable.preemptions <= row.point.num_requests
