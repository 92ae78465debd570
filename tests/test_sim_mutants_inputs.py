"""sim's input checks and small rules at their edges, each value worked out by hand (mutation
survivors of `benchmarks/mutation.py --packages sim`, seeds 3 and 7)."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator

import numpy as np
import pytest

from capcliff.errors import InputError
from capcliff.sim.config import KVCapacity, SimConfig
from capcliff.sim.loop.lockstep import LockstepSim
from capcliff.sim.loop.replica import ReplicaSim
from capcliff.sim.policies import RunningState, estimated_outputs
from capcliff.sim.simulate import make_policy
from capcliff.sim.traffic.length_mean import expected_length
from capcliff.sim.traffic.length_spec import parse_output_lengths
from capcliff.sim.traffic.sessions import SessionRow, requests_from_session_trace
from capcliff.sim.traffic.workload import Fixed, Requests, Uniform, WorkloadSpec
from tests.simtools import constant_model


def test_a_negative_think_time_is_refused_even_above_minus_one() -> None:
    # think_time_s must be >= 0: -0.5 s is past the edge (0 s is on it).
    WorkloadSpec(10, Fixed(10), Fixed(10), think_time_s=0.0)
    with pytest.raises(InputError, match="think_time_s"):
        WorkloadSpec(10, Fixed(10), Fixed(10), think_time_s=-0.5)


@pytest.fixture
def fresh_length_cache() -> Iterator[None]:
    # parse_output_lengths is cached: a value parsed here must not leak into other tests
    parse_output_lengths.cache_clear()
    yield
    parse_output_lengths.cache_clear()


@pytest.mark.usefixtures("fresh_length_cache")
def test_a_histogram_length_of_zero_tokens_is_refused() -> None:
    # a length is at least 1 token: 1*3 is valid, 0*3 is not
    assert parse_output_lengths("histogram:1*3,5*1").max_tokens == 5
    with pytest.raises(InputError, match="osl"):
        parse_output_lengths("histogram:0*3,5*1")


def test_a_wide_uniform_mean_is_cut_at_max_tokens() -> None:
    # Uniform over [1, 3,000,001] (span past the exact limit of 1,000,000): mean 1,500,001, cut
    # at max_tokens 1,000 -> 1,000. Under the cut it stays the mean: 1,500,001.
    wide = Uniform(1, 3_000_001)
    assert expected_length(wide, max_tokens=1000) == 1000.0
    assert expected_length(wide, max_tokens=2_000_000) == 1_500_001.0


def test_a_session_trace_cuts_outputs_at_max_output_tokens() -> None:
    # One session: turn 0 = 10 in / 50 out, turn 1 = 5 in / 20 out, cut at 30 tokens. Turn 0
    # generates 30; turn 1's prompt is the context 10 + 30 plus its 5 new tokens = 45, and it
    # generates its 20 (under the cut).
    rows = [
        SessionRow("s", 0, 10, 50, 0.0, None, None, 0),
        SessionRow("s", 1, 5, 20, None, 0.0, None, 0),
    ]
    requests = requests_from_session_trace(rows, max_output_tokens=30)
    assert requests.output_tokens.tolist() == [30, 20]
    assert requests.input_tokens.tolist() == [10, 45]
    assert requests.max_output_tokens.tolist() == [30, 30]


def test_kv_aware_estimates_at_least_one_token_past_what_is_generated() -> None:
    # quantile 3: a request with 5 generated is expected to reach 5 + 1 = 6 (max 100); one with
    # 1 generated, max(3, 2) = 3; one with 8 generated and max 8, min(9, 8) = 8.
    state = RunningState(
        prompt_tokens=np.array([10, 10, 10]),
        generated_tokens=np.array([5, 1, 8]),
        output_tokens=np.array([50, 50, 8]),
        max_output_tokens=np.array([100, 100, 8]),
        prefilling=np.zeros(3, dtype=bool),
    )
    assert estimated_outputs(state, 3).tolist() == [6, 3, 8]


def test_lockstep_counts_every_rank_given_when_no_group_is_named() -> None:
    # Two ranks, group not given: the group is the 2 ranks. Rank 1's only request arrives at
    # 1 s, so rank 0 runs alone and every step is padded to the eager floor of 10 ms (its own
    # step is 1 ms): prompt 10, output 5 -> 5 steps -> first token at 10 ms, finish at 50 ms.
    # Rank 1 then runs alone from 1 s: 5 steps of 10 ms -> finish at 1.05 s.
    model = dataclasses.replace(constant_model(1e-3), eager_floor_s=0.01)
    capacity, config = KVCapacity(10, 16), SimConfig()

    def rank(arrival_s: float) -> ReplicaSim:
        one = Requests(np.array([10]), np.array([5]), np.array([5]), np.array([arrival_s]))
        return ReplicaSim(one, model, capacity, config, make_policy(config, one))

    first, second = LockstepSim([rank(0.0), rank(1.0)], model).run()
    assert first.first_token_s[0] == pytest.approx(0.01)
    assert first.finish_s[0] == pytest.approx(0.05)
    assert second.finish_s[0] == pytest.approx(1.05)


def test_a_session_trace_without_a_cut_keeps_every_output() -> None:
    # No max_output_tokens: no cut, each turn sent with max_tokens = its own output (as the
    # bench tools replay a trace), so turn 0 keeps its 50 tokens and turn 1's prompt is
    # 10 + 50 + 5 = 65.
    rows = [
        SessionRow("s", 0, 10, 50, 0.0, None, None, 0),
        SessionRow("s", 1, 5, 20, None, 0.0, None, 0),
    ]
    requests = requests_from_session_trace(rows)
    assert requests.output_tokens.tolist() == [50, 20]
    assert requests.input_tokens.tolist() == [10, 65]
    assert requests.max_output_tokens.tolist() == [50, 20]


def test_a_uniform_range_exactly_one_million_wide_is_averaged_exactly() -> None:
    # Mutation seed 41 (sim): a span of exactly UNIFORM_EXACT_SPAN (1,000,000) still takes the
    # exact mean. U[1, 1,000,001] cut at 500,001: the 500,001 values up to the cut average to
    # their own, the 500,000 above count as 500,001, so the mean is 500,001 x (250,001 +
    # 500,000) / 1,000,001 = 375,001,250,001 / 1,000,001 = 375,000.875; the continuous shortcut
    # would give the cut, 500,001.
    mean = expected_length(Uniform(1, 1_000_001), max_tokens=500_001)
    assert mean == pytest.approx(375_000.875, rel=1e-9)
