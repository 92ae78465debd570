"""Edges the seed-67 mutation sample (`benchmarks/mutation.py --packages analysis --seed 67`)
found untested. Every expected value is worked out by hand in the comments."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from capcliff.analysis.disagg.compare import meets
from capcliff.analysis.evaluate.solver import Slo
from capcliff.analysis.plan.advice import merit
from capcliff.analysis.plan.types import Objective


def test_a_split_exactly_at_its_slo_limits_meets_them() -> None:
    # "within the SLO" includes the limit itself: 2.0 s of 2.0 s and 50 ms of 50 ms meet it
    slo = Slo(ttft_s=2.0, tpot_s=0.05)
    assert meets(2.0, 0.05, slo)
    assert not meets(2.01, 0.05, slo)
    assert not meets(2.0, 0.051, slo)
    assert meets(99.0, 9.0, None)


def test_merit_is_the_inverse_cost_and_zero_for_no_cost() -> None:
    # 0.5 GPU-hours per million tokens is a merit of 1 / 0.5 = 2; a makespan of 4 s is 0.25;
    # a cost of 0 (nothing measured) is worth 0, not a division by zero
    def row(**figures: float) -> Any:
        spot = {"goodput_req_s": 3.0, "gpu_hours_per_mtok": 0.5, "makespan_s": 4.0, **figures}
        return SimpleNamespace(sweet_spot=SimpleNamespace(**spot))

    assert merit(row(), Objective.COST) == 2.0
    assert merit(row(), Objective.MAKESPAN) == 0.25
    assert merit(row(), Objective.GOODPUT) == 3.0
    assert merit(row(gpu_hours_per_mtok=0.0), Objective.COST) == 0.0
    assert merit(row(makespan_s=0.0), Objective.MAKESPAN) == 0.0


def test_kv_over_time_keeps_about_128_points() -> None:
    import numpy as np

    from capcliff.analysis.sweep.timelines import kv_over_time

    # 256 samples are thinned to every 256 // 128 = 2nd: 128 points, from t = 0, 2, 4 ...; 10
    # samples are all kept (step max(1, 10 // 128) = 1).
    def point(cap: int, n: int) -> Any:
        series = SimpleNamespace(time_s=np.arange(float(n)), kv_utilization=np.arange(n) / n)
        return SimpleNamespace(
            concurrency=cap, hit_cliff=False, result=SimpleNamespace(series=series)
        )

    long = kv_over_time((point(8, 256),), 8)["sweet spot (8)"]
    assert len(long) == 128
    assert long[:2] == [(0.0, 0.0), (2.0, 2 / 256)]
    short = kv_over_time((point(4, 10),), 4)["sweet spot (4)"]
    assert [t for t, _ in short] == [float(t) for t in range(10)]


def test_cores_falls_back_to_the_cpu_count_and_then_to_one(monkeypatch: pytest.MonkeyPatch) -> None:
    from capcliff.analysis import parallel

    # without sched_getaffinity (not Linux): os.cpu_count(), and 1 when even that is unknown
    monkeypatch.delattr(parallel.os, "sched_getaffinity", raising=False)
    monkeypatch.setattr(parallel.os, "cpu_count", lambda: 6)
    assert parallel.cores() == 6
    monkeypatch.setattr(parallel.os, "cpu_count", lambda: None)
    assert parallel.cores() == 1
