"""Edges the sim mutation sample of seed 624 found untested (benchmarks/mutation.py --packages sim
--sample 40 --seed 624). Every expected value is worked out by hand in the comments."""

from __future__ import annotations

import math

import numpy as np
import pytest

from capcliff.sim.config import PreemptionMode
from capcliff.sim.loop.cohort import DecodeCohort
from capcliff.sim.traffic.sessions import SESSION_PRESETS, SessionStream
from tests.test_simulate import _assert_same, _both


def test_a_compacted_clip_heap_keeps_its_live_members() -> None:
    # Member 0 joins at step 0 with 10 tokens to generate; SGLang's clipped remaining output at
    # clip 4 is min(10 - s, 4) at step s: 4 up to step 6, then 3, 2, 1, 0 at steps 7-10. Then 80
    # members join above the clip and leave at once: each leaves a stale entry in the heap of
    # members above the clip, and past 2 x 2 + 64 = 68 entries a join compacts the heap to its
    # live entries (`_live_clip`). Member 0's must be kept, or it never crosses below the clip.
    # (Seed 624's `on[...] != side` kept the stale entries and dropped member 0's, so it never
    # crossed.)
    cohort, max_output = DecodeCohort(100, 16), [10] * 100
    cohort.add(0, 5, 0, 10, 0)
    assert cohort.clipped_future(0, 4, max_output) == 4
    for i in range(1, 81):
        cohort.add(i, 5, 0, 10, 0)
        cohort.remove(i, 0)
    assert len(cohort._above) < 80  # compacted
    assert [cohort.clipped_future(s, 4, max_output) for s in range(11)] == [4] * 7 + [3, 2, 1, 0]


@pytest.mark.parametrize("policy", ["vllm", "trtllm-max-util"])
def test_a_thrashing_runs_peak_is_the_step_by_step_peak(policy: str) -> None:
    # Random case 24 (a batch of requests on a small cache) thrashes under both policies that
    # give up their latest admissions, and its peak KV use is set inside a run of decode steps
    # in the thrash loop (`run_thrash`): the event-driven replica must agree with the
    # step-by-step reference on it, as on every other figure. The comparison's own seeds (0-3)
    # set no peak there; seed 624's `min(used_first, used_last)` recorded the run's first step,
    # 168 blocks, where the step-by-step peak is its last, 169.
    fast, slow = _both(24, policy, PreemptionMode.RECOMPUTE, "batch")
    _assert_same(fast, slow)


@pytest.mark.parametrize("rate", [0.0, -0.5, math.nan])
def test_a_stream_at_a_rate_is_not_taken_at_a_rate_of_zero_or_less(rate: float) -> None:
    # Sessions start at rate / mean turns per second, a gap of mean turns / rate: a rate of 0
    # (or less, or NaN) has no gap, so taking the stream at it is refused by name. Seed 624's
    # `not rate_per_s > -1` took 0 and -0.5 (0 then divided by zero).
    stream = SessionStream(
        SESSION_PRESETS["multiturn-chat"], np.random.default_rng(0), rate_per_s=1.0
    )
    with pytest.raises(ValueError, match="a rate > 0"):
        stream.take(5, rate_per_s=rate)
