"""The overlap scheduler's admission rule: a request that arrives while step N runs is first
scheduled in step N + 2 (SGLang's `event_loop_overlap`, TensorRT-LLM's `_executor_loop_overlap`:
step N + 1 was decided when step N started). Worked cases by hand, the step-by-step reference
with the same rule, and which engines and layouts get it."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from capcliff.analysis.deployment import resolve
from capcliff.analysis.deployment_settings import settings_of
from capcliff.analysis.evaluate.replica_models import replica_models, step_label
from capcliff.analysis.serve_command import parse_serve_command
from capcliff.catalog.catalogs import get_hardware, get_model
from capcliff.catalog.layout import Layout
from capcliff.memory.budget import EngineName
from capcliff.perf.profiles import engine_profile, overlaps, step_profile
from capcliff.perf.step_time import StepTimeModel
from capcliff.sim.config import KVCapacity, PreemptionMode, SimConfig
from capcliff.sim.loop.landed import LandedReplicaSim
from capcliff.sim.loop.replica import ReplicaSim
from capcliff.sim.simulate import make_policy, simulate
from capcliff.sim.traffic.workload import Requests
from tests.reference_sim import ReferenceSim
from tests.simtools import (
    POLICIES,
    alone_and_in_lockstep,
    constant_model,
    pressure_case,
    random_case,
    toy_model,
)
from tests.test_attention_dp import _toy_lockstep
from tests.test_simulate import ARRIVALS, MODES, _assert_same

STEP_S = 0.01  # every step of `constant_model(STEP_S)` lasts 10 ms


def _overlapped(model: StepTimeModel) -> StepTimeModel:
    return dataclasses.replace(model, overlap_schedule=True)


def _two_requests(second_at_s: float) -> Requests:
    """A: 4-token prompt at t = 0, 10 tokens out (decodes through steps 1-9); B: 4-token prompt
    at `second_at_s`, 2 tokens out."""
    return Requests(
        input_tokens=np.array([4, 4], dtype=np.int64),
        output_tokens=np.array([10, 2], dtype=np.int64),
        max_output_tokens=np.array([10, 2], dtype=np.int64),
        arrival_s=np.array([0.0, second_at_s]),
    )


def _ttft(requests: Requests, *, overlap: bool) -> list[float]:
    model = constant_model(STEP_S)
    model = _overlapped(model) if overlap else model
    result = simulate(requests, model, KVCapacity(100, 16), SimConfig(policy="sglang"))
    return [float(t) for t in result.ttft_s]


def test_a_request_arriving_mid_step_waits_one_more_step_under_overlap() -> None:
    # Steps of 10 ms: step 0 = [0, 10) prefills A, step 1 = [10, 20), step 2 = [20, 30), ...
    # B arrives at 15 ms, during step 1. Without overlap the scheduler polls at 20 ms, when step
    # 1 ends, and B prefills in step 2: first token at 30 ms, TTFT 15 ms. With it, step 2 was
    # decided at 10 ms (when step 1 started); the poll at 20 ms feeds step 3 = [30, 40): first
    # token at 40 ms, TTFT 25 ms. A, alone on an idle engine at t = 0, starts at once either way.
    assert _ttft(_two_requests(0.015), overlap=False) == pytest.approx([0.010, 0.015])
    assert _ttft(_two_requests(0.015), overlap=True) == pytest.approx([0.010, 0.025])


def test_an_arrival_exactly_on_a_step_boundary() -> None:
    # B arrives at 20 ms, the instant step 1 ends and step 2 starts. Without overlap the poll at
    # 20 ms takes it (ties count as there): step 2, first token at 30 ms, TTFT 10 ms. With
    # overlap step 2 was decided at 10 ms; the poll at 20 ms (step 2's start) takes it for step
    # 3 = [30, 40): TTFT 20 ms.
    assert _ttft(_two_requests(0.020), overlap=False) == pytest.approx([0.010, 0.010])
    assert _ttft(_two_requests(0.020), overlap=True) == pytest.approx([0.010, 0.020])


def test_an_idle_engine_takes_a_request_at_once_under_overlap() -> None:
    # A finishes at the end of step 9 (100 ms); B arrives at 150 ms on an idle engine, whose loop
    # polls at once: one step, TTFT 10 ms, with or without overlap.
    assert _ttft(_two_requests(0.150), overlap=True) == pytest.approx([0.010, 0.010])


def _reference_pair(requests, capacity, config, model):  # type: ignore[no-untyped-def]
    rule = make_policy(config, requests)
    fast = ReplicaSim(requests, model, capacity, config, rule).run()
    slow = ReferenceSim(requests, model, capacity, config, rule).run()
    return fast, slow


@pytest.mark.parametrize("arrival", ARRIVALS)
@pytest.mark.parametrize("mode", MODES, ids=lambda m: m.value)
@pytest.mark.parametrize("policy", POLICIES)
def test_event_driven_equals_step_by_step_under_overlap(
    policy: str, mode: PreemptionMode, arrival: str
) -> None:
    for seed in range(3):
        requests, capacity, config = random_case(seed, policy, mode, arrival)
        _assert_same(*_reference_pair(requests, capacity, config, _overlapped(toy_model())))


@pytest.mark.parametrize("mode", MODES, ids=lambda m: m.value)
@pytest.mark.parametrize("policy", ("vllm", "sglang", "trtllm-max-util"))
def test_event_driven_equals_step_by_step_under_overlap_and_pressure(
    policy: str, mode: PreemptionMode
) -> None:
    for seed in (3, 5, 7):  # odd seeds: Poisson arrivals, which the rule delays
        requests, capacity, config, _ = pressure_case(seed, policy, mode)
        fast, slow = _reference_pair(requests, capacity, config, _overlapped(toy_model()))
        _assert_same(fast, slow)
        assert sum(slow.preemptions) > 0, f"seed {seed} never preempted"


@pytest.mark.parametrize("policy", POLICIES)
def test_boundary_arrivals_agree_with_the_reference_under_overlap(policy: str) -> None:
    # Constant steps, arrivals on their grid (every arrival ties with a step's start or end).
    for seed in range(4):
        rng = np.random.default_rng(seed)
        n = 20
        requests = Requests(
            rng.integers(1, 40, n).astype(np.int64), rng.integers(1, 30, n).astype(np.int64),
            np.full(n, 40, dtype=np.int64), np.sort(rng.integers(0, 40, n)) * 0.003,
        )  # fmt: skip
        capacity = KVCapacity(blocks=200, block_size=4, kv_bytes_per_token=1000)
        config = SimConfig(policy=policy, max_num_seqs=6, max_num_batched_tokens=32)
        model = _overlapped(constant_model(0.003))
        _assert_same(*_reference_pair(requests, capacity, config, model))


def test_which_engines_and_layouts_run_an_overlap_scheduler() -> None:
    tp8, dpa = Layout(tp=8), Layout(tp=8, dp=8, attention_dp=True)
    sglang, trtllm = engine_profile(EngineName.SGLANG), engine_profile(EngineName.TRTLLM)
    assert overlaps(sglang, tp8) and overlaps(sglang, dpa) and overlaps(trtllm, tp8)
    old = engine_profile(EngineName.SGLANG, "0.4.3")  # DP attention turned it off before 0.4.8
    assert overlaps(old, tp8) and not overlaps(old, dpa)
    # vLLM V1 schedules between steps before 0.14, asynchronously from 0.14.0 (not with PP)
    assert not overlaps(engine_profile(EngineName.VLLM, "0.11.0"), tp8)
    assert overlaps(engine_profile(EngineName.VLLM, "0.14.0"), tp8)
    assert overlaps(engine_profile(EngineName.VLLM), tp8)
    assert not overlaps(engine_profile(EngineName.VLLM), Layout(tp=4, pp=2))
    assert not overlaps(engine_profile(EngineName.VLLM_V0), tp8)
    off, _ = step_profile(EngineName.SGLANG, {"overlap_schedule": 0.0})
    assert not overlaps(off, tp8)


@pytest.mark.parametrize("arrival", ARRIVALS)
@pytest.mark.parametrize("policy", POLICIES)
def test_one_busy_rank_in_lockstep_runs_as_alone_under_overlap(policy: str, arrival: str) -> None:
    # The group's clock takes arrivals by the same rule as one replica's (test_attention_dp's
    # case: a lone busy rank's steps are the replica's steps priced for all ranks).
    model = _overlapped(_toy_lockstep())
    for seed in range(2):
        requests, capacity, config = random_case(seed, policy, PreemptionMode.SWAP, arrival)
        alone, together = alone_and_in_lockstep(requests, model, capacity, config)
        assert together.first_token_s == pytest.approx(alone.first_token_s, rel=1e-9)
        assert together.finish_s == pytest.approx(alone.finish_s, rel=1e-9)


@pytest.mark.parametrize("policy", POLICIES)
def test_a_decode_replica_admitting_landed_kv_matches_the_reference_under_overlap(
    policy: str,
) -> None:
    model = _overlapped(toy_model())
    for seed in range(3):
        requests, capacity, config = random_case(seed, policy, PreemptionMode.RECOMPUTE, "poisson")
        requests = dataclasses.replace(
            requests, output_tokens=requests.output_tokens + 1,
            max_output_tokens=requests.max_output_tokens + 1,
        )  # fmt: skip
        capacity = dataclasses.replace(capacity, blocks=capacity.blocks + 1)
        rule = make_policy(config, requests)
        fast = LandedReplicaSim(requests, model, capacity, config, rule).run()
        ref = ReferenceSim(requests, model, capacity, config, rule, landed=True).run()
        np.testing.assert_allclose(fast.first_token_s, ref.first_token_s, rtol=1e-9)
        np.testing.assert_allclose(fast.finish_s, ref.finish_s, rtol=1e-9)
        assert fast.steps == ref.steps


def _deployment(engine: str, **settings: object):  # type: ignore[no-untyped-def]
    return resolve(
        get_model("llama-3.1-8b"), get_hardware("h200-sxm"),
        settings_of({"engine": engine, **settings}),
    )  # fmt: skip


def _replica_overlaps(dep) -> bool:  # type: ignore[no-untyped-def]
    memory = dep.memory(Layout(), 4096)
    return replica_models(dep, memory)[1].overlap_schedule


def test_a_deployment_carries_the_rule_to_the_simulator_and_says_so() -> None:
    sglang = _deployment("sglang")
    assert _replica_overlaps(sglang)
    assert "overlap scheduler: a request arriving during step N runs from step N + 2 (modeled" in (
        step_label(sglang)
    )
    off = _deployment("sglang", overlap_schedule=False)
    assert not _replica_overlaps(off)
    assert "no overlap scheduler (--no-overlap-schedule)" in step_label(off)
    assert _replica_overlaps(_deployment("trtllm"))
    serial = _deployment("vllm", engine_version="0.11.0")  # before async scheduling's default
    assert not _replica_overlaps(serial)
    assert "overlap scheduler" not in step_label(serial)
    assert _replica_overlaps(_deployment("vllm", engine_version="0.11.0", overlap_schedule=True))
    assert _replica_overlaps(_deployment("vllm"))  # the latest release: async by default


def test_sglang_launch_flag_turns_it_off() -> None:
    cmd = parse_serve_command(
        "python -m sglang.launch_server --model-path meta-llama/Llama-3.1-8B --tp 1 "
        "--disable-overlap-schedule"
    )
    assert cmd.settings["overlap_schedule"] is False
    assert not cmd.unmodelled


def test_sglang_speculative_worker_without_spec_v2_runs_no_overlap_scheduler() -> None:
    # server_args.py: without SGLANG_ENABLE_SPEC_V2, EAGLE/MTP set disable_overlap_schedule
    assert _deployment("sglang", speculative="eagle:3").overlap_schedule(True) == (
        False, "speculative worker",
    )  # fmt: skip
    on = _deployment("sglang", speculative="eagle:3", spec_overlap=True)
    assert on.overlap_schedule(True) == (True, "engine default")
