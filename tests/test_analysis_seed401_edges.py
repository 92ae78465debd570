"""Edges the analysis mutation sample of seed 401 found untested (benchmarks/mutation.py
--packages analysis --sample 40 --seed 401): each value worked out by hand in its comment."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from capcliff.analysis.deployment import resolve
from capcliff.analysis.deployment_settings import DeploymentSettings
from capcliff.catalog.catalogs import get_hardware, get_model
from capcliff.units import GB


def _reasons(best_bytes: int, other_bytes: int) -> list[str]:
    from capcliff.analysis.plan.advice import recommendation_reasons
    from capcliff.analysis.plan.types import Objective

    def row(name: str, weights: int) -> Any:
        return SimpleNamespace(
            name=name, weights_bytes_per_gpu=weights, kv_capacity_tokens_per_replica=None,
            kv_capacity_tokens_total=None, cliff=None, sweet_spot=None,
        )  # fmt: skip

    return recommendation_reasons(row("tp2", best_bytes), row("tp1", other_bytes), Objective.COST)


def test_any_weight_a_layout_frees_per_gpu_is_a_reason_down_to_one_byte() -> None:
    # 16 GB against 8 GB per GPU: 8 GB freed (GB = 1e9 B), printed 8.0
    assert _reasons(8 * GB, 16 * GB) == [
        "tp2 holds 8.0 GB less weight per GPU than tp1, freeing it for KV cache"
    ]
    # one byte less is still less (1e-9 GB, printed 0.0); equal or more weight is no reason
    assert _reasons(8 * GB - 1, 8 * GB) == [
        "tp2 holds 0.0 GB less weight per GPU than tp1, freeing it for KV cache"
    ]
    assert _reasons(8 * GB, 8 * GB) == []
    assert _reasons(8 * GB + 1, 8 * GB) == []


def test_an_engine_given_beside_the_command_agrees_when_it_is_the_same_or_vllm_v0() -> None:
    from capcliff.analysis.serve_command import ServeCommand, merged_settings
    from capcliff.catalog.layout import Layout
    from capcliff.errors import InputError

    command = ServeCommand("vllm", "m/x", Layout(), {"engine": "vllm"})
    # the same engine, and vLLM's older engine (a `vllm serve` line runs either), are kept
    assert merged_settings(command, {"engine": "vllm"})["engine"] == "vllm"
    assert merged_settings(command, {"engine": "vllm-v0"})["engine"] == "vllm-v0"
    with pytest.raises(InputError, match="--engine sglang conflicts with the command's vllm"):
        merged_settings(command, {"engine": "sglang"})


def _lookahead(engine: str, speculative: str) -> int:
    settings = DeploymentSettings(engine=engine, speculative=speculative, spec_accept_length=2.0)
    dep = resolve(get_model("llama-3.1-8b"), get_hardware("h200-sxm"), settings)
    return dep.lookahead_tokens_per_sequence()


def test_vllm_holds_twice_k_lookahead_slots_for_a_draft_model_and_sglang_k() -> None:
    # EAGLE K = 3 (a draft model): vLLM schedules K verify slots plus K lookahead slots,
    # 2 x 3 = 6; SGLang allocates its K draft tokens, 3; vLLM's n-gram has no draft: K = 3
    assert _lookahead("vllm", "eagle:3") == 6
    assert _lookahead("sglang", "eagle:3") == 3
    assert _lookahead("vllm", "ngram:3") == 3


def test_only_a_preemption_mode_other_than_recompute_is_said_to_be_simulated_only() -> None:
    from capcliff.analysis.plan.commands import _simulated_only

    def said(**settings: Any) -> list[str]:
        dep = resolve(
            get_model("llama-3.1-8b"), get_hardware("h200-sxm"), DeploymentSettings(**settings)
        )
        return [s for s in _simulated_only(dep) if s.startswith("--preemption")]

    # recompute is what vLLM V1 and SGLang do: nothing to say; swap is the simulator's alone
    assert said() == []
    assert said(preemption="swap") == [
        "--preemption swap was simulated: vLLM V1 and SGLang always recompute preempted "
        "requests; no flag in these lines swaps"
    ]


def test_past_the_cliff_is_the_largest_concurrency_beyond_the_sweet_spot() -> None:
    from capcliff.analysis.sweep.timelines import _named_points

    points = tuple(
        SimpleNamespace(concurrency=c, hit_cliff=cliff)
        for c, cliff in ((8, False), (16, False), (32, True), (64, True), (128, True))
    )
    # sweet spot 16; the caps past it that hit the cliff are 32, 64 and 128: the largest, 128
    named = _named_points(points, 16)  # type: ignore[arg-type]
    assert {name: p.concurrency for name, p in named.items()} == {
        "sweet spot": 16,
        "past the cliff": 128,
    }


def test_a_split_serving_under_one_token_per_second_still_has_a_cost_per_token() -> None:
    from capcliff.analysis.disagg.fleet_reasons import split_row
    from capcliff.analysis.disagg.options import Option
    from capcliff.analysis.disagg.pools import parse_disagg

    spec = parse_disagg("1p:tp1,1d:tp1")
    level = [Option(10.0, "disaggregated", spec.gpus, "h100-sxm", spec)]

    def row(tok_s: float) -> Any:
        state = SimpleNamespace(ttft_p99_s=9.0, tpot_p99_s=1.0, output_tok_s=tok_s)
        best: Any = SimpleNamespace(spec=spec, state=state)
        return split_row(level, [best], best, False, "h100-sxm", None)

    # it misses, so it is costed at its own 0.5 tokens/s: $10 per hour / (0.5 x 3,600 tokens
    # per hour) = $0.0055556 per token, x 1e6 = $5,555.56 per million
    assert row(0.5).usd_per_million_output_tokens == pytest.approx(5555.5556)
    # nothing served: no cost per token (no division by 0)
    assert row(0.0).usd_per_million_output_tokens is None


def test_light_latency_runs_one_seat_under_the_engines_own_token_budget(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from capcliff.analysis.plan import feasibility
    from capcliff.catalog.layout import Layout

    seen: list[Any] = []

    def simulate(_requests: Any, _steps: Any, _capacity: Any, config: Any) -> Any:
        seen.append(config)
        return SimpleNamespace(ttft=SimpleNamespace(p99=0.1), tpot=SimpleNamespace(p99=0.01))

    monkeypatch.setattr(feasibility, "simulate", simulate)
    settings = DeploymentSettings(max_num_seqs=1, max_num_batched_tokens=1)
    dep = resolve(get_model("llama-3.1-8b"), get_hardware("h200-sxm"), settings)
    workload: Any = SimpleNamespace(with_clients=lambda n, clients: (n, clients))
    feasibility.light_latency(feasibility.Alternative("x", dep, Layout()), workload, 4096)
    # one closed-loop user: one seat, and the budget the engine was given (1 token per step, a
    # prompt of P tokens in P steps), not raised to 2 seats' worth (P / 2 steps)
    assert [(c.max_num_seqs, c.max_num_batched_tokens) for c in seen] == [(1, 1)]
