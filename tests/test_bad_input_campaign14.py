"""Bad input that a fourteenth campaign (benchmarks/fuzz_cases14.py) found in engine command
lines and layouts, and the valid spellings it found refused. Each bad input exits 2 with one
`error: ...` line naming the field and what is valid; valid input is read by the engine's rule.
"""

from __future__ import annotations

import json

import pytest
from test_bad_input import _one_line_error

from capcliff.analysis.serve_command import parse_serve_command
from capcliff.cli import main

V = "vllm serve meta-llama/Llama-3.1-8B"
S = "python -m sglang.launch_server --model-path meta-llama/Llama-3.1-8B"
SWEEP = ["sweep", "llama-3.1-8b", "--isl", "100", "--osl", "100", "--num-requests", "20"]
SWEEP += ["--concurrency", "4"]


@pytest.mark.parametrize(
    "flag",
    [
        "--enable-prefix-caching=false",
        "--enforce-eager=true",
        "--enforce-eager=",
        "--no-enable-prefix-caching=1",
    ],
)
def test_a_switch_given_a_value_is_refused_as_argparse_does(
    flag: str, capsys: pytest.CaptureFixture[str]
) -> None:
    # argparse: "ignored explicit argument"; read as on, =false sized the opposite of the line
    line = _one_line_error([*SWEEP, "--serve-command", f"{V} {flag}"], capsys)
    assert "is a switch and takes no value" in line


@pytest.mark.parametrize(
    ("value", "tp"), [("+2", 2), ("0_2", 2), (" 4 ", 4)], ids=["plus", "underscore", "spaces"]
)
def test_an_integer_is_read_as_pythons_int_reads_it(value: str, tp: int) -> None:
    # argparse's type=int is int(): int("+2") == int("0_2") == 2
    assert parse_serve_command(f"{V} --tp '{value}'").layout.tp == tp


@pytest.mark.parametrize(
    ("value", "tokens"),
    [("32_768", 32_768), ("1.5k", 1_500), ("1t", 10**12), ("2T", 2 * 2**40)],
)
def test_max_model_len_reads_vllm_human_readable_int(value: str, tokens: int) -> None:
    assert parse_serve_command(f"{V} --max-model-len {value}").settings["max_model_len"] == tokens


