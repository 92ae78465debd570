"""Sim mutants earlier samples left alive and not equivalent (docs/validation.md, "Mutation":
seeds 83, 89 and 509), each pinned by a case worked out by hand in its comment."""

from __future__ import annotations

import dataclasses
from types import SimpleNamespace

import pytest

from capcliff.sim.config import KVCapacity, PreemptionMode, SimConfig
from capcliff.sim.loop.fast_forward import _steps_lasting
from capcliff.sim.loop.prefill_only import prefill_verdict
from capcliff.sim.loop.replica import ReplicaSim
from capcliff.sim.simulate import make_policy
from tests.simtools import constant_model, fixed_batch

U = 2.0**-11  # seconds: a unit whose multiples sum without rounding


@pytest.mark.parametrize(("count", "steps"), [(2, 3), (1, 4)])
def test_an_overlap_schedulers_host_time_sets_how_many_steps_last_until_an_arrival(
    count: int, steps: int
) -> None:
    # No GPU work (no weights, KV or FLOPs: no memory or compute time), a step overhead of 4 U
    # that holds the fixed host time of 2 U, and 1 U of host time per sequence, under the
    # overlap scheduler. Each decode step takes max(4 U - 2 U, 2 U + count x 1 U) (StepTimeModel's
    # overlapped host rule): 4 U for two sequences, 3 U for one. The first m steps last at least
    # 10 U from m = 3 (12 U; two steps 8 U) and from m = 4 (12 U; three steps 9 U). The GPU
    # part alone (2 U a step) would take 5 steps: the host time is what sets them. seed 89's
    # `floored = terms[9] > mem0` -> `terms[8]` (the KV bytes a step adds, 0 here) missed that.
    model = dataclasses.replace(
        constant_model(4 * U), overlap_schedule=True, host_fixed_s=2 * U, host_per_seq_s=U
    )
    sim = SimpleNamespace(line_terms={}, model=model)
    assert _steps_lasting(sim, count, 0, 8, 10 * U) == steps  # type: ignore[arg-type]
    assert model.step_time_s(count, count, count, count) == (4 * U if count == 2 else 3 * U)


def test_vllm_v0_swaps_a_request_back_in_with_one_token_of_budget_left() -> None:
    # vLLM V0 without chunked prefill, swap mode, 3 seats and a 3-token budget (the least V0
    # allows: max_num_batched_tokens >= max_num_seqs, and >= the longest request, 1 + 2 tokens).
    # Step 0 prefills the three 1-token prompts (3 tokens, one block each of 100). Request 2 is
    # then swapped out (its 1 token of KV to the host), which leaves 2 decoding and 98 blocks
    # free. The next decode step has 3 - 2 = 1 token of budget, and V0's `_schedule_swapped`
    # needs one token for a swapped-in request (it decodes): it comes back, its 1 + 1 blocks
    # fitting in the 98 - 2 left after the two decodes. seed 89's `budget <= 0` -> `<= 1`
    # refused it there.
    requests = fixed_batch(3, 1, 2)
    config = SimConfig(
        policy="vllm-v0",
        max_num_seqs=3,
        max_num_batched_tokens=3,
        chunked_prefill=False,
        preemption=PreemptionMode.SWAP,
    )
    capacity = KVCapacity(blocks=100, block_size=1, host_link_bytes_per_s=1.0, host_kv_tokens=100)
    sim = ReplicaSim(requests, constant_model(1.0), capacity, config, make_policy(config, requests))
    sim.take_arrivals(0.0)
    planned = sim.begin_step()
    assert [i for i, _, _ in planned.admitted] == [0, 1, 2]
    sim.finish_step(planned, 1.0)
    sim.preempt(2)
    assert (sim.cohort.count, sim.host_used, sim.free) == (2, 1, 98)
    assert prefill_verdict(sim, step=sim.step, free=sim.free) is True
    # and the step swaps it in: its 1 token of KV back from the host (seed 509's `swap_ins`
    # `budget <= 0` -> `<= 1` left it swapped out)
    planned = sim.begin_step()
    assert planned.admitted == [(2, 1, 1)]
    assert (sim.swap_in_tokens, sim.host_used) == (1, 0)
