"""A SHA-256 fingerprint of every field of many simulation results: run it before and after a
change to the simulator's event loop; the digests must not move (bit-identical results).

Cases: the reference tests' small random cases (30 seeds x 6 policies x 2 preemption modes x
3 arrival kinds), their pressure cases (30 seeds x 5 preempting policies x 2 modes), and the
study's 8B-on-one-H200 scenario (`benchmarks/simulate.py`) at a few concurrency caps under every
policy (1,000 requests; the full 10,000 at cap 2,048 under vLLM unless --quick).

Run: python benchmarks/sim_fingerprint.py [--quick]   (prints one digest per group and in all)
"""

from __future__ import annotations

import dataclasses
import hashlib
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.simulate import scenario
from capcliff.sim.config import PreemptionMode, SimConfig
from capcliff.sim.core import core_name, replica_class
from capcliff.sim.simulate import make_policy, simulate
from capcliff.sim.traffic.workload import Requests
from tests.simtools import (
    POLICIES,
    PREEMPTING_POLICIES,
    pressure_case,
    random_case,
    toy_model,
)

MODES = (PreemptionMode.RECOMPUTE, PreemptionMode.SWAP)
ARRIVALS = ("batch", "poisson", "clients")


def _feed(h: hashlib._Hash, value: object) -> None:
    """Feed every field of `value` (dataclasses, tuples, arrays, numbers) into `h`, exactly."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        for f in dataclasses.fields(value):
            h.update(f.name.encode())
            _feed(h, getattr(value, f.name))
    elif isinstance(value, np.ndarray):
        h.update(str(value.dtype).encode())
        h.update(np.ascontiguousarray(value).tobytes())
    elif isinstance(value, (tuple, list)):
        h.update(b"[")
        for v in value:
            _feed(h, v)
        h.update(b"]")
    else:
        h.update(repr(value).encode())


def _digest(results: list[object]) -> str:
    h = hashlib.sha256()
    for r in results:
        _feed(h, r)
    return h.hexdigest()


def small_cases() -> list[object]:
    out: list[object] = []
    for seed in range(30):
        for policy in POLICIES:
            for mode in MODES:
                for arrival in ARRIVALS:
                    requests, capacity, config = random_case(seed, policy, mode, arrival)
                    rule = make_policy(config, requests)
                    out.append(replica_class()(requests, toy_model(), capacity, config, rule).run())
    return out


def pressure_cases() -> list[object]:
    out: list[object] = []
    for seed in range(30):
        for policy in PREEMPTING_POLICIES:
            for mode in MODES:
                requests, capacity, config, rule = pressure_case(seed, policy, mode)
                out.append(replica_class()(requests, toy_model(), capacity, config, rule).run())
    return out


def study_cases(quick: bool) -> list[object]:
    requests, model, capacity = scenario()
    assert isinstance(requests, Requests)
    head = requests.subset(np.arange(1_000))
    out: list[object] = []
    for policy in POLICIES:
        for mode in MODES:
            for cap in (64, 512, 1_000):
                config = SimConfig(policy=policy, max_num_seqs=cap, preemption=mode)
                out.append(simulate(head, model, capacity, config))  # type: ignore[arg-type]
    if not quick:
        config = SimConfig(max_num_seqs=2_048)
        out.append(simulate(requests, model, capacity, config))  # type: ignore[arg-type]
    return out


def main() -> None:
    quick = "--quick" in sys.argv
    digests = {
        "small": _digest(small_cases()),
        "pressure": _digest(pressure_cases()),
        "study": _digest(study_cases(quick)),
    }
    print(f"{'core':9} {core_name()}  (CAPCLIFF_SIM_CORE=python: the pure-Python loop)")
    for name, d in digests.items():
        print(f"{name:9} {d}")
    print(f"{'all':9} {hashlib.sha256(''.join(digests.values()).encode()).hexdigest()}")


if __name__ == "__main__":
    main()
