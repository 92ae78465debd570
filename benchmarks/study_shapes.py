"""Simulated shapes against the study's figures (shared/reference/paper_findings.md).

Prints Markdown for docs/validation.md; asserts nothing. Run: python benchmarks/study_shapes.py
(about a minute on one core).
"""

from __future__ import annotations

import numpy as np

from capcliff.analysis.evaluate.solver import config_at
from capcliff.catalog.catalogs import get_hardware, get_model
from capcliff.catalog.layout import Layout, parse_layout
from capcliff.memory.budget import BudgetSettings
from capcliff.memory.layout_memory import layout_memory
from capcliff.memory.weights import WeightScheme
from capcliff.perf.step_time import step_time_model
from capcliff.sim.config import KVCapacity, SimConfig
from capcliff.sim.result import SimResult
from capcliff.sim.simulate import simulate
from capcliff.sim.traffic.workload import Requests, generate_requests, preset
from capcliff.units import KVDType

H200 = get_hardware("h200-sxm")
MAX_MODEL_LEN = 32_768


def run(model_id: str, layout: Layout, requests: Requests, concurrency: int) -> SimResult:
    """Simulate `requests` with vLLM on `layout` of H200s at a cap of `concurrency`."""
    arch = get_model(model_id).arch
    scheme = WeightScheme.as_shipped(arch)
    memory = layout_memory(
        arch, H200, layout, scheme=scheme, kv_dtype=KVDType.BF16,
        max_model_len=MAX_MODEL_LEN, settings=BudgetSettings(),
    )  # fmt: skip
    capacity = KVCapacity.of_layout(memory, H200)
    steps = step_time_model(arch, H200, layout, scheme=scheme, kv_dtype=KVDType.BF16)
    config = config_at(SimConfig(max_num_batched_tokens=8192), concurrency, layout.dp)
    return simulate(requests, steps, capacity, config, dp=layout.dp)


def reasoning(n: int, seed: int = 0) -> Requests:
    return generate_requests(preset("reasoning", num_requests=n), np.random.default_rng(seed))


def u_shape() -> None:
    print("### 8B on one H200, 10,000 reasoning requests, max_num_seqs swept")
    print("| max_num_seqs | makespan s | output tok/s | TTFT p50 s | TPOT p50 ms | preemptions |")
    print("|---:|---:|---:|---:|---:|---:|")
    requests = reasoning(10_000)
    for c in (128, 256, 1_000, 2_000, 5_000, 10_000):
        r = run("deepseek-r1-distill-llama-8b", Layout(), requests, c)
        print(
            f"| {c:,} | {r.makespan_s:,.0f} | {r.output_tokens_per_s:,.0f} | {r.ttft.p50:,.1f} | "
            f"{r.tpot.p50 * 1000:,.1f} | {r.total_preemptions:,} |"
        )


def dp8_batches() -> None:
    print("\n### 8B, DP=8 on 8 x H200, a batch of N reasoning requests all admitted")
    print("| batch | makespan s | per-GPU requests | preemptions | KV peak | stranded KV |")
    print("|---:|---:|---:|---:|---:|---:|")
    for n in (500, 1_000, 2_000, 5_000):
        r = run("deepseek-r1-distill-llama-8b", Layout(dp=8), reasoning(n), n)
        print(
            f"| {n:,} | {r.makespan_s:,.0f} | {n // 8:,} | {r.total_preemptions:,} | "
            f"{r.peak_kv_utilization:.0%} | {r.stranded_kv_fraction:.0%} |"
        )


def cliff_405b() -> None:
    print("\n### Llama-3.1-405B, TP=8: when does the KV cache first fill?")
    print("| batch | first saturation s | requests with a first token by then | TTFT p50 s |")
    print("|---:|---:|---:|---:|")
    for n in (500, 1_000, 4_000, 5_000):
        r = run("llama-3.1-405b", Layout(tp=8), reasoning(n), n)
        sat = r.first_saturation[1] if r.first_saturation else float("nan")
        started = float(np.mean(r.ttft_s <= sat)) if r.first_saturation else 1.0
        print(f"| {n:,} | {sat:,.0f} | {started:.0%} | {r.ttft.p50:,.0f} |")


def layouts() -> None:
    print("\n### Layouts, a batch of 2,000 reasoning requests (makespan, s)")
    print("| model | layout | makespan s | the study |")
    print("|---|---|---:|---|")
    cases = [
        ("deepseek-r1-distill-qwen-14b", "dp8", "best, 332 s"),
        ("deepseek-r1-distill-qwen-14b", "pp2-tp4", "3.5x slower than DP"),
        ("deepseek-r1-distill-qwen-32b", "dp8", "4.9x speed-up vs 1 GPU"),
        ("deepseek-r1-distill-qwen-32b", "dp4-tp2", "best, 484 s"),
        ("deepseek-r1-distill-qwen-32b", "tp8", "6.15x speed-up vs 1 GPU"),
        ("llama-3.1-405b", "tp8", "986 s"),
        ("llama-3.1-405b", "pp8", "7,537 s"),
        ("deepseek-r1", "pp4-tp2", "1,663 s (best)"),
        ("deepseek-r1", "tp8", "2,047 s"),
    ]
    requests = reasoning(2_000)
    for model_id, name, study in cases:
        r = run(model_id, parse_layout(name), requests, 2_000)
        print(f"| {model_id} | {name} | {r.makespan_s:,.0f} | {study} |")


if __name__ == "__main__":
    u_shape()
    dp8_batches()
    cliff_405b()
    layouts()
