"""Weight bytes per GPU for a layout: TP/EP sharding, vLLM's PP layer split, per-module formats."""

from __future__ import annotations

import math
from bisect import bisect_left
from dataclasses import dataclass
from fractions import Fraction
from functools import lru_cache

from capcliff.catalog.architecture import Architecture
from capcliff.catalog.layout import Layout
from capcliff.catalog.quantization import (
    BF16,
    FP16,
    MXFP4,
    NVFP4,
    Quantization,
    WeightFormat,
    format_label,
    fp8_block,
    int_grouped,
    mixed_label,
)
from capcliff.memory.params import (
    Component,
    ParamGroup,
    Shard,
    Storage,
    first_stage_groups,
    head_groups,
    layer_param_groups,
)
from capcliff.units import WeightDType, round_up

# vLLM pads the vocabulary to a multiple of 64 before splitting it over TP ranks
# (DEFAULT_VOCAB_PADDING_SIZE in vllm/model_executor/layers/vocab_parallel_embedding.py).
VOCAB_PADDING = 64


# The format capcliff assumes for a whole-model `--weight-dtype` (units.py documents each).
_UNIFORM_FORMAT: dict[WeightDType, WeightFormat] = {
    WeightDType.BF16: BF16,
    WeightDType.FP16: FP16,
    WeightDType.FP8: fp8_block(128, 128),
    WeightDType.INT4: int_grouped(4, 128, zero_point=True),
    WeightDType.MXFP4: MXFP4,
    WeightDType.NVFP4: NVFP4,
}


def uniform_format(dtype: WeightDType) -> WeightFormat:
    """The storage format of `dtype` when a whole model is cast to it (scales as in units.py)."""
    return _UNIFORM_FORMAT[dtype]


@dataclass(frozen=True)
class WeightScheme:
    """Storage format of each weight tensor: per module as the checkpoint ships, or one dtype.

    `linear`, `expert` and `native` summarise it (the dtype most linear / routed-expert weights
    are in, and the dtype of never-quantised tensors); `quantization`, when set, decides each
    module's format from the checkpoint's quantization_config (`catalog/quantization.py`).
    """

    linear: WeightDType
    expert: WeightDType
    native: WeightDType
    quantization: Quantization | None = None

    @classmethod
    def as_shipped(cls, arch: Architecture) -> WeightScheme:
        """The checkpoint's own formats (config.json torch_dtype and quantization_config)."""
        return cls(arch.linear_dtype, arch.expert_dtype, arch.activation_dtype, arch.quantization)

    @classmethod
    def quantised(cls, arch: Architecture, dtype: WeightDType) -> WeightScheme:
        """Every linear and expert weight in `dtype`; embeddings, norms and router stay native."""
        return cls(dtype, dtype, arch.activation_dtype)

    @classmethod
    def planned(cls, arch: Architecture, dtype: WeightDType | None) -> WeightScheme:
        """The weights planned for `--weight-dtype dtype`: the checkpoint's own formats where
        none is given or it names the dtype the checkpoint's linear and expert weights ship in
        (an engine loads a quantized checkpoint by its own quantization_config: vLLM's
        `--quantization fp8` on an FP8 checkpoint is the checkpoint's method), else every linear
        and expert weight in `dtype` (`quantised`)."""
        shipped = cls.as_shipped(arch)
        if dtype is None or (shipped.linear, shipped.expert) == (dtype, dtype):
            return shipped
        return cls.quantised(arch, dtype)

    def label_of(self, storage: Storage) -> str:
        """The dtype name reports give this storage class: `dtype_of`, integer formats by their
        bits (GPTQ at 8 bits is int8, not its int4 compute family)."""
        dtype = self.dtype_of(storage).value
        if self.quantization is None or storage is Storage.NATIVE:
            return dtype
        quant = self.quantization
        mixed = mixed_label(quant.targeted)
        if mixed is not None:
            return mixed
        return format_label(quant.expert if storage is Storage.EXPERT else quant.linear, dtype)

    def label(self) -> str:
        """The dtype name of the linear weights, and of the routed experts where they differ
        ("bf16 (experts mxfp4)"): the reports' `weight_dtype`."""
        dtype = self.label_of(Storage.LINEAR)
        experts = self.label_of(Storage.EXPERT)
        return dtype if experts == dtype else f"{dtype} (experts {experts})"

    def dtype_of(self, storage: Storage) -> WeightDType:
        """The dtype most tensors of this storage class are held in (a summary; see format_of)."""
        return {Storage.LINEAR: self.linear, Storage.EXPERT: self.expert}.get(storage, self.native)

    def format_of(self, group: ParamGroup) -> WeightFormat:
        """The storage format of one weight group, scales included."""
        native = uniform_format(self.native)
        if self._quantised_head(group):
            assert self.quantization is not None
            head = self.quantization.head_format()
            return native if head is None else head
        if group.storage is Storage.NATIVE:
            return native
        if self.quantization is None:
            return uniform_format(self.dtype_of(group.storage))
        found = self.quantization.format_of(group.module, expert=group.storage is Storage.EXPERT)
        return native if found is None else found

    def _quantised_head(self, group: ParamGroup) -> bool:
        """Whether `group` is an output head the checkpoint quantises (GPTQ's `lm_head`)."""
        quant = self.quantization
        return quant is not None and quant.lm_head and group.component is Component.LM_HEAD

    def bytes_per_element(self, group: ParamGroup) -> Fraction:
        """Bytes per stored element of `group`, its scales (and zero points) included."""
        return self.format_of(group).bytes_per_element(group.fan_in)


