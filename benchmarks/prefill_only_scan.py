"""vLLM V0 without chunked prefill (`capcliff.sim.loop.prefill_only`) against the step-by-step
reference over many more cases than the tests run: random cases in three arrival modes and
pressure cases, recompute and swap, with the replica's jumps over decode runs on and off.

Run: python benchmarks/prefill_only_scan.py [SEEDS]   (default 40 seeds per case; prints the cases
that differ, then the totals)
"""

from __future__ import annotations

import dataclasses
import sys
from pathlib import Path
from unittest.mock import patch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import capcliff.sim.loop.replica as replica_module
from capcliff.sim.config import PreemptionMode, SimConfig
from capcliff.sim.loop.replica import ReplicaSim
from capcliff.sim.simulate import make_policy
from capcliff.sim.traffic.workload import Requests
from tests.reference_sim import ReferenceSim
from tests.simtools import pressure_case, random_case, toy_model
from tests.test_simulate import _assert_same

MODES = (PreemptionMode.RECOMPUTE, PreemptionMode.SWAP)
ARRIVALS = ("batch", "poisson", "clients")


def _no_chunking(requests: Requests, config: SimConfig, extra: int) -> SimConfig:
    """Chunked prefill off, with a token budget `extra` above the longest request."""
    longest = int((requests.input_tokens + requests.max_output_tokens).max())
    return dataclasses.replace(
        config, chunked_prefill=False, max_num_batched_tokens=longest + extra
    )


def scan(seeds: int) -> tuple[int, int, int, int]:
    """(cases, differing, preemptions, swapped tokens) with the current jump setting."""
    cases = differ = preempted = swapped = 0
    for mode in MODES:
        runs = []
        for arrival in ARRIVALS:
            for seed in range(seeds):
                requests, capacity, config = random_case(seed, "vllm-v0", mode, arrival)
                config = _no_chunking(requests, config, seed * 7 % 50)
                runs.append((f"{mode.value}/{arrival}/{seed}", requests, capacity, config,
                             make_policy(config, requests)))  # fmt: skip
        for seed in range(seeds):
            requests, capacity, config, rule = pressure_case(seed, "vllm-v0", mode)
            config = _no_chunking(requests, config, seed * 11 % 60)
            runs.append((f"{mode.value}/pressure/{seed}", requests, capacity, config, rule))
        for name, requests, capacity, config, rule in runs:
            fast = ReplicaSim(requests, toy_model(), capacity, config, rule).run()
            slow = ReferenceSim(requests, toy_model(), capacity, config, rule).run()
            cases += 1
            preempted += sum(slow.preemptions)
            swapped += slow.swapped_tokens
            try:
                _assert_same(fast, slow)
            except AssertionError as exc:
                differ += 1
                print(f"differs: {name}: {str(exc).splitlines()[0]}")
    return cases, differ, preempted, swapped


def main() -> None:
    seeds = int(sys.argv[1]) if len(sys.argv) > 1 else 40
    for jumps in (True, False):
        if jumps:
            totals = scan(seeds)
        else:
            with patch.object(replica_module, "fast_forward", lambda sim: False):
                totals = scan(seeds)
        cases, differ, preempted, swapped = totals
        print(
            f"jumps {'on' if jumps else 'off'}: {cases} cases, {differ} differ; "
            f"{preempted:,} preemptions, {swapped:,} swapped tokens"
        )


if __name__ == "__main__":
    main()