def test_a_fraction_before_a_binary_suffix_is_refused_as_vllm_does(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # vLLM: "Decimals are not allowed with binary suffixes like K"
    line = _one_line_error([*SWEEP, "--serve-command", f"{V} --max-model-len 1.5K"], capsys)
    assert "--max-model-len wants a whole number >= 1" in line


@pytest.mark.parametrize("config", ["not-json", "[3]", '"ngram"'])
def test_a_speculative_config_that_is_no_json_object_is_refused(
    config: str, capsys: pytest.CaptureFixture[str]
) -> None:
    command = f"{V} --speculative-config '{config}'"
    line = _one_line_error([*SWEEP, "--serve-command", command], capsys)
    assert "is not a JSON object" in line


@pytest.mark.parametrize("k", ["0", "-3", "2.5", '"x"', "true"])
def test_a_speculative_config_k_below_one_or_not_whole_is_refused(
    k: str, capsys: pytest.CaptureFixture[str]
) -> None:
    config = '{"method": "eagle3", "num_speculative_tokens": ' + k + "}"
    command = f"{V} --speculative-config '{config}'"
    line = _one_line_error([*SWEEP, "--serve-command", command], capsys)
    assert "num_speculative_tokens wants a whole number >= 1" in line


@pytest.mark.parametrize("k", ["3", "3.0", '"3"'])
def test_a_speculative_config_k_is_read_as_vllms_lax_int(k: str) -> None:
    config = json.loads('{"method": "eagle3", "num_speculative_tokens": ' + k + "}")
    command = parse_serve_command(f"{V} --speculative-config '{json.dumps(config)}'")
    assert command.settings["speculative"] == "eagle:3"


@pytest.mark.parametrize(
    ("env", "tp"), [("CUDA_VISIBLE_DEVICES=0,1", 4), ("CUDA_VISIBLE_DEVICES=", 1)]
)
def test_fewer_visible_gpus_than_the_tp_group_is_refused(
    env: str, tp: int, capsys: pytest.CaptureFixture[str]
) -> None:
    command = f"{env} {V} --tp {tp}"
    line = _one_line_error([*SWEEP, "--gpus", str(tp), "--serve-command", command], capsys)
    assert "CUDA_VISIBLE_DEVICES names" in line


def test_enough_visible_gpus_read_the_command_as_usual() -> None:
    assert parse_serve_command(f"CUDA_VISIBLE_DEVICES=0,1,2,3 {V} --tp 4").layout.tp == 4


@pytest.mark.parametrize("value", ["0", "false", "no"])
def test_vllm_allow_long_off_is_modelled_not_warned(value: str) -> None:
    # vllm/envs.py: only "1" or "true" turn it on; anything else is the default, off
    command = parse_serve_command(f"VLLM_ALLOW_LONG_MAX_MODEL_LEN={value} {V}")
    assert command.unmodelled == () and "allow_long_max_model_len" not in command.settings


def test_an_error_after_a_serve_warning_is_still_one_line(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # --some-flag is not modelled (a warning); --gpus 2 against the line's tp1 is the error
    command = f"{V} --some-flag 3"
    _one_line_error([*SWEEP, "--gpus", "2", "--serve-command", command], capsys)


def test_the_serve_warning_is_still_said_when_the_command_runs(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main([*SWEEP, "--format", "json", "--serve-command", f"{V} --some-flag 3"]) == 0
    assert "flags capcliff does not model, left out of the sizing: --some-flag 3" in (
        capsys.readouterr().err
    )


@pytest.mark.parametrize(
    ("flags", "said"),
    [
        ("--speculative-algorithm BOGUS --speculative-num-steps 3", "--speculative-algorithm"),
        ("--moe-a2a-backend deepep --deepep-mode bogus", "--deepep-mode"),
    ],
    ids=["algorithm", "deepep-mode"],
)
def test_an_sglang_choice_it_does_not_offer_is_refused(
    flags: str, said: str, capsys: pytest.CaptureFixture[str]
) -> None:
    line = _one_line_error([*SWEEP, "--serve-command", f"{S} {flags}"], capsys)
    assert said in line and "is not one of SGLang's" in line


def test_sglang_chunked_prefill_off_is_named_not_refused() -> None:
    # server_args.py: "Setting this to -1 means disabling chunked prefill"
    command = parse_serve_command(f"{S} --chunked-prefill-size -1")
    assert command.unmodelled == ("--chunked-prefill-size -1 (chunked prefill off)",)
    assert "max_num_batched_tokens" not in command.settings


def test_memory_refuses_a_commands_layout_that_cannot_exist_with_the_reason(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # as `plan` and `sweep` do (tests/test_user_findings.py): 32 heads over TP 3 is bad input,
    # one line naming the layouts of the same 3 GPUs that fit (16 GB of weights fit one H200);
    # `memory` answered "no layout of 3 GPUs fits" (fuzz_random seed 60, h-rand8)
    line = _one_line_error(["memory", "--serve-command", f"{V} --tp 3"], capsys)
    assert "tp3: 32 attention heads are not divisible by TP=3" in line
    assert "valid: dp3, pp3 fit these 3 GPUs as they are" in line


@pytest.mark.parametrize("value", ["eagle:3:", "eagle:3: "])
def test_an_empty_draft_after_the_colon_is_refused(
    value: str, capsys: pytest.CaptureFixture[str]
) -> None:
    line = _one_line_error([*SWEEP, "--speculative", value], capsys)
    assert "the draft model after eagle:3: is empty" in line
