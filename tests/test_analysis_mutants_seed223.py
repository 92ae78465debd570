"""Edges the seed-223 mutation sample (`benchmarks/mutation.py --packages analysis --seed 223`)
found untested, written after that fresh sample was measured. Values are worked out by hand."""

from __future__ import annotations

import pytest

from capcliff.analysis.evaluate.replica_models import step_label
from tests.simtools import llama_8b_h200


def test_receiving_every_step_is_not_named_in_the_step_label() -> None:
    # SGLang receives new requests at every step by default, and --scheduler-recv-interval 1 is
    # that default: the label names an interval only from 2 up
    for dep in (llama_8b_h200("sglang"), llama_8b_h200("sglang", scheduler_recv_interval=1)):
        assert "new requests received every" not in step_label(dep)
    assert "received every 2 decode steps" in step_label(
        llama_8b_h200("sglang", scheduler_recv_interval=2)
    )


def test_vllms_openai_api_server_module_is_read_as_a_vllm_line() -> None:
    from capcliff.analysis.serve_command import parse_serve_command

    # `python -m vllm.entrypoints.openai.api_server` is the older way to start `vllm serve`
    command = parse_serve_command(
        "python3 -m vllm.entrypoints.openai.api_server --model org/m --tensor-parallel-size 2"
    )
    assert (command.engine, command.model, command.layout.name) == ("vllm", "org/m", "tp2")


def test_the_hit_rate_over_time_averages_each_kept_bin_and_leaves_out_bins_without_lookups() -> (
    None
):
    import math
    from types import SimpleNamespace
    from typing import Any

    import numpy as np

    from capcliff.analysis.sweep.timelines import hit_rate_over_time

    # 256 bins thinned to every 2nd: bin k averages rates k and k + 1. Rates 0.5 at even and
    # 0.7 at odd bins average 0.6; bins 4 and 5 have no lookup (NaN) and are left out: 127
    # points. Past the cliff (cap 16 preempted): 10 bins, kept one by one; without caching, none
    def point(cap: int, rates: Any, cliff: bool) -> Any:
        reuse = SimpleNamespace(time_s=np.arange(float(len(rates))), hit_rate_series=rates)
        result = SimpleNamespace(reuse=reuse)
        return SimpleNamespace(concurrency=cap, hit_cliff=cliff, result=result)

    rates = np.tile([0.5, 0.7], 128)
    rates[4:6] = math.nan
    off = SimpleNamespace(concurrency=32, hit_cliff=True, result=SimpleNamespace(reuse=None))
    points = (point(8, rates, False), point(16, np.full(10, 0.25), True))
    series = hit_rate_over_time(points, 8)
    assert list(series) == ["sweet spot (8)", "past the cliff (16)"]
    sweet = series["sweet spot (8)"]
    assert len(sweet) == 127
    assert sweet[:3] == [
        (0.0, pytest.approx(0.6)),
        (2.0, pytest.approx(0.6)),
        (6.0, pytest.approx(0.6)),
    ]
    assert series["past the cliff (16)"] == [(float(t), 0.25) for t in range(10)]
    assert hit_rate_over_time((point(8, rates, False), off), 8) == {"sweet spot (8)": sweet}


def test_only_fitted_step_terms_on_the_deployments_own_gpu_make_its_band_calibrated() -> None:
    from dataclasses import replace

    from capcliff.analysis.evaluate.replica_models import band_of

    dep = llama_8b_h200("vllm")

    def with_terms(*terms: tuple[str, float]) -> object:
        return replace(dep, budget=replace(dep.budget, step_time_terms=terms))

    fitted = with_terms(("fixed_s", 0.002), ("scale", 1.1))
    assert band_of(fitted).calibrated  # type: ignore[arg-type]
    # a calibration is of one deployment: on another GPU type the band is the modeled one
    assert not band_of(fitted, "b200").calibrated  # type: ignore[arg-type]
    # no terms, or only a request overhead (not a step term): modeled
    assert not band_of(dep).calibrated
    assert not band_of(with_terms(("request_overhead_s", 0.01))).calibrated  # type: ignore[arg-type]
