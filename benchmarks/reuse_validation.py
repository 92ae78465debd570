"""Prefix caching against the public multi-turn and agentic rows B118-B126, and through the cliff.

Run: python benchmarks/reuse_validation.py   (prints the Markdown tables of docs/validation.md's
"Prefix caching and sessions" section; asserts nothing)

Each row is simulated as its benchmark ran it, with capcliff's own session presets (not the
benchmark's conversations: the presets' statistics are cited in
capcliff/sim/traffic/sessions.py and were not fitted to these rows): N closed-loop users,
max_num_seqs as the row states, vLLM V1, prefix
caching on, FP8 KV cache, gpu_memory_utilization 0.9, no think time (the benchmarks send the
next turn when the previous one returns). Compared: the GPU prefix-cache hit rate, peak KV usage
(vLLM's kv_cache_usage counts cached-free blocks as free, as capcliff does), mean and p99 TTFT,
output throughput.

The second table runs the multi-turn preset on one replica whose KV cache is shrunk step by step
(--kv-cache-memory) past the cliff: hit rate, TTFT and throughput with and without a host tier.

The third table runs the two series of issue 20 past the cliff, as they were measured (the
measurements are not in this repository; the issue states what they showed): multi-turn chat on
one B200 (Llama-3.3-70B NVFP4, vLLM, FP8 KV, 8,192-token batches, max_num_seqs = users; 3 turns,
270 new and 590 output tokens per turn, no think time) at 128, 256 and 512 users, and agent
sessions on 4 x B200 (DeepSeek-R1-0528 NVFP4, TP4/EP4; 35k-token starting context, 1k new and
2.8k output tokens per turn, 14 s think time) at 8 to 64 users. Measured: no preemption and a
hit rate above 80 % at 128 chat users, KV full at 256, at 512 a hit rate under 15 %, mean TTFT
over 100x and output throughput 0.7-1.4x that at 128, under 0.3 preemptions per request; agents:
the cliff between 16 and 32 users, a hit rate under 15 % past it, mean TTFT over 100 s at 64
users, under 0.2 preemptions per request.

The fourth table takes B118-B122's deployment apart: capcliff's modeled decode step (its terms) at
TP 1, 2, 4 and 8 against the step the engine itself logged in the same public sweep (running
requests / generation throughput of vLLM's periodic stats lines). Only TP 8 is in the reference
CSV; the TP 1-4 runs of the sweep are not, and nothing was fitted to any of them.
"""

from __future__ import annotations

import sys
from dataclasses import replace
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent.parent))

from capcliff.analysis.deployment import resolve
from capcliff.analysis.deployment_settings import settings_of
from capcliff.analysis.evaluate.replica_models import replica_models
from capcliff.analysis.sweep.failure import past_cliff
from capcliff.catalog.catalogs import get_hardware, get_model
from capcliff.catalog.layout import parse_layout
from capcliff.sim.config import SimConfig
from capcliff.sim.result import SimResult
from capcliff.sim.simulate import simulate
from capcliff.sim.traffic.sessions import (
    SESSION_PRESETS,
    SessionShape,
    generate_sessions,
    shaped_session_spec,
)

# (row, model, gpu, layout, users = max_num_seqs or None, preset, requests measured, measured:
# hit rate, peak KV usage, TTFT mean s, TTFT p99 s, output tok/s)
ROWS = [
    ("B118", "llama-3.3-70b-fp4", "tp8", 16, 16, "multiturn-chat", 3615,
     (0.8795, 0.0145, 0.0943, 0.155, 1723.0)),
    ("B119", "llama-3.3-70b-fp4", "tp8", 32, 32, "multiturn-chat", 3631,
     (0.8802, 0.0183, 0.1060, 0.229, 2677.1)),
    ("B120", "llama-3.3-70b-fp4", "tp8", 64, 64, "multiturn-chat", 3663,
     (0.8755, 0.0326, 0.1200, 0.328, 3880.5)),
    ("B121", "llama-3.3-70b-fp4", "tp8", 128, 128, "multiturn-chat", 3727,
     (0.8718, 0.0600, 0.1527, 0.856, 5375.9)),
    ("B122", "llama-3.3-70b-fp4", "tp8", 256, 256, "multiturn-chat", 3855,
     (0.8621, 0.1139, 0.2202, 1.626, 7465.6)),
    ("B123", "deepseek-r1-0528-fp4", "tp4-ep4", 1, None, "agentic", 45,
     (0.9492, 0.0830, 1.113, 10.10, 71.4)),
    ("B124", "deepseek-r1-0528-fp4", "tp4-ep4", 2, None, "agentic", 57,
     (0.9348, 0.1581, 1.604, 20.13, 125.3)),
    ("B125", "deepseek-r1-0528-fp4", "tp4-ep4", 4, None, "agentic", 124,
     (0.9255, 0.2448, 1.901, 35.60, 211.1)),
    ("B126", "deepseek-r1-0528-fp4", "tp4-ep4", 8, None, "agentic", 162,
     (0.8980, 0.4354, 2.713, 52.71, 294.8)),
]  # fmt: skip


