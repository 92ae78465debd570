"""Simulate serving a set of requests on a deployment of `dp` identical replicas -> SimResult.

Requests are routed to replicas up front (round-robin, or least-loaded by assigned work; a
closed-loop client keeps its replica), each replica is simulated on its own (`ReplicaSim`), and
the runs are combined: the slowest replica sets the makespan, and the free KV stranded in the
other replicas while one preempts is reported. Pure: data in, result out, no I/O.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Callable
from dataclasses import dataclass, fields, replace

import numpy as np
import numpy.typing as npt

from capcliff.errors import InputError
from capcliff.perf.step_time import StepTimeModel
from capcliff.sim.config import KVCapacity, Routing, SimConfig, resolved_prefix_caching
from capcliff.sim.core import lockstep_class, replica_class
from capcliff.sim.loop.replica_result import ReplicaResult
from capcliff.sim.policies import Policy, policy
from capcliff.sim.result import Percentiles, SimResult, linear_quantiles, sim_result
from capcliff.sim.traffic.workload import Requests
from capcliff.units import ceil_div

IntArray = npt.NDArray[np.int64]
FloatArray = npt.NDArray[np.float64]


def make_policy(config: SimConfig, requests: Requests) -> Policy:
    """The configured policy; kv-aware's output quantile is taken over the workload's outputs."""
    quantile = None
    if config.output_quantile is not None and len(requests):
        quantile = math.ceil(linear_quantiles(requests.output_tokens, [config.output_quantile])[0])
    return policy(config.policy, kv_margin=config.kv_margin, quantile_tokens=quantile)


def check_fits(requests: Requests, capacity: KVCapacity) -> None:
    """Every request must fit alone: ceil((input + output - 1) / B) blocks at its longest."""
    if not len(requests):
        raise InputError("requests: nothing to simulate")
    longest = requests.input_tokens + requests.output_tokens - 1
    worst = int(np.argmax(longest))
    blocks = ceil_div(int(longest[worst]), capacity.block_size)
    if blocks > capacity.blocks:
        raise InputError(
            f"request {worst}: needs {blocks} KV blocks at its longest "
            f"({int(longest[worst])} tokens); a replica has {capacity.blocks}"
        )


def _least_loaded(work: IntArray, dp: int) -> IntArray:
    """Greedy: each item, in order, to the replica with the least work so far (lowest index on
    ties)."""
    heap = [(0, r) for r in range(dp)]  # (work so far, replica): the least, lowest index first
    owner = np.empty(len(work), dtype=np.int64)
    for k, w in enumerate(work.tolist()):
        load, r = heap[0]
        owner[k] = r
        heapq.heapreplace(heap, (load + w, r))
    return owner


def route(requests: Requests, dp: int, routing: Routing) -> list[IntArray]:
    """Input indices of the requests each replica serves, in input order."""
    work = requests.input_tokens + requests.output_tokens
    if requests.closed_loop:
        clients = np.unique(requests.client)
        slot = np.searchsorted(clients, requests.client)  # each request's client, 0 .. C-1
        client_work = np.bincount(slot, weights=work, minlength=len(clients)).astype(np.int64)
        if routing is Routing.ROUND_ROBIN:
            client_owner = np.arange(len(clients), dtype=np.int64) % dp
        else:
            client_owner = _least_loaded(client_work, dp)
        owner = client_owner[slot]
    elif routing is Routing.ROUND_ROBIN:
        order = np.argsort(requests.arrival_s, kind="stable")
        owner = np.empty(len(requests), dtype=np.int64)
        owner[order] = np.arange(len(requests)) % dp
    else:
        order = np.argsort(requests.arrival_s, kind="stable")
        owner = np.empty(len(requests), dtype=np.int64)
        owner[order] = _least_loaded(work[order], dp)
    return [np.flatnonzero(owner == r) for r in range(dp)]


def requests_key(requests: Requests) -> tuple[object, ...]:
    """Every field of `requests`, arrays bit for bit (with their types): equal keys, equal
    requests."""
    values = (getattr(requests, f.name) for f in fields(requests))
    return tuple((v.dtype.str, v.tobytes()) if isinstance(v, np.ndarray) else v for v in values)


def _distinct_runs(
    subsets: list[Requests], run: Callable[[Requests], ReplicaResult]
) -> list[ReplicaResult]:
    """`run` of each replica's requests, run once per distinct set: the loop reads nothing but its
    inputs and draws nothing at random, so replicas given bit-identical requests (a batch split
    evenly over identical replicas) run alike and share one run."""
    done: dict[tuple[object, ...], ReplicaResult] = {}
    runs = []
    for mine in subsets:
        key = requests_key(mine)
        if key not in done:
            done[key] = run(mine)
        runs.append(done[key])
    return runs


def _sent_later(requests: Requests, overhead_s: float) -> Requests:
    """`requests` as the engine receives them, `overhead_s` after their clients send them: timed
    arrivals later by it, and a closed-loop request sent after its predecessor's last token (not
    one sent together with the request before it) that much later too."""
    think = requests.think_s + np.where(requests.joins_previous, 0.0, overhead_s)
    return replace(requests, arrival_s=requests.arrival_s + overhead_s, think_s=think)


def _as_the_client_sees(
    result: SimResult, overhead_s: float, *, percentiles: bool = True
) -> SimResult:
    """`result` timed from when each client sent its request: TTFT and E2E longer by the
    overhead, arrivals earlier by it (every token reaches the client when the engine emits it);
    `percentiles` False: theirs left as they are (NaN, not computed)."""
    ttft, e2e = result.ttft_s + overhead_s, result.e2e_s + overhead_s
    moved = replace(result, ttft_s=ttft, e2e_s=e2e, arrival_s=result.arrival_s - overhead_s)
    return (
        replace(moved, ttft=Percentiles.of(ttft), e2e=Percentiles.of(e2e)) if percentiles else moved
    )


def simulate(
    requests: Requests,
    model: StepTimeModel,
    capacity: KVCapacity,
    config: SimConfig,
    *,
    dp: int = 1,
    groups: int = 1,
) -> SimResult:
    """Serve `requests` on `dp` replicas, each with `capacity` and step times from `model`;
    attention-DP replicas (`model.moe`) are simulated in lockstep (`capcliff.sim.loop.lockstep`),
    as `groups` deployments of dp / groups ranks each that step apart from one another (a fleet
    of attention-DP deployments; the routing spreads requests over all dp ranks)."""
    if dp < 1:
        raise InputError(f"dp: must be >= 1, got {dp}")
    if groups < 1 or dp % groups:
        raise InputError(f"groups: must divide dp = {dp}, got {groups}")
    check_fits(requests, capacity)
    if config.request_overhead_s > 0:
        overhead = config.request_overhead_s
        served = simulate(
            _sent_later(requests, overhead), model, capacity,
            replace(config, request_overhead_s=0.0), dp=dp, groups=groups,
        )  # fmt: skip
        return _as_the_client_sees(served, overhead)
    config = resolved_prefix_caching(config, shares_content=requests.has_content)
    rule = make_policy(config, requests)
    routed = route(requests, dp, config.routing)
    owners = [idx for idx in routed if len(idx)]
    replica = replica_class()  # the compiled event loop when it is current (same results)
    if model.moe is not None and dp > 1:  # attention DP: each group's ranks step in lockstep
        size, runs, owners = dp // groups, [], []
        for g in range(groups):
            mine = [idx for idx in routed[g * size : (g + 1) * size] if len(idx)]
            ranks = [replica(requests.subset(i), model.local, capacity, config, rule) for i in mine]
            runs += lockstep_class()(ranks, model, group=size).run() if ranks else []
            owners += mine
    else:
        runs = _distinct_runs(
            [requests.subset(idx) for idx in owners],
            lambda mine: replica(mine, model, capacity, config, rule).run(),
        )
    return sim_result(runs, owners, points=config.time_series_points)


@dataclass(frozen=True)
class Checkpoint:
    """A paused run (`PausedRun`): the requests finished so far and where the run stands."""

    result: SimResult  # the finished requests only, in input order (their indices: `finished`)
    finished: IntArray  # input indices of the requests in `result`
    now_s: float  # the simulated time the run paused at (the end of its latest step)
    # every request whose first token came before this has finished: a statistic over the
    # requests that started before it is the one the whole run would give them
    horizon_s: float
    complete: bool  # every request has finished: `result` is `simulate`'s


def _finished_part(run: ReplicaResult, finished: IntArray) -> ReplicaResult:
    """`run` restricted to the requests in `finished` (per-request arrays; the records are the
    run's so far)."""
    return replace(
        run, arrival_s=run.arrival_s[finished], first_token_s=run.first_token_s[finished],
        finish_s=run.finish_s[finished], output_tokens=run.output_tokens[finished],
        preemptions=run.preemptions[finished], recomputed_tokens=run.recomputed_tokens[finished],
    )  # fmt: skip


def horizon(first_token_s: FloatArray, finish_s: FloatArray, now_s: float) -> float:
    """The latest time t <= `now_s` such that every request with its first token before t has
    finished (NaN: not yet): the first token of the earliest started request still running."""
    running = first_token_s[np.isfinite(first_token_s) & np.isnan(finish_s)]
    return min(now_s, float(running.min())) if len(running) else now_s


class PausedRun:
    """One replica serving `requests`, simulated lazily: `advance(k)` runs on until k requests
    have finished and returns what they show (a `Checkpoint`). Pausing changes nothing: the steps
    are those of one uninterrupted `simulate` of the same requests, which the last checkpoint
    returns. Pure, as `simulate`; one replica (dp = 1), as the saturation search runs."""

    def __init__(
        self, requests: Requests, model: StepTimeModel, capacity: KVCapacity, config: SimConfig
    ) -> None:
        check_fits(requests, capacity)
        self.overhead_s = config.request_overhead_s
        if self.overhead_s > 0:
            requests = _sent_later(requests, self.overhead_s)
            config = replace(config, request_overhead_s=0.0)
        config = resolved_prefix_caching(config, shares_content=requests.has_content)
        self.size, self.points = len(requests), config.time_series_points
        self.sim = replica_class()(requests, model, capacity, config, make_policy(config, requests))
        self._taken: tuple[int, ReplicaResult] | None = None  # (events, the result then)

    def _result(self) -> ReplicaResult:
        """`sim.result()`, taken once per pause: a checkpoint and the parts read at it
        (`part`) share it (each taking it converted the run's per-request lists again)."""
        events = self.sim.rec.events
        if self._taken is None or self._taken[0] != events:
            self._taken = (events, self.sim.result())
        return self._taken[1]

    def advance(self, done: int, *, percentiles: bool = True) -> Checkpoint:
        """Run on until at least `done` requests (at most all) have finished. `percentiles`:
        False leaves the result's latency percentiles NaN (`sim_result`), for a reader of the
        per-request figures alone."""
        sim = self.sim
        sim.run_until(done)
        run = self._result()
        finished = np.flatnonzero(np.isfinite(run.finish_s)).astype(np.int64)
        complete = len(finished) == self.size
        result = self._part(run, finished, percentiles)
        edge = sim.now_s if complete else horizon(run.first_token_s, run.finish_s, sim.now_s)
        return Checkpoint(result, finished, sim.now_s, edge, complete)

    def part(self, finished: IntArray, *, percentiles: bool = True) -> SimResult:
        """The requests `finished` (input indices, ascending, each finished) as a result of their
        own: their per-request figures, with the run's records (KV, steps) so far;
        `percentiles` as `advance`'s."""
        return self._part(self._result(), finished, percentiles)

    def _part(self, run: ReplicaResult, finished: IntArray, percentiles: bool) -> SimResult:
        part = _finished_part(run, finished)
        result = sim_result(
            [part], [np.arange(len(finished))], points=self.points, percentiles=percentiles
        )
        if self.overhead_s > 0:
            result = _as_the_client_sees(result, self.overhead_s, percentiles=percentiles)
        return result
