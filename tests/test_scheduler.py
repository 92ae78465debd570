"""Admission and retraction rules of each engine, on hand-built replica states."""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from capcliff.errors import InputError
from capcliff.sim.policies import (
    POLICY_NAMES,
    Candidate,
    NewTokenRatio,
    Requeue,
    RunningState,
    VictimOrder,
    kv_aware_admit,
    policy,
    projected_peak_blocks,
    sequence_blocks,
    sglang_admit,
    trtllm_no_evict_admit,
    victim_key,
    vllm_admit,
    vllm_first_chunk_admit,
    vllm_v0_admit,
)
from tests.reference_sglang import future_tokens_of, sglang_first_admissible_step


def _state(prompt: list[int], generated: list[int], output: list[int], max_output: list[int],
           prefilling: list[bool] | None = None) -> RunningState:  # fmt: skip
    return RunningState(
        np.array(prompt, dtype=np.int64),
        np.array(generated, dtype=np.int64),
        np.array(output, dtype=np.int64),
        np.array(max_output, dtype=np.int64),
        np.array(prefilling or [False] * len(prompt), dtype=bool),
    )


@dataclass
class View:
    free_blocks: int = 100
    total_blocks: int = 1_000
    block_size: int = 16
    new_token_ratio: float = 0.5
    full: int = 0
    state: RunningState = field(default_factory=lambda: _state([], [], [], []))

    def full_length_blocks(self) -> int:
        return self.full

    def running_state(self) -> RunningState:
        return self.state

    def future_tokens(self, clip: int) -> int:
        return future_tokens_of(self.running_state(), clip)


def _cand(prompt: int = 100, *, blocks: int = 7, max_output: int = 1_000, output: int = 500,
          generated: int = 0, chunk: int | None = None) -> Candidate:  # fmt: skip
    return Candidate(prompt, generated, output, max_output, 0, prompt if chunk is None else chunk,
                     blocks)  # fmt: skip


def test_vllm_first_chunk_rule_admits_when_the_first_chunk_fits() -> None:
    assert vllm_first_chunk_admit(View(free_blocks=7), _cand(blocks=7), [])
    assert not vllm_first_chunk_admit(View(free_blocks=6), _cand(blocks=7), [])


def test_vllm_admits_only_when_the_whole_prompt_fits() -> None:
    # prompt 1,000 tokens, first chunk 256 tokens = 16 blocks of 16; the whole prompt needs
    # ceil(1000 / 16) = 63 blocks (scheduler_reserve_full_isl)
    cand = _cand(1_000, blocks=16, chunk=256)
    assert sequence_blocks(cand, 16) == 63
    assert not vllm_admit(View(free_blocks=62), cand, [])
    assert vllm_admit(View(free_blocks=63), cand, [])
    assert vllm_first_chunk_admit(View(free_blocks=16), cand, [])


def test_vllm_whole_sequence_counts_cached_blocks_as_taken() -> None:
    # prompt 1,000 + 10 generated (a recompute), 640 tokens cached (40 blocks, 5 of them
    # unreferenced so they count as blocks to take); chunk 256: blocks now = ceil(896 / 16) - 40
    # + 5 = 21; the whole sequence: 21 + ceil(1010 / 16) - ceil(896 / 16) = 21 + 64 - 56 = 29
    cand = Candidate(1_000, 10, 500, 1_000, 0, 256, 21, 640)
    assert sequence_blocks(cand, 16) == 29


def test_vllm_v0_keeps_a_one_percent_watermark() -> None:
    # 1,000 blocks -> watermark int(0.01 x 1,000) = 10: 50 free - 40 = 10 >= 10 admits, 41 not.
    assert vllm_v0_admit(View(free_blocks=50), _cand(blocks=40), [])
    assert not vllm_v0_admit(View(free_blocks=50), _cand(blocks=41), [])


def test_sglang_reserves_ratio_times_the_clipped_remaining_output() -> None:
    # Free 100 blocks x 16 = 1,600 tokens. The running request may add min(1,000 - 10, 4,096) =
    # 990 tokens, reserved at ratio 0.5: 495 -> 1,105 left. A candidate of 200 + min(500, 4,096)
    # = 700 < 1,105 fits; with max_new 5,000 it needs 200 + 4,096 = 4,296 and does not.
    view = View(state=_state([100], [10], [500], [1_000]))
    assert sglang_admit(view, _cand(200, blocks=13, max_output=500), [])
    assert not sglang_admit(view, _cand(200, blocks=13, max_output=5_000), [])


def test_sglang_counts_this_steps_admissions_in_full() -> None:
    # Same view; a request admitted earlier this step (300 + min(400, 4,096) = 700 reserved, its
    # 19 blocks already taken from the 100 free) leaves 1,105 - 700 = 405: the 700 candidate waits.
    view = View(free_blocks=81, state=_state([100], [10], [500], [1_000]))
    first = Candidate(300, 0, 400, 400, 0, 300, 19)
    assert not sglang_admit(view, _cand(200, blocks=13, max_output=500), [first])


