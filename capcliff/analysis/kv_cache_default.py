"""The KV cache dtype a deployment stores: the one given, else its engine's default
(memory/kv_default.py: the checkpoint's own KV quantisation where the release follows it)."""

from __future__ import annotations

from capcliff.analysis.deployment_settings import DeploymentSettings
from capcliff.catalog.architecture import Architecture
from capcliff.memory.kv_default import checkpoint_kv_dtype
from capcliff.releases import parse_version
from capcliff.units import KVDType, parse_kv_dtype, parse_weight_dtype


def _taken(arch: Architecture, settings: DeploymentSettings) -> KVDType | None:
    """The checkpoint's KV dtype where the engine takes it for these settings: none given, and
    the weights as shipped (weights quantised to another format are another checkpoint)."""
    if settings.kv_cache_dtype is not None:
        return None
    if settings.weight_dtype is not None and (
        parse_weight_dtype(settings.weight_dtype) is not arch.linear_dtype
    ):
        return None
    version = settings.engine_version
    release = None if version is None else parse_version(version)
    return checkpoint_kv_dtype(arch, settings.engine, release)


def resolved_kv_dtype(arch: Architecture, settings: DeploymentSettings) -> KVDType:
    """The KV cache dtype the deployment stores: the one given, else the checkpoint's where the
    engine takes it, else the model's (BF16)."""
    if settings.kv_cache_dtype is not None:
        return parse_kv_dtype(settings.kv_cache_dtype)
    return _taken(arch, settings) or KVDType.BF16


def checkpoint_kv_note(arch: Architecture, settings: DeploymentSettings) -> str | None:
    """One line saying the KV cache is the checkpoint's FP8, not a 16-bit one (None elsewhere)."""
    taken = _taken(arch, settings)
    if taken is None:
        return None
    return (
        f"KV cache {taken.value}: the checkpoint's kv_cache_quant_algo, which "
        f"{settings.engine.value}'s default (--kv-cache-dtype auto) follows; give "
        "--kv-cache-dtype bf16 to size a 16-bit cache"
    )
