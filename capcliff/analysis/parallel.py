"""Simulation points in parallel across CPU cores, with results identical to a serial run.

Each job is a pure function of its arguments (the simulator is deterministic and draws no random
numbers of its own), so running jobs in worker processes changes nothing but the wall time.
Workers are forked, so they start with the parent's modules already imported.

Parallel only where it pays:

- **One pool per run.** A command opens `run_pool(jobs)` once; every `parallel_map` inside it
  shares one process pool, forked the first time a step is worth it and shut down when the run
  ends (a plan used to fork a new pool for each of its parallel steps: six pools, about 0.4 s of
  CPU, for no wall-time gain).
- **Idle cores only.** The workers are `jobs` capped at the cores other work leaves idle
  (`idle_cores`, read once per run): a worker on a busy core only adds the pool's overhead, so
  `--jobs 2` on a busy two-core machine runs serially, as `--jobs 1` does.
- **Enough work.** `parallel_map` runs its first item in this process and times it; when the
  rest would take less than `MIN_PARALLEL_CPU_S` of CPU serially, it runs them here too. A step
  whose every item is known to be worth a worker (`heavy`: a layout's whole search) skips the
  timing, which held the other items back for as long as the first ran.
- **Work known early starts early.** `ahead` hands a job whose inputs are already known (a plan's
  other GPU types) to the run's pool at once, so it runs beside the steps before its result is
  needed; with one worker it runs here when its result is asked for, as it did before. One
  still running when the run ends (its result was not wanted) stops with the workers.
- **Idle workers only, this process too.** A step hands its items to the workers that have no
  job (`_Run.idle_workers`) and runs the others here, handing more over as workers finish
  (`_spread`). A job handed to a busy pool would wait in its queue, where it can no longer be
  taken back, behind the jobs started ahead: the planned GPU type's searches used to wait there
  for seconds while this process sat idle.
"""

from __future__ import annotations

import math
import os
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Executor, Future
from contextlib import contextmanager
from typing import Any, Generic, TypeVar

T = TypeVar("T")
R = TypeVar("R")

# Named assumption: the serial CPU seconds below which the remaining items of a step run in this
# process rather than in the pool. Forking a worker from a process holding numpy and the catalogs,
# and pickling the jobs and results through it, costs tens of milliseconds per worker (measured:
# a plan's six pools took about 0.4 s of CPU); a quarter of a second of work split over two
# workers saves at most an eighth of a second, about what the pool costs.
MIN_PARALLEL_CPU_S = 0.25


