"""The fast paths take the jumps they promise: each run of identical decode steps is one event
that ends exactly where the module docstrings say, worked out by hand. A mutant that only
shortens or skips a jump leaves every other result the same (the step-by-step comparison of
tests/test_simulate.py cannot see it), so these tests count the events and check their times.
They came from the survivors of `benchmarks/mutation.py --packages sim` (seeds 3 and 7) in:
capcliff.sim.loop.fast_forward
capcliff.sim.loop.thrash
capcliff.sim.loop.admit_step
capcliff.sim.loop.exclusive_prefill
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from capcliff.perf.step_time import StepTimeModel
from capcliff.sim.config import KVCapacity, SimConfig
from capcliff.sim.loop.balance import UNBOUNDED
from capcliff.sim.loop.lockstep import LockstepSim
from capcliff.sim.loop.replica import ReplicaSim
from capcliff.sim.simulate import make_policy
from capcliff.sim.traffic.workload import Requests
from tests.simtools import POLICIES, constant_model, fixed_batch, toy_model


def linear_model() -> StepTimeModel:
    """Every step takes 1 ms (1 GB of weights at 1 TB/s) + 0.1 ms per token of KV it reads
    (100 MB per token), nothing else: a decode step whose contexts sum to C takes 1 + 0.1 C ms."""
    return dataclasses.replace(
        toy_model(step_overhead_s=0.0),
        kv_bytes_per_token=1e8,
        flops_per_token=0.0,
        flops_per_sequence=0.0,
        attention_flops_per_pair=0.0,
    )


def _run(requests: Requests, model: StepTimeModel, capacity: KVCapacity, config: SimConfig):  # type: ignore[no-untyped-def]
    return ReplicaSim(requests, model, capacity, config, make_policy(config, requests)).run()


@pytest.mark.parametrize("policy", POLICIES)
def test_the_decode_steps_after_a_prefill_are_one_event(policy: str) -> None:
    # Prompt 10, output 5, 1 ms a step: step 0 prefills (token 1, event 1), steps 1-4 decode with
    # nothing in between: one run, event 2, ending at 5 ms.
    config = SimConfig(policy=policy)
    result = _run(fixed_batch(1, 10, 5), constant_model(1e-3), KVCapacity(10, 16), config)
    assert (result.steps, result.events) == (5, 2)
    assert result.series_s.tolist() == pytest.approx([1e-3, 5e-3])


@pytest.mark.parametrize("policy", ["vllm", "sglang", "vllm-v0", "trtllm-no-evict"])
def test_a_decode_run_ends_at_the_first_step_that_reaches_the_next_arrival(policy: str) -> None:
    # A (prompt 1, output 20) at 0 s, B (prompt 1, output 3) at 10 ms; linear_model.
    # Step 0 prefills A, reading 1 token: 1.1 ms. Decode step j >= 1 reads A's context 1 + j:
    # 1.2 + 0.1 (j - 1) ms, so m steps last 1.2 m + 0.05 m (m - 1) ms. B is due 8.9 ms after
    # step 0: m = 6 lasts 8.7 ms (short), m = 7 lasts 10.5 ms, so the run is 7 steps, ending at
    # 1.1 + 10.5 = 11.6 ms. Step 8 prefills B (1 token) and decodes A (context 9): 2.0 ms, to
    # 13.6 ms. Steps 9-10 decode both (contexts 10 + 2, 11 + 3): 2.2 + 2.4 ms, B done at 18.2 ms.
    # A has 11 tokens; steps 11-19 decode its last 9 (contexts 12..20, sum 144): 9 + 14.4 ms,
    # done at 41.6 ms. Five events, one per line above.
    requests = Requests(
        np.array([1, 1]), np.array([20, 3]), np.array([20, 3]), np.array([0.0, 0.01])
    )
    config = SimConfig(policy=policy)
    result = _run(requests, linear_model(), KVCapacity(100, 16), config)
    assert result.events == 5
    assert result.series_s.tolist() == pytest.approx([1.1e-3, 11.6e-3, 13.6e-3, 18.2e-3, 41.6e-3])
    assert result.finish_s.tolist() == pytest.approx([41.6e-3, 18.2e-3])


# vLLM V1 with prefix caching (nothing shared here) takes the general path
# (`fast_forward._preempt_then_decode`), the others the inlined one (`thrash.run_thrash`).
THRASHING = [
    SimConfig(policy="vllm"),
    SimConfig(policy="vllm-first-chunk"),
    SimConfig(policy="trtllm-max-util"),
    SimConfig(policy="vllm", prefix_caching=True),
]


@pytest.mark.parametrize("config", THRASHING, ids=lambda c: f"{c.policy}-{c.prefix_caching}")
def test_a_thrashing_cache_takes_one_event_per_preemption(config: SimConfig) -> None:
    # Three requests (prompt 1, output 10), 12 blocks of 1 token, 1 ms a step. A request with g
    # tokens generated holds 1 + g - 1 = g blocks.
    # step 0 prefills all three (3 blocks, 9 free), token 1 each: event 1, 1 ms;
    # steps 1-3 decode all three (3 blocks a step) to 0 free: event 2, 4 ms;
    # step 4 needs 3 > 0: C (4 blocks) goes; A and B run steps 4-5 (2 a step) to 0 free, C
    #   refused (it needs 1 + 4 = 5 blocks): event 3, 6 ms, 1 blocked step;
    # step 6 needs 2 > 0: B (6 blocks) goes; A runs steps 6-9 and finishes (10 tokens), B refused
    #   (7 blocks): event 4, 10 ms, 3 blocked steps;
    # step 10 takes B back (1 + 6 = 7 blocks) and C (5 blocks), 0 free: event 5, 11 ms;
    # step 11 needs 2 > 0: C (5 blocks) goes again; B runs steps 11-13 to its 10th token, C
    #   refused (6 blocks > 5 - 2): event 6, 14 ms, 2 blocked steps;
    # step 14 takes C back (6 blocks), token 6: event 7, 15 ms; steps 15-18: event 8, 19 ms.
    requests = fixed_batch(3, 1, 10)
    result = _run(requests, constant_model(1e-3), KVCapacity(12, 1), config)
    assert (result.steps, result.events, result.blocked_steps) == (19, 8, 6)
    assert result.series_s.tolist() == pytest.approx(
        [1e-3, 4e-3, 6e-3, 10e-3, 11e-3, 14e-3, 15e-3, 19e-3]
    )
    assert result.preemptions.tolist() == [0, 1, 2]
    assert result.recomputed_tokens.tolist() == [0, 6, 4 + 5]
    assert result.finish_s.tolist() == pytest.approx([10e-3, 14e-3, 19e-3])


class _CountedLockstep(LockstepSim):
    """A LockstepSim that counts its common jumps (the calls that jumped)."""

    jumps = 0

    def _fast_forward(self, busy: list[int], cap: int = UNBOUNDED) -> int:
        steps = super()._fast_forward(busy, cap)
        self.jumps += steps > 0
        return steps


def test_lockstep_ranks_jump_together_to_each_ranks_event() -> None:
    # Two ranks, 1 ms a step: rank 0 (prompt 10, output 5), rank 1 (prompt 10, output 3). Step 0
    # prefills both (an exact step, one event each). Jump 1: steps 1-2, to rank 1's last token
    # (rank 1 settles: its second event). Jump 2: steps 3-4, to rank 0's last token (rank 0's
    # pending steps 1-4 settle as one run: its second event).
    model = constant_model(1e-3)
    capacity, config = KVCapacity(10, 16), SimConfig()

    def rank(output: int) -> ReplicaSim:
        one = Requests(np.array([10]), np.array([output]), np.array([output]), np.zeros(1))
        return ReplicaSim(one, model, capacity, config, make_policy(config, one))

    sim = _CountedLockstep([rank(5), rank(3)], model)
    first, second = sim.run()
    assert (first.events, second.events) == (2, 2)
    assert (first.steps, second.steps) == (5, 3)
    assert (first.finish_s[0], second.finish_s[0]) == pytest.approx((5e-3, 3e-3))
    assert sim.jumps == 2


# max_steps: a run that never admits B stops with an error at once, instead of running on
EXCLUSIVE = [
    SimConfig(policy="vllm", mixed_prefill=False, max_steps=100),
    SimConfig(policy="trtllm-max-util", mixed_prefill=False, max_steps=100),
    SimConfig(policy="vllm", mixed_prefill=False, prefix_caching=True, max_steps=100),
    SimConfig(policy="sglang", mixed_prefill=False, max_steps=100),
]


@pytest.mark.parametrize("config", EXCLUSIVE, ids=lambda c: f"{c.policy}-{c.prefix_caching}")
def test_without_mixed_prefill_an_admission_step_decodes_nobody(config: SimConfig) -> None:
    # A (prompt 10, output 5) at 0 s, B (the same) at 2.5 ms, 1 ms a step. Step 0 prefills A
    # (token 1); steps 1-2 decode it (tokens 2-3, to 3 ms). B has arrived: step 3 prefills B
    # alone, A held (B's token 1 at 4 ms). Steps 4-5 give A tokens 4-5 (done at 6 ms), steps 4-7
    # give B tokens 2-5 (done at 8 ms). Mixed into step 3, A would be done at 5 ms.
    requests = Requests(
        np.array([10, 10]), np.array([5, 5]), np.array([5, 5]), np.array([0.0, 2.5e-3])
    )
    result = _run(requests, constant_model(1e-3), KVCapacity(10, 16), config)
    assert result.first_token_s.tolist() == pytest.approx([1e-3, 4e-3])
    assert result.finish_s.tolist() == pytest.approx([6e-3, 8e-3])
    assert result.steps == 8
