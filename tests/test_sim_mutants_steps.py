"""A run's price, a step's admissions and an arrival on the tie, on the fast paths, worked
out by hand (mutation survivors of `benchmarks/mutation.py --packages sim`, seed 3), in:
capcliff.sim.loop.thrash
capcliff.sim.loop.admit_step
capcliff.sim.loop.fast_forward
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest

from capcliff.sim.config import ARRIVAL_TIE_S, KVCapacity, SimConfig
from capcliff.sim.loop.lockstep import LockstepSim
from capcliff.sim.loop.replica import ReplicaSim
from capcliff.sim.loop.thrash import decode_run, decode_run_s
from capcliff.sim.simulate import make_policy
from capcliff.sim.traffic.workload import Requests
from tests.simtools import constant_model

# decode terms of 2 sequences (StepTimeModel.decode_terms order, then the KV bytes per token):
# mem0 = 1 + 0.1 c, mem1 = 0.1, cmp0 = 0.5 + 0.1 c, cmp1 = 0.4, fixed 0.25 s,
# bytes0 = 100 + 10 c, bytes1 = 5, no host floor (a serial engine)
TERMS = (1.0, 0.1, 0.1, 0.5, 0.1, 0.4, 0.25, 100.0, 5.0, 0.0, 10.0)


def _sim() -> Any:
    return SimpleNamespace(line_terms={2: TERMS})


@pytest.mark.parametrize(
    ("k", "seconds", "read", "before_last"),
    [
        # context 10: step j reads max(2 + 0.1 j, 1.5 + 0.4 j) + 0.25: 2.25, 2.35, then compute
        # overtakes at j = 2 (2.3 > 2.2): 2.55, and 2.95 at j = 3. Bytes: 200 k + 5 k (k - 1) / 2.
        # The run's last step starts after the first k - 1 (none for k = 1).
        (1, 2.25, 200.0, 0.0),
        (2, 2.25 + 2.35, 405.0, 2.25),
        (3, 2.25 + 2.35 + 2.55, 615.0, 2.25 + 2.35),
        (4, 2.25 + 2.35 + 2.55 + 2.95, 830.0, 2.25 + 2.35 + 2.55),
    ],
)
def test_a_run_costs_the_sum_of_its_steps_past_the_compute_crossover(
    k: int, seconds: float, read: float, before_last: float
) -> None:
    duration, bytes_read, first_s, before = decode_run(_sim(), 2, 10, k)
    assert duration == pytest.approx(seconds)
    assert bytes_read == pytest.approx(read)
    assert first_s == pytest.approx(2.25)
    # the seconds alone, as an overlap scheduler asks for them: the same sums
    assert decode_run_s(_sim(), 2, 10, k) == pytest.approx(seconds)
    assert before == pytest.approx(before_last)


POLICIES_BY_PATH = [
    SimConfig(policy="vllm", max_num_seqs=2),
    SimConfig(policy="trtllm-max-util", max_num_seqs=2),
    SimConfig(policy="vllm", max_num_seqs=2, prefix_caching=True),  # the general path
]


@pytest.mark.parametrize("config", POLICIES_BY_PATH, ids=lambda c: f"{c.policy}-{c.prefix_caching}")
def test_an_admission_step_fills_the_last_seat_and_no_more(config: SimConfig) -> None:
    # max_num_seqs 2, 1 ms a step, every request prompt 10, output 5. A at 0 s: step 0 (token
    # 1, 1 ms), steps 1-2 (tokens 2-3, 3 ms). B and C arrive at 2.5 ms; step 3 admits B into the
    # last seat (A token 4, B token 1, 4 ms), C waits. Step 4: A's token 5, A done at 5 ms.
    # Step 5 admits C (C token 1 at 6 ms); B's tokens 3-5 in steps 5-7 (done 8 ms), C's 2-5 in
    # steps 6-9 (done 10 ms).
    requests = Requests(
        np.full(3, 10), np.full(3, 5), np.full(3, 5), np.array([0.0, 2.5e-3, 2.5e-3])
    )
    result = ReplicaSim(
        requests, constant_model(1e-3), KVCapacity(100, 16), config, make_policy(config, requests)
    ).run()
    assert result.first_token_s.tolist() == pytest.approx([1e-3, 4e-3, 6e-3])
    assert result.finish_s.tolist() == pytest.approx([5e-3, 8e-3, 10e-3])


def _half_second_run(arrival_s: float, *, lockstep: bool) -> float:
    """B's first token (s): A (prompt 10, output 10) at 0 s and B at `arrival_s`, 0.5 s a step,
    on one replica or as two attention-DP ranks (A on rank 0, B on rank 1)."""
    model, capacity, config = constant_model(0.5), KVCapacity(10, 16), SimConfig()

    def replica(arrivals: list[float]) -> ReplicaSim:
        n = len(arrivals)
        requests = Requests(np.full(n, 10), np.full(n, 10), np.full(n, 10), np.array(arrivals))
        return ReplicaSim(requests, model, capacity, config, make_policy(config, requests))

    if lockstep:
        _, b = LockstepSim([replica([0.0]), replica([arrival_s])], model).run()
        return float(b.first_token_s[0])
    return float(replica([0.0, arrival_s]).run().first_token_s[1])


@pytest.mark.parametrize("lockstep", [False, True], ids=["replica", "lockstep"])
def test_an_arrival_one_tie_after_a_step_end_is_taken_there(lockstep: bool) -> None:
    # Step 0 prefills A (to 0.5 s); the decode run that follows ends at the first step end B has
    # arrived by, within ARRIVAL_TIE_S (1 ns). B at 1.5 s + 1 ns: 1 s after step 0 ends, less
    # the tie, is 1 s to the bit, which steps 1-2 last exactly: B is prefilled in step 3, first
    # token at 2.0 s. B at 1.5 s + 2 ns: one more step, first token at 2.5 s.
    assert ARRIVAL_TIE_S == 1e-9
    assert (1.5 + 1e-9 - 0.5) - ARRIVAL_TIE_S == 1.0
    assert _half_second_run(1.5 + 1e-9, lockstep=lockstep) == 2.0
    assert _half_second_run(1.5 + 2e-9, lockstep=lockstep) == 2.5
