"""The kv-aware rule's running-set table (`capcliff.sim.kv_peak`): the projected peak with one
more request, by hand and against `projected_peak_blocks` of the arrays with it appended."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from capcliff.sim.kv_peak import PeakTable
from capcliff.sim.policies import (
    Candidate,
    RunningState,
    kv_aware_admit,
    kv_aware_peak,
    projected_peak_blocks,
)


def test_peak_with_one_more_request_by_hand() -> None:
    # Running: (context 10, 3 steps left) and (20, 1), blocks of 4. Sorted by steps left they
    # give T = 10 + 1 x (3 + 3) = 16 and 30 + 2 x (1 + 3) = 38 tokens: 38 / 4 = 9.5 blocks.
    table = PeakTable.of(np.array([10, 20]), np.array([3, 1]), 4)
    assert table.peak() == 38
    # Add (5, 2 steps left): it sorts between them. T = 16; 15 + 2 x (2 + 3) = 25;
    # 35 + 3 x (1 + 3) = 47: the last step of the (20, 1) request, all three alive.
    assert table.peak_with(5, 2) == 47
    # Add (100, 10 steps left): first in the order. T = 100 + 1 x 13 = 113; 110 + 2 x 6 = 122;
    # 130 + 3 x 4 = 142.
    assert table.peak_with(100, 10) == 142
    # A tie with (10, 3): the running request stays first. 10 + 6 = 16; 15 + 2 x 6 = 27;
    # 35 + 3 x 4 = 47.
    assert table.peak_with(5, 3) == 47


def test_empty_running_set() -> None:
    table = PeakTable.of(np.array([], dtype=np.int64), np.array([], dtype=np.int64), 16)
    assert table.peak() == 0
    # alone: 7 tokens of context, 4 steps: 7 + 1 x (4 + 15) = 26
    assert table.peak_with(7, 4) == 26


requests = st.lists(
    st.tuples(st.integers(0, 5_000), st.integers(0, 40)), max_size=25
)  # few distinct step counts: many ties


@settings(max_examples=300, deadline=None)
@given(requests, st.integers(0, 5_000), st.integers(0, 40), st.sampled_from([1, 4, 16, 64]))
def test_peak_with_equals_the_sorted_sums_of_the_whole_set(
    running: list[tuple[int, int]], context: int, remaining: int, size: int
) -> None:
    c = np.array([r[0] for r in running] + [context], dtype=np.int64)
    r = np.array([r[1] for r in running] + [remaining], dtype=np.int64)
    table = PeakTable.of(c[:-1], r[:-1], size)
    assert table.peak_with(context, remaining) / size == projected_peak_blocks(c, r, size)
    assert table.peak() / size == projected_peak_blocks(c[:-1], r[:-1], size)


@dataclass
class _View:
    total_blocks: int
    block_size: int
    running: RunningState
    free_blocks: int = 0
    new_token_ratio: float = 0.0

    def running_state(self) -> RunningState:
        return self.running

    def full_length_blocks(self) -> int:
        return 0

    def future_tokens(self, clip: int) -> int:
        return 0


member = st.tuples(
    st.integers(1, 3_000), st.integers(0, 500), st.integers(1, 2_000), st.booleans()
)  # prompt, generated, output beyond generated, in prefill


@settings(max_examples=300, deadline=None)
@given(
    st.lists(member, max_size=20),
    member,
    st.one_of(st.none(), st.integers(1, 3_000)),
    st.sampled_from([1, 16]),
    st.integers(1, 2_000),
    st.sampled_from([0.0, 0.05, 0.3]),
)
def test_head_verdict_equals_the_rule_on_the_arrays(
    running: list[tuple[int, int, int, bool]],
    cand: tuple[int, int, int, bool],
    quantile: int | None,
    size: int,
    total: int,
    margin: float,
) -> None:
    # at most one running request is part way through its prefill, as in the replica
    prefilling = [m[3] for m in running]
    if any(prefilling):
        first = prefilling.index(True)
        prefilling = [i == first for i in range(len(running))]
    state = RunningState(
        np.array([m[0] for m in running], dtype=np.int64),
        np.array([m[1] for m in running], dtype=np.int64),
        np.array([m[1] + m[2] for m in running], dtype=np.int64),
        np.array([m[1] + m[2] + 50 for m in running], dtype=np.int64),
        np.array(prefilling, dtype=bool),
    )
    prompt, generated, extra, spills = cand
    chunk = prompt + generated - (1 if spills else 0)  # a chunk short of its prefill spills
    c = Candidate(prompt, generated, generated + extra, generated + extra + 50, 0, chunk, 1)
    view = _View(total, size, state)
    expected = kv_aware_peak(state, [c], quantile, size) <= total * (1 - margin)
    assert kv_aware_admit(view, c, [], margin=margin, quantile_tokens=quantile) is expected
    # asked again of the same running set (the table kept in `derived`): the same verdict
    assert kv_aware_admit(view, c, [], margin=margin, quantile_tokens=quantile) is expected