def cores() -> int:
    """The CPU cores this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


def idle_cores() -> int:
    """The cores this process may run on that other work leaves idle: cores - (1-minute load
    average - 1) rounded to the nearest (this process counts in the load; a core more than half
    idle counts as idle), at least 1. On a shared 2-core machine with a load of 3 a second
    worker made the default plan slower, not faster."""
    total = cores()
    try:
        load = os.getloadavg()[0]
    except OSError:  # no load average on this system
        return total
    return max(1, min(total, math.floor(total - max(0.0, load - 1.0) + 0.5)))


def default_jobs() -> int:
    """Worker processes when the user gives none: the idle cores (`idle_cores`)."""
    return idle_cores()


class _Run:
    """The pool of one run: its worker count (decided when the run opens) and its executor
    (forked when a step first needs it), owned by the process that opened the run."""

    def __init__(self, jobs: int) -> None:
        self.workers = max(1, min(jobs, idle_cores()))
        self.owner = os.getpid()
        self.executor: Executor | None = None
        self.running: list[Callable[[], bool]] = []  # of each job started ahead (`ahead`)
        self.handed: list[Future[Any]] = []  # every job handed to the pool, while not done

    def pool(self) -> Executor:
        if self.executor is None:
            self.executor = _new_pool(self.workers)
        return self.executor

    def idle_workers(self) -> int:
        """Workers with no job handed to them (jobs started ahead included)."""
        self.handed = [future for future in self.handed if not future.done()]
        return self.workers - len(self.handed)


_RUN: _Run | None = None


def _new_pool(workers: int) -> Executor:
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    context = multiprocessing.get_context("fork")
    return ProcessPoolExecutor(max_workers=workers, mp_context=context)


def _current_run() -> _Run | None:
    """The open run of this process (a forked worker inherits its parent's, and owns none)."""
    return _RUN if _RUN is not None and _RUN.owner == os.getpid() else None


def _in_worker() -> bool:
    return _RUN is not None and _RUN.owner != os.getpid()


@contextmanager
def run_pool(jobs: int) -> Iterator[None]:
    """One process pool for every `parallel_map` of a run, with up to `jobs` workers (capped at
    the idle cores when the run opens); shut down when the run ends. Nested: the outer run's."""
    global _RUN
    if _current_run() is not None or _in_worker():
        yield
        return
    run = _Run(jobs)
    _RUN = run
    try:
        yield
    finally:
        _RUN = None
        if run.executor is not None:
            if any(running() for running in run.running):
                _stop_workers(run.executor)  # a job started ahead that nobody will read
            run.executor.shutdown(wait=True, cancel_futures=True)


def _stop_workers(executor: Executor) -> None:
    """Stop the pool's worker processes at once: a job started ahead (`ahead`) whose result the
    run did not ask for (nothing recommended, or an error) is not waited for."""
    for process in list(getattr(executor, "_processes", {}).values()):
        process.terminate()


def workers(jobs: int) -> int:
    """The worker processes a step asked to use `jobs` would get: 1 in a worker process; in a
    run, `jobs` capped at the run's workers; else `jobs` capped at the idle cores."""
    if jobs <= 1 or _in_worker():
        return 1
    run = _current_run()
    return min(jobs, run.workers if run is not None else idle_cores())


def parallel_map(
    fn: Callable[[T], R], items: Sequence[T], jobs: int, *, heavy: bool = False
) -> list[R]:
    """`[fn(x) for x in items]` (in order, as a serial run returns them), over up to `jobs`
    worker processes when that pays: more than one item, more than one worker (`workers`), and
    the items after the first worth at least `MIN_PARALLEL_CPU_S` of CPU, judged from the first,
    which runs here. `heavy`: every item is known to be worth a worker (a layout's whole
    search), so none is held back while the first is timed. Items go to idle workers only
    (`_spread`); this process runs the others. Inside `run_pool` the run's pool serves;
    outside, a pool for this call."""
    count = min(workers(jobs), len(items) - 1)
    if workers(jobs) <= 1 or count < 1 or (count == 1 and not heavy):
        return [fn(x) for x in items]
    run = _current_run()
    if heavy:
        return _spread(fn, items, run if run is not None else _Run(count))
    start = time.process_time()
    first = fn(items[0])
    rest = items[1:]
    if (time.process_time() - start) * len(rest) < MIN_PARALLEL_CPU_S:
        return [first, *(fn(x) for x in rest)]
    return [first, *_spread(fn, rest, run if run is not None else _Run(count))]


def _spread(fn: Callable[[T], R], items: Sequence[T], run: _Run) -> list[R]:
    """`fn` over `items`, in order: the first items each to an idle worker of `run`'s pool
    (`_Run.idle_workers`), the last ones here, one at a time, handing more to workers as they
    become idle, then the workers' results. A job handed to a busy pool waits in its queue
    where this process cannot take it back (the pool hands a worker its next job before the
    worker is free), so while the workers are busy with jobs started ahead (`ahead`: a plan's
    other GPU types) this process runs the step itself rather than wait. A job is a pure
    function of its item, so where it ran changes nothing but the wall time."""
    left = list(range(len(items)))
    handed: dict[int, Future[R]] = {}
    here: dict[int, R] = {}
    try:
        while left:
            while left and run.idle_workers() > 0:
                index = left.pop(0)
                handed[index] = run.pool().submit(fn, items[index])
                run.handed.append(handed[index])
            if left:
                index = left.pop()
                here[index] = fn(items[index])
        return [here[i] if i in here else handed[i].result() for i in range(len(items))]
    finally:
        if run is not _current_run() and run.executor is not None:  # this call's own pool
            run.executor.shutdown(wait=True, cancel_futures=True)


class Later(Generic[R]):
    """The result of one job: computed in the run's pool ahead of need (`ahead`), or here, once,
    when first asked for."""

    def __init__(self, fn: Callable[[T], R], item: T, future: Future[R] | None) -> None:
        self._compute: Callable[[], R] = lambda: fn(item)
        self._future = future
        self._done: list[R] = []

    def result(self) -> R:
        """The job's result (an exception the job raised is raised here); a job no worker has
        taken yet is taken back and run here rather than waited for."""
        if self._future is not None and not self._future.cancel():
            return self._future.result()
        if not self._done:
            self._done.append(self._compute())
        return self._done[0]

    def cancel(self) -> None:
        """Drop the job if no worker has started it (one already running finishes)."""
        if self._future is not None:
            self._future.cancel()


def ahead(fn: Callable[[T], R], items: Sequence[T], jobs: int) -> list[Later[R]]:
    """`fn(x)` for each of `items`, started now in the open run's pool when the step may use more
    than one worker (`workers`), else left to run here when its result is asked for. A job is a
    pure function of its item, so where it ran changes nothing but the wall time."""
    run = _current_run()
    if run is None or workers(jobs) <= 1:
        return [Later(fn, x, None) for x in items]
    pool = run.pool()
    futures = [pool.submit(fn, x) for x in items]
    run.running += [future.running for future in futures]
    run.handed += futures
    return [Later(fn, x, future) for x, future in zip(items, futures, strict=True)]
