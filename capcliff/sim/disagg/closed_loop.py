"""Closed-loop clients on a disaggregated deployment: each sends its next request when its
previous ones have finished, so the send times depend on the two pools' results.

The two-pool simulator (`pools.simulate_disaggregated`) runs its stages one after another for
given arrival times, and for given arrivals it is exact: nothing in a stage before time T depends
on an arrival after T. Closed-loop send times are a fixed point of that simulation: simulate with
trial send times, set each request's send time from the finishes (its client's previous wave's
last finish plus the request's think time; a request sent together with the one before it, at
that one's time), and repeat until no send time moves by more than ARRIVAL_TIE_S. The clients'
first requests are sent at their own arrival times, so after each round the send times are exact
up to a horizon that grows by at least the shortest request cycle (first token, transfer, one
decode step, think time): the iteration ends, and at its end the result is the closed-loop run
itself, not an approximation. A run that has not settled after MAX_ROUNDS is refused in one line.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

import numpy as np
import numpy.typing as npt

from capcliff.errors import InputError
from capcliff.sim.config import ARRIVAL_TIE_S
from capcliff.sim.disagg.pools import DisaggResult
from capcliff.sim.traffic.workload import Requests

FloatArray = npt.NDArray[np.float64]
MAX_ROUNDS = 400  # set: rounds of the two-pool simulation before a closed loop is refused


def send_times(requests: Requests, finish_s: FloatArray) -> FloatArray:
    """Each request's send time from the finishes of its client's earlier requests, as
    `sim.loop.clients.ClientLoop` sends them: a request with an arrival time at that time; one
    that joins the request before it (a fan-out wave) with it; any other `think_s` after the last
    finish of its client's previous wave."""
    given = np.array(requests.arrival_s, dtype=np.float64)
    sent = given.copy()
    for client in np.unique(requests.client):
        wave_end = -np.inf
        for i in np.flatnonzero(requests.client == client):
            if np.isnan(given[i]):
                sent[i] = (
                    sent[i - 1] if requests.joins_previous[i] else wave_end + requests.think_s[i]
                )
            if not (np.isnan(given[i]) and requests.joins_previous[i]):
                wave_end = -np.inf  # a new wave: its requests' last finish
            wave_end = max(wave_end, float(finish_s[i]))
    return sent


def simulate_clients(
    requests: Requests, simulate: Callable[[Requests], DisaggResult]
) -> DisaggResult:
    """`simulate` (the two-pool simulation of timed requests, `pools.simulate_disaggregated` with
    its pools) for closed-loop `requests`: the send times are iterated to the fixed point (module
    docstring); the result's arrivals are the clients' send times."""
    if not requests.closed_loop:
        raise InputError("disagg: simulate_clients takes closed-loop requests")
    if requests.has_content:
        raise InputError(
            "disagg: closed-loop sessions (users drawing sessions from a shared pool) are not "
            "simulated with --disagg; give --clients with single-turn requests, or a --rate"
        )
    trial = np.array(requests.arrival_s, dtype=np.float64)
    first = np.isfinite(trial)
    trial[~first] = np.nanmax(trial) if first.any() else 0.0  # every other request at once
    for _ in range(MAX_ROUNDS):
        result = simulate(dataclasses.replace(requests, arrival_s=trial, closed_loop=False))
        sent = send_times(requests, trial + result.serving.e2e_s)
        if np.max(np.abs(sent - trial)) <= ARRIVAL_TIE_S:
            return result
        trial = sent
    raise InputError(
        f"disagg: the clients' send times did not settle in {MAX_ROUNDS} rounds of the two-pool "
        "simulation; give fewer requests per client or a Poisson --rate"
    )
