"""What a twentieth campaign (benchmarks/fuzz_cases20.py) found in the engine command lines users
paste from the engines' own recipes: each line is read as the shell and the engine read it (a
line break without `\\` ends the command, `#` starts a comment, the YAML file the line names is
part of it), or refused in one line where the engine does not start.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from test_bad_input import _one_line_error
from test_bad_input_campaign4 import SPEC

from capcliff.analysis.engine_yaml import read_mapping, scalar
from capcliff.analysis.serve_command import parse_serve_command
from capcliff.catalog.layout import Layout
from capcliff.cli import main
from capcliff.errors import InputError

V8 = "vllm serve meta-llama/Llama-3.1-8B"
T8 = "trtllm-serve meta-llama/Llama-3.1-8B"
TR1 = "trtllm-serve deepseek-ai/DeepSeek-R1"
SR1 = "python -m sglang.launch_server --model-path deepseek-ai/DeepSeek-R1"
TWO = {"a.yaml": "max-num-seqs: 8\n", "b.yaml": "max-num-seqs: 16\n"}

# vllm-project/recipes DeepSeek/DeepSeek-V3.md, "Running DeepSeek-R1 with FP4 on 4xB200", as
# published: its third line has no trailing backslash
FP4_RECIPE = (
    "CUDA_VISIBLE_DEVICES=0,1,2,3 vllm serve nvidia/DeepSeek-R1-0528-FP4 \\\n"
    "  --trust-remote-code \\\n  --tensor-parallel-size 4\n  --enable_expert_parallel"
)


def test_a_recipe_line_left_without_its_backslash_is_refused() -> None:
    # bash runs `--enable_expert_parallel` as a command of its own: the server has no EP
    with pytest.raises(InputError, match="no `\\\\` before it \\('--enable_expert_parallel'\\)"):
        parse_serve_command(FP4_RECIPE)


def test_the_same_recipe_with_its_backslash_is_tp4_with_ep_over_the_4_ranks() -> None:
    command = parse_serve_command(FP4_RECIPE.replace("size 4\n", "size 4 \\\n"))
    # --enable-expert-parallel: the MoE layers over tp x dp = 4 x 1 ranks
    assert command.layout == Layout(tp=4, ep=4)


def test_blank_and_comment_lines_after_the_command_are_not_a_second_command() -> None:
    command = parse_serve_command("vllm serve meta-llama/Llama-3.1-8B --max-num-seqs 8\n\n  # x\n")
    assert command.settings["max_num_seqs"] == 8


@pytest.mark.parametrize("before", ["\n", "\r\n\n", "  \n# serve it\n"])
def test_blank_and_comment_lines_before_the_command_are_not_a_first_command(before: str) -> None:
    # a shell runs nothing for them, then the command (a spec's multi-line string often starts
    # with a line break); the flags after it are the engine's: max_num_seqs 8
    command = parse_serve_command(f"{before}{V8} --max-num-seqs 8\n")
    assert command.settings["max_num_seqs"] == 8


# A public SGLang script for DeepSeek-R1 on MI300X: flags commented out after the last `\`
SG_AITER = (
    "SGLANG_USE_AITER=1 \\\npython3 -m sglang.launch_server \\\n--model-path "
    "deepseek-ai/DeepSeek-R1 \\\n--tp-size 8 \\\n--chunked-prefill-size 130172 \\\n"
    "--max-running-requests 128 \\\n--mem-fraction-static 0.85 \\\n# --enable-torch-compile \\\n"
    "# --dp-size 8 \\\n# --enable-dp-attention \\\n"
)


def test_flags_commented_out_in_a_recipe_are_left_out_as_the_shell_leaves_them() -> None:
    command = parse_serve_command(SG_AITER)
    # --dp-size 8 --enable-dp-attention are comments: plain TP 8, no attention DP
    assert command.layout == Layout(tp=8)
    assert command.settings["mem_fraction_static"] == 0.85
    assert command.settings["max_num_batched_tokens"] == 130172
    assert command.settings["max_num_seqs"] == 128  # one replica: the flag is per replica


def test_a_hash_inside_quotes_or_a_word_is_no_comment() -> None:
    line = "vllm serve meta-llama/Llama-3.1-8B --served-model-name 'a #b' --max-num-seqs 8"
    assert parse_serve_command(line).settings["max_num_seqs"] == 8
    assert parse_serve_command("vllm serve a#b --max-num-seqs 8").model == "a#b"


# TensorRT-LLM examples/serve/deepseek_r1_reasoning_parser.sh and the YAML it writes
TRT_R1_YAML = (
    "cuda_graph_config:\n    enable_padding: true\n    max_batch_size: 512\n"
    "enable_attention_dp: true\nkv_cache_config:\n    dtype: fp8\n"
    "    free_gpu_memory_fraction: 0.8\nstream_interval: 10\nmoe_config:\n    backend: DEEPGEMM\n"
)
TRT_R1 = (
    "trtllm-serve deepseek-ai/DeepSeek-R1 --host localhost --port 8000 --trust_remote_code "
    "--max_batch_size 1024 --max_num_tokens 8192 --tp_size 8 --ep_size 8 --pp_size 1 "
    "{flag} ./config.yml --reasoning_parser deepseek-r1"
)


@pytest.mark.parametrize("flag", ["--extra_llm_api_options", "--config"])
def test_trtllm_serve_reads_the_yaml_its_line_names(tmp_path: Path, flag: str) -> None:
    (tmp_path / "config.yml").write_text(TRT_R1_YAML)
    command = parse_serve_command(TRT_R1.format(flag=flag), base_dir=tmp_path)
    # enable_attention_dp: each of the 8 ranks runs attention alone, the experts over 8 ranks
    assert command.layout == Layout(dp=8, tp=1, ep=8, attention_dp=True)
    assert command.settings == {
        "engine": "trtllm", "max_num_seqs": 1024, "max_num_batched_tokens": 8192,
        "kv_cache_dtype": "fp8", "free_gpu_memory_fraction": 0.8,
    }  # fmt: skip
    assert command.unmodelled == ()  # CUDA graphs, the MoE kernel and streaming size nothing


def test_trtllm_yaml_overrides_the_flags(tmp_path: Path) -> None:
    (tmp_path / "x.yml").write_text(
        "tensor_parallel_size: 2\nkv_cache_config: {free_gpu_memory_fraction: 0.5}\n"
    )
    line = f"{T8} --tp_size 4 --kv_cache_free_gpu_memory_fraction 0.9 --config x.yml"
    command = parse_serve_command(line, base_dir=tmp_path, release="1.1.0")
    assert command.layout == Layout(tp=2)
    assert command.settings["free_gpu_memory_fraction"] == 0.5
    # from 1.2 the typed flags win (NVIDIA/TensorRT-LLM PR 14812), the YAML fills the rest
    (tmp_path / "x.yml").write_text("tensor_parallel_size: 2\nmax_batch_size: 64\n")
    command = parse_serve_command(line, base_dir=tmp_path, release="1.2.0")
    assert command.layout == Layout(tp=4)
    assert command.settings["free_gpu_memory_fraction"] == 0.9
    assert command.settings["max_num_seqs"] == 64


def test_trtllm_long_option_names_are_its_short_ones() -> None:
    line = (
        "trtllm-serve deepseek-ai/DeepSeek-R1 --tensor_parallel_size 8 "
        "--moe_expert_parallel_size 4 --free_gpu_memory_fraction 0.85"
    )
    command = parse_serve_command(line)
    assert command.layout == Layout(tp=8, ep=4)
    assert command.settings["free_gpu_memory_fraction"] == 0.85
    assert command.unmodelled == ()


def test_trtllm_yaml_speculation_is_read_and_its_length_checked(tmp_path: Path) -> None:
    line = "trtllm-serve deepseek-ai/DeepSeek-R1 --tp_size 8 --ep_size 8 --config x.yml"
    (tmp_path / "x.yml").write_text(
        "speculative_config:\n  decoding_type: MTP\n  num_nextn_predict_layers: 3\n"
    )
    assert parse_serve_command(line, base_dir=tmp_path).settings["speculative"] == "mtp:3"
    (tmp_path / "x.yml").write_text(
        "speculative_config: {decoding_type: MTP, num_nextn_predict_layers: 0}\n"
    )
    with pytest.raises(InputError, match="num_nextn_predict_layers wants a whole number >= 1"):
        parse_serve_command(line, base_dir=tmp_path)


def test_a_vllm_config_file_is_read_under_the_command_lines_flags(tmp_path: Path) -> None:
    # vllm/utils/argparse_utils.py inserts the file's options before the line's: -tp 2 wins
    (tmp_path / "c.yaml").write_text(
        "tensor-parallel-size: 4\nmax_num_seqs: 32\nno-enable-prefix-caching: true\n"
    )
    command = parse_serve_command(
        "vllm serve meta-llama/Llama-3.1-8B --config c.yaml -tp 2", base_dir=tmp_path
    )
    assert command.layout == Layout(tp=2)
    assert command.settings["max_num_seqs"] == 32
    assert command.settings["prefix_caching"] == "off"


REFUSED = {
    "vllm-two-configs": (f"{V8} --config a.yaml --config b.yaml", TWO, "--config is given 2 times"),
    "missing-file": (f"{V8} --config none.yaml", {}, "cannot read none.yaml: no such file"),
    "yaml-list": (f"{T8} --config x.yml", {"x.yml": "- a\n"}, "line 1: a list item"),
    "yaml-tab": (f"{T8} --config x.yml", {"x.yml": "a:\n\tb: 1\n"}, "line 2: a tab"),
    "yaml-empty": (f"{T8} --config x.yml", {"x.yml": "# nothing\n"}, "empty"),
    "trtllm-backend": (f"{T8} --backend torch", {}, "--backend 'torch' is not one of"),
    "trtllm-ep-past-tp": (f"{TR1} --tp_size 8 --ep_size 16", {}, "EP size of 16 does not divide"),
    "sglang-ep-3-of-8": (f"{SR1} --tp 8 --ep-size 3", {}, "EP size of 3 does not divide"),
    "sglang-8k": (f"{SR1} --chunked-prefill-size 8k", {}, "got '8k' \\(the engine reads it with"),
}


@pytest.mark.parametrize(("line", "files", "message"), REFUSED.values(), ids=REFUSED.keys())
def test_a_line_the_engine_does_not_start_with_is_refused(
    tmp_path: Path, line: str, files: dict[str, str], message: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    with pytest.raises(InputError, match=message):
        parse_serve_command(line)


def test_vllm_keeps_its_human_readable_max_model_len() -> None:
    # vLLM's --max-model-len is human-readable (8k = 8,000); SGLang's ints are not
    assert (
        parse_serve_command("vllm serve meta-llama/Llama-3.1-8B --max-model-len 8k").settings[
            "max_model_len"
        ]
        == 8000
    )


def test_the_cli_refuses_a_missing_yaml_in_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    line = "trtllm-serve meta-llama/Llama-3.1-8B --extra_llm_api_options ./nope.yml"
    error = _one_line_error(["memory", "--serve-command", line], capsys)
    assert (
        error == "error: serve_command: --extra_llm_api_options: cannot read nope.yml: no such file"
    )


def test_a_spec_reads_the_yaml_beside_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "x.yml").write_text("kv_cache_config:\n  free_gpu_memory_fraction: 0.8\n")
    serve = f'serve_command = "{T8} --extra_llm_api_options x.yml"\nengine = "trtllm"'
    spec = SPEC.replace('layout = "tp1"\n', f"{serve}\nfree_gpu_memory_fraction = 0.95\n")
    (tmp_path / "sub" / "s.toml").write_text(spec)
    monkeypatch.chdir(tmp_path)  # not the spec's folder: the file is found beside the spec
    error = _one_line_error(["check", "sub/s.toml"], capsys)
    assert "--free-gpu-memory-fraction 0.95 conflicts with the command's 0.8" in error
    (tmp_path / "sub" / "s.toml").write_text(spec.replace("0.95", "0.8"))
    assert main(["check", "sub/s.toml"]) in (0, 1)
    assert "Traceback" not in capsys.readouterr().err


# YAML 1.1's scalars as PyYAML's safe_load resolves them (the YAML 1.1 type repository:
# yaml.org/type/int.html, float.html, bool.html)
@pytest.mark.parametrize(
    ("text", "value"),
    [("0.8", 0.8), ("1e-3", "1e-3"), ("1.0e+3", 1000.0), ("010", 8), ("0x1F", 31), ("1:30", 90),
     ("yes", True), ("Off", False), ("~", None), ("80%", "80%"), ("'fp8'", "fp8"), ("1_000", 1000)],
)  # fmt: skip
def test_yaml_scalars_resolve_as_yaml_1_1(text: str, value: Any) -> None:
    assert scalar(text) == value and type(scalar(text)) is type(value)


KEYS = st.from_regex(r"[a-z][a-z_]{0,11}", fullmatch=True).filter(
    lambda k: k not in ("yes", "no", "on", "off", "true", "false", "null", "y", "n")
)
LEAVES = st.one_of(st.integers(-(10**9), 10**9), st.booleans(), KEYS)
TREES = st.recursive(
    st.dictionaries(KEYS, LEAVES, min_size=1, max_size=4),
    lambda inner: st.dictionaries(KEYS, st.one_of(LEAVES, inner), min_size=1, max_size=4),
    max_leaves=12,
)


def _block(data: dict[str, Any], indent: int = 0) -> str:
    """`data` in YAML's block style, written independently of the reader."""
    out = ""
    for key, value in data.items():
        if isinstance(value, dict):
            out += " " * indent + f"{key}:\n" + _block(value, indent + 2)
        else:
            text = (
                {True: "true", False: "false"}.get(value, str(value))
                if isinstance(value, bool)
                else str(value)
            )
            out += " " * indent + f"{key}: {text}\n"
    return out


@given(TREES)
def test_a_block_mapping_reads_back_as_written(data: dict[str, Any]) -> None:
    assert read_mapping(_block(data)) == data