def test_sglang_counts_this_steps_admissions_afresh_after_the_list_changed() -> None:
    # One token a block, 20 free; the running request may add 10 - 2 = 8 tokens, reserved at
    # ratio 0.5: 4. A (prompt 5, max_new 4, 5 blocks) admitted reserves 9, its 5 blocks count as
    # free tokens: 25 - (4 + 9) = 12 left, so an 11-token candidate fits, a 12-token one not.
    view = View(free_blocks=20, block_size=1, state=_state([4], [2], [10], [10]))
    a = Candidate(5, 0, 4, 4, 0, 5, 5)
    admitted = [a]
    assert sglang_admit(view, _cand(3, blocks=3, max_output=8), admitted)
    assert not sglang_admit(view, _cand(4, blocks=3, max_output=8), admitted)
    # A replaced in place by B (prompt 7): 25 - (4 + 11) = 10 left; a sum kept from A's would
    # still admit the 11-token candidate.
    admitted[0] = Candidate(7, 0, 4, 4, 0, 7, 5)
    assert not sglang_admit(view, _cand(3, blocks=3, max_output=8), admitted)
    # A again, at ratio 1: the running request reserves 8, 25 - (8 + 9) = 8 left (A's 9 added to
    # the ratio-0.5 reserve would leave 12).
    admitted[0] = a
    assert sglang_admit(view, _cand(3, blocks=3, max_output=8), admitted)
    assert not sglang_admit(replace(view, new_token_ratio=1.0), _cand(3, blocks=3, max_output=8),
                            admitted)  # fmt: skip
    # C (prompt 2, max_new 3, 2 blocks) appended: 27 - (4 + 9 + 5) = 9 left, counted on from A
    # or from the start (a fresh list).
    admitted.append(Candidate(2, 0, 3, 3, 0, 2, 2))
    assert sglang_admit(view, _cand(2, blocks=3, max_output=6), admitted)  # 8 < 9
    assert not sglang_admit(view, _cand(3, blocks=3, max_output=6), admitted)  # 9, not < 9
    assert not sglang_admit(view, _cand(3, blocks=3, max_output=6), list(admitted))
    # emptied and refilled with C alone (one entry, as when A was counted): 22 - (4 + 5) = 13
    admitted[:] = [Candidate(2, 0, 3, 3, 0, 2, 2)]
    assert sglang_admit(view, _cand(4, blocks=3, max_output=8), admitted)  # 12 < 13


def test_trtllm_no_evict_reserves_prompt_plus_max_output() -> None:
    # 100 blocks, 60 free (running holds 40 and may grow to 70: 30 still needed) -> 30 left.
    # prompt 100 + max 380 = 480 tokens = 30 blocks fits; 481 tokens = 31 blocks does not.
    view = View(free_blocks=60, total_blocks=100, full=70)
    assert trtllm_no_evict_admit(view, _cand(100, max_output=380), [])
    assert not trtllm_no_evict_admit(view, _cand(100, max_output=381), [])


def test_projected_peak_is_reached_at_a_request_end() -> None:
    # Contexts 10 and 0, remaining 5 and 2 steps, B = 1: after step j they hold 11 + j and 1 + j.
    # At j = 1 (second request's last step): 12 + 2 = 14; at j = 4: 15. Peak 15.
    assert projected_peak_blocks(np.array([10, 0]), np.array([5, 2]), 1) == 15
    # B = 4 bounds blocks by (tokens + 3) / 4: max((10 + 5 + 3) / 4, (10 + 0 + 2 x (2 + 3)) / 4)
    # = max(4.5, 5) = 5 (the true peak is ceil(15/4) = 4 blocks).
    assert projected_peak_blocks(np.array([10, 0]), np.array([5, 2]), 4) == 5


def test_kv_aware_admits_only_under_the_margin() -> None:
    # Running: prompt 100, 50 generated of 150 (context 149, 100 steps left). Candidate: prompt
    # 100, output 100 (projected from context 99, 100 steps). B = 1: both end at step 99 holding
    # 249 + 199 = 448 tokens. 448 <= 500 x (1 - 0.1) = 450 admits; a 0.11 margin (445) does not.
    view = View(total_blocks=500, block_size=1, state=_state([100], [50], [150], [150]))
    cand = _cand(100, output=100, max_output=100, blocks=100)
    assert kv_aware_admit(view, cand, [], margin=0.1)
    assert not kv_aware_admit(view, cand, [], margin=0.11)


def test_kv_aware_counts_a_spilling_prefill_at_its_final_size() -> None:
    # The candidate's 100-token prompt gets only a 40-token chunk, so it may start decoding late:
    # it counts as 100 + 100 - 1 = 199 tokens throughout. The running request peaks at
    # 149 + 100 = 249: 249 + 199 = 448 <= 450 admits. A running request with output 400 peaks at
    # 149 + 350 = 499: 499 + 199 = 698 > 450 refuses.
    spill = _cand(100, output=100, max_output=100, blocks=40, chunk=40)
    short = View(total_blocks=500, block_size=1, state=_state([100], [50], [150], [150]))
    long = View(total_blocks=500, block_size=1, state=_state([100], [50], [400], [400]))
    assert kv_aware_admit(short, spill, [], margin=0.1)
    assert not kv_aware_admit(long, spill, [], margin=0.1)


