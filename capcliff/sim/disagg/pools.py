"""Disaggregated serving: a prefill pool and a decode pool coupled by KV transfers -> DisaggResult.

The router picks a (prefill, decode) replica pair for each request when it arrives, round-robin
over each pool in arrival order (SGLang's router and vLLM's proxy send every request to one prefill
and one decode worker). Then, in three stages, each O(requests):
1. Prefill pool: each prefill replica serves its requests as an engine would serve one-token
   outputs (chunked prefill, the pool's own batch limits and KV); a prompt's prefill ends with its
   first token. The prefill pool's queue sets when KV is ready.
2. Transfer: the prompt's KV (whole-model bytes from the KV calculator, one copy) moves to the
   decode replica (`capcliff.sim.disagg.kv_transfer`), queueing on busy links.
3. Decode pool: each decode replica (`ReplicaSim`, unchanged scheduler) admits requests whose KV
   has landed, first token generated; admission waits for KV blocks as in any engine, and the
   decode pool holds every running request's KV: this is where the cliff is.

Modeled simplifications (named): a prefill replica frees a prompt's blocks when its prefill ends
(engines hold them until the transfer completes); a decode replica takes blocks when the KV lands
(SGLang reserves them before the transfer starts). The client sees the first token when the decode
replica's first step ends (SGLang and vLLM stream from the decode worker), together with the
second; TPOT is the time of the output - 2 steps after it. A one-token output ends
at its prefill and is never transferred. Closed-loop clients, whose next arrival couples the
stages, are the fixed point of this simulation (`closed_loop.simulate_clients`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from capcliff.errors import InputError
from capcliff.perf.step_time import StepTimeModel
from capcliff.sim.config import ARRIVAL_TIE_S, KVCapacity, SimConfig
from capcliff.sim.core import landed_class, lockstep_class, prefill_class
from capcliff.sim.disagg.kv_transfer import Fabric, Placement, Transfers, schedule_transfers
from capcliff.sim.loop.replica import ReplicaSim
from capcliff.sim.loop.timeline import ReplicaResult
from capcliff.sim.result import Percentiles, SimResult, sim_result
from capcliff.sim.simulate import check_fits, make_policy
from capcliff.sim.traffic.workload import Requests

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]


@dataclass(frozen=True)
class Pool:
    """One pool's replicas: step times, KV per replica, engine settings, how many, GPUs each."""

    model: StepTimeModel
    capacity: KVCapacity
    config: SimConfig
    replicas: int  # simulated replicas: instances x attention-DP ranks each
    gpus_per_replica: int
    lockstep_ranks: int = 1  # attention-DP ranks per instance that step together

    def __post_init__(self) -> None:
        if self.replicas % self.lockstep_ranks:
            raise InputError("disagg: a pool's replicas must be whole attention-DP groups")
        if self.replicas < 1 or self.gpus_per_replica < 1:
            raise InputError(
                f"disagg: a pool needs >= 1 replica of >= 1 GPU, got {self.replicas} x "
                f"{self.gpus_per_replica}"
            )


@dataclass(frozen=True)
class PoolStats:
    """A pool's load: busy fraction of its replicas over the run, KV peak and mean in use."""

    busy_fraction: float  # time spent in engine steps / (replicas x makespan)
    peak_kv_utilization: float
    mean_kv_utilization: float
    preemptions: int


@dataclass(frozen=True)
class DisaggResult:
    """The end-to-end result (`serving`, per request in input order) plus the stages' figures."""

    serving: SimResult
    prefill_done_s: FloatArray  # when each prompt's prefill ended (its first token)
    transfers: Transfers  # for the transferred requests, in `transferred` order
    transferred: IntArray  # input indices of the requests whose KV moved
    decode_admitted_s: FloatArray  # per transferred request: when its decode replica took it
    prefill: PoolStats
    decode: PoolStats
    prefill_runs: tuple[ReplicaResult, ...]
    decode_runs: tuple[ReplicaResult, ...]

    @property
    def events(self) -> int:
        """Simulator events of both pools."""
        return sum(r.events for r in (*self.prefill_runs, *self.decode_runs))

    @property
    def decode_most_held(self) -> int:
        """The most requests any decode replica held at once (`most_held`)."""
        return max((most_held(r) for r in self.decode_runs), default=0)

    @property
    def decode_queue_s(self) -> FloatArray:
        """Time from KV landing to the decode replica admitting it (waiting for KV blocks)."""
        queue: FloatArray = self.decode_admitted_s - self.transfers.end_s
        return queue


