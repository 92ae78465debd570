"""The KV cache dtype a deployment stores: the one given, else its engine's default
(memory/kv_default.py: the checkpoint's own KV quantisation where the release follows it)."""

from __future__ import annotations

from capcliff.analysis.deployment_settings import DeploymentSettings
from capcliff.catalog.architecture import Architecture
from capcliff.errors import InputError
from capcliff.memory.budget import EngineName
from capcliff.memory.kv_default import engine_forces_checkpoint_kv, engine_takes_checkpoint_kv
from capcliff.releases import parse_version
from capcliff.units import KVDType, parse_kv_dtype, parse_weight_dtype


def _taken(arch: Architecture, settings: DeploymentSettings) -> KVDType | None:
    """The checkpoint's KV dtype where the engine takes it for these settings: none given (or
    one the engine overrides: `_forced`), and the weights as shipped (weights quantised to
    another format are another checkpoint)."""
    if _forced(arch, settings):
        return _own(arch, settings)
    if settings.kv_cache_dtype is not None:
        return None
    return (
        _own(arch, settings) if auto_takes_checkpoint_kv(arch, settings, settings.engine) else None
    )


def _own(arch: Architecture, settings: DeploymentSettings) -> KVDType | None:
    """The checkpoint's own KV quantisation, where the weights are planned as it ships them."""
    quant = arch.quantization
    if quant is None or quant.kv_cache is None or not _as_shipped(arch, settings):
        return None
    return KVDType(quant.kv_cache)


def _forced(arch: Architecture, settings: DeploymentSettings) -> bool:
    """Whether the planned engine release stores the checkpoint's own KV quantisation whatever
    --kv-cache-dtype names (vLLM from 0.15 for compressed-tensors; memory/kv_default.py)."""
    quant = arch.quantization
    if quant is None or _own(arch, settings) is None:
        return False
    version = settings.engine_version
    release = None if version is None else parse_version(version)
    return engine_forces_checkpoint_kv(settings.engine, release, quant.method)


def _as_shipped(arch: Architecture, settings: DeploymentSettings) -> bool:
    """Whether the weights are planned as the checkpoint ships them (another weight dtype is
    another checkpoint, with no KV quantisation of this one)."""
    return settings.weight_dtype is None or (
        parse_weight_dtype(settings.weight_dtype) is arch.linear_dtype
    )


def resolved_kv_dtype(arch: Architecture, settings: DeploymentSettings) -> KVDType:
    """The KV cache dtype the deployment stores: the one given, else the checkpoint's where the
    engine takes it, else the model's (BF16). vLLM from 0.15 stores a compressed-tensors
    checkpoint's KV scheme whatever is given (`_forced`). TensorRT-LLM refuses a given dtype
    other than a ModelOpt checkpoint's own KV quantisation (memory/kv_default.py): refused here
    as the engine would at start-up."""
    if _forced(arch, settings):
        return _own(arch, settings) or KVDType.BF16
    if settings.kv_cache_dtype is not None:
        given = parse_kv_dtype(settings.kv_cache_dtype)
        own = _own(arch, settings)
        trtllm_own = settings.engine is EngineName.TRTLLM and auto_takes_checkpoint_kv(
            arch, settings, EngineName.TRTLLM
        )
        if trtllm_own and own is not None and given is not own:
            raise InputError(
                f"--kv-cache-dtype: {settings.kv_cache_dtype}: TensorRT-LLM cannot override the "
                f"checkpoint's {own.value} KV cache (kv_cache_quant_algo in hf_quant_config.json; "
                "validate_and_set_kv_cache_quant refuses it); leave it out or give "
                f"{own.value}, or plan --engine vllm or sglang"
            )
        return given
    return _taken(arch, settings) or KVDType.BF16


def auto_takes_checkpoint_kv(
    arch: Architecture, settings: DeploymentSettings, engine: EngineName
) -> bool:
    """Whether `engine`'s `--kv-cache-dtype auto` stores the checkpoint's own KV quantisation for
    these settings (the planned engine at its --engine-version, another at its latest): a
    16-bit cache must then be named on its command line."""
    quant = arch.quantization
    if quant is None or _own(arch, settings) is None:
        return False
    version = settings.engine_version if engine is settings.engine else None
    release = None if version is None else parse_version(version)
    return engine_takes_checkpoint_kv(engine, release, quant.method)


def checkpoint_kv_note(arch: Architecture, settings: DeploymentSettings) -> str | None:
    """One line saying the KV cache is the checkpoint's FP8, not a 16-bit one (None elsewhere)."""
    taken = _taken(arch, settings)
    if taken is None:
        return None
    if _forced(arch, settings):
        given = settings.kv_cache_dtype
        overridden = (
            f"; the --kv-cache-dtype {given} given is overridden"
            if given is not None and parse_kv_dtype(given) is not taken
            else ""
        )
        return (
            f"KV cache {taken.value}: the checkpoint's kv_cache_scheme (compressed-tensors), "
            "which vLLM from 0.15 applies whatever --kv-cache-dtype names (Attention layer: "
            f"cache_dtype fp8){overridden}; plan --engine sglang for a 16-bit cache"
        )
    if settings.engine is EngineName.TRTLLM:
        # TensorRT-LLM refuses any other KV dtype for such a checkpoint (memory/kv_default.py)
        return (
            f"KV cache {taken.value}: the checkpoint's kv_cache_quant_algo, which trtllm follows "
            "and cannot override (validate_and_set_kv_cache_quant); plan --engine vllm or "
            "sglang with --kv-cache-dtype bf16 for a 16-bit cache"
        )
    return (
        f"KV cache {taken.value}: the checkpoint's kv_cache_quant_algo, which "
        f"{settings.engine.value}'s default (--kv-cache-dtype auto) follows; give "
        "--kv-cache-dtype bf16 to size a 16-bit cache"
    )
