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
