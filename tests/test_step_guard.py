"""The simulator's step guard (`SimConfig.max_steps`): a run too long to simulate is refused in
one line naming --num-requests, exit code 2, never a traceback."""

from __future__ import annotations

import dataclasses

import pytest

from capcliff.cli.main import main
from capcliff.errors import SimulationLimitError, step_limit_error
from capcliff.sim.config import PreemptionMode
from capcliff.sim.loop.replica import ReplicaSim
from capcliff.sim.simulate import make_policy
from tests.simtools import random_case, toy_model


def test_a_replica_past_the_step_guard_raises_the_one_line_refusal() -> None:
    requests, capacity, config = random_case(0, "vllm", PreemptionMode.RECOMPUTE, "poisson")
    tight = dataclasses.replace(config, max_steps=3)  # every case needs more than 3 steps
    sim = ReplicaSim(requests, toy_model(), capacity, tight, make_policy(tight, requests))
    with pytest.raises(SimulationLimitError, match="num_requests") as caught:
        sim.run()
    assert "\n" not in str(caught.value)


def test_the_step_guard_is_exit_code_2_with_one_line(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def guarded(self: ReplicaSim) -> None:
        raise step_limit_error(100_000_000, 1_000_000)

    monkeypatch.setenv("CAPCLIFF_SIM_CORE", "python")  # the loop patched here, not a compiled copy
    monkeypatch.setattr(ReplicaSim, "run", guarded)
    code = main(["sweep", "llama-3.1-8b", "--isl", "100", "--osl", "100", "--rate", "1",
                 "--num-requests", "50", "--concurrency", "8"])  # fmt: skip
    err = capsys.readouterr().err
    assert code == 2
    assert err.count("\n") == 1 and err.startswith("error: num_requests: 1,000,000 requests")


def test_a_run_whose_decode_alone_passes_the_guard_is_refused_before_its_first_step() -> None:
    requests, capacity, config = random_case(0, "vllm", PreemptionMode.RECOMPUTE, "batch")
    # each decode step gives each of at most 2 running requests one token: sum(output - 1) / 2
    # steps at least, one more than the guard allows
    decode_tokens = int((requests.output_tokens - 1).sum())
    tight = dataclasses.replace(config, max_num_seqs=2, max_steps=decode_tokens // 2 - 1)
    assert tight.max_steps > 10
    sim = ReplicaSim(requests, toy_model(), capacity, tight, make_policy(tight, requests))
    with pytest.raises(SimulationLimitError, match="num_requests"):
        sim.run()
    assert sim.rec.steps == 0  # refused up front (10M requests took minutes to reach the guard)


def test_a_replica_of_more_requests_than_the_request_guard_is_refused_before_its_first_step() -> (
    None
):
    requests, capacity, config = random_case(0, "vllm", PreemptionMode.RECOMPUTE, "batch")
    n = len(requests.arrival_s)
    at_limit = dataclasses.replace(config, max_requests=n)  # n requests: allowed
    ReplicaSim(requests, toy_model(), capacity, at_limit, make_policy(at_limit, requests)).run()
    tight = dataclasses.replace(config, max_requests=n - 1)
    sim = ReplicaSim(requests, toy_model(), capacity, tight, make_policy(tight, requests))
    refusal = f"num_requests: {n:,} requests in one"
    with pytest.raises(SimulationLimitError, match=refusal) as caught:
        sim.run()
    assert sim.rec.steps == 0 and "\n" not in str(caught.value)


def test_a_batch_plan_past_the_request_guard_is_one_line_and_exit_2(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # 10,000,000 requests on one GPU ran for over an hour (fuzz campaign 9,
    # plan-batch-num-requests-1e7); 300,000 > 200,000 (SimConfig.max_requests) on the one
    # replica of a one-GPU plan
    code = main(["plan", "llama-3.1-8b", "--gpus", "1", "--jobs", "1", "--isl", "100", "--osl",
                 "100", "--num-requests", "300000", "--arrival", "batch"])  # fmt: skip
    err = capsys.readouterr().err
    assert code == 2
    assert err.count("\n") == 1
    assert err.startswith("error: num_requests: 300,000 requests in one replica's simulation")


def test_a_lockstep_rank_of_more_requests_than_the_guard_is_refused_before_its_first_step() -> None:
    import numpy as np

    from capcliff.sim.config import KVCapacity, SimConfig
    from capcliff.sim.loop.lockstep import LockstepSim
    from capcliff.sim.traffic.workload import Requests
    from tests.simtools import constant_model

    model, capacity = constant_model(1e-3), KVCapacity(100, 16)
    config = SimConfig(policy="sglang", max_requests=2)

    def rank(requests: int) -> ReplicaSim:
        ones = np.ones(requests, dtype=np.int64)
        batch = Requests(10 * ones, 5 * ones, 5 * ones, np.zeros(requests))
        return ReplicaSim(batch, model, capacity, config, make_policy(config, batch))

    LockstepSim([rank(2), rank(1)], model).run()  # 2 requests on a rank: at the guard, run
    ranks = [rank(1), rank(3)]  # rank 1 holds 3 > 2
    with pytest.raises(SimulationLimitError, match="num_requests: 3 requests in one"):
        LockstepSim(ranks, model).run()
    assert all(r.rec.steps == 0 for r in ranks)
