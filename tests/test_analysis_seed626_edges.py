"""Edges the analysis mutation sample of seed 626 found untested (benchmarks/mutation.py
--packages analysis --sample 40 --seed 626). Every expected value is worked out by hand in the
comments."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from types import SimpleNamespace
from typing import Any, cast

import numpy as np
import pytest

from capcliff.analysis.deployment import resolve
from capcliff.analysis.deployment_settings import DeploymentSettings
from capcliff.analysis.disagg.options import narrowest
from capcliff.analysis.evaluate.rate_search import EarlyMiss, early_miss
from capcliff.analysis.evaluate.solver import Slo
from capcliff.analysis.plan import online
from capcliff.analysis.plan.feasibility import Alternative, LightLatency, what_would_meet
from capcliff.analysis.plan.fleet import Unit
from capcliff.analysis.serve_command import parse_serve_command
from capcliff.catalog.catalogs import get_hardware, get_model
from capcliff.catalog.layout import Layout
from capcliff.sim.simulate import Checkpoint
from capcliff.sim.traffic.workload import Requests
from tests.test_early_miss import SLO, _lazy
from tests.test_random_combos6 import _stubbed_fleet_check
from tests.test_rate_search import _poisson


def _light(label: str, ttft_s: float, tpot_s: float) -> LightLatency:
    return LightLatency(cast(Alternative, SimpleNamespace(label=label)), ttft_s, tpot_s)


def test_only_the_three_closest_alternatives_are_named_when_none_meets_the_target() -> None:
    # target TTFT p99 <= 1 s, TPOT p99 <= 50 ms; each alternative's excess is the larger of
    # its two ratios: a 2 s / 50 ms = 2x, b 0.5 s / 150 ms = 3x, c 4 s / 10 ms = 4x,
    # d 5 s / 300 ms = max(5, 6) = 6x. None meets it; the closest three, nearest first, and d
    # is left out.
    slo = Slo(ttft_s=1.0, tpot_s=0.05)
    tried = [
        _light("d", 5.0, 0.3), _light("c", 4.0, 0.01), _light("a", 2.0, 0.05),
        _light("b", 0.5, 0.15),
    ]  # fmt: skip
    assert what_would_meet(slo, tried, lambda t: t.alternative.label) == [
        "nothing tried meets it even with one user; closest:",
        "a: still 2.0x over the limit",
        "b: still 3.0x over the limit",
        "c: still 4.0x over the limit",
    ]


def test_trtllm_serve_reads_the_last_of_two_config_files(tmp_path: Path) -> None:
    # trtllm-serve's `--config` and its alias `--extra_llm_api_options` are one click option
    # (tensorrt_llm/commands/serve.py), not `multiple=True`: given twice, click stores each
    # value over the last, so the second file is the one read. a.yaml's KV share 0.7 is
    # dropped, b.yaml's 0.8 is taken (and b names no batch cap, so a's 64 is not read either).
    (tmp_path / "a.yaml").write_text(
        "max_batch_size: 64\nkv_cache_config:\n  free_gpu_memory_fraction: 0.7\n"
    )
    (tmp_path / "b.yaml").write_text("kv_cache_config:\n  free_gpu_memory_fraction: 0.8\n")
    command = parse_serve_command(
        "trtllm-serve meta-llama/Llama-3.1-8B --backend pytorch --tp_size 2 "
        "--config a.yaml --extra_llm_api_options b.yaml",
        base_dir=tmp_path,
    )
    assert command.settings == {"engine": "trtllm", "free_gpu_memory_fraction": 0.8}
    # and the other way round
    command = parse_serve_command(
        "trtllm-serve meta-llama/Llama-3.1-8B --backend pytorch --tp_size 2 "
        "--extra_llm_api_options b.yaml --config a.yaml",
        base_dir=tmp_path,
    )
    assert command.settings == {
        "engine": "trtllm", "max_num_seqs": 64, "free_gpu_memory_fraction": 0.7
    }  # fmt: skip


def test_an_arrival_at_the_instant_an_early_stop_reads_counts_in_its_peak() -> None:
    # `early_miss`'s peak bounds the requests in the system up to where the run stopped, counting
    # arrivals before departures at equal times (rate_search's module docstring): a cap at least
    # that large runs the same steps. The toy replica finishes about 25 requests/s; offered 40/s
    # it misses surely part way and stops at some time t, with later arrivals still to come.
    # Moving the first arrival after t to exactly t leaves every step up to t as it was (a
    # step admits at its start, and every step up to t started before t), so the run stops at
    # the same t with the same requests finished, and that request is one more in the system
    # at t: the peak (reached at t, since the queue only grows) is one more.
    sample = _poisson(2000, 40.0, 0)
    first, now = _early_with_stop(sample)
    later = int(np.searchsorted(sample.arrival_s, now, side="right"))
    assert later < len(sample) and sample.arrival_s[later] > now
    arrival = sample.arrival_s.copy()
    arrival[later] = now
    second, again = _early_with_stop(replace(sample, arrival_s=arrival))
    assert again == now
    np.testing.assert_array_equal(second.result.finish_s, first.result.finish_s)
    assert second.peak == first.peak + 1


def _early_with_stop(sample: Requests) -> tuple[EarlyMiss, float]:
    """`early_miss` of the toy replica on `sample`, and the time its run stopped at."""
    lazy = _lazy(sample)
    stops: list[float] = []
    advance = lazy.advance

    def recorded(done: int, *, percentiles: bool = True) -> Checkpoint:
        point = advance(done, percentiles=percentiles)
        stops.append(point.now_s)
        return point

    lazy.advance = recorded  # type: ignore[method-assign]
    early = early_miss(lazy, sample, SLO, 160.0)
    assert early is not None
    return early, stops[-1]


def test_a_fleet_rank_prices_the_replicas_a_rate_needs(monkeypatch: pytest.MonkeyPatch) -> None:
    # `_fleet_rank`'s key for a tp2 replica that sustained r requests/s, offered 10/s with no
    # headroom, 200 output tokens a request, at $2.50 a GPU-hour (the override):
    #   r = 4/s: ceil(10 / 4) = 3 replicas, 6 GPUs, $15 an hour; 10 x 200 x 3,600 = 7.2 M
    #   tokens an hour, so 15 / 7.2 = $2.0833 per million: (2.0833, 6)
    #   r = 10/s: 1 replica, 2 GPUs, $5 / 7.2 = $0.6944 per million: (0.6944, 2)
    #   r = 0: no number of replicas carries the load: no rank (None)
    monkeypatch.setattr(
        online, "unit_of", lambda ev, think_s=0.0: Unit(Layout(tp=2), 1, 0.0, 64, 1.0)
    )
    workload = SimpleNamespace(offered_rps=lambda: 10.0, mean_output_tokens=lambda: 200.0)
    ctx: Any = SimpleNamespace(
        workload=workload, options=SimpleNamespace(headroom=0.0, prices={"h100-sxm": 2.5})
    )
    rank = online._fleet_rank(ctx, get_hardware("h100-sxm"))
    assert rank is not None
    ev: Any = SimpleNamespace(memory=SimpleNamespace(layout=Layout(tp=2)))
    cost, gpus = cast(tuple[float, int], rank(ev, 4.0))
    assert cost == pytest.approx(15 / 7.2) and gpus == 6
    cost, gpus = cast(tuple[float, int], rank(ev, 10.0))
    assert cost == pytest.approx(5 / 7.2) and gpus == 2
    assert rank(ev, 0.0) is None
    # users instead of a rate: no rank at all (the cost moves with the latencies too)
    ctx.workload = SimpleNamespace(offered_rps=lambda: None)
    assert online._fleet_rank(ctx, get_hardware("h100-sxm")) is None


def test_one_user_over_many_replicas_still_simulates_one_user(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # 1 user over 500 replicas, each replica's sample 2,000 requests: 16,000 // 2,000 = 8
    # replicas are simulated, at 1 x 8 / 500 = 0.016 of the users, which rounds to 0; a
    # simulation needs at least one user, so 1 user, 16,000 requests, 8 engines
    runs = _stubbed_fleet_check(monkeypatch, replicas=500, sample=2_000, clients=1)
    assert runs == [("clients", 16_000, 1, 8)]


def test_a_split_takes_instances_as_wide_as_a_whole_node() -> None:
    # DeepSeek-R1's ~671 GB of FP8 weights do not fit 4 H200s (4 x 141 = 564 GB) and fit 8
    # (1,128 GB): with 16 GPUs to split, each instance may take up to 16 / 2 = 8, the node's 8
    # GPUs, and the narrowest power of two that fits is that whole node
    h200 = get_hardware("h200-sxm")
    large = resolve(get_model("deepseek-r1"), h200, DeploymentSettings())
    width, mems = narrowest(large, 8, 3072)
    assert width == 8
    assert mems and {m.layout.gpus for m in mems} == {8}
    # up to 4 GPUs (a budget of 8): none fits
    assert narrowest(large, 4, 3072) == (0, [])
