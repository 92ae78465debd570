"""What would fit when nothing does: FP8 weights, an FP8 KV cache, the longest request that fits,
more GPUs; or, when the user's layouts cannot be, the layouts of the same GPUs that fit as they are.
`plan` and `sweep` say it in place of a result (a model that does not fit is an answer); where
none of the user's layouts can exist for the model, they and `memory` refuse them
(`refuse_impossible`)."""

from __future__ import annotations

from dataclasses import replace

from capcliff.analysis.deployment import Deployment
from capcliff.analysis.offload import parse_offload
from capcliff.analysis.served_weights import engines_load
from capcliff.catalog.layout import Layout, enumerate_layouts
from capcliff.errors import InputError
from capcliff.memory.layout_memory import LayoutMemory
from capcliff.memory.weights import WeightScheme
from capcliff.units import GB, KVDType, WeightDType, counted


def fit_fixes(
    dep: Deployment, gpus: int, max_model_len: int, *, given: tuple[Layout, ...] = ()
) -> list[str]:
    """When nothing of `gpus` GPUs fits requests of `max_model_len` tokens: what would (FP8
    weights, FP8 KV, a shorter context, more GPUs). When the user's `given` layouts fit not but
    another layout of the same GPUs does, only that."""
    from capcliff.memory.fit import largest_max_model_len

    arch = dep.model.arch
    if given:
        plain = [dep.memory(lay, max_model_len) for lay in enumerate_layouts(gpus, arch=arch)]
        if ok_as_is := [m.layout.name for m in plain if m.fits]:
            return [
                f"{', '.join(ok_as_is[:4])} fit{'s' if len(ok_as_is) == 1 else ''} these {gpus} "
                f"GPUs as they are (--layout {ok_as_is[0]})"
            ]

    def fitting(changed: Deployment, length: int, count: int) -> list[LayoutMemory]:
        mems = [changed.memory(lay, length) for lay in enumerate_layouts(count, arch=arch)]
        return [m for m in mems if m.fits]

    fixes = _offload_fixes(dep, gpus, max_model_len)
    length = max_model_len
    shipped = WeightScheme.as_shipped(arch)
    if dep.scheme != shipped and (ok := fitting(replace(dep, scheme=shipped), length, gpus)):
        fixes.append(
            f"the checkpoint's own {shipped.label()} weights (--weight-dtype left out) fit as "
            f"{ok[0].layout.name}"
        )
    fp8 = replace(dep, scheme=WeightScheme.planned(arch, WeightDType.FP8))
    if (
        dep.scheme.linear is not WeightDType.FP8
        and fp8.scheme != shipped  # (said above)
        and engines_load(fp8)  # not from an NVFP4 or MXFP4 checkpoint (seed 56)
        and (ok := fitting(fp8, length, gpus))
    ):
        fixes.append(f"FP8 weights (--weight-dtype fp8) fit as {ok[0].layout.name}")
    fp8_kv = replace(dep, kv_dtype=KVDType.FP8)
    if dep.kv_dtype is not KVDType.FP8 and (ok := fitting(fp8_kv, length, gpus)):
        fixes.append(f"an FP8 KV cache (--kv-cache-dtype fp8) fits as {ok[0].layout.name}")
    valid = [dep.memory(lay, length) for lay in enumerate_layouts(gpus, arch=arch)]
    longest = max((largest_max_model_len(m) for m in valid if m.valid), default=0)
    if 0 < longest < length:
        fixes.append(f"--max-model-len {longest} (the longest one request that fits)")
    node = dep.hardware.gpus_per_node
    within = [2**k for k in range(1, node.bit_length()) if 2**k < node]  # 2, 4 on 8-GPU nodes
    for count in (c for c in (*within, *(node * k for k in (1, 2, 4, 8))) if c > gpus):
        if ok := fitting(dep, length, count):
            nodes = -(-count // node)
            where = f"{nodes} node{'s' if nodes > 1 else ''}"
            fixes.append(f"{count} GPUs ({where}) fit as {ok[0].layout.name}")
            break
    return fixes or ["no change tried here fits: the model needs a larger deployment"]


def _offload_fixes(dep: Deployment, gpus: int, max_model_len: int) -> list[str]:
    """Where a layout of `gpus` GPUs fits but for its --offload tiers (past its GPUs' share of
    the host DRAM or NVMe): the most each tier may hold there. More GPUs were the only advice
    ("the model needs a larger deployment" for a 1e18-byte tier), though the model fits."""
    if dep.settings.offload is None:
        return []
    bare = replace(dep, settings=dep.settings.model_copy(update={"offload": None}))
    layouts = enumerate_layouts(gpus, arch=dep.model.arch)
    fit = [m for m in (bare.memory(lay, max_model_len) for lay in layouts) if m.fits]
    if not fit:
        return []
    replica = max(1, fit[0].layout.gpus // fit[0].layout.dp)
    hw = dep.hardware
    held = {"cpu": hw.host_dram_bytes_per_gpu, "nvme": hw.nvme_bytes_per_gpu}
    most = [f"{name}:{int(per_gpu * replica // GB)}GB" for name, per_gpu in held.items()
            if name in parse_offload(dep.settings.offload) and per_gpu is not None]  # fmt: skip
    return [
        f"offload within the host of a replica's {counted(replica, 'GPU')}: at most --offload "
        f"{','.join(most)} per replica ({fit[0].layout.name})"
    ]


def refuse_impossible(dep: Deployment, layouts: tuple[Layout, ...], max_model_len: int) -> None:
    """Refuse the user's `layouts` when none can exist for the model (TP not dividing its heads,
    EP or attention DP on a dense model, more stages than layers): bad input in one line naming
    each layout, why, and what would fit. A layout that exists but does not fit in memory is an
    answer, said by the caller."""
    memories = [dep.memory(lay, max_model_len) for lay in layouts]
    if not layouts or any(m.valid for m in memories):
        return
    why = "; ".join(f"{m.layout.name}: {m.reason}" for m in memories)
    most = max(lay.gpus for lay in layouts)
    fixes = fit_fixes(dep, most, max_model_len, given=layouts)
    raise InputError(f"layout: {why}; valid: {'; '.join(fixes)}")
