"""SGLang's fused all-reduce on Blackwell (allreduce_curves.lamport_allreduce_curve): SGLang turns
FlashInfer's all-reduce fusion on for DeepSeek on sm100, so a decode step's TP all-reduces are
priced at TensorRT-LLM's measured Lamport all-reduce on B200 / B300, and nowhere else."""

from __future__ import annotations

import pytest

from capcliff.perf.allreduce_curves import lamport_allreduce_curve
from tests.conftest import step_model

# aiconfigurator-core 0.12, b200_sxm comm/trtllm/1.3.0rc20 custom_allreduce_perf, TP 8:
# 262,144 BF16 elements in 10.94 us, 524,288 in 17.78 us
US = 1e-6


def _comm_s(gpu: str, engine: str, layout: str, tokens: int, model: str = "deepseek-r1") -> float:
    """Seconds of one decode pass's TP all-reduces (the step model's communication term)."""
    return step_model(model, gpu, engine, layout).comm.pass_s(tokens, pp=1)


def test_the_curve_is_the_table_in_bytes() -> None:
    curve = lamport_allreduce_curve("b200", tp=8)
    assert curve[11] == (524_288.0, pytest.approx(10.94 * US))
    assert curve[12] == (1_048_576.0, pytest.approx(17.78 * US))
    assert lamport_allreduce_curve("h200-sxm", tp=8) == ()
    assert lamport_allreduce_curve("b200", tp=16) == ()


def test_r1_at_64_tokens_on_b200_pays_the_measured_all_reduce() -> None:
    """64 tokens x 7,168 x 2 B = 917,504 B, between 524,288 and 1,048,576 B: 10.94 + 6.84 x
    393,216 / 524,288 = 16.07 us per all-reduce; 61 layers x 2 = 122 of them: 1.9607 ms."""
    expected = 122 * (10.94 + (17.78 - 10.94) * 393_216 / 524_288) * US
    assert _comm_s("b200", "sglang", "tp8", 64) == pytest.approx(expected)
    assert expected == pytest.approx(1.9607e-3, rel=1e-4)


def test_one_token_is_cheaper_than_the_assumed_latency() -> None:
    """One token, 7,168 x 2 = 14,336 B, sits between 4,096 elements (8,192 B, 5.64 us) and 8,192
    (16,384 B, 5.93 us): 5.64 + 0.29 x 6,144 / 8,192 = 5.8575 us, below the 8 us latency
    assumed for a fabric with no measured curve."""
    one = _comm_s("b200", "sglang", "tp8", 1)
    assert one == pytest.approx(122 * (5.64 + (5.93 - 5.64) * 6_144 / 8_192) * US)
    assert one < 122 * 8 * US


@pytest.mark.parametrize(
    ("gpu", "engine", "layout", "model"),
    [
        ("b200", "trtllm", "tp8", "deepseek-r1"),  # another engine: its AUTO curve (whole range)
        ("h200-sxm", "sglang", "tp8", "deepseek-r1"),  # Hopper keeps PR #2904's curve
        ("b200", "sglang", "tp8", "llama-3.1-70b"),  # a dense model: SGLang does not fuse
        ("b200", "sglang", "tp8", "mixtral-8x7b"),  # a MoE class SGLang does not list
    ],
)
def test_elsewhere_nothing_changes(gpu: str, engine: str, layout: str, model: str) -> None:
    """Outside SGLang's MoE models on sm100 the all-reduce is not this kernel: the price at 64
    tokens differs from the Lamport curve's."""
    curve = step_model(model, gpu, engine, layout).comm.allreduce_curve
    assert curve != lamport_allreduce_curve("b200", tp=8)


def test_attention_dp_takes_no_curve() -> None:
    """Under DP attention SGLang refuses the fusion (communicator.py: not
    is_dp_attention_enabled())."""
    assert step_model("deepseek-r1", "b200", "sglang", "dpa4-tp2").comm.allreduce_curve == ()
