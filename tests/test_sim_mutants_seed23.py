"""Survivors of `benchmarks/mutation.py --packages sim --sample 40 --seed 23` left unanalysed
(capcliff.sim.policies, capcliff.sim.traffic.sessions, capcliff.sim.loop.exclusive_prefill,
capcliff.sim.disagg.pools), each value worked out by hand."""

from __future__ import annotations

import dataclasses
import math
from unittest.mock import patch

import numpy as np

import capcliff.sim.loop.replica as replica_module
from capcliff.perf.attention_dp import MoEGroup
from capcliff.perf.communication import ExchangeCost
from capcliff.sim.config import KVCapacity, SimConfig
from capcliff.sim.disagg.pools import Pool, run_pool
from capcliff.sim.loop.step_plan import PlannedStep
from capcliff.sim.traffic.sessions import SessionSpec, generate_sessions
from capcliff.sim.traffic.workload import Fixed, Requests
from tests.reference_sglang import sglang_first_admissible_step
from tests.simtools import constant_model, two_decoding_and_a_long_arrival


def test_sglang_reserve_stays_at_the_clip_while_a_long_request_decodes() -> None:
    # One running request with 10 tokens still to generate, clip 4 (SGLang reserves
    # min(remaining, clip) tokens per running request, times the ratio 1 here). Steps j = 0, 1,
    # 2: remaining 10, 9, 8, so the reserve is 4 each step. Block size 1, free blocks 10, 10,
    # 11: room 10 - 4 = 6, 6, 11 - 4 = 7. A candidate needing 6 tokens is admitted when
    # 6 < room: first at step 2. (With `clip - j` in place of `clip + j` the reserve would fall
    # to 4, 2, 0 and admit at step 1.)
    step = sglang_first_admissible_step(
        need_tokens=6,
        blocks_now=0,
        free_blocks_after=np.array([10, 10, 11], dtype=np.int64),
        block_size=1,
        ratios=np.ones(3),
        future_tokens=np.array([10], dtype=np.int64),
        clip=4,
    )
    assert step == 2


def test_sessions_start_at_the_request_rate_over_the_mean_turns() -> None:
    # 5 requests/s of sessions of 2.5 turns on average: 5 / 2.5 = 2 sessions/s, so the gaps
    # between session starts are exponential with mean 2.5 / 5 = 0.5 s (standard deviation
    # 0.5 s too). The last of S starts is the sum of S gaps: their mean is within 4 standard
    # errors, 4 x 0.5 / sqrt(S), of 0.5 s (S is about 1000 / 2.5 = 400: 0.1 s).
    spec = SessionSpec(mean_turns=2.5, user_input=Fixed(10), output=Fixed(10))
    requests = generate_sessions(spec, 1000, np.random.default_rng(23), rate_per_s=5.0)
    starts = requests.arrival_s[~np.isnan(requests.arrival_s)]
    sessions = len(starts)
    assert 300 < sessions < 500
    mean_gap = float(starts.max()) / sessions
    assert abs(mean_gap - 0.5) < 4 * 0.5 / math.sqrt(sessions)


class _RunawayError(Exception):
    """More steps than the case needs: the simulation would not end."""


def test_a_partial_prefill_takes_its_next_chunk_with_nobody_waiting() -> None:
    # SGLang without mixed chunks, 8 tokens a step, each step 1 s. A and B (4-token prompts, 5
    # out) at 0 s, C (12-token prompt, 2 out) at 2.5 s. Per step, the tokens scheduled: 8 (A, B
    # prefill), 2, 2 (A, B decode), 8 (C's first chunk), 4 (C's last chunk, the queue empty, so
    # the head verdict is False while C is part way through), 3 (A, B, C decode), 2 (A, B).
    # Every step exact (no jumps), stopped after 12 steps.
    sim = two_decoding_and_a_long_arrival(mixed=False)
    tokens: list[int] = []
    begin = sim.begin_step

    def counted() -> PlannedStep:
        if len(tokens) >= 12:
            raise _RunawayError
        planned = begin()
        tokens.append(planned.load[0])
        return planned

    with (
        patch.object(replica_module, "fast_forward", lambda sim: False),
        patch.object(sim, "begin_step", counted),
    ):
        try:
            run = sim.run()
        except _RunawayError:
            run = None
    assert tokens == [8, 2, 2, 8, 4, 3, 2]
    assert run is not None and run.first_token_s.tolist() == [1.0, 1.0, 5.0]


def test_a_pools_first_two_ranks_share_one_clock() -> None:
    # capcliff.sim.disagg.pools.run_pool: a MoE pool of 2 replicas in lockstep groups of 2
    # (attention DP), every step 1 s (no weights, FLOPs or expert traffic: the MoE pass costs
    # 0). A (4-token prompt, 3 out) at 0 s on rank 0, B (the same) at 0.5 s on rank 1. One
    # clock: step 0-1 s prefills A; B waits for the next shared step, 1-2 s, so its tokens come
    # at 2, 3 and 4 s; A's at 1, 2 and 3 s. (Groups started at rank -1 put ranks 0 and 1 apart:
    # B would start at 0.5 s, first token 1.5 s.)
    moe = MoEGroup(
        ranks=2, expert_bytes=0.0, expert_choice_fraction=0.0, expert_flops_per_token=0.0,
        moe_layers=1, exchange=ExchangeCost(0.0, 0.0),
    )  # fmt: skip
    pool = Pool(
        model=dataclasses.replace(constant_model(1.0), moe=moe),
        capacity=KVCapacity(blocks=100, block_size=4),
        config=SimConfig(policy="vllm", max_num_seqs=8, max_num_batched_tokens=64),
        replicas=2,
        gpus_per_replica=1,
        lockstep_ranks=2,
    )
    requests = Requests(np.array([4, 4]), np.array([3, 3]), np.array([3, 3]), np.array([0.0, 0.5]))
    owners, runs = run_pool(requests, np.array([0, 1]), pool, landed=False)
    assert [o.tolist() for o in owners] == [[0], [1]]
    assert [r.first_token_s.tolist() for r in runs] == [[1.0], [2.0]]
    assert [r.finish_s.tolist() for r in runs] == [[3.0], [4.0]]
