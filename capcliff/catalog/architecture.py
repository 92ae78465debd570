"""A model's architecture, normalised from the fields of a Hugging Face `config.json`.

Field names follow `config.json`. Where a config leaves a field out, the default is the one the
model's `transformers` config class uses (named per family below); a field with no such default is
an error naming the field.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from capcliff.catalog.chatglm import chatglm_as_llama
from capcliff.catalog.config_fields import ConfigFields, MissingFieldError
from capcliff.catalog.context import model_context
from capcliff.catalog.quantization import (
    Quantization,
    WeightFormat,
    format_label,
    quantization_from_config,
)
from capcliff.errors import CatalogError
from capcliff.units import WeightDType, parse_weight_dtype

# transformers' defaults for fields a config.json may omit, per `model_type`
# (e.g. LlamaConfig.tie_word_embeddings = False, Gemma3TextConfig.tie_word_embeddings = True).
_TIE_DEFAULT: dict[str, bool] = {
    "llama": False,
    "mistral": False,
    "mixtral": False,
    "qwen2": False,
    "qwen3": False,
    "qwen2_moe": False,
    "qwen3_moe": False,
    "deepseek_v2": False,
    "deepseek_v3": False,
    "gpt_oss": False,
    "gemma3_text": True,
    "gemma2": True,
    # Gemma 1: GemmaConfig.tie_word_embeddings = True (google/gemma-7b's config.json omits it)
    "gemma": True,
    # Phi3Config, Glm4MoeConfig and MiniMax-M2's configuration_minimax_m2.py: False
    "phi3": False,
    "glm4_moe": False,
    "minimax_m2": False,
    # CohereConfig and Cohere2Config: tie_word_embeddings=True (Command R's lm_head is its
    # embedding; vLLM commandr.py computes the logits with embed_tokens)
    "cohere": True,
    "cohere2": True,
    # ExaoneConfig(tie_word_embeddings=True) (vLLM transformers_utils/configs/exaone.py, copied
    # from LGAI-EXAONE/EXAONE-3.0-7.8B-Instruct's configuration_exaone.py; EXAONE-3.5-2.4B ties)
    "exaone": True,
    # vLLM configs/chatglm.py ChatGLMConfig passes tie_word_embeddings on to PretrainedConfig,
    # whose default is True, and ChatGLMBaseModel ties output_layer to the embedding where it is
    # set; every released ChatGLM3 / GLM-4 config.json says false
    "chatglm": True,
}
_ARCH_TO_TYPE: dict[str, str] = {
    "LlamaForCausalLM": "llama",
    "MistralForCausalLM": "mistral",
    "MixtralForCausalLM": "mixtral",
    "Qwen2ForCausalLM": "qwen2",
    "Qwen3ForCausalLM": "qwen3",
    "Qwen2MoeForCausalLM": "qwen2_moe",
    "Qwen3MoeForCausalLM": "qwen3_moe",
    "DeepseekV2ForCausalLM": "deepseek_v2",
    "DeepseekV3ForCausalLM": "deepseek_v3",
    "GptOssForCausalLM": "gpt_oss",
    "Gemma3ForCausalLM": "gemma3_text",
    "Gemma3ForConditionalGeneration": "gemma3_text",
    "Gemma2ForCausalLM": "gemma2",
    "ExaoneForCausalLM": "exaone",
    "ChatGLMModel": "chatglm",
    "ChatGLMForConditionalGeneration": "chatglm",
}
# Families that name the layer count otherwise: EXAONE 3.0 / 3.5 (`num_layers`; vLLM's
# configs/exaone.py ExaoneConfig maps num_hidden_layers onto it). Their layers are Llama's:
# vLLM exaone.py ExaoneDecoderLayer holds q/k/v/out_proj (biased where attention_bias), a gated
# MLP of intermediate_size (c_fc_0, c_fc_1, c_proj), RMSNorms ln_1 and ln_2, and ln_f.
# ChatGLM's too (vLLM configs/chatglm.py ChatGLMConfig, attribute_map num_hidden_layers ->
# num_layers).
_LAYER_COUNT_KEY: dict[str, str] = {"exaone": "num_layers", "chatglm": "num_layers"}
# transformers' defaults for sizing fields a released config.json omits, per family: Gemma 3's
# text_config sets neither (google/gemma-3-27b-it config.json; Gemma3TextConfig(vocab_size=262_208,
# max_position_embeddings=131_072), transformers models/gemma3/configuration_gemma3.py).
_INT_DEFAULT: dict[str, dict[str, int]] = {
    "gemma3_text": {"vocab_size": 262_208, "max_position_embeddings": 131_072},
}
# Fields that mark layers capcliff does not size (each would be sized as full attention or a
# plain MoE layer unsaid): linear attention (Qwen3-Next's Gated DeltaNet, transformers
# Qwen3NextConfig), Mamba mixers (Nemotron-H's hybrid_override_pattern, Jamba's
# attn_layer_period, Mamba's state_size, Falcon-H1's mamba_d_ssm), Llama 4's shared expert and
# chunked attention (Llama4TextConfig), DeepSeek-V3.2's lightning indexer and its own KV cache
# (vLLM deepseek_v2.py DeepseekV32IndexerCache), MiniMax-Text-01's and Kimi Linear's linear
# attention, Gemma 3n's AltUp, and expert counts under keys capcliff does not read (a MoE model
# sized as dense). The first one a config holds is named.
UNSIZED_FIELDS: dict[str, str] = {
    "full_attention_interval": "linear-attention (Gated DeltaNet) layers",
    "linear_num_value_heads": "linear-attention (Gated DeltaNet) layers",
    "hybrid_override_pattern": "Mamba layers",
    "attn_layer_period": "Mamba layers",
    "layers_block_type": "Mamba layers",
    "mamba_d_ssm": "Mamba layers",
    "mamba_n_heads": "Mamba layers",
    "mamba_num_heads": "Mamba layers",
    "ssm_state_size": "Mamba layers",
    "mamba_d_state": "Mamba layers",
    "state_size": "Mamba layers",
    "intermediate_size_mlp": "Llama 4's shared expert and dense layers",
    "interleave_moe_layer_step": "Llama 4's shared expert and dense layers",
    "attention_chunk_size": "chunked local attention (its KV is held per chunk)",
    "index_n_heads": "DeepSeek-V3.2's lightning indexer (weights and its own KV cache)",
    "attn_type_list": "lightning (linear) attention layers",
    "linear_attn_config": "linear-attention layers",
    "altup_num_inputs": "Gemma 3n's AltUp and per-layer embeddings",
    "moe_num_experts": "experts under a key capcliff does not read (ERNIE 4.5's, Step 3's MoE)",
    # shared experts under keys the num_experts branch does not read (refused where not 0, see
    # _ZERO_IS_NONE): Ling's bailing_moe (vLLM bailing_moe.py: moe_intermediate_size x
    # num_shared_experts beside the routed ones, biases on every linear where use_bias) and
    # Granite's granitemoeshared (vLLM granitemoeshared.py: a shared MLP of
    # shared_intermediate_size); each was sized without its shared experts (Ling-lite at 16.32B
    # of its 16.8B)
    "num_shared_experts": "shared experts under a key capcliff does not read (Ling's MoE)",
    "shared_intermediate_size": "a shared expert under a key capcliff does not read (Granite)",
    "ffn_config": "experts under a key capcliff does not read (DBRX's MoE)",
    # Nemotron-NAS / DeciLM (Llama-3.3-Nemotron-Super-49B): each layer's own FFN width and
    # attention, or none, under block_configs (vLLM nemotron_nas.py); sized as uniform layers
    "block_configs": "layers of their own widths (Nemotron-NAS block_configs)",
    # Phi-4-multimodal (phi4mm): its image and audio encoders sit under embd_layer, with
    # audio_processor and LoRA adapters beside (vLLM phi4mm.py); no vision_config or
    # audio_config says so, and the towers were left out unsaid
    "embd_layer": "image and audio encoders under embd_layer (Phi-4-multimodal)",
    "audio_processor": "an audio encoder (Phi-4-multimodal)",
    # Llama 3.2 Vision's text model (MllamaTextConfig): these layers attend to image tokens, so
    # their KV does not grow with the text (each was sized as a self-attention layer's)
    "cross_attention_layers": "cross-attention layers (their KV holds image tokens, not text)",
    # Hunyuan-A13B (hunyuan_v1_moe): shared experts and per-layer widths and top-k as lists
    # (vLLM hunyuan_v1.py num_shared_expert, moe_intermediate_size, moe_topk); refused for
    # "num_experts_per_tok: missing" before, which named no cause
    "num_shared_expert": "shared experts under a key capcliff does not read (Hunyuan's MoE)",
    # Hunyuan's cross-layer attention: cla_share_factor layers read one layer's KV (vLLM
    # hunyuan_v1.py, use_cla); each layer's KV was sized as its own (true only, see _TRUE_ONLY)
    "use_cla": "cross-layer attention (layers sharing one KV cache, Hunyuan's use_cla)",
    # Grok 2 (vLLM grok1.py, residual_moe): a dense MLP of intermediate_size beside the experts
    # in every layer, which was left out (true only)
    "residual_moe": "a dense MLP beside the experts in every layer (Grok 2's residual_moe)",
}
# Families whose MLP is two matrices, up and down, with no gate (each was sized as a gated
# three-matrix MLP: StarCoder2-15B as 22.0B parameters, Pythia-12B as 15.6B, Phi-2 as 3.6B):
# vLLM model_executor/models/ gpt_neox.py (GPTNeoXMLP dense_h_to_4h, dense_4h_to_h),
# starcoder2.py (Starcoder2MLP c_fc, c_proj), phi.py (PhiMLP fc1, fc2), nemotron.py (NemotronMLP
# up_proj, down_proj), falcon.py, gpt_bigcode.py, gpt_j.py, gpt2.py, opt.py, bloom.py, mpt.py,
# persimmon.py, codegen (GPT-J's layers), apertus.py (ApertusMLP up_proj, down_proj, xIELU:
# Apertus-8B was sized as 10.87B of its 8.05B), arcee.py (ArceeMLP up_proj, down_proj, ReLU^2).
# Falcon also shares one KV head (multi_query), which num_key_value_heads does not say.
UNGATED_MLP_FAMILIES = frozenset({
    "gpt_neox", "starcoder2", "phi", "nemotron", "falcon", "gpt_bigcode", "gptj", "gpt2",
    "opt", "bloom", "mpt", "persimmon", "codegen", "apertus", "arcee", "jais2",
    "RefinedWeb", "RefinedWebModel",
})  # fmt: skip
# Architectures of those families, for a config that names only its class.
_UNGATED_ARCHS = {
    "GPTNeoXForCausalLM": "gpt_neox", "Starcoder2ForCausalLM": "starcoder2",
    "PhiForCausalLM": "phi", "NemotronForCausalLM": "nemotron", "FalconForCausalLM": "falcon",
    "GPTBigCodeForCausalLM": "gpt_bigcode", "GPTJForCausalLM": "gptj",
    "GPT2LMHeadModel": "gpt2", "OPTForCausalLM": "opt", "BloomForCausalLM": "bloom",
    "MPTForCausalLM": "mpt", "PersimmonForCausalLM": "persimmon", "CodeGenForCausalLM": "codegen",
    "ApertusForCausalLM": "apertus", "ArceeForCausalLM": "arcee", "Jais2ForCausalLM": "jais2",
    "RWForCausalLM": "RefinedWeb",
}  # fmt: skip
# Families whose layers are no Llama's in a way no config field says (campaign 27, each sized as
# Llama's with exit 0 before), by model_type, with why: refused by name, as vLLM's model file
# for each builds them whatever the keys.
UNSIZED_FAMILIES: dict[str, str] = {
    # vLLM ouro.py: every layer runs total_ut_steps times (default 4), each pass with its own
    # Attention and KV cache; Ouro-1.4B's KV was sized at a quarter
    "ouro": "a looped model: its layers run total_ut_steps times (4 unless set), each pass "
    "with a KV cache of its own",
    # vLLM arctic.py: a dense residual MLP beside the experts (use_residual), MoE only every
    # moe_layer_frequency-th layer; Snowflake Arctic was sized without its 10B dense part
    "arctic": "a dense residual MLP beside the experts (use_residual) and MoE every "
    "moe_layer_frequency-th layer",
    # vLLM longcat_flash.py: two attention and two MLP blocks a layer, zero-computation experts
    "longcat_flash": "two attention and MLP blocks a layer and zero-computation experts "
    "(zero_expert_num)",
    # vLLM mimo_v2_flash.py: sliding layers with KV heads and head widths of their own
    # (swa_num_key_value_heads, swa_head_dim, v_head_dim) by hybrid_layer_pattern
    "mimo_v2_flash": "sliding layers with KV heads and head widths of their own "
    "(hybrid_layer_pattern, swa_num_key_value_heads)",
    # vLLM internlm2_ve.py (Mono-InternVL's text model): InternLM2VEDecoderLayer holds a second
    # MLP, feed_forward_ve (the visual expert), beside feed_forward; sized as Llama's before,
    # without it
    "internlm2_ve": "a visual-expert MLP (feed_forward_ve) beside each layer's MLP",
}
_UNSIZED_ARCHS = {
    "OuroForCausalLM": "ouro", "ArcticForCausalLM": "arctic",
    "LongcatFlashForCausalLM": "longcat_flash", "MiMoV2FlashForCausalLM": "mimo_v2_flash",
    "InternLM2VEForCausalLM": "internlm2_ve",
}  # fmt: skip
# Families whose config.json names its sizes under keys of its own (transformers / remote-code
# config classes; vLLM's model file for each reads them): each was refused for the first Llama
# key it lacks ("num_hidden_layers: missing"), which did not say why. Refused by name.
OWN_KEYS_FAMILIES: dict[str, str] = {
    # vLLM jais.py (GPT-2-style names; a gated MLP of n_inner, ALiBi)
    "jais": "n_embd, n_layer, n_head, n_inner (vLLM jais.py)",
    # vLLM telechat2.py (TeleChat2's config class: n_layer, n_head, ffn_hidden_size)
    "telechat": "n_layer, n_head, ffn_hidden_size (vLLM telechat2.py)",
    # vLLM minicpm3.py: latent q/kv projections with no v_head_dim key (values as wide as
    # hidden_size / heads there), not DeepSeek's MLA that capcliff sizes
    "minicpm3": "q_lora_rank, kv_lora_rank, qk_nope_head_dim, qk_rope_head_dim and no "
    "v_head_dim: a latent attention of its own, not DeepSeek's MLA (vLLM minicpm3.py)",
}
# vLLM picks the model class by `architectures` (its registry), whatever model_type says:
# Mono-InternVL's text model is model_type internlm2 with InternLM2VEForCausalLM
_FAMILY_ARCHS = {
    "JAISLMHeadModel": "jais",
    "TeleChat2ForCausalLM": "telechat", "TeleChatForCausalLM": "telechat",
    "MiniCPM3ForCausalLM": "minicpm3", "InternLM2VEForCausalLM": "internlm2_ve",
}  # fmt: skip
# The model_types capcliff was checked to size (campaign 27, over vLLM's text-generation
# registry, and the multimodal wrappers it sizes): a required key missing from a config of
# another family is said to be that family's, whose config may name its sizes otherwise
SIZED_FAMILIES = frozenset({
    "llama", "mistral", "mixtral", "aquila", "internlm", "internlm2", "internlm3", "xverse",
    "cwm", "baichuan", "granite", "granitemoe", "minicpm", "orion", "PanguEmbedded", "phi3",
    "phimoe", "solar", "stablelm", "teleflm", "ernie4_5", "glm", "glm4", "glm4_moe", "olmo",
    "olmo2", "olmo3", "olmoe", "flex_olmo", "qwen2", "qwen3", "qwen2_moe", "qwen3_moe", "gemma",
    "gemma2", "gemma3", "gemma3_text", "cohere", "cohere2", "exaone4", "hunyuan_v1_dense",
    "grok-1", "minimax_m2", "gpt_oss", "deepseek", "deepseek_v2", "deepseek_v3",
    "pangu_ultra_moe", "dots1", "seed_oss", "mimo", "mistral3", "ministral3", "exaone",
    "chatglm",
})  # fmt: skip
# Families whose q, k, v projections always carry a bias (Qwen2Attention: bias=True on q/k/v, none
# on o).
_QKV_BIAS_FAMILIES = {"qwen2", "qwen2_moe", "seed_oss", "mimo"}
# Families whose o_proj carries no bias whatever attention_bias says (each config.json sets
# attention_bias: true, read as biases on q, k, v and o): vLLM seed_oss.py (qkv_proj bias=True,
# o_proj bias=False; its attention_out_bias: false), mimo.py (Qwen2's layers), glm4.py and
# glm4_moe.py (qkv_proj bias=attention_bias, o_proj bias=False). Seed-OSS-36B was sized with
# 64 x 5,120 o biases, GLM-4.5 with 92 x 5,120.
_NO_O_BIAS_FAMILIES = {"seed_oss", "mimo", "glm4", "glm4_moe"}
# Families with a per-head RMSNorm on q and k (Qwen3Attention.q_norm/k_norm, Gemma3Attention).
_QK_NORM_FAMILIES = {"qwen3", "qwen3_moe", "gemma3_text"}
# Gemma 2/3 decoder layers hold four RMSNorms (input, post-attention, pre- and post-feedforward);
# GLM-4-0414's too (vLLM glm4.py Glm4DecoderLayer: input, post_self_attn, post_attention,
# post_mlp).
_FOUR_NORM_FAMILIES = {"gemma2", "gemma3_text", "glm4"}
# Cohere's decoder layer runs attention and the MLP side by side off one input_layernorm (vLLM
# commandr.py CohereDecoderLayer; a LayerNorm of weights only): one norm a layer, not two.
_ONE_NORM_FAMILIES = {"cohere", "cohere2"}


@dataclass(frozen=True)
class MLA:
    """Multi-head latent attention (DeepSeek-V2/V3): ranks and head dims from config.json."""

    kv_lora_rank: int
    q_lora_rank: int | None
    qk_rope_head_dim: int
    qk_nope_head_dim: int
    v_head_dim: int


@dataclass(frozen=True)
class MoE:
    """Mixture-of-experts feed-forward blocks."""

    num_experts: int
    experts_per_token: int
    expert_intermediate_size: int
    shared_intermediate_size: int  # total width of the shared expert(s); 0 when none
    is_moe_layer: tuple[bool, ...]  # one flag per decoder layer
    router_bias: bool  # gpt-oss router bias, or DeepSeek's e_score_correction_bias
    expert_bias: bool  # gpt-oss experts carry biases


@dataclass(frozen=True)
class Architecture:
    """Everything the memory calculators need to know about a decoder-only model."""

    model_type: str
    hidden_size: int
    num_layers: int
    num_attention_heads: int
    num_kv_heads: int
    head_dim: int
    intermediate_size: int
    vocab_size: int
    tie_word_embeddings: bool
    qkv_bias: bool
    o_bias: bool
    mlp_bias: bool
    qk_norm: bool
    attention_sinks: bool
    norms_per_layer: int
    sliding_window_per_layer: tuple[int | None, ...]  # window in tokens, None = full attention
    mla: MLA | None
    moe: MoE | None
    linear_dtype: WeightDType  # attention and dense/shared MLP linear weights as shipped
    expert_dtype: WeightDType  # routed-expert weights as shipped
    activation_dtype: WeightDType  # dtype of unquantised tensors (embeddings, norms, router)
    quantization: Quantization | None  # per-module formats from quantization_config, if any
    # the context in tokens as vLLM derives it: the least of config.json's context keys (or its
    # model_max_length), scaled by the RoPE scaling's factor where vLLM scales it
    # (capcliff/catalog/context.py); the longest max_model_len vLLM accepts unforced
    max_position_embeddings: int | None
    num_mtp_layers: int  # DeepSeek multi-token-prediction layers (not loaded unless speculating)
    vision_params: int = 0  # vision tower and projector of a multimodal config (elements)
    # where they differ from the context (None: the context): the RoPE cos/sin table's rows
    # (max_position_embeddings scaled, whatever seq_length says), and the max_model_len vLLM
    # serves when none is given (LongRoPE: original_max_position_embeddings)
    rope_positions: int | None = None
    default_max_model_len: int | None = None
    # (engine, context in tokens) where SGLang's or TensorRT-LLM's own rule gives another
    # context than vLLM's (capcliff/catalog/context.py)
    engine_contexts: tuple[tuple[str, int | None], ...] = ()
    # (engine, refusal) where that engine's rule reads a context past the bounds (a corrupt
    # config for it alone: vLLM's least may be sound)
    engine_refusals: tuple[tuple[str, str], ...] = ()

    @property
    def default_context(self) -> int | None:
        """The max_model_len vLLM serves when none is given (tokens)."""
        if self.default_max_model_len is not None:
            return self.default_max_model_len
        return self.max_position_embeddings

    def context_for(self, engine: str) -> int | None:
        """The longest context `engine` (an EngineName value) accepts unforced, by its own rule
        (tokens; vLLM V0: vLLM's). Raises CatalogError where its rule reads past the bounds."""
        refusal = dict(self.engine_refusals).get(engine)
        if refusal is not None:
            raise CatalogError(refusal)
        return dict(self.engine_contexts).get(engine, self.max_position_embeddings)

    def default_context_for(self, engine: str) -> int | None:
        """The context `engine` serves when none is given (tokens): vLLM's LongRoPE default
        is vLLM's alone; SGLang and TensorRT-LLM serve their context."""
        if engine in ("sglang", "trtllm"):
            return self.context_for(engine)
        return self.default_context

    @property
    def rope_table_rows(self) -> int | None:
        """The RoPE cos/sin table's rows."""
        return self.max_position_embeddings if self.rope_positions is None else self.rope_positions

    @property
    def shape_label(self) -> str:
        """The sizes that tell one model from another (`llama L32 h4096 a32/kv8 d128 i14336
        v128256 bf16`; MoE adds experts and their width): a calibration file records it, so a
        folder named like the one it was fitted on but holding another model is refused."""
        parts = [
            self.model_type, f"L{self.num_layers}", f"h{self.hidden_size}",
            f"a{self.num_attention_heads}/kv{self.num_kv_heads}", f"d{self.head_dim}",
            f"i{self.intermediate_size}", f"v{self.vocab_size}",
        ]  # fmt: skip
        if self.moe is not None:
            parts.append(f"e{self.moe.num_experts}x{self.moe.expert_intermediate_size}")
        if self.mla is not None:
            parts.append("mla")
        dtypes = {self.dtype_label(expert=False), self.dtype_label(expert=True)}
        return " ".join([*parts, "/".join(sorted(dtypes))])

    def dtype_label(self, *, expert: bool) -> str:
        """The dtype the linear (or routed-expert) weights ship in, integer formats by their
        bits (a GPTQ int8 checkpoint is `int8`, though it shares int4's compute family)."""
        quant = self.quantization
        fmt = None if quant is None else quant.expert if expert else quant.linear
        return format_label(fmt, (self.expert_dtype if expert else self.linear_dtype).value)

    @property
    def has_sliding_window(self) -> bool:
        """Whether any layer attends over a sliding window only."""
        return any(w is not None for w in self.sliding_window_per_layer)


# UNSIZED_FIELDS whose value may say "none of those layers": a shared width or count of 0
# (MiniMax-M2's config.json: "shared_intermediate_size": 0), and an attn_type_list of 1s only,
# every layer softmax attention (MiniMax-Text-01's rule, SGLang configs/minimax: type 0 marks
# a linear layer; vLLM minimax_m2.py builds softmax attention in every layer and reads no list)
_ZERO_IS_NONE = frozenset({"num_shared_experts", "shared_intermediate_size", "num_shared_expert"})
# UNSIZED_FIELDS that are flags: false (their config classes' default) says "none of those"
_TRUE_ONLY = frozenset({"use_cla", "residual_moe"})


def _marks_unsized(fields: ConfigFields, field: str) -> bool:
    """Whether `field` of the config marks layers capcliff does not size (UNSIZED_FIELDS)."""
    if not fields.has(field):
        return False
    value = fields.raw[field]
    if field in _ZERO_IS_NONE:
        return value != 0 or isinstance(value, bool)
    if field in _TRUE_ONLY:
        return value is not False and value is not None
    if field == "attn_type_list":
        return not (
            isinstance(value, list)
            and value
            and all(t == 1 and not isinstance(t, bool) for t in value)
        )
    return True


def _refuse_unsized(fields: ConfigFields) -> None:
    """Refuse a config holding a field of a layer kind capcliff does not size (UNSIZED_FIELDS)."""
    field = next((f for f in UNSIZED_FIELDS if _marks_unsized(fields, f)), None)
    if field is not None:
        raise fields.error(
            field,
            f"marks {UNSIZED_FIELDS[field]}, which capcliff does not size (refused rather "
            "than sized wrong)",
        )


def _model_type(fields: ConfigFields) -> str:
    archs = fields.raw.get("architectures") or []
    if not isinstance(archs, list):
        raise fields.error("architectures", "must be a list of class names")
    model_type = fields.raw.get("model_type")
    if model_type is not None and not isinstance(model_type, str):  # transformers' AutoConfig
        raise fields.error(  # looks it up by name: 7 loads nothing, whatever the class
            "model_type", f"must be a family name such as llama, got {model_type!r:.40}"
        )
    by_class = next((a for a in archs if a in _FAMILY_ARCHS), None)
    if by_class is not None:
        _refuse_unsized_family(fields, _FAMILY_ARCHS[by_class], named_by=by_class)
    known = next((_ARCH_TO_TYPE[a] for a in archs if a in _ARCH_TO_TYPE), None)
    if known is None and not model_type:  # a family capcliff refuses, named by its class only
        named = {**_UNGATED_ARCHS, **_UNSIZED_ARCHS, "QWenLMHeadModel": "qwen"}
        model_type = next((named[a] for a in archs if a in named), None)
    _refuse_unsized_family(fields, known or model_type)
    if known:
        return known
    if model_type:
        return "gemma3_text" if model_type == "gemma3" else model_type
    if archs:  # "architectures: missing" although the config named a class
        raise fields.error(
            "model_type",
            f"missing, and architectures {archs!r:.80} names no family capcliff knows; give the "
            "model_type of a family capcliff sizes (llama, qwen2, mistral, gemma2 ...)",
        )
    raise fields.error("architectures", "missing; cannot tell the model family")


def _refuse_unsized_family(
    fields: ConfigFields, model_type: str | None, *, named_by: str | None = None
) -> None:
    """Refuse a family whose layers capcliff would size as Llama's and get wrong: an ungated
    MLP (UNGATED_MLP_FAMILIES), Qwen-1's half-width MLP, an encoder-decoder, the layers of
    UNSIZED_FAMILIES, the keys of OWN_KEYS_FAMILIES. `named_by`: the architectures class that
    names the family (the refusal names it rather than model_type)."""
    field, label = ("architectures", named_by) if named_by else ("model_type", model_type)
    if fields.raw.get("is_encoder_decoder") is True:
        # an encoder-decoder (T5, BART, Whisper) holds two stacks and a cross-attention KV cache;
        # vLLM's ModelConfig.is_encoder_decoder reads this flag whatever the class
        raise fields.error(
            "is_encoder_decoder",
            "true: an encoder-decoder model, which capcliff does not size (decoder-only models)",
        )
    if model_type == "qwen":
        # Qwen-1 (QWenLMHeadModel): QWenMLP builds w1 and w2 at intermediate_size // 2 (its
        # intermediate_size counts both; TensorRT-LLM's qwen convert: "Qwen's actual
        # intermediate_size is one half of what's in hf_config"); Qwen-7B was sized as 12.05B
        raise fields.error(
            "model_type",
            "qwen: Qwen-1's intermediate_size counts the gate and up projections together, "
            "which capcliff does not size (refused rather than sized at twice its MLP); Qwen1.5 "
            "and later are qwen2",
        )
    if model_type in UNSIZED_FAMILIES:
        raise fields.error(
            field,
            f"{label}: {UNSIZED_FAMILIES[model_type]}, which capcliff does not size "
            "(refused rather than sized as Llama's layers)",
        )
    if model_type in OWN_KEYS_FAMILIES:
        raise fields.error(
            field,
            f"{label}: its config names the sizes under keys of its own "
            f"({OWN_KEYS_FAMILIES[model_type]}), which capcliff does not read (refused rather "
            "than sized as Llama's layers from the keys it holds or lacks)",
        )
    if model_type in UNGATED_MLP_FAMILIES:
        raise fields.error(
            "model_type",
            f"{model_type}: its MLP is two matrices with no gate, which capcliff does not size "
            "(refused rather than sized as a gated MLP); capcliff sizes Llama-style gated "
            "families (llama, mistral, qwen2/3, gemma, deepseek, gpt_oss, phi3 ...)",
        )


LAYER_TYPES = ("full_attention", "sliding_attention")  # transformers' `layer_types` entries
# Families whose every `sliding_window_pattern`-th layer attends in full, the rest over the
# window, where config.json lists no layer_types (transformers' config classes' default
# pattern): Gemma 3 (6), Gemma 2 (2), Cohere 2 (4: Cohere2Config builds layer_types as
# "sliding_attention" if (i + 1) % sliding_window_pattern else "full_attention", and vLLM
# commandr.py slides where layer_types says so). Command R7B's and Command A's full layers
# were sized as sliding (every layer slid, a quarter of the KV the engine holds past 4,096).
# EXAONE 4 (4: Exaone4Config's default; vLLM exaone4.py slides where layer_types says) may
# spell its pattern as letters, "LLLG"
_SLIDING_PATTERN_DEFAULT = {"gemma3_text": 6, "gemma2": 2, "cohere2": 4, "exaone4": 4}


def _window(fields: ConfigFields) -> int | None:
    """The config's `sliding_window` (tokens; 0 or null: none). "4096", -5 or 4096.0 read as no
    window (every layer's KV at full length) unsaid."""
    window = fields.raw.get("sliding_window")
    if window is not None and (isinstance(window, bool) or not isinstance(window, int)):
        raise fields.error(
            "sliding_window", f"must be an integer (tokens) or null, got {window!r:.40}"
        )
    if isinstance(window, int) and window < 0:
        raise fields.error("sliding_window", f"must be >= 0 tokens (0 or null: none), got {window}")
    return window


def _sliding_windows(
    fields: ConfigFields, model_type: str, num_layers: int
) -> tuple[int | None, ...]:
    """Per-layer sliding window, from `layer_types` when the config lists it, else the family
    rule."""
    window = _window(fields)
    layer_types = fields.raw.get("layer_types")
    if layer_types is not None:
        if not isinstance(layer_types, list) or len(layer_types) != num_layers:
            raise fields.error("layer_types", f"must list one type per layer ({num_layers})")
        # another kind (linear_attention, mamba, a typo) was sized as full attention unsaid
        other = next((t for t in layer_types if t not in LAYER_TYPES), None)
        if other is not None:
            raise fields.error(
                "layer_types",
                f"{other!r:.40} is not a layer capcliff sizes; valid: " + ", ".join(LAYER_TYPES),
            )
        if "sliding_attention" in layer_types and not window:
            # 0 is "no window" to the family rules below, but a sliding layer of a 0-token
            # window kept only the prefill chunk in flight (Llama 3.1 8B at 8,192 B/token
            # instead of 131,072)
            raise fields.error(
                "sliding_window",
                f"{'missing' if window is None else 0} while layer_types has sliding layers; "
                "give the window in tokens (e.g. 4096)",
            )
        return tuple(window if t == "sliding_attention" else None for t in layer_types)
    _refuse_unknown_pattern(fields, model_type)
    if not isinstance(window, int) or window <= 0:
        return (None,) * num_layers
    if model_type == "gpt_oss":  # gpt-oss: even layers slide (openai/gpt-oss model.py)
        return tuple(window if i % 2 == 0 else None for i in range(num_layers))
    if model_type in _SLIDING_PATTERN_DEFAULT:
        return _pattern_windows(fields, model_type, window, num_layers)
    if model_type in ("qwen2", "qwen3", "qwen2_moe", "qwen3_moe"):
        if not fields.bool_("use_sliding_window", False):
            return (None,) * num_layers
        full_layers = fields.int_("max_window_layers", num_layers, minimum=0)
        return tuple(None if i < full_layers else window for i in range(num_layers))
    return (window,) * num_layers  # Mistral-style: every layer slides


def _refuse_unknown_pattern(fields: ConfigFields, model_type: str) -> None:
    """Refuse a `sliding_window_pattern` in a family whose pattern rule capcliff does not know,
    such as PLaMo 3's (its config class slides all but every 8th layer over window_size, a key
    read as no window; vLLM plamo3.py slides where layer_types says): every layer was sized
    alike."""
    if model_type not in _SLIDING_PATTERN_DEFAULT and fields.has("sliding_window_pattern"):
        raise fields.error(
            "sliding_window_pattern",
            f"{model_type}: a pattern of sliding and full layers capcliff knows only for "
            f"{', '.join(sorted(_SLIDING_PATTERN_DEFAULT))}; list the layers in layer_types "
            "(full_attention, sliding_attention) with sliding_window instead",
        )


def _pattern_windows(
    fields: ConfigFields, model_type: str, window: int, num_layers: int
) -> tuple[int | None, ...]:
    """Per-layer window of a family that attends in full every `sliding_window_pattern`-th
    layer (_SLIDING_PATTERN_DEFAULT), or by the letters of EXAONE 4's "LLLG"."""
    letters = fields.raw.get("sliding_window_pattern")
    if isinstance(letters, str) and letters and set(letters) <= {"L", "G"}:
        # layer i is Local (sliding) or Global by letter i mod length (LG AI's
        # modeling_exaone4.py check_is_sliding)
        return tuple(
            window if letters[i % len(letters)] == "L" else None for i in range(num_layers)
        )
    pattern = fields.int_("sliding_window_pattern", _SLIDING_PATTERN_DEFAULT[model_type])
    return tuple(None if (i + 1) % pattern == 0 else window for i in range(num_layers))


def _moe(fields: ConfigFields, model_type: str, num_layers: int) -> MoE | None:
    # 0 experts routing 0 per token is a dense model, as transformers builds it (GraniteMoeHybrid
    # with num_local_experts 0: a plain MLP in every layer); 0 experts routing some is refused
    dense = fields.raw.get("num_experts_per_tok") in (0, None)
    expert_field = next(
        (
            f
            for f in ("n_routed_experts", "num_local_experts", "num_experts")
            if fields.has(f) and not (dense and fields.raw[f] == 0)
        ),
        None,
    )
    if expert_field is None:
        return None
    num_experts = fields.int_(expert_field)
    top_k = fields.int_("num_experts_per_tok")
    if top_k > num_experts:
        raise fields.error("num_experts_per_tok", f"{top_k} exceeds {expert_field}={num_experts}")
    if fields.has("moe_intermediate_size"):
        width = fields.int_("moe_intermediate_size")
    else:
        width = fields.int_("intermediate_size")
    # The DeepSeek-style keys (n_routed_experts, n_shared_experts, first_k_dense_replace) keep their
    # meaning in the families that copied them: GLM-4.5's Glm4MoeDecoderLayer takes the MoE from
    # layer first_k_dense_replace on, with moe_intermediate_size x n_shared_experts shared
    # (transformers models/glm4_moe/modeling_glm4_moe.py), as DeepSeek-V3.2 and Kimi K2 do.
    deepseek_keys = expert_field == "n_routed_experts" or model_type.startswith("deepseek_v")
    if deepseek_keys:
        first_dense = fields.int_("first_k_dense_replace", 0, minimum=0)
        freq = fields.int_("moe_layer_freq", 1)
        flags = tuple(i >= first_dense and i % freq == 0 for i in range(num_layers))
        shared = fields.int_("n_shared_experts", 0, minimum=0) * width
    else:
        if fields.has("first_k_dense_replace"):
            # Ling-mini-2.0's bailing_moe_v2 keeps its first layers dense under the DeepSeek key
            # beside num_experts (vLLM bailing_moe.py); every layer was sized as MoE
            raise fields.error(
                "first_k_dense_replace",
                f"beside {expert_field}: dense layers under a key capcliff reads only with "
                "n_routed_experts (DeepSeek's), refused rather than sized as MoE layers",
            )
        step = fields.int_("decoder_sparse_step", 1)
        dense_layers = _layer_indices(fields, "mlp_only_layers", num_layers)
        flags = tuple(i not in dense_layers and (i + 1) % step == 0 for i in range(num_layers))
        shared = fields.int_("shared_expert_intermediate_size", 0, minimum=0)
    if not any(flags):  # a MoE model of dense layers only was sized with expert layouts
        which = (
            "first_k_dense_replace, moe_layer_freq"
            if deepseek_keys
            else "decoder_sparse_step, mlp_only_layers"
        )
        raise fields.error(
            expert_field, f"{num_experts} experts but {which} leave no MoE layer of {num_layers}"
        )
    router_bias = model_type == "gpt_oss" or fields.raw.get("topk_method") == "noaux_tc"
    return MoE(
        num_experts=num_experts,
        experts_per_token=top_k,
        expert_intermediate_size=width,
        shared_intermediate_size=shared,
        is_moe_layer=flags,
        router_bias=router_bias,
        expert_bias=model_type == "gpt_oss",
    )


def _layer_indices(fields: ConfigFields, field: str, num_layers: int) -> set[int]:
    """A config's list of layer indices (absent or null: none); a string, or an index past the
    layers, was read as no layer (or each character as one) unsaid."""
    value = fields.raw.get(field)
    if value is None:
        return set()
    if not isinstance(value, list) or not all(
        isinstance(i, int) and not isinstance(i, bool) and 0 <= i < num_layers for i in value
    ):
        raise fields.error(
            field, f"must list layer indices in 0..{num_layers - 1}, got {value!r:.40}"
        )
    return set(value)


def _mla(fields: ConfigFields) -> MLA | None:
    if not fields.has("kv_lora_rank"):
        return None
    return MLA(
        kv_lora_rank=fields.int_("kv_lora_rank"),
        q_lora_rank=fields.opt_int("q_lora_rank"),
        qk_rope_head_dim=fields.int_("qk_rope_head_dim"),
        qk_nope_head_dim=fields.int_("qk_nope_head_dim"),
        v_head_dim=fields.int_("v_head_dim"),
    )


def _quant_dtype(fmt: WeightFormat | None, base: WeightDType) -> WeightDType:
    """The WeightDType family of a per-module format (for summaries and the compute dtype)."""
    if fmt is None:
        return base
    families = {"fp8": WeightDType.FP8, "nvfp4": WeightDType.NVFP4, "mxfp4": WeightDType.MXFP4}
    if fmt.name.startswith("int"):
        return WeightDType.INT4
    return next((d for key, d in families.items() if fmt.name.startswith(key)), base)


FLOAT32_NAMES = ("float32", "float", "fp32")  # torch's names of a float32 checkpoint


def _dtypes(
    fields: ConfigFields, top: dict[str, Any]
) -> tuple[WeightDType, WeightDType, WeightDType, Quantization | None]:
    """(linear, expert, activation) dtypes as shipped, and the per-module quantization."""
    named = (top.get("torch_dtype"), top.get("dtype"), fields.raw.get("torch_dtype"))
    torch_dtype = next((d for d in named if d is not None), "bfloat16")
    if not isinstance(torch_dtype, str) or not torch_dtype.strip():  # false, {} or "": bf16
        raise CatalogError(
            f"{fields.path}: torch_dtype: must be a dtype name such as bfloat16, got "
            f"{torch_dtype!r:.40}"
        )
    if torch_dtype.strip().lower() in FLOAT32_NAMES:
        # vLLM's dtype "auto" serves a float32 checkpoint at 2 bytes a weight: float16 (its
        # _get_and_verify_dtype, "we use float16 for float32 models"), bfloat16 from 0.10.1;
        # the same bytes either way, and SGLang copies the rule
        torch_dtype = "bfloat16"
    base = parse_weight_dtype(torch_dtype, field=f"{fields.path}: torch_dtype")
    if base not in (WeightDType.BF16, WeightDType.FP16):
        base = WeightDType.BF16
    raw = top.get("quantization_config")
    if raw is None:  # vLLM's _parse_quant_hf_config: "compressed-tensors uses a
        raw = top.get("compression_config")  # 'compression_config' key" (its older releases)
    if raw is None and fields.raw is not top:  # vLLM's ModelConfig._verify_quantization
        # (vllm/config/model.py): "Check the text config as well for multi-modal models"; a
        # quantised text model under text_config was sized at bf16
        raw = fields.raw.get("quantization_config", fields.raw.get("compression_config"))
    if raw is None:
        return base, base, base, None
    if not isinstance(raw, dict):
        raise CatalogError(
            f"{fields.path}: quantization_config: must be an object of the checkpoint's "
            f"quantization fields (quant_method ...), got {type(raw).__name__} {raw!r:.40}"
        )
    quant = quantization_from_config(raw, path=fields.path)
    return _quant_dtype(quant.linear, base), _quant_dtype(quant.expert, base), base, quant


def _text_family(fields: ConfigFields, model_type: str) -> str:
    """The family whose layer rules size the text model: a multimodal config's text_config
    names its own (PaliGemma 2's `gemma2` under `paligemma`, LLaVA-OneVision's `qwen2`), and
    vLLM builds the language model from text_config by that family's class (paligemma.py,
    llava_onevision.py: `init_vllm_registered_model(hf_config=config.text_config)`). The
    wrapper's rules were applied, which know none of them: PaliGemma 2's alternating Gemma 2
    windows slid on every layer, and a Qwen2 text model with `use_sliding_window: false` slid
    on every layer too (its KV at a fraction of what the engine holds)."""
    text_type = fields.raw.get("model_type") if fields.prefix else None
    if text_type is None:
        return model_type
    if not isinstance(text_type, str) or not text_type.strip():
        raise fields.error(
            "model_type", f"must be a family name such as gemma2, got {text_type!r:.40}"
        )
    _refuse_unsized_family(fields, text_type)
    return "gemma3_text" if text_type == "gemma3" else text_type


def architecture_from_config(raw: dict[str, Any], *, path: str) -> Architecture:
    """Normalise an HF config dict (the text model of a multimodal config) into an Architecture."""
    try:
        return _architecture(raw, path)
    except MissingFieldError as err:
        raise _name_unknown_family(raw, err) from err


def _name_unknown_family(raw: dict[str, Any], err: MissingFieldError) -> CatalogError:
    """A required key's refusal, naming the model_type and architectures where capcliff does not
    know the family (its config may name the sizes under other keys): the bare "hidden_size:
    missing" said nothing of what was not understood."""
    text = raw.get("text_config")
    # the text model's family first (the one whose keys were read), then the wrapper's
    families = (text.get("model_type") if isinstance(text, dict) else None, raw.get("model_type"))
    if SIZED_FAMILIES.intersection(families):
        return err
    named = next((f for f in families if f is not None), None)
    return CatalogError(
        f"{err}; model_type {named!r:.40}, architectures {raw.get('architectures')!r:.80}: "
        "a family capcliff does not know, which may name its sizes under keys of its own "
        "(capcliff reads Llama's: hidden_size, num_hidden_layers, num_attention_heads, "
        "intermediate_size, vocab_size)"
    )


def _architecture(raw: dict[str, Any], path: str) -> Architecture:
    """architecture_from_config's work."""
    top = raw
    text = raw.get("text_config")
    if text is not None and not isinstance(text, dict):  # read as absent: "hidden_size: missing"
        raise CatalogError(
            f"{path}: text_config: must be an object of the text model's fields, got "
            f"{type(text).__name__} {text!r:.40}"
        )
    fields = (
        ConfigFields(text, path, "text_config.")
        if isinstance(text, dict)
        else ConfigFields(raw, path, "")
    )
    model_type = _model_type(ConfigFields(raw, path, ""))
    family = _text_family(fields, model_type)
    _refuse_unsized(fields)
    if family == "chatglm":  # its own keys, Llama's layers (capcliff/catalog/chatglm.py)
        fields = ConfigFields(chatglm_as_llama(fields), path, fields.prefix)
    hidden = fields.int_("hidden_size")
    layers = _layer_count(fields, family)
    heads = fields.int_("num_attention_heads")
    kv_heads = fields.int_("num_key_value_heads", heads)
    if heads % kv_heads:
        raise fields.error("num_key_value_heads", f"{kv_heads} does not divide {heads} heads")
    head_dim = fields.int_("head_dim") if fields.has("head_dim") else hidden // heads
    if not fields.has("head_dim") and hidden % heads:
        raise fields.error("head_dim", f"missing and hidden_size {hidden} % heads {heads} != 0")
    tie_default = _TIE_DEFAULT.get(model_type, _TIE_DEFAULT.get(family))
    int_default = _INT_DEFAULT.get(model_type, _INT_DEFAULT.get(family, {}))
    tie_source = fields if fields.has("tie_word_embeddings") else ConfigFields(top, path, "")
    attention_bias = fields.bool_("attention_bias", False)
    linear, expert, activation, quantization = _dtypes(fields, top)
    group = quantization.linear.group_size if quantization and quantization.linear else None
    if quantization and quantization.method in ("awq", "gptq") and group and hidden % group:
        # vLLM's AWQ/GPTQ linear methods refuse an input width that is no multiple of the group
        # ("The input size is not aligned with the quantized weight shape")
        raise CatalogError(
            f"{path}: quantization_config.group_size: {group} does not divide hidden_size "
            f"{hidden}; AWQ/GPTQ groups split each layer's input width evenly (e.g. 128)"
        )
    moe = _moe(fields, family, layers)
    positions = fields.opt_int("max_position_embeddings") or int_default.get(
        "max_position_embeddings"
    )
    if quantization and quantization.linear is None and moe is None:
        # mxfp4 quantises routed experts only (vLLM's Mxfp4Config): a dense model's checkpoint
        # so labelled was sized at its native dtype unsaid
        raise CatalogError(
            f"{path}: quantization_config.quant_method: {quantization.method} quantises the "
            "experts only and this model has none (dense); a dense checkpoint's format is "
            "fp8, fbgemm_fp8, compressed-tensors, modelopt, awq or gptq"
        )
    top_table = None
    if fields.prefix:  # TensorRT-LLM reads the top-level config's table, none where it has none
        top_table = raw["rope_scaling"] if isinstance(raw.get("rope_scaling"), dict) else {}
    context = model_context(fields, family, positions, top_table)
    return Architecture(
        model_type=model_type,
        hidden_size=hidden,
        num_layers=layers,
        num_attention_heads=heads,
        num_kv_heads=kv_heads,
        head_dim=head_dim,
        intermediate_size=_intermediate_size(fields, family, hidden),
        vocab_size=fields.int_("vocab_size", int_default.get("vocab_size")),
        tie_word_embeddings=tie_source.bool_("tie_word_embeddings", tie_default),
        qkv_bias=family in _QKV_BIAS_FAMILIES
        or attention_bias
        or (family == "chatglm" and fields.bool_("add_qkv_bias", False)),
        o_bias=attention_bias and family not in _NO_O_BIAS_FAMILIES,
        mlp_bias=fields.bool_("mlp_bias", False),
        qk_norm=family in _QK_NORM_FAMILIES,
        attention_sinks=family == "gpt_oss",
        norms_per_layer=(
            4 if family in _FOUR_NORM_FAMILIES else 1 if family in _ONE_NORM_FAMILIES else 2
        ),
        sliding_window_per_layer=_sliding_windows(fields, family, layers),
        mla=_mla(fields),
        moe=moe,
        linear_dtype=linear,
        expert_dtype=expert,
        activation_dtype=activation,
        quantization=quantization,
        max_position_embeddings=context.tokens,
        num_mtp_layers=fields.int_("num_nextn_predict_layers", 0, minimum=0),
        vision_params=_vision_params(raw, path, hidden),
        rope_positions=None if context.rope_rows == context.tokens else context.rope_rows,
        default_max_model_len=(
            None if context.default_tokens == context.tokens else context.default_tokens
        ),
        engine_contexts=context.engine_contexts,
        engine_refusals=context.engine_refusals,
    )


def _intermediate_size(fields: ConfigFields, family: str, hidden: int) -> int:
    """The MLP's width: `intermediate_size`; EXAONE 3.x's config class reads an unset one
    (absent, null or 0) as 4 x hidden_size (vLLM transformers_utils/configs/exaone.py
    ExaoneConfig: `if intermediate_size: ... else: hidden_size * 4`), as vLLM serves it."""
    value = fields.raw.get("intermediate_size")
    if family == "exaone" and value in (None, 0) and value is not False:  # False == 0: a flag
        return 4 * hidden
    return fields.int_("intermediate_size")


def _layer_count(fields: ConfigFields, family: str) -> int:
    """The decoder layers: `num_hidden_layers`, or the family's own key (_LAYER_COUNT_KEY)
    where the config holds it; both, differing, are refused (which one the engine reads
    depends on the config class's attribute map)."""
    own = _LAYER_COUNT_KEY.get(family)
    if own is None or not fields.has(own):
        return fields.int_("num_hidden_layers")
    layers = fields.int_(own)
    if fields.has("num_hidden_layers") and fields.int_("num_hidden_layers") != layers:
        raise fields.error(
            own,
            f"{layers} but num_hidden_layers {fields.raw['num_hidden_layers']}: two layer counts "
            f"({family} reads {own}); give one",
        )
    return layers


VISION_TOWERS = ("siglip_vision_model", "pixtral")  # vision_config.model_type values sized


def _vision_params(raw: dict[str, Any], path: str, text_hidden: int) -> int:
    """Elements of a multimodal config's vision tower and projector (0 without vision_config),
    tensor by tensor as transformers builds them; another tower is refused, not left out."""
    if raw.get("audio_config") is not None:  # Gemma 3n, Qwen2-Audio: left out unsaid
        raise CatalogError(f"{path}: audio_config: an audio tower capcliff does not size")
    vision = raw.get("vision_config")
    if vision is None:
        return 0
    if not isinstance(vision, dict):
        raise CatalogError(f"{path}: vision_config: must be an object, got {vision!r:.40}")
    fields = ConfigFields(vision, path, "vision_config.")
    kind = vision.get("model_type")
    if kind not in VISION_TOWERS:
        raise fields.error(
            "model_type",
            f"{kind!r:.40} is a vision tower capcliff does not size (its weights would be left "
            f"out); valid: {', '.join(VISION_TOWERS)}",
        )
    h, i = fields.int_("hidden_size"), fields.int_("intermediate_size")
    layers, patch = fields.int_("num_hidden_layers"), fields.int_("patch_size")
    conv = fields.int_("num_channels", 3) * patch * patch * h
    if kind == "pixtral":
        # PixtralVisionModel: patch_conv (no bias), ln_pre; per layer two RMSNorms, q/k/v/o and a
        # gated MLP, no biases. Mistral3MultiModalProjector: norm, patch merger (h x s^2 -> h),
        # linear_1 (h -> text), linear_2 (text -> text), biased if multimodal_projector_bias
        # (transformers models/pixtral/modeling_pixtral.py, models/mistral3/modeling_mistral3.py).
        merge = ConfigFields(raw, path, "").int_("spatial_merge_size", 2)
        bias = 2 * text_hidden if raw.get("multimodal_projector_bias") is True else 0
        tower = conv + h + layers * (2 * h + 4 * h * h + 3 * h * i)
        return tower + h + h * merge * merge * h + h * text_hidden + text_hidden**2 + bias
    # SiglipVisionTransformer: patch conv (biased), learned position embedding per patch; per
    # layer two LayerNorms, biased q/k/v/o and fc1/fc2; post LayerNorm; the pooling head only
    # where vision_use_head. Gemma3MultiModalProjector: soft-embedding RMSNorm and the projection
    # (transformers models/siglip/modeling_siglip.py, models/gemma3/modeling_gemma3.py).
    positions = (fields.int_("image_size") // patch) ** 2
    mlp = 2 * h * i + i + h
    tower = conv + h + positions * h + layers * (4 * h * h + 4 * h + mlp + 4 * h) + 2 * h
    if vision.get("vision_use_head", True) is not False:
        tower += h + 4 * h * h + 4 * h + 2 * h + mlp  # probe, attention, LayerNorm, MLP
    return tower + h + h * text_hidden
