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
Where measured compute lines exist (perf/op_curves.py ComputeCurve: the engine's GEMM and MoE
tables for this GPU and format), the GEMM and expert FLOPs take the lines' floor per call and
reached FLOP/s at the pass's tokens instead of peak x MFU (attention FLOPs stay at peak x MFU).
For decode-only steps the time is max of two affine functions of the context read, so k identical
decode steps sum in closed form (`DecodeLine`).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, replace
from functools import cached_property

from capcliff.catalog.architecture import Architecture
from capcliff.catalog.layout import Layout
from capcliff.catalog.specs import HardwareSpec
from capcliff.memory.budget import EngineName
from capcliff.memory.kv import kv_bytes_per_token_per_gpu
from capcliff.memory.overheads import mla_absorbed_bytes
from capcliff.memory.weights import WeightScheme, dense_split_saving_bytes, stage_layer_ranges
from capcliff.perf.attention_dp import MoEGroup, moe_group
from capcliff.perf.communication import ACTIVATION_BYTES as ACTIVATION_BYTES  # re-exported
from capcliff.perf.communication import Communication as Communication  # re-exported
from capcliff.perf.communication import MoEExchange, tp_pp_communication
from capcliff.perf.decode_line import DecodeLine as DecodeLine  # re-exported for the simulator
from capcliff.perf.efficiency import MBU_ANCHORS as MBU_ANCHORS  # re-exported
from capcliff.perf.efficiency import Efficiency as Efficiency  # re-exported
from capcliff.perf.efficiency import default_efficiency as default_efficiency  # re-exported
from capcliff.perf.efficiency import default_mbu as default_mbu  # re-exported
from capcliff.perf.efficiency import profile_efficiency as profile_efficiency  # re-exported
from capcliff.perf.host_time import host_step_s, step_with_host_s
from capcliff.perf.moe_tables import MoETable
from capcliff.perf.op_curves import ComputeCurve, OpCurve
from capcliff.perf.profiles import (
    EngineProfile,
    dense_gemm_modules,
    dp_eager_pass_s,
    dp_host_overhead_s,
    extend_eager_pass_s,
    overlaps,
)
from capcliff.perf.stage_cost import (
    FLOPS_PER_MAC,
    attention_flops_per_pair,
    is_excluded_linear,
    stage_cost,
)
from capcliff.units import GB, TERA, KVDType, WeightDType


