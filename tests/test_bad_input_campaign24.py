"""Valid input a twenty-fourth campaign (benchmarks/fuzz_cases24.py) found answered wrongly or
refused, and bad input it found answered: config.json's context keys other than
max_position_embeddings, read by vLLM's rule (capcliff/catalog/context.py cites it), LongRoPE's
shorter default max_model_len, a --gpus that agrees with --disagg's pools, and a disaggregated
pool that does not fit (an answer, not an error). Each expected figure is worked out by hand in
the comment beside it.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from test_bad_input import ROOT, _one_line_error

from capcliff.catalog.architecture import architecture_from_config
from capcliff.cli import main
from capcliff.errors import CatalogError
from capcliff.memory.overheads import rope_cache_bytes


def _llama_plain(**changes: object) -> dict[str, object]:
    """Llama 3.1 8B's config with no RoPE scaling: 131,072 positions, head_dim 128."""
    import tomllib

    card = tomllib.loads((ROOT / "model_cards" / "llama-3.1-8b.toml").read_text())
    return {**card["config"], "rope_scaling": None, **changes}


def _context(config: dict[str, object]) -> int | None:
    return architecture_from_config(config, path="config.json").max_position_embeddings


def _memory(tmp_path: Path, config: dict[str, object], *extra: str) -> list[str]:
    folder = tmp_path / "m"
    folder.mkdir(exist_ok=True)
    (folder / "config.json").write_text(json.dumps(config))
    return ["memory", str(folder), "--gpus", "1", "--gpu", "h200-sxm", "--format", "json", *extra]


def _served_length(
    tmp_path: Path, config: dict[str, object], capsys: pytest.CaptureFixture[str], *extra: str
) -> int:
    assert main(_memory(tmp_path, config, *extra)) == 0, capsys.readouterr().err
    return int(json.loads(capsys.readouterr().out)["max_model_len"])


@pytest.mark.parametrize(
    ("key", "value", "context"),
    [
        ("seq_length", 8192, 8192), ("n_positions", 4096, 4096), ("max_seq_len", 16_384, 16_384),
        ("max_sequence_length", 2048, 2048), ("max_seq_length", 32_768, 32_768),
        ("seq_len", 1000, 1000), ("max_target_positions", 448, 448),
        # the least wins: 131,072 positions beside a longer seq_length stay 131,072
        ("seq_length", 262_144, 131_072),
    ],
)  # fmt: skip
def test_context_is_the_least_of_the_keys_vllm_reads(key: str, value: int, context: int) -> None:
    assert _context(_llama_plain(**{key: value})) == context


def test_model_max_length_replaces_the_least_longer_or_shorter() -> None:
    # Command-R's keys (c4ai-command-r-v01: 8,192 positions, model_max_length 131,072): vLLM's
    # "For Command-R / Cohere" rule serves 131,072; a shorter one (4,096) serves 4,096
    assert _context(_llama_plain(max_position_embeddings=8192, model_max_length=131_072)) == 131_072
    assert _context(_llama_plain(model_max_length=4096)) == 4096
    assert _context(_llama_plain(seq_length=8192, model_max_length=65_536)) == 65_536


@pytest.mark.parametrize(
    ("scaling", "context"),
    [
        ({"rope_type": "dynamic", "factor": 2.0}, 16_384),  # 8,192 x 2
        ({"type": "linear", "factor": 4.0}, 32_768),  # 8,192 x 4
        # YaRN counts from its own original context: 32,768 x 4, whatever seq_length says
        ({"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 32_768}, 131_072),
        ({"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
          "original_max_position_embeddings": 8192}, 8192),  # llama3 holds it already
    ],
    ids=["dynamic", "linear", "yarn", "llama3"],
)  # fmt: skip
def test_rope_scaling_applies_over_the_least_key(scaling: dict[str, object], context: int) -> None:
    assert _context(_llama_plain(seq_length=8192, rope_scaling=scaling)) == context


def test_rope_table_keeps_max_position_embeddings_rows() -> None:
    # the rotary embedding is built from max_position_embeddings: 131,072 x 128 x 2 B with a
    # seq_length of 8,192, and 8,192 x 128 x 2 B = 2,097,152 under a model_max_length of 131,072
    short = architecture_from_config(_llama_plain(seq_length=8192), path="c")
    assert (short.max_position_embeddings, rope_cache_bytes(short)) == (8192, 33_554_432)
    long = architecture_from_config(
        _llama_plain(max_position_embeddings=8192, model_max_length=131_072), path="c"
    )
    assert (long.max_position_embeddings, rope_cache_bytes(long)) == (131_072, 2_097_152)


PHI35 = {
    "architectures": ["Phi3ForCausalLM"], "model_type": "phi3", "hidden_size": 3072,
    "intermediate_size": 8192, "max_position_embeddings": 131_072, "num_attention_heads": 32,
    "num_hidden_layers": 32, "num_key_value_heads": 32, "original_max_position_embeddings": 4096,
    "rope_scaling": {"type": "longrope", "long_factor": [1.0] * 48, "short_factor": [1.0] * 48},
    "tie_word_embeddings": False, "torch_dtype": "bfloat16", "vocab_size": 32064,
}  # fmt: skip


def test_longrope_serves_its_original_context_when_none_is_given(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Phi-3.5-mini: vLLM defaults max_model_len to original_max_position_embeddings (4,096)
    # under LongRoPE, and accepts up to max_position_embeddings (131,072) when asked
    assert _served_length(tmp_path, PHI35, capsys) == 4096
    assert _served_length(tmp_path, PHI35, capsys, "--max-model-len", "131072") == 131_072


def test_memory_serves_the_least_key_when_none_is_given(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert _served_length(tmp_path, _llama_plain(seq_length=8192), capsys) == 8192


def test_a_length_past_the_least_key_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    line = _one_line_error(
        _memory(tmp_path, _llama_plain(seq_length=8192), "--max-model-len", "8193"), capsys
    )
    assert "8193 is longer than the model's context (8192 tokens" in line


def test_a_wrappers_top_level_key_is_not_the_text_models() -> None:
    # vLLM reads the keys of hf_text_config: the wrapper's own seq_length says nothing
    wrapper = {"model_type": "llava", "seq_length": 8192, "text_config": _llama_plain()}
    assert _context(wrapper) == 131_072
    wrapper["text_config"] = _llama_plain(seq_length=8192)
    assert _context(wrapper) == 8192


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"seq_length": "8192"}, "seq_length: must be an integer"),
        ({"seq_length": 0}, "seq_length: must be >= 1"),
        ({"n_positions": True}, "n_positions: must be an integer"),
        ({"model_max_length": 0}, "model_max_length: must be >= 1"),
        ({"model_max_length": 10**30}, "model_max_length: 1000000000000000000000000000000 is past"),
        ({"rope_scaling": {"type": "yarn", "rope_type": "linear", "factor": 4.0}},
         "rope_scaling.rope_type: 'linear' disagrees with its legacy type 'yarn'"),
        ({"rope_scaling": {"rope_type": "ntk-by-parts", "factor": 2.0}},
         "rope_scaling.rope_type: 'ntk-by-parts' is no RoPE type vLLM builds"),
        ({"rope_scaling": {"rope_type": [3], "factor": 2.0}}, "rope_scaling.rope_type: [3] is no"),
        ({**PHI35, "original_max_position_embeddings": 262_144},
         "original_max_position_embeddings: 262144 is past the context"),
    ],
    ids=["string", "zero", "bool", "mml-zero", "mml-past-bound", "type-conflict", "unknown-type",
         "type-list", "longrope-original-past"],
)  # fmt: skip
def test_context_keys_vllm_cannot_read_are_refused(
    changes: dict[str, object], message: str
) -> None:
    config = {**PHI35, **changes} if "model_type" in changes else _llama_plain(**changes)
    with pytest.raises(CatalogError) as caught:
        architecture_from_config(config, path="config.json")
    assert message in str(caught.value)


