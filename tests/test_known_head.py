"""A jump refused because the head of the queue would be admitted hands that verdict and its
candidate to the exact step that follows (`head.known_admitted_head`, 2026-12-07, branch
h-slowplan): the step asks nothing again. The runs are those of the loop that asks again, bit
for bit: one replica (mixed and exclusive prefill steps, every policy that chunks) and attention-DP
ranks in lockstep."""

from __future__ import annotations

import dataclasses

import pytest

import capcliff.sim.loop.exclusive_prefill as exclusive_prefill
import capcliff.sim.loop.replica as replica
from capcliff.sim.config import PreemptionMode
from capcliff.sim.loop.lockstep import LockstepSim
from capcliff.sim.loop.replica import ReplicaSim
from capcliff.sim.simulate import make_policy
from tests.simtools import assert_same_run, pressure_case, random_case
from tests.test_lockstep_fast_paths import _moe_model, lockstep_group

POLICIES = ("vllm", "vllm-first-chunk", "sglang", "trtllm-max-util", "kv-aware")


def _asked_again(monkeypatch: pytest.MonkeyPatch) -> None:
    """The loop without the hand-off: every exact step asks the head again."""
    for module in (replica, exclusive_prefill):
        monkeypatch.setattr(module, "known_admitted_head", lambda sim: None)


@pytest.mark.parametrize("mixed", [True, False], ids=["mixed", "exclusive"])
@pytest.mark.parametrize("seed", range(10))
@pytest.mark.parametrize("policy", POLICIES)
def test_a_replicas_run_is_the_run_that_asks_the_head_again(
    policy: str, seed: int, mixed: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    if seed % 2:
        requests, capacity, config, rule = pressure_case(seed, policy, PreemptionMode.RECOMPUTE)
    else:
        arrival = ("poisson", "batch", "clients")[seed // 2 % 3]
        requests, capacity, config = random_case(seed, policy, PreemptionMode.RECOMPUTE, arrival)
        rule = make_policy(config, requests)
    config = dataclasses.replace(config, mixed_prefill=mixed)
    handed = ReplicaSim(requests, _moe_model(False, 0.0).local, capacity, config, rule).run()
    _asked_again(monkeypatch)
    asked = ReplicaSim(requests, _moe_model(False, 0.0).local, capacity, config, rule).run()
    assert_same_run(handed, asked)


@pytest.mark.parametrize("seed", range(8))
@pytest.mark.parametrize("policy", POLICIES)
def test_lockstep_ranks_run_as_when_they_ask_the_head_again(
    policy: str, seed: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    group = lockstep_group(seed, policy)
    handed = group(LockstepSim).run()
    _asked_again(monkeypatch)
    for got, want in zip(handed, group(LockstepSim).run(), strict=True):
        assert_same_run(got, want)
