"""Edges the analysis mutation sample of seed 409 found untested (benchmarks/mutation.py
--packages analysis --sample 40 --seed 409): each value worked out by hand in its comment."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from capcliff.catalog.layout import Layout


def test_trtllm_serve_is_told_to_set_an_fp8_kv_cache_in_its_options_file_only_for_fp8(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from capcliff.analysis import flags
    from capcliff.analysis.plan.commands import _trtllm

    monkeypatch.setattr(flags, "trtllm_command", lambda served, fraction: "trtllm-serve m")
    fp8_note = (
        "trtllm-serve: an FP8 KV cache is kv_cache_config.dtype: fp8 in --extra_llm_api_options"
    )

    def said(kv: str, layout: Layout) -> tuple[dict[str, str], list[str]]:
        warnings: list[str] = []
        served: Any = SimpleNamespace(layout=layout, kv_cache_dtype=kv)
        return _trtllm(served, 0.9, warnings), warnings

    # trtllm-serve has no KV dtype flag: an FP8 cache is said, a BF16 one (its default) is not
    assert said("fp8", Layout(tp=2)) == ({"trtllm": "trtllm-serve m"}, [fp8_note])
    assert said("bf16", Layout(tp=2)) == ({"trtllm": "trtllm-serve m"}, [])
    # two replicas: one server each, named so
    assert said("bf16", Layout(tp=2, dp=2))[0] == {
        "trtllm (one server per replica, 2 of them)": "trtllm-serve m"
    }


@pytest.mark.parametrize(
    ("serves", "grow_failing", "grown"),
    [
        (True, False, True),  # a split that serves the rate is always grown to its steady state
        (True, True, True),
        (False, True, True),  # a miss only when asked (a near miss the walk may still take)
        (False, False, False),
    ],
)
def test_the_chosen_split_is_grown_when_it_serves_or_when_misses_are_asked_to_be(
    monkeypatch: pytest.MonkeyPatch, serves: bool, grow_failing: bool, grown: bool
) -> None:
    from capcliff.analysis.disagg import plan

    monkeypatch.setattr(plan, "disagg_steady", lambda *a, **k: ("grown", "settled"))
    monkeypatch.setattr(plan, "rank_reason", lambda *a, **k: "why")
    split: Any = SimpleNamespace(
        key=(serves, -12.0, 0.0), state=SimpleNamespace(requests=400), pools=None, cap=8,
        running=None, result="first",
    )  # fmt: skip
    split._replace = lambda **changed: SimpleNamespace(**{**vars(split), **changed})
    best, why = plan.chosen_split(None, [split], object(), None, grow_failing=grow_failing)  # type: ignore[arg-type]
    found: tuple[Any, list[str]] = (best.result, why)
    assert found == (("grown", ["why"]) if grown else ("first", []))


def test_a_caps_first_run_is_reused_only_from_a_prior_of_that_cap_and_size(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from capcliff.analysis.evaluate import capacity

    # cap 8's first sample is 10 requests (a trace: restarted samples). The coarse pass's point
    # is reused only when it ran cap 8 on those 10 requests; cap 16's run of 10, or cap 8's of
    # 5, is another run, so cap 8 is simulated afresh.
    monkeypatch.setattr(capacity, "_sample_sizes", lambda cap, least, workload: (10, 80))
    monkeypatch.setattr(capacity, "steady_state", lambda result, **kw: "state")
    workload: Any = SimpleNamespace(
        is_trace=True, sessions=False, stationary_start=lambda: False,
        mean_output_tokens=lambda: 100.0, saturation_sample=lambda n, cap: list(range(n)),
    )  # fmt: skip
    runs: list[int] = []

    def run(sample: list[int], cap: int) -> Any:
        runs.append(cap)
        return SimpleNamespace(total_preemptions=0, name=f"cap {cap} of {len(sample)}")

    replica: Any = SimpleNamespace(run=run)

    def result_with(prior_cap: int, prior_requests: int) -> str:
        coarse = SimpleNamespace(total_preemptions=0, name="coarse")
        prior: Any = SimpleNamespace(cap=prior_cap, requests=prior_requests, result=coarse)
        point = capacity.saturation_point(replica, workload, 8, None, settle_it=False, prior=prior)
        found: Any = point.result
        return str(found.name)

    assert result_with(8, 10) == "coarse" and runs == []
    assert result_with(16, 10) == "cap 8 of 10" and runs == [8]
    assert result_with(8, 5) == "cap 8 of 10" and runs == [8, 8]


def test_an_online_plan_where_nothing_fits_simulated_no_request(
    capsys: pytest.CaptureFixture[str],
) -> None:
    import json

    from capcliff.cli import main

    # 405B in BF16 is about 812 GB: over 4 H200s about 203 GB a GPU, more than a 141 GB H200
    # holds, so no layout fits and no request is simulated: 0, not a negative count
    argv = ["plan", "llama-3.1-405b", "--gpus", "4", "--isl", "100", "--osl", "100"]
    assert main([*argv, "--format", "json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["reason"] == "no layout fits"
    assert (report["num_requests"], report["simulated_requests"]) == (0, 0)


def test_the_analytic_cliff_counts_the_block_that_a_requests_last_kv_token_opens() -> None:
    from capcliff.analysis.evaluate.solver import analytic_cliff

    # 100 + 14 - 1 = 113 KV tokens = 7 x 16 + 1: the 113th opens an 8th block; 1,000 // 8 = 125
    # (at 112 tokens, 7 blocks, it would be 1,000 // 7 = 142)
    assert analytic_cliff(blocks_per_replica=1000, block_size=16, input_tokens=100,
                          output_tokens=14) == 125  # fmt: skip
    assert analytic_cliff(blocks_per_replica=1000, block_size=16, input_tokens=100,
                          output_tokens=13) == 142  # fmt: skip


@pytest.mark.parametrize(
    ("slo", "meets", "groups"),
    [(None, True, {}), ("slo", False, {}), ("slo", True, {2: "group of 2"})],
)
def test_dp_groups_are_searched_only_for_a_replica_that_meets_a_given_slo(
    monkeypatch: pytest.MonkeyPatch, slo: str | None, meets: bool, groups: dict[int, str]
) -> None:
    from capcliff.analysis.evaluate import layout_capacity

    capacity = SimpleNamespace(meets_slo=meets)
    monkeypatch.setattr(layout_capacity, "replica_capacity", lambda *a, **k: capacity)
    monkeypatch.setattr(
        layout_capacity, "group_capacity", lambda replica, size, *a: f"group of {size}"
    )
    search = SimpleNamespace(workload=None, slo=slo, least_requests=None, headroom=0.1)
    coarse = SimpleNamespace(points=[None])
    job: Any = (None, search, coarse, {}, (2,))
    # a group is sized against the SLO its single replica meets: none without an SLO or a miss
    found: tuple[Any, Any] = layout_capacity._refine(job)
    assert found == (capacity, groups)


def test_gpu_hours_per_million_tokens_are_gpus_times_hours_over_millions_served() -> None:
    import numpy as np

    from capcliff.analysis.disagg.report import serving_report

    p = SimpleNamespace(p50=1.0, p99=2.0)
    serving = SimpleNamespace(
        output_tokens=np.full(1000, 500), output_tokens_per_s=5000.0, requests_per_s=10.0,
        ttft=p, tpot=p, e2e=p, makespan_s=90.0,
    )  # fmt: skip
    result: Any = SimpleNamespace(serving=serving)
    # 4 GPUs x 90 s = 0.1 GPU-hours for 1,000 x 500 = 0.5 M tokens: 0.2 GPU-hours per million
    report = serving_report(result, 4, 16, None)
    assert report.gpu_hours_per_mtok == pytest.approx(0.2)


@pytest.mark.parametrize(
    ("extra", "said"),
    [
        ([], []),  # BF16 as shipped: nothing quantized, nothing said
        (
            ["--weight-dtype", "fp8"],
            [
                "--quantization fp8: the catalog has no fp8 checkpoint of llama-3.1-8b; the "
                "engines quantize its weights while loading (a published quantized checkpoint of "
                "the model you serve is usually better)"
            ],
        ),
    ],
)
def test_weights_quantized_while_loading_are_said_once_and_only_then(
    capsys: pytest.CaptureFixture[str], extra: list[str], said: list[str]
) -> None:
    import json

    from capcliff.catalog.catalogs import model_catalog
    from capcliff.cli import main

    # Llama-3.1-8B ships BF16 and the catalog holds no llama-3.1-8b-fp8 card, so planned in FP8
    # it is served with --quantization fp8 (vLLM and SGLang quantize while loading)
    assert "llama-3.1-8b-fp8" not in model_catalog()
    argv = ["plan", "llama-3.1-8b", "--gpus", "1", "--isl", "100", "--osl", "100"]
    assert main([*argv, "--num-requests", "20", *extra, "--format", "json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert [w for w in report["flag_warnings"] if "--quantization" in w] == said
