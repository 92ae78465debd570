"""The fleet check reads independent round-robin replicas from the first one's share."""

from __future__ import annotations

from dataclasses import replace
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest

import capcliff.analysis.plan.fleet as fleet
from capcliff.analysis.evaluate.capacity import Replica
from capcliff.analysis.evaluate.online_load import OnlineWorkload
from capcliff.analysis.evaluate.solver import Slo
from capcliff.analysis.evaluate.steady_state import steady_state
from capcliff.analysis.workloads import WorkloadChoice
from capcliff.catalog.layout import Layout
from capcliff.sim.config import KVCapacity, Routing, SimConfig
from capcliff.sim.simulate import route, simulate
from capcliff.sim.traffic.workload import Arrival
from tests.simtools import toy_model

SLO = Slo(ttft_s=5.0, tpot_s=0.05)


def _setup(routing: Routing) -> tuple[Any, fleet.Unit, OnlineWorkload]:
    config = SimConfig(policy="vllm", max_num_seqs=16, max_num_batched_tokens=2048, routing=routing)
    replica = Replica(toy_model(), KVCapacity(blocks=4000, block_size=16), config)
    ev = SimpleNamespace(replica=replica, capacity=SimpleNamespace(simulated_requests=300))
    choice = WorkloadChoice(
        num_requests=1, isl=200, osl=(100,), arrival=Arrival.POISSON, rate_per_s=30.0
    )
    return ev, fleet.Unit(Layout(tp=1), 1, 20.0, 16, 1.0), OnlineWorkload(choice, 0)


def _measured(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """The runs check_fleet reads its steady state from."""
    seen: list[Any] = []

    def recorded(result: Any, open_loop: bool) -> Any:
        seen.append(result)
        return steady_state(result, open_loop=open_loop)

    monkeypatch.setattr(fleet, "steady_state", recorded)
    return seen


@pytest.mark.parametrize("replicas", [2, 3])
def test_round_robin_replicas_are_checked_from_the_first_ones_share(
    monkeypatch: pytest.MonkeyPatch, replicas: int
) -> None:
    ev, unit, workload = _setup(Routing.ROUND_ROBIN)
    seen = _measured(monkeypatch)
    checked = fleet.check_fleet(ev, unit, replicas, workload, SLO)
    assert checked.replicas == replicas and checked.meets and len(seen) == 1
    # by hand: the fleet's stream, 300 requests a replica (the search's sample); round robin
    # gives the first replica every `replicas`-th request by arrival, 300 of them, and what it
    # does with them in the whole fleet's run is what the check measured, request for request
    requests = workload.at_rate(300 * replicas, 30.0)
    whole = simulate(
        requests, ev.replica.steps, ev.replica.capacity,
        replace(ev.replica.config, max_num_seqs=16), dp=replicas, groups=replicas,
    )  # fmt: skip
    mine = route(requests, replicas, Routing.ROUND_ROBIN)[0]
    np.testing.assert_array_equal(mine, np.sort(np.argsort(requests.arrival_s)[::replicas]))
    assert len(seen[0].finish_s) == 300
    np.testing.assert_array_equal(seen[0].ttft_s, whole.ttft_s[mine])
    np.testing.assert_array_equal(seen[0].finish_s, whole.finish_s[mine])


def test_least_loaded_replicas_are_checked_whole(monkeypatch: pytest.MonkeyPatch) -> None:
    # the router reads every replica's work: the fleet is simulated whole, 300 x 2 requests
    ev, unit, workload = _setup(Routing.LEAST_LOADED)
    seen = _measured(monkeypatch)
    fleet.check_fleet(ev, unit, 2, workload, SLO)
    assert len(seen[0].finish_s) == 600
