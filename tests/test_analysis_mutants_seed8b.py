"""More survivors of the seed-8 mutation sample (`benchmarks/mutation.py --packages analysis
--seed 8`; the first five are in test_analysis_mutants_seed8.py). Each expected value is worked
out by hand in its comment, and each test was checked to fail on its mutant, planted by hand."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest

from capcliff.analysis import parallel


def test_a_run_keeps_at_least_one_worker(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(parallel, "idle_cores", lambda: 3)
    assert parallel._Run(0).workers == 1  # max(1, min(0, 3)) = 1: never an empty pool
    assert parallel._Run(5).workers == 3  # max(1, min(5, 3)) = 3
    assert parallel._Run(2).workers == 2  # max(1, min(2, 3)) = 2


def test_a_timed_traces_offered_rate_counts_intervals_not_requests() -> None:
    from capcliff.analysis.evaluate.online_load import LoadKind, OnlineWorkload

    # 5 requests at 0, 1, 2, 3, 4 s: 4 intervals over a 4 s span = 1 request/s (not 5 / 4)
    arrivals = np.array([2.0, 0.0, 1.0, 4.0, 3.0])
    fake: Any = SimpleNamespace(
        kind=LoadKind.TRACE, backlog=lambda n: SimpleNamespace(arrival_s=arrivals)
    )
    assert OnlineWorkload.offered_rps(fake) == pytest.approx(1.0)
    # 3 requests at 10, 12 and 15 s: 2 intervals over 5 s = 0.4 request/s
    three = np.array([10.0, 12.0, 15.0])
    fake = SimpleNamespace(kind=LoadKind.TRACE, backlog=lambda n: SimpleNamespace(arrival_s=three))
    assert OnlineWorkload.offered_rps(fake) == pytest.approx(0.4)
    # all at once: no span, no rate
    same = np.array([1.0, 1.0])
    fake = SimpleNamespace(kind=LoadKind.TRACE, backlog=lambda n: SimpleNamespace(arrival_s=same))
    assert OnlineWorkload.offered_rps(fake) is None


def test_kv_capacity_is_compared_only_when_both_layouts_have_one() -> None:
    from capcliff.analysis.plan.advice import recommendation_reasons
    from capcliff.analysis.plan.types import Objective

    def row(name: str, cap: int | None) -> Any:
        return SimpleNamespace(
            name=name, weights_bytes_per_gpu=10, kv_capacity_tokens_per_replica=cap,
            kv_capacity_tokens_total=cap, cliff=None, sweet_spot=None,
        )  # fmt: skip

    # both known: 3,000 / 1,500 = 2.0x
    assert recommendation_reasons(row("a", 3000), row("b", 1500), Objective.COST) == [
        "KV capacity per replica: 3,000 vs 1,500 tokens (2.0x); in all 3,000 vs 1,500"
    ]
    # one of them unknown (0 or None): no line, and no division by 0
    assert recommendation_reasons(row("a", 3000), row("b", 0), Objective.COST) == []
    assert recommendation_reasons(row("a", None), row("b", 1500), Objective.COST) == []


def test_ranged_benchmark_lengths_run_from_ratio_x_len_to_len() -> None:
    from capcliff.analysis.sweep.step_fit import point_requests
    from capcliff.calibrate.benchmarks import BenchmarkPoint

    point = BenchmarkPoint(
        "r", concurrency=4, input_len=1000, output_len=200, num_requests=400, range_ratio=0.5
    )
    requests = point_requests(point)
    # inputs uniform in [0.5 x 1,000, 1,000] = [500, 1,000]; outputs in [100, 200]
    assert requests.input_tokens.min() >= 500 and requests.input_tokens.max() <= 1000
    assert requests.output_tokens.min() >= 100 and requests.output_tokens.max() <= 200
    # 400 draws spread over 501 values: far from all equal (a fixed 1,000 would be)
    assert requests.input_tokens.min() < 600 and requests.input_tokens.max() > 900
    fixed = point_requests(BenchmarkPoint("f", 4, 1000, 200, num_requests=8))
    assert set(fixed.input_tokens.tolist()) == {1000}  # ratio 1: 1 x 1,000 = the length
