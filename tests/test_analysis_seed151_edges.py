"""The survivors of analysis mutation seed 151 (docs/validation.md, "Mutation, analysis, seed
151"), each pinned by a unit test whose values are worked out by hand in its comments."""

from __future__ import annotations

from concurrent.futures import Executor, ThreadPoolExecutor
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest

from capcliff.analysis import parallel
from capcliff.analysis.disagg.plan import _candidate_row
from capcliff.analysis.evaluate.capacity import CapPoint, cap_grid, meets_slo_surely
from capcliff.analysis.evaluate.solver import Slo
from capcliff.analysis.evaluate.steady_state import SteadyState, steady_state
from capcliff.analysis.flags import unexpressed
from capcliff.analysis.plan import batch
from capcliff.analysis.plan.types import Objective
from capcliff.analysis.sweep.step_fit import PointFit, Timings
from capcliff.calibrate.benchmarks import BenchmarkPoint
from capcliff.memory.deepep import AllToAllBackend
from capcliff.sim.traffic.workload import Requests


def test_a_points_throughput_error_is_relative_to_the_measured_throughput() -> None:
    # 8 ms per output token predicts 1 / 0.008 = 125 tokens/s; against 100 measured that is
    # (125 - 100) / 100 = +25 %. At 12.5 ms: 80 tokens/s, -20 %. Not measured: no error.
    point = BenchmarkPoint("r", 4, 100, 50, output_throughput_tok_s=100.0)
    fast, slow = Timings(0.02, 0.1, 0.008), Timings(0.02, 0.1, 0.0125)
    fit = PointFit(point, fast, slow)
    assert abs(fit.throughput_error(fast) - 0.25) < 1e-12  # type: ignore[operator]
    assert abs(fit.throughput_error(slow) + 0.2) < 1e-12  # type: ignore[operator]
    unmeasured = PointFit(BenchmarkPoint("r", 4, 100, 50), fast, slow)
    assert unmeasured.throughput_error(fast) is None


def _state(ttft_p99_s: float, ttft_hw: float, tpot_p99_s: float, tpot_hw: float) -> SteadyState:
    """A closed-loop steady state (never saturated) with these p99s and relative half-widths."""
    return SteadyState(
        requests=100, measured=80, window_s=(0.0, 10.0), throughput_rps=8.0, output_tok_s=800.0,
        arrival_rps=None, ttft_p99_s=ttft_p99_s, tpot_p99_s=tpot_p99_s, tpot_mean_s=0.01,
        e2e_mean_s=1.0, rps_half_width=0.01, tpot_half_width=0.01,
        queue_growing=False, ttft_p99_half_width=ttft_hw, tpot_p99_half_width=tpot_hw,
    )  # fmt: skip


def test_a_p99_with_its_half_width_exactly_at_the_limit_meets_it_surely() -> None:
    # A limit is met at equality (as `meets_slo` reads it, p99 <= limit). TTFT p99 0.25 s with a
    # half-width of 100 % is 0.25 x 2 = 0.5 s; TPOT 16 ms + 25 % = 20 ms (both exact in binary).
    slo = Slo(ttft_s=0.5, tpot_s=0.02)
    assert meets_slo_surely(_state(0.25, 1.0, 0.016, 0.25), slo)
    # one step past either limit is not met: 0.25 x 2.0625 = 0.515625 s; 16 ms x 1.3 = 20.8 ms
    assert not meets_slo_surely(_state(0.25, 1.0625, 0.016, 0.25), slo)
    assert not meets_slo_surely(_state(0.25, 1.0, 0.016, 0.3), slo)


def test_a_splits_decode_kv_headroom_is_what_its_peak_leaves() -> None:
    # The decode pool's KV peaked at 75 %: 25 % headroom (at 100 %, none). The other figures of
    # a batch run (no steady state) are the run's own, passed through.
    def split(peak: float) -> Any:
        serving = SimpleNamespace(
            makespan_s=10.0, output_tokens_per_s=500.0, ttft=SimpleNamespace(p99=6.0),
            tpot=SimpleNamespace(p99=0.05), total_preemptions=3,
        )  # fmt: skip
        result = SimpleNamespace(serving=serving, decode=SimpleNamespace(peak_kv_utilization=peak))
        return SimpleNamespace(result=result, state=None, spec=SimpleNamespace(name="1p1d"), cap=8)

    row = _candidate_row(split(0.75), None)
    assert row.decode_kv_headroom == 0.25
    assert (row.name, row.concurrency, row.preemptions, row.serves_rate) == ("1p1d", 8, 3, None)
    assert (row.makespan_s, row.output_throughput_tok_s, row.ttft_p99_s) == (10.0, 500.0, 6.0)
    assert _candidate_row(split(1.0), None).decode_kv_headroom == 0.0


