"""The roofline's efficiency factors: named defaults (MBU from the model's size, MFU, latencies,
per-step overhead) and what an engine profile makes of them for one layout (`profile_efficiency`).
Fractions of peak are dimensionless; times in seconds."""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

from capcliff.catalog.architecture import Architecture
from capcliff.catalog.layout import Layout
from capcliff.catalog.specs import HardwareSpec
from capcliff.memory.budget import EngineName
from capcliff.memory.params import param_count
from capcliff.memory.weights import WeightScheme
from capcliff.perf.allreduce_curves import (
    MEASURED_FABRICS,
    RCCL_MEASURED_FABRICS,
    allreduce_curve,
    lamport_allreduce_curve,
    rccl_allreduce_curve,
    trtllm_allreduce_curve,
)
from capcliff.perf.flashinfer_gemm import FLASHINFER_TRTLLM, flashinfer_block_fp8_curve
from capcliff.perf.marlin_moe import marlin_mxfp4_curve
from capcliff.perf.mla_bmm import MLA_BMM_KERNELS, mla_bmm_table
from capcliff.perf.moe_tables import MoETable, moe_table
from capcliff.perf.op_curves import (
    ComputeCurve,
    OpCurve,
    compute_curve,
    mla_format,
    op_curve,
    table_format,
)
from capcliff.perf.profiles import (
    AITER_MLA_DECODE_FLOOR_S,
    GFX942_HARDWARE,
    EngineProfile,
    curve_kernels_per_layer,
    curves_carry_launch,
    dense_gemms_per_layer,
    dp_host_overhead_s,
    fuses_allreduce,
    hip_kernel_floor_s,
    kernels_per_layer,
    runs_trtllm_allreduce,
)
from capcliff.units import KVDType, WeightDType

# Decode HBM bandwidth use the study measured (shared/reference/paper_findings.md, "HBM bandwidth
# use in decode"): 8B ~ 85 %, 70B ~ 70 %, 671B ~ 50-60 % (midpoint 55 %). Between these anchors
# capcliff interpolates linearly in log(total parameters) and holds the end values outside them.
MBU_ANCHORS: tuple[tuple[float, float], ...] = ((8e9, 0.85), (70e9, 0.70), (671e9, 0.55))
# The study measured those anchors on H200, so a GPU's MBU is the anchor scaled by how much of its
# peak HBM bandwidth it can reach against how much H200 reaches (`hbm_achievable_tb_s` in the
# hardware catalog, a BabelStream-style measurement). H200's fraction, 4.32 / 4.8 TB/s
# (hardware/h200-sxm.toml; tests/test_amd_terms.py checks the two agree).
REFERENCE_HBM_FRACTION = 4.32 / 4.8
# Named assumption: fraction of dense peak FLOP/s a compute-bound (prefill) step reaches. Not in
# the reference data; 0.5 is a common figure for large-batch GEMMs on H100-class GPUs. Where an
# engine's measured GEMM or MoE compute line exists (perf/op_curves.py ComputeCurve) it prices
# those FLOPs instead; this prices attention's FLOPs and every FLOP elsewhere (AMD GPUs but for
# SGLang's block-FP8 GEMMs, whose lines come from aiter's tables; vLLM V0; formats no table
# measured).
DEFAULT_MFU = 0.5
# Named assumption: fixed latency of one small NCCL all-reduce inside a CUDA graph on NVLink.
DEFAULT_ALLREDUCE_LATENCY_S = 8e-6
# Named assumption: latency of one pipeline-stage activation send.
DEFAULT_P2P_LATENCY_S = 10e-6
# Named assumption: per-step engine time outside the forward pass (scheduling, sampling, input
# preparation) that does not overlap it.
DEFAULT_STEP_OVERHEAD_S = 2e-3


