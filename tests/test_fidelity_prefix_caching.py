"""benchmarks/fidelity.py's prefix caching per row: vLLM V1 servers ran with prefix caching on (V1's
default unless `--no-enable-prefix-caching`), so their rows are simulated with it, which gives a
preempted request back its own cached blocks (vllm/v1/core/block_pool.py `free_blocks` keeps a
freed block's hash); other engines and vLLM V0 keep capcliff's default."""

from __future__ import annotations

import csv
from pathlib import Path
from types import ModuleType

import pytest

from tests.simtools import benchmark_module

ROOT = Path(__file__).resolve().parents[1]


def _fidelity() -> ModuleType:
    return benchmark_module("fidelity")


def _rows() -> dict[str, dict[str, str]]:
    with (ROOT / "benchmarks" / "data" / "public_serving_rows.csv").open(newline="") as f:
        return {r["row_id"]: r for r in csv.DictReader(f)}


@pytest.mark.parametrize("row", ["P206", "P210", "P213", "P219", "P223"])
def test_vllm_v1_rows_run_with_the_cache(row: str) -> None:
    assert _fidelity()._prefix_caching(_rows()[row], "vllm") == "on"


def test_a_v1_server_without_the_cache_keeps_the_default() -> None:
    r = dict(_rows()["P210"])
    r["server_flags"] += " --no-enable-prefix-caching"
    assert _fidelity()._prefix_caching(r, "vllm") is None


@pytest.mark.parametrize(("row", "engine"), [("P010", "trtllm"), ("P095", "sglang")])
def test_other_engines_keep_the_default(row: str, engine: str) -> None:
    assert _fidelity()._prefix_caching(_rows()[row], engine) is None


def test_the_p210_burst_does_not_thrash_with_the_cache() -> None:
    """P210 (gpt-oss-120b on one H100, 100 prompts of 32,000 tokens at once, a KV pool of about
    47,500 tokens: one prompt and a part of the next): with the cache a preempted prompt's
    recompute hits its own blocks, so the run gives up fewer requests than it serves; without it
    the same run recomputed them over and over (4,851 preemptions)."""
    fidelity = _fidelity()
    (row,) = [r for r in fidelity.serving_rows() if r.row_id == "P210"]
    (basis,) = fidelity.point_bases(row.dep, row.layout, [row.point])
    assert 0 < basis.variable.preemptions <= row.point.num_requests
