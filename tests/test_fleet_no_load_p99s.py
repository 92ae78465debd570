"""With no load and no SLO the fleet row is the planned replicas at the headroom below their
saturation, where the layout's own p99s were measured: it showed "-" beside them (h-user's
trial, left)."""

from __future__ import annotations

import json

import pytest

from capcliff.cli.main import main

PLAN = ["plan", "llama-3.1-8b", "--gpus", "1", "--isl", "500", "--osl", "200", "--jobs", "1",
        "--num-requests", "400", "--format", "json"]  # fmt: skip


def _plan(capsys: pytest.CaptureFixture[str], *extra: str) -> dict[str, object]:
    assert main([*PLAN, *extra]) == 0
    return json.loads(capsys.readouterr().out)  # type: ignore[no-any-return]


def test_the_fleet_row_carries_the_p99s_at_its_own_rate(capsys: pytest.CaptureFixture[str]) -> None:
    report = _plan(capsys)
    (row,) = report["fleet"]  # type: ignore[misc]
    (layout,) = report["layouts"]  # type: ignore[misc]
    capacity = layout["capacity"]
    # the row's rate is the replica's sustained rate less the 20 % headroom: the point the
    # layout's p99s were measured at
    assert row["served_rps"] == pytest.approx(capacity["sustained_rps"] * 0.8)
    assert row["ttft_p99_s"] == capacity["ttft_p99_s"] is not None
    assert row["tpot_p99_s"] == capacity["tpot_p99_s"] is not None


def test_with_an_slo_the_rows_rate_is_not_where_the_p99s_were_measured(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # under an SLO the layout's p99s are at its sustained rate, the fleet's 20 % below it
    report = _plan(capsys, "--slo-tpot", "0.05")
    (row,) = report["fleet"]  # type: ignore[misc]
    assert row["ttft_p99_s"] is None and row["tpot_p99_s"] is None
