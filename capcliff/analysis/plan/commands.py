"""The engine command lines `plan` prints for its recommendation: the served model, online
quantization, and the vLLM/SGLang flags with the traps they contain."""

from __future__ import annotations

from typing import TYPE_CHECKING

from capcliff.analysis.deployment import Deployment
from capcliff.analysis.plan.types import Recommendation
from capcliff.catalog.layout import parse_layout
from capcliff.errors import InputError
from capcliff.memory.budget import EngineName
from capcliff.memory.layout_memory import LayoutMemory
from capcliff.memory.weights import WeightScheme
from capcliff.units import KVDType, WeightDType

if TYPE_CHECKING:
    from capcliff.analysis.flags import Deployment as Served
    from capcliff.analysis.plan.inputs import PlanInputs


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


def online_quantization(dep: Deployment) -> str | None:
    """The engines' flag value when the planned weights are FP8 but the checkpoint ships wider:
    vLLM and SGLang quantize BF16/FP16 weights to FP8 while loading (`--quantization fp8`,
    dynamic per-tensor scales). None otherwise."""
    shipped = WeightScheme.as_shipped(dep.model.arch)
    if dep.scheme == shipped or dep.scheme.linear is not WeightDType.FP8:
        return None
    return "fp8" if shipped.linear in (WeightDType.BF16, WeightDType.FP16) else None


def engine_flags(
    dep: Deployment,
    chosen: tuple[LayoutMemory, int],
    rec: Recommendation,
    inputs: PlanInputs,
    model: str,
) -> tuple[dict[str, str], list[str]]:
    """vLLM and SGLang command lines for the recommendation (`chosen`: its layout's memory and
    sweet-spot concurrency), and the traps they contain."""
    from capcliff.analysis.flags import Deployment, flag_warnings, sglang_command, vllm_command
    from capcliff.memory.engines import sglang_mem_fraction_static

    memory, sweet_spot = chosen
    layout = parse_layout(rec.layout)
    stage = memory.stages[0]
    served = Deployment(
        model=model,
        layout=layout,
        max_num_seqs=rec.max_num_seqs,
        max_num_batched_tokens=max(inputs.config.max_num_batched_tokens, rec.max_num_seqs),
        max_model_len=inputs.max_model_len,
        gpu_memory_utilization=dep.settings.gpu_memory_utilization,
        mem_fraction_static=sglang_mem_fraction_static(
            stage.total_memory_bytes, tp=layout.tp, pp=layout.pp
        )
        if dep.settings.mem_fraction_static is None
        else dep.settings.mem_fraction_static,
        kv_cache_dtype="fp8" if dep.kv_dtype is KVDType.FP8 else "auto",
        moe=dep.model.arch.moe is not None,
        mla=dep.model.arch.mla is not None,
        quantization=online_quantization(dep),
    )
    warnings = flag_warnings(
        served,
        sweet_spot=sweet_spot,
        one_request_fits=memory.fits,
        graphs_fit=all(s.headroom_bytes >= 0 for s in memory.stages),
    )
    shipped = WeightScheme.as_shipped(dep.model.arch)
    if dep.scheme != shipped and served.quantization is None:
        warnings.append(
            f"--weight-dtype {dep.scheme.linear.value}: the engines cannot quantize "
            f"{shipped.linear.value} weights to it while loading; serve a checkpoint quantized "
            f"to {dep.scheme.linear.value}"
        )
    if model == MODEL_PLACEHOLDER:
        warnings.append(
            f"the config names no HF repo (_name_or_path): replace {MODEL_PLACEHOLDER} in the "
            "commands, or pass --serve-local-path with a model directory"
        )
    commands = {"vllm": vllm_command(served), "sglang": sglang_command(served)}
    if dep.settings.engine is EngineName.TRTLLM:  # the budget planned is TensorRT-LLM's
        commands.update(_trtllm(served, dep.settings.free_gpu_memory_fraction, warnings))
    return commands, warnings


def _trtllm(served: Served, fraction: float, warnings: list[str]) -> dict[str, str]:
    """The TensorRT-LLM server of one replica (none for attention DP, which its options file
    sets), and what its flags cannot say."""
    from capcliff.analysis.flags import trtllm_command

    lay = served.layout
    if lay.attention_dp:
        warnings.append(
            "TensorRT-LLM attention DP: set enable_attention_dp in --extra_llm_api_options; "
            "no trtllm-serve line is printed for it"
        )
        return {}
    if served.kv_cache_dtype == "fp8":
        warnings.append("trtllm-serve: an FP8 KV cache is kv_cache_config.dtype: fp8 in "
                        "--extra_llm_api_options")  # fmt: skip
    key = "trtllm" if lay.dp == 1 else f"trtllm (one server per replica, {lay.dp} of them)"
    return {key: trtllm_command(served, fraction)}