def test_the_rate_half_width_comes_from_ten_equal_batches_of_the_window() -> None:
    # Open loop, 201 requests: 200 arrive at 0 and one at 10 s, so the window (from the 41st
    # arrival, ceil(0.2 x 201) = 41, to the last) is [0, 10] s, ten batches of 1 s. The 200 that
    # arrived at 0 finish 10, 30, 10, 30, ... in the batches (at 0.5, 1.5, ... 9.5 s); the last
    # finishes at 11 s, outside. Batch rates 10 and 30/s: mean 20, sample std sqrt(10 x 100 / 9),
    # over sqrt(10) that is 10/3; with t(9) = 2.262 the half-width is 2.262 x (10/3) / 20 = 0.377.
    finish = [*np.repeat(np.arange(10) + 0.5, [10, 30] * 5).tolist(), 11.0]
    arrival = [0.0] * 200 + [10.0]
    first = np.array(arrival) + 0.1
    run = SimpleNamespace(
        arrival_s=np.array(arrival), ttft_s=np.full(201, 0.1), finish_s=np.array(finish),
        output_tokens=np.full(201, 2), e2e_s=np.array(finish) - np.array(arrival),
        tpot_s=np.array(finish) - first, makespan_s=11.0,
    )  # fmt: skip
    state = steady_state(run, open_loop=True)  # type: ignore[arg-type]
    assert state.window_s == (0.0, 10.0) and state.measured == 200
    assert abs(state.throughput_rps - 20.0) < 1e-12
    assert abs(state.rps_half_width - 2.262 / 6) < 1e-12


def _cap_point(preemptions: int, requests: int, blocked: bool = False) -> CapPoint:
    result = SimpleNamespace(
        total_preemptions=preemptions, finish_s=np.zeros(requests), admission_blocked=blocked
    )
    return CapPoint(cap=8, state=None, result=result, requests=requests)  # type: ignore[arg-type]


def test_a_cap_thrashes_past_half_a_preemption_per_request_not_at_it() -> None:
    # 100 requests: 50 preemptions is exactly 0.5 a request, not past it; 51 is
    assert not _cap_point(50, 100).thrashing
    assert _cap_point(51, 100).thrashing


def test_a_cap_hits_the_cliff_on_a_preemption_or_a_refusal_for_kv() -> None:
    assert _cap_point(1, 100).hit_cliff  # a preemption alone
    assert _cap_point(0, 100, blocked=True).hit_cliff  # a request refused for KV alone
    assert not _cap_point(0, 100).hit_cliff


def _square(x: int) -> int:
    return x * x


@pytest.mark.parametrize(("first_cpu_s", "pool"), [(0.01, False), (0.06, True)])
def test_the_rest_of_a_step_goes_to_a_pool_only_when_the_first_item_says_it_is_worth_it(
    monkeypatch: pytest.MonkeyPatch, first_cpu_s: float, pool: bool
) -> None:
    # Six items on four idle cores: the first runs here and is timed on the CPU clock; the other
    # five are worth 5 x its CPU time. 5 x 0.01 s = 0.05 s is under MIN_PARALLEL_CPU_S (0.25 s):
    # all run here. 5 x 0.06 s = 0.3 s is over it: a pool is started. The clock reads 1000 s
    # before the first item (a process that has run a while), so only the difference counts.
    monkeypatch.setattr(parallel, "idle_cores", lambda: 4)
    readings = iter([1000.0, 1000.0 + first_cpu_s])
    monkeypatch.setattr(parallel, "time", SimpleNamespace(process_time=lambda: next(readings)))
    forked: list[int] = []

    def threads(workers: int) -> Executor:  # a pool in this process: fast, same results
        forked.append(workers)
        return ThreadPoolExecutor(workers)

    monkeypatch.setattr(parallel, "_new_pool", threads)
    assert parallel.parallel_map(_square, list(range(6)), 4) == [0, 1, 4, 9, 16, 25]
    assert forked == ([4] if pool else [])


