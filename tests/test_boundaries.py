"""Boundaries and modeled terms that mutation testing found unguarded (docs/validation.md,
"Mutation testing"): each value below is worked out by hand in its comment."""

from __future__ import annotations

import dataclasses

import pytest

from capcliff.catalog.catalogs import get_model
from capcliff.catalog.layout import parse_layout
from capcliff.memory.budget import BudgetSettings, BudgetTerm, EngineName, Provenance, StageBudget
from capcliff.memory.engines import engine_defaults, sglang_mem_fraction_static
from capcliff.memory.layout_memory import fit_reason
from capcliff.memory.overheads import _forward_elements_per_token, cudagraph_capture_sizes
from capcliff.memory.params import Component, layer_param_groups
from capcliff.units import GIB


@pytest.mark.parametrize(
    ("gib", "expected"),
    [
        # SGLang server_args.py tiers (`gpu_mem < 20 * 1024` etc.: strict, so exactly 20 GiB is
        # in the next tier up), at 0.5.9 (no piecewise CUDA graphs: tests/test_sglang_reserve.py
        # has the 0.5.10-on term). reserved = 512 + 1.5 x max(chunk, 2048) + 2 x graph_bs + TP/8 x
        # 1024 MiB at TP 1:
        # 20 GiB -> (2048, 24): 512 + 3,072 + 48 + 128 = 3,760; (20,480 - 3,760) / 20,480 = 0.816
        (20, 0.816),
        # 35 GiB -> (4096, 32): 512 + 6,144 + 64 + 128 = 6,848; 28,992 / 35,840 = 0.809
        (35, 0.809),
        # 60 GiB -> (8192, 256): 512 + 12,288 + 512 + 128 = 13,440; 48,000 / 61,440 = 0.781
        (60, 0.781),
        # 160 GiB -> (16384, 512): 512 + 24,576 + 1,024 + 128 = 26,240; 137,600 / 163,840 = 0.840
        (160, 0.840),
    ],
)
def test_sglang_memory_tier_starts_at_its_exact_gib(gib: int, expected: float) -> None:
    assert sglang_mem_fraction_static(gib * GIB, tp=1, pp=1, release=(0, 5, 9)) == expected


def test_sglang_tp4_takes_the_large_cuda_graph_batch() -> None:
    # server_args.py: cuda_graph_max_bs 256 if tp_size < 4 else 512 (80 GiB tier). TP 4:
    # 512 + 12,288 + 2 x 512 + 4/8 x 1,024 = 14,336 MiB; (81,920 - 14,336) / 81,920 = 0.825
    # at 0.5.9; from 0.5.10 + 58 piecewise sizes x 8 = 464 -> 14,800; 67,120 / 81,920 = 0.81934
    # -> 0.819.
    assert sglang_mem_fraction_static(80 * GIB, tp=4, pp=1, release=(0, 5, 9)) == 0.825
    assert sglang_mem_fraction_static(80 * GIB, tp=4, pp=1) == 0.819


def _defaults(engine: EngineName, *, gib: int = 80, max_model_len: int = 8192) -> tuple[int, int]:
    d = engine_defaults(
        BudgetSettings(engine=engine), total_memory_bytes=gib * GIB,
        max_model_len=max_model_len, mla=False, tp=1,
    )  # fmt: skip
    return d.max_num_batched_tokens, d.max_num_seqs


def test_vllm_large_gpu_tier_starts_at_exactly_70_gib() -> None:
    # vllm/engine/arg_utils.py get_batch_defaults: device memory >= 70 GiB -> 8192 / 1024.
    assert _defaults(EngineName.VLLM, gib=70) == (8192, 1024)


def test_vllm_v0_chunked_prefill_starts_above_32k() -> None:
    # vLLM V0 turns chunked prefill on only when max_model_len > 32,768: at exactly 32,768 the
    # budget is the whole context, max(32,768, 2,048) = 32,768.
    assert _defaults(EngineName.VLLM_V0, max_model_len=32_768)[0] == 32_768


def test_vllm_v0_keeps_chunked_prefill_off_for_mla() -> None:
    # "Chunked prefill not supported for Multimodal or MLA in V0" (arg_utils.py; 0.7.1-0.7.3
    # force it off in config.py): DeepSeek-R1 served at its whole 163,840-token context budgets
    # max(163,840, 2,048) = 163,840 tokens per step, a GQA model at that context 2,048.
    def batched(mla: bool) -> int:
        return engine_defaults(
            BudgetSettings(engine=EngineName.VLLM_V0), total_memory_bytes=141 * GIB,
            max_model_len=163_840, mla=mla, tp=8,
        ).max_num_batched_tokens  # fmt: skip

    assert (batched(True), batched(False)) == (163_840, 2_048)


