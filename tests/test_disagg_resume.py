"""A closed-loop round resumed where the settled send times end (`sim.disagg.resume`) gives the
round simulated from t = 0:
- a replica paused before reading an arrival past a time, then run on, runs as if never paused,
  and what it simulated by then is the same whatever arrives after that time;
- a copy of a replica's state (`state_copy`) runs on as the original, and neither changes the
  other;
- on random closed loops (clients, think times, outputs, replicas, admission rules, KV short
  enough to preempt), every round resumed from the round before gives the from-zero round's
  finishes, and the loop settles at the same send times."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from capcliff.errors import InputError
from capcliff.sim.config import ARRIVAL_TIE_S, KVCapacity, SimConfig
from capcliff.sim.core import core_name
from capcliff.sim.disagg.closed_loop import ClientReplay, Round, send_times, simulate_clients
from capcliff.sim.disagg.kv_transfer import Fabric, Path
from capcliff.sim.disagg.pools import DisaggResult, Pool, simulate_disaggregated
from capcliff.sim.disagg.resume import ResumedRounds
from capcliff.sim.disagg.state_copy import state_copy
from capcliff.sim.loop.replica import ReplicaSim
from capcliff.sim.simulate import make_policy
from capcliff.sim.traffic.workload import Requests
from tests.simtools import toy_model

FABRIC = Fabric(Path("nvlink", 100e9, 1e-6), Path("rdma", 50e9, 5e-6), domain_gpus=8,
                overhead_s=1e-3)  # fmt: skip
RULES = ["vllm", "vllm-first-chunk", "sglang", "trtllm-max-util", "trtllm-no-evict"]


def _pool(policy: str, replicas: int, blocks: int = 400) -> Pool:
    return Pool(
        model=toy_model(), capacity=KVCapacity(blocks=blocks, block_size=4),
        config=SimConfig(policy=policy, max_num_seqs=8, max_num_batched_tokens=256),
        replicas=replicas, gpus_per_replica=4,
    )  # fmt: skip


def _timed(n: int, gap_s: float, late_s: float, split: int) -> Requests:
    """n requests of 40-token prompts and 30 tokens out, every gap_s; from request `split` on,
    late_s later."""
    arrival = np.arange(n) * gap_s + np.where(np.arange(n) >= split, late_s, 0.0)
    tokens = np.full(n, 30, dtype=np.int64)
    return Requests(np.full(n, 40, dtype=np.int64), tokens, tokens, arrival)


def _replica(requests: Requests, policy: str = "vllm") -> ReplicaSim:
    pool = _pool(policy, 1, blocks=60)
    rule = make_policy(pool.config, requests)
    return ReplicaSim(requests, pool.model, pool.capacity, pool.config, rule)


def test_a_paused_replica_runs_on_as_if_never_paused() -> None:
    requests = _timed(12, 0.01, 0.0, 12)
    paused, whole = _replica(requests), _replica(requests)
    paused.run_until(12, before_s=0.055)
    assert paused.step > 0 and paused.done < 12  # it stopped part way
    paused.run_until(12)
    assert _same(paused.result(), whole.run())


def _same(a: object, b: object) -> bool:
    """Every field equal (arrays element by element, NaN equal to NaN)."""
    np.testing.assert_equal(vars(a), vars(b))
    return True


def test_what_a_paused_replica_simulated_depends_only_on_the_arrivals_before_the_pause() -> None:
    # The same six requests by 0.05 s; the other six 0.01 s apart after it, or 1 s later.
    early, late = _replica(_timed(12, 0.01, 0.0, 6)), _replica(_timed(12, 0.01, 1.0, 6))
    for sim in (early, late):
        sim.run_until(12, before_s=0.06 - 2 * ARRIVAL_TIE_S)
    assert (early.step, early.now_s, early.done) == (late.step, late.now_s, late.done)
    assert early.finish_s == late.finish_s and early.first_token_s == late.first_token_s


def test_a_copied_state_runs_on_as_the_original_and_apart_from_it() -> None:
    original = _replica(_timed(12, 0.01, 0.0, 12), "sglang")
    original.run_until(12, before_s=0.055)
    copied = state_copy(original)
    assert copied.arrivals is copied.clients.arrivals  # references between its parts kept
    assert copied.arrival is copied.clients.arrival and copied.arrival is not original.arrival
    assert copied.cohort is not original.cohort and copied.finish_s is not original.finish_s
    copied.run_until(12)
    assert original.done < 12  # running the copy left the original where it paused
    original.run_until(12)
    assert _same(original.result(), copied.result())


def _clients(cycle: list[tuple[int, float]], clients: int) -> Requests:
    n = len(cycle)
    outputs = np.array([o for o, _ in cycle], dtype=np.int64)
    first = np.where(np.arange(n) < clients, np.arange(n) * 0.05, np.nan)
    return Requests(
        np.full(n, 40, dtype=np.int64), outputs, outputs, first,
        (np.arange(n) % clients).astype(np.int64), closed_loop=True,
        think_s=np.array([t for _, t in cycle]),
    )  # fmt: skip


@settings(max_examples=40, deadline=None)
@given(
    clients=st.integers(1, 6),
    cycle=st.lists(st.tuples(st.integers(1, 60), st.floats(0.0, 0.5)), min_size=8, max_size=40),
    replicas=st.tuples(st.integers(1, 2), st.integers(1, 3)),
    policy=st.sampled_from(RULES),
    blocks=st.sampled_from([40, 400]),
)
def test_every_resumed_round_gives_the_round_from_zero(
    clients: int,
    cycle: list[tuple[int, float]],
    replicas: tuple[int, int],
    policy: str,
    blocks: int,
) -> None:
    requests = _clients(cycle, clients)
    if not (requests.output_tokens > 1).any():
        return  # nothing to decode: refused either way
    prefill, decode = _pool(policy, replicas[0]), _pool(policy, replicas[1], blocks)
    resumed = ResumedRounds(requests)

    def both(timed: Requests, rnd: Round) -> DisaggResult:
        kv = np.full(len(timed), 1e8)
        zero = simulate_disaggregated(timed, kv, prefill=prefill, decode=decode, fabric=FABRIC)
        again = simulate_disaggregated(timed, kv, prefill=prefill, decode=decode, fabric=FABRIC,
                                       pool_runner=resumed.runner(rnd))  # fmt: skip
        np.testing.assert_allclose(again.serving.e2e_s, zero.serving.e2e_s, rtol=0, atol=1e-9)
        np.testing.assert_allclose(again.prefill_done_s, zero.prefill_done_s, rtol=0, atol=1e-9)
        assert again.serving.total_preemptions == zero.serving.total_preemptions
        return zero

    def from_zero(timed: Requests, _round: Round) -> DisaggResult:
        kv = np.full(len(timed), 1e8)
        return simulate_disaggregated(timed, kv, prefill=prefill, decode=decode, fabric=FABRIC)

    def only_resumed(timed: Requests, rnd: Round) -> DisaggResult:
        kv = np.full(len(timed), 1e8)
        return simulate_disaggregated(timed, kv, prefill=prefill, decode=decode, fabric=FABRIC,
                                      pool_runner=alone.runner(rnd))  # fmt: skip

    try:
        simulate_clients(requests, both)
    except InputError:  # a round of one-token outputs only: nothing to decode, from zero too
        return
    alone = ResumedRounds(requests)
    zero, again = simulate_clients(requests, from_zero), simulate_clients(requests, only_resumed)
    np.testing.assert_allclose(again.serving.arrival_s, zero.serving.arrival_s, rtol=0, atol=1e-9)
    np.testing.assert_allclose(again.serving.e2e_s, zero.serving.e2e_s, rtol=0, atol=1e-9)


def test_a_long_loop_resumes_its_replicas() -> None:
    # One client, 30 requests one after another: each round settles one more, so from the
    # second round on every replica that paused resumes (the shortcut is taken, not skipped).
    requests = _clients([(20, 0.2)] * 30, 1)
    pool = _pool("vllm", 1)
    rounds = ResumedRounds(requests)

    def run(timed: Requests, rnd: Round) -> DisaggResult:
        return simulate_disaggregated(timed, np.full(len(timed), 1e8), prefill=pool,
                                      decode=pool, fabric=FABRIC,
                                      pool_runner=rounds.runner(rnd))  # fmt: skip

    simulate_clients(requests, run)
    if core_name() == "compiled":  # a compiled state is not copied field by field: from t = 0
        assert rounds.resumed == 0
    else:
        assert rounds.resumed >= 2 * 28  # both pools' replica, in rounds 2 to 30


@settings(max_examples=40, deadline=None)
@given(
    clients=st.integers(1, 6),
    cycle=st.lists(st.tuples(st.integers(1, 60), st.floats(0.0, 0.5)), min_size=4, max_size=40),
    seed=st.integers(0, 2**32 - 1),
    settled_s=st.floats(0.0, 3.0),
)
def test_a_replay_going_on_from_the_settled_finishes_sends_as_one_from_the_start(
    clients: int, cycle: list[tuple[int, float]], seed: int, settled_s: float
) -> None:
    # Two rounds of finishes that agree before settled_s and differ after it (later finishes
    # moved, some requests not finished): the second replay goes on from the first's kept loop.
    requests = _clients(cycle, clients)
    rng = np.random.default_rng(seed)
    first = rng.uniform(0.0, 4.0, len(requests))
    second = np.where(first < settled_s, first, first + rng.uniform(-0.5, 0.5, len(first)))
    second[(second >= settled_s) & (rng.random(len(first)) < 0.2)] = np.inf
    second = np.where(first < settled_s, first, np.maximum(second, settled_s))
    replay = ClientReplay(requests)
    np.testing.assert_array_equal(replay.send_times(first, settled_s), send_times(requests, first))
    np.testing.assert_array_equal(
        replay.send_times(second, settled_s), send_times(requests, second)
    )
