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
    from capcliff.analysis.serve_command.shell import split_options

    # nothing follows --some-flag, so it takes no value (not the next word: there is none)
    words = ["vllm", "serve", "m", "--max-num-seqs", "8", "--some-flag"]
    assert split_options(words) == (
        ["vllm", "serve", "m"],
        [("max-num-seqs", "8"), ("some-flag", None)],
    )


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


@pytest.mark.parametrize(
    ("cliff", "runs", "caps"),
    [
        (8, [None], [None]),  # the p99 cliff is the engine's default (8 seats): one run, no cap
        (6, [6, None], [6]),  # under it: the cap, then the default, which ran the same
        (10, [None], [None]),  # over it: the default is the cap
    ],
)
def test_a_split_is_capped_only_below_its_engines_default(
    monkeypatch: pytest.MonkeyPatch, cliff: int, runs: list[int | None], caps: list[int | None]
) -> None:
    import numpy as np

    from capcliff.analysis.disagg import plan

    # one decode replica of 8 seats; every run serves its requests at the same times (the cap
    # never binds), so a capped run followed by the default stops at the capped one
    dec = SimpleNamespace(pool=SimpleNamespace(replicas=1, config=SimpleNamespace(max_num_seqs=8),
                                               capacity=None))  # fmt: skip
    seen: list[int | None] = []

    def run_disagg(
        dep: Any, pools: Any, requests: Any, *, concurrency: Any, points: int, observe: Any
    ) -> Any:
        seen.append(concurrency)
        return SimpleNamespace(serving=SimpleNamespace(e2e_s=np.array([1.0, 2.0])))

    monkeypatch.setattr(plan, "pools_of", lambda dep, spec, length: (None, dec))
    monkeypatch.setattr(plan, "pools_price", lambda pools, prices: 1.0)
    monkeypatch.setattr(plan, "p99_analytic_cliff", lambda requests, capacity, dp: cliff)
    monkeypatch.setattr(plan, "run_disagg", run_disagg)
    monkeypatch.setattr(plan, "SweepPoint", SimpleNamespace(of=lambda cap, result: None))
    monkeypatch.setattr(plan, "score", lambda point, goal, slo: 0.0)
    inputs: Any = SimpleNamespace(max_model_len=4096, requests=[0, 0], reference=[0, 0])
    spec: Any = SimpleNamespace(gpus=2)
    out = plan._evaluate(None, spec, inputs, None, None, None, {}, None)  # type: ignore[arg-type]
    assert seen == runs
    assert [ev.cap for ev in out] == caps
