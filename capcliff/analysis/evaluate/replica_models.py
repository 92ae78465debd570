"""A fitting layout's replica as the simulator sees it: its KV capacity, its step-time model, the
profile label its predictions assume, and the analytic cliff of a workload on it."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace

from capcliff.analysis.deployment import Deployment
from capcliff.analysis.evaluate.solver import analytic_cliff_percentile
from capcliff.memory.budget import EngineName
from capcliff.memory.deepep import AllToAllBackend
from capcliff.memory.draft import draft_layout
from capcliff.memory.layout_memory import LayoutMemory
from capcliff.perf.communication import MoEExchange
from capcliff.perf.error_band import error_band, speculative_band
from capcliff.perf.flashinfer_gemm import FLASHINFER_TRTLLM, flashinfer_block_fp8_curve
from capcliff.perf.marlin_moe import marlin_mxfp4_curve
from capcliff.perf.moe_tables import has_table_shape, moe_table_source
from capcliff.perf.op_curves import table_format
from capcliff.perf.profiles import (
    FITTED_TERMS,
    EngineProfile,
    engine_profile,
    model_formats,
    profile_label,
    step_profile,
)
from capcliff.perf.speculation import SPEC_ASSUMPTIONS
from capcliff.perf.stage_cost import FLOPS_PER_MAC
from capcliff.perf.step_time import SpecStep, StepTimeModel, step_time_model
from capcliff.report_header import ErrorBandOut
from capcliff.sim.config import KVCapacity
from capcliff.sim.traffic.workload import Requests
from capcliff.units import WeightDType, weight_bytes_per_element

CLIFF_PERCENTILE = 99.0


def deployment_profile(
    dep: Deployment, terms: Mapping[str, float], engine: EngineName | None = None
) -> tuple[EngineProfile, dict[str, float]]:
    """The engine profile that prices `dep`'s steps (`engine`, else its settings' engine, at its
    release) with `terms` applied and its MoE backend (--moe-backend); the fitted terms apart
    (`step_profile`)."""
    engine = dep.settings.engine if engine is None else engine
    profile, fitted = step_profile(engine, terms, dep.settings.engine_version)
    if dep.settings.moe_backend is not None:
        profile = replace(profile, moe_backend=dep.settings.moe_backend)
    if dep.settings.fp8_gemm_backend is not None:
        profile = replace(profile, fp8_gemm_backend=dep.settings.fp8_gemm_backend)
    return profile, fitted


def replica_models(
    dep: Deployment, memory: LayoutMemory, step_terms: dict[str, float] | None = None
) -> tuple[KVCapacity, StepTimeModel]:
    """A fitting layout's KV capacity per replica and its step-time model under the budget's
    engine profile, with the deployment's step-time terms (BudgetSettings.step_time_terms) or
    `step_terms` in their place."""
    engine = memory.stages[0].engine if memory.stages else EngineName.VLLM
    terms = dict(dep.budget.step_time_terms) if step_terms is None else step_terms
    profile, fitted = deployment_profile(dep, terms, engine)
    # A DeepEP backend dispatches and combines; otherwise the layout's default exchange.
    deepep = dep.settings.all2all_backend is not AllToAllBackend.NONE
    steps = step_time_model(
        dep.model.arch, dep.hardware, memory.layout, scheme=dep.scheme, kv_dtype=dep.kv_dtype,
        profile=profile, fitted=fitted, exchange=MoEExchange.ALL_TO_ALL if deepep else None,
    )  # fmt: skip
    if dep.speculation is not None and dep.acceptance is not None:
        # the host time a non-overlapped speculative worker exposes, in every step it runs
        host_s = steps.step_overhead_s + dep.speculative_host_s
        floor_s = steps.extend_floor_s + dep.speculative_host_s if steps.extend_floor_s else 0.0
        steps = replace(
            steps, step_overhead_s=host_s, extend_floor_s=floor_s,
            spec=_spec_step(dep, memory, steps, profile, fitted, deepep),
        )  # fmt: skip
    overlap = dep.overlap_schedule(steps.overlap_schedule)[0]
    if overlap != steps.overlap_schedule:
        steps = replace(steps, overlap_schedule=overlap)
    if dep.kernels is not None:  # --step-source kernels: aiconfigurator's tables price steps
        from capcliff.perf.measured_kernels import kernel_step_model

        steps = kernel_step_model(steps, memory.layout, dep.kernels)
    return dep.capacity(memory), steps


def _spec_step(
    dep: Deployment,
    memory: LayoutMemory,
    steps: StepTimeModel,
    profile: EngineProfile,
    fitted: dict[str, float] | None,
    deepep: bool,
) -> SpecStep:
    """The speculative terms of a replica: K draft passes of the draft's own step model (on the
    target's TP, one stage; no engine step overhead of its own, `perf/speculation.py`) and the
    expected tokens per step."""
    assert dep.speculation is not None and dep.acceptance is not None
    draft = dep.draft
    draft_steps = None
    if draft is not None:
        model = step_time_model(
            draft.arch, dep.hardware, draft_layout(memory.layout), scheme=dep.scheme,
            kv_dtype=dep.kv_dtype, profile=profile, fitted=fitted,
            exchange=MoEExchange.ALL_TO_ALL if deepep else None,
        )  # fmt: skip
        # the fusion projection (eh_proj / fc), replicated, in the activation dtype
        fc_bytes = float(draft.fc_elements * weight_bytes_per_element(dep.scheme.native))
        draft_steps = replace(
            model, step_overhead_s=0.0, eager_floor_s=0.0, host_fixed_s=0.0, host_per_seq_s=0.0,
            weight_bytes=model.weight_bytes + fc_bytes,
            flops_per_token=model.flops_per_token + FLOPS_PER_MAC * draft.fc_elements,
        )  # fmt: skip
    return SpecStep(
        k=dep.speculation.num_speculative_tokens,
        tokens_per_step=dep.acceptance.tokens_per_step,
        draft=draft_steps,
    )


# --enforce-eager (SGLang's --disable-cuda-graph) frees the CUDA-graph pool, which the budget
# models (memory/engines.py), but no step term prices launching every op of a step from the host:
# the profiles' curves were measured with graphs. Eager decode is far slower where launches bind
# (vllm-project/vllm-omni issue #7960: Qwen2.5-Omni-7B on 2 x A800, thinker TPOT 22-23 ms eager
# against 13 ms graphed); until a step term prices it, the answer says so (fuzz_random seed 43:
# `plan llama-3.1-8b --enforce-eager` printed graphs' 3.95 requests/s and 17.9 ms).
EAGER_CAVEAT = (
    "; --enforce-eager: KV without the CUDA-graph pool, but steps priced as graphed (eager "
    "launches not modeled: slower decode, e.g. 22-23 vs 13 ms TPOT in vllm-omni #7960)"
)


def step_label(dep: Deployment) -> str:
    """The step-time profile a deployment's predictions assume: engine, release, modeled or
    calibrated (`profiles.profile_label`); or the measured-kernel tables that price them."""
    if dep.kernels is not None:
        from capcliff.perf.measured_kernels import source_label

        return source_label(dep.kernels)
    terms = dict(dep.budget.step_time_terms)
    quant = dep.scheme.quantization
    expert = table_format(dep.scheme.expert, quant) if dep.model.arch.moe is not None else None
    label = profile_label(
        dep.settings.engine,
        terms,
        dep.settings.engine_version,
        hardware_id=dep.hardware.id,
        formats=model_formats(table_format(dep.scheme.linear, quant), expert),
    )
    label += _moe_rows_label(dep)
    label += _fp8_gemm_label(dep)
    label += _overlap_label(dep)
    if dep.settings.enforce_eager:
        label += EAGER_CAVEAT
    every = dep.settings.scheduler_recv_interval or 1
    if every > 1:
        label += f"; new requests received every {every} decode steps (--scheduler-recv-interval)"
    if dep.adp_balance is not None:
        timeout, wait = dep.adp_balance
        label += (
            f"; attention-DP balance: new requests wait for every rank to have one, up to "
            f"{timeout} iterations (+{wait} batching; attention-DP layouts only)"
        )
    overhead_s, how = dep.request_overhead
    if overhead_s > 0:
        if how == "engine default":
            how = "measured front end and client, engine default; --request-overhead-ms sets it"
        label += f"; request overhead {overhead_s * 1e3:.1f} ms in every TTFT ({how})"
    spec, accepted = dep.speculation, dep.acceptance
    if spec is None or accepted is None:
        return label
    host = (
        f"; no overlap scheduler: {dep.speculative_host_s * 1e3:.1f} ms host time per step "
        "(SGLANG_ENABLE_SPEC_V2 unset; --spec-overlap if the server sets it)"
        if dep.speculative_host_s > 0
        else ""
    )
    return (
        f"{label}; speculative {spec.method.value}:{spec.num_speculative_tokens}, "
        f"{accepted.tokens_per_step:.2f} tokens/step ({accepted.source}){host}; "
        f"{SPEC_ASSUMPTIONS}"
    )


def _moe_rows_label(dep: Deployment) -> str:
    """The label's part naming the measured MoE rows that price the model's expert layers, where
    the deployment's profile uses them ("moe_table"); "" elsewhere."""
    profile = engine_profile(dep.settings.engine, dep.settings.engine_version)
    if profile.op_tables is None or "moe_table" not in profile.op_curve_ops:
        return ""
    fmt = table_format(dep.scheme.expert, dep.scheme.quantization)
    backend = dep.settings.moe_backend
    if backend == "marlin" and dep.scheme.expert is WeightDType.MXFP4:
        applies = marlin_mxfp4_curve(dep.hardware.id) is not None
        return "; MXFP4 experts on vLLM's Marlin MoE line" if applies else ""
    source = moe_table_source(dep.model.arch, dep.hardware.id, profile.op_tables, fmt, backend)
    if backend is not None and not source and has_table_shape(dep.model.arch):
        return f"; MoE layers on the fitted MoE lines (no measured rows of --moe-backend {backend})"
    return source


