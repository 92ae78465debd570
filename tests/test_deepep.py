"""DeepEP's buffers in the memory budget, each size worked by hand from DeepEP's size hints."""

from __future__ import annotations

from dataclasses import replace

import pytest
from hypothesis import given
from hypothesis import strategies as st

from capcliff.catalog.catalogs import get_hardware, get_model
from capcliff.catalog.layout import parse_layout
from capcliff.errors import InputError
from capcliff.memory.budget import BudgetSettings, EngineName
from capcliff.memory.deepep import (
    AllToAllBackend,
    deepep_buffers,
    low_latency_rdma_bytes,
    normal_nvl_bytes,
    normal_rdma_bytes,
)
from capcliff.memory.layout_memory import layout_memory
from capcliff.memory.weights import WeightScheme
from capcliff.units import MIB, KVDType

R1 = get_model("deepseek-r1").arch  # hidden 7,168, 256 routed experts
WORKSPACE = 32 * MIB
TAIL = 8 * 4 + 8 * 8 + 8 * 8  # barrier signals, buffer pointers, signal pointers

# Low-latency layout for R1 (hidden 7,168: 56 scales of 128 channels):
#   dispatch message = 16 + max(7,168 x 2, 7,168 + 56 x 4) = 16 + 14,336 = 14,352 B
#   combine message  = 56 x 4 + 7,168 x 2 = 14,560 B
# At 128 tokens per rank (SGLang):
#   send = max(128 x 14,352, 256 x 128 x 14,560) = 477,102,080
#   recv = 256 x 128 x max(14,352, 14,560)        = 477,102,080
#   signalling = 256 x 4 = 1,024 (already 128-aligned)
#   total = 2 x 477,102,080 + 2 x 477,102,080 + 2 x 1,024 = 1,908,410,368, + 128 = 1,908,410,496
R1_LL_128 = 1_908_410_496
# At 256 tokens per rank (vLLM): send = recv = 256 x 256 x 14,560 = 954,204,160
#   total = 4 x 954,204,160 + 2,048 = 3,816,818,688, + 128 = 3,816,818,816
R1_LL_256 = 3_816_818_816
# Normal mode, 8 ranks (one node), hidden 7,168 x 2 B, 256 NVL receive tokens (both configs):
#   queues = 20 SMs / 2 x 8 peers = 80; counters 80 x (2 x 1 + 3) x 4 = 1,600
#   per token = 14,336 + 8 (source meta) + 128 x 8 + 128 x 4 (top-k) + 128 x 4 (scales) = 16,392
#   80 x 256 x 16,392 = 335,708,160; + 1,600 = 335,709,760 -> 128-aligned 335,709,824
R1_NVL_8 = 335_709_824
# 16 ranks (two nodes): NVL receive tokens 288, RDMA ranks 2:
#   NVL: 80 x (2 x 2 + 3) x 4 = 2,240 + 80 x 288 x 16,392 = 377,671,680 -> 377,673,920
#        -> 128-aligned 2,950,578 x 128 = 377,673,984
#   RDMA (dispatch: send 20, receive 128 -> rounded up to 140): queues 10 x 2 = 20;
#        counters 20 x (8 x 2 + 2) x 2 x 4 = 2,880; per token 16,392 + 16 = 16,408;
#        20 x 140 x 16,408 x 2 = 91,884,800; + 2,880 = 91,887,680 -> 91,887,744
#        (combine: receive 132, 86,637,184: the dispatch config is the larger)
R1_NVL_16, R1_RDMA_16 = 377_673_984, 91_887_744


def test_low_latency_buffer_by_hand() -> None:
    assert low_latency_rdma_bytes(128, 7168, 256) == R1_LL_128
    assert low_latency_rdma_bytes(256, 7168, 256) == R1_LL_256


def test_low_latency_buffer_when_the_dispatch_message_is_the_longer() -> None:
    # Below hidden 512 the bf16 dispatch message (16 + 2h) outgrows the combine message
    # (h / 128 x 4 + 2h). Hidden 256 (2 scales), 4 tokens, 4 experts:
    #   dispatch = 16 + max(512, 256 + 8) = 528; combine = 8 + 512 = 520
    #   send = max(4 x 528, 4 x 4 x 520) = 8,320; recv = 4 x 4 x max(528, 520) = 8,448
    #   signalling = 4 x 4 = 16 -> 128; total = 16,640 + 16,896 + 256 = 33,792
    #   (33,792 + 128) // 128 x 128 = 33,920
    assert low_latency_rdma_bytes(4, 256, 4) == 33_920


def test_normal_buffers_by_hand() -> None:
    assert normal_nvl_bytes(7168 * 2, 8, 256) == R1_NVL_8
    assert normal_rdma_bytes(7168 * 2, 8, 6, 128) == 0  # one node: no RDMA buffer
    assert normal_nvl_bytes(7168 * 2, 16, 288) == R1_NVL_16
    assert normal_rdma_bytes(7168 * 2, 16, 20, 128) == R1_RDMA_16
    assert normal_rdma_bytes(7168 * 2, 16, 12, 128) == 86_637_184


