"""Means next to percentiles: unweighted over requests, weighted over tokens for ITL."""

from __future__ import annotations

import numpy as np
import pytest
from typer.testing import CliRunner

from capcliff.cli import app
from capcliff.sim.result import Percentiles
from tests.test_sweep import SMALL

runner = CliRunner()


def test_mean_of_requests_skips_missing_values() -> None:
    # (1 + 3) / 2 = 2; the NaN (a one-token output's TPOT) is left out.
    assert Percentiles.of(np.array([1.0, np.nan, 3.0])).mean == 2.0


def test_token_weighted_mean_counts_each_gap() -> None:
    # A request with 3 gaps of 10 ms and one with 1 gap of 30 ms: (3 x 10 + 30) / 4 = 15 ms.
    # Sorted by gap, the cumulative share is 0.75 at 10 ms: p50 = 10 ms, p90 = p99 = 30 ms.
    itl = Percentiles.of(np.array([0.01, 0.03]), weights=np.array([3.0, 1.0]))
    assert (itl.mean, itl.p50, itl.p90, itl.p99) == pytest.approx((0.015, 0.01, 0.03, 0.03))


def test_csv_carries_mean_p50_p90_p99_of_every_latency() -> None:
    header = runner.invoke(app, ["sweep", *SMALL, "--format", "csv"]).output.splitlines()[0]
    for name in ("ttft", "tpot", "itl", "e2e"):
        for stat in ("mean", "p50", "p90", "p99"):
            assert f"{name}_{stat}_s" in header.split(",")
