"""Shortcuts of the disaggregated search give the answer of the full computation:
- the closed loop's rounds simulate only the requests sent by a cutoff past the settled horizon
  (`closed_loop.simulate_clients`), and settle where rounds over every request settle;
- `plan --disagg` does not run a split again without its decode cap, nor `sweep --disagg` at a
  higher cap, when no run at the cap filled its seats (`cap_never_binds`): it is the same run."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from capcliff.analysis.disagg.pools import cap_never_binds
from capcliff.analysis.evaluate.solver import config_at
from capcliff.sim.config import ARRIVAL_TIE_S, KVCapacity, SimConfig
from capcliff.sim.disagg.closed_loop import Round, send_times, simulate_clients
from capcliff.sim.disagg.kv_transfer import Fabric, Path
from capcliff.sim.disagg.pools import DisaggResult, Pool, most_held, simulate_disaggregated
from capcliff.sim.traffic.workload import Requests
from tests.simtools import toy_model

FABRIC = Fabric(Path("nvlink", 100e9, 1e-6), Path("rdma", 50e9, 5e-6), domain_gpus=8,
                overhead_s=1e-3)  # fmt: skip


def _pool(replicas: int = 1, seqs: int = 8) -> Pool:
    return Pool(
        model=toy_model(), capacity=KVCapacity(blocks=400, block_size=4),
        config=SimConfig(policy="vllm", max_num_seqs=seqs, max_num_batched_tokens=256),
        replicas=replicas, gpus_per_replica=4,
    )  # fmt: skip


def _two_pools(decode: Pool, sizes: list[int]) -> Callable[..., DisaggResult]:
    """The two-pool simulation of timed requests (1 GB of KV each); notes each run's size."""

    def run(timed: Requests, _round: Round | None = None) -> DisaggResult:
        sizes.append(len(timed))
        return simulate_disaggregated(
            timed, np.full(len(timed), 1e9), prefill=_pool(), decode=decode, fabric=FABRIC
        )

    return run


def _whole_rounds(requests: Requests, simulate: Callable[[Requests], DisaggResult]) -> DisaggResult:
    """The fixed point by rounds over every request (the definition): every request not sent
    by a time sent with the last timed one, then each round's send times from its finishes,
    until none moves by more than ARRIVAL_TIE_S."""
    trial = np.array(requests.arrival_s, dtype=np.float64)
    trial[np.isnan(trial)] = np.nanmax(trial)
    for _ in range(1000):
        result = simulate(dataclasses.replace(requests, arrival_s=trial, closed_loop=False))
        sent = send_times(requests, trial + result.serving.e2e_s)
        if np.max(np.abs(sent - trial)) <= ARRIVAL_TIE_S:
            return result
        trial = sent
    raise AssertionError("no fixed point in 1,000 rounds")


def _clients(outputs: list[int], think_s: list[float], clients: int) -> Requests:
    n = len(outputs)
    first = np.where(np.arange(n) < clients, np.arange(n) * 0.05, np.nan)
    return Requests(
        np.full(n, 40, dtype=np.int64), np.array(outputs, dtype=np.int64),
        np.array(outputs, dtype=np.int64), first, (np.arange(n) % clients).astype(np.int64),
        closed_loop=True, think_s=np.array(think_s),
    )  # fmt: skip


@settings(max_examples=25, deadline=None)
@given(
    clients=st.integers(1, 6),
    cycle=st.lists(st.tuples(st.integers(2, 60), st.floats(0.0, 0.5)), min_size=8, max_size=40),
    decode_replicas=st.integers(1, 2),
)
def test_rounds_up_to_a_cutoff_settle_where_whole_rounds_do(
    clients: int, cycle: list[tuple[int, float]], decode_replicas: int
) -> None:
    requests = _clients([o for o, _ in cycle], [t for _, t in cycle], clients)
    decode = _pool(decode_replicas)
    cut = simulate_clients(requests, _two_pools(decode, []))
    whole = _whole_rounds(requests, _two_pools(decode, []))
    np.testing.assert_allclose(cut.serving.arrival_s, whole.serving.arrival_s, rtol=0, atol=1e-9)
    np.testing.assert_allclose(cut.serving.e2e_s, whole.serving.e2e_s, rtol=0, atol=1e-9)


