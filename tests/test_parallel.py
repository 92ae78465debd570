"""The process pool (`capcliff.analysis.parallel`): one per run, only on idle cores, only for
enough work, and the same results as a serial run."""

from __future__ import annotations

import multiprocessing
import os
import time
from concurrent.futures import Executor, wait

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import capcliff.analysis.parallel as parallel


def _square(x: int) -> int:
    return x * x


def _pid(_: int) -> int:
    return os.getpid()


@pytest.fixture
def two_idle_cores(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Two idle cores, every step worth a pool; returns the list of pools forked (their sizes)."""
    monkeypatch.setattr(parallel, "idle_cores", lambda: 2)
    monkeypatch.setattr(parallel, "MIN_PARALLEL_CPU_S", 0.0)
    forked: list[int] = []
    new_pool = parallel._new_pool

    def counting(workers: int) -> Executor:
        forked.append(workers)
        return new_pool(workers)

    monkeypatch.setattr(parallel, "_new_pool", counting)
    return forked


def test_a_parallel_map_returns_the_serial_results_in_order(two_idle_cores: list[int]) -> None:
    items = list(range(7))
    assert parallel.parallel_map(_square, items, 2) == [x * x for x in items]
    assert two_idle_cores == [2]


def test_a_run_forks_one_pool_for_all_its_steps(two_idle_cores: list[int]) -> None:
    with parallel.run_pool(2):
        for n in (3, 5, 9):  # three parallel steps
            assert parallel.parallel_map(_square, list(range(n)), 2) == [x * x for x in range(n)]
    assert two_idle_cores == [2]


def test_the_pool_is_shut_down_when_the_run_ends(two_idle_cores: list[int]) -> None:
    with parallel.run_pool(2):
        parallel.parallel_map(_square, list(range(4)), 2)
        run = parallel._current_run()
        assert run is not None and run.executor is not None
    assert parallel._current_run() is None
    with pytest.raises(RuntimeError):  # a shut-down executor takes no more work
        run.executor.submit(_square, 1)


def test_the_first_item_runs_here_and_idle_workers_take_the_next(
    two_idle_cores: list[int],
) -> None:
    pids = parallel.parallel_map(_pid, list(range(5)), 2)
    assert pids[0] == os.getpid()
    assert pids[1] != os.getpid() and pids[2] != os.getpid()


def test_small_work_runs_serially_without_a_pool(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(parallel, "idle_cores", lambda: 4)
    monkeypatch.setattr(parallel, "MIN_PARALLEL_CPU_S", 3600.0)  # an hour: never worth it

    def no_pool(workers: int) -> Executor:
        raise AssertionError("forked a pool for small work")

    monkeypatch.setattr(parallel, "_new_pool", no_pool)
    with parallel.run_pool(4):
        assert parallel.parallel_map(_pid, list(range(6)), 4) == [os.getpid()] * 6


@pytest.mark.parametrize(("jobs", "idle", "expected"), [(2, 1, 1), (8, 3, 3), (2, 16, 2)])
def test_a_run_uses_no_more_workers_than_idle_cores(
    monkeypatch: pytest.MonkeyPatch, jobs: int, idle: int, expected: int
) -> None:
    # --jobs 2 on a busy two-core machine (one idle core) runs serially, as --jobs 1 does.
    monkeypatch.setattr(parallel, "idle_cores", lambda: idle)
    with parallel.run_pool(jobs):
        assert parallel.workers(jobs) == expected


def test_a_worker_process_runs_its_own_steps_serially(two_idle_cores: list[int]) -> None:
    with parallel.run_pool(2):
        inner = parallel.parallel_map(_workers_seen_inside, [2, 2, 2], 2)
    assert inner == [2, 1, 1]  # the first item runs in this process, the others in workers


def _workers_seen_inside(jobs: int) -> int:
    return parallel.workers(jobs)


def _fails(x: int) -> int:
    raise ValueError(f"job {x} failed")


def test_jobs_started_ahead_run_in_workers_and_return_the_serial_results(
    two_idle_cores: list[int],
) -> None:
    with parallel.run_pool(2):
        later = parallel.ahead(_square, [3, 4, 5], 2)
        pids = parallel.ahead(_pid, [0, 1], 2)
        assert [job.result() for job in later] == [9, 16, 25]
        # A job no worker has taken yet is run here when asked for (`Later.result`): on a busy
        # machine the workers may not have reached these yet, so wait until they have.
        futures = [job._future for job in pids if job._future is not None]
        assert len(futures) == 2
        wait(futures, timeout=60)
        assert os.getpid() not in [job.result() for job in pids]
    assert two_idle_cores == [2]


def test_with_one_worker_a_job_started_ahead_runs_here_once_when_asked(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(parallel, "idle_cores", lambda: 1)
    calls: list[int] = []

    def counted(x: int) -> int:
        calls.append(x)
        return os.getpid()

    with parallel.run_pool(2):
        later = parallel.ahead(counted, [7], 2)
        assert calls == []  # nothing runs until its result is wanted
        assert later[0].result() == os.getpid()
        assert later[0].result() == os.getpid()
    assert calls == [7]


def test_a_job_started_ahead_raises_its_error_when_its_result_is_asked_for(
    two_idle_cores: list[int],
) -> None:
    with parallel.run_pool(2):
        later = parallel.ahead(_fails, [1], 2)
        with pytest.raises(ValueError, match="job 1 failed"):
            later[0].result()


def _sleeps(seconds: float) -> float:
    time.sleep(seconds)
    return seconds


def test_a_run_does_not_wait_for_a_job_started_ahead_whose_result_it_did_not_ask_for(
    two_idle_cores: list[int],
) -> None:
    # An hour's job started ahead and never read (a plan that recommends nothing): the run ends
    # at once, its workers stopped, rather than an hour later.
    start = time.monotonic()
    with parallel.run_pool(2):
        parallel.ahead(_sleeps, [3600.0], 2)
        time.sleep(0.5)  # the worker has picked it up
    assert time.monotonic() - start < 60


def test_a_job_started_ahead_and_read_ends_the_run_normally(two_idle_cores: list[int]) -> None:
    with parallel.run_pool(2):
        later = parallel.ahead(_sleeps, [0.1], 2)
        assert later[0].result() == 0.1
        assert parallel.parallel_map(_square, [1, 2, 3], 2) == [1, 4, 9]


def test_a_heavy_step_hands_every_item_to_a_worker_when_enough_are_idle(
    two_idle_cores: list[int],
) -> None:
    # Nothing is held back to be timed here first: two idle workers take both items.
    with parallel.run_pool(2):
        pids = parallel.parallel_map(_pid, [0, 1], 2, heavy=True)
    assert os.getpid() not in pids


# Released by the test, inherited by the pool's forked workers: a job that holds its worker
# until then, however slow the machine (a 2 s sleep could end before the step on a loaded one,
# and a wall-clock bound on the step failed there).
_GATE = multiprocessing.get_context("fork").Event()


def _held(timeout_s: float) -> bool:
    return _GATE.wait(timeout_s)


def test_a_step_runs_here_while_the_workers_are_busy_with_jobs_started_ahead(
    two_idle_cores: list[int],
) -> None:
    # Both workers hold a job started ahead until the step is done; the step does not queue
    # behind them (where it could not be taken back: it would wait out the jobs' 30 s and run
    # in a worker) but runs in this process.
    _GATE.clear()
    with parallel.run_pool(2):
        later = parallel.ahead(_held, [30.0, 30.0], 2)
        pids = parallel.parallel_map(_pid, [0, 1, 2], 2, heavy=True)
        _GATE.set()
        assert [job.result() for job in later] == [True, True]  # released, not timed out
    assert pids == [os.getpid()] * 3


def test_a_heavy_step_with_one_idle_core_runs_serially(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(parallel, "idle_cores", lambda: 1)
    assert parallel.parallel_map(_pid, [0, 1, 2], 4, heavy=True) == [os.getpid()] * 3


@settings(max_examples=8, deadline=None)
@given(
    items=st.lists(st.integers(-50, 50), min_size=0, max_size=7),
    busy=st.integers(0, 3),
    heavy=st.booleans(),
)
def test_a_step_gives_the_serial_results_whatever_the_workers_are_busy_with(
    items: list[int], busy: int, heavy: bool
) -> None:
    # Whichever items go to workers and whichever run here (`busy` of the two workers hold a
    # job started ahead, a third queues), the results are the serial ones, in order.
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(parallel, "idle_cores", lambda: 2)
        patch.setattr(parallel, "MIN_PARALLEL_CPU_S", 0.0)
        with parallel.run_pool(2):
            later = parallel.ahead(_sleeps, [0.2] * busy, 2)
            assert parallel.parallel_map(_square, items, 2, heavy=heavy) == [x * x for x in items]
            assert [job.result() for job in later] == [0.2] * busy
