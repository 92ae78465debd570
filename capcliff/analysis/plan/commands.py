"""The engine command lines `plan` prints for its recommendation: the served model (a quantized
checkpoint from the catalog, else online quantization), the context length, the cache and offload
settings, and the vLLM/SGLang flags with the traps they contain."""

from __future__ import annotations

from typing import TYPE_CHECKING

from capcliff.analysis.deployment import Deployment
from capcliff.analysis.kv_cache_default import auto_takes_checkpoint_kv, vllm_forces_fp8
from capcliff.analysis.offload import parse_offload
from capcliff.analysis.plan.types import Recommendation
from capcliff.analysis.served_weights import (
    cast_dtype,
    engines_load,
    online_quantization,
    quantized_checkpoint,
)
from capcliff.analysis.setting_refusals import sglang_fp4_refusal
from capcliff.catalog.layout import parse_layout
from capcliff.errors import InputError
from capcliff.memory.budget import EngineName
from capcliff.memory.layout_memory import LayoutMemory
from capcliff.memory.weights import WeightScheme
from capcliff.releases import parse_version
from capcliff.units import KVDType

if TYPE_CHECKING:
    from capcliff.analysis.flags import Deployment as Served
    from capcliff.analysis.plan.inputs import PlanInputs
    from capcliff.catalog.catalogs import Model


# Stands in for the model in engine command lines when a user's config.json names no HF repo.
MODEL_PLACEHOLDER = "HF_REPO_ID"


def served_model(dep: Deployment, *, local: bool) -> str:
    """What the engine command line loads: the HF repo id; the model directory the user gave
    when `local`; MODEL_PLACEHOLDER when the config names no repo."""
    if local:
        if not dep.model.local_path:
            raise InputError("serve_local_path: give the model as a directory to serve it locally")
        return dep.model.local_path
    return dep.model.hf_repo if dep.model.hf_repo else MODEL_PLACEHOLDER


def served_context(dep: Deployment, memory: LayoutMemory, planned: int) -> tuple[int, str]:
    """--max-model-len for the engine line and which it is.

    Given: as given. Else the model's context when serving it changes nothing simulated (the
    engine is not vLLM V0, whose budget grows with it, and the layout's KV pool and fit are the
    same as at `planned`, the workload's longest request rounded up): then longer prompts than
    the sample's are served, not refused. Else `planned`, with a note that longer prompts are
    refused."""
    context = dep.model.arch.context_for(dep.settings.engine.value)
    if dep.settings.max_model_len is not None:
        return planned, f"--max-model-len {planned}: as given"
    note = (
        f"--max-model-len {planned}: the workload's longest request rounded up to whole KiB "
        "tokens; the engine refuses longer prompts"
    )
    if context is None or context <= planned or dep.settings.engine is EngineName.VLLM_V0:
        return planned, note
    wide = dep.memory(memory.layout, context)
    if wide.fits != memory.fits or wide.kv_capacity_tokens_total != memory.kv_capacity_tokens_total:
        return planned, f"{note} (the model's context, {context:,}, would change the KV pool)"
    return context, (
        f"--max-model-len {context}: the model's context (config.json, by "
        f"{dep.settings.engine.value}'s rule); the workload's longest request needs {planned:,} "
        "and the KV pool is the same at both"
    )


def _auto_checkpoint_kv(dep: Deployment, checkpoint: Model | None) -> frozenset[str]:
    """The engines (vllm, sglang, trtllm) whose `--kv-cache-dtype auto` would store the served
    checkpoint's own KV quantisation where the plan sized a 16-bit cache: their lines must name
    the 16-bit dtype (memory/kv_default.py). A catalog checkpoint served for quantized weights
    counts as shipped (its own card's KV quantisation, at the engines' latest releases)."""
    if dep.kv_dtype is KVDType.FP8:
        return frozenset()
    if checkpoint is not None:
        arch, settings = checkpoint.arch, dep.settings.model_copy(update={"weight_dtype": None})
    else:
        arch, settings = dep.model.arch, dep.settings
    settings = settings.model_copy(update={"kv_cache_dtype": None})
    v0 = settings.engine is EngineName.VLLM_V0  # the vllm line is then V0's
    lines = {
        "vllm": EngineName.VLLM_V0 if v0 else EngineName.VLLM,
        "sglang": EngineName.SGLANG,
        "trtllm": EngineName.TRTLLM,
    }
    if vllm_forces_fp8(arch, settings):  # its line cannot name a 16-bit cache (unexpressed)
        del lines["vllm"]
    return frozenset(k for k, e in lines.items() if auto_takes_checkpoint_kv(arch, settings, e))


def _vllm_forced_fp8(dep: Deployment, checkpoint: Model | None) -> bool:
    """Whether the vllm line stores the checkpoint's FP8 KV cache whatever its flag, where the
    plan sized a 16-bit cache (a compressed-tensors kv_cache_scheme: memory/kv_default.py)."""
    if dep.kv_dtype is KVDType.FP8:
        return False
    arch = dep.model.arch if checkpoint is None else checkpoint.arch
    settings = dep.settings.model_copy(update={"kv_cache_dtype": None})
    if checkpoint is not None:
        settings = settings.model_copy(update={"weight_dtype": None})
    return vllm_forces_fp8(arch, settings)


