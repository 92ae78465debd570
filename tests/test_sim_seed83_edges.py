"""Edges the seed-83 mutation sample (`benchmarks/mutation.py --packages sim --seed 83`) found
untested. Every expected value is worked out by hand in the comments."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from capcliff.sim.config import KVCapacity, SimConfig
from capcliff.sim.reuse.kv_tiers import KVTier
from capcliff.sim.simulate import simulate
from capcliff.sim.traffic.workload import Requests
from tests.simtools import toy_model


@pytest.mark.parametrize("mixed_prefill", [False, True])
def test_a_load_from_the_host_tier_lengthens_the_prefill_step(mixed_prefill: bool) -> None:
    # SGLang with a 4-block HBM cache (16-token blocks, 1,000 B of KV per token) and a host tier
    # at 32 MB/s with 1 ms latency. A (content 0, 33 tokens) finishes and writes its 2 full
    # blocks through to the host; B (content 1, 60 tokens, 4 blocks) evicts them from HBM; C
    # (content 0 again, 33 tokens) misses in HBM and looks up (33 - 1) // 16 = 2 blocks in the
    # host tier. Loading them takes 1 ms + 32,000 B / 32 MB/s = 2 ms, less than recomputing 32
    # tokens (10 GFLOP each at 100 TFLOP/s: 3.2 ms), so C loads them. Its prefill step (the
    # exclusive one with mixed chunks off, the mixed one with them on) lasts the load on top of
    # its compute: at least 1 ms of step overhead + 1 GB of weights at 1 TB/s (1 ms) + 2 ms.
    cpu = KVTier("cpu", 100 * 16, read_bytes_per_s=32e6, write_bytes_per_s=32e6, latency_s=1e-3)
    capacity = KVCapacity(blocks=4, block_size=16, kv_bytes_per_token=1000, tiers=(cpu,))
    requests = Requests(
        input_tokens=np.array([33, 60, 33]), output_tokens=np.array([1, 1, 1]),
        max_output_tokens=np.array([1, 1, 1]), arrival_s=np.array([0.0, 1.0, 2.0]),
        content_node=np.array([0, 1, 0]), content_parent=np.array([-1, -1]),
        content_fork_tokens=np.array([0, 0]),
    )  # fmt: skip
    config = SimConfig(
        policy="sglang", prefix_caching=True, mixed_prefill=mixed_prefill,
        max_num_batched_tokens=64, max_num_seqs=4,
    )  # fmt: skip
    result = simulate(requests, toy_model(), capacity, config)
    assert result.reuse is not None
    tier = result.reuse.tiers[0]
    assert tier.hit_tokens == 32
    assert tier.read_bytes == 32_000
    # written: A's 2 blocks and B's 60 // 16 = 3, 16,000 B each
    assert tier.written_bytes == 80_000
    assert result.swap_s == pytest.approx(2e-3)
    assert result.ttft_s[2] >= 4e-3
    # the load saved recomputing 32 tokens (3.2 ms) less its own 2 ms: 1.2 ms
    assert tier.recompute_saved_s == pytest.approx(3.2e-3 - 2e-3)


class _ScriptedRng:
    """A stand-in for numpy's Generator: uniform draws come from a script, every session has one
    turn, and exponential draws return their mean."""

    def __init__(self, uniform_draws: list[int]) -> None:
        self.uniform_draws = uniform_draws
        self.taken = 0

    def integers(
        self, low: int, high: int, size: int | None = None, endpoint: bool = False
    ) -> np.ndarray | int:
        value = self.uniform_draws[self.taken]
        self.taken += 1
        return value if size is None else np.full(size, value)  # numpy: a scalar without a size

    def geometric(self, p: float) -> int:
        return 1

    def exponential(self, scale: float) -> float:
        return scale


def _one_turn_sessions(draws: list[int]) -> tuple[Any, _ScriptedRng]:
    from capcliff.sim.traffic.sessions import SessionSpec, generate_sessions
    from capcliff.sim.traffic.workload import Fixed, Uniform

    # A turn fits when its prompt + max_output_tokens (10) is within the 100-token context: a
    # drawn input of 100 never fits, one of 50 does.
    spec = SessionSpec(
        mean_turns=1, user_input=Uniform(1, 100), output=Fixed(1), max_context_tokens=100,
        max_output_tokens=10,
    )  # fmt: skip
    rng = _ScriptedRng(draws)
    return generate_sessions(spec, 1, rng, clients=1), rng  # type: ignore[arg-type]


def test_sessions_are_tried_up_to_a_hundred_per_request_before_giving_up() -> None:
    from capcliff.errors import InputError

    # One request wanted: the first 99 sessions' turns do not fit, the 100th's does. 100 x 1
    # sessions are allowed, so the request is made from the 100th session's turn.
    requests, rng = _one_turn_sessions([100] * 99 + [50])
    assert rng.taken == 100
    assert requests.input_tokens.tolist() == [50]
    # No turn ever fits: the 101st session is one too many.
    with pytest.raises(InputError, match="no turn fits the context limit"):
        _one_turn_sessions([100] * 200)


def test_a_pools_busy_fraction_is_its_step_time_over_replicas_times_the_makespan() -> None:
    from capcliff.sim.disagg.kv_transfer import Fabric, Path, Placement
    from capcliff.sim.disagg.pools import Pool, simulate_disaggregated
    from tests.simtools import constant_model

    # One 10-token prompt with 4 output tokens; every step takes 10 ms. The prefill replica runs
    # one step (0-10 ms), the 4 GB of KV cross NVLink at 4 GPUs x 100 GB/s in 10 ms (no latency,
    # no setup), and the decode replica runs the other 3 tokens' steps (20-50 ms): makespan 50 ms.
    # Prefill: 10 ms / (1 replica x 50 ms) = 0.2. Decode: 30 ms / (2 replicas x 50 ms) = 0.3 (the
    # second decode replica never runs). KV peaks at 3 blocks of 4 tokens (of 100) in prefill and
    # at 4 in decode, whose last step writes the KV of the 10 + 3 tokens before the last one.
    prefill = Pool(
        model=constant_model(0.01), capacity=KVCapacity(blocks=100, block_size=4),
        config=SimConfig(policy="vllm", max_num_seqs=8, max_num_batched_tokens=64), replicas=1,
        gpus_per_replica=4,
    )  # fmt: skip
    decode = Pool(prefill.model, prefill.capacity, prefill.config, replicas=2, gpus_per_replica=4)
    nvlink, rdma = Path("nvlink", 100e9, 0.0), Path("rdma", 50e9, 0.0)
    one = Requests(np.array([10]), np.array([4]), np.array([4]), np.array([0.0]))
    result = simulate_disaggregated(
        one, np.array([4e9]), prefill=prefill, decode=decode,
        fabric=Fabric(nvlink, rdma, domain_gpus=16, overhead_s=0.0),
        placement=Placement((range(0, 4),), (range(4, 8), range(8, 12))),
    )  # fmt: skip
    assert result.serving.makespan_s == pytest.approx(0.05)
    assert result.prefill.busy_fraction == pytest.approx(0.2)
    assert result.decode.busy_fraction == pytest.approx(0.3)
    assert (result.prefill.peak_kv_utilization, result.decode.peak_kv_utilization) == (0.03, 0.04)
    # The mean KV in use counts the idle decode replica as 0, as busy_fraction does: half of what
    # the one replica that ran held over the makespan.
    ran = result.decode_runs[0]
    alone = ran.used_block_seconds / (ran.total_blocks * 0.05)
    assert alone > 0
    assert result.decode.mean_kv_utilization == pytest.approx(alone / 2)


def test_only_a_replica_class_that_overrides_no_stood_in_method_takes_the_inlined_loops() -> None:
    from capcliff.sim.loop.landed import LandedReplicaSim
    from capcliff.sim.loop.replica import ReplicaSim
    from capcliff.sim.loop.thrash import _plain_replica

    # The inlined thrash and admission loops stand in for ReplicaSim's own methods, so they run
    # for ReplicaSim and for a subclass that overrides none of them (asked twice: the answer is
    # cached), not for the decode pool's LandedReplicaSim, which overrides `run_step`.
    class Renamed(ReplicaSim):
        pass

    class OwnPreempt(ReplicaSim):
        def preempt(self, v: int) -> None:
            super().preempt(v)

    assert _plain_replica(ReplicaSim) is True
    assert _plain_replica(Renamed) is True
    assert _plain_replica(Renamed) is True
    assert _plain_replica(OwnPreempt) is False
    assert _plain_replica(LandedReplicaSim) is False


@pytest.mark.parametrize("b_at_s", [0.045, 0.055])
def test_an_overlap_poll_inside_a_jumped_run_hears_up_to_the_start_of_the_step_before_it(
    b_at_s: float,
) -> None:
    import dataclasses

    from capcliff.sim.loop.replica import ReplicaSim
    from capcliff.sim.simulate import make_policy
    from tests.reference_sim import ReferenceSim
    from tests.simtools import constant_model

    # SGLang with the overlap scheduler and --scheduler-recv-interval 4; every step 10 ms. A
    # (7 tokens out) and C (20) prefill in step 0 = [0, 10); the poll at 10 resets the counter.
    # Decode steps 1-6 end at 20 .. 70, where A finishes: one jumped run. Inside it the poll at
    # 50 (counter 4) hears arrivals up to the start of step 4, 40 ms, so B (at 45 or 55 ms) is
    # not heard; the counter is 2 at 70 and reaches 4 at 90, whose poll hears up to 80 ms. B is
    # prefilled in [90, 100): its first token at 100 ms, as the step-by-step reference has it.
    model = dataclasses.replace(constant_model(0.01), overlap_schedule=True)
    config = SimConfig(policy="sglang", scheduler_recv_interval=4)
    requests = Requests(
        np.array([4, 4, 4]), np.array([7, 20, 2]), np.array([7, 20, 2]),
        np.array([0.0, 0.0, b_at_s]),
    )  # fmt: skip
    rule = make_policy(config, requests)
    capacity = KVCapacity(100, 16)
    fast = ReplicaSim(requests, model, capacity, config, rule).run()
    slow = ReferenceSim(requests, model, capacity, config, rule).run()
    assert fast.first_token_s[2] == pytest.approx(0.100)
    assert slow.first_token_s[2] == pytest.approx(0.100)
    assert fast.events < fast.steps  # the decode steps were jumped over, not stepped


def test_a_run_of_exactly_max_steps_steps_finishes() -> None:
    from capcliff.errors import SimulationLimitError
    from capcliff.sim.loop.replica import ReplicaSim
    from capcliff.sim.simulate import make_policy
    from tests.simtools import constant_model, fixed_batch

    # One 4-token prompt, 10 tokens out, one sequence at a time: a prefill step and 9 decode steps,
    # 10 steps in all, which a guard of 10 steps lets through. 12 tokens out need 11 decode steps
    # alone, (12 - 1) / 1 > 10: refused before the first step.
    config = SimConfig(policy="vllm", max_num_seqs=1, max_steps=10)

    def run(output: int) -> ReplicaSim:
        requests = fixed_batch(1, 4, output)
        return ReplicaSim(
            requests, constant_model(0.01), KVCapacity(100, 16), config,
            make_policy(config, requests),
        )  # fmt: skip

    ten = run(10)
    assert ten.run().steps == 10
    too_long = run(12)
    with pytest.raises(SimulationLimitError):
        too_long.run()
    assert too_long.rec.steps == 0


@pytest.mark.parametrize("policy", ["vllm", "vllm-first-chunk", "trtllm-max-util"])
def test_a_request_arriving_while_the_cache_thrashes_joins_the_queue_at_the_next_event(
    policy: str,
) -> None:
    from capcliff.sim.loop.replica import ReplicaSim
    from capcliff.sim.simulate import make_policy
    from tests.simtools import constant_model

    # The thrashing case of test_sim_mutants_fast_paths (A, B, C: prompt 1, output 10; 12 blocks
    # of 1 token; 1 ms a step) with D (prompt 1, output 1) arriving at 5.5 ms, during steps 4-5
    # (C preempted), and E at 50 ms, after everything. D is queued at 6 ms, behind C, so when B
    # is preempted in steps 6-9 three wait: B, C, D. At 10 ms B (7 blocks) and C (5) come back
    # and D (1) waits; at 11 ms C goes again (2 waiting); at 14 ms B is done and C (6 blocks) and
    # D (1) get in: D's only token at 15 ms. E runs alone, 50-51 ms.
    requests = Requests(
        np.array([1, 1, 1, 1, 1]), np.array([10, 10, 10, 1, 1]), np.array([10, 10, 10, 1, 1]),
        np.array([0.0, 0.0, 0.0, 0.0055, 0.05]),
    )  # fmt: skip
    config = SimConfig(policy=policy)
    sim = ReplicaSim(
        requests, constant_model(1e-3), KVCapacity(12, 1), config, make_policy(config, requests)
    )
    result = sim.run()
    assert result.series_s.tolist() == pytest.approx(
        [1e-3, 4e-3, 6e-3, 10e-3, 11e-3, 14e-3, 15e-3, 19e-3, 51e-3]
    )
    assert result.series_waiting.tolist() == [0, 0, 1, 3, 1, 2, 0, 0, 0]
    assert result.finish_s.tolist() == pytest.approx([10e-3, 14e-3, 19e-3, 15e-3, 51e-3])


def test_a_compute_bound_decode_run_is_cut_at_the_first_step_end_after_an_arrival() -> None:
    from capcliff.sim.loop.replica import ReplicaSim
    from capcliff.sim.simulate import make_policy
    from tests.reference_sim import ReferenceSim
    from tests.simtools import toy_model

    # 20 one-token prompts (30 tokens out) at 0 s and X (2 tokens out) at 30 ms, vLLM, the toy
    # model. A decode step of 20 sequences computes 20 x (10 + 0.1) GFLOP at 100 TFLOP/s =
    # 2.02 ms, more than its 1 GB of weights take to read (1 ms): compute-bound, 1 + 2.02 ms
    # with the step overhead (+ a few ns of attention). The prefill step ends at 3.02 ms and
    # the 9th decode step after it at 3.02 + 9 x 3.021 = 30.21 ms, the first step end past
    # 30 ms: the run of decode steps is cut there and X is prefilled in the next step, which
    # ends 3.12 ms later (its own 10.1 GFLOP on top): first token 3.33 ms after it arrived.
    n = 20
    requests = Requests(
        np.ones(n + 1, dtype=np.int64), np.array([30] * n + [2]), np.array([30] * n + [2]),
        np.array([0.0] * n + [0.030]),
    )  # fmt: skip
    config = SimConfig(policy="vllm")
    rule, capacity = make_policy(config, requests), KVCapacity(1000, 16)
    fast = ReplicaSim(requests, toy_model(), capacity, config, rule).run()
    slow = ReferenceSim(requests, toy_model(), capacity, config, rule).run()
    assert fast.series_s[1] == pytest.approx(0.03021, abs=1e-5)
    assert fast.first_token_s[-1] - 0.030 == pytest.approx(0.00333, abs=1e-5)
    assert fast.first_token_s[-1] == pytest.approx(slow.first_token_s[-1], rel=1e-9)