def _stage(*, weights: int, reserves: int, kv: int, requested: int, total: int) -> StageBudget:
    terms = (
        BudgetTerm("weights", weights, Provenance.MODELED, "test"),
        BudgetTerm("activations", reserves, Provenance.MODELED, "test"),
    )
    return StageBudget(
        engine=EngineName.VLLM, total_memory_bytes=total, requested_bytes=requested, terms=terms,
        kv_bytes=kv, kv_bytes_per_token=1, block_size=16, blocks=kv // 16,
    )  # fmt: skip


def test_a_kv_pool_of_exactly_zero_bytes_does_not_fit() -> None:
    # 60 GiB weights + 20 GiB reserves use all 80 GiB requested: a 0-byte pool holds nothing.
    stage = _stage(weights=60 * GIB, reserves=20 * GIB, kv=0, requested=80 * GIB, total=80 * GIB)
    reason = fit_reason((stage,), max_model_len=16)
    assert reason.startswith("does not fit:") and "+ reserves" in reason


def test_weights_exactly_filling_the_budget_are_not_reported_as_too_large() -> None:
    # weights == requested is not "weights > usable"; the 0-byte pool is the reason.
    stage = _stage(weights=80 * GIB, reserves=0, kv=0, requested=80 * GIB, total=80 * GIB)
    assert "+ reserves" in fit_reason((stage,), max_model_len=16)


def test_requested_exactly_the_device_fits() -> None:
    # requested == total is not over the device; 1 GiB of KV holds a 16-token request.
    stage = _stage(weights=70 * GIB, reserves=9 * GIB, kv=GIB, requested=80 * GIB, total=80 * GIB)
    assert fit_reason((stage,), max_model_len=16) == ""


def test_cudagraph_capture_sizes_match_row_v04() -> None:
    # Row V04 (tests/fixtures/logs/vllm_v1_v04_..., vLLM 0.10.2): max_num_seqs 256 -> 67 sizes,
    # 1, 2, 4 and every multiple of 8 up to 512 (all under its max_num_batched_tokens 2048).
    sizes = cudagraph_capture_sizes(256, release=(0, 10, 2), max_num_batched_tokens=2048)
    assert sizes == [1, 2, 4, *range(8, 513, 8)] and len(sizes) == 67


@pytest.mark.parametrize(
    ("max_num_seqs", "expected"),
    [
        (1, [1, 2]),  # largest = 2 x 1 = 2: 4 is left out
        (2, [1, 2, 4]),  # largest 4
        (4, [1, 2, 4, 8]),  # largest 8: the first multiple of 8 is included
        # 2 x 300 = 600 capped at 512: steps of 8 below 256, of 16 from 256 (3 + 31 + 17 = 51)
        (300, [1, 2, 4, *range(8, 256, 8), *range(256, 513, 16)]),
    ],
)
def test_cudagraph_capture_sizes_at_small_and_capped_batches(
    max_num_seqs: int, expected: list[int]
) -> None:
    # no release named: vLLM 0.24.0's rule
    assert cudagraph_capture_sizes(max_num_seqs) == expected


def test_mla_activation_width_per_token() -> None:
    # DeepSeek-R1 config.json, dense MLP (MoE left out to isolate the attention term), TP 8:
    # q/k heads 128 x (qk_nope 128 + qk_rope 64) / 8 = 3,072, + kv_lora_rank 512 = 3,584;
    # MLP 3 x 18,432 / 8 = 6,912; hidden 7,168. Total 3,584 + 6,912 + 7,168 = 17,664.
    arch = dataclasses.replace(get_model("deepseek-r1").arch, moe=None)
    assert _forward_elements_per_token(arch, parse_layout("tp8"), modular_moe=False) == 17_664


def test_gqa_activation_width_per_token() -> None:
    # Llama-3.1-8B config.json, TP 2: (32 + 2 x 8) heads x 128 / 2 = 3,072; MLP 3 x 14,336 / 2
    # = 21,504; hidden 4,096. Total 28,672.
    arch = get_model("llama-3.1-8b").arch
    assert _forward_elements_per_token(arch, parse_layout("tp2"), modular_moe=False) == 28_672


def test_qwen3_layer_norm_parameters_include_q_and_k_norms() -> None:
    # Qwen3-8B checkpoint, layer 0: input_layernorm and post_attention_layernorm [4,096] each,
    # self_attn.q_norm and self_attn.k_norm [head_dim 128] each: 8,192 + 256 = 8,448.
    groups = layer_param_groups(get_model("qwen3-8b").arch, 0)
    assert sum(g.elements for g in groups if g.component is Component.NORMS) == 8_448
