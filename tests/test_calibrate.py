"""`capcliff calibrate` round-trips on the public start-up logs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from capcliff.calibrate.calibration_file import load_calibration
from capcliff.calibrate.compare import calibrate
from capcliff.calibrate.startup_logs import parse_startup_log
from capcliff.catalog.catalogs import get_hardware, get_model
from capcliff.cli import app, main
from capcliff.memory.budget import BudgetSettings, EngineName
from capcliff.units import KVDType

LOGS = Path(__file__).parent / "fixtures" / "logs"
runner = CliRunner()


def _run(name: str, model_id: str, kv: KVDType = KVDType.BF16):  # type: ignore[no-untyped-def]
    log = parse_startup_log((LOGS / name).read_text())
    return calibrate(
        log, get_model(model_id), get_hardware("h200-sxm"), base=BudgetSettings(), kv_dtype=kv
    )


@pytest.mark.parametrize(
    ("name", "model_id", "blocks"),
    [
        ("vllm_v0_v01_llama31_8b_rtx3090_20k.txt", "llama-3.1-8b", 1952),
        ("vllm_v0_v24_llama3_8b_a100_40gb.txt", "llama-3.1-8b", 5691),
        ("vllm_v1_v04_qwen3_235b_fp8_8xl40s_tp8.txt", "qwen3-235b-a22b", 14_834),
    ],
)
def test_calibrated_prediction_lands_within_log_rounding(
    name: str, model_id: str, blocks: int
) -> None:
    # The logged GiB figures carry two decimals; five terms of +-0.005 GiB each move the KV pool by
    # up to 0.025 GiB, i.e. 0.25 % of V04's 10.64 GiB and 13 blocks of its 770,048-byte blocks.
    result = _run(name, model_id)
    by_name = {f.name: f for f in result.figures}
    assert by_name["kv_cache_gib"].calibrated == pytest.approx(
        by_name["kv_cache_gib"].logged, abs=0.025
    )
    assert by_name["gpu_blocks"].calibrated == pytest.approx(blocks, rel=0.0025)


def test_v04_log_states_its_layout_and_engine() -> None:
    result = _run("vllm_v1_v04_qwen3_235b_fp8_8xl40s_tp8.txt", "qwen3-235b-a22b")
    assert result.engine is EngineName.VLLM
    assert result.layout.name == "tp8-ep8"
    assert result.max_model_len == 32_768
    assert result.calibration.terms_gib["activation_peak"] == 1.40
    assert result.calibration.terms_gib["cudagraph"] == 3.45


def test_sglang_log_calibrates_to_its_token_count() -> None:
    result = _run("sglang_s02_qwq_32b_4xl4_tp4.txt", "deepseek-r1-distill-qwen-32b")
    tokens = next(f for f in result.figures if f.name == "kv_tokens")
    assert tokens.logged == 46_611
    assert 46_526 <= tokens.calibrated <= 46_715  # the interval the log's rounding allows


def test_cli_writes_a_calibration_that_memory_applies(tmp_path: Path) -> None:
    log = tmp_path / "v04.txt"
    log.write_text((LOGS / "vllm_v1_v04_qwen3_235b_fp8_8xl40s_tp8.txt").read_text())
    written = tmp_path / "v04.toml"
    result = runner.invoke(app, ["calibrate", str(log), "-o", str(written)])
    assert result.exit_code == 0, result.output
    assert load_calibration(written).terms_gib["non_torch"] == 0.21
    report = runner.invoke(
        app,
        ["memory", "qwen3-235b-a22b", "--layout", "tp8-ep8", "--weight-dtype", "fp8",
         "--calibration", str(written), "--format", "json"],
    )  # fmt: skip
    assert report.exit_code == 0
    assert '"provenance": "calibrated"' in report.output


def test_cli_keeps_an_existing_output_without_force(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    log = tmp_path / "v01.txt"
    log.write_text((LOGS / "vllm_v0_v01_llama31_8b_rtx3090_20k.txt").read_text())
    keep = tmp_path / "mine.toml"
    keep.write_text("precious\n")
    code = main(["calibrate", str(log), "--model", "llama-3.1-8b", "--output", str(keep)])
    assert code == 2
    assert keep.read_text() == "precious\n"
    assert "exists; pass --force" in capsys.readouterr().err


def test_cli_unknown_log_is_one_line_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    log = tmp_path / "noise.txt"
    log.write_text("hello\nworld\n")
    assert main(["calibrate", str(log)]) == 2
    assert capsys.readouterr().err.count("\n") == 1


def test_bad_calibration_file_names_the_field(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text('engine = "vllm"\nsource = "x"\n[terms_gib]\nwarp_drive = 1.0\n')
    assert main(["memory", "llama-3.1-8b", "--calibration", str(bad)]) == 2
    assert "bad.toml: terms_gib: " in capsys.readouterr().err


def test_sweep_and_plan_apply_a_calibration(tmp_path: Path) -> None:
    # Row V24's fitted activation peak (9.37 GiB) is ~8.4 GiB above the modeled one: with it
    # applied, the same GPU holds fewer KV blocks.
    written = tmp_path / "v24.toml"
    log = LOGS / "vllm_v0_v24_llama3_8b_a100_40gb.txt"
    assert main(["calibrate", str(log), "--model", "llama-3.1-8b", "-o", str(written)]) == 0
    args = ["--isl", "100", "--osl", "200", "--num-requests", "50", "--format", "json"]
    args = ["llama-3.1-8b", "--engine", "vllm-v0", *args]  # the log's model and engine
    plain = runner.invoke(app, ["sweep", *args, "--concurrency", "16"])
    calibrated = runner.invoke(
        app, ["sweep", *args, "--concurrency", "16", "--calibration", str(written)]
    )
    blocks = [
        json.loads(r.stdout)["series"][0]["kv_blocks_per_replica"] for r in (plain, calibrated)
    ]
    assert blocks[1] < blocks[0]
    plan = runner.invoke(app, ["plan", *args, "--arrival", "batch", "--calibration", str(written)])
    assert plan.exit_code == 0, plan.output
