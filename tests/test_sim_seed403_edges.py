"""Edges the sim mutation sample of seed 403 found untested (benchmarks/mutation.py --packages
sim --sample 40 --seed 403): each value worked out by hand in its comment."""

from __future__ import annotations

import numpy as np

from capcliff.sim.loop.cohort import DecodeCohort
from capcliff.sim.reuse.prefix_cache import PrefixCache
from capcliff.sim.traffic.sessions import SessionSpec, generate_sessions
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