@dataclass(frozen=True)
class SpecStep:
    """Speculative decoding as the step-time model prices it (perf/speculation.py): `k` draft
    passes of `draft` (None: n-gram, no GPU work) and one verification over k + 1 query tokens
    per sequence, yielding `tokens_per_step` tokens per sequence on average."""

    k: int
    tokens_per_step: float
    draft: StepTimeModel | None = None


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
    comm: Communication = Communication()  # noqa: RUF009 (frozen: one shared default is safe)
    kv_bandwidth_bytes_per_s: float | None = None  # attention's effective bandwidth; None: above
    expert_efficiency: float = 1.0  # the expert-read time is divided by it
    variable_scale: float = 1.0  # multiplies the PP x (roofline + communication) part
    profile: str = ""  # the engine profile (engine and version) the terms come from
    # Prefill attention's effective FLOP/s where the engine's extend kernel has its own figure
    # (profiles: mla_extend_efficiency); None: flops_per_s. A step with a prefill prices all its
    # attention pairs at it (a prefill's pairs outnumber a decode's by the prompt length).
    extend_attention_flops_per_s: float | None = None

    @cached_property
    def _kv_bw(self) -> float:
        return self.kv_bandwidth_bytes_per_s or self.bandwidth_bytes_per_s

    # Attention DP: the MoE layers shared with the other lockstep ranks (expert_bytes is then 0
    # here and the experts live in the group). Alone, a step prices every rank as busy as this.
    moe: MoEGroup | None = None
    # Attention DP: the least a lockstep step takes when a rank is idle or prefilling, in engines
    # that replay CUDA graphs only when every rank decodes (profiles.dp_eager_pass_s); 0: none.
    eager_floor_s: float = 0.0
    # The least a step that prefills takes where the engine launches such steps eagerly: the
    # host's per-step time, then launching one eager pass (`eager_prefill_floor_s` below); 0: none.
    extend_floor_s: float = 0.0
    # Speculative decoding: decode-only steps are priced per generated token (mean field, see
    # `_spec_coefficients`); None: plain decoding, every formula as without it.
    spec: SpecStep | None = None
    # Measured op curves (perf/op_curves.py): the dense weights are read by `dense_gemms` GEMM
    # calls per pass and the routed experts by `moe_layers` fused MoE calls, each at the curve's
    # floor + bytes / (fraction x peak) for the pass's tokens; None: at bandwidth_bytes_per_s
    # (and expert_efficiency), as without them.
    gemm_curve: OpCurve | None = None
    moe_curve: OpCurve | None = None
    dense_gemms: int = 0
    moe_layers: int = 0
    # Of those: `excluded_gemms` calls reading `excluded_bytes` bytes of dense linears the
    # checkpoint's quantization leaves in the native dtype, at the native GEMM curve
    # `excluded_gemm_curve` (their kernels are native-dtype GEMMs); None: at gemm_curve.
    excluded_gemm_curve: OpCurve | None = None
    excluded_gemms: int = 0
    excluded_bytes: float = 0.0
    # MLA decode attention's measured curve (perf/op_curves.py): `attention_calls` calls per pass
    # (the stage's layers), each its floor at the pass's sequences, and the KV read at its
    # fraction of peak for them; None: kv_bandwidth_bytes_per_s, no floor.
    attention_curve: OpCurve | None = None
    attention_calls: int = 0
    # Measured compute lines (perf/op_curves.py ComputeCurve): the dense GEMMs' FLOPs (and
    # lm_head's) take `dense_gemms` x the GEMM line's floor + FLOPs at its reached FLOP/s for the
    # pass's tokens, the routed experts' FLOPs (`expert_flops_per_token` of flops_per_token)
    # `moe_layers` x the MoE line's floor + FLOPs at its FLOP/s; None: at flops_per_s.
    gemm_flops_curve: ComputeCurve | None = None
    moe_flops_curve: ComputeCurve | None = None
    expert_flops_per_token: float = 0.0
    # MLA prefill attention's measured compute line over the prompt length (perf/op_curves.py,
    # "mla_context"): a step with a prefill prices its attention pairs at `extend_flops_per_pair`
    # (the MHA form the engines run) and the line's FLOP/s, plus `extend_attention_layers` x its
    # floor, at the prompt length 2 x pairs / tokens; None: as above.
    extend_attention_curve: ComputeCurve | None = None
    extend_flops_per_pair: float = 0.0
    extend_attention_layers: int = 0
    # Seconds every pass's dense GEMMs take beyond the weight-read terms above (untuned kernels
    # of an engine release on this GPU: Efficiency.gemm_extra_s_per_layer x the stage's layers).
    gemm_extra_s: float = 0.0
    # A routed-expert layer's measured seconds by tokens (perf/moe_tables.py: the model's own MoE
    # shape): each of `moe_layers` layers takes the table's time for the pass's tokens, in both
    # the weight-read and the compute term (in place of moe_curve and moe_flops_curve); None: those.
    moe_table: MoETable | None = None
    # MLA decode's two absorbed BMMs, measured (perf/mla_bmm.py): in a pass that decodes (or
    # verifies drafts), each of `mla_bmm_layers` layers takes the table's seconds for the pass's
    # tokens, in both the weight-read and the compute term, as moe_table; a pass that prefills
    # runs MLA's MHA form for its prompt (kv_b as a GEMM, in the dense terms) and takes none.
    # None: their kernel floors (in step_overhead_s).
    mla_bmm_table: MoETable | None = None
    mla_bmm_layers: int = 0
    # The engine's overlap scheduler (profiles.EngineProfile.overlap_schedule): it schedules step
    # N + 1 while step N runs, so a request that arrives during step N first runs in step N + 2
    # (the simulator's loop, `capcliff.sim.loop`); False: in step N + 1. Carried here with the
    # other per-layout engine terms (it is off under some releases' attention DP).
    overlap_schedule: bool = False
    # Host (CPU) time per step (perf/host_time.py): the fixed part, which step_overhead_s holds,
    # and the part per scheduled sequence. Serial (no overlap scheduler): step + per_seq x seqs;
    # overlapped: max(step - host_fixed_s, host_fixed_s + per_seq x seqs). 0 where a calibration's
    # fixed_s and scale or given efficiencies replace the profile's terms.
    host_fixed_s: float = 0.0
    host_per_seq_s: float = 0.0

    def _microbatches(self, seqs: float) -> float:
        if self.pp == 1 and seqs >= 1:  # what the min and max give, without their calls
            return 1.0
        return float(max(1.0, min(self.pp, seqs)))

    def _weights_read(self, tokens: float) -> float:
        """Dense weights + the experts `tokens` tokens touch: 1 - (1 - k/E)^T of them."""
        if not self.expert_bytes:
            return self.weight_bytes
        touched = 1.0 - float((1.0 - self.expert_choice_fraction) ** tokens)
        return self.weight_bytes + self.expert_bytes * touched

    def _weights_time_s(self, tokens: float) -> float:
        """Seconds to read the dense weights and the touched experts (at their efficiency, or
        at the measured op curves' floor and fraction of peak for `tokens` tokens)."""
        if self.gemm_curve is None and self.moe_curve is None and self.moe_table is None:
            return self._weights_time_at(tokens)
        cached = self._weights_times.get(tokens)
        if cached is None:
            cached = self._weights_times[tokens] = self._weights_time_at(tokens)
        return cached

    @cached_property
    def _weights_times(self) -> dict[float, float]:
        """`_weights_time_s` by tokens, filled as the simulator asks (the curves interpolate)."""
        return {}

    def _weights_time_at(self, tokens: float) -> float:
        peak = self.peak_bandwidth_bytes_per_s
        gemm = self.gemm_curve
        if gemm is None:
            dense = self.gemm_extra_s + self.weight_bytes / self.bandwidth_bytes_per_s
        else:
            dense = self._dense_gemms_s(gemm, tokens)
        if not self.expert_bytes:
            return dense
        if self.moe_table is not None:
            return dense + self.moe_layers * self.moe_table.seconds_at(tokens)
        experts = self._weights_read(tokens) - self.weight_bytes
        moe = self.moe_curve
        if moe is None:
            return dense + experts / self.expert_efficiency / self.bandwidth_bytes_per_s
        return (
            dense
            + self.moe_layers * moe.floor_at(tokens)
            + experts / (moe.fraction_at(tokens) * peak)
        )

    def _dense_gemms_s(self, gemm: OpCurve, tokens: float) -> float:
        """Seconds of the dense GEMMs of one pass over `tokens` tokens at the measured curves:
        each call's floor plus its bytes at the curve's fraction of peak, the calls on weights
        the quantization excludes at the native dtype's curve."""
        peak = self.peak_bandwidth_bytes_per_s
        native = self.excluded_gemm_curve
        calls, read = float(self.dense_gemms), self.weight_bytes
        seconds = self.gemm_extra_s
        if native is not None:
            calls -= self.excluded_gemms
            read -= self.excluded_bytes
            seconds += self.excluded_gemms * native.floor_at(tokens) + self.excluded_bytes / (
                native.fraction_at(tokens) * peak
            )
        return seconds + calls * gemm.floor_at(tokens) + read / (gemm.fraction_at(tokens) * peak)

    @cached_property
    def _curved_compute(self) -> bool:
        return (
            self.gemm_flops_curve is not None
            or self.moe_flops_curve is not None
            or self.moe_table is not None
            or self.mla_bmm_table is not None
        )

    def _token_compute_s(self, tokens: float, logits: float) -> float:
        """Seconds of one pass's matmul FLOPs over `tokens` tokens with `logits` lm_head rows
        (attention excluded): at flops_per_s, or the measured compute lines at `tokens`."""
        flops = self.flops_per_token * tokens + self.flops_per_sequence * logits
        if not self._curved_compute:
            return flops / self.flops_per_s
        cached = self._compute_rates.get(tokens)
        if cached is None:
            cached = self._compute_rates[tokens] = self._compute_rates_at(tokens)
        fixed_s, dense_rate, expert_rate = cached
        priced = self.moe_flops_curve is not None or self.moe_table is not None
        experts = self.expert_flops_per_token * tokens if priced else 0.0
        return fixed_s + (flops - experts) / dense_rate + experts / expert_rate

    @cached_property
    def _compute_rates(self) -> dict[float, tuple[float, float, float]]:
        """`_compute_rates_at` by tokens, filled as the simulator asks (the lines interpolate)."""
        return {}

    def _compute_rates_at(self, tokens: float) -> tuple[float, float, float]:
        """(fixed seconds, dense FLOP/s, expert FLOP/s) of a pass over `tokens` tokens."""
        fixed_s, dense_rate, expert_rate = 0.0, self.flops_per_s, self.flops_per_s
        gemm, moe = self.gemm_flops_curve, self.moe_flops_curve
        if gemm is not None:
            fixed_s += self.dense_gemms * gemm.floor_at(tokens)
            dense_rate = gemm.flops_per_s_at(tokens)
        if self.moe_table is not None and self.expert_bytes:
            # the layers' measured time carries their FLOPs: none left to divide
            fixed_s += self.moe_layers * self.moe_table.seconds_at(tokens)
            expert_rate = math.inf
        elif moe is not None:
            fixed_s += self.moe_layers * moe.floor_at(tokens)
            expert_rate = moe.flops_per_s_at(tokens)
        return fixed_s, dense_rate, expert_rate

    def _kv_bw_at(self, seqs: float) -> float:
        """Bytes/s the attention reads KV at in a pass over `seqs` sequences."""
        curve = self.attention_curve
        if curve is None:
            return self._kv_bw
        return curve.fraction_at(seqs) * self.peak_bandwidth_bytes_per_s

    def _attention_floor_s(self, seqs: float) -> float:
        """Fixed seconds of a pass's attention calls over `seqs` sequences (0 without a curve)."""
        curve = self.attention_curve
        return 0.0 if curve is None else self.attention_calls * curve.floor_at(seqs)

    def _mla_bmm_s(self, tokens: float) -> float:
        """Seconds of a decode pass's MLA BMMs over `tokens` tokens (0 without their table)."""
        table = self.mla_bmm_table
        return 0.0 if table is None else self.mla_bmm_layers * table.seconds_at(tokens)

    def _comm_s(self, tokens: float) -> float:
        """TP all-reduces plus the PP activation send of one pass over `tokens` tokens."""
        return self.comm.pass_s(tokens, pp=self.pp)

    def step_time_s(
        self, tokens: float, seqs: float, context_tokens: float, attention_pairs: float
    ) -> float:
        """Seconds of one step over `tokens` scheduled tokens of `seqs` sequences that read
        `context_tokens` tokens of KV and compute `attention_pairs` (query, key) pairs."""
        if tokens <= 0:
            return 0.0
        if self.spec is not None and tokens == seqs:  # decode only: per generated token
            return self.decode_line(int(seqs), context_tokens).step_s(0)
        terms = self._load_terms.get((tokens, seqs))
        if terms is None:
            terms = self._load_terms[tokens, seqs] = self._load_terms_at(tokens, seqs)
        m, fixed_mem_s, kv_bw, token_compute_s, comm_s, shared, host_s, _, _ = terms
        mem = fixed_mem_s + self.kv_bytes_per_token * context_tokens / m / kv_bw
        extend_rate = self.extend_attention_flops_per_s if tokens > seqs else None
        extend_curve = self.extend_attention_curve if tokens > seqs else None
        if extend_curve is not None:
            length = 2.0 * attention_pairs / tokens
            compute = token_compute_s + (
                self.extend_attention_layers * extend_curve.floor_at(length)
                + self.extend_flops_per_pair
                * attention_pairs
                / m
                / extend_curve.flops_per_s_at(length)
            )
        elif self._curved_compute:
            pair_rate = extend_rate or self.flops_per_s
            compute = (
                token_compute_s + self.attention_flops_per_pair * attention_pairs / m / pair_rate
            )
        elif extend_rate:
            compute = (
                (self.flops_per_token * tokens + self.flops_per_sequence * seqs) / self.flops_per_s
                + self.attention_flops_per_pair * attention_pairs / extend_rate
            ) / m
        else:
            flops = (
                self.flops_per_token * tokens
                + self.flops_per_sequence * seqs
                + self.attention_flops_per_pair * attention_pairs
            ) / m
            compute = flops / self.flops_per_s
        # max(mem, compute) as `max` picks (the first of equals), without its call
        top = compute if compute > mem else mem
        variable = self.variable_scale * self.pp * (top + comm_s + shared)
        step = variable + self.step_overhead_s
        if self.host_applies:  # the host time (`_host_added_s`, from the terms)
            if self.overlap_schedule:
                step = step_with_host_s(step - self.host_fixed_s, host_s, overlapped=True)
            else:
                step = step + host_s  # host_fixed_s is in step_overhead_s already
        # launching an eager pass hides the GPU's gaps between kernels: a floor, not a sum
        # (`max(step, floor)` without its call: a call per prefill step)
        if tokens > seqs:
            floor = self.extend_floor_s
            return floor if floor > step else step
        return step

    @cached_property
    def _load_terms(self) -> dict[tuple[float, float], tuple[float, ...]]:
        """`_load_terms_at` by (tokens, sequences), filled as the simulator asks (a replica's
        steps repeat a few thousand loads: only the context read and the pairs differ)."""
        return {}

    def _load_terms_at(self, tokens: float, seqs: float) -> tuple[float, ...]:
        """The parts of `step_time_s` that depend only on its tokens and sequences: (micro-batches,
        the weight and attention-floor seconds, the KV bandwidth, the token compute seconds where
        measured lines or the extend curve price them (else 0), communication seconds, shared MoE
        seconds, host seconds (`_host_added_s`); then `hbm_bytes`' weight and shared-expert
        bytes); `step_time_s` and `hbm_bytes` add the context and pair terms in the same order,
        so a step's time and bytes are the same to the last bit."""
        m = self._microbatches(seqs)
        mb_tokens = tokens / m
        curved = self._curved_compute or (tokens > seqs and self.extend_attention_curve is not None)
        bmm_s = self._mla_bmm_s(mb_tokens) if tokens == seqs else 0.0
        return (
            m,
            self._weights_time_s(mb_tokens) + self._attention_floor_s(seqs / m) + bmm_s,
            self._kv_bw_at(seqs / m),
            self._token_compute_s(mb_tokens, seqs / m) + bmm_s if curved else 0.0,
            self._comm_s(mb_tokens),
            self._moe_pass_s(mb_tokens),
            self._host_added_s(seqs),
            m * self._weights_read(mb_tokens),
            self.moe_hbm_bytes(tokens, seqs),
        )

    @cached_property
    def host_applies(self) -> bool:
        """Whether the host terms change a step (else every step is as without them)."""
        return self.host_per_seq_s > 0 or (self.overlap_schedule and self.host_fixed_s > 0)

    def _host_s(self, seqs: float) -> float:
        """Host seconds of one step that schedules `seqs` sequences (perf/host_time.py)."""
        return host_step_s(fixed_s=self.host_fixed_s, per_seq_s=self.host_per_seq_s, seqs=seqs)

    def _host_added_s(self, seqs: float) -> float:
        """The host seconds `step_time_s` meets a step over `seqs` sequences with: serial (no
        overlap scheduler), the per-sequence part, added to the GPU's work plus step_overhead_s
        (which holds host_fixed_s); overlapped, the whole host time, the step then the larger of
        it and the GPU's part (perf/host_time.py); 0 where the host terms change no step."""
        if not self.host_applies:
            return 0.0
        if not self.overlap_schedule:
            return self.host_per_seq_s * seqs
        return self._host_s(seqs)

    def _host_line(self, fixed_s: float, seqs: float) -> tuple[float, float]:
        """(fixed, floor) of a decode line over `seqs` sequences whose fixed seconds are
        `fixed_s` without the per-sequence host time: serial, the host time per sequence joins
        the fixed part; overlapped, the fixed host time leaves it and the whole host time becomes
        the line's floor (DecodeLine.floor_s, relative to the fixed part)."""
        if not self.host_applies:
            return fixed_s, 0.0
        if not self.overlap_schedule:
            return fixed_s + self.host_per_seq_s * seqs, 0.0
        host_s = self._host_s(seqs)
        fixed = fixed_s - self.host_fixed_s
        return fixed, max(0.0, host_s - fixed)

    def _moe_pass_s(self, busiest_tokens: float) -> float:
        """The shared MoE layers of one pass (attention DP), 0 otherwise."""
        if self.moe is None:
            return 0.0
        bw = self.bandwidth_bytes_per_s * self.expert_efficiency
        return self.moe.pass_s(busiest_tokens, bw, self.flops_per_s)

    @cached_property
    def local(self) -> StepTimeModel:
        """This rank's own work alone (attention DP: without the shared MoE layers)."""
        return self if self.moe is None else replace(self, moe=None)

    @cached_property
    def _local_gpu(self) -> StepTimeModel:
        """`local` without the per-sequence host terms (its steps keep host_fixed_s)."""
        return replace(self.local, host_fixed_s=0.0, host_per_seq_s=0.0)

    def lockstep_step_time_s(self, loads: list[tuple[int, int, int, int]], ranks: int = 0) -> float:
        """Seconds of one lockstep step of attention-DP ranks with (tokens, sequences, context,
        pairs) `loads`: the slowest rank's own work, then the MoE layers over every rank padded
        to the busiest one's tokens (micro-batches as that rank's); at least `eager_floor_s`
        when fewer loads than `ranks` (an idle rank) or a load prefills (tokens > sequences)."""
        busiest = max(loads, key=lambda load: load[0], default=(0, 0, 0, 0))
        key = (busiest[0], busiest[1])
        shared = self._shared_steps.get(key)
        if shared is None:
            shared = self._shared_steps[key] = self.shared_step_s(*key)
        if self.overlap_schedule and self.host_applies and loads:
            # each rank's scheduler works while the whole lockstep step runs, MoE layers too
            gpu = _largest(self._local_gpu.step_time_s, loads) - self.host_fixed_s
            host = max(self._host_s(load[1]) for load in loads)
            step = step_with_host_s(gpu + shared, host, overlapped=True)
        else:
            step = (_largest(self.local.step_time_s, loads) if loads else 0.0) + shared
        eager = len(loads) < ranks or any(load[0] > load[1] for load in loads)
        return max(step, self.eager_floor_s) if eager and loads else step

    @cached_property
    def _shared_steps(self) -> dict[tuple[int, int], float]:
        """`shared_step_s` by (busiest tokens, sequences), filled as lockstep steps ask."""
        return {}

    def shared_step_s(self, busiest_tokens: float, seqs: float) -> float:
        """Seconds of a step's shared MoE layers when the busiest rank runs `busiest_tokens`
        tokens of `seqs` sequences (0 without attention DP or without tokens)."""
        if busiest_tokens <= 0:
            return 0.0
        m = self._microbatches(seqs)
        if self.spec is not None and busiest_tokens == seqs:  # per generated token
            q = self.spec.k + 1
            pass_s = self._moe_pass_s(busiest_tokens * q / m)
            return self.variable_scale * self.pp * pass_s / self.spec.tokens_per_step
        return self.variable_scale * self.pp * self._moe_pass_s(busiest_tokens / m)

    def moe_hbm_bytes(self, busiest_tokens: float, seqs: float) -> float:
        """Expert bytes this GPU reads in a lockstep step (attention DP), 0 otherwise."""
        if self.moe is None or busiest_tokens <= 0:
            return 0.0
        m = self._microbatches(seqs)
        if self.spec is not None and busiest_tokens == seqs:  # per generated token
            read = self.moe.bytes_read(busiest_tokens * (self.spec.k + 1) / m)
            return m * read / self.spec.tokens_per_step
        return m * self.moe.bytes_read(busiest_tokens / m)

    def hbm_bytes(self, tokens: float, seqs: float, context_tokens: float) -> float:
        """Bytes one GPU reads from HBM in the step (each micro-batch pass re-reads weights)."""
        if tokens <= 0:
            return 0.0
        if self.spec is not None and tokens == seqs:
            return self.decode_line(int(seqs), context_tokens).bytes0
        terms = self._load_terms.get((tokens, seqs))
        if terms is None:
            terms = self._load_terms[tokens, seqs] = self._load_terms_at(tokens, seqs)
        own = terms[7] + self.kv_bytes_per_token * context_tokens
        return own + terms[8]

    def decode_line(self, seqs: int, context0_tokens: float) -> DecodeLine:
        """Steps of `seqs` decoding sequences whose summed context (each counting the token it
        writes) is context0_tokens at step 0 and grows by `seqs` per step."""
        line = self._decode_lines.get(seqs) or self.decode_terms(seqs)
        mem0, per_ctx_mem, mem1, cmp0, per_ctx_cmp, cmp1, fixed_s, bytes0, bytes1, floor = line
        return DecodeLine(
            mem0 + per_ctx_mem * context0_tokens,
            mem1,
            cmp0 + per_ctx_cmp * context0_tokens,
            cmp1,
            fixed_s,
            bytes0 + self.context_bytes_per_token * context0_tokens,
            bytes1,
            floor,
        )

    @cached_property
    def context_bytes_per_token(self) -> float:
        """Bytes a decode step reads per token of context: the KV per token; with speculation,
        the target's KV once and the draft's K times, per generated token."""
        spec = self.spec
        if spec is None:
            return self.kv_bytes_per_token
        draft = 0.0 if spec.draft is None else spec.k * spec.draft.kv_bytes_per_token
        return (self.kv_bytes_per_token + draft) / spec.tokens_per_step

    @cached_property
    def _decode_lines(self) -> dict[int, tuple[float, ...]]:
        """`_decode_coefficients` by number of sequences, filled as the simulator asks."""
        return {}

    def decode_terms(self, seqs: int) -> tuple[float, ...]:
        """The terms of `decode_line(seqs, c)` (cached): (mem0, per-context mem0, mem1, cmp0,
        per-context cmp0, cmp1, fixed_s, bytes0, bytes1, floor_s), so that the line is
        DecodeLine(t0 + t1 c, t2, t3 + t4 c, t5, t6, t7 + kv_bytes_per_token c, t8, t9). For
        callers that price a run without building the line (the simulator's thrash loop)."""
        terms = self._decode_lines.get(seqs)
        if terms is None:
            terms = self._decode_lines[seqs] = self._decode_coefficients(seqs)
        return terms

    def _decode_coefficients(self, seqs: int) -> tuple[float, ...]:
        """The parts of `decode_line` that depend only on `seqs` (the context terms are added to
        them in the same order, so the line is the same to the last bit)."""
        if self.spec is not None:
            return self._spec_coefficients(seqs, self.spec)
        m = self._microbatches(seqs)
        k = self.pp * self.variable_scale
        per_ctx_mem = k * self.kv_bytes_per_token / m / self._kv_bw_at(seqs / m)
        per_ctx_cmp = k * self.attention_flops_per_pair / m / self.flops_per_s
        weights = self._weights_read(seqs / m)
        bmm_s = self._mla_bmm_s(seqs / m)
        if self._curved_compute:
            fixed_cmp = self._token_compute_s(seqs / m, seqs / m) + bmm_s
        else:
            fixed_cmp = (
                (self.flops_per_token + self.flops_per_sequence) * seqs / m / self.flops_per_s
            )
        fixed_s, floor_s = self._host_line(
            k * (self._comm_s(seqs / m) + self._moe_pass_s(seqs / m)) + self.step_overhead_s, seqs
        )
        return (
            k * (self._weights_time_s(seqs / m) + self._attention_floor_s(seqs / m) + bmm_s),
            per_ctx_mem,
            per_ctx_mem * seqs,
            k * fixed_cmp,
            per_ctx_cmp,
            per_ctx_cmp * seqs,
            fixed_s,
            m * weights + self.moe_hbm_bytes(seqs, seqs),
            self.kv_bytes_per_token * seqs,
            floor_s,
        )

    def _spec_coefficients(self, seqs: int, spec: SpecStep) -> tuple[float, ...]:
        """`_decode_coefficients` of one speculative step per generated token, the passes summed
        term by term (one roofline) and divided by tokens_per_step:
        - the verification: q = k + 1 query tokens per sequence, logits for each;
        - the draft (MTP, EAGLE): one extend pass over the q tokens of the verification (the
          accepted ones fill its KV, the last gives the first draft token; logits for one per
          sequence), then k - 1 single-token passes. SGLang: eagle_worker.py
          `forward_draft_extend_after_decode` (`num_tokens_per_req = speculative_num_steps + 1`)
          and `draft_forward` ("1 token from draft prefill and (#spec steps - 1) tokens here");
          TensorRT-LLM: _torch/speculative/mtp.py `MTPEagleWorker.forward` (the first MTP step
          runs on every accepted-token slot, `accepted_tokens[num_contexts:, :].flatten()`, later
          ones on one token per sequence)."""
        q = spec.k + 1
        verify = self._multi_token_terms(seqs, q, logits_per_seq=q)
        passes = [verify]
        if spec.draft is not None:
            passes.append(spec.draft._multi_token_terms(seqs, q, logits_per_seq=1))
            passes.extend([spec.draft.decode_terms(seqs)] * (spec.k - 1))
        step = [sum(terms) for terms in zip(*passes, strict=True)]
        # one scheduler iteration per speculative step: its host time (perf/host_time.py) meets
        # the step's GPU time as a plain decode step's does, then the step is shared by E tokens
        step[6], step[9] = self._host_line(step[6], seqs)
        per_token = 1.0 / spec.tokens_per_step
        return tuple(term * per_token for term in step)

    def _multi_token_terms(self, seqs: int, q: int, *, logits_per_seq: int) -> tuple[float, ...]:
        """`_decode_coefficients` of one pass over q query tokens per sequence with logits for
        `logits_per_seq` of them: weights and KV read once (the experts the q x seqs tokens
        touch); q times the token FLOPs and attention pairs; communication over q tokens; the
        step overhead once. The attention is the decode kernel's over `seqs` sequences (its
        measured floor and KV fraction at seqs, as a decode step's): the engines run the
        verification through their decode attention with q queries per sequence (SGLang's
        attention backends, TARGET_VERIFY: cache_seqlens = seq_lens + draft_token_num)."""
        m = self._microbatches(seqs)
        k = self.pp * self.variable_scale
        per_ctx_mem = k * self.kv_bytes_per_token / m / self._kv_bw_at(seqs / m)
        per_ctx_cmp = k * self.attention_flops_per_pair * q / m / self.flops_per_s
        tokens = seqs * q / m  # per micro-batch
        bmm_s = self._mla_bmm_s(tokens)  # the verification's queries run the absorbed path
        fixed_cmp = self._token_compute_s(tokens, seqs * logits_per_seq / m) + bmm_s
        return (
            k * (self._weights_time_s(tokens) + self._attention_floor_s(seqs / m) + bmm_s),
            per_ctx_mem,
            per_ctx_mem * seqs,
            k * fixed_cmp,
            per_ctx_cmp,
            per_ctx_cmp * seqs,
            k * (self._comm_s(tokens) + self._moe_pass_s(tokens)) + self.step_overhead_s,
            m * self._weights_read(tokens) + (m * self.moe.bytes_read(tokens) if self.moe else 0.0),
            self.kv_bytes_per_token * seqs,
            0.0,  # no host floor here: `_spec_coefficients` adds the step's host time once
        )


