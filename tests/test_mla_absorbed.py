"""vLLM V0 0.7.1-0.7.x's materialised MLA decode matrices (memory.overheads.mla_absorbed_bytes).

The engine rule (vllm/attention/backends/mla, `MLACommonImpl.process_weights_after_loading`
with VLLM_MLA_PERFORM_MATRIX_ABSORPTION, PR #12528 in 0.7.1 until PR #14770 removed it for
0.8.0): W_Q_UK = W_UQ absorbed with W_UK, Lq x (N x Lkv) per rank, and W_UV_O = W_UV absorbed
with W_O, (N x Lkv) x H, requantised to the checkpoint's FP8 block format; W_QR copied to BF16.
The decode reads these three instead of q_b_proj, kv_b_proj and o_proj. Every figure below is
worked by hand from DeepSeek-R1's config.json (hidden 7168, 128 heads, q_lora_rank 1536,
kv_lora_rank 512, qk_nope 128, qk_rope 64, v_head 128, 61 layers, FP8 weights in 128 x 128
blocks with one fp32 scale each).
"""

from __future__ import annotations

from typing import Any

import pytest

from capcliff.catalog.catalogs import get_hardware, get_model
from capcliff.catalog.layout import parse_layout
from capcliff.memory.budget import BudgetSettings, EngineName, StageBudget
from capcliff.memory.layout_memory import layout_memory
from capcliff.memory.overheads import mla_absorbed_bytes, vllm_v0_materialises_mla
from capcliff.memory.weights import WeightScheme
from capcliff.perf.profiles import engine_profile
from capcliff.perf.step_time import step_time_model
from capcliff.units import KVDType

LAYERS = 61


def _block_fp8(rows: int, cols: int) -> int:
    """Bytes of a rows x cols FP8 matrix with one 4-byte scale per 128 x 128 block."""
    return rows * cols + (rows // 128) * (cols // 128) * 4


# TP 8: 128 / 8 = 16 heads per GPU.
# W_Q_UK: 1536 x (16 x 512) = 1536 x 8192; W_UV_O: (16 x 512) x 7168 = 8192 x 7168;
# W_QR: 1536 x (16 x 64) in BF16.
HELD_PER_LAYER = _block_fp8(1536, 8192) + _block_fp8(8192, 7168) + 1536 * 1024 * 2
# q_b_proj 1536 x (16 x 192), kv_b_proj 512 x (16 x 256), o_proj (16 x 128) x 7168, all FP8
REPLACED_PER_LAYER = _block_fp8(1536, 3072) + _block_fp8(512, 4096) + _block_fp8(2048, 7168)


def test_hand_worked_bytes_per_layer() -> None:
    # 12,582,912 + 3,072 B; 58,720,256 + 14,336 B; 3,145,728 B
    assert HELD_PER_LAYER == 12_585_984 + 58_734_592 + 3_145_728 == 74_466_304
    assert REPLACED_PER_LAYER == 4_719_744 + 2_097_664 + 14_683_648 == 21_501_056


def test_r1_tp8_absorbed_matrices() -> None:
    arch = get_model("deepseek-r1").arch
    got = mla_absorbed_bytes(arch, parse_layout("tp8"), WeightScheme.as_shipped(arch), 0)
    assert got.held_bytes == LAYERS * HELD_PER_LAYER == 4_542_444_544
    assert got.replaced_bytes == LAYERS * REPLACED_PER_LAYER == 1_311_564_416


def test_no_mla_no_absorbed_matrices() -> None:
    arch = get_model("llama-3.1-8b").arch
    got = mla_absorbed_bytes(arch, parse_layout("tp1"), WeightScheme.as_shipped(arch), 0)
    assert (got.held_bytes, got.replaced_bytes) == (0, 0)


@pytest.mark.parametrize(
    ("release", "absorbs"),
    [((0, 7, 0), False), ((0, 7, 1), True), ((0, 7, 3), True), ((0, 7, 4), True),
     ((0, 8, 0), False), ((0, 10, 1), False), (None, False)],
)  # fmt: skip
def test_releases_that_materialise(release: tuple[int, int, int] | None, absorbs: bool) -> None:
    assert vllm_v0_materialises_mla(release) is absorbs


def _r1_tp8() -> tuple[tuple[Any, ...], dict[str, Any]]:
    """DeepSeek-R1 tp8 on H200 with BF16 KV: the arguments both models below share."""
    arch = get_model("deepseek-r1").arch
    args = (arch, get_hardware("h200-sxm"), parse_layout("tp8"))
    return args, {"scheme": WeightScheme.as_shipped(arch), "kv_dtype": KVDType.BF16}


def _stage(release: tuple[int, int, int] | None) -> StageBudget:
    args, shared = _r1_tp8()
    return layout_memory(
        *args,
        **shared,
        max_model_len=32_768,
        settings=BudgetSettings(engine=EngineName.VLLM_V0, engine_release=release),
    ).stages[0]


def _weights_overhead(release: tuple[int, int, int] | None) -> int:
    return _stage(release).term("weights_overhead")


def test_v0_pads_the_mla_cache_entry_in_0_7_2_to_0_7_x_only() -> None:
    # 576 elements -> 640 (256 B of BF16) x 2 B x 61 layers = 78,080 B, unpadded 70,272 B
    # (PR #12676 to PR #14842: test_kv.py)
    assert _stage((0, 7, 3)).kv_bytes_per_token == 640 * 2 * LAYERS == 78_080
    for release in ((0, 7, 1), (0, 8, 0), None):
        assert _stage(release).kv_bytes_per_token == 576 * 2 * LAYERS == 70_272


def test_v0_0_7_budget_holds_the_absorbed_matrices_too() -> None:
    # the same model and layout: only the absorbed matrices differ between 0.7.3 and 0.8.0
    assert _weights_overhead((0, 7, 3)) - _weights_overhead((0, 8, 0)) == LAYERS * HELD_PER_LAYER
    assert _weights_overhead((0, 7, 0)) == _weights_overhead((0, 8, 0)) == _weights_overhead(None)


def _decode_weight_bytes(version: str) -> float:
    args, shared = _r1_tp8()
    return step_time_model(
        *args,
        **shared,
        profile=engine_profile(EngineName.VLLM_V0, version),
    ).weight_bytes


def test_v0_0_7_decode_reads_the_absorbed_matrices_instead() -> None:
    extra = LAYERS * (HELD_PER_LAYER - REPLACED_PER_LAYER)  # 3,230,880,128 B per decode step
    assert extra == 3_230_880_128
    assert _decode_weight_bytes("0.7.4") - _decode_weight_bytes("0.8.0") == extra
    assert _decode_weight_bytes("0.6.3") == _decode_weight_bytes("0.8.0")
    assert engine_profile(EngineName.VLLM_V0, "0.7.4").mla_absorbed_decode
    assert not engine_profile(EngineName.VLLM_V0, "0.8.0").mla_absorbed_decode
