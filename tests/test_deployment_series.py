"""`result.deployment_series` samples many replicas' step series on one grid: each grid value
must equal the event covering that time, replica by replica, summed in replica order (the plain
per-replica sum, written out here), bit for bit, however often replicas share one run."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from capcliff.sim.result import deployment_series


@dataclass
class _Run:
    """The fields of a `ReplicaResult` that `deployment_series` reads."""

    series_s: np.ndarray
    series_used_blocks: np.ndarray
    series_running: np.ndarray
    series_waiting: np.ndarray
    series_hbm_utilization: np.ndarray
    makespan_s: float
    total_blocks: int


def _covering(times: np.ndarray, values: np.ndarray, t: float) -> float:
    """The value of the first event ending at or after t (events record their end), 0 after."""
    for end, value in zip(times, values, strict=True):
        if end >= t:
            return float(value)
    return 0.0


runs = st.lists(
    st.lists(st.tuples(st.floats(0.0, 10.0), st.integers(0, 50), st.floats(0.0, 1.0)), max_size=12),
    min_size=1,
    max_size=5,
)


@settings(max_examples=150, deadline=None)
@given(runs, st.lists(st.integers(0, 4), min_size=1, max_size=40), st.integers(2, 9))
def test_samples_equal_the_replica_by_replica_sum(
    events: list[list[tuple[float, int, float]]], picks: list[int], points: int
) -> None:
    made = []
    for ev in events:
        ev = sorted(ev)
        t = np.array([e[0] for e in ev])
        n = np.array([float(e[1]) for e in ev])
        u = np.array([e[2] for e in ev])
        made.append(_Run(t, n, n + 1, 2 * n, u, float(t[-1]) if len(t) else 1.0, 100))
    replicas = [made[p % len(made)] for p in picks]  # shared runs: the same object repeated
    got = deployment_series(replicas, points)  # type: ignore[arg-type]
    grid = np.linspace(0.0, max(r.makespan_s for r in replicas), points)
    for k, t in enumerate(grid):
        used = running = waiting = hbm = 0.0
        for r in replicas:
            used += _covering(r.series_s, r.series_used_blocks, t)
            running += _covering(r.series_s, r.series_running, t)
            waiting += _covering(r.series_s, r.series_waiting, t)
            hbm += _covering(r.series_s, r.series_hbm_utilization, t)
        assert got.running[k] == running and got.waiting[k] == waiting
        assert got.kv_utilization[k] == used / (100 * len(replicas))
        assert got.hbm_utilization[k] == hbm / len(replicas)
