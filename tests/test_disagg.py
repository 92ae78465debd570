"""The two-pool simulator: transfers by hand, a step-by-step reference, invariants."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from capcliff.analysis.deployment import resolve
from capcliff.analysis.deployment_settings import DeploymentSettings
from capcliff.analysis.disagg.pools import parse_disagg, pools_of, run_disagg
from capcliff.catalog.catalogs import get_hardware, get_model
from capcliff.errors import InputError
from capcliff.perf.step_time import StepTimeModel
from capcliff.sim.config import KVCapacity, PreemptionMode, SimConfig
from capcliff.sim.disagg.kv_transfer import Fabric, Path, Placement, schedule_transfers
from capcliff.sim.disagg.pools import Pool, simulate_disaggregated
from capcliff.sim.loop.landed import LandedReplicaSim
from capcliff.sim.loop.lockstep import LockstepSim
from capcliff.sim.loop.prefill_pool import PrefillReplicaSim
from capcliff.sim.loop.replica import ReplicaSim
from capcliff.sim.simulate import make_policy
from capcliff.sim.traffic.workload import Requests
from tests.reference_sim import ReferenceSim
from tests.simtools import POLICIES, constant_model, random_case, toy_model

NVLINK = Path("nvlink", 100e9, 1e-6)
RDMA = Path("rdma", 50e9, 5e-6)
FABRIC = Fabric(NVLINK, RDMA, domain_gpus=8, overhead_s=1e-3)
# prefill replica 0 on GPUs 0-3; decode replica 0 on GPUs 4-7 (same node), 1 on GPUs 8-15
PLACEMENT = Placement((range(0, 4),), (range(4, 8), range(8, 16)))


def _transfer(ready: list[float], nbytes: list[float], receiver: list[int]):  # type: ignore[no-untyped-def]
    n = len(ready)
    return schedule_transfers(
        np.array(ready), np.array(nbytes), np.zeros(n, dtype=np.int64),
        np.array(receiver, dtype=np.int64), fabric=FABRIC, placement=PLACEMENT,
    )  # fmt: skip


def test_transfer_inside_a_node_goes_over_nvlink_on_every_rank() -> None:
    # 1 GB over 4 lanes of 100 GB/s = 2.5 ms, + 1 us latency + 1 ms overhead = 3.501 ms
    t = _transfer([0.0], [1e9], [0])
    assert t.path == ("nvlink",)
    assert t.end_s[0] == pytest.approx(3.501e-3)


def test_transfer_between_nodes_goes_over_rdma() -> None:
    # 1 GB over 4 lanes of 50 GB/s = 5 ms, + 5 us + 1 ms = 6.005 ms
    t = _transfer([0.0], [1e9], [1])
    assert t.path == ("rdma",)
    assert t.end_s[0] == pytest.approx(6.005e-3)


def test_transfers_from_one_prefill_replica_queue_on_its_send_side() -> None:
    # the second is ready at 1 ms but the sender is busy until 3.501 ms; it then takes 6.005 ms
    t = _transfer([0.0, 1e-3], [1e9, 1e9], [0, 1])
    assert t.start_s[1] == pytest.approx(3.501e-3)
    assert t.end_s[1] == pytest.approx(9.506e-3)
    assert t.wait_s[1] == pytest.approx(2.501e-3)


def test_lanes_are_the_smaller_end() -> None:
    # a 1-GPU decode rank receives on one NIC: 1 GB / 50 GB/s = 20 ms + 5 us + 1 ms
    placement = Placement((range(0, 8),), (range(8, 9),))
    t = schedule_transfers(
        np.zeros(1), np.array([1e9]), np.zeros(1, dtype=np.int64), np.zeros(1, dtype=np.int64),
        fabric=FABRIC, placement=placement,
    )  # fmt: skip
    assert t.end_s[0] == pytest.approx(21.005e-3)


def _pool(model: StepTimeModel, blocks: int, *, replicas: int = 1, seqs: int = 8) -> Pool:
    return Pool(
        model=model,
        capacity=KVCapacity(blocks=blocks, block_size=4),
        config=SimConfig(policy="vllm", max_num_seqs=seqs, max_num_batched_tokens=64),
        replicas=replicas,
        gpus_per_replica=4,
    )


def _requests(prompts: list[int], outputs: list[int], arrivals: list[float]) -> Requests:
    return Requests(
        np.array(prompts, dtype=np.int64),
        np.array(outputs, dtype=np.int64),
        np.array(outputs, dtype=np.int64),
        np.array(arrivals, dtype=np.float64),
    )


def test_one_request_by_hand() -> None:
    # Prefill: one 10 ms step computes the 10-token prompt and its first token (t = 10 ms).
    # Transfer: 1 GB to decode replica 0 (same node) = 3.501 ms, lands at 13.501 ms.
    # Decode: the admission step (token 2) ends at 23.501 ms: the client's first token; token 3
    # at 33.501 ms. TTFT 23.501 ms, E2E 33.501 ms, TPOT = 10 ms over the one step after it.
    step = constant_model(0.01)
    result = simulate_disaggregated(
        _requests([10], [3], [0.0]), np.array([1e9]), prefill=_pool(step, 100),
        decode=_pool(step, 100, replicas=2), fabric=FABRIC, placement=PLACEMENT,
    )  # fmt: skip
    assert result.prefill_done_s[0] == pytest.approx(0.01)
    assert result.transfers.end_s[0] == pytest.approx(0.013501)
    assert result.serving.ttft_s[0] == pytest.approx(0.023501)
    assert result.serving.e2e_s[0] == pytest.approx(0.033501)
    assert result.serving.tpot_s[0] == pytest.approx(0.01)
    assert result.decode_queue_s[0] == pytest.approx(0.01)  # KV landed -> admission step end


def test_a_one_token_output_ends_at_its_prefill_and_moves_nothing() -> None:
    step = constant_model(0.01)
    result = simulate_disaggregated(
        _requests([10, 10], [1, 5], [0.0, 0.0]), np.array([1e9, 1e9]), prefill=_pool(step, 100),
        decode=_pool(step, 100, replicas=2), fabric=FABRIC, placement=PLACEMENT,
    )  # fmt: skip
    assert result.transferred.tolist() == [1]
    assert result.serving.e2e_s[0] == pytest.approx(0.01)  # both prompts in one prefill step


def test_closed_loop_clients_are_refused() -> None:
    requests = dataclasses.replace(_requests([10], [3], [0.0]), closed_loop=True)
    with pytest.raises(InputError, match="closed-loop"):
        simulate_disaggregated(
            requests, np.array([1.0]), prefill=_pool(toy_model(), 100),
            decode=_pool(toy_model(), 100), fabric=FABRIC,
        )  # fmt: skip


# --- the decode side against the step-by-step reference ---------------------------------------
@pytest.mark.parametrize("policy", POLICIES)
@pytest.mark.parametrize("seed", range(6))
def test_a_decode_replica_admitting_landed_kv_matches_the_reference(policy: str, seed: int) -> None:
    requests, capacity, config = random_case(
        seed, policy, mode=PreemptionMode.RECOMPUTE, arrival="poisson"
    )
    longer = requests.output_tokens + 1  # a landed request has generated its first token
    requests = dataclasses.replace(
        requests, output_tokens=longer, max_output_tokens=requests.max_output_tokens + 1
    )
    capacity = dataclasses.replace(capacity, blocks=capacity.blocks + 1)  # room for that token
    rule = make_policy(config, requests)
    fast = LandedReplicaSim(requests, toy_model(), capacity, config, rule).run()
    ref = ReferenceSim(requests, toy_model(), capacity, config, rule, landed=True).run()
    np.testing.assert_allclose(fast.first_token_s, ref.first_token_s, rtol=1e-9)
    np.testing.assert_allclose(fast.finish_s, ref.finish_s, rtol=1e-9)
    assert fast.preemptions.tolist() == ref.preemptions
    assert fast.steps == ref.steps


@pytest.mark.parametrize("policy", POLICIES)
@pytest.mark.parametrize("seed", range(4))
def test_a_prefill_replica_matches_the_reference(policy: str, seed: int) -> None:
    # prompts that leave at their first token, all at once, on as few blocks as the longest
    # prompt needs: chunks share steps with admissions, and admissions are refused for KV (the
    # locals path of vLLM V1 and TensorRT-LLM's rule; the general path for the others)
    requests, capacity, config = random_case(
        seed, policy, mode=PreemptionMode.RECOMPUTE, arrival="batch"
    )
    ones = np.ones(len(requests), dtype=np.int64)
    requests = dataclasses.replace(requests, output_tokens=ones, max_output_tokens=ones)
    fits = -(-int(requests.input_tokens.max()) // capacity.block_size)
    capacity = dataclasses.replace(capacity, blocks=fits)
    rule = make_policy(config, requests)
    fast = PrefillReplicaSim(requests, toy_model(), capacity, config, rule).run()
    ref = ReferenceSim(requests, toy_model(), capacity, config, rule).run()
    np.testing.assert_allclose(fast.first_token_s, ref.first_token_s, rtol=1e-9)
    np.testing.assert_allclose(fast.finish_s, ref.finish_s, rtol=1e-9)
    assert fast.steps == ref.steps


def test_a_landing_joins_the_decode_run_instead_of_its_own_step() -> None:
    # Two requests land 1 s apart on an idle-then-decoding replica; every step takes 10 ms.
    # Exact: request 0's admission step, its decode run (cut at the second landing), request 1's
    # admission step, the run to request 0's finish, the run to request 1's finish = 5 events.
    # Folded: each admission is the first step of the run after it: 3 events, the same times.
    # Request 0 lands at 0: admission step ends at 0.01 s (token 2), finish after 200 - 1 steps
    # = 1.99 s. Request 1 lands at 1.0 s, mid-step (the step from 0.99 to 1.00 s has ended, the
    # next starts at 1.00 s): token 2 at 1.01 s, finish at 1.0 + 199 x 0.01 = 2.99 s.
    step = constant_model(0.01)
    requests = _requests([10, 10], [200, 200], [0.0, 1.0])
    capacity = KVCapacity(blocks=200, block_size=4)
    config = SimConfig(policy="vllm", max_num_seqs=8, max_num_batched_tokens=64)
    rule = make_policy(config, requests)
    exact = ReplicaSim(requests, step, capacity, config, rule, landed=True).run()
    folded = LandedReplicaSim(requests, step, capacity, config, rule).run()
    assert folded.first_token_s == pytest.approx([0.01, 1.01])
    assert folded.finish_s == pytest.approx([1.99, 2.99])
    np.testing.assert_allclose(folded.finish_s, exact.finish_s, rtol=1e-12)
    assert (exact.events, folded.events) == (5, 3)
    assert folded.steps == exact.steps == 299


def _reference_two_pools(requests: Requests, kv_bytes: np.ndarray, prefill: Pool, decode: Pool):  # type: ignore[no-untyped-def]
    """Both pools step by step (ReferenceSim), transfers by an explicit link-by-link walk."""
    n = len(requests)
    order = sorted(range(n), key=lambda i: (requests.arrival_s[i], i))
    p_of = {i: k % prefill.replicas for k, i in enumerate(order)}
    ones = np.ones(n, dtype=np.int64)
    pre_req = dataclasses.replace(requests, output_tokens=ones, max_output_tokens=ones)
    done = [0.0] * n
    for r in range(prefill.replicas):
        mine = [i for i in range(n) if p_of[i] == r]
        sub = pre_req.subset(np.array(mine, dtype=np.int64))
        rule = make_policy(prefill.config, sub)
        out = ReferenceSim(sub, prefill.model, prefill.capacity, prefill.config, rule).run()
        for k, i in enumerate(mine):
            done[i] = out.finish_s[k]
    moved = [i for i in order if requests.output_tokens[i] > 1]
    d_of = {i: k % decode.replicas for k, i in enumerate(moved)}
    placement = Placement.packed(
        prefill.replicas, prefill.gpus_per_replica, decode.replicas, decode.gpus_per_replica
    )
    free_send = [0.0] * prefill.replicas
    free_recv = [0.0] * decode.replicas
    landed = {}
    for i in sorted(moved, key=lambda i: (done[i], i)):
        s, d = p_of[i], d_of[i]
        same_node = placement.prefill[s][0] // 8 == placement.decode[d][-1] // 8
        path = FABRIC.scaleup if same_node else FABRIC.scaleout
        lanes = min(prefill.gpus_per_replica, decode.gpus_per_replica)
        start = max(done[i], free_send[s], free_recv[d])
        wire = path.latency_s + FABRIC.overhead_s + kv_bytes[i] / (lanes * path.bytes_per_s_per_gpu)
        free_send[s] = free_recv[d] = landed[i] = start + wire
    first, finish = list(done), list(done)
    for r in range(decode.replicas):
        mine = sorted(i for i in moved if d_of[i] == r)
        if not mine:
            continue
        sub = dataclasses.replace(
            requests.subset(np.array(mine, dtype=np.int64)),
            arrival_s=np.array([landed[i] for i in mine]),
        )
        rule = make_policy(decode.config, requests.subset(np.array(moved, dtype=np.int64)))
        out = ReferenceSim(
            sub, decode.model, decode.capacity, decode.config, rule, landed=True
        ).run()
        for k, i in enumerate(mine):
            first[i], finish[i] = out.first_token_s[k], out.finish_s[k]
    return np.array(first), np.array(finish)


@pytest.mark.parametrize("seed", range(8))
def test_two_pools_match_the_step_by_step_reference(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n = int(rng.integers(5, 25))
    requests = _requests(
        rng.integers(1, 60, n).tolist(), rng.integers(1, 60, n).tolist(),
        np.cumsum(rng.exponential(0.01, n)).tolist(),
    )  # fmt: skip
    kv = rng.uniform(1e6, 1e9, n)
    prefill = _pool(toy_model(), 40, replicas=int(rng.integers(1, 3)), seqs=4)
    decode = _pool(toy_model(), 60, replicas=int(rng.integers(1, 4)), seqs=8)
    fabric_fast = simulate_disaggregated(
        requests, kv, prefill=prefill, decode=decode, fabric=FABRIC
    )
    first, finish = _reference_two_pools(requests, kv, prefill, decode)
    np.testing.assert_allclose(fabric_fast.serving.ttft_s, first - requests.arrival_s, rtol=1e-9)
    np.testing.assert_allclose(fabric_fast.serving.e2e_s, finish - requests.arrival_s, rtol=1e-9)


# --- invariants ---------------------------------------------------------------------------------
@st.composite
def _cases(draw: st.DrawFn) -> tuple[Requests, np.ndarray, Pool, Pool]:
    n = draw(st.integers(1, 30))
    prompts = draw(st.lists(st.integers(1, 50), min_size=n, max_size=n))
    outputs = draw(st.lists(st.integers(1, 50), min_size=n, max_size=n))
    gaps = draw(st.lists(st.floats(0, 0.05), min_size=n, max_size=n))
    kv = np.array(draw(st.lists(st.floats(1e3, 1e9), min_size=n, max_size=n)))
    pool_p = _pool(toy_model(), draw(st.integers(13, 40)), replicas=draw(st.integers(1, 3)))
    pool_d = _pool(toy_model(), draw(st.integers(25, 80)), replicas=draw(st.integers(1, 4)),
                   seqs=draw(st.integers(1, 16)))  # fmt: skip
    return _requests(prompts, outputs, np.cumsum(gaps).tolist()), kv, pool_p, pool_d


@settings(max_examples=40, deadline=None)
@given(_cases())
def test_two_pool_invariants(case: tuple[Requests, np.ndarray, Pool, Pool]) -> None:
    requests, kv, prefill, decode = case
    if not (requests.output_tokens > 1).any():
        return
    r = simulate_disaggregated(requests, kv, prefill=prefill, decode=decode, fabric=FABRIC)
    # every request with more than one output token has its KV moved exactly once
    assert sorted(r.transferred.tolist()) == np.flatnonzero(requests.output_tokens > 1).tolist()
    assert len(set(r.transferred.tolist())) == len(r.transferred)
    assert r.transfers.nbytes.sum() == pytest.approx(kv[requests.output_tokens > 1].sum())
    # decode never holds more KV than its pool
    assert all(run.peak_used_blocks <= run.total_blocks for run in r.decode_runs)
    # tokens conserved: the decode pool generates every token after the first, once
    decoded = sum(int(run.output_tokens.sum()) for run in r.decode_runs)
    assert decoded == int(requests.output_tokens[requests.output_tokens > 1].sum())
    # causality: prefill, then transfer, then decode admission, then the end
    moved = r.transferred
    assert (r.transfers.start_s >= r.prefill_done_s[moved] - 1e-12).all()
    assert (r.decode_admitted_s >= r.transfers.end_s).all()
    assert (r.serving.e2e_s + requests.arrival_s >= r.prefill_done_s - 1e-12).all()
    assert np.isfinite(r.serving.e2e_s).all()


def test_an_attention_dp_decode_pool_runs_its_ranks_as_one_lockstep_group() -> None:
    # qwen3-30b-a3b (MoE) decode instance dp2-ep2: two attention ranks that share each MoE layer
    dep = resolve(get_model("qwen3-30b-a3b"), get_hardware("h200-sxm"), DeploymentSettings())
    requests = _requests([300] * 12, [40] * 12, [0.01 * i for i in range(12)])
    pools = pools_of(dep, parse_disagg("1p:tp1,1d:dp2-ep2"), 1024)
    assert pools[1].pool.lockstep_ranks == 2 and pools[1].pool.model.moe is not None
    result = run_disagg(dep, pools, requests)
    assert len(result.decode_runs) == 2
    assert sum(int(r.output_tokens.sum()) for r in result.decode_runs) == 12 * 40
    assert [len(r.finish_s) for r in result.decode_runs] == [6, 6]  # round-robin over ranks
    assert np.isfinite(result.serving.e2e_s).all()


@pytest.mark.parametrize("policy", POLICIES)
@pytest.mark.parametrize("seed", range(2))
def test_lockstep_ranks_folding_landings_match_ranks_that_step_through_them(
    policy: str, seed: int
) -> None:
    # The same landed requests on a dp2-ep2 decode instance (qwen3-30b-a3b, two attention ranks
    # sharing each MoE layer), once with ranks that run every admission step exactly (ReplicaSim)
    # and once with ranks that fold a lone landing into the decode run (LandedReplicaSim): the
    # same first tokens, finishes, preemptions and steps. A small KV cache makes ranks preempt.
    dep = resolve(get_model("qwen3-30b-a3b"), get_hardware("h200-sxm"), DeploymentSettings())
    pool = pools_of(dep, parse_disagg("1p:tp1,1d:dp2-ep2"), 1024)[1].pool
    rng = np.random.default_rng(seed)
    n = int(rng.integers(8, 30))
    requests = _requests(
        rng.integers(16, 400, n).tolist(), rng.integers(2, 300, n).tolist(),
        np.cumsum(rng.exponential(0.02, n)).tolist(),
    )  # fmt: skip
    capacity = dataclasses.replace(pool.capacity, blocks=int(rng.integers(40, 120)))
    config = dataclasses.replace(pool.config, policy=policy)
    rule = make_policy(config, requests)
    owners = [np.flatnonzero(np.arange(n) % 2 == r) for r in range(2)]

    def run(fold: bool) -> list:  # type: ignore[type-arg]
        local = pool.model.local
        ranks = [
            LandedReplicaSim(requests.subset(idx), local, capacity, config, rule, in_lockstep=True)
            if fold
            else ReplicaSim(requests.subset(idx), local, capacity, config, rule, landed=True)
            for idx in owners
        ]
        return LockstepSim(ranks, pool.model, group=2).run()

    exact, folded = run(False), run(True)
    for e, f in zip(exact, folded, strict=True):
        np.testing.assert_allclose(f.first_token_s, e.first_token_s, rtol=1e-9)
        np.testing.assert_allclose(f.finish_s, e.finish_s, rtol=1e-9)
        assert f.preemptions.tolist() == e.preemptions.tolist()
        assert f.steps == e.steps
    assert sum(f.events for f in folded) < sum(e.events for e in exact)
