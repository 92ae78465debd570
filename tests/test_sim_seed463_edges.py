"""Edges the seed-463 mutation sample (`benchmarks/mutation.py --packages sim --seed 463`) found
untested. Every expected value is worked out by hand in the comments."""

from __future__ import annotations

import json
from types import SimpleNamespace

import numpy as np
import pytest

from capcliff.perf.decode_line import DecodeLine
from capcliff.sim.config import KVCapacity, SimConfig
from capcliff.sim.loop.balance import BalanceGate
from capcliff.sim.loop.fast_forward import _steps_lasting
from capcliff.sim.loop.landed import LandedReplicaSim
from capcliff.sim.loop.lockstep import FixedStep, PendingRun
from capcliff.sim.loop.replica import ReplicaSim
from capcliff.sim.simulate import make_policy
from capcliff.sim.traffic.sessions import parse_session_trace, requests_from_session_trace
from capcliff.sim.traffic.workload import Requests
from tests.simtools import constant_model
from tests.test_sim_seed157_edges import _LineModel
from tests.test_sim_seed433_edges import _rank


@pytest.mark.parametrize("replica", [ReplicaSim, LandedReplicaSim])
def test_a_landing_takes_the_blocks_of_its_prompt_and_first_token(replica: type) -> None:
    # A decode replica of 16 blocks of 4 tokens, every step 10 ms. Two requests land with a
    # 10-token prompt's KV and their first token, and generate 20 tokens in all. Request 0
    # lands at 0: its admission step (0-10 ms) computes token 1's KV after the prompt's 10
    # (ceil(11 / 4) = 3 blocks) and gives token 2; tokens 3-20 come in steps 1-18, so it
    # finishes at 190 ms. Request 1 lands at 45 ms, during step 4, and is admitted in step 5
    # (50-60 ms): request 0 then holds ceil(16 / 4) = 4 blocks, leaving 12, and the landing
    # needs its own 3. Token 2 at 60 ms, token 20 at 60 + 18 x 10 = 240 ms. The two never need
    # more than 16 blocks (at 190 ms: ceil(29 / 4) + ceil(24 / 4) = 8 + 6 = 14). seed 463's
    # `-(-(kv + 1) // size)` -> `* size` in the inlined admission asked (10 + 1) x 4 = 44
    # blocks, so request 1 waited for request 0 to finish (token 2 at 200 ms).
    requests = Requests(
        np.array([10, 10], dtype=np.int64),
        np.array([20, 20], dtype=np.int64),
        np.array([20, 20], dtype=np.int64),
        np.array([0.0, 0.045]),
    )
    capacity = KVCapacity(blocks=16, block_size=4)
    config = SimConfig(policy="vllm", max_num_seqs=8, max_num_batched_tokens=64)
    rule = make_policy(config, requests)
    if replica is ReplicaSim:
        sim = ReplicaSim(requests, constant_model(0.01), capacity, config, rule, landed=True)
    else:
        sim = LandedReplicaSim(requests, constant_model(0.01), capacity, config, rule)
    result = sim.run()
    assert result.first_token_s.tolist() == pytest.approx([0.01, 0.06])
    assert result.finish_s.tolist() == pytest.approx([0.19, 0.24])
    assert sum(result.preemptions) == 0


U = 2.0**-11  # seconds: a unit whose multiples sum without rounding


class _ContextLineModel(_LineModel):
    """seed 157's line model with the per-context terms (t1, t4) added at the run's starting
    context, as `StepTimeModel.decode_line` adds them."""

    def decode_line(self, seqs: int, context0: int) -> DecodeLine:
        t = self.terms
        return DecodeLine(t[0] + t[1] * context0, t[2], t[3] + t[4] * context0, t[5], t[6], t[7],
                          t[8], t[9])  # fmt: skip


@pytest.mark.parametrize(("context0", "steps"), [(24, 4), (8, 5)])
def test_a_run_whose_attention_outweighs_its_memory_reads_from_the_first_step(
    context0: int, steps: int
) -> None:
    # Memory 2 U a step; compute 0 fixed plus U / 8 per token of context (attention), which
    # does not grow over the run; no fixed part or floor. From a context of 24 tokens each step
    # computes 3 U, more than its reads: steps of 3 U, and 10 U is reached after 4 (12 U; three
    # last 9 U). From 8 tokens (1 U of compute) the reads set the steps, 2 U each: 5 steps.
    # seed 463's `terms[3] + terms[4] x context0` -> `-` took the first case for memory-bound
    # (compute 0 - 3 U) and counted 5.
    terms = (2 * U, 0.0, 0.0, 0.0, U / 8, 0.0, 0.0, 0.0, 0.0, 0.0)
    sim = SimpleNamespace(line_terms={}, model=_ContextLineModel(terms))
    assert _steps_lasting(sim, 1, context0, 8, 10 * U) == steps  # type: ignore[arg-type]


