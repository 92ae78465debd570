"""Bad input that a twelfth campaign (benchmarks/fuzz_cases12.py) found: quantization_config
fields that change which layers are quantised or how they are stored, a run file whose reading
grew with the square of its length, and a log of many starts echoed whole. Each is now sized by
the checkpoint's own rule or refused with one line naming the field.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from test_bad_input import _one_line_error

from capcliff.catalog.quantization import quantization_from_config
from capcliff.cli import main
from capcliff.errors import CatalogError

ROOT = Path(__file__).resolve().parent.parent
# meta-llama/Llama-3.1-70B-Instruct config.json (the fields that size it)
LLAMA_70B = {
    "architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 8192,
    "intermediate_size": 28672, "num_attention_heads": 64, "num_hidden_layers": 80,
    "num_key_value_heads": 8, "vocab_size": 128256, "max_position_embeddings": 131072,
    "tie_word_embeddings": False, "torch_dtype": "bfloat16",
}  # fmt: skip
GPTQ4 = {"quant_method": "gptq", "bits": 4, "group_size": 128, "desc_act": False, "sym": True}
CT_FP8 = {
    "quant_method": "compressed-tensors", "format": "float-quantized", "ignore": ["lm_head"],
    "config_groups": {"group_0": {"targets": ["Linear"], "weights": {
        "num_bits": 8, "type": "float", "symmetric": True, "strategy": "channel"}}},
}  # fmt: skip


def _memory_json(tmp_path: Path, quant: object, capsys: pytest.CaptureFixture[str]) -> dict:
    """`capcliff memory --format json` of Llama-3.1-70B with `quant` as its quantization_config."""
    folder = tmp_path / "m"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "config.json").write_text(json.dumps({**LLAMA_70B, "quantization_config": quant}))
    code = main(["memory", str(folder), "--gpus", "8", "--gpu", "h200-sxm", "--format", "json"])
    out = capsys.readouterr().out
    assert code == 0, out
    return dict(json.loads(out))


def _weights_bytes(tmp_path: Path, quant: object, capsys: pytest.CaptureFixture[str]) -> int:
    return int(_memory_json(tmp_path, quant, capsys)["weights_bytes_total"])


def test_gptq_leaves_a_module_its_block_list_omits_in_bf16(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    quant = {**GPTQ4, "modules_in_block_to_quantize": [["self_attn.q_proj"]]}
    # 70,553,706,496 parameters x 2 bytes = 141,107,412,992 in bf16; only the 80 q_proj
    # (8192 x 8192 = 67,108,864 each) are int4 g128 with zero points: 0.5 + (16 + 4) / 8 / 128
    # = 0.51953125 bytes, so 80 x 67,108,864 x (2 - 0.51953125) = 7,948,206,080 bytes fewer
    assert _weights_bytes(tmp_path, quant, capsys) == 141_107_412_992 - 7_948_206_080


def test_gptq_block_list_naming_every_linear_sizes_as_no_list(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    every = [
        ["self_attn.k_proj", "self_attn.v_proj", "self_attn.q_proj"], ["self_attn.o_proj"],
        ["mlp.gate_proj", "mlp.up_proj"], ["mlp.down_proj"],
    ]  # fmt: skip
    listed = _weights_bytes(tmp_path, {**GPTQ4, "modules_in_block_to_quantize": every}, capsys)
    assert listed == _weights_bytes(tmp_path, GPTQ4, capsys)


def test_gptq_block_list_names_an_expert_by_its_index() -> None:
    quant = quantization_from_config(
        {**GPTQ4, "modules_in_block_to_quantize": [["mlp.experts.0.up_proj"]]}, path="c"
    )
    assert quant.format_of("model.layers.3.mlp.experts", expert=True) is not None
    assert quant.format_of("model.layers.3.self_attn.o_proj", expert=False) is None


@pytest.mark.parametrize(
    "listed", [[[1, 2]], [[""]], {"a": 1}], ids=["numbers", "blank-name", "object"]
)
def test_a_malformed_gptq_block_list_is_refused_naming_the_field(listed: object) -> None:
    with pytest.raises(CatalogError, match=r"modules_in_block_to_quantize: must be a list"):
        quantization_from_config({**GPTQ4, "modules_in_block_to_quantize": listed}, path="c")


@pytest.mark.parametrize("fmt", ["sparse-24-bitmask", "sparse-bitmask"])
def test_a_sparse_compressed_tensors_checkpoint_is_refused_naming_the_field(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], fmt: str
) -> None:
    folder = tmp_path / "m"
    folder.mkdir()
    quant = {**CT_FP8, "sparsity_config": {"format": fmt, "targets": ["Linear"]}}
    (folder / "config.json").write_text(json.dumps({**LLAMA_70B, "quantization_config": quant}))
    err = _one_line_error(["memory", str(folder), "--gpus", "8", "--gpu", "h200-sxm"], capsys)
    assert "quantization_config.sparsity_config.format" in err and "valid: dense" in err


@pytest.mark.parametrize("sparsity", [None, {}, {"format": "dense", "targets": []}])
def test_a_dense_sparsity_config_is_sized_as_none(sparsity: object) -> None:
    quant = quantization_from_config({**CT_FP8, "sparsity_config": sparsity}, path="c")
    assert quant == quantization_from_config(CT_FP8, path="c")


def _run(concurrency: int) -> dict[str, object]:
    return {
        "backend": "vllm", "max_concurrency": concurrency, "request_rate": "inf",
        "completed": 200, "total_input_tokens": 204_800, "total_output_tokens": 25_600,
        "output_throughput": 500.0, "mean_tpot_ms": 14.0, "mean_ttft_ms": 150.0,
    }  # fmt: skip


def test_a_broken_run_after_indented_ones_is_named_by_its_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # two `--save-result` runs indented one key a line (11 lines each with its braces: lines 1-11
    # and 12-22), then a broken run on line 23: the line is counted from where the last run ended
    runs = "".join(json.dumps(_run(c), indent=1) + "\n" for c in (8, 32))
    assert runs.count("\n") == 22
    (tmp_path / "r.json").write_text(runs + '{"backend": "vllm",,}\n')
    argv = ["calibrate", str(tmp_path / "r.json"), "--model", "llama-3.1-8b", "--gpu", "h100-sxm"]
    err = _one_line_error(argv, capsys)
    assert "r.json: line 23: (json)" in err


def test_a_log_of_many_starts_names_five_of_them(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    log = (ROOT / "tests" / "fixtures" / "logs" / "vllm_v1_v16_llama31_8b_eager.txt").read_text()
    (tmp_path / "log.txt").write_text(log * 1000)
    err = _one_line_error(
        ["calibrate", str(tmp_path / "log.txt"), "--model", "llama-3.1-8b"], capsys
    )
    assert "logfile: holds 1000 server starts" in err
    assert len(err) < 300, err


@pytest.mark.parametrize(
    ("old", "new", "named"),
    [
        ('name = "s"', 'Name = "s"', "scenario[0].Name: unknown key; did you mean name?"),
        ('model = "llama', 'MODEL = "llama', "scenario[0].MODEL: unknown key; did you mean model?"),
    ],
    ids=["title-case", "upper-case"],
)
def test_a_spec_key_in_the_wrong_case_is_one_line_naming_the_right_one(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], old: str, new: str, named: str
) -> None:
    spec = (
        '[[scenario]]\nname = "s"\nmodel = "llama-3.1-8b"\ngpu = "h100-sxm"\nlayout = "tp1"\n'
        "[scenario.workload]\nisl = 100\nosl = 100\nconcurrency = 4\n"
    )
    (tmp_path / "s.toml").write_text(spec.replace(old, new))
    err = _one_line_error(["check", str(tmp_path / "s.toml")], capsys)
    assert err.endswith(named), err


def test_gptq_block_list_of_fused_names_quantises_their_parts() -> None:
    listed = [["self_attn.qkv_proj"], ["mlp.gate_up_proj"]]
    quant = quantization_from_config({**GPTQ4, "modules_in_block_to_quantize": listed}, path="c")
    for part in ("self_attn.q_proj", "self_attn.v_proj", "mlp.gate_proj", "mlp.up_proj"):
        assert quant.format_of(f"model.layers.0.{part}", expert=False) is not None, part
    assert quant.format_of("model.layers.0.mlp.down_proj", expert=False) is None


@pytest.mark.parametrize(
    ("name", "side"),
    [
        ("quantize_config.json", {"bits": 4, "group_size": 128, "desc_act": False, "sym": True}),
        ("quant_config.json", {"zero_point": True, "q_group_size": 128, "w_bit": 4}),
    ],
    ids=["autogptq", "autoawq"],
)
def test_a_side_file_of_an_older_int4_checkpoint_sizes_it_in_int4(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str, side: dict[str, object]
) -> None:
    folder = tmp_path / "m"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps(LLAMA_70B))
    (folder / name).write_text(json.dumps(side))
    code = main(["memory", str(folder), "--gpus", "8", "--gpu", "h200-sxm", "--format", "json"])
    out = json.loads(capsys.readouterr().out)
    assert code == 0
    # the same checkpoint with the format in config.json: int4 g128 with zero points
    assert out["weights_bytes_total"] == _weights_bytes(tmp_path / "inline", GPTQ4, capsys)


def test_a_bad_side_file_is_refused_by_its_own_path(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = tmp_path / "m"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps(LLAMA_70B))
    (folder / "quantize_config.json").write_text(json.dumps({"bits": 5}))
    err = _one_line_error(["memory", str(folder), "--gpus", "8", "--gpu", "h200-sxm"], capsys)
    assert "quantize_config.json: quantization_config.bits" in err
