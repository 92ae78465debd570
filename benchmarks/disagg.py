"""The two-pool simulator's cost per request against the aggregated simulator's, same traffic.

Prints figures, asserts nothing. Two deployments of the same GPUs, each simulated on the same
requests (the least CPU time of 15 runs, aggregated and two-pool taking turns):
- DeepSeek-R1-Distill-Llama-8B on 4 x H200, 2,000 requests of 2,048 + 1,024 tokens: aggregated dp4
  against 1p:tp1,3d:tp1;
- DeepSeek-R1 on 32 x H200, 500 requests of 8,192 + 1,024 tokens: aggregated dp32-ep32 (attention
  DP in lockstep) against 2p:dp8-ep8,2d:dp8-ep8.
Each pair runs twice: as a batch (every request at t = 0), and online, the same requests arriving
as one Poisson process at a rate both deployments sustain (70 % of the lower of their batch
throughputs, in requests/s; the same unit-rate gaps for both). Online is the fair comparison:
the batch admits whole cohorts at t = 0 in the aggregated run, while the two-pool run's decode
pool receives its requests one prefill step at a time whatever the traffic. A second table splits
the two-pool runs' events by pool.

Run: PYTHONPATH=. python benchmarks/disagg.py [--quick]
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from dataclasses import replace
from functools import partial

import numpy as np

from capcliff.analysis.deployment import resolve
from capcliff.analysis.deployment_settings import DeploymentSettings
from capcliff.analysis.disagg.pools import parse_disagg, pools_of, run_disagg
from capcliff.analysis.evaluate.replica_models import replica_models
from capcliff.analysis.workloads import WorkloadChoice, plan_workloads
from capcliff.catalog.catalogs import get_hardware, get_model
from capcliff.catalog.layout import parse_layout
from capcliff.sim.disagg.pools import DisaggResult
from capcliff.sim.result import SimResult
from capcliff.sim.simulate import simulate

CASES = (
    ("deepseek-r1-distill-llama-8b", 2000, 2048, 1024, "dp4", "1p:tp1,3d:tp1"),
    ("deepseek-r1", 500, 8192, 1024, "dp32-ep32", "2p:dp8-ep8,2d:dp8-ep8"),
)
ONLINE_LOAD = 0.7  # the online rate, as a fraction of the lower batch throughput (set)
RUNS = 15  # runs of each simulation, the two taking turns; the least CPU time is reported


def best_of(runs: int, *works: Callable[[], int]) -> list[tuple[float, int]]:
    """(least CPU time of this process in s, events) of `runs` calls of each of `works` (each
    returns its events), the works taking turns so that a change in the machine's load falls on
    all of them: CPU time, not wall time, on a shared machine."""
    times: list[list[float]] = [[] for _ in works]
    events = [0] * len(works)
    for _ in range(runs):
        for k, work in enumerate(works):
            start = time.process_time()
            events[k] = work()
            times[k].append(time.process_time() - start)
    return [(min(t), e) for t, e in zip(times, events, strict=True)]


def _events(run: Callable[[], SimResult | DisaggResult]) -> Callable[[], int]:
    """`run`, returning its events."""
    return lambda: run().events


def main() -> None:
    runs = 1 if "--quick" in sys.argv else RUNS
    print("| model | requests | traffic | simulator | deployment | CPU s | events | "
          "µs per request | µs per event |")  # fmt: skip
    print("|---|---:|---|---|---|---:|---:|---:|---:|")
    breakdowns: list[tuple[str, str, str, DisaggResult]] = []
    for model_id, n, isl, osl, agg_name, disagg_name in CASES:
        dep = resolve(get_model(model_id), get_hardware("h200-sxm"), DeploymentSettings())
        choice = WorkloadChoice(num_requests=n, isl=isl, osl=(osl,))
        batch = plan_workloads(choice, 0)[1][0][1]
        length = dep.context_length(batch)
        layout = parse_layout(agg_name)
        capacity, steps = replica_models(dep, dep.memory(layout, length))
        config = dep.sim_config(length)
        pools = pools_of(dep, parse_disagg(disagg_name), length)
        agg_rate = n / simulate(batch, steps, capacity, config, dp=layout.dp).makespan_s
        dis_rate = n / run_disagg(dep, pools, batch).serving.makespan_s
        rate = ONLINE_LOAD * min(agg_rate, dis_rate)
        gaps = np.random.default_rng(0).exponential(1.0, n)
        online = replace(batch, arrival_s=np.cumsum(gaps) / rate)
        for traffic, requests in (("batch", batch), (f"Poisson {rate:.2f} req/s", online)):
            aggregated = partial(simulate, requests, steps, capacity, config, dp=layout.dp)
            two_pool = partial(run_disagg, dep, pools, requests)
            (agg_s, agg_events), (dis_s, dis_events) = best_of(
                runs, _events(aggregated), _events(two_pool)
            )
            for kind, name, wall, events in (
                ("aggregated", agg_name, agg_s, agg_events),
                ("two-pool", disagg_name, dis_s, dis_events),
            ):
                per_request, per_event = wall / n * 1e6, wall / events * 1e6
                print(f"| {model_id} | {n:,} | {traffic} | {kind} | {name} | {wall:.2f} | "
                      f"{events:,} | {per_request:,.1f} | {per_event:,.1f} |")  # fmt: skip
            breakdowns.append((model_id, traffic, disagg_name, two_pool()))
    print()
    print("| model | traffic | deployment | prefill events | prefill steps | decode events | "
          "distinct landing times per decode replica (sum) |")  # fmt: skip
    print("|---|---|---|---:|---:|---:|---:|")
    for model_id, traffic, name, result in breakdowns:
        pre = sum(r.events for r in result.prefill_runs)
        dec = sum(r.events for r in result.decode_runs)
        prefill_steps = sum(r.steps for r in result.prefill_runs)
        distinct = sum(len(set(r.arrival_s.tolist())) for r in result.decode_runs)
        print(f"| {model_id} | {traffic} | {name} | {pre:,} | {prefill_steps:,} | {dec:,} | "
              f"{distinct:,} |")  # fmt: skip


if __name__ == "__main__":
    main()
