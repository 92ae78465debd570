"""What a person reads and pastes: tables that never cut a number, paste-safe engine commands,
progress per simulated point, and the advertised swap preemption and DP routing reachable."""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path

import pytest

from capcliff.cli import main

ROOT = Path(__file__).resolve().parent.parent
# Every layout of 8 GPUs for llama-3.1-405b at 32k: names up to 11 characters, numbers up to 7.
MEMORY_405B = ["memory", "llama-3.1-405b", "--max-model-len", "32768"]
LAYOUTS_405B = ("dp8", "dp4-tp2", "dp2-tp4", "tp8", "dp4-pp2", "dp2-tp2-pp2", "tp4-pp2", "pp8")


def _screen(args: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    assert main(args) == 0
    return capsys.readouterr().out


def test_piped_output_takes_the_width_it_needs(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("COLUMNS", raising=False)
    out = _screen(MEMORY_405B, capsys)
    assert "…" not in out
    for name in LAYOUTS_405B:
        assert re.search(rf"│ {re.escape(name)} +│", out), name
    # the header is one line, not folded at 100 columns
    assert "(weights bf16, KV bf16, max_model_len 32,768)" in out.splitlines()[0]


@pytest.mark.parametrize("columns", [80, 60, 40])
def test_a_narrow_terminal_never_cuts_a_number(
    columns: int, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    report = json.loads(_screen([*MEMORY_405B, "--format", "json"], capsys))
    monkeypatch.setenv("COLUMNS", str(columns))
    out = _screen(MEMORY_405B, capsys)
    assert "…" not in out
    assert max(len(line) for line in out.splitlines()) <= columns
    # every layout's KV capacity per replica is printed whole at every width
    for lay in report["layouts"]:
        assert f"{lay['kv_capacity_tokens_per_replica']:,}" in out
    for name in LAYOUTS_405B:
        assert re.search(rf"(^|│ ){re.escape(name)}( |$)", out, flags=re.MULTILINE), name


def test_at_80_columns_the_sweep_drops_its_bar_chart_first(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "80")
    args = ["sweep", "llama-3.1-8b", "--isl", "1000", "--osl", "1000", "--num-requests", "64"]
    out = _screen([*args, "--concurrency", "16,64"], capsys)
    assert "█" not in out and "tok/s bar" not in out
    assert "TTFT s" in out and "…" not in out


def _commands(capsys: pytest.CaptureFixture[str], *extra: str) -> dict[str, str]:
    args = ["plan", *extra, "--isl", "100", "--osl", "100", "--num-requests", "40"]
    assert main([*args, "--format", "json"]) == 0
    flags: dict[str, str] = json.loads(capsys.readouterr().out)["engine_flags"]
    return flags


def test_engine_commands_are_one_option_per_line_and_paste_into_a_shell(
    capsys: pytest.CaptureFixture[str],
) -> None:
    vllm = _commands(capsys, "llama-3.1-8b")["vllm"]
    lines = vllm.splitlines()
    assert lines[0] == "vllm serve meta-llama/Llama-3.1-8B \\"
    assert all(line.endswith(" \\") for line in lines[:-1]) and not lines[-1].endswith("\\")
    assert all(line.startswith("  --") for line in lines[1:])
    argv = shlex.split(vllm.replace("\\\n", " "))
    assert argv[:3] == ["vllm", "serve", "meta-llama/Llama-3.1-8B"]
    # 200 tokens need 1,024 (simulated); the line serves the model's context, same KV pool
    assert argv[argv.index("--max-model-len") + 1] == "131072"


def _config_dir(tmp_path: Path, name: str | None) -> Path:
    import tomllib

    card = tomllib.loads((ROOT / "model_cards" / "llama-3.1-8b.toml").read_text())
    folder = tmp_path / "my model"  # a space: the path must be quoted
    folder.mkdir()
    config = dict(card["config"])
    if name is not None:
        config["_name_or_path"] = name
    (folder / "config.json").write_text(json.dumps(config))
    return folder


def test_a_local_config_serves_its_hf_repo_id(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = _config_dir(tmp_path, "acme/llama-tuned")
    assert shlex.split(_commands(capsys, str(folder))["vllm"].replace("\\\n", " "))[2] == (
        "acme/llama-tuned"
    )


def test_a_local_directory_is_served_only_when_asked_and_quoted(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = _config_dir(tmp_path, None)
    flags = _commands(capsys, str(folder), "--serve-local-path")
    assert f"vllm serve '{folder}' \\" == flags["vllm"].splitlines()[0]
    unnamed = _commands(capsys, str(folder))
    assert unnamed["vllm"].splitlines()[0] == "vllm serve HF_REPO_ID \\"


def test_sweep_progress_ticks_once_per_simulated_point() -> None:
    from capcliff.analysis.deployment import resolve
    from capcliff.analysis.deployment_settings import DeploymentSettings
    from capcliff.analysis.sweep.report import SweepPlan, build_sweep_report
    from capcliff.analysis.workloads import WorkloadChoice, plan_workloads
    from capcliff.catalog.catalogs import get_hardware, get_model
    from capcliff.catalog.layout import parse_layout

    dep = resolve(get_model("llama-3.1-8b"), get_hardware("h200-sxm"), DeploymentSettings())
    label, workloads = plan_workloads(WorkloadChoice(num_requests=20, isl=50, osl=(20, 40)), 0)
    plan = SweepPlan(
        layouts=(parse_layout("tp1"),), workloads=tuple(workloads), concurrencies=(2, 4, 8),
        workload_label=label, seed=0,
    )  # fmt: skip
    ticks: list[int] = []
    build_sweep_report(dep, plan, max_model_len=1024, progress=lambda: ticks.append(1))
    assert len(ticks) == 6  # 1 layout x 2 output lengths x 3 concurrencies


SHORT_KV = ["llama-3.1-8b", "--isl", "1000", "--osl", "1000", "--num-requests", "64",
            "--concurrency", "64", "--kv-cache-memory", "1GiB"]  # fmt: skip
# 1 GiB / 131,072 B per token = 8,192 tokens of KV against 64 x 2,000: it must preempt.


def _point(capsys: pytest.CaptureFixture[str], *args: str) -> dict[str, float]:
    assert main(["sweep", *args, "--format", "json"]) == 0
    point: dict[str, float] = json.loads(capsys.readouterr().out)["series"][0]["points"][0]
    return point


def test_swap_preemption_is_reachable_and_changes_the_run(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # without the prefix cache, which under recompute gives a preempted request back its blocks
    # not yet reused (V1's default) and under swap is not modelled
    recompute = _point(capsys, *SHORT_KV, "--prefix-caching", "off")
    swap = _point(capsys, *SHORT_KV, "--preemption", "swap")
    assert recompute["preemptions"] > 0
    assert swap["makespan_s"] != recompute["makespan_s"]
    # a swap pool too small for any request falls back to recompute: the same run
    tiny = _point(capsys, *SHORT_KV, "--preemption", "swap", "--swap-space", "1MiB")
    assert tiny["makespan_s"] == pytest.approx(recompute["makespan_s"])


def test_least_loaded_routing_is_reachable(capsys: pytest.CaptureFixture[str]) -> None:
    args = ["llama-3.1-8b", "--layout", "dp2", "--workload", "chat", "--num-requests", "200",
            "--concurrency", "64"]  # fmt: skip
    rr = _point(capsys, *args)
    least = _point(capsys, *args, "--routing", "least-loaded")
    assert least["makespan_s"] != rr["makespan_s"]


def test_a_spec_takes_preemption_routing_and_the_memory_settings(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    spec = tmp_path / "capcliff.toml"
    spec.write_text(
        '[[scenario]]\nname = "s"\nmodel = "llama-3.1-8b"\ngpu = "h200-sxm"\nlayout = "dp2"\n'
        'preemption = "swap"\nswap_space = "8GiB"\nrouting = "least-loaded"\n'
        'kv_cache_memory = "2GiB"\nmax_num_seqs = 32\nmax_num_batched_tokens = 4096\n'
        'weight_dtype = "fp8"\n'
        "[scenario.workload]\nisl = 500\nosl = 500\nnum_requests = 64\nconcurrency = 32\n"
    )
    assert main(["check", str(spec), "--format", "json"]) == 0
    scenario = json.loads(capsys.readouterr().out)["scenarios"][0]
    # 2 GiB / 131,072 B per token (bf16 KV) = 16,384 tokens per replica
    assert scenario["figures"]["kv_capacity_tokens_per_replica"] == 16_384


def test_a_bad_spec_setting_names_its_key(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    spec = tmp_path / "capcliff.toml"
    spec.write_text(
        '[[scenario]]\nname = "s"\nmodel = "llama-3.1-8b"\ngpu = "h200-sxm"\nlayout = "tp1"\n'
        'routing = "random"\nseed = -1\n[scenario.workload]\nisl = 10\nosl = nan\n'
    )
    assert main(["check", str(spec)]) == 2
    err = capsys.readouterr().err
    assert "scenario[0].routing: Input should be 'round-robin' or 'least-loaded'" in err
    assert "scenario[0].seed: Input should be greater than or equal to 0" in err
    assert "scenario[0].workload.osl: " in err


def test_planned_fp8_weights_become_online_quantization_in_the_commands(
    capsys: pytest.CaptureFixture[str],
) -> None:
    flags = _commands(capsys, "llama-3.1-8b", "--weight-dtype", "fp8")
    for command in flags.values():
        argv = shlex.split(command.replace("\\\n", " "))
        assert argv[argv.index("--quantization") + 1] == "fp8"


def test_weights_no_engine_quantizes_at_load_are_a_warning(
    capsys: pytest.CaptureFixture[str],
) -> None:
    args = ["plan", "llama-3.1-8b", "--weight-dtype", "int4", "--isl", "100", "--osl", "100"]
    assert main([*args, "--num-requests", "40", "--format", "json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert "--quantization" not in report["engine_flags"]["vllm"]
    assert any(
        w.startswith("--weight-dtype int4: the engines cannot") for w in report["flag_warnings"]
    )


@pytest.mark.parametrize("columns", [80, 50])
def test_the_online_plan_never_cuts_a_number(
    columns: int, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    args = ["plan", "llama-3.1-8b", "--gpus", "2", "--isl", "512", "--osl", "128", "--rate", "5",
            "--slo-ttft", "1", "--slo-tpot", "0.05", "--num-requests", "300"]  # fmt: skip
    report = json.loads(_screen([*args, "--format", "json"], capsys))
    monkeypatch.setenv("COLUMNS", str(columns))
    out = _screen(args, capsys)
    assert "…" not in out
    for lay in report["layouts"]:  # each layout's cap and sustained rate, whole (saturation is
        cap = lay["capacity"]  # a column the table may drop when narrow)
        assert f"{cap['max_num_seqs']:,}" in out
        assert f"{cap['sustained_rps']:,.2f}" in out
    for entry in report["fleet"]:
        assert entry["layout"] in out and f"{entry['usd_per_million_output_tokens']:,.2f}" in out