def default_mbu(total_params: float) -> float:
    """Decode memory-bandwidth utilisation for a model of `total_params`, from MBU_ANCHORS."""
    (p0, u0), *rest = MBU_ANCHORS
    if total_params <= p0:
        return u0
    for p1, u1 in rest:
        if total_params <= p1:
            w = math.log(total_params / p0) / math.log(p1 / p0)
            return u0 + w * (u1 - u0)
        p0, u0 = p1, u1
    return u0


def hbm_factor(hardware: HardwareSpec) -> float:
    """Measured achievable fraction of peak HBM bandwidth of `hardware` over H200's
    (REFERENCE_HBM_FRACTION); 1 for a GPU without a measured figure in the catalog."""
    fraction = hardware.hbm_achievable_fraction
    return 1.0 if fraction is None else fraction / REFERENCE_HBM_FRACTION


@dataclass(frozen=True)
class Efficiency:
    """Named, overridable efficiency factors of the roofline."""

    mbu: float  # fraction of peak HBM bandwidth a memory-bound step reaches
    mfu: float = DEFAULT_MFU  # fraction of dense peak FLOP/s a compute-bound step reaches
    allreduce_latency_s: float = DEFAULT_ALLREDUCE_LATENCY_S
    p2p_latency_s: float = DEFAULT_P2P_LATENCY_S
    step_overhead_s: float = DEFAULT_STEP_OVERHEAD_S  # per step: host time + per-layer floors
    kv_bandwidth_fraction: float | None = None  # attention kernel's share of peak; None: mbu
    expert_efficiency: float = 1.0  # grouped-GEMM MoE: divides the expert-read time
    allreduce_curve: tuple[tuple[float, float], ...] = ()  # (message bytes, s); () latency+wire
    variable_scale: float = 1.0  # calibrated: multiplies everything but step_overhead_s
    mla_extend_efficiency: float | None = None  # prefill attention, of BF16 peak; None: mfu
    # Measured op curves (perf/op_curves.py): the dense weights' GEMMs (in place of mbu and
    # their kernel floors; `dense_gemms_per_layer` calls per layer) and the routed experts'
    # fused MoE layer (in place of mbu / expert_efficiency and its kernels' floors). None: the
    # constants above.
    gemm_curve: OpCurve | None = None
    moe_curve: OpCurve | None = None
    dense_gemms_per_layer: int = 0
    # The GEMM curve of the native dtype, for the dense linears a checkpoint's quantization
    # excludes (`stage_cost.is_excluded_linear`); None: gemm_curve prices them too.
    excluded_gemm_curve: OpCurve | None = None
    # MLA decode attention's measured curve over the batch (in place of kv_bandwidth_fraction
    # and the attention kernel's floor); None: the fraction above.
    attention_curve: OpCurve | None = None
    # Measured compute lines (perf/op_curves.py ComputeCurve): the dense GEMMs' and lm_head's
    # FLOPs, and the routed experts' (in place of mfu for those FLOPs; attention's stay at mfu).
    gemm_flops_curve: ComputeCurve | None = None
    moe_flops_curve: ComputeCurve | None = None
    # MLA prefill attention's measured compute line (in place of mla_extend_efficiency / mfu).
    extend_attention_curve: ComputeCurve | None = None
    # Seconds per layer and pass the dense GEMMs take beyond what the terms above price (an
    # engine release running untuned kernels on this GPU: profiles.gfx942_mla_gemm_extra_s).
    gemm_extra_s_per_layer: float = 0.0
    # A routed-expert layer's measured time by tokens where the tables hold the model's own MoE
    # shape (perf/moe_tables.py; in place of moe_curve and moe_flops_curve); None: those.
    moe_table: MoETable | None = None
    # MLA decode's two absorbed BMMs' measured time by tokens (perf/mla_bmm.py; in place of
    # their kernel floors); None: the floors.
    mla_bmm_table: MoETable | None = None


@lru_cache(maxsize=32)
def _total_params(arch: Architecture) -> int:
    """The model's parameters (elements), counted once per architecture (a plan asks per layout)."""
    return param_count(arch).total


