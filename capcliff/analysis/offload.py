"""`--offload cpu:512GiB,nvme:4TiB`: KV offload tiers of a replica from sizes and the hardware.

Sizes are per replica (vLLM's `--kv-offloading-size` is the total over the replica's ranks), so
each GPU holds size / GPUs per replica of it. Bandwidths are per GPU: one direction of the host
link for host DRAM (`cpu`); the node's NVMe bandwidth shared by its GPUs for `nvme`.
"""

from __future__ import annotations

from capcliff.catalog.specs import HardwareSpec
from capcliff.errors import InputError
from capcliff.perf.step_time import host_link_bytes_per_s
from capcliff.sim.reuse.kv_tiers import KVTier
from capcliff.units import GB, GIB, counted, parse_bytes

TIER_NAMES = ("cpu", "nvme")  # fastest first
MICROSECOND = 1e-6


# The smallest offload tier accepted: 1 GiB holds a few thousand tokens of KV of a large model
# (DeepSeek-R1: 70,272 bytes per token in bf16 MLA, about 15k tokens); below it a tier is a typo
# (cpu:64 is 64 bytes, cpu:0 none) that would hold no block.
MIN_TIER_BYTES = GIB


def parse_offload(text: str) -> dict[str, int]:
    """{tier: bytes per replica} from `cpu:512GiB,nvme:4TiB` (either or both, any order)."""
    sizes: dict[str, int] = {}
    for part in text.split(","):
        name, sep, size = part.strip().partition(":")
        if not sep or name not in TIER_NAMES or name in sizes:
            raise InputError(
                f"offload: cannot read {part.strip()!r}; write cpu:512GiB,nvme:4TiB "
                f"(tiers {', '.join(TIER_NAMES)}, each once)"
            )
        sizes[name] = parse_bytes(size, field=f"offload {name}")
        if sizes[name] < MIN_TIER_BYTES:
            raise InputError(
                f"offload: the {name} tier's {size.strip()!r} is under the 1 GiB a tier needs "
                "(a size without its unit is bytes); write e.g. cpu:512GiB"
            )
    return {name: sizes[name] for name in TIER_NAMES if name in sizes}


def offload_shortfall(
    sizes: dict[str, int], hardware: HardwareSpec, *, gpus_per_replica: int
) -> str | None:
    """Why a replica of `gpus_per_replica` GPUs cannot hold the tiers of `sizes` (its GPUs'
    share of the node's host DRAM or NVMe is smaller), or None. A wider replica may hold them:
    this is a layout's verdict, not the input's."""
    for name, size in sizes.items():
        per_gpu = size / gpus_per_replica
        have: int | None
        if name == "cpu":
            have, what = hardware.host_dram_bytes_per_gpu, "the host DRAM"
        else:
            have, what = hardware.nvme_bytes_per_gpu, "the NVMe share"
        if have is not None and per_gpu > have:
            held = have * gpus_per_replica / GB
            return (
                f"offload {name}: {size / GB:.0f} GB per replica is more than {what} of its "
                f"{counted(gpus_per_replica, 'GPU')} on {hardware.id} ({held:.0f} GB)"
            )
    return None


def offload_tiers(
    sizes: dict[str, int],
    hardware: HardwareSpec,
    *,
    gpus_per_replica: int,
    kv_bytes_per_token_per_gpu: int,
) -> tuple[KVTier, ...]:
    """The tiers of `sizes` (per replica) on `hardware`, per GPU, fastest first."""
    if kv_bytes_per_token_per_gpu <= 0:
        return ()
    tiers = []
    for name, size in sizes.items():
        per_gpu = size / gpus_per_replica
        tokens = int(per_gpu // kv_bytes_per_token_per_gpu)
        short = offload_shortfall({name: size}, hardware, gpus_per_replica=gpus_per_replica)
        if name == "cpu":
            if short:
                raise InputError(short)
            link = host_link_bytes_per_s(hardware)
            latency = (hardware.host_link_latency_us or 0.0) * MICROSECOND
            tiers.append(KVTier("cpu", tokens, link, link, latency))
            continue
        read, write = hardware.nvme_read_gb_s_per_node, hardware.nvme_write_gb_s_per_node
        if read is None or write is None or hardware.nvme_bytes_per_gpu is None:
            raise InputError(f"offload nvme: {hardware.id} has no NVMe figures in its catalog file")
        if short:
            raise InputError(short)
        share = hardware.gpus_per_node
        latency = (hardware.nvme_latency_us or 0.0) * MICROSECOND
        tiers.append(KVTier("nvme", tokens, read * GB / share, write * GB / share, latency))
    return tuple(tiers)
