"""Attention DP: the MoE exchange, lockstep step times and the lockstep simulator."""

from __future__ import annotations

import dataclasses
import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from capcliff.catalog.catalogs import get_hardware, get_model
from capcliff.catalog.layout import parse_layout
from capcliff.errors import InputError
from capcliff.memory.budget import BudgetSettings
from capcliff.memory.layout_memory import LayoutMemory, layout_memory
from capcliff.memory.weights import WeightScheme
from capcliff.perf.attention_dp import MoEGroup, default_exchange
from capcliff.perf.communication import (
    ExchangeCost,
    Fabric,
    MoEExchange,
    all_to_all_cost,
    distinct_ranks_per_token,
    gather_cost,
)
from capcliff.perf.decode_line import DecodeLine
from capcliff.perf.step_time import StepTimeModel, step_time_model
from capcliff.sim.config import KVCapacity, PreemptionMode, SimConfig
from capcliff.sim.loop.lockstep import LockstepLine
from capcliff.sim.simulate import simulate
from capcliff.units import KVDType
from tests.simtools import POLICIES, alone_and_in_lockstep, fixed_batch, random_case, toy_model

TOY_FABRIC = Fabric(
    domain_gpus=8,
    scaleup_bytes_per_s=100.0,
    ring_bytes_per_s=64.0,
    scaleout_bytes_per_s=10.0,
    scaleup_latency_s=1e-6,
    scaleout_latency_s=3e-6,
)


def test_all_to_all_of_a_small_case_by_hand() -> None:
    # 2 ranks x 2 experts, top-2 of 4: both experts on the token's own rank with probability
    # C(2,2)/C(4,2) = 1/6, so 5/6 of tokens send one copy of 4 elements to the other rank:
    # dispatch 4 x 1 B + combine 4 x 2 B = 12 B a copy, 5/6 x 12 = 10 B per token at 100 B/s.
    cost = all_to_all_cost(
        ranks=2, hidden=4, num_experts=4, top_k=2, dispatch_bytes_per_element=1.0, fabric=TOY_FABRIC
    )
    assert cost.s_per_token == pytest.approx(0.1)
    # dispatch + combine, each NCCL's 6.6 us base latency + one 1 us NVLink hop
    assert cost.latency_s == pytest.approx(2 * (6.6e-6 + 1e-6))
    # 3 tokens on the busiest rank: 30 B = 0.3 s on the wire
    assert cost.seconds(3) == pytest.approx(0.3 + 15.2e-6)


def test_all_to_all_across_nodes_is_bound_by_the_nic() -> None:
    # 16 ranks, 8 per domain: 7/15 of remote copies ride NVLink at 100 B/s, 8/15 RDMA at 10 B/s;
    # the RDMA share is the slower one: 8/15 x copies x bytes / 10.
    fabric = dataclasses.replace(TOY_FABRIC, domain_gpus=8)
    cost = all_to_all_cost(
        ranks=16, hidden=1, num_experts=16, top_k=1, dispatch_bytes_per_element=2.0, fabric=fabric
    )
    # top-1 of 16 experts on 16 ranks: one destination, remote with probability 15/16
    assert cost.s_per_token == pytest.approx(15 / 16 * 8 / 15 * 4 / 10)


def test_gather_moves_every_other_ranks_rows_twice() -> None:
    # 4 ranks, hidden 8, BF16: all-gather then reduce-scatter, each 3 x 8 x 2 = 48 B per busiest
    # token through the 64 B/s ring: 2 x 0.75 s; latency 2 x (6.6 us + 3 hops x 1 us).
    cost = gather_cost(ranks=4, hidden=8, fabric=TOY_FABRIC)
    assert cost == ExchangeCost(pytest.approx(2 * (6.6e-6 + 3e-6)), pytest.approx(1.5))  # type: ignore[arg-type]


