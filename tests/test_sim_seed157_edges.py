"""Edges the seed-157 mutation sample (`benchmarks/mutation.py --packages sim --seed 157`) found
untested. Every expected value is worked out by hand in the comments."""

from __future__ import annotations

from collections.abc import Callable
from types import SimpleNamespace

import numpy as np
import pytest

from capcliff.errors import InputError
from capcliff.perf.decode_line import DecodeLine
from capcliff.sim.config import MAX_ADP_BALANCE_ITERS, SimConfig
from capcliff.sim.loop.fast_forward import _steps_lasting, decided_steps
from capcliff.sim.reuse.prefix_reuse import ReuseRecord


@pytest.mark.parametrize("balance", [(-1, 10), (10, -1), (-1, -1), (0, MAX_ADP_BALANCE_ITERS + 1)])
def test_an_attention_dp_balance_with_either_count_out_of_range_is_refused(
    balance: tuple[int, int],
) -> None:
    # Both timeout_iters and batching_wait_iters must lie in [0, 100,000]: the smaller of the two
    # must be >= 0, the larger <= 100,000. (-1, 10) and (10, -1) have one negative count each
    # (their larger, 10, is in range), so only the lower bound refuses them.
    with pytest.raises(InputError, match="adp_balance: "):
        SimConfig(policy="trtllm-no-evict", adp_balance=balance)


@pytest.mark.parametrize("balance", [(0, 0), (60, 0), (MAX_ADP_BALANCE_ITERS, 0)])
def test_an_attention_dp_balance_in_range_is_kept(balance: tuple[int, int]) -> None:
    assert SimConfig(policy="trtllm-no-evict", adp_balance=balance).adp_balance == balance


def _lasting_of(step_s: float, due_s: float) -> Callable[[int], int]:
    """`lasting(n)` for steps of `step_s` each: the smallest m in [1, n] whose first m steps last
    at least `due_s` (m x step_s >= due_s), else n."""
    return lambda n: next((m for m in range(1, n + 1) if m * step_s >= due_s), n)


@pytest.mark.parametrize(
    ("due_s", "steps"),
    [(-0.001, 1), (0.0, 1), (0.0005, 2), (0.001, 2), (0.0015, 3), (0.05, 10)],
)
def test_under_overlap_an_arrival_due_at_the_run_start_stops_it_after_one_step(
    due_s: float, steps: int
) -> None:
    # Overlap scheduler, steps of 1 ms, a run of at most 10 steps. The run's first step was
    # decided before it began; step k + 1 is decided while step k runs and takes the arrivals by
    # the start of step k, (k - 1) ms. An arrival due 0 s from the run's start (already there,
    # the tie included in due_s) is seen when step 2 is decided: the run is 1 step, the same as
    # one due before the start. Due 0.5 ms or 1 ms: it lands in step 1 (by its end), so step 2 is
    # already decided and step 3 takes it: 2 steps. Due 1.5 ms: 3 steps. Due 50 ms: past the
    # limit of 10 steps.
    assert decided_steps(True, due_s, 10, _lasting_of(0.001, due_s)) == steps
    # a run of one step is one step, however late the arrival
    assert decided_steps(True, due_s, 1, _lasting_of(0.001, due_s)) == 1


U = 2.0**-11  # seconds: a unit whose multiples sum without rounding


class _LineModel:
    """The two methods `_steps_lasting` reads, for a decode line given by its terms."""

    def __init__(self, terms: tuple[float, ...]) -> None:
        self.terms = terms

    def decode_terms(self, seqs: int) -> tuple[float, ...]:
        return self.terms

    context_bytes_per_token = 0.0

    def decode_line(self, seqs: int, context0: int) -> DecodeLine:
        t = self.terms
        return DecodeLine(t[0], t[2], t[3], t[5], t[6], t[7], t[8], t[9])


@pytest.mark.parametrize(
    ("cmp0", "cmp1", "due_units", "steps"),
    [
        # compute grows past memory: steps of 2, 2, 3, 4, 5 U (max(2, 1 + j)), ending at 2, 4, 7,
        # 11, 16 U; the first 4 last 11 U >= 10 U. Memory alone (2 U a step) would say 5.
        (U, U, 10, 4),
        (U, U, 7, 3),  # 7 U reached at the end of step 3 exactly
        # memory-bound throughout (compute 1 U a step): steps of 2 U, 10 U after 5 steps
        (U, 0.0, 10, 5),
        (U, 0.0, 7, 4),
    ],
)
def test_a_run_that_turns_compute_bound_counts_its_longer_steps(
    cmp0: float, cmp1: float, due_units: int, steps: int
) -> None:
    # A decode line of memory 2 U a step (no growth) and compute cmp0 + cmp1 j in step j, no
    # fixed part or floor, context 0, at most 5 steps: the smallest m whose first m steps last
    # at least due_units x U.
    terms = (2 * U, 0.0, 0.0, cmp0, 0.0, cmp1, 0.0, 0.0, 0.0, 0.0)
    sim = SimpleNamespace(line_terms={}, model=_LineModel(terms))
    assert _steps_lasting(sim, 1, 0, 5, due_units * U) == steps  # type: ignore[arg-type]


def _record(queried: int, hit: int, resumed_queried: int, resumed_hit: int) -> ReuseRecord:
    empty = np.zeros(0)
    return ReuseRecord(
        queried_tokens=queried, hit_tokens=hit, evicted_blocks=0, lookup_s=empty,
        lookup_queried=empty, lookup_hit=empty, resumed_queried_tokens=resumed_queried,
        resumed_hit_tokens=resumed_hit,
    )  # fmt: skip


def test_a_replica_hit_rate_leaves_out_the_lookups_of_preempted_requests() -> None:
    # 100 tokens queried, 40 hit; 20 and 15 of them by requests preempted before: the new
    # requests hit 40 - 15 = 25 of 100 - 20 = 80 tokens, 0.3125 (vLLM's PrefixCacheStats).
    assert _record(100, 40, 20, 15).hit_rate == 0.3125
    assert _record(100, 40, 0, 0).hit_rate == 0.4
    # only resumed lookups, or none at all: 0
    assert _record(20, 15, 20, 15).hit_rate == 0.0
    assert _record(0, 0, 0, 0).hit_rate == 0.0
