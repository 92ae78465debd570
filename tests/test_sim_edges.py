"""Edges of the simulator's top-level modules (config, core, policies, result, simulate), each
value worked out by hand in the comment beside it: bounds at exactly their limit and just past it,
block counts on tiny cases, and the aggregates of a two-replica run with constant steps."""

from __future__ import annotations

import hashlib
import math
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pytest

from capcliff.catalog.catalogs import get_hardware
from capcliff.catalog.layout import Layout
from capcliff.errors import InputError
from capcliff.memory.budget import BudgetSettings
from capcliff.memory.layout_memory import layout_memory
from capcliff.memory.weights import WeightScheme
from capcliff.sim import core
from capcliff.sim.config import KVCapacity, SimConfig, resolved_prefix_caching
from capcliff.sim.core import CORE_MODULES, load_compiled, source_digest
from capcliff.sim.policies import (
    Candidate,
    NewTokenRatio,
    RunningState,
    kv_aware_admit,
    projected_peak_blocks,
    sequence_blocks,
    sglang_admit,
)
from capcliff.sim.result import Percentiles, _latencies
from capcliff.sim.simulate import _least_loaded, _sent_later, check_fits, simulate
from capcliff.sim.traffic.workload import Requests
from capcliff.units import GIB, KVDType
from tests.conftest import arch_of
from tests.reference_sglang import future_tokens_of, sglang_first_admissible_step
from tests.simtools import constant_model, fixed_batch

# --- config --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "kwargs, field_name",
    [
        ({"max_num_seqs": 0}, "max_num_seqs"),
        ({"engine_max_num_seqs": 0}, "engine_max_num_seqs"),
        ({"max_num_seqs": 4, "max_num_batched_tokens": 3}, "max_num_batched_tokens"),
        ({"kv_margin": 1.0}, "kv_margin"),
        ({"kv_margin": -0.01}, "kv_margin"),
        ({"policy": "vllm-v0", "prefix_caching": True}, "prefix_caching"),
        ({"policy": "vllm", "chunked_prefill": False}, "chunked_prefill"),
        ({"request_overhead_s": 60.001}, "request_overhead_s"),
        ({"request_overhead_s": -0.001}, "request_overhead_s"),
        ({"request_overhead_s": math.inf}, "request_overhead_s"),
        ({"request_overhead_s": math.nan}, "request_overhead_s"),
        ({"output_quantile": 0.0}, "output_quantile"),
        ({"output_quantile": 1.01}, "output_quantile"),
    ],
)
def test_sim_config_refuses_each_setting_just_past_its_bound(
    kwargs: dict[str, object], field_name: str
) -> None:
    with pytest.raises(InputError, match=field_name):
        SimConfig(**kwargs)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "kwargs",
    [
        {"max_num_seqs": 1, "max_num_batched_tokens": 1},
        {"max_num_seqs": 4, "max_num_batched_tokens": 4},  # vLLM accepts tokens == seqs
        {"engine_max_num_seqs": 1},
        {"kv_margin": 0.0},
        {"policy": "vllm-v0", "chunked_prefill": False},
        {"policy": "sglang", "prefix_caching": True},
        {"request_overhead_s": 60.0},
        {"request_overhead_s": 0.0},
        {"output_quantile": 1.0},
        {"output_quantile": 0.5},
    ],
)
def test_sim_config_accepts_each_setting_exactly_at_its_bound(kwargs: dict[str, object]) -> None:
    SimConfig(**kwargs)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "policy, shares, on",
    [
        ("vllm", True, True),
        ("sglang", True, True),
        ("vllm", False, False),  # nothing shared: caching stays off
        ("vllm-v0", True, False),  # V0's prefix cache is not modelled
        ("kv-aware", True, False),
    ],
)
def test_default_prefix_caching_is_on_only_for_shared_content_on_vllm_or_sglang(
    policy: str, shares: bool, on: bool
) -> None:
    config = SimConfig(policy=policy, prefix_caching=None)
    assert resolved_prefix_caching(config, shares_content=shares).prefix_caching is on


def test_an_explicit_prefix_caching_setting_is_kept() -> None:
    config = SimConfig(policy="vllm", prefix_caching=False)
    assert resolved_prefix_caching(config, shares_content=True).prefix_caching is False


