"""When no layout meets the SLO: the least latency each alternative can reach, and which meet it.

An SLO that fails even at light load cannot be met by a lower rate or a lower cap: the step time
itself is too long. What can change it is a faster step: FP8 weights (half the bytes read per
decode step), an FP8 KV cache (half the attention reads), more tensor parallelism (the weights
read in parallel by more GPUs), or another GPU type. Each alternative is simulated at the load
where the plan's layouts missed the SLO even at their lightest (`LightLoad`: the SLO search's
light probe, its rate, sample and cap, read as that probe is), so that its figures and the
plan's "even at light load" are one measure; where the search ran no probe, with one
closed-loop user (a batch of one, no queueing).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

from capcliff.analysis.deployment import Deployment
from capcliff.analysis.evaluate.online_load import OnlineWorkload
from capcliff.analysis.evaluate.replica_models import replica_models
from capcliff.analysis.evaluate.solver import Slo, config_at
from capcliff.analysis.evaluate.steady_state import steady_state
from capcliff.analysis.served_weights import engines_load
from capcliff.catalog.layout import Layout
from capcliff.catalog.specs import HardwareSpec
from capcliff.errors import CapcliffError
from capcliff.memory.weights import WeightScheme
from capcliff.sim.simulate import simulate
from capcliff.units import KVDType, WeightDType

LIGHT_REQUESTS = 30  # one user sends this many requests, one after another


@dataclass(frozen=True)
class Alternative:
    """A deployment to try: what changes, and one replica's layout."""

    label: str
    dep: Deployment
    layout: Layout


@dataclass(frozen=True)
class LightLatency:
    """The least p99 latencies of an alternative (None: it does not fit)."""

    alternative: Alternative
    ttft_p99_s: float | None
    tpot_p99_s: float | None

    def meets(self, slo: Slo) -> bool:
        """Whether it fits and its light-load latencies are within the SLO."""
        return (
            self.ttft_p99_s is not None
            and self.tpot_p99_s is not None
            and self.ttft_p99_s <= slo.ttft_s
            and self.tpot_p99_s <= slo.tpot_s
        )


@dataclass(frozen=True)
class LightLoad:
    """The lightest load the plan's SLO search ran a replica at (`rate_search.highest_rate`'s
    light probe, LIGHT_LOAD x saturation): requests/s per replica, the sample's requests, the
    cap."""

    rate_rps: float
    requests: int
    cap: int


def light_latency(
    alt: Alternative, workload: OnlineWorkload, max_model_len: int, load: LightLoad | None = None
) -> LightLatency:
    """One replica of `alt` at `load`, read as the light probe is (steady-state p99s of the
    same sample at the same rate and cap): its TTFT and TPOT p99. Without a load, one user's
    LIGHT_REQUESTS requests, one after another.

    fuzz_random seed 40: 4 agentic users of Llama-3.1-8B on an H100 (TRT-LLM, TPOT p99 <= 200 ms)
    missed it at light load by 270 ms, and "FP8 weights: TPOT p99 6.98 ms" was one user's first
    30 requests (one session's early turns); the plan with FP8 weights reads 155 ms there."""
    memory = alt.dep.memory(alt.layout, max_model_len)
    if not memory.fits:
        return LightLatency(alt, None, None)
    capacity, steps = replica_models(alt.dep, memory)
    cap = 1 if load is None else load.cap
    config = config_at(alt.dep.sim_config(max_model_len), cap, 1)
    requests = (
        workload.with_clients(LIGHT_REQUESTS, 1)
        if load is None
        else workload.at_rate(load.requests, load.rate_rps)
    )
    try:
        result = simulate(requests, steps, capacity, config)
    except CapcliffError:  # a request longer than this replica's KV cache
        return LightLatency(alt, None, None)
    if load is None:
        return LightLatency(alt, result.ttft.p99, result.tpot.p99)
    state = steady_state(result, open_loop=True, mean_output=workload.mean_output_tokens())
    return LightLatency(alt, state.ttft_p99_s, state.tpot_p99_s)


def alternatives(dep: Deployment, gpus: int, catalog: list[HardwareSpec]) -> list[Alternative]:
    """FP8 weights, FP8 KV, more tensor parallelism and each other GPU type (widest TP)."""
    arch = dep.model.arch
    widest = Layout(tp=min(gpus, dep.hardware.scaleup_domain_gpus))
    out = []
    fp8 = replace(dep, scheme=WeightScheme.planned(arch, WeightDType.FP8))
    if dep.scheme.linear is not WeightDType.FP8 and engines_load(fp8):
        out.append(Alternative("FP8 weights (--weight-dtype fp8)", fp8, widest))
    if dep.kv_dtype is not KVDType.FP8:
        out.append(
            Alternative("an FP8 KV cache (--kv-cache-dtype fp8)",
                        replace(dep, kv_dtype=KVDType.FP8), widest)
        )  # fmt: skip
    wider = min(2 * gpus, dep.hardware.scaleup_domain_gpus)
    if wider > widest.tp:
        out.append(Alternative(f"{wider} GPUs as tp{wider}", dep, Layout(tp=wider)))
    for other in catalog:
        if other.id != dep.hardware.id:
            lay = Layout(tp=min(other.scaleup_domain_gpus, other.gpus_per_node))
            try:
                moved = dep.on(other)
            except CapcliffError:  # e.g. a memory override larger than that GPU
                continue
            out.append(Alternative(f"{other.id} as {lay.name}", moved, lay))
    return out


def what_would_meet(
    slo: Slo, tried: list[LightLatency], describe: Callable[[LightLatency], str]
) -> list[str]:
    """The alternatives that meet `slo` at light load, else the closest three."""
    meeting = [t for t in tried if t.meets(slo)]
    if meeting:
        return [f"{describe(t)}: meets it at light load" for t in meeting]
    fitting = [t for t in tried if t.tpot_p99_s is not None and t.ttft_p99_s is not None]

    def excess(t: LightLatency) -> float:
        assert t.ttft_p99_s is not None and t.tpot_p99_s is not None
        return max(t.ttft_p99_s / slo.ttft_s, t.tpot_p99_s / slo.tpot_s)

    closest = sorted(fitting, key=excess)[:3]
    lines = [f"{describe(t)}: still {excess(t):.1f}x over the limit" for t in closest]
    return ["nothing tried meets it even with one user; closest:", *lines]
