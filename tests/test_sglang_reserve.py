"""SGLang's reserve terms beyond the base rule, by release (python/sglang/srt/server_args.py
`_handle_gpu_memory_settings` and `_handle_piecewise_cuda_graph`, read in the 0.5.3, 0.5.6, 0.5.9,
0.5.10, 0.5.10.post1, 0.5.11 and 0.5.12 wheels): piecewise CUDA graphs (0.5.10 on), DP attention
(0.5.3 on) and the EAGLE/MTP draft (2 GiB 0.5.3-0.5.9, 4 GiB 0.5.10 on). Every fraction below is
worked by hand in its comment, in MiB, from the GPU's driver total (H100 81,559 MiB, H200 143,771,
MI300X 196,288)."""

from __future__ import annotations

import dataclasses

import pytest

from capcliff.catalog.catalogs import get_hardware
from capcliff.catalog.layout import Layout
from capcliff.memory.budget import BudgetSettings, EngineName
from capcliff.memory.deepep import AllToAllBackend
from capcliff.memory.engines import (
    SGLangServer,
    sglang_mem_fraction_static,
    sglang_piecewise_sizes,
)
from capcliff.memory.layout_memory import LayoutMemory, layout_memory
from capcliff.memory.weights import WeightScheme
from capcliff.units import MIB, KVDType
from tests.conftest import arch_of

H100, H200, MI300X = 81_559 * MIB, 143_771 * MIB, 196_288 * MIB
# The H200's bytes less the CUDA context SGLang sees taken before weights (0.86 GiB):
# 150,754,820,096 - 923,417,969 B
H200_FREE = 149_831_402_127
V0_5_9, V0_5_10_POST1, V0_5_11, V0_5_12 = (0, 5, 9), (0, 5, 10), (0, 5, 11), (0, 5, 12)


def _fraction(total: int, **server: object) -> float:
    given = SGLangServer(**server)  # type: ignore[arg-type]
    return sglang_mem_fraction_static(total, tp=given.tp, pp=given.pp, server=given)


def test_the_piecewise_capture_list_counts_58_sizes_at_8192_tokens() -> None:
    # range(4, 33, 4): 8; range(48, 257, 16): 14; range(288, 513, 32): 8; range(576, 1025, 64):
    # 8; range(1280, 4097, 256): 12; range(4608, 8193, 512): 8 -> 58 (464 MiB at 8 MiB each).
    # At 16,384: + range(8704, 16385, 512), 16 more -> 74. At 2,048: 8 + 14 + 8 + 8 + 4 = 42.
    assert [len(sglang_piecewise_sizes(n)) for n in (2048, 8192, 16384)] == [42, 58, 74]


@pytest.mark.parametrize(
    ("release", "fraction"), [(V0_5_9, 0.907), (V0_5_10_POST1, 0.903), (V0_5_12, 0.903)]
)
def test_a_dense_model_on_one_h200_reserves_the_piecewise_graphs_from_0_5_10(
    release: tuple[int, int, int], fraction: float
) -> None:
    # H200 tier (90-160 GiB): chunked_prefill_size 8,192, cuda_graph_max_bs 256 at TP 1:
    # 512 + 1.5 x 8,192 + 2 x 256 + 1/8 x 1,024 = 13,440 MiB (over the 10 GiB floor);
    # 0.5.9: (143,771 - 13,440) / 143,771 = 0.90652 -> 0.907;
    # 0.5.10 on: + 58 x 8 = 464 -> 13,904; 129,867 / 143,771 = 0.90329 -> 0.903.
    assert _fraction(H200, tp=1, release=release) == fraction


def test_the_h200_pool_of_llama_8b_shrinks_by_the_fraction_step() -> None:
    # SGLang's pool is (total - context) x fraction - weights: the weights cancel between the
    # releases, so the pool falls by int(149,831,402,127 x 0.907) - int(... x 0.903) =
    # 135,897,081,729 - 135,297,756,120 = 599,325,609 B (4,572 tokens of 131,072 B).
    arch = arch_of("llama-3.1-8b")

    def pool(release: tuple[int, int, int]) -> int:
        settings = BudgetSettings(engine=EngineName.SGLANG, engine_release=release)
        return _memory("llama-3.1-8b", "h200-sxm", Layout(), settings).stages[0].kv_bytes

    assert arch.mla is None
    assert pool(V0_5_9) - pool(V0_5_10_POST1) == 599_325_609


