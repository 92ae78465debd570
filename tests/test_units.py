from fractions import Fraction

import pytest

from capcliff.errors import InputError
from capcliff.units import (
    GIB,
    KVDType,
    WeightDType,
    parse_bytes,
    parse_kv_dtype,
    parse_weight_dtype,
    weight_bytes_per_element,
)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("21.43GiB", int(21.43 * GIB)),
        ("80GB", 80 * 10**9),
        ("1073741824", 2**30),
        ("512 MiB", 512 * 2**20),
        ("1e9", 10**9),
    ],
)
def test_parse_bytes_reads_units(text: str, expected: int) -> None:
    assert parse_bytes(text, field="x") == expected


def test_parse_bytes_rejects_unknown_unit_naming_the_field() -> None:
    with pytest.raises(InputError, match=r"^kv_cache_memory: "):
        parse_bytes("12 parsecs", field="kv_cache_memory")


def test_fp8_weight_bytes_include_one_fp32_scale_per_128x128_block() -> None:
    # 1 byte per element + 4 bytes per 16,384-element block.
    assert weight_bytes_per_element(WeightDType.FP8) == 1 + Fraction(4, 16384)


def test_int4_group128_carries_fp16_scale_and_4bit_zero() -> None:
    # 128 weights: 64 bytes packed + 2 bytes scale + 0.5 byte zero point = 66.5 bytes.
    assert weight_bytes_per_element(WeightDType.INT4) * 128 == Fraction(133, 2)


def test_mxfp4_is_4_25_bits_per_weight() -> None:
    # 32 weights share one 8-bit E8M0 scale: (32*4 + 8) / 32 = 4.25 bits.
    assert weight_bytes_per_element(WeightDType.MXFP4) * 8 == Fraction(17, 4)


def test_nvfp4_is_4_5_bits_per_weight() -> None:
    # 16 weights share one FP8 scale: (16*4 + 8) / 16 = 4.5 bits.
    assert weight_bytes_per_element(WeightDType.NVFP4) * 8 == Fraction(9, 2)


def test_engine_dtype_aliases_are_understood() -> None:
    assert parse_kv_dtype("fp8_e5m2") is KVDType.FP8
    assert parse_weight_dtype("bfloat16") is WeightDType.BF16
    assert parse_weight_dtype("awq") is WeightDType.INT4


def test_unknown_dtype_lists_valid_ones() -> None:
    with pytest.raises(InputError, match=r"valid: bf16, fp16, fp8$"):
        parse_kv_dtype("int3")
