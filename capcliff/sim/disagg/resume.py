"""Rounds of a closed loop resumed where the settled send times end (`closed_loop`).

Each round of `closed_loop.simulate_clients` simulates the two pools for trial send times whose
part before the settled horizon H is the closed loop's own, so every replica's events before H
are those of the round before (a replica's events before a time depend only on its arrivals
before it; the transfers and the decode pool's landings before H come from prefills before H).
`ResumedRounds` keeps each replica of the round before paused before its first loop iteration
that could read an arrival at or after H (`ReplicaSim.run_until(before_s=H)`), and the next
round goes on from a copy of that state with the new arrivals after it, instead of from t = 0.

So that a request keeps its place in a replica from round to round, every replica of a pool is
built over every request that pool could be given (the prefill pool: all of them; the decode
pool: those with more than one output token), in their order; a replica is sent only the ones
it owns, and its result is cut down to them, in the same order as a replica built over them
alone. Nothing in the event loop depends on a request's index except through that order (the
arrival queue's ties, the decode cohort's keys), and the round-robin owners of the requests
sent before H are the same in every round (they are the earliest sends).

A replica is resumed only when it owns, before H - ARRIVAL_TIE_S, the same requests at the same
send times (within ARRIVAL_TIE_S, the closed loop's own tolerance) as when it paused, with the
same admission rule; otherwise, and wherever a state cannot be copied field by field (a compiled
loop, a prefix cache, attention-DP ranks in lockstep), the pool runs from t = 0 as before.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from functools import partial

import numpy as np

from capcliff.sim.config import ARRIVAL_TIE_S
from capcliff.sim.core import landed_class, prefill_class
from capcliff.sim.disagg.closed_loop import Round
from capcliff.sim.disagg.pools import (
    FloatArray,
    IntArray,
    Pool,
    PoolRun,
    PoolRunner,
    prefill_requests,
    run_pool,
)
from capcliff.sim.disagg.state_copy import state_copy
from capcliff.sim.loop.replica import ReplicaSim
from capcliff.sim.loop.timeline import ReplicaResult
from capcliff.sim.policies import Policy
from capcliff.sim.simulate import make_policy
from capcliff.sim.traffic.workload import Requests


@dataclass
class _Paused:
    """A replica paused before reading an arrival at or after `bound_s` + ARRIVAL_TIE_S."""

    replica: ReplicaSim
    rule: Policy
    bound_s: float  # the pause's time less ARRIVAL_TIE_S: every arrival read was before it
    early: tuple[IntArray, FloatArray]  # (positions, send times) before bound_s, as queued
    taken: set[int]  # positions it has taken from its queue


class ResumedRounds:
    """The pools of one closed loop's rounds, each replica resumed from the round before
    (module docstring); `runner(round)` is `simulate_disaggregated`'s `run_pool` for a round."""

    def __init__(self, requests: Requests) -> None:
        """`requests`: the closed-loop requests every round takes a subset of."""
        n = len(requests)
        self._outputs = requests.output_tokens
        decodes = np.flatnonzero(requests.output_tokens > 1)
        self._decode_position = np.full(n, -1, dtype=np.int64)
        self._decode_position[decodes] = np.arange(len(decodes))
        self._universe = {
            False: _timed(prefill_requests(requests)),
            True: _timed(requests.subset(decodes)),
        }
        self._paused: dict[tuple[bool, int], _Paused] = {}
        self._copyable = {False: True, True: True}
        self.resumed = 0  # replica runs resumed from the round before

    def runner(self, rnd: Round) -> PoolRunner:
        """`run_pool` for the round simulating `rnd`."""
        return partial(self._run_pool, rnd)

    def _run_pool(
        self, rnd: Round, requests: Requests, owner: IntArray, pool: Pool, *, landed: bool
    ) -> PoolRun:
        universe = self._universe[landed]
        if landed:
            positions = self._decode_position[rnd.rows[self._outputs[rnd.rows] > 1]]
        else:
            positions = rnd.rows
        if not self._resumable(universe, positions, requests, pool, landed):
            return run_pool(requests, owner, pool, landed=landed)
        rule = make_policy(pool.config, requests)
        owners: list[IntArray] = []
        runs: list[ReplicaResult] = []
        for r in range(pool.replicas):
            mine = np.flatnonzero(owner == r)
            if not len(mine):
                self._paused.pop((landed, r), None)
                continue
            pos, sent = positions[mine], requests.arrival_s[mine]
            paused = self._resumed((landed, r), pos, sent, rule)
            replica: ReplicaSim
            if paused is None:
                sim = landed_class() if landed else prefill_class()
                replica = sim(universe, pool.model, pool.capacity, pool.config, rule)
                _queue(replica, pos, sent, set())
            else:
                replica = paused.replica
                self.resumed += 1
                _queue(replica, pos, sent, paused.taken)
            replica.run_until(len(mine), before_s=rnd.settled_s)
            self._paused[(landed, r)] = _pause(replica, rule, rnd.settled_s, pos, sent)
            replica.run_until(len(mine))
            runs.append(_owned(replica.result(), pos, sent))
            owners.append(mine)
        return owners, runs

    def _resumable(
        self, universe: Requests, positions: IntArray, requests: Requests, pool: Pool, landed: bool
    ) -> bool:
        """Whether `pool`'s replicas can be built over `universe` and copied: one replica steps
        alone, the loop is the pure-Python one, no prefix cache, and the run's guards pass over
        `universe` exactly when they pass over the round's requests (both far from them)."""
        if pool.lockstep_ranks > 1 and pool.model.moe is not None:
            return False
        if not self._copyable[landed] or len(positions) != len(requests):
            return False
        sim = landed_class() if landed else prefill_class()
        n, config = len(universe), pool.config
        steps = (int(universe.output_tokens.sum()) - n) / config.max_num_seqs
        copyable = (
            sim.__module__.startswith("capcliff.sim.loop.")
            and not config.prefix_caching
            and n <= config.max_requests
            and steps <= config.max_steps
        )
        self._copyable[landed] = copyable
        return copyable

    def _resumed(
        self, key: tuple[bool, int], pos: IntArray, sent: FloatArray, rule: Policy
    ) -> _Paused | None:
        """The paused replica `key` when what it read is what this round sends it."""
        paused = self._paused.pop(key, None)
        if paused is None or paused.rule != rule:
            return None
        early_pos, early_sent = _early(pos, sent, paused.bound_s)
        same = np.array_equal(early_pos, paused.early[0]) and bool(
            (np.abs(early_sent - paused.early[1]) <= ARRIVAL_TIE_S).all()
        )
        return paused if same else None