def test_a_token_reaches_about_five_of_eight_ranks_in_deepseek_routing() -> None:
    # 256 experts on 8 ranks, top-8: 8 (1 - C(224,8)/C(256,8)) = 8 (1 - 0.3382) = 5.29
    assert distinct_ranks_per_token(num_experts=256, top_k=8, ranks=8) == pytest.approx(
        5.29, abs=0.01
    )


def _toy_lockstep(ranks: int = 4) -> StepTimeModel:
    group = MoEGroup(
        ranks=ranks,
        expert_bytes=2e9,
        expert_choice_fraction=0.25,
        expert_flops_per_token=1e9,
        moe_layers=2,
        exchange=ExchangeCost(1e-5, 1e-6),
    )
    return dataclasses.replace(toy_model(), moe=group)


def test_lockstep_step_is_the_busiest_ranks_step() -> None:
    model = _toy_lockstep()
    light, heavy = (1, 1, 100, 100), (8, 8, 4000, 4000)
    own = max(model.local.step_time_s(*light), model.local.step_time_s(*heavy))
    # the MoE layers see 4 ranks x 8 padded rows: 1 - 0.75^32 of 2 GB at 1 TB/s = 1.99996 ms,
    # compute 1 GFLOP x 32 / 100 TFLOP/s = 0.32 ms, 2 layers x (10 us + 8 x 1 us) of exchange
    moe = 2e9 * (1 - 0.75**32) / 1e12 + 2 * (1e-5 + 8e-6)
    assert model.lockstep_step_time_s([light, heavy]) == pytest.approx(own + moe)
    assert model.lockstep_step_time_s([light, heavy]) == pytest.approx(model.step_time_s(*heavy))


load = st.tuples(
    st.integers(0, 500), st.integers(1, 64), st.integers(0, 100_000), st.integers(0, 100_000)
)


@settings(max_examples=60, deadline=None)
@given(st.lists(load, min_size=1, max_size=8))
def test_attention_dp_is_never_faster_than_its_busiest_rank_alone(
    loads: list[tuple[int, int, int, int]],
) -> None:
    model = _toy_lockstep(ranks=len(loads))
    lockstep = model.lockstep_step_time_s(loads)
    for tokens, seqs, ctx, pairs in loads:
        alone = model.step_time_s(tokens, seqs, ctx, pairs)  # every rank as busy as this one
        assert lockstep >= alone * (1 - 1e-12)


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.floats(0, 1),
            st.floats(0, 1e-3),
            st.floats(0, 1),
            st.floats(-1e-3, 1e-3),
            st.floats(0, 1),
        ),
        min_size=1,
        max_size=6,
    ),
    st.integers(1, 300),
)
def test_lockstep_run_time_sums_its_steps(
    lines: list[tuple[float, float, float, float, float]], k: int
) -> None:
    decode = [DecodeLine(m0, m1, c0, c1, f, 0.0, 0.0) for m0, m1, c0, c1, f in lines]
    clock = LockstepLine(decode, shared_s=0.25)
    assert clock.total_s(k) == pytest.approx(sum(clock.step_s(j) for j in range(k)), rel=1e-9)


CASES = list(itertools.product(range(3), POLICIES, ["batch", "poisson", "clients"]))


@pytest.mark.parametrize(("seed", "policy", "arrival"), CASES)
def test_one_busy_rank_in_lockstep_runs_as_a_replica_priced_for_all(
    seed: int, policy: str, arrival: str
) -> None:
    # The idle ranks pad, so the busy rank's steps are its own work + the MoE layers over all
    # ranks padded to its tokens: exactly the step the model prices alone.
    requests, capacity, config = random_case(seed, policy, PreemptionMode.SWAP, arrival)
    model = _toy_lockstep()
    alone, together = alone_and_in_lockstep(requests, model, capacity, config)
    assert together.finish_s == pytest.approx(alone.finish_s, rel=1e-9)
    assert together.first_token_s == pytest.approx(alone.first_token_s, rel=1e-9)
    assert list(together.preemptions) == list(alone.preemptions)


def _roomy() -> tuple[KVCapacity, SimConfig]:
    """A KV cache and batch limits no test workload here runs into."""
    return KVCapacity(blocks=1000, block_size=16), SimConfig(max_num_batched_tokens=1024)


