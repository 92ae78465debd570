"""Prefix-cache accounting and session-trace bounds, worked out by hand (mutation survivors of
`benchmarks/mutation.py --packages sim`, seeds 3 and 7)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from capcliff.errors import InputError
from capcliff.sim.policies import Candidate
from capcliff.sim.reuse.prefix_cache import PrefixCache
from capcliff.sim.reuse.prefix_reuse import PrefixReuse
from capcliff.sim.traffic.sessions import (
    SessionSpec,
    generate_sessions,
    parse_session_trace,
    requests_from_session_trace,
)
from capcliff.sim.traffic.workload import Fixed
from tests.simtools import fixed_batch


def test_a_request_that_hit_part_of_the_cache_publishes_only_its_new_blocks() -> None:
    # One node, 16-token blocks. A first request publishes blocks 0-32 (33 cached, none
    # referenced). A second hits 20 of them (13 unreferenced, 20 in use), then stops after
    # filling blocks up to 40: blocks 33-39 are new (7), and its 20 references drop. Cached:
    # 40 blocks, every one unreferenced (13 + 7 + 20), none in use.
    cache = PrefixCache([-1], [0], 16)
    cache.release(0, 0, 33, now_s=1.0)
    assert cache.acquire(0, 20) == 20
    assert (cache.unreferenced, cache.in_use) == (13, 20)
    # a 529-token prompt looks up (529 - 1) // 16 = 33 blocks: blocks 20-32 are cached and
    # referenced by no request
    assert cache.lookup_revivable(0, 529) == (33, 13)
    cache.release(0, 20, 40, now_s=2.0)
    assert (cache.unreferenced, cache.in_use) == (40, 0)
    assert cache.lookup(0, 1000) == 40


def _row(**fields: object) -> str:
    row: dict[str, object] = {
        "session_id": "s", "turn": 0, "input_tokens": 1, "output_tokens": 1, "arrival_s": 0.0,
    }  # fmt: skip
    return json.dumps({**row, **fields})


def test_a_session_turn_of_one_token_in_and_out_is_valid() -> None:
    (row,) = parse_session_trace([_row()])
    assert (row.input_tokens, row.output_tokens, row.turn, row.prefix_tokens) == (1, 1, 0, 0)


@pytest.mark.parametrize("field", ["input_tokens", "output_tokens"])
def test_a_session_turn_of_zero_tokens_is_refused(field: str) -> None:
    with pytest.raises(InputError, match=f"{field}: must be an integer >= 1"):
        parse_session_trace([_row(**{field: 0})])


def test_each_later_turn_carries_the_whole_conversation() -> None:
    # 10 new tokens in, 5 out, every turn: turn k's prompt is its 10 tokens after the k - 1
    # turns before it (15 tokens each), 10 + 15 (k - 1): 10, 25, 40, ... Some sessions (mean 4
    # turns) have later turns.
    spec = SessionSpec(mean_turns=4, user_input=Fixed(10), output=Fixed(5))
    requests = generate_sessions(spec, 40, np.random.default_rng(0), clients=2)
    prompts = requests.input_tokens
    assert prompts.max() > 10
    assert set((prompts - 10) % 15) == {0}
    assert set(requests.output_tokens) == {5}


def test_a_traced_session_starts_at_its_arrival_and_its_next_turn_follows() -> None:
    # Without clients, a session's first turn arrives at its trace arrival_s (2.5 s); the next
    # turn has no arrival of its own (NaN: sent think_s = 0.75 s after the first finishes).
    rows = parse_session_trace(
        [_row(arrival_s=2.5), _row(turn=1, arrival_s=None, think_s=0.75, input_tokens=3)]
    )
    requests = requests_from_session_trace(rows)
    assert requests.arrival_s[0] == 2.5
    assert np.isnan(requests.arrival_s[1])
    assert requests.input_tokens.tolist() == [1, 1 + 1 + 3]


def test_a_cold_admission_hits_and_revives_nothing() -> None:
    # Nothing cached yet: a 32-token prompt hits 0 blocks and revives 0, so the request holds
    # exactly the blocks it allocated.
    reuse = PrefixReuse(fixed_batch(2, 32, 4), 16, radix=False)
    assert reuse.admit(0, 32, 0.0) == (0, 0)


def test_a_resumed_request_holds_its_own_blocks_and_its_revived_hit() -> None:
    # One 40-token prompt, 16-token blocks: 3 blocks. Admitted cold: it holds the 3 it
    # allocated. Preempted at 40 tokens: its 40 // 16 = 2 full blocks stay cached, unreferenced.
    # Resumed: it hits those 2 ((40 - 1) // 16 = 2), revives both, and allocates 3 blocks
    # counting them: it holds 3 - 2 revived + 2 hit = 3 blocks, ceil(40 / 16).
    reuse = PrefixReuse(fixed_batch(1, 40, 4), 16, radix=False)
    cold = Candidate(40, 0, 4, 4, 0, chunk_tokens=40, blocks_now=3)
    assert reuse.held_blocks(0, cold, 3, 0.0) == 3
    assert reuse.freed_blocks(0, 3, 40, 1.0, finished=False) == 3
    warm = Candidate(40, 0, 4, 4, 0, chunk_tokens=8, blocks_now=3, cached_tokens=32)
    assert reuse.held_blocks(0, warm, 3, 2.0, resumed=True) == 3
    assert reuse.shared[0] == 2
