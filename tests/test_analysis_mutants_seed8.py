"""Survivors of a fresh mutation sample (`benchmarks/mutation.py --packages analysis --seed 8`),
written after that sample was measured: each expected value worked out by hand."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest

from capcliff.analysis import parallel
from capcliff.analysis.max_model_len import context_length
from capcliff.errors import InputError


def _requests(inputs: list[int], outputs: list[int]) -> Any:
    return SimpleNamespace(input_tokens=np.array(inputs), max_output_tokens=np.array(outputs))


def test_allow_long_sizes_past_the_models_context_and_without_it_the_request_is_refused() -> None:
    requests = _requests([4000, 100], [1000, 10])  # the longest: 4,000 + 1,000 = 5,000 tokens
    # rounded up to a multiple of 1,024: 5 x 1,024 = 5,120, past the model's 4,096
    assert context_length(None, requests, model_context=4096, allow_long=True) == 5120
    with pytest.raises(InputError, match="longer than the model's context"):
        context_length(None, requests, model_context=4096, allow_long=False)
    # within the context: 5,120, capped at the model's 8,000
    assert context_length(None, requests, model_context=8000, allow_long=False) == 5120
    assert context_length(None, requests, model_context=5000, allow_long=False) == 5000


def test_idle_cores_reads_the_one_minute_load_average(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(parallel, "cores", lambda: 8)
    # 1-minute load 3 (this process is one of them): 8 - (3 - 1) = 6 idle; the 5- and
    # 15-minute averages do not count
    monkeypatch.setattr(parallel.os, "getloadavg", lambda: (3.0, 0.0, 9.0))
    assert parallel.idle_cores() == 6


def test_the_confidence_line_gives_each_half_width_or_n_a() -> None:
    from capcliff.analysis.disagg.plan import _confidence

    steady = SimpleNamespace(
        rps_half_width=0.012, tpot_half_width=None, measured=900, requests=1200, settled=False
    )
    best = SimpleNamespace(serving=SimpleNamespace(steady=steady))
    assert _confidence(best, None) == [  # type: ignore[arg-type]
        "steady state: split 900 of 1,200 requests measured, rate +/-1.2%, mean TPOT +/-n/a "
        "(not settled)"
    ]


def test_each_objective_shows_its_own_figure() -> None:
    from capcliff.analysis.plan.advice import merit_shown
    from capcliff.analysis.plan.types import Objective

    row: Any = SimpleNamespace(
        sweet_spot=SimpleNamespace(
            goodput_req_s=1234.5, gpu_hours_per_mtok=0.01234, makespan_s=99.6
        )
    )
    assert merit_shown(row, Objective.GOODPUT) == "1,234.50 requests/s within the SLO"
    assert merit_shown(row, Objective.COST) == "0.0123 GPU-hours per million output tokens"
    assert merit_shown(row, Objective.MAKESPAN) == "makespan 100 s"


def test_an_instance_width_doubles_until_the_model_fits() -> None:
    from capcliff.analysis.deployment import resolve
    from capcliff.analysis.deployment_settings import DeploymentSettings
    from capcliff.analysis.disagg.options import instance_layouts
    from capcliff.catalog.catalogs import get_hardware, get_model

    # Llama 3.1 70B: 70.6e9 x 2 B = 141 GB of BF16 weights leave a 141 GB H200 no room; two do
    dep = resolve(get_model("llama-3.1-70b"), get_hardware("h200-sxm"), DeploymentSettings())
    width, mems = instance_layouts(dep, 8, 3072)
    assert width == 2
    assert {m.layout.gpus for m in mems} == {2}
