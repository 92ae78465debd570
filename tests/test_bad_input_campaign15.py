"""Bad input that a fifteenth campaign (benchmarks/fuzz_cases15.py) found on the command line,
in check specs and in output paths, and the valid spellings it found refused. Each bad input
exits 2 with one `error: ...` line naming the field and what is valid; what an engine's own
command line accepts is read as the engine reads it.
"""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

import pytest
from test_bad_input import ROOT, _one_line_error
from test_bad_input_campaign4 import SPEC, SWEEP

from capcliff.analysis.deployment_settings import settings_of
from capcliff.analysis.serve_command import parse_serve_command
from capcliff.catalog.catalogs import get_model
from capcliff.cli import main
from capcliff.errors import InputError
from capcliff.files import check_outputs
from capcliff.perf.speculation import SpecMethod, Speculation, parse_speculative


# Outputs: `--markdown /dev/stdout --force`, with standard output redirected to a file, renamed
# the report over the /dev/stdout link itself (as root, for every process of the machine).
@pytest.mark.parametrize("path", ["/dev/stdout", "/dev/fd/1", "/proc/self/fd/1", "/dev/x.md"])
def test_an_output_under_dev_or_proc_is_refused_even_with_force(path: str) -> None:
    with pytest.raises(InputError, match=r"is under /dev or /proc \(a device or a stream\)"):
        check_outputs([("--markdown", Path(path))], inputs=[], force=True)


# KV dtype `auto`: vLLM's and SGLang's default (the model's dtype), which a serve command
# already took, was refused as a flag and a spec key.
def _kv_bytes_per_token(args: list[str], capsys: pytest.CaptureFixture[str]) -> int:
    capsys.readouterr()
    assert main(["memory", "llama-3.1-8b", "--gpus", "1", "--format", "json", *args]) == 0
    return int(json.loads(capsys.readouterr().out)["kv_bytes_per_token"])


@pytest.mark.parametrize("spelling", ["auto", "AUTO", " auto "])
def test_kv_cache_dtype_auto_is_the_models_16_bit_dtype(
    spelling: str, capsys: pytest.CaptureFixture[str]
) -> None:
    # Llama-3.1-8B: 2 (K and V) x 32 layers x 8 KV heads x 128 dims x 2 bytes = 131,072 bytes
    assert _kv_bytes_per_token(["--kv-cache-dtype", spelling], capsys) == 131_072


def _check_passes(tmp_path: Path, text: str, capsys: pytest.CaptureFixture[str]) -> None:
    spec = tmp_path / "s.toml"
    spec.write_text(text)
    assert main(["check", str(spec)]) == 0, capsys.readouterr().err


def test_kv_cache_dtype_auto_is_accepted_in_a_spec(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    key = 'layout = "tp1"\nkv_cache_dtype = "auto"'
    _check_passes(tmp_path, SPEC.replace('layout = "tp1"', key), capsys)


# Speculative methods by the engines' own names: vLLM's `eagle3` and `deepseek_mtp`, SGLang's
# `EAGLE3` and `NEXTN` (capcliff's eagle is the EAGLE-3 head; mtp the model's MTP layers).
@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("eagle3:3", Speculation(SpecMethod.EAGLE, 3)),
        ("EAGLE3:3", Speculation(SpecMethod.EAGLE, 3)),
        ("EAGLE:2", Speculation(SpecMethod.EAGLE, 2)),
        ("NGRAM:4", Speculation(SpecMethod.NGRAM, 4)),
        ("NEXTN:1", Speculation(SpecMethod.MTP, 1)),
        ("deepseek_mtp:2", Speculation(SpecMethod.MTP, 2)),
        ("eagle3:3:Org/Draft-Head", Speculation(SpecMethod.EAGLE, 3, "Org/Draft-Head")),
    ],
)
def test_speculative_reads_the_engines_method_names(text: str, expected: Speculation) -> None:
    assert parse_speculative(text) == expected


def test_a_speculative_alias_is_kept_as_capcliffs_own_name() -> None:
    # a calibration fitted for eagle:3 applies to --speculative EAGLE3:3 (compared as text)
    assert settings_of({"speculative": "EAGLE3:3"}).speculative == "eagle:3"


def test_an_unknown_speculative_method_is_named_as_written(
    capsys: pytest.CaptureFixture[str],
) -> None:
    line = _one_line_error([*SWEEP, "--speculative", "Medusa:3"], capsys)
    assert line == (
        "error: --speculative: unknown method 'Medusa' in 'Medusa:3'; known: mtp, eagle, ngram"
    )


