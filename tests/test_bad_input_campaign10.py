"""Bad input that a tenth campaign (benchmarks/fuzz_cases10.py) found: one test per class of
finding, each case named for it.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from test_bad_input import _one_line_error
from test_bad_input_campaign4 import _card_config

from capcliff.calibrate.benchmarks import _cell
from capcliff.catalog.quantization import int_grouped, quantization_from_config
from capcliff.check.spec import load_spec
from capcliff.cli import main
from capcliff.errors import CatalogError, InputError
from capcliff.files import parse_json
from capcliff.sim.traffic.sessions import parse_session_trace

RUN = {
    "date": "20250101-000000", "backend": "vllm", "model_id": "meta-llama/Llama-3.1-8B-Instruct",
    "tokenizer_id": "meta-llama/Llama-3.1-8B-Instruct", "num_prompts": 200,
    "request_rate": "inf", "burstiness": 1.0, "max_concurrency": 32, "duration": 60.0,
    "completed": 200, "total_input_tokens": 204_800, "total_output_tokens": 25_600,
    "request_throughput": 3.3, "output_throughput": 1200.0, "total_token_throughput": 4600.0,
    "mean_ttft_ms": 150.0, "median_ttft_ms": 140.0, "p99_ttft_ms": 300.0, "mean_tpot_ms": 24.0,
    "median_tpot_ms": 24.0, "p99_tpot_ms": 28.8, "mean_itl_ms": 24.0,
}  # fmt: skip
CALIBRATE = ["--model", "llama-3.1-8b", "--gpu", "h100-sxm"]


# A JSON object that names a key twice: Python's reader kept the last unsaid, so a vLLM result
# with `"mean_tpot_ms": 24.0, ..., "mean_tpot_ms": 30.0` was fitted at 30 ms, and a trace row's
# second `arrival_s` replaced its first.


def test_a_benchmark_result_with_a_key_twice_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "r.json"
    path.write_text(json.dumps(RUN)[:-1] + ', "mean_tpot_ms": 30.0}')
    line = _one_line_error(["calibrate", str(path), *CALIBRATE], capsys)
    assert line.endswith("r.json: line 1: (json): 'mean_tpot_ms': key given twice; give it once")


def test_a_trace_row_with_a_key_twice_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "t.jsonl"
    path.write_text('{"arrival_s": 0.0, "input_tokens": 50, "output_tokens": 20, "arrival_s": 9}\n')
    line = _one_line_error(
        ["sweep", "llama-3.1-8b", "--workload", str(path), "--concurrency", "4"], capsys
    )
    assert "trace line 1: (json): 'arrival_s': key given twice" in line


def test_a_model_config_keeps_the_last_of_a_key_twice() -> None:
    # transformers and the engines read config.json with json.load, which keeps the last
    assert parse_json('{"a": 1, "a": 2}', source="config.json") == {"a": 2}


# A compressed-tensors checkpoint whose groups hold different formats (W4 MLPs beside FP8
# attention) was sized with the first group's format on every linear: 5.70 GB with the W4
# group first, 9.09 GB with the FP8 group first, for one checkpoint.

W4_MLP = {"weights": {"num_bits": 4, "type": "int", "strategy": "group", "group_size": 128,
                      "symmetric": True}, "targets": ["re:.*mlp.*"]}  # fmt: skip
FP8_ATTN = {"weights": {"num_bits": 8, "type": "float", "strategy": "channel"},
            "targets": ["re:.*self_attn.*"]}  # fmt: skip


def _mixed(*groups: dict[str, object]) -> dict[str, object]:
    named = {f"group_{i}": g for i, g in enumerate(groups)}
    return {"quant_method": "compressed-tensors", "config_groups": named}


def test_each_module_takes_the_format_of_the_group_that_targets_it() -> None:
    quant = quantization_from_config(_mixed(W4_MLP, FP8_ATTN), path="c")
    mlp = quant.format_of("model.layers.0.mlp.down_proj", expert=False)
    attn = quant.format_of("model.layers.0.self_attn.q_proj", expert=False)
    assert mlp == int_grouped(4, 128, zero_point=False)
    assert attn is not None and attn.name == "fp8-channel"
    assert quant.format_of("lm_head", expert=False) is None  # no group targets it


@pytest.mark.parametrize("order", ["w4-first", "fp8-first"])
def test_a_mixed_checkpoint_weighs_the_same_whichever_group_comes_first(
    order: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    groups = (W4_MLP, FP8_ATTN) if order == "w4-first" else (FP8_ATTN, W4_MLP)
    config = {**_card_config("llama-3.1-8b"), "quantization_config": _mixed(*groups)}
    (tmp_path / "config.json").write_text(json.dumps(config))
    assert main(["memory", str(tmp_path), "--gpus", "1", "--format", "json"]) == 0
    # Llama-3.1-8B, 32 layers:
    # MLP 3 x 4096 x 14336 = 176,160,768 elements at int4 g128 (0.5 + 2/128 bytes) = 90,832,896
    # attention q,o 4096x4096, k,v 1024x4096 = 41,943,040 elements at 1 byte, plus a 4-byte
    # scale per output row (4096 + 1024 + 1024 + 4096 rows) = 41,984,000
    # embedding and lm_head 2 x 128256 x 4096 x 2 bytes = 2,101,346,304; norms (65 x 4096) x 2
    expected = 32 * (90_832_896 + 41_984_000) + 2_101_346_304 + 65 * 4096 * 2
    report = json.loads(capsys.readouterr().out)
    assert report["weights_bytes_total"] == expected
    # labelled by both families: the first group named the whole checkpoint, "int4" or "fp8"
    # by the groups' order (h-mut625, left)
    assert report["weight_dtype"] == "fp8+int4"


@pytest.mark.parametrize("order", ["linear-first", "mlp-first"])
def test_a_name_target_takes_its_modules_from_a_linear_class_target(order: str) -> None:
    # vLLM matches a layer's name against every target before its class: FP8 on every Linear
    # but the MLPs, which a W4 group names by pattern, in whichever order the groups come
    fp8_all = {**FP8_ATTN, "targets": ["Linear"]}
    groups = (fp8_all, W4_MLP) if order == "linear-first" else (W4_MLP, fp8_all)
    quant = quantization_from_config(_mixed(*groups), path="c")
    mlp = quant.format_of("model.layers.0.mlp.up_proj", expert=False)
    attn = quant.format_of("model.layers.0.self_attn.o_proj", expert=False)
    assert mlp == int_grouped(4, 128, zero_point=False)
    assert attn is not None and attn.name == "fp8-channel"


def test_one_target_in_two_groups_of_different_formats_is_refused() -> None:
    # vLLM's target map keeps the last group for a target; capcliff took the first
    w4_all, fp8_all = {**W4_MLP, "targets": ["Linear"]}, {**FP8_ATTN, "targets": ["Linear"]}
    with pytest.raises(CatalogError, match=r"^c: quantization_config\.config_groups\.group_1\."
                       r"targets: 'Linear' is also a target of 'group_0'"):  # fmt: skip
        quantization_from_config(_mixed(w4_all, fp8_all), path="c")


# A CSV's latency in another unit: a cell "1.5 s" in mean_ttft_ms was read as 1.5 ms (its
# leading number), "2 min" as 2 ms, and a mean_tpot_s column was read as missing (the fit ran
# on throughput alone, unsaid).

CSV_HEAD = "concurrency,input_len,output_len,output_throughput_tok_s,mean_tpot_ms,mean_ttft_ms\n"


@pytest.mark.parametrize(
    ("rows", "said"),
    [
        ("8,1024,128,500,14,1.5 s\n", "row 2: mean_ttft_ms: '1.5 s' is in s; the column holds "
         "milliseconds"),
        ("8,1024,128,500,14,2 min\n", "row 2: mean_ttft_ms: '2 min' is in min;"),
        ("8,1024,128,500,14000 us,150\n", "row 2: mean_tpot_ms: '14000 us' is in us;"),
        ("8,1024,128,1.2k,14,150\n", "row 2: output_throughput_tok_s: '1.2k': write the number "
         "whole, without the k"),
    ],
    ids=["ttft-seconds", "ttft-minutes", "tpot-microseconds", "throughput-thousands"],
)  # fmt: skip
def test_a_cell_in_another_unit_is_refused(
    rows: str, said: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "b.csv"
    path.write_text(CSV_HEAD + rows)
    assert f"b.csv: {said}" in _one_line_error(["calibrate", str(path), *CALIBRATE], capsys)


def test_a_cell_in_milliseconds_is_read() -> None:
    assert _cell({"mean_tpot_ms": "14 ms"}, "mean_tpot_ms", "row 2") == 14.0


def test_a_latency_column_in_seconds_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "b.csv"
    head = CSV_HEAD.replace("mean_tpot_ms", "mean_tpot_s").replace("mean_ttft_ms", "mean_ttft_s")
    path.write_text(head + "8,1024,128,500,0.014,0.15\n")
    assert _one_line_error(["calibrate", str(path), *CALIBRATE], capsys).endswith(
        "b.csv: column 'mean_tpot_s': capcliff reads mean_tpot_ms (milliseconds); give the "
        "figures in ms under that name"
    )


# A session trace's prefix_id without its prefix_tokens: read as a prefix of 0 tokens, the
# sharing it names was dropped unsaid (the reverse, tokens without an id, was refused).


def test_a_prefix_id_without_its_tokens_is_refused() -> None:
    row = {"session_id": "a", "turn": 0, "input_tokens": 40, "output_tokens": 20,
           "prefix_id": "sys"}  # fmt: skip
    with pytest.raises(InputError, match=r"^trace line 1: prefix_id: a shared prefix needs its "
                       r"prefix_tokens"):  # fmt: skip
        parse_session_trace([json.dumps(row)])


# A JSON check spec (`check s.json`) was read as TOML: "Invalid statement (at line 1, column 1)".

SPEC_TABLES = {"scenario": [{
    "name": "s", "model": "llama-3.1-8b", "gpu": "h100-sxm", "layout": "tp1", "engine": "vllm",
    "workload": {"isl": 100, "osl": 100, "arrival": "batch", "num_requests": 20, "concurrency": 4},
    "expect": {"fits": True},
}]}  # fmt: skip


def test_a_json_spec_is_read_as_its_toml_tables(tmp_path: Path) -> None:
    path = tmp_path / "s.json"
    path.write_text(json.dumps(SPEC_TABLES))
    assert load_spec(path).spec.scenario[0].workload.isl == 100


@pytest.mark.parametrize(
    ("text", "said"),
    [
        (json.dumps(SPEC_TABLES).replace('"fits": true', '"ttft_p99_max_s": Infinity'),
         "s.json: scenario[0].expect.ttft_p99_max_s: Input should be a finite number"),
        (json.dumps(SPEC_TABLES).replace('"isl": 100', '"isl": 100, "isl": 5'),
         "s.json: (json): 'isl': key given twice; give it once"),
        ("[]", "s.json: (json): a spec is an object of the TOML spec's tables"),
    ],
    ids=["infinite-bound", "key-twice", "not-an-object"],
)  # fmt: skip
def test_a_bad_json_spec_is_one_line(
    text: str, said: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "s.json"
    path.write_text(text)
    assert said in _one_line_error(["check", str(path)], capsys)


# GPTQModel's per-module `dynamic` overrides were ignored: a checkpoint with 8-bit MLPs was
# sized at 4 bits throughout, and `"bits": -4` in an override was accepted.

GPTQ = {"quant_method": "gptq", "bits": 4, "group_size": 128}


def test_a_gptq_dynamic_override_sets_the_bits_of_the_modules_it_names() -> None:
    raw = {**GPTQ, "dynamic": {"+:.*mlp.*": {"bits": 8}, "-:.*self_attn.o_proj": {}}}
    quant = quantization_from_config(raw, path="c")
    # vLLM's get_dynamic_override: the first regex matching from the start wins
    assert quant.format_of("model.layers.0.mlp.up_proj", expert=False) == int_grouped(
        8, 128, zero_point=True
    )
    assert quant.format_of("model.layers.0.self_attn.o_proj", expert=False) is None
    assert quant.format_of("model.layers.0.self_attn.q_proj", expert=False) == int_grouped(
        4, 128, zero_point=True
    )


@pytest.mark.parametrize(
    ("dynamic", "said"),
    [
        ({"+:.*mlp.*": {"bits": -4}}, r"dynamic\.\+:\.\*mlp\.\*\.bits: must be one of 2, 3, 4, 8"),
        ({"+:.*mlp.*": {"group_size": 1.5}}, r"dynamic\.\+:\.\*mlp\.\*\.group_size: must be an"),
        ({"+:(": {"bits": 8}}, r"dynamic\.\+:\(: bad regex"),
        ({"+:.*mlp.*": 8}, r"dynamic\.\+:\.\*mlp\.\*: must be an object of overrides"),
        ([1, 2], r"dynamic: must be an object of \{regex: overrides\}"),
    ],
    ids=["bits-negative", "group-float", "bad-regex", "override-not-object", "list"],
)  # fmt: skip
def test_a_bad_gptq_dynamic_override_is_refused(dynamic: object, said: str) -> None:
    with pytest.raises(CatalogError, match=r"^c: quantization_config\." + said):
        quantization_from_config({**GPTQ, "dynamic": dynamic}, path="c")


def test_a_gptq_checkpoint_with_8_bit_mlps_weighs_them_at_8_bits(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    quant = {**GPTQ, "dynamic": {"+:.*mlp.*": {"bits": 8}}}
    config = {**_card_config("llama-3.1-8b"), "quantization_config": quant}
    (tmp_path / "config.json").write_text(json.dumps(config))
    assert main(["memory", str(tmp_path), "--gpus", "1", "--format", "json"]) == 0
    # GPTQ stores an fp16 scale and a packed zero point of `bits` per group of 128:
    # MLP 176,160,768 elements x (1 + (16 + 8) / 8 / 128) = 180,289,536 bytes a layer
    # attention 41,943,040 x (0.5 + (16 + 4) / 8 / 128) = 21,790,720 bytes a layer
    expected = 32 * (180_289_536 + 21_790_720) + 2_101_346_304 + 65 * 4096 * 2
    assert json.loads(capsys.readouterr().out)["weights_bytes_total"] == expected


# Results joined with `cat` from files that each begin with a byte-order mark: the second run's
# mark read as JSON ("Expecting value"); the first file's was skipped already.


def test_a_byte_order_mark_before_each_joined_run_is_skipped(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "r.json"
    runs = [{**RUN, "max_concurrency": c, "output_throughput": t, "mean_tpot_ms": m}
            for c, t, m in ((8, 500.0, 14.0), (32, 1200.0, 24.0))]  # fmt: skip
    path.write_bytes(b"".join(b"\xef\xbb\xbf" + json.dumps(r).encode() + b"\n" for r in runs))
    assert main(["calibrate", str(path), *CALIBRATE]) == 0
    assert "r.json:2 | 32 " in capsys.readouterr().out