def _fp8_gemm_label(dep: Deployment) -> str:
    """The label's part naming FlashInfer's measured line where it prices the dense block-FP8
    GEMMs' FLOPs (--fp8-gemm-backend flashinfer_trtllm on an sm100 GPU); "" elsewhere."""
    if (
        dep.settings.fp8_gemm_backend != FLASHINFER_TRTLLM
        or dep.settings.engine is not EngineName.SGLANG
    ):
        return ""
    profile = engine_profile(dep.settings.engine, dep.settings.engine_version)
    block = table_format(dep.scheme.linear, dep.scheme.quantization) == "fp8_block"
    gemm = "gemm_flops" in profile.op_curve_ops and profile.op_tables is not None
    if not (block and gemm and flashinfer_block_fp8_curve(dep.hardware.id) is not None):
        return ""
    return "; dense block-FP8 GEMM FLOPs on FlashInfer's measured line (sglang PR #13528)"


def _overlap_label(dep: Deployment) -> str:
    """The label's overlap-scheduler part: what the simulator's admission assumes."""
    profile = engine_profile(dep.settings.engine, dep.settings.engine_version)
    on, how = dep.overlap_schedule(profile.overlap_schedule)
    if how == "set":
        how = "--overlap-schedule" if on else "--no-overlap-schedule"
    elif how == "engine default":
        dpa = " (off under DP attention)" if profile.dp_attention_host_overhead_s else ""
        how = f"modeled, engine default{dpa}; --no-overlap-schedule turns it off"
    if not on:  # the speculative worker's own label part says so
        return f"; no overlap scheduler ({how})" if how.startswith("--") else ""
    return f"; overlap scheduler: a request arriving during step N runs from step N + 2 ({how})"