def test_legacy_su_with_rope_type_longrope_is_no_conflict() -> None:
    # vLLM's patch_rope_parameters_dict lets type su sit beside rope_type longrope
    scaling = {**PHI35["rope_scaling"], "type": "su", "rope_type": "longrope"}  # type: ignore[dict-item]
    arch = architecture_from_config({**PHI35, "rope_scaling": scaling}, path="c")
    assert (arch.max_position_embeddings, arch.default_context) == (131_072, 4096)


SWEEP = ["sweep", "--gpu", "h100-sxm", "--isl", "100", "--osl", "100", "--num-requests", "20",
         "--concurrency", "4", "--format", "json"]  # fmt: skip


def test_disagg_takes_a_gpus_that_is_its_pools_count(capsys: pytest.CaptureFixture[str]) -> None:
    # 1p:tp1 + 1d:tp2 = 1 + 2 = 3 GPUs, as a check spec's `gpus = 3` beside its `disagg`
    assert main([*SWEEP[:1], "llama-3.1-8b", *SWEEP[1:], "--disagg", "1p:tp1,1d:tp2",
                 "--gpus", "3"]) == 0  # fmt: skip
    assert json.loads(capsys.readouterr().out)["gpus"] == 3
    line = _one_line_error([*SWEEP[:1], "llama-3.1-8b", *SWEEP[1:], "--disagg", "1p:tp1,1d:tp2",
                            "--gpus", "2"], capsys)  # fmt: skip
    assert "(1p:tp1,1d:tp2 uses 3 GPUs)" in line


def test_disagg_pool_that_does_not_fit_is_an_answer(capsys: pytest.CaptureFixture[str]) -> None:
    # Llama 3.1 70B: 70,553,706,496 parameters x 2 B = 141.1 GB of bf16 weights, past one
    # 80 GB H100; a 4-GPU TP (35.3 GB each) holds them
    code = main([*SWEEP[:1], "llama-3.1-70b", *SWEEP[1:], "--disagg", "1p:tp1,1d:tp4"])
    answer = json.loads(capsys.readouterr().out)
    assert code == 0
    assert (answer["fits"], answer["gpus"]) == (False, 5)
    assert [o["layout"] for o in answer["left_out"]] == ["prefill tp1"]
    assert "weights 141.1 GB/GPU" in answer["left_out"][0]["reason"]
    assert answer["fixes"] == ["4 GPUs (1 node) fit as tp4"]


def test_offload_past_the_host_names_the_tier_that_fits(capsys: pytest.CaptureFixture[str]) -> None:
    # an H100 node's 2 TB of host DRAM over 8 GPUs: 250 GB a GPU, and 30.72 TB of NVMe: 3,840 GB;
    # the model fits one GPU without offload, so the fix is the tiers' size, not more GPUs
    code = main([*SWEEP[:1], "llama-3.1-8b", *SWEEP[1:], "--gpus", "1",
                 "--offload", "cpu:1e18,nvme:1e18"])  # fmt: skip
    answer = json.loads(capsys.readouterr().out)
    assert (code, answer["fits"]) == (0, False)
    assert answer["fixes"] == [
        "offload within the host of a replica's 1 GPU: at most --offload "
        "cpu:250GB,nvme:3840GB per replica (tp1)"
    ]
