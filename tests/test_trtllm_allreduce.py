"""TensorRT-LLM's all-reduce on Blackwell (allreduce_curves.trtllm_allreduce_curve): InferenceX's
TensorRT-LLM scripts leave `allreduce_strategy` at AUTO, which runs a decode step's all-reduce in
the one-shot kernel and a prefill chunk's in NCCL; both are priced at TensorRT-LLM's AllReduce as
aiconfigurator measured it at AUTO on B200 / B300, TP > 1 without attention DP."""

from __future__ import annotations

import pytest

from capcliff.perf.allreduce_curves import lamport_allreduce_curve, trtllm_allreduce_curve
from tests.conftest import step_model

# aiconfigurator-core 0.12, b200_sxm comm/trtllm/1.3.0rc20 custom_allreduce_perf, TP 8 (BF16
# elements -> us): 16,384 -> 6.09, 32,768 -> 5.99, 33,554,432 -> 278.76, 67,108,864 -> 397.81
US = 1e-6
R1_LAYERS_X2 = 122  # DeepSeek-R1: 61 decoder layers, two TP all-reduces each


def _comm_s(gpu: str, engine: str, layout: str, tokens: int) -> float:
    """Seconds of one pass's TP all-reduces of DeepSeek-R1 (the step model's communication)."""
    return step_model("deepseek-r1", gpu, engine, layout).comm.pass_s(tokens, pp=1)


@pytest.mark.parametrize(
    ("index", "message_bytes", "us"),
    [(7, 32_768.0, 6.09), (19, 134_217_728.0, 397.81)],
    ids=["16k-elements", "64m-elements"],
)
def test_the_curve_is_the_whole_measured_table_in_bytes(
    index: int, message_bytes: float, us: float
) -> None:
    assert trtllm_allreduce_curve("b200", tp=8)[index] == (message_bytes, pytest.approx(us * US))


@pytest.mark.parametrize(("gpu", "tp"), [("h200-sxm", 8), ("b200", 16)])
def test_unmeasured_gpus_and_rank_counts_have_no_curve(gpu: str, tp: int) -> None:
    assert trtllm_allreduce_curve(gpu, tp=tp) == ()


def test_below_the_workspace_it_is_the_lamport_table() -> None:
    """The sizes SGLang's FlashInfer port was priced at are the same measurement."""
    lamport = lamport_allreduce_curve("b300", tp=4)
    assert trtllm_allreduce_curve("b300", tp=4)[: len(lamport)] == lamport


def test_four_sequences_of_r1_pay_the_one_shot_time() -> None:
    """4 tokens x 7,168 x 2 B = 57,344 B, between 32,768 B (6.09 us) and 65,536 B (5.99 us):
    6.09 - 0.10 x 24,576 / 32,768 = 6.015 us each, 122 per pass: 733.83 us; under the assumed
    8 us + wire (57,344 B x 2 x 7/8 at 900 GB/s = 0.11 us) it was 989.6 us."""
    assert _comm_s("b200", "trtllm", "tp8", 4) == pytest.approx(733.83 * US)


def test_a_prefill_chunk_pays_the_measured_large_message_time() -> None:
    """8,192 tokens x 7,168 = 58,720,256 elements (117,440,512 B), between 67,108,864 B
    (278.76 us) and 134,217,728 B (397.81 us): 278.76 + 119.05 x 0.75 = 368.0475 us each."""
    assert _comm_s("b200", "trtllm", "tp8", 8192) == pytest.approx(R1_LAYERS_X2 * 368.0475 * US)


@pytest.mark.parametrize(
    ("gpu", "engine", "layout"),
    [
        ("b200", "trtllm", "dpa8-ep8"),  # attention DP: no TP all-reduce in the layers
        ("h200-sxm", "trtllm", "tp8"),  # Hopper keeps PR #2904's curve
        ("b200", "vllm", "tp8"),  # another engine
    ],
)
def test_elsewhere_it_is_not_this_curve(gpu: str, engine: str, layout: str) -> None:
    curve = step_model("deepseek-r1", gpu, engine, layout).comm.allreduce_curve
    assert curve != trtllm_allreduce_curve("b200", tp=8)