def mla_mha_flops_per_pair(arch: Architecture, layout: Layout, layers: int) -> float:
    """Per (query, key) pair per GPU of MLA prefill in the MHA form the engines run (the latent
    KV expanded per head): QK^T over qk_nope + rope dims and PV over v_head_dim, 2 FLOPs per
    multiply-add; 0 for models without MLA."""
    if arch.mla is None:
        return 0.0
    mla = arch.mla
    per_head = (mla.qk_nope_head_dim + mla.qk_rope_head_dim + mla.v_head_dim) * FLOPS_PER_MAC
    return layers * arch.num_attention_heads / layout.tp * per_head


def compute_dtype(scheme: WeightScheme, hardware: HardwareSpec | None = None) -> str:
    """The matmul dtype whose peak applies: fp8 for fp8 weights; fp4 for NVFP4 weights on a GPU
    with an FP4 peak (the engines quantise the activations to NVFP4 and run the FP4 tensor-core
    GEMM: vLLM model_executor/layers/quantization/modelopt.py, ModelOptNvFp4LinearMethod, with
    scaled_fp4_quant and cutlass_scaled_fp4_mm where cutlass FP4 is supported (Blackwell),
    Marlin W4A16 otherwise); else bf16 (INT4 and MXFP4 weights dequantised into BF16 matmuls)."""
    if scheme.linear is WeightDType.FP8:
        return "fp8"
    fp4 = (
        hardware is not None
        and hardware.vendor == "NVIDIA"  # NVFP4 is NVIDIA's format; AMD's FP4 peak is MXFP4
        and hardware.dense_tflops_fp4 is not None
    )
    return "fp4" if scheme.linear is WeightDType.NVFP4 and fp4 else "bf16"


