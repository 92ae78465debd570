"""The wall time a command would take on W idle cores, from the CPU of each job of its process pool.

Run: python benchmarks/pool_schedule.py [--workers 1 2 4 8] -- plan llama-3.1-70b ...
(prints figures, asserts nothing; the development machine has two shared cores, so a wall time
on four or eight idle ones cannot be measured there, only played out)

For each worker count W the command runs once, in a fresh process that believes it has W idle
cores (`parallel.idle_cores` replaced), on a virtual clock. Every job handed to the run's pool
(`parallel_map`, `ahead`) runs at once in that process, as a worker would run it (it sees itself
in a worker: no nested pool), and its CPU seconds are what it takes on the virtual worker it is
given: the first of W to be free, first come first served, no earlier than it was handed over.
The main process's own time is its CPU seconds less those of the jobs run for it. A job's result
is ready, and its worker free (`Future.done`, which `parallel` reads to find idle workers), once
the virtual clock passes its end; asking for it sooner moves the main process's clock on to then.
The figure is the main process's clock at the end: the wall time with W workers beside the main
process (W + 1 idle cores), leaving out forking the pool and pickling jobs and results (a few
tens of milliseconds a worker, `parallel.MIN_PARALLEL_CPU_S`), so a floor, not a promise.

W = 1 is the serial run (`parallel` uses no pool), its wall its CPU. The standard output is the
command's (the last W's), so it can be compared with a plain run's.
"""

from __future__ import annotations

import argparse
import contextlib
import subprocess
import sys
import time
from collections.abc import Callable
from concurrent.futures import Executor, Future
from typing import Any

import capcliff.analysis.parallel as parallel


class Clock:
    """The main process's virtual clock: its own CPU seconds plus the time it waited."""

    def __init__(self) -> None:
        self.inline_s = 0.0  # CPU of the jobs run here for the virtual pool
        self.waited_s = 0.0

    def cpu(self) -> float:
        return time.process_time() - self.inline_s

    def now(self) -> float:
        return self.cpu() + self.waited_s


class _Virtual(Future[Any]):
    """A job's result, ready at `end` on the clock."""

    def __init__(self, clock: Clock, end: float, value: Any) -> None:
        super().__init__()
        self._clock, self._end = clock, end
        self.set_result(value)

    def done(self) -> bool:
        return self._end <= self._clock.now()

    def running(self) -> bool:
        return not self.done()

    def cancel(self) -> bool:
        return False  # queued in the pool: a worker's next job cannot be taken back

    def result(self, timeout: float | None = None) -> Any:
        self._clock.waited_s = max(self._clock.waited_s, self._end - self._clock.cpu())
        return super().result(timeout)


class VirtualPool(Executor):
    """W workers on the virtual clock; each job runs here at once and is timed."""

    def __init__(self, clock: Clock, workers: int) -> None:
        self.clock, self.free = clock, [0.0] * workers
        self.jobs: list[float] = []
        self.log: list[str] = []

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Future[Any]:
        handed = self.clock.now()
        run = parallel._RUN
        assert run is not None
        owner, run.owner = run.owner, -1  # the job sees itself in a worker, as it would be
        start = time.process_time()
        try:
            value = fn(*args, **kwargs)
        finally:
            run.owner = owner
        spent = time.process_time() - start
        self.clock.inline_s += spent
        self.jobs.append(spent)
        k = min(range(len(self.free)), key=self.free.__getitem__)
        self.free[k] = max(handed, self.free[k]) + spent
        self.log.append(
            f"  job {getattr(fn, '__name__', fn)}: handed at {handed:.2f} s, worker {k}, "
            f"{spent:.2f} s CPU, ends at {self.free[k]:.2f} s"
        )
        return _Virtual(self.clock, self.free[k], value)


def play(workers: int, command: list[str], verbose: bool = False) -> None:
    """Run `command` with `workers` virtual workers; print its figures to stderr."""
    clock = Clock()
    pools: list[VirtualPool] = []

    def new_pool(_count: int) -> Executor:
        pools.append(VirtualPool(clock, workers))
        return pools[-1]

    parallel.idle_cores = lambda: workers
    parallel._new_pool = new_pool
    from capcliff.cli.main import main as capcliff_main

    sys.argv = ["capcliff", *command]
    with contextlib.suppress(SystemExit):
        capcliff_main()
    jobs = [spent for pool in pools for spent in pool.jobs]
    if verbose:
        print("\n".join(line for pool in pools for line in pool.log), file=sys.stderr)
    print(
        f"workers {workers}: wall {clock.now():.2f} s (on {workers + 1} idle cores); main "
        f"process {clock.cpu():.2f} s CPU, {len(jobs)} pool jobs {sum(jobs):.2f} s CPU "
        f"(largest {max(jobs, default=0.0):.2f} s)",
        file=sys.stderr,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2, 4, 8])
    parser.add_argument("--verbose", action="store_true", help="every job of the last W")
    parser.add_argument("command", nargs=argparse.REMAINDER)
    args = parser.parse_args()
    command = [a for a in args.command if a != "--"]
    *others, last = args.workers
    for count in others:
        subprocess.run(
            [sys.executable, __file__, "--workers", str(count), "--", *command],
            stdout=subprocess.DEVNULL,
            check=False,
        )
    play(last, command, args.verbose)


if __name__ == "__main__":
    main()
