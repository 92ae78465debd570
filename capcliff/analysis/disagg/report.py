"""What a disaggregated run reports: both pools, the KV transfers, and end-to-end serving.

JSON: `disaggregated` = {name, gpus, prefill: {layout, instances, replicas, gpus, ...},
decode: {...}, kv_transfer: {bytes_per_request, link, p99_transfer_s, ...}, serving: {...}}.
"""

from __future__ import annotations

import math
from collections import Counter

import numpy as np
from pydantic import BaseModel, ConfigDict

from capcliff.analysis.disagg.pools import DisaggSpec, PoolPlan
from capcliff.analysis.evaluate.steady_state import SteadyState
from capcliff.analysis.plan.fleet import gpu_hours_per_mtok, hourly_cost
from capcliff.sim.disagg.kv_transfer import link_utilization
from capcliff.sim.disagg.pools import DisaggResult, PoolStats


class _Result(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class DisaggHeader(_Result):
    """The fields every disaggregated report (sweep and plan) opens with."""

    schema_version: int
    model: str
    hardware: str  # the GPU type the pools run on, or `prefill-type+decode-type`
    gpus: int
    engine: str
    workload: str
    num_requests: int
    seed: int


class PoolReport(_Result):
    """One pool: its layout, size and load."""

    layout: str
    hardware: str  # the GPU type the pool runs on
    instances: int
    replicas: int  # simulated replicas: instances x attention-DP ranks
    gpus: int
    kv_blocks_per_replica: int
    block_size: int
    utilization: float  # time in engine steps / (replicas x makespan)
    peak_kv_utilization: float
    mean_kv_utilization: float
    preemptions: int


class KVTransferReport(_Result):
    """The KV moved from prefill to decode and the links it used."""

    bytes_per_request: float  # mean over transferred requests
    total_bytes: float
    transfers: int
    link: str  # the path most transfers took
    links: dict[str, int]  # transfers per path
    p50_transfer_s: float  # time on the link
    p99_transfer_s: float
    p99_link_wait_s: float  # queued for a busy sender or receiver
    link_utilization: float  # wire time / (prefill replicas x makespan)
    decode_queue_p50_s: float  # KV landed -> decode admission (waiting for KV blocks)
    decode_queue_p99_s: float


class SteadyFigures(_Result):
    """The steady state a deployment's figures come from, with its confidence."""

    requests: int  # simulated
    measured: int  # finished inside the window
    window_s: tuple[float, float]
    throughput_rps: float
    output_tok_s: float
    ttft_p99_s: float
    tpot_p99_s: float
    rps_half_width: float | None  # relative, 95 % (None: too few batches)
    tpot_half_width: float | None
    settled: bool  # both half-widths within 5 % of their means
    saturated: bool  # the queue grows: the deployment does not serve the offered rate


class ServingReport(_Result):
    """End to end, over both pools (latencies from each request's arrival)."""

    concurrency: int | None  # the decode pool's cap on running requests (None: engine default)
    output_throughput_tok_s: float
    request_throughput_req_s: float
    ttft_p50_s: float
    ttft_p99_s: float
    tpot_p50_s: float
    tpot_p99_s: float
    e2e_p99_s: float
    makespan_s: float
    # GPU-hours per million output tokens: GPUs x makespan over the tokens (a batch); at an
    # offered rate, GPUs over the tokens/s the $ figure is costed on (`fleet.gpu_hours_per_mtok`)
    gpu_hours_per_mtok: float
    # at the hardware's $/GPU-hour (`fleet.hourly_cost`; None without a price): GPUs x price, and
    # that over the output tokens served per hour: at an offered rate, rate x mean output tokens
    # (as fleet sizing counts them); in a batch, tokens / makespan
    usd_per_hour: float | None = None
    usd_per_million_output_tokens: float | None = None
    # at an offered rate: the steady state the latency and throughput figures above come from
    steady: SteadyFigures | None = None


class DisaggregatedReport(_Result):
    """A disaggregated deployment's run."""

    name: str
    gpus: int
    prefill: PoolReport
    decode: PoolReport
    kv_transfer: KVTransferReport
    serving: ServingReport


def _finite(value: float) -> float:
    return value if math.isfinite(value) else 0.0


def _finite_or_none(value: float) -> float | None:
    return value if math.isfinite(value) else None


def pool_report(plan: PoolPlan, layout_instances: int, stats: PoolStats) -> PoolReport:
    """A pool's figures."""
    layout, pool = plan.memory.layout, plan.pool
    return PoolReport(
        layout=layout.name,
        hardware=plan.hardware.id,
        instances=layout_instances,
        replicas=pool.replicas,
        gpus=layout.gpus * layout_instances,
        kv_blocks_per_replica=pool.capacity.blocks,
        block_size=pool.capacity.block_size,
        utilization=stats.busy_fraction,
        peak_kv_utilization=stats.peak_kv_utilization,
        mean_kv_utilization=stats.mean_kv_utilization,
        preemptions=stats.preemptions,
    )


def transfer_report(result: DisaggResult, prefill_replicas: int) -> KVTransferReport:
    """The transfer stage's figures."""
    t = result.transfers
    paths = Counter(t.path)
    wire, wait = t.wire_s, t.wait_s
    queue = result.decode_queue_s
    return KVTransferReport(
        bytes_per_request=float(t.nbytes.mean()),
        total_bytes=float(t.nbytes.sum()),
        transfers=len(t.nbytes),
        link=paths.most_common(1)[0][0],
        links=dict(paths),
        p50_transfer_s=float(np.percentile(wire, 50)),
        p99_transfer_s=float(np.percentile(wire, 99)),
        p99_link_wait_s=float(np.percentile(wait, 99)),
        link_utilization=link_utilization(
            t, links=prefill_replicas, horizon_s=result.serving.makespan_s
        ),
        decode_queue_p50_s=float(np.percentile(queue, 50)),
        decode_queue_p99_s=float(np.percentile(queue, 99)),
    )


def serving_report(
    result: DisaggResult, gpus: int, concurrency: int | None, price: float | None,
    offered_tok_s: float | None = None, state: SteadyState | None = None,
) -> ServingReport:  # fmt: skip
    """End-to-end figures; cost at `price` $/GPU-hour (None: no cost) per output token served:
    `offered_tok_s` (tokens/s) at an offered rate, else the simulated throughput. With `state`
    (an offered rate) the throughput and p99 latencies are its steady state's."""
    r = result.serving
    out_tok_s = r.output_tokens_per_s if state is None else state.output_tok_s
    served_tok_s = offered_tok_s or out_tok_s
    usd_per_hour, usd_per_mtok = (
        (None, None) if price is None else hourly_cost(gpus, price, served_tok_s)
    )
    if state is None and offered_tok_s is None:  # a batch: the GPUs held over the makespan
        gpu_hours = gpus * r.makespan_s / 3600 / max(1, int(r.output_tokens.sum())) * 1e6
    else:  # at an offered rate: on the tokens/s the $ figure is costed on
        gpu_hours = gpu_hours_per_mtok(gpus, served_tok_s)
    return ServingReport(
        concurrency=concurrency,
        output_throughput_tok_s=out_tok_s,
        request_throughput_req_s=r.requests_per_s if state is None else state.throughput_rps,
        ttft_p50_s=_finite(r.ttft.p50),
        ttft_p99_s=_finite(r.ttft.p99 if state is None else state.ttft_p99_s),
        tpot_p50_s=_finite(r.tpot.p50),
        tpot_p99_s=_finite(r.tpot.p99 if state is None else state.tpot_p99_s),
        e2e_p99_s=_finite(r.e2e.p99),
        makespan_s=r.makespan_s,
        gpu_hours_per_mtok=gpu_hours,
        usd_per_hour=usd_per_hour,
        usd_per_million_output_tokens=None
        if usd_per_mtok is None
        else _finite_or_none(usd_per_mtok),
        steady=None if state is None else steady_figures(state),
    )


def disaggregated_report(
    spec: DisaggSpec,
    pools: tuple[PoolPlan, PoolPlan],
    result: DisaggResult,
    *,
    concurrency: int | None,
    price: float | None,
    offered_tok_s: float | None = None,
    state: SteadyState | None = None,
) -> DisaggregatedReport:
    """The report of one run of `spec`; cost at `price` $/GPU-hour (None: no cost), per output
    token served (`offered_tok_s` tokens/s at an offered rate, else as simulated); `state`: the
    run's steady state at an offered rate."""
    pre, dec = pools
    return DisaggregatedReport(
        name=spec.name,
        gpus=spec.gpus,
        prefill=pool_report(pre, spec.prefill_instances, result.prefill),
        decode=pool_report(dec, spec.decode_instances, result.decode),
        kv_transfer=transfer_report(result, pre.pool.replicas),
        serving=serving_report(result, spec.gpus, concurrency, price, offered_tok_s, state),
    )


def steady_figures(state: SteadyState) -> SteadyFigures:
    """`state` as reported."""
    return SteadyFigures(
        requests=state.requests, measured=state.measured, window_s=state.window_s,
        throughput_rps=state.throughput_rps, output_tok_s=state.output_tok_s,
        ttft_p99_s=state.ttft_p99_s, tpot_p99_s=state.tpot_p99_s,
        rps_half_width=_finite_or_none(state.rps_half_width),
        tpot_half_width=_finite_or_none(state.tpot_half_width),
        settled=state.settled, saturated=state.saturated,
    )  # fmt: skip


def pools_price(pools: tuple[PoolPlan, PoolPlan], prices: dict[str, float]) -> float | None:
    """$ per GPU-hour of the deployment, averaged over its GPUs: each pool's GPUs at its GPU
    type's price (`prices` overrides the hardware files' `usd_per_gpu_hour`); None when a type
    has no price."""
    gpus = usd = 0.0
    for plan in pools:
        price = prices.get(plan.hardware.id, plan.hardware.usd_per_gpu_hour)
        if price is None:
            return None
        count = plan.memory.layout.gpus * plan.pool.replicas // plan.memory.layout.dp
        gpus, usd = gpus + count, usd + count * price
    return usd / gpus
