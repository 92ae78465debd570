"""Workload generation: distributions, presets, arrivals and traces."""

from __future__ import annotations

import math

import numpy as np
import pytest

from capcliff.errors import InputError
from capcliff.sim.traffic.workload import (
    Arrival,
    Empirical,
    Fixed,
    LogNormal,
    Normal,
    Requests,
    Uniform,
    WorkloadSpec,
    generate_requests,
    parse_trace,
    preset,
    requests_from_trace,
    sample_lengths,
)


def _reasoning(n: int = 10_000, seed: int = 0) -> Requests:
    return generate_requests(preset("reasoning", num_requests=n), np.random.default_rng(seed))


def test_reasoning_preset_has_45_percent_of_answers_over_5000_tokens() -> None:
    # Lognormal(mean 7,300, p99 45,000): P(x > 5,000) = 1 - Phi(0.117) = 0.454 (see PRESETS).
    outputs = _reasoning().output_tokens
    assert (outputs > 5_000).mean() == pytest.approx(0.45, abs=0.03)


def test_reasoning_preset_clips_answers_at_32k() -> None:
    outputs = _reasoning().output_tokens
    assert outputs.max() <= 32_768
    assert (outputs == 32_768).mean() == pytest.approx(0.022, abs=0.01)  # 1 - Phi(2.007)


def test_reasoning_preset_has_77_percent_of_prompts_in_50_to_150_tokens() -> None:
    prompts = _reasoning().input_tokens
    assert ((prompts >= 50) & (prompts <= 150)).mean() == pytest.approx(0.77, abs=0.03)


def test_lognormal_sigma_from_mean_and_p99() -> None:
    # mean 100, p99 1,000: sigma = z - sqrt(z^2 - 2 ln 10) = 2.32635 - sqrt(5.41190 - 4.60517)
    # = 2.32635 - 0.89818 = 1.42817; mu = ln 100 - sigma^2 / 2 = 4.60517 - 1.01983 = 3.58534.
    dist = LogNormal(100, 1_000)
    assert dist.sigma == pytest.approx(1.42817, abs=1e-4)
    assert dist.mu == pytest.approx(3.58534, abs=1e-4)


def test_lognormal_samples_match_their_mean_and_p99() -> None:
    values = sample_lengths(
        LogNormal(500, 2_000), 200_000, np.random.default_rng(1), max_tokens=10**9
    )
    assert values.mean() == pytest.approx(500, rel=0.02)
    assert np.percentile(values, 99) == pytest.approx(2_000, rel=0.03)


@pytest.mark.parametrize(
    ("mean", "p99"), [(100, 50), (100, 2_000)], ids=["p99-below-mean", "too-wide"]
)
def test_lognormal_rejects_impossible_shapes(mean: float, p99: float) -> None:
    with pytest.raises(InputError, match="lognormal"):
        LogNormal(mean, p99)


def test_fixed_uniform_normal_and_empirical_stay_in_range() -> None:
    rng = np.random.default_rng(2)
    assert (sample_lengths(Fixed(7), 5, rng, max_tokens=100) == 7).all()
    uniform = sample_lengths(Uniform(3, 5), 1_000, rng, max_tokens=100)
    assert set(uniform.tolist()) == {3, 4, 5}
    normal = sample_lengths(Normal(2, 10), 1_000, rng, max_tokens=20)
    assert normal.min() >= 1 and normal.max() <= 20
    empirical = sample_lengths(Empirical((4, 9)), 1_000, rng, max_tokens=100)
    assert set(empirical.tolist()) == {4, 9}


def test_same_seed_same_requests() -> None:
    a, b, c = _reasoning(500, 3), _reasoning(500, 3), _reasoning(500, 4)
    assert np.array_equal(a.input_tokens, b.input_tokens)
    assert np.array_equal(a.output_tokens, b.output_tokens)
    assert not np.array_equal(a.output_tokens, c.output_tokens)


def test_poisson_arrivals_have_the_requested_rate() -> None:
    spec = preset("chat", num_requests=20_000, arrival=Arrival.POISSON, rate_per_s=50.0)
    arrivals = generate_requests(spec, np.random.default_rng(5)).arrival_s
    assert (np.diff(arrivals) >= 0).all()
    assert np.diff(arrivals).mean() == pytest.approx(1 / 50, rel=0.03)


