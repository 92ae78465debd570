"""Edges the seed-620 mutation sample (`benchmarks/mutation.py --packages analysis --seed 620`)
found untested. Every expected value is worked out by hand in the comments."""

from __future__ import annotations

import math
from types import SimpleNamespace
from typing import Any, cast

import numpy as np
import pytest

from capcliff.analysis.disagg.fleet_reasons import _kinds
from capcliff.analysis.evaluate.steady_state import steady_state


def test_a_stationary_window_shorter_than_two_decodes_is_one_interval_of_zero_batches() -> None:
    # Two seeds start decoding at 0 and 0.5 s, two more requests at 1.0 and 1.5 s; each decodes
    # 4 tokens over 2 s (2 tokens/s). The window runs from the last seed's start, 0.5 s, to the
    # last start, 1.5 s: 1 s, under RESIDENCE_PER_BATCH x the mean decode = 2 x 2 s, so
    # int(1 / 4) = 0 batches, and the token rate is read over the whole window as one interval:
    # overlaps with [0.5, 1.5]: 1 s, 1 s, 0.5 s and 0 s at 2 tokens/s = 5 tokens in 1 s = 5
    # tokens/s; over the 4 tokens of a non-seed request, 1.25 requests/s. No spread from one
    # interval. (Seed 620's `max(batches, 0) + 1` = 1 edge left no interval: a NaN rate.)
    start = np.array([0.0, 0.5, 1.0, 1.5])
    run = SimpleNamespace(
        arrival_s=np.zeros(4), ttft_s=start, finish_s=start + 2.0, tpot_s=np.full(4, 2 / 3),
        e2e_s=start + 2.0, output_tokens=np.full(4, 4), first_preemption=None,
    )  # fmt: skip
    state = steady_state(cast(Any, run), open_loop=False, seeds=2)
    assert (state.window_s, state.batches) == ((0.5, 1.5), 0)
    assert state.output_tok_s == pytest.approx(5.0)
    assert state.throughput_rps == pytest.approx(1.25)
    assert (state.rps_half_width, state.tpot_half_width) == (math.inf, math.inf)


def _agg(steady: object) -> Any:
    return SimpleNamespace(
        layout="tp1", gpus=1, hardware="h100-sxm", usd_per_hour=3.0, ttft_p99_s=0.5,
        tpot_p99_s=0.02, usd_per_million_output_tokens=1.25, steady=steady,
    )  # fmt: skip


@pytest.mark.parametrize(
    ("steady", "note"),
    [
        (None, False),  # a batch figure: no steady state, nothing said of a queue
        (SimpleNamespace(saturated=False), False),  # a steady state that keeps up
        (SimpleNamespace(saturated=True), True),  # one whose queue grows
    ],
    ids=["no-steady-state", "keeps-up", "saturated"],
)
def test_the_best_aggregated_line_says_its_queue_grows_only_when_saturated(
    steady: object, note: bool
) -> None:
    # The answer costs $3.00 an hour and the aggregated layout is it (meets, not over it): one
    # line for it, then "no disaggregated deployment up to $6.00 per hour (2 x the answer)".
    # Seed 620's `agg.steady or agg.steady.saturated` said the queue grows of a steady state
    # that keeps up, and failed on no steady state (None has no `saturated`).
    lines = _kinds(cast(Any, SimpleNamespace(stop=3.0)), None, (False, _agg(steady), True))
    assert lines[0] == (
        "best aggregated tp1 on 1 x h100-sxm ($3.00 per hour): meets the SLOs, TTFT p99 0.50 s, "
        "TPOT p99 20.0 ms, $1.25 per million output tokens"
        + (" (its queue grows at this rate)" if note else "")
    )
    assert lines[1:] == [
        "no disaggregated deployment up to $6.00 per hour (2 x the answer) meets the SLOs"
    ]
