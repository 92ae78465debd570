"""What one pipeline stage of a layout computes per pass: weight bytes it reads, matmul elements
(dense, routed experts, lm_head) and attention FLOPs per (query, key) pair."""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

from capcliff.catalog.architecture import Architecture
from capcliff.catalog.layout import Layout
from capcliff.memory.params import Component, Storage
from capcliff.memory.weights import WeightScheme, elements_per_rank, stage_group_counts

# FLOPs of one multiply-add.
FLOPS_PER_MAC = 2


@dataclass(frozen=True)
class StageCost:
    read_bytes: Fraction  # dense weights read per pass (embedding rows excluded)
    expert_bytes: Fraction
    dense_elements: Fraction  # elements in matmuls run for every token (experts excluded)
    expert_elements: Fraction
    head_elements: Fraction  # lm_head elements (run once per sequence)
    # Of read_bytes: the dense linear weights a checkpoint's quantization leaves in the native
    # dtype (its exclude list: NVIDIA's DeepSeek-R1 NVFP4 keeps every self_attn projection in
    # BF16), which engines run through native-dtype GEMM kernels.
    excluded_bytes: Fraction = Fraction(0)


def stage_cost(arch: Architecture, layout: Layout, scheme: WeightScheme, stage: int) -> StageCost:
    """The stage's sums, over one layer of each kind times its count (`stage_group_counts`):
    the same fractions as group by group over every layer, exactly."""
    read = expert = dense = experts_el = head = excluded = Fraction(0)
    tied_head = arch.tie_word_embeddings and layout.pp == 1
    for group, count in stage_group_counts(arch, layout, scheme, stage):
        elements = count * elements_per_rank(group, layout)
        size = elements * scheme.bytes_per_element(group)
        if group.component is Component.VISION or (
            group.component is Component.EMBEDDING and not tied_head
        ):
            continue  # only the looked-up rows are read; the vision tower runs on images only
        if group.component in (Component.LM_HEAD, Component.EMBEDDING):
            head += elements
            read += size
        elif group.component is Component.EXPERTS:
            expert += size
            experts_el += elements
        else:
            read += size
            dense += elements
            if group.storage is Storage.LINEAR and is_excluded_linear(scheme, group.module):
                excluded += size
    return StageCost(read, expert, dense, experts_el, head, excluded)


def is_excluded_linear(scheme: WeightScheme, module: str) -> bool:
    """Whether the dense linear weight `module` (a Hugging Face module path) stays in the native
    dtype although the checkpoint quantises its linear layers (its exclude list names it)."""
    quant = scheme.quantization
    return (
        quant is not None
        and quant.linear is not None
        and (quant.format_of(module, expert=False) is None)
    )


def attention_flops_per_pair(arch: Architecture, layout: Layout, layers: int) -> float:
    """Per (query, key) pair per GPU: QK^T and PV, 2 FLOPs per multiply-add each."""
    heads = arch.num_attention_heads / layout.tp
    if arch.mla is not None:  # absorbed MLA: scores over (latent + rope), values over the latent
        per_head = (2 * arch.mla.kv_lora_rank + arch.mla.qk_rope_head_dim) * FLOPS_PER_MAC
    else:
        per_head = 2 * arch.head_dim * FLOPS_PER_MAC
    return layers * heads * per_head
