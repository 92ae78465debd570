"""Edges of the disaggregated fleet search that mutation testing found untested
(`benchmarks/mutation.py --packages analysis`, seed 7): each expected value worked out by hand."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from capcliff.analysis.disagg.compare import AggregatedSummary
from capcliff.analysis.disagg.fleet import _Walk
from capcliff.analysis.disagg.fleet_reasons import Spent, _kinds


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
