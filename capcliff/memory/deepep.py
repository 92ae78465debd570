"""DeepEP's communication buffers: the bytes each expert-parallel rank allocates for all-to-all.

When an engine runs its MoE dispatch and combine through DeepEP, every rank of the EP group
allocates, once, an NVLink buffer (`cudaMalloc`, shared by IPC inside the node), an RDMA buffer
(NVSHMEM symmetric memory) and a 32 MiB workspace (`csrc/deep_ep.cpp`, `Buffer::Buffer`). The
sizes follow DeepEP's own size hints (`csrc/config.hpp` at tag v1.2.1):

- normal ("high-throughput") mode, `Config::get_nvl_buffer_size_hint(hidden_bytes, ranks)`: per
  channel (num_sms / 2 = 10 by default) and per NVLink peer (at most 8), a receive queue of
  `num_max_nvl_chunked_recv_tokens` tokens of hidden bytes + 8 B of source metadata + 128 top-k
  indices (8 B) and weights (4 B) + 128 fp32 scales, plus (2 x RDMA ranks + 3) ints of counters;
  `get_rdma_buffer_size_hint` the same per RDMA peer, doubled (send and receive), only across
  nodes (more than 8 ranks). The chunk sizes are DeepEP's recommended configs per rank count
  (`Buffer.get_dispatch_config` / `get_combine_config`, `deep_ep/buffer.py`); the engines take the
  larger of the two.
- low-latency mode, `get_low_latency_rdma_size_hint(tokens, hidden, ranks, experts)`
  (`LowLatencyLayout`): two send and two receive buffers of experts x tokens x the larger of the
  dispatch message (16 B + max(2 x hidden, hidden + hidden / 128 x 4 B)) and the combine message
  (hidden / 128 x 4 B + 2 x hidden), two signalling buffers of experts x 4 B (128-aligned), and
  one more 128 B of alignment.

What each engine asks for (all `modeled`):

- SGLang (`--moe-a2a-backend deepep`, `--enable-deepep-moe` before 0.4.9; `token_dispatcher/
  deepep.py`, `DeepEPBuffer.get_deepep_buffer`): `--deepep-mode auto` (its default) sizes both
  modes, normal with hidden x 2 B (`params_bytes = 2`) and low-latency with
  SGLANG_DEEPEP_NUM_MAX_DISPATCH_TOKENS_PER_RANK = 128; `normal` or `low_latency` only one.
- vLLM (`--all2all-backend deepep_high_throughput | deepep_low_latency`,
  `device_communicators/all2all.py`): the NVLink buffer is VLLM_DEEPEP_BUFFER_SIZE_MB = 1024 MiB
  in both; high-throughput adds the same again for RDMA across nodes, low-latency the size hint
  at VLLM_MOE_DP_CHUNK_SIZE = 256 tokens per rank. vLLM uses all-to-all kernels only with DP > 1
  and expert parallelism (`FusedMoEParallelConfig.use_all2all_kernels`), else no buffer.

No engine uses DeepEP by default (vLLM: all-gather/reduce-scatter; SGLang: `none`; TensorRT-LLM
its own all-to-all), so the default backend costs nothing.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from capcliff.catalog.architecture import Architecture
from capcliff.catalog.layout import Layout
from capcliff.errors import InputError
from capcliff.units import MIB

NUM_MAX_NVL_PEERS = 8  # DeepEP csrc/kernels/configs.cuh: ranks reached over NVLink per node
WORKSPACE_BYTES = 32 * MIB  # NUM_WORKSPACE_BYTES, cudaMalloc'd by every Buffer
# Barrier signals (8 ints), buffer pointers and signal pointers (8 x 8 B each) after the NVL buffer.
NVL_TAIL_BYTES = NUM_MAX_NVL_PEERS * 4 + 2 * NUM_MAX_NVL_PEERS * 8
ALIGNMENT_BYTES = 128  # NUM_BUFFER_ALIGNMENT_BYTES
DEFAULT_NUM_SMS = 20  # deep_ep.Buffer.num_sms (vLLM keeps it: "This is the DeepEP default")
MAX_TOPK, MAX_SCALES = 128, 128  # kNumMaxTopK, kNumMaxScales in the size hints
SOURCE_META_BYTES = 8  # internode SourceMeta: two ints
INT4_BYTES = 16
SGLANG_DISPATCH_TOKENS = 128  # SGLANG_DEEPEP_NUM_MAX_DISPATCH_TOKENS_PER_RANK
SGLANG_PARAM_BYTES = 2  # `params_bytes = 2` in SGLang's DeepEP dispatcher
VLLM_BUFFER_BYTES = 1024 * MIB  # VLLM_DEEPEP_BUFFER_SIZE_MB
VLLM_DISPATCH_TOKENS = 256  # VLLM_MOE_DP_CHUNK_SIZE (FusedMoEConfig.max_num_tokens)

# DeepEP's recommended normal-mode configs (deep_ep/buffer.py, v1.2.1): ranks ->
# (NVL receive tokens, RDMA send tokens, RDMA receive tokens), dispatch then combine.
_DISPATCH = {
    2: (256, 6, 128), 4: (256, 6, 128), 8: (256, 6, 128), 16: (288, 20, 128),
    24: (288, 32, 128), 32: (288, 32, 128), 64: (288, 28, 128), 128: (560, 32, 128),
    144: (720, 12, 128), 160: (720, 12, 128),
}  # fmt: skip
_COMBINE = {
    2: (256, 6, 128), 4: (256, 6, 128), 8: (256, 6, 128), 16: (288, 12, 128),
    24: (288, 8, 128), 32: (288, 8, 128), 64: (288, 20, 128), 128: (560, 12, 128),
    144: (720, 8, 128), 160: (720, 8, 128),
}  # fmt: skip


class AllToAllBackend(StrEnum):
    """How an engine moves tokens to and from the experts' ranks (`--all2all-backend`)."""

    NONE = "none"  # every engine's default: gather/reduce-scatter or all-reduce, no buffers
    DEEPEP = "deepep"  # SGLang --moe-a2a-backend deepep, --deepep-mode auto (both modes)
    DEEPEP_HIGH_THROUGHPUT = "deepep_high_throughput"  # vLLM; SGLang --deepep-mode normal
    DEEPEP_LOW_LATENCY = "deepep_low_latency"  # vLLM; SGLang --deepep-mode low_latency


