"""The model's context by each engine's own rule (capcliff/catalog/context.py cites the source):
SGLang's `get_context_length` takes the first of its keys present and drops the RoPE factor
when the table holds an original context; TensorRT-LLM's `_infer_max_seq_len_from_config`
reads max_position_embeddings alone and leaves YaRN's factor out; vLLM takes the least of its
keys. Each expected figure is worked by hand from those rules in the comment beside it.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from test_bad_input import _one_line_error
from test_bad_input_campaign24 import PHI35, _llama_plain, _memory, _served_length

from capcliff.catalog.architecture import architecture_from_config

# Qwen3-8B's config with the YaRN table its model card adds for 131,072 tokens
YARN = {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 32_768}
QWEN3_YARN = _llama_plain(max_position_embeddings=40_960, rope_scaling=YARN)


def _contexts(config: dict[str, object]) -> tuple[int | None, int | None, int | None]:
    arch = architecture_from_config(config, path="config.json")
    return arch.context_for("vllm"), arch.context_for("sglang"), arch.context_for("trtllm")


@pytest.mark.parametrize(
    ("changes", "vllm", "sglang", "trtllm"),
    [
        # YaRN x4 from 32,768: vLLM 32,768 x 4 = 131,072; SGLang drops the factor (the table has
        # an original context): 40,960; TensorRT-LLM leaves yarn unscaled: 40,960
        ({"max_position_embeddings": 40_960, "rope_scaling": YARN}, 131_072, 40_960, 40_960),
        # DeepSeek-V3's YaRN x40 from 4,096 over 163,840 positions: 4,096 x 40 = 163,840 on
        # vLLM, the positions themselves on the other two
        ({"max_position_embeddings": 163_840, "rope_scaling": {
            "type": "yarn", "factor": 40, "original_max_position_embeddings": 4096}},
         163_840, 163_840, 163_840),
        # a seq_length longer than the positions: vLLM the least (131,072); SGLang the first of
        # its keys, seq_length (262,144); TensorRT-LLM the positions (131,072)
        ({"seq_length": 262_144}, 131_072, 262_144, 131_072),
        # max_sequence_length comes first in SGLang's order: 2,048 on both, 131,072 on TRT-LLM
        ({"max_sequence_length": 2048, "seq_length": 8192}, 2048, 2048, 131_072),
        # Command-R: model_max_length 131,072 over 8,192 positions on vLLM and SGLang (before
        # max_position_embeddings in its order); TensorRT-LLM reads the 8,192 positions
        ({"max_position_embeddings": 8192, "model_max_length": 131_072}, 131_072, 131_072, 8192),
        # n_positions is no SGLang key: the least on vLLM (4,096), the positions on the others
        ({"n_positions": 4096}, 4096, 131_072, 131_072),
        # dynamic x2 with an original context in its table, 8,192 positions: vLLM and TRT-LLM
        # 8,192 x 2 = 16,384; SGLang counts factor 1 (the table has an original): 8,192
        ({"max_position_embeddings": 8192, "rope_scaling": {
            "rope_type": "dynamic", "factor": 2.0, "original_max_position_embeddings": 4096}},
         16_384, 8192, 16_384),
        # linear x4 over 8,192: 32,768 on all three
        ({"max_position_embeddings": 8192, "rope_scaling": {"type": "linear", "factor": 4.0}},
         32_768, 32_768, 32_768),
    ],
)  # fmt: skip
def test_each_engine_reads_the_context_by_its_own_rule(
    changes: dict[str, object], vllm: int, sglang: int, trtllm: int
) -> None:
    assert _contexts(_llama_plain(**changes)) == (vllm, sglang, trtllm)


def test_llama3_and_longrope_contexts_agree_and_only_vllm_has_longropes_default() -> None:
    # Llama 3.1's llama3 table holds 131,072 already: no engine scales it
    llama31 = _llama_plain(rope_scaling={"rope_type": "llama3", "factor": 8.0,
        "original_max_position_embeddings": 8192, "low_freq_factor": 1.0,
        "high_freq_factor": 4.0})  # fmt: skip
    assert _contexts(llama31) == (131_072, 131_072, 131_072)
    # Phi-3.5-mini (LongRoPE, 131,072 positions, original 4,096 at the top level, no factor):
    # 131,072 everywhere; vLLM alone serves 4,096 when none is given
    phi = architecture_from_config(PHI35, path="config.json")
    assert _contexts(PHI35) == (131_072, 131_072, 131_072)
    assert (phi.default_context_for("vllm"), phi.default_context_for("sglang")) == (4096, 131_072)


def test_a_nested_text_config_scales_by_trtllms_top_level_table() -> None:
    # a wrapper's text_config with linear x2 over 8,192 positions: vLLM and SGLang read the
    # text config's table (16,384); TensorRT-LLM reads the top level's, which has none (8,192)
    text = _llama_plain(max_position_embeddings=8192,
                        rope_scaling={"rope_type": "linear", "factor": 2.0})  # fmt: skip
    wrapper = {"model_type": "llava", "text_config": {**text, "model_type": "llama"}}
    assert _contexts(wrapper) == (16_384, 16_384, 8192)


def test_sglang_serves_and_refuses_by_its_own_context(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Qwen3 with YaRN: SGLang serves 40,960 when none is given and refuses 131,072 (it raises
    # unless SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN=1); vLLM serves 131,072
    sglang = ("--engine", "sglang")
    assert _served_length(tmp_path, QWEN3_YARN, capsys, *sglang) == 40_960
    assert _served_length(tmp_path, QWEN3_YARN, capsys) == 131_072
    line = _one_line_error(
        _memory(tmp_path, QWEN3_YARN, *sglang, "--max-model-len", "131072"), capsys
    )
    assert "131072 is longer than the model's context (40960 tokens" in line


def test_a_context_only_sglang_reads_past_the_bounds_refuses_sglang_alone(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # seq_length 10^30 beside 131,072 positions: vLLM's least is 131,072 and it serves that;
    # SGLang takes seq_length first (10^30 tokens, past the 2^30 sanity bound): refused on it
    huge = _llama_plain(seq_length=10**30)
    assert _served_length(tmp_path, huge, capsys) == 131_072
    line = _one_line_error(_memory(tmp_path, huge, "--engine", "sglang"), capsys)
    assert "seq_length: gives a context of 1e+30 tokens" in line
