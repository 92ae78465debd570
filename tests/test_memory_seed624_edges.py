"""Edges the memory mutation sample of seed 624 found untested (benchmarks/mutation.py --packages
memory --sample 40 --seed 624), and the bug one of them showed. Every expected value is worked
out by hand in the comments."""

from __future__ import annotations

import dataclasses

import pytest

from capcliff.catalog.layout import Layout
from capcliff.memory.budget import BudgetTerm, EngineName, Provenance, StageBudget
from capcliff.memory.engines import sglang_piecewise_sizes
from capcliff.memory.fit import largest_max_model_len
from capcliff.memory.layout_memory import fit_reason, sglang_served_len
from capcliff.units import GIB
from tests.simtools import llama_8b_h200


def _sglang_stage(*, kv: int, per_token: int, page: int) -> StageBudget:
    # 60 GiB of weights in an 80 GiB budget on an 80 GiB device; what is left (`kv` bytes) is the
    # KV pool, `kv // per_token // page` whole pages of `page` tokens.
    terms = (BudgetTerm("weights", 80 * GIB - kv, Provenance.MODELED, "test"),)
    return StageBudget(
        engine=EngineName.SGLANG, total_memory_bytes=80 * GIB, requested_bytes=80 * GIB,
        terms=terms, kv_bytes=kv, kv_bytes_per_token=per_token, block_size=page,
        blocks=kv // per_token // page,
    )  # fmt: skip


def test_an_sglang_pool_of_no_whole_page_does_not_fit() -> None:
    # SGLang rounds its pool down to whole pages and refuses to start with none
    # (model_runner.py `init_memory_pool`: max_total_num_tokens // page_size * page_size, then
    # "Not enough memory. Please try to increase --mem-fraction-static." when <= 0). 65,536 B
    # of KV at 131,072 B a token (Llama-3.1-8B, BF16) is half a token: 0 pages. `memory` (which
    # lets an SGLang pool shorter than the context cap the requests instead of failing) said it
    # fits and serves "requests of at most -1 tokens" (0 tokens less one).
    reason = fit_reason(
        (_sglang_stage(kv=65_536, per_token=131_072, page=1),), max_model_len=4096,
        caps_to_pool=True,
    )  # fmt: skip
    assert reason == (
        "does not fit: 65.5 KB of KV/GPU holds no page of 1 token(s) (131.1 KB): the engine "
        "refuses an empty pool"
    )
    # 16 pages of 64 tokens (1 MiB = 16 x 64 x 1,024 B) is 1,024 tokens under the 4,096
    # context: SGLang starts and caps its requests at the pool (`sglang_served_len`): fits.
    held = _sglang_stage(kv=1 << 20, per_token=1_024, page=64)
    assert held.blocks == 16
    assert fit_reason((held,), max_model_len=4096, caps_to_pool=True) == ""
    # one byte short of the 16th page: 15 pages, still fits
    assert fit_reason(
        (_sglang_stage(kv=(1 << 20) - 1, per_token=1_024, page=64),), max_model_len=4096,
        caps_to_pool=True,
    ) == ""  # fmt: skip


def test_sglang_serves_up_to_its_smallest_stages_pool_less_one() -> None:
    # Under PP every stage holds its own pool, and SGLang takes the smallest over all ranks
    # (model_runner.py: max_total_num_tokens all-reduced with ReduceOp.MIN) before its
    # scheduler caps requests at it less one (tp_worker.py `max_req_len`). Stages of 1 MiB and
    # 2 MiB at 1,024 B a token in 64-token pages: 16 pages = 1,024 tokens and 32 pages = 2,048
    # tokens; a 4,096-token context is served up to 1,024 - 1 = 1,023 tokens, in either order.
    # (Seed 624's `max` over the stages gave 2,047.)
    small = _sglang_stage(kv=1 << 20, per_token=1_024, page=64)
    large = _sglang_stage(kv=2 << 20, per_token=1_024, page=64)
    assert sglang_served_len((small, large), 4096) == 1_023
    assert sglang_served_len((large, small), 4096) == 1_023
    # a pool of at least the context serves the context
    assert sglang_served_len((large, large), 2_048) == 2_048


