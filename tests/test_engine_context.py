"""The model's context by each engine's own rule (capcliff/catalog/context.py cites the source):
SGLang's `get_context_length` takes the first of its keys present and drops the RoPE factor
when the table holds an original context; TensorRT-LLM's `_infer_max_seq_len_from_config`
reads max_position_embeddings alone and leaves YaRN's factor out; vLLM takes the least of its
keys. Each expected figure is worked by hand from those rules in the comment beside it.
"""

from __future__ import annotations

import json
import tomllib
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from test_bad_input import ROOT, _one_line_error
from test_bad_input_campaign24 import PHI35, _llama_plain, _memory, _served_length

from capcliff.catalog.architecture import architecture_from_config
from capcliff.cli import main
from tests.checktools import check_file

# Qwen3-8B's config with the YaRN table its model card adds for 131,072 tokens
YARN = {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 32_768}
QWEN3_YARN = _llama_plain(max_position_embeddings=40_960, rope_scaling=YARN)
# Qwen3-8B's card config (40,960 positions, no RoPE table)
QWEN3_CONFIG = tomllib.loads((ROOT / "model_cards" / "qwen3-8b.toml").read_text())["config"]


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


# --rope-scaling (a RoPE table over config.json's, as the launch line sets it): Qwen3-8B's card
# config has 40,960 positions and no table; its model card's YaRN x4 from 32,768 gives vLLM's
# rule 32,768 x 4 = 131,072 tokens
YARN_FLAG = ("--rope-scaling", json.dumps(YARN))


def _qwen3_folder(tmp_path: Path) -> Path:
    folder = tmp_path / "m"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps(QWEN3_CONFIG))
    return folder


def _card_length(capsys: pytest.CaptureFixture[str], *extra: str) -> int:
    args = ["memory", "qwen3-8b", "--gpus", "1", "--gpu", "h200-sxm", "--format", "json", *extra]
    assert main(args) == 0, capsys.readouterr().err
    return int(json.loads(capsys.readouterr().out)["max_model_len"])


