"""Byte and time units, and the sizes of the data types capcliff reasons about.

This is the only module where unit conversions live: every other module works in bytes,
seconds, FLOP/s and bytes/s, with the unit in the name of the quantity.
"""

from __future__ import annotations

import math
import re
from enum import StrEnum
from fractions import Fraction
from typing import TypeVar

from capcliff.errors import InputError

KIB = 1024
MIB = 1024**2
GIB = 1024**3
TIB = 1024**4
KB = 1000
MB = 1000**2
GB = 1000**3
TB = 1000**4
TERA = 10**12
# The largest byte count a size may be (1 EiB): past any GPU's or host's memory, and far below
# where a float loses whole bytes' meaning (a bound on input, not a modeled figure).
MAX_BYTES = 1 << 60

_BYTE_UNITS: dict[str, int] = {
    "b": 1,
    "kib": KIB,
    "mib": MIB,
    "gib": GIB,
    "tib": TIB,
    "kb": KB,
    "mb": MB,
    "gb": GB,
    "tb": TB,
}
_BYTES_RE = re.compile(r"^\s*([0-9]+(?:\.[0-9]*)?(?:[eE][+-]?[0-9]+)?)\s*([a-zA-Z]*)\s*$")

# Bits of one element of a plain (unscaled) tensor, per dtype name.
BITS_PER_ELEMENT = {"fp32": 32, "bf16": 16, "fp16": 16, "fp8": 8}


class KVDType(StrEnum):
    """Data type of the KV cache (vLLM `--kv-cache-dtype`)."""

    BF16 = "bf16"
    FP16 = "fp16"
    FP8 = "fp8"

    @property
    def bytes_per_element(self) -> int:
        """Bytes of one cached K or V element."""
        return BITS_PER_ELEMENT[self.value] // 8


class WeightDType(StrEnum):
    """Storage format of the linear-layer weights of a checkpoint."""

    BF16 = "bf16"
    FP16 = "fp16"
    FP8 = "fp8"
    INT4 = "int4"
    MXFP4 = "mxfp4"
    NVFP4 = "nvfp4"


# Effective bytes per weight element, scales included, as an exact fraction.
#   bf16/fp16: 2 bytes, no scales.
#   fp8: 1 byte + one fp32 scale per 128x128 block (DeepSeek-V3 `weight_block_size = [128, 128]`,
#        the layout vLLM's block-FP8 kernels load): 1 + 4/16384.
#   int4 (AWQ/GPTQ, group 128): 4 bits + per group an fp16 scale (16 bits) and a packed 4-bit zero
#        point (4 bits): (128*4 + 16 + 4) / (128*8) bytes.
#   mxfp4 (OCP MX spec, as gpt-oss ships its experts): 4 bits + one 8-bit E8M0 scale per 32.
#   nvfp4: 4 bits + one FP8 E4M3 scale per 16 (the per-tensor fp32 global scale is negligible).
_WEIGHT_BYTES_PER_ELEMENT: dict[WeightDType, Fraction] = {
    WeightDType.BF16: Fraction(2),
    WeightDType.FP16: Fraction(2),
    WeightDType.FP8: Fraction(1) + Fraction(4, 128 * 128),
    WeightDType.INT4: Fraction(128 * 4 + 16 + 4, 128 * 8),
    WeightDType.MXFP4: Fraction(32 * 4 + 8, 32 * 8),
    WeightDType.NVFP4: Fraction(16 * 4 + 8, 16 * 8),
}


def weight_bytes_per_element(dtype: WeightDType) -> Fraction:
    """Bytes per stored weight element in `dtype`, including its quantization scales."""
    return _WEIGHT_BYTES_PER_ELEMENT[dtype]


_E = TypeVar("_E", bound=StrEnum)

_DTYPE_ALIASES: dict[str, str] = {
    "bfloat16": "bf16",
    "float16": "fp16",
    "half": "fp16",
    "fp8_e4m3": "fp8",
    "fp8_e5m2": "fp8",
    "float8_e4m3fn": "fp8",
    "f8_e4m3": "fp8",
    "awq": "int4",
    "gptq": "int4",
    "modelopt_fp4": "nvfp4",
}


def _parse_dtype(kind: type[_E], text: str, *, field: str, what: str) -> _E:
    key = _DTYPE_ALIASES.get(text.strip().lower(), text.strip().lower())
    try:
        return kind(key)
    except ValueError:
        valid = ", ".join(d.value for d in kind)
        raise InputError(f"{field}: unknown {what} {text!r}; valid: {valid}") from None


def parse_weight_dtype(text: str, *, field: str = "weight_dtype") -> WeightDType:
    """Read a weight dtype name (bf16, fp16, fp8, int4, mxfp4, nvfp4, or an engine alias)."""
    return _parse_dtype(WeightDType, text, field=field, what="dtype")


def parse_kv_dtype(text: str, *, field: str = "kv_dtype") -> KVDType:
    """Read a KV cache dtype name (bf16, fp16, fp8, fp8_e4m3, fp8_e5m2; `auto`: bf16)."""
    if text.strip().lower() == "auto":
        # vLLM's and SGLang's default: the model's activation dtype (vllm/config/cache.py
        # CacheDType "auto"), bf16 or fp16 for every catalogue model, 2 bytes an element alike
        return KVDType.BF16
    return _parse_dtype(KVDType, text, field=field, what="KV cache dtype")


