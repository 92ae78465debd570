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


@settings(max_examples=300, deadline=None)
@given(
    requests,
    st.integers(0, 5_000),
    st.integers(0, 40),
    st.sampled_from([1, 4, 16, 64]),
    st.integers(-20, 40),
)
def test_a_kept_table_shifted_equals_a_fresh_one(
    running: list[tuple[int, int]], context: int, remaining: int, size: int, shift: int
) -> None:
    # `shift` decode steps later every request has `shift` more tokens of context and `shift`
    # fewer steps to go: the table built before, shifted, answers as one built then
    c = np.array([r[0] for r in running], dtype=np.int64)
    r = np.array([r[1] for r in running], dtype=np.int64)
    kept = PeakTable.of(c, r, size)
    fresh = PeakTable.of(c + shift, r - shift, size)
    assert kept.peak_with(context, remaining, shift) == fresh.peak_with(context, remaining)
    assert kept.peak() == fresh.peak()


@dataclass
class _LockstepView(_View):
    """A view whose running set decodes in lockstep: the memo is kept, the arrays move."""

    memo: dict[object, object] | None = None
    steps: int = 0

    def lockstep_memo(self) -> tuple[dict[object, object], int]:
        assert self.memo is not None
        return self.memo, self.steps


@settings(max_examples=200, deadline=None)
@given(
    st.lists(member, max_size=20),
    member,
    st.sampled_from([1, 16]),
    st.integers(1, 2_000),
    st.lists(st.integers(0, 30), min_size=1, max_size=5),
)
def test_a_verdict_from_the_kept_table_equals_a_fresh_one(
    running: list[tuple[int, int, int, bool]],
    cand: tuple[int, int, int, bool],
    size: int,
    total: int,
    steps: list[int],
) -> None:
    # the running set asked about at several steps of one lockstep stretch (outputs known, no
    # request in prefill: those decode): each verdict equals the rule on that step's arrays
    prompt, generated, extra, spills = cand
    chunk = prompt + generated - (1 if spills else 0)
    c = Candidate(prompt, generated, generated + extra, generated + extra + 50, 0, chunk, 1)
    memo: dict[object, object] = {}
    for d in steps:
        state = RunningState(
            np.array([m[0] for m in running], dtype=np.int64),
            np.array([m[1] + d for m in running], dtype=np.int64),
            np.array([m[1] + m[2] + 40 for m in running], dtype=np.int64),
            np.array([m[1] + m[2] + 90 for m in running], dtype=np.int64),
            np.zeros(len(running), dtype=bool),
        )
        peak = kv_aware_peak(state, [c], None, size)
        for limit, expected in ((total, peak <= total), (peak, True), (peak - 0.5 / size, False)):
            view = _LockstepView(limit, size, state, memo=memo, steps=d)  # type: ignore[arg-type]
            assert kv_aware_admit(view, c, [], margin=0.0) is expected
