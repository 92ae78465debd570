"""ChatGLM's config.json keys (ChatGLM2/3, GLM-4-9B: model_type chatglm) read as Llama's.

vLLM builds the model from them by model_executor/models/chatglm.py (checked against its main
branch, 2025): per layer an RMSNorm, GLMAttention (one query_key_value projection of
num_attention_heads query heads and `multi_query_group_num` KV heads where
multi_query_attention, else as many KV heads as query heads; biased where add_bias_linear or
add_qkv_bias; a `dense` output biased where add_bias_linear), an RMSNorm and GLMMLP (a gated
SwiGLU `dense_h_to_4h` of 2 x ffn_hidden_size and `dense_4h_to_h`, biased where
add_bias_linear); then a final RMSNorm and `output_layer` over padded_vocab_size, tied to the
embedding only where tie_word_embeddings. Its head width is hidden_size / num_attention_heads
(GLMAttention.head_dim); its context is seq_length (vLLM configs/chatglm.py ChatGLMConfig sets
max_position_embeddings to it). Those are Llama's layers under other names, so the keys are
renamed and the Llama sizing applies.

The size keys are required although ChatGLMConfig has defaults for them: its defaults are
ChatGLM2-6B's sizes, which a config lacking them would be sized as unsaid. The flags take
ChatGLMConfig's defaults (add_bias_linear, add_qkv_bias, multi_query_attention false; rmsnorm,
post_layer_norm true).
"""

from __future__ import annotations

from typing import Any

from capcliff.catalog.config_fields import SANITY_MAX, ConfigFields

# ChatGLM's key -> the Llama key capcliff reads
_RENAMED = {
    "ffn_hidden_size": "intermediate_size",
    "padded_vocab_size": "vocab_size",
    "seq_length": "max_position_embeddings",
}


def chatglm_as_llama(fields: ConfigFields) -> dict[str, Any]:
    """The config of `fields` with ChatGLM's sizes under Llama's keys (module docstring), each
    bad one reported under ChatGLM's own key. Layouts capcliff does not size are refused:
    LayerNorm in place of RMSNorm (rmsnorm false, norms with biases) and no final norm."""
    for flag, default in (("rmsnorm", True), ("post_layer_norm", True)):
        if not fields.bool_(flag, default):
            raise fields.error(
                flag,
                "false: LayerNorms with biases (rmsnorm) or no final norm (post_layer_norm), "
                "which capcliff does not size for ChatGLM (refused rather than sized as "
                "RMSNorms); released ChatGLM3 / GLM-4 configs set true",
            )
    hidden = fields.int_("hidden_size")
    heads = fields.int_("num_attention_heads")
    if hidden % heads:
        raise fields.error(
            "num_attention_heads", f"{heads} does not divide hidden_size {hidden} (vLLM "
            "chatglm.py's head width is hidden_size / num_attention_heads)",
        )  # fmt: skip
    head_dim = hidden // heads
    if fields.has("kv_channels") and fields.int_("kv_channels") != head_dim:
        raise fields.error(
            "kv_channels",
            f"{fields.raw['kv_channels']} but hidden_size / num_attention_heads is {head_dim}: "
            "vLLM chatglm.py shapes the heads by the latter, the checkpoint by the former; "
            "give the two alike",
        )
    kv_heads = heads
    if fields.bool_("multi_query_attention", False):
        kv_heads = fields.int_("multi_query_group_num")
        if heads % kv_heads:
            raise fields.error("multi_query_group_num", f"{kv_heads} does not divide {heads} heads")
    bias_linear = fields.bool_("add_bias_linear", False)
    fields.bool_("add_qkv_bias", False)  # read by the caller; checked here, named as ChatGLM's
    renamed = {llama: fields.int_(own) for own, llama in _RENAMED.items()}
    # seq_length is a context key of every family (capcliff/catalog/context.py bounds it there,
    # per engine); ChatGLM's is its max_position_embeddings, bounded as that
    bound = SANITY_MAX["max_position_embeddings"]
    if renamed["max_position_embeddings"] > bound:
        raise fields.error(
            "seq_length",
            f"{renamed['max_position_embeddings']} is past the sanity bound {bound:,} "
            "(a corrupt config?)",
        )
    return {
        **fields.raw,
        **renamed,
        "hidden_size": hidden,
        "num_attention_heads": heads,
        "num_key_value_heads": kv_heads,
        "head_dim": head_dim,
        "attention_bias": bias_linear,  # the dense (o) bias; q/k/v's also by add_qkv_bias
        "mlp_bias": bias_linear,
    }
