"""What a deployment refuses: settings given that it would drop unsaid.

A setting another engine reads (`refuse_other_engines_settings`), an MoE setting on a dense model
(`refuse_moe_settings_on_dense`), TensorRT-LLM's attention-DP balance without its engine or
attention DP (`check_adp_balance`), a KV transfer cost without disagg (`refuse_disagg_only`), and
the warning for offload tiers nothing looks up (`unused_tiers`), and a driver-reported memory
given for more than one GPU type (`refuse_total_memory_across_gpus`), an engine on GPUs it does not
run on (`refuse_engine_on_vendor`), a chunked-prefill switch the engine is not simulated with
(`refuse_chunked_prefill_switch`), a token budget below the running cap where the decodes share
it (`refuse_budget_below_seats`), and why SGLang cannot load FP4 weights on a GPU
(`sglang_fp4_refusal`). Each refusal is one line naming the field.
"""

from __future__ import annotations

from capcliff.analysis.deployment_settings import DeploymentSettings
from capcliff.catalog.catalogs import Model
from capcliff.catalog.layout import parse_layout
from capcliff.catalog.specs import HardwareSpec
from capcliff.errors import InputError
from capcliff.memory.budget import EngineName
from capcliff.memory.deepep import AllToAllBackend
from capcliff.memory.weights import WeightScheme
from capcliff.sim.config import PREFIX_CACHING_POLICIES, PreemptionMode
from capcliff.units import WeightDType

# Memory settings one engine family reads and the others ignore (memory/engines.py): given for
# another engine they were dropped unsaid (`--engine sglang --gpu-memory-utilization 0.5` sized
# SGLang's own fraction).
ENGINE_SETTINGS: dict[str, tuple[frozenset[EngineName], str]] = {
    "gpu_memory_utilization": (
        frozenset({EngineName.VLLM, EngineName.VLLM_V0}),
        "vLLM's --gpu-memory-utilization",
    ),
    "kv_cache_memory": (
        frozenset({EngineName.VLLM, EngineName.VLLM_V0}),
        "vLLM's --kv-cache-memory",
    ),
    "flashinfer_sampler": (
        frozenset({EngineName.VLLM}),
        "vLLM V1's FlashInfer sampler (its profile run's sampler peak)",
    ),
    "mem_fraction_static": (frozenset({EngineName.SGLANG}), "SGLang's --mem-fraction-static"),
    "free_gpu_memory_fraction": (
        frozenset({EngineName.TRTLLM}),
        "TensorRT-LLM's kv_cache_free_gpu_memory_fraction",
    ),
}


def refuse_other_engines_settings(settings: DeploymentSettings) -> list[str]:
    """Refuses a setting given (flag or spec key) that the deployment's engine does not read
    (one line naming it); a warning for a swap pool without swap preemption (a `vllm serve`
    command carries --swap-space whatever it preempts with)."""
    given = settings.model_fields_set
    for name, (engines, what) in ENGINE_SETTINGS.items():
        if name in given and settings.engine not in engines:
            raise InputError(
                f"{name}: {what}, not a {settings.engine.value} setting; leave it unset"
            )
    if "swap_space" in given and settings.preemption is not PreemptionMode.SWAP:
        return ["swap_space: unused: only swap preemption (preemption swap) copies KV to host"]
    return []


def refuse_moe_settings_on_dense(settings: DeploymentSettings, model: Model) -> None:
    """The MoE backend and the all-to-all backend pick expert kernels and expert dispatch, and
    attention-DP balancing needs attention DP, which only MoE layouts have; on a dense model
    they were dropped unsaid."""
    if model.arch.moe is not None:
        return
    given = [name for name, on in (
        ("moe_backend", settings.moe_backend is not None),
        ("all2all_backend", settings.all2all_backend is not AllToAllBackend.NONE),
    ) if on]  # fmt: skip
    if given:
        raise InputError(
            f"{given[0]}: picks the experts' kernels or dispatch; {model.id} is dense (no "
            "experts); leave it unset"
        )
    if settings.attention_dp_balance not in (None, "off"):  # no layout of it has attention DP
        raise InputError(
            f"attention_dp_balance: balances attention-DP ranks, which only MoE models have; "
            f"{model.id} is dense (no experts); leave it unset"
        )


