from __future__ import annotations

import pytest

from capcliff.catalog.catalogs import get_hardware
from capcliff.catalog.layout import (
    Layout,
    engine_refusal,
    enumerate_layouts,
    invalid_reason,
    parse_layout,
)
from capcliff.errors import InputError
from tests.conftest import arch_of


@pytest.mark.parametrize(
    ("text", "layout"),
    [
        ("dp4-tp2", Layout(dp=4, tp=2)),
        ("tp8", Layout(tp=8)),
        ("pp4-tp2", Layout(tp=2, pp=4)),
        ("dp8-ep8", Layout(dp=8, ep=8)),
        ("TP2-PP2-DP2", Layout(dp=2, tp=2, pp=2)),
    ],
)
def test_parse_layout_names(text: str, layout: Layout) -> None:
    assert parse_layout(text) == layout


@pytest.mark.parametrize("layout", [Layout(dp=4, tp=2), Layout(tp=8), Layout(dp=8, ep=8), Layout()])
def test_names_round_trip(layout: Layout) -> None:
    assert parse_layout(layout.name) == layout


@pytest.mark.parametrize("bad", ["dp4tp2", "tp0", "tp2-tp4", "xp2", ""])
def test_bad_layout_names_fail_with_the_field(bad: str) -> None:
    with pytest.raises(InputError, match=r"^layout: "):
        parse_layout(bad)


def test_eight_gpus_give_ten_dense_layouts() -> None:
    # Ordered factorisations of 8 into dp*tp*pp: (tp,pp) in {1,2,4,8}x{...}: 4+3+2+1 = 10.
    assert len(enumerate_layouts(8, arch=arch_of("llama-3.1-8b"))) == 10


def test_moe_layouts_add_expert_parallel_options() -> None:
    layouts = enumerate_layouts(8, arch=arch_of("qwen3-30b-a3b"))
    assert Layout(dp=8, ep=8) in layouts
    assert Layout(tp=8, ep=8) in layouts
    assert Layout(dp=4, tp=2, ep=2) in layouts


def test_heads_not_divisible_by_tp_is_invalid() -> None:
    # gemma-3-27b has 32 heads and 16 KV heads: fine at TP 8; qwen2.5-14b has 40 heads: TP=16 fails.
    reason = invalid_reason(
        Layout(tp=16), arch=arch_of("deepseek-r1-distill-qwen-14b"), hardware=get_hardware("gb200")
    )
    assert reason == "40 attention heads are not divisible by TP=16"


def test_tp_across_nodes_without_a_fast_fabric_is_invalid() -> None:
    reason = invalid_reason(
        Layout(tp=16), arch=arch_of("llama-3.1-405b"), hardware=get_hardware("h200-sxm")
    )
    assert reason is not None and "8-GPU" in reason


def test_tp16_is_valid_inside_an_nvl72_domain() -> None:
    reason = invalid_reason(
        Layout(tp=16), arch=arch_of("llama-3.1-405b"), hardware=get_hardware("gb200")
    )
    assert reason is None


def test_ep_on_a_dense_model_is_invalid() -> None:
    reason = invalid_reason(
        Layout(tp=8, ep=8), arch=arch_of("llama-3.1-70b"), hardware=get_hardware("h200-sxm")
    )
    assert reason == "EP applies only to MoE models"


def test_experts_must_divide_by_ep() -> None:
    # mixtral has 8 experts; EP=16 over two nodes leaves half an expert per rank.
    reason = invalid_reason(
        Layout(dp=16, ep=16), arch=arch_of("mixtral-8x7b"), hardware=get_hardware("h200-sxm")
    )
    assert reason == "8 experts are not divisible by EP=16"


def test_ep_above_tp_implies_attention_dp() -> None:
    # dp8-ep8: the EP group spans the eight attention replicas, so they must step together.
    layout = parse_layout("dp8-ep8")
    assert layout.attention_dp and layout.moe_ranks == 8 and layout.moe_tp == 1


def test_attention_dp_without_ep_shards_experts_over_all_ranks() -> None:
    # SGLang `--tp 8 --dp 8 --enable-dp-attention`: attention per rank, MoE width split 8 ways.
    layout = parse_layout("dpa8")
    assert (layout.dp, layout.tp, layout.ep, layout.attention_dp) == (8, 1, 1, True)
    assert (layout.moe_ranks, layout.moe_tp) == (8, 8)
    assert layout.name == "dpa8"


def test_tp8_ep4_splits_each_expert_over_two_ranks() -> None:
    # TensorRT-LLM moe_ep_size=4 x moe_tp_size=2 = tp_size 8.
    layout = parse_layout("tp8-ep4")
    assert (layout.moe_ranks, layout.moe_tp, layout.attention_dp) == (8, 2, False)
    assert (
        invalid_reason(layout, arch=arch_of("deepseek-r1"), hardware=get_hardware("h200-sxm"))
        is None
    )


@pytest.mark.parametrize(
    ("name", "engine", "refused"),
    [
        ("tp8-ep4", "trtllm", False),
        ("tp8-ep4", "sglang", False),
        ("tp8-ep4", "vllm", True),  # vLLM's EP is always TP x DP
        ("dp2-tp4-ep8", "vllm", False),
        ("dpa2-tp4", "trtllm", True),  # TensorRT-LLM's attention DP has attention TP 1
        ("dpa8", "trtllm", False),
        ("dp8-ep8", "vllm-v0", True),  # DP attention is a V1-engine feature
    ],
)
def test_engines_accept_their_own_tp_ep_combinations(name: str, engine: str, refused: bool) -> None:
    assert (engine_refusal(parse_layout(name), engine) is not None) is refused


def test_ep_must_divide_the_ranks_a_moe_layer_spans() -> None:
    reason = invalid_reason(
        Layout(tp=4, ep=8, dp=1), arch=arch_of("deepseek-r1"), hardware=get_hardware("h200-sxm")
    )
    assert reason == "EP=8 does not divide the 4 ranks (TP) a MoE layer spans"


def test_attention_dp_on_a_dense_model_is_invalid() -> None:
    reason = invalid_reason(
        parse_layout("dpa8"), arch=arch_of("llama-3.1-8b"), hardware=get_hardware("h200-sxm")
    )
    assert reason == "attention DP applies only to MoE models"
