"""Findings of the random-combination campaign's seeds 53-58 (benchmarks/fuzz_random.py, issue 23),
each value worked by hand or read from the engines' source."""

from __future__ import annotations

from pathlib import Path

import pytest

from capcliff.cli import main

FIXTURES = Path(__file__).parent / "fixtures"
LOG = FIXTURES / "logs" / "vllm_v1_v35_dsr1_0528_fp4_4xb200_tp4_ep4.txt"
OTHER_LOG = FIXTURES / "logs" / "vllm_v1_v16_llama31_8b_eager.txt"
BENCH = FIXTURES / "bench" / "dsr1_0528_h200_tp8_sglang.csv"
BENCH_ARGS = ["--model", "deepseek-r1", "--gpu", "h200-sxm", "--gpus", "8", "--layout", "tp8"]


# `calibrate --force -o FILE` keeps the sections of the calibration it replaces, so it reads FILE
# as one. Seed 57 (random: `calibrate LOG --kv-cache-dtype fp8 --force --output logs/log.txt`, a
# start-up log there) printed the comparison and "written: .../logs/log.txt", then "error: ...:
# (toml): Invalid statement (at line 6, column 1)", exit 2, with the log unchanged.
@pytest.mark.parametrize(
    "argv",
    [
        [str(LOG)],
        [str(BENCH), *BENCH_ARGS, "--engine", "sglang"],
    ],
    ids=["start-up log", "benchmark"],
)
def test_replacing_a_file_that_is_no_calibration_is_refused_before_any_answer(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, argv: list[str]
) -> None:
    target = tmp_path / "log.txt"
    target.write_bytes(OTHER_LOG.read_bytes())
    assert main(["calibrate", *argv, "--force", "--output", str(target)]) == 2
    out, err = capsys.readouterr()
    assert out == ""  # no table, no "written:"
    lines = err.strip().splitlines()
    assert len(lines) == 1
    assert lines[0].startswith(f"error: --output: {target} is no calibration file ((toml): ")
    assert target.read_bytes() == OTHER_LOG.read_bytes()


def test_a_calibration_is_still_replaced_with_force_keeping_its_step_time(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    target = tmp_path / "cal.toml"
    assert (
        main(["calibrate", str(BENCH), *BENCH_ARGS, "--engine", "sglang", "-o", str(target)]) == 0
    )
    assert main(["calibrate", str(LOG), "--gpu", "b200", "--force", "-o", str(target)]) == 0
    capsys.readouterr()
    text = target.read_text()
    assert "[step_time]" in text  # the benchmark's section, kept
    assert 'source = "' + str(LOG) + '"' in text  # the log's start-up terms, written