def check_adp_balance(settings: DeploymentSettings, layout: str | None) -> None:
    """TensorRT-LLM's attention_dp_config is refused for another engine, and for a named layout
    without attention DP (a sweep or plan over several layouts applies it to those with it)."""
    if settings.attention_dp_balance in (None, "off"):
        return
    if settings.engine is not EngineName.TRTLLM:
        raise InputError(
            f"attention_dp_balance: TensorRT-LLM's attention_dp_config, not a "
            f"{settings.engine.value} setting; leave it unset"
        )
    if layout is not None and not parse_layout(layout).attention_dp:
        raise InputError(
            f"attention_dp_balance: layout {layout} has no attention DP; it balances attention-DP "
            "ranks (a layout such as dpa8 or dp8-ep8)"
        )


def unused_tiers(settings: DeploymentSettings, *, policy: str) -> list[str]:
    """A warning for offload tiers with prefix caching turned off, or under an admission
    `policy` whose engine's prefix cache is not simulated: the tiers extend the prefix cache (a
    lookup finds a block there after HBM evicted it), so with no lookups they change no figure
    (2026-12-08, h-user3: a TensorRT-LLM plan with --offload cpu:64GiB printed
    `kv_cache_config.host_cache_size` beside figures no tier or block reuse had touched)."""
    if settings.offload is None:
        return []
    if policy not in PREFIX_CACHING_POLICIES:
        return [
            f"offload: the tiers hold the prefix cache's evicted blocks, and no prefix cache is "
            f"simulated under policy {policy} (TensorRT-LLM's KV block reuse and vLLM V0's "
            "prefix caching are not modelled), so they change no figure"
        ]
    if settings.prefix_caching != "off":
        return []
    return [
        "offload: the tiers hold the prefix cache's evicted blocks and prefix caching is off, so "
        "nothing is looked up in them and they change no figure; turn prefix caching on or "
        "drop the tiers"
    ]


def refuse_disagg_only(settings: DeploymentSettings, *, disagg: bool) -> None:
    """The KV transfer's set-up cost prices the prefill-to-decode hand-off; an aggregated
    deployment has none, and the setting was dropped unsaid."""
    if not disagg and settings.kv_transfer_overhead_ms is not None:
        raise InputError(
            "kv_transfer_overhead_ms: the prefill-to-decode KV hand-off's cost; it applies "
            "with disagg only"
        )


def refuse_total_memory_across_gpus(settings: DeploymentSettings, gpu_ids: list[str]) -> None:
    """`gpu_total_memory` overrides one GPU's driver-reported memory; over a fleet of several
    types (or a pool on another type) it was applied to each of them (79 GiB for an MI300X)."""
    kinds = list(dict.fromkeys(gpu_ids))
    if settings.gpu_total_memory is not None and len(kinds) > 1:
        raise InputError(
            f"gpu_total_memory: one GPU's driver-reported memory, given for {len(kinds)} GPU "
            f"types ({', '.join(kinds)}); size one type at a time, or leave it unset"
        )


# TensorRT-LLM builds on CUDA and NVIDIA's kernels only ("TensorRT-LLM ... accelerates and
# optimizes inference performance ... on NVIDIA GPUs", NVIDIA/TensorRT-LLM README.md); vLLM and
# SGLang run on ROCm too.
ENGINE_VENDORS: dict[EngineName, str] = {EngineName.TRTLLM: "NVIDIA"}


def refuse_engine_on_vendor(settings: DeploymentSettings, hardware: HardwareSpec) -> None:
    """Refuses an engine on a GPU its maker does not build it for (TensorRT-LLM on an AMD GPU
    was simulated with NVIDIA's engine terms)."""
    vendor = ENGINE_VENDORS.get(settings.engine)
    if vendor is not None and hardware.vendor != vendor:
        raise InputError(
            f"engine: {settings.engine.value} runs on {vendor} GPUs only, and {hardware.id} is "
            f"{hardware.vendor}'s; use vllm or sglang there, or one of {vendor}'s GPUs"
        )


