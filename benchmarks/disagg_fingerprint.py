"""A SHA-256 fingerprint of every field of many two-pool and lockstep results: run it before and
after a change to the disaggregated simulator (`sim/landed.py`, `sim/disagg.py`,
`sim/lockstep.py`); the digests must not move (bit-identical results). `sim_fingerprint.py`
covers the single replica; this covers what it does not reach:

- landed: `LandedReplicaSim` on the reference tests' small random cases (40 seeds x 6 policies x
  2 preemption modes x batch/Poisson; one more output token and one more block each) and
  pressure cases (40 seeds x 5 preempting policies x 2 modes, each also on two thirds of the
  blocks, or as few as the longest request needs alone, so that the decode pool thrashes);
- prefill: `PrefillReplicaSim` (every output one token) on the same small random cases, also with
  as few blocks as the longest prompt needs; its digest is the plain `ReplicaSim`'s
  (`prefill_cases(ReplicaSim)`);
- lockstep: four attention-DP ranks in lockstep (Qwen3-30B-A3B dp4-ep4, a small KV cache), landed
  ranks that fold and plain ranks, and aggregated ranks taking their own prefills, under every
  policy (`benchmarks/disagg_lockstep.py`'s cases, 12 seeds);
- two-pool: `run_disagg` for the 8B (1p:tp1,3d:tp1; 2p:tp1,1d:tp1 with long outputs, so that
  the decode pool preempts, under vLLM, SGLang and TensorRT-LLM MAX_UTILIZATION) and DeepSeek-R1
  (2p:dp8-ep8,2d:dp8-ep8), each as a batch and at two Poisson rates, and the aggregated R1
  dp32-ep32 lockstep run on the same requests.

Every class comes from `capcliff.sim.core` (the compiled copies when current;
`CAPCLIFF_SIM_CORE=python`: the sources), so run it both ways: the digests are the same.

Run: PYTHONPATH=. python benchmarks/disagg_fingerprint.py   (one digest per group and in all)
"""

from __future__ import annotations

import dataclasses
import hashlib
import sys
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.disagg_lockstep import RANKS, _case
from benchmarks.sim_fingerprint import MODES, _digest
from capcliff.analysis.deployment import resolve
from capcliff.analysis.deployment_settings import DeploymentSettings
from capcliff.analysis.disagg.pools import parse_disagg, pools_of, run_disagg
from capcliff.analysis.evaluate.replica_models import replica_models
from capcliff.analysis.workloads import WorkloadChoice, plan_workloads
from capcliff.catalog.catalogs import get_hardware, get_model
from capcliff.catalog.layout import parse_layout
from capcliff.sim.config import KVCapacity, SimConfig
from capcliff.sim.core import core_name, landed_class, lockstep_class, prefill_class, replica_class
from capcliff.sim.loop.replica import ReplicaSim
from capcliff.sim.policies import POLICY_NAMES
from capcliff.sim.simulate import make_policy, simulate
from capcliff.sim.traffic.workload import Requests
from tests.simtools import POLICIES, PREEMPTING_POLICIES, pressure_case, random_case, toy_model


def _landed(requests: Requests, capacity: KVCapacity, config: SimConfig) -> object:
    """`LandedReplicaSim` on `requests` with one more output token each (a landed request has
    generated its first token already, so it needs >= 2) and one more block (for that token)."""
    longer = requests.output_tokens + 1
    requests = dataclasses.replace(
        requests, output_tokens=longer, max_output_tokens=requests.max_output_tokens + 1
    )
    capacity = replace(capacity, blocks=capacity.blocks + 1)
    rule = make_policy(config, requests)
    return landed_class()(requests, toy_model(), capacity, config, rule).run()


def _random_cases() -> Iterator[tuple[Requests, KVCapacity, SimConfig]]:
    """The reference tests' small random cases: 40 seeds x policies x modes x batch/Poisson."""
    for seed in range(40):
        for policy in POLICIES:
            for mode in MODES:
                for arrival in ("batch", "poisson"):
                    yield random_case(seed, policy, mode, arrival)


