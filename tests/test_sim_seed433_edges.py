"""Edges the sim mutation sample of seed 433 found untested (benchmarks/mutation.py --packages
sim --sample 40 --seed 433): each value worked out by hand in its comment."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from capcliff.errors import InputError
from capcliff.sim.loop.balance import BalanceGate
from capcliff.sim.reuse.kv_tiers import KVTier


def _rank() -> Any:
    # a rank decoding one request (a generation request), one more queued (a context request),
    # with free seats (1 of 4 taken)
    return SimpleNamespace(
        waiting=[object()], running=[object()], cohort=SimpleNamespace(count=1),
        config=SimpleNamespace(max_num_seqs=4),
    )  # fmt: skip


def test_after_the_batching_wait_runs_the_next_context_requests_wait_it_again() -> None:
    # TensorRT-LLM's _balance_adp_requests (py_executor.py, 1.1-1.2): every rank has a seat, a
    # context and a generation request, so the context requests wait while the batching count
    # is under attention_dp_batching_wait_iters (3), counting up; at 3 they run and the count
    # restarts at 0, so the next context requests wait 3 iterations again
    gate, ranks = BalanceGate(timeout_iters=10, batching_wait_iters=3, group=2), [_rank(), _rank()]
    assert gate.decide(ranks) == (True, 3)
    gate.advance(3)
    assert gate.decide(ranks) == (False, 1)  # the count reached 3: they run, one step
    gate.advance(1)
    assert gate.decide(ranks) == (True, 3)
    gate.advance(2)
    assert gate.decide(ranks) == (True, 1)  # 2 of the 3 waited: one more


@pytest.mark.parametrize(
    ("tokens", "read", "write"),
    [(-1, 1e9, 1e9), (10, 0.0, 1e9), (10, 1e9, 0.0), (10, -1e9, 1e9)],
)
def test_an_offload_tier_with_any_one_bad_figure_is_refused(
    tokens: int, read: float, write: float
) -> None:
    # a negative capacity, or a read or write bandwidth that is not positive, each alone
    with pytest.raises(InputError, match="offload cpu: needs a capacity >= 0 and bandwidths > 0"):
        KVTier("cpu", tokens, read, write, 0.0)


def test_an_offload_tier_of_no_capacity_is_accepted() -> None:
    assert KVTier("cpu", 0, 1e9, 1e9, 0.0).tokens == 0


def test_a_fan_out_branch_of_the_first_content_node_stays_with_its_session() -> None:
    import numpy as np

    from capcliff.sim.config import KVCapacity, SimConfig
    from capcliff.sim.simulate import simulate
    from capcliff.sim.traffic.workload import Requests
    from tests.simtools import constant_model

    # Two users. User 0 runs session A (content node 0: request 0, 10 tokens out, then request
    # 1, a branch forked from node 0); user 1 runs session B (node 2: request 2, one token) and
    # then session C (node 3: request 3). Steps of 10 ms, nothing else limits them. Request 2
    # ends with its prefill step at 10 ms, and user 1 starts the next session not yet started,
    # C: request 3 is sent at 10 ms and ends at 30 ms (prefill, then one decode step). Request
    # 1 belongs to session A (its parent, node 0, carries a request), so user 0 sends it when
    # request 0 ends, at 100 ms (a prefill and 9 decode steps), and it ends at 120 ms.
    outputs = np.array([10, 2, 1, 2])
    requests = Requests(
        input_tokens=np.full(4, 8), output_tokens=outputs, max_output_tokens=outputs,
        arrival_s=np.array([0.0, np.nan, 0.0, np.nan]), client=np.array([0, 0, 1, 1]),
        closed_loop=True, think_s=np.zeros(4), joins_previous=np.zeros(4, dtype=bool),
        content_node=np.arange(4), content_parent=np.array([-1, 0, -1, -1]),
        content_fork_tokens=np.array([0, 4, 0, 0]),
    )  # fmt: skip
    capacity = KVCapacity(
        blocks=1000, block_size=16, kv_bytes_per_token=1, host_link_bytes_per_s=1e9,
        host_kv_tokens=0,
    )  # fmt: skip
    config = SimConfig(max_num_seqs=8, max_num_batched_tokens=512)
    result = simulate(requests, constant_model(0.01), capacity, config)
    np.testing.assert_allclose(result.arrival_s, [0.0, 0.1, 0.0, 0.01], atol=1e-12)
    np.testing.assert_allclose(result.finish_s, [0.1, 0.12, 0.01, 0.03], atol=1e-12)
