"""SGLang's running set's clipped remaining outputs in closed form (`AdmissionView.future_tokens`,
kept as requests come and go) must be what summing its arrays gives, whatever changed since the
last question (the requests a step admitted so far: `tests/test_scheduler.py`)."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

import numpy as np
import pytest

from capcliff.sim.config import PreemptionMode
from capcliff.sim.loop.replica import ReplicaSim
from capcliff.sim.policies import Candidate, ReplicaView, sglang_admit
from tests.simtools import pressure_case, toy_model


@pytest.mark.parametrize("clip", [4096, 60])
@pytest.mark.parametrize("mixed", [True, False])
@pytest.mark.parametrize("seed", range(6))
def test_the_running_sum_is_the_running_sets_own(seed: int, mixed: bool, clip: int) -> None:
    # Every question SGLang's rule is asked in a run that retracts, exact steps and jumps
    # alike: the view's sum against the running set's arrays, summed here. Outputs reach about
    # 150 tokens, so a clip of 60 clips some (then the view sums the arrays) and 4,096 none
    # (then it keeps running sums).
    requests, capacity, config, rule = pressure_case(seed, "sglang", PreemptionMode.RECOMPUTE)
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