def _timed(requests: Requests) -> Requests:
    """`requests` as timed requests, every one at t = 0 until a round queues its own."""
    zeros = np.zeros(len(requests))
    return dataclasses.replace(requests, arrival_s=zeros, closed_loop=False)


def _early(pos: IntArray, sent: FloatArray, bound_s: float) -> tuple[IntArray, FloatArray]:
    """The (positions, send times) sent before `bound_s`, in queue order (time, position)."""
    before = sent < bound_s
    pos, sent = pos[before], sent[before]
    order = np.lexsort((pos, sent))
    return pos[order], sent[order]


def _queue(replica: ReplicaSim, pos: IntArray, sent: FloatArray, taken: set[int]) -> None:
    """Queue the owned requests `pos` not `taken` yet at their `sent` times (in place: the
    replica's client loop holds the same queue)."""
    arrival = replica.arrival
    pending = [(t, i) for t, i in zip(sent.tolist(), pos.tolist(), strict=True) if i not in taken]
    for t, i in pending:
        arrival[i] = t
    pending.sort()
    replica.arrivals.clear()
    replica.arrivals.extend(pending)


def _pause(
    replica: ReplicaSim, rule: Policy, before_s: float, pos: IntArray, sent: FloatArray
) -> _Paused:
    """A copy of `replica`, paused by `run_until(before_s=...)`, to resume next round."""
    queue = replica.arrivals
    pending = list(queue)
    queued = {i for _, i in pending}
    taken = {i for i in pos.tolist() if i not in queued}
    bound_s = before_s - ARRIVAL_TIE_S
    queue.clear()  # the next round queues its own (`_queue`): not copied
    paused = state_copy(replica)
    queue.extend(pending)
    return _Paused(paused, rule, bound_s, _early(pos, sent, bound_s), taken)


def _owned(result: ReplicaResult, pos: IntArray, sent: FloatArray) -> ReplicaResult:
    """`result` of a replica built over a whole pool's requests, cut down to those it owns
    (`pos`, ascending), as the result of a replica built over them alone."""
    return dataclasses.replace(
        result,
        arrival_s=sent,
        first_token_s=result.first_token_s[pos],
        finish_s=result.finish_s[pos],
        output_tokens=result.output_tokens[pos],
        preemptions=result.preemptions[pos],
        recomputed_tokens=result.recomputed_tokens[pos],
    )
