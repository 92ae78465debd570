"""SGLang's prefill steps of their own (`capcliff.sim.loop.exclusive_prefill`): one case worked by
hand, the jumps over decode runs against every step run exactly, and where deployments use it."""

from __future__ import annotations

import dataclasses
from unittest.mock import patch

import pytest

import capcliff.sim.loop.replica as replica_module
from capcliff.analysis.deployment import resolve
from capcliff.analysis.deployment_settings import settings_of
from capcliff.catalog.catalogs import get_hardware, get_model
from capcliff.sim.config import KVCapacity, PreemptionMode, SimConfig
from capcliff.sim.loop.replica import ReplicaSim
from capcliff.sim.loop.step_plan import PlannedStep
from capcliff.sim.loop.timeline import ReplicaResult
from capcliff.sim.simulate import make_policy
from capcliff.sim.traffic.workload import Requests
from tests.simtools import (
    pressure_case,
    random_case,
    toy_model,
    two_decoding_and_a_long_arrival,
)


def _two_decoding_and_a_long_arrival(*, mixed: bool) -> ReplicaResult:
    """A and B (4-token prompts, 5 tokens out) at 0 s; C (12-token prompt, 2 out) at 2.5 s."""
    return two_decoding_and_a_long_arrival(mixed=mixed).run()


def test_a_long_prompt_runs_its_chunks_in_steps_of_their_own() -> None:
    # Every step takes 1 s; 8 tokens per step. Step 0 (0-1 s): A and B prefill (4 + 4), first
    # tokens at 1 s. Steps 1-2: A, B decode tokens 2 and 3. C (12 tokens) arrives at 2.5 s.
    # Step 3 (3-4 s): C's first chunk, 8 tokens, alone; step 4 (4-5 s): its last 4, alone, its
    # first token at 5 s. Step 5: A, B token 4, C token 2 (its last: done at 6 s). Step 6: A, B
    # token 5, done at 7 s. Tokens: 8 + 2 + 2 + 8 + 4 + 3 + 2 = 29 in 7 steps.
    alone = _two_decoding_and_a_long_arrival(mixed=False)
    assert alone.first_token_s.tolist() == [1.0, 1.0, 5.0]
    assert alone.finish_s.tolist() == [7.0, 7.0, 6.0]
    assert (alone.steps, alone.scheduled_tokens) == (7, 29)
    # Mixed (vLLM V1, SGLang --enable-mixed-chunk): steps 3 and 4 decode A and B with 6 of C's
    # tokens each, so A and B finish at 5 s; C's last token at 6 s: 8 + 2 + 2 + 8 + 8 + 1 = 29.
    mixed = _two_decoding_and_a_long_arrival(mixed=True)
    assert mixed.first_token_s.tolist() == [1.0, 1.0, 5.0]
    assert mixed.finish_s.tolist() == [5.0, 5.0, 6.0]
    assert (mixed.steps, mixed.scheduled_tokens) == (6, 29)


def _same(a: ReplicaResult, b: ReplicaResult) -> None:
    assert a.first_token_s == pytest.approx(b.first_token_s, rel=1e-9)
    assert a.finish_s == pytest.approx(b.finish_s, rel=1e-9)
    assert a.preemptions.tolist() == b.preemptions.tolist()
    assert a.recomputed_tokens.tolist() == b.recomputed_tokens.tolist()
    assert (a.steps, a.scheduled_tokens) == (b.steps, b.scheduled_tokens)
    assert (a.blocked_steps, a.peak_used_blocks) == (b.blocked_steps, b.peak_used_blocks)


def _both_ways(requests: Requests, capacity: KVCapacity, config: SimConfig) -> None:
    """The replica with its jumps over decode runs, and with every step exact, agree."""
    config = dataclasses.replace(config, mixed_prefill=False)
    rule = make_policy(config, requests)
    fast = ReplicaSim(requests, toy_model(), capacity, config, rule).run()
    with patch.object(replica_module, "fast_forward", lambda sim: False):
        slow = ReplicaSim(requests, toy_model(), capacity, config, rule).run()
    _same(fast, slow)


@pytest.mark.parametrize("arrival", ("batch", "poisson", "clients"))
def test_jumps_over_decode_runs_equal_exact_steps(arrival: str) -> None:
    for seed in range(6):
        _both_ways(*random_case(seed, "sglang", PreemptionMode.RECOMPUTE, arrival))


def test_jumps_over_decode_runs_equal_exact_steps_under_pressure() -> None:
    retracted = 0
    for seed in range(6):
        requests, capacity, config, _ = pressure_case(seed, "sglang", PreemptionMode.RECOMPUTE)
        _both_ways(requests, capacity, config)
        config = dataclasses.replace(config, mixed_prefill=False)
        run = ReplicaSim(requests, toy_model(), capacity, config, make_policy(config, requests))
        retracted += int(run.run().preemptions.sum())
    assert retracted > 0  # retractions while prefills wait are compared too


def test_exclusive_prefill_steps_decode_nobody() -> None:
    # Every step that schedules more tokens than it has running sequences to decode ran a
    # prefill: with the rule on, such a step never also decodes, so every step either
    # schedules only prefill tokens or exactly one token per decoding sequence.
    requests, capacity, config = random_case(3, "sglang", PreemptionMode.RECOMPUTE, "poisson")
    config = dataclasses.replace(config, mixed_prefill=False)
    sim = ReplicaSim(requests, toy_model(), capacity, config, make_policy(config, requests))
    loads: list[tuple[int, int]] = []
    begin = sim.begin_step

    def spy() -> PlannedStep:
        planned = begin()
        loads.append((planned.load[0], planned.load[1]))
        if planned.admitted or planned.chunk_x:
            assert planned.load[0] == sum(c for _, _, c in planned.admitted) + planned.chunk_x
        return planned

    with patch.object(sim, "begin_step", spy):
        sim.run()
    assert any(tokens > seqs for tokens, seqs in loads)  # prefill steps ran


def _sim_config(engine: str, speculative: str | None) -> SimConfig:
    values: dict[str, object] = {"engine": engine, "max_model_len": 8192}
    if speculative:
        values["speculative"] = speculative
    dep = resolve(get_model("deepseek-r1"), get_hardware("h200-sxm"), settings_of(values))
    return dep.sim_config(8192)


def test_only_sglang_deployments_run_prefill_steps_apart() -> None:
    # SGLang: no mixed chunk by default, and none with EAGLE/MTP whatever the flags; vLLM V1 and
    # TensorRT-LLM schedule the chunks with the decodes, speculating or not.
    assert not _sim_config("sglang", None).mixed_prefill
    assert not _sim_config("sglang", "mtp:2").mixed_prefill
    assert _sim_config("vllm", "mtp:2").mixed_prefill
    assert _sim_config("trtllm", None).mixed_prefill