# the engine line each engine's releases are printed on
LINE_OF_ENGINE = {
    EngineName.VLLM: "vllm",
    EngineName.VLLM_V0: "vllm",
    EngineName.SGLANG: "sglang",
    EngineName.TRTLLM: "trtllm",
}


def line_releases(dep: Deployment) -> tuple[tuple[str, tuple[int, int, int]], ...]:
    """The release the planned engine's line is for (`--engine-version`); the other engines'
    lines are for their latest modelled releases."""
    version = dep.settings.engine_version
    if version is None:
        return ()
    return ((LINE_OF_ENGINE[dep.settings.engine], parse_version(version)),)


def engine_flags(
    dep: Deployment,
    chosen: tuple[LayoutMemory, int],
    rec: Recommendation,
    inputs: PlanInputs,
    model: str,
) -> tuple[dict[str, str], list[str]]:
    """vLLM and SGLang command lines for the recommendation (`chosen`: its layout's memory and
    sweet-spot concurrency), and the traps they contain."""
    from capcliff.analysis.deployment import sglang_default_fraction
    from capcliff.analysis.flags import (
        Deployment,
        flag_warnings,
        sglang_command,
        unexpressed,
        vllm_command,
    )
    from capcliff.analysis.line_gaps import line_gaps

    memory, sweet_spot = chosen
    layout = parse_layout(rec.layout)
    stage = memory.stages[0]
    checkpoint = quantized_checkpoint(dep)
    if checkpoint is not None and model != MODEL_PLACEHOLDER:
        model = checkpoint.hf_repo
    context, context_note = served_context(dep, memory, inputs.max_model_len)
    offload = parse_offload(dep.settings.offload) if dep.settings.offload else {}
    caching = dep.settings.prefix_caching
    served = Deployment(
        model=model,
        layout=layout,
        max_num_seqs=rec.max_num_seqs,
        max_num_batched_tokens=max(inputs.config.max_num_batched_tokens, rec.max_num_seqs),
        chunked_prefill_size=inputs.config.max_num_batched_tokens,
        gpus_per_node=dep.hardware.gpus_per_node,
        max_model_len=context,
        gpu_memory_utilization=dep.settings.gpu_memory_utilization,
        mem_fraction_static=sglang_default_fraction(dep, layout, stage.total_memory_bytes)
        if dep.settings.mem_fraction_static is None
        else dep.settings.mem_fraction_static,
        kv_cache_dtype="fp8" if dep.kv_dtype is KVDType.FP8 else "auto",
        kv_auto_checkpoint=_auto_checkpoint_kv(dep, checkpoint),
        kv_vllm_forced_fp8=_vllm_forced_fp8(dep, checkpoint),
        moe=dep.model.arch.moe is not None,
        mla=dep.model.arch.mla is not None,
        quantization=None if checkpoint is not None else online_quantization(dep),
        dtype=cast_dtype(dep),
        kv_cache_memory_bytes=dep.settings.kv_cache_memory,
        prefix_caching=None if caching is None else caching == "on",
        offload_cpu_bytes=offload.get("cpu", 0),
        offload_nvme_bytes=offload.get("nvme", 0),
        offload_write_back=dep.settings.offload_policy == "write-back",
        block_size=dep.settings.block_size,
        enforce_eager=dep.settings.enforce_eager,
        all2all_backend=dep.settings.all2all_backend.value,
        adp_balance=dep.adp_balance,
        vllm_v0=dep.settings.engine is EngineName.VLLM_V0,
        enable_chunked_prefill=dep.settings.enable_chunked_prefill,
        rope_scaling=dep.settings.rope_scaling,
        speculative=None
        if dep.speculation is None
        else (
            dep.speculation.method.value,
            dep.speculation.num_speculative_tokens,
            dep.speculation.draft,
        ),
        spec_overlap=bool(dep.settings.spec_overlap),
        releases=line_releases(dep),
    )
    warnings = flag_warnings(
        served,
        sweet_spot=sweet_spot,
        one_request_fits=memory.fits,
        graphs_fit=all(s.headroom_bytes >= 0 for s in memory.stages),
    )
    warnings.append(context_note)
    warnings += _cap_memory_note(dep, memory, rec.max_num_seqs, inputs.max_model_len)
    if checkpoint is not None:
        warnings.append(
            f"serving {checkpoint.hf_repo} (catalog {checkpoint.id}), the checkpoint already "
            f"quantized to {dep.scheme.linear.value}; the plan quantized {dep.model.id}'s "
            f"weights: plan {checkpoint.id} for its exact scales"
        )
    elif served.quantization is not None:
        warnings.append(
            f"--quantization {served.quantization}: the catalog has no {dep.scheme.linear.value} "
            f"checkpoint of {dep.model.id}; the engines quantize its weights while loading "
            "(a published quantized checkpoint of the model you serve is usually better)"
        )
    shipped = WeightScheme.as_shipped(dep.model.arch)
    if not engines_load(dep):
        warnings.append(
            f"--weight-dtype {dep.scheme.linear.value}: the engines cannot quantize "
            f"{shipped.label()} weights to it while loading; serve a checkpoint quantized "
            f"to {dep.scheme.linear.value}"
        )
    if model == MODEL_PLACEHOLDER:
        warnings.append(
            f"the config names no HF repo (_name_or_path): replace {MODEL_PLACEHOLDER} in the "
            "commands, or pass --serve-local-path with a model directory"
        )
    warnings += unexpressed(served, "vllm") + unexpressed(served, "sglang")
    warnings += line_gaps(served, "vllm") + line_gaps(served, "sglang")
    warnings += _simulated_only(dep)
    commands = {"vllm": vllm_command(served)}
    if (refused := sglang_fp4_refusal(dep.scheme, dep.hardware)) is None:
        commands["sglang"] = sglang_command(served)
    else:
        warnings.append(f"sglang: no line: {refused}")
    if dep.settings.engine is EngineName.TRTLLM:  # the budget planned is TensorRT-LLM's
        commands.update(_trtllm(served, dep.settings.free_gpu_memory_fraction, warnings))
        if served.dtype is not None:  # tensorrt_llm/llmapi/llm_args.py BaseLlmArgs.dtype
            warnings.append(
                f"trtllm-serve: weights cast to {served.dtype} are dtype: {served.dtype} in "
                "--extra_llm_api_options"
            )
        warnings += unexpressed(served, "trtllm")
    return commands, warnings


