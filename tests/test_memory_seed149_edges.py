"""Memory survivors of mutation seeds 107 and 149 (benchmarks/mutation.py), each value worked by
hand."""

from __future__ import annotations

from capcliff.catalog.catalogs import get_hardware, get_model
from capcliff.catalog.layout import Layout
from capcliff.memory.budget import (
    BudgetSettings,
    BudgetTerm,
    EngineName,
    Provenance,
    StageBudget,
    StageDemand,
)
from capcliff.memory.deepep import low_latency_rdma_bytes
from capcliff.memory.draft import SpecMethod, draft_memory, draft_model
from capcliff.memory.engines import stage_budget
from capcliff.memory.fit import largest_max_model_len
from capcliff.memory.layout_memory import fit_reason, layout_memory
from capcliff.memory.report import build_memory_report
from capcliff.memory.weights import WeightScheme
from capcliff.units import GB, GIB, KVDType
from tests.conftest import arch_of

# --- seed 107 ---------------------------------------------------------------------------------


def test_low_latency_send_buffer_when_the_dispatch_send_is_the_larger() -> None:
    # DeepEP LowLatencyLayout: send = max(tokens x dispatch msg, experts x tokens x combine msg).
    # The dispatch side wins only with one expert and a hidden size under 512. Hidden 256
    # (2 scales), 4 tokens, 1 expert:
    #   dispatch = 16 + max(512, 256 + 8) = 528; combine = 2 x 4 + 512 = 520
    #   send = max(4 x 528, 1 x 4 x 520) = max(2,112, 2,080) = 2,112
    #   recv = 1 x 4 x max(528, 520) = 2,112; signalling = 1 x 4 = 4 -> 128
    #   total = 2 x 2,112 + 2 x 2,112 + 2 x 128 = 8,704; (8,704 + 128) // 128 x 128 = 8,832
    # (with the combine side as the send buffer: 8,640 -> 8,704)
    assert low_latency_rdma_bytes(4, 256, 1) == 8_832


def test_eagle3_draft_of_llama_3_1_8b_predicts_over_32000_tokens() -> None:
    # The published head (yuhuili/EAGLE3-LLaMA3.1-Instruct-8B) has draft_vocab_size 32,000, well
    # under the target's 128,256. Its weights on one GPU (bf16), as draft.py composes them:
    #   attention q 4,096^2 + k, v 2 x 4,096 x 1,024 + o 4,096^2 = 41,943,040
    #   two layer norms 2 x 4,096 = 8,192; MLP 3 x 4,096 x 14,336 = 176,160,768
    #   final norm 4,096; lm_head 32,000 x 4,096 = 131,072,000 (32,000 = 500 x 64: no padding)
    #   fc 3 x 4,096 x 4,096 = 50,331,648; no embedding (the target's)
    #   = 399,519,744 elements x 2 B = 799,039,488 B
    # (over the target's vocabulary the lm_head alone would be 1.05 GB)
    arch = arch_of("llama-3.1-8b")
    draft = draft_model(arch, SpecMethod.EAGLE)
    assert draft is not None and draft.arch.vocab_size == 32_000
    memory = draft_memory(draft, Layout(), WeightScheme.as_shipped(arch), KVDType.BF16)
    assert memory.weights_bytes == 799_039_488


def _stage(requested: int) -> StageBudget:
    """One stage of an 80 GB device: 60 GB of weights, a 10 GB KV pool of 1,000-token blocks."""
    weights = BudgetTerm("weights", 60 * GB, Provenance.MODELED, "by hand")
    return StageBudget(
        engine=EngineName.VLLM, total_memory_bytes=80 * GB, requested_bytes=requested,
        terms=(weights,), kv_bytes=10 * GB, kv_bytes_per_token=1_000_000, block_size=1_000,
        blocks=10,
    )  # fmt: skip