# The cliff: B118-B122's deployment with its KV cache cut to 1 GiB per GPU (52,428 tokens per
# replica at 20,480 bytes of FP8 KV per token per GPU), users (= max_num_seqs) growing past it.
CLIFF_KV = "1GiB"
CLIFF_USERS = (4, 8, 16, 32, 64, 128)

# The engine's own decode step in B118-B122's sweep, all TP sizes: github.com/SemiAnalysisAI/
# InferenceX @2582608b105ac998ff7d712d4c3a4005fe8a5ae3, experimental/multiturn/vllm_benchmark/
# results/sweep_results_20260204_062339/tp{T}_bs{B}_offloadoff/server_attempt1.log (TP 1:
# server.log), same vLLM 0.15.0 flags as B118 but --tensor-parallel-size T. Per "Engine 000: Avg
# prompt throughput ..., Avg generation throughput G tokens/s, Running: R reqs" line (the first
# three and idle lines skipped): R / G; the median over the run, ms. (tp, running) -> ms. Runs that
# queued (Waiting > 0: TP 2 and 4 from 32 users up) still time their steps; TP 4 at 32 users
# (185.6 ms, prompt throughput a tenth of its neighbours') is left out as a broken run.
LOGGED_STEP_MS: dict[tuple[int, int], float] = {
    (1, 16): 17.47, (1, 32): 24.84, (1, 64): 40.30, (1, 128): 52.23,
    (2, 16): 12.88, (2, 32): 15.86, (2, 64): 25.33, (2, 128): 38.33, (2, 256): 50.93,
    (4, 16): 10.21, (4, 64): 17.05, (4, 128): 26.98,
    (8, 16): 9.16, (8, 32): 11.81, (8, 64): 16.63, (8, 128): 24.23, (8, 255): 36.12,
}  # fmt: skip
# Context each running sequence reads in those steps: B118's measured mean input (2,106 tokens)
# plus half its mean output (608), rounded.
STEP_CONTEXT_TOKENS = 2_400


def run(
    model_id: str,
    layout_name: str,
    users: int,
    seqs: int | None,
    preset: str,
    requests_n: int,
    *,
    kv_cache_memory: str | None = None,
    offload: str | None = None,
    caching: bool = True,
) -> SimResult:
    """One simulation of `preset` sessions by `users` closed-loop users."""
    values = {
        "kv_cache_dtype": "fp8", "max_num_seqs": seqs, "kv_cache_memory": kv_cache_memory,
        "offload": offload,
    }  # fmt: skip
    dep = resolve(get_model(model_id), get_hardware("b200"), settings_of(values))
    spec = replace(SESSION_PRESETS[preset], think_time_s=0.0)
    requests = generate_sessions(spec, requests_n, np.random.default_rng(0), clients=users)
    layout = parse_layout(layout_name)
    max_len = dep.context_length(requests)
    memory = dep.memory(layout, max_len)
    capacity, steps = replica_models(dep, memory)
    config = replace(dep.sim_config(max_len), prefix_caching=caching)
    if seqs is not None:
        config = replace(config, max_num_seqs=seqs)
    assert isinstance(config, SimConfig)
    return simulate(requests, steps, capacity, config, dp=layout.dp)


def _pct(x: float) -> str:
    return f"{x:.1%}"


