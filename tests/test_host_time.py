"""Host (CPU) time per step that grows with the sequences scheduled (perf/host_time.py): serial
engines add it to the GPU's step, overlap schedulers hide it behind the GPU's step unless it is
longer. Hand-worked steps, the measured figure, properties, and the event-driven simulator against
the step-by-step reference with the host terms on."""

from __future__ import annotations

import dataclasses
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from capcliff.catalog.catalogs import get_hardware
from capcliff.catalog.layout import Layout
from capcliff.memory.budget import EngineName
from capcliff.memory.weights import WeightScheme
from capcliff.perf.decode_line import DecodeLine
from capcliff.perf.host_time import VLLM_V1_HOST_PER_SEQ_S, host_step_s, step_with_host_s
from capcliff.perf.op_curves import MEASURED_CURVE_DIP
from capcliff.perf.profiles import engine_profile, step_profile
from capcliff.perf.step_time import StepTimeModel, step_time_model
from capcliff.sim.config import KVCapacity, PreemptionMode, SimConfig
from capcliff.sim.loop.replica import ReplicaSim
from capcliff.sim.simulate import make_policy, simulate
from capcliff.units import KVDType
from tests.conftest import arch_of
from tests.reference_sim import ReferenceSim
from tests.simtools import (
    alone_and_in_lockstep,
    constant_model,
    fixed_batch,
    random_case,
    toy_model,
)
from tests.test_attention_dp import _toy_lockstep
from tests.test_simulate import MODES, _assert_same

MS = 1e-3


def _hosted(model: StepTimeModel, *, overlap: bool, per_seq_s: float = 0.1 * MS) -> StepTimeModel:
    """`model` with 0.5 ms of fixed host time (inside its step_overhead_s) and `per_seq_s` per
    scheduled sequence."""
    return dataclasses.replace(
        model, host_fixed_s=0.5 * MS, host_per_seq_s=per_seq_s, overlap_schedule=overlap
    )


def test_host_time_is_fixed_plus_per_sequence() -> None:
    # 0.5 ms + 200 x 0.1 ms = 20.5 ms
    assert host_step_s(fixed_s=0.5 * MS, per_seq_s=0.1 * MS, seqs=200) == pytest.approx(20.5 * MS)


def test_serial_host_time_adds_and_overlapped_host_time_is_the_larger() -> None:
    assert step_with_host_s(10 * MS, 3 * MS, overlapped=False) == pytest.approx(13 * MS)
    assert step_with_host_s(10 * MS, 3 * MS, overlapped=True) == pytest.approx(10 * MS)
    assert step_with_host_s(10 * MS, 30 * MS, overlapped=True) == pytest.approx(30 * MS)


def test_a_serial_step_adds_the_host_time_of_its_sequences() -> None:
    # GPU 10 ms (0.5 ms of it the fixed host time) + 8 x 0.1 ms = 10.8 ms
    model = _hosted(constant_model(10 * MS), overlap=False)
    assert model.step_time_s(8, 8, 0, 0) == pytest.approx(10.8 * MS)
    assert model.decode_line(8, 0).step_s(0) == pytest.approx(10.8 * MS)


def test_an_overlapped_step_hides_a_shorter_host_time() -> None:
    # max(10 - 0.5 ms on the GPU, 0.5 + 8 x 0.1 = 1.3 ms on the host) = 9.5 ms
    model = _hosted(constant_model(10 * MS), overlap=True)
    assert model.step_time_s(8, 8, 0, 0) == pytest.approx(9.5 * MS)
    assert model.decode_line(8, 0).step_s(0) == pytest.approx(9.5 * MS)


def test_an_overlapped_step_lasts_a_longer_host_time() -> None:
    # max(9.5 ms, 0.5 + 200 x 0.1 = 20.5 ms) = 20.5 ms; 5 such steps 102.5 ms
    model = _hosted(constant_model(10 * MS), overlap=True)
    assert model.step_time_s(200, 200, 0, 0) == pytest.approx(20.5 * MS)
    line = model.decode_line(200, 0)
    assert line.step_s(0) == pytest.approx(20.5 * MS)
    assert line.total_s(5) == pytest.approx(102.5 * MS)