def test_a_stage_past_the_device_is_named_whichever_stage_it_is() -> None:
    # vLLM with --kv-cache-memory asks for terms + that pool on every stage, whatever the device
    # holds; under PP the stages differ (embedding first, lm_head and any draft last). One stage
    # asking 90 GB of an 80 GB device does not fit, even if the other asks only 70 GB; with two
    # stages past the device the reason quotes the larger ask.
    over, under, less_over = _stage(90 * GB), _stage(70 * GB), _stage(85 * GB)
    reason = "does not fit: weights, reserves and KV cache need 90.0 GB/GPU on a 80.0 GB device"
    assert fit_reason((under, over), max_model_len=4000) == reason
    assert fit_reason((over, under), max_model_len=4000) == reason
    assert fit_reason((less_over, over), max_model_len=4000) == reason
    # control: both stages within the device and the request within 10 blocks fit
    assert fit_reason((under, under), max_model_len=4000) == ""


def test_the_verdict_quotes_the_usable_memory_of_the_first_layout() -> None:
    # Llama-3.1-70B bf16 on 2 GPUs of 72 GiB (pinned) under SGLang, CUDA context pinned to 1 GiB.
    # Weights: 80 layers x (q 8,192^2 + k, v 2 x 8,192 x 1,024 + o 8,192^2 + norms 2 x 8,192
    # + MLP 3 x 8,192 x 28,672) = 80 x 855,654,400 = 68,452,352,000; embedding and lm_head
    # 2 x 128,256 x 8,192 = 2,101,346,304; final norm 8,192: 70,553,706,496 x 2 B = 141.1 GB.
    # SGLang 0.5.9's fraction (72 GiB = 73,728 MiB, tier chunk 8,192, graph bs 256 below TP 4;
    # no piecewise CUDA graphs before 0.5.10):
    #   TP1 PP1: reserved 512 + 12,288 + 512 + 128 = 13,440 MiB: 60,288 / 73,728 -> 0.818
    #   TP2 PP1 and TP1 PP2: + 128 MiB: 60,160 / 73,728 -> 0.816
    # Usable = (72 - 1) GiB x fraction: TP1 PP1 (the first layout) 76,235,669,504 x 0.818 =
    # 62.36 GB; 2 x 62.36 < 141.1 GB, no layout fits. (The PP2 layout, last: 62.21 GB.)
    model = get_model("llama-3.1-70b")
    settings = BudgetSettings(
        engine=EngineName.SGLANG, engine_release=(0, 5, 9), gpu_total_memory_bytes=72 * GIB,
        term_overrides={"cuda_context": GIB},
    )  # fmt: skip
    report = build_memory_report(
        model, get_hardware("h100-sxm"), gpus=2, layouts=None,
        scheme=WeightScheme.as_shipped(model.arch), kv_dtype=KVDType.BF16, max_model_len=8192,
        settings=settings,
    )  # fmt: skip
    assert report.verdict == "does not fit: weights 141.1 GB > 2 x 62.4 GB usable"


def test_the_verdict_blames_the_weights_only_past_the_most_usable_memory() -> None:
    # The same model on 2 GPUs of 80 GiB (81,920 MiB), CUDA context pinned to 1.4 GB: free
    # 85,899,345,920 - 1,400,000,000 = 84,499,345,920 B. SGLang's fractions:
    #   (0.5.9, no piecewise CUDA graphs)
    #   TP1 PP1: reserved 13,440 MiB: 68,480 / 81,920 -> 0.836: usable 70,641,453,189 B
    #   TP2 PP1, TP1 PP2: 13,568 MiB: 68,352 / 81,920 -> 0.834: usable 70,472,454,497 B
    # The weights, 141,107,412,992 B, fit in 2 x 70.64 GB = 141.28 GB but not in 2 x 70.47 GB:
    # the TP1 layout has room for them (its KV and reserves do not fit), so the verdict may not
    # say the weights exceed the GPUs.
    model = get_model("llama-3.1-70b")
    settings = BudgetSettings(
        engine=EngineName.SGLANG, engine_release=(0, 5, 9), gpu_total_memory_bytes=80 * GIB,
        term_overrides={"cuda_context": 1_400_000_000},
    )  # fmt: skip
    report = build_memory_report(
        model, get_hardware("h100-sxm"), gpus=2, layouts=None,
        scheme=WeightScheme.as_shipped(model.arch), kv_dtype=KVDType.BF16, max_model_len=8192,
        settings=settings,
    )  # fmt: skip
    assert not report.fitting_layouts
    assert report.verdict == "no layout of 2 GPUs fits; see the reasons per layout"


