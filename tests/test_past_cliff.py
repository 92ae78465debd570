"""How a point past the cliff fails (capcliff/analysis/sweep/failure.py): the figures and the
one-line verdict, on small simulations."""

from __future__ import annotations

import numpy as np
import pytest

from capcliff.analysis.sweep.failure import DOMINANT_SHARE, past_cliff
from capcliff.sim.config import KVCapacity, PreemptionMode, SimConfig
from capcliff.sim.simulate import simulate
from capcliff.sim.traffic.sessions import SessionShape, generate_sessions, shaped_session_spec
from tests.simtools import fixed_batch, toy_model


def _capacity(blocks: int) -> KVCapacity:
    return KVCapacity(blocks=blocks, block_size=16, kv_bytes_per_token=1000,
                      host_link_bytes_per_s=1e9)  # fmt: skip


def _config(policy: str = "vllm-first-chunk", caching: bool = False) -> SimConfig:
    return SimConfig(policy=policy, max_num_seqs=64, max_num_batched_tokens=512,
                     preemption=PreemptionMode.RECOMPUTE, prefix_caching=caching)  # fmt: skip


def test_a_run_whose_kv_never_fills_has_no_past_cliff_figures() -> None:
    result = simulate(fixed_batch(4, 100, 10), toy_model(), _capacity(1_000), _config())
    assert result.first_saturation is None
    assert past_cliff(result) is None


def test_past_cliff_figures_follow_their_definitions() -> None:
    # 40 requests of 200 + 300 tokens in 100 blocks of 16 (each needs up to 32): KV fills
    result = simulate(fixed_batch(40, 200, 300), toy_model(), _capacity(100), _config())
    found = past_cliff(result)
    assert found is not None
    assert found.preemptions_per_request == pytest.approx(result.total_preemptions / 40)
    # Little's law: mean wait = mean waiting requests / requests per second
    assert found.mean_wait_s == pytest.approx(found.mean_waiting / result.requests_per_s)
    assert found.peak_waiting >= found.mean_waiting
    assert found.recompute_share == pytest.approx(
        result.total_recomputed_tokens / result.scheduled_tokens
    )
    assert found.dominant in ("queueing", "preemption")
    assert (found.dominant == "preemption") == (found.recompute_share >= DOMINANT_SHARE)
    assert found.statement().startswith(f"{found.dominant} dominates")


def test_sessions_past_the_cliff_report_the_hit_rate_before_and_after() -> None:
    spec = shaped_session_spec(
        "multiturn-chat", SessionShape(turns=3, isl=100, osl=100, think_time_s=0.0)
    )
    requests = generate_sessions(spec, 300, np.random.default_rng(0), clients=40)
    result = simulate(requests, toy_model(), _capacity(400), _config("vllm", caching=True))
    found = past_cliff(result)
    assert found is not None
    assert found.hit_rate == result.prefix_cache_hit_rate
    assert found.hit_rate_before_cliff is not None
    for rate in (found.hit_rate, found.hit_rate_before_cliff, found.hit_rate_after_cliff):
        assert rate is None or 0.0 <= rate <= 1.0
