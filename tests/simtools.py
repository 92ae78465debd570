"""Small models and workloads for simulator tests, with numbers easy to work out by hand."""

from __future__ import annotations

import dataclasses
import importlib.util
import sys
from functools import cache
from pathlib import Path
from types import ModuleType

import numpy as np

from capcliff.analysis.deployment import Deployment, resolve
from capcliff.analysis.deployment_settings import settings_of
from capcliff.analysis.evaluate.steady_state import SteadyState
from capcliff.catalog.catalogs import get_hardware, get_model
from capcliff.perf.step_time import StepTimeModel
from capcliff.sim.config import KVCapacity, PreemptionMode, SimConfig
from capcliff.sim.loop.lockstep import LockstepSim
from capcliff.sim.loop.replica import ReplicaSim
from capcliff.sim.loop.replica_result import ReplicaResult
from capcliff.sim.policies import NewTokenRatio, Policy
from capcliff.sim.simulate import make_policy
from capcliff.sim.traffic.workload import Requests


def toy_model(*, step_overhead_s: float = 1e-3, pp: int = 1) -> StepTimeModel:
    """1 GB of weights at 1 TB/s, 100 kB of KV per token, 10 GFLOP per token at 100 TFLOP/s."""
    return StepTimeModel(
        pp=pp,
        weight_bytes=1e9,
        expert_bytes=0.0,
        expert_choice_fraction=0.0,
        kv_bytes_per_token=1e5,
        flops_per_token=1e10,
        flops_per_sequence=1e8,
        attention_flops_per_pair=1e6,
        bandwidth_bytes_per_s=1e12,
        peak_bandwidth_bytes_per_s=1.25e12,
        flops_per_s=1e14,
        step_overhead_s=step_overhead_s,
    )


def constant_model(step_s: float) -> StepTimeModel:
    """Every step that schedules anything takes exactly `step_s` seconds."""
    return dataclasses.replace(
        toy_model(step_overhead_s=step_s),
        weight_bytes=0.0,
        kv_bytes_per_token=0.0,
        flops_per_token=0.0,
        flops_per_sequence=0.0,
        attention_flops_per_pair=0.0,
    )


def fixed_batch(n: int, prompt: int, output: int, *, max_output: int | None = None) -> Requests:
    """n requests of fixed lengths, all there at t = 0."""
    return Requests(
        input_tokens=np.full(n, prompt, dtype=np.int64),
        output_tokens=np.full(n, output, dtype=np.int64),
        max_output_tokens=np.full(n, max_output or output, dtype=np.int64),
        arrival_s=np.zeros(n),
    )


POLICIES = (
    "vllm", "vllm-first-chunk", "vllm-v0", "sglang", "trtllm-no-evict", "trtllm-max-util",
    "kv-aware",
)  # fmt: skip