def test_each_engine_asks_for_its_own_buffers() -> None:
    dpa8, dp8_ep8 = parse_layout("dpa8"), parse_layout("dp8-ep8")

    def total(layout: str, engine: str, backend: AllToAllBackend) -> int:
        return deepep_buffers(R1, parse_layout(layout), engine=engine, backend=backend).total_bytes

    # SGLang auto mode: normal NVL + the larger of normal RDMA (0) and low-latency RDMA
    auto = R1_NVL_8 + TAIL + R1_LL_128 + WORKSPACE
    assert total("dpa8", "sglang", AllToAllBackend.DEEPEP) == auto == 2_277_674_912  # 2.12 GiB
    assert total("dpa8", "sglang", AllToAllBackend.DEEPEP_LOW_LATENCY) == R1_LL_128 + WORKSPACE
    assert total("dp16-ep16", "sglang", AllToAllBackend.DEEPEP_HIGH_THROUGHPUT) == (
        R1_NVL_16 + TAIL + R1_RDMA_16 + WORKSPACE
    )
    # vLLM: 1,024 MiB of NVL buffer, and RDMA by mode
    ll = deepep_buffers(R1, dp8_ep8, engine="vllm", backend=AllToAllBackend.DEEPEP_LOW_LATENCY)
    assert (ll.nvl_bytes, ll.rdma_bytes) == (1024 * MIB, R1_LL_256)
    assert ll.total_bytes == 4_924_115_232  # 4.59 GiB per rank
    ht = deepep_buffers(R1, dp8_ep8, engine="vllm", backend=AllToAllBackend.DEEPEP_HIGH_THROUGHPUT)
    assert ht.rdma_bytes == 0  # inside one node
    assert total("dp16-ep16", "vllm", AllToAllBackend.DEEPEP_HIGH_THROUGHPUT) == (
        2 * 1024 * MIB + TAIL + WORKSPACE
    )
    # vLLM uses all-to-all kernels only with DP > 1 and EP: TP8-EP8 allocates nothing
    assert total("tp8-ep8", "vllm", AllToAllBackend.DEEPEP_LOW_LATENCY) == 0
    # the default, a dense model, one rank: nothing
    assert total("dpa8", "sglang", AllToAllBackend.NONE) == 0
    dense = get_model("llama-3.1-8b").arch
    assert deepep_buffers(dense, dpa8, engine="sglang", backend=AllToAllBackend.DEEPEP) == (
        deepep_buffers(R1, dpa8, engine="sglang", backend=AllToAllBackend.NONE)
    )


@pytest.mark.parametrize(
    ("layout", "engine", "backend", "words"),
    [
        ("dp8-ep8", "vllm", AllToAllBackend.DEEPEP, "deepep_high_throughput"),
        ("dp8-ep8", "trtllm", AllToAllBackend.DEEPEP_LOW_LATENCY, "not trtllm"),
        ("dp8-ep8", "vllm-v0", AllToAllBackend.DEEPEP_LOW_LATENCY, "not vllm-v0"),
        ("dpa6", "sglang", AllToAllBackend.DEEPEP, "experts to divide"),
        ("dp12-ep12", "sglang", AllToAllBackend.DEEPEP_HIGH_THROUGHPUT, "experts to divide"),
    ],
)
def test_what_deepep_refuses_is_one_line(
    layout: str, engine: str, backend: AllToAllBackend, words: str
) -> None:
    with pytest.raises(InputError, match=words):
        deepep_buffers(R1, parse_layout(layout), engine=engine, backend=backend)


def _memory(layout: str, settings: BudgetSettings):  # type: ignore[no-untyped-def]
    return layout_memory(
        R1, get_hardware("h200-sxm"), parse_layout(layout),
        scheme=WeightScheme.as_shipped(R1), kv_dtype=KVDType.BF16, max_model_len=32_768,
        settings=settings,
    ).stages[0]  # fmt: skip


def test_vllm_takes_the_buffers_off_the_kv_pool_and_sglang_off_its_reserve() -> None:
    vllm = BudgetSettings(engine=EngineName.VLLM)
    before = _memory("dp8-ep8", vllm)
    after = _memory("dp8-ep8", replace(vllm, all2all_backend=AllToAllBackend.DEEPEP_LOW_LATENCY))
    assert before.kv_bytes - after.kv_bytes == 4_924_115_232
    assert after.term("all2all_buffers") == 4_924_115_232
    sglang = BudgetSettings(engine=EngineName.SGLANG)
    before = _memory("dpa8", sglang)
    after = _memory("dpa8", replace(sglang, all2all_backend=AllToAllBackend.DEEPEP))
    assert after.kv_bytes == before.kv_bytes  # created after the pool, at the first dispatch
    assert before.headroom_bytes - after.headroom_bytes == 2_277_674_912
    # a flag or a calibration file may pin the term
    pinned = replace(
        sglang, all2all_backend=AllToAllBackend.DEEPEP, term_overrides={"all2all_buffers": 1}
    )
    assert _memory("dpa8", pinned).term("all2all_buffers") == 1


@given(
    tokens=st.integers(1, 1024),
    hidden=st.sampled_from([2048, 4096, 7168, 8192]),
    experts=st.sampled_from([64, 128, 256, 384]),
)
def test_low_latency_buffer_grows_with_tokens_and_experts(
    tokens: int, hidden: int, experts: int
) -> None:
    size = low_latency_rdma_bytes(tokens, hidden, experts)
    assert size % 128 == 0
    assert low_latency_rdma_bytes(tokens + 1, hidden, experts) > size
    assert low_latency_rdma_bytes(tokens, hidden, experts * 2) > size
    # at least the four data buffers of experts x tokens messages of 2 x hidden bytes
    assert size >= 4 * experts * tokens * 2 * hidden


def test_the_flag_reaches_the_budget_and_bad_names_get_one_line(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from capcliff.cli import main

    args = ["memory", "deepseek-r1", "--gpu", "h200-sxm", "--layout", "dpa8", "--engine", "sglang"]
    assert main([*args, "--all2all-backend", "deepep"]) == 0
    shown = capsys.readouterr().out
    assert "all2all_buffers" in shown and "2.12" in shown  # 2,277,674,912 B, above
    assert main([*args, "--all2all-backend", "pplx"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--all2all-backend" in err and "Traceback" not in err
