"""`capacity.decode_bound`: an upper bound of a replica's rate from the step-time model."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import capcliff.analysis.evaluate.capacity as capacity
from capcliff.analysis.deployment import resolve
from capcliff.analysis.deployment_settings import DeploymentSettings
from capcliff.analysis.evaluate.capacity import Replica, decode_bound
from capcliff.analysis.evaluate.online_load import OnlineWorkload
from capcliff.analysis.evaluate.replica_models import replica_models
from capcliff.analysis.workloads import WorkloadChoice
from capcliff.catalog.catalogs import get_hardware, get_model
from capcliff.catalog.layout import Layout
from capcliff.perf.step_time import StepTimeModel
from capcliff.sim.config import KVCapacity, SimConfig
from tests.simtools import constant_model, toy_model


def _workload() -> OnlineWorkload:
    return OnlineWorkload(WorkloadChoice(num_requests=1, isl=100, osl=(100,)), seed=0)


def _bound(monkeypatch: pytest.MonkeyPatch, steps: StepTimeModel) -> float | None:
    # the grid's base 50: caps 25, 36, 50, 70 and 100 (CAP_FACTORS), the largest 100
    monkeypatch.setattr(capacity, "cap_grid", lambda workload, replica: (0, 50))
    replica = Replica(steps, KVCapacity(blocks=10_000, block_size=16), SimConfig(max_num_seqs=256))
    return decode_bound(replica, _workload())


def test_the_bound_is_the_largest_batch_over_its_step_per_output_length(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    assert _workload().mean_output_tokens() == 100
    # every step 10 ms: 100 sequences make 100 tokens in 10 ms, 10,000 tokens/s, 100 requests/s
    assert _bound(monkeypatch, constant_model(0.01)) == pytest.approx(100.0)
    # 1 GB of weights at 1 TB/s (1 ms) against 10.1 GFLOP a sequence at 100 TFLOP/s (0.101 ms
    # each), plus 1 ms a step: 100 sequences take 10.1 + 1 ms, 9,009 tokens/s, 90.09 requests/s
    assert _bound(monkeypatch, toy_model()) == pytest.approx(100 / 0.0111 / 100)


def _steps(gpu: str, tp: int) -> StepTimeModel:
    dep = resolve(get_model("llama-3.1-70b"), get_hardware(gpu), DeploymentSettings())
    _, steps = replica_models(dep, dep.memory(Layout(tp=tp), 2048))
    return steps


MODELS = {(gpu, tp): _steps(gpu, tp) for gpu in ("h200-sxm", "mi300x") for tp in (2, 8)}


@settings(max_examples=200, deadline=None)
@given(
    which=st.sampled_from(sorted(MODELS)),
    made=st.integers(1, 1024),
    more_seqs=st.integers(0, 512),
    prefill=st.integers(0, 8192),
    context=st.integers(0, 4096),
)
def test_a_step_never_takes_less_than_a_decode_of_its_tokens_reading_no_kv(
    which: tuple[str, int], made: int, more_seqs: int, prefill: int, context: int
) -> None:
    # the premise of the bound: a step that makes `made` tokens (decodes, or prefills that
    # complete) schedules at least `made` sequences and tokens and reads some KV
    steps = MODELS[which]
    seqs = made + more_seqs
    tokens = seqs + prefill
    kv = seqs * context
    assert steps.step_time_s(tokens, seqs, kv, kv + prefill * context) >= steps.step_time_s(
        made, made, 0.0, 0.0
    )