def pp_layer_counts(num_layers: int, pp: int) -> list[int]:
    """Layers per pipeline stage as vLLM splits them (`get_pp_indices`, vllm/distributed/utils.py).

    Each stage gets num_layers // pp; the remainder goes one layer each to the stages before the
    last, starting from the second-to-last (the last holds the final norm and lm_head).
    """
    counts = [num_layers // pp] * pp
    for i in range(2, num_layers % pp + 2):
        counts[-i] += 1
    return counts


def stage_layer_ranges(num_layers: int, pp: int) -> list[range]:
    """The decoder layer indices of each pipeline stage."""
    ranges, start = [], 0
    for count in pp_layer_counts(num_layers, pp):
        ranges.append(range(start, start + count))
        start += count
    return ranges


def elements_per_rank(group: ParamGroup, layout: Layout) -> Fraction:
    """Elements of `group` one GPU holds under `layout`."""
    tp = layout.tp
    if group.shard is Shard.REPLICATED:
        return Fraction(group.elements)
    if group.shard is Shard.TP:
        return Fraction(group.elements, tp)
    if group.shard is Shard.KV_HEADS:
        heads = group.elements // group.row_elements
        return Fraction(max(1, heads // tp) * group.row_elements)
    if group.shard is Shard.VOCAB:
        vocab = group.elements // group.row_elements
        return Fraction(round_up(vocab, VOCAB_PADDING) * group.row_elements, tp)
    # Routed experts: num_experts / ep whole experts per rank, each split in width over moe_tp
    # ranks, so ep x moe_tp = the ranks a MoE layer spans (TP, or DP x TP under attention DP).
    return Fraction(group.elements, layout.moe_ranks)


def stage_param_groups(arch: Architecture, layout: Layout, stage: int) -> list[ParamGroup]:
    """Weight groups held by pipeline stage `stage` (embedding first, norm + lm_head last)."""
    layers = stage_layer_ranges(arch.num_layers, layout.pp)[stage]
    groups: list[ParamGroup] = first_stage_groups(arch) if stage == 0 else []
    for layer in layers:
        groups += layer_param_groups(arch, layer)
    return groups + _stage_head_groups(arch, layout, stage)


def _stage_head_groups(arch: Architecture, layout: Layout, stage: int) -> list[ParamGroup]:
    """The final norm and lm_head groups on the last stage (none elsewhere)."""
    if stage != layout.pp - 1:
        return []
    head = head_groups(arch)
    # A tied lm_head reuses the embedding when both sit on one stage; otherwise it is loaded.
    return head[:1] if arch.tie_word_embeddings and layout.pp == 1 else head


# One decoder layer's weight groups, and the indices of the layers built the same way.
_LayerKind = tuple[tuple[ParamGroup, ...], tuple[int, ...]]


@lru_cache(maxsize=32)
def _layer_kinds(arch: Architecture, scheme: WeightScheme) -> tuple[_LayerKind, ...]:
    """The decoder layers grouped by kind: two layers are of one kind when their groups match
    one for one in everything that sets their bytes under any layout (component, sharding,
    element counts, fan-in and storage format: dense and MoE layers differ, and so do layers a
    checkpoint quantises differently); each kind with one layer's groups and its layer indices."""
    kinds: dict[tuple[object, ...], tuple[list[ParamGroup], list[int]]] = {}
    for layer in range(arch.num_layers):
        groups = layer_param_groups(arch, layer)
        key = tuple(
            (g.component, g.elements, g.shard, g.row_elements, g.fan_in, scheme.format_of(g))
            for g in groups
        )
        kinds.setdefault(key, (groups, []))[1].append(layer)
    return tuple((tuple(groups), tuple(layers)) for groups, layers in kinds.values())


def stage_group_counts(
    arch: Architecture, layout: Layout, scheme: WeightScheme, stage: int
) -> list[tuple[ParamGroup, int]]:
    """The weight groups of pipeline stage `stage` in closed form: each group of one layer of
    each kind with the number of the stage's layers of that kind (then the embedding and head
    groups, once each). Summing count x bytes over these equals summing `stage_param_groups`
    group by group, in a few dozen terms instead of one per group of every layer."""
    layers = stage_layer_ranges(arch.num_layers, layout.pp)[stage]
    out = [(group, 1) for group in first_stage_groups(arch)] if stage == 0 else []
    for groups, indices in _layer_kinds(arch, scheme):
        count = bisect_left(indices, layers.stop) - bisect_left(indices, layers.start)
        if count:
            out += [(group, count) for group in groups]
    return out + [(group, 1) for group in _stage_head_groups(arch, layout, stage)]


def stage_weight_bytes(arch: Architecture, layout: Layout, scheme: WeightScheme, stage: int) -> int:
    """Bytes of weights one GPU of pipeline stage `stage` holds: ceil(sum over the stage's groups
    of elements per rank x bytes per element), exact (fractions), summed in closed form over
    layers of one kind (`stage_group_counts`)."""
    total = Fraction(0)
    for group, count in stage_group_counts(arch, layout, scheme, stage):
        total += count * elements_per_rank(group, layout) * scheme.bytes_per_element(group)
    return math.ceil(total)


def weight_bytes_per_gpu_by_stage(
    arch: Architecture, layout: Layout, scheme: WeightScheme
) -> list[int]:
    """Weight bytes per GPU for each pipeline stage; the largest stage binds."""
    return [stage_weight_bytes(arch, layout, scheme, s) for s in range(layout.pp)]


def total_weight_bytes(arch: Architecture, scheme: WeightScheme) -> int:
    """Bytes of the whole model's weights on one GPU (TP=PP=1)."""
    return stage_weight_bytes(arch, Layout(), scheme, 0)


def dense_split_saving_bytes(
    arch: Architecture, layout: Layout, scheme: WeightScheme, stage: int
) -> int:
    """Bytes of dense-MLP and shared-expert weights one GPU of `stage` does not hold when the
    engine splits them over every rank of the MoE group instead of over the attention TP ranks.

    SGLang under DP attention does (deepseek_v2.py: the dense and shared-expert `DeepseekV2MLP`s
    are column/row-parallel over the whole `--tp` group, `moe_dense_tp_size` defaulting to it;
    only attention, embedding and lm_head are replicated per DP rank); vLLM keeps them per DP
    rank, which is what `elements_per_rank` counts. 0 without attention DP."""
    if not layout.attention_dp or layout.moe_ranks <= layout.tp:
        return 0
    saved = Fraction(0)
    for group, count in stage_group_counts(arch, layout, scheme, stage):
        if group.shard is Shard.TP and group.component in (Component.MLP, Component.SHARED_EXPERTS):
            held = elements_per_rank(group, layout) - Fraction(group.elements, layout.moe_ranks)
            saved += count * held * scheme.bytes_per_element(group)
    return math.floor(saved)
