"""The model's context as vLLM derives it from config.json, the max_model_len it serves when none
is given, and the RoPE cos/sin table's rows.

vLLM's `_get_and_verify_max_len` (vllm/config/model.py; from the release that added
ModelArchitectureConfig, its first half is `derive_max_model_len_and_key` in
vllm/transformers_utils/model_arch_config_convertor.py, the same rule), over the text config:

1. the least of CONTEXT_KEYS present (not null): `seq_length: 8192` beside
   `max_position_embeddings: 131072` serves 8,192 tokens;
2. a truthy `model_max_length` replaces it ("For Command-R / Cohere, Cohere2 / Aya Vision
   models"): `max_position_embeddings: 8192, model_max_length: 131072` serves 131,072;
3. each RoPE table not of a type in UNSCALED_ROPE_TYPES multiplies it by its `factor` (1.0 when
   absent, the type `default` too), YaRN's counted from its `original_max_position_embeddings`;
   Gemma 3's context "is already scaled by RoPE scaling" and is not;
4. left unset, max_model_len is that context, except under LongRoPE: the config's top-level
   `original_max_position_embeddings` ("to avoid performance degradation for shorter
   sequences"), the context staying the most it accepts.

SGLang and TensorRT-LLM derive the context by their own rules (`_sglang_context`,
`_trtllm_context`), the same in every release read:

- SGLang's `get_context_length` (python/sglang/srt/hf_transformers_utils.py in 0.4.3.post2 to
  0.4.9, srt/utils/hf_transformers_utils.py in 0.5.3 to 0.5.10, srt/utils/hf_transformers/
  common.py in 0.5.12; `ModelConfig._derive_context_length` serves it when no
  --context-length is given): the first of SGLANG_CONTEXT_KEYS present, in that order, not the
  least; times the RoPE table's `factor`, which counts 1 when the table holds an
  `original_max_position_embeddings` (YaRN as Qwen's model cards add it) or its `rope_type` is
  llama3. A Qwen3 config of 40,960 positions with YaRN x4 from 32,768 serves 40,960 tokens on
  SGLang, 131,072 on vLLM. No LongRoPE default: it serves the context.
- TensorRT-LLM's PyTorch backend, `PyTorchModelEngine._infer_max_seq_len_from_config`
  (tensorrt_llm/_torch/pyexecutor/model_engine.py; `DecoderModelForCausalLM.infer_max_seq_len`
  in _torch/models/modeling_utils.py the same, "Modified from tensorrt_llm/builder.py
  _init_max_seq_len"): `max_position_embeddings` alone, times the table's `factor` unless its
  type (legacy `type` first, then `rope_type`) is su, longrope, llama3 or yarn, rounded up.

The model's rotary embedding builds its cos/sin table from `max_position_embeddings` (scaled as
in 3) whatever the other keys say (vllm/model_executor/models/llama.py:
`max_position_embeddings = getattr(config, "max_position_embeddings", 8192)` into `get_rope`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from capcliff.catalog.config_fields import SANITY_MAX, ConfigFields
from capcliff.errors import CatalogError
from capcliff.files import finite_number

# vLLM's `possible_keys`, in its order (OPT, GPT-2, MPT, ChatGLM2, Command-R, Whisper, others)
CONTEXT_KEYS = (
    "max_position_embeddings", "n_positions", "max_seq_len", "seq_length", "model_max_length",
    "max_target_positions", "max_sequence_length", "max_seq_length", "seq_len",
)  # fmt: skip
# RoPE scalings whose factor vLLM does not apply to the context: Phi-3's longrope (su) and Llama
# 3.1's llama3 hold the scaled context in max_position_embeddings already.
UNSCALED_ROPE_TYPES = ("su", "longrope", "llama3")
LONGROPE_TYPES = ("su", "longrope")  # vLLM's patch_rope_parameters_dict renames su longrope
# The RoPE types vLLM's `get_rope` builds (vllm/model_executor/layers/rotary_embedding/
# __init__.py), with the legacy su and mrope that patch_rope_parameters_dict renames; another
# fails there ("Unknown RoPE scaling type"), the model never loading.
KNOWN_ROPE_TYPES = (
    "default", "linear", "dynamic", "ntk", "yarn", "deepseek_yarn", "deepseek_llama_scaling",
    "longrope", "su", "llama3", "mllama4", "mrope", "xdrope",
)  # fmt: skip
# the legacy `type` and modern `rope_type` pairs vLLM's patch_rope_parameters_dict lets differ
_LEGACY_PAIRS = {("su", "longrope"), ("mrope", "default")}
# transformers v5's `rope_parameters` keys when it holds one table per layer type (vLLM's
# ALLOWED_LAYER_TYPES)
ROPE_LAYER_TYPES = ("full_attention", "sliding_attention", "chunked_attention", "linear_attention")
# Set: past any published RoPE scaling (DeepSeek-V3's YaRN x40, gpt-oss's x32); a larger factor
# is a corrupt table
MAX_ROPE_FACTOR = 1024.0


# SGLang's CONTEXT_LENGTH_KEYS, in its order: the first present is the context
SGLANG_CONTEXT_KEYS = (
    "max_sequence_length", "seq_length", "max_seq_len", "model_max_length",
    "max_position_embeddings",
)  # fmt: skip
# TensorRT-LLM's RoPE types whose factor it does not apply to max_position_embeddings
TRTLLM_UNSCALED_ROPE_TYPES = ("su", "longrope", "llama3", "yarn")
# the engines with a rule of their own (EngineName values; vLLM V0 is vLLM's)
SGLANG, TRTLLM = "sglang", "trtllm"


@dataclass(frozen=True)
class ModelContext:
    """A config's context figures, in tokens (None: the config says none)."""

    tokens: int | None  # the longest max_model_len vLLM accepts unforced
    default_tokens: int | None  # the max_model_len vLLM serves when none is given
    rope_rows: int | None  # the RoPE cos/sin table's rows
    # (engine, its context) where an engine's own rule gives another context (module docstring)
    engine_contexts: tuple[tuple[str, int | None], ...] = ()
    # (engine, the refusal) where that engine's rule reads a context past the bounds
    engine_refusals: tuple[tuple[str, str], ...] = ()


