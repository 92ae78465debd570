"""Edges of the disaggregated fleet search that mutation testing found untested
(`benchmarks/mutation.py --packages analysis`, seed 7): each expected value worked out by hand."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from capcliff.analysis.deployment import resolve
from capcliff.analysis.deployment_settings import DeploymentSettings
from capcliff.analysis.disagg.compare import AggregatedSummary
from capcliff.analysis.disagg.fleet import _Walk
from capcliff.analysis.disagg.fleet_reasons import Spent, _kinds, aggregated_row
from capcliff.analysis.disagg.options import instance_layouts
from capcliff.analysis.disagg.plan import chosen_split
from capcliff.analysis.evaluate.solver import Slo
from capcliff.catalog.catalogs import get_hardware, get_model
from capcliff.errors import InputError


def _agg(layout: str, usd_per_hour: float, tok_s: float) -> AggregatedSummary:
    return AggregatedSummary(
        layout=layout, concurrency=8, makespan_s=10.0, output_throughput_tok_s=tok_s,
        ttft_p99_s=1.0, tpot_p99_s=0.05, gpu_hours_per_mtok=1.0, usd_per_hour=usd_per_hour,
        usd_per_million_output_tokens=usd_per_hour / (tok_s * 3600) * 1e6,
    )  # fmt: skip


def test_the_best_aggregated_miss_is_the_one_with_the_most_tokens_not_the_cheapest() -> None:
    cheap, fast = _agg("tp1", 2.0, 100.0), _agg("tp2", 4.0, 300.0)
    walk = _Walk(aggregated=[(cheap, False), (fast, False)])
    # nothing meets: the most output tokens/s wins (300 > 100), whatever it costs
    assert walk.best_aggregated() == (fast, False)
    # one that meets beats any miss; among those that meet, the cheaper per hour
    meets = _agg("tp4", 8.0, 50.0)
    walk = _Walk(aggregated=[(cheap, False), (fast, False), (meets, True)])
    assert walk.best_aggregated() == (meets, True)


def _spent(stop: float) -> Spent:
    return Spent(options=[], tried=[], stop=stop, rate_per_s=1.0, offered_tok_s=1.0, types=[])


def test_only_the_kind_that_meets_nothing_is_said_to_miss_up_to_twice_the_answer() -> None:
    # the answer costs $4 per hour: the other kind is walked up to 2 x $4 = $8
    assert _kinds(_spent(4.0), None, (True, None, False)) == [
        "no aggregated deployment up to $8.00 per hour (2 x the answer) meets the SLOs"
    ]
    assert _kinds(_spent(4.0), None, (False, None, True)) == [
        "no disaggregated deployment up to $8.00 per hour (2 x the answer) meets the SLOs"
    ]
    assert _kinds(_spent(4.0), None, (True, None, True)) == []


def test_a_full_prefill_chunk_is_priced_with_its_causal_attention_pairs(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from capcliff.analysis.disagg import options

    calls: list[tuple[float, ...]] = []

    def step_time_s(*args: float) -> float:
        calls.append(args)
        return 0.25

    model = SimpleNamespace(step_time_s=step_time_s)
    plan = SimpleNamespace(pool=SimpleNamespace(model=model))
    monkeypatch.setattr(options, "pool_plan", lambda *a, **k: plan)
    memory = SimpleNamespace(layout=None, max_model_len=4096)
    assert options._prefill_step_s(None, memory, 4) == 0.25  # type: ignore[arg-type]
    # one prompt of 4 tokens, 4 tokens of context; token i attends to keys 1..i, causal:
    # 1 + 2 + 3 + 4 = 10 (query, key) pairs, as the simulator counts a chunk (step_plan.py)
    assert calls == [(4, 1, 4, 10)]


def test_an_instance_is_the_narrowest_width_that_fits_or_the_split_is_refused() -> None:
    h200 = get_hardware("h200-sxm")
    small = resolve(get_model("deepseek-r1-distill-llama-8b"), h200, DeploymentSettings())
    # 16 GB of BF16 weights fit one 141 GB H200: instances of 1 GPU
    width, mems = instance_layouts(small, 4, 3072)
    assert width == 1
    assert mems
    assert {m.layout.gpus for m in mems} == {1}
    # DeepSeek-R1's ~671 GB of FP8 weights do not fit 4 / 2 = 2 H200s (282 GB)
    large = resolve(get_model("deepseek-r1"), h200, DeploymentSettings())
    with pytest.raises(InputError, match="no layout of up to 2 GPUs"):
        instance_layouts(large, 4, 3072)


def test_an_aggregated_row_carries_its_deployments_latencies_or_none() -> None:
    option = SimpleNamespace(hardware="h200-sxm", gpus=2, usd_per_hour=8.0)
    agg = _agg("tp2", 8.0, 400.0)  # TTFT p99 1 s, TPOT p99 50 ms
    row = aggregated_row(option, agg, Slo(ttft_s=2.0, tpot_s=0.1))  # type: ignore[arg-type]
    assert (row.deployment, row.meets, row.ttft_p99_s, row.tpot_p99_s) == ("tp2", True, 1.0, 0.05)
    # 50 ms over a 40 ms TPOT limit: misses
    row = aggregated_row(option, agg, Slo(ttft_s=2.0, tpot_s=0.04))  # type: ignore[arg-type]
    assert row.meets is False
    row = aggregated_row(option, None, Slo(ttft_s=2.0, tpot_s=0.1))  # type: ignore[arg-type]
    assert (row.deployment, row.meets, row.ttft_p99_s, row.tpot_p99_s) == (None, False, None, None)
    assert row.usd_per_million_output_tokens is None


def test_a_split_that_misses_on_its_first_sample_is_not_grown_unless_asked(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from capcliff.analysis.disagg import plan

    grown: list[object] = []
    monkeypatch.setattr(plan, "disagg_steady", lambda *a, **k: grown.append(a) or (None, None))
    # a miss ranks by its throughput: (False, 300 tok/s, 0); growing it is asked only when a
    # near miss should be (grow_failing)
    miss = SimpleNamespace(key=(False, 300.0, 0.0), state=object())
    assert chosen_split(None, [miss], object(), None, grow_failing=False) == (miss, [])  # type: ignore[arg-type]
    assert grown == []


def test_the_transfer_figures_are_the_percentiles_of_their_samples(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import numpy as np

    from capcliff.analysis.disagg import report

    monkeypatch.setattr(report, "link_utilization", lambda t, links, horizon_s: 0.5)
    transfers = SimpleNamespace(
        path=["nvlink", "rdma", "nvlink", "nvlink"], nbytes=np.array([100.0, 200.0, 300.0, 400.0]),
        wire_s=np.array([1.0, 2.0, 3.0, 4.0]), wait_s=np.array([0.0, 0.0, 0.0, 1.0]),
    )  # fmt: skip
    result = SimpleNamespace(
        transfers=transfers, decode_queue_s=np.array([0.0, 10.0]),
        serving=SimpleNamespace(makespan_s=20.0),
    )  # fmt: skip
    got = report.transfer_report(result, prefill_replicas=2)  # type: ignore[arg-type]
    # linear interpolation between order statistics (numpy's default): the median of 1..4 is
    # 2.5; p99 sits 0.99 x 3 = 2.97 ranks up: 3 + 0.97 x (4 - 3) = 3.97; of the waits
    # 0, 0, 0, 1: 0 + 0.97 x 1 = 0.97; of the queue 0, 10: 5.0 and 9.9
    assert (got.p50_transfer_s, got.p99_transfer_s) == pytest.approx((2.5, 3.97))
    assert got.p99_link_wait_s == pytest.approx(0.97)
    assert (got.decode_queue_p50_s, got.decode_queue_p99_s) == pytest.approx((5.0, 9.9))
    assert (got.bytes_per_request, got.total_bytes, got.transfers) == (250.0, 1000.0, 4)
    assert (got.link, got.links) == ("nvlink", {"nvlink": 3, "rdma": 1})


def test_a_part_given_twice_is_refused_even_when_both_kinds_are_there() -> None:
    from capcliff.analysis.disagg.pools import parse_disagg

    # a second prefill part would overwrite the first: refused, not read as 2p:tp4
    with pytest.raises(InputError, match="cannot read"):
        parse_disagg("1p:tp8,1d:tp8,2p:tp4")
    spec = parse_disagg("2p:tp4,1d:tp8")
    assert (spec.prefill_instances, spec.decode_instances) == (2, 1)


def test_the_cheaper_deployment_wins_and_equal_costs_go_to_the_aggregated_one() -> None:
    from types import SimpleNamespace
    from typing import Any, cast

    from capcliff.analysis.disagg.compare import winner_by_cost

    # no SLO: both "meet" it. $1.20 against $1.50 per million output tokens: disaggregated wins;
    # $1.50 and $40/h each: the same GPUs for the same rate, aggregated (one pool) wins
    def serving(usd_per_mtok: float) -> Any:
        return SimpleNamespace(
            ttft_p99_s=1.0, tpot_p99_s=0.05, steady=None, usd_per_hour=40.0,
            usd_per_million_output_tokens=usd_per_mtok,
        )  # fmt: skip

    agg = serving(1.5)
    cheaper = winner_by_cost(cast(Any, SimpleNamespace(serving=serving(1.2))), agg, None)
    assert cheaper == (
        "disaggregated",
        "no SLO given; disaggregated serves a million output tokens for fewer dollars",
    )
    same = winner_by_cost(cast(Any, SimpleNamespace(serving=serving(1.5))), agg, None)
    assert same == (
        "aggregated",
        "no SLO given at the same $; aggregated is one pool, no KV transfers",
    )
