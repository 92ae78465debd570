"""Valid input a twenty-third campaign (benchmarks/fuzz_cases23.py) found answered wrongly or
refused: a GPTQ checkpoint whose output head is quantised (`lm_head: true`), benchmark runs of
one-token outputs (a TPOT of 0, as vLLM and SGLang write it) and traces whose longest prompt and
longest output are different rows. Each expected figure is worked out by hand in the comment
beside it.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from test_bad_input import ROOT, _one_line_error

from capcliff.catalog.quantization import quantization_from_config
from capcliff.cli import main
from capcliff.errors import CatalogError

# Llama 3.1 8B by hand: the decoder layers' linears hold 32 x (2 x 4,096^2 + 2 x 4,096 x 1,024
# + 3 x 4,096 x 14,336) = 6,979,321,856 elements; embedding and lm_head 128,256 x 4,096 =
# 525,336,576 each and norms 32 x 8,192 + 4,096 = 266,240, 1,050,939,392 elements at bf16 =
# 2,101,878,784 B. GPTQ int4 g128 stores one fp16 scale and one 4-bit zero per 128 elements:
# 4 + 20 / 128 bits = 532 / 1,024 B an element: 6,979,321,856 x 532 / 1,024 = 3,625,975,808 B.
GPTQ4 = 3_625_975_808 + 2_101_878_784  # 5,727,854,592
HEAD_BF16 = 2 * 525_336_576  # 1,050,673,152 B
HEAD_INT4 = 525_336_576 * 532 // 1024  # 272,928,768 B
GPTQ = {"quant_method": "gptq", "bits": 4, "group_size": 128, "desc_act": False, "sym": True}


def _llama() -> dict[str, object]:
    import tomllib

    card = tomllib.loads((ROOT / "model_cards" / "llama-3.1-8b.toml").read_text())
    return dict(card["config"])


def _weights(tmp_path: Path, quant: dict[str, object], capsys: pytest.CaptureFixture[str]) -> int:
    folder = tmp_path / "m"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps({**_llama(), "quantization_config": quant}))
    assert main(["memory", str(folder), "--gpus", "1", "--format", "json"]) == 0
    return int(json.loads(capsys.readouterr().out)["weights_bytes_total"])


@pytest.mark.parametrize(
    ("head", "expected"),
    [
        (False, GPTQ4),
        # the head at int4 g128 too: 5,727,854,592 - 1,050,673,152 + 272,928,768
        (True, GPTQ4 - HEAD_BF16 + HEAD_INT4),
    ],
)
def test_a_gptq_output_head_is_sized_as_quantised(
    tmp_path: Path, head: bool, expected: int, capsys: pytest.CaptureFixture[str]
) -> None:
    assert _weights(tmp_path, {**GPTQ, "lm_head": head}, capsys) == expected


def test_a_gptq_dynamic_rule_names_the_output_head(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # `+:lm_head` at 8 bits: one fp16 scale and one 8-bit zero per 128: 8 + 24 / 128 bits =
    # 131 / 128 B an element: 525,336,576 x 131 / 128 = 537,649,152 B for the head
    quant = {**GPTQ, "lm_head": True, "dynamic": {"+:lm_head": {"bits": 8}}}
    assert _weights(tmp_path, quant, capsys) == GPTQ4 - HEAD_BF16 + 537_649_152


@pytest.mark.parametrize("value", ["true", 1])
def test_a_gptq_lm_head_that_is_no_boolean_is_refused(value: object) -> None:
    with pytest.raises(CatalogError, match=r"quantization_config\.lm_head: must be true or false"):
        quantization_from_config({**GPTQ, "lm_head": value}, path="c.json")


def _run(clients: int, ttft_ms: float, throughput: float, tpot_ms: float, outputs: int) -> str:
    """A `vllm bench serve --save-result` run of 200 prompts of 1,024 tokens."""
    return json.dumps({
        "backend": "vllm", "model_id": "meta-llama/Llama-3.1-8B-Instruct", "num_prompts": 200,
        "request_rate": "inf", "max_concurrency": clients, "completed": 200,
        "total_input_tokens": 204_800, "total_output_tokens": outputs,
        "output_throughput": throughput, "mean_ttft_ms": ttft_ms, "mean_tpot_ms": tpot_ms,
    })  # fmt: skip


def test_one_token_runs_have_no_tpot(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # --random-output-len 1: no request has a second token, so vLLM writes np.mean([] or 0) = 0
    # as the TPOT; 200 output tokens of 200 requests is 1 a request, and the runs are read for
    # their throughput and TTFT alone (Little's law: 8 / 0.2 s, 32 / 0.8 s = 40 a second)
    runs = [_run(8, 200.0, 36.0, 0.0, 200), _run(32, 800.0, 38.0, 0.0, 200)]
    (tmp_path / "r.json").write_text("\n".join(runs))
    args = ["calibrate", str(tmp_path / "r.json"), "--model", "llama-3.1-8b", "--format", "json"]
    assert main(args) == 0
    out = capsys.readouterr().out
    points = json.loads(out[out.index("{") :])["points"]
    assert [(p["concurrency"], p["output_len"]) for p in points] == [(8, 1), (32, 1)]
    assert [p["measured"]["mean_tpot_s"] for p in points] == [None, None]
    assert [p["measured"]["output_throughput_tok_s"] for p in points] == [36.0, 38.0]


def test_a_tpot_of_0_beside_longer_outputs_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # 25,600 output tokens of 200 requests: 128 a request, so some request had a second token
    (tmp_path / "r.json").write_text(_run(8, 150.0, 500.0, 0.0, 25_600))
    args = ["calibrate", str(tmp_path / "r.json"), "--model", "llama-3.1-8b"]
    line = _one_line_error(args, capsys)
    assert "mean_tpot_ms: must be a finite number > 0, got 0" in line


def _sweep(
    tmp_path: Path, rows: list[dict[str, object]], capsys: pytest.CaptureFixture[str]
) -> dict:
    (tmp_path / "t.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    args = ["sweep", "llama-3.1-8b", "--workload", str(tmp_path / "t.jsonl"), "--concurrency", "1",
            "--max-model-len", "4096", "--format", "json"]  # fmt: skip
    assert main(args) == 0
    return json.loads(capsys.readouterr().out)


def test_a_trace_row_is_sent_with_its_own_max_tokens(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # 4,095 + 1 and 1 + 4,095 tokens: each 4,096, within max_model_len 4,096 (read as
    # 4,095 + 4,095 = 8,190 before); 4,096 output tokens in all
    rows = [
        {"arrival_s": 0.0, "input_tokens": 4095, "output_tokens": 1},
        {"arrival_s": 0.0, "input_tokens": 1, "output_tokens": 4095},
    ]
    point = _sweep(tmp_path, rows, capsys)["points"][0]
    assert point["output_throughput_tok_s"] * point["makespan_s"] == pytest.approx(4096)


def test_a_session_turn_is_sent_with_its_own_max_tokens(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # two one-turn sessions of 4,000 + 10 and 10 + 4,000 tokens: 4,010 each (read as 8,000)
    rows = [
        {"session_id": "a", "turn": 0, "input_tokens": 4000, "output_tokens": 10, "arrival_s": 0.0},
        {"session_id": "b", "turn": 0, "input_tokens": 10, "output_tokens": 4000, "arrival_s": 0.0},
    ]
    point = _sweep(tmp_path, rows, capsys)["points"][0]
    assert point["output_throughput_tok_s"] * point["makespan_s"] == pytest.approx(4010)


def test_a_trace_row_past_the_context_is_still_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # 4,000 + 97 = 4,097 tokens, one past max_model_len 4,096
    (tmp_path / "t.jsonl").write_text(
        json.dumps({"arrival_s": 0.0, "input_tokens": 4000, "output_tokens": 97}) + "\n"
    )
    args = ["sweep", "llama-3.1-8b", "--workload", str(tmp_path / "t.jsonl"), "--concurrency", "1",
            "--max-model-len", "4096"]  # fmt: skip
    line = _one_line_error(args, capsys)
    assert "4097 tokens: 4000 input + 97 output" in line
