"""CPU time of closed-loop rounds on two pools, each round resumed from the round before
(`sim.disagg.resume`) or simulated from t = 0, and whether the two give the same result.

The two-pool closed loop (`sim.disagg.closed_loop.simulate_clients`) repeats its rounds until no
send time moves; `run_disagg` resumes each replica of a round where the settled send times end.
This runs the same loops both ways on deepseek-r1-distill-qwen-32b, 2p:tp1,6d:tp1 on H200 (the
split `plan --disagg --workload multiturn-chat --rate 5` chooses) and 1p:tp1,1d:tp1: sessions
at a rate, clients at a concurrency; it prints the rounds, the CPU seconds (user + sys of this
process, one run each) and a SHA-256 of every per-request figure of each result, which must be
the same both ways.

Run: CAPCLIFF_SIM_CORE=python PYTHONPATH=. python benchmarks/disagg_rounds.py
"""

from __future__ import annotations

import hashlib
import os
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from capcliff.analysis.deployment import resolve
from capcliff.analysis.deployment_settings import DeploymentSettings
from capcliff.analysis.disagg.pools import parse_disagg, pools_of, run_disagg
from capcliff.analysis.workloads import WorkloadChoice, plan_workloads
from capcliff.catalog.catalogs import get_hardware, get_model
from capcliff.sim.core import core_name
from capcliff.sim.disagg.pools import DisaggResult
from capcliff.sim.traffic.workload import Arrival

CASES = [  # (split, workload, requests, rate, clients)
    ("2p:tp1,6d:tp1", "multiturn-chat", 5040, 5.0, None),
    ("1p:tp1,1d:tp1", "multiturn-chat", 1260, 2.0, None),
    ("2p:tp1,6d:tp1", "chat", 2000, None, 64),
]


def _cpu_s() -> float:
    times = os.times()
    return times.user + times.system


def _digest(result: DisaggResult) -> str:
    serving = result.serving
    parts = (serving.arrival_s, serving.ttft_s, serving.e2e_s, result.prefill_done_s)
    return hashlib.sha256(b"".join(np.ascontiguousarray(a).tobytes() for a in parts)).hexdigest()


def main() -> None:
    dep = resolve(get_model("deepseek-r1-distill-qwen-32b"), get_hardware("h200-sxm"),
                  DeploymentSettings())  # fmt: skip
    print(f"core: {core_name()}")
    print("split          workload        requests  rounds  from t=0 s  resumed s  same")
    for split, preset, n, rate, clients in CASES:
        arrival = Arrival.POISSON if rate is not None else Arrival.CLIENTS
        choice = WorkloadChoice(num_requests=n, preset_name=preset, arrival=arrival,
                                rate_per_s=rate, clients=clients)  # fmt: skip
        requests = plan_workloads(choice, 0)[1][0][1]
        pools = pools_of(dep, parse_disagg(split), dep.context_length(requests))
        digests, cpu, rounds = [], [], []
        for resume in (False, True):
            seen: list[int] = []
            start = _cpu_s()
            result = run_disagg(dep, pools, requests, resume=resume,
                                observe=lambda _r, seen=seen: seen.append(1))  # fmt: skip
            cpu.append(_cpu_s() - start)
            digests.append(_digest(result))
            rounds.append(len(seen))
        same = digests[0] == digests[1] and rounds[0] == rounds[1]
        print(f"{split:14} {preset:15} {len(requests):8,}  {rounds[1]:6}  {cpu[0]:10.2f}  "
              f"{cpu[1]:9.2f}  {'yes' if same else 'NO'}")  # fmt: skip


if __name__ == "__main__":
    main()
