"""vLLM V1's admission on the whole sequence (`scheduler_reserve_full_isl`, default True): a long
prompt that does not fit waits at the head of the queue instead of being admitted on its first
chunk and preempted part way through its prefill. Checked against the step-by-step reference."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from capcliff.analysis.deployment import engine_policy
from capcliff.memory.budget import EngineName
from capcliff.sim.config import KVCapacity, PreemptionMode, SimConfig
from capcliff.sim.loop.replica import ReplicaSim
from capcliff.sim.simulate import make_policy
from tests.reference_sim import ReferenceSim
from tests.simtools import fixed_batch, toy_model


def _run(policy: str, blocks: int) -> tuple[list[int], list[int]]:
    # 4 prompts of 1,024 tokens (64 blocks of 16), 64 output tokens (4 more blocks each);
    # 256-token chunks: a prompt takes 4 steps
    requests = fixed_batch(4, 1_024, 64)
    capacity = KVCapacity(blocks=blocks, block_size=16, kv_bytes_per_token=1000,
                          host_link_bytes_per_s=1e9)  # fmt: skip
    config = SimConfig(policy=policy, max_num_seqs=8, max_num_batched_tokens=256,
                       preemption=PreemptionMode.RECOMPUTE)  # fmt: skip
    rule = make_policy(config, requests)
    fast = ReplicaSim(requests, toy_model(), capacity, config, rule).run()
    slow = ReferenceSim(requests, toy_model(), capacity, config, rule).run()
    assert fast.preemptions.tolist() == slow.preemptions
    assert list(fast.finish_s) == pytest.approx(slow.finish_s, rel=1e-9)
    return fast.preemptions.tolist(), slow.preemptions


def test_whole_sequence_admission_queues_instead_of_preempting() -> None:
    # 150 blocks: two requests hold 2 x 64 = 128 after their prefills, 22 are left; the third
    # needs 64 for its prompt, so it waits; the two running grow by 2 x 4 = 8 <= 22 blocks
    preemptions, _ = _run("vllm", 150)
    assert sum(preemptions) == 0


def test_first_chunk_admission_preempts_the_request_it_cannot_finish() -> None:
    # the third request's first chunk (16 blocks) fits in 22, its second does not: the newest
    # admission (itself) is preempted, requeued at the front, admitted again, ...
    preemptions, _ = _run("vllm-first-chunk", 150)
    assert sum(preemptions) > 0


@settings(max_examples=25, deadline=None)
@given(st.integers(min_value=68, max_value=400))
def test_whole_sequence_never_preempts_a_batch_of_equal_requests_with_room_to_finish(
    blocks: int,
) -> None:
    # every request needs 1,087 tokens (68 blocks) at its longest; with the whole prompt's 64
    # blocks reserved at admission, k = floor(blocks / 64) run at once, and the 4 k blocks they
    # grow by must be free too: preemptions happen only when blocks - 64 k < 4 k
    preemptions, _ = _run("vllm", blocks)
    k = min(4, blocks // 64)
    if blocks - 64 * k >= 4 * k:
        assert sum(preemptions) == 0


@pytest.mark.parametrize(
    ("version", "policy"),
    [(None, "vllm"), ("0.19.0", "vllm"), ("0.18.0", "vllm"), ("0.15.1", "vllm-first-chunk")],
)
def test_vllm_release_picks_the_admission_rule(version: str | None, policy: str) -> None:
    assert engine_policy(EngineName.VLLM, version) == policy
