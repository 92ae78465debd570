"""Admission and preemption policies of serving engines, as plain functions chosen by name.

Every engine is modelled with the same step: running requests are scheduled first (one decode
token each, or the next chunk of their prefill), then waiting requests are admitted FCFS into the
rest of the `max_num_batched_tokens` budget until one is refused (head-of-line blocking). A policy
says (1) whether the head of the queue may be admitted now, (2) which running request to give up
when blocks run out, (3) where that request goes back in the queue, and (4) a few flags.

Exact block accounting: a request with c tokens of KV holds ceil(c / block_size) blocks; a decode
step that writes token c + 1 needs a new block when c is a multiple of the block size.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from enum import StrEnum
from functools import partial
from typing import NamedTuple, Protocol

import numpy as np
import numpy.typing as npt

from capcliff.errors import InputError
from capcliff.sim.kv_peak import PeakTable
from capcliff.sim.policy_names import DEFAULT_KV_MARGIN as DEFAULT_KV_MARGIN  # re-exported
from capcliff.sim.policy_names import POLICY_NAMES as POLICY_NAMES  # re-exported
from capcliff.units import ceil_div

IntArray = npt.NDArray[np.int64]

# SGLang defaults (python/sglang/srt/environ.py): SGLANG_INIT_NEW_TOKEN_RATIO = 0.7,
# SGLANG_MIN_NEW_TOKEN_RATIO_FACTOR = 0.14, SGLANG_NEW_TOKEN_RATIO_DECAY_STEPS = 600,
# SGLANG_RETRACT_DECODE_STEPS = 20, SGLANG_CLIP_MAX_NEW_TOKENS_ESTIMATION = 4096.
SGLANG_INIT_NEW_TOKEN_RATIO = 0.7
SGLANG_MIN_NEW_TOKEN_RATIO_FACTOR = 0.14
SGLANG_NEW_TOKEN_RATIO_DECAY_STEPS = 600
SGLANG_RETRACT_DECODE_STEPS = 20
SGLANG_CLIP_MAX_NEW_TOKENS = 4096
# vLLM V0 BlockSpaceManager: watermark = 0.01 of the GPU blocks kept free at admission.
VLLM_V0_WATERMARK = 0.01


class VictimOrder(StrEnum):
    """Which running request is given up first when blocks run out."""

    LIFO = "lifo"  # the most recently admitted
    FEWEST_GENERATED = "fewest-generated"  # fewest output tokens, then longest prompt, then latest
    NONE = "none"  # the policy reserves enough never to run out


class Requeue(StrEnum):
    """Where a preempted request goes back in the waiting queue."""

    FRONT = "front"
    BACK = "back"


class Candidate(NamedTuple):
    """A waiting request as the admission rule sees it (token counts; a tuple: made per step)."""

    prompt_tokens: int
    generated_tokens: int
    output_tokens: int  # what it will generate (only oracle policies may look)
    max_output_tokens: int  # the limit the engine knows
    kv_tokens: int  # KV waiting on the host to be swapped back in (0 unless swapped)
    chunk_tokens: int  # tokens scheduled for it this step
    blocks_now: int  # blocks it would allocate this step (with cached blocks it revives)
    cached_tokens: int = 0  # prefix-cache hit: tokens whose KV it reuses instead of computing

    @property
    def prefill_tokens(self) -> int:
        """Tokens to compute before it decodes: prompt + generated - cached (0: swapped in)."""
        if self.kv_tokens:
            return 0
        return self.prompt_tokens + self.generated_tokens - self.cached_tokens


@dataclass(frozen=True)
class RunningState:
    """The running set as arrays: prompt, generated, true output and max output tokens.

    A request with g tokens generated holds P + g - 1 tokens of KV once its prefill is done; the
    rules project a request still in prefill as if it were done, or flag it as `prefilling`.
    """

    prompt_tokens: IntArray
    generated_tokens: IntArray
    output_tokens: IntArray
    max_output_tokens: IntArray
    prefilling: npt.NDArray[np.bool_]  # part way through a prefill that spans steps
    # figures a rule derives from the arrays, kept for the other questions asked of the same
    # running set (`kv_aware_admit`'s table), by the rule's key
    derived: dict[object, object] = field(default_factory=dict, compare=False, repr=False)


class ReplicaView(Protocol):
    """What an admission rule may ask of the replica, at the moment it decides."""

    @property
    def free_blocks(self) -> int:
        """Free blocks now (after this step's allocations so far)."""
        ...

    @property
    def total_blocks(self) -> int:
        """Blocks of the replica's KV cache."""
        ...

    @property
    def block_size(self) -> int:
        """Tokens per block."""
        ...

    @property
    def new_token_ratio(self) -> float:
        """SGLang's current new-token ratio (unused by other policies)."""
        ...

    def full_length_blocks(self) -> int:
        """Sum over running requests of ceil((prompt + max_output) / block_size)."""
        ...

    def running_state(self) -> RunningState:
        """The running set as arrays."""
        ...

    def future_tokens(self, clip: int) -> int:
        """Tokens SGLang expects the running set may still add: the sum of
        min(max_output - generated, clip) over it, tokens (tests/reference_sglang.py sums it from
        `running_state`'s arrays)."""
        ...


AdmitRule = Callable[[ReplicaView, Candidate, Sequence[Candidate]], bool]


def sequence_blocks(cand: Candidate, block_size: int) -> int:
    """Blocks a waiting request needs for its whole sequence (prompt + generated), less the cached
    blocks it hits that a running request already holds: its first chunk's blocks plus those of
    the rest, ceil((P + g) / B) - ceil((cached + chunk) / B). A swapped-in request: its blocks."""
    if cand.kv_tokens:
        return cand.blocks_now
    whole = ceil_div(cand.prompt_tokens + cand.generated_tokens, block_size)
    return cand.blocks_now + whole - ceil_div(cand.cached_tokens + cand.chunk_tokens, block_size)


def vllm_admit(view: ReplicaView, cand: Candidate, admitted: Sequence[Candidate]) -> bool:
    """vLLM V1 with `scheduler_reserve_full_isl` (vllm/config/scheduler.py, default True since
    PR #37307): the scheduler's waiting loop calls `allocate_slots(..., full_sequence_must_fit=
    True)` (vllm/v1/core/kv_cache_manager.py), which returns None unless the blocks of the whole
    sequence (`request.num_tokens`, less prefix-cache hits) are free; the blocks are still
    allocated one chunk at a time. A request that does not fit waits at the head of the queue
    instead of being admitted on its first chunk and preempted part way through its prefill."""
    return sequence_blocks(cand, view.block_size) <= view.free_blocks


def vllm_first_chunk_admit(
    view: ReplicaView, cand: Candidate, admitted: Sequence[Candidate]
) -> bool:
    """vLLM V1 before `scheduler_reserve_full_isl` (or with it off; vllm/v1/core/sched/
    scheduler.py `schedule`, kv_cache_manager.py `allocate_slots`): admit when the blocks of the
    request's first chunk can be allocated now."""
    return cand.blocks_now <= view.free_blocks


def vllm_v0_admit(
    view: ReplicaView,
    cand: Candidate,
    admitted: Sequence[Candidate],
    *,
    watermark: float = VLLM_V0_WATERMARK,
) -> bool:
    """vLLM V0 (vllm/core/block_manager.py `can_allocate`): the whole prompt's blocks must fit with
    int(watermark x blocks) blocks still free afterwards."""
    return view.free_blocks - cand.blocks_now >= int(watermark * view.total_blocks)


# The requests admitted so far in a step as `_admitted_reserve` last counted them: the list
# (held, so an identity match is that list), how many of its entries were counted, the last of
# them (an identity check that those are still its first entries), the clip, the running set's
# reserve they were added to, and the two results. A replica's admission loop asks SGLang's
# rule once per request it admits, each time with one entry more: counted from the start each
# time, a step that admits k requests would cost k^2 / 2 terms.
_ADMITTED_MEMO: list[object] = [None, 0, None, -1, 0.0, 0.0, 0]


def _admitted_reserve(
    running: float, admitted: Sequence[Candidate], clip: int
) -> tuple[float, int]:
    """(tokens reserved: `running` plus each request admitted this step's input +
    min(max_new - generated, clip), added one at a time in order; blocks they took), as SGLang's
    `PrefillAdder` counts its budget down (python/sglang/srt/managers/schedule_policy.py
    `_update_prefill_budget`)."""
    memo = _ADMITTED_MEMO
    start, reserve, blocks, end = 0, running, 0, len(admitted)
    if memo[0] is admitted and memo[3] == clip and memo[4] == running:
        counted = memo[1]
        assert isinstance(counted, int)
        if counted <= end and (not counted or admitted[counted - 1] is memo[2]):
            start, reserve, blocks = counted, memo[5], memo[6]  # type: ignore[assignment]
    for k in range(start, end):  # no slice: mostly the one entry added since the last call
        a = admitted[k]
        reserve += (
            a.prefill_tokens + a.kv_tokens + min(a.max_output_tokens - a.generated_tokens, clip)
        )
        blocks += a.blocks_now
    if end:
        memo[0], memo[1], memo[2], memo[3] = admitted, end, admitted[-1], clip
        memo[4], memo[5], memo[6] = running, reserve, blocks
    return reserve, blocks


def sglang_admit(
    view: ReplicaView,
    cand: Candidate,
    admitted: Sequence[Candidate],
    *,
    clip: int = SGLANG_CLIP_MAX_NEW_TOKENS,
) -> bool:
    """SGLang (python/sglang/srt/managers/schedule_policy.py `PrefillAdder`): running requests
    reserve new_token_ratio x min(max_new - generated, 4096) tokens; requests admitted this step
    reserve their input + min(max_new - generated, 4096); the candidate's input + its clipped
    max_new must be below what is left (free tokens - reserves)."""
    running = view.new_token_ratio * float(view.future_tokens(clip))
    # the head of the queue is asked alone far more often than after others (every run of
    # decode steps): nothing admitted reserves nothing and takes no blocks
    reserve, taken = _admitted_reserve(running, admitted, clip) if admitted else (running, 0)
    free = view.free_blocks
    kv = cand.kv_tokens  # prefill_tokens, without the property: 0 for a swapped-in request
    prefill = 0 if kv else cand.prompt_tokens + cand.generated_tokens - cand.cached_tokens
    need = prefill + kv + min(cand.max_output_tokens - cand.generated_tokens, clip)
    return need < (free + taken) * view.block_size - reserve and cand.blocks_now <= free


def trtllm_no_evict_admit(
    view: ReplicaView, cand: Candidate, admitted: Sequence[Candidate]
) -> bool:
    """TensorRT-LLM GUARANTEED_NO_EVICT (cpp/tensorrt_llm/batch_manager/capacityScheduler.cpp
    `GuaranteedNoEvictScheduler`): running requests keep the blocks they still need to reach
    prompt + max_new; the candidate needs all of its prompt + max_new blocks from what is left."""
    size = view.block_size
    full = view.full_length_blocks() + sum(
        ceil_div(a.prompt_tokens + a.max_output_tokens, size) for a in admitted
    )
    still_needed = full - (view.total_blocks - view.free_blocks)
    need = ceil_div(cand.prompt_tokens + cand.max_output_tokens, size)
    return need <= view.free_blocks - still_needed


def trtllm_max_util_admit(
    view: ReplicaView, cand: Candidate, admitted: Sequence[Candidate]
) -> bool:
    """TensorRT-LLM MAX_UTILIZATION (cpp/tensorrt_llm/batch_manager/capacityScheduler.cpp
    `MaxUtilizationScheduler`): pack greedily, admitting a request when its whole context's
    blocks fit now."""
    return cand.blocks_now <= view.free_blocks


def projected_peak_blocks(
    context_tokens: IntArray, remaining_steps: IntArray, block_size: int
) -> float:
    """Upper bound of the blocks the set will hold at once if every request decodes one token per
    step: max_i sum_{k: r_k >= r_i} (c_k + r_i + B - 1) / B.

    Request k holds c_k + j + 1 tokens after step j while j < r_k, so the total only falls when a
    request finishes; the peak is at some request's last step j = r_i - 1, when the requests
    with r_k >= r_i hold c_k + r_i tokens each (at most (c_k + r_i + B - 1) / B blocks).
    """
    if not len(context_tokens):
        return 0.0
    order = np.argsort(-remaining_steps, kind="stable")
    steps = remaining_steps[order].astype(np.float64)
    alive = np.arange(1, len(order) + 1, dtype=np.float64)
    tokens = np.cumsum(context_tokens[order].astype(np.float64)) + alive * (steps + block_size - 1)
    return float(tokens.max()) / block_size


def estimated_outputs(state: RunningState, quantile_tokens: int | None) -> IntArray:
    """Output length each request is expected to reach: the true one (oracle, quantile None) or
    max(quantile, generated + 1), never above max_output."""
    if quantile_tokens is None:
        return state.output_tokens
    guess = np.maximum(quantile_tokens, state.generated_tokens + 1)
    return np.minimum(guess, state.max_output_tokens)


def _with_candidates(state: RunningState, cands: Sequence[Candidate]) -> RunningState:
    """The running set plus candidates; a candidate whose prefill spills past this step's chunk
    is `prefilling`."""

    def col(values: IntArray, attr: str) -> IntArray:
        extra = np.array([getattr(c, attr) for c in cands], dtype=np.int64)
        return np.concatenate([values, extra])

    spills = np.array([c.chunk_tokens < c.prefill_tokens for c in cands], dtype=bool)
    return RunningState(
        col(state.prompt_tokens, "prompt_tokens"),
        col(state.generated_tokens, "generated_tokens"),
        col(state.output_tokens, "output_tokens"),
        col(state.max_output_tokens, "max_output_tokens"),
        np.concatenate([state.prefilling, spills]),
    )


def kv_aware_admit(
    view: ReplicaView,
    cand: Candidate,
    admitted: Sequence[Candidate],
    *,
    margin: float = DEFAULT_KV_MARGIN,
    quantile_tokens: int | None = None,
) -> bool:
    """capcliff's kv-aware rule: admit only when the projected peak KV of the running set, the
    requests admitted this step and the candidate stays under total x (1 - margin). Outputs are
    known (oracle) or estimated by a quantile of the output distribution.

    Decoding requests gain one token per step (the budget always covers them), so
    `projected_peak_blocks` bounds them; a request whose prefill spans steps may start decoding
    late, so it is counted at its final size, ceil((P + O - 1) / B) blocks, throughout. With known
    outputs and no margin this never over-commits: the policy never preempts.

    The head of the queue alone (no `admitted`), the common question, is answered from the
    running set's `PeakTable`, built once per running set: the same peak, bit for bit."""
    limit = view.total_blocks * (1 - margin)
    if admitted:
        return kv_aware_peak(view.running_state(), [*admitted, cand], quantile_tokens,
                             view.block_size) <= limit  # fmt: skip
    size = view.block_size
    table, lagging = _running_table(view.running_state(), quantile_tokens, size)
    prompt, generated = cand.prompt_tokens, cand.generated_tokens
    output = cand.output_tokens
    if quantile_tokens is not None:  # `estimated_outputs`
        output = min(max(quantile_tokens, generated + 1), cand.max_output_tokens)
    if cand.chunk_tokens < cand.prefill_tokens:  # its prefill spills past this step
        tokens = table.peak()
        lagging += -(-(prompt + output - 1) // size)
    else:
        tokens = table.peak_with(prompt + generated - 1, output - generated)
    return float(tokens) / size + float(lagging) <= limit


def kv_aware_peak(
    running: RunningState, cands: Sequence[Candidate], quantile_tokens: int | None, size: int
) -> float:
    """Projected peak blocks of `running` and `cands` (`kv_aware_admit`), from the arrays."""
    state = _with_candidates(running, cands)
    outputs = estimated_outputs(state, quantile_tokens)
    context = state.prompt_tokens + state.generated_tokens - 1
    lag = state.prefilling
    steady = ~lag
    peak = projected_peak_blocks(context[steady], (outputs - state.generated_tokens)[steady], size)
    lagging = -(-(state.prompt_tokens[lag] + outputs[lag] - 1) // size)
    return peak + float(lagging.sum())


def _running_table(
    state: RunningState, quantile_tokens: int | None, size: int
) -> tuple[PeakTable, int]:
    """The running set's decoding requests as a `PeakTable`, and the blocks its requests in
    prefill are counted at, ceil((P + O - 1) / B) summed (kept in `state.derived`)."""
    key = ("kv-aware", quantile_tokens, size)
    held = state.derived.get(key)
    if held is not None:
        return held  # type: ignore[return-value]
    outputs = estimated_outputs(state, quantile_tokens)
    context = state.prompt_tokens + state.generated_tokens - 1
    lag = state.prefilling
    steady = ~lag
    table = PeakTable.of(context[steady], (outputs - state.generated_tokens)[steady], size)
    lagging = int((-(-(state.prompt_tokens[lag] + outputs[lag] - 1) // size)).sum())
    state.derived[key] = (table, lagging)
    return table, lagging


@dataclass(frozen=True)
class NewTokenRatio:
    """SGLang's new_token_ratio (scheduler.py): from `init`, less `decay` per step without a
    retraction, down to `floor`; after one, min(1, (generated + retract_steps x n) / max_new) over
    the running batch (`retract_decode`), which never holds the chunked request
    (`chunked_req_to_exclude`). `base` less `steps` decays, so k steps are exact in one go."""

    init: float = SGLANG_INIT_NEW_TOKEN_RATIO
    floor: float = SGLANG_INIT_NEW_TOKEN_RATIO * SGLANG_MIN_NEW_TOKEN_RATIO_FACTOR
    decay: float = (
        SGLANG_INIT_NEW_TOKEN_RATIO * (1 - SGLANG_MIN_NEW_TOKEN_RATIO_FACTOR)
    ) / SGLANG_NEW_TOKEN_RATIO_DECAY_STEPS
    retract_steps: int = SGLANG_RETRACT_DECODE_STEPS

    def value(self, base: float, steps: int) -> float:
        """The ratio `steps` steps without a retraction after it was `base`."""
        return max(self.floor, base - steps * self.decay)

    def values(self, base: float, steps: IntArray) -> npt.NDArray[np.float64]:
        """`value` for many step counts at once (same arithmetic)."""
        return np.maximum(self.floor, base - steps * self.decay)  # type: ignore[no-any-return]

    def after_retraction(self, generated: int, max_output: int, running: int) -> float:
        """The base ratio after a retraction left `running` requests with these sums."""
        if max_output <= 0:
            return self.init
        return min(1.0, (generated + self.retract_steps * running) / max_output)


def sglang_admissible(
    *,
    need_tokens: int,
    blocks_now: int,
    free_blocks_after: IntArray,
    block_size: int,
    ratios: npt.NDArray[np.float64],
    reserve_tokens: IntArray,
) -> npt.NDArray[np.bool_]:
    """`sglang_admit`'s verdict at each of several steps, for a candidate needing `need_tokens`
    tokens and `blocks_now` blocks: free blocks then (after the step's decode allocations), the
    ratio then and the running set's clipped remaining outputs (tokens) then."""
    free_tokens = free_blocks_after * block_size
    admissible: npt.NDArray[np.bool_] = (need_tokens < free_tokens - ratios * reserve_tokens) & (
        blocks_now <= free_blocks_after
    )
    return admissible


@dataclass(frozen=True)
class Policy:
    """An engine's admission and preemption policy."""

    name: str
    admit: AdmitRule
    victim_order: VictimOrder
    admits_after_preemption: bool  # may admit in a step that preempted
    requeue: Requeue
    whole_prompt_blocks: bool  # allocates blocks for the whole prefill at admission
    event_triggered: bool = False  # re-evaluates admission only when the running set changes
    # admits only when the whole sequence's blocks are free (allocating one chunk at a time)
    admits_whole_sequence: bool = False
    ratio: NewTokenRatio | None = None
    # reserves every admitted request's prompt + max output blocks and never preempts: the most
    # it runs at once is the KV blocks over a request's reservation, whatever the cap
    reserves_full_sequence: bool = False


def policy(
    name: str, *, kv_margin: float = DEFAULT_KV_MARGIN, quantile_tokens: int | None = None
) -> Policy:
    """The policy called `name` (one of POLICY_NAMES); kv-aware takes its margin and output
    quantile (None: outputs known)."""
    if name == "kv-aware":
        rule = partial(kv_aware_admit, margin=kv_margin, quantile_tokens=quantile_tokens)
        return replace(_ENGINE_POLICIES[name], admit=rule)
    if name not in _ENGINE_POLICIES:
        raise InputError(f"policy: unknown {name!r}; known: {', '.join(POLICY_NAMES)}")
    return _ENGINE_POLICIES[name]


_ENGINE_POLICIES = {
    # V1 `schedule`: running first; when a running request's `allocate_slots` fails, the last
    # of `self.running` is preempted (`self.running.pop()`, LIFO), freed and put at the front of
    # the queue (`_preempt_request`: `self.waiting.prepend_request`); no new admissions in a step
    # that preempted (`if not preempted_reqs`); a waiting request needs its whole sequence's
    # blocks (`scheduler_reserve_full_isl`, the default).
    "vllm": Policy(
        "vllm", vllm_admit, VictimOrder.LIFO, admits_after_preemption=False,
        requeue=Requeue.FRONT, whole_prompt_blocks=False, admits_whole_sequence=True,
    ),
    # V1 releases before `scheduler_reserve_full_isl` (ENGINE_POLICY picks it by release):
    # admission on the first chunk's blocks.
    "vllm-first-chunk": Policy(
        "vllm-first-chunk", vllm_first_chunk_admit, VictimOrder.LIFO,
        admits_after_preemption=False, requeue=Requeue.FRONT, whole_prompt_blocks=False,
    ),
    # V0 `_schedule_chunked_prefill`: prefills are scheduled after running even if it preempted;
    # the block manager allocates the whole prompt at admission.
    "vllm-v0": Policy(
        "vllm-v0", vllm_v0_admit, VictimOrder.LIFO, admits_after_preemption=True,
        requeue=Requeue.FRONT, whole_prompt_blocks=True,
    ),
    # python/sglang/srt/managers/scheduler.py `update_running_batch`: retracted requests are
    # appended to the waiting queue (`_add_request_to_queue(req, is_retracted=True)`).
    "sglang": Policy(
        "sglang", sglang_admit, VictimOrder.FEWEST_GENERATED, admits_after_preemption=True,
        requeue=Requeue.BACK, whole_prompt_blocks=False, ratio=NewTokenRatio(),
    ),
    "trtllm-no-evict": Policy(
        "trtllm-no-evict", trtllm_no_evict_admit, VictimOrder.NONE,
        admits_after_preemption=False, requeue=Requeue.FRONT, whole_prompt_blocks=False,
        reserves_full_sequence=True,
    ),
    # `MaxUtilizationScheduler` pauses the last started request and drops the requests after it
    # from the step; a context request needs its whole context's blocks.
    "trtllm-max-util": Policy(
        "trtllm-max-util", trtllm_max_util_admit, VictimOrder.LIFO, admits_after_preemption=False,
        requeue=Requeue.FRONT, whole_prompt_blocks=True,
    ),
    "kv-aware": Policy(
        "kv-aware", kv_aware_admit, VictimOrder.LIFO, admits_after_preemption=False,
        requeue=Requeue.FRONT, whole_prompt_blocks=False, event_triggered=True,
    ),
}  # fmt: skip


def victim_key(generated_tokens: int, prompt_tokens: int, admit_seq: int) -> tuple[int, int, int]:
    """Sort key of SGLang's retraction order (python/sglang/srt/managers/schedule_batch.py
    `retract_decode`): fewest generated tokens first, then the longest prompt, then the latest
    admitted; the smallest key is retracted first."""
    return generated_tokens, -prompt_tokens, -admit_seq