def host_link_bytes_per_s(hardware: HardwareSpec) -> float:
    """One direction of the GPU-host link (half the bidirectional figure), bytes/s."""
    return hardware.host_link_bw_gb_s_bidir * GB / 2


def eager_prefill_floor_s(
    profile: EngineProfile | None, arch: Architecture, layout: Layout, layers: int
) -> float:
    """The least a step that prefills takes (`StepTimeModel.extend_floor_s`): the host time of
    the profile's per-step work, then of launching one eager pass over the stage's `layers`
    (serial on the CPU); 0 where the engine graphs such steps or no profile applies."""
    if profile is None:
        return 0.0
    eager = extend_eager_pass_s(profile, arch, layers, max(layout.tp, 1))
    return eager + dp_host_overhead_s(profile, layout) if eager > 0 else 0.0


def _excluded_gemms(
    arch: Architecture, scheme: WeightScheme, eff: Efficiency, layers: range
) -> tuple[OpCurve | None, int]:
    """(the native GEMM curve, the dense GEMM calls of `layers` on linears the quantization
    excludes), or (None, 0) where none is excluded or no curve prices them."""
    native = eff.excluded_gemm_curve
    if native is None or eff.gemm_curve is None or eff.dense_gemms_per_layer == 0:
        return None, 0
    calls = sum(
        is_excluded_linear(scheme, module) for i in layers for module in dense_gemm_modules(arch, i)
    )
    return (native, calls) if calls else (None, 0)


