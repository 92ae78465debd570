"""TensorRT-LLM's attention-DP balance (`attention_dp_config.enable_balance`,
`sim/loop/balance.py`): context requests wait until every attention-DP rank has one, or
`timeout_iters` iterations.

The hand-worked cases run two ranks whose every step takes 1 ms (`constant_model`, MoE layers that
cost nothing), so a request's TTFT counts the iterations it waited. Round robin sends the requests,
in arrival order, to rank 0, 1, 0, 1, ...
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from capcliff.analysis.deployment import Deployment, resolve
from capcliff.analysis.deployment_settings import settings_of
from capcliff.analysis.evaluate.replica_models import step_label
from capcliff.analysis.flags import trtllm_adp_balance_config
from capcliff.catalog.catalogs import get_hardware, get_model
from capcliff.errors import InputError
from capcliff.perf.attention_dp import MoEGroup
from capcliff.perf.communication import ExchangeCost
from capcliff.perf.step_time import StepTimeModel
from capcliff.sim.config import KVCapacity, SimConfig, parse_adp_balance
from capcliff.sim.loop.lockstep import LockstepSim
from capcliff.sim.loop.replica import ReplicaSim
from capcliff.sim.result import SimResult
from capcliff.sim.simulate import make_policy, simulate
from capcliff.sim.traffic.workload import Requests
from tests.simtools import constant_model

STEP_S = 1e-3


def _model(ranks: int = 2) -> StepTimeModel:
    """Every lockstep step takes STEP_S: the MoE layers cost nothing."""
    free = MoEGroup(
        ranks=ranks, expert_bytes=0.0, expert_choice_fraction=0.0, expert_flops_per_token=0.0,
        moe_layers=0, exchange=ExchangeCost(0.0, 0.0),
    )  # fmt: skip
    return dataclasses.replace(constant_model(STEP_S), moe=free)


def _requests(arrivals_ms: list[float], outputs: list[int], prompt: int = 10) -> Requests:
    n = len(arrivals_ms)
    return Requests(
        input_tokens=np.full(n, prompt, dtype=np.int64),
        output_tokens=np.array(outputs, dtype=np.int64),
        max_output_tokens=np.array(outputs, dtype=np.int64),
        arrival_s=np.array(arrivals_ms) * 1e-3,
    )


def _run(
    requests: Requests, balance: tuple[int, int] | None, ranks: int = 2, seats: int = 256
) -> SimResult:
    config = SimConfig(
        policy="trtllm-no-evict", max_num_seqs=seats, max_num_batched_tokens=4096,
        adp_balance=balance,
    )  # fmt: skip
    capacity = KVCapacity(blocks=4000, block_size=16)
    return simulate(requests, _model(ranks), capacity, config, dp=ranks)


def _ttft_ms(result: SimResult) -> list[float]:
    return [round(t * 1e3, 9) for t in result.ttft_s]


def test_a_lone_request_waits_for_the_timeout() -> None:
    # Requests 0 and 1 arrive at t = 0 on ranks 0 and 1: no rank has a generation request, so
    # they run at once (step 0, first tokens at 1 ms; the count restarts at 0). Steps 1 and 2
    # decode, no context request anywhere: the count goes 1, 2. Request 2 arrives at 2.5 ms on
    # rank 0, is seen before step 3; rank 1 has no context request: steps 3 and 4 wait (count
    # 3, 4), in step 5 the count reaches 5 = timeout_iters and it runs: first token at 6 ms,
    # TTFT 3.5 ms (1.5 ms with the balance off: it runs in step 3).
    requests = _requests([0, 0, 2.5], [20, 20, 5])
    assert _ttft_ms(_run(requests, None)) == [1, 1, 1.5]
    assert _ttft_ms(_run(requests, (5, 0))) == [1, 1, 3.5]


def test_the_count_runs_on_without_context_requests_and_restarts_at_the_timeout() -> None:
    # After step 0 the count goes 1 .. 4 in steps 1 .. 4 and back to 0 in step 5 (it reached
    # 5). Request 2 arrives at 5.5 ms, seen before step 6: it waits steps 6 .. 9 (count 1 .. 4),
    # runs in step 10, first token at 11 ms: TTFT 5.5 ms, timeout_iters - 1 iterations waited
    # and the fifth runs it. Arriving at 7.5 ms (count 2 after step 7) it waits steps 8, 9.
    late = _requests([0, 0, 5.5], [20, 20, 5])
    assert _ttft_ms(_run(late, (5, 0))) == [1, 1, 5.5]
    later = _requests([0, 0, 7.5], [20, 20, 5])
    assert _ttft_ms(_run(later, (5, 0))) == [1, 1, 3.5]


def test_every_rank_with_a_context_request_runs_them_at_once() -> None:
    # Requests 2 and 3 arrive together at 2.5 ms on ranks 0 and 1, both decoding: every rank
    # has a context request, a generation request and a seat, batching_wait_iters 0: they run in
    # step 3 as without the balance (first tokens at 4 ms).
    requests = _requests([0, 0, 2.5, 2.5], [20, 20, 5, 5])
    assert _ttft_ms(_run(requests, (5, 0))) == [1, 1, 1.5, 1.5]
    # batching_wait_iters 2: they wait steps 3 and 4 (the batching count 1, 2) and run in step 5
    assert _ttft_ms(_run(requests, (5, 2))) == [1, 1, 3.5, 3.5]


def test_a_rank_without_a_generation_request_releases_at_once() -> None:
    # Request 1 arrives at 2.5 ms on rank 1, which holds nothing else: it has a context request
    # and no generation request, so nothing waits (the count restarts); it runs in step 3.
    requests = _requests([0, 2.5], [20, 5])
    assert _ttft_ms(_run(requests, (5, 0))) == [1, 1.5]


def test_a_rank_given_no_request_pads_with_a_dummy_and_never_has_a_context_request() -> None:
    # A group of three ranks of which only two are given requests (0 and 2 to rank 0, 1 and 3
    # to rank 1): the third never has a context request, and counts as having a generation
    # request (TensorRT-LLM pads it with a dummy one). Requests 2 and 3 arrive together at 2.5
    # ms: with a group of two they run at once (step 3); with the third rank they wait for the
    # timeout as a lone request does (step 5, first tokens at 6 ms).
    requests = _requests([0, 0, 2.5, 2.5], [20, 20, 5, 5])
    config = SimConfig(policy="trtllm-no-evict", max_num_batched_tokens=4096, adp_balance=(5, 0))
    capacity, model = KVCapacity(blocks=4000, block_size=16), _model(3)
    rule = make_policy(config, requests)
    for group, ttft_ms in ((2, [1.5, 1.5]), (3, [3.5, 3.5])):
        ranks = [
            ReplicaSim(requests.subset(np.array(mine)), model.local, capacity, config, rule)
            for mine in ([0, 2], [1, 3])
        ]
        first, second = LockstepSim(ranks, model, group=group).run()
        late = [first.first_token_s[1] - 2.5e-3, second.first_token_s[1] - 2.5e-3]
        assert [round(t * 1e3, 9) for t in late] == ttft_ms


def test_a_full_rank_holds_the_others_until_the_timeout() -> None:
    # Both ranks' seats hold one request each (max_batch_size 1 per rank): requests 0 and 1
    # run at t = 0; request 2 (rank 0) arrives at 2.5 ms and request 3 (rank 1) at 2.5 ms, but
    # no rank has a free seat (1 generation request of 1), so they wait whatever the context
    # requests; they are admitted once requests 0 and 1 finish (5 tokens: steps 0 .. 4) and
    # both ranks, without generation requests, release at once: step 5, first tokens at 6 ms.
    requests = _requests([0, 0, 2.5, 2.5], [5, 5, 5, 5])
    assert _ttft_ms(_run(requests, (60, 0), seats=1)) == [1, 1, 3.5, 3.5]
    assert _ttft_ms(_run(requests, None, seats=1)) == [1, 1, 3.5, 3.5]


@settings(max_examples=40, deadline=None)
@given(
    ranks=st.integers(2, 4),
    timeout=st.integers(0, 12),
    wait=st.integers(0, 4),
    arrivals=st.lists(st.floats(0.0, 40.0), min_size=1, max_size=14),
    outputs=st.lists(st.integers(1, 30), min_size=14, max_size=14),
    prompts=st.lists(st.integers(1, 40), min_size=14, max_size=14),
)
def test_the_balance_conserves_tokens_and_holds_no_request_past_its_bound(
    ranks: int,
    timeout: int,
    wait: int,
    arrivals: list[float],
    outputs: list[int],
    prompts: list[int],
) -> None:
    n = len(arrivals)
    requests = dataclasses.replace(
        _requests(arrivals, outputs[:n]), input_tokens=np.array(prompts[:n], dtype=np.int64)
    )
    on = _run(requests, (timeout, wait), ranks=ranks)
    # every request finishes with its tokens: prompt + output - 1 scheduled (the prefill's step
    # writes the first token), nothing recomputed (the KV cache and the token budget are roomy)
    assert np.isfinite(on.finish_s).all()
    assert list(on.output_tokens) == outputs[:n]
    assert on.scheduled_tokens == sum(prompts[:n]) + sum(outputs[:n]) - n
    # With seats and budget to spare, a request is seen at the start of the step after its
    # arrival (<= 1 step), waits at most timeout_iters - 1 steps counting and batching_wait_iters
    # more once every rank has one, and its prefill step writes its first token.
    bound_s = (1 + max(timeout - 1, 0) + wait + 1) * STEP_S
    assert on.ttft_s.max() <= bound_s + 1e-9
    off = _run(requests, None, ranks=ranks)
    assert off.ttft_s.max() <= 2 * STEP_S + 1e-9


def test_the_setting_parses_as_the_engine_names_it() -> None:
    assert parse_adp_balance("on") == (50, 10)  # AttentionDpConfig's defaults
    assert parse_adp_balance("60:0") == (60, 0)  # InferenceX's R1 scripts
    assert parse_adp_balance("60") == (60, 0)
    assert parse_adp_balance("off") is None
    for bad in ("60:0:1", "sixty", "-1", "60:x", "1000001"):
        with pytest.raises(InputError, match="attention_dp_balance: "):
            parse_adp_balance(bad)
    with pytest.raises(InputError, match="--attention-dp-balance: "):
        settings_of({"engine": "trtllm", "attention_dp_balance": "soon"})


def _r1(engine: str, layout: str | None, **values: object) -> Deployment:
    settings = settings_of({"engine": engine, **values})
    return resolve(get_model("deepseek-r1"), get_hardware("h200-sxm"), settings, layout=layout)


def test_other_engines_and_layouts_without_attention_dp_refuse_it_in_one_line() -> None:
    with pytest.raises(InputError, match="attention_dp_balance: TensorRT-LLM's"):
        _r1("sglang", "dpa8", attention_dp_balance="60:0")
    with pytest.raises(InputError, match="layout tp8 has no attention DP"):
        _r1("trtllm", "tp8", attention_dp_balance="60:0")
    # off is the default and may be said anywhere
    assert _r1("sglang", "tp8", attention_dp_balance="off").sim_config(4096).adp_balance is None


def test_a_deployment_passes_it_to_the_simulator_and_says_so() -> None:
    dep = _r1("trtllm", "dpa8", attention_dp_balance="60:0")
    assert dep.sim_config(4096).adp_balance == (60, 0)
    assert "attention-DP balance" in step_label(dep) and "up to 60 iterations" in step_label(dep)
    assert _r1("trtllm", "dpa8").sim_config(4096).adp_balance is None
    assert trtllm_adp_balance_config((60, 0)) == (
        "attention_dp_config: {enable_balance: true, timeout_iters: 60, batching_wait_iters: 0}"
    )
    assert trtllm_adp_balance_config(None) is None
