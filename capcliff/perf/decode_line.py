"""k identical decode steps in closed form: the step time is the max of two affine functions of
the step index (memory and compute), so sums are arithmetic series on each side of the crossing."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import NamedTuple


class DecodeLine(NamedTuple):
    """Decode step j of a run of identical steps:
    max(mem0 + mem1 j, cmp0 + cmp1 j, floor_s) + fixed_s.

    Bytes each GPU reads in step j: bytes0 + bytes1 j. Units: seconds and bytes. `floor_s`: the
    host time of an overlap scheduler's step beyond the fixed part (perf/host_time.py); 0 or
    less: none. (A tuple: the simulator makes one per event.)
    """

    mem0: float
    mem1: float
    cmp0: float
    cmp1: float
    fixed_s: float
    bytes0: float
    bytes1: float
    floor_s: float = 0.0

    def step_s(self, j: int) -> float:
        """Time of step j, seconds."""
        line = max(self.mem0 + self.mem1 * j, self.cmp0 + self.cmp1 * j)
        return (max(line, self.floor_s) if self.floor_s > 0 else line) + self.fixed_s

    def floor_steps(self, k: int) -> int:
        """How many of steps 0 .. k-1 the floor sets: the leading steps where both lines are
        below it (the lines never fall: their slopes are context growth)."""
        if self.floor_s <= 0 or self.floor_s <= max(self.mem0, self.cmp0):
            return 0
        first = k
        for x0, x1 in ((self.mem0, self.mem1), (self.cmp0, self.cmp1)):
            gap = self.floor_s - x0
            if x1 > 0 and gap < x1 * first:  # the line reaches the floor within the run
                first = min(first, math.ceil(gap / x1))
        return max(0, min(k, first))

    def _mem_bound_range(self, k: int) -> tuple[int, int]:
        """Steps [a, b) of 0..k-1 where the memory line is the larger one."""
        d0, d1 = self.mem0 - self.cmp0, self.mem1 - self.cmp1
        if d1 == 0:
            return (0, k) if d0 >= 0 else (0, 0)
        cross = -d0 / d1  # d(j) >= 0 for j >= cross when d1 > 0, for j <= cross when d1 < 0
        cross = min(max(cross, -1.0), k + 1.0)  # keep a near-parallel pair's crossing finite
        if d1 > 0:
            return min(k, max(0, math.ceil(cross))), k
        return 0, min(k, max(0, math.floor(cross) + 1))

    def total_s(self, k: int) -> float:
        """Sum of steps 0 .. k-1, seconds: the floored steps, then arithmetic series on each
        side of the lines' crossing."""
        floored = self.floor_steps(k)
        if floored == 0:
            return self._lines_total_s(k)
        rest = self._lines_total_s(k) - self._lines_total_s(floored)
        return floored * (self.floor_s + self.fixed_s) + rest

    def _lines_total_s(self, k: int) -> float:
        """Sum of steps 0 .. k-1 without the floor, seconds."""
        if k <= 0:
            return 0.0
        d0 = self.mem0 - self.cmp0
        d_last = d0 + (self.mem1 - self.cmp1) * (k - 1)
        if d0 >= 0 and d_last >= 0:  # memory-bound throughout: the common decode case
            return k * (self.mem0 + self.fixed_s) + self.mem1 * k * (k - 1) / 2
        a, b = self._mem_bound_range(k)
        mem = series(self.mem0, self.mem1, a, b)
        cmp = series(self.cmp0, self.cmp1, 0, a) + series(self.cmp0, self.cmp1, b, k)
        return mem + cmp + k * self.fixed_s

    def total_bytes(self, k: int) -> float:
        """Bytes one GPU reads over steps 0 .. k-1."""
        return series(self.bytes0, self.bytes1, 0, k)

    def steps_before(self, duration_s: float, k_max: int) -> int:
        """Smallest m in [1, k_max] with total_s(m) >= duration_s, or k_max if none."""
        return steps_before(self.total_s, duration_s, k_max)


def steps_before(total_s: Callable[[int], float], duration_s: float, k_max: int) -> int:
    """Smallest m in [1, k_max] with total_s(m) >= duration_s (total_s non-decreasing), or
    k_max if none: bisection."""
    lo, hi = 1, k_max
    if total_s(hi) < duration_s:
        return k_max
    while lo < hi:
        mid = (lo + hi) // 2
        if total_s(mid) >= duration_s:
            hi = mid
        else:
            lo = mid + 1
    return lo


def series(x0: float, x1: float, a: int, b: int) -> float:
    """sum_{j=a}^{b-1} (x0 + x1 j)."""
    if b <= a:
        return 0.0
    return (b - a) * x0 + x1 * (b * (b - 1) - a * (a - 1)) / 2
