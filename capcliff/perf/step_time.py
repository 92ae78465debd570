"""Roofline step times: how long one engine step takes on one replica of a layout.

step = PP x [max(bytes / (HBM bw x MBU), FLOPs / (peak x MFU)) + TP all-reduce + PP send] + overhead

per micro-batch pass of one pipeline stage, where
- bytes = weights the stage reads (MoE: only the experts the tokens touch, E (1 - (1 - k/E)^T) per
  layer) + the KV of every scheduled sequence's context;
- FLOPs = 2 x active parameters x tokens (+ lm_head per sequence) + attention FLOPs per
  (query, key) pair;
- TP all-reduce: two per layer of tokens x hidden x 2 bytes; ring time 2(n-1)/n x bytes / busbw
  + latency;
- PP: m = min(PP, sequences) micro-batches; a pass costs PP stage times (a bubble of PP - m stages
  when m < PP) plus an activation send per stage.
For decode-only steps the time is max of two affine functions of the context read, so k identical
decode steps sum in closed form (`DecodeLine`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from fractions import Fraction
from functools import cached_property
from typing import NamedTuple

from capcliff.catalog.architecture import Architecture
from capcliff.catalog.layout import Layout
from capcliff.catalog.specs import HardwareSpec
from capcliff.memory.kv import kv_bytes_per_token_per_gpu
from capcliff.memory.params import Component, param_count
from capcliff.perf.attention_dp import MoEGroup, moe_group
from capcliff.perf.communication import MoEExchange
from capcliff.memory.weights import (
    WeightScheme,
    elements_per_rank,
    stage_layer_ranges,
    stage_param_groups,
)
from capcliff.units import GB, TERA, KVDType, WeightDType, weight_bytes_per_element

# Bytes of one activation element sent between GPUs (bf16 hidden states).
ACTIVATION_BYTES = 2
# FLOPs of one multiply-add.
FLOPS_PER_MAC = 2

# Decode HBM bandwidth use the study measured (shared/reference/paper_findings.md, "HBM bandwidth
# use in decode"): 8B ~ 85 %, 70B ~ 70 %, 671B ~ 50-60 % (midpoint 55 %). Between these anchors
# capcliff interpolates linearly in log(total parameters) and holds the end values outside them.
MBU_ANCHORS: tuple[tuple[float, float], ...] = ((8e9, 0.85), (70e9, 0.70), (671e9, 0.55))
# Named assumption: fraction of dense peak FLOP/s a compute-bound (prefill) step reaches. Not in
# the reference data; 0.5 is a common figure for large-batch GEMMs on H100-class GPUs.
DEFAULT_MFU = 0.5
# Named assumption: fixed latency of one small NCCL all-reduce inside a CUDA graph on NVLink.
DEFAULT_ALLREDUCE_LATENCY_S = 8e-6
# Named assumption: latency of one pipeline-stage activation send.
DEFAULT_P2P_LATENCY_S = 10e-6
# Named assumption: per-step engine time outside the forward pass (scheduling, sampling, input
# preparation) that does not overlap it.
DEFAULT_STEP_OVERHEAD_S = 2e-3


def default_mbu(total_params: float) -> float:
    """Decode memory-bandwidth utilisation for a model of `total_params`, from MBU_ANCHORS."""
    (p0, u0), *rest = MBU_ANCHORS
    if total_params <= p0:
        return u0
    for p1, u1 in rest:
        if total_params <= p1:
            w = math.log(total_params / p0) / math.log(p1 / p0)
            return u0 + w * (u1 - u0)
        p0, u0 = p1, u1
    return u0


@dataclass(frozen=True)
class Efficiency:
    """Named, overridable efficiency factors of the roofline."""

    mbu: float  # fraction of peak HBM bandwidth a memory-bound step reaches
    mfu: float = DEFAULT_MFU  # fraction of dense peak FLOP/s a compute-bound step reaches
    allreduce_latency_s: float = DEFAULT_ALLREDUCE_LATENCY_S
    p2p_latency_s: float = DEFAULT_P2P_LATENCY_S
    step_overhead_s: float = DEFAULT_STEP_OVERHEAD_S


class DecodeLine(NamedTuple):
    """Decode step j of a run of identical steps: max(mem0 + mem1 j, cmp0 + cmp1 j) + fixed_s.

    Bytes each GPU reads in step j: bytes0 + bytes1 j. Units: seconds and bytes. (A tuple: the
    simulator makes one per event.)
    """

    mem0: float
    mem1: float
    cmp0: float
    cmp1: float
    fixed_s: float
    bytes0: float
    bytes1: float

    def step_s(self, j: int) -> float:
        """Time of step j, seconds."""
        return max(self.mem0 + self.mem1 * j, self.cmp0 + self.cmp1 * j) + self.fixed_s

    def _mem_bound_range(self, k: int) -> tuple[int, int]:
        """Steps [a, b) of 0..k-1 where the memory line is the larger one."""
        d0, d1 = self.mem0 - self.cmp0, self.mem1 - self.cmp1
        if d1 == 0:
            return (0, k) if d0 >= 0 else (0, 0)
        cross = -d0 / d1  # d(j) >= 0 for j >= cross when d1 > 0, for j <= cross when d1 < 0
        cross = min(max(cross, -1.0), k + 1.0)  # keep a near-parallel pair's crossing finite
        if d1 > 0:
            return min(k, max(0, math.ceil(cross))), k
        return 0, min(k, max(0, math.floor(cross) + 1))

    def total_s(self, k: int) -> float:
        """Sum of steps 0 .. k-1, seconds (arithmetic series on each side of the crossing)."""
        d0 = self.mem0 - self.cmp0
        d_last = d0 + (self.mem1 - self.cmp1) * (k - 1)
        if d0 >= 0 and d_last >= 0:  # memory-bound throughout: the common decode case
            return k * (self.mem0 + self.fixed_s) + self.mem1 * k * (k - 1) / 2
        a, b = self._mem_bound_range(k)
        mem = _series(self.mem0, self.mem1, a, b)
        cmp = _series(self.cmp0, self.cmp1, 0, a) + _series(self.cmp0, self.cmp1, b, k)
        return mem + cmp + k * self.fixed_s

    def total_bytes(self, k: int) -> float:
        """Bytes one GPU reads over steps 0 .. k-1."""
        return _series(self.bytes0, self.bytes1, 0, k)

    def steps_before(self, duration_s: float, k_max: int) -> int:
        """Smallest m in [1, k_max] with total_s(m) >= duration_s, or k_max if none."""
        lo, hi = 1, k_max
        if self.total_s(hi) < duration_s:
            return k_max
        while lo < hi:
            mid = (lo + hi) // 2
            if self.total_s(mid) >= duration_s:
                hi = mid
            else:
                lo = mid + 1
        return lo


def _series(x0: float, x1: float, a: int, b: int) -> float:
    """sum_{j=a}^{b-1} (x0 + x1 j)."""
    if b <= a:
        return 0.0
    return (b - a) * x0 + x1 * (b * (b - 1) - a * (a - 1)) / 2


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


@dataclass(frozen=True)
class StepTimeModel:
    """Per-step cost coefficients of one replica, precomputed so a step costs a few flops.

    Units: bytes, FLOPs, seconds; `*_per_token` per scheduled token, `*_per_pair` per (query token,
    context token) pair of attention, all for one GPU of the binding pipeline stage.
    """

    pp: int
    weight_bytes: float  # dense weights the stage reads each pass
    expert_bytes: float  # routed-expert weights the stage holds (0 for dense models)
    expert_choice_fraction: float  # top_k / num_experts (0 for dense models)
    kv_bytes_per_token: float
    flops_per_token: float
    flops_per_sequence: float  # lm_head: logits for one position per sequence
    attention_flops_per_pair: float
    bandwidth_bytes_per_s: float  # effective: peak x MBU
    peak_bandwidth_bytes_per_s: float
    flops_per_s: float  # effective: peak x MFU
    step_overhead_s: float
    comm: Communication = Communication()  # frozen, so one shared default is safe
    # Attention DP: the MoE layers shared with the other lockstep ranks (expert_bytes is then 0
    # here and the experts live in the group). Alone, a step prices every rank as busy as this.
    moe: MoEGroup | None = None

    def _microbatches(self, seqs: float) -> float:
        return float(max(1.0, min(self.pp, seqs)))

    def _weights_read(self, tokens: float) -> float:
        """Dense weights + the experts `tokens` tokens touch: 1 - (1 - k/E)^T of them."""
        if not self.expert_bytes:
            return self.weight_bytes
        touched = 1.0 - float((1.0 - self.expert_choice_fraction) ** tokens)
        return self.weight_bytes + self.expert_bytes * touched

    def _comm_s(self, tokens: float) -> float:
        """TP all-reduces plus the PP activation send of one pass over `tokens` tokens."""
        c, total = self.comm, 0.0
        if c.allreduces_per_pass:
            wire = tokens * c.allreduce_bytes_per_token / c.allreduce_bandwidth_bytes_per_s
            total += c.allreduces_per_pass * (c.allreduce_latency_s + wire)
        if self.pp > 1:
            total += c.p2p_latency_s + tokens * c.p2p_bytes_per_token / c.p2p_bandwidth_bytes_per_s
        return total

    def step_time_s(
        self, tokens: float, seqs: float, context_tokens: float, attention_pairs: float
    ) -> float:
        """Seconds of one step over `tokens` scheduled tokens of `seqs` sequences that read
        `context_tokens` tokens of KV and compute `attention_pairs` (query, key) pairs."""
        if tokens <= 0:
            return 0.0
        m = self._microbatches(seqs)
        mb_tokens = tokens / m
        mem = (self._weights_read(mb_tokens) + self.kv_bytes_per_token * context_tokens / m) / (
            self.bandwidth_bytes_per_s
        )
        flops = (
            self.flops_per_token * tokens
            + self.flops_per_sequence * seqs
            + self.attention_flops_per_pair * attention_pairs
        ) / m
        compute = flops / self.flops_per_s
        shared = self._moe_pass_s(mb_tokens)
        return self.pp * (max(mem, compute) + self._comm_s(mb_tokens) + shared) + (
            self.step_overhead_s
        )

    def _moe_pass_s(self, busiest_tokens: float) -> float:
        """The shared MoE layers of one pass (attention DP), 0 otherwise."""
        if self.moe is None:
            return 0.0
        return self.moe.pass_s(
            busiest_tokens, bandwidth=self.bandwidth_bytes_per_s, flops_per_s=self.flops_per_s
        )

    @cached_property
    def local(self) -> StepTimeModel:
        """This rank's own work alone (attention DP: without the shared MoE layers)."""
        return self if self.moe is None else replace(self, moe=None)

    def lockstep_step_time_s(self, loads: list[tuple[int, int, int, int]]) -> float:
        """Seconds of one lockstep step of attention-DP ranks with (tokens, sequences, context,
        pairs) `loads`: the slowest rank's own work, then the MoE layers over every rank padded
        to the busiest one's tokens (micro-batches as that rank's)."""
        local = self.local
        own = max((local.step_time_s(*load) for load in loads), default=0.0)
        busiest = max(loads, key=lambda load: load[0], default=(0, 0, 0, 0))
        if busiest[0] <= 0:
            return own
        m = self._microbatches(busiest[1])
        return own + self.pp * self._moe_pass_s(busiest[0] / m)

    def moe_hbm_bytes(self, busiest_tokens: float, seqs: float) -> float:
        """Expert bytes this GPU reads in a lockstep step (attention DP), 0 otherwise."""
        if self.moe is None or busiest_tokens <= 0:
            return 0.0
        m = self._microbatches(seqs)
        return m * self.moe.bytes_read(busiest_tokens / m)

    def hbm_bytes(self, tokens: float, seqs: float, context_tokens: float) -> float:
        """Bytes one GPU reads from HBM in the step (each micro-batch pass re-reads weights)."""
        if tokens <= 0:
            return 0.0
        m = self._microbatches(seqs)
        own = m * self._weights_read(tokens / m) + self.kv_bytes_per_token * context_tokens
        return own + self.moe_hbm_bytes(tokens, seqs)

    def hbm_utilization(self, tokens: float, seqs: float, context_tokens: float) -> float:
        """Fraction of peak HBM bandwidth the step uses: bytes / (time x peak bandwidth)."""
        time_s = self.step_time_s(tokens, seqs, context_tokens, context_tokens)
        if time_s <= 0:
            return 0.0
        used = self.hbm_bytes(tokens, seqs, context_tokens)
        return used / (time_s * self.peak_bandwidth_bytes_per_s)

    def decode_line(self, seqs: int, context0_tokens: float) -> DecodeLine:
        """Steps of `seqs` decoding sequences whose summed context (each counting the token it
        writes) is context0_tokens at step 0 and grows by `seqs` per step."""
        line = self._decode_lines.get(seqs)
        if line is None:
            line = self._decode_lines[seqs] = self._decode_coefficients(seqs)
        mem0, per_ctx_mem, mem1, cmp0, per_ctx_cmp, cmp1, fixed_s, bytes0, bytes1 = line
        return DecodeLine(
            mem0 + per_ctx_mem * context0_tokens,
            mem1,
            cmp0 + per_ctx_cmp * context0_tokens,
            cmp1,
            fixed_s,
            bytes0 + self.kv_bytes_per_token * context0_tokens,
            bytes1,
        )

    @cached_property
    def _decode_lines(self) -> dict[int, tuple[float, ...]]:
        """`_decode_coefficients` by number of sequences, filled as the simulator asks."""
        return {}

    def _decode_coefficients(self, seqs: int) -> tuple[float, ...]:
        """The parts of `decode_line` that depend only on `seqs` (the context terms are added to
        them in the same order, so the line is the same to the last bit)."""
        m = self._microbatches(seqs)
        per_ctx_mem = self.pp * self.kv_bytes_per_token / m / self.bandwidth_bytes_per_s
        per_ctx_cmp = self.pp * self.attention_flops_per_pair / m / self.flops_per_s
        weights = self._weights_read(seqs / m)
        fixed_flops = (self.flops_per_token + self.flops_per_sequence) * seqs / m
        return (
            self.pp * weights / self.bandwidth_bytes_per_s,
            per_ctx_mem,
            per_ctx_mem * seqs,
            self.pp * fixed_flops / self.flops_per_s,
            per_ctx_cmp,
            per_ctx_cmp * seqs,
            self.pp * (self._comm_s(seqs / m) + self._moe_pass_s(seqs / m)) + self.step_overhead_s,
            m * weights + self.moe_hbm_bytes(seqs, seqs),
            self.kv_bytes_per_token * seqs,
        )


