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


ByteCount = Annotated[int, BeforeValidator(_byte_count), Field(gt=0)]
DeviceBytes = Annotated[ByteCount, AfterValidator(_device_size)]  # a whole device's memory
