"""SGLang's running set's clipped remaining outputs in closed form (`AdmissionView.future_tokens`,
kept as requests come and go) must be what summing its arrays gives, whatever changed since the
last question (the requests a step admitted so far: `tests/test_scheduler.py`)."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from capcliff.sim.config import KVCapacity, PreemptionMode, SimConfig
from capcliff.sim.loop.cohort import DecodeCohort
from capcliff.sim.loop.replica import ReplicaSim
from capcliff.sim.policies import Candidate, Policy, ReplicaView, sglang_admit
from capcliff.sim.traffic.workload import Requests
from tests.simtools import pressure_case, toy_model


@pytest.mark.parametrize("clip", [4096, 60])
@pytest.mark.parametrize("mixed", [True, False])
@pytest.mark.parametrize("seed", range(6))
def test_the_running_sum_is_the_running_sets_own(seed: int, mixed: bool, clip: int) -> None:
    # Every question SGLang's rule is asked in a run that retracts, exact steps and jumps
    # alike: the view's sum against the running set's arrays, summed here. Outputs reach about
    # 150 tokens, so a clip of 60 clips some, whose remaining output falls below it as they
    # decode (then the cohort keeps who is clipped), and 4,096 none (then running sums do).
    requests, capacity, config, rule = pressure_case(seed, "sglang", PreemptionMode.RECOMPUTE)
    _check_every_question(requests, capacity, config, rule, mixed=mixed, clip=clip)


@pytest.mark.parametrize("mode", [PreemptionMode.RECOMPUTE, PreemptionMode.SWAP])
@pytest.mark.parametrize("seed", range(6))
def test_max_outputs_past_the_clip_are_summed_as_the_arrays_do(
    seed: int, mode: PreemptionMode
) -> None:
    # A reasoning workload's shape: max outputs up to ~5x the clip above the real outputs,
    # mixed with some at the output, so some members stay clipped to the end, some cross the
    # clip while decoding and some never reach it; retracted (or swapped) requests come back
    # with their tokens generated so far.
    requests, capacity, config, rule = pressure_case(seed, "sglang", mode)
    rng = np.random.default_rng(100 + seed)
    slack = np.where(rng.random(len(requests)) < 0.7, rng.integers(0, 300, len(requests)), 0)
    requests = dataclasses.replace(requests, max_output_tokens=requests.output_tokens + slack)
    _check_every_question(requests, capacity, config, rule, mixed=seed % 2 == 0, clip=60)


def _check_every_question(
    requests: Requests,
    capacity: KVCapacity,
    config: SimConfig,
    rule: Policy,
    *,
    mixed: bool,
    clip: int,
) -> None:
    asked: list[int] = []

    def checked(view: ReplicaView, cand: Candidate, admitted: Sequence[Candidate]) -> bool:
        state = view.running_state()
        remaining = state.max_output_tokens - state.generated_tokens
        assert view.future_tokens(clip) == int(np.minimum(remaining, clip).sum())
        asked.append(len(remaining))
        return sglang_admit(view, cand, admitted, clip=clip)

    config = dataclasses.replace(config, mixed_prefill=mixed)
    rule = dataclasses.replace(rule, admit=checked)
    result = ReplicaSim(requests, toy_model(), capacity, config, rule).run()
    assert max(asked) > 1  # asked with a running set, not only of an idle replica
    assert len(result.finish_s) == len(requests)


# one event: ("add", request, generated, step offset), ("remove", request, step offset),
# ("hold",) or ("ask", step offset, clip, steps of a run); offsets from the latest step,
# negative ones asking back in time (as a jump's search over steps does)
_EVENTS = st.lists(
    st.one_of(
        st.tuples(st.just("add"), st.integers(0, 7), st.integers(0, 40), st.integers(0, 5)),
        st.tuples(st.just("remove"), st.integers(0, 7), st.integers(0, 5)),
        st.tuples(st.just("hold")),
        st.tuples(
            st.just("ask"), st.integers(-30, 30), st.sampled_from([5, 20]), st.integers(1, 60)
        ),
    ),
    max_size=60,
)


@settings(max_examples=150, deadline=None)
@given(max_output=st.lists(st.integers(1, 80), min_size=8, max_size=8), events=_EVENTS)
def test_the_cohorts_clipped_sum_is_each_members_term_added(
    max_output: list[int], events: list[tuple[object, ...]]
) -> None:
    # Each member's generated count worked out here on its own (it gains one per step the
    # cohort decodes, none in a held step), its clipped remaining output r summed term by term;
    # over a run of k steps it is clipped until r - j reaches the clip, at j = r - clip.
    cohort = DecodeCohort(8, 4)
    step = 0
    joined: dict[int, tuple[int, int, int]] = {}  # member: (generated, step, holds) at joining
    holds = 0
    for event in events:
        if event[0] == "add":
            _, i, g, dt = event
            assert isinstance(i, int) and isinstance(g, int) and isinstance(dt, int)
            step += dt
            if i not in joined:
                cohort.add(i, 10, g, 10**6, step)
                joined[i] = (g, step, holds)
        elif event[0] == "remove":
            _, i, dt = event
            assert isinstance(i, int) and isinstance(dt, int)
            step += dt
            if i in joined:
                cohort.remove(i, step)
                del joined[i]
        elif event[0] == "hold":
            cohort.hold()
            holds += 1
            step += 1
        else:
            _, dt, clip, k = event
            assert isinstance(dt, int) and isinstance(clip, int) and isinstance(k, int)
            at = max(0, step + dt)
            left = [
                max_output[i] - (g + (at - start) - (holds - held))
                for i, (g, start, held) in joined.items()
            ]
            expected = sum(min(r, clip) for r in left)
            assert cohort.clipped_future(at, clip, max_output) == expected
            crossings = sorted(r - clip for r in left if 0 < r - clip < k)
            unclipped = sum(r <= clip for r in left)
            assert cohort.clip_crossings(at, clip, max_output, k) == (
                expected,
                unclipped,
                crossings,
            )
