"""Bad input that a twenty-first campaign (benchmarks/fuzz_cases21.py) found where a calibration
file travels between commands: a file fitted on one layout applied silently to `sweep --disagg`
pools (and a check spec's `disagg =`) of another layout, and a file fitted against one engine
release's step-time profile applied to another release's. Each is refused with one `error: ...`
line naming what differs (or, with --force, applied and said); the deployment the file was made
for is still answered.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from test_bad_input import _one_line_error

from capcliff.cli import main

# what `calibrate` writes for three `vllm bench serve` runs of llama-3.1-8b on one H100 (tp1):
# its header names the deployment, [step_time] the profile the scale was fitted against
ASYNC = "vllm V1 >= 0.14 (async scheduling)"  # vLLM 0.14 release notes: async scheduling on
CAL = f"""engine = "vllm"
source = "r.json"
model = "llama-3.1-8b"
model_shape = "llama L32 h4096 a32/kv8 d128 i14336 v128256 bf16"
gpu = "h100-sxm"
layout = "tp1"
kv_cache_dtype = "bf16"

[terms_gib]

[step_time]
fixed_s = 0.003475
scale = 1.8052
profile = "{ASYNC}"
source = "r.json"
points = 3
concurrency_min = 8
concurrency_max = 64
request_overhead_s = 0.0
"""
SMALL = ["--isl", "100", "--osl", "100", "--num-requests", "20", "--concurrency", "4"]


@pytest.fixture
def cal(tmp_path: Path) -> Path:
    path = tmp_path / "c.toml"
    path.write_text(CAL)
    return path


def _sweep(cal: Path, *extra: str) -> list[str]:
    return ["sweep", "llama-3.1-8b", "--gpu", "h100-sxm", *SMALL, "--calibration", str(cal),
            *extra]  # fmt: skip


@pytest.mark.parametrize("pools", ["1p:tp2,1d:tp2", "1p:tp1,1d:tp2", "1p:tp2,1d:tp1"])
def test_disagg_pool_of_another_layout_is_refused(
    cal: Path, pools: str, capsys: pytest.CaptureFixture[str]
) -> None:
    line = _one_line_error(_sweep(cal, "--disagg", pools), capsys)
    assert "layout tp1 != tp2" in line and "--force" in line, line


def test_disagg_pool_of_another_layout_forced_is_said(
    cal: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(_sweep(cal, "--disagg", "1p:tp2,1d:tp2", "--force")) == 0
    err = capsys.readouterr().err
    assert "applied to another deployment: layout tp1 != tp2" in err, err


def test_disagg_pools_of_the_files_own_layout_are_answered(
    cal: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(_sweep(cal, "--disagg", "1p:tp1,1d:tp1")) == 0
    assert "another deployment" not in capsys.readouterr().err


def _spec(tmp_path: Path, pools: str) -> Path:
    spec = tmp_path / "s.toml"
    spec.write_text(
        f'[[scenario]]\nname = "s"\nmodel = "llama-3.1-8b"\ngpu = "h100-sxm"\nengine = "vllm"\n'
        f'calibration = "c.toml"\ndisagg = "{pools}"\n[scenario.workload]\nisl = 100\n'
        'osl = 100\narrival = "batch"\nnum_requests = 20\nconcurrency = 4\n'
        "[scenario.expect]\nfits = true\n"
    )
    return spec


def test_check_disagg_pool_of_another_layout_is_refused(
    cal: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    line = _one_line_error(["check", str(_spec(tmp_path, "1p:tp2,1d:tp2"))], capsys)
    assert "scenario[0].calibration" in line and "layout tp1 != tp2" in line, line


def test_check_disagg_of_the_files_own_layout_is_answered(
    cal: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["check", str(_spec(tmp_path, "1p:tp1,1d:tp1"))]) == 0, capsys.readouterr().err


def test_file_fitted_on_another_release_profile_is_refused(
    cal: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # vLLM 0.9.0 runs V1 without async scheduling (on by default from 0.14.0): the file's
    # scale multiplies the 0.14 step model, not 0.9's
    line = _one_line_error(_sweep(cal, "--engine-version", "0.9.0"), capsys)
    assert f"step-time profile '{ASYNC}'" in line and "--force" in line, line


def test_file_whose_profile_is_another_engines_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "c.toml"
    path.write_text(CAL.replace(ASYNC, "sglang >= 0.4.8 (overlap scheduler)"))
    line = _one_line_error(_sweep(path), capsys)
    assert "step-time profile 'sglang >= 0.4.8 (overlap scheduler)'" in line, line


def test_file_of_an_unknown_profile_label_is_applied_and_said(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "c.toml"
    path.write_text(CAL.replace(ASYNC, "vllm"))  # a hand-written label, as older files have
    assert main(_sweep(path)) == 0
    err = capsys.readouterr().err
    assert "step-time profile 'vllm' is no profile capcliff knows" in err, err


def test_file_of_the_deployments_own_release_is_answered(
    cal: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(_sweep(cal, "--engine-version", "0.14.0")) == 0
    assert "profile" not in capsys.readouterr().err