def most_held(run: ReplicaResult) -> int:
    """The most of `run`'s requests in its replica at once, each from ARRIVAL_TIE_S before it
    arrives (when the loop may take it) to its finish, both ends counted: a bound on its running
    requests, which are some of these."""
    starts = np.sort(run.arrival_s) - ARRIVAL_TIE_S
    ends = np.sort(run.finish_s)
    # at each start: requests started by then less those finished before it
    held = np.searchsorted(starts, starts, side="right") - np.searchsorted(ends, starts)
    return int(held.max()) if len(held) else 0


def _round_robin(order: IntArray, replicas: int) -> IntArray:
    owner = np.empty(len(order), dtype=np.int64)
    owner[order] = np.arange(len(order)) % replicas
    return owner


def _pool_stats(runs: list[ReplicaResult], replicas: int, makespan_s: float) -> PoolStats:
    kv = [r.peak_used_blocks / r.total_blocks for r in runs]
    # A replica that got no request holds no KV: it counts as 0 in the mean, as in busy_fraction
    # and in a plain run's mean (`sim.result.mean_kv_utilization`).
    mean = [
        r.used_block_seconds / (r.total_blocks * makespan_s) if makespan_s else 0.0 for r in runs
    ]
    return PoolStats(
        busy_fraction=sum(r.busy_s for r in runs) / (replicas * makespan_s) if makespan_s else 0.0,
        peak_kv_utilization=max(kv) if kv else 0.0,
        mean_kv_utilization=sum(mean) / replicas,
        preemptions=sum(int(r.preemptions.sum()) for r in runs),
    )


PoolRun = tuple[list[IntArray], list[ReplicaResult]]  # each replica's requests and its run
PoolRunner = Callable[..., PoolRun]  # `run_pool`'s arguments


def run_pool(requests: Requests, owner: IntArray, pool: Pool, *, landed: bool) -> PoolRun:
    """Simulate each replica of `pool` over the requests it owns: (owners, runs). With
    attention DP (`pool.model.moe`) each group of `lockstep_ranks` ranks runs in lockstep."""
    rule = make_policy(pool.config, requests)
    group = pool.lockstep_ranks if pool.model.moe is not None else 1
    owners: list[IntArray] = []
    runs: list[ReplicaResult] = []
    # the compiled event loop's classes when it is current (same results), all of one core
    landed_sim, prefill_sim, lockstep = landed_class(), prefill_class(), lockstep_class()
    for first in range(0, pool.replicas, group):
        mine = [np.flatnonzero(owner == r) for r in range(first, first + group)]
        mine = [idx for idx in mine if len(idx)]
        model = pool.model.local if group > 1 else pool.model
        ranks: list[ReplicaSim] = [
            landed_sim(requests.subset(idx), model, pool.capacity, pool.config, rule,
                       in_lockstep=group > 1)
            if landed
            else prefill_sim(requests.subset(idx), model, pool.capacity, pool.config, rule)
            for idx in mine
        ]  # fmt: skip
        if group > 1 and ranks:
            runs.extend(lockstep(ranks, pool.model, group=group).run())
        else:
            runs.extend(rank.run() for rank in ranks)
        owners.extend(mine)
    return owners, runs


def prefill_requests(requests: Requests) -> Requests:
    """The same prompts, each to end after its first token."""
    ones = np.ones(len(requests), dtype=np.int64)
    return dataclasses.replace(requests, output_tokens=ones, max_output_tokens=ones)


