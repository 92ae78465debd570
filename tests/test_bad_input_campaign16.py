"""Bad input that a sixteenth campaign (benchmarks/fuzz_cases16.py) found on the file surfaces,
and the valid files it found refused or misread. Each bad input exits 2 with one `error: ...`
line naming the field and what is valid; valid input is read by its tool's own rule.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from test_bad_input import _one_line_error
from test_bad_input_campaign12 import LLAMA_70B, _weights_bytes

from capcliff.calibrate.benchmarks import DeploymentFilter, read_benchmark_file
from capcliff.cli import main

LLAMA_REPO = "meta-llama/Llama-3.1-8B-Instruct"
CAL = ["--model", "llama-3.1-8b", "--gpu", "h100-sxm"]


def _sglang_row(concurrency: int, throughput: float, tpot_ms: float, **extra: object) -> dict:
    """A row of SGLang bench_serving's --output-file: 200 requests, 300 input and 128 output
    tokens each on average."""
    return {
        "backend": "sglang", "max_concurrency": concurrency, "random_input_len": 1024,
        "random_output_len": 1024, "random_range_ratio": 0.0, "completed": 200,
        "total_input_tokens": 60_000, "total_output_tokens": 25_600,
        "output_throughput": throughput, "mean_tpot_ms": tpot_ms, "mean_ttft_ms": 150.0, **extra,
    }  # fmt: skip


def _points(tmp_path: Path, rows: list[dict]) -> list:
    path = tmp_path / "r.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return read_benchmark_file(path, DeploymentFilter(hf_repo=LLAMA_REPO))


@pytest.mark.parametrize("dataset", ["sharegpt", "generated-shared-prefix", "mmmu"])
def test_sglang_run_of_another_dataset_is_fitted_on_its_mean_lengths(
    tmp_path: Path, dataset: str
) -> None:
    # bench_serving writes random_input_len 1024 (its default) whatever the dataset; the run's
    # lengths are its totals over its finished requests: 60,000 / 200 = 300 and 25,600 / 200 = 128,
    # each request's length as it came (no random range)
    (point,) = _points(tmp_path, [_sglang_row(8, 500.0, 14.0, dataset_name=dataset)])
    assert (point.input_len, point.output_len, point.range_ratio) == (300, 128, 1.0)


@pytest.mark.parametrize("dataset", ["random", "random-ids", None])
def test_sglang_random_run_keeps_its_asked_lengths(tmp_path: Path, dataset: str | None) -> None:
    # totals as the asked lengths give them: uniform in [512, 1,024], 768 a request on average
    # (200 x 768 = 153,600); totals that contradict the asked lengths are the run's
    # (test_bad_input_campaign29)
    row = _sglang_row(
        8, 500.0, 14.0, random_range_ratio=0.5, total_input_tokens=153_600,
        total_output_tokens=153_600,
    )  # fmt: skip
    if dataset is not None:
        row["dataset_name"] = dataset
    (point,) = _points(tmp_path, [row])
    assert (point.input_len, point.output_len, point.range_ratio) == (1024, 1024, 0.5)


@pytest.mark.parametrize("value", [7, ["random"], None])
def test_sglang_dataset_name_of_another_type_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], value: object
) -> None:
    if value is None:  # JSON null: no dataset named, as older rows
        assert len(_points(tmp_path, [_sglang_row(8, 500.0, 14.0, dataset_name=None)])) == 1
        return
    path = tmp_path / "r.jsonl"
    path.write_text(json.dumps(_sglang_row(8, 500.0, 14.0, dataset_name=value)) + "\n")
    line = _one_line_error(["calibrate", str(path), *CAL], capsys)
    assert "dataset_name: must be the bench tool's dataset name" in line


def _vllm_run(**extra: object) -> dict:
    return {
        "backend": "vllm", "model_id": LLAMA_REPO, "num_prompts": 200, "request_rate": "inf",
        "max_concurrency": 32, "completed": 200, "total_input_tokens": 204_800,
        "total_output_tokens": 25_600, "output_throughput": 1200.0, "mean_tpot_ms": 24.0,
        "mean_ttft_ms": 150.0, **extra,
    }  # fmt: skip


def test_vllm_ramp_up_run_is_refused_as_paced(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # vllm bench serve --ramp-up-strategy linear writes request_rate "inf" beside the ramp
    path = tmp_path / "r.json"
    run = _vllm_run(ramp_up_strategy="linear", ramp_up_start_rps=1, ramp_up_end_rps=10)
    path.write_text(json.dumps(run))
    line = _one_line_error(["calibrate", str(path), *CAL], capsys)
    assert "ramp_up_strategy: 'linear'" in line


def test_vllm_run_with_ramp_up_null_and_detailed_arrays_is_read(tmp_path: Path) -> None:
    run = _vllm_run(ramp_up_strategy=None, input_lens=[1024] * 200, ttfts=[0.15] * 200)
    path = tmp_path / "r.json"
    path.write_text(json.dumps(run))
    (point,) = read_benchmark_file(path, DeploymentFilter(hf_repo=LLAMA_REPO))
    # 204,800 / 200 = 1,024 input and 25,600 / 200 = 128 output tokens per request
    assert (point.concurrency, point.input_len, point.output_len) == (32, 1024, 128)


GENAI_PERF = {
    "time_to_first_token": {"unit": "ms", "avg": 150.0},
    "inter_token_latency": {"unit": "ms", "avg": 24.0},
    "output_token_throughput": {"unit": "tokens/sec", "avg": 1200.0},
    "input_config": {"concurrency": 32},
}
VLLM_THROUGHPUT = {"elapsed_time": 40.0, "num_requests": 1000, "tokens_per_second": 28800.0}


@pytest.mark.parametrize("result", [GENAI_PERF, VLLM_THROUGHPUT, {"results": [{}]}])
def test_result_of_another_tool_says_what_is_read(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], result: dict
) -> None:
    path = tmp_path / "r.json"
    path.write_text(json.dumps(result))
    line = _one_line_error(["calibrate", str(path), *CAL], capsys)
    # the line names what is read (and, since campaign 29, the tool where its keys say which)
    assert "completed: missing" in line
    assert "`vllm bench serve --save-result`" in line


# --- config.json of families capcliff does not size -------------------------------------------

STARCODER2_15B = {
    "architectures": ["Starcoder2ForCausalLM"], "model_type": "starcoder2", "hidden_size": 6144,
    "intermediate_size": 24576, "num_attention_heads": 48, "num_key_value_heads": 4,
    "num_hidden_layers": 40, "vocab_size": 49152, "max_position_embeddings": 16384,
    "tie_word_embeddings": False,
}  # fmt: skip


def _memory(tmp_path: Path, config: dict, *extra: str) -> list[str]:
    folder = tmp_path / "m"
    folder.mkdir(exist_ok=True)
    (folder / "config.json").write_text(json.dumps(config))
    return ["memory", str(folder), "--gpus", "1", "--gpu", "h200-sxm", *extra]


@pytest.mark.parametrize(
    ("named", "family"),
    [({"model_type": "starcoder2"}, "starcoder2"), ({"model_type": "gpt_neox"}, "gpt_neox"),
     ({"model_type": "phi"}, "phi"), ({"model_type": "nemotron"}, "nemotron"),
     ({"architectures": ["GPTNeoXForCausalLM"]}, "gpt_neox"),
     ({"architectures": ["FalconForCausalLM"]}, "falcon")],
)  # fmt: skip
def test_family_with_an_ungated_mlp_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], named: dict, family: str
) -> None:
    # sized as a gated MLP, StarCoder2-15B read 22.0B parameters (it has 16.0B)
    config = {k: v for k, v in STARCODER2_15B.items() if k not in ("model_type", "architectures")}
    line = _one_line_error(_memory(tmp_path, {**config, **named}), capsys)
    assert f"model_type: {family}: its MLP is two matrices with no gate" in line


def test_encoder_decoder_config_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = {**STARCODER2_15B, "model_type": "llama", "architectures": ["LlamaForCausalLM"]}
    line = _one_line_error(_memory(tmp_path, {**config, "is_encoder_decoder": True}), capsys)
    assert "is_encoder_decoder: true: an encoder-decoder model" in line


# google/gemma-7b's config.json, which sets no tie_word_embeddings (GemmaConfig: True)
GEMMA_7B = {
    "architectures": ["GemmaForCausalLM"], "model_type": "gemma", "hidden_size": 3072,
    "intermediate_size": 24576, "num_attention_heads": 16, "num_key_value_heads": 16,
    "head_dim": 256, "num_hidden_layers": 28, "vocab_size": 256000,
    "max_position_embeddings": 8192, "torch_dtype": "bfloat16",
}  # fmt: skip


def test_gemma_1_ties_its_embeddings_by_default(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(_memory(tmp_path, GEMMA_7B, "--format", "json")) == 0
    report = json.loads(capsys.readouterr().out)
    # one tied 256,000 x 3,072 table: 786,432,000; per layer q, k, v, o 3,072 x 4,096 each
    # (50,331,648) and a gated MLP 3 x 3,072 x 24,576 (226,492,416); 28 layers; norms
    # (2 x 28 + 1) x 3,072 = 175,104: 8,537,680,896 (Google's 8.54B)
    assert report["params_total"] == 786_432_000 + 28 * (50_331_648 + 226_492_416) + 175_104


# --- compressed-tensors KV cache schemes --------------------------------------------------------

CT_W4A16 = {
    "quant_method": "compressed-tensors", "format": "pack-quantized", "ignore": ["lm_head"],
    "config_groups": {"group_0": {"targets": ["Linear"], "weights": {
        "num_bits": 4, "type": "int", "strategy": "group", "group_size": 128, "symmetric": True}}},
}  # fmt: skip


@pytest.mark.parametrize(
    ("scheme", "message"),
    [
        ([8], "kv_cache_scheme: must be an object or null"),
        ({"num_bits": 4, "type": "int", "strategy": "tensor"}, "kv_cache_scheme.num_bits: 4"),
        ({"num_bits": 8, "type": "float", "strategy": "channel"}, "kv_cache_scheme.strategy"),
    ],
    ids=["list", "int4", "per-channel"],
)
def test_kv_cache_scheme_vllm_does_not_load_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], scheme: object, message: str
) -> None:
    config = {**LLAMA_70B, "quantization_config": {**CT_W4A16, "kv_cache_scheme": scheme}}
    assert message in _one_line_error(_memory(tmp_path, config), capsys)


def test_fp8_kv_cache_scheme_leaves_the_weights_as_they_were(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    scheme = {"num_bits": 8, "type": "float", "strategy": "tensor", "symmetric": True}
    plain = _weights_bytes(tmp_path, CT_W4A16, capsys)
    assert _weights_bytes(tmp_path, {**CT_W4A16, "kv_cache_scheme": scheme}, capsys) == plain


# --- FP8 activation schemes (vLLM's Fp8Config) ------------------------------------------------

QWEN3_FP8 = {"quant_method": "fp8", "activation_scheme": "dynamic", "fmt": "e4m3",
             "weight_block_size": [128, 128]}  # fmt: skip


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"activation_scheme": "static"}, "activation_scheme: static: block-wise FP8 weights"),
        ({"activation_scheme": "per-token"}, "activation_scheme: must be static or dynamic"),
        ({"activation_scheme": ["dynamic"]}, "activation_scheme: must be static or dynamic"),
    ],
    ids=["static-with-blocks", "unknown", "list"],
)
def test_fp8_activation_scheme_vllm_refuses_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], changes: dict, message: str
) -> None:
    config = {**LLAMA_70B, "quantization_config": {**QWEN3_FP8, **changes}}
    assert message in _one_line_error(_memory(tmp_path, config), capsys)


def test_fp8_static_per_tensor_is_sized_as_dynamic(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # the activation scheme says how inputs are scaled, not how weights are stored
    static = {"quant_method": "fp8", "activation_scheme": "static"}
    dynamic = {"quant_method": "fp8", "activation_scheme": "dynamic"}
    assert _weights_bytes(tmp_path, static, capsys) == _weights_bytes(tmp_path, dynamic, capsys)


@pytest.mark.parametrize(
    ("config", "field"),
    [
        ({"architectures": ["QWenLMHeadModel"], "model_type": "qwen"}, "model_type: qwen:"),
        ({"model_type": "mllama", "text_config": {**STARCODER2_15B, "model_type": "llama",
          "cross_attention_layers": [3, 8]}}, "text_config.cross_attention_layers: marks"),
    ],
    ids=["qwen-1", "mllama-text"],
)  # fmt: skip
def test_layers_sized_otherwise_are_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], config: dict, field: str
) -> None:
    base = {k: v for k, v in STARCODER2_15B.items() if k not in ("model_type", "architectures")}
    assert field in _one_line_error(_memory(tmp_path, {**base, **config}), capsys)


@pytest.mark.parametrize("name", ["run.txt", "results", "bench.log"])
def test_vllm_results_under_any_file_name_are_read_as_results(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str
) -> None:
    # vllm bench serve --result-filename takes any name; the text, not the suffix, says JSON
    path = tmp_path / name
    path.write_text("\ufeff" + json.dumps(_vllm_run()) + "\n")
    assert main(["calibrate", str(path), *CAL]) == 0
    assert f"| {name}:1 | 32 | 1024/128 |" in capsys.readouterr().out


# --- the context vLLM derives from a RoPE scaling (config/model.py _get_and_verify_max_len) ---

# Qwen/QwQ-32B's config.json with the YaRN table its README gives for long inputs
QWQ_YARN = {
    "architectures": ["Qwen2ForCausalLM"], "model_type": "qwen2", "hidden_size": 5120,
    "intermediate_size": 27648, "num_attention_heads": 40, "num_key_value_heads": 8,
    "num_hidden_layers": 64, "vocab_size": 152064, "max_position_embeddings": 40960,
    "tie_word_embeddings": False, "torch_dtype": "bfloat16",
    "rope_scaling": {"factor": 4.0, "original_max_position_embeddings": 32768, "type": "yarn"},
}  # fmt: skip


@pytest.mark.parametrize(
    ("scaling", "context"),
    [
        (QWQ_YARN["rope_scaling"], "131,072"),  # YaRN: 32,768 original positions x 4
        ({"rope_type": "dynamic", "factor": 2.0}, "81,920"),  # 40,960 x 2
        ({"rope_type": "llama3", "factor": 8.0, "original_max_position_embeddings": 8192},
         "40,960"),  # llama3 and longrope: already in max_position_embeddings
        ({"rope_type": "default"}, "40,960"),  # no factor: 1
        (None, "40,960"),
    ],
    ids=["yarn", "dynamic", "llama3", "default", "none"],
)  # fmt: skip
def test_model_context_is_vllms_derived_length(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], scaling: object, context: str
) -> None:
    config = {**QWQ_YARN, "rope_scaling": scaling}
    assert main([*_memory(tmp_path, config)[:2], "--gpus", "2", "--gpu", "h200-sxm"]) == 0
    assert f"max_model_len {context})" in capsys.readouterr().out


def test_yarn_request_past_the_positions_but_within_the_scaled_context_is_planned(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # 100,000 + 1,000 tokens: past 40,960 positions, within YaRN's 131,072
    folder = _memory(tmp_path, QWQ_YARN)[1]
    argv = ["sweep", folder, "--gpus", "2", "--gpu", "h200-sxm", "--isl", "100000", "--osl",
            "1000", "--num-requests", "2", "--concurrency", "1"]  # fmt: skip
    assert main(argv) == 0, capsys.readouterr().err


@pytest.mark.parametrize(
    ("scaling", "message"),
    [
        ({"type": "yarn", "factor": 4.0}, "rope_scaling.original_max_position_embeddings: missing"),
        ({"type": "yarn", "factor": None, "original_max_position_embeddings": 32768},
         "rope_scaling.factor: must be a number in (0, 1024]"),
        ({"type": "linear", "factor": "4"}, "rope_scaling.factor: must be a number"),
        ({"type": "linear", "factor": 0.0}, "rope_scaling.factor: must be a number"),
        ([4.0], "rope_scaling: must be an object or null"),
    ],
    ids=["yarn-no-original", "factor-null", "factor-string", "factor-zero", "list"],
)  # fmt: skip
def test_rope_scaling_vllm_cannot_read_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], scaling: object, message: str
) -> None:
    line = _one_line_error(_memory(tmp_path, {**QWQ_YARN, "rope_scaling": scaling}), capsys)
    assert message in line


# --- a CSV's hardware cell names the GPU as a whole word ----------------------------------------

HEAD = "row_id,hardware,concurrency,input_len,output_len,output_throughput_tok_s,mean_tpot_ms\n"


@pytest.mark.parametrize(
    ("hardware", "kept"),
    [
        ("8x NVIDIA H200 SXM5 141GB", True),
        ("8xH200", True),
        ("8x NVIDIA GH200 480GB", False),  # Grace Hopper: an H100-class GPU, not an H200
        ("8x NVIDIA H200 NVL", False),  # the PCIe card, not the SXM module
        ("8x NVIDIA H100 SXM5 80GB", False),
    ],
)
def test_csv_rows_of_another_gpu_named_alike_are_left_out(
    tmp_path: Path, hardware: str, kept: bool
) -> None:
    path = tmp_path / "b.csv"
    rows = f"a,8x NVIDIA H200 SXM5,8,1024,128,500,14\nb,{hardware},32,1024,128,1200,24\n"
    path.write_text(HEAD + rows)
    points = read_benchmark_file(path, DeploymentFilter(gpu="h200-sxm"))
    assert [p.row_id for p in points] == (["a", "b"] if kept else ["a"])