def test_kv_aware_with_a_quantile_expects_at_least_one_more_token() -> None:
    # Quantile 10 tokens. Running: 50 generated, so it expects max(10, 51) = 51: one step left,
    # context 149 -> 150. Candidate: expects 10 -> context 9, 10 steps, ends holding 19.
    # Peak: at the running request's end, 150 + 10 = 160 <= 200: admitted. Knowing the true
    # output (150: 100 steps left, peak 249 alone) refuses it.
    view = View(total_blocks=200, block_size=1, state=_state([100], [50], [150], [150]))
    cand = _cand(10, output=300, max_output=300, blocks=10)
    assert kv_aware_admit(view, cand, [], margin=0.0, quantile_tokens=10)
    assert not kv_aware_admit(view, cand, [], margin=0.0)


def test_new_token_ratio_defaults_follow_sglang() -> None:
    # init 0.7, floor 0.7 x 0.14 = 0.098, decay (0.7 - 0.098) / 600 per step.
    ratio = NewTokenRatio()
    assert ratio.floor == pytest.approx(0.098)
    assert ratio.value(0.7, 300) == pytest.approx(0.399)
    assert ratio.value(0.7, 600) == pytest.approx(0.098)
    assert ratio.value(0.7, 10_000) == pytest.approx(0.098)


def test_ratio_after_a_retraction() -> None:
    # 100 tokens generated, 5 running, max_new 1,000: (100 + 20 x 5) / 1,000 = 0.2.
    assert NewTokenRatio().after_retraction(100, 1_000, 5) == pytest.approx(0.2)
    assert NewTokenRatio().after_retraction(10_000, 1_000, 5) == 1.0


def test_sglang_retracts_fewest_generated_then_longest_prompt_then_latest() -> None:
    keys = {
        "few": victim_key(3, 100, 1),
        "many": victim_key(9, 100, 2),
        "few-long": victim_key(3, 500, 3),
        "few-long-late": victim_key(3, 500, 4),
    }
    assert sorted(keys, key=keys.__getitem__) == ["few-long-late", "few-long", "few", "many"]


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.integers(1, 6_000), min_size=1, max_size=20),
    st.integers(0, 400),
    st.integers(1, 3_000),
    st.integers(0, 800),
)
def test_sglang_horizon_agrees_with_the_rule_step_by_step(
    future: list[int], free: int, need: int, ratio_steps: int
) -> None:
    ratio = NewTokenRatio()
    steps = np.arange(50, dtype=np.int64)
    free_after = np.maximum(free - 2 * steps, 0)
    x = np.array(future, dtype=np.int64)
    ratios = ratio.values(0.7, ratio_steps + steps)

    def first_hit(lo: int, hi: int) -> int | None:
        return sglang_first_admissible_step(
            need_tokens=need,
            blocks_now=1,
            free_blocks_after=free_after[lo:hi],
            block_size=16,
            ratios=ratios[lo:hi],
            future_tokens=np.sort(x),
            first=lo,
        )

    hit = first_hit(0, 50)
    # scanned in two windows (as `_sglang_limit` does), the first hit is the same
    assert (first_hit(0, 17) if first_hit(0, 17) is not None else first_hit(17, 50)) == hit
    for j in range(50):
        view = View(
            free_blocks=int(free_after[j]),
            new_token_ratio=ratio.value(0.7, ratio_steps + j),
            state=_state([1] * len(x), [0] * len(x), [1] * len(x), (x - j).tolist()),
        )
        cand = Candidate(need - min(10, 4096), 0, 10, 10, 0, 1, 1)
        if sglang_admit(view, cand, []):
            assert hit == j
            return
    assert hit is None


@pytest.mark.parametrize("name", POLICY_NAMES)
def test_every_policy_is_known_by_name(name: str) -> None:
    assert policy(name).name == name


def test_only_the_no_evict_policy_has_no_victims() -> None:
    orders = {name: policy(name).victim_order for name in POLICY_NAMES}
    assert [n for n, o in orders.items() if o is VictimOrder.NONE] == ["trtllm-no-evict"]
    assert orders["sglang"] is VictimOrder.FEWEST_GENERATED


def test_unknown_policy_lists_the_known_ones() -> None:
    with pytest.raises(InputError, match="vllm"):
        policy("fifo")


def test_preempted_requests_go_back_where_each_engine_puts_them() -> None:
    # vLLM V1 `Scheduler.schedule` (vllm/v1/core/sched/scheduler.py): self.waiting.
    # prepend_request(preempted_req), the head of the queue. SGLang `update_running_batch`
    # (python/sglang/srt/managers/scheduler.py): _add_request_to_queue(req, is_retracted=True),
    # which appends to waiting_queue: the tail.
    assert policy("vllm").requeue is Requeue.FRONT
    assert policy("sglang").requeue is Requeue.BACK
