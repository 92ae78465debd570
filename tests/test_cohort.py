"""The decode cohort's lazy bookkeeping, and which replicas take the inlined vLLM-like loops."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from capcliff.sim.config import KVCapacity, PreemptionMode, SimConfig
from capcliff.sim.loop.cohort import DecodeCohort
from capcliff.sim.loop.replica import ReplicaSim
from capcliff.sim.simulate import make_policy
from tests.simtools import fixed_batch, toy_model


@settings(max_examples=30, deadline=None)
@given(st.integers(0, 2**32 - 1))
def test_finish_order_and_generated_bases_survive_heap_compaction(seed: int) -> None:
    # A plain model: member i added at step s with context c, g generated of o gains one token
    # per step, so its last token is generated in step s + o - g - 1 and g - s is its base.
    # Requests 0-3 stay from step 0 on; three thousand random adds and removes of requests 4-7,
    # never asked about in between (asking pops stale entries), leave far more stale heap
    # entries than members (over 2 x 8 + 64), so the heap is compacted; the finish order of
    # every member at the end must be the model's.
    rng = np.random.default_rng(seed)
    script = zip(
        rng.integers(4, 8, 3_000).tolist(),
        (rng.random(3_000) < 0.5).tolist(),
        rng.integers(0, 6, 3_000).tolist(),
        strict=True,
    )
    cohort = DecodeCohort(8, block_size=4)
    last: dict[int, int] = {}
    base: dict[int, int] = {}
    step = 0
    for i in range(4):
        cohort.add(i, context=10, generated=1, output=5_000 + i, step=0)
        last[i], base[i] = 5_000 + i - 2, 1
    for i, add, wait in script:
        step += wait
        if add and i not in last:
            context, generated, output = 10 + i, 1 + i % 3, 20 + 3 * i
            cohort.add(i, context=context, generated=generated, output=output, step=step)
            last[i], base[i] = step + output - generated - 1, generated - step
        elif not add and i in last:
            cohort.remove(i, step)
            del last[i], base[i]
        assert cohort.count == len(last)
    members = sorted(base)
    assert cohort.members().tolist() == members
    assert cohort.generated_base[members].tolist() == [base[i] for i in members]
    drained = []  # every member in finish order, as the heap gives them up
    while (first := cohort.next_finish_step()) is not None:
        for i in sorted(cohort.pop_finishing(first)):
            cohort.remove(i, first + 1)
            drained.append((first, i))
    assert drained == sorted((at, i) for i, at in last.items())


def test_a_member_removed_and_added_again_alike_finishes_once() -> None:
    # Request 1 is added at step 0 with 1 of 4 tokens generated, so its last token comes in step
    # 0 + 4 - 1 - 1 = 2; removed and added again at step 0 alike, its stale entry and its live
    # one name the same step and request. Request 0 (last step 2 too) and request 2 (1 of 3:
    # step 1) are the others. Step 1 gives up request 2 alone; step 2 requests 0 and 1, in
    # request order, each once.
    cohort = DecodeCohort(3, block_size=4)
    cohort.add(0, 8, 1, 4, 0)
    cohort.add(1, 8, 1, 4, 0)
    cohort.remove(1, 0)
    cohort.add(1, 8, 1, 4, 0)
    cohort.add(2, 8, 1, 3, 0)
    assert cohort.next_finish_step() == 1
    assert cohort.pop_finishing(1) == [2]
    cohort.remove(2, 2)
    assert cohort.next_finish_step() == 2
    assert cohort.pop_finishing(2) == [0, 1]
    assert cohort.pop_finishing(2) == []
    cohort.remove(0, 3)
    cohort.remove(1, 3)
    assert cohort.next_finish_step() is None


def test_the_retraction_order_is_that_of_the_members_tracked_now() -> None:
    # All at step 0: A (request 0) with 3 generated, B (1) with 1 generated and a 50-token
    # prompt, C (2) with 1 generated and a 70-token prompt. SGLang retracts the fewest generated,
    # then the longest prompt: C. C leaves and comes back untracked (a later admission it was
    # not tracked for): B, its stale entry skipped. Tracked again (admission 7), C is first.
    cohort = DecodeCohort(4, block_size=4)
    for i, (generated, prompt) in enumerate([(3, 20), (1, 50), (1, 70)]):
        cohort.add(i, prompt + generated - 1, generated, 10, 0)
        cohort.track_victims(i, prompt=prompt, admit_seq=i)
    cohort.remove(2, 0)
    cohort.add(2, 70, 1, 10, 0)
    assert cohort.fewest_generated() == ((1, -50, -1), 1)
    cohort.track_victims(2, prompt=70, admit_seq=7)
    assert cohort.fewest_generated() == ((1, -70, -7), 2)
    # once asked, later members join the order as they are tracked: D (3) with none generated
    cohort.add(3, 9, 0, 10, 0)
    cohort.track_victims(3, prompt=9, admit_seq=8)
    assert cohort.fewest_generated() == ((0, -9, -8), 3)
    cohort.remove(3, 0)
    assert cohort.fewest_generated() == ((1, -70, -7), 2)


def _replica(policy: str, mode: PreemptionMode = PreemptionMode.RECOMPUTE) -> ReplicaSim:
    requests = fixed_batch(4, 8, 8)
    config = SimConfig(policy=policy, max_num_seqs=4, preemption=mode)
    capacity = KVCapacity(blocks=16, block_size=4)
    return ReplicaSim(requests, toy_model(), capacity, config, make_policy(config, requests))


def test_only_vllm_like_recompute_replicas_take_the_inlined_loops() -> None:
    # vLLM V1 and TensorRT-LLM MAX_UTILIZATION give up their latest admissions, drop their KV
    # and admit nobody in that step, and admit a head whose first chunk's blocks fit.
    assert _replica("vllm").inline
    assert _replica("trtllm-max-util").inline
    assert not _replica("vllm", PreemptionMode.SWAP).inline  # a victim's KV may go to the host
    assert not _replica("vllm-v0").inline  # admits in the step that preempted
    assert not _replica("sglang").inline  # token-ratio rule, fewest-generated victims
    assert not _replica("kv-aware").inline  # event-triggered rule
    assert not _replica("trtllm-no-evict").inline  # never preempts


def test_a_subclass_that_runs_its_own_steps_keeps_the_general_path() -> None:
    class OwnSteps(ReplicaSim):
        def run_step(self) -> None:
            super().run_step()

    requests = fixed_batch(4, 8, 8)
    config = SimConfig(policy="vllm", max_num_seqs=4)
    capacity = KVCapacity(blocks=16, block_size=4)
    sim = OwnSteps(requests, toy_model(), capacity, config, make_policy(config, requests))
    assert not sim.inline


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 2**32 - 1))
def test_held_steps_delay_every_member_by_one_step(seed: int) -> None:
    # A plain model: each member has a context and a generated count; a decode step adds one to
    # both, a held step (vLLM V0's prefill-only step) leaves them. At the start of every step the
    # cohort must give each member's context, the members needing a block (context a multiple
    # of B), the sums, the step of the next last token (assuming no further hold) and, in a
    # decode step, the members writing their last token.
    rng = np.random.default_rng(seed)
    size, block = 12, int(rng.choice([1, 2, 4, 16]))
    cohort = DecodeCohort(size, block_size=block)
    model: dict[int, list[int]] = {}  # member -> [context, generated, output]
    for step in range(200):
        for i in range(size):
            if i not in model and rng.random() < 0.05:
                ctx, gen = int(rng.integers(1, 40)), int(rng.integers(1, 5))
                out = gen + int(rng.integers(1, 30))
                cohort.add(i, context=ctx, generated=gen, output=out, step=step)
                model[i] = [ctx, gen, out]
        members = sorted(model)
        assert [cohort.context(i, step) for i in members] == [model[i][0] for i in members]
        assert cohort.generated_base[members].tolist() == [model[i][1] - step for i in members]
        assert cohort.needs_at(step) == sum(ctx % block == 0 for ctx, _, _ in model.values())
        assert cohort.context_sum(step) == sum(ctx for ctx, _, _ in model.values())
        assert cohort.generated_sum(step) == sum(gen for _, gen, _ in model.values())
        last = [step + out - gen - 1 for _, gen, out in model.values()]
        assert cohort.next_finish_step() == (min(last) if last else None)
        if rng.random() < 0.3:
            cohort.hold()
            continue
        finishing = sorted(cohort.pop_finishing(step))
        assert finishing == [i for i in members if model[i][1] == model[i][2] - 1]
        for i in members:
            model[i][0] += 1
            model[i][1] += 1
        for i in finishing:
            assert cohort.remove(i, step + 1) == tuple(model.pop(i)[:2])
