"""Disaggregated deployments at the edges: notation, fabric, KV per request, and the commands."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from capcliff.analysis.deployment import resolve
from capcliff.analysis.deployment_settings import DeploymentSettings
from capcliff.analysis.disagg.options import splits
from capcliff.analysis.disagg.pools import fabric_of, kv_bytes_of_prompts, parse_disagg
from capcliff.analysis.plan.fleet import hourly_cost
from capcliff.catalog.catalogs import get_hardware, get_model
from capcliff.catalog.layout import Layout
from capcliff.check.output import check_text
from capcliff.cli import app, main
from capcliff.errors import CatalogError, InputError
from tests.checktools import check_file

runner = CliRunner()
SMALL = "deepseek-r1-distill-llama-8b"


def test_notation_reads_both_pools() -> None:
    spec = parse_disagg("1p:tp8,3d:dp8-ep8")
    assert (spec.prefill_instances, spec.prefill) == (1, Layout(tp=8))
    assert (spec.decode_instances, spec.decode.dp, spec.decode.ep) == (3, 8, 8)
    assert spec.gpus == 8 + 3 * 8


def test_notation_takes_the_parts_in_either_order() -> None:
    assert parse_disagg("2d:tp4,1p:tp8") == parse_disagg("1p:tp8,2d:tp4")


@pytest.mark.parametrize(
    "text", ["1p:tp8", "1p:tp8,1p:tp4", "0p:tp8,1d:tp8", "1x:tp8,1d:tp8", "1p:tq8,1d:tp8", ""]
)
def test_bad_notation_is_one_line_naming_the_flag(text: str) -> None:
    with pytest.raises(InputError, match=r"^disagg: .*1p:tp8,3d:dp8-ep8") as err:
        parse_disagg(text)
    assert "\n" not in str(err.value)


def test_fabric_comes_from_the_hardware_file() -> None:
    fabric = fabric_of(get_hardware("h200-sxm"))
    assert fabric.scaleup.bytes_per_s_per_gpu == pytest.approx(450e9)  # 900 GB/s both ways / 2
    assert fabric.scaleup.latency_s == pytest.approx(0.6e-6)
    assert fabric.scaleout.bytes_per_s_per_gpu == pytest.approx(50e9)  # one 400 Gb/s NIC per GPU
    assert fabric.scaleout.latency_s == pytest.approx(2.7e-6)
    assert fabric.domain_gpus == 8


def test_kv_per_request_is_the_prompts_whole_model_kv() -> None:
    dep = resolve(get_model("deepseek-r1"), get_hardware("h200-sxm"), DeploymentSettings())
    # MLA latent 512 + rope 64 = 576 elements x 2 bytes x 61 layers = 70,272 B per token
    assert kv_bytes_of_prompts(dep, np.array([8192, 1])).tolist() == [70_272 * 8192, 70_272]


def test_splits_are_spread_over_the_instances() -> None:
    assert splits(4) == [1, 2, 3]
    assert len(splits(64)) == 6 and splits(64)[0] == 1 and splits(64)[-1] == 63


def _json(*args: str) -> dict:  # type: ignore[type-arg]
    result = runner.invoke(app, [*args, "--format", "json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.output)  # type: ignore[no-any-return]


def test_plan_disagg_json_names_both_pools_and_the_transfer() -> None:
    report = _json("plan", SMALL, "--gpus", "2", "--disagg", "--isl", "512", "--osl", "64",
                   "--num-requests", "24")  # fmt: skip
    d = report["disaggregated"]
    assert (d["prefill"]["layout"], d["prefill"]["gpus"]) == ("tp1", 1)
    assert (d["decode"]["layout"], d["decode"]["gpus"]) == ("tp1", 1)
    # 512 tokens x 131,072 B (2 x 32 layers x 8 KV heads x 128 x 2 B)
    assert d["kv_transfer"]["bytes_per_request"] == 512 * 131_072
    # 67.1 MB over NVLink at 450 GB/s + 0.6 us + 1 ms overhead
    assert d["kv_transfer"]["p99_transfer_s"] == pytest.approx(512 * 131_072 / 450e9 + 1.0006e-3)
    assert report["aggregated"]["layout"]
    assert 0 <= report["aggregated"]["kv_headroom"] <= 1
    assert report["winner"] in ("disaggregated", "aggregated")
    assert "--disaggregation-mode prefill" in report["engine_settings"]["sglang prefill"]
    assert "NixlConnector" in report["engine_settings"]["vllm decode"]


def test_hourly_cost_is_gpus_times_price_over_tokens_per_hour() -> None:
    # 16 GPUs x $4 = $64 per hour; 1,000 tok/s = 3.6 M tokens per hour -> $17.78 per M tokens
    assert hourly_cost(16, 4.0, 1_000.0) == pytest.approx((64.0, 64.0 / 3.6))
    assert hourly_cost(16, 4.0, 0.0)[1] == float("inf")


def test_plan_disagg_costs_in_dollars_at_the_given_price() -> None:
    report = _json("plan", SMALL, "--gpus", "2", "--disagg", "--isl", "512", "--osl", "64",
                   "--num-requests", "24", "--price-gpu-hour", "2.5")  # fmt: skip
    assert report["usd_per_gpu_hour"] == 2.5
    s = report["disaggregated"]["serving"]
    # 2 GPUs x $2.5 = $5 per hour; 24 x 64 = 1,536 output tokens in makespan_s seconds
    assert s["usd_per_hour"] == pytest.approx(5.0)
    per_mtok = 5.0 * s["makespan_s"] / 3600 / 1_536 * 1e6
    assert s["usd_per_million_output_tokens"] == pytest.approx(per_mtok)
    agg = report["aggregated"]
    assert agg["usd_per_hour"] == pytest.approx(5.0)
    cheaper = min(("disaggregated", per_mtok), ("aggregated", agg["usd_per_million_output_tokens"]),
                  key=lambda kv: kv[1])  # fmt: skip
    assert report["winner"] == cheaper[0]  # no SLO: the fewer $ per million output tokens
    assert "offline batch" in report["figures_from"]


def test_sweep_disagg_json_has_a_point_per_concurrency() -> None:
    report = _json("sweep", SMALL, "--disagg", "1p:tp1,1d:tp1", "--isl", "256", "--osl", "32",
                   "--num-requests", "24", "--concurrency", "4,8")  # fmt: skip
    assert [p["concurrency"] for p in report["series"]["points"]] == [4, 8]
    assert report["disaggregated"]["kv_transfer"]["transfers"] == 24
    assert report["gpus"] == 2


def test_sweep_disagg_runs_closed_loop_clients() -> None:
    # 2 clients, 6 requests: each client sends its next request when its last one ends, so at
    # most 2 requests are ever in the system and every client's requests follow one another.
    report = _json("sweep", SMALL, "--disagg", "1p:tp1,1d:tp1", "--isl", "256", "--osl", "32",
                   "--num-requests", "6", "--arrival", "clients", "--clients", "2",
                   "--concurrency", "2")  # fmt: skip
    assert report["disaggregated"]["kv_transfer"]["transfers"] == 6
    assert report["series"]["points"][0]["preemptions"] == 0


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--disagg", "1p:tp1"], "disagg: "),
        (["--disagg", "1p:tp1,1d:tp1", "--layout", "tp1"], "disagg: --layout does not apply"),
    ],
)
def test_sweep_disagg_refuses_bad_input_in_one_line(
    args: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["sweep", SMALL, "--isl", "64", "--osl", "8", "--num-requests", "4", *args])
    err = capsys.readouterr().err
    assert code == 2
    assert message in err and err.count("\n") == 1


def test_check_asserts_on_a_disaggregated_scenario(tmp_path: Path) -> None:
    spec = tmp_path / "capcliff.toml"
    spec.write_text(
        f"""
