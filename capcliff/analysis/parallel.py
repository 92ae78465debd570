"""Simulation points in parallel across CPU cores, with results identical to a serial run.

Each job is a pure function of its arguments (the simulator is deterministic and draws no random
numbers of its own), so running jobs in worker processes changes nothing but the wall time.
Workers are forked, so they start with the parent's modules already imported.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Sequence
from typing import TypeVar

T = TypeVar("T")
R = TypeVar("R")


def cores() -> int:
    """The CPU cores this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


def default_jobs() -> int:
    """Worker processes when the user gives none: the cores this process may run on that other
    work leaves idle, cores - (1-minute load average - 1) rounded to the nearest (this process
    counts in the load; a core more than half idle counts as idle), at least 1. A worker on a
    busy core only adds the pool's overhead (forking, results pickled back): on a shared 2-core
    machine with a load of 3 a second worker made the default plan slower, not faster."""
    total = cores()
    try:
        load = os.getloadavg()[0]
    except OSError:  # no load average on this system
        return total
    return max(1, min(total, math.floor(total - max(0.0, load - 1.0) + 0.5)))


def parallel_map(fn: Callable[[T], R], items: Sequence[T], jobs: int) -> list[R]:
    """`[fn(x) for x in items]`, over up to `jobs` worker processes when there is more than one
    item and more than one job (in order, as a serial run returns them)."""
    if jobs <= 1 or len(items) < 2:
        return [fn(x) for x in items]
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    context = multiprocessing.get_context("fork")
    with ProcessPoolExecutor(max_workers=min(jobs, len(items)), mp_context=context) as pool:
        return list(pool.map(fn, items))
