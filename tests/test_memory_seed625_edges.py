"""Edges the memory mutation sample of seed 625 found untested (benchmarks/mutation.py --packages
memory --sample 40 --seed 625). Every expected value is worked out by hand in the comments."""

from __future__ import annotations

from capcliff.catalog.catalogs import get_model
from capcliff.catalog.layout import parse_layout
from capcliff.memory.deepep import AllToAllBackend, deepep_buffers
from capcliff.units import MIB

R1 = get_model("deepseek-r1").arch  # hidden 7,168, 256 routed experts


def test_vllm_allocates_deepep_buffers_from_two_expert_parallel_ranks() -> None:
    # vLLM runs its MoE through all-to-all kernels when `dp_size > 1 and use_ep`
    # (vllm/model_executor/layers/fused_moe/config.py, FusedMoEParallelConfig
    # .use_all2all_kernels): DP 2 with expert parallelism over its 2 ranks (dp2-ep2) is the
    # smallest such layout, and allocates what DP 8 does (the low-latency hint depends on the
    # experts, not the ranks):
    #   NVL buffer VLLM_DEEPEP_BUFFER_SIZE_MB = 1,024 MiB = 1,073,741,824 B
    #   RDMA at 256 tokens per rank (VLLM_MOE_DP_CHUNK_SIZE), R1's messages (hidden 7,168):
    #     combine 56 x 4 + 7,168 x 2 = 14,560 B > dispatch 16 + 14,336 = 14,352 B, so
    #     send = recv = 256 experts x 256 tokens x 14,560 = 954,204,160 B;
    #     4 x 954,204,160 + 2 x (256 x 4 = 1,024 signalling) = 3,816,818,688, + 128 -> 3,816,818,816
    #   NVL tail 8 x 4 + 8 x 8 + 8 x 8 = 160 B; workspace 32 MiB = 33,554,432 B
    #   total 1,073,741,824 + 160 + 3,816,818,816 + 33,554,432 = 4,924,115,232 B
    ll = deepep_buffers(
        R1, parse_layout("dp2-ep2"), engine="vllm", backend=AllToAllBackend.DEEPEP_LOW_LATENCY
    )
    assert (ll.nvl_bytes, ll.rdma_bytes, ll.workspace_bytes) == (
        1_073_741_824, 3_816_818_816, 33_554_432
    )  # fmt: skip
    assert ll.total_bytes == 4_924_115_232
    # high-throughput inside one node: the NVL buffer, no RDMA: 1,024 MiB + 160 + 32 MiB
    ht = deepep_buffers(
        R1, parse_layout("dp2-ep2"), engine="vllm", backend=AllToAllBackend.DEEPEP_HIGH_THROUGHPUT
    )
    assert ht.total_bytes == 1024 * MIB + 160 + 32 * MIB == 1_107_296_416
    # DP 2 with attention DP but no expert parallelism (use_ep false): no all-to-all, nothing
    none = deepep_buffers(
        R1, parse_layout("dpa2"), engine="vllm", backend=AllToAllBackend.DEEPEP_LOW_LATENCY
    )
    assert none.total_bytes == 0
