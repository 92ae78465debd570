"""A per-request overhead outside the engine's steps (`SimConfig.request_overhead_s`): the engine
sees each request that much after its client sent it, and the client's TTFT and E2E include it."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from capcliff.errors import InputError
from capcliff.sim.config import KVCapacity, SimConfig
from capcliff.sim.simulate import simulate
from capcliff.sim.traffic.workload import Requests
from tests.simtools import toy_model

CAPACITY = KVCapacity(blocks=2000, block_size=16, kv_bytes_per_token=1000)


def _requests(*, closed: bool, think: float = 0.0) -> Requests:
    rng = np.random.default_rng(4)
    n = 60
    client = np.arange(n) % 4 if closed else np.full(n, -1)
    if closed:
        arrival = np.where(np.arange(n) < 4, 0.0, np.nan)
    else:
        arrival = np.cumsum(rng.exponential(0.02, n))
    return Requests(
        input_tokens=rng.integers(20, 300, n).astype(np.int64),
        output_tokens=rng.integers(5, 80, n).astype(np.int64),
        max_output_tokens=np.full(n, 80, dtype=np.int64),
        arrival_s=arrival,
        client=client.astype(np.int64),
        closed_loop=closed,
        think_time_s=think,
    )


def test_open_loop_latencies_grow_by_the_overhead_and_nothing_else_changes() -> None:
    # Every arrival later by the same 50 ms: the engine's schedule is the same, shifted.
    requests = _requests(closed=False)
    plain = simulate(requests, toy_model(), CAPACITY, SimConfig(max_num_seqs=8))
    late = simulate(
        requests, toy_model(), CAPACITY, SimConfig(max_num_seqs=8, request_overhead_s=0.05)
    )
    np.testing.assert_allclose(late.ttft_s, plain.ttft_s + 0.05, rtol=0, atol=1e-9)
    np.testing.assert_allclose(late.e2e_s, plain.e2e_s + 0.05, rtol=0, atol=1e-9)
    np.testing.assert_allclose(late.tpot_s, plain.tpot_s, rtol=1e-9)
    np.testing.assert_allclose(late.arrival_s, requests.arrival_s, rtol=0, atol=1e-9)
    assert late.ttft.p50 == pytest.approx(plain.ttft.p50 + 0.05)


def test_a_closed_loop_client_waits_the_overhead_as_it_would_a_think_time() -> None:
    # Each client's next request reaches the engine 50 ms after the last token: the engine runs
    # what a 50 ms think time gives (a first request also arrives 50 ms late, which only shifts
    # the run), and the client's TTFT counts the 50 ms.
    overhead = 0.05
    late = simulate(
        _requests(closed=True), toy_model(), CAPACITY,
        SimConfig(max_num_seqs=8, request_overhead_s=overhead),
    )  # fmt: skip
    thinking = _requests(closed=True, think=overhead)
    shifted = dataclasses.replace(thinking, arrival_s=thinking.arrival_s + overhead)
    engine = simulate(shifted, toy_model(), CAPACITY, SimConfig(max_num_seqs=8))
    np.testing.assert_allclose(late.ttft_s, engine.ttft_s + overhead, rtol=0, atol=1e-9)
    np.testing.assert_allclose(late.finish_s, engine.finish_s, rtol=0, atol=1e-9)


@pytest.mark.parametrize("bad", [-0.01, float("nan"), float("inf"), 61.0])
def test_a_bad_overhead_is_refused_in_one_line(bad: float) -> None:
    with pytest.raises(InputError, match="request_overhead_s"):
        SimConfig(request_overhead_s=bad)


def test_plan_says_the_overhead_is_no_engine_flag(capsys: pytest.CaptureFixture[str]) -> None:
    from capcliff.cli import main

    args = ["plan", "llama-3.1-8b", "--gpus", "1", "--isl", "500", "--osl", "200", "--arrival",
            "batch", "--num-requests", "32", "--request-overhead-ms", "40"]  # fmt: skip
    assert main(args) == 0
    printed = capsys.readouterr()
    assert "a request overhead of 40.0 ms was simulated in every TTFT" in printed.out + printed.err