def test_identical_ranks_in_lockstep_run_as_independent_replicas() -> None:
    model = _toy_lockstep(ranks=4)
    requests = fixed_batch(16, prompt=40, output=30)
    capacity, config = _roomy()
    lockstep = simulate(requests, model, capacity, config, dp=4)
    apart = simulate(requests, dataclasses.replace(model, moe=None), capacity, config, dp=4)
    assert lockstep.makespan_s > apart.makespan_s  # the shared MoE layers cost time
    # each rank's steps = its own + the MoE layers: the same as one replica priced for all
    one = simulate(fixed_batch(4, prompt=40, output=30), model, capacity, config, dp=1)
    assert lockstep.makespan_s == pytest.approx(one.makespan_s, rel=1e-9)


def test_unbalanced_ranks_wait_for_the_busiest() -> None:
    model = _toy_lockstep(ranks=2)
    capacity, config = _roomy()
    # round-robin: rank 0 serves the two long prompts, rank 1 the two short ones
    requests = fixed_batch(4, prompt=40, output=60)
    requests = dataclasses.replace(
        requests,
        input_tokens=np.array([2000, 40, 2000, 40]),
        output_tokens=np.array([60, 5, 60, 5]),
    )
    lockstep = simulate(requests, model, capacity, config, dp=2)
    apart = simulate(requests, dataclasses.replace(model, moe=None), capacity, config, dp=2)
    # rank 1's prefill step lasts as long as rank 0's first 1024-token chunk
    assert lockstep.ttft_s[1] > apart.ttft_s[1]
    # the short requests decode at the pace the long contexts of rank 0 set
    assert lockstep.e2e_s[1] > apart.e2e_s[1]


def test_attention_dp_rank_holds_the_mla_latent_of_its_own_requests_only() -> None:
    # Every GPU stores R1's whole latent per token of context it holds: 61 layers x (512 + 64) x
    # 2 B = 70,272 B. TP=8 holds each request's on all 8 GPUs, attention DP on the one rank that
    # serves it, so the 8 ranks hold several times the tokens (less than 8x: each rank also
    # holds whole attention weights, vLLM's BF16 W_UK/W_UV copy of the whole FP8 kv_b_proj,
    # 61 x 512 x 32,768 x 2 B = 2.0 GiB where a TP8 rank holds 1/8, and its own overheads).
    model = get_model("deepseek-r1")
    hardware = get_hardware("h200-sxm")
    scheme = WeightScheme.as_shipped(model.arch)

    def memory(name: str) -> LayoutMemory:
        return layout_memory(
            model.arch, hardware, parse_layout(name), scheme=scheme, kv_dtype=KVDType.BF16,
            max_model_len=4096, settings=BudgetSettings(),
        )  # fmt: skip

    dpa, tp = memory("dpa8"), memory("tp8")
    assert dpa.kv_bytes_per_token_per_gpu == tp.kv_bytes_per_token_per_gpu == 61 * 576 * 2
    assert dpa.kv_capacity_tokens_total == 8 * dpa.kv_capacity_tokens_per_replica
    assert tp.kv_capacity_tokens_total == tp.kv_capacity_tokens_per_replica
    assert dpa.kv_capacity_tokens_total > 4 * tp.kv_capacity_tokens_total


def test_r1_attention_dp_step_reads_experts_for_all_ranks_tokens() -> None:
    # 8 ranks x 8 tokens: 64 rows reach the experts, 1 - (1 - 8/256)^64 = 87 % of each GPU's
    # 81.8 GB of experts are read, against 22 % for the 8 tokens of one replica.
    model = get_model("deepseek-r1")
    steps = step_time_model(
        model.arch, get_hardware("h200-sxm"), parse_layout("dpa8"),
        scheme=WeightScheme.as_shipped(model.arch), kv_dtype=KVDType.BF16,
    )  # fmt: skip
    assert steps.moe is not None
    assert steps.moe.bytes_read(8) / steps.moe.expert_bytes == pytest.approx(
        1 - (1 - 8 / 256) ** 64
    )


