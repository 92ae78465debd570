"""Simulator speed on the study's single-GPU scenario: prints figures, asserts nothing.

DeepSeek-R1-Distill-Llama-8B on 1 x H200, a batch of 10,000 `reasoning` requests, vLLM V1 policy.
Targets: one simulation at concurrency 2,048 under 0.3 s; a 32-point concurrency sweep under 5 s.
Each figure is given in CPU seconds of this process (steady on a shared machine) and in wall
seconds; the single simulation is the best of 3 (1 with --quick).

The first line names the event loop that ran: `compiled` (the mypyc copy built at install, or in
place by `python hatch_build.py`) or `python` (none built from the current source, or
CAPCLIFF_SIM_CORE=python); both give the same results, bit for bit (`sim_fingerprint.py`).

Run: PYTHONPATH=. python benchmarks/simulate.py [--quick]   (PYTHONPATH: this tree's capcliff)
"""

from __future__ import annotations

import statistics
import sys
import time

import numpy as np

from capcliff.analysis.evaluate.solver import sweep, sweet_spot
from capcliff.catalog.catalogs import get_hardware, get_model
from capcliff.catalog.layout import Layout
from capcliff.memory.budget import BudgetSettings
from capcliff.memory.layout_memory import layout_memory
from capcliff.memory.weights import WeightScheme
from capcliff.perf.step_time import step_time_model
from capcliff.sim.config import KVCapacity, SimConfig
from capcliff.sim.core import core_name
from capcliff.sim.simulate import simulate
from capcliff.sim.traffic.workload import generate_requests, preset
from capcliff.units import KVDType


def scenario() -> tuple[object, ...]:
    """Requests, step-time model and KV capacity of the 8B-on-one-H200 study scenario."""
    arch = get_model("deepseek-r1-distill-llama-8b").arch
    hardware = get_hardware("h200-sxm")
    scheme = WeightScheme.as_shipped(arch)
    memory = layout_memory(
        arch,
        hardware,
        Layout(),
        scheme=scheme,
        kv_dtype=KVDType.BF16,
        max_model_len=32_768,
        settings=BudgetSettings(),
    )
    model = step_time_model(arch, hardware, Layout(), scheme=scheme, kv_dtype=KVDType.BF16)
    capacity = KVCapacity.of_layout(memory, hardware)
    requests = generate_requests(preset("reasoning", num_requests=10_000), np.random.default_rng(0))
    return requests, model, capacity


def main() -> None:
    quick = "--quick" in sys.argv
    requests, model, capacity = scenario()
    print(f"simulator core: {core_name()}")
    print(f"KV capacity: {capacity.blocks} blocks x {capacity.block_size} tokens per replica")
    times, cpu, result = [], [], None
    for _ in range(1 if quick else 3):
        start, start_cpu = time.perf_counter(), time.process_time()
        result = simulate(requests, model, capacity, SimConfig(max_num_seqs=2_048))  # type: ignore[arg-type]
        times.append(time.perf_counter() - start)
        cpu.append(time.process_time() - start_cpu)
    assert result is not None
    best = min(times)
    print(
        f"one simulation (concurrency 2,048): {min(cpu):.2f} s CPU, {best:.2f} s wall (best of "
        f"{len(times)}, median {statistics.median(times):.2f} s), {result.events:,} events = "
        f"{result.events / min(cpu):,.0f} events per CPU s, {result.steps:,} engine steps, "
        f"{result.total_preemptions:,} preemptions, makespan {result.makespan_s:,.0f} s"
    )
    concurrencies = np.unique(np.geomspace(32, 10_240, 8 if quick else 32).astype(int)).tolist()
    start, start_cpu = time.perf_counter(), time.process_time()
    points = sweep(requests, model, capacity, SimConfig(), concurrencies)  # type: ignore[arg-type]
    elapsed, elapsed_cpu = time.perf_counter() - start, time.process_time() - start_cpu
    events = sum(p.result.events for p in points if p.result is not None)
    best_point = sweet_spot(points)
    print(
        f"{len(points)}-point sweep (32 .. 10,240): {elapsed_cpu:.2f} s CPU, {elapsed:.2f} s wall, "
        f"{events:,} events = {events / elapsed_cpu:,.0f} events per CPU s; sweet spot "
        f"{best_point.concurrency} "
        f"({best_point.makespan_s:,.0f} s)"
    )


if __name__ == "__main__":
    main()
