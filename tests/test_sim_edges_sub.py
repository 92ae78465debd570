"""Edge cases of the simulator's subpackages, from mutation testing's survivors
(`benchmarks/mutation.py --packages sim`, seed 3, with subpackages): each value by hand."""

from __future__ import annotations

import numpy as np
import pytest

from capcliff.errors import InputError
from capcliff.sim.config import Routing
from capcliff.sim.simulate import route
from capcliff.sim.traffic import length_mean, workload_rules
from capcliff.sim.traffic.sessions import parse_session_trace
from capcliff.sim.traffic.workload import Arrival, Fixed, Uniform, WorkloadSpec, generate_requests


def test_the_normal_density_at_zero_and_one() -> None:
    # 1 / sqrt(2 pi) = 0.398942; exp(-1/2) / sqrt(2 pi) = 0.241971
    assert length_mean._pdf(0.0) == pytest.approx(0.398942, abs=1e-6)
    assert length_mean._pdf(1.0) == pytest.approx(0.241971, abs=1e-6)


def test_a_range_ratio_of_one_and_a_half_are_kept_and_past_one_refused() -> None:
    workload_rules.check_range_ratio(1.0)  # fixed lengths written as a range
    workload_rules.check_range_ratio(0.5)
    with pytest.raises(InputError, match=r"random_range_ratio: must be in \(0, 1\]"):
        workload_rules.check_range_ratio(1.5)
    with pytest.raises(InputError):
        workload_rules.check_range_ratio(0.0)


def test_a_session_turn_of_one_new_token_is_a_turn() -> None:
    rows = parse_session_trace(
        ['{"session_id": "a", "turn": 0, "input_tokens": 1, "output_tokens": 3, "arrival_s": 0}']
    )
    assert (rows[0].input_tokens, rows[0].output_tokens) == (1, 3)


def test_round_robin_gives_client_i_to_replica_i_mod_dp() -> None:
    # closed loop: a client's requests stay on one replica; round robin deals clients in order
    # (client 0 -> replica 0, 1 -> 1, 2 -> 0, 3 -> 1) whatever their work, where least-loaded
    # routing would balance the clients' unequal work
    spec = WorkloadSpec(
        num_requests=12, input=Uniform(10, 5_000), output=Fixed(10), arrival=Arrival.CLIENTS,
        clients=4, max_input_tokens=5_000, max_output_tokens=10,
    )  # fmt: skip
    requests = generate_requests(spec, np.random.default_rng(3))  # seed 3: unequal clients
    owners = route(requests, 2, Routing.ROUND_ROBIN)
    clients = np.unique(requests.client)
    slot = {int(c): k for k, c in enumerate(clients)}
    for replica, idx in enumerate(owners):
        assert {slot[int(c)] % 2 for c in requests.client[idx]} == {replica}
    assert sum(len(i) for i in owners) == 12
    balanced = route(requests, 2, Routing.LEAST_LOADED)
    assert [sorted(i) for i in balanced] != [sorted(i) for i in owners]  # the rules differ here
