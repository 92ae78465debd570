"""An edge the analysis mutation sample of seed 457 found untested (benchmarks/mutation.py
--packages analysis --sample 40 --seed 457)."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any


def test_a_trace_that_shares_content_is_measured_by_the_warm_up_window() -> None:
    from capcliff.analysis.evaluate.capacity import saturation_point
    from capcliff.analysis.evaluate.steady_state import steady_state
    from capcliff.sim.config import KVCapacity, SimConfig
    from capcliff.sim.simulate import simulate
    from tests.simtools import constant_model, fixed_batch

    # A trace has its own size and, when its requests share content, no stationary running set
    # to start from (`stationary_start` false): its backlog is measured by the warm-up window
    # (steady_state with no seeds), not by the stationary-start rule, whose first `seeds`
    # requests are the running set. 20 requests of 10 tokens in and 4 out, 4 seats, 10 ms steps.
    requests = fixed_batch(20, 10, 4)
    capacity = KVCapacity(
        blocks=1000, block_size=16, kv_bytes_per_token=1, host_link_bytes_per_s=1e9,
        host_kv_tokens=0,
    )  # fmt: skip
    result = simulate(requests, constant_model(0.01), capacity, SimConfig(max_num_seqs=4))
    workload: Any = SimpleNamespace(
        is_trace=True, backlog=lambda n: requests, stationary_start=lambda: False,
        mean_output_tokens=lambda: 4.0, saturation_sample=lambda n, cap: requests,
    )  # fmt: skip
    replica: Any = SimpleNamespace(run=lambda sample, cap: result)
    point = saturation_point(replica, workload, 4, None, settle_it=False)
    window = steady_state(result, open_loop=False, mean_output=4.0)
    assert point.state == window
    # the two rules differ on this run, so the test tells them apart
    assert window != steady_state(result, open_loop=False, seeds=1, mean_output=4.0)