def model_context(
    fields: ConfigFields, model_type: str, positions: int | None,
    top_table: dict[str, Any] | None = None,
) -> ModelContext:  # fmt: skip
    """The context figures of the text config `fields` (module docstring); `positions`: its
    max_position_embeddings (or the family's default); `top_table`: the top-level config's RoPE
    table where the text config is nested (TensorRT-LLM reads that one)."""
    tables = _rope_tables(fields)
    tokens = _scaled(fields, tables, model_type, _least_context(fields, positions))
    default = tokens
    if any(_rope_type(fields, key, t) in LONGROPE_TYPES for key, t in tables) and fields.has(
        "original_max_position_embeddings"
    ):
        default = fields.int_("original_max_position_embeddings")
        if tokens is not None and default > tokens:
            raise fields.error(
                "original_max_position_embeddings",
                f"{default} is past the context LongRoPE extends it to ({tokens} tokens); "
                "the original context is the shorter one",
            )
    others, refusals = [], []
    for engine, rule in ((SGLANG, _sglang_context), (TRTLLM, _trtllm_context)):
        try:  # a context only one engine reads past the bounds refuses that engine alone
            found = rule(fields, tables, positions, top_table)
        except CatalogError as refusal:
            refusals.append((engine, str(refusal)))
        else:
            if found != tokens:
                others.append((engine, found))
    return ModelContext(
        tokens, default, _scaled(fields, tables, model_type, positions), tuple(others),
        tuple(refusals),
    )  # fmt: skip