def test_kv_capacity_bounds_tokens_and_swap_time() -> None:
    with pytest.raises(InputError, match="KV cache"):
        KVCapacity(blocks=0, block_size=16)
    with pytest.raises(InputError, match="KV cache"):
        KVCapacity(blocks=1, block_size=0)
    one = KVCapacity(blocks=1, block_size=1)
    assert one.tokens == 1
    assert one.swap_seconds(0) == 0.0  # nothing to move: no link needed
    with pytest.raises(InputError, match="host link"):
        one.swap_seconds(1)
    # 100 tokens x 1,000 B at 1 GB/s one way = 100 us
    link = KVCapacity(10, 16, kv_bytes_per_token=1000, host_link_bytes_per_s=1e9)
    assert link.tokens == 160
    assert link.swap_seconds(100) == pytest.approx(1e-4)


def test_capacity_of_a_layout_takes_its_blocks_and_a_host_pool_of_swap_space_tokens() -> None:
    # llama-3.1-8b on one H200 with vLLM's reserves pinned: 56,254 blocks of 16 tokens
    # (tests/test_memory.py works the blocks out); KV per token = 32 layers x 2 (K, V) x 8 KV
    # heads x 128 x 2 B = 131,072 B. The H200's host link is PCIe Gen5 x16, 128 GB/s both ways,
    # 64 GB/s one way. A 4 GiB swap space holds 4 x 2^30 / 2^17 = 32,768 tokens; 1 GiB 8,192.
    arch = arch_of("llama-3.1-8b")
    hardware = get_hardware("h200-sxm")
    pinned = {"activation_peak": GIB, "non_torch": GIB // 2}
    memory = layout_memory(
        arch, hardware, Layout(), scheme=WeightScheme.as_shipped(arch), kv_dtype=KVDType.BF16,
        max_model_len=32_768, settings=BudgetSettings(enforce_eager=True, term_overrides=pinned),
    )  # fmt: skip
    capacity = KVCapacity.of_layout(memory, hardware)
    assert capacity.blocks == 56_254
    assert capacity.block_size == 16
    assert capacity.kv_bytes_per_token == 131_072
    assert capacity.host_link_bytes_per_s == pytest.approx(64e9)
    assert capacity.host_kv_tokens == 32_768
    assert KVCapacity.of_layout(memory, hardware, swap_space_bytes=GIB).host_kv_tokens == 8_192
    assert KVCapacity.of_layout(memory, hardware, swap_space_bytes=0).host_kv_tokens == 0


# --- core: which event loop runs -------------------------------------------------------------


def test_source_digest_hashes_each_path_and_its_bytes_in_path_order(tmp_path: Path) -> None:
    (tmp_path / "sub").mkdir()
    (tmp_path / "sim" / "_core").mkdir(parents=True)
    (tmp_path / "b.py").write_bytes(b"x = 1\n")
    (tmp_path / "sub" / "a.py").write_bytes(b"y = 2\n")
    (tmp_path / "sim" / "_core" / "c.py").write_bytes(b"left out\n")  # the compiled copies
    (tmp_path / "notes.txt").write_bytes(b"not a source\n")
    # sorted relative paths: "b.py" < "sub/a.py"; each hashed as path, NUL, bytes
    expected = hashlib.sha256(b"b.py\0x = 1\nsub/a.py\0y = 2\n").hexdigest()
    assert source_digest(tmp_path) == expected


@pytest.fixture
def fake_core(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """An importable package `capcliff_fake_core` holding every core module, each stamped with
    digest "built-from-A"; removed from sys.modules afterwards."""
    package = tmp_path / "capcliff_fake_core"
    package.mkdir()
    (package / "__init__.py").write_text("")
    for name in CORE_MODULES:
        (package / f"{name}.py").write_text('SOURCE_SHA256 = "built-from-A"\n')
    monkeypatch.syspath_prepend(str(tmp_path))
    yield package
    for name in [m for m in sys.modules if m.startswith("capcliff_fake_core")]:
        del sys.modules[name]


def test_a_compiled_core_loads_only_when_built_from_the_current_sources(fake_core: Path) -> None:
    current = load_compiled("capcliff_fake_core", digest="built-from-A")
    assert current is not None and current.__name__ == "capcliff_fake_core.replica"
    assert load_compiled("capcliff_fake_core", digest="built-from-B") is None  # stale
    assert load_compiled("capcliff_no_such_core", digest="built-from-A") is None  # not built


def test_the_environment_switch_forces_the_python_loop(monkeypatch: pytest.MonkeyPatch) -> None:
    # As if a current compiled copy were installed: it runs unless CAPCLIFF_SIM_CORE=python.
    monkeypatch.setattr(core, "_built", lambda: sys)
    monkeypatch.delenv(core.ENV_SWITCH, raising=False)
    assert core.core_name() == "compiled"
    monkeypatch.setenv(core.ENV_SWITCH, "Python")  # read case-blind
    assert core.core_name() == "python"


# --- policies --------------------------------------------------------------------------------


def _running(*rows: tuple[int, int, int, int, bool]) -> RunningState:
    """(prompt, generated, output, max_output, prefilling) per running request."""
    cols = list(zip(*rows, strict=True)) if rows else [()] * 5
    ints = [np.array(c, dtype=np.int64) for c in cols[:4]]
    return RunningState(*ints, np.array(cols[4], dtype=bool))


@dataclass
class View:
    """A replica as an admission rule sees it."""

    free_blocks: int
    total_blocks: int
    block_size: int
    new_token_ratio: float = 0.0
    running: RunningState = field(default_factory=_running)

    def full_length_blocks(self) -> int:
        return 0

    def running_state(self) -> RunningState:
        return self.running

    def future_tokens(self, clip: int) -> int:
        return future_tokens_of(self.running_state(), clip)


def _cand(
    prompt: int, generated: int, output: int, max_output: int, chunk: int, blocks_now: int,
    *, cached: int = 0,
) -> Candidate:  # fmt: skip
    return Candidate(prompt, generated, output, max_output, 0, chunk, blocks_now, cached)


def test_sequence_blocks_of_a_recomputed_request_cover_prompt_and_generated() -> None:
    # Prompt 10 + 6 generated = 16 tokens = 4 blocks of 4; a first chunk of 8 allocates 2 now,
    # the other 2 later: 2 + 4 - ceil(8 / 4) = 4.
    assert sequence_blocks(_cand(10, 6, 20, 20, chunk=8, blocks_now=2), 4) == 4
    # 4 cached tokens (one block a running request holds): 2 + 4 - ceil((4 + 8) / 4) = 3 new.
    assert sequence_blocks(_cand(10, 6, 20, 20, chunk=8, blocks_now=2, cached=4), 4) == 3


def test_prefill_tokens_of_a_fresh_a_recomputed_and_a_swapped_in_request() -> None:
    assert _cand(10, 0, 8, 8, chunk=10, blocks_now=3).prefill_tokens == 10
    # prompt 10 + 5 generated, 4 of them cached: 11 tokens to compute
    assert _cand(10, 5, 8, 8, chunk=11, blocks_now=3, cached=4).prefill_tokens == 11
    # its 15 tokens of KV come back from the host: nothing to compute
    swapped = Candidate(10, 5, 8, 8, kv_tokens=15, chunk_tokens=0, blocks_now=4)
    assert swapped.prefill_tokens == 0


def test_sglang_counts_a_recomputed_candidate_s_remaining_output_only() -> None:
    # Nothing running or admitted, blocks of 1 token. Prompt 10 with 5 tokens generated before a
    # retraction re-prefills 15 tokens and may still add min(40 - 5, 4096) = 35: it needs 50.
    # SGLang admits when need < free tokens - reserve: 50 < 51, not 50 < 50.
    cand = _cand(10, 5, 30, 40, chunk=15, blocks_now=15)
    assert sglang_admit(View(free_blocks=51, total_blocks=100, block_size=1), cand, [])
    assert not sglang_admit(View(free_blocks=50, total_blocks=100, block_size=1), cand, [])


def test_sglang_reserves_for_running_and_just_admitted_requests() -> None:
    # Running: max_new 100, 20 generated -> 80 future tokens x ratio 0.5 = 40 reserved.
    # Admitted this step: input 20 + min(30, 4096) = 50 more (its 20 blocks, already taken from
    # the free 80, count as free tokens again): free tokens 100, reserve 90, 10 left.
    # A candidate of input 5 + max_new 4 = 9 < 10 fits; 5 + 5 = 10 does not.
    running = _running((50, 20, 100, 100, False))
    view = View(free_blocks=80, total_blocks=200, block_size=1, new_token_ratio=0.5,
                running=running)  # fmt: skip
    admitted = [_cand(20, 0, 30, 30, chunk=20, blocks_now=20)]
    assert sglang_admit(view, _cand(5, 0, 4, 4, chunk=5, blocks_now=5), admitted)
    assert not sglang_admit(view, _cand(5, 0, 5, 5, chunk=5, blocks_now=5), admitted)


def test_projected_peak_blocks_by_hand() -> None:
    # One request of 10 tokens with 3 steps left holds 13 tokens at its last step; the bound is
    # (13 + 4 - 1) / 4 = 4 blocks (ceil(13 / 4) = 4).
    assert projected_peak_blocks(np.array([10]), np.array([3]), 4) == pytest.approx(4.0)
    # Add one of 20 tokens with 1 step left: at step 0 both are alive, holding 11 and 21 tokens:
    # (11 + 3 + 21 + 3) / 4 = 9.5, above the single request's later 4.
    peak = projected_peak_blocks(np.array([10, 20]), np.array([3, 1]), 4)
    assert peak == pytest.approx(9.5)
    assert projected_peak_blocks(np.array([], dtype=np.int64), np.array([], dtype=np.int64), 4) == 0


@pytest.mark.parametrize("chunk", [10, 4])  # the whole prompt this step; or a prefill that spans
def test_kv_aware_admits_a_request_that_exactly_fills_the_cache(chunk: int) -> None:
    # Prompt 10, output 8 (oracle): at its last step it holds 10 + 8 - 1 = 17 tokens, ceil(17/4)
    # = 5 blocks of 4. Decoding from 9 tokens of context, the bound is (9 + 8 + 3) / 4 = 5; a
    # prefill spanning steps is counted at its final ceil(17 / 4) = 5 throughout. 5 blocks admit
    # it (margin 0), 4 do not.
    cand = _cand(10, 0, 8, 8, chunk=chunk, blocks_now=-(-chunk // 4))
    assert kv_aware_admit(View(5, 5, 4), cand, [], margin=0.0)
    assert not kv_aware_admit(View(4, 4, 4), cand, [], margin=0.0)


def test_new_token_ratio_after_a_retraction() -> None:
    ratio = NewTokenRatio()
    # (30 generated + 20 steps x 2 running) / 200 max_new = 0.35
    assert ratio.after_retraction(30, 200, 2) == pytest.approx(0.35)
    # nothing running: 0 / 1 = 0; a sum of max_new of 0 restarts from init (0.7)
    assert ratio.after_retraction(0, 1, 0) == 0.0
    assert ratio.after_retraction(0, 0, 0) == pytest.approx(0.7)
    assert ratio.after_retraction(500, 100, 1) == 1.0  # capped at 1


def test_sglang_first_admissible_step_by_hand() -> None:
    # One running request with 10 future tokens (below the 4,096 clip): at step j it reserves
    # ratio x (10 - j) = 0.5 x (10 - j) tokens; 20 free blocks of 1 token. A candidate needing
    # 15 tokens fits when 15 < 20 - 0.5 x (10 - j): not at j = 0 (15 < 15), at j = 1 (15.5).
    steps = dict(block_size=1, ratios=np.full(3, 0.5), future_tokens=np.array([10]))
    free = np.array([20, 20, 20])
    assert sglang_first_admissible_step(
        need_tokens=15, blocks_now=1, free_blocks_after=free, **steps
    ) == 1  # fmt: skip
    # The arrays starting at step 7: 19 < 20 - 0.5 x (10 - j) first at j = 9 (19.5), not 8 (19).
    assert sglang_first_admissible_step(
        need_tokens=19, blocks_now=1, free_blocks_after=free, first=7, **steps
    ) == 9  # fmt: skip
    # Enough tokens from step 0, but its 20 blocks are free only from step 1 (19, 20, 20).
    assert sglang_first_admissible_step(
        need_tokens=1, blocks_now=20, free_blocks_after=np.array([19, 20, 20]), **steps
    ) == 1  # fmt: skip
    # 21 blocks are never free in these steps
    assert sglang_first_admissible_step(
        need_tokens=1, blocks_now=21, free_blocks_after=free, **steps
    ) is None  # fmt: skip


# --- result ----------------------------------------------------------------------------------


def test_percentiles_of_0_to_100() -> None:
    # 101 evenly spaced values: the q-th percentile is q itself; the mean 50. NaN left out.
    p = Percentiles.of(np.append(np.arange(101.0), np.nan))
    assert (p.p50, p.p90, p.p99, p.mean) == (50.0, 90.0, 99.0, 50.0)


def test_latencies_by_hand() -> None:
    # Outputs 1, 2, 5 tokens; arrival, first token, finish:
    #   0, 0.5, 0.5 -> TTFT 0.5, TPOT NaN (one token), E2E 0.5
    #   0, 1.0, 1.5 -> TTFT 1.0, TPOT 0.5 / 1 = 0.5, E2E 1.5
    #   1, 2.0, 4.0 -> TTFT 1.0, TPOT 2.0 / 4 = 0.5, E2E 3.0
    cols = {
        "output_tokens": np.array([1.0, 2.0, 5.0]),
        "arrival_s": np.array([0.0, 0.0, 1.0]),
        "first_token_s": np.array([0.5, 1.0, 2.0]),
        "finish_s": np.array([0.5, 1.5, 4.0]),
    }
    ttft, tpot, e2e = _latencies(cols)
    assert ttft.tolist() == [0.5, 1.0, 1.0]
    assert math.isnan(tpot[0]) and tpot[1:].tolist() == [0.5, 0.5]
    assert e2e.tolist() == [0.5, 1.5, 3.0]


def _two_replicas(points: int = 6):  # type: ignore[no-untyped-def]
    # 1 ms steps, prompt 10: request 0 (5 tokens) on replica 0 finishes at 5 ms, request 1
    # (2 tokens) on replica 1 at 2 ms. Each holds at most 10 + 5 - 1 = 14 tokens: 1 block of 16.
    requests = Requests(
        np.array([10, 10]), np.array([5, 2]), np.array([5, 2]), np.zeros(2)
    )  # fmt: skip
    config = SimConfig(time_series_points=points)
    return simulate(requests, constant_model(1e-3), KVCapacity(10, 16), config, dp=2)


def test_two_replicas_report_the_slower_one_s_makespan_and_rates() -> None:
    result = _two_replicas()
    assert result.makespan_s == pytest.approx(5e-3)
    assert result.requests_per_s == pytest.approx(400.0)  # 2 requests / 5 ms
    assert result.output_tokens_per_s == pytest.approx(1400.0)  # 7 tokens / 5 ms
    assert [r.makespan_s for r in result.replicas] == pytest.approx([5e-3, 2e-3])
    assert [r.peak_kv_utilization for r in result.replicas] == pytest.approx([0.1, 0.1])
    assert [r.requests for r in result.replicas] == [1, 1]
    # the grid spans 0 .. the slower replica's 5 ms in 6 points, 1 ms apart
    assert result.series.time_s == pytest.approx([0.0, 1e-3, 2e-3, 3e-3, 4e-3, 5e-3])


def test_a_time_series_has_at_least_its_two_ends() -> None:
    assert _two_replicas(points=1).series.time_s == pytest.approx([0.0, 5e-3])
    assert _two_replicas(points=2).series.time_s == pytest.approx([0.0, 5e-3])
    assert len(_two_replicas(points=3).series.time_s) == 3


# --- simulate --------------------------------------------------------------------------------


def test_check_fits_at_the_cache_size_and_one_token_past_it() -> None:
    capacity = KVCapacity(blocks=2, block_size=4)  # 8 tokens
    check_fits(fixed_batch(1, 5, 4), capacity)  # 5 + 4 - 1 = 8 tokens: 2 blocks
    with pytest.raises(InputError, match=r"needs 3 KV blocks at its longest \(9 tokens\)"):
        check_fits(fixed_batch(1, 5, 5), capacity)  # 9 tokens: 3 blocks
    with pytest.raises(InputError, match="nothing to simulate"):
        check_fits(fixed_batch(0, 5, 5), capacity)


def test_simulate_refuses_zero_replicas() -> None:
    with pytest.raises(InputError, match="dp"):
        simulate(fixed_batch(1, 5, 4), constant_model(1e-3), KVCapacity(2, 4), SimConfig(), dp=0)


def test_least_loaded_places_each_item_on_the_lightest_replica_so_far() -> None:
    # work 5, 3, 4, 1 on 2 replicas: 5 -> r0 (tie, lowest index); 3 -> r1; 4 -> r1 (3 < 5, now
    # 7); 1 -> r0 (5 < 7)
    assert _least_loaded(np.array([5, 3, 4, 1]), 2).tolist() == [0, 1, 1, 0]


def test_request_overhead_delays_arrivals_and_each_independent_send() -> None:
    # Client 0 sends request 0 at t = 0, then request 1 0.5 s after request 0 ends; request 2
    # joins request 1 (sent together). With 0.1 s of overhead the engine sees request 0 at 0.1 s,
    # request 1 0.6 s after request 0 ends, request 2 together with request 1 (think 0.25 kept).
    requests = Requests(
        np.array([4, 4, 4]), np.array([2, 2, 2]), np.array([2, 2, 2]),
        np.array([0.0, np.nan, np.nan]), client=np.array([0, 0, 0]), closed_loop=True,
        think_s=np.array([0.0, 0.5, 0.25]), joins_previous=np.array([False, False, True]),
    )  # fmt: skip
    later = _sent_later(requests, 0.1)
    assert later.arrival_s[0] == pytest.approx(0.1)
    assert np.isnan(later.arrival_s[1:]).all()
    assert later.think_s == pytest.approx([0.1, 0.6, 0.25])
