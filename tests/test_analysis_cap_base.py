"""`analysis.evaluate.cap_base` at its edges: the saturation search's cap-grid base (the KV
cliff in steady state, the decode throughput knee) and the end of a session sample's busy
window. Every expected value is worked out by hand in the test's comment (the seed-51 mutation
sample found `users_end` off by one without a failing test)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from capcliff.analysis.evaluate.cap_base import (
    held_tokens,
    steady_cliff,
    throughput_knee,
    users_end,
)
from capcliff.sim.config import KVCapacity
from capcliff.sim.traffic.workload import Requests


def _requests(inputs: list[int], outputs: list[int]) -> Requests:
    out = np.array(outputs, dtype=np.int64)
    return Requests(
        input_tokens=np.array(inputs, dtype=np.int64),
        output_tokens=out,
        max_output_tokens=out,
        arrival_s=np.zeros(len(inputs)),
    )


def test_held_tokens_weights_each_request_by_its_output() -> None:
    # I = 100, O = 10 holds 100 + 5 = 105 on average; I = 300, O = 30 holds 315.
    # Weighted by O: (10 x 105 + 30 x 315) / 40 = (1,050 + 9,450) / 40 = 262.5
    # (the unweighted mean would be 210).
    assert held_tokens(_requests([100, 300], [10, 30])) == pytest.approx(262.5)


def test_the_steady_cliff_divides_the_cache_and_keeps_at_least_one_request() -> None:
    requests = _requests([100, 300], [10, 30])  # 262.5 tokens held each (above)
    # 100 blocks of 16 = 1,600 tokens; per request 262.5 + 16/2 = 270.5: 1,600 // 270.5 = 5
    assert steady_cliff(requests, KVCapacity(blocks=100, block_size=16)) == 5
    # 1 block of 16: 16 // 270.5 = 0 requests, raised to 1
    assert steady_cliff(requests, KVCapacity(blocks=1, block_size=16)) == 1
    # 541 blocks of 1 token: per request 262.5 + 0.5 = 263, and 541 // 263 = 2 (526 tokens)
    assert steady_cliff(requests, KVCapacity(blocks=541, block_size=1)) == 2
    # Blocks of 256: per request 262.5 + 128 = 390.5. 3 blocks (768 tokens) hold 1 request
    # (768 / 390.5 = 1.97); 4 blocks (1,024) hold 2 (2.62). Half a block, not a third (347.8
    # per request: 2 and 2.9), nor a whole one (518.5: 1 and 1.97), nor two (774.5: 0 -> 1, 1).
    assert steady_cliff(requests, KVCapacity(blocks=3, block_size=256)) == 1
    assert steady_cliff(requests, KVCapacity(blocks=4, block_size=256)) == 2


class _LinearSteps:
    """A decode step of b sequences reading C tokens of context with P attention pairs takes
    1 + 0.5e-5 C + 0.5e-5 P seconds (nothing for no tokens, as the real model). At 1,000 tokens
    of context each, C = P = 1,000 b: 1 + 0.01 b seconds, so b / (1 + 0.01 b) tokens/s, rising
    towards 100 and never reaching it."""

    def step_time_s(self, tokens: float, seqs: float, context: float, pairs: float) -> float:
        assert tokens == seqs  # decode: one token per sequence
        return 0.0 if tokens <= 0 else 1.0 + 0.5e-5 * context + 0.5e-5 * pairs


class _FlatSteps:
    """A decode step of b sequences takes b seconds: 1 token/s at every batch."""

    def step_time_s(self, tokens: float, seqs: float, context: float, pairs: float) -> float:
        return float(seqs)


class _SteppedSteps:
    """Decode rates set by hand: 10 tokens/s from 10 sequences, 9 from 8, else 1."""

    def step_time_s(self, tokens: float, seqs: float, context: float, pairs: float) -> float:
        rate = 10.0 if seqs >= 10 else 9.0 if seqs >= 8 else 1.0
        return 0.0 if tokens <= 0 else seqs / rate


def test_the_knee_is_the_smallest_grid_batch_at_ninety_percent_of_the_best() -> None:
    steps: Any = _LinearSteps()
    # Grid: round(1,000 / 1.19^k) = 1,000, 840, 706, 593, 499, 419, ...
    # Best up to 1,000: 1,000 / 11 = 90.909 tokens/s; 90 % of it is 81.818.
    # 499 / 5.99 = 83.31 >= 81.818 and 419 / 5.19 = 80.73 < 81.818: the knee is 499.
    assert throughput_knee(steps, 1000.0, 1000) == 499
    # limit 1: the grid is {1} (every round(1 / 1.19^k) below 1 is raised to 1, never a batch
    # of 0 sequences), so the knee is 1
    assert throughput_knee(steps, 1000.0, 1) == 1


def test_the_grid_has_sixty_four_points() -> None:
    # A flat rate (a step of b sequences takes b seconds: 1 token/s at every batch):
    # every batch reaches 90 % of the best, so the knee is the grid's smallest batch. With
    # limit 1,000,000 that is k = 63: 1e6 / 1.19^63 = 17.4 -> 17 (k = 62 gives 21, k = 64 15).
    steps: Any = _FlatSteps()
    assert throughput_knee(steps, 1000.0, 1_000_000) == 17


def test_the_knee_counts_a_batch_at_exactly_ninety_percent() -> None:
    # limit 10: grid {1, ..., 8, 10}. Best 10 tokens/s at 10; 90 % of it is exactly 9, which
    # 8 sequences reach (8 / (8 / 9) = 9.0): the knee is 8, not 10.
    steps: Any = _SteppedSteps()
    assert throughput_knee(steps, 1000.0, 10) == 8


def test_users_end_is_when_no_more_than_cap_users_still_have_work() -> None:
    # 5 users whose last requests end at 1, 2, 3, 4 and 5 s (user 3 ran two requests, at 0.5
    # and 4 s: its last end is 4). With cap 2, more than 2 users have work until the third user
    # runs out, at 3 s: ends sorted [1, 2, 3, 4, 5], index 5 - 2 - 1 = 2.
    client = np.array([0, 1, 2, 3, 3, 4])
    finish = np.array([1.0, 2.0, 3.0, 0.5, 4.0, 5.0])
    assert users_end(client, finish, 2) == 3.0
    # cap 4: one user more than the cap, so the window ends with the first user out, at 1 s
    assert users_end(client, finish, 4) == 1.0
    # cap 5 (or more): never more users than the cap
    assert users_end(client, finish, 5) is None
    assert users_end(client, finish, 9) is None


def test_users_end_labels_need_not_be_dense() -> None:
    # users 2 and 7 only (labels with gaps): with cap 1 the window ends when the first of them
    # runs out; user 7 ends at 1.5 s and user 2 at 6 s: 1.5
    client = np.array([7, 2, 2])
    finish = np.array([1.5, 2.0, 6.0])
    assert users_end(client, finish, 1) == 1.5
