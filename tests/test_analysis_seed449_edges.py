"""Edges the analysis mutation sample of seed 449 found untested (benchmarks/mutation.py
--packages analysis --sample 40 --seed 449): each value worked out by hand in its comment."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest


def test_an_slo_limit_is_echoed_when_finite_and_as_none_when_infinite() -> None:
    from capcliff.analysis.plan.online import _finite

    assert _finite(2.0) == 2.0
    assert _finite(0.05) == 0.05
    assert _finite(float("inf")) is None
    assert _finite(None) is None


def test_a_flag_that_ends_the_command_line_is_a_switch() -> None:
    from capcliff.analysis.serve_command import _options

    # nothing follows --some-flag, so it takes no value (not the next word: there is none)
    words = ["vllm", "serve", "m", "--max-num-seqs", "8", "--some-flag"]
    assert _options(words) == (["vllm", "serve", "m"], [("max-num-seqs", "8"), ("some-flag", None)])


def test_a_pinned_fixed_time_is_taken_out_before_the_scale_is_fitted() -> None:
    from capcliff.analysis.sweep.step_fit import _solve

    # One run: measured TPOT 30 ms; the model's TPOT is 10 x the fixed step time plus 20 ms x
    # the scale. With the fixed time pinned at 1 ms, 10 ms of the 30 are fixed, and the scale
    # that prices the other 20 ms is 1: relative rows (10 / 0.03, 0.02 / 0.03), target 1,
    # rest 1 - 1/3 = 2/3, scale (2/3) / (2/3) = 1.
    basis: Any = SimpleNamespace(
        point=SimpleNamespace(mean_tpot_s=0.03, output_throughput_tok_s=None),
        fixed=SimpleNamespace(tpot_s=10.0, s_per_token=float("nan")),
        variable=SimpleNamespace(tpot_s=0.02, s_per_token=float("nan")),
    )
    fixed, scale = _solve([basis], ("scale",), 0.001)
    assert fixed == 0.001
    assert scale == pytest.approx(1.0)