def rows_table() -> list[str]:
    out = [
        "| row | users | hit rate sim / measured | peak KV sim / measured | TTFT mean s "
        "sim / measured | TTFT p99 s sim / measured | output tok/s sim / measured |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for row_id, model_id, layout, users, seqs, preset, n, measured in ROWS:
        r = run(model_id, layout, users, seqs, preset, n)
        hit, kv, ttft_mean, ttft_p99, tok_s = measured
        mean = float(np.nanmean(r.ttft_s))
        out.append(
            f"| {row_id} | {users} | {_pct(r.prefix_cache_hit_rate or 0.0)} / {_pct(hit)} | "
            f"{_pct(r.peak_kv_utilization)} / {_pct(kv)} | {mean:.3f} / {ttft_mean:.3f} | "
            f"{r.ttft.p99:.3f} / {ttft_p99:.3f} | {r.output_tokens_per_s:,.0f} / {tok_s:,.0f} |"
        )
    return out


def cliff_table() -> list[str]:
    out = [
        "| users = max_num_seqs | offload | hit rate HBM / host | peak KV | preemptions "
        "| TTFT p50 s | TTFT p99 s | output tok/s |",
        "|---:|---|---:|---:|---:|---:|---:|---:|",
    ]
    for users in CLIFF_USERS:
        for offload in (None, "cpu:512GiB"):
            r = run(
                "llama-3.3-70b-fp4", "tp8", users, users, "multiturn-chat", 3000,
                kv_cache_memory=CLIFF_KV, offload=offload,
            )  # fmt: skip
            host = 0.0
            if r.reuse is not None and r.reuse.tiers:
                host = r.reuse.tiers[0].hit_tokens / r.reuse.queried_tokens
            out.append(
                f"| {users} | {offload or '-'} | {_pct(r.prefix_cache_hit_rate or 0.0)} / "
                f"{_pct(host)} | "
                f"{_pct(r.peak_kv_utilization)} | {r.total_preemptions:,} | {r.ttft.p50:.3f} | "
                f"{r.ttft.p99:.3f} | {r.output_tokens_per_s:,.0f} |"
            )
    return out


# (series, model, layout, preset, shape, users, max_num_seqs = users (else the engine's),
# requests simulated: about the sample `capcliff sweep` settles on at the largest point)
SERIES = [
    ("chat 1 x B200", "llama-3.3-70b-fp4", "tp1", "multiturn-chat",
     SessionShape(turns=3, isl=270, osl=590, think_time_s=0.0), (128, 256, 512), True, 40_000),
    ("agents 4 x B200", "deepseek-r1-0528-fp4", "tp4-ep4", "agentic",
     SessionShape(isl=1_000, osl=2_800, think_time_s=14.0, context_tokens=35_000),
     (8, 16, 32, 64), False, 16_000),
]  # fmt: skip


def series_table() -> list[str]:
    """Issue 20's two series past the cliff: per point the hit rate (whole run and after the
    first saturation), peak KV, preemptions per request, mean TTFT and output throughput, both
    against the series' first point."""
    out = [
        "| series | users | hit rate | after cliff | peak KV | preemptions / request "
        "| mean TTFT s (x first) | output tok/s (x first) |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for name, model_id, layout_name, preset, shape, users_list, seqs_as_users, n in SERIES:
        values = {
            "kv_cache_dtype": "fp8",
            "max_num_batched_tokens": 8192 if seqs_as_users else None,
        }
        dep = resolve(get_model(model_id), get_hardware("b200"), settings_of(values))
        first: tuple[float, float] | None = None
        for users in users_list:
            spec = shaped_session_spec(preset, shape)
            requests = generate_sessions(spec, n, np.random.default_rng(0), clients=users)
            layout = parse_layout(layout_name)
            max_len = dep.context_length(requests)
            capacity, steps = replica_models(dep, dep.memory(layout, max_len))
            config = dep.sim_config(max_len)
            if seqs_as_users:
                config = replace(config, max_num_seqs=users)
            r = simulate(requests, steps, capacity, config, dp=layout.dp)
            found = past_cliff(r)
            after = found.hit_rate_after_cliff if found is not None else None
            ttft, tok_s = float(np.nanmean(r.ttft_s)), r.output_tokens_per_s
            first = first or (ttft, tok_s)
            out.append(
                f"| {name} | {users} | {_pct(r.prefix_cache_hit_rate or 0.0)} | "
                f"{'-' if after is None else _pct(after)} | {_pct(r.peak_kv_utilization)} | "
                f"{r.total_preemptions / len(r.e2e_s):.3f} | {ttft:.3f} ({ttft / first[0]:.0f}x) | "
                f"{tok_s:,.0f} ({tok_s / first[1]:.2f}x) |"
            )
    return out


def decode_step_table() -> list[str]:
    """capcliff's modeled decode step of B118's deployment by TP (its terms) against the step the
    engine logged (LOGGED_STEP_MS), at STEP_CONTEXT_TOKENS of context per sequence."""
    out = [
        "| TP | running | weights ms | KV ms | compute ms | all-reduce ms | per-step ms "
        "| modeled step ms | logged step ms | logged - modeled ms |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    settings = settings_of({"kv_cache_dtype": "fp8"})
    dep = resolve(get_model("llama-3.3-70b-fp4"), get_hardware("b200"), settings)
    for (tp, seqs), logged in LOGGED_STEP_MS.items():
        memory = dep.memory(parse_layout(f"tp{tp}"), 8192)
        _, steps = replica_models(dep, memory)
        context = seqs * STEP_CONTEXT_TOKENS
        terms = steps.decode_terms(seqs)
        weights_s, kv_s = terms[0], terms[1] * context
        compute_s = terms[3] + terms[4] * context
        comm_s = terms[6] - steps.step_overhead_s
        modeled = steps.decode_line(seqs, context).step_s(0)
        out.append(
            f"| {tp} | {seqs} | {weights_s * 1e3:.2f} | {kv_s * 1e3:.2f} | "
            f"{compute_s * 1e3:.2f} | {comm_s * 1e3:.2f} | {steps.step_overhead_s * 1e3:.2f} | "
            f"{modeled * 1e3:.2f} | {logged:.2f} | {logged - modeled * 1e3:+.2f} |"
        )
    return out


if __name__ == "__main__":
    print("\n".join(rows_table()))
    print()
    print("\n".join(cliff_table()))
    print()
    print("\n".join(series_table()))
    print()
    print("\n".join(decode_step_table()))
