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