def band_of(dep: Deployment, hardware_id: str | None = None) -> ErrorBandOut:
    """The held-out error band of a deployment's figures: its engine on its GPU (or on
    `hardware_id`, as a fleet line on another GPU type prices it), calibrated when its step
    terms were fitted, and only on its own GPU (a calibration is of one deployment)."""
    on = dep.hardware.id if hardware_id is None else hardware_id
    fitted = any(k in FITTED_TERMS for k in dict(dep.budget.step_time_terms))
    calibrated = fitted and on == dep.hardware.id
    band = error_band(dep.settings.engine.value, on, calibrated=calibrated)
    if dep.speculation is not None:
        band = speculative_band(dep.settings.engine.value, band)
        calibrated = False
    return ErrorBandOut(
        throughput=band.throughput, tpot=band.tpot, ttft=band.ttft, rows=band.rows,
        scope=band.scope, calibrated=calibrated,
        advice="" if calibrated else band.calibration_advice(),
        text=band.describe() + ("; measured for the roofline, not the kernels source"
                                if dep.kernels is not None else ""),
    )  # fmt: skip


def p99_analytic_cliff(requests: Requests, capacity: KVCapacity, dp: int) -> int:
    """Requests at their p99 peak KV that all replicas hold at once."""
    return analytic_cliff_percentile(
        requests,
        blocks_per_replica=capacity.blocks,
        block_size=capacity.block_size,
        percentile=CLIFF_PERCENTILE,
        dp=dp,
    )
