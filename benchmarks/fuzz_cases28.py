"""The twenty-eighth bad-input campaign's surface (issue 23), run by `fuzz_surfaces.py`:

    PYTHONPATH=. python benchmarks/fuzz_surfaces.py famkeys28

Campaign 27 left five families refused for the first Llama key their config.json lacks
("num_hidden_layers: missing", "hidden_size: missing", "v_head_dim: missing"), a line that did
not say why, and InternLM2VE sized as Llama's layers without its visual-expert MLP. Here each
family's config.json with the keys its released one holds (sizing keys; the rest left out), the
same with Llama's keys added beside (sized as Llama's layers before: ChatGLM's 2 KV heads under
multi_query_group_num read as 32, MiniCPM3's attention as DeepSeek's MLA), the class alone (no
model_type), and configs of families capcliff does not know that lack a required key. EXAONE
3.x, whose layers are Llama's with the count under num_layers, is sized (EXAONE28).

2026-12-07: ChatGLM is sized now (its keys renamed to Llama's, capcliff/catalog/chatglm.py, by
vLLM chatglm.py's rule): its cases moved from FAMKEYS28 (refused) to CHATGLM28 (sized, GLM-4-9B-
chat's 9,399,951,360 parameters by hand). EXAONE 3.x takes ExaoneConfig's defaults where a
config omits them (tie_word_embeddings true, intermediate_size 4 x hidden_size): two cases more.

    PYTHONPATH=. python benchmarks/fuzz_cases28.py

prints, for each invalid case, whether its refusal names the family (its model_type or class):
the harness reads exit codes only.
"""

# Data tables: one case per line, some past 100 characters.
# ruff: noqa: E501
from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator

from fuzz_cases25 import _reading
from fuzz_harness import Case

MEMORY = ["memory", "{d}/m", "--gpu", "h200-sxm", "--gpus", "1", "--format", "json"]
LLAMA_KEYS = {
    "num_hidden_layers": 40,
    "intermediate_size": 13696,
    "vocab_size": 151552,
    "max_position_embeddings": 131072,
}

# sizing keys of each family's released config.json
# THUDM/glm-4-9b-chat (vLLM chatglm.py): 9.4B parameters
CHATGLM = {
    "architectures": ["ChatGLMModel"], "model_type": "chatglm", "add_bias_linear": False, "add_qkv_bias": True,
    "ffn_hidden_size": 13696, "hidden_size": 4096, "kv_channels": 128, "multi_query_attention": True,
    "multi_query_group_num": 2, "num_attention_heads": 32, "num_layers": 40, "padded_vocab_size": 151552,
    "seq_length": 131072, "rmsnorm": True, "tie_word_embeddings": False, "torch_dtype": "bfloat16",
}  # fmt: skip
# LGAI-EXAONE/EXAONE-3.5-7.8B-Instruct (vLLM exaone.py)
EXAONE = {
    "architectures": ["ExaoneForCausalLM"], "model_type": "exaone", "activation_function": "silu", "hidden_size": 4096,
    "intermediate_size": 14336, "num_attention_heads": 32, "num_key_value_heads": 8, "num_layers": 32,
    "vocab_size": 102400, "max_position_embeddings": 32768, "tie_word_embeddings": False, "torch_dtype": "bfloat16",
}  # fmt: skip
# inceptionai/jais-13b-chat (vLLM jais.py)
JAIS = {
    "architectures": ["JAISLMHeadModel"], "model_type": "jais", "n_embd": 5120, "n_layer": 40, "n_head": 40,
    "n_inner": 13653, "n_positions": 2048, "vocab_size": 84992, "position_embedding_type": "alibi",
    "activation_function": "swiglu", "torch_dtype": "float32",
}  # fmt: skip
# Tele-AI/TeleChat2-7B (vLLM telechat2.py)
TELECHAT2 = {
    "architectures": ["TeleChat2ForCausalLM"], "model_type": "telechat", "hidden_size": 4096, "n_layer": 30,
    "n_head": 32, "ffn_hidden_size": 12288, "vocab_size": 131072, "seq_length": 8192, "torch_dtype": "bfloat16",
}  # fmt: skip
# openbmb/MiniCPM3-4B (vLLM minicpm3.py)
MINICPM3 = {
    "architectures": ["MiniCPM3ForCausalLM"], "model_type": "minicpm3", "hidden_size": 2560, "num_hidden_layers": 62,
    "num_attention_heads": 40, "num_key_value_heads": 40, "intermediate_size": 6400, "vocab_size": 73448,
    "max_position_embeddings": 32768, "q_lora_rank": 768, "kv_lora_rank": 256, "qk_nope_head_dim": 64,
    "qk_rope_head_dim": 32, "scale_emb": 12, "dim_model_base": 256, "scale_depth": 1.4, "tie_word_embeddings": False,
    "torch_dtype": "bfloat16",
}  # fmt: skip
# OpenGVLab/Mono-InternVL-2B's llm_config (vLLM internlm2_ve.py): InternLM2's keys, its class
INTERNLM2_VE = {
    "architectures": ["InternLM2VEForCausalLM"], "model_type": "internlm2", "hidden_size": 2048,
    "num_hidden_layers": 24, "num_attention_heads": 16, "num_key_value_heads": 8, "intermediate_size": 8192,
    "vocab_size": 92553, "max_position_embeddings": 32768, "tie_word_embeddings": False, "torch_dtype": "bfloat16",
}  # fmt: skip

