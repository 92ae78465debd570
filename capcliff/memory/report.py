"""The result of `capcliff memory`: a model's parameters, KV cost and memory for each layout."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from capcliff.catalog.catalogs import Model
from capcliff.catalog.layout import Layout, enumerate_layouts
from capcliff.catalog.specs import HardwareSpec
from capcliff.memory.budget import BudgetSettings
from capcliff.memory.fit import largest_max_model_len, utilization_needed
from capcliff.memory.kv import kv_bytes_per_token
from capcliff.memory.layout_memory import LayoutMemory, layout_memory
from capcliff.memory.params import param_count
from capcliff.memory.weights import WeightScheme, total_weight_bytes
from capcliff.report_header import SCHEMA_VERSION, ReportHeader
from capcliff.units import KVDType, format_bytes


class _Result(BaseModel):
    # validators built on first use: a command pays only for the models it makes (~1 ms each)
    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)


class TermResult(_Result):
    """One named use of a GPU's memory."""

    name: str
    bytes: int
    provenance: str
    source: str
    inside_budget: bool


class StageResult(_Result):
    """One pipeline stage's GPU budget, bytes."""

    total_memory_bytes: int
    usable_bytes: int
    weights_bytes: int
    terms: list[TermResult]
    kv_bytes: int  # the KV pool the engine allocates: 0 when the terms overrun the budget
    kv_shortfall_bytes: int  # how far weights and the engine's terms overrun the budget, else 0
    kv_bytes_per_token: int
    block_size: int
    kv_blocks: int
    headroom_bytes: int  # the device's memory left outside budget + outside terms, else 0
    headroom_shortfall_bytes: int  # how far budget + outside terms overrun the device, else 0


class LayoutSummary(_Result):
    """A layout, whether it is valid and fits, and its headline memory figures."""

    name: str
    dp: int
    tp: int
    pp: int
    ep: int
    valid: bool
    reason: str
    fits: bool
    weights_bytes_per_gpu: int | None
    kv_capacity_tokens_per_replica: int | None
    kv_capacity_tokens_total: int | None


def summary_fields(mem: LayoutMemory) -> dict[str, object]:
    """The `LayoutSummary` fields of a layout's memory (figures None when the layout is invalid)."""
    lay, valid = mem.layout, mem.valid
    return {
        "name": lay.name,
        "dp": lay.dp,
        "tp": lay.tp,
        "pp": lay.pp,
        "ep": lay.ep,
        "valid": valid,
        "reason": mem.reason,
        "fits": mem.fits,
        "weights_bytes_per_gpu": mem.weights_bytes_per_gpu if valid else None,
        "kv_capacity_tokens_per_replica": mem.kv_capacity_tokens_per_replica if valid else None,
        "kv_capacity_tokens_total": mem.kv_capacity_tokens_total if valid else None,
    }


class LayoutResult(LayoutSummary):
    """One layout's memory verdict."""

    kv_bytes_per_token_per_gpu: int | None
    max_concurrency_at_max_model_len: int | None
    largest_max_model_len: int | None
    utilization_needed: float | None  # when one max_model_len request does not fit; None if none
    stages: list[StageResult]
    warnings: list[str]


class MemoryReport(ReportHeader):
    """Everything `capcliff memory` prints."""

    model_source: str
    gpu_memory_utilization: float
    params_total: int
    params_active: int
    params_by_component: dict[str, int]
    published_params_total: int | None
    weights_bytes_total: int
    checkpoint_bytes: int | None
    kv_bytes_per_token: int
    layouts: list[LayoutResult]

    @property
    def verdict(self) -> str:
        """One line when no layout fits: the whole model against all GPUs, or a pointer."""
        if any(lay.fits for lay in self.layouts):
            return ""
        usable = [s.usable_bytes for lay in self.layouts for s in lay.stages]
        if usable and self.weights_bytes_total > self.gpus * usable[0]:
            return (
                f"does not fit: weights {format_bytes(self.weights_bytes_total)} > "
                f"{self.gpus} x {format_bytes(usable[0])} usable"
            )
        return f"no layout of {self.gpus} GPUs fits; see the reasons per layout"

    @property
    def fitting_layouts(self) -> list[str]:
        """Names of the layouts that fit."""
        return [lay.name for lay in self.layouts if lay.fits]