def test_a_batching_wait_restarts_the_context_wait_count() -> None:
    # TensorRT-LLM's _balance_adp_requests (py_executor.py, 1.1-1.2), timeout_iters 4,
    # batching_wait_iters 2, two ranks that each decode a request with free seats. Rank 1's
    # queue is empty: the context requests wait, the wait count going up by one an iteration;
    # at 4 they run, so from 0 they wait 3 iterations. After 2 of them rank 1 has a context
    # request too: every rank has a seat, a context and a generation request, so the wait
    # count restarts at 0 and the batching count (0, under 2) holds them 2 iterations. After 1
    # of those rank 1's queue is empty again: the wait count is back at 0, so they wait 3
    # iterations (1 if it had kept its 2; seed 463's restart at 1 gave 2).
    gate, ranks = BalanceGate(timeout_iters=4, batching_wait_iters=2, group=2), [_rank(), _rank()]
    ranks[1].waiting = []
    assert gate.decide(ranks) == (True, 3)
    gate.advance(2)
    ranks[1].waiting = [object()]
    assert gate.decide(ranks) == (True, 2)
    gate.advance(1)
    ranks[1].waiting = []
    assert gate.decide(ranks) == (True, 3)


def test_a_memory_bound_run_reads_each_sequences_context_once() -> None:
    # Two sequences whose contexts sum to 16 tokens; weights read in U a step, KV in U / 16 per
    # token of context, so the first step reads U + 16 x U / 16 = 2 U and each step after reads
    # 2 x U / 16 = U / 8 more (one token per sequence); no compute, fixed part or floor. The
    # first m steps last 2 U m + (U / 8) m (m - 1) / 2: 8.75 U for 4 steps, 11.25 U for 5, so
    # 10 U takes 5. seed 463's `terms[1]` -> `terms[2]` read the starting context at the
    # per-step growth (U / 8 a token: 3 U for the first step) and counted 4.
    terms = (U, U / 16, U / 8, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0)
    sim = SimpleNamespace(line_terms={}, model=_ContextLineModel(terms))
    assert _steps_lasting(sim, 2, 16, 8, 10 * U) == 5  # type: ignore[arg-type]


def test_a_pending_lockstep_run_counts_the_expert_bytes_of_each_segment_it_reaches() -> None:
    # A rank's own decode line reads 1,000 B in step 0 and 10 B more each step after (the run's
    # steps j read 1,000 + 10 j); in lockstep it ran 3 steps reading 100 B of shared experts
    # each, then 2 reading 200 B. Its first 4 steps read 4,000 + 10 x (0 + 1 + 2 + 3) = 4,060 B
    # of its own and 3 x 100 + 1 x 200 = 500 B of experts: 4,560 B. All 5: 5,100 + 700 =
    # 5,800 B; the first 2: 2,010 + 200 = 2,210 B. seed 463's `left <= 0` -> `<= 1` stopped
    # before the second segment when one of its steps was asked (4,360 B).
    clock = FixedStep(0.01)
    run = PendingRun(0.0, DecodeLine(0.0, 0.0, 0.0, 0.0, 0.01, 1_000.0, 10.0), False, [])
    run.add(3, clock, 100.0, clock.total_s(3))
    run.add(2, clock, 200.0, clock.total_s(2))
    assert [run.total_bytes(k) for k in (2, 4, 5)] == [2_210.0, 4_560.0, 5_800.0]


def test_a_session_traces_shared_prefix_starts_every_prompt_of_its_sessions() -> None:
    # Sessions a and b open with the 16-token prefix "sys", c with none. A turn's prompt is
    # its session's context so far plus its new tokens: a's first 16 + 10 = 26, its second
    # 26 + 5 (the first's output) + 4 = 35; b's 16 + 6 = 22; c's 7. The content tree: node 0
    # is the prefix (no parent), a's and b's sessions fork from it after 16 tokens (nodes 1,
    # 2), c's stands alone (node 3). seed 463's `prefix_id is not None` -> `is None` dropped
    # the prefix of a and b (prompts 10, 19, 6).
    rows = [
        {"session_id": "a", "turn": 0, "input_tokens": 10, "output_tokens": 5, "arrival_s": 0.0,
         "prefix_id": "sys", "prefix_tokens": 16},
        {"session_id": "a", "turn": 1, "input_tokens": 4, "output_tokens": 3, "think_s": 1.0},
        {"session_id": "b", "turn": 0, "input_tokens": 6, "output_tokens": 2, "arrival_s": 0.5,
         "prefix_id": "sys", "prefix_tokens": 16},
        {"session_id": "c", "turn": 0, "input_tokens": 7, "output_tokens": 2, "arrival_s": 1.0},
    ]  # fmt: skip
    requests = requests_from_session_trace(parse_session_trace([json.dumps(r) for r in rows]))
    assert requests.input_tokens.tolist() == [26, 35, 22, 7]
    assert requests.content_node.tolist() == [1, 1, 2, 3]
    assert requests.content_parent.tolist() == [-1, 0, 0, -1]
    assert requests.content_fork_tokens.tolist() == [0, 16, 16, 0]