def step_time_model(
    arch: Architecture,
    hardware: HardwareSpec,
    layout: Layout,
    *,
    scheme: WeightScheme,
    kv_dtype: KVDType,
    efficiency: Efficiency | None = None,
    profile: EngineProfile | None = None,
    fitted: dict[str, float] | None = None,
    exchange: MoEExchange | None = None,
) -> StepTimeModel:
    """Precompute the step-time coefficients of one replica of `layout` (binding stage: the one
    reading the most weight bytes per pass). `efficiency` wins over `profile` (an engine's step
    terms, with `fitted` calibration terms); with neither, the named defaults. Attention DP moves
    the routed experts into a `MoEGroup` shared with the lockstep ranks (`exchange`: how tokens
    reach them; default `attention_dp.default_exchange`)."""
    if efficiency is not None:
        eff = efficiency
    elif profile is not None:
        eff = profile_efficiency(
            arch, hardware, layout, profile, fitted=fitted, scheme=scheme, kv_dtype=kv_dtype
        )
    else:
        eff = default_efficiency(arch)
    # the profile's host terms hold where its own step terms do (no calibration, no efficiency)
    own_host = profile is not None and efficiency is None and not fitted
    costs = [stage_cost(arch, layout, scheme, s) for s in range(layout.pp)]
    stage = max(range(layout.pp), key=lambda s: costs[s].read_bytes + costs[s].expert_bytes)
    cost = costs[stage]
    stage_layers = stage_layer_ranges(arch.num_layers, layout.pp)[stage]
    layers = len(stage_layers)
    moe_layers = sum(1 for i in stage_layers if arch.moe and arch.moe.is_moe_layer[i])
    choice = arch.moe.experts_per_token / arch.moe.num_experts if arch.moe else 0.0
    peak_flops = hardware.dense_flops_per_s(compute_dtype(scheme, hardware))
    peak_flops = peak_flops or hardware.dense_tflops_bf16 * TERA
    kv_per_token = kv_bytes_per_token_per_gpu(arch, layout, kv_dtype=kv_dtype)[stage]
    read_bytes = float(cost.read_bytes)
    native, excluded_gemms = _excluded_gemms(arch, scheme, eff, stage_layers)
    if profile is not None and profile.engine is EngineName.SGLANG:
        # SGLang's dense MLPs span the MoE group under DP attention: each rank reads its share
        # (the FLOPs stay: it runs them on every rank's gathered tokens)
        read_bytes -= dense_split_saving_bytes(arch, layout, scheme, stage)
    if profile is not None and profile.mla_absorbed_decode:
        # vLLM V0 0.7.1-0.7.x: the decode reads the absorbed MLA matrices in place of the raw q,
        # kv_b and o projections (a prefill step reads the raw ones: its bytes barely count)
        absorbed = mla_absorbed_bytes(arch, layout, scheme, stage)
        read_bytes += absorbed.held_bytes - absorbed.replaced_bytes
    model = StepTimeModel(
        pp=layout.pp,
        weight_bytes=read_bytes,
        expert_bytes=float(cost.expert_bytes),
        expert_choice_fraction=choice,
        kv_bytes_per_token=float(kv_per_token),
        flops_per_token=float(
            FLOPS_PER_MAC * (cost.dense_elements + cost.expert_elements * choice)
        ),
        flops_per_sequence=float(FLOPS_PER_MAC * cost.head_elements),
        attention_flops_per_pair=attention_flops_per_pair(arch, layout, layers),
        bandwidth_bytes_per_s=hardware.hbm_bandwidth_bytes_per_s * eff.mbu,
        peak_bandwidth_bytes_per_s=hardware.hbm_bandwidth_bytes_per_s,
        flops_per_s=peak_flops * eff.mfu,
        step_overhead_s=eff.step_overhead_s,
        comm=tp_pp_communication(
            arch,
            hardware,
            layout,
            layers,
            allreduce_latency_s=eff.allreduce_latency_s,
            p2p_latency_s=eff.p2p_latency_s,
            allreduce_curve=eff.allreduce_curve,
        ),
        kv_bandwidth_bytes_per_s=None
        if eff.kv_bandwidth_fraction is None
        else hardware.hbm_bandwidth_bytes_per_s * eff.kv_bandwidth_fraction,
        expert_efficiency=eff.expert_efficiency,
        variable_scale=eff.variable_scale,
        extend_attention_flops_per_s=None
        if eff.mla_extend_efficiency is None
        else hardware.dense_tflops_bf16 * TERA * eff.mla_extend_efficiency,
        profile=profile.label + (" (calibrated)" if fitted else "") if profile else "",
        gemm_curve=eff.gemm_curve,
        moe_curve=eff.moe_curve,
        dense_gemms=layers * eff.dense_gemms_per_layer,
        excluded_gemm_curve=native,
        excluded_gemms=excluded_gemms,
        excluded_bytes=float(cost.excluded_bytes) if native is not None else 0.0,
        moe_layers=moe_layers,
        attention_curve=eff.attention_curve,
        attention_calls=layers if eff.attention_curve is not None else 0,
        gemm_flops_curve=eff.gemm_flops_curve,
        moe_flops_curve=eff.moe_flops_curve,
        expert_flops_per_token=float(FLOPS_PER_MAC * cost.expert_elements * choice),
        extend_attention_curve=eff.extend_attention_curve,
        extend_flops_per_pair=0.0
        if arch.mla is None
        else mla_mha_flops_per_pair(arch, layout, layers),
        extend_attention_layers=layers if eff.extend_attention_curve is not None else 0,
        gemm_extra_s=layers * eff.gemm_extra_s_per_layer,
        moe_table=eff.moe_table,
        mla_bmm_table=eff.mla_bmm_table,
        mla_bmm_layers=layers if eff.mla_bmm_table is not None else 0,
        extend_floor_s=eager_prefill_floor_s(profile, arch, layout, layers)
        if efficiency is None and not fitted  # a calibration's fixed_s and scale replace it
        else 0.0,
        overlap_schedule=profile is not None and overlaps(profile, layout),
        host_fixed_s=dp_host_overhead_s(profile, layout) if own_host and profile else 0.0,
        host_per_seq_s=profile.host_per_seq_s if own_host and profile else 0.0,
    )
    if not layout.attention_dp or arch.moe is None:
        return model
    group = moe_group(
        arch, hardware, layout, stage_layers=stage_layer_ranges(arch.num_layers, layout.pp)[stage],
        expert_bytes=model.expert_bytes, expert_elements=float(cost.expert_elements),
        fp8_dispatch=compute_dtype(scheme) == "fp8", exchange=exchange,
    )  # fmt: skip
    # The exchange's reduce-scatter (or combine) replaces the TP all-reduce after each MLP.
    comm = replace(model.comm, allreduces_per_pass=model.comm.allreduces_per_pass // 2)
    dense_flops = float(FLOPS_PER_MAC * cost.dense_elements)
    # The floor is a profile term: a calibration's fixed_s and scale replace it (the fit needs
    # every timing linear in them).
    eager = dp_eager_pass_s(profile, arch, layout) if profile and not fitted else 0.0
    return replace(
        model, expert_bytes=0.0, flops_per_token=dense_flops, moe=group, comm=comm,
        expert_flops_per_token=0.0,
        eager_floor_s=0.0 if efficiency is not None else eager,
    )  # fmt: skip


def _largest(
    step_time_s: Callable[[int, int, int, int], float], loads: list[tuple[int, int, int, int]]
) -> float:
    """max(step_time_s(*load) for load in loads) over non-empty `loads` (the first of equal
    ones, as `max` keeps it), without a generator per step."""
    top = step_time_s(*loads[0])
    for load in loads[1:]:
        seconds = step_time_s(*load)
        if seconds > top:
            top = seconds
    return top