def default_efficiency(arch: Architecture) -> Efficiency:
    """The efficiency defaults for `arch`: MBU from its size (MBU_ANCHORS), the rest named."""
    return Efficiency(mbu=default_mbu(_total_params(arch)))


def op_curves_for(
    arch: Architecture,
    hardware: HardwareSpec,
    profile: EngineProfile,
    scheme: WeightScheme,
    *,
    kv_dtype: KVDType | None = None,
    tp: int = 1,
) -> tuple[OpCurve | None, OpCurve | None, OpCurve | None]:
    """The measured (GEMM, MoE, MLA attention) curves of `arch` on `hardware` under `profile`'s
    kernel tables, for the ops it prices with them (`op_curve_ops`); None for each that no
    table measured (MLA: for `kv_dtype` at `tp`'s heads per GPU; None without `kv_dtype`)."""
    tables, ops, quant = profile.op_tables, profile.op_curve_ops, scheme.quantization
    if tables is None:
        return None, None, None
    gemm = moe = attention = None
    if "gemm" in ops:
        gemm = op_curve(hardware.id, tables, "gemm", table_format(scheme.linear, quant))
    if arch.moe is not None and "moe" in ops:
        moe = op_curve(hardware.id, tables, "moe", table_format(scheme.expert, quant))
    if arch.mla is not None and "mla" in ops and kv_dtype is not None:
        heads = mla_format(kv_dtype, arch.num_attention_heads / tp)
        attention = op_curve(hardware.id, tables, "mla", heads)
    return gemm, moe, attention


def compute_curves_for(
    arch: Architecture, hardware: HardwareSpec, profile: EngineProfile, scheme: WeightScheme
) -> tuple[ComputeCurve | None, ComputeCurve | None]:
    """The measured (GEMM, MoE) compute lines of `arch`'s weights in `scheme` on `hardware`
    under `profile`'s kernel tables, where it prices with them ("gemm_flops", "moe_flops" in
    `op_curve_ops`); None for each that no table measured."""
    tables, ops, quant = profile.op_tables, profile.op_curve_ops, scheme.quantization
    if tables is None:
        return None, None
    gemm = moe = None
    if "gemm_flops" in ops:
        gemm = compute_curve(hardware.id, tables, "gemm", table_format(scheme.linear, quant))
        if gemm is not None and _flashinfer_block_fp8(profile, scheme):
            gemm = flashinfer_block_fp8_curve(hardware.id) or gemm  # perf/flashinfer_gemm.py
    if arch.moe is not None and "moe_flops" in ops:
        moe = compute_curve(hardware.id, tables, "moe", table_format(scheme.expert, quant))
        if profile.moe_backend == "marlin" and scheme.expert is WeightDType.MXFP4:
            moe = marlin_mxfp4_curve(hardware.id) or moe  # perf/marlin_moe.py
    return gemm, moe


def _flashinfer_block_fp8(profile: EngineProfile, scheme: WeightScheme) -> bool:
    """Whether SGLang runs `scheme`'s dense block-FP8 linears on FlashInfer's groupwise GEMM
    (--fp8-gemm-backend flashinfer_trtllm)."""
    return (
        profile.engine is EngineName.SGLANG
        and profile.fp8_gemm_backend == FLASHINFER_TRTLLM
        and table_format(scheme.linear, scheme.quantization) == "fp8_block"
    )


