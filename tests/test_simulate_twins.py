"""Replicas given the same requests share one run (`capcliff.sim.simulate._distinct_runs`): the
combined result is what every replica's own run gives, and a batch split evenly over identical
replicas is simulated once."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import capcliff.sim.simulate as simulate_module
from capcliff.sim.config import KVCapacity, Routing, SimConfig
from capcliff.sim.loop.replica import ReplicaSim
from capcliff.sim.simulate import make_policy, route, simulate
from capcliff.sim.traffic.workload import Requests
from tests.simtools import fixed_batch, toy_model


def _counting(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Make `simulate` count the replica runs it starts; the list holds each run's size."""
    sizes: list[int] = []

    class Counted(ReplicaSim):
        def run(self):  # type: ignore[no-untyped-def]
            sizes.append(len(self.prompt))
            return super().run()

    monkeypatch.setattr(simulate_module, "replica_class", lambda: Counted)
    return sizes


def test_an_even_batch_over_identical_replicas_runs_once(monkeypatch: pytest.MonkeyPatch) -> None:
    sizes = _counting(monkeypatch)
    # 8 equal requests at t = 0 over 4 replicas: two each, round-robin, four equal sets.
    result = simulate(fixed_batch(8, 50, 20), toy_model(), KVCapacity(100, 16), SimConfig(), dp=4)
    assert sizes == [2]
    assert result.replica.tolist() == [0, 1, 2, 3, 0, 1, 2, 3]  # still one request per replica
    assert len(result.replicas) == 4


def test_an_uneven_batch_runs_once_per_distinct_set(monkeypatch: pytest.MonkeyPatch) -> None:
    sizes = _counting(monkeypatch)
    # 9 over 4: replica 0 gets 3 requests, the others 2 each -> two distinct sets.
    simulate(fixed_batch(9, 50, 20), toy_model(), KVCapacity(100, 16), SimConfig(), dp=4)
    assert sorted(sizes) == [2, 3]


def test_requests_that_differ_in_any_field_are_not_shared(monkeypatch: pytest.MonkeyPatch) -> None:
    sizes = _counting(monkeypatch)
    base = fixed_batch(4, 50, 20)
    # Round-robin: replica 0 gets requests 0 and 2, replica 1 gets 1 and 3; one prompt differs.
    later = Requests(np.array([50, 50, 50, 51]), base.output_tokens, base.max_output_tokens,
                     base.arrival_s)  # fmt: skip
    simulate(later, toy_model(), KVCapacity(100, 16), SimConfig(), dp=2)
    assert sizes == [2, 2]


@settings(max_examples=40, deadline=None)
@given(
    st.integers(1, 4),  # dp
    st.lists(st.sampled_from([(30, 10), (30, 40), (90, 25)]), min_size=1, max_size=24),
    st.booleans(),  # poisson arrivals instead of all at t = 0
    st.sampled_from(list(Routing)),
    st.integers(0, 10_000),
)
def test_shared_runs_equal_each_replicas_own_run(
    dp: int, lengths: list[tuple[int, int]], poisson: bool, routing: Routing, seed: int
) -> None:
    # Lengths from a small set so that replicas often receive equal requests.
    prompts = np.array([p for p, _ in lengths], dtype=np.int64)
    outputs = np.array([o for _, o in lengths], dtype=np.int64)
    rng = np.random.default_rng(seed)
    arrivals = np.cumsum(rng.exponential(0.01, len(lengths))) if poisson else np.zeros(len(lengths))
    requests = Requests(prompts, outputs, outputs, arrivals)
    capacity = KVCapacity(20, 16)  # 320 tokens: a few requests at once, so some preempt
    config = SimConfig(max_num_seqs=4, routing=routing)
    result = simulate(requests, toy_model(), capacity, config, dp=dp)
    rule = make_policy(config, requests)
    for idx in route(requests, dp, routing):
        if not len(idx):
            continue
        own = ReplicaSim(requests.subset(idx), toy_model(), capacity, config, rule).run()
        assert result.finish_s[idx].tolist() == own.finish_s.tolist()
        assert result.ttft_s[idx].tolist() == (own.first_token_s - own.arrival_s).tolist()
        assert result.preemptions[idx].tolist() == own.preemptions.tolist()


def test_a_shared_run_adds_to_the_series_as_separate_equal_runs_do() -> None:
    # `sim_result` samples a run shared by several replicas once; the combined series and the
    # stranded KV fraction are those of separate, equal runs, to the bit.
    import copy

    from capcliff.sim.result import sim_result

    capacity, config = KVCapacity(20, 16), SimConfig(max_num_seqs=4)  # small: some preempt
    requests = fixed_batch(6, 90, 25)
    rule = make_policy(config, requests)
    run = ReplicaSim(requests, toy_model(), capacity, config, rule).run()
    other = ReplicaSim(requests.subset(np.arange(4)), toy_model(), capacity, config, rule).run()
    assert run.preemption_times_s.size  # the stranded fraction has samples to take
    owners = [np.arange(6), np.arange(6, 12), np.arange(12, 16)]
    shared = sim_result([run, run, other], owners, points=50)
    separate = sim_result([run, copy.deepcopy(run), other], owners, points=50)
    for name in ("kv_utilization", "running", "waiting", "hbm_utilization"):
        assert getattr(shared.series, name).tolist() == getattr(separate.series, name).tolist()
    assert shared.stranded_kv_fraction == separate.stranded_kv_fraction > 0