# A model card's HF repo id (what `vllm serve` takes) was read as a missing config.json path.
@pytest.mark.parametrize("name", ["meta-llama/Llama-3.1-8B", "META-LLAMA/llama-3.1-8b"])
def test_a_model_cards_hf_repo_id_names_the_card(name: str) -> None:
    assert get_model(name).id == "llama-3.1-8b"


def test_a_local_folder_named_like_a_repo_comes_first(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # as vLLM loads a local folder before the Hub: a 16-layer copy is read, not the card
    card = tomllib.loads((ROOT / "model_cards" / "llama-3.1-8b.toml").read_text())
    folder = tmp_path / "meta-llama" / "Llama-3.1-8B"
    folder.mkdir(parents=True)
    (folder / "config.json").write_text(json.dumps({**card["config"], "num_hidden_layers": 16}))
    monkeypatch.chdir(tmp_path)
    assert get_model("meta-llama/Llama-3.1-8B").arch.num_layers == 16


def test_a_repo_id_of_no_card_says_what_is_valid(capsys: pytest.CaptureFixture[str]) -> None:
    line = _one_line_error(["memory", "meta-llama/Llama-3.1-8B-Instruct", "--gpus", "1"], capsys)
    assert line == (
        "error: model: 'meta-llama/Llama-3.1-8B-Instruct' is no file or folder here and no model "
        "card's hf_repo (see capcliff models); give a catalog id, or the model's config.json or "
        "folder"
    )


def test_a_spec_model_may_be_a_cards_hf_repo_id(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _check_passes(tmp_path, SPEC.replace('"llama-3.1-8b"', '"meta-llama/Llama-3.1-8B"'), capsys)


# `--swap-space 4` (vLLM: 4 GiB) was simulated as a 4-byte swap pool.
@pytest.mark.parametrize("value", ["4", "0.5", " 16 ", "1000"])
def test_a_bare_swap_space_under_a_mebibyte_is_refused_as_gib(
    value: str, capsys: pytest.CaptureFixture[str]
) -> None:
    args = [*SWEEP, "--preemption", "swap", "--swap-space", value]
    line = _one_line_error(args, capsys)
    number = f"{float(value):g}"
    assert f"--swap-space: {number} bytes is under 1 MiB (a number without a unit" in line
    assert f"write e.g. {number}GiB" in line


def test_a_swap_space_with_its_unit_or_in_bytes_is_read(
    capsys: pytest.CaptureFixture[str],
) -> None:
    for value in ("4GiB", "4294967296", "512MiB"):
        assert main([*SWEEP, "--preemption", "swap", "--swap-space", value]) == 0, value
    capsys.readouterr()


def test_a_spec_swap_space_as_a_bare_small_integer_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    spec = tmp_path / "s.toml"
    key = 'layout = "tp1"\npreemption = "swap"\nswap_space = 8'
    spec.write_text(SPEC.replace('layout = "tp1"', key))
    line = _one_line_error(["check", str(spec)], capsys)
    assert line.startswith(f"error: {spec}: scenario[0].swap_space: 8 bytes is under 1 MiB")


# Scenario names: "s" and "s " printed alike and were two baseline keys; "   " named nothing.
@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("   ", "is blank; give the scenario a name"),
        ("s ", "'s ' has spaces at an end; give the name without them"),
        (" s", "' s' has spaces at an end; give the name without them"),
    ],
)
def test_a_blank_or_space_padded_scenario_name_is_refused(
    name: str, message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    spec = tmp_path / "s.toml"
    spec.write_text(SPEC.replace('name = "s"', f'name = "{name}"'))
    line = _one_line_error(["check", str(spec)], capsys)
    assert line == f"error: {spec}: scenario[0].name: {message}"


# TensorRT-LLM on an AMD GPU was simulated with NVIDIA's engine terms.
@pytest.mark.parametrize(
    "args",
    [
        [*SWEEP, "--engine", "trtllm", "--gpu", "mi300x"],
        ["memory", "llama-3.1-8b", "--gpus", "1", "--engine", "trtllm", "--gpu", "mi355x"],
        [*SWEEP, "--engine", "trtllm", "--disagg", "1p:tp1@mi300x,1d:tp1"],
    ],
    ids=["sweep", "memory", "disagg-part"],
)
def test_tensorrt_llm_on_an_amd_gpu_is_refused(
    args: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    line = _one_line_error(args, capsys)
    assert line.startswith("error: engine: trtllm runs on NVIDIA GPUs only, and mi3")
    assert line.endswith("is AMD's; use vllm or sglang there, or one of NVIDIA's GPUs")


def test_sglang_on_an_amd_gpu_is_sized(capsys: pytest.CaptureFixture[str]) -> None:
    assert main([*SWEEP, "--engine", "sglang", "--gpu", "mi300x"]) == 0, capsys.readouterr().err


# A spec's trace replayed by clients: `arrival = "clients"` (what the docs say a trace takes)
# was refused as if it were another arrival.
def _trace_spec(tmp_path: Path, arrival: str) -> Path:
    (tmp_path / "t.jsonl").write_text('{"input_tokens": 100, "output_tokens": 50}\n' * 8)
    spec = tmp_path / "s.toml"
    workload = f'trace = "t.jsonl"\narrival = "{arrival}"\nconcurrency = 4'
    spec.write_text(SPEC.split("[scenario.workload]")[0] + "[scenario.workload]\n" + workload)
    return spec


def test_a_spec_trace_may_say_its_arrival_is_clients(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _check_passes(tmp_path, _trace_spec(tmp_path, "clients").read_text(), capsys)


@pytest.mark.parametrize("arrival", ["poisson", "batch"])
def test_a_spec_trace_with_another_arrival_is_refused(
    arrival: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    spec = _trace_spec(tmp_path, arrival)
    line = _one_line_error(["check", str(spec)], capsys)
    assert line == (
        f"error: {spec}: scenario[0].workload.arrival: a trace replays its own arrival times "
        "(or clients)"
    )


# `check --junit cfg.yaml --force` replaced the vLLM config file the spec's serve_command runs.
@pytest.mark.parametrize(
    ("flags", "name"),
    [
        ("--config cfg.yaml", "cfg.yaml"),
        ("--config=cfg.yaml", "cfg.yaml"),
        ("--chat-template tmpl.jinja", "tmpl.jinja"),
    ],
)
def test_a_file_the_serve_command_names_is_never_an_output(
    flags: str, name: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    kept = tmp_path / name
    kept.write_text("max-num-seqs: 8\n")
    spec = tmp_path / "s.toml"
    command = f'serve_command = "vllm serve meta-llama/Llama-3.1-8B {flags}"'
    spec.write_text(SPEC.replace('model = "llama-3.1-8b"\n', "").replace('layout = "tp1"', command))
    line = _one_line_error(["check", str(spec), "--junit", str(kept), "--force"], capsys)
    assert line == f"error: --junit: {kept} is an input of this run; write elsewhere"
    assert kept.read_text() == "max-num-seqs: 8\n"


# `--max-model-len 32k` (vLLM's own flag reads k/K: "Supports k/m/g/K/M/G in human-readable
# format") was refused with "Input should be a valid integer".
@pytest.mark.parametrize(
    ("value", "tokens"),
    [("32K", 32 * 1024), ("32k", 32_000), ("32_768", 32_768), ("1.5k", 1_500), ("8192", 8192)],
)
def test_max_model_len_reads_vllms_human_readable_integers(
    value: str, tokens: int, capsys: pytest.CaptureFixture[str]
) -> None:
    capsys.readouterr()
    args = ["memory", "llama-3.1-8b", "--gpus", "1", "--format", "json"]
    assert main([*args, "--max-model-len", value]) == 0
    assert json.loads(capsys.readouterr().out)["max_model_len"] == tokens


@pytest.mark.parametrize("value", ["0", "-5", "abc", "1.5K", "1e3", "32 k"])
def test_a_max_model_len_that_is_no_whole_number_says_so(
    value: str, capsys: pytest.CaptureFixture[str]
) -> None:
    line = _one_line_error(["memory", "--max-model-len", value], capsys)
    assert line == f"error: --max-model-len: wants a whole number >= 1, got {value!r}"


# A batch scenario's `headroom` changed nothing, and its `replicas_max` held at one replica
# whatever it said: both size a fleet for a rate or clients (`plan --headroom` refuses a batch).
@pytest.mark.parametrize(
    ("table", "line", "key"),
    [
        ("[scenario.workload]", "headroom = 0.5", "headroom"),
        ("[scenario.expect]", "replicas_max = 2", "expect.replicas_max"),
    ],
)
def test_a_fleet_key_on_a_batch_scenario_is_refused(
    table: str, line: str, key: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    spec = tmp_path / "s.toml"
    where = f"{line}\n{table}" if key == "headroom" else f"{table}\n{line}"
    spec.write_text(SPEC.replace(table, where))
    message = _one_line_error(["check", str(spec)], capsys)
    assert message == (
        f"error: {spec}: scenario[0].{key}: sizes a fleet for the workload's rate or clients, and "
        "a batch has neither; give workload.rate or workload.clients, or drop it"
    )


def test_a_fleet_key_with_a_rate_is_judged(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    text = SPEC.replace('arrival = "batch"', "rate = 2.0").replace(
        "[scenario.workload]", "headroom = 0.5\n[scenario.workload]"
    )
    _check_passes(
        tmp_path, text.replace("[scenario.expect]", "[scenario.expect]\nreplicas_max = 2"), capsys
    )


# `--osl 100,,200` and `--osl 100,` dropped the empty item and swept what was left.
@pytest.mark.parametrize("osl", ["100,,200", "100,", ",100"])
def test_an_empty_item_in_an_output_length_list_is_refused(
    osl: str, capsys: pytest.CaptureFixture[str]
) -> None:
    args = ["sweep", "llama-3.1-8b", "--isl", "100", "--osl", osl, "--num-requests", "20"]
    line = _one_line_error([*args, "--concurrency", "4"], capsys)
    assert line.startswith(f"error: osl: cannot read {osl!r}; write 1024 or 1024,4096,16384")


# vLLM's `--served-model-name a b` (nargs="+": the server answers to both) was refused: "'b' is
# neither the model nor a flag's value".
@pytest.mark.parametrize(
    "line",
    [
        "vllm serve meta-llama/Llama-3.1-8B --served-model-name a b --tensor-parallel-size 2",
        "vllm serve --served-model-name a b --model meta-llama/Llama-3.1-8B -tp 2",
    ],
)
def test_vllm_served_model_name_takes_several_names(line: str) -> None:
    command = parse_serve_command(line)
    assert (command.model, command.layout.tp, command.unmodelled) == (
        "meta-llama/Llama-3.1-8B",
        2,
        (),
    )


def test_sglang_served_model_name_takes_one(capsys: pytest.CaptureFixture[str]) -> None:
    # SGLang's --served-model-name is one string (server_args.py): a second word is stray there
    line = "python -m sglang.launch_server --model-path meta-llama/Llama-3.1-8B "
    line += "--served-model-name a b"
    assert _one_line_error([*SWEEP, "--serve-command", line], capsys) == (
        "error: serve_command: 'b' is neither the model nor a flag's value; the engine refuses "
        "it (unrecognized arguments)"
    )


# A spec's `serve_command = "vllm serve ./m"` was read against the current directory, not the
# spec's folder as every other path of a spec is: refused from anywhere else.
def _model_folder_spec(tmp_path: Path, command: str) -> Path:
    card = tomllib.loads((ROOT / "model_cards" / "llama-3.1-8b.toml").read_text())
    (tmp_path / "specs" / "m").mkdir(parents=True)
    (tmp_path / "specs" / "m" / "config.json").write_text(json.dumps(card["config"]))
    spec = tmp_path / "specs" / "s.toml"
    line = f'serve_command = "{command}"'
    spec.write_text(SPEC.replace('model = "llama-3.1-8b"\n', "").replace('layout = "tp1"', line))
    return spec


@pytest.mark.parametrize("command", ["vllm serve ./m", "vllm serve m --tensor-parallel-size 1"])
def test_a_spec_serve_command_reads_its_model_folder_beside_the_spec(
    command: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    spec = _model_folder_spec(tmp_path, command)
    monkeypatch.chdir(tmp_path)  # not the spec's folder
    assert main(["check", str(spec)]) == 0, capsys.readouterr().err


def test_a_spec_serve_command_model_folder_that_is_nowhere_is_named(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    spec = _model_folder_spec(tmp_path, "vllm serve ./elsewhere")
    line = _one_line_error(["check", str(spec)], capsys)
    assert line == (
        f"error: {spec}: scenario[0].serve_command: the model folder './elsewhere' is not here "
        f"or in {spec.parent}; give its path"
    )


# A 249-byte file name is a file name (Linux allows 255 a part), but the temporary file beside
# it (".NAME.XXXXXXXX.tmp") was not: the run finished, then refused to write.
def test_an_output_with_a_long_but_valid_name_is_written(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    spec = tmp_path / "s.toml"
    spec.write_text(SPEC)
    junit = tmp_path / ("j" * 245 + ".xml")
    assert main(["check", str(spec), "--junit", str(junit)]) == 0, capsys.readouterr().err
    assert junit.read_text().startswith("<?xml")
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([junit.name, "s.toml"])


# vLLM's dotted JSON keys (`--speculative-config.method ngram`, the same as the JSON object;
# vllm utils/argparse_utils.py) were left out of the sizing as flags capcliff does not model.
@pytest.mark.parametrize(
    ("flags", "speculative"),
    [
        (
            "--speculative-config.method ngram --speculative-config.num_speculative_tokens 3",
            "ngram:3",
        ),
        (
            "--speculative_config.method=eagle3 --speculative-config.num_speculative_tokens=2 "
            "--speculative-config.model org/draft",
            "eagle:2:org/draft",
        ),
        (
            '--speculative-config \'{"method": "ngram"}\' '
            "--speculative-config.num_speculative_tokens 5",
            "ngram:5",
        ),
    ],
    ids=["dotted", "dotted-eq-with-draft", "json-then-dotted"],
)
def test_vllm_dotted_speculative_config_keys_are_read(flags: str, speculative: str) -> None:
    command = parse_serve_command(f"vllm serve meta-llama/Llama-3.1-8B {flags}")
    assert (command.settings["speculative"], command.unmodelled) == (speculative, ())


# `calibrate --kv-dtype fp8` on a vLLM log of kv_cache_dtype=auto fitted an FP8 cache the log
# never ran (the flag stood in for `auto`); a file written with `--kv-dtype fp8_e4m3` (or auto)
# was then refused for the very deployment it was made on ("fp8_e4m3 != fp8").
V16 = ROOT / "tests" / "fixtures" / "logs" / "vllm_v1_v16_llama31_8b_eager.txt"
DSR1_CSV = ROOT / "tests" / "fixtures" / "bench" / "dsr1_0528_h200_tp8_sglang.csv"


@pytest.mark.parametrize("kv", ["fp8", "fp8_e4m3"])
def test_calibrate_refuses_a_kv_dtype_the_log_did_not_run(
    kv: str, capsys: pytest.CaptureFixture[str]
) -> None:
    line = _one_line_error(["calibrate", str(V16), "--kv-dtype", kv], capsys)
    assert line == (
        "error: kv-cache-dtype: the log ran kv_cache_dtype=auto, which stored bf16 for "
        "llama-3.1-8b, not fp8 (the flag stands in only where a log omits it)"
    )


@pytest.mark.parametrize("kv", ["bf16", "fp16", "auto"])
def test_calibrate_takes_a_16_bit_kv_dtype_for_a_log_of_auto(
    kv: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["calibrate", str(V16), "--kv-dtype", kv]) == 0, capsys.readouterr().err


@pytest.mark.parametrize(("kv", "recorded"), [("fp8_e4m3", "fp8"), ("auto", "bf16")])
def test_a_calibration_written_with_a_kv_alias_applies_to_its_deployment(
    kv: str, recorded: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "c.toml"
    deployment = ["--gpu", "h200-sxm", "--gpus", "8", "--layout", "tp8", "--engine", "sglang"]
    args = ["calibrate", str(DSR1_CSV), "--model", "deepseek-r1", *deployment]
    assert main([*args, "--kv-dtype", kv, "-o", str(out)]) == 0, capsys.readouterr().err
    assert tomllib.loads(out.read_text())["kv_cache_dtype"] == recorded
    sweep = ["sweep", "deepseek-r1", *deployment, "--kv-dtype", kv]
    sweep += ["--isl", "100", "--osl", "100", "--num-requests", "20", "--concurrency", "4"]
    capsys.readouterr()
    assert main([*sweep, "--calibration", str(out)]) == 0, capsys.readouterr().err


# An integer of more digits than Python converts (4,300) in a human-readable integer raised
# ValueError where it was read exactly (`--tp 99...9`, `--max-model-len 99...9`).
@pytest.mark.parametrize(
    ("args", "line"),
    [
        (
            ["memory", "--max-model-len", "9" * 5000],
            f"error: --max-model-len: wants a whole number >= 1, got '{'9' * 5000}'",
        ),
        (
            [*SWEEP, "--serve-command", f"vllm serve meta-llama/Llama-3.1-8B --tp {'9' * 5000}"],
            f"error: serve_command: --tp wants a whole number >= 1, got '{'9' * 5000}'",
        ),
    ],
    ids=["max-model-len", "serve-tp"],
)
def test_a_5000_digit_integer_is_refused_in_one_line(
    args: list[str], line: str, capsys: pytest.CaptureFixture[str]
) -> None:
    # the line keeps its start and end and cuts the middle of the 5,000 digits (campaign 22:
    # an error line prints at most 1,000 characters)
    got = _one_line_error(args, capsys)
    head, tail = line.split("'", 1)[0], "9999'"
    assert got.startswith(head + "'9999") and got.endswith(tail), got[:80]
    assert "characters cut ...]" in got and len(got) <= len("error: ") + 1000