def test_one_byte_of_kv_is_a_pool_too_small_for_a_request_not_weights_over_the_budget() -> None:
    # 80 GiB requested less 1 B of weights and reserves leaves a 1-byte pool: the weights and
    # reserves are under what is usable, so the reason is the request's: 16 tokens (the
    # context) in one 16-token page at 1,024 B a token need 16,384 B = 16.4 KB, and 1 B is left.
    # (Seed 624's `kv_bytes <= 1` said "weights ... + reserves ... > ... usable", which is false
    # by 1 byte.)
    stage = dataclasses.replace(
        _sglang_stage(kv=1, per_token=1_024, page=16), engine=EngineName.VLLM
    )
    assert fit_reason((stage,), max_model_len=16) == (
        "does not fit: one request of max_model_len=16 needs 16.4 KB of KV/GPU, 1 B is left"
    )


def test_an_sglang_pool_of_64_token_pages_holds_the_whole_pages_of_its_tokens() -> None:
    # SGLang sizes its pool in tokens (KV // cell) and rounds it down to whole pages
    # (model_runner.py: max_total_num_tokens // page_size * page_size). The same deployment
    # with --page-size 64: the same KV bytes, and a pool of floor(tokens / 64) pages, e.g.
    # 909,451 tokens -> 14,210 pages (14,210.2). Seed 624's `tokens * page` gave 64 x the
    # tokens (the tests ran SGLang only at its default page of 1 token, where both agree).
    one = llama_8b_h200("sglang").memory(Layout(), 4096).stages[0]
    paged = llama_8b_h200("sglang", block_size=64).memory(Layout(), 4096).stages[0]
    assert (one.block_size, paged.block_size) == (1, 64)
    assert paged.kv_bytes == one.kv_bytes
    tokens = one.kv_bytes // one.kv_bytes_per_token
    assert one.blocks == tokens
    assert paged.blocks == tokens // 64


def test_sglangs_piecewise_sizes_past_1024_tokens_step_by_256_to_4096_then_by_512() -> None:
    # server_args.py `_generate_piecewise_cuda_graph_tokens` (0.5.9-0.5.12): after 576-1,024 by
    # 64, range(1280, 4097, 256) = 1,280, 1,536, ..., 4,096 (12 sizes), then range(4608,
    # max + 1, 512). Up to 5,120: 1,024, then those 12, then 4,608 and 5,120. (Seed 624's step
    # of 255 gave 1,535, 1,790, ...: the same 12 sizes counted at every tier's chunk, so the
    # reserve, 8 MiB a size, did not change; the list did.)
    assert sglang_piecewise_sizes(5120)[-15:] == [
        1024, 1280, 1536, 1792, 2048, 2304, 2560, 2816, 3072, 3328, 3584, 3840, 4096, 4608, 5120,
    ]  # fmt: skip


@pytest.mark.parametrize(
    ("engine", "settings"),
    [("trtllm", {}), ("vllm", {"gpu_memory_utilization": 1.0})],
    ids=["trtllm", "vllm-at-1.0"],
)
def test_a_budget_of_exactly_the_device_holds_its_whole_blocks(
    engine: str, settings: dict[str, object]
) -> None:
    # TensorRT-LLM's budget is the whole device (its fraction applies to what is free after
    # weights and activations), and vLLM's at gpu_memory_utilization 1.0 is too: requested ==
    # total is not over the device, so the longest request is the tightest stage's whole
    # blocks x the block size (one stage here). Seed 624's `requested >= total` read both as
    # over the device: 0 tokens.
    mem = llama_8b_h200(engine, **settings).memory(Layout(), 4096)
    (stage,) = mem.stages
    assert stage.requested_bytes == stage.total_memory_bytes
    assert stage.blocks > 0
    assert largest_max_model_len(mem) == stage.blocks * stage.block_size