@dataclass(frozen=True)
class DeepEPBuffers:
    """One rank's DeepEP allocation, bytes."""

    nvl_bytes: int  # num_nvl_bytes (cudaMalloc, plus its barrier tail)
    rdma_bytes: int  # num_rdma_bytes (NVSHMEM)
    workspace_bytes: int  # NUM_WORKSPACE_BYTES

    @property
    def total_bytes(self) -> int:
        """Everything the rank holds for DeepEP."""
        tail = NVL_TAIL_BYTES if self.nvl_bytes else 0
        return self.nvl_bytes + tail + self.rdma_bytes + self.workspace_bytes


def _align(value: int, to: int) -> int:
    return -(-value // to) * to


def _config(ranks: int, table: dict[int, tuple[int, int, int]]) -> tuple[int, int, int]:
    if ranks not in table:
        valid = ", ".join(str(r) for r in sorted(table))
        raise InputError(
            f"all2all_backend: DeepEP's normal mode has no config for {ranks} EP ranks; "
            f"valid: {valid}"
        )
    return table[ranks]


def normal_nvl_bytes(hidden_bytes: int, ranks: int, nvl_recv_tokens: int) -> int:
    """`Config::get_nvl_buffer_size_hint` (NVSHMEM built in), bytes."""
    rdma_ranks = max(ranks // NUM_MAX_NVL_PEERS, 1)
    nvl_ranks = min(ranks, NUM_MAX_NVL_PEERS)
    queues = DEFAULT_NUM_SMS // 2 * nvl_ranks
    per_token = hidden_bytes + SOURCE_META_BYTES + MAX_TOPK * (8 + 4) + MAX_SCALES * 4
    total = queues * (2 * rdma_ranks + 3) * 4 + queues * nvl_recv_tokens * per_token
    return _align(total, ALIGNMENT_BYTES)


def normal_rdma_bytes(hidden_bytes: int, ranks: int, rdma_send: int, rdma_recv: int) -> int:
    """`Config::get_rdma_buffer_size_hint`: 0 inside one node, bytes."""
    if ranks <= NUM_MAX_NVL_PEERS:
        return 0
    recv = _align(rdma_recv, rdma_send)  # the Config constructor rounds it up to the send chunk
    queues = DEFAULT_NUM_SMS // 2 * (ranks // NUM_MAX_NVL_PEERS)
    per_token = hidden_bytes + SOURCE_META_BYTES + MAX_TOPK * (8 + 4) + MAX_SCALES * 4 + INT4_BYTES
    total = queues * (NUM_MAX_NVL_PEERS * 2 + 2) * 2 * 4 + queues * recv * per_token * 2
    return _align(total, ALIGNMENT_BYTES)


def low_latency_rdma_bytes(dispatch_tokens: int, hidden: int, experts: int) -> int:
    """`get_low_latency_rdma_size_hint` (`LowLatencyLayout.total_bytes`, then + 128 rounded)."""
    scales = hidden // 128
    dispatch_msg = INT4_BYTES + max(hidden * 2, hidden + scales * 4)
    combine_msg = scales * 4 + hidden * 2
    send = max(dispatch_tokens * dispatch_msg, experts * dispatch_tokens * combine_msg)
    recv = experts * dispatch_tokens * max(dispatch_msg, combine_msg)
    signal = _align(experts * 4, ALIGNMENT_BYTES)
    total = 2 * send + 2 * recv + 2 * signal
    return (total + ALIGNMENT_BYTES) // ALIGNMENT_BYTES * ALIGNMENT_BYTES


def _normal_bytes(hidden_bytes: int, ranks: int) -> tuple[int, int]:
    configs = (_config(ranks, _DISPATCH), _config(ranks, _COMBINE))
    nvl = max(normal_nvl_bytes(hidden_bytes, ranks, c[0]) for c in configs)
    rdma = max(normal_rdma_bytes(hidden_bytes, ranks, c[1], c[2]) for c in configs)
    return nvl, rdma


def deepep_buffers(
    arch: Architecture, layout: Layout, *, engine: str, backend: AllToAllBackend
) -> DeepEPBuffers:
    """What one rank of `layout` allocates for `backend` under `engine` (all zero when none).

    The EP group is the ranks one MoE layer spans (`layout.moe_ranks`); a dense model, a single
    rank, or (vLLM) a layout without DP + EP uses no all-to-all.
    """
    zero = DeepEPBuffers(0, 0, 0)
    moe, ranks = arch.moe, layout.moe_ranks
    if backend is AllToAllBackend.NONE or moe is None or ranks <= 1:
        return zero
    hidden, experts = arch.hidden_size, moe.num_experts
    if experts % ranks:
        raise InputError(
            f"all2all_backend: DeepEP needs the {experts} experts to divide over the "
            f"{ranks} EP ranks"
        )
    internode = ranks > NUM_MAX_NVL_PEERS
    if engine == "sglang":
        nvl = rdma = 0
        if backend is not AllToAllBackend.DEEPEP_LOW_LATENCY:
            nvl, rdma = _normal_bytes(hidden * SGLANG_PARAM_BYTES, ranks)
        if backend is not AllToAllBackend.DEEPEP_HIGH_THROUGHPUT:
            rdma = max(rdma, low_latency_rdma_bytes(SGLANG_DISPATCH_TOKENS, hidden, experts))
        return DeepEPBuffers(nvl, rdma, WORKSPACE_BYTES)
    if engine == "vllm":
        if not (layout.attention_dp and layout.ep > 1):
            return zero  # use_all2all_kernels = dp_size > 1 and use_ep
        if backend is AllToAllBackend.DEEPEP:
            raise InputError(
                "all2all_backend: vLLM names its DeepEP backends deepep_high_throughput and "
                "deepep_low_latency"
            )
        if backend is AllToAllBackend.DEEPEP_HIGH_THROUGHPUT:
            rdma = VLLM_BUFFER_BYTES if internode else 0
        else:
            rdma = low_latency_rdma_bytes(VLLM_DISPATCH_TOKENS, hidden, experts)
        return DeepEPBuffers(VLLM_BUFFER_BYTES, rdma, WORKSPACE_BYTES)
    raise InputError(
        f"all2all_backend: DeepEP buffers are modelled for vllm and sglang, not {engine}"
    )