@dataclass(frozen=True)
class _StageCost:
    read_bytes: Fraction  # dense weights read per pass (embedding rows excluded)
    expert_bytes: Fraction
    dense_elements: Fraction  # elements in matmuls run for every token (experts excluded)
    expert_elements: Fraction
    head_elements: Fraction  # lm_head elements (run once per sequence)


def _stage_cost(arch: Architecture, layout: Layout, scheme: WeightScheme, stage: int) -> _StageCost:
    read = expert = dense = experts_el = head = Fraction(0)
    tied_head = arch.tie_word_embeddings and layout.pp == 1
    for group in stage_param_groups(arch, layout, stage):
        elements = elements_per_rank(group, layout)
        size = elements * weight_bytes_per_element(scheme.dtype_of(group.storage))
        if group.component is Component.EMBEDDING and not tied_head:
            continue  # only the looked-up rows are read
        if group.component in (Component.LM_HEAD, Component.EMBEDDING):
            head += elements
            read += size
        elif group.component is Component.EXPERTS:
            expert += size
            experts_el += elements
        else:
            read += size
            dense += elements
    return _StageCost(read, expert, dense, experts_el, head)


def _attention_flops_per_pair(arch: Architecture, layout: Layout, layers: int) -> float:
    """Per (query, key) pair per GPU: QK^T and PV, 2 FLOPs per multiply-add each."""
    heads = arch.num_attention_heads / layout.tp
    if arch.mla is not None:  # absorbed MLA: scores over (latent + rope), values over the latent
        per_head = (2 * arch.mla.kv_lora_rank + arch.mla.qk_rope_head_dim) * FLOPS_PER_MAC
    else:
        per_head = 2 * arch.head_dim * FLOPS_PER_MAC
    return layers * heads * per_head