def _memory(model: str, gpu: str, layout: Layout, settings: BudgetSettings) -> LayoutMemory:
    arch = arch_of(model)
    return layout_memory(
        arch, get_hardware(gpu), layout, scheme=WeightScheme.as_shipped(arch),
        kv_dtype=KVDType.BF16, max_model_len=8192, settings=settings,
    )  # fmt: skip


@pytest.mark.parametrize("release", [V0_5_9, V0_5_12])
def test_deepseek_r1_dp8_attention_dp_reserves_its_padding(release: tuple[int, int, int]) -> None:
    # `--tp 8 --dp 8 --enable-dp-attention` (capcliff's dp8 under attention DP: SGLang's --tp
    # counts all 8 ranks, so the tier gives cuda_graph_max_bs 512): 512 + 12,288 + 2 x 512 +
    # 8/8 x 1,024 = 14,848; DP attention + 512 x 8 x 3 = 12,288, and 512 > 300: + 512 x 8 x 1.5
    # = 6,144 -> 33,280 MiB; piecewise graphs off under DP attention (so 0.5.9 and 0.5.12
    # agree). (143,771 - 33,280) / 143,771 = 0.76852 -> 0.769; the requested static pool is
    # int(149,831,402,127 x 0.769) = 115,220,348,235 B per GPU.
    assert _fraction(H200, tp=8, dp_attention=8, mla=True, release=release) == 0.769
    settings = BudgetSettings(engine=EngineName.SGLANG, engine_release=release)
    layout = Layout(dp=8, attention_dp=True)
    stage = _memory("deepseek-r1", "h200-sxm", layout, settings).stages[0]
    assert stage.requested_bytes == 115_220_348_235


@pytest.mark.parametrize(
    ("release", "fraction"), [(V0_5_9, 0.897), (V0_5_10_POST1, 0.886), (V0_5_12, 0.886)]
)
def test_an_mla_model_reserves_1_5_gib_for_piecewise_graphs(
    release: tuple[int, int, int], fraction: float
) -> None:
    # DeepSeek-R1 at TP 8 on H200 (no DP attention): 512 + 12,288 + 1,024 + 1,024 = 14,848;
    # (143,771 - 14,848) / 143,771 = 0.89672 -> 0.897 (0.5.9); from 0.5.10 + 1,536 (MLA) ->
    # 16,384; 127,387 / 143,771 = 0.88604 -> 0.886.
    assert _fraction(H200, tp=8, mla=True, release=release) == fraction
    settings = BudgetSettings(engine=EngineName.SGLANG, engine_release=release)
    stage = _memory("deepseek-r1", "h200-sxm", Layout(tp=8), settings).stages[0]
    assert stage.requested_bytes == int(H200_FREE * fraction)


@pytest.mark.parametrize(
    ("method", "release", "fraction"),
    [
        # Llama-3.1-8B + an EAGLE-3 head, TP 1 on an H100 (chunk 8,192, graphs to 256): 13,440.
        # 0.5.9: + 2,048 after the floor -> 15,488; (81,559 - 15,488) / 81,559 = 0.81010 -> 0.81
        ("eagle", V0_5_9, 0.81),
        # 0.5.10.post1: + 4,096, piecewise graphs off under speculation -> 17,536; 0.78499 -> 0.785
        ("eagle", V0_5_10_POST1, 0.785),
        # 0.5.11 on: piecewise graphs stay on: 13,440 + 464 + 4,096 = 18,000; 0.77930 -> 0.779
        ("eagle", V0_5_11, 0.779),
        ("mtp", V0_5_12, 0.779),
        # n-gram: no draft reserve; 0.5.10.post1 turns the piecewise graphs off (13,440; 0.83521
        # -> 0.835), 0.5.12 keeps them (13,904; 0.82952 -> 0.83)
        ("ngram", V0_5_10_POST1, 0.835),
        ("ngram", V0_5_12, 0.83),
    ],
)
def test_a_draft_reserves_its_weights_and_graphs(
    method: str, release: tuple[int, int, int], fraction: float
) -> None:
    assert _fraction(H100, tp=1, speculative=method, release=release) == fraction


