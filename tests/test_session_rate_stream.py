"""One session stream serves every rate: a session's start gap is numpy's exponential of scale
mean turns / rate, which is that scale times one standard exponential draw (the same value and
the same Generator state after), so the lengths, think times and sessions drawn do not depend on
the rate, and a stream drawn at one rate gives, taken at another (`SessionStream.take`'s
`rate_per_s`), the requests a stream drawn at that rate gives, bit for bit. An online search
draws its sessions once per plan instead of once per rate probed (`OnlineWorkload`)."""

from __future__ import annotations

from dataclasses import fields, replace

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from capcliff.analysis.evaluate.online_load import OnlineWorkload
from capcliff.analysis.workloads import WorkloadChoice
from capcliff.sim.traffic.sessions import SESSION_PRESETS, SessionStream, requests_per_session
from capcliff.sim.traffic.workload import Arrival, Requests

SPECS = {
    "chat": SESSION_PRESETS["multiturn-chat"],
    "chat-no-think": replace(SESSION_PRESETS["multiturn-chat"], think_time_s=0.0),
    "agentic": SESSION_PRESETS["agentic"],  # fan-out waves, empty sessions past the context
}
RATES = st.floats(1e-4, 1e5, allow_nan=False, allow_infinity=False)


def _bitwise_equal(a: Requests, b: Requests) -> bool:
    """Every field of two samples equal, arrays bit for bit (NaNs included) with their dtypes."""
    for f in fields(a):
        x, y = getattr(a, f.name), getattr(b, f.name)
        if isinstance(x, np.ndarray):
            if x.dtype != y.dtype or x.tobytes() != y.tobytes():
                return False
        elif x != y:
            return False
    return True


@settings(max_examples=200, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), scale=st.floats(1e-9, 1e9, allow_nan=False))
def test_numpys_exponential_is_its_scale_times_a_standard_exponential(
    seed: int, scale: float
) -> None:
    drawn, standard = np.random.default_rng(seed), np.random.default_rng(seed)
    assert float(drawn.exponential(scale)) == scale * float(standard.standard_exponential())
    assert drawn.bit_generator.state == standard.bit_generator.state


@settings(max_examples=40, deadline=None)
@given(
    name=st.sampled_from(sorted(SPECS)),
    seed=st.integers(0, 2**16),
    drawn_at=RATES,
    rate=RATES,
    sizes=st.lists(st.integers(1, 300), min_size=1, max_size=3),
)
def test_a_stream_taken_at_another_rate_is_the_stream_drawn_at_it(
    name: str, seed: int, drawn_at: float, rate: float, sizes: list[int]
) -> None:
    spec = SPECS[name]
    shared = SessionStream(spec, np.random.default_rng(seed), rate_per_s=drawn_at)
    for n in sizes:  # extended in any order of sizes, as a search asks
        own = SessionStream(spec, np.random.default_rng(seed), rate_per_s=rate).take(n)
        assert _bitwise_equal(shared.take(n, rate_per_s=rate), own)


@pytest.mark.parametrize("rate", [0.5, 7.0, 1234.5])
def test_the_first_session_starts_after_numpys_exponential_gap(rate: float) -> None:
    # the first draw of a stream at a rate is the first session's start gap, of mean
    # E[requests per session] / rate (sessions start at rate / that per second)
    spec = SPECS["chat"]
    stream = SessionStream(spec, np.random.default_rng(11), rate_per_s=1.0)
    gap = np.random.default_rng(11).exponential(requests_per_session(spec) / rate)
    assert stream.take(5, rate_per_s=rate).arrival_s[0] == gap


def test_a_stream_of_users_takes_no_rate() -> None:
    stream = SessionStream(SPECS["chat"], np.random.default_rng(0), clients=4)
    with pytest.raises(ValueError, match="rate"):
        stream.take(10, rate_per_s=2.0)


def _chat(seed: int = 3) -> OnlineWorkload:
    choice = WorkloadChoice(preset_name="multiturn-chat", num_requests=100, arrival=Arrival.BATCH)
    return OnlineWorkload(choice, seed)


def test_a_workloads_sample_at_a_rate_is_a_freshly_drawn_ones_after_other_rates() -> None:
    searched = _chat()
    for rate in (3.0, 40.0, 0.7):  # other rates and sizes first, as a rate search probes them
        searched.at_rate(400, rate)
    searched.at_rate(900, 11.0)
    assert _bitwise_equal(searched.at_rate(700, 25.0), _chat().at_rate(700, 25.0))


def test_a_reseeded_workload_is_kept_and_draws_as_a_fresh_one() -> None:
    workload = _chat()
    again = workload.reseeded(17)
    assert workload.reseeded(17) is again and workload.reseeded(3) is workload
    assert _bitwise_equal(again.at_rate(300, 9.0), _chat(17).at_rate(300, 9.0))