# fmt: off
# (name, config.json, what its refusal must name: the class that names the family where the
# config has one, vLLM's pick); every case is invalid (refused)
FAMKEYS28: list[tuple[str, dict[str, object], str]] = [
    ("jais", JAIS, "JAISLMHeadModel"),
    ("telechat2", TELECHAT2, "TeleChat2ForCausalLM"),
    ("minicpm3", MINICPM3, "MiniCPM3ForCausalLM"),
    ("internlm2ve-as-internlm2", INTERNLM2_VE, "InternLM2VEForCausalLM"),
    ("internlm2ve-model-type", {**INTERNLM2_VE, "model_type": "internlm2_ve", "architectures": []}, "internlm2_ve"),
    # Llama's keys beside the family's own: sized as Llama's layers before
    ("exaone-two-layer-counts", {**EXAONE, "num_hidden_layers": 30}, "num_layers"),
    ("jais+llama-keys", {**JAIS, "hidden_size": 5120, "num_hidden_layers": 40, "num_attention_heads": 40, "intermediate_size": 13653}, "JAISLMHeadModel"),
    ("telechat2+llama-keys", {**TELECHAT2, "num_hidden_layers": 30, "num_attention_heads": 32, "intermediate_size": 12288}, "TeleChat2ForCausalLM"),
    ("minicpm3+v_head_dim", {**MINICPM3, "v_head_dim": 64}, "MiniCPM3ForCausalLM"),
    # the class alone (no model_type): "architectures: missing" before, though it was given
    ("jais-class-only", {k: v for k, v in JAIS.items() if k != "model_type"}, "JAISLMHeadModel"),
    ("telechat2-class-only", {k: v for k, v in TELECHAT2.items() if k != "model_type"}, "TeleChat2ForCausalLM"),
    ("minicpm3-class-only", {k: v for k, v in MINICPM3.items() if k != "model_type"}, "MiniCPM3ForCausalLM"),
    # families capcliff does not know, lacking a required key: the line names them
    ("unknown-family-gpt-keys", {"architectures": ["FooLMHeadModel"], "model_type": "foo", "n_embd": 4096, "n_layer": 32}, "foo"),
    ("unknown-family-no-vocab", {"architectures": ["BarForCausalLM"], "model_type": "bar", "hidden_size": 4096, "num_hidden_layers": 32, "num_attention_heads": 32, "intermediate_size": 11008}, "bar"),
    ("unknown-class-only", {"architectures": ["FooForCausalLM"], "hidden_size": 4096}, "FooForCausalLM"),
    ("unknown-text-config", {"architectures": ["BazForConditionalGeneration"], "model_type": "baz", "text_config": {"model_type": "baz_text", "hidden_size": 4096}}, "baz"),
]
# fmt: on