def test_vllm_v1_per_sequence_figure_is_the_async_scheduling_pair() -> None:
    # P216 - P217: (178.91 - 75.14) ms of TPOT over at most 1000 running requests = 103.77 us
    assert pytest.approx(103.77e-6) == VLLM_V1_HOST_PER_SEQ_S
    assert engine_profile(EngineName.VLLM).host_per_seq_s == VLLM_V1_HOST_PER_SEQ_S


@pytest.mark.parametrize("engine", [EngineName.SGLANG, EngineName.TRTLLM, EngineName.VLLM_V0])
def test_engines_without_a_measured_figure_add_no_per_sequence_host_time(
    engine: EngineName,
) -> None:
    assert engine_profile(engine).host_per_seq_s == 0.0


def test_the_per_sequence_host_time_is_overridable_by_name() -> None:
    profile, _ = step_profile(EngineName.VLLM, {"host_per_seq_s": 2e-5})
    assert profile.host_per_seq_s == 2e-5


def _llama_8b(  # type: ignore[no-untyped-def]
    *, fitted: dict[str, float] | None = None, layout: Layout | None = None, version: str = "0.11.0"
):
    arch = arch_of("llama-3.1-8b")
    return step_time_model(
        arch, get_hardware("h100-sxm"), layout or Layout(), scheme=WeightScheme.as_shipped(arch),
        kv_dtype=KVDType.BF16, profile=engine_profile(EngineName.VLLM, version), fitted=fitted,
    )  # fmt: skip


def test_a_vllm_v1_replica_carries_the_profile_host_terms() -> None:
    model = _llama_8b()
    assert model.host_fixed_s == 0.5 * MS
    assert model.host_per_seq_s == VLLM_V1_HOST_PER_SEQ_S
    assert not model.overlap_schedule  # 0.11: the scheduler runs between steps


def test_vllm_from_0_14_hides_the_host_time_behind_the_gpu_step() -> None:
    # v0.14.0 turned async scheduling on by default: one H100 step of 8 Llama-8B sequences is the
    # serial step less its 0.5 ms fixed host time and 8 x 103.77 us (the GPU outlasts the host)
    serial, overlapped = _llama_8b(), _llama_8b(version="0.14.0")
    assert overlapped.overlap_schedule
    hidden = 0.5 * MS + 8 * VLLM_V1_HOST_PER_SEQ_S
    expected = serial.step_time_s(8, 8, 8_000, 8_000) - hidden
    assert overlapped.step_time_s(8, 8, 8_000, 8_000) == pytest.approx(expected)


def test_pipeline_parallel_vllm_keeps_the_serial_host_time() -> None:
    # async scheduling is not on by default with PP (v0.14.0 release notes)
    assert not _llama_8b(layout=Layout(pp=2), version="0.14.0").overlap_schedule


def test_a_calibration_replaces_the_host_terms() -> None:
    # fixed_s and scale are fitted as a line of the step's parts: no term outside them
    model = _llama_8b(fitted={"fixed_s": 3 * MS, "scale": 1.1})
    assert model.host_fixed_s == 0.0 and model.host_per_seq_s == 0.0


def test_pipeline_stages_share_their_replica_host() -> None:
    # one scheduler per replica: PP=2 takes the same host terms, priced once per step
    model = _llama_8b(layout=Layout(pp=2))
    assert model.host_per_seq_s == VLLM_V1_HOST_PER_SEQ_S and model.host_fixed_s == 0.5 * MS


@settings(max_examples=100, deadline=None)
@given(st.integers(1, 1024), st.integers(1, 1024), st.integers(1, 4096), st.booleans())
def test_step_time_never_falls_as_sequences_grow(
    a: int, b: int, context: int, overlap: bool
) -> None:
    model = dataclasses.replace(_llama_8b(), overlap_schedule=overlap)
    few, many = sorted((a, b))
    fewer = model.step_time_s(few, few, few * context, few * context)
    # the measured GEMM curve's floor and bandwidth fraction are fitted per token count, and
    # between 1 and 8 tokens its floor dips by up to 0.16 us (aiconfigurator's H100 vLLM table):
    # with the host hidden, a 5-sequence step comes out 2.8 us (0.05 %) under a 4-sequence one.
    # More than 0.1 % would be the model's own doing, not the table's.
    assert model.step_time_s(many, many, many * context, many * context) >= fewer * (
        1 - MEASURED_CURVE_DIP
    )