# --- seed 149 ---------------------------------------------------------------------------------


def test_trtllm_holds_back_no_reserve_when_nothing_is_free() -> None:
    # TensorRT-LLM's KV gets free_gpu_memory_fraction of the memory left after the weights; the
    # rest of that free memory is the (1 - fraction) reserve. With every term pinned on an 80 GiB
    # device: context 1 GiB + weights 90 GiB + rope 0 + activations 2 GiB = 93 GiB, free =
    # -13 GiB: the KV "pool" is the -13 GiB overflow and nothing is free to hold back (0 B).
    demand = StageDemand(
        arch=arch_of("llama-3.1-8b"), layout=Layout(), stage=0, total_memory_bytes=80 * GIB,
        weights_bytes=90 * GIB, kv_bytes_per_token=131_072, max_model_len=8192,
    )  # fmt: skip
    pinned = {"cuda_context": GIB, "weights_overhead": 0, "activation_peak": 2 * GIB}
    budget = stage_budget(demand, BudgetSettings(engine=EngineName.TRTLLM, term_overrides=pinned))
    assert budget.kv_bytes == -13 * GIB
    assert budget.term("fraction_reserve") == 0
    assert budget.blocks == 0


def test_no_request_length_fits_when_the_kv_cache_memory_asked_is_past_the_device() -> None:
    # vLLM --kv-cache-memory skips its profiling and allocates exactly that pool on top of the
    # model. Llama-3.1-8B bf16, TP 1, on an H100 (80 GB): a 100 GiB pool alone is past the
    # device, so the engine cannot start and no length fits (0), whatever blocks the pool would
    # hold. A 4 GiB pool holds 4 GiB / (32 layers x 2 x 8 KV heads x 128 x 2 B = 131,072 B) =
    # 32,768 tokens (2,048 blocks of 16).
    arch = arch_of("llama-3.1-8b")

    def largest(pool: int) -> int:
        mem = layout_memory(
            arch, get_hardware("h100-sxm"), Layout(), scheme=WeightScheme.as_shipped(arch),
            kv_dtype=KVDType.BF16, max_model_len=8192,
            settings=BudgetSettings(engine=EngineName.VLLM, kv_cache_memory_bytes=pool),
        )  # fmt: skip
        return largest_max_model_len(mem)

    assert largest(4 * GIB) == 32_768
    assert largest(100 * GIB) == 0


def test_an_overflowing_vllm_pool_holds_no_block_even_of_one_byte() -> None:
    # vLLM's KV pool is total x utilisation - terms; past the device it is negative and holds no
    # block. With 1-token blocks of 1 B (the smallest block there is) any positive pool would
    # hold one: 80 GiB x 0.9 = 72 GiB - (90 GiB of weights + the rest) < 0 -> 0 blocks.
    demand = StageDemand(
        arch=arch_of("llama-3.1-8b"), layout=Layout(), stage=0, total_memory_bytes=80 * GIB,
        weights_bytes=90 * GIB, kv_bytes_per_token=1, max_model_len=8192,
    )  # fmt: skip
    budget = stage_budget(demand, BudgetSettings(engine=EngineName.VLLM, block_size=1))
    assert budget.kv_bytes < 0
    assert budget.blocks == 0
