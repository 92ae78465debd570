"""The result of a serving simulation: per-request latencies and the deployment's aggregates."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from capcliff.sim.loop.timeline import ReplicaResult
from capcliff.sim.reuse.prefix_reuse import ReuseSummary, reuse_summary

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]


def linear_quantiles(values: FloatArray | IntArray, quantiles: list[float]) -> list[float]:
    """`np.quantile(values, quantiles)` (its default, linear method) of a 1-D array, to the bit:
    at virtual index v = (n - 1) q between sorted values a = x[floor v] and b = the next (both
    the last past it), with t = v - floor v: a + (b - a) t, or b - (b - a)(1 - t) when t >= 0.5
    (numpy's `_lerp`; past the end numpy's t is v + 1); NaN if any value is. A percentile p is
    the quantile p / 100, as `np.percentile` divides. numpy's own costs about 80 us a call, and
    its first call imports numpy.ma (`np.unique` asks `np.ma.is_masked`): 10 ms of a batch plan."""
    n = len(values)
    if n == 0:
        return [float(v) for v in np.quantile(values, quantiles)]  # numpy's own refusal
    ordered = np.sort(values)
    if ordered.dtype.kind == "f" and ordered[-1] != ordered[-1]:  # NaN sorts last
        return [math.nan] * len(quantiles)
    last = n - 1
    out = []
    for q in quantiles:
        v = last * q
        if v >= last:
            a = b = ordered[last].item()
            t = v + 1  # numpy's gamma against its previous index, set to -1 there
        else:
            below = math.floor(v)
            a, b = ordered[below].item(), ordered[below + 1].item()
            t = v - below
        diff = b - a
        out.append(float(b - diff * (1 - t) if t >= 0.5 else a + diff * t))
    return out


@dataclass(frozen=True)
class Percentiles:
    """p50 / p90 / p99 and the mean of a latency, seconds (NaN when no request has a value)."""

    p50: float
    p90: float
    p99: float
    mean: float = np.nan

    @classmethod
    def of(cls, values: FloatArray, weights: FloatArray | None = None) -> Percentiles:
        """Percentiles and mean of the finite entries of `values`, each counted `weights` times
        (weighted: the inverse of the cumulative weight, by the lower value)."""
        keep = np.isfinite(values)
        if weights is not None:
            keep &= weights > 0
        finite = values[keep]
        if not len(finite):
            return cls(np.nan, np.nan, np.nan, np.nan)
        if weights is None:
            p50, p90, p99 = linear_quantiles(finite, [50 / 100, 90 / 100, 99 / 100])
            return cls(p50, p90, p99, float(finite.mean()))
        w = weights[keep]
        order = np.argsort(finite)
        ranked, cumulative = finite[order], np.cumsum(w[order]) / w.sum()
        at = np.minimum(np.searchsorted(cumulative, [0.5, 0.9, 0.99]), len(ranked) - 1)
        p50, p90, p99 = (float(v) for v in ranked[at])
        return cls(p50, p90, p99, float(np.average(finite, weights=w)))


@dataclass(frozen=True)
class TimeSeries:
    """Deployment-wide samples on an even time grid: KV in use over all replicas' blocks, running
    and waiting requests (summed), HBM bandwidth utilisation (mean over replicas)."""

    time_s: FloatArray
    kv_utilization: FloatArray
    running: FloatArray
    waiting: FloatArray
    hbm_utilization: FloatArray


@dataclass(frozen=True)
class ReplicaSummary:
    """One data-parallel replica's headline figures."""

    requests: int
    makespan_s: float
    preemptions: int
    peak_kv_utilization: float
    blocked_s: float
    steps: int
    events: int