def test_closed_loop_clients_send_their_first_request_at_zero() -> None:
    spec = preset("chat-short", num_requests=10, arrival=Arrival.CLIENTS, clients=3)
    requests = generate_requests(spec, np.random.default_rng(0))
    assert requests.closed_loop
    assert requests.client.tolist() == [0, 1, 2, 0, 1, 2, 0, 1, 2, 0]
    assert requests.arrival_s[:3].tolist() == [0.0, 0.0, 0.0]
    assert np.isnan(requests.arrival_s[3:]).all()


def test_a_batch_arrives_at_once() -> None:
    requests = _reasoning(20)
    assert (requests.arrival_s == 0).all() and not requests.closed_loop


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"num_requests": 0}, "num_requests"),
        ({"arrival": Arrival.POISSON}, "^rate: "),
        ({"arrival": Arrival.CLIENTS}, "clients"),
    ],
    ids=["no-requests", "poisson-without-rate", "clients-without-count"],
)
def test_bad_specs_name_their_field(kwargs: dict[str, object], field: str) -> None:
    base: dict[str, object] = {"num_requests": 5, "input": Fixed(1), "output": Fixed(1)}
    with pytest.raises(InputError, match=field):
        WorkloadSpec(**{**base, **kwargs})  # type: ignore[arg-type]


def test_unknown_preset_lists_the_known_ones() -> None:
    with pytest.raises(InputError, match="reasoning"):
        preset("nope", num_requests=1)


def test_trace_rows_parse_with_optional_arrival_and_blank_lines() -> None:
    timed = ['{"input_tokens": 10, "output_tokens": 20, "arrival_s": 1.5}', ""]
    untimed = ['{"input_tokens": 3, "output_tokens": 4}', ""]
    rows = parse_trace(timed) + parse_trace(untimed)
    assert [(r.input_tokens, r.output_tokens, r.arrival_s) for r in rows] == [
        (10, 20, 1.5),
        (3, 4, None),
    ]


def test_a_trace_with_arrivals_on_some_rows_only_is_refused() -> None:
    # the untimed row arrived at 0 s, before the timed one at 1.5 s, unsaid
    lines = [
        '{"input_tokens": 10, "output_tokens": 20, "arrival_s": 1.5}',
        "",
        '{"input_tokens": 3, "output_tokens": 4}',
    ]
    with pytest.raises(InputError, match="trace line 3: arrival_s: missing while line 1 has one"):
        parse_trace(lines)


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("{not json", "line 1: \\(json\\)"),
        ('{"input_tokens": 5}', "line 1: output_tokens"),
        ('{"input_tokens": 0, "output_tokens": 5}', "line 1: input_tokens"),
        ('{"input_tokens": 5, "output_tokens": 5, "arrival_s": "x"}', "line 1: arrival_s"),
        ("[1, 2]", "line 1: expected a JSON object"),
    ],
    ids=["bad-json", "missing-output", "zero-input", "bad-arrival", "not-an-object"],
)
def test_bad_trace_lines_are_reported_with_their_number(line: str, message: str) -> None:
    with pytest.raises(InputError, match=message):
        parse_trace([line])


def test_trace_replays_in_arrival_order() -> None:
    rows = parse_trace(
        [
            '{"input_tokens": 1, "output_tokens": 9, "arrival_s": 2.0}',
            '{"input_tokens": 2, "output_tokens": 8, "arrival_s": 1.0}',
        ]
    )
    requests = requests_from_trace(rows)
    assert requests.input_tokens.tolist() == [2, 1]
    assert requests.arrival_s.tolist() == [1.0, 2.0]
    # each row is sent with max_tokens = its own output, as the bench tools replay a trace
    assert requests.max_output_tokens.tolist() == [8, 9]


def test_requests_reject_an_output_over_its_limit() -> None:
    with pytest.raises(InputError, match="max_output_tokens"):
        Requests(np.array([1]), np.array([5]), np.array([4]), np.array([0.0]))


def test_subset_keeps_the_chosen_requests() -> None:
    requests = _reasoning(6)
    part = requests.subset(np.array([4, 1]))
    assert part.input_tokens.tolist() == [requests.input_tokens[4], requests.input_tokens[1]]
    assert math.isclose(float(part.arrival_s[0]), 0.0)
