"""The aggregated layout a split is compared with, read part by part (`disagg.online.
_extended_aggregated`): a first sample whose first tokens fall behind the arrivals by more than
a TTFT limit's queue is reported saturated from that sample alone, as the restarting rule
(`aggregated_steady` without `paused`) reports it. Seed 401's mutation survivor."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from capcliff.analysis.disagg.online import aggregated_steady
from capcliff.analysis.evaluate.solver import Slo
from capcliff.sim.config import KVCapacity, SimConfig
from capcliff.sim.result import SimResult
from capcliff.sim.simulate import PausedRun, simulate
from capcliff.sim.traffic.workload import Requests
from tests.simtools import constant_model

STEP_S = 0.01  # every step lasts 10 ms
CONFIG = SimConfig(max_num_seqs=8, max_num_batched_tokens=512)
# room for every request at once: only the 8 seats limit the replica
CAPACITY = KVCapacity(
    blocks=10_000, block_size=16, kv_bytes_per_token=1, host_link_bytes_per_s=1e9,
    host_kv_tokens=0,
)  # fmt: skip


class _Sample:
    """`OnlineSample`'s sizes (`first`, then up to 8 x as many) over evenly spaced arrivals of
    10-token prompts and `output` tokens out."""

    def __init__(self, rate: float, first: int = 400, output: int = 10) -> None:
        self.rate_rps, self.size, self.output = rate, first, output

    def first(self, running: int) -> int:
        return self.size

    def most(self, running: int) -> int:
        return self.size << 3

    def requests(self, n: int) -> Requests:
        return Requests(
            input_tokens=np.full(n, 10, dtype=np.int64),
            output_tokens=np.full(n, self.output, dtype=np.int64),
            max_output_tokens=np.full(n, self.output, dtype=np.int64),
            arrival_s=np.arange(n) / self.rate_rps,
        )


def _steady(
    sample: _Sample, ttft_limit_s: float, *, extend: bool, step_s: float = STEP_S,
    config: SimConfig = CONFIG,
) -> tuple[SimResult, Any, list[int]]:  # fmt: skip
    sizes: list[int] = []  # the sizes run (restarting), and paused (extending: negative)

    def run(r: Requests) -> SimResult:
        sizes.append(len(r.arrival_s))
        return simulate(r, constant_model(step_s), CAPACITY, config)

    def paused(r: Requests) -> PausedRun:
        sizes.append(-len(r.arrival_s))
        return PausedRun(r, constant_model(step_s), CAPACITY, config)

    result, state = aggregated_steady(
        run, sample, 8,  # type: ignore[arg-type]
        behind_at=Slo(ttft_s=ttft_limit_s, tpot_s=1.0), paused=paused if extend else None,
    )  # fmt: skip
    return result, state, sizes


@pytest.mark.parametrize("extend", [True, False])
def test_a_first_sample_falling_behind_a_ttft_limits_queue_is_saturated(extend: bool) -> None:
    # 8 seats and 10 steps of 10 ms per request: at most 8 / 0.1 s = 80 requests/s are served.
    # At 200/s the window (arrival 80 to arrival 399, 1.595 s) holds 320 arrivals and at most
    # about 80 x 1.6 = 128 finish in it: a deficit of at least 190, over 20 % of 320 (64),
    # 4 sqrt(640) = 101 and the queue a 0.1 s TTFT limit allows, 2 x 200 x 0.1 = 40.
    result, state, sizes = _steady(_Sample(200.0), 0.1, extend=extend)
    assert sizes == [400]  # the first sample only: nothing grown, nothing paused
    assert len(result.arrival_s) == 400
    assert state.queue_growing and state.saturated
    lo, hi = state.window_s
    assert (lo, hi) == pytest.approx((80 / 200, 399 / 200))
    # the arrival rate is the window's own: 320 arrivals over 1.595 s, not the offered 200/s
    assert state.arrival_rps == pytest.approx(320 / 1.595)


@pytest.mark.parametrize("extend", [True, False])
def test_a_deficit_within_the_ttft_limits_queue_is_grown(extend: bool) -> None:
    # the same deficit (at most 320 requests) is within the queue a 1 s limit allows at 200/s
    # (2 x 200 x 1 = 400), so the first sample does not decide: the run is grown past 400
    _, _, sizes = _steady(_Sample(200.0), 1.0, extend=extend)
    assert sizes[0] == 400 and len(sizes) > 1
    assert any(abs(n) > 400 for n in sizes)


def test_without_a_finite_ttft_limit_nothing_is_judged_on_the_first_sample() -> None:
    # no TTFT limit: no allowance to compare with, so the sample is grown as without one
    _, _, sizes = _steady(_Sample(200.0), float("inf"), extend=True)
    assert sizes[0] == 400 and len(sizes) > 1


@pytest.mark.parametrize("extend", [True, False])
def test_first_tokens_are_counted_when_they_come_not_before_their_arrival(extend: bool) -> None:
    # Steps of 0.49 s, room for every arrival in one step, one token out: a step serves what
    # arrived by its start, so the first tokens come at 0.49, 0.98, 1.47 and 1.96 s. At 400/s,
    # 800 requests: the window opens at arrival 160 (0.4 s) and closes at the last (1.9975 s),
    # 640 arrivals. Finished in it: every arrival up to 1.47 s (589: 160 of the warm-up among
    # them), a deficit of 51, under 20 % of 640 (128) and 4 sqrt(1,280) = 143: it keeps up, and
    # is grown. Counting each first token at its arrival minus its TTFT instead (a mean wait of
    # about 0.74 s) would leave about 300 short of the window and call it saturated.
    wide = SimConfig(max_num_seqs=1024, max_num_batched_tokens=16384)
    sample = _Sample(400.0, first=800, output=1)
    _, state, sizes = _steady(sample, 0.05, extend=extend, step_s=0.49, config=wide)
    assert sizes[0] == 800 and len(sizes) > 1
    assert not state.queue_growing
