"""The wall time a command would take on W idle cores, from the CPU of each job of its process pool.

Run: python benchmarks/pool_schedule.py [--workers 1 2 4 8] -- plan llama-3.1-70b ...
(prints figures, asserts nothing; the development machine has two shared cores, so a wall time
on four or eight idle ones cannot be measured there, only replayed)

The command runs once, in this process, believing it has `--record` idle cores
(`parallel.idle_cores` replaced): every step that would use the run's pool (`parallel_map`,
`ahead`) hands its jobs to a stand-in pool that runs each job here at once, as a worker would
(the job sees itself in a worker: no nested pool), and records its CPU seconds, when the main
process submitted it and when the main process first waited for its result, each on the main
process's own CPU clock (its CPU seconds less those of the jobs run for it). The recording is
then replayed for each worker count W: the main process runs on its own core, jobs go to the W
workers first come first served, each taking its recorded CPU seconds, and the main process
waits where it waited. The figure is when the main process ends: the wall time on W + 1 idle
cores, leaving out what the replay cannot see (forking the pool, pickling jobs and results: a
few tens of milliseconds a worker, `parallel.MIN_PARALLEL_CPU_S`), so a floor, not a promise.

The standard output is the command's, so it can be compared with a plain run's.
"""

from __future__ import annotations

import argparse
import contextlib
import math
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Executor, Future
from dataclasses import dataclass, field
from typing import Any

import capcliff.analysis.parallel as parallel


@dataclass
class Recording:
    """Jobs as (submitted at, CPU seconds), and the main process's waits as (at, job), on the
    main process's clock (seconds of its own CPU)."""

    jobs: list[tuple[float, float]] = field(default_factory=list)
    waits: list[tuple[float, int]] = field(default_factory=list)
    inline_s: float = 0.0  # CPU of the jobs run here for the stand-in pool
    end_s: float = 0.0

    def clock(self) -> float:
        return time.process_time() - self.inline_s


class _Recorded(Future[Any]):
    """A finished job whose first `result()` is recorded as a wait of the main process."""

    def __init__(self, recording: Recording, index: int, value: Any) -> None:
        super().__init__()
        self._recording, self._index, self._waited = recording, index, False
        self.set_result(value)

    def result(self, timeout: float | None = None) -> Any:
        if not self._waited:
            self._waited = True
            self._recording.waits.append((self._recording.clock(), self._index))
        return super().result(timeout)


class RecordingPool(Executor):
    """Runs each job here at once, as a worker of the run's pool would, and records it."""

    def __init__(self, recording: Recording) -> None:
        self.recording = recording

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Future[Any]:
        rec = self.recording
        at = rec.clock()
        run = parallel._RUN
        assert run is not None
        owner, run.owner = run.owner, -1  # the job sees itself in a worker, as it would be
        start = time.process_time()
        try:
            value = fn(*args, **kwargs)
        finally:
            run.owner = owner
        spent = time.process_time() - start
        rec.inline_s += spent
        rec.jobs.append((at, spent))
        return _Recorded(rec, len(rec.jobs) - 1, value)

    def map(  # type: ignore[override]
        self, fn: Callable[..., Any], *iterables: Sequence[Any], **_: Any
    ) -> Iterator[Any]:
        futures = [self.submit(fn, *args) for args in zip(*iterables, strict=True)]
        return (f.result() for f in futures)


def replay(recording: Recording, workers: int) -> float:
    """When the main process ends with `workers` workers (first come, first served)."""
    free = [0.0] * workers
    finish: list[float] = []
    delay = 0.0  # how far the main process's wall clock runs behind its CPU clock
    waits = iter(sorted(recording.waits))
    pending = next(waits, None)
    for at, spent in recording.jobs:
        while pending is not None and pending[0] < at:
            delay = max(delay, finish[pending[1]] - pending[0])
            pending = next(waits, None)
        k = min(range(workers), key=free.__getitem__)
        start = max(at + delay, free[k])
        free[k] = start + spent
        finish.append(free[k])
    while pending is not None:
        delay = max(delay, finish[pending[1]] - pending[0])
        pending = next(waits, None)
    return recording.end_s + delay


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2, 4, 8])
    parser.add_argument("--record", type=int, default=16, help="idle cores the command sees")
    parser.add_argument("--verbose", action="store_true", help="print every job")
    parser.add_argument("command", nargs=argparse.REMAINDER)
    args = parser.parse_args()
    command = [a for a in args.command if a != "--"]
    recording = Recording()
    parallel.idle_cores = lambda: args.record
    parallel._new_pool = lambda _workers: RecordingPool(recording)

    from capcliff.cli.main import main as capcliff_main

    sys.argv = ["capcliff", *command]
    with contextlib.suppress(SystemExit):
        capcliff_main()
    recording.end_s = recording.clock()
    total = recording.end_s + recording.inline_s
    largest = max((spent for _, spent in recording.jobs), default=0.0)
    print(
        f"main process {recording.end_s:.2f} s CPU, {len(recording.jobs)} pool jobs "
        f"{recording.inline_s:.2f} s CPU (largest {largest:.2f} s), all {total:.2f} s",
        file=sys.stderr,
    )
    if args.verbose:
        for i, (at, spent) in enumerate(recording.jobs):
            waited = min((t for t, j in recording.waits if j == i), default=math.nan)
            print(
                f"  job {i}: submitted at {at:.2f} s, {spent:.2f} s CPU, first waited for at "
                f"{waited:.2f} s",
                file=sys.stderr,
            )
    for w in args.workers:
        wall = replay(recording, w)
        print(f"workers {w}: wall {wall:.2f} s (on {w + 1} idle cores)", file=sys.stderr)


if __name__ == "__main__":
    main()
