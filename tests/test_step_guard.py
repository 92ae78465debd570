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