def test_a_long_loop_simulates_only_the_requests_sent() -> None:
    # One client sends 30 requests one after another, each 0.2 s after the last one ends: round
    # k settles request k's send time, so it simulates the k requests sent by then (465 in
    # all), where rounds over every request simulate 30 each.
    requests = _clients([20] * 30, [0.2] * 30, 1)
    sizes: list[int] = []
    cut = simulate_clients(requests, _two_pools(_pool(), sizes))
    whole = _whole_rounds(requests, _two_pools(_pool(), []))
    np.testing.assert_allclose(cut.serving.e2e_s, whole.serving.e2e_s, rtol=0, atol=1e-9)
    assert sizes == list(range(1, 31))


def test_a_client_that_starts_past_the_cutoff_is_simulated_too() -> None:
    # Client 0 sends at 0 s and again 10 ms after that ends; client 1 sends once, at 1,000 s.
    # The second round's cutoff (a fraction of a second) leaves client 1 out, and nothing moves
    # in it; the run still ends with a round over all three. Alone on the pools, client 1's
    # request takes what client 0's first one took.
    requests = Requests(
        np.full(3, 40, dtype=np.int64), np.full(3, 20, dtype=np.int64),
        np.full(3, 20, dtype=np.int64), np.array([0.0, np.nan, 1000.0]),
        np.array([0, 0, 1], dtype=np.int64), closed_loop=True, think_s=np.array([0.0, 0.01, 0.0]),
    )  # fmt: skip
    sizes: list[int] = []
    result = simulate_clients(requests, _two_pools(_pool(), sizes))
    assert sizes == [2, 2, 3]
    e2e = result.serving.e2e_s
    assert result.serving.arrival_s.tolist() == pytest.approx([0.0, e2e[0] + 0.01, 1000.0])
    assert e2e[2] == pytest.approx(e2e[0], abs=1e-9)


def test_most_held_counts_both_ends() -> None:
    # Requests in [0, 2], [1, 3], [2, 4] and [5, 6] s: at t = 2 the first has not left (it
    # finishes then) and the third has come, so 3 are held at once.
    run = _two_pools(_pool(), [])(_burst(4, 0.0))
    hand = dataclasses.replace(
        run.decode_runs[0], arrival_s=np.array([0.0, 1.0, 2.0, 5.0]),
        finish_s=np.array([2.0, 3.0, 4.0, 6.0]),
    )  # fmt: skip
    assert most_held(hand) == 3


def _burst(n: int, gap_s: float) -> Requests:
    return Requests(
        np.full(n, 40, dtype=np.int64), np.full(n, 30, dtype=np.int64),
        np.full(n, 30, dtype=np.int64), np.arange(n) * gap_s, np.arange(n, dtype=np.int64),
    )  # fmt: skip


@pytest.mark.parametrize(("gap_s", "binds"), [(0.5, False), (0.0, True)], ids=["apart", "burst"])
def test_a_cap_that_never_bound_runs_as_the_default(gap_s: float, binds: bool) -> None:
    # Two decode replicas of 8 seats capped at 6 requests: 3 seats each. Requests 0.5 s apart
    # finish before the next lands (at most 1 held); 12 at once hold 6 per replica, and the
    # cap makes them wait.
    decode = _pool(2)
    capped = dataclasses.replace(decode, config=config_at(decode.config, 6, 2))
    assert capped.config.max_num_seqs == 3
    requests = _burst(12, gap_s)
    with_cap = _two_pools(capped, [])(requests)
    without = _two_pools(decode, [])(requests)
    assert cap_never_binds(decode, 6, with_cap.decode_most_held) is not binds
    assert np.array_equal(with_cap.serving.e2e_s, without.serving.e2e_s) is not binds


@pytest.mark.parametrize(("gap_s", "binds"), [(0.5, False), (0.0, True)], ids=["apart", "burst"])
def test_two_caps_whose_seats_were_never_filled_run_alike(gap_s: float, binds: bool) -> None:
    # `sweep --disagg` reuses a run at a higher cap: caps of 6 and 10 requests over two decode
    # replicas give 3 and 5 seats each; 12 requests 0.5 s apart never fill 3, 12 at once do.
    decode = _pool(2)
    runs = [
        _two_pools(dataclasses.replace(decode, config=config_at(decode.config, c, 2)), [])(
            _burst(12, gap_s)
        )
        for c in (6, 10)
    ]
    assert cap_never_binds(decode, 6, runs[0].decode_most_held, 10) is not binds
    assert np.array_equal(runs[0].serving.e2e_s, runs[1].serving.e2e_s) is not binds