def _cap_memory_note(dep: Deployment, memory: LayoutMemory, cap: int, length: int) -> list[str]:
    """When the engine's memory budget at `--max-num-seqs cap` (its profile run and CUDA-graph
    batch sizes follow it) holds another KV pool than the default cap the plan sized: said."""
    if dep.settings.max_num_seqs is not None:
        return []

    settings = dep.settings.model_copy(update={"max_num_seqs": cap})
    capped = dep.on(dep.hardware, settings).memory(memory.layout, length)
    # per replica, as the cap and the plan's "KV tok/rep" column are (2026-12-07, h-user: a
    # dp4-tp2 plan printed the four replicas' 5,784,576 beside a table of 1,446,144 a replica)
    before = memory.kv_capacity_tokens_per_replica
    after = capped.kv_capacity_tokens_per_replica
    if before == after or not before:
        return []
    where = " per replica" if memory.layout.dp > 1 else ""
    return [
        f"--max-num-seqs {cap}: the plan sized KV at the engine's default cap; at {cap} the "
        f"engine's budget holds {after:,} KV tokens{where}, not {before:,} "
        f"({after / before - 1:+.1%}); pass --max-num-seqs to plan that pool"
    ]


def _simulated_only(dep: Deployment) -> list[str]:
    """Simulator settings that are no engine flag: said, so the lines are not read as all."""
    s = dep.settings
    said = []
    if s.routing.value != "round-robin":
        said.append(
            f"--routing {s.routing.value} was simulated: the engines' DP routing is set by the "
            "load balancer in front of them, not by these lines"
        )
    if s.preemption.value != "recompute":
        said.append(
            f"--preemption {s.preemption.value} was simulated: vLLM V1 and SGLang always "
            "recompute preempted requests; no flag in these lines swaps"
        )
    if s.policy is not None:
        said.append(f"--policy {s.policy} was simulated: no engine flag in these lines sets it")
    if dep.request_overhead_s > 0:
        said.append(
            f"a request overhead of {dep.request_overhead_s * 1e3:.1f} ms was simulated in every "
            "TTFT: the front end and the client's time, which no engine flag sets"
        )
    return said


def _trtllm(served: Served, fraction: float, warnings: list[str]) -> dict[str, str]:
    """The TensorRT-LLM server of one replica (an attention-DP group: one server, its options
    file setting `enable_attention_dp`), and what its flags cannot say."""
    from capcliff.analysis.flags import TRTLLM_OPTIONS_FILE, trtllm_command

    lay = served.layout
    if lay.attention_dp:
        # 2026-12-08, h-user3: DeepSeek-R1's recommended dp8-ep8 under TensorRT-LLM printed
        # vLLM and SGLang lines and none for the engine planned
        warnings.append(
            f"trtllm-serve: {TRTLLM_OPTIONS_FILE} (--extra_llm_api_options) holds "
            f"`enable_attention_dp: true`: the {lay.dp} ranks run attention on their own "
            f"requests, --max_batch_size {served.max_num_seqs} each"
        )
    if served.kv_cache_dtype == "fp8":
        warnings.append("trtllm-serve: an FP8 KV cache is kv_cache_config.dtype: fp8 in "
                        "--extra_llm_api_options")  # fmt: skip
    one_server = lay.dp == 1 or lay.attention_dp
    key = "trtllm" if one_server else f"trtllm (one server per replica, {lay.dp} of them)"
    return {key: trtllm_command(served, fraction)}
