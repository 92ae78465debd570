"""Bad input that a sixth campaign (benchmarks/fuzz_cases6.py: combos6, cards6, configs6, spec6,
files6, outputs6, env6) found: one test per class of finding, each case named for it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from test_bad_input import _one_line_error
from test_bad_input_campaign4 import SPEC as SPEC4
from test_bad_input_campaign4 import _card_config

from capcliff.catalog.architecture import architecture_from_config
from capcliff.cli import main
from capcliff.errors import CatalogError
from capcliff.files import is_model_file, jsonl_lines
from capcliff.sim.traffic.sessions import parse_session_trace

ROOT = Path(__file__).resolve().parent.parent
SMALL = ["--isl", "100", "--osl", "100", "--num-requests", "20"]
SWEEP = ["sweep", "llama-3.1-8b", *SMALL, "--concurrency", "4"]
PLAN = ["plan", "llama-3.1-8b", "--jobs", "1", *SMALL, "--rate", "2", "--slo-ttft", "2"]
# campaign 4's spec, with vLLM named for the keys the tests add beside it
SPEC = SPEC4.replace('layout = "tp1"', 'layout = "tp1"\nengine = "vllm"')


def _spec(tmp_path: Path, text: str) -> str:
    path = tmp_path / "s.toml"
    path.write_text(text)
    return str(path)


# A terminal or pipe whose encoding lacks the tables' box characters failed every command with
# UnicodeEncodeError after the work was done (exit 4 and a traceback).


@pytest.mark.parametrize("env", [{"PYTHONIOENCODING": "ascii"},
                                 {"LC_ALL": "C", "LANG": "C", "PYTHONUTF8": "0"}],
                         ids=["pythonioencoding-ascii", "c-locale"])  # fmt: skip
def test_an_ascii_stdout_prints_the_table_without_a_traceback(env: dict[str, str]) -> None:
    run = subprocess.run(
        [sys.executable, "-m", "capcliff", "memory", "llama-3.1-8b", "--gpus", "1"],
        env={**os.environ, "PYTHONPATH": str(ROOT), **env}, capture_output=True, timeout=120,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr.decode(errors="replace")
    assert b"Traceback" not in run.stderr
    assert b"weights" in run.stdout


# Two outputs naming one file through a symlinked folder or a link to the other: the second
# write replaced the first (each passed as its own path).


@pytest.mark.parametrize("shape", ["symlinked-folder", "link-to-the-other"])
def test_two_outputs_that_are_one_file_are_refused(
    shape: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    spec = _spec(tmp_path, SPEC)
    (tmp_path / "x").mkdir()
    if shape == "symlinked-folder":
        (tmp_path / "y").symlink_to("x")
        junit, markdown = tmp_path / "x" / "o", tmp_path / "y" / "o"
    else:
        (tmp_path / "x" / "o").symlink_to("../o")
        junit, markdown = tmp_path / "x" / "o", tmp_path / "o"
    line = _one_line_error(["check", spec, "--junit", str(junit), "--markdown", str(markdown)],
                           capsys)  # fmt: skip
    assert line == f"error: --markdown: {markdown} is also the path of --junit; give each its own"


# A model folder's tokenizer, processor and template files were not model files: a report
# written with --force replaced them. Campaign 9: nor were a checkpoint's TensorFlow, Flax and
# NumPy weights, SentencePiece models, AutoGPTQ's and PEFT's configs and Mistral's tokenizers
# (`check --junit m/tf_model.h5 --force` replaced the weights with JUnit XML).


@pytest.mark.parametrize(
    "name",
    ["tokenizer.model", "merges.txt", "vocab.json", "chat_template.jinja", "o200k.tiktoken",
     "tf_model.h5", "flax_model.msgpack", "model.npz", "sentencepiece.bpe.model",
     "quantize_config.json", "adapter_config.json", "tekken.json", "tokenizer.model.v3"],
)  # fmt: skip
def test_tokenizer_and_template_files_are_model_files(
    name: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert is_model_file(Path(name))
    target = tmp_path / "m" / name
    target.parent.mkdir()
    target.write_text("keep")
    line = _one_line_error(["check", _spec(tmp_path, SPEC), "--junit", str(target), "--force"],
                           capsys)  # fmt: skip
    assert "is a model checkpoint's file name" in line
    assert target.read_text() == "keep"


# HF configs: null is unset (transformers), a text_config that is not an object, a MoE model
# whose sparse-layer rule leaves no MoE layer, a float32 checkpoint.


def test_null_kv_heads_are_the_attention_heads() -> None:
    # transformers' LlamaConfig: num_key_value_heads None -> num_attention_heads (32 here)
    arch = architecture_from_config(
        {**_card_config("llama-3.1-8b"), "num_key_value_heads": None}, path="c"
    )
    assert arch.num_kv_heads == 32


@pytest.mark.parametrize("text", [[1], "llama", 5], ids=["list", "string", "number"])
def test_a_text_config_that_is_not_an_object_is_named(text: object) -> None:
    config = {"architectures": ["LlavaForConditionalGeneration"], "model_type": "llava",
              "text_config": text}  # fmt: skip
    with pytest.raises(CatalogError, match=r"^c: text_config: must be an object"):
        architecture_from_config(config, path="c")


@pytest.mark.parametrize(
    ("model", "changes", "field"),
    [
        ("qwen3-30b-a3b", {"decoder_sparse_step": 100}, "num_experts: 128 experts"),
        ("qwen3-30b-a3b", {"mlp_only_layers": list(range(48))}, "num_experts: 128 experts"),
        ("deepseek-r1", {"first_k_dense_replace": 61}, "n_routed_experts: 256 experts"),
    ],
    ids=["sparse-step-past-layers", "every-layer-dense", "first-dense-past-layers"],
)
def test_a_moe_config_without_a_moe_layer_is_refused(
    model: str, changes: dict[str, object], field: str
) -> None:
    with pytest.raises(CatalogError, match=f"{field} but .* leave no MoE layer"):
        architecture_from_config({**_card_config(model), **changes}, path="c")


def test_a_float32_checkpoint_is_sized_at_two_bytes_a_weight() -> None:
    # vLLM's dtype "auto" serves float32 weights in 16 bits (float16, bfloat16 from 0.10.1)
    config = _card_config("llama-3.1-8b")
    f32 = architecture_from_config({**config, "torch_dtype": "float32"}, path="c")
    bf16 = architecture_from_config(config, path="c")
    assert f32.linear_dtype == bf16.linear_dtype
    assert f32.activation_dtype == bf16.activation_dtype


# Traces: JSON Lines split at U+2028 and U+0085 too (str.splitlines), so a session_id holding
# one was cut in two; a trace with arrival times on some rows only sent the others at 0 s.


def test_a_jsonl_string_may_hold_a_line_separator() -> None:
    rows = [
        {"session_id": "a\u2028b", "turn": 0, "input_tokens": 50, "output_tokens": 20,
         "arrival_s": 0.0},
        {"session_id": "a\u2028b", "turn": 1, "input_tokens": 30, "output_tokens": 20,
         "think_s": 1.0},
    ]  # fmt: skip
    text = "\n".join(json.dumps(r, ensure_ascii=False) for r in rows) + "\r\n"
    lines = jsonl_lines(text)
    assert len(lines) == 2
    rows = parse_session_trace(lines)
    assert [(r.session_id, r.turn) for r in rows] == [("a\u2028b", 0), ("a\u2028b", 1)]


def test_a_trace_with_some_arrivals_is_refused_by_sweep(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    trace = tmp_path / "t.jsonl"
    trace.write_text('{"arrival_s": 0.5, "input_tokens": 50, "output_tokens": 20}\n'
                     '{"input_tokens": 50, "output_tokens": 20}\n')  # fmt: skip
    line = _one_line_error(["sweep", "llama-3.1-8b", "--workload", str(trace), "--concurrency",
                            "4"], capsys)  # fmt: skip
    assert line == (
        "error: trace line 2: arrival_s: missing while line 1 has one; give every row an "
        "arrival time, or none"
    )


# Settings a dense model or an aggregated deployment does not read, dropped unsaid.


@pytest.mark.parametrize(
    ("args", "field"),
    [
        ([*SWEEP, "--engine", "trtllm", "--moe-backend", "CUTLASS"], "moe_backend"),
        ([*SWEEP, "--all2all-backend", "deepep_low_latency"], "all2all_backend"),
        (["memory", "llama-3.1-8b", "--gpus", "1", "--all2all-backend",
          "deepep_high_throughput"], "all2all_backend"),
    ],
    ids=["moe-backend-sweep", "all2all-sweep", "all2all-memory"],
)  # fmt: skip
def test_moe_settings_on_a_dense_model_are_refused(
    args: list[str], field: str, capsys: pytest.CaptureFixture[str]
) -> None:
    line = _one_line_error(args, capsys)
    assert line == (
        f"error: {field}: picks the experts' kernels or dispatch; llama-3.1-8b is dense (no "
        "experts); leave it unset"
    )


@pytest.mark.parametrize("command", ["sweep", "plan", "check"])
def test_a_kv_transfer_cost_without_disagg_is_refused(
    command: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = {
        "sweep": [*SWEEP, "--kv-transfer-overhead-ms", "5"],
        "plan": [*PLAN, "--kv-transfer-overhead-ms", "5"],
        "check": ["check", _spec(tmp_path, SPEC.replace(
            'engine = "vllm"', 'engine = "vllm"\nkv_transfer_overhead_ms = 5.0'))],
    }[command]  # fmt: skip
    line = _one_line_error(args, capsys)
    assert "kv_transfer_overhead_ms: the prefill-to-decode KV hand-off's cost; it applies with " \
           "disagg only" in line  # fmt: skip


def test_a_kv_transfer_cost_with_disagg_is_taken(capsys: pytest.CaptureFixture[str]) -> None:
    args = [*SWEEP, "--disagg", "1p:tp1,1d:tp1", "--kv-transfer-overhead-ms", "5"]
    assert main([*args, "--format", "json"]) == 0
    capsys.readouterr()


# A path given where a catalog id belongs joined onto the catalog folder: `--gpu /tmp/x` read
# /tmp/x.toml as a catalog entry unchecked by the catalog tests; `--model card.toml` answered
# "(json): Expecting value".


@pytest.mark.parametrize("given", ["{d}/g", "{d}/g.toml", "g.toml", "../hardware/h100-sxm"])
def test_a_gpu_path_is_refused_for_an_id(
    given: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "g.toml").write_text((ROOT / "hardware" / "h100-sxm.toml").read_text())
    name = given.replace("{d}", str(tmp_path))
    line = _one_line_error([*SWEEP, "--gpus", "1", "--gpu", name], capsys)
    assert line.startswith(f"error: gpu: {name!r} is a path; give a hardware id")


def test_a_model_card_path_is_refused_with_what_is_read(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    card = tmp_path / "c.toml"
    card.write_text((ROOT / "model_cards" / "llama-3.1-8b.toml").read_text())
    line = _one_line_error(["memory", str(card), "--gpus", "1"], capsys)
    assert line.endswith(
        "(file): a model card is read from the catalog only; give a catalog id (see capcliff "
        "models), an HF config.json or a model folder"
    )
    # the stem joined onto the catalog folder too
    line = _one_line_error(["memory", str(tmp_path / "c"), "--gpus", "1"], capsys)
    assert line.endswith("(file): no such config.json")


# A spec's byte count as a TOML integer had no bound (2**63 bytes of device memory was taken;
# the same figure as text was refused past 1 EiB).


@pytest.mark.parametrize("key", ["gpu_total_memory", "swap_space", "kv_cache_memory"])
def test_a_byte_count_integer_past_an_exbibyte_is_refused(
    key: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    spec = SPEC.replace('engine = "vllm"', f'engine = "vllm"\n{key} = {2**63}')
    line = _one_line_error(["check", _spec(tmp_path, spec)], capsys)
    assert line.endswith(
        f"scenario[0].{key}: 9.22e+18 bytes is past 1.15e+18 (1 EiB), beyond any device"
    )


# A scenario name with a control character: JUnit XML cannot hold NUL (the report was no XML),
# and a newline broke the text's one line per scenario.


@pytest.mark.parametrize("name", ["s\\u0000x", "s\\nx", "s\\u001bx", "s\\tx"])
def test_a_scenario_name_with_a_control_character_is_refused(
    name: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    spec = SPEC.replace('name = "s"', f'name = "{name}"')
    line = _one_line_error(["check", _spec(tmp_path, spec)], capsys)
    code = {"s\\u0000x": "0000", "s\\nx": "000A", "s\\u001bx": "001B", "s\\tx": "0009"}[name]
    assert line.endswith(
        f"scenario[0].name: must be printable text; got the control character U+{code}"
    )


# An output-length histogram whose header names count before tokens: the columns are read by
# position, so each count was simulated as a length and each length as a count.


def test_a_histogram_header_of_count_then_tokens_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    hist = tmp_path / "h.csv"
    hist.write_text("count,tokens\n5,100\n")
    args = ["sweep", "llama-3.1-8b", "--isl", "100", "--osl", f"hist:{hist}",
            "--num-requests", "20", "--concurrency", "4"]  # fmt: skip
    line = _one_line_error(args, capsys)
    assert line == (
        f"error: osl: {hist} line 1: the header names count before tokens; the columns are "
        "read by position: write tokens,count"
    )


# A spec's unreadable histogram was said twice: the reader's line, then "the histogram file
# was not read" from the validation that followed.


@pytest.mark.parametrize(
    "osl", ["hist:s.toml", "hist:nope.csv"], ids=["not-a-histogram", "missing"]
)
def test_a_specs_unreadable_histogram_is_said_once(
    osl: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    spec = _spec(tmp_path, SPEC.replace("osl = 100", f'osl = "{osl}"'))
    line = _one_line_error(["check", spec], capsys)
    assert line.startswith(f"error: {spec}: scenario[0].workload.osl: ")
    assert "was not read" not in line


# "-" as an output: the usual name of standard output wrote a file named "-".


@pytest.mark.parametrize("flag", ["--junit", "--markdown", "--write-baseline"])
def test_a_dash_output_is_refused(
    flag: str, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    line = _one_line_error(["check", _spec(tmp_path, SPEC), flag, "-"], capsys)
    assert line == f"error: {flag}: '-' is standard output by custom; give a file name"
    assert not (tmp_path / "-").exists()


# A ModelOpt checkpoint of release 0.29 or before keeps its format in hf_quant_config.json, not
# config.json; vLLM reads it from there, and capcliff sized such a folder at bf16.

MODELOPT_NVFP4 = {"producer": {"name": "modelopt", "version": "0.27.0"},
                  "quantization": {"quant_algo": "NVFP4", "group_size": 16,
                                   "exclude_modules": ["lm_head"]}}  # fmt: skip


def test_a_modelopt_folders_hf_quant_config_is_its_format(tmp_path: Path) -> None:
    from capcliff.catalog.catalogs import model_from_path

    config = _card_config("llama-3.1-8b")
    side, inline = tmp_path / "side", tmp_path / "inline"
    for folder in (side, inline):
        folder.mkdir()
    (side / "config.json").write_text(json.dumps(config))
    (side / "hf_quant_config.json").write_text(json.dumps(MODELOPT_NVFP4))
    (inline / "config.json").write_text(
        json.dumps({**config, "quantization_config": MODELOPT_NVFP4})
    )
    beside, within = model_from_path(side).arch, model_from_path(inline).arch
    assert beside.linear_dtype.value == "nvfp4"
    assert beside == within


def test_a_bad_hf_quant_config_is_named_by_its_path(tmp_path: Path) -> None:
    from capcliff.catalog.catalogs import model_from_path

    (tmp_path / "config.json").write_text(json.dumps(_card_config("llama-3.1-8b")))
    (tmp_path / "hf_quant_config.json").write_text('{"quantization": {"quant_algo": "INT3"}}')
    with pytest.raises(CatalogError, match=r"hf_quant_config.json: quantization_config.quant_algo"):
        model_from_path(tmp_path)


def test_a_compression_config_key_is_the_quantization_config() -> None:
    # llm-compressor's older checkpoints name the key compression_config (vLLM reads either)
    w4 = {"quant_method": "compressed-tensors",
          "config_groups": {"g": {"weights": {"num_bits": 4, "type": "int", "strategy": "group",
                                              "group_size": 128}, "targets": ["Linear"]}},
          "ignore": ["lm_head"]}  # fmt: skip
    config = _card_config("llama-3.1-8b")
    old = architecture_from_config({**config, "compression_config": w4}, path="c")
    new = architecture_from_config({**config, "quantization_config": w4}, path="c")
    assert old.quantization is not None
    assert old == new


# A serve command's `--dtype float32` was skipped as inert: 4-byte weights sized as 16-bit ones.


@pytest.mark.parametrize(
    "command",
    ["vllm serve meta-llama/Llama-3.1-8B --dtype float32",
     "python -m sglang.launch_server --model-path meta-llama/Llama-3.1-8B --dtype float"],
    ids=["vllm", "sglang"],
)  # fmt: skip
def test_a_float32_serve_command_is_refused(
    command: str, capsys: pytest.CaptureFixture[str]
) -> None:
    line = _one_line_error([*SWEEP, "--serve-command", command], capsys)
    assert "serve_command: --dtype float" in line
    assert line.endswith("capcliff sizes 16-bit weights (auto, bfloat16, float16) or a "
                         "quantization; float32 serving is not modelled")  # fmt: skip


def test_a_sixteen_bit_serve_dtype_is_taken(capsys: pytest.CaptureFixture[str]) -> None:
    command = "vllm serve meta-llama/Llama-3.1-8B --dtype half"
    assert main([*SWEEP, "--serve-command", command, "--format", "json"]) == 0
    capsys.readouterr()
