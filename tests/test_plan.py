"""`capcliff plan`: the JSON contract, clear-cut choices, flags that parse back, fit failures."""

from __future__ import annotations

import json
import shlex

import pytest
from typer.testing import CliRunner

from capcliff.analysis.flags import Deployment, sglang_command, vllm_command
from capcliff.analysis.plan.types import PlanLayout, PlanSweetSpot
from capcliff.catalog.layout import Layout
from capcliff.cli import app, main

runner = CliRunner()


def _plan(*args: str) -> dict:  # type: ignore[type-arg]
    result = runner.invoke(app, ["plan", *args, "--format", "json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.output)  # type: ignore[no-any-return]


@pytest.fixture(scope="module")
def short_8b() -> dict:  # type: ignore[type-arg]
    # Fixed, short requests: no long tail, so the makespan is set by aggregate throughput.
    return _plan(
        "llama-3.1-8b", "--isl", "512", "--osl", "256", "--num-requests", "2000", "--arrival",
        "batch",
    )  # fmt: skip


def test_json_contract(short_8b: dict) -> None:  # type: ignore[type-arg]
    assert short_8b["schema_version"] == 2
    assert {"model", "hardware", "workload", "layouts", "recommended", "engine_flags"} <= set(
        short_8b
    )
    for lay in short_8b["layouts"]:
        for key in ("dp", "tp", "pp", "ep"):
            assert isinstance(lay[key], int)
        for key in ("valid", "reason", "weights_bytes_per_gpu", "kv_capacity_tokens_per_replica"):
            assert key in lay
        if lay["sweet_spot"] is not None:
            assert {"analytic_concurrency", "simulated_concurrency"} <= set(lay["cliff"])
            for key in (
                "concurrency", "output_throughput_tok_s", "ttft_p99_s", "tpot_p99_s", "makespan_s",
            ):  # fmt: skip
                assert key in lay["sweet_spot"]
    rec = short_8b["recommended"]
    assert {"dp", "tp", "pp", "ep", "max_num_seqs", "reasons"} <= set(rec)
    assert set(short_8b["engine_flags"]) == {"vllm", "sglang"}


def test_every_layout_of_eight_gpus_is_listed(short_8b: dict) -> None:  # type: ignore[type-arg]
    # Dense model: the 10 ordered factorisations of 8 into dp x tp x pp.
    assert len(short_8b["layouts"]) == 10


def test_a_small_model_with_short_requests_prefers_pure_dp(short_8b: dict) -> None:  # type: ignore[type-arg]
    # 8B fits one H200 with ~110 GB to spare; short fixed requests never fill its KV cache, so TP
    # only adds all-reduces: eight independent replicas finish first.
    rec = short_8b["recommended"]
    assert (rec["dp"], rec["tp"], rec["pp"]) == (8, 1, 1)


def test_stranded_kv_is_reported_for_data_parallel_layouts_only(short_8b: dict) -> None:  # type: ignore[type-arg]
    # KV stranded in the other replicas while one preempts needs another replica: a number for
    # each simulated layout with dp > 1, none (not 0) for a single replica
    for lay in short_8b["layouts"]:
        assert lay["sweet_spot"] is not None  # every layout of the plan was simulated
        stranded = lay["stranded_kv_fraction"]
        assert (stranded is None) == (lay["dp"] == 1), lay
        assert stranded is None or 0.0 <= stranded <= 1.0


def test_a_model_that_needs_all_eight_gpus_gets_tp8() -> None:
    # 405B in BF16 is 811.7 GB: only 8-way splits fit (101.5 GB/GPU); TP=8 reads each GPU's
    # weights in parallel every step, PP=8 serialises eight stages.
    report = _plan(
        "llama-3.1-405b", "--isl", "100", "--osl", "1000", "--num-requests", "200", "--arrival",
        "batch",
    )  # fmt: skip
    assert report["recommended"]["tp"] == 8
    fitting = {lay["name"] for lay in report["layouts"] if lay["fits"]}
    assert fitting <= {"tp8", "tp4-pp2", "tp2-pp4", "pp8"}


def test_vllm_flags_parse_back(short_8b: dict) -> None:  # type: ignore[type-arg]
    args = shlex.split(short_8b["engine_flags"]["vllm"])
    assert args[:3] == ["vllm", "serve", "meta-llama/Llama-3.1-8B"]
    value = {args[i]: args[i + 1] for i in range(3, len(args) - 1) if args[i].startswith("--")}
    rec = short_8b["recommended"]
    assert int(value["--tensor-parallel-size"]) == rec["tp"]
    assert int(value["--data-parallel-size"]) == rec["dp"]
    assert int(value["--max-num-seqs"]) == rec["max_num_seqs"]
    # The sample's longest request needs 1,024 tokens (simulated max_model_len); the line serves
    # Llama 3.1's whole context (max_position_embeddings 131,072): the KV pool is the same, so
    # longer prompts than the sample's are served, not refused, and a warning says which.
    assert short_8b["max_model_len"] == 1024
    assert int(value["--max-model-len"]) == 131_072
    assert any(w.startswith("--max-model-len 131072: the model's context") for w in
               short_8b["flag_warnings"])  # fmt: skip


def test_sglang_flags_parse_back(short_8b: dict) -> None:  # type: ignore[type-arg]
    args = shlex.split(short_8b["engine_flags"]["sglang"])
    value = {args[i]: args[i + 1] for i in range(len(args) - 1) if args[i].startswith("--")}
    rec = short_8b["recommended"]
    assert int(value["--dp"]) == rec["dp"]
    # Plain DP: every replica's scheduler enforces the whole flag (no --enable-dp-attention).
    assert "--enable-dp-attention" not in args
    assert int(value["--max-running-requests"]) == rec["max_num_seqs"]
    assert 0 < float(value["--mem-fraction-static"]) < 1


def _deployment(model: str, layout: Layout, max_num_seqs: int, *, moe: bool) -> Deployment:
    return Deployment(
        model=model, layout=layout, max_num_seqs=max_num_seqs, max_num_batched_tokens=8192,
        max_model_len=32768, gpu_memory_utilization=0.9, mem_fraction_static=0.85,
        kv_cache_dtype="auto", moe=moe, mla=moe,
    )  # fmt: skip


def test_mla_model_on_dp_gets_dp_attention_flags() -> None:
    dep = _deployment("deepseek-ai/DeepSeek-R1", Layout(dp=8, ep=8), 64, moe=True)
    sglang = shlex.split(sglang_command(dep))
    assert "--enable-dp-attention" in sglang
    assert (
        sglang[sglang.index("--tp") + 1] == "8"
    )  # SGLang counts every GPU in --tp with DP attention
    assert "--enable-expert-parallel" in shlex.split(vllm_command(dep))
    # Attention DP: SGLang divides --max-running-requests by the 8 ranks, 64 each.
    assert sglang[sglang.index("--max-running-requests") + 1] == "512"


def test_plain_dp_sglang_cap_is_per_replica() -> None:
    dep = _deployment("meta-llama/Llama-3.1-8B", Layout(dp=4, tp=2), 100, moe=False)
    sglang = shlex.split(sglang_command(dep))
    assert "--enable-dp-attention" not in sglang
    assert sglang[sglang.index("--dp") + 1] == "4"
    # Each of the 4 schedulers enforces the whole flag: the per-replica cap.
    assert sglang[sglang.index("--max-running-requests") + 1] == "100"


@pytest.mark.parametrize(
    ("offload", "nvme_note"),
    [("cpu:64GiB", None), ("cpu:64GiB,nvme:1TiB", "the NVMe offload tier (1024 GiB per replica)")],
)
def test_only_a_planned_nvme_tier_is_named_as_one_the_lines_cannot_set(
    offload: str, nvme_note: str | None
) -> None:
    # neither line has an NVMe flag: a plan with a 1 TiB (1,024 GiB) NVMe tier says so once per
    # engine; a plan with a CPU tier only has no NVMe tier to name
    from types import SimpleNamespace
    from typing import Any, cast

    from capcliff.analysis.deployment import resolve
    from capcliff.analysis.deployment_settings import settings_of
    from capcliff.analysis.plan.commands import engine_flags
    from capcliff.catalog.catalogs import get_hardware, get_model
    from capcliff.catalog.layout import parse_layout

    dep = resolve(
        get_model("llama-3.1-8b"), get_hardware("h200-sxm"), settings_of({"offload": offload})
    )
    memory = dep.memory(parse_layout("tp1"), 8192)
    rec = SimpleNamespace(layout="tp1", max_num_seqs=64)
    inputs = SimpleNamespace(
        config=SimpleNamespace(max_num_batched_tokens=8192), max_model_len=8192
    )
    _, warnings = engine_flags(dep, (memory, 64), cast(Any, rec), cast(Any, inputs), "m")
    named = [w for w in warnings if "NVMe" in w]
    if nvme_note is None:
        assert named == []
    else:
        assert [w.split(":")[0] for w in named] == ["vllm", "sglang"]
        assert all(nvme_note in w for w in named)


@pytest.mark.parametrize("change", ["layers", "dtype", "repo"])
def test_a_quantized_card_of_another_shape_dtype_or_without_a_repo_is_not_served(
    monkeypatch: pytest.MonkeyPatch, change: str
) -> None:
    # llama-3.1-405b planned with FP8 weights is served from its FP8 card only while that card
    # has the same shape (126 layers), ships FP8 and names a repo: one layer fewer, BF16 weights
    # or no repo, and the engine line keeps the planned model
    from dataclasses import replace

    import capcliff.catalog.catalogs as catalogs
    from capcliff.analysis.deployment import resolve
    from capcliff.analysis.deployment_settings import settings_of
    from capcliff.analysis.plan.commands import quantized_checkpoint

    planned = catalogs.get_model("llama-3.1-405b")
    dep = resolve(planned, catalogs.get_hardware("h200-sxm"), settings_of({"weight_dtype": "fp8"}))
    card = catalogs.get_model("llama-3.1-405b-fp8")
    assert card.arch.num_layers == planned.arch.num_layers == 126
    assert quantized_checkpoint(dep) == card
    other = {
        "layers": replace(card, arch=replace(card.arch, num_layers=125)),
        "dtype": replace(card, arch=planned.arch),  # the BF16 checkpoint's own shape and dtype
        "repo": replace(card, hf_repo=""),
    }[change]
    monkeypatch.setattr(catalogs, "get_model", lambda model_id: other)
    assert quantized_checkpoint(dep) is None


def test_nothing_fits_is_an_answer_with_fixes() -> None:
    # 405B BF16 on 4 GPUs: 811.7 GB of weights > 4 x 135.7 GB usable.
    report = _plan("llama-3.1-405b", "--gpus", "4", "--isl", "100", "--osl", "100")
    assert report["recommended"] is None
    assert any("GPUs" in fix for fix in report["fixes"])


def test_more_gpus_are_offered_a_whole_node_at_a_time() -> None:
    # 405B BF16 on 8 H100s: 811.7 GB of weights > 8 x 80 GB. Past one 8-GPU node the counts tried
    # are 2, 4, 8 nodes...: 16 GPUs (2 nodes, 1,280 GB) hold it, so that is the fix, not 24
    report = _plan(
        "llama-3.1-405b", "--gpu", "h100-sxm", "--gpus", "8", "--isl", "1000", "--osl", "100"
    )
    assert report["recommended"] is None
    assert [f for f in report["fixes"] if "GPUs (" in f] == ["16 GPUs (2 nodes) fit as tp8-pp2"]


def test_markdown_has_the_table_and_flags() -> None:
    result = runner.invoke(
        app, ["plan", "llama-3.1-8b", "--isl", "100", "--osl", "100", "--num-requests", "200",
              "--arrival", "batch", "--format", "markdown"],
    )  # fmt: skip
    assert result.exit_code == 0
    assert "| layout |" in result.output
    assert "```bash" in result.output


def _row(name: str, makespan: float) -> PlanLayout:
    sweet = PlanSweetSpot(
        concurrency=1, output_throughput_tok_s=1, ttft_p99_s=1, tpot_p99_s=1,
        makespan_s=makespan, goodput_req_s=1, gpu_hours_per_mtok=1,
    )  # fmt: skip
    return PlanLayout(
        name=name, dp=1, tp=1, pp=1, ep=1, valid=True, reason="", fits=True,
        weights_bytes_per_gpu=1, kv_capacity_tokens_per_replica=1, kv_capacity_tokens_total=1,
        cliff=None, sweet_spot=sweet, stranded_kv_fraction=None,
    )  # fmt: skip


def test_bad_objective_is_one_line_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["plan", "--objective", "fastest"]) == 2
    assert capsys.readouterr().err.startswith("error: objective: unknown 'fastest'")