def test_the_budget_reads_the_speculative_method() -> None:
    # As the EAGLE 0.5.12 case above: the static pool is int((81,559 MiB - 0.86 GiB) x 0.779)
    # = int(84,597,392,015 x 0.779) = 65,901,368,379 B.
    settings = BudgetSettings(engine=EngineName.SGLANG, speculative="eagle")
    stage = _memory("llama-3.1-8b", "h100-sxm", Layout(), settings).stages[0]
    assert stage.requested_bytes == int(84_597_392_015 * 0.779) == 65_901_368_379


@pytest.mark.parametrize(
    "change",
    [
        {"pd_disaggregation": True},
        {"hierarchical_cache": True},
        {"all2all_backend": AllToAllBackend.DEEPEP},
    ],
    ids=["disagg", "hicache", "deepep"],
)
def test_the_switches_sglang_reads_turn_the_piecewise_graphs_off(change: dict[str, object]) -> None:
    # Qwen3-30B-A3B at TP 1 on an H200, 0.5.12: 13,440 MiB with no piecewise graphs (0.907),
    # 13,904 with them (0.903), as in the dense case above.
    base = BudgetSettings(engine=EngineName.SGLANG)
    off = dataclasses.replace(base, **change)  # type: ignore[arg-type]
    on_stage = _memory("qwen3-30b-a3b", "h200-sxm", Layout(), base).stages[0]
    off_stage = _memory("qwen3-30b-a3b", "h200-sxm", Layout(), off).stages[0]
    assert on_stage.requested_bytes == int(H200_FREE * 0.903)
    assert off_stage.requested_bytes == int(H200_FREE * 0.907)


def test_amd_gpus_pp_and_multimodal_models_reserve_no_piecewise_graphs() -> None:
    # MI300X (196,288 MiB, over 160 GiB: chunk 16,384, graphs to 512) at TP 1: 512 + 24,576 +
    # 1,024 + 128 = 26,240; (196,288 - 26,240) / 196,288 = 0.86632 -> 0.866 on HIP (an NVIDIA
    # GPU of that size would add 74 x 8 = 592: 26,832, 0.86330 -> 0.863).
    assert _fraction(MI300X, tp=1, piecewise_allowed=False) == 0.866
    assert _fraction(MI300X, tp=1) == 0.863
    settings = BudgetSettings(engine=EngineName.SGLANG)
    stage = _memory("llama-3.1-8b", "mi300x", Layout(), settings).stages[0]
    assert stage.requested_bytes == int((196_288 * MIB - 923_417_969) * 0.866)
    # PP 2 on an H200, TP 1: 512 + 12,288 + 512 + 2/8 x 1,024 = 13,568, no piecewise graphs;
    # 130,203 / 143,771 = 0.90563 -> 0.906
    assert _fraction(H200, tp=1, pp=2) == 0.906
    # a vision tower (SGLang's `is_multimodal`) and a listed architecture (model_config.py
    # `piecewise_cuda_graph_disabled_model_archs`: Qwen3NextForCausalLM) turn them off as well:
    # 0.907, as 0.5.9; the same card as plain Llama keeps them (0.903)
    llama = arch_of("llama-3.1-8b")
    for arch, fraction in (
        (dataclasses.replace(llama, vision_params=1), 0.907),
        (dataclasses.replace(llama, model_type="qwen3_next"), 0.907),
        (llama, 0.903),
    ):
        stage = layout_memory(
            arch, get_hardware("h200-sxm"), Layout(), scheme=WeightScheme.as_shipped(arch),
            kv_dtype=KVDType.BF16, max_model_len=8192, settings=settings,
        ).stages[0]  # fmt: skip
        assert stage.requested_bytes == int(H200_FREE * fraction)
