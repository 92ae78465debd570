"""Byte sizes in settings: text such as 21.43GiB (read with `units.parse_bytes`) or bytes."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import AfterValidator, BeforeValidator, Field

from capcliff.errors import InputError
from capcliff.units import MAX_BYTES, parse_bytes

# Set: a sanity bound on --gpu-total-memory. No accelerator capcliff plans for has under 1 GiB,
# so a smaller total is a size given without its unit (80 read as 80 bytes).
MIN_DEVICE_BYTES = 2**30


def _byte_count(value: Any) -> Any:
    """A byte count written as text (`21.43GiB`, `80GB`, `1e9`) or as a number of bytes."""
    if isinstance(value, str):
        try:
            return parse_bytes(value, field="bytes")
        except InputError as exc:
            raise ValueError(str(exc).removeprefix("bytes: ")) from None
    # a number of bytes has the text's bound (a spec's 2**63 was taken where "2**63" was not)
    if isinstance(value, int | float) and not isinstance(value, bool) and value > MAX_BYTES:
        raise ValueError(f"{value:.3g} bytes is past {MAX_BYTES:.3g} (1 EiB), beyond any device")
    return value


def _device_size(value: int) -> int:
    if value < MIN_DEVICE_BYTES:
        raise ValueError(
            f"{value:,} bytes is less than 1 GiB (a number without a unit is bytes); "
            "write e.g. 80GB or 139.81GiB"
        )
    return value


# Set: a host pool (swap space) given as a bare number below this is a count of GiB typed
# without its unit: vLLM's `--swap-space 4` is 4 GiB (vllm/config/cache.py swap_space, GiB),
# where capcliff reads a bare number as bytes; no one sizes a swap pool in kilobytes.
MIN_BARE_POOL_BYTES = 2**20


def _pool_size(value: Any) -> Any:
    """A bare number (no unit) of bytes under MIN_BARE_POOL_BYTES: refused as a GiB count."""
    number: float | None = None
    if isinstance(value, int | float) and not isinstance(value, bool):
        number = value
    elif isinstance(value, str):
        try:
            number = float(value)
        except ValueError:  # a size with its unit (or none readable): _byte_count reads it
            number = None
    if number is not None and 0 < number < MIN_BARE_POOL_BYTES:
        raise ValueError(
            f"{number:g} bytes is under 1 MiB (a number without a unit is bytes; vLLM's "
            f"--swap-space {number:g} is {number:g} GiB); write e.g. {number:g}GiB"
        )
    return value


# Set: a KV pool under this holds a block or two at most (one 16-token block of Llama-3.1-8B
# in BF16 is 2 MiB): a unit slip (`--kv-cache-memory 1` is one byte, as in vLLM), not a pool.
MIN_KV_POOL_BYTES = 2**20


def _kv_pool_size(value: int) -> int:
    if value < MIN_KV_POOL_BYTES:
        raise ValueError(
            f"{value:,} bytes is under 1 MiB, not a KV pool (a number without a unit is bytes); "
            "write e.g. 20GiB"
        )
    return value


ByteCount = Annotated[int, BeforeValidator(_byte_count), Field(gt=0)]
DeviceBytes = Annotated[ByteCount, AfterValidator(_device_size)]  # a whole device's memory
KVPoolBytes = Annotated[ByteCount, AfterValidator(_kv_pool_size)]  # --kv-cache-memory
PoolBytes = Annotated[ByteCount, BeforeValidator(_pool_size)]  # a host pool (swap space)
