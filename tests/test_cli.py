"""The command line: exit codes first, then text, then parsed JSON."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from capcliff.catalog.catalogs import model_catalog
from capcliff.cli import app, main

runner = CliRunner()


def _json(*args: str) -> dict:  # type: ignore[type-arg]
    result = runner.invoke(app, [*args, "--format", "json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.output)  # type: ignore[no-any-return]


def _layout(report: dict, name: str) -> dict:  # type: ignore[type-arg]
    return next(lay for lay in report["layouts"] if lay["name"] == name)


def test_memory_json_has_the_documented_fields() -> None:
    report = _json("memory", "llama-3.1-8b")
    assert report["schema_version"] == 2
    assert report["model"] == "llama-3.1-8b"
    assert report["params_total"] == 8_030_261_248
    assert report["kv_bytes_per_token"] == 131_072  # 2 * 32 * 8 * 128 * 2
    for lay in report["layouts"]:
        for key in ("dp", "tp", "pp", "ep"):
            assert isinstance(lay[key], int)
        for key in ("valid", "reason", "weights_bytes_per_gpu", "kv_bytes_per_token_per_gpu"):
            assert key in lay
        assert "kv_capacity_tokens_per_replica" in lay and "fits" in lay


@pytest.mark.parametrize(
    ("model_id", "tp", "per_gpu"),
    [
        ("llama-3.1-70b", 8, 40_960),  # 327,680 / 8
        ("deepseek-r1", 8, 70_272),  # MLA: 61 * 576 * 2 on every rank
        ("deepseek-r1-distill-qwen-32b", 2, 131_072),  # 262,144 / 2
    ],
)
def test_memory_json_per_gpu_kv_bytes(model_id: str, tp: int, per_gpu: int) -> None:
    report = _json("memory", model_id, "--layout", f"tp{tp}")
    assert _layout(report, f"tp{tp}")["kv_bytes_per_token_per_gpu"] == per_gpu


def test_fp8_kv_flag_halves_kv_bytes() -> None:
    report = _json("memory", "llama-3.1-405b", "--kv-dtype", "fp8", "--layout", "tp8")
    assert report["kv_bytes_per_token"] == 258_048  # 516,096 / 2


def test_memory_json_source_notes_32b_figures() -> None:
    # 32B: ~64 GB weights/GPU at DP, ~8 GB at TP=8 (the notes' round figures; 3 % tolerance).
    report = _json("memory", "deepseek-r1-distill-qwen-32b")
    assert _layout(report, "dp8")["weights_bytes_per_gpu"] / 1e9 == pytest.approx(64, rel=0.03)
    assert _layout(report, "tp8")["weights_bytes_per_gpu"] / 1e9 == pytest.approx(8, rel=0.03)


def test_memory_mla_model_warns_about_replication() -> None:
    report = _json("memory", "deepseek-r1", "--layout", "tp8")
    assert any("MLA latent" in w for w in _layout(report, "tp8")["warnings"])


def test_405b_bf16_on_one_gpu_is_an_answer_not_an_error() -> None:
    result = runner.invoke(app, ["memory", "llama-3.1-405b", "--layout", "tp1"])
    assert result.exit_code == 0
    assert "does not fit: weights 811.7 GB/GPU > 135.7 GB usable" in result.output


def test_memory_table_lists_layouts_and_invalid_ones() -> None:
    # 16 H200s: TP=16 would span two NVLink domains.
    result = runner.invoke(app, ["memory", "llama-3.1-8b", "--gpus", "16"])
    assert result.exit_code == 0
    assert "dp8-tp2" in result.output
    assert "invalid layouts:" in result.output
    assert "tp16: TP=16 spans more than the 8-GPU" in result.output


def test_models_and_hardware_list_the_catalogs() -> None:
    models = runner.invoke(app, ["models"])
    hardware = runner.invoke(app, ["hardware"])
    assert models.exit_code == 0 and hardware.exit_code == 0
    for model_id in model_catalog():
        assert model_id in models.output
    assert "h200-sxm" in hardware.output and "mi355x" in hardware.output


def test_config_json_path_works_as_model(tmp_path: Path) -> None:
    path = tmp_path / "config.json"
    path.write_text(json.dumps(model_catalog()["qwen3-8b"].config))
    report = _json("memory", str(path), "--layout", "tp1")
    assert report["kv_bytes_per_token"] == 147_456  # 2 * 36 * 8 * 128 * 2


def _run_main(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main(args)
    out, err = capsys.readouterr()
    return code, out, err


def test_bad_model_id_is_one_line_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = _run_main(["memory", "llama-3.1-8"], capsys)
    assert code == 2
    assert err.count("\n") == 1
    assert err.startswith("error: model: unknown id 'llama-3.1-8'; did you mean llama-3.1-8b")
    assert "Traceback" not in err


def test_bad_layout_is_one_line_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = _run_main(["memory", "llama-3.1-8b", "--layout", "tp3x"], capsys)
    assert code == 2
    assert re.fullmatch(r"error: layout: cannot read 'tp3x'.*\n", err)


def test_bad_utilization_is_one_line_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = _run_main(["memory", "--gpu-memory-utilization", "1.5"], capsys)
    assert code == 2
    assert err == (
        "error: --gpu-memory-utilization: Input should be less than or equal to 1, got 1.5\n"
    )


def test_unknown_flag_is_a_usage_error_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, _ = _run_main(["memory", "--no-such-flag"], capsys)
    assert code == 2


def test_every_command_has_help() -> None:
    for command in ("memory", "models", "hardware", "calibrate", "sweep", "plan", "check"):
        result = runner.invoke(app, [command, "--help"])
        assert result.exit_code == 0
        assert result.output.strip()


def test_every_command_appears_in_readme() -> None:
    readme = (Path(__file__).parent.parent / "README.md").read_text()
    for command in ("memory", "models", "hardware", "calibrate", "sweep", "plan", "check"):
        assert f"capcliff {command}" in readme


def test_python_dash_m_runs() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "capcliff", "hardware", "--format", "json"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0
    assert {"h200-sxm", "b200"} <= {spec["id"] for spec in json.loads(result.stdout)}


def test_version_prints_the_package_version() -> None:
    from capcliff import __version__

    result = runner.invoke(app, ["--version"])
    assert result.exit_code == 0
    assert result.output.strip() == f"capcliff {__version__}"


@pytest.mark.parametrize(
    ("target", "argv"),
    [
        ("capcliff.memory.layout_memory.LayoutMemory.max_concurrency", ["memory", "llama-3.1-8b"]),
        (
            "capcliff.sim.loop.replica.ReplicaSim.run",
            ["plan", "llama-3.1-8b", "--isl", "64", "--osl", "64", "--num-requests", "20"],
        ),
    ],
    ids=["memory", "plan"],
)
def test_an_internal_error_exits_4_with_its_traceback(
    target: str,
    argv: list[str],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    # A bug planted in the core, reached through the real entry point (`capcliff.cli.main:main`,
    # what the console script and `python -m capcliff` run).
    def broken(*args: object, **kwargs: object) -> None:
        raise ZeroDivisionError("planted")

    monkeypatch.setattr(target, broken)
    monkeypatch.setenv("CAPCLIFF_SIM_CORE", "python")  # the loop planted in, not its compiled copy
    assert main(argv) == 4
    err = capsys.readouterr().err
    assert "Traceback" in err
    assert "ZeroDivisionError: planted" in err


def test_main_collects_garbage_rarely_while_it_runs_and_restores_the_thresholds() -> None:
    import gc
    import importlib

    main_module = importlib.import_module("capcliff.cli.main")  # `capcliff.cli.main` is main

    seen: list[tuple[int, int, int]] = []
    before = gc.get_threshold()
    gc.set_threshold(700, 10, 10)  # CPython's defaults
    try:
        with pytest.MonkeyPatch.context() as mp:
            mp.setattr(main_module, "_run", lambda argv: seen.append(gc.get_threshold()) or 3)
            assert main(["--version"]) == 3
        assert seen == [(100_000, 10, 10)]
        assert gc.get_threshold() == (700, 10, 10)
    finally:
        gc.set_threshold(*before)


def test_only_a_command_line_run_freezes_the_heap_as_it_ends() -> None:
    import gc
    import importlib

    main_module = importlib.import_module("capcliff.cli.main")  # `capcliff.cli.main` is main

    frozen: list[str] = []
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(main_module, "_run", lambda argv: 0)
        mp.setattr(gc, "freeze", lambda: frozen.append("frozen"))
        main(["--version"])  # a caller's argv: the caller's process goes on
        assert frozen == []
        main()  # the console script's call: the process exits next
        assert frozen == ["frozen"]


def test_a_run_naming_its_command_builds_only_that_command_and_restores_the_rest() -> None:
    import typer.main

    every = list(app.registered_commands)
    built: list[list[str]] = []
    with pytest.MonkeyPatch.context() as mp:  # the run: which commands typer would build
        mp.setattr(type(app), "__call__", lambda self, **kw: built.append(sorted(_commands())) or 0)
        assert main(["models", "--format", "json"]) == 0
        assert main(["--help"]) == 0
    assert built == [["models"], sorted(_commands())]  # an option first: every command
    assert app.registered_commands == every
    assert typer.main.get_command(app).name == "capcliff"


def _commands() -> list[str]:
    import typer.main

    return list(typer.main.get_command(app).commands)  # type: ignore[attr-defined]
