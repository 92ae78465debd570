"""vLLM V0 without chunked prefill (`capcliff.sim.loop.prefill_only`): prefill-only steps, exact
against the step-by-step reference, and one case worked by hand."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from unittest.mock import patch

import numpy as np
import pytest

import capcliff.sim.loop.replica as replica_module
from capcliff.analysis.deployment import resolve
from capcliff.analysis.deployment_settings import settings_of
from capcliff.catalog.catalogs import get_hardware, get_model
from capcliff.errors import InputError
from capcliff.sim.config import KVCapacity, PreemptionMode, SimConfig
from capcliff.sim.loop.prefill_only import swapped_queue
from capcliff.sim.loop.replica import ReplicaSim
from capcliff.sim.simulate import make_policy
from capcliff.sim.traffic.workload import Requests
from tests.reference_sim import ReferenceSim
from tests.simtools import constant_model, pressure_case, random_case, toy_model
from tests.test_simulate import _assert_same

MODES = (PreemptionMode.RECOMPUTE, PreemptionMode.SWAP)


@pytest.fixture(params=(True, False), ids=("fast_forward", "step_by_step"))
def jumps(request: pytest.FixtureRequest) -> Iterator[None]:
    """Runs a test with the replica's jumps over decode runs on, then off (every step exact)."""
    if request.param:
        yield
        return
    with patch.object(replica_module, "fast_forward", lambda sim: False):
        yield


def _no_chunking(requests: Requests, config: SimConfig, extra: int) -> SimConfig:
    """`config` with chunked prefill off and a token budget `extra` above the longest request
    (V0's SchedulerConfig needs max_num_batched_tokens >= max_model_len without chunking)."""
    longest = int((requests.input_tokens + requests.max_output_tokens).max())
    return dataclasses.replace(
        config, chunked_prefill=False, max_num_batched_tokens=longest + extra
    )


@pytest.mark.parametrize("mode", MODES, ids=lambda m: m.value)
@pytest.mark.parametrize("arrival", ("batch", "poisson", "clients"))
@pytest.mark.usefixtures("jumps")
def test_prefill_only_steps_equal_step_by_step(mode: PreemptionMode, arrival: str) -> None:
    for seed in range(6):
        requests, capacity, config = random_case(seed, "vllm-v0", mode, arrival)
        config = _no_chunking(requests, config, extra=seed * 7)
        rule = make_policy(config, requests)
        fast = ReplicaSim(requests, toy_model(), capacity, config, rule).run()
        slow = ReferenceSim(requests, toy_model(), capacity, config, rule).run()
        _assert_same(fast, slow)


@pytest.mark.parametrize("mode", MODES, ids=lambda m: m.value)
@pytest.mark.usefixtures("jumps")
def test_prefill_only_steps_equal_step_by_step_under_pressure(mode: PreemptionMode) -> None:
    preempted = swapped = 0
    for seed in range(6):
        requests, capacity, config, rule = pressure_case(seed, "vllm-v0", mode)
        config = _no_chunking(requests, config, extra=seed * 11)
        fast = ReplicaSim(requests, toy_model(), capacity, config, rule).run()
        slow = ReferenceSim(requests, toy_model(), capacity, config, rule).run()
        _assert_same(fast, slow)
        preempted += sum(slow.preemptions)
        swapped += slow.swapped_tokens
    assert preempted > 0  # victims, requeueing and recompute are compared step by step
    if mode is PreemptionMode.SWAP:
        assert swapped > 0  # and swap-ins that wait for a step without prefills


