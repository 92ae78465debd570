"""Edges of the sweep's step-time fit that mutation testing found untested
(`benchmarks/mutation.py --packages analysis`, seed 7): each expected value worked out by hand."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any, cast

import pytest

from capcliff.analysis.sweep import step_fit
from capcliff.errors import InputError


def _basis(measured_tpot: float, fixed: float, variable: float) -> Any:
    """A point with only a mean TPOT measured (no throughput: its s/token row is left out)."""
    return SimpleNamespace(
        point=SimpleNamespace(mean_tpot_s=measured_tpot, output_throughput_tok_s=0.0),
        fixed=SimpleNamespace(tpot_s=fixed, s_per_token=0.0),
        variable=SimpleNamespace(tpot_s=variable, s_per_token=0.0),
    )


def test_the_fit_solves_each_point_relative_to_its_measurement() -> None:
    # f + s = 3 and f + 2 s = 4 (TPOT = f x fixed + s x variable): f = 2, s = 1, exactly
    bases = [_basis(3.0, 1.0, 1.0), _basis(4.0, 1.0, 2.0)]
    assert step_fit._solve(bases, ("fixed_s", "scale"), 0.5) == pytest.approx((2.0, 1.0))
    # f + s = 1 and f + 2 s = 3 give f = -1 < 0: fixed pinned to 0 and s fitted on relative
    # errors, rows (1/1, 1/1) and (1/3, 2/3), targets 1: s = (1 + 2/3) / (1 + 4/9) = 15/13
    bases = [_basis(1.0, 1.0, 1.0), _basis(3.0, 1.0, 2.0)]
    assert step_fit._solve(bases, ("fixed_s", "scale"), 0.5) == pytest.approx((0.0, 15 / 13))


def test_the_fit_weighs_a_points_throughput_as_seconds_per_output_token() -> None:
    # 100 output tok/s is 0.01 s per token, measured beside a mean TPOT of 20 ms; at scale 1
    # the model gives 10 ms for both. With fixed_s pinned to 0 the rows are 0.01 / 0.02 = 0.5
    # (TPOT) and 0.01 / 0.01 = 1.0 (s/token), targets 1: s = (0.5 + 1.0) / (0.25 + 1.0) = 1.2
    # (the TPOT row alone would give 2.0)
    basis = SimpleNamespace(
        point=SimpleNamespace(mean_tpot_s=0.02, output_throughput_tok_s=100.0),
        fixed=SimpleNamespace(tpot_s=1.0, s_per_token=1.0),
        variable=SimpleNamespace(tpot_s=0.01, s_per_token=0.01),
    )
    assert step_fit._solve([cast(Any, basis)], ("scale",), 0.0) == pytest.approx((0.0, 1.2))


@pytest.mark.parametrize("scale", [0.0, -0.5])
def test_a_fit_with_no_positive_scale_is_refused(
    monkeypatch: pytest.MonkeyPatch, scale: float
) -> None:
    monkeypatch.setattr(step_fit, "_solve", lambda bases, terms, fixed0: (0.001, scale))
    bases = [_basis(3.0, 1.0, 1.0), _basis(4.0, 1.0, 2.0)]
    with pytest.raises(InputError, match="must be > 0"):
        step_fit.fit_bases(bases, fixed0=0.001, label="x")


def _past_cliff(before: float | None, after: float | None) -> Any:
    from capcliff.analysis.sweep.failure import PastCliff

    return PastCliff(
        preemptions_per_request=0.25, peak_waiting=40, mean_waiting=12.4, mean_wait_s=3.0,
        kv_blocked_s=1.0, hit_rate=0.5, hit_rate_before_cliff=before, hit_rate_after_cliff=after,
        recompute_share=0.1, cache_loss_share=0.3, dominant="prefix-cache loss", advice="more KV",
    )  # fmt: skip


def test_the_past_cliff_statement_names_the_hit_rates_only_when_both_are_known() -> None:
    head = "prefix-cache loss dominates (waiting mean 12, peak 40, 3.0 s each; "
    assert _past_cliff(0.8, 0.2).statement() == (
        head + "0.25 preemptions/request, recompute 10%, hit rate 80% -> 20%): more KV"
    )
    for before, after in ((None, 0.2), (0.8, None), (None, None)):
        assert _past_cliff(before, after).statement() == (
            head + "0.25 preemptions/request, recompute 10%): more KV"
        )