def profile_efficiency(
    arch: Architecture,
    hardware: HardwareSpec,
    layout: Layout,
    profile: EngineProfile,
    *,
    fitted: dict[str, float] | None = None,
    scheme: WeightScheme | None = None,
    kv_dtype: KVDType | None = None,
) -> Efficiency:
    """The efficiency of `arch` on `layout` under an engine profile: per step the profile's host
    time + layers x kernels per layer x the kernel floor; measured all-reduce latencies where the
    fabric matches (NVLink custom all-reduce, or RCCL on AMD xGMI); attention and MoE
    efficiencies; MBU and the attention fraction scaled by the GPU's `hbm_factor`; measured GEMM
    and MoE curves for the weights in `scheme` (None: as shipped) where the profile's kernel
    tables have them, and (where the profile opts in) MLA decode attention's curve for
    `kv_dtype` at the layout's heads per GPU; their kernels then take no floor where the
    tables time each call with its launch (aiconfigurator's; not aiter's device times:
    `profiles.curves_carry_launch`), and every kernel's floor on an AMD GPU is HIP graph
    replay's (`kernel_floor_s`); an MLA model's decode attention on an AMD GPU takes aiter's
    measured fixed time per layer (`aiter_mla_decode_s`). `fitted`
    (`fixed_s`, `scale`) replaces the per-step time and scales the rest, as `capcliff
    calibrate` fits them."""
    fitted = fitted or {}
    scheme = WeightScheme.as_shipped(arch) if scheme is None else scheme
    gemm, moe, attention = op_curves_for(
        arch, hardware, profile, scheme, kv_dtype=kv_dtype, tp=layout.tp
    )
    gemm_flops, moe_flops = compute_curves_for(arch, hardware, profile, scheme)
    extend = None
    if arch.mla is not None and "mla_context" in profile.op_curve_ops and kv_dtype is not None:
        heads = mla_format(kv_dtype, arch.num_attention_heads / layout.tp)
        if profile.op_tables is not None:
            extend = compute_curve(hardware.id, profile.op_tables, "mla_context", heads)
    table = shape_moe_table(arch, hardware, layout, profile, scheme)
    bmm = profile_mla_bmm_table(profile, arch, hardware.id, layout=layout, scheme=scheme)
    excluded = None
    if gemm is not None and profile.op_tables is not None:
        native_format = table_format(scheme.native, None)
        excluded = op_curve(hardware.id, profile.op_tables, "gemm", native_format)
    covered = 0
    if curves_carry_launch(hardware.id, profile.op_tables):
        covered = curve_kernels_per_layer(
            arch,
            gemm=gemm is not None,
            moe=moe is not None or table is not None,
            attention=attention is not None,
        ) + (MLA_BMM_KERNELS if bmm is not None else 0)
    per_layer_s = (kernels_per_layer(arch, tp=layout.tp) - covered) * kernel_floor_s(
        arch, hardware, profile
    )
    if attention is None:
        per_layer_s += aiter_mla_decode_s(arch, hardware, profile)
    overhead = dp_host_overhead_s(profile, layout) + arch.num_layers * per_layer_s
    mla = arch.mla is not None
    kv_fraction = profile.mla_attention_efficiency if mla else profile.gqa_attention_efficiency
    in_domain = layout.tp <= hardware.scaleup_domain_gpus
    curve: tuple[tuple[float, float], ...] = ()
    if hardware.id in MEASURED_FABRICS and in_domain:
        curve = allreduce_curve(profile.allreduce_kernel, tp=layout.tp)
    elif hardware.id in RCCL_MEASURED_FABRICS and in_domain:
        curve = rccl_allreduce_curve(tp=layout.tp)
    elif in_domain and fuses_allreduce(profile, layout, arch):
        curve = lamport_allreduce_curve(hardware.id, tp=layout.tp)
    elif in_domain and runs_trtllm_allreduce(profile, layout):
        curve = trtllm_allreduce_curve(hardware.id, tp=layout.tp)
    factor = hbm_factor(hardware)
    block_fp8 = table_format(scheme.linear, scheme.quantization) == "fp8_block"
    untuned = mla and block_fp8 and hardware.id in GFX942_HARDWARE
    return Efficiency(
        mbu=min(1.0, default_mbu(_total_params(arch)) * factor),
        step_overhead_s=fitted.get("fixed_s", overhead),
        kv_bandwidth_fraction=None if kv_fraction is None else min(1.0, kv_fraction * factor),
        expert_efficiency=profile.moe_small_batch_efficiency,
        allreduce_curve=curve,
        variable_scale=fitted.get("scale", 1.0),
        mla_extend_efficiency=profile.mla_extend_efficiency if mla else None,
        gemm_curve=gemm,
        moe_curve=moe,
        dense_gemms_per_layer=dense_gemms_per_layer(arch),
        excluded_gemm_curve=excluded,
        attention_curve=attention,
        gemm_flops_curve=gemm_flops,
        moe_flops_curve=moe_flops,
        extend_attention_curve=extend,
        gemm_extra_s_per_layer=profile.gfx942_mla_gemm_extra_s if untuned else 0.0,
        moe_table=table,
        mla_bmm_table=bmm,
    )