line_coefficients = st.tuples(
    st.floats(0, 1e-2), st.floats(0, 1e-5), st.floats(0, 1e-2), st.floats(0, 1e-5),
    st.floats(0, 1e-2), st.floats(0, 5e-2),
)  # fmt: skip


@settings(max_examples=200, deadline=None)
@given(line_coefficients, st.integers(0, 3_000))
def test_a_floored_decode_line_sums_in_closed_form(coeffs: tuple[float, ...], k: int) -> None:
    mem0, mem1, cmp0, cmp1, fixed, floor = coeffs
    line = DecodeLine(mem0, mem1, cmp0, cmp1, fixed, 0.0, 0.0, floor)
    brute = math.fsum(line.step_s(j) for j in range(k))
    assert line.total_s(k) == pytest.approx(brute, rel=1e-9, abs=1e-12)


@settings(max_examples=100, deadline=None)
@given(st.integers(1, 1024), st.integers(0, 10**6), st.integers(0, 500), st.booleans())
def test_decode_line_matches_step_by_step_times_with_host_time(
    seqs: int, context: int, j: int, overlap: bool
) -> None:
    model = dataclasses.replace(_llama_8b(), overlap_schedule=overlap)
    line = model.decode_line(seqs, context)
    ctx = context + seqs * j
    assert line.step_s(j) == pytest.approx(model.step_time_s(seqs, seqs, ctx, ctx), rel=1e-9)


@pytest.mark.parametrize("overlap", [False, True], ids=["serial", "overlapped"])
@pytest.mark.parametrize("mode", MODES, ids=lambda m: m.value)
@pytest.mark.parametrize("policy", ["vllm", "sglang", "vllm-v0"])
def test_event_driven_equals_step_by_step_with_host_time(
    policy: str, mode: PreemptionMode, overlap: bool
) -> None:
    # 1 ms of host time per sequence: the host sets every step of a busy overlapped replica
    model = _hosted(toy_model(), overlap=overlap, per_seq_s=1 * MS)
    for seed in range(3):
        requests, capacity, config = random_case(seed, policy, mode, "poisson")
        rule = make_policy(config, requests)
        fast = ReplicaSim(requests, model, capacity, config, rule).run()
        slow = ReferenceSim(requests, model, capacity, config, rule).run()
        _assert_same(fast, slow)


@pytest.mark.parametrize("overlap", [False, True], ids=["serial", "overlapped"])
def test_a_lockstep_rank_keeps_its_own_host_time(overlap: bool) -> None:
    # one rank alone and the same rank in a lockstep group of one take the same steps
    model = _hosted(_toy_lockstep(), overlap=overlap, per_seq_s=1 * MS)
    for seed in range(2):
        requests, capacity, config = random_case(seed, "sglang", MODES[0], "poisson")
        alone, together = alone_and_in_lockstep(requests, model, capacity, config)
        assert together.first_token_s == pytest.approx(alone.first_token_s, rel=1e-9)
        assert together.finish_s == pytest.approx(alone.finish_s, rel=1e-9)


@pytest.mark.parametrize("overlap", [False, True], ids=["serial", "overlapped"])
def test_each_dp_replica_pays_only_its_own_sequences_host_time(overlap: bool) -> None:
    # 2 x 40 identical requests on two replicas take as long as 40 on one: each replica's host
    # schedules its own 40 (one host per replica), not the 80 of the deployment
    model = _hosted(constant_model(5 * MS), overlap=overlap, per_seq_s=1 * MS)
    capacity, config = KVCapacity(blocks=1000, block_size=16), SimConfig(policy="vllm")
    one = simulate(fixed_batch(40, 32, 8), model, capacity, config, dp=1)
    two = simulate(fixed_batch(80, 32, 8), model, capacity, config, dp=2)
    assert float(two.finish_s.max()) == pytest.approx(float(one.finish_s.max()))
