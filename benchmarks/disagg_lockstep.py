"""Lockstep decode ranks that fold landings against ranks that step through every admission.

Prints figures, asserts nothing. Random landed requests on a dp4-ep4 Qwen3-30B-A3B decode
instance (four attention-DP ranks in lockstep, a small KV cache so that ranks preempt), under
every admission policy: the number of cases in which the two give different first tokens,
finishes, preemptions or steps, and the events each takes.

Every case agrees since `LockstepSim` re-syncs a settled rank's clock before `take_arrivals`
(before that fix, 1-2 cases per policy took an arrival one step late).

Run: PYTHONPATH=. python benchmarks/disagg_lockstep.py
"""

from __future__ import annotations

import dataclasses

import numpy as np

from capcliff.analysis.deployment import resolve
from capcliff.analysis.deployment_settings import DeploymentSettings
from capcliff.analysis.disagg.pools import parse_disagg, pools_of
from capcliff.catalog.catalogs import get_hardware, get_model
from capcliff.sim.core import landed_class, lockstep_class, replica_class
from capcliff.sim.loop.timeline import ReplicaResult
from capcliff.sim.policies import POLICY_NAMES
from capcliff.sim.simulate import make_policy
from capcliff.sim.traffic.workload import Requests

RANKS = 4
SEEDS = 30


def _case(seed: int) -> tuple[Requests, int]:
    rng = np.random.default_rng(seed)
    n = int(rng.integers(8, 40))
    outputs = rng.integers(2, 300, n)
    requests = Requests(
        rng.integers(16, 400, n), outputs, outputs,
        np.cumsum(rng.exponential(float(rng.choice([0.002, 0.02, 0.2])), n)),
    )  # fmt: skip
    return requests, int(rng.integers(40, 160))


def main() -> None:
    dep = resolve(get_model("qwen3-30b-a3b"), get_hardware("h200-sxm"), DeploymentSettings())
    pool = pools_of(dep, parse_disagg(f"1p:tp1,1d:dp{RANKS}-ep{RANKS}"), 1024)[1].pool
    print("| policy | cases | differ | events, exact admissions | events, folded |")
    print("|---|---:|---:|---:|---:|")
    for policy in POLICY_NAMES:
        differ, events = 0, [0, 0]
        for seed in range(SEEDS):
            requests, blocks = _case(seed)
            capacity = dataclasses.replace(pool.capacity, blocks=blocks)
            config = dataclasses.replace(pool.config, policy=policy)
            rule = make_policy(config, requests)
            owners = [np.flatnonzero(np.arange(len(requests)) % RANKS == r) for r in range(RANKS)]
            outs: list[list[ReplicaResult]] = []
            landed, plain, lockstep = landed_class(), replica_class(), lockstep_class()
            for k, fold in enumerate((False, True)):
                local = pool.model.local
                ranks = [
                    landed(requests.subset(idx), local, capacity, config, rule, in_lockstep=True)
                    if fold
                    else plain(requests.subset(idx), local, capacity, config, rule, landed=True)
                    for idx in owners
                ]  # fmt: skip
                outs.append(lockstep(ranks, pool.model, group=RANKS).run())
                events[k] += sum(r.events for r in outs[-1])
            differ += any(
                not np.allclose(f.finish_s, e.finish_s, rtol=1e-9)
                or not np.allclose(f.first_token_s, e.first_token_s, rtol=1e-9)
                or f.preemptions.tolist() != e.preemptions.tolist()
                or f.steps != e.steps
                for e, f in zip(*outs, strict=True)
            )
        print(f"| {policy} | {SEEDS} | {differ} | {events[0]:,} | {events[1]:,} |")


if __name__ == "__main__":
    main()
