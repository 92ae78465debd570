"""Edges the analysis mutation sample of seed 439 found untested (benchmarks/mutation.py
--packages analysis --sample 40 --seed 439): each value worked out by hand in its comment."""

from __future__ import annotations

from typing import Any

import pytest

from capcliff.analysis.deployment import resolve
from capcliff.analysis.deployment_settings import settings_of
from capcliff.calibrate.benchmarks import BenchmarkPoint
from capcliff.catalog.catalogs import get_hardware, get_model
from capcliff.catalog.layout import parse_layout


@pytest.mark.parametrize(
    ("measured_tpot_s", "length", "bound"),
    [
        # the step is 0.1 s, so a TPOT of 0.1 s / E; K = 3 allows E up to 4: 25 ms is exactly
        # what every draft token accepted gives (g(4) = log(0.025 / 0.025) = 0), so the fit
        # stops at the upper bound and says so
        (0.025, 4.0, "upper"),
        # 20 ms would need E = 5: past the bound, likewise
        (0.020, 4.0, "upper"),
        # 0.1 s is one token a step (g(1) = 0): the lower bound
        (0.1, 1.0, "lower"),
    ],
)
def test_an_acceptance_fit_exactly_at_a_bound_stops_there(
    monkeypatch: pytest.MonkeyPatch, measured_tpot_s: float, length: float, bound: str
) -> None:
    from capcliff.analysis.sweep import accept_fit
    from capcliff.analysis.sweep.step_fit import Timings

    def simulate_point(dep: Any, layout: Any, point: Any, terms: Any) -> Timings:
        per_token = 0.1 / dep.acceptance.tokens_per_step
        return Timings(tpot_s=per_token, ttft_s=0.1, s_per_token=per_token)

    monkeypatch.setattr(accept_fit, "simulate_point", simulate_point)
    settings = settings_of({"engine": "sglang", "speculative": "mtp:3"})
    dep = resolve(get_model("deepseek-r1"), get_hardware("h200-sxm"), settings)
    point = BenchmarkPoint("c1", 1, 512, 256, mean_tpot_s=measured_tpot_s)
    fit = accept_fit.fit_accept_length(dep, parse_layout("tp8"), [point])
    assert (fit.accept_length, fit.bound) == (length, bound)


@pytest.mark.parametrize("saturation_first", [True, False])
def test_users_with_and_without_think_time_draw_from_their_own_streams(
    saturation_first: bool,
) -> None:
    from capcliff.analysis.evaluate.online_load import SESSION_USERS_PER_CAP, OnlineWorkload
    from capcliff.analysis.workloads import WorkloadChoice

    # multi-turn chat thinks 10 s before every later turn. The saturation search's users (1.25
    # per seat: 5 for a cap of 4) send each turn as soon as the one before ends, while 5
    # closed-loop users of the same workload think between turns: the two samples must not
    # share one stream of sessions, whichever is drawn first
    chat = OnlineWorkload(WorkloadChoice(num_requests=100, preset_name="multiturn-chat"), 0)
    assert chat.choice.session_spec().think_time_s == 10.0
    assert SESSION_USERS_PER_CAP * 4 == 5
    if saturation_first:
        saturation, users = chat.saturation_sample(200, 4), chat.with_clients(200, 5)
    else:
        users = chat.with_clients(200, 5)
        saturation = chat.saturation_sample(200, 4)
    assert not saturation.think_s.any()
    assert saturation.think_s.size == 200 and users.think_s.size == 200
    assert (users.think_s > 0).any()
