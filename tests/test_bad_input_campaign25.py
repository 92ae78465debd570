"""Bad input a twenty-fifth campaign (benchmarks/fuzz_cases25.py) found answered or crashing,
and valid input it checks by hand: a RoPE table given as JSON nested past Python's parser or
holding a 5,000-digit integer (--rope-scaling, --hf-overrides, a check spec's rope_scaling), an
--engine-version whose tail is no release suffix ("0.5.x" was read as 0.5.0 and priced by
another release's reserve terms), and SGLang serving a pool shorter than the context. Each
expected figure is worked out by hand in the comment beside it.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from test_bad_input import ROOT, _one_line_error

from capcliff.cli import main
from capcliff.errors import InputError
from capcliff.releases import parse_version

DEEP = '{"a": ' * 100_000 + "1" + "}" * 100_000
HUGE = "9" * 5000
R1_DPA8 = ["memory", "deepseek-r1", "--gpu", "h200-sxm", "--gpus", "8", "--engine", "sglang",
           "--layout", "dpa8", "--format", "json"]  # fmt: skip


def _qwen_keys(tmp_path: Path) -> str:
    """A config folder of Llama 3.1 8B's layers with Qwen3's 40,960 positions and no table."""
    import tomllib

    card = tomllib.loads((ROOT / "model_cards" / "llama-3.1-8b.toml").read_text())
    config = {**card["config"], "rope_scaling": None, "max_position_embeddings": 40_960}
    (tmp_path / "m").mkdir()
    (tmp_path / "m" / "config.json").write_text(json.dumps(config))
    return str(tmp_path / "m")


def test_a_rope_table_nested_past_the_parser_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # 100,000 nested objects: json's decoder raised RecursionError (a traceback, exit 4)
    argv = ["memory", _qwen_keys(tmp_path), "--gpu", "h200-sxm", "--rope-scaling", DEEP]
    line = _one_line_error(argv, capsys)
    assert "--rope-scaling" in line and "nested too deeply" in line


def test_a_rope_table_with_a_5000_digit_integer_is_said_plainly(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Python refuses int() of more than 4,300 digits; the message named
    # sys.set_int_max_str_digits, a remedy no user of the CLI can apply
    text = '{"rope_type": "linear", "factor": ' + HUGE + "}"
    argv = ["memory", _qwen_keys(tmp_path), "--gpu", "h200-sxm", "--rope-scaling", text]
    line = _one_line_error(argv, capsys)
    assert "4,300 digits" in line and "set_int_max_str_digits" not in line


@pytest.mark.parametrize(
    ("flag", "value"),
    [
        ("--hf-overrides", DEEP[:20_000]),
        ("--hf-overrides", '{"rope_scaling": {"rope_type": "linear", "factor": ' + HUGE + "}}"),
        ("--json-model-override-args", DEEP[:20_000]),
    ],
    ids=["hf-deep", "hf-huge-int", "sglang-deep"],
)
def test_a_launch_line_override_that_json_cannot_read_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], flag: str, value: str
) -> None:
    # both crashed (RecursionError; ValueError of the int-string limit) in the serve-command reader
    model = _qwen_keys(tmp_path)
    head = f"vllm serve {model}" if flag == "--hf-overrides" else (
        f"python -m sglang.launch_server --model-path {model}"
    )  # fmt: skip
    argv = ["memory", "--gpu", "h200-sxm", "--serve-command", f"{head} {flag} '{value}'"]
    line = _one_line_error(argv, capsys)
    assert f"{flag} wants a JSON object of config keys" in line
    assert "nested too deeply" in line or "4,300 digits" in line


def test_a_check_spec_rope_table_nested_too_deep_is_an_error_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    model = _qwen_keys(tmp_path)
    (tmp_path / "s.toml").write_text(
        f'[[scenario]]\nname = "s"\nmodel = "{model}"\ngpu = "h200-sxm"\nlayout = "tp1"\n'
        f"rope_scaling = '{DEEP[:30_000]}'\n[scenario.workload]\nisl = 100\nosl = 100\n"
        'arrival = "batch"\nnum_requests = 20\nconcurrency = 4\n[scenario.expect]\nfits = true\n'
    )
    code = main(["check", str(tmp_path / "s.toml")])
    err = capsys.readouterr().err
    assert code == 2 and "Traceback" not in err, err
    assert "rope_scaling" in err and "nested too deeply" in err


@pytest.mark.parametrize(
    "text", ["0.5.x", "0.5.10.postX", "0.5.3x", "0.5.10 post1", "0.14.0\u200b"]
)
def test_a_release_with_a_tail_that_is_no_suffix_is_refused(text: str) -> None:
    # "0.5.x" was read as (0, 5, 0): before 0.5.3, so DeepSeek-R1 dpa8 on SGLang was priced
    # without the DP-attention reserve (fraction 0.897 instead of 0.769, 19 GB more KV per GPU)
    with pytest.raises(InputError, match=r"is not a release like 0\.4\.3"):
        parse_version(text)


@pytest.mark.parametrize(
    ("text", "release"),
    [
        ("0.5.10.post1", (0, 5, 10)),
        ("0.5.10rc1", (0, 5, 10)),
        ("v0.5.3", (0, 5, 3)),
        ("sglang 0.5.2", (0, 5, 2)),
        ("lmsysorg/sglang:v0.5.12-cu130", (0, 5, 12)),
        ("0.14.0.post1+cu129", (0, 14, 0)),
        ("0.11.0rc2.dev45+gab12cd3.d20251010", (0, 11, 0)),  # a vLLM nightly's version string
        ("99.0", (99, 0, 0)),
    ],
)
def test_release_suffixes_are_still_read(text: str, release: tuple[int, int, int]) -> None:
    assert parse_version(text) == release


def test_engine_version_garbage_is_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    line = _one_line_error([*R1_DPA8, "--engine-version", "0.5.x"], capsys)
    assert "--engine-version" in line and "'0.5.x'" in line


@pytest.mark.parametrize(
    ("version", "fraction"), [("0.5.2", 0.897), ("0.5.3", 0.769), ("0.5.10.post1", 0.769)]
)
def test_dp_attention_reserve_starts_at_0_5_3(
    capsys: pytest.CaptureFixture[str], version: str, fraction: float
) -> None:
    # DeepSeek-R1 dpa8 on H200 (tests/test_sglang_reserve.py works both): the base 14,848 MiB
    # -> (143,771 - 14,848) / 143,771 = 0.89672 -> 0.897 before 0.5.3; from 0.5.3 + 512 x 8 x 3
    # + 512 x 8 x 1.5 = 33,280 MiB -> 0.76852 -> 0.769 (piecewise graphs off under DP
    # attention, so 0.5.10.post1 the same). Static pool int(149,831,402,127 B x fraction):
    # 134,398,767,707 B and 115,220,348,235 B.
    assert main([*R1_DPA8, "--engine-version", version]) == 0
    stage = json.loads(capsys.readouterr().out)["layouts"][0]["stages"][0]
    assert stage["usable_bytes"] == {0.897: 134_398_767_707, 0.769: 115_220_348_235}[fraction]


def test_sglang_serves_pool_less_one_when_a_rope_table_lengthens_the_context(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # Llama 3.1 8B, linear factor 8: context 131,072 x 8 = 1,048,576. Weights 8,030,261,248 x
    # 2 B = 16,060,522,496 + the RoPE table 1,048,576 x 128 x 2 B = 268,435,456 ->
    # 16,328,957,952 B. SGLang 0.5.12 on one H200 at TP 1: fraction 0.903
    # (tests/test_sglang_reserve.py), static pool int(149,831,402,127 x 0.903) =
    # 135,297,756,120 B; KV 135,297,756,120 - 16,328,957,952 = 118,968,798,168 B / 131,072 B
    # per token = 907,659.9 -> 907,659 tokens < 1,048,576: fits, serving 907,658.
    argv = ["memory", "llama-3.1-8b", "--gpu", "h200-sxm", "--gpus", "1", "--engine", "sglang",
            "--engine-version", "0.5.12", "--format", "json",
            "--rope-scaling", '{"rope_type": "linear", "factor": 8}']  # fmt: skip
    assert main(argv) == 0
    out = json.loads(capsys.readouterr().out)
    row = out["layouts"][0]
    assert out["max_model_len"] == 1_048_576
    assert row["weights_bytes_per_gpu"] == 16_328_957_952
    assert row["fits"] and row["kv_capacity_tokens_per_replica"] == 907_659
    assert any("at most 907,658 tokens" in w for w in row["warnings"])


@pytest.mark.parametrize(("engine", "context"), [("vllm", 131_072), ("sglang", 40_960)])
def test_the_served_context_note_names_the_engine_whose_rule_gave_it(
    capsys: pytest.CaptureFixture[str], engine: str, context: int
) -> None:
    # Qwen3-8B (40,960 positions) with YaRN x4 from 32,768: vLLM serves 32,768 x 4 = 131,072;
    # SGLang keeps 40,960 (a table holding an original context drops the factor). The note said
    # "as vLLM derives it" under SGLang too (campaign 25, plan-dpa8-mtp-bad-version).
    yarn = '{"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 32768}'
    argv = ["plan", "qwen3-8b", "--gpu", "h200-sxm", "--gpus", "1", "--jobs", "1", "--isl", "100",
            "--osl", "100", "--num-requests", "10", "--arrival", "batch", "--engine", engine,
            "--rope-scaling", yarn]  # fmt: skip
    assert main(argv) == 0
    said = capsys.readouterr()
    err = said.out + said.err
    assert (
        f"--max-model-len {context}: the model's context (config.json, by {engine}'s rule)" in err
    )
