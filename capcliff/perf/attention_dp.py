"""Attention data parallelism: the MoE layers shared by replicas that step in lockstep (modeled).

With SGLang's `--enable-dp-attention`, vLLM's data parallelism of a MoE model (the DP ranks run
dummy batches so that every rank enters each MoE layer together, vllm/v1/engine/core.py
`DPEngineCoreProc`) or TensorRT-LLM's `enable_attention_dp`, each of `ranks` replicas runs
attention on its own requests, and every MoE layer runs over the tokens of all of them:

    MoE pass = max(expert bytes x touched(R t) / (HBM bw x MBU), expert FLOPs x R t / (peak x MFU))
               + MoE layers x exchange(t)

where t is the busiest rank's token count: engines pad every rank to it (vLLM's DP padding of
`num_tokens_across_dp` to the maximum for CUDA graphs, gpu_model_runner.py `get_dp_padding`;
SGLang's DP-attention padding to the largest rank's batch), so R t rows reach the experts and
`touched(n) = 1 - (1 - k/E)^n` of this GPU's experts are read. The exchange is
`capcliff.perf.communication`'s gather or all-to-all.
"""

from __future__ import annotations

from dataclasses import dataclass

from capcliff.catalog.architecture import Architecture
from capcliff.catalog.layout import Layout
from capcliff.catalog.specs import HardwareSpec
from capcliff.perf.communication import (
    BF16_BYTES,
    FP8_WITH_SCALE_BYTES,
    ExchangeCost,
    Fabric,
    MoEExchange,
    all_to_all_cost,
    gather_cost,
)


@dataclass(frozen=True)
class MoEGroup:
    """The MoE layers of one pipeline stage shared by `ranks` lockstep replicas (per GPU:
    bytes, FLOPs, seconds)."""

    ranks: int
    expert_bytes: float  # routed-expert weights this GPU holds in the stage
    expert_choice_fraction: float  # top_k / num_experts
    expert_flops_per_token: float  # this GPU's expert FLOPs per token reaching the MoE layers
    moe_layers: int  # MoE layers in the stage
    exchange: ExchangeCost  # one MoE layer's token exchange

    def padded_tokens(self, busiest_tokens: float) -> float:
        """Rows reaching the experts: every rank padded to the busiest one."""
        return self.ranks * busiest_tokens

    def bytes_read(self, busiest_tokens: float) -> float:
        """Expert bytes this GPU reads in one pass: those the padded rows touch."""
        if busiest_tokens <= 0:
            return 0.0
        rows = self.padded_tokens(busiest_tokens)
        return self.expert_bytes * (1.0 - float((1.0 - self.expert_choice_fraction) ** rows))

    def pass_s(self, busiest_tokens: float, bandwidth: float, flops_per_s: float) -> float:
        """Seconds of the stage's MoE layers and their exchanges in one pass."""
        if busiest_tokens <= 0:
            return 0.0
        rows = self.padded_tokens(busiest_tokens)
        mem = self.bytes_read(busiest_tokens) / bandwidth
        compute = self.expert_flops_per_token * rows / flops_per_s
        return max(mem, compute) + self.moe_layers * self.exchange.seconds(busiest_tokens)


def default_exchange(layout: Layout, hardware: HardwareSpec) -> MoEExchange:
    """The engines' default inside one scale-up domain: all-gather and reduce-scatter (vLLM's
    `VLLM_ALL2ALL_BACKEND` default `allgather_reducescatter`; SGLang's DP attention without
    `--moe-a2a-backend deepep`, the command `capcliff plan` prints). Pure EP across nodes
    (whole experts per rank, more ranks than one domain) is deployed with DeepEP-class
    dispatch/combine kernels (SGLang's and vLLM's wide-EP recipes), so all-to-all there. A named
    assumption; pass `exchange=` to choose."""
    across = layout.moe_ranks > hardware.scaleup_domain_gpus
    return MoEExchange.ALL_TO_ALL if across and layout.moe_tp == 1 else MoEExchange.GATHER


def moe_group(
    arch: Architecture,
    hardware: HardwareSpec,
    layout: Layout,
    *,
    stage_layers: range,
    expert_bytes: float,
    expert_elements: float,
    fp8_dispatch: bool,
    exchange: MoEExchange | None = None,
) -> MoEGroup:
    """The shared MoE terms of an attention-DP layout's binding stage (its decoder layers
    `stage_layers`; `expert_bytes` / `expert_elements` this GPU holds there)."""
    assert arch.moe is not None and layout.attention_dp
    choice = arch.moe.experts_per_token / arch.moe.num_experts
    fabric = Fabric.of(hardware)
    how = exchange or default_exchange(layout, hardware)
    if how is MoEExchange.GATHER:
        cost = gather_cost(ranks=layout.moe_ranks, hidden=arch.hidden_size, fabric=fabric)
    else:
        cost = all_to_all_cost(
            ranks=layout.ep,
            hidden=arch.hidden_size,
            num_experts=arch.moe.num_experts,
            top_k=arch.moe.experts_per_token,
            dispatch_bytes_per_element=FP8_WITH_SCALE_BYTES if fp8_dispatch else BF16_BYTES,
            fabric=fabric,
        )
    return MoEGroup(
        ranks=layout.lockstep_replicas,
        expert_bytes=expert_bytes,
        expert_choice_fraction=choice,
        # 2 FLOPs per multiply-add x this GPU's expert elements x the share of rows each expert
        # gets (k / E of them, uniform routing)
        expert_flops_per_token=2 * expert_elements * choice,
        moe_layers=sum(1 for layer in stage_layers if arch.moe.is_moe_layer[layer]),
        exchange=cost,
    )