@dataclass(frozen=True)
class SimResult:
    """Everything a simulation found. Per-request arrays are in the input order."""

    ttft_s: FloatArray
    tpot_s: FloatArray  # NaN for one-token outputs
    e2e_s: FloatArray
    preemptions: IntArray
    recomputed_tokens: IntArray
    replica: IntArray
    output_tokens: IntArray
    makespan_s: float
    ttft: Percentiles
    tpot: Percentiles
    itl: Percentiles  # gaps between tokens, each request's decode gaps at its own mean
    e2e: Percentiles
    total_preemptions: int
    total_recomputed_tokens: int
    swapped_tokens: int
    swap_s: float
    scheduled_tokens: int
    peak_kv_utilization: float
    mean_kv_utilization: float
    first_saturation: tuple[int, float] | None  # (step, time) of the first replica to saturate
    first_preemption: tuple[int, float] | None
    admission_blocked: bool  # a waiting request was refused for lack of KV (convoy mode)
    blocked_s: float  # the most any replica spent refusing waiting requests
    stranded_kv_fraction: float  # mean free KV of the other replicas while one preempts
    series: TimeSeries
    replicas: tuple[ReplicaSummary, ...]
    steps: int
    events: int
    arrival_s: FloatArray  # when each request arrived (closed loop: when its client sent it)
    finish_s: FloatArray  # when its last token was generated
    reuse: ReuseSummary | None = None  # with prefix caching on

    @property
    def prefix_cache_hit_rate(self) -> float | None:
        """Token-weighted prefix-cache hit rate (None with caching off)."""
        return None if self.reuse is None else self.reuse.hit_rate

    @property
    def output_tokens_per_s(self) -> float:
        """Generated tokens per second over the makespan."""
        return float(self.output_tokens.sum()) / self.makespan_s if self.makespan_s else 0.0

    @property
    def requests_per_s(self) -> float:
        """Finished requests per second over the makespan."""
        return len(self.e2e_s) / self.makespan_s if self.makespan_s else 0.0

    def goodput_requests_per_s(self, *, ttft_s: float, tpot_s: float) -> float:
        """Requests per second that met both limits (a one-token output meets any TPOT)."""
        tpot = np.nan_to_num(self.tpot_s, nan=0.0)
        good = int(((self.ttft_s <= ttft_s) & (tpot <= tpot_s)).sum())
        return good / self.makespan_s if self.makespan_s else 0.0


def _hold(times: FloatArray, values: FloatArray, grid: FloatArray) -> FloatArray:
    """Value of the event covering each grid time (events record their end time); 0 after."""
    return _held(np.searchsorted(times, grid, side="left"), values)


def _held(idx: IntArray, values: FloatArray) -> FloatArray:
    """`_hold` of `values` at the grid times whose positions among the event times are `idx`."""
    padded = np.append(values, 0.0)
    held: FloatArray = padded[np.minimum(idx, len(values))]
    return held


def deployment_series(replicas: list[ReplicaResult], points: int) -> TimeSeries:
    """Samples of all replicas on one grid of `points` times from 0 to the makespan."""
    makespan = max(r.makespan_s for r in replicas)
    grid = np.linspace(0.0, makespan, max(points, 2))
    total_blocks = sum(r.total_blocks for r in replicas)
    # a run that identical replicas share (`simulate._distinct_runs`) is sampled once, and its
    # samples added once per replica, as before
    sampled: dict[int, tuple[FloatArray, ...]] = {}
    for r in replicas:
        if id(r) not in sampled:
            idx = np.searchsorted(r.series_s, grid, side="left")
            series = (r.series_used_blocks, r.series_running, r.series_waiting)
            sampled[id(r)] = tuple(_held(idx, v) for v in (*series, r.series_hbm_utilization))
    used, running, waiting, hbm = (
        sum((sampled[id(r)][k] for r in replicas), np.zeros_like(grid)) for k in range(4)
    )
    return TimeSeries(grid, used / total_blocks, running, waiting, hbm / len(replicas))


def stranded_kv_fraction(replicas: list[ReplicaResult]) -> float:
    """Mean, over every preemption in any replica, of the other replicas' free KV fraction then."""
    samples: list[float] = []
    held: dict[tuple[int, int], FloatArray] = {}  # (other, preempted) runs: shared runs once
    for r, rep in enumerate(replicas):
        if not len(rep.preemption_times_s):
            continue
        others = [o for k, o in enumerate(replicas) if k != r]
        if not others:
            continue
        free = np.zeros(len(rep.preemption_times_s))
        for o in others:
            key = (id(o), id(rep))
            if key not in held:
                held[key] = _hold(o.series_s, o.series_used_blocks, rep.preemption_times_s)
            free += o.total_blocks - held[key]
        samples.extend((free / sum(o.total_blocks for o in others)).tolist())
    return float(np.mean(samples)) if samples else 0.0


def replica_summary(rep: ReplicaResult) -> ReplicaSummary:
    """Headline figures of one replica."""
    return ReplicaSummary(
        requests=len(rep.finish_s),
        makespan_s=rep.makespan_s,
        preemptions=int(rep.preemptions.sum()),
        peak_kv_utilization=rep.peak_used_blocks / rep.total_blocks,
        blocked_s=rep.blocked_s,
        steps=rep.steps,
        events=rep.events,
    )


