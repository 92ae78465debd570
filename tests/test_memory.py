"""KV capacity and fit: the budget arithmetic worked out by hand, and its invariants."""

from __future__ import annotations

from dataclasses import replace

import pytest
from hypothesis import given
from hypothesis import strategies as st

from capcliff.catalog.catalogs import get_hardware
from capcliff.catalog.layout import Layout
from capcliff.memory.budget import BudgetSettings, EngineName, StageBudget, StageDemand
from capcliff.memory.engines import stage_budget
from capcliff.memory.layout_memory import LayoutMemory, layout_memory, layout_warnings
from capcliff.memory.overheads import (
    activation_peak_bytes,
    allocator_rounding_bytes,
    mla_dequantized_bytes,
    nvls_buffer_bytes,
    nvls_channels,
    v1_activation_peak_bytes,
)
from capcliff.memory.params import param_count
from capcliff.memory.weights import WeightScheme, weight_bytes_per_gpu_by_stage
from capcliff.units import GB, GIB, MIB, KVDType
from tests.conftest import arch_of

H200_BYTES = 143_771 * MIB  # nvidia-smi total for H200 SXM


PINNED = {"activation_peak": GIB, "non_torch": GIB // 2}


def _memory(
    model_id: str, layout: Layout, *, max_model_len: int = 32_768, pinned: bool = True
) -> LayoutMemory:
    arch = arch_of(model_id)
    return layout_memory(
        arch,
        get_hardware("h200-sxm"),
        layout,
        scheme=WeightScheme.as_shipped(arch),
        kv_dtype=KVDType.BF16,
        max_model_len=max_model_len,
        settings=BudgetSettings(enforce_eager=True, term_overrides=PINNED if pinned else {}),
    )


def test_vllm_capacity_is_usable_minus_weights_minus_reserves_in_16_token_blocks() -> None:
    # llama-3.1-8b on one H200, vLLM, eager (no CUDA graphs), reserves pinned to 1 GiB activation +
    # 0.5 GiB non-torch: usable = floor(150,754,820,096 * 0.9) = 135,679,338,086 B; weights
    # 16,060,522,496 B; RoPE cache 131,072 * 128 * 2 = 33,554,432 B;
    # kv = 135,679,338,086 - 16,060,522,496 - 33,554,432 - 1,073,741,824 - 536,870,912
    #    = 117,974,648,422 B; blocks = floor(kv / (16 * 131,072)) = 56,254; tokens = 900,064.
    mem = _memory("llama-3.1-8b", Layout())
    assert mem.stages[0].requested_bytes == 135_679_338_086
    assert mem.stages[0].kv_bytes == 117_974_648_422
    assert mem.blocks_per_replica == 56_254
    assert mem.kv_capacity_tokens_per_replica == 900_064


def test_max_concurrency_is_blocks_over_blocks_per_request() -> None:
    # 56,254 blocks; a 10,000-token request needs ceil(10,000 / 16) = 625 blocks: 90 requests.
    assert _memory("llama-3.1-8b", Layout()).max_concurrency(10_000) == 90


def test_dp_replicas_do_not_pool_capacity() -> None:
    one = _memory("llama-3.1-8b", Layout())
    dp8 = _memory("llama-3.1-8b", Layout(dp=8))
    assert dp8.kv_capacity_tokens_per_replica == one.kv_capacity_tokens_per_replica
    assert dp8.kv_capacity_tokens_total == 8 * one.kv_capacity_tokens_per_replica


def test_the_smallest_stage_binds_the_replica() -> None:
    mem = _memory("llama-3.1-405b", Layout(tp=2, pp=4))
    assert mem.blocks_per_replica == min(s.blocks for s in mem.stages)


def test_405b_bf16_does_not_fit_one_gpu_and_says_by_how_much() -> None:
    mem = _memory("llama-3.1-405b", Layout())
    assert not mem.fits
    # 405.85B * 2 B = 811.7 GB of weights against 0.9 * 150.75 GB = 135.7 GB usable.
    assert mem.reason == "does not fit: weights 811.7 GB/GPU > 135.7 GB usable"


def test_too_long_max_model_len_is_a_fit_failure() -> None:
    # llama-3.1-70b on TP=2: ~70 GB of weights per GPU leave ~64 GB: ~1.57M tokens at 40,960 B/token
    # on each of the two ranks; a 2M-token request cannot fit.
    mem = _memory("llama-3.1-70b", Layout(tp=2), max_model_len=2_000_000)
    assert not mem.fits
    assert mem.reason.startswith("does not fit: one request of max_model_len=2000000 needs")


def test_activation_peak_formula_for_llama_8b() -> None:
    # T=8192 tokens * (qkv (32 + 2*8) * 128 + MLP 3 * 14336 + h 4096) * 2 B
    # + 256 seqs * 128,256 vocab * 4 B (fp32 logits).
    expected = 8192 * (48 * 128 + 3 * 14336 + 4096) * 2 + 256 * 128_256 * 4
    arch = arch_of("llama-3.1-8b")
    assert activation_peak_bytes(arch, Layout(), max_num_batched_tokens=8192, max_num_seqs=256) == (
        expected
    )


def test_fp8_kv_doubles_capacity_in_tokens() -> None:
    arch = arch_of("llama-3.1-8b")
    caps = []
    for kv in (KVDType.BF16, KVDType.FP8):
        caps.append(
            layout_memory(
                arch,
                get_hardware("h200-sxm"),
                Layout(),
                scheme=WeightScheme.as_shipped(arch),
                kv_dtype=kv,
                max_model_len=8192,
                settings=BudgetSettings(),
            ).kv_capacity_tokens_per_replica
        )
    assert caps[1] == pytest.approx(2 * caps[0], abs=16)


def _stage(
    weights: int,
    memory: int = 141 * GB,
    per_token: int = 131_072,
    engine: EngineName = EngineName.VLLM,
) -> StageBudget:
    demand = StageDemand(
        arch=arch_of("llama-3.1-8b"),
        layout=Layout(),
        stage=0,
        total_memory_bytes=memory,
        weights_bytes=weights,
        kv_bytes_per_token=per_token,
        max_model_len=8192,
    )
    # SGLang's default mem_fraction_static steps at GPU-memory tiers (server_args.py), and vLLM
    # V1's default max_num_seqs and max_num_batched_tokens step at 70 GiB (256 -> 1,024 sequences,
    # so a larger sampler peak and more graph sizes), so capacity can dip by a few blocks across a
    # tier boundary; the invariants hold for a fixed fraction and fixed caps.
    settings = BudgetSettings(
        engine=engine, mem_fraction_static=0.85, max_num_seqs=256, max_num_batched_tokens=8192
    )
    return stage_budget(demand, settings)


ENGINES = st.sampled_from(list(EngineName))


@given(w1=st.integers(0, 200 * GB), w2=st.integers(0, 200 * GB), engine=ENGINES)
def test_capacity_never_increases_when_weights_grow(w1: int, w2: int, engine: EngineName) -> None:
    small, large = sorted((w1, w2))
    assert _stage(large, engine=engine).blocks <= _stage(small, engine=engine).blocks


@given(m1=st.integers(10 * GB, 300 * GB), m2=st.integers(10 * GB, 300 * GB), engine=ENGINES)
def test_more_hbm_never_lowers_capacity(m1: int, m2: int, engine: EngineName) -> None:
    small, large = sorted((m1, m2))
    low = _stage(16 * GB, memory=small, engine=engine).blocks
    assert low <= _stage(16 * GB, memory=large, engine=engine).blocks


def test_hbm_at_vllms_70_gib_tier_may_dip_by_its_defaults() -> None:
    # Hypothesis found it in CI (70,947,721,473 B against 75,161,927,680 B = 70 GiB, the engine's
    # own caps): vLLM V1 defaults to max_num_seqs 1,024 on a GPU of 70 GiB or more and 256 below
    # (`_set_default_args`), and the sampler's peak grows with its rows: 768 rows more x 128,256
    # logits x 38 B = 3.74 GB, more than the 1 B of HBM gives back, so the pool dips at the tier
    # as the engine's does. The property above fixes the caps.
    demand = StageDemand(
        arch=arch_of("llama-3.1-8b"), layout=Layout(), stage=0,
        total_memory_bytes=70 * 1024**3 - 1, weights_bytes=16 * GB, kv_bytes_per_token=131_072,
        max_model_len=8192,
    )  # fmt: skip
    settings = BudgetSettings(engine=EngineName.VLLM)
    below = stage_budget(demand, settings)
    above = stage_budget(replace(demand, total_memory_bytes=70 * 1024**3), settings)
    peak = {t.name: t.bytes for t in above.terms}["activation_peak"]
    assert peak - {t.name: t.bytes for t in below.terms}["activation_peak"] >= 768 * 128_256 * 38
    assert above.blocks < below.blocks


@given(weights=st.integers(0, 200 * GB), per_token=st.integers(1, 2_000_000), engine=ENGINES)
def test_kv_blocks_never_exceed_the_kv_pool(
    weights: int, per_token: int, engine: EngineName
) -> None:
    stage = _stage(weights, per_token=per_token, engine=engine)
    assert stage.blocks * stage.block_size * per_token <= max(0, stage.kv_bytes)
    used = sum(t.bytes for t in stage.terms) + max(0, stage.kv_bytes)
    assert stage.kv_bytes < 0 or used <= stage.total_memory_bytes


def test_graphs_and_context_that_cannot_fit_outside_the_budget_warn() -> None:
    # vLLM V0 keeps CUDA graphs outside the budget: at utilisation 0.99 only 1 % of 140.4 GiB
    # (1.40 GiB) is left for the 0.86 GiB context and ~1.2 GiB of graphs.
    arch = arch_of("llama-3.1-8b")
    mem = layout_memory(
        arch,
        get_hardware("h200-sxm"),
        Layout(),
        scheme=WeightScheme.as_shipped(arch),
        kv_dtype=KVDType.BF16,
        max_model_len=8192,
        settings=BudgetSettings(engine=EngineName.VLLM_V0, gpu_memory_utilization=0.99),
    )
    assert any("outside the budget" in w for w in mem.warnings)


# --- Engine overheads at scale (overheads.py) ---


def test_v1_sampler_peak_reproduces_row_v04_activation() -> None:
    # vLLM 0.10.2, Qwen3-235B FP8, 8 x L40S: S = 256 (the < 70 GiB default), T = 2048, vocab
    # 151,936. Sampler: 256 x 151,936 x 38 B = 1,478,033,408 B, plus the 2048 x 4096 x 2 B hidden
    # states = 1.392 GiB; the forward pass (0.27 GiB of fused-MoE workspaces) is smaller.
    # Logged: "1.4 GiB for peak activation"; the row's tolerance is the log's 0.01 GiB rounding.
    peak = v1_activation_peak_bytes(
        arch_of("qwen3-235b-a22b-fp8"),
        Layout(tp=8, ep=8),
        max_num_batched_tokens=2048,
        max_num_seqs=256,
    )
    assert peak == 256 * 151_936 * 38 + 2048 * 4096 * 2
    assert peak / GIB == pytest.approx(1.40, abs=0.01)


def test_v1_profile_of_a_few_sequences_is_the_forward_pass() -> None:
    # Llama-3.3-70B, S = 16 (row V37), T = 8192: 8192 x (10,240 qkv + 86,016 MLP + 8192) x 2 B =
    # 1.594 GiB, far above the sampler's 16 x 128,256 x 38 B = 0.073 GiB.
    peak = v1_activation_peak_bytes(
        arch_of("llama-3.3-70b-fp4"), Layout(), max_num_batched_tokens=8192, max_num_seqs=16
    )
    assert peak == 8192 * (10_240 + 86_016 + 8192) * 2


def test_a_layout_with_no_stage_holds_nothing() -> None:
    # an invalid layout has no stage budgets: no weights, no KV per token, no blocks, 0 tokens
    invalid = LayoutMemory(Layout(tp=3), valid=False, reason="tp 3 does not divide 32 heads")
    assert invalid.weights_bytes_per_gpu == invalid.kv_bytes_per_token_per_gpu == 0
    assert invalid.blocks_per_replica == invalid.kv_capacity_tokens_per_replica == 0


def test_nvls_buffers_follow_nccl_sizes() -> None:
    # nccl src/transport/nvls.cc: nHeads x nChannels x 2 x (128 KiB x 8 steps). B200 (NVLink 5,
    # 24 channels in row V35's log) at TP4: 4 x 24 x 2 MiB = 192 MiB; H200 at TP8: 8 x 16 x 2 MiB.
    assert nvls_buffer_bytes(4, nvls_channels(get_hardware("b200"))) == 192 * MIB
    assert nvls_buffer_bytes(8, nvls_channels(get_hardware("h200-sxm"))) == 256 * MIB
    assert nvls_buffer_bytes(2, 16) == 0  # NCCL needs more than 2 GPUs for NVLS
    assert nvls_buffer_bytes(3, 16) == 3 * 16 * 2 * MIB  # 3 is more: 96 MiB on NVLink 4
    assert nvls_channels(get_hardware("mi300x")) == 0  # xGMI mesh: no NVLS


def test_vllm_keeps_bf16_copies_of_a_quantised_kv_b_proj_only() -> None:
    # DeepSeek-R1 (block FP8) at TP8: 61 layers x 512 x (128 x 256) / 8 elements x 2 B = 256 MB.
    # The FP4 checkpoint keeps kv_b_proj in BF16, which vLLM only views.
    r1 = arch_of("deepseek-r1")
    fp4 = arch_of("deepseek-r1-0528-fp4")
    layout = Layout(tp=8)
    assert (
        mla_dequantized_bytes(r1, layout, WeightScheme.as_shipped(r1), 0)
        == 61 * 512 * 32_768 // 8 * 2
    )
    assert mla_dequantized_bytes(fp4, layout, WeightScheme.as_shipped(fp4), 0) == 0


def test_allocator_rounding_of_qwen_32b_tp4_weights_by_hand() -> None:
    # Per rank at TP4 (bf16): qkv_proj 1792 x 5120 = 17.5 MiB -> 18; o_proj 5120 x 1280 = 12.5 MiB
    # -> 14; gate_up 13824 x 5120 = 135 MiB -> 136; down 5120 x 6912 = 67.5 MiB -> 68: 3.5 MiB per
    # layer x 64, plus embedding and lm_head 38,016 x 5120 = 371.25 MiB -> 372 each: 225.5 MiB.
    # Row S02 (SGLang) logs 15.54 GiB at load against 15.29 GiB of weights + RoPE cache: +0.25.
    arch = arch_of("deepseek-r1-distill-qwen-32b")
    waste = allocator_rounding_bytes(arch, Layout(tp=4), WeightScheme.as_shipped(arch), 0)
    assert waste == round(225.5 * MIB)


def test_uneven_pipeline_stages_are_flagged() -> None:
    # 32 layers: PP2 splits 16/16 (no warning); PP3 gives 32 // 3 = 10 each and the remainder of 2
    # to the stages before the last (vLLM get_pp_indices): 11/11/10.
    arch = arch_of("llama-3.1-8b")
    assert not any("PP stages" in w for w in layout_warnings(arch, Layout(pp=2)))
    assert "PP stages hold 11/11/10 layers; the fullest binds" in layout_warnings(
        arch, Layout(pp=3)
    )


def test_a_tied_lm_head_is_loaded_once_on_one_stage() -> None:
    # gemma-3-27b ties lm_head to the embedding: on one GPU its bf16 weights are its language
    # model's parameters x 2 B, the vocabulary matrix counted once (test_params checks the count).
    arch = arch_of("gemma-3-27b")
    scheme = WeightScheme.as_shipped(arch)
    text_params = param_count(arch).total
    assert weight_bytes_per_gpu_by_stage(arch, Layout(), scheme) == [2 * text_params]