def simulate_disaggregated(
    requests: Requests,
    kv_bytes: FloatArray,
    *,
    prefill: Pool,
    decode: Pool,
    fabric: Fabric,
    placement: Placement | None = None,
    points: int = 512,
    pool_runner: PoolRunner = run_pool,
) -> DisaggResult:
    """Serve `requests` on a prefill pool and a decode pool; `kv_bytes[i]` is the KV request i's
    prompt moves (bytes). `pool_runner`: `run_pool` or one that gives the same runs
    (`resume.ResumedRounds`)."""
    if requests.closed_loop:
        raise InputError(
            "disagg: the two-pool simulation takes timed arrivals; closed-loop clients run "
            "through sim.disagg.closed_loop.simulate_clients"
        )
    if len(kv_bytes) != len(requests):
        raise InputError("disagg: kv_bytes needs one entry per request")
    check_fits(prefill_requests(requests), prefill.capacity)
    check_fits(requests, decode.capacity)
    placement = placement or Placement.packed(
        prefill.replicas, prefill.gpus_per_replica, decode.replicas, decode.gpus_per_replica
    )
    p_owner = _round_robin(np.argsort(requests.arrival_s, kind="stable"), prefill.replicas)
    pre = pool_runner(prefill_requests(requests), p_owner, prefill, landed=False)
    done = np.zeros(len(requests))
    for idx, run in zip(*pre, strict=True):
        done[idx] = run.finish_s
    moved = np.flatnonzero(requests.output_tokens > 1)
    if not len(moved):
        raise InputError("disagg: every output is one token; there is nothing to decode")
    d_owner = _round_robin(np.argsort(requests.arrival_s[moved], kind="stable"), decode.replicas)
    transfers = schedule_transfers(
        done[moved], kv_bytes[moved], p_owner[moved], d_owner, fabric=fabric, placement=placement
    )
    landing = dataclasses.replace(requests.subset(moved), arrival_s=transfers.end_s)
    dec = pool_runner(landing, d_owner, decode, landed=True)
    return _combine(
        requests,
        moved,
        done,
        transfers,
        pre,
        dec,
        points=points,
        replicas=(prefill.replicas, decode.replicas),
    )


def _end_to_end(
    serving: SimResult,
    requests: Requests,
    first_s: FloatArray,
    finish_s: FloatArray,
    moved: IntArray,
    prefill_preemptions: int,
) -> SimResult:
    """`serving` (the decode pool's result) with per-request figures over every request."""
    n, outputs = len(requests), requests.output_tokens
    with np.errstate(divide="ignore", invalid="ignore"):
        # tokens 1 and 2 reach the client together (the decode replica's first step)
        tpot = np.where(outputs > 2, (finish_s - first_s) / (outputs - 2), np.nan)
    ttft, e2e = first_s - requests.arrival_s, finish_s - requests.arrival_s

    def spread(values: IntArray, fill: int = 0) -> IntArray:
        full = np.full(n, fill, dtype=np.int64)
        full[moved] = values
        return full

    finished = np.array(finish_s)
    finished[moved] = serving.finish_s  # the decode pool's, to the bit; the rest: their prefill
    return dataclasses.replace(
        serving,
        arrival_s=np.array(requests.arrival_s, dtype=np.float64),
        finish_s=finished,
        ttft_s=ttft,
        tpot_s=tpot,
        e2e_s=e2e,
        output_tokens=outputs.astype(np.int64),
        ttft=Percentiles.of(ttft),
        tpot=Percentiles.of(tpot),
        itl=Percentiles.of(tpot, weights=np.maximum(outputs - 2, 0).astype(np.float64)),
        e2e=Percentiles.of(e2e),
        total_preemptions=serving.total_preemptions + prefill_preemptions,
        makespan_s=float(finish_s.max()),
        preemptions=spread(serving.preemptions),
        recomputed_tokens=spread(serving.recomputed_tokens),
        replica=spread(serving.replica, -1),
    )


def _combine(
    requests: Requests,
    moved: IntArray,
    done: FloatArray,
    transfers: Transfers,
    pre: PoolRun,
    dec: PoolRun,
    *,
    points: int,
    replicas: tuple[int, int],
) -> DisaggResult:
    """One SimResult over both pools, latencies measured from the original arrivals."""
    d_owners, d_runs = dec
    admitted = np.zeros(len(moved))
    restored = []
    for idx, run in zip(d_owners, d_runs, strict=True):
        admitted[idx] = run.first_token_s  # the end of the admission step
        restored.append(dataclasses.replace(run, arrival_s=requests.arrival_s[moved[idx]]))
    # its percentiles are measured from the original arrivals, over every request (_end_to_end)
    decoded = sim_result(restored, d_owners, points=points, percentiles=False)
    first, finish = np.array(done), np.array(done)
    first[moved] = admitted
    finish[moved] = decoded.e2e_s + requests.arrival_s[moved]
    p_runs = pre[1]
    p_stats_pre = sum(int(r.preemptions.sum()) for r in p_runs)
    serving = _end_to_end(decoded, requests, first, finish, moved, p_stats_pre)
    makespan = serving.makespan_s
    return DisaggResult(
        serving=serving,
        prefill_done_s=done,
        transfers=transfers,
        transferred=moved,
        decode_admitted_s=admitted,
        prefill=_pool_stats(p_runs, replicas[0], makespan),
        decode=_pool_stats(d_runs, replicas[1], makespan),
        prefill_runs=tuple(p_runs),
        decode_runs=tuple(d_runs),
    )