def mean_kv_utilization(replicas: list[ReplicaResult]) -> float:
    """Time-weighted KV in use over each replica's run, averaged over replicas."""
    shares = [
        r.used_block_seconds / (r.total_blocks * r.makespan_s) if r.makespan_s else 0.0
        for r in replicas
    ]
    return float(np.mean(shares))


def _latencies(cols: dict[str, FloatArray]) -> tuple[FloatArray, FloatArray, FloatArray]:
    """(TTFT, TPOT, E2E) per request; TPOT is NaN for one-token outputs."""
    outputs = cols["output_tokens"]
    with np.errstate(divide="ignore", invalid="ignore"):
        decode_s = cols["finish_s"] - cols["first_token_s"]
        tpot = np.where(outputs > 1, decode_s / (outputs - 1), np.nan)
    return cols["first_token_s"] - cols["arrival_s"], tpot, cols["finish_s"] - cols["arrival_s"]


def _earliest(marks: list[tuple[int, float] | None]) -> tuple[int, float] | None:
    present = [m for m in marks if m is not None]
    return min(present, key=lambda m: m[1]) if present else None


def _scatter(
    replicas: list[ReplicaResult], owners: list[IntArray], n: int
) -> dict[str, FloatArray]:
    fields = ("arrival_s", "first_token_s", "finish_s", "preemptions", "recomputed_tokens")
    out = {f: np.zeros(n) for f in (*fields, "replica", "output_tokens")}
    for r, (rep, idx) in enumerate(zip(replicas, owners, strict=True)):
        for f in fields:
            out[f][idx] = getattr(rep, f)
        out["replica"][idx] = r
        out["output_tokens"][idx] = rep.output_tokens
    return out


def _not_computed(values: FloatArray, weights: FloatArray | None = None) -> Percentiles:
    """NaN percentiles in place of `Percentiles.of(values, weights)` (`sim_result`)."""
    return Percentiles(np.nan, np.nan, np.nan, np.nan)


def sim_result(
    replicas: list[ReplicaResult],
    owners: list[IntArray],
    *,
    points: int,
    percentiles: bool = True,
) -> SimResult:
    """Combine per-replica runs (owners[r]: the input indices of replica r's requests).
    `percentiles=False` leaves the latency percentiles (ttft, tpot, itl, e2e) NaN, for a caller
    that replaces them with its own (the two-pool simulator measures from other arrivals)."""
    n = sum(len(o) for o in owners)
    cols = _scatter(replicas, owners, n)
    series = deployment_series(replicas, points)
    records = [r.reuse for r in replicas if r.reuse is not None]
    outputs = cols["output_tokens"].astype(np.int64)
    ttft, tpot, e2e = _latencies(cols)
    of = Percentiles.of if percentiles else _not_computed
    return SimResult(
        ttft_s=ttft,
        tpot_s=tpot,
        e2e_s=e2e,
        preemptions=cols["preemptions"].astype(np.int64),
        recomputed_tokens=cols["recomputed_tokens"].astype(np.int64),
        replica=cols["replica"].astype(np.int64),
        output_tokens=outputs,
        makespan_s=max(r.makespan_s for r in replicas),
        ttft=of(ttft),
        tpot=of(tpot),
        itl=of(tpot, weights=(outputs - 1).astype(np.float64)),
        e2e=of(e2e),
        total_preemptions=int(cols["preemptions"].sum()),
        total_recomputed_tokens=int(cols["recomputed_tokens"].sum()),
        swapped_tokens=sum(r.swapped_tokens for r in replicas),
        swap_s=sum(r.swap_s for r in replicas),
        scheduled_tokens=sum(r.scheduled_tokens for r in replicas),
        peak_kv_utilization=max(r.peak_used_blocks / r.total_blocks for r in replicas),
        mean_kv_utilization=mean_kv_utilization(replicas),
        first_saturation=_earliest([r.first_saturation for r in replicas]),
        first_preemption=_earliest([r.first_preemption for r in replicas]),
        admission_blocked=any(r.blocked_steps for r in replicas),
        blocked_s=max(r.blocked_s for r in replicas),
        stranded_kv_fraction=stranded_kv_fraction(replicas),
        series=series,
        replicas=tuple(replica_summary(r) for r in replicas),
        steps=sum(r.steps for r in replicas),
        events=sum(r.events for r in replicas),
        arrival_s=cols["arrival_s"],
        finish_s=cols["finish_s"],
        reuse=reuse_summary(records, series.time_s) if records else None,
    )
