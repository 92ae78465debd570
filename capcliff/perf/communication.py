"""Collectives between the GPUs of a layout: the TP all-reduce, and how the tokens of attention-DP
ranks reach the experts of a MoE layer and come back (modeled).

Two ways engines move tokens to and from the experts (`MoEExchange`):

- GATHER: every rank all-gathers every rank's tokens before the MoE layer and reduce-scatters the
  outputs after it (vLLM's `allgather_reducescatter` all2all backend, its default; SGLang's DP
  attention without DeepEP, `dp_gather`/`dp_scatter`; TensorRT-LLM without its all-to-all). A ring
  moves (n - 1) / n of the n x t rows through each GPU, each way.
- ALL_TO_ALL: each token goes only to the ranks holding its top-k experts (dispatch) and their
  outputs come back (combine): DeepEP (deepseek-ai/DeepEP), vLLM's `deepep_*`/`pplx` backends,
  SGLang `--moe-a2a-backend deepep`, TensorRT-LLM's MoE all-to-all. A token is sent once per
  distinct destination rank (DeepEP's `is_token_in_rank`), so for E experts over R ranks, top-k
  routing sends it to R (1 - C(E - E/R, k) / C(E, k)) ranks, one of which may be its own.

Bandwidths: within the scale-up domain one direction of NVLink/xGMI per GPU (half the
bidirectional figure) for point-to-point traffic, the measured all-reduce bus bandwidth (when the
catalog has one) for ring collectives; across nodes the GPU's own NIC (`scaleout_bw_gb_s_per_gpu`).
DeepEP measures 80-96 % of these peaks (DeepEP README: 726 GB/s over 900 GB/s NVLink 5, V1 153 of
~160 GB/s NVLink on H800 and 43-58 GB/s RDMA per 50 GB/s CX7), so capcliff uses the peaks.
Latency of one collective: NCCL's base latency plus one hop per step (NCCL src/graph/tuning.cc:
`baseLat` Ring/LL 6.6 us; `hwLat` per hop in the hardware catalog).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from math import comb

from capcliff.catalog.architecture import Architecture
from capcliff.catalog.layout import Layout
from capcliff.catalog.specs import HardwareSpec
from capcliff.perf.allreduce_curves import allreduce_s
from capcliff.units import GB

# NCCL's fixed cost of launching one ring collective (src/graph/tuning.cc baseLat, Ring/LL = 6.6
# us). Used for the MoE exchange; the TP all-reduce keeps its own named latency (step_time).
COLLECTIVE_BASE_LATENCY_S = 6.6e-6
# Bytes of one activation element sent between GPUs (bf16 hidden states).
ACTIVATION_BYTES = 2
# Bytes of one activation element in BF16, and of one FP8 element with its per-128-element FP32
# scale (DeepEP's FP8 dispatch: 1 B + 4 B / 128).
BF16_BYTES = 2.0
FP8_WITH_SCALE_BYTES = 1.0 + 4.0 / 128
# Hop latency when the catalog has none: NCCL's NVLink / network Ring-LL figures (tuning.cc).
FALLBACK_SCALEUP_LATENCY_US = 0.6
FALLBACK_SCALEOUT_LATENCY_US = 2.7
# One GB/s of the slowest fabric when a GPU's scale-out NIC is unknown: EP across nodes without
# a NIC figure is then visibly slow rather than silently free.
UNKNOWN_SCALEOUT_BYTES_PER_S = 1.0 * GB


@dataclass(frozen=True)
class Communication:
    """Per-pass communication of a stage: TP all-reduces and the PP activation send (bytes,
    bytes/s, seconds). The defaults mean none."""

    allreduces_per_pass: int = 0
    allreduce_bytes_per_token: float = 0.0  # wire bytes per token: hidden x 2 B x 2(n-1)/n
    allreduce_bandwidth_bytes_per_s: float = 1.0
    allreduce_latency_s: float = 0.0
    p2p_bytes_per_token: float = 0.0
    p2p_bandwidth_bytes_per_s: float = 1.0
    p2p_latency_s: float = 0.0
    allreduce_curve: tuple[tuple[float, float], ...] = ()  # measured (message bytes, s)
    allreduce_message_bytes_per_token: float = 0.0  # hidden x 2 B

    def pass_s(self, tokens: float, *, pp: int) -> float:
        """TP all-reduces (the measured curve when there is one, else latency + ring wire time)
        plus, for PP > 1, the activation send of one pass over `tokens` tokens, seconds."""
        total = 0.0
        if self.allreduces_per_pass and self.allreduce_curve:
            message = tokens * self.allreduce_message_bytes_per_token
            ring_bw = self.allreduce_bandwidth_bytes_per_s * (
                self.allreduce_message_bytes_per_token / self.allreduce_bytes_per_token
            )
            total += self.allreduces_per_pass * allreduce_s(self.allreduce_curve, message, ring_bw)
        elif self.allreduces_per_pass:
            wire = tokens * self.allreduce_bytes_per_token / self.allreduce_bandwidth_bytes_per_s
            total += self.allreduces_per_pass * (self.allreduce_latency_s + wire)
        if pp > 1:
            total += self.p2p_latency_s + tokens * self.p2p_bytes_per_token / (
                self.p2p_bandwidth_bytes_per_s
            )
        return total


class MoEExchange(StrEnum):
    """How tokens reach the experts of a MoE layer under attention DP."""

    GATHER = "gather"  # all-gather before, reduce-scatter after
    ALL_TO_ALL = "all-to-all"  # dispatch to the experts' ranks, combine back


@dataclass(frozen=True)
class Fabric:
    """What one GPU sees of the fabrics (bytes/s one way, seconds)."""

    domain_gpus: int  # GPUs in one scale-up (NVLink/xGMI) domain
    scaleup_bytes_per_s: float  # one direction of the GPU's scale-up links
    ring_bytes_per_s: float  # bus bandwidth of a ring collective inside the domain
    scaleout_bytes_per_s: float  # one direction of the GPU's NIC
    scaleup_latency_s: float
    scaleout_latency_s: float

    @classmethod
    def of(cls, hardware: HardwareSpec) -> Fabric:
        """The fabric of a catalog GPU (peak figures; see the module docstring)."""
        up = hardware.scaleup_bw_gb_s_bidir / 2 * GB
        out = hardware.scaleout_bw_gb_s_per_gpu
        return cls(
            domain_gpus=hardware.scaleup_domain_gpus,
            scaleup_bytes_per_s=up,
            ring_bytes_per_s=(hardware.allreduce_busbw_gb_s or hardware.scaleup_bw_gb_s_bidir / 2)
            * GB,
            scaleout_bytes_per_s=UNKNOWN_SCALEOUT_BYTES_PER_S if out is None else out * GB,
            scaleup_latency_s=(hardware.scaleup_latency_us or FALLBACK_SCALEUP_LATENCY_US) * 1e-6,
            scaleout_latency_s=(hardware.scaleout_latency_us or FALLBACK_SCALEOUT_LATENCY_US)
            * 1e-6,
        )


def distinct_ranks_per_token(*, num_experts: int, top_k: int, ranks: int) -> float:
    """R (1 - C(E - E/R, k) / C(E, k)): expected ranks holding at least one of a token's top-k
    experts, for uniform routing over E experts split evenly over R ranks."""
    per_rank = num_experts // ranks
    miss = comb(num_experts - per_rank, top_k) / comb(num_experts, top_k)
    return ranks * (1 - miss)


@dataclass(frozen=True)
class ExchangeCost:
    """Seconds of one MoE layer's exchange: latency_s + s_per_token x (busiest rank's tokens)."""

    latency_s: float
    s_per_token: float

    def seconds(self, busiest_tokens: float) -> float:
        """Time of the exchange when the busiest rank holds `busiest_tokens` tokens."""
        return self.latency_s + self.s_per_token * busiest_tokens if busiest_tokens > 0 else 0.0


def _split(ranks: int, fabric: Fabric) -> tuple[int, int]:
    """(other ranks inside this GPU's scale-up domain, ranks outside it)."""
    inside = min(ranks, fabric.domain_gpus)
    return inside - 1, ranks - inside


def gather_cost(*, ranks: int, hidden: int, fabric: Fabric) -> ExchangeCost:
    """All-gather of every rank's rows then reduce-scatter of the outputs (BF16), padded to the
    busiest rank's t tokens: each collective moves (R - 1) t rows of `hidden` through each GPU
    (ring), over the ring bandwidth inside one domain, the NIC when the ring leaves it."""
    if ranks <= 1:
        return ExchangeCost(0.0, 0.0)
    _, outside = _split(ranks, fabric)
    bandwidth = fabric.scaleout_bytes_per_s if outside else fabric.ring_bytes_per_s
    hop_s = fabric.scaleout_latency_s if outside else fabric.scaleup_latency_s
    per_token = (ranks - 1) * hidden * BF16_BYTES / bandwidth
    latency = COLLECTIVE_BASE_LATENCY_S + (ranks - 1) * hop_s
    return ExchangeCost(2 * latency, 2 * per_token)


def all_to_all_cost(
    *,
    ranks: int,
    hidden: int,
    num_experts: int,
    top_k: int,
    dispatch_bytes_per_element: float,
    fabric: Fabric,
) -> ExchangeCost:
    """Dispatch (`dispatch_bytes_per_element`, FP8 + scales or BF16) and combine (BF16) of one
    MoE layer: each token goes to its distinct destination ranks other than its own, the ones
    inside the scale-up domain over NVLink and the rest over RDMA at the same time."""
    if ranks <= 1:
        return ExchangeCost(0.0, 0.0)
    inside, outside = _split(ranks, fabric)
    remote = distinct_ranks_per_token(num_experts=num_experts, top_k=top_k, ranks=ranks)
    remote *= (ranks - 1) / ranks  # copies that stay on the token's own rank move nothing
    bytes_per_copy = hidden * (dispatch_bytes_per_element + BF16_BYTES)  # dispatch + combine
    nvlink_s = remote * inside / (ranks - 1) * bytes_per_copy / fabric.scaleup_bytes_per_s
    rdma_s = remote * outside / (ranks - 1) * bytes_per_copy / fabric.scaleout_bytes_per_s
    hop_s = fabric.scaleout_latency_s if outside else fabric.scaleup_latency_s
    return ExchangeCost(2 * (COLLECTIVE_BASE_LATENCY_S + hop_s), max(nvlink_s, rdma_s))


def tp_pp_communication(
    arch: Architecture,
    hardware: HardwareSpec,
    layout: Layout,
    layers: int,
    *,
    allreduce_latency_s: float,
    p2p_latency_s: float,
    allreduce_curve: tuple[tuple[float, float], ...],
) -> Communication:
    """TP all-reduces (2 per layer, ring over measured busbw, else half the scale-up link) and the
    PP send (half the bidirectional scale-up link; the GPU's NIC when the replica's stages span
    more than one scale-up domain) of one pass."""
    tp = layout.tp
    busbw = hardware.allreduce_busbw_gb_s or hardware.scaleup_bw_gb_s_bidir / 2
    fabric = Fabric.of(hardware)
    across = layout.gpus_per_replica > fabric.domain_gpus
    return Communication(
        allreduces_per_pass=2 * layers if tp > 1 else 0,
        allreduce_bytes_per_token=arch.hidden_size * ACTIVATION_BYTES * 2 * (tp - 1) / tp,
        allreduce_bandwidth_bytes_per_s=busbw * GB,
        allreduce_latency_s=allreduce_latency_s,
        p2p_bytes_per_token=arch.hidden_size * ACTIVATION_BYTES,
        p2p_bandwidth_bytes_per_s=fabric.scaleout_bytes_per_s
        if across
        else fabric.scaleup_bytes_per_s,
        p2p_latency_s=p2p_latency_s,
        allreduce_curve=allreduce_curve,
        allreduce_message_bytes_per_token=arch.hidden_size * ACTIVATION_BYTES,
    )
