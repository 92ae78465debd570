"""Plain references for SGLang's admission reserve, checked against the simulator's incremental
forms: the running set's clipped remaining outputs summed from its arrays, and the first step a
candidate fits found with arrays over every step (the fast path in
capcliff.sim.loop.fast_forward keeps running sums instead and must agree)."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from capcliff.sim.policies import SGLANG_CLIP_MAX_NEW_TOKENS, RunningState, sglang_admissible

IntArray = npt.NDArray[np.int64]


def sglang_future_tokens(max_output: IntArray, generated: IntArray, clip: int) -> IntArray:
    """Tokens SGLang expects each request may still add: min(max_new - generated, clip)."""
    future: IntArray = np.minimum(max_output - generated, clip)
    return future


def future_tokens_of(state: RunningState, clip: int) -> int:
    """Sum over `state` of `sglang_future_tokens`, tokens: what a replica keeps as a running sum
    (`ReplicaView.future_tokens`), from the arrays."""
    return int(sglang_future_tokens(state.max_output_tokens, state.generated_tokens, clip).sum())


def sglang_first_admissible_step(
    *,
    need_tokens: int,
    blocks_now: int,
    free_blocks_after: IntArray,
    block_size: int,
    ratios: npt.NDArray[np.float64],
    future_tokens: IntArray,
    clip: int = SGLANG_CLIP_MAX_NEW_TOKENS,
    first: int = 0,
) -> int | None:
    """First step j at which `sglang_admit` would admit a candidate needing `need_tokens` while
    every running request gains one token per step (None if none in the arrays). future_tokens:
    sorted max_new - generated at step 0 (unclipped) per running request; the arrays cover steps
    first, first + 1, ...: free blocks at step j after its decode allocations; the ratio then."""
    steps = np.arange(first, first + len(ratios), dtype=np.int64)
    x = future_tokens
    below = np.concatenate([[0], np.cumsum(x)])
    cut = np.searchsorted(x, clip + steps, side="left")  # x < clip + j -> x - j < clip
    reserve_tokens = below[cut] + (clip + steps) * (len(x) - cut) - steps * len(x)
    ok = sglang_admissible(
        need_tokens=need_tokens,
        blocks_now=blocks_now,
        free_blocks_after=free_blocks_after,
        block_size=block_size,
        ratios=ratios,
        reserve_tokens=reserve_tokens,
    )
    hits = np.flatnonzero(ok)
    return first + int(hits[0]) if len(hits) else None
