"""The memory budget of a GPU and the KV capacity it leaves: a first, engine-agnostic rule.

usable = driver-reported memory x gpu_memory_utilization
kv     = usable - weights - activation_peak - non_torch
blocks = floor(kv / (block_size x KV bytes per token)), per GPU; the smallest rank of a replica
binds.

Each term is a named function or setting. Engine-faithful rules (vLLM, SGLang, TensorRT-LLM) plug in
through `BudgetRule`: anything with a `name` and a `stage_budget` method of the same signature.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Protocol

from capcliff.architecture import Architecture
from capcliff.errors import InputError
from capcliff.layout import Layout
from capcliff.units import MIB

# Default block size of vLLM's paged KV cache (CacheConfig.block_size = 16 on CUDA).
DEFAULT_BLOCK_SIZE = 16
# vLLM's default `gpu_memory_utilization` (vllm/config: CacheConfig).
DEFAULT_GPU_MEMORY_UTILIZATION = 0.9
# vLLM V1 server default `max_num_batched_tokens` on large-memory GPUs (vllm/engine/arg_utils.py).
DEFAULT_MAX_NUM_BATCHED_TOKENS = 8192
# vLLM's long-standing default `max_num_seqs` (SchedulerConfig).
DEFAULT_MAX_NUM_SEQS = 256
# Memory outside PyTorch's allocator (NCCL buffers, cuBLAS workspaces) inside the budget. Named
# assumption: vLLM start-up logs show 0.10-0.35 GiB at TP 1-8 (shared/reference/vllm_kv_logs.csv
# rows
# V24, V04, V01) and 1.79 GiB on one dev build (V11); 512 MiB covers the common case.
DEFAULT_NON_TORCH_BYTES = 512 * MIB
# Bytes of one element of an activation tensor (bf16/fp16) and of an fp32 logit.
ACTIVATION_BYTES = 2
LOGIT_BYTES = 4


@dataclass(frozen=True)
class BudgetSettings:
    """Engine settings that shape the budget, named as the engines name them."""

    gpu_memory_utilization: float = DEFAULT_GPU_MEMORY_UTILIZATION
    gpu_total_memory_bytes: int | None = None  # overrides the hardware spec's driver figure
    max_num_batched_tokens: int = DEFAULT_MAX_NUM_BATCHED_TOKENS
    max_num_seqs: int = DEFAULT_MAX_NUM_SEQS
    block_size: int = DEFAULT_BLOCK_SIZE
    non_torch_bytes: int = DEFAULT_NON_TORCH_BYTES
    activation_bytes: int | None = None  # overrides `activation_peak_bytes`

    def __post_init__(self) -> None:
        if not 0 < self.gpu_memory_utilization <= 1:
            raise InputError(
                f"gpu_memory_utilization: must be in (0, 1], got {self.gpu_memory_utilization}"
            )
        for name in ("max_num_batched_tokens", "max_num_seqs", "block_size"):
            if getattr(self, name) < 1:
                raise InputError(f"{name}: must be >= 1, got {getattr(self, name)}")

    def with_total_memory(self, total_bytes: int) -> BudgetSettings:
        """These settings on a GPU whose driver reports `total_bytes`."""
        return replace(self, gpu_total_memory_bytes=total_bytes)


@dataclass(frozen=True)
class StageBudget:
    """Where one GPU's memory goes, in bytes, and the KV blocks that remain."""

    total_memory_bytes: int
    requested_bytes: int
    weights_bytes: int
    activation_bytes: int
    non_torch_bytes: int
    kv_bytes_per_token: int
    block_size: int

    @property
    def reserves_bytes(self) -> int:
        """Everything but weights that the budget holds back from the KV cache."""
        return self.activation_bytes + self.non_torch_bytes

    @property
    def kv_bytes(self) -> int:
        """Bytes left for the KV cache (negative when the weights and reserves overflow)."""
        return self.requested_bytes - self.weights_bytes - self.reserves_bytes

    @property
    def blocks(self) -> int:
        """Whole KV blocks that fit in `kv_bytes`."""
        block_bytes = self.block_size * self.kv_bytes_per_token
        return max(0, self.kv_bytes) // block_bytes if block_bytes else 0


@dataclass(frozen=True)
class StageDemand:
    """What one GPU of a pipeline stage must hold, before the engine's budget rule splits memory."""

    arch: Architecture
    layout: Layout
    total_memory_bytes: int
    weights_bytes: int
    kv_bytes_per_token: int


class BudgetRule(Protocol):
    """An engine's rule for turning device memory into a KV budget."""

    name: str

    def stage_budget(self, demand: StageDemand, settings: BudgetSettings) -> StageBudget:
        """Split one GPU's memory into weights, reserves and KV cache."""
        ...


def activation_peak_bytes(
    arch: Architecture, layout: Layout, *, max_num_batched_tokens: int, max_num_seqs: int
) -> int:
    """T x (2h + widest MLP intermediate per rank) x 2 B + S x vocab x 4 B.

    The peak of a profiling forward pass over T = max_num_batched_tokens tokens (vLLM's profile
    run):
    the hidden state and residual (2h per token) live while the MLP holds its gate/up output and the
    activated product (3 x intermediate / TP; for MoE, top_k copies of the expert width, per EP/TP
    rank, plus the expert output h). The sampler's warm-up adds fp32 logits for S = max_num_seqs
    rows
    over the full vocabulary. First-order; the engine budget refines it.
    """
    h = arch.hidden_size
    widths = [3 * arch.intermediate_size // layout.tp]
    if arch.moe is not None:
        expert_tp = 1 if layout.ep > 1 else layout.tp
        per_copy = 3 * arch.moe.expert_intermediate_size // expert_tp + h
        widths.append(arch.moe.experts_per_token * per_copy)
    per_token = (2 * h + max(widths)) * ACTIVATION_BYTES
    logits = max_num_seqs * arch.vocab_size * LOGIT_BYTES
    return max_num_batched_tokens * per_token + logits


class FirstOrderBudget:
    """capcliff's engine-agnostic budget: utilisation x memory - weights - named reserves."""

    name = "first-order"

    def stage_budget(self, demand: StageDemand, settings: BudgetSettings) -> StageBudget:
        """Split one GPU's memory into weights, reserves and KV cache."""
        activation = settings.activation_bytes
        if activation is None:
            activation = activation_peak_bytes(
                demand.arch,
                demand.layout,
                max_num_batched_tokens=settings.max_num_batched_tokens,
                max_num_seqs=settings.max_num_seqs,
            )
        return StageBudget(
            total_memory_bytes=demand.total_memory_bytes,
            requested_bytes=int(demand.total_memory_bytes * settings.gpu_memory_utilization),
            weights_bytes=demand.weights_bytes,
            activation_bytes=activation,
            non_torch_bytes=settings.non_torch_bytes,
            kv_bytes_per_token=demand.kv_bytes_per_token,
            block_size=settings.block_size,
        )