def test_rope_scaling_flag_extends_the_context_it_is_derived_from(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # without it 131,072 is past the 40,960 positions (refused); with it vLLM serves 131,072
    # when none is given, and SGLang still its 40,960 (the table holds an original context)
    line = _one_line_error(["memory", "qwen3-8b", "--gpus", "1", "--gpu", "h200-sxm",
                            "--max-model-len", "131072"], capsys)  # fmt: skip
    assert "(40960 tokens" in line
    assert _card_length(capsys, *YARN_FLAG, "--max-model-len", "131072") == 131_072
    assert _card_length(capsys, *YARN_FLAG) == 131_072
    assert _card_length(capsys, *YARN_FLAG, "--engine", "sglang") == 40_960


@pytest.mark.parametrize(
    ("value", "said"),
    [("[1]", "must be a RoPE table"), ("{yarn", "is no JSON object"),
     ('{"rope_type": "yarn", "factor": 4.0}', "original_max_position_embeddings: missing")],
)  # fmt: skip
def test_a_bad_rope_scaling_is_one_line(
    value: str, said: str, capsys: pytest.CaptureFixture[str]
) -> None:
    args = ["memory", "qwen3-8b", "--gpus", "1", "--gpu", "h200-sxm", "--rope-scaling", value]
    line = _one_line_error(args, capsys)
    assert "--rope-scaling" in line and said in line


@pytest.mark.parametrize(
    "line",
    [
        f"vllm serve Qwen/Qwen3-8B --rope-scaling '{json.dumps(YARN)}' --max-model-len 131072",
        "vllm serve Qwen/Qwen3-8B --hf-overrides "
        f"'{json.dumps({'rope_scaling': YARN})}' --max-model-len 131072",
    ],
    ids=["rope-scaling", "hf-overrides"],
)
def test_serve_command_reads_the_launch_lines_rope_table(
    line: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Qwen3's model card lines: 131,072 served (32,768 x 4)
    folder = _qwen3_folder(tmp_path)
    args = ["memory", "--gpu", "h200-sxm", "--format", "json", "--serve-command",
            line.replace("Qwen/Qwen3-8B", str(folder))]  # fmt: skip
    assert main(args) == 0, capsys.readouterr().err
    assert json.loads(capsys.readouterr().out)["max_model_len"] == 131_072


def test_sglang_override_args_keep_sglangs_own_context(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # SGLang reads the same table with --json-model-override-args and drops its factor: 40,960,
    # so --context-length 131072 is refused (SGLang raises without
    # SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN=1)
    folder = _qwen3_folder(tmp_path)
    override = json.dumps({"rope_scaling": YARN})
    line = (f"python -m sglang.launch_server --model-path {folder} --json-model-override-args "
            f"'{override}' --context-length 131072")  # fmt: skip
    error = _one_line_error(["memory", "--gpu", "h200-sxm", "--serve-command", line], capsys)
    assert "131072 is longer than the model's context (40960 tokens" in error


def test_check_spec_takes_a_rope_scaling_table(tmp_path: Path) -> None:
    spec = tmp_path / "capcliff.toml"
    spec.write_text(
        '[[scenario]]\nname = "yarn"\nmodel = "qwen3-8b"\ngpu = "h200-sxm"\nlayout = "tp1"\n'
        "max_model_len = 131072\n"
        'rope_scaling = {rope_type = "yarn", factor = 4.0, original_max_position_embeddings = '
        "32768}\n[scenario.workload]\nisl = 64\nosl = 16\nnum_requests = 4\nconcurrency = 4\n"
    )
    report = check_file(spec)
    assert report.scenarios[0].max_model_len == 131_072


def test_engine_lines_carry_the_rope_table_and_read_back() -> None:
    # the printed launch line must start the server at the planned context: vLLM V1 gets
    # --hf-overrides, V0 --rope-scaling, SGLang --json-model-override-args, each the same table
    from capcliff.analysis.flags import Deployment, sglang_command, vllm_command
    from capcliff.analysis.serve_command import parse_serve_command
    from capcliff.catalog.layout import parse_layout

    table = json.dumps(YARN, sort_keys=True)
    dep = Deployment(
        model="Qwen/Qwen3-8B", layout=parse_layout("tp1"), max_num_seqs=8,
        max_num_batched_tokens=8192, max_model_len=131_072, gpu_memory_utilization=0.9,
        mem_fraction_static=0.9, kv_cache_dtype="auto", moe=False, mla=False, rope_scaling=table,
    )  # fmt: skip
    v1, sglang = vllm_command(dep), sglang_command(dep)
    assert "--hf-overrides" in v1 and "--json-model-override-args" in sglang
    assert "--rope-scaling" in vllm_command(replace(dep, vllm_v0=True))
    for line in (v1, sglang):
        read = parse_serve_command(line)
        assert json.loads(read.settings["rope_scaling"]) == YARN


def test_a_rope_table_on_trtllm_is_refused_and_other_overrides_stay_unmodelled(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # capcliff prints no trtllm-serve flag that sets it: refused, not planned unlaunchable
    args = ["memory", "qwen3-8b", "--gpus", "1", "--gpu", "h200-sxm", "--engine", "trtllm",
            *YARN_FLAG]  # fmt: skip
    assert "rope_scaling: a launch-line RoPE table is modelled for vllm" in _one_line_error(
        args, capsys
    )
    from capcliff.analysis.serve_command import parse_serve_command

    both = json.dumps({"rope_scaling": YARN, "max_position_embeddings": 4096})
    read = parse_serve_command(f"vllm serve Qwen/Qwen3-8B --hf-overrides '{both}'")
    assert json.loads(read.settings["rope_scaling"]) == YARN
    assert read.unmodelled == ('--hf-overrides {"max_position_embeddings": 4096}',)


def _memory_json(capsys: pytest.CaptureFixture[str], model: str, engine: str) -> dict[str, Any]:
    argv = ["memory", model, "--engine", engine, "--gpus", "1", "--gpu", "h200-sxm",
            "--layout", "tp1", "--format", "json"]  # fmt: skip
    assert main(argv) == 0, capsys.readouterr().err
    return dict(json.loads(capsys.readouterr().out))


def test_sglang_serves_a_context_past_its_pool_capped_at_the_pool(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # Gemma 3 27B's context by SGLang's rule is 131,072 x 8 = 1,048,576 (above). SGLang starts
    # whatever its pool and caps a request at min(context_len - 1, pool - 1) tokens
    # (managers/tp_worker.py max_req_len); one H200's pool is shorter than 1,048,576, so the
    # layout fits, serves pool - 1 tokens, and holds one such request.
    out = _memory_json(capsys, "gemma-3-27b", "sglang")
    (row,) = out["layouts"]
    pool = row["kv_capacity_tokens_per_replica"]
    assert out["max_model_len"] == 1_048_576 > pool
    assert row["fits"] and row["reason"] == ""
    assert row["max_concurrency_at_max_model_len"] == 1
    assert any(f"at most {pool - 1:,} tokens" in w for w in row["warnings"])


def test_sglang_context_inside_its_pool_is_served_whole(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # Llama 3.1 8B on one H200: 131,072 tokens of context against a pool of ~900,000 (16 GB of
    # weights, ~110 GB of KV at 131,072 B/token): no cap, no note
    (row,) = _memory_json(capsys, "llama-3.1-8b", "sglang")["layouts"]
    assert row["kv_capacity_tokens_per_replica"] > 131_072
    assert (
        row["max_concurrency_at_max_model_len"] == row["kv_capacity_tokens_per_replica"] // 131_072
    )
    assert not any("at most" in w for w in row["warnings"])
