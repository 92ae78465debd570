"""KV cache bytes per token: hand-computed values from config fields."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from capcliff.catalog.catalogs import model_catalog
from capcliff.catalog.layout import Layout
from capcliff.memory.kv import (
    kv_bytes_for_context,
    kv_bytes_per_token,
    kv_bytes_per_token_per_gpu,
    kv_heads_replicated,
    vllm_v0_mla_align_elements,
)
from capcliff.units import KVDType
from tests.conftest import arch_of

BF16, FP8 = KVDType.BF16, KVDType.FP8


@pytest.mark.parametrize(
    ("model_id", "expected"),
    [
        ("llama-3.1-8b", 131_072),  # 2 * 32 layers * 8 kv heads * 128 dim * 2 B
        ("llama-3.1-70b", 327_680),  # 2 * 80 * 8 * 128 * 2
        ("llama-3.1-405b", 516_096),  # 2 * 126 * 8 * 128 * 2
        ("deepseek-r1-distill-qwen-32b", 262_144),  # 2 * 64 * 8 * 128 * 2
        ("deepseek-r1", 70_272),  # 61 layers * (512 latent + 64 rope) * 2 B
        ("qwen3-235b-a22b", 192_512),  # 2 * 94 * 4 * 128 * 2
    ],
)
def test_kv_bytes_per_token_whole_model(model_id: str, expected: int) -> None:
    assert kv_bytes_per_token(arch_of(model_id), kv_dtype=BF16) == expected


@pytest.mark.parametrize("model_id", ["llama-3.1-8b", "llama-3.1-405b", "deepseek-r1"])
def test_fp8_kv_halves_the_bytes(model_id: str) -> None:
    arch = arch_of(model_id)
    assert 2 * kv_bytes_per_token(arch, kv_dtype=FP8) == kv_bytes_per_token(arch, kv_dtype=BF16)


@pytest.mark.parametrize("tp", [1, 2, 4, 8])
def test_mla_latent_is_whole_on_every_tp_rank(tp: int) -> None:
    # 61 * 576 * 2 = 70,272 bytes per token per GPU at every TP: the latent is not split by heads.
    arch = arch_of("deepseek-r1")
    assert kv_bytes_per_token_per_gpu(arch, Layout(tp=tp), kv_dtype=BF16) == [70_272]
    assert kv_heads_replicated(arch, tp) == (tp > 1)


def test_gqa_heads_split_over_tp() -> None:
    # llama-3.1-70b at TP=8: 8 kv heads / 8 = 1 head per rank: 2 * 80 * 1 * 128 * 2 = 40,960.
    arch = arch_of("llama-3.1-70b")
    assert kv_bytes_per_token_per_gpu(arch, Layout(tp=8), kv_dtype=BF16) == [40_960]
    assert not kv_heads_replicated(arch, 8)


def test_tp_beyond_kv_heads_replicates_them() -> None:
    # qwen3-235b-a22b has 4 KV heads; at TP=8 each rank still stores one head:
    # 2 * 94 * 1 * 128 * 2 = 48,128 bytes/token/GPU, twice the 1/8 share (24,064).
    arch = arch_of("qwen3-235b-a22b")
    assert kv_bytes_per_token_per_gpu(arch, Layout(tp=8), kv_dtype=BF16) == [48_128]
    assert kv_heads_replicated(arch, 8)


def test_pp_stages_hold_only_their_layers() -> None:
    # 126 layers over PP=8 in vLLM: [15, 16, 16, 16, 16, 16, 16, 15]; one layer = 2*8*128*2 = 4,096
    # B.
    arch = arch_of("llama-3.1-405b")
    per_stage = kv_bytes_per_token_per_gpu(arch, Layout(pp=8), kv_dtype=BF16)
    assert per_stage == [15 * 4096] + [16 * 4096] * 6 + [15 * 4096]


def test_sliding_window_layers_hold_at_most_the_window() -> None:
    # gpt-oss-120b: 18 full + 18 sliding (window 128) layers, 2 * 8 * 64 * 2 = 2,048 B per layer.
    # At 10,000 tokens: 18 * 10,000 * 2,048 + 18 * 128 * 2,048.
    arch = arch_of("gpt-oss-120b")
    expected = 18 * 10_000 * 2048 + 18 * 128 * 2048
    assert kv_bytes_for_context(arch, 10_000, kv_dtype=BF16) == expected


def test_sliding_window_counts_the_prefill_chunk_in_flight() -> None:
    arch = arch_of("gpt-oss-120b")
    expected = 18 * 10_000 * 2048 + 18 * (128 + 512) * 2048
    assert kv_bytes_for_context(arch, 10_000, kv_dtype=BF16, chunk_tokens=512) == expected


def test_short_contexts_do_not_reach_the_window() -> None:
    arch = arch_of("gemma-3-27b")  # 62 layers, window 1024: every layer stores all 100 tokens
    assert kv_bytes_for_context(arch, 100, kv_dtype=BF16) == 100 * kv_bytes_per_token(
        arch, kv_dtype=BF16
    )


def test_source_notes_32b_10k_tokens_128_requests_is_336_gb() -> None:
    # 262,144 B * 10,000 tokens * 128 requests = 335.5e9 B; the notes say ~336 GB.
    total = (
        kv_bytes_per_token(arch_of("deepseek-r1-distill-qwen-32b"), kv_dtype=BF16) * 10_000 * 128
    )
    assert total == pytest.approx(336e9, rel=0.005)


def test_source_notes_8b_20m_tokens_is_2_6_tb() -> None:
    # 131,072 B * 20e6 tokens = 2.62e12 B (the notes round to "2 TB"; the paper summary says 2.6
    # TB).
    total = kv_bytes_per_token(arch_of("deepseek-r1-distill-llama-8b"), kv_dtype=BF16) * 20_000_000
    assert total == pytest.approx(2.62e12, rel=0.005)


_MODELS = sorted(model_catalog())


@given(model_id=st.sampled_from(_MODELS), tp=st.sampled_from([1, 2, 4, 8, 16]))
def test_per_gpu_kv_times_tp_covers_the_whole_model(model_id: str, tp: int) -> None:
    arch = arch_of(model_id)
    if arch.mla is None and arch.num_kv_heads % tp and tp % arch.num_kv_heads:
        return  # not a valid layout for this model
    per_gpu = kv_bytes_per_token_per_gpu(arch, Layout(tp=tp), kv_dtype=BF16)[0]
    whole = kv_bytes_per_token(arch, kv_dtype=BF16)
    assert per_gpu * tp >= whole
    assert (per_gpu * tp == whole) == (not kv_heads_replicated(arch, tp))


def test_sliding_layers_average_their_window_plus_the_chunk() -> None:
    # gpt-oss-120b at TP=2: 4 KV heads per rank, 2 * 4 * 64 * 2 = 1,024 B per layer per token.
    # At L = 131,072 with an 8,192-token prefill chunk: 18 full layers store every token, 18
    # sliding layers min(L, 128 + 8,192) = 8,320 tokens:
    # (18 * 1,024 * 131,072 + 18 * 1,024 * 8,320) / 131,072 = 18,432 + 1,170 = 19,602 B/token.
    arch = arch_of("gpt-oss-120b")
    per_token = kv_bytes_per_token_per_gpu(
        arch, Layout(tp=2), kv_dtype=BF16, context_tokens=131_072, chunk_tokens=8_192
    )
    assert per_token == [19_602]


def test_vllm_v0_pads_deepseek_mla_entries_to_256_bytes_of_bf16() -> None:
    # vllm/worker/cache_engine.py: align_to_256bytes(576, bf16) = 640 elements (256 B = 128 bf16
    # elements; 576 -> 5 x 128). BF16 cache: 61 x 640 x 2 = 78,080 B/token, 11.1 % above 70,272.
    arch = arch_of("deepseek-r1")
    padded = kv_bytes_per_token_per_gpu(
        arch, Layout(tp=8), kv_dtype=BF16, mla_align_elements=vllm_v0_mla_align_elements((0, 7, 3))
    )
    assert padded == [61 * 640 * 2]
    assert padded[0] / kv_bytes_per_token(arch, kv_dtype=BF16) == pytest.approx(640 / 576)
    # The padding is counted in the model dtype's elements, so an FP8 cache pads to 640 B.
    fp8 = kv_bytes_per_token_per_gpu(arch, Layout(tp=8), kv_dtype=FP8, mla_align_elements=128)
    assert fp8 == [61 * 640]


@pytest.mark.parametrize(
    ("release", "elements"),
    [((0, 7, 1), 1), ((0, 7, 2), 128), ((0, 7, 4), 128), ((0, 8, 0), 1), ((0, 10, 1), 1),
     (None, 1)],
)  # fmt: skip
def test_vllm_v0_pads_mla_only_from_pr_12676_to_pr_14842(
    release: tuple[int, int, int] | None, elements: int
) -> None:
    # #12676 merged 2025-02-04 (after 0.7.1, so first in 0.7.2); #14842 merged 2025-03-15
    # (0.8.0), whose two logs of R1 at TP 8 on V0 read 4,739 blocks padded and 5,266 without:
    # 5,266 / 4,739 = 1.1112, 640 / 576 = 1.1111
    assert vllm_v0_mla_align_elements(release) == elements


def test_alignment_leaves_gqa_entries_alone() -> None:
    arch = arch_of("llama-3.1-8b")
    assert kv_bytes_per_token_per_gpu(arch, Layout(), kv_dtype=BF16, mla_align_elements=128) == [
        131_072
    ]
