"""Sweeps over concurrency and what they find: the cliff, the sweet spot and the collapse.

- Analytic cliff: the largest concurrency whose peak KV fits: a request of ISL + OSL tokens holds
  ceil((ISL + OSL - 1) / B) blocks at its longest (the last generated token's KV is never
  written), so a replica holds blocks // that many at once.
- Simulated cliff: the smallest swept concurrency at which the engine preempted or refused a
  waiting request for lack of KV.
- Sweet spot: the least makespan (a batch), or the most throughput within TTFT / TPOT limits.
- Collapse: the throughput lost at concurrencies past the sweet spot.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace

import numpy as np
import numpy.typing as npt

from capcliff.errors import InputError
from capcliff.perf.step_time import StepTimeModel
from capcliff.sim.config import KVCapacity, SimConfig
from capcliff.sim.result import SimResult, linear_quantiles
from capcliff.sim.simulate import simulate
from capcliff.sim.traffic.workload import Requests
from capcliff.units import ceil_div

FloatArray = npt.NDArray[np.float64]


def analytic_cliff(
    *, blocks_per_replica: int, block_size: int, input_tokens: int, output_tokens: int, dp: int = 1
) -> int:
    """dp x (blocks // ceil((ISL + OSL - 1) / B)): requests of fixed lengths that fit at their
    peak."""
    peak = ceil_div(input_tokens + output_tokens - 1, block_size)
    return dp * (blocks_per_replica // peak)


def analytic_cliff_percentile(
    requests: Requests, *, blocks_per_replica: int, block_size: int, percentile: float, dp: int = 1
) -> int:
    """The analytic cliff for requests at the `percentile` of their peak KV (input + output -
    1)."""
    peaks = requests.input_tokens + requests.output_tokens - 1
    tokens = math.ceil(linear_quantiles(peaks, [percentile / 100])[0])
    return dp * (blocks_per_replica // ceil_div(tokens, block_size))


@dataclass(frozen=True)
class SweepPoint:
    """One concurrency of a sweep and what the simulation found there."""

    concurrency: int
    makespan_s: float
    output_tokens_per_s: float
    requests_per_s: float
    preemptions: int
    admission_blocked: bool
    ttft_s: FloatArray
    tpot_s: FloatArray
    result: SimResult | None = None

    @classmethod
    def of(cls, concurrency: int, result: SimResult) -> SweepPoint:
        """The point of a finished simulation."""
        return cls(
            concurrency=concurrency,
            makespan_s=result.makespan_s,
            output_tokens_per_s=result.output_tokens_per_s,
            requests_per_s=result.requests_per_s,
            preemptions=result.total_preemptions,
            admission_blocked=result.admission_blocked,
            ttft_s=result.ttft_s,
            tpot_s=result.tpot_s,
            result=result,
        )

    @property
    def hit_cliff(self) -> bool:
        """Whether KV ran short: a preemption, or a waiting request refused for lack of KV."""
        return self.preemptions > 0 or self.admission_blocked


def config_at(config: SimConfig, concurrency: int, dp: int) -> SimConfig:
    """`config` with max_num_seqs = min(ceil(concurrency / dp), the engine's own cap) per
    replica (and the token budget raised to it where it was lower, as vLLM requires, where the
    decodes share the step's budget; SGLang's prefill chunk does not bound its decode batch and
    keeps its size). The engine's cap (`SimConfig.engine_max_num_seqs`, set only where the user
    gave no cap) holds whatever the clients: SGLang with speculation runs at most 48 and the
    rest wait."""
    seqs = ceil_div(concurrency, dp)
    if config.engine_max_num_seqs is not None:
        seqs = min(seqs, config.engine_max_num_seqs)
    budget = config.max_num_batched_tokens
    return replace(
        config,
        max_num_seqs=seqs,
        max_num_batched_tokens=max(budget, seqs) if config.mixed_prefill else budget,
    )


def sweep(
    requests: Requests,
    model: StepTimeModel,
    capacity: KVCapacity,
    config: SimConfig,
    concurrencies: Iterable[int],
    *,
    dp: int = 1,
    on_point: Callable[[], None] | None = None,
) -> tuple[SweepPoint, ...]:
    """Simulate the same requests at each concurrency (the cap on running requests);
    `on_point` is called after each simulation (progress)."""
    points = []
    for c in sorted(set(concurrencies)):
        if c < 1:
            raise InputError(f"concurrency: must be >= 1, got {c}")
        result = simulate(requests, model, capacity, config_at(config, c, dp), dp=dp)
        points.append(SweepPoint.of(c, result))
        if on_point is not None:
            on_point()
    return tuple(points)


def simulated_cliff(points: Iterable[SweepPoint]) -> SweepPoint | None:
    """The smallest concurrency at which KV ran short, or None if it never did."""
    return next((p for p in sorted(points, key=lambda p: p.concurrency) if p.hit_cliff), None)


def sweet_spot(points: Iterable[SweepPoint]) -> SweepPoint:
    """The concurrency with the least makespan (ties: the smaller concurrency)."""
    return min(points, key=lambda p: (p.makespan_s, p.concurrency))


@dataclass(frozen=True)
class Slo:
    """Latency limits at a percentile, seconds."""

    ttft_s: float
    tpot_s: float
    percentile: float = 99.0

    @classmethod
    def unlimited(cls) -> Slo:
        """No latency limit at all."""
        return cls(ttft_s=float("inf"), tpot_s=float("inf"))

    @classmethod
    def of(cls, ttft_s: float | None, tpot_s: float | None) -> Slo | None:
        """Limits from optional p99 bounds (a missing one is unbounded); None when both are."""
        if ttft_s is None and tpot_s is None:
            return None
        inf = float("inf")
        return cls(
            ttft_s=inf if ttft_s is None else ttft_s, tpot_s=inf if tpot_s is None else tpot_s
        )


def meets(point: SweepPoint, slo: Slo) -> bool:
    """Whether the point's TTFT and TPOT percentiles are within the limits."""
    ttft = linear_quantiles(point.ttft_s, [slo.percentile / 100])[0]
    tpot_values = point.tpot_s[np.isfinite(point.tpot_s)]
    tpot = linear_quantiles(tpot_values, [slo.percentile / 100])[0] if len(tpot_values) else 0.0
    return ttft <= slo.ttft_s and tpot <= slo.tpot_s


def slo_sweet_spot(points: Iterable[SweepPoint], slo: Slo) -> SweepPoint | None:
    """The most output throughput among points that meet `slo`, or None."""
    ok = [p for p in points if meets(p, slo)]
    return max(ok, key=lambda p: (p.output_tokens_per_s, -p.concurrency)) if ok else None


@dataclass(frozen=True)
class Collapse:
    """Throughput lost past the sweet spot: loss = 1 - throughput / the sweet spot's."""

    sweet: SweepPoint
    losses: tuple[tuple[int, float], ...]  # (concurrency, loss) for each point past it

    @property
    def worst_loss(self) -> float:
        """The largest loss past the sweet spot (0 when nothing lies past it)."""
        return max((loss for _, loss in self.losses), default=0.0)


def collapse(points: Iterable[SweepPoint], sweet: SweepPoint) -> Collapse:
    """How much output throughput each concurrency past `sweet` loses against it."""
    base = sweet.output_tokens_per_s
    past = sorted(
        (p for p in points if p.concurrency > sweet.concurrency), key=lambda p: p.concurrency
    )
    losses = tuple((p.concurrency, 1 - p.output_tokens_per_s / base if base else 0.0) for p in past)
    return Collapse(sweet=sweet, losses=losses)