def landed_cases() -> list[object]:
    out = [_landed(*case) for case in _random_cases()]
    for seed in range(40):
        for policy in PREEMPTING_POLICIES:
            for mode in MODES:
                requests, capacity, config, _ = pressure_case(seed, policy, mode)
                longest = int((requests.input_tokens + requests.max_output_tokens).max())
                fits = -(-longest // capacity.block_size)  # what the longest needs alone
                tighter = replace(capacity, blocks=max(capacity.blocks * 2 // 3, fits))
                out.append(_landed(requests, capacity, config))
                out.append(_landed(requests, tighter, config))
    return out


def prefill_cases(replica: type[ReplicaSim] | None = None) -> list[object]:
    """Prefill replicas (every output one token; `PrefillReplicaSim` unless `replica` is given)
    on the small random cases, also with as few blocks as the longest prompt needs (admissions
    refused for KV)."""
    replica = replica or prefill_class()
    out: list[object] = []
    for requests, capacity, config in _random_cases():
        ones = np.ones(len(requests), dtype=np.int64)
        requests = replace(requests, output_tokens=ones, max_output_tokens=ones)
        fits = -(-int(requests.input_tokens.max()) // capacity.block_size)
        for blocks in (capacity.blocks, fits):
            tight = replace(capacity, blocks=blocks)
            rule = make_policy(config, requests)
            out.append(replica(requests, toy_model(), tight, config, rule).run())
    return out


def lockstep_cases() -> list[object]:
    dep = resolve(get_model("qwen3-30b-a3b"), get_hardware("h200-sxm"), DeploymentSettings())
    pool = pools_of(dep, parse_disagg(f"1p:tp1,1d:dp{RANKS}-ep{RANKS}"), 1024)[1].pool
    out: list[object] = []
    for policy in POLICY_NAMES:
        for seed in range(12):
            requests, blocks = _case(seed)
            capacity = replace(pool.capacity, blocks=blocks)
            config = replace(pool.config, policy=policy)
            rule = make_policy(config, requests)
            owners = [np.flatnonzero(np.arange(len(requests)) % RANKS == r) for r in range(RANKS)]
            local = pool.model.local
            landed, plain, lockstep = landed_class(), replica_class(), lockstep_class()
            for kind in ("fold", "landed", "plain"):
                ranks = [
                    landed(requests.subset(idx), local, capacity, config, rule, in_lockstep=True)
                    if kind == "fold"
                    else plain(requests.subset(idx), local, capacity, config, rule,
                               landed=kind == "landed")
                    for idx in owners
                ]  # fmt: skip
                out.append(lockstep(ranks, pool.model, group=RANKS).run())
    return out


TWO_POOL = (  # model, requests, ISL, OSL, policy (None: the engine's), split, aggregated layout
    ("deepseek-r1-distill-llama-8b", 2000, 2048, 1024, None, "1p:tp1,3d:tp1", None),
    ("deepseek-r1-distill-llama-8b", 600, 2048, 4096, None, "2p:tp1,1d:tp1", None),
    ("deepseek-r1-distill-llama-8b", 600, 2048, 4096, "sglang", "2p:tp1,1d:tp1", None),
    ("deepseek-r1-distill-llama-8b", 600, 2048, 4096, "trtllm-max-util", "2p:tp1,1d:tp1", None),
    ("deepseek-r1", 500, 8192, 1024, None, "2p:dp8-ep8,2d:dp8-ep8", "dp32-ep32"),
)


def two_pool_cases() -> list[object]:
    out: list[object] = []
    for model_id, n, isl, osl, policy, name, aggregated in TWO_POOL:
        settings = DeploymentSettings(policy=policy)
        dep = resolve(get_model(model_id), get_hardware("h200-sxm"), settings)
        batch = plan_workloads(WorkloadChoice(num_requests=n, isl=isl, osl=(osl,)), 0)[1][0][1]
        length = dep.context_length(batch)
        pools = pools_of(dep, parse_disagg(name), length)
        gaps = np.cumsum(np.random.default_rng(0).exponential(1.0, n))
        for rate in (None, 2.0, 8.0):
            requests = batch if rate is None else replace(batch, arrival_s=gaps / rate)
            out.append(run_disagg(dep, pools, requests))
            if aggregated is not None:
                layout = parse_layout(aggregated)
                capacity, steps = replica_models(dep, dep.memory(layout, length))
                config = dep.sim_config(length)
                out.append(simulate(requests, steps, capacity, config, dp=layout.dp))
    return out


def main() -> None:
    digests = {
        "landed": _digest(landed_cases()),
        "prefill": _digest(prefill_cases()),
        "lockstep": _digest(lockstep_cases()),
        "two-pool": _digest(two_pool_cases()),
    }
    print(f"{'core':9} {core_name()}  (CAPCLIFF_SIM_CORE=python: the pure-Python classes)")
    for name, d in digests.items():
        print(f"{name:9} {d}")
    print(f"{'all':9} {hashlib.sha256(''.join(digests.values()).encode()).hexdigest()}")


if __name__ == "__main__":
    main()
