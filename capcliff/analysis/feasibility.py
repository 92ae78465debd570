"""When no layout meets the SLO: the least latency each alternative can reach, and which meet it.

An SLO that fails even at light load cannot be met by a lower rate or a lower cap: the step time
itself is too long. What can change it is a faster step: FP8 weights (half the bytes read per
decode step), an FP8 KV cache (half the attention reads), more tensor parallelism (the weights
read in parallel by more GPUs), or another GPU type. Each alternative is simulated with one
closed-loop user (a batch of one, no queueing): the least TTFT and TPOT it can deliver.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from capcliff.analysis.online_load import OnlineWorkload
from capcliff.analysis.solver import Slo, config_at
from capcliff.analysis.sweep import replica_models
from capcliff.catalog.catalogs import Model
from capcliff.catalog.layout import Layout
from capcliff.catalog.specs import HardwareSpec
from capcliff.errors import CapcliffError
from capcliff.memory.budget import BudgetSettings
from capcliff.memory.layout_memory import layout_memory
from capcliff.memory.weights import WeightScheme
from capcliff.sim.config import SimConfig
from capcliff.sim.simulate import simulate
from capcliff.units import KVDType, WeightDType

LIGHT_REQUESTS = 30  # one user sends this many requests, one after another


@dataclass(frozen=True)
class Alternative:
    """A deployment to try: what changes, on which GPUs."""

    label: str
    hardware: HardwareSpec
    layout: Layout
    scheme: WeightScheme
    kv_dtype: KVDType


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


def light_latency(
    model: Model,
    alt: Alternative,
    workload: OnlineWorkload,
    *,
    config: SimConfig,
    max_model_len: int,
    settings: BudgetSettings,
) -> LightLatency:
    """One user's requests on one replica of `alt`: its TTFT and TPOT p99."""
    memory = layout_memory(
        model.arch, alt.hardware, alt.layout, scheme=alt.scheme, kv_dtype=alt.kv_dtype,
        max_model_len=max_model_len, settings=settings,
    )  # fmt: skip
    if not memory.fits:
        return LightLatency(alt, None, None)
    capacity, steps = replica_models(
        model, alt.hardware, memory, scheme=alt.scheme, kv_dtype=alt.kv_dtype
    )
    try:
        result = simulate(
            workload.with_clients(LIGHT_REQUESTS, 1), steps, capacity, config_at(config, 1, 1)
        )
    except CapcliffError:  # a request longer than this replica's KV cache
        return LightLatency(alt, None, None)
    return LightLatency(alt, result.ttft.p99, result.tpot.p99)


def alternatives(
    model: Model,
    hardware: HardwareSpec,
    gpus: int,
    *,
    scheme: WeightScheme,
    kv_dtype: KVDType,
    catalog: list[HardwareSpec],
) -> list[Alternative]:
    """FP8 weights, FP8 KV, more tensor parallelism and each other GPU type (widest TP)."""
    widest = Layout(tp=min(gpus, hardware.scaleup_domain_gpus))
    out = []
    if scheme.linear is not WeightDType.FP8:
        fp8 = WeightScheme.quantised(model.arch, WeightDType.FP8)
        out.append(Alternative("FP8 weights (--quantization fp8)", hardware, widest, fp8, kv_dtype))
    if kv_dtype is not KVDType.FP8:
        out.append(
            Alternative("an FP8 KV cache (--kv-cache-dtype fp8)", hardware, widest, scheme,
                        KVDType.FP8)
        )  # fmt: skip
    wider = min(2 * gpus, hardware.scaleup_domain_gpus)
    if wider > widest.tp:
        out.append(Alternative(f"{wider} GPUs as tp{wider}", hardware, Layout(tp=wider), scheme,
                               kv_dtype))  # fmt: skip
    for other in catalog:
        if other.id != hardware.id:
            lay = Layout(tp=other.scaleup_domain_gpus if other.scaleup_domain_gpus <= 8 else 8)
            out.append(Alternative(f"{other.id} as {lay.name}", other, lay, scheme, kv_dtype))
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
