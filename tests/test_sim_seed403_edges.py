"""Edges the sim mutation sample of seed 403 found untested (benchmarks/mutation.py --packages
sim --sample 40 --seed 403): each value worked out by hand in its comment."""

from __future__ import annotations

import json
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest

from capcliff.errors import InputError
from capcliff.sim.loop.cohort import DecodeCohort
from capcliff.sim.loop.thrash import decode_run
from capcliff.sim.reuse.prefix_cache import PrefixCache
from capcliff.sim.traffic.sessions import SessionSpec, generate_sessions, parse_session_trace
from capcliff.sim.traffic.workload import Fixed


def test_a_session_without_a_shared_prefix_starts_its_content_from_nothing() -> None:
    # one turn each, 10 tokens in and 5 out, no shared system prompt: each session is a root
    # content node (parent -1) that shares 0 tokens with anything
    spec = SessionSpec(mean_turns=1, user_input=Fixed(10), output=Fixed(5))
    requests = generate_sessions(spec, 3, np.random.default_rng(0), clients=1)
    assert requests.content_parent.tolist() == [-1, -1, -1]
    assert requests.content_fork_tokens.tolist() == [0, 0, 0]
    # so with SGLang's 1-token pages nothing hits before anything is cached: a 10-token
    # prompt may hit up to (10 - 1) // 1 = 9 pages, and hits none
    cache = PrefixCache(
        requests.content_parent.tolist(), requests.content_fork_tokens.tolist(), block_size=1
    )
    assert [cache.lookup(node, 10) for node in range(3)] == [0, 0, 0]


def test_the_fewest_generated_key_counts_only_the_steps_a_member_decoded() -> None:
    # A joins at step 0 with its first token (generated 1, context 100, prompt 99); step 1 is a
    # prefill step that holds the decoders (SGLang without mixed chunks). At the start of step 3
    # A has decoded in steps 0 and 2: 1 + 2 = 3 tokens. The key is generated - step: 3 - 3 = 0.
    cohort = DecodeCohort(1, 16)
    cohort.add(0, context=100, generated=1, output=10, step=0)
    cohort.track_victims(0, prompt=99, admit_seq=0)
    cohort.hold()
    assert cohort.fewest_generated() == ((0, -99, 0), 0)
    assert cohort.remove(0, 3) == (100 + 2, 3)  # the same count, read by taking A out


def _turn(**times: float) -> str:
    return json.dumps(
        {"session_id": "s", "turn": 0, "input_tokens": 4, "output_tokens": 2, **times}
    )


@pytest.mark.parametrize("key", ["arrival_s", "think_s"])
def test_a_session_trace_time_below_zero_is_refused_and_zero_is_read(key: str) -> None:
    # a turn cannot arrive before the trace starts, nor follow the one before it by a negative
    # think time: half a second or a whole second early is refused, naming the field and line 1
    for early in (-0.5, -1.0):
        with pytest.raises(InputError, match=f"trace line 1: {key}: must be a finite number >= 0"):
            parse_session_trace([_turn(**{key: early})])
    (row,) = parse_session_trace([_turn(**{key: 0.0})])
    assert getattr(row, key) == 0.0


class _EdgeRng:
    """numpy's Generator where every session has two turns and every uniform draw is 0.0 (which
    `Generator.random` can return: it draws from [0, 1))."""

    def geometric(self, p: float) -> int:
        return 2

    def random(self) -> float:
        return 0.0

    def exponential(self, scale: float) -> float:
        return scale


def test_a_fanout_probability_of_zero_never_fans_out_even_on_a_zero_draw() -> None:
    # two turns of 10 tokens in and 5 out: prompts 10 and 10 + 5 + 10 = 25; then the next
    # session's first turn, 10. A branch after turn 1 would have had 25 + 5 + 10 = 40 tokens.
    spec = SessionSpec(
        mean_turns=2, user_input=Fixed(10), output=Fixed(5), fanout_probability=0.0,
        fanout_width=2,
    )  # fmt: skip
    requests = generate_sessions(spec, 3, _EdgeRng(), clients=1)  # type: ignore[arg-type]
    assert requests.input_tokens.tolist() == [10, 25, 10]


def test_a_run_that_starts_compute_bound_is_priced_step_by_step() -> None:
    # decode terms of 2 sequences at context 0: memory 1.0 + 0.5 j s, compute 1.5 s flat, no
    # fixed time or host floor. Steps 0-2 take max(1.0, 1.5) = 1.5, max(1.5, 1.5) = 1.5 and
    # max(2.0, 1.5) = 2.0: 5.0 s. Memory overtakes by the last step, but the first is compute-
    # bound, so the memory-bound sum (3 x 1.0 + 0.5 x 3 = 4.5 s) is not the price.
    terms = (1.0, 0.0, 0.5, 1.5, 0.0, 0.0, 0.0, 100.0, 5.0, 0.0, 10.0)
    sim: Any = SimpleNamespace(line_terms={2: terms})
    duration, _, first_s, before_last = decode_run(sim, 2, 0, 3)
    assert duration == pytest.approx(5.0) and first_s == pytest.approx(1.5)
    assert before_last == pytest.approx(3.0)  # steps 0 and 1: 1.5 + 1.5
