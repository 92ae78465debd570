"""The two-pool simulator's cost per request against the aggregated simulator's, same requests.

Prints figures, asserts nothing. Two deployments of the same GPUs, each simulated on the same
requests (a batch; best of 3 wall times):
- DeepSeek-R1-Distill-Llama-8B on 4 x H200, 2,000 requests of 2,048 + 1,024 tokens: aggregated dp4
  against 1p:tp1,3d:tp1;
- DeepSeek-R1 on 32 x H200, 500 requests of 8,192 + 1,024 tokens: aggregated dp32-ep32 (attention
  DP in lockstep) against 2p:dp8-ep8,2d:dp8-ep8.
A third row runs the aggregated simulator on the same requests arriving when the two-pool run's KV
lands (its decode pool's arrivals): the arrival pattern alone, without a second pool. A second
table splits the two-pool run's events by pool and distinct landing times per decode replica.

Run: python benchmarks/disagg.py [--quick]
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from dataclasses import replace
from functools import partial

import numpy as np

from capcliff.analysis.deployment import DeploymentSettings, resolve
from capcliff.analysis.disagg import parse_disagg, pools_of, run_disagg
from capcliff.analysis.sweep import replica_models
from capcliff.analysis.workloads import WorkloadChoice, plan_workloads
from capcliff.catalog.catalogs import get_hardware, get_model
from capcliff.catalog.layout import parse_layout
from capcliff.sim.disagg import DisaggResult
from capcliff.sim.simulate import simulate

CASES = (
    ("deepseek-r1-distill-llama-8b", 2000, 2048, 1024, "dp4", "1p:tp1,3d:tp1"),
    ("deepseek-r1", 500, 8192, 1024, "dp32-ep32", "2p:dp8-ep8,2d:dp8-ep8"),
)


def best_of(runs: int, work: Callable[[], int]) -> tuple[float, int]:
    """(least wall time in s, events) of `runs` calls of `work` (which returns its events)."""
    times, events = [], 0
    for _ in range(runs):
        start = time.perf_counter()
        events = work()
        times.append(time.perf_counter() - start)
    return min(times), events


def main() -> None:
    runs = 1 if "--quick" in sys.argv else 3
    print("| model | requests | simulator | deployment | wall s | events | µs per request | "
          "µs per event |")  # fmt: skip
    print("|---|---:|---|---|---:|---:|---:|---:|")
    breakdowns: list[tuple[str, str, DisaggResult]] = []
    for model_id, n, isl, osl, agg_name, disagg_name in CASES:
        dep = resolve(get_model(model_id), get_hardware("h200-sxm"), DeploymentSettings())
        choice = WorkloadChoice(num_requests=n, isl=isl, osl=(osl,))
        requests = plan_workloads(choice, 0)[1][0][1]
        length = dep.context_length(requests)
        layout = parse_layout(agg_name)
        capacity, steps = replica_models(dep, dep.memory(layout, length))
        config = dep.sim_config(length)
        aggregated = partial(simulate, requests, steps, capacity, config, dp=layout.dp)
        agg_s, agg_events = best_of(runs, lambda run=aggregated: run().events)
        two_pool = partial(run_disagg, dep, pools_of(dep, parse_disagg(disagg_name), length),
                           requests)  # fmt: skip
        dis_s, dis_events = best_of(runs, lambda run=two_pool: run().events)
        result = two_pool()
        landing = replace(requests, arrival_s=_landing_times(result, n))
        staggered = partial(simulate, landing, steps, capacity, config, dp=layout.dp)
        stag_s, stag_events = best_of(runs, lambda run=staggered: run().events)
        for kind, name, wall, events in (
            ("aggregated", agg_name, agg_s, agg_events),
            ("two-pool", disagg_name, dis_s, dis_events),
            ("aggregated, arrivals = landings", agg_name, stag_s, stag_events),
        ):
            print(f"| {model_id} | {n:,} | {kind} | {name} | {wall:.2f} | {events:,} | "
                  f"{wall / n * 1e6:,.0f} | {wall / events * 1e6:,.0f} |")  # fmt: skip
        breakdowns.append((model_id, disagg_name, result))
    print()
    print("| model | deployment | prefill events | prefill steps | decode events | "
          "distinct landing times per decode replica (sum) |")  # fmt: skip
    print("|---|---|---:|---:|---:|---:|")
    for model_id, name, result in breakdowns:
        pre = sum(r.events for r in result.prefill_runs)
        dec = sum(r.events for r in result.decode_runs)
        steps = sum(r.steps for r in result.prefill_runs)
        distinct = sum(len(set(r.arrival_s.tolist())) for r in result.decode_runs)
        print(f"| {model_id} | {name} | {pre:,} | {steps:,} | {dec:,} | {distinct:,} |")


def _landing_times(result: DisaggResult, n: int) -> np.ndarray:
    """Each request's KV landing time (its prefill's end for a one-token output)."""
    times = np.array(result.prefill_done_s, dtype=np.float64)
    times[result.transferred] = result.transfers.end_s
    assert len(times) == n
    return times


if __name__ == "__main__":
    main()
