"""A benchmark run's first wave (`capcliff/perf/first_wave.py`): each closed-loop client's first
request waits more before the engine sees it, which the replay of a benchmark run adds to the
simulated steps (`analysis.sweep.step_fit`)."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from capcliff.analysis.deployment import resolve
from capcliff.analysis.deployment_settings import settings_of
from capcliff.analysis.sweep.step_fit import simulate_point
from capcliff.calibrate.benchmarks import BenchmarkPoint
from capcliff.catalog.catalogs import get_hardware, get_model
from capcliff.catalog.layout import parse_layout
from capcliff.perf.first_wave import first_wave_figure, first_wave_table
from capcliff.sim.config import KVCapacity, SimConfig
from capcliff.sim.simulate import simulate
from tests.simtools import toy_model
from tests.test_request_overhead import _requests

CAPACITY = KVCapacity(blocks=2000, block_size=16, kv_bytes_per_token=1000)


def test_holding_every_first_request_runs_the_same_schedule_later() -> None:
    # The rule the replay relies on: nothing reaches the server before the clients' first
    # requests, so holding all four of them 3 s runs the same schedule 3 s later. Their TTFT
    # grows by 3 s, every later request's TTFT is unchanged, every finish is 3 s later.
    requests = _requests(closed=True)  # 4 clients, 60 requests; the first four set at t = 0
    held = dataclasses.replace(requests, arrival_s=requests.arrival_s + 3.0)
    config = SimConfig(max_num_seqs=8)
    plain = simulate(requests, toy_model(), CAPACITY, config)
    late = simulate(held, toy_model(), CAPACITY, config)
    first = np.arange(60) < 4
    np.testing.assert_allclose(late.ttft_s[~first], plain.ttft_s[~first], atol=1e-9)
    np.testing.assert_allclose(late.finish_s, plain.finish_s + 3.0, atol=1e-9)
    # timed from the held arrival the first requests' TTFT is as before, so from their client's
    # send (3 s earlier) it is 3 s longer
    np.testing.assert_allclose(late.ttft_s[first], plain.ttft_s[first], atol=1e-9)


def _dep(wave: float | None):  # type: ignore[no-untyped-def]
    settings = settings_of({"engine": "trtllm"})
    dep = resolve(get_model("llama-3.1-8b"), get_hardware("h200-sxm"), settings)
    return dataclasses.replace(dep, first_wave_s=wave)


def test_a_replayed_run_adds_the_first_wave_to_its_first_requests_and_its_length() -> None:
    # 4 clients, 20 requests of 128 output tokens: a 2 s first wave adds 2 s to 4 of 20 TTFTs
    # (mean + 0.4 s) and 2 s to the run (+ 2 / 2,560 s per output token); TPOT is unchanged.
    point = BenchmarkPoint("p", 4, 512, 128, num_requests=20)
    tp1 = parse_layout("tp1")
    plain = simulate_point(_dep(0.0), tp1, point, {})
    waved = simulate_point(_dep(2.0), tp1, point, {})
    assert waved.ttft_s == pytest.approx(plain.ttft_s + 0.4)
    assert waved.s_per_token == pytest.approx(plain.s_per_token + 2.0 / 2560)
    assert waved.tpot_s == pytest.approx(plain.tpot_s)


def test_one_client_sends_no_wave() -> None:
    # its first prefill is the shape its warm-up ran: the run is as without a first wave
    point = BenchmarkPoint("p", 1, 512, 128, num_requests=5)
    tp1 = parse_layout("tp1")
    assert simulate_point(_dep(2.0), tp1, point, {}) == simulate_point(_dep(0.0), tp1, point, {})


def test_the_default_is_the_engines_figure_on_the_gpus_vendor() -> None:
    figure = first_wave_figure("trtllm", "NVIDIA")
    assert figure is not None
    seconds, how = _dep(None).first_wave
    assert seconds == figure.seconds
    assert how.startswith("calibrated: median of")
    assert _dep(1.5).first_wave == (1.5, "set")
    settings = settings_of({"engine": "vllm"})
    vllm = resolve(get_model("llama-3.1-8b"), get_hardware("h200-sxm"), settings)
    assert vllm.first_wave == (0.0, "none measured for this engine and vendor")


def test_every_shipped_figure_lowered_the_held_out_error() -> None:
    # A calibrated term stays only where predicting each deployment with the other deployments'
    # figure beats predicting it with none.
    table = first_wave_table()
    assert len({(f.engine, f.vendor) for f in table.figures}) == len(table.figures)
    for f in table.figures:
        assert f.held_out_error < f.without_error, f
