"""The KV cache dtype a deployment stores: the one given, else its engine's default
(memory/kv_default.py: the checkpoint's own KV quantisation where the release follows it)."""

from __future__ import annotations

from capcliff.analysis.deployment_settings import DeploymentSettings
from capcliff.catalog.architecture import Architecture
from capcliff.catalog.quantization import Quantization
from capcliff.errors import InputError
from capcliff.memory.budget import EngineName
from capcliff.memory.kv_default import (
    auto_kv_format,
    checkpoint_kv_dtype,
    scheme_forces_fp8,
)
from capcliff.releases import parse_version
from capcliff.units import KVDType, parse_kv_dtype, parse_weight_dtype


def _release(settings: DeploymentSettings, engine: EngineName) -> tuple[int, int, int] | None:
    """The release of `engine` the settings plan: the planned engine's --engine-version, another
    engine's latest (None)."""
    version = settings.engine_version if engine is settings.engine else None
    return None if version is None else parse_version(version)


def _shipped(arch: Architecture, settings: DeploymentSettings) -> Quantization | None:
    """The checkpoint's quantisation where the weights are planned as it ships them (another
    weight dtype is another checkpoint, with no KV quantisation of this one)."""
    as_shipped = settings.weight_dtype is None or (
        parse_weight_dtype(settings.weight_dtype) is arch.linear_dtype
    )
    return arch.quantization if as_shipped else None


def _taken(arch: Architecture, settings: DeploymentSettings) -> KVDType | None:
    """The checkpoint's KV dtype where the engine takes it for these settings: none given, and
    the weights as shipped. NVFP4, INT8 or a name the engine cannot load is refused
    (memory/kv_default.checkpoint_kv_dtype)."""
    if settings.kv_cache_dtype is not None or _shipped(arch, settings) is None:
        return None
    return checkpoint_kv_dtype(arch, settings.engine, _release(settings, settings.engine))


def resolved_kv_dtype(arch: Architecture, settings: DeploymentSettings) -> KVDType:
    """The KV cache dtype the deployment stores: the one given, else the checkpoint's where the
    engine takes it, else the model's (BF16). A given dtype the engine would not store is
    refused as the engine would refuse it, or would store another (`_refuse_given`)."""
    if settings.kv_cache_dtype is not None:
        given = parse_kv_dtype(settings.kv_cache_dtype)
        _refuse_given(arch, settings, given)
        return given
    return _taken(arch, settings) or KVDType.BF16


def _refuse_given(arch: Architecture, settings: DeploymentSettings, given: KVDType) -> None:
    """TensorRT-LLM refuses a given dtype other than a checkpoint's own KV quantisation
    (validate_and_set_kv_cache_quant: "You cannot override a checkpoint with a pre-quantized KV
    cache that doesn't match"), and cannot load a KV name QuantAlgo lacks whatever is given;
    vLLM stores a compressed-tensors kv_cache_scheme's FP8 whatever is given."""
    quant = _shipped(arch, settings)
    engine, release = settings.engine, _release(settings, settings.engine)
    own = auto_kv_format(quant, engine, release)
    if engine is EngineName.TRTLLM and own not in (None, "fp8"):
        # a name it cannot load, or an NVFP4 or INT8 cache capcliff does not size: refused
        # naming the checkpoint's field
        checkpoint_kv_dtype(arch, engine, release)
    if engine is EngineName.TRTLLM and own is not None and given.value != own:
        raise InputError(
            f"--kv-cache-dtype: {settings.kv_cache_dtype}: TensorRT-LLM cannot override the "
            f"checkpoint's {own} KV cache (kv_cache_quant_algo in hf_quant_config.json; "
            "validate_and_set_kv_cache_quant refuses it); leave it out or give "
            f"{own}, or plan --engine vllm or sglang"
        )
    if scheme_forces_fp8(quant, engine, release) and given is not KVDType.FP8:
        raise InputError(
            f"--kv-cache-dtype: {settings.kv_cache_dtype}: vLLM stores this checkpoint's FP8 KV "
            "cache whatever the flag (its config.json names a compressed-tensors "
            "kv_cache_scheme, and vLLM's Attention sets fp8 for it); leave it out or give fp8, "
            "or plan --engine sglang for a 16-bit cache"
        )


def auto_takes_checkpoint_kv(
    arch: Architecture, settings: DeploymentSettings, engine: EngineName
) -> bool:
    """Whether `engine`'s `--kv-cache-dtype auto` stores the checkpoint's own KV quantisation for
    these settings (the planned engine at its --engine-version, another at its latest): a
    16-bit cache must then be named on its command line."""
    return auto_kv_format(_shipped(arch, settings), engine, _release(settings, engine)) is not None


def vllm_forces_fp8(arch: Architecture, settings: DeploymentSettings) -> bool:
    """Whether vLLM (V1, at the planned release where it is the planned engine, else its latest)
    stores the checkpoint's FP8 KV cache whatever its --kv-cache-dtype (a compressed-tensors
    kv_cache_scheme). A V0 plan's vllm line is V0's, which reads no KV dtype from the scheme."""
    if settings.engine is EngineName.VLLM_V0:
        return False
    release = _release(settings, EngineName.VLLM)
    return scheme_forces_fp8(_shipped(arch, settings), EngineName.VLLM, release)


def checkpoint_kv_note(arch: Architecture, settings: DeploymentSettings) -> str | None:
    """One line saying the KV cache is the checkpoint's FP8, not a 16-bit one (None elsewhere)."""
    taken = _taken(arch, settings)
    if taken is None:
        return None
    quant = _shipped(arch, settings)
    if scheme_forces_fp8(quant, settings.engine, _release(settings, settings.engine)):
        return (
            f"KV cache {taken.value}: the checkpoint's compressed-tensors kv_cache_scheme, which "
            "vLLM's Attention follows whatever --kv-cache-dtype says; plan --engine sglang for a "
            "16-bit cache"
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