def refuse_chunked_prefill_switch(engine: EngineName, enabled: bool | None) -> None:
    """Refuse `--[no-]enable-chunked-prefill` where it is not a setting capcliff simulates.

    vLLM V0 takes either (its default depends on the context, `engines.vllm_v0_chunked_prefill`).
    vLLM V1 always chunks prefills unless told not to (vllm/config/scheduler.py
    `enable_chunked_prefill`), and TensorRT-LLM is simulated chunking them (its line sets
    trtllm-serve's `--enable_chunked_prefill`): on is what both are simulated as, off is not
    modelled for them. SGLang has no such switch: `--chunked-prefill-size` sizes its chunks."""
    if enabled is None or engine is EngineName.VLLM_V0:
        return
    if engine is EngineName.SGLANG:
        raise InputError(
            "enable_chunked_prefill: vLLM's and TensorRT-LLM's switch, not a sglang setting; "
            "SGLang chunks prefills by --chunked-prefill-size (--max-num-batched-tokens): "
            "leave it unset"
        )
    if not enabled:
        raise InputError(
            f"enable_chunked_prefill: off is modelled for vllm-v0 only; {engine.value} is "
            "simulated chunking prefills (its scheduler's mode, which --enable-chunked-prefill "
            "names): leave it unset or on, or plan --engine vllm-v0"
        )


def refuse_budget_below_seats(
    engine: EngineName, *, batched: int, seqs: int, seqs_given: bool
) -> None:
    """Refuse a token budget per step (`batched`) below the cap on running requests (`seqs`)
    where the decodes share the step's budget. vLLM raises "max_num_batched_tokens (B) must be
    greater than or equal to max_num_seqs (S)" (SchedulerConfig, vllm/config/scheduler.py), at
    its default cap too; TensorRT-LLM's scheduler then runs at most B requests' tokens a step,
    which the simulator, where every running request decodes in each step, does not model.
    SGLang's prefill steps run alone: --chunked-prefill-size bounds the chunk, not the decode
    batch (its own default on a GPU under 35 GiB is 2,048 beside at least 2,048 requests)."""
    if batched >= seqs or engine is EngineName.SGLANG:
        return
    which = "given" if seqs_given else f"{engine.value}'s default cap"
    fix = f"give --max-num-batched-tokens {seqs} or more, or --max-num-seqs {batched} or less"
    if engine is EngineName.TRTLLM:
        raise InputError(
            f"max_num_batched_tokens: {batched} is below max_num_seqs {seqs} ({which}): "
            f"TensorRT-LLM then schedules at most {batched} tokens a step, so not every running "
            f"request decodes in each, which capcliff does not simulate; {fix}"
        )
    raise InputError(
        f"max_num_batched_tokens: {batched} is below max_num_seqs {seqs} ({which}), which vLLM "
        f"refuses (every running request takes a token of each step's budget); {fix}"
    )


# SGLang's NVFP4 (ModelOpt FP4) weights need compute capability 10.0: ModelOptFp4Config's
# get_min_capability() returns 100 (python/sglang/srt/layers/quantization/modelopt_quant.py),
# which the loader checks before it builds the model (`_get_quantization_config`,
# python/sglang/srt/model_loader/loader.py: "The quantization method ... is not supported for
# the current GPU. Minimum capability: 100"). Hopper (9.0) and AMD's GPUs (9.4, 9.5) are refused;
# vLLM's ModelOptNvFp4Config asks for 7.5 and runs FP4 weights there through Marlin.
SGLANG_FP4_MIN_CAPABILITY = 10.0


def sglang_fp4_refusal(scheme: WeightScheme, hardware: HardwareSpec) -> str | None:
    """Why SGLang refuses to load `scheme`'s NVFP4 weights on `hardware` (below compute
    capability 10.0); None where it loads them, or the GPU's capability is not known."""
    capability = hardware.compute_capability
    if WeightDType.NVFP4 not in (scheme.linear, scheme.expert) or capability is None:
        return None
    if capability >= SGLANG_FP4_MIN_CAPABILITY:
        return None
    return (
        f"SGLang loads nvfp4 weights only on GPUs of compute capability "
        f"{SGLANG_FP4_MIN_CAPABILITY:.1f} or more (ModelOptFp4Config.get_min_capability() is "
        f"100, which its model loader checks); {hardware.id} is {capability:.1f}"
    )