def default_efficiency(arch: Architecture) -> Efficiency:
    """The efficiency defaults for `arch`: MBU from its size (MBU_ANCHORS), the rest named."""
    return Efficiency(mbu=default_mbu(param_count(arch).total))


def compute_dtype(scheme: WeightScheme) -> str:
    """The matmul dtype whose peak applies: fp8 for fp8 weights, else bf16."""
    return "fp8" if scheme.linear is WeightDType.FP8 else "bf16"


def host_link_bytes_per_s(hardware: HardwareSpec) -> float:
    """One direction of the GPU-host link (half the bidirectional figure), bytes/s."""
    return hardware.host_link_bw_gb_s_bidir * GB / 2


def _communication(
    arch: Architecture, hardware: HardwareSpec, layout: Layout, layers: int, eff: Efficiency
) -> Communication:
    """TP all-reduces (2 per layer, ring over measured busbw, else half the scale-up link) and the
    PP send (half the bidirectional scale-up link) of one pass."""
    tp = layout.tp
    busbw = hardware.allreduce_busbw_gb_s or hardware.scaleup_bw_gb_s_bidir / 2
    return Communication(
        allreduces_per_pass=2 * layers if tp > 1 else 0,
        allreduce_bytes_per_token=arch.hidden_size * ACTIVATION_BYTES * 2 * (tp - 1) / tp,
        allreduce_bandwidth_bytes_per_s=busbw * GB,
        allreduce_latency_s=eff.allreduce_latency_s,
        p2p_bytes_per_token=arch.hidden_size * ACTIVATION_BYTES,
        p2p_bandwidth_bytes_per_s=hardware.scaleup_bw_gb_s_bidir * GB / 2,
        p2p_latency_s=eff.p2p_latency_s,
    )


