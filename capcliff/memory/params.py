"""Parameter accounting: every weight tensor group of a model, by component, with how it shards.

The tensor list follows the Hugging Face / vLLM module structure of each family (Llama, Qwen2/3,
Mixtral, DeepSeek-V3 MLA + MoE, gpt-oss, Gemma 3). Counts are elements, not bytes.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from capcliff.catalog.architecture import MLA, Architecture, MoE


class Component(StrEnum):
    """The parts of a decoder a parameter count is broken down into."""

    EMBEDDING = "embedding"
    ATTENTION = "attention"
    MLP = "mlp"
    ROUTER = "router"
    EXPERTS = "experts"
    SHARED_EXPERTS = "shared_experts"
    NORMS = "norms"
    LM_HEAD = "lm_head"
    VISION = "vision"  # a multimodal model's vision tower and projector


class Shard(StrEnum):
    """How a tensor is laid out over the ranks of a stage (vLLM's parallel linear layers)."""

    REPLICATED = "replicated"  # ReplicatedLinear, norms, router: whole on every rank
    TP = "tp"  # Column/RowParallelLinear: split evenly over TP ranks
    KV_HEADS = "kv_heads"  # K/V part of QKVParallelLinear: heads split, replicated when TP > heads
    VOCAB = "vocab"  # VocabParallelEmbedding / ParallelLMHead: padded vocab split over TP
    EXPERTS = "experts"  # FusedMoE: experts split over EP, or each expert's width over TP


class Storage(StrEnum):
    """Which dtype a tensor is stored in when the checkpoint is quantised."""

    LINEAR = "linear"  # attention / dense MLP / shared-expert linear weights
    EXPERT = "expert"  # routed-expert weights
    NATIVE = "native"  # never quantised: embeddings, lm_head, norms, router, biases


@dataclass(frozen=True)
class ParamGroup:
    """A set of weight elements that share a component, a layer, a sharding and a storage dtype."""

    component: Component
    elements: int
    shard: Shard
    storage: Storage
    layer: int | None  # decoder layer index; None for embedding, final norm and lm_head
    row_elements: int = 0  # elements per vocab row (hidden size) for VOCAB; per head for KV_HEADS
    module: str = ""  # the Hugging Face module path, e.g. "model.layers.3.self_attn.q_proj"
    fan_in: int = 0  # input width of a linear weight (the group of per-channel scales)


def _prefix(layer: int) -> str:
    return f"model.layers.{layer}"


def _linear(
    component: Component, module: str, fan_in: int, fan_out: int, shard: Shard, layer: int
) -> ParamGroup:
    """The weight of one linear layer (fan_in x fan_out elements)."""
    return ParamGroup(
        component, fan_in * fan_out, shard, Storage.LINEAR, layer, module=module, fan_in=fan_in
    )


def _gqa_attention(arch: Architecture, layer: int) -> list[ParamGroup]:
    h, d = arch.hidden_size, arch.head_dim
    q_out, kv_out = arch.num_attention_heads * d, arch.num_kv_heads * d
    att, at = Component.ATTENTION, f"{_prefix(layer)}.self_attn"
    groups = [_linear(att, f"{at}.q_proj", h, q_out, Shard.TP, layer)]
    if arch.qkv_bias:
        groups.append(
            ParamGroup(att, q_out, Shard.TP, Storage.NATIVE, layer, module=f"{at}.q_proj")
        )
    for name in ("k_proj", "v_proj"):
        groups.append(
            ParamGroup(
                att, h * kv_out, Shard.KV_HEADS, Storage.LINEAR, layer, h * d, f"{at}.{name}", h
            )
        )
        if arch.qkv_bias:
            groups.append(
                ParamGroup(att, kv_out, Shard.KV_HEADS, Storage.NATIVE, layer, d, f"{at}.{name}")
            )
    groups.append(_linear(att, f"{at}.o_proj", q_out, h, Shard.TP, layer))
    if arch.o_bias:  # a row-parallel bias is added once, after the all-reduce: whole on every rank
        groups.append(
            ParamGroup(att, h, Shard.REPLICATED, Storage.NATIVE, layer, module=f"{at}.o_proj")
        )
    if arch.qk_norm:
        groups.append(ParamGroup(Component.NORMS, 2 * d, Shard.REPLICATED, Storage.NATIVE, layer))
    if arch.attention_sinks:
        groups.append(ParamGroup(att, arch.num_attention_heads, Shard.TP, Storage.NATIVE, layer))
    return groups


def _mla_attention(arch: Architecture, mla: MLA, layer: int) -> list[ParamGroup]:
    """DeepSeek MLA as vLLM builds it: the low-rank down projections are replicated."""
    h, heads = arch.hidden_size, arch.num_attention_heads
    qk_head = mla.qk_nope_head_dim + mla.qk_rope_head_dim
    att, rep, tp = Component.ATTENTION, Shard.REPLICATED, Shard.TP
    at = f"{_prefix(layer)}.self_attn"
    groups: list[ParamGroup] = []
    if mla.q_lora_rank is None:
        groups.append(_linear(att, f"{at}.q_proj", h, heads * qk_head, tp, layer))
    else:
        groups += [
            _linear(att, f"{at}.q_a_proj", h, mla.q_lora_rank, rep, layer),
            ParamGroup(Component.NORMS, mla.q_lora_rank, rep, Storage.NATIVE, layer),
            _linear(att, f"{at}.q_b_proj", mla.q_lora_rank, heads * qk_head, tp, layer),
        ]
    kv_a_out = mla.kv_lora_rank + mla.qk_rope_head_dim
    kv_b_out = heads * (mla.qk_nope_head_dim + mla.v_head_dim)
    groups += [
        _linear(att, f"{at}.kv_a_proj_with_mqa", h, kv_a_out, rep, layer),
        ParamGroup(Component.NORMS, mla.kv_lora_rank, rep, Storage.NATIVE, layer),
        _linear(att, f"{at}.kv_b_proj", mla.kv_lora_rank, kv_b_out, tp, layer),
        _linear(att, f"{at}.o_proj", heads * mla.v_head_dim, h, tp, layer),
    ]
    return groups


def _gated_mlp(
    component: Component, module: str, h: int, width: int, layer: int, bias: bool, copies: int = 1
) -> list[ParamGroup]:
    """gate and up (h x width each) and down (width x h), `copies` times (experts), plus biases."""
    routed = component is Component.EXPERTS
    shard = Shard.EXPERTS if routed else Shard.TP
    storage = Storage.EXPERT if routed else Storage.LINEAR
    # Routed experts are one fused module (vLLM's FusedMoE); dense MLPs keep HF's three names.
    names = ("experts",) * 3 if routed else ("gate_proj", "up_proj", "down_proj")
    groups = [
        ParamGroup(component, copies * h * width, shard, storage, layer, 0, f"{module}.{name}", fan)
        for name, fan in zip(names, (h, h, width), strict=True)
    ]
    if bias:
        groups.append(ParamGroup(component, copies * (2 * width + h), shard, Storage.NATIVE, layer))
    return groups


# Where each family keeps its MoE block and router (HF module names; vLLM uses the same).
_MOE_MODULE = {"mixtral": "block_sparse_moe"}
_ROUTER_NAME = {"gpt_oss": "router"}
_SHARED_NAME = {"qwen2_moe": "shared_expert"}


def _moe_block(arch: Architecture, moe: MoE, layer: int) -> list[ParamGroup]:
    h, n = arch.hidden_size, moe.num_experts
    block = f"{_prefix(layer)}.{_MOE_MODULE.get(arch.model_type, 'mlp')}"
    router = f"{block}.{_ROUTER_NAME.get(arch.model_type, 'gate')}"
    groups = [
        ParamGroup(Component.ROUTER, h * n, Shard.REPLICATED, Storage.NATIVE, layer, module=router)
    ]
    if moe.router_bias:
        groups.append(ParamGroup(Component.ROUTER, n, Shard.REPLICATED, Storage.NATIVE, layer))
    groups += _gated_mlp(
        Component.EXPERTS, block, h, moe.expert_intermediate_size, layer, moe.expert_bias, n
    )
    if moe.shared_intermediate_size:
        shared = f"{block}.{_SHARED_NAME.get(arch.model_type, 'shared_experts')}"
        groups += _gated_mlp(
            Component.SHARED_EXPERTS, shared, h, moe.shared_intermediate_size, layer, False
        )
    return groups


def layer_param_groups(arch: Architecture, layer: int) -> list[ParamGroup]:
    """Weight groups of decoder layer `layer` (attention, norms, MLP or MoE)."""
    if arch.mla is not None:
        groups = _mla_attention(arch, arch.mla, layer)
    else:
        groups = _gqa_attention(arch, layer)
    groups.append(
        ParamGroup(
            Component.NORMS,
            arch.norms_per_layer * arch.hidden_size,
            Shard.REPLICATED,
            Storage.NATIVE,
            layer,
        )
    )
    if arch.moe is not None and arch.moe.is_moe_layer[layer]:
        return groups + _moe_block(arch, arch.moe, layer)
    mlp = f"{_prefix(layer)}.mlp"
    return groups + _gated_mlp(
        Component.MLP, mlp, arch.hidden_size, arch.intermediate_size, layer, arch.mlp_bias
    )


def embedding_group(arch: Architecture) -> ParamGroup:
    """The input embedding (vocab x hidden), held by the first pipeline stage."""
    return ParamGroup(
        Component.EMBEDDING,
        arch.vocab_size * arch.hidden_size,
        Shard.VOCAB,
        Storage.NATIVE,
        None,
        arch.hidden_size,
        "model.embed_tokens",
    )


def first_stage_groups(arch: Architecture) -> list[ParamGroup]:
    """The groups the first pipeline stage holds besides its layers: the embedding and a
    multimodal model's vision tower (sharded over TP as vLLM's towers build their linears:
    QKVParallelLinear, RowParallelLinear; kept in the native dtype, which quantised checkpoints
    leave it in)."""
    groups = [embedding_group(arch)]
    if arch.vision_params:
        groups.append(
            ParamGroup(Component.VISION, arch.vision_params, Shard.TP, Storage.NATIVE, None)
        )
    return groups


def head_groups(arch: Architecture) -> list[ParamGroup]:
    """Final norm and lm_head, held by the last stage. A tied lm_head is the embedding itself."""
    groups = [ParamGroup(Component.NORMS, arch.hidden_size, Shard.REPLICATED, Storage.NATIVE, None)]
    groups.append(
        ParamGroup(
            Component.LM_HEAD,
            arch.vocab_size * arch.hidden_size,
            Shard.VOCAB,
            Storage.NATIVE,
            None,
            arch.hidden_size,
            "lm_head",
        )
    )
    return groups


def all_param_groups(arch: Architecture) -> list[ParamGroup]:
    """Every distinct weight tensor group of the model (a tied lm_head is not counted twice)."""
    groups = first_stage_groups(arch)
    for layer in range(arch.num_layers):
        groups += layer_param_groups(arch, layer)
    head = head_groups(arch)
    return groups + (head[:1] if arch.tie_word_embeddings else head)


@dataclass(frozen=True)
class ParamCount:
    """Total and active parameters with a per-component breakdown (elements)."""

    total: int
    active: int
    by_component: dict[Component, int]


def param_count(arch: Architecture) -> ParamCount:
    """total = sum of all groups; active = total - routed experts * (1 - top_k / num_experts)."""
    by_component = dict.fromkeys(Component, 0)
    for group in all_param_groups(arch):
        by_component[group.component] += group.elements
    total = sum(by_component.values())
    active = total
    if arch.moe is not None:
        routed = by_component[Component.EXPERTS]
        idle = routed * (arch.moe.num_experts - arch.moe.experts_per_token)
        active = total - idle // arch.moe.num_experts
    return ParamCount(total=total, active=active, by_component=by_component)