# EXAONE 3.x is sized (its layers are Llama's, vLLM exaone.py; the layer count under num_layers):
# EXAONE-3.5-7.8B by hand, 2 x 102,400 x 4,096 = 838,860,800 (embedding, lm_head) + 32 x
# (4,096 x (4,096 + 2 x 1,024) + 4,096 x 4,096 + 3 x 4,096 x 14,336 + 2 x 4,096) + 4,096 =
# 7,818,448,896; its model card: 7.82B, 6.98B without embeddings (6,979,588,096 here)
EXAONE_PARAMS = 7_818_448_896
EXAONE28: list[tuple[str, dict[str, object]]] = [
    ("exaone-3.5-7.8b", EXAONE),
    ("exaone-class-only", {k: v for k, v in EXAONE.items() if k != "model_type"}),
    ("exaone-both-layer-counts", {**EXAONE, "num_hidden_layers": 32}),
]
# ExaoneConfig's defaults (vLLM transformers_utils/configs/exaone.py), refused as missing before:
# tie_word_embeddings true (less the lm_head's 102,400 x 4,096 = 419,430,400), intermediate_size
# 4 x 4,096 = 16,384 (32 x 3 x 4,096 x (16,384 - 14,336) = 805,306,368 more)
EXAONE_DEFAULTS28: list[tuple[str, dict[str, object], int]] = [
    (
        "exaone-tie-unset",
        {k: v for k, v in EXAONE.items() if k != "tie_word_embeddings"},
        7_399_018_496,
    ),
    (
        "exaone-intermediate-unset",
        {k: v for k, v in EXAONE.items() if k != "intermediate_size"},
        8_623_755_264,
    ),
]
# ChatGLM is sized (2026-12-07, vLLM chatglm.py; tests/test_chatglm_sizing.py): GLM-4-9B-chat by
# hand, 2 x 151,552 x 4,096 = 1,241,513,984 (embedding, output_layer) + 40 x (4,096 x (4,096 +
# 2 x 2 x 128) + 4,608 (q/k/v bias) + 4,096 x 4,096 + 3 x 4,096 x 13,696 + 2 x 4,096) + 4,096 =
# 9,399,951,360; its model card: 9.4B
CHATGLM_PARAMS = 9_399_951_360
CHATGLM28: list[tuple[str, dict[str, object]]] = [
    ("chatglm", CHATGLM),
    # Llama's keys beside: ChatGLM's are read (vLLM's ChatGLMConfig overwrites vocab_size and
    # max_position_embeddings with padded_vocab_size and seq_length)
    ("chatglm+llama-keys", {**CHATGLM, **LLAMA_KEYS}),
    ("chatglm-class-only", {k: v for k, v in CHATGLM.items() if k != "model_type"}),
    ("chatglm-other-class", {**CHATGLM, "architectures": ["ChatGLMForConditionalGeneration"]}),
]


def famkeys28_cases() -> Iterator[Case]:
    for name, config, _ in FAMKEYS28:
        yield Case("famkeys28", name, list(MEMORY), {"m/config.json": json.dumps(config)}, True)
    for name, config in EXAONE28:
        files = {"m/config.json": json.dumps(config)}
        answer = _reading("params_total", lambda d: d["params_total"], EXAONE_PARAMS)
        yield Case("famkeys28", name, list(MEMORY), files, False, answer=answer)
    for name, config, params in EXAONE_DEFAULTS28:
        files = {"m/config.json": json.dumps(config)}
        answer = _reading("params_total", lambda d: d["params_total"], params)
        yield Case("famkeys28", name, list(MEMORY), files, False, answer=answer)
    for name, config in CHATGLM28:
        files = {"m/config.json": json.dumps(config)}
        answer = _reading("params_total", lambda d: d["params_total"], CHATGLM_PARAMS)
        yield Case("famkeys28", name, list(MEMORY), files, False, answer=answer)


SURFACES28: dict[str, Callable[[], Iterator[Case]]] = {"famkeys28": famkeys28_cases}


def _names_family() -> None:
    """Print each case's refusal and whether it names the family; then the count."""
    from capcliff.catalog.architecture import architecture_from_config
    from capcliff.errors import CatalogError

    named = 0
    for name, config, family in FAMKEYS28:
        try:
            architecture_from_config(config, path="config.json")
            line = "(sized)"
        except CatalogError as err:
            line = str(err)
        names = family in re.sub(r"\(vLLM [^)]*\)", "", line)  # not by "(vLLM chatglm.py)"
        named += names
        print(f"{name:<26} {'names' if names else 'MISSES'} {family}: {line[:150]}")
    print(f"{named} of {len(FAMKEYS28)} refusals name the family")


if __name__ == "__main__":
    _names_family()