def test_swapped_requests_come_back_first_swapped_out_first() -> None:
    # V0 appends each swap-out to `Scheduler.swapped` and serves it from the front. Requests 1
    # (swapped out), 2 (swapped out), 3 (recomputed: the host pool was full), 4 (swapped out)
    # were preempted in that order, each put at the front of the waiting queue: [4, 3, 2, 1],
    # then 0, which never ran. V0's swapped queue is [1, 2, 4]; the recomputed 3 waits for a
    # prefill step, which comes only once that queue is empty.
    requests = Requests(
        input_tokens=np.full(5, 4, dtype=np.int64),
        output_tokens=np.full(5, 8, dtype=np.int64),
        max_output_tokens=np.full(5, 8, dtype=np.int64),
        arrival_s=np.zeros(5),
    )
    config = SimConfig(
        policy="vllm-v0", max_num_seqs=8, max_num_batched_tokens=16, chunked_prefill=False
    )
    capacity = KVCapacity(blocks=100, block_size=1, kv_bytes_per_token=1000)
    sim = ReplicaSim(requests, toy_model(), capacity, config, make_policy(config, requests))
    sim.waiting.extend([4, 3, 2, 1, 0])
    for i in (1, 2, 3, 4):
        sim.preemptions[i] = 1
    for i in (1, 2, 4):
        sim.host_kv[i] = 6
    assert swapped_queue(sim) == [1, 2, 4]


def _two_decoding_and_one_arrival(chunked: bool):  # type: ignore[no-untyped-def]
    requests = Requests(
        input_tokens=np.array([4, 4, 4], dtype=np.int64),
        output_tokens=np.array([5, 5, 2], dtype=np.int64),
        max_output_tokens=np.array([5, 5, 2], dtype=np.int64),
        arrival_s=np.array([0.0, 0.0, 2.5]),
    )
    capacity = KVCapacity(blocks=100, block_size=1, kv_bytes_per_token=1000)
    config = SimConfig(
        policy="vllm-v0", max_num_seqs=8, max_num_batched_tokens=16, chunked_prefill=chunked
    )
    rule = make_policy(config, requests)
    return ReplicaSim(requests, constant_model(1.0), capacity, config, rule).run()


def test_an_arriving_prompt_gets_a_step_of_its_own() -> None:
    # Every step takes 1 s. Step 0 (0-1 s): A and B prefill together (8 <= 16 tokens), first
    # tokens at 1 s. Steps 1-2 (1-3 s): A, B decode tokens 2 and 3. C arrives at 2.5 s; step 3
    # (3-4 s) runs C's 4-token prefill alone (A and B wait), C's first token at 4 s. Step 4
    # (4-5 s): A, B write token 4, C its 2nd and last (finishes at 5 s). Step 5 (5-6 s): A, B
    # write token 5 and finish at 6 s. Tokens: 8 + 2 + 2 + 4 + 3 + 2 = 21 in 6 steps.
    alone = _two_decoding_and_one_arrival(chunked=False)
    assert alone.first_token_s.tolist() == [1.0, 1.0, 4.0]
    assert alone.finish_s.tolist() == [6.0, 6.0, 5.0]
    assert alone.steps == 6
    assert alone.scheduled_tokens == 21
    # Chunked (V0's `_schedule_chunked_prefill`): step 3 runs A and B's decodes with C's prefill
    # (6 tokens), so A and B finish a step earlier, at 5 s: 8 + 2 + 2 + 6 + 3 = 21 in 5 steps.
    mixed = _two_decoding_and_one_arrival(chunked=True)
    assert mixed.finish_s.tolist() == [5.0, 5.0, 5.0]
    assert mixed.steps == 5


def test_prefill_only_steps_are_vllm_v0_only_and_need_a_whole_request_budget() -> None:
    with pytest.raises(InputError, match="chunked_prefill"):
        SimConfig(policy="vllm", chunked_prefill=False)
    requests = Requests(
        input_tokens=np.array([30], dtype=np.int64),
        output_tokens=np.array([5], dtype=np.int64),
        max_output_tokens=np.array([10], dtype=np.int64),
        arrival_s=np.zeros(1),
    )
    config = SimConfig(
        policy="vllm-v0", max_num_seqs=4, max_num_batched_tokens=39, chunked_prefill=False
    )
    capacity = KVCapacity(blocks=100, block_size=1, kv_bytes_per_token=1000)
    with pytest.raises(InputError, match="max_num_batched_tokens"):
        ReplicaSim(requests, toy_model(), capacity, config, make_policy(config, requests))