def parse_bytes(text: str, *, field: str) -> int:
    """Read a byte count such as `21.43GiB`, `80GB` or `1073741824` (bare numbers are bytes)."""
    match = _BYTES_RE.match(text)
    unit = match.group(2).lower() if match else ""
    if match is None or unit not in {"", *_BYTE_UNITS}:
        raise InputError(
            f"{field}: cannot read {text!r} as bytes; write e.g. 21.43GiB, 80GB or 1e9"
        )
    value = float(match.group(1)) * _BYTE_UNITS[unit or "b"]
    if not value <= MAX_BYTES:  # also false for inf
        raise InputError(
            f"{field}: {text!r} is past {MAX_BYTES:.3g} bytes (1 EiB), beyond any device"
        )
    return int(value)


# vLLM's and SGLang's human-readable integers (`--max-model-len 32k`, vllm/engine/arg_utils.py
# and sglang/srt/server_args.py `human_readable_int`): k/m/g/t powers of 1000 (a fraction
# allowed: 1.5k), K/M/G/T of 1024 (whole numbers only); without a suffix, Python's int() as
# argparse's `type=int` reads it.
_HUMAN_SUFFIX = {"k": 10**3, "m": 10**6, "g": 10**9, "t": 10**12}
_HUMAN_BINARY_SUFFIX = {"K": 2**10, "M": 2**20, "G": 2**30, "T": 2**40}
# Digits read exactly as an int; a longer literal is read as a float, which is past any bound
# (Python refuses to convert more than 4,300 digits: `--tp 99...9` was a traceback).
MAX_EXACT_DIGITS = 40
INT_LITERAL = r"\+?[0-9](_?[0-9])*"  # int()'s literal: a sign, digits and single underscores


def parse_human_int(value: str | None, *, field: str) -> int:
    """A whole number >= 1 as the engines read a human-readable integer (`32768`, `32_768`,
    `32k` = 32,000, `32K` = 32,768, `1.5k`), or an InputError `field wants a whole number`."""
    text = (value or "").strip()
    binary = _HUMAN_BINARY_SUFFIX.get(text[-1:])
    scale = binary or _HUMAN_SUFFIX.get(text[-1:], 1) if text else 1
    digits = text[:-1] if scale != 1 else text
    # the engines' argparse reads an int: "1e3" is refused there (a fraction only before a
    # decimal suffix)
    pattern = INT_LITERAL if scale == 1 else r"[0-9]+" if binary else r"[0-9]+(\.[0-9]+)?"
    whole = re.fullmatch(pattern, digits)
    if whole and scale == 1 and len(digits) <= MAX_EXACT_DIGITS and int(digits) >= 1:
        return int(digits)  # exactly, as int() reads it (a float rounds past 2**53)
    try:
        number = float(digits) * scale if whole else -1.0
    except ValueError:
        number = -1.0
    if not (1 <= number < math.inf and number == int(number)):  # 1e400: int(inf) overflowed
        raise InputError(f"{field} wants a whole number >= 1, got {value!r}")
    return int(number)


# Latency limits past these are milliseconds typed where seconds belong (a TPOT of 60 s is a
# minute per token; no served model is that slow, and a TTFT past ten minutes is no SLO).
MAX_SLO_TPOT_S = 10.0
# ... and under this one no limit can hold (assumption: no engine step or first token takes under
# a microsecond; one CUDA kernel launch alone takes a few microseconds)
MIN_SLO_S = 1e-6
MAX_SLO_TTFT_S = 600.0


def slo_seconds_problem(value_s: float, *, most_s: float) -> str | None:
    """Why a latency limit `value_s` (seconds) is plainly milliseconds (or under a microsecond),
    or None when it is not."""
    if value_s < MIN_SLO_S:  # 1e-320 s printed "inf x over the limit"
        return f"{value_s:g} s is under {MIN_SLO_S:g} s, which no engine step meets; give seconds"
    if value_s <= most_s:
        return None
    return (
        f"{value_s:g} s is past {most_s:g} s, a limit typed in milliseconds? did you mean "
        f"{value_s / 1000:g} (seconds)?"
    )


def ceil_div(numerator: int, denominator: int) -> int:
    """Integer ceiling of numerator / denominator for non-negative integers."""
    return -(-numerator // denominator)


def round_up(value: int, multiple: int) -> int:
    """Smallest multiple of `multiple` that is >= value."""
    return ceil_div(value, multiple) * multiple


def format_bytes(n_bytes: float) -> str:
    """Human-readable bytes in decimal GB (how vendors and most users quote HBM)."""
    if not math.isfinite(n_bytes):
        return str(n_bytes)
    if abs(n_bytes) >= TB:
        return f"{n_bytes / TB:.2f} TB"
    if abs(n_bytes) >= GB:
        return f"{n_bytes / GB:.1f} GB"
    if abs(n_bytes) >= MB:
        return f"{n_bytes / MB:.1f} MB"
    if abs(n_bytes) >= KB:
        return f"{n_bytes / KB:.1f} KB"
    return f"{n_bytes:.0f} B"


def counted(n: float, noun: str, spec: str = ",") -> str:
    """`n` with `noun`, singular for exactly one ("1 GPU", "4 GPUs", "2.5 turns"); `spec` is the
    format of `n` (thousands separators by default)."""
    return f"{n:{spec}} {noun}{'' if n == 1 else 's'}"