def step_time_model(
    arch: Architecture,
    hardware: HardwareSpec,
    layout: Layout,
    *,
    scheme: WeightScheme,
    kv_dtype: KVDType,
    efficiency: Efficiency | None = None,
) -> StepTimeModel:
    """Precompute the step-time coefficients of one replica of `layout` (binding stage: the one
    reading the most weight bytes per pass)."""
    eff = efficiency or default_efficiency(arch)
    costs = [_stage_cost(arch, layout, scheme, s) for s in range(layout.pp)]
    stage = max(range(layout.pp), key=lambda s: costs[s].read_bytes + costs[s].expert_bytes)
    cost = costs[stage]
    layers = len(stage_layer_ranges(arch.num_layers, layout.pp)[stage])
    choice = arch.moe.experts_per_token / arch.moe.num_experts if arch.moe else 0.0
    peak_flops = hardware.dense_flops_per_s(compute_dtype(scheme))
    peak_flops = peak_flops or hardware.dense_tflops_bf16 * TERA
    kv_per_token = kv_bytes_per_token_per_gpu(arch, layout, kv_dtype=kv_dtype)[stage]
    return StepTimeModel(
        pp=layout.pp,
        weight_bytes=float(cost.read_bytes),
        expert_bytes=float(cost.expert_bytes),
        expert_choice_fraction=choice,
        kv_bytes_per_token=float(kv_per_token),
        flops_per_token=float(
            FLOPS_PER_MAC * (cost.dense_elements + cost.expert_elements * choice)
        ),
        flops_per_sequence=float(FLOPS_PER_MAC * cost.head_elements),
        attention_flops_per_pair=_attention_flops_per_pair(arch, layout, layers),
        bandwidth_bytes_per_s=hardware.hbm_bandwidth_bytes_per_s * eff.mbu,
        peak_bandwidth_bytes_per_s=hardware.hbm_bandwidth_bytes_per_s,
        flops_per_s=peak_flops * eff.mfu,
        step_overhead_s=eff.step_overhead_s,
        comm=_communication(arch, hardware, layout, layers, eff),
    )