def _sim_config(model: str, *, max_model_len: int = 8192, **given: object) -> SimConfig:
    values = {"engine": "vllm-v0", "max_model_len": max_model_len, **given}
    dep = resolve(get_model(model), get_hardware("h200-sxm"), settings_of(values))
    return dep.sim_config(max_model_len)


def test_a_v0_deployment_runs_without_chunked_prefill_where_v0_does() -> None:
    # V0 turns chunked prefill on only above 32K context, never by default for MLA (arg_utils.py,
    # `vllm_v0_chunked_prefill`): Llama at 8K and DeepSeek-R1 (MLA) at its 163,840-token context
    # run prefill-only steps with a budget of the whole context; Llama at 64K chunks at 2,048.
    llama = _sim_config("llama-3.1-8b", max_model_len=8192)
    r1 = _sim_config("deepseek-r1", max_model_len=163_840)
    long = _sim_config("llama-3.1-8b", max_model_len=65_536)
    assert (llama.chunked_prefill, llama.max_num_batched_tokens) == (False, 8192)
    assert (r1.chunked_prefill, r1.max_num_batched_tokens) == (False, 163_840)
    assert (long.chunked_prefill, long.max_num_batched_tokens) == (True, 2048)


def test_enable_chunked_prefill_overrides_v0_default() -> None:
    # Off at 64K: the budget is max(65,536, 2,048); on for R1: V0's 2,048-token chunks.
    off = _sim_config("llama-3.1-8b", max_model_len=65_536, enable_chunked_prefill=False)
    on = _sim_config("deepseek-r1", max_model_len=163_840, enable_chunked_prefill=True)
    assert (off.chunked_prefill, off.max_num_batched_tokens) == (False, 65_536)
    assert (on.chunked_prefill, on.max_num_batched_tokens) == (True, 2048)


def test_another_policy_on_v0_keeps_chunking() -> None:
    # SimConfig allows chunked_prefill off only with V0's own policy.
    assert _sim_config("llama-3.1-8b", policy="vllm").chunked_prefill


def test_enable_chunked_prefill_is_refused_for_sglang_and_off_for_other_engines() -> None:
    # SGLang has no such switch; vLLM V1 and TensorRT-LLM are simulated chunking (on is taken:
    # tests/test_random_combos10.py), off is modelled for V0 only
    refusals = [
        ("sglang", True, "enable_chunked_prefill: vLLM's and TensorRT-LLM's switch, not a sglang"),
        ("vllm", False, "enable_chunked_prefill: off is modelled for vllm-v0 only; vllm is"),
        ("trtllm", False, "enable_chunked_prefill: off is modelled for vllm-v0 only; trtllm is"),
    ]
    for engine, enabled, message in refusals:
        settings = settings_of({"engine": engine, "enable_chunked_prefill": enabled})
        with pytest.raises(InputError, match=message):
            resolve(get_model("llama-3.1-8b"), get_hardware("h200-sxm"), settings)


def test_v0_without_chunked_prefill_refuses_a_budget_below_max_model_len() -> None:
    # SchedulerConfig._verify_args (0.6.x-0.7.x): max_num_batched_tokens < max_model_len without
    # chunked prefill is a ValueError at start-up; with chunked prefill on it is accepted.
    with pytest.raises(
        InputError, match=r"max_num_batched_tokens: 2048 is smaller than max_model_len \(8192\)"
    ):
        _sim_config("llama-3.1-8b", max_model_len=8192, max_num_batched_tokens=2048)
    on = _sim_config(
        "llama-3.1-8b", max_model_len=8192, max_num_batched_tokens=2048, enable_chunked_prefill=True
    )
    assert (on.chunked_prefill, on.max_num_batched_tokens) == (True, 2048)