def _layout_result(mem: LayoutMemory) -> LayoutResult:
    stages = [
        StageResult(
            total_memory_bytes=s.total_memory_bytes,
            usable_bytes=s.requested_bytes,
            weights_bytes=s.weights_bytes,
            terms=[
                TermResult(
                    name=t.name,
                    bytes=t.bytes,
                    provenance=t.provenance.value,
                    source=t.source,
                    inside_budget=inside,
                )
                for inside, group in ((True, s.terms), (False, s.outside_terms))
                for t in group
            ],
            kv_bytes=max(0, s.kv_bytes),
            kv_shortfall_bytes=max(0, -s.kv_bytes),
            kv_bytes_per_token=s.kv_bytes_per_token,
            block_size=s.block_size,
            kv_blocks=s.blocks,
            headroom_bytes=max(0, s.headroom_bytes),
            headroom_shortfall_bytes=max(0, -s.headroom_bytes),
        )
        for s in mem.stages
    ]
    return LayoutResult(
        **summary_fields(mem),
        kv_bytes_per_token_per_gpu=mem.kv_bytes_per_token_per_gpu if mem.valid else None,
        max_concurrency_at_max_model_len=mem.max_concurrency(mem.max_model_len)
        if mem.valid
        else None,
        largest_max_model_len=largest_max_model_len(mem) if mem.valid else None,
        utilization_needed=utilization_needed(mem, mem.max_model_len)
        if mem.valid and not mem.fits and mem.stages[0].engine.value.startswith("vllm")
        else None,
        stages=stages,
        warnings=list(mem.warnings),
    )


def report_header(
    model: Model,
    hardware: HardwareSpec,
    *,
    gpus: int,
    settings: BudgetSettings,
    scheme: WeightScheme,
    kv_dtype: KVDType,
    max_model_len: int,
) -> ReportHeader:
    """The header fields shared by the memory, sweep and plan reports."""
    dtype = scheme.label()
    return ReportHeader(
        schema_version=SCHEMA_VERSION,
        model=model.id,
        hardware=hardware.id,
        gpus=gpus,
        engine=settings.engine.value,
        weight_dtype=dtype,
        kv_dtype=kv_dtype.value,
        max_model_len=max_model_len,
        overheads="calibrated" if settings.calibrated_terms else "modeled",
    )


def build_memory_report(
    model: Model,
    hardware: HardwareSpec,
    *,
    gpus: int,
    layouts: list[Layout] | None,
    scheme: WeightScheme,
    kv_dtype: KVDType,
    max_model_len: int,
    settings: BudgetSettings,
    caps_to_pool: bool = False,
) -> MemoryReport:
    """Compute the memory report for `layouts` (every layout of `gpus` GPUs when None);
    `caps_to_pool` as `layout_memory`'s."""
    arch = model.arch
    counts = param_count(arch)
    chosen = layouts if layouts is not None else enumerate_layouts(gpus, arch=arch)
    results = [
        _layout_result(
            layout_memory(
                arch,
                hardware,
                lay,
                scheme=scheme,
                kv_dtype=kv_dtype,
                max_model_len=max_model_len,
                settings=settings,
                caps_to_pool=caps_to_pool,
            )
        )
        for lay in chosen
    ]
    header = report_header(
        model, hardware, gpus=gpus, settings=settings, scheme=scheme, kv_dtype=kv_dtype,
        max_model_len=max_model_len,
    )  # fmt: skip
    return MemoryReport(
        **header.model_dump(),
        model_source=model.source,
        gpu_memory_utilization=settings.gpu_memory_utilization,
        params_total=counts.total,
        params_active=counts.active,
        params_by_component={c.value: n for c, n in counts.by_component.items() if n},
        published_params_total=model.published.total if model.published else None,
        weights_bytes_total=total_weight_bytes(arch, scheme),
        checkpoint_bytes=model.checkpoint_bytes,
        kv_bytes_per_token=kv_bytes_per_token(arch, kv_dtype=kv_dtype),
        layouts=results,
    )