def test_lockstep_line_with_a_nearly_parallel_steeper_rank_stays_finite() -> None:
    # slopes 0 and 1e-300: the crossing is 1e300 steps away, past any run
    lines = [DecodeLine(1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0), DecodeLine(0.0, 1e-300, 0, 0, 0, 0, 0)]
    assert LockstepLine(lines, shared_s=0.5).total_s(10) == pytest.approx(15.0)


def test_pipeline_stages_on_two_nodes_send_over_the_nic() -> None:
    # tp8-pp2 on H200 nodes of 8: the stage boundary crosses nodes, so the activation send runs
    # at the GPU's 400 Gb/s ConnectX-7 (50 GB/s one way), not NVLink's 450 GB/s.
    model = get_model("deepseek-r1")
    scheme = WeightScheme.as_shipped(model.arch)
    hardware = get_hardware("h200-sxm")

    def p2p(name: str) -> float:
        steps = step_time_model(
            model.arch, hardware, parse_layout(name), scheme=scheme, kv_dtype=KVDType.BF16
        )
        return steps.comm.p2p_bandwidth_bytes_per_s

    assert p2p("tp8-pp2") == pytest.approx(50e9)
    assert p2p("tp4-pp2") == pytest.approx(450e9)


@pytest.mark.parametrize(
    ("name", "exchange"),
    [
        ("dp8-ep8", MoEExchange.GATHER),
        ("dpa8", MoEExchange.GATHER),
        ("dp16-ep16", MoEExchange.ALL_TO_ALL),
    ],
)
def test_exchange_defaults_to_the_engines_gather_inside_a_node(
    name: str, exchange: MoEExchange
) -> None:
    assert default_exchange(parse_layout(name), get_hardware("h200-sxm")) is exchange


@pytest.mark.parametrize("heavy", [0, 2], ids=["long-on-rank-0", "long-on-rank-2"])
def test_a_fleet_of_attention_dp_deployments_steps_each_apart(heavy: int) -> None:
    # Two 2-rank deployments (dp=4, groups=2), requests round-robin over the four ranks (request
    # i on rank i mod 4): only rank `heavy` gets the long prompts, rank 0 (the first deployment)
    # or rank 2 (the second). The other deployment's ranks then run exactly as a 2-rank
    # deployment given their requests alone, and so do the heavy one's; in one 4-rank lockstep
    # group (groups=1) the heavy rank's prefill stalls the other deployment's ranks too.
    # (Mutation seed 622's group slice `routed[g * size:(g + 2) * size]` stepped the first
    # deployment's ranks with all four: rank 2's long prefills held ranks 0 and 1 back; only
    # long prompts on rank 2 show it.)
    model = _toy_lockstep(ranks=2)
    capacity, config = _roomy()
    long = np.arange(8) % 4 == heavy
    requests = dataclasses.replace(
        fixed_batch(8, prompt=40, output=60),
        input_tokens=np.where(long, 2000, 40),
        output_tokens=np.where(long, 60, 5),
    )
    fleet = simulate(requests, model, capacity, config, dp=4, groups=2)
    one_group = simulate(requests, model, capacity, config, dp=4, groups=1)
    first, second = np.array([0, 1, 4, 5]), np.array([2, 3, 6, 7])
    for mine in (first, second):
        alone = simulate(requests.subset(mine), model, capacity, config, dp=2)
        assert fleet.ttft_s[mine].tolist() == pytest.approx(alone.ttft_s.tolist(), rel=1e-12)
        assert fleet.e2e_s[mine].tolist() == pytest.approx(alone.e2e_s.tolist(), rel=1e-12)
    other = second if heavy < 2 else first
    assert (one_group.ttft_s[other] > fleet.ttft_s[other]).all()
    with pytest.raises(InputError, match="groups: must divide dp = 4"):
        simulate(requests, model, capacity, config, dp=4, groups=3)
