"""Bad input that a seventeenth campaign (benchmarks/fuzz_cases17.py) found on the offload,
serve-command and baseline surfaces, and the valid spellings it found refused. Each bad input
exits 2 with one `error: ...` line naming the field and what is valid; an engine command line
is printed only with flags that engine's release accepts.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from test_bad_input import _one_line_error
from test_bad_input_campaign4 import SPEC

from capcliff.analysis.flags import Deployment, unexpressed, vllm_command
from capcliff.analysis.serve_command import parse_serve_command
from capcliff.catalog.layout import Layout
from capcliff.check.report import parse_baseline
from capcliff.cli import main
from capcliff.errors import CatalogError, InputError
from capcliff.units import GIB


def _served(*, vllm_v0: bool) -> Deployment:
    return Deployment(
        model="meta-llama/Llama-3.1-8B", layout=Layout(tp=1), max_num_seqs=256,
        max_num_batched_tokens=8192, max_model_len=8192, gpu_memory_utilization=0.9,
        mem_fraction_static=0.88, kv_cache_dtype="auto", moe=False, mla=False,
        offload_cpu_bytes=64 * GIB, vllm_v0=vllm_v0,
    )  # fmt: skip


# `--offload cpu:64GiB --engine vllm-v0` printed `--kv-offloading-backend native
# --kv-offloading-size 64`: V1's OffloadingConnector flags (vllm/config/cache.py, vLLM 0.11,
# after V0's removal), which V0's parser refuses.
def test_vllm_v1_line_sets_the_cpu_tier_in_gib() -> None:
    line = vllm_command(_served(vllm_v0=False))
    assert "--kv-offloading-backend native" in line
    assert "--kv-offloading-size 64" in line  # 64 GiB per replica, the sum over its ranks


def test_vllm_v0_line_has_no_v1_offloading_flags_and_says_so() -> None:
    served = _served(vllm_v0=True)
    assert "kv-offloading" not in vllm_command(served)
    said = [line for line in unexpressed(served, "vllm") if "vLLM V0" in line]
    assert len(said) == 1 and "64 GiB per replica" in said[0]


def test_vllm_v1_says_nothing_about_v0() -> None:
    assert not [line for line in unexpressed(_served(vllm_v0=False), "vllm") if "V0" in line]


# VLLM_USE_V1=0 (vllm/envs.py, 0.7 - 0.10: bool(int(os.getenv("VLLM_USE_V1", "1")))) runs V0:
# it was a flag "not modelled" and the command was sized as V1.
def test_vllm_use_v1_zero_reads_as_the_v0_engine() -> None:
    command = parse_serve_command("VLLM_USE_V1=0 vllm serve meta-llama/Llama-3.1-8B")
    assert command.settings["engine"] == "vllm-v0"
    assert command.unmodelled == ()


def test_vllm_use_v1_one_is_the_default_v1_engine() -> None:
    command = parse_serve_command("VLLM_USE_V1=1 vllm serve meta-llama/Llama-3.1-8B")
    assert command.settings["engine"] == "vllm"
    assert command.unmodelled == ()


def test_v0_with_v1_offloading_flags_is_refused() -> None:
    text = "VLLM_USE_V1=0 vllm serve m --kv-offloading-backend native --kv-offloading-size 64"
    with pytest.raises(InputError, match=r"serve_command: --kv-offloading-size.*V1's"):
        parse_serve_command(text)


def test_v1_offloading_flags_are_the_cpu_tier() -> None:
    text = "VLLM_USE_V1=1 vllm serve m --kv-offloading-backend=native --kv-offloading-size=64"
    assert parse_serve_command(text).settings["offload"] == "cpu:64GiB"


# `env VAR=1 vllm serve ...` runs the same command as `VAR=1 vllm serve ...`; it was refused.
def test_env_prefix_is_read_like_the_bare_assignments() -> None:
    command = parse_serve_command(
        "env CUDA_VISIBLE_DEVICES=0,1 vllm serve m --tensor-parallel-size 2"
    )
    assert command.layout.tp == 2 and command.unmodelled == ()


def test_env_prefix_assignments_still_apply() -> None:
    with pytest.raises(InputError, match=r"CUDA_VISIBLE_DEVICES names 1 GPU"):
        parse_serve_command("env CUDA_VISIBLE_DEVICES=0 vllm serve m --tensor-parallel-size 2")


# Baselines: pydantic's lax mode read "684" as 684.0 and true as 1.0; negative counts and a KV
# utilisation of 2 passed; all compared as if stored by capcliff.
def _baseline(**changes: object) -> str:
    figures = {
        "layout": "tp1",
        "output_throughput_tok_s": 684.0,
        "analytic_cliff_concurrency": 1993,
        "peak_kv_utilization": 0.002,
        **changes,
    }
    return json.dumps(
        {"kind": "capcliff-check-baseline", "schema_version": 1, "scenarios": {"s": figures}}
    )


@pytest.mark.parametrize(
    ("change", "field", "message"),
    [
        ({"output_throughput_tok_s": "684"}, "output_throughput_tok_s", "valid number"),
        ({"output_throughput_tok_s": True}, "output_throughput_tok_s", "valid number"),
        ({"analytic_cliff_concurrency": -1}, "analytic_cliff_concurrency", "greater than or eq"),
        ({"peak_kv_utilization": 2.0}, "peak_kv_utilization", "less than or equal to 1"),
        ({"ttft_p99_s": -0.5}, "ttft_p99_s", "greater than or equal to 0"),
    ],
)  # fmt: skip
def test_a_baseline_figure_of_the_wrong_kind_is_refused(
    change: dict[str, object], field: str, message: str, tmp_path: Path
) -> None:
    with pytest.raises(CatalogError, match=rf"b\.json: scenarios\.s\.{field}: .*{message}"):
        parse_baseline(_baseline(**change), path=tmp_path / "b.json")


def test_a_whole_number_for_an_amount_is_read() -> None:
    stored = parse_baseline(_baseline(output_throughput_tok_s=684), path=Path("b.json"))
    assert stored.scenarios["s"].output_throughput_tok_s == 684.0


# A baseline written from another spec (or with no scenarios) skipped every comparison and the
# check passed, having compared nothing.
@pytest.mark.parametrize("scenarios", [{"other": {"layout": "tp1"}}, {}])
def test_a_baseline_of_none_of_the_specs_scenarios_is_refused(
    scenarios: dict[str, object], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "s.toml").write_text(SPEC)
    baseline = {"kind": "capcliff-check-baseline", "schema_version": 1, "scenarios": scenarios}
    (tmp_path / "b.json").write_text(json.dumps(baseline))
    line = _one_line_error(
        ["check", str(tmp_path / "s.toml"), "--baseline", str(tmp_path / "b.json")], capsys
    )
    assert "baseline: holds none of this spec's scenarios (s)" in line
    assert "--write-baseline" in line


def test_a_baseline_missing_one_new_scenario_still_compares_the_other(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    two = SPEC + SPEC.replace('name = "s"', 'name = "t"')
    (tmp_path / "s.toml").write_text(two)
    baseline = {
        "kind": "capcliff-check-baseline",
        "schema_version": 1,
        "scenarios": {"s": {"layout": "tp1"}},
    }
    (tmp_path / "b.json").write_text(json.dumps(baseline))
    assert main(["check", str(tmp_path / "s.toml"), "--baseline", str(tmp_path / "b.json")]) == 0
    assert "no baseline for this scenario" in capsys.readouterr().out


# A plan on vLLM V0 under the V1 policy (prefix caching on) tried host offload sizes and would
# have recommended V1's --kv-offloading flags; V0 has none, so none is tried.
def test_a_v0_plan_tries_no_host_offload(capsys: pytest.CaptureFixture[str]) -> None:
    args = ["plan", "llama-3.1-8b", "--jobs", "1", "--num-requests", "20", "--gpus", "1",
            "--slo-ttft", "2", "--workload", "multiturn-chat", "--clients", "4",
            "--engine", "vllm-v0", "--policy", "vllm"]  # fmt: skip
    assert main(args) == 0
    out = capsys.readouterr().out
    assert "caching on" in out  # the reuse advice ran
    assert "offload 64 GiB" not in out and "kv-offloading" not in out


def test_engine_vllm_v0_with_a_v1_offloading_line_is_refused(
    capsys: pytest.CaptureFixture[str],
) -> None:
    line = (
        "vllm serve meta-llama/Llama-3.1-8B --kv-offloading-backend native --kv-offloading-size 64"
    )
    args = ["sweep", "llama-3.1-8b", "--isl", "100", "--osl", "100", "--num-requests", "20",
            "--concurrency", "4", "--engine", "vllm-v0", "--serve-command", line]  # fmt: skip
    error = _one_line_error(args, capsys)
    assert "--engine vllm-v0 runs V0, which has no KV offloading flag" in error
