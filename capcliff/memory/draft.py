"""The speculative draft's own weights and KV cache per GPU (MTP layers, EAGLE heads; n-gram has
none).

What each engine loads for a draft:
- MTP (DeepSeek-V3/R1 `num_nextn_predict_layers`): each MTP module is one full decoder layer of
  the target (MLA attention, a routed-MoE MLP with all its experts) plus `eh_proj`, a
  (2 hidden -> hidden) projection of the concatenated embedding and hidden state; its embedding
  and output head are the target's (DeepSeek-V3 technical report, arXiv 2412.19437, section
  2.2 "shared embedding ... shared output head"). SGLang shares them
  (sgl-project/sglang python/sglang/srt/speculative/eagle_worker.py: `set_embed_and_head`),
  vLLM too when the shapes match (vllm-project/vllm vllm/v1/spec_decode/eagle.py `load_model`).
- EAGLE / EAGLE-3 head: one decoder layer of the target's width plus `fc`, a (2 or 3 hidden ->
  hidden) fusion of the target's hidden states (EAGLE-3 fuses three: arXiv 2503.01840), sharing
  the target's embedding; EAGLE-3 keeps its own, smaller lm_head over `draft_vocab_size` tokens
  (SGLang eagle_worker.py: "EAGLE3 models don't share lm_head").
- Each draft layer keeps its own KV cache in the engine's pool, one layer's worth per token:
  SGLang scales the target's cell size by (1 + draft layers / target layers) (its memory-pool
  configurator), vLLM allocates the drafter's attention layers in the same KV-cache config.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from enum import StrEnum
from fractions import Fraction

from capcliff.catalog.architecture import Architecture
from capcliff.catalog.layout import Layout
from capcliff.memory.kv import layer_kv_bytes_per_token
from capcliff.memory.params import Component, ParamGroup, Shard, Storage
from capcliff.memory.weights import WeightScheme, elements_per_rank, stage_param_groups
from capcliff.units import KVDType

# EAGLE-3 heads predict over a reduced vocabulary: `draft_vocab_size` 32,000 in the published
# Llama-3.1 heads (yuhuili/EAGLE3-LLaMA3.1-Instruct-8B config.json). Assumed for every EAGLE-3
# head without its own config.
EAGLE3_DRAFT_VOCAB = 32_000
# Hidden states EAGLE-3's `fc` fuses (low, middle and high layers of the target: arXiv
# 2503.01840, section 3); MTP's eh_proj fuses two (embedding and hidden state).
EAGLE3_FUSED_STATES = 3
MTP_FUSED_STATES = 2

# The most draft tokens per step accepted on input (the engines' own examples stay under 10:
# SGLang's EAGLE tree examples use up to 8 steps; a sanity bound, not an engine limit).
MAX_SPECULATIVE_TOKENS = 16


class SpecMethod(StrEnum):
    """How draft tokens are proposed."""

    MTP = "mtp"  # the model's own multi-token-prediction layers (DeepSeek NextN)
    EAGLE = "eagle"  # an EAGLE-3 head trained for the target
    NGRAM = "ngram"  # prompt lookup: no model, no weights, no KV


@dataclass(frozen=True)
class DraftModel:
    """A draft as its GPU cost: the architecture one draft pass runs (`arch`, its embedding and
    head included for the step time) and the extra (2|3 hidden -> hidden) fusion projection."""

    arch: Architecture
    fused_states: int
    shares_head: bool  # the lm_head is the target's (no extra weights)

    @property
    def fc_elements(self) -> int:
        """Elements of the fusion projection (eh_proj / fc): fused_states x hidden x hidden."""
        return self.fused_states * self.arch.hidden_size * self.arch.hidden_size


def draft_model(arch: Architecture, method: SpecMethod) -> DraftModel | None:
    """The draft of `method` for target `arch` (None for n-gram). MTP keeps the target's MoE
    layer with its experts (one per `num_nextn_predict_layers`); an EAGLE head is one dense layer
    of the target's width and dense MLP width (`intermediate_size`: an assumption for MoE
    targets, whose EAGLE heads ship their own config)."""
    if method is SpecMethod.NGRAM:
        return None
    if method is SpecMethod.MTP:
        layers = arch.num_mtp_layers
        moe = None if arch.moe is None else replace(arch.moe, is_moe_layer=(True,) * layers)
        draft = replace(
            arch, num_layers=layers, moe=moe, sliding_window_per_layer=(None,) * layers,
            num_mtp_layers=0, tie_word_embeddings=False,
        )  # fmt: skip
        return DraftModel(draft, MTP_FUSED_STATES, shares_head=True)
    draft = replace(
        arch, num_layers=1, moe=None, sliding_window_per_layer=(None,), num_mtp_layers=0,
        vocab_size=min(arch.vocab_size, EAGLE3_DRAFT_VOCAB), tie_word_embeddings=False,
    )  # fmt: skip
    return DraftModel(draft, EAGLE3_FUSED_STATES, shares_head=False)


def draft_layout(layout: Layout) -> Layout:
    """The layout one draft pass runs on: the target's TP (and EP), one pipeline stage (the
    engines run the draft on the last stage's ranks)."""
    return replace(layout, pp=1)


def _fc_group(draft: DraftModel) -> ParamGroup:
    hidden = draft.arch.hidden_size
    return ParamGroup(
        Component.MLP, draft.fc_elements, Shard.REPLICATED, Storage.NATIVE, None,
        module="fc", fan_in=draft.fused_states * hidden,
    )  # fmt: skip


def draft_weight_bytes_per_gpu(draft: DraftModel, layout: Layout, scheme: WeightScheme) -> int:
    """Bytes of draft weights one GPU loads: its decoder layers (sharded as the target's), the
    fusion projection (replicated, native dtype: it is small) and its own lm_head unless shared;
    never an embedding (shared with the target)."""
    total = Fraction(0)
    for group in stage_param_groups(draft.arch, draft_layout(layout), 0):
        if group.component is Component.EMBEDDING:
            continue
        if group.component is Component.LM_HEAD and draft.shares_head:
            continue
        total += elements_per_rank(group, draft_layout(layout)) * scheme.bytes_per_element(group)
    fc = _fc_group(draft)
    total += elements_per_rank(fc, layout) * scheme.bytes_per_element(fc)
    return math.ceil(total)


def draft_kv_bytes_per_token_per_gpu(draft: DraftModel, layout: Layout, kv_dtype: KVDType) -> int:
    """KV bytes per token of context the draft's layers keep on one GPU (every layer attends
    fully)."""
    per_layer = layer_kv_bytes_per_token(draft.arch, kv_dtype=kv_dtype, tp=layout.tp)
    return draft.arch.num_layers * per_layer


@dataclass(frozen=True)
class DraftMemory:
    """What a draft adds to one GPU of the stage that runs it: weights and KV per token."""

    weights_bytes: int = 0
    kv_bytes_per_token: int = 0


def draft_memory(
    draft: DraftModel | None, layout: Layout, scheme: WeightScheme, kv_dtype: KVDType
) -> DraftMemory:
    """The draft's weights and KV per token per GPU (nothing for n-gram)."""
    if draft is None:
        return DraftMemory()
    return DraftMemory(
        weights_bytes=draft_weight_bytes_per_gpu(draft, layout, scheme),
        kv_bytes_per_token=draft_kv_bytes_per_token_per_gpu(draft, layout, kv_dtype),
    )