def test_a_batch_plans_reasons_weigh_the_best_against_pure_data_parallel(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Makespans: tp2 100 s (best), tp4 110 s (runner-up), tp1 (dp8) 150 s. The reasons compare
    # the best with the pure data-parallel layout (tp1, pp1, ep1) when there is one, not with
    # the runner-up. The sweet spot (64 at once, clean; a larger cap hit the cliff) runs on 4
    # replicas: max_num_seqs 64 / 4 = 16.
    def row(name: str, tp: int, makespan_s: float) -> Any:
        sweet = SimpleNamespace(makespan_s=makespan_s)
        return SimpleNamespace(name=name, tp=tp, pp=1, ep=1, dp=8 // tp, sweet_spot=sweet)

    rows = [row("tp4", 4, 110.0), row("dp8", 1, 150.0), row("tp2", 2, 100.0)]
    monkeypatch.setattr(
        batch, "recommendation_reasons", lambda best, other, _: [f"{best.name} vs {other.name}"]
    )
    points = [SimpleNamespace(concurrency=64, hit_cliff=False)]
    points.append(SimpleNamespace(concurrency=128, hit_cliff=True))
    ev = SimpleNamespace(sweet=points[0], points=points)
    found = batch._recommend(rows, {"tp2": ev}, Objective.MAKESPAN, 0.01, 128)  # type: ignore[arg-type]
    assert found is not None
    best, rec = found
    assert best.name == "tp2" and rec.reasons == ["tp2 vs dp8"]
    assert (rec.layout, rec.tp, rec.max_num_seqs) == ("tp2", 2, 16)


def test_the_cap_grid_looks_for_the_knee_up_to_twice_the_steady_cliff() -> None:
    # 1,000 requests of 100 + 100 tokens hold 100 + 100 / 2 = 150 tokens each on average, plus
    # half a 2-token block: 15,100 tokens of KV hold 100 (the steady cliff). A step of B
    # sequences takes (10 + B) ms, so decode runs at B / (10 + B) of its best pace. Up to
    # 2 x 100 = 200 the best is 200 / 210; 90 % of it is 0.857, first reached on the grid
    # round(200 / 1.19^k) at 70 (70 / 80 = 0.875; the next point down, 59, gives 0.855), so
    # the base is round(70 / 1.41) = 50. (Up to 300 the knee would be 75: a base of 53.)
    # The analytic cliff: a request peaks at 199 tokens, 100 blocks; 7,550 blocks hold 75.
    n = 1000
    full = np.full(n, 100)
    reference = Requests(
        input_tokens=full, output_tokens=full, max_output_tokens=full, arrival_s=np.zeros(n)
    )
    workload = SimpleNamespace(reference=lambda _: reference)
    replica = SimpleNamespace(
        capacity=SimpleNamespace(blocks=7550, block_size=2, tokens=15100),
        steps=SimpleNamespace(step_time_s=lambda _tokens, seqs, *_: 1e-3 * (10 + seqs)),
        config=SimpleNamespace(max_num_seqs=1024, policy="vllm"),
    )
    assert cap_grid(workload, replica) == (75, 50)  # type: ignore[arg-type]


def test_only_vllms_line_says_it_cannot_name_deepeps_auto_mode() -> None:
    # `--all2all-backend deepep` is SGLang's auto mode (--deepep-mode auto); vLLM names a mode
    # (deepep_high_throughput or deepep_low_latency), so only vLLM's line warns, and only
    # under deepep. Nothing else is simulated here that a line cannot say.
    def dep(backend: AllToAllBackend) -> Any:
        return SimpleNamespace(
            offload_nvme_bytes=0, offload_write_back=False, all2all_backend=backend,
            layout=SimpleNamespace(gpus_per_replica=1), offload_cpu_bytes=0,
            kv_cache_memory_bytes=None, kv_vllm_forced_fp8=False, kv_cache_dtype="auto",
            gpus_per_node=None,
        )  # fmt: skip

    deepep, plain = dep(AllToAllBackend.DEEPEP), dep(AllToAllBackend.NONE)
    warning = "vllm: --all2all-backend deepep is SGLang's auto mode; vLLM names a mode"
    assert unexpressed(deepep, "vllm") == [warning]
    assert unexpressed(plain, "vllm") == []
    assert unexpressed(deepep, "sglang") == []
