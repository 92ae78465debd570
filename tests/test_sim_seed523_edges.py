"""Edges the seed-523 mutation sample (`benchmarks/mutation.py --packages sim --seed 523`) found
untested. Every expected value is worked out by hand in the comments."""

from __future__ import annotations

import numpy as np
import pytest

from capcliff.errors import InputError
from capcliff.sim.reuse.prefix_cache import PrefixCache
from capcliff.sim.traffic.length_spec import histogram_spec, parse_output_lengths
from capcliff.sim.traffic.sessions import SessionSpec, generate_sessions
from capcliff.sim.traffic.workload import Uniform


def test_a_lognormal_spec_may_name_the_longest_output_itself() -> None:
    # Every figure of `lognormal:MEAN:P99[:MAX]` is a length in [1, 10,000,000], bounds included:
    # a cut of exactly 10,000,000 is kept, one token more is refused. With no cut given, the
    # default 2 x p99 = 12,000,000 for a p99 of 6,000,000 (a mean of 1,000,000: 6 x, inside the
    # 15 x a lognormal may spread) is held to the same 10,000,000.
    # (Seed 523's `v <= MAX_TOKENS` -> `<` refused the bound; the tool skipped it until it could
    # patch a function under `lru_cache`.)
    assert parse_output_lengths("lognormal:8000:30000:10000000").max_tokens == 10_000_000
    assert parse_output_lengths("lognormal:1000000:6000000").max_tokens == 10_000_000
    with pytest.raises(InputError, match=r"^osl: every figure must be a length in \[1, 10,000,000"):
        parse_output_lengths("lognormal:8000:30000:10000001")


def test_a_histogram_row_of_no_requests_is_refused() -> None:
    # A row's count is a number > 0 (its weight among the lengths): 0 requests of 500 tokens is
    # no row at all, refused naming the line; a count of 0.5 is a weight and is kept.
    # (Seed 523's `0 < count` -> `0 <= count` kept the 0.)
    with pytest.raises(InputError, match=r"^osl: h.csv line 2: count must be a number > 0"):
        histogram_spec("100,2\n500,0\n", source="h.csv")
    assert histogram_spec("100,2\n500,0.5\n", source="h.csv") == "histogram:100*2,500*0.5"


def test_a_users_second_session_starts_after_a_think_time() -> None:
    # Two users, one turn per session (geometric with mean 1: always 1), think time of mean 10 s:
    # user u runs sessions u, u + 2, ..., so sessions 0 and 1 (requests 0 and 1) start at once
    # (think 0) and sessions 2 and 3, each user's second, start after an exponential draw (> 0).
    # The requests come grouped by user, in the order each sends them: sessions 0, 2, 1, 3.
    # (Seed 523's `started >= clients` -> `>` gave session 2, user 0's second, no think time.)
    spec = SessionSpec(mean_turns=1, user_input=Uniform(5, 10), output=Uniform(1, 5),
                       think_time_s=10.0)  # fmt: skip
    requests = generate_sessions(spec, 4, np.random.default_rng(0), clients=2)
    assert requests.client.tolist() == [0, 0, 1, 1]
    assert (requests.think_s > 0).tolist() == [False, True, False, True]


def test_a_node_that_owns_no_block_has_no_segment() -> None:
    # 16-token blocks. Node 1 forks from the root at token 40 (inside block 2), node 2 from node 1
    # at token 44 (inside the same block): both own blocks from 40 // 16 = 44 // 16 = 2 on, so
    # node 1 owns none of node 2's path. Blocks [0, 5) of node 2: the root's [0, 2) and node 2's
    # [2, 5). (Seed 523's `hi > lo` -> `>=` listed node 1 with the empty [2, 2), which a release
    # would count as a use of node 1: its LRU age refreshed.)
    cache = PrefixCache([-1, 0, 1], [0, 40, 44], 16)
    assert cache.segments(2, 5) == [(0, 0, 2), (2, 2, 5)]