def random_case(
    seed: int, policy: str, mode: PreemptionMode, arrival: str
) -> tuple[Requests, KVCapacity, SimConfig]:
    """A small random workload, KV cache and engine config (tens of requests, short lengths)."""
    rng = np.random.default_rng(seed)
    n = int(rng.integers(5, 30))
    block = int(rng.choice([1, 2, 4, 16]))
    prompts = rng.integers(1, 60, n)
    outputs = rng.integers(1, 80, n)
    limits = outputs + rng.integers(0, 40, n)
    client = np.full(n, -1)
    if arrival == "batch":
        arrivals = np.zeros(n)
    elif arrival == "poisson":
        arrivals = np.cumsum(rng.exponential(0.01, n))
    else:
        clients = int(rng.integers(1, 6))
        client = np.arange(n) % clients
        arrivals = np.where(np.arange(n) < clients, 0.0, np.nan)
    requests = Requests(
        prompts.astype(np.int64),
        outputs.astype(np.int64),
        limits.astype(np.int64),
        arrivals.astype(np.float64),
        client.astype(np.int64),
        closed_loop=arrival == "clients",
        think_time_s=0.001 if arrival == "clients" else 0.0,
    )
    need = (prompts + (limits if policy == "trtllm-no-evict" else outputs - 1)).max()
    blocks = max(-(-int(need) // block), int(rng.integers(1, 400)) // block + 1)
    capacity = KVCapacity(
        blocks=blocks,
        block_size=block,
        kv_bytes_per_token=1000,
        host_link_bytes_per_s=1e9,
        host_kv_tokens=int(rng.integers(0, 200)),
    )
    seqs = int(rng.integers(1, 20))
    config = SimConfig(
        policy=policy,
        max_num_seqs=seqs,
        max_num_batched_tokens=int(rng.integers(seqs, 100)),
        preemption=mode,
        output_quantile=0.5 if policy == "kv-aware" and seed % 2 else None,
        kv_margin=0.0 if seed % 3 == 0 else 0.1,
    )
    return requests, capacity, config


PREEMPTING_POLICIES = (
    "vllm", "vllm-first-chunk", "vllm-v0", "sglang", "trtllm-max-util", "kv-aware"
)  # fmt: skip
# SGLang retracts only once its new-token ratio has decayed enough to over-admit; with the
# engine's schedule (600 steps to decay) that is rare in a short case, so pressure cases run a
# faster-decaying or a low ratio (the same rule goes to both simulators; the engine's own
# schedule is compared in `random_case`).
SGLANG_RATIOS = (NewTokenRatio(decay=0.02), NewTokenRatio(0.05, 0.0, 0.001))


def pressure_case(
    seed: int, policy: str, mode: PreemptionMode
) -> tuple[Requests, KVCapacity, SimConfig, Policy]:
    """A small workload that runs out of KV blocks: a cache of one to three longest requests,
    long outputs (max_new close to the real output), chunked prefills. Odd seeds arrive as a
    Poisson stream, even seeds all at t = 0. kv-aware estimates outputs (its median), so it can
    be wrong and preempt."""
    rng = np.random.default_rng(seed)
    n = int(rng.integers(20, 40))
    block = int(rng.choice([1, 2, 4, 16]))
    prompts = rng.integers(1, 200 if policy == "sglang" else 100, n)
    outputs = rng.integers(20, 150, n)
    limits = outputs + rng.integers(0, 4, n)
    need = int((prompts + outputs - 1).max())
    blocks = -(-need // block) + int(rng.integers(0, 2 * need)) // block
    arrivals = np.zeros(n) if seed % 2 == 0 else np.cumsum(rng.exponential(0.005, n))
    requests = Requests(
        prompts.astype(np.int64), outputs.astype(np.int64), limits.astype(np.int64), arrivals
    )
    capacity = KVCapacity(
        blocks=blocks,
        block_size=block,
        kv_bytes_per_token=1000,
        host_link_bytes_per_s=1e9,
        host_kv_tokens=int(rng.integers(0, 400)),
    )
    seqs = int(rng.integers(4, 24))
    config = SimConfig(
        policy=policy,
        max_num_seqs=seqs,
        max_num_batched_tokens=int(rng.integers(seqs, 64)),
        preemption=mode,
        output_quantile=0.5 if policy == "kv-aware" else None,
        kv_margin=0.0,
    )
    rule = make_policy(config, requests)
    if rule.ratio is not None:
        rule = dataclasses.replace(rule, ratio=SGLANG_RATIOS[seed % len(SGLANG_RATIOS)])
    return requests, capacity, config, rule


def two_decoding_and_a_long_arrival(*, mixed: bool) -> ReplicaSim:
    """An SGLang replica, 8 tokens a step, each step 1 s (`mixed`: SimConfig.mixed_prefill):
    A and B (4-token prompts, 5 tokens out) at 0 s; C (12-token prompt, 2 out) at 2.5 s."""
    prompts, outputs = np.array([4, 4, 12]), np.array([5, 5, 2])
    requests = Requests(prompts, outputs, outputs, np.array([0.0, 0.0, 2.5]))
    config = SimConfig("sglang", max_num_seqs=8, max_num_batched_tokens=8, mixed_prefill=mixed)
    return ReplicaSim(
        requests, constant_model(1.0), KVCapacity(1000, 1, 1000), config,
        make_policy(config, requests),
    )  # fmt: skip


def steady_at(hw: float, batches: int, measured: int = 1_000) -> SteadyState:
    """A steady state whose worst relative half-width is `hw` (the TPOT's is half the rate's),
    over `batches` batch means of `measured` requests; every other figure 1 (or 0.1 s)."""
    return SteadyState(
        requests=1_000, measured=measured, window_s=(0.0, 1.0), throughput_rps=1.0,
        output_tok_s=1.0, arrival_rps=None, ttft_p99_s=1.0, tpot_p99_s=0.1, tpot_mean_s=0.1,
        e2e_mean_s=1.0, rps_half_width=hw, tpot_half_width=hw / 2, queue_growing=False,
        batches=batches,
    )  # fmt: skip


def alone_and_in_lockstep(
    requests: Requests, model: StepTimeModel, capacity: KVCapacity, config: SimConfig
) -> tuple[ReplicaResult, ReplicaResult]:
    """One replica's run priced by `model`, and the same requests as the one rank of a lockstep
    group (its own work `model.local` plus the shared MoE layers)."""
    rule = make_policy(config, requests)
    alone = ReplicaSim(requests, model, capacity, config, rule).run()
    rank = ReplicaSim(requests, model.local, capacity, config, rule)
    (together,) = LockstepSim([rank], model).run()
    return alone, together


def llama_8b_h200(engine: str, **settings: object) -> Deployment:
    """Llama-3.1-8B on an H200 under `engine` with the deployment `settings` given."""
    return resolve(
        get_model("llama-3.1-8b"), get_hardware("h200-sxm"),
        settings_of({"engine": engine, **settings}),
    )  # fmt: skip


@cache
def benchmark_module(name: str) -> ModuleType:
    """benchmarks/<name>.py imported as the module `name` (the scripts are not a package)."""
    path = Path(__file__).resolve().parents[1] / "benchmarks" / f"{name}.py"
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault(name, module)  # its dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def assert_same_run(got: ReplicaResult, want: ReplicaResult) -> None:
    """Every field of two replica results equal to the bit (arrays with their dtypes)."""
    for field in dataclasses.fields(want):
        a, b = getattr(got, field.name), getattr(want, field.name)
        if isinstance(b, np.ndarray):
            assert a.dtype == b.dtype and a.tobytes() == b.tobytes(), field.name
        else:
            assert repr(a) == repr(b), field.name
