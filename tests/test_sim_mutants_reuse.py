"""Prefix-cache accounting and session-trace bounds, worked out by hand (mutation survivors of
`benchmarks/mutation.py --packages sim`, seeds 3 and 7)."""

from __future__ import annotations

import json

import pytest

from capcliff.errors import InputError
from capcliff.sim.reuse.prefix_cache import PrefixCache
from capcliff.sim.traffic.sessions import parse_session_trace


def test_a_request_that_hit_part_of_the_cache_publishes_only_its_new_blocks() -> None:
    # One node, 16-token blocks. A first request publishes blocks 0-32 (33 cached, none
    # referenced). A second hits 20 of them (13 unreferenced, 20 in use), then stops after
    # filling blocks up to 40: blocks 33-39 are new (7), and its 20 references drop. Cached:
    # 40 blocks, every one unreferenced (13 + 7 + 20), none in use.
    cache = PrefixCache([-1], [0], 16)
    cache.release(0, 0, 33, now_s=1.0)
    assert cache.acquire(0, 20) == 20
    assert (cache.unreferenced, cache.in_use) == (13, 20)
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