def kernel_floor_s(arch: Architecture, hardware: HardwareSpec, profile: EngineProfile) -> float:
    """Seconds each kernel of a decode layer costs beyond its bytes and FLOPs: the profile's
    floor (its MLA figure for MLA models where it has one); on an AMD GPU with HIP graph
    replay's measured per-node time in place of CUDA's (profiles.hip_kernel_floor_s)."""
    floor = profile.kernel_floor_s
    if arch.mla is not None and profile.mla_kernel_floor_s is not None:
        floor = profile.mla_kernel_floor_s
    return hip_kernel_floor_s(floor) if hardware.vendor == "AMD" else floor


def aiter_mla_decode_s(arch: Architecture, hardware: HardwareSpec, profile: EngineProfile) -> float:
    """Seconds per decoder layer and pass that aiter's MLA decode op adds beyond its KV bytes and
    the one kernel floor decode attention already takes: its measured fixed time (the profile's
    `aiter_mla_decode_floor_s`, or AITER_MLA_DECODE_FLOOR_S for the GPU) plus the floor of its
    second kernel, the split reduce; 0 for a model without MLA, a GPU other than AMD's, a
    profile that does not run aiter's decode (0) or a GPU with no figure."""
    if arch.mla is None or hardware.vendor != "AMD":
        return 0.0
    floor = profile.aiter_mla_decode_floor_s
    if floor is None:
        floor = AITER_MLA_DECODE_FLOOR_S.get(hardware.id, 0.0)
    return floor + kernel_floor_s(arch, hardware, profile) if floor > 0 else 0.0


def profile_mla_bmm_table(
    profile: EngineProfile,
    arch: Architecture,
    hardware_id: str,
    *,
    layout: Layout,
    scheme: WeightScheme,
) -> MoETable | None:
    """MLA decode's two absorbed BMMs' measured seconds by tokens (perf/mla_bmm.py) under
    `profile`'s kernel tables, where the profile prices with them ("mla_bmm" in
    `op_curve_ops`); None elsewhere."""
    if "mla_bmm" not in profile.op_curve_ops:
        return None
    return mla_bmm_table(arch, hardware_id, profile.op_tables, layout, scheme)


def shape_moe_table(
    arch: Architecture,
    hardware: HardwareSpec,
    layout: Layout,
    profile: EngineProfile,
    scheme: WeightScheme,
) -> MoETable | None:
    """The measured MoE layer table of `arch`'s own expert shape for `layout`'s MoE split under
    `profile`'s kernel tables, where the profile prices with it ("moe_table" in `op_curve_ops`);
    None under attention DP (the lockstep group prices the MoE layers there) or where none was
    measured."""
    if profile.op_tables is None or "moe_table" not in profile.op_curve_ops:
        return None
    if layout.attention_dp:
        return None
    fmt = table_format(scheme.expert, scheme.quantization)
    return moe_table(
        arch, hardware.id, profile.op_tables, fmt,
        moe_tp=layout.moe_tp, ep=layout.ep, backend=profile.moe_backend,
    )  # fmt: skip
