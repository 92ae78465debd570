"""Admission checks against the number of requests of a replica: prints figures, asserts nothing.

SGLang's and the kv-aware rule's admission checks read the running set. They used to build it
from a boolean array over every request of the replica (`np.flatnonzero(cohort.member)`), so a
check cost O(N) and a run O(N^2). This script times one replica of the study's 8B-on-one-H200
scenario at a fixed cap (64, below the cliff) for growing N: the CPU time per request should stay
flat if the checks cost O(running), and grow with N if they cost O(N).

Run: python benchmarks/admission_scans.py [--quick]     (CPU seconds of this process, best of 3)
"""

from __future__ import annotations

import sys
import time

import numpy as np

from capcliff.sim.config import SimConfig
from capcliff.sim.simulate import simulate
from capcliff.sim.traffic.workload import generate_requests, preset

sys.path.insert(0, __file__.rsplit("/", 1)[0])
from simulate import scenario  # the study scenario's model and KV capacity


def main() -> None:
    quick = "--quick" in sys.argv
    _, model, capacity = scenario()
    sizes = (2_000, 8_000, 32_000) if quick else (2_000, 8_000, 32_000, 128_000)
    for policy in ("sglang", "kv-aware"):
        for n in sizes:
            requests = generate_requests(
                preset("reasoning", num_requests=n), np.random.default_rng(0)
            )
            best = float("inf")
            for _ in range(1 if quick or n > 32_000 else 3):
                start = time.process_time()
                config = SimConfig(policy=policy, max_num_seqs=64)
                result = simulate(requests, model, capacity, config)  # type: ignore[arg-type]
                best = min(best, time.process_time() - start)
            print(
                f"{policy:9s} N = {n:7,d}: {best:6.2f} s CPU, "
                f"{best / n * 1e6:6.1f} us per request, "
                f"{result.events:,} events"
            )


if __name__ == "__main__":
    main()
