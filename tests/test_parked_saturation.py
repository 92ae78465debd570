"""A backlog whose engine parks preempted requests at the back of its queue (SGLang) is read by
the requests it finishes, not by its tokens: `plan`'s saturation at a cap past the KV cliff then
agrees with what `sweep` serves there (2026-12-07, issue 23, branch h-consist)."""

from __future__ import annotations

import json
import math
from functools import cache
from types import SimpleNamespace
from typing import Any, cast

import numpy as np
import pytest
from typer.testing import CliRunner

from capcliff.analysis.deployment import resolve
from capcliff.analysis.deployment_settings import settings_of
from capcliff.analysis.evaluate.capacity import (
    REFERENCE_REQUESTS,
    CapPoint,
    Replica,
    saturation_point,
)
from capcliff.analysis.evaluate.online_load import OnlineWorkload
from capcliff.analysis.evaluate.replica_models import replica_models
from capcliff.analysis.evaluate.solver import config_at
from capcliff.analysis.evaluate.steady_state import REL_HALF_WIDTH, steady_state
from capcliff.analysis.workloads import WorkloadChoice
from capcliff.catalog.catalogs import get_hardware, get_model
from capcliff.catalog.layout import parse_layout
from capcliff.cli import app
from capcliff.sim.simulate import simulate


def _backlog(first_preemption: tuple[int, float] | None) -> Any:
    """Two seeds and 198 more requests: request i's first token at i s, its end at i + 10 s, 10
    tokens; then 50 requests preempted and parked: first token at 50 s, end at 400 s (in the
    drain), 3,500 tokens each."""
    i = np.arange(200.0)
    n = 250
    return cast(
        Any,
        SimpleNamespace(
            arrival_s=np.zeros(n), ttft_s=np.concatenate([i, np.full(50, 50.0)]),
            finish_s=np.concatenate([i + 10, np.full(50, 400.0)]), tpot_s=np.full(n, 0.01),
            e2e_s=np.ones(n), output_tokens=np.concatenate([np.full(200, 10), np.full(50, 3500)]),
            makespan_s=400.0, first_preemption=first_preemption,
        ),
    )  # fmt: skip


def test_a_parked_backlog_is_read_by_the_requests_it_finishes() -> None:
    # the window: from the last seed's first token (1 s) to the last first token (199 s), 198 s.
    # Finished inside it: requests 0-189 (ends 10-199 s); the parked 50 end at 400 s, outside.
    # 190 / 198 requests/s, x E[O] = 10 tokens. Ten 19.8 s batches of finishes: 11 (10-20 s),
    # 20, 20, 20, 19 (81-99 s), 20, 20, 20, 20, 20: mean 19, sum of squares 64 + 8 x 1 = 72,
    # sd sqrt(72 / 9) = sqrt(8); t(9 df) 2.262 x sqrt(8) / sqrt(10) / 19
    state = steady_state(
        _backlog((7, 60.0)), open_loop=False, seeds=2, mean_output=10.0, parked=True
    )
    assert state.window_s == (1.0, 199.0)
    assert state.measured == 190
    assert state.throughput_rps == pytest.approx(190 / 198)
    assert state.output_tok_s == pytest.approx(190 / 198 * 10)
    assert state.rps_half_width == pytest.approx(2.262 * math.sqrt(8) / math.sqrt(10) / 19)
    # the token estimator counts the parked requests' tokens, spread over their 350 s: 50 x 10
    # tokens/s from 50 s on, far past what finishes
    tokens = steady_state(_backlog((7, 60.0)), open_loop=False, seeds=2, mean_output=10.0)
    assert tokens.throughput_rps > 3 * state.throughput_rps


@pytest.mark.parametrize("first_preemption", [None, (9, 250.0)])
def test_a_backlog_without_a_preemption_before_its_last_start_keeps_the_token_rate(
    first_preemption: tuple[int, float] | None,
) -> None:
    # no preemption, or the first after the window closed (199 s): nothing parked in the window
    parked = steady_state(
        _backlog(first_preemption), open_loop=False, seeds=2, mean_output=10.0, parked=True
    )
    tokens = steady_state(_backlog(first_preemption), open_loop=False, seeds=2, mean_output=10.0)
    assert parked == tokens


@cache
def _dpa2() -> tuple[Replica, OnlineWorkload]:
    """One rank of `plan qwen3-30b-a3b --gpu h200-sxm --gpus 2 --engine sglang --prefix-caching
    off --kv-cache-dtype fp8 --mem-fraction-static 0.88 --num-requests 40`'s dpa2 (reasoning)."""
    dep = resolve(
        get_model("qwen3-30b-a3b"), get_hardware("h200-sxm"),
        settings_of({
            "engine": "sglang", "kv_cache_dtype": "fp8", "mem_fraction_static": 0.88,
            "prefix_caching": "off",
        }),
    )  # fmt: skip
    workload = OnlineWorkload(WorkloadChoice(num_requests=40, preset_name="reasoning"), 0)
    length = dep.context_length(workload.reference(REFERENCE_REQUESTS), bound=None)
    capacity, steps = replica_models(dep, dep.memory(parse_layout("dpa2"), length))
    return Replica(steps, capacity, dep.sim_config(length)), workload


@cache
def _at_476() -> CapPoint:
    """The plan's saturation point of `_dpa2` at max_num_seqs 476 per rank (least 40)."""
    replica, workload = _dpa2()
    return saturation_point(replica, workload, 476, 40)


SWEEP = (
    "sweep qwen3-30b-a3b --gpu h200-sxm --gpus 2 --engine sglang --prefix-caching off "
    "--kv-cache-dtype fp8 --mem-fraction-static 0.88 --layout dpa2 --workload reasoning "
    "--concurrency 952 --rate 2.6 --num-requests 16000 --format json"
)


def test_plan_saturation_past_the_kv_cliff_is_what_sweep_serves_there() -> None:
    # the case of the 2026-12-07 plan: dpa2 at max_num_seqs 476 per rank, where SGLang retracts
    # (0.12 per request in the sweep). The plan read 2.51 requests/s with a stated half-width of
    # 35 %; `sweep` at the same cap (952 over both ranks, in lockstep), offered 2.6 requests/s,
    # more than it serves, finishes 2.13
    point = _at_476()
    assert point.result.total_preemptions > 0  # past the cliff: the case at issue
    plan_rps = 2 * point.state.throughput_rps
    result = CliRunner().invoke(app, SWEEP.split())
    assert result.exit_code == 0, result.output
    steady = json.loads(result.stdout)["series"][0]["points"][0]["steady"]
    assert steady["saturated"]
    served, half = steady["throughput_rps"], steady["rps_half_width"]
    # the two figures agree within the stopping rule's 5 % and the sweep's own half-width
    assert abs(plan_rps - served) <= (REL_HALF_WIDTH + half) * served
    assert point.state.rps_half_width <= REL_HALF_WIDTH


def test_plan_saturation_past_the_kv_cliff_is_not_above_a_rate_whose_queue_grows() -> None:
    # the definition itself: any rate above the saturation grows the queue. One rank offered
    # 1.2 requests/s at cap 476 (24,000 Poisson arrivals) serves about 1.05 and its queue grows,
    # so its saturation is below 1.2 (the old reading was 1.255 per rank)
    replica, workload = _dpa2()
    stream = workload.at_rate(24_000, 1.2)
    run = simulate(stream, replica.steps, replica.capacity, config_at(replica.config, 476, 1))
    assert steady_state(run, open_loop=True).saturated
    assert _at_476().state.throughput_rps < 1.2