[[scenario]]
name = "pd"
model = "{SMALL}"
gpu = "h200-sxm"
disagg = "1p:tp1,1d:tp1"
[scenario.workload]
isl = 256
osl = 32
num_requests = 24
concurrency = 8
[scenario.expect]
fits = true
tpot_p99_max_s = 10.0
ttft_p99_max_s = 0.000001
"""
    )
    report = check_file(spec)
    scenario = report.scenarios[0]
    assert scenario.figures.layout == "1p:tp1,1d:tp1"
    verdicts = {a.name: a.passed for a in scenario.assertions}
    assert verdicts == {"fits": True, "tpot_p99_max_s": True, "ttft_p99_max_s": False}


def test_check_names_each_pools_gpu_type_and_sizes_decode_on_its_own(tmp_path: Path) -> None:
    spec = tmp_path / "capcliff.toml"
    spec.write_text(
        f'[[scenario]]\nname = "pd"\nmodel = "{SMALL}"\ngpu = "h200-sxm"\n'
        'disagg = "2p:tp1,1d:tp1@h100-sxm"\n[scenario.workload]\nisl = 256\nosl = 8\n'
        "num_requests = 8\nconcurrency = 8\n"
    )
    report = check_file(spec)
    scenario = report.scenarios[0]
    # two prefill GPUs on --gpu (h200-sxm), one decode GPU on h100-sxm
    assert scenario.gpus_by_type == {"h200-sxm": 2, "h100-sxm": 1}
    assert scenario.gpu == "h200-sxm+h100-sxm"
    assert "on 2 x h200-sxm + 1 x h100-sxm, 2p:tp1,1d:tp1@h100-sxm" in check_text(report)
    # the KV figure is the decode pool's, on its H100 (80 GB), not on an H200 (141 GB)
    h100 = resolve(get_model(SMALL), get_hardware("h100-sxm"), DeploymentSettings())
    kv = h100.memory(Layout(), scenario.max_model_len).kv_capacity_tokens_per_replica
    assert scenario.figures.kv_capacity_tokens_per_replica == kv


def test_a_scenario_with_layout_and_disagg_is_refused(tmp_path: Path) -> None:
    spec = tmp_path / "capcliff.toml"
    spec.write_text(
        f'[[scenario]]\nname = "x"\nmodel = "{SMALL}"\ngpu = "h200-sxm"\nlayout = "tp1"\n'
        'disagg = "1p:tp1,1d:tp1"\n[scenario.workload]\nisl = 8\nosl = 8\nnum_requests = 2\n'
    )
    with pytest.raises(CatalogError, match="layout: give layout or disagg, not both"):
        check_file(spec)


def test_the_transfer_overhead_is_a_setting() -> None:
    args = ("sweep", SMALL, "--disagg", "1p:tp1,1d:tp1", "--isl", "512", "--osl", "8",
            "--num-requests", "4", "--concurrency", "4")  # fmt: skip
    default = _json(*args)["disaggregated"]["kv_transfer"]["p99_transfer_s"]
    slower = _json(*args, "--kv-transfer-overhead-ms", "5")["disaggregated"]["kv_transfer"]
    assert slower["p99_transfer_s"] - default == pytest.approx(4e-3)  # 5 ms instead of 1 ms


def test_plan_disagg_with_clients_says_its_figures_are_the_clients_run() -> None:
    report = _json("plan", SMALL, "--gpus", "2", "--disagg", "--isl", "256", "--osl", "32",
                   "--num-requests", "24", "--clients", "4")  # fmt: skip
    assert report["figures_from"].startswith("4 closed-loop clients")
    assert report["disaggregated"]["kv_transfer"]["transfers"] == 24