def _sglang_context(
    fields: ConfigFields, tables: list[tuple[str, dict[str, Any]]], positions: int | None,
    top_table: dict[str, Any] | None,
) -> int | None:  # fmt: skip
    """SGLang's context (tokens; module docstring): the first of SGLANG_CONTEXT_KEYS present
    (`positions` for the last), times the table's factor unless the table holds an
    `original_max_position_embeddings` or its type is llama3. `tables` already read by vLLM's
    rule; a table per layer type holds no `factor` of its own (factor 1). The type is the legacy
    `type` where given: transformers' config classes copy it over `rope_type` (LlamaConfig,
    Qwen2Config: `self.rope_scaling["rope_type"] = self.rope_scaling["type"]`)."""
    table = _one_table(tables)
    key = next((k for k in SGLANG_CONTEXT_KEYS[:-1] if fields.has(k)), "max_position_embeddings")
    first = positions if key == "max_position_embeddings" else fields.int_(key)
    if first is None:
        return None
    held = "original_max_position_embeddings" in table
    factor = 1.0 if held else _engine_factor(fields, tables, table, ("llama3",))
    return _bounded(fields, key, int(factor * first))


def _trtllm_context(
    fields: ConfigFields, tables: list[tuple[str, dict[str, Any]]], positions: int | None,
    top_table: dict[str, Any] | None,
) -> int | None:  # fmt: skip
    """TensorRT-LLM's context (tokens; module docstring): `positions` times the factor of the
    top-level config's table, `top_table` (None: the text config is the top level), unless its
    type is in TRTLLM_UNSCALED_ROPE_TYPES; rounded up."""
    if positions is None:
        return None
    table = _one_table(tables) if top_table is None else top_table
    factor = _engine_factor(fields, tables, table, TRTLLM_UNSCALED_ROPE_TYPES)
    return _bounded(fields, "max_position_embeddings", math.ceil(positions * factor))


def _one_table(tables: list[tuple[str, dict[str, Any]]]) -> dict[str, Any]:
    """The model's one RoPE table ({}: none, or one per layer type)."""
    return tables[0][1] if len(tables) == 1 and "." not in tables[0][0] else {}


def _engine_factor(
    fields: ConfigFields, tables: list[tuple[str, dict[str, Any]]], table: dict[str, Any],
    unscaled: tuple[str, ...],
) -> float:  # fmt: skip
    """The table's `factor` as an engine applies it (1 for a type in `unscaled`); checked as
    vLLM's rule checks it."""
    if table.get("type", table.get("rope_type")) in unscaled:
        return 1.0
    factor = table.get("factor", 1)
    if not finite_number(factor) or isinstance(factor, bool) or not 0 < factor <= MAX_ROPE_FACTOR:
        raise fields.error(
            f"{tables[0][0] if tables else 'rope_scaling'}.factor",
            f"must be a number in (0, {MAX_ROPE_FACTOR:g}], got {factor!r:.40}",
        )
    return float(factor)


def _bounded(fields: ConfigFields, key: str, context: int) -> int:
    """`context` (tokens, read from `key`), refused outside 1 to the sanity bound."""
    bound = SANITY_MAX["max_position_embeddings"]
    if not 1 <= context <= bound:
        raise fields.error(key, f"gives a context of {context:.3g} tokens, outside 1 to {bound:,}")
    return context


def _least_context(fields: ConfigFields, positions: int | None) -> int | None:
    """The least of CONTEXT_KEYS present, then a model_max_length present in its place. Without
    `positions` the config class's default max_position_embeddings takes part in vLLM's least
    (transformers' LlamaConfig: 2,048), which capcliff does not know: no context then."""
    found = [fields.int_(key) for key in CONTEXT_KEYS[1:] if fields.has(key)]
    least = None if positions is None else min([*found, positions])
    if fields.has("model_max_length"):
        least = fields.int_("model_max_length")
        bound = SANITY_MAX["max_position_embeddings"]
        if least > bound:
            raise fields.error(
                "model_max_length", f"{least} is past the sanity bound {bound:,} (a corrupt "
                "config? vLLM takes it as the model's context)",
            )  # fmt: skip
    return least


