"""Typed access to an HF config.json's fields: each bad one reported as `path: field: message`."""

from __future__ import annotations

from typing import Any

from capcliff.errors import CatalogError

# Sanity bounds on config.json integers: far above every published model (the largest today:
# 126 layers and hidden size 16,384 in Llama-3.1-405B, 128 heads in DeepSeek-V3, 384 experts in
# Kimi K2, a 262,144-token vocabulary in Gemma 3, a 10M-token context in Llama 4 Scout), so only
# a corrupt or mistyped config trips them, before any calculator allocates per-layer arrays.
SANITY_MAX: dict[str, int] = {
    "num_hidden_layers": 4_096,
    "num_layers": 4_096,
    "hidden_size": 1_048_576,
    "num_attention_heads": 16_384,
    "num_key_value_heads": 16_384,
    "head_dim": 65_536,
    "intermediate_size": 16_777_216,
    "moe_intermediate_size": 16_777_216,
    "shared_expert_intermediate_size": 16_777_216,
    "vocab_size": 16_777_216,
    "n_routed_experts": 65_536,
    "num_local_experts": 65_536,
    "num_experts": 65_536,
    "n_shared_experts": 65_536,
    "max_position_embeddings": 1 << 30,
    "kv_lora_rank": 1_048_576,
    "q_lora_rank": 1_048_576,
    "qk_rope_head_dim": 65_536,
    "qk_nope_head_dim": 65_536,
    "v_head_dim": 65_536,
    "num_nextn_predict_layers": 4_096,
    # ChatGLM's own keys (capcliff/catalog/chatglm.py), bounded as their Llama namesakes
    "ffn_hidden_size": 16_777_216,
    "padded_vocab_size": 16_777_216,
    "multi_query_group_num": 16_384,
    "kv_channels": 65_536,
}


class MissingFieldError(CatalogError):
    """A field the sizing needs, absent with no default: the caller may say which family the
    config named, since a family capcliff does not know often names its sizes otherwise."""


class ConfigFields:
    """Typed access to a config dict that reports bad fields as `path: field: message`."""

    def __init__(self, raw: dict[str, Any], path: str, prefix: str) -> None:
        self.raw = raw
        self.path = path
        self.prefix = prefix

    def error(self, field: str, message: str) -> CatalogError:
        return CatalogError(f"{self.path}: {self.prefix}{field}: {message}")

    def has(self, field: str) -> bool:
        return self.raw.get(field) is not None

    def int_(self, field: str, default: int | None = None, *, minimum: int = 1) -> int:
        # null is unset, as transformers reads it (`num_key_value_heads: null` is the heads)
        value = self.raw.get(field)
        value = default if value is None else value
        if value is None:
            raise MissingFieldError(
                f"{self.path}: {self.prefix}{field}: missing (required to size the model)"
            )
        if isinstance(value, bool) or not isinstance(value, int):
            raise self.error(field, f"must be an integer, got {value!r}")
        if value < minimum:
            raise self.error(field, f"must be >= {minimum}, got {value}")
        bound = SANITY_MAX.get(field)
        if bound is not None and value > bound:
            raise self.error(
                field, f"{value} is past the sanity bound {bound:,} (a corrupt config?)"
            )
        return value

    def opt_int(self, field: str) -> int | None:
        return self.int_(field) if self.has(field) else None

    def bool_(self, field: str, default: bool | None) -> bool:
        value = self.raw.get(field, default)
        if value is None:
            raise self.error(field, "missing, and capcliff knows no default for this family; "
                             "set true or false")  # fmt: skip
        if not isinstance(value, bool):
            raise self.error(field, f"must be true or false, got {value!r}")
        return value
