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
A round need not simulate every request: the events before a time T of the requests sent by T
are those of all of them, so a round simulates only the requests sent by a cutoff past the
settled horizon (`_cutoff`); what it finds past the cutoff is unsettled, as what a round over
every request finds past the horizon is. The last round, where nothing moves, runs every
request, so the result is that of rounds over every request. Nor need a round start at t = 0:
each replica's events before the settled horizon are those of the round before, so a round can
go on from the state each replica had there (`resume.ResumedRounds`, given the round's requests
and horizon as a `Round`); the work is then about that of the rounds' new parts.
The send times come from the aggregated simulator's own client loop, so sessions (fan-out waves,
users taking the next session from a shared pool) follow the same rules with --disagg.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from capcliff.errors import InputError
from capcliff.sim.config import ARRIVAL_TIE_S
from capcliff.sim.disagg.pools import DisaggResult
from capcliff.sim.disagg.state_copy import state_copy
from capcliff.sim.loop.clients import ClientLoop
from capcliff.sim.traffic.workload import Requests

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]
MAX_ROUNDS = 400  # set: rounds of the two-pool simulation before a closed loop is refused
LOOKAHEAD = 4  # set, speed only: how far past the settled horizon a round simulates (`_cutoff`)


def send_times(requests: Requests, finish_s: FloatArray) -> FloatArray:
    """Each request's send time given every request's finish: the replica's own client loop
    (`sim.loop.clients.ClientLoop`: a request with an arrival time at that time; a client's next
    request, or wave, its think time after the last of its previous ones ends; a user whose
    session ends takes the next one from the shared pool) replayed over the finishes in time
    order, one loop for every client of the deployment."""
    return ClientReplay(requests).send_times(finish_s, -math.inf)


class ClientReplay:
    """`send_times` round after round: each replay goes on from the client loop as it stood
    after the finishes before the settled horizon of the round before, when the new finishes
    begin with those same ones (a request that finishes before the horizon was sent before it,
    so its finish is the closed loop's own)."""

    def __init__(self, requests: Requests) -> None:
        """`requests`: the closed-loop requests."""
        self.requests = requests
        self._kept: tuple[ClientLoop, IntArray, FloatArray] | None = None

    def send_times(self, finish_s: FloatArray, settled_s: float) -> FloatArray:
        """`send_times(requests, finish_s)`; the finishes before `settled_s` (s) are kept for
        the next call to go on from."""
        # a request that never finishes (inf: not simulated) sends nothing; those sort last
        order = np.argsort(finish_s, kind="stable")[: np.count_nonzero(np.isfinite(finish_s))]
        times = finish_s[order]
        loop, start = self._resumed(order, times)
        cut = max(start, int(np.searchsorted(times, settled_s)))
        _replay(loop, order[start:cut], times[start:cut])
        if cut:
            self._kept = (state_copy(loop), order[:cut], times[:cut])
        _replay(loop, order[cut:], times[cut:])
        return np.array(loop.arrival, dtype=np.float64)

    def _resumed(self, order: IntArray, times: FloatArray) -> tuple[ClientLoop, int]:
        """The kept loop and how many finishes it took, when they begin `order` at `times`;
        else a new loop."""
        kept, self._kept = self._kept, None
        if kept is not None:
            loop, taken, at = kept
            k = len(taken)
            if np.array_equal(order[:k], taken) and np.array_equal(times[:k], at):
                return loop, k
        requests = self.requests
        arrival = [a if math.isfinite(a) else math.inf for a in requests.arrival_s.tolist()]
        loop = ClientLoop(requests, arrival)
        # only the send times are read here, not the queue of arrivals a replica takes from
        loop.arrivals = _Dropped()  # type: ignore[assignment]
        return loop, 0


class _Dropped:
    """An arrival queue that keeps nothing: `bisect.insort` finds it empty and inserts into it."""

    def __len__(self) -> int:
        return 0

    def insert(self, index: int, item: object) -> None:
        """Drop `item`."""


def _replay(loop: ClientLoop, order: IntArray, times: FloatArray) -> None:
    for i, t in zip(order.tolist(), times.tolist(), strict=True):
        loop.finished(i, t)


@dataclass(frozen=True)
class Round:
    """The requests a round simulates (indices into the closed-loop requests, ascending) and the
    time before which their send times are the closed loop's own (s)."""

    rows: IntArray
    settled_s: float


def simulate_clients(
    requests: Requests, simulate: Callable[[Requests, Round], DisaggResult]
) -> DisaggResult:
    """`simulate` (the two-pool simulation of timed requests, `pools.simulate_disaggregated` with
    its pools, told which requests of `requests` a round simulates and how far their send times
    are settled, to resume from the round before: `resume`) for closed-loop `requests`: the send
    times are iterated to the fixed point (module docstring), each round simulating only the
    requests sent by its cutoff (`_cutoff`); the result's arrivals are the clients' send times."""
    if not requests.closed_loop:
        raise InputError("disagg: simulate_clients takes closed-loop requests")
    n = len(requests)
    trial = np.where(np.isnan(requests.arrival_s), math.inf, requests.arrival_s)
    if not np.isfinite(trial).any():
        raise InputError("disagg: no client sends a first request (every arrival time is empty)")
    horizon, reach, cutoff = float(trial.min()), 0.0, math.inf
    replay = ClientReplay(requests)
    for _ in range(MAX_ROUNDS):
        sub = np.flatnonzero((trial <= cutoff) & np.isfinite(trial))  # inf: not sent yet
        whole = len(sub) == n
        timed = requests if whole else requests.subset(sub)
        timed = dataclasses.replace(timed, arrival_s=trial[sub], closed_loop=False)
        result = simulate(timed, Round(sub, horizon))
        finish = np.full(n, math.inf)
        finish[sub] = trial[sub] + result.serving.e2e_s
        sent = replay.send_times(finish, horizon)
        moved = sent != trial  # a request not sent in either (inf) has not moved
        moved[moved] = np.abs(sent[moved] - trial[moved]) > ARRIVAL_TIE_S
        if whole and not moved.any():
            return result
        if moved.any():  # the earliest send that moved: every one before it is settled
            settled = float(np.minimum(sent, trial)[moved].min())
            reach = max(reach, settled - horizon)
            horizon = max(horizon, settled)
        cutoff = _cutoff(horizon, reach, moved.any())
        trial = sent
    raise InputError(
        f"disagg: the clients' send times did not settle in {MAX_ROUNDS} rounds of the two-pool "
        "simulation; give fewer requests per client or a Poisson --rate"
    )


def _cutoff(horizon_s: float, reach_s: float, moved: bool) -> float:
    """The latest send time the next round simulates: LOOKAHEAD x the furthest the settled
    horizon has moved in one round past it (a round cannot settle more than the requests it
    simulates); every request once nothing moved or the horizon has not moved (s)."""
    if not moved or reach_s <= 0:
        return math.inf
    return horizon_s + LOOKAHEAD * reach_s