def _rope_tables(fields: ConfigFields) -> list[tuple[str, dict[str, Any]]]:
    """(key, table) of each RoPE table: `rope_scaling`, else transformers v5's
    `rope_parameters`, one table for the model or one per layer type (read table by table as
    vLLM reads it; a per-layer YaRN table was read as no scaling, the context at 1/factor)."""
    key = "rope_scaling" if fields.raw.get("rope_scaling") is not None else "rope_parameters"
    scaling = fields.raw.get(key)
    if scaling is None:
        return []
    if not isinstance(scaling, dict):  # vLLM's rope_scaling["rope_type"] failed on it
        raise fields.error(key, f"must be an object or null, got {scaling!r:.40}")
    if not (scaling and set(scaling) <= set(ROPE_LAYER_TYPES)):
        return [(key, scaling)]
    for layer_type, table in scaling.items():
        if not isinstance(table, dict):
            raise fields.error(
                f"{key}.{layer_type}", f"must be an object (a RoPE table), got {table!r:.40}"
            )
    return [(f"{key}.{layer_type}", table) for layer_type, table in scaling.items()]


def _rope_type(fields: ConfigFields, key: str, table: dict[str, Any]) -> object:
    """A table's `rope_type`, else its legacy `type`; the two disagreeing are refused as vLLM's
    patch_rope_parameters_dict refuses them ("Found conflicts between 'rope_type' ... and
    'type'"), and so is a type that is not a name."""
    modern, legacy = table.get("rope_type"), table.get("type")
    for kind in (modern, legacy):
        if kind is not None and kind not in KNOWN_ROPE_TYPES:
            raise fields.error(
                f"{key}.rope_type", f"{kind!r:.40} is no RoPE type vLLM builds; valid: "
                f"{', '.join(KNOWN_ROPE_TYPES)}",
            )  # fmt: skip
    conflict = modern is not None and legacy is not None and modern != legacy
    if conflict and (legacy, modern) not in _LEGACY_PAIRS:
        raise fields.error(
            f"{key}.rope_type", f"{modern!r:.40} disagrees with its legacy type {legacy!r:.40}, "
            "which vLLM refuses; give one of them",
        )  # fmt: skip
    return legacy if modern is None else modern


def _scaled(
    fields: ConfigFields, tables: list[tuple[str, dict[str, Any]]], model_type: str,
    context: int | None,
) -> int | None:  # fmt: skip
    """`context` scaled by the RoPE tables (module docstring, 3); tables that scale it
    differently are refused: vLLM takes one factor for all ("assumes all layer types have the
    same scaling factor") and which of the contexts the engine serves is not known."""
    if context is None or not tables or model_type.startswith("gemma3"):
        return context
    contexts = {_scaled_context(fields, key, table, context) for key, table in tables}
    if len(contexts) > 1:
        found = ", ".join(f"{c:,}" for c in sorted(contexts))
        raise fields.error(
            tables[0][0].partition(".")[0],
            f"its layer types scale the context differently ({found} tokens); capcliff reads "
            "one context for the model",
        )
    return contexts.pop()


def _scaled_context(fields: ConfigFields, key: str, scaling: dict[str, Any], context: int) -> int:
    """`context` scaled by one RoPE table: x its `factor`, YaRN's from its original context."""
    kind = _rope_type(fields, key, scaling)
    if kind in UNSCALED_ROPE_TYPES:
        return context
    factor = scaling.get("factor", 1.0)
    if not finite_number(factor) or isinstance(factor, bool) or not 0 < factor <= MAX_ROPE_FACTOR:
        raise fields.error(
            f"{key}.factor", f"must be a number in (0, {MAX_ROPE_FACTOR:g}], got {factor!r:.40}"
        )
    if kind == "yarn":  # vLLM reads it unguarded: a YaRN table without it does not load
        context = ConfigFields(scaling, fields.path, f"{fields.prefix}{key}.").int_(
            "original_max_position_embeddings"
        )
    scaled = int(context * factor)
    if not 1 <= scaled <= SANITY_MAX["max_position_embeddings"]:
        raise fields.error(
            f"{key}.factor", f"{factor:g} x {context} positions gives a context of {scaled}"
            f" tokens, outside 1 to {SANITY_MAX['max_position_embeddings']:,}",
        )  # fmt: skip
    return scaled
