"""What a replica simulation records as it runs, and the per-replica result it yields."""

from __future__ import annotations

from array import array

import numpy as np
import numpy.typing as npt

from capcliff.sim.loop.replica_result import ReplicaResult as ReplicaResult  # re-exported
from capcliff.sim.reuse.prefix_reuse import ReuseRecord

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]


class Recorder:
    """Counters and event samples of one replica run."""

    def __init__(self, total_blocks: int, peak_hbm_bytes_per_s: float) -> None:
        self.total_blocks = total_blocks
        self.peak_hbm = peak_hbm_bytes_per_s
        self.steps = 0
        self.scheduled_tokens = 0
        self.swapped_tokens = 0
        self.swap_s = 0.0
        self.first_preemption: tuple[int, float] | None = None
        self.first_saturation: tuple[int, float] | None = None
        self.blocked_steps = 0
        self.blocked_s = 0.0
        self.peak_used = 0
        self.used_block_seconds = 0.0
        self.busy_s = 0.0
        # Event samples as arrays of doubles: ints convert exactly, as numpy would, and the result
        # takes them without a conversion (from a list of Python numbers it would cost more than
        # the appends save).
        self.preemption_times = array("d")
        # time, used, running, waiting, HBM use
        self.series = (array("d"), array("d"), array("d"), array("d"), array("d"))
        self._times, self._used, self._running, self._waiting, self._hbm = self.series

    @property
    def events(self) -> int:
        """Events recorded: one sample each (a step, or a run of decode steps)."""
        return len(self._times)

    def preemption(self, step: int, time_s: float) -> None:
        """A running request was preempted in `step`, which started at `time_s`."""
        self.preemption_times.append(time_s)
        if self.first_preemption is None:
            self.first_preemption = (step, time_s)

    def saturation(self, step: int, time_s: float) -> None:
        """KV ran out (or hit zero free blocks) in `step`, which ended at `time_s`."""
        if self.first_saturation is None:
            self.first_saturation = (step, time_s)

    def run(
        self,
        *,
        steps: int,
        start_s: float,
        duration_s: float,
        used_blocks: tuple[int, int],
        counts: tuple[int, int],
        hbm_bytes: float,
        blocked: bool,
        tokens: int,
    ) -> None:
        """`steps` steps (one, or a run of decode steps) from `start_s`; used_blocks at the
        first and last step (after allocation); counts = (running, waiting)."""
        (first, last), (running, waiting) = used_blocks, counts  # no star-call: native compiled
        self.record(
            steps, start_s, duration_s, first, last, running, waiting, hbm_bytes, tokens, blocked
        )

    def record(
        self,
        steps: int,
        start_s: float,
        duration_s: float,
        first: int,
        last: int,
        running: int,
        waiting: int,
        hbm_bytes: float,
        tokens: int,
        blocked: bool = False,
    ) -> None:
        """`run`, positionally (a call per event): used blocks `first` and `last` at the first
        and last step, requests running and waiting."""
        self.steps += steps
        self.scheduled_tokens += tokens
        peak = self.peak_used
        if first > peak or last > peak:
            self.peak_used = first if first > last else last
        self.used_block_seconds += (first + last) / 2 * duration_s
        self.busy_s += duration_s
        if blocked:
            self.blocked_steps += steps
            self.blocked_s += duration_s
        util = hbm_bytes / (duration_s * self.peak_hbm) if duration_s > 0 else 0.0
        self._times.append(start_s + duration_s)
        self._used.append(last)
        self._running.append(running)
        self._waiting.append(waiting)
        self._hbm.append(util)

    def series_arrays(self) -> tuple[FloatArray, ...]:
        """The event samples as arrays (time, used blocks, running, waiting, HBM utilisation)."""
        return tuple(np.array(values, dtype=np.float64) for values in self.series)

    def result(
        self,
        *,
        arrival_s: list[float] | FloatArray,
        first_token_s: list[float],
        finish_s: list[float],
        output_tokens: list[int] | IntArray,
        preemptions: list[int] | IntArray,
        recomputed_tokens: list[int] | IntArray,
        reuse: ReuseRecord | None = None,
    ) -> ReplicaResult:
        """The replica's result: these per-request lists (or arrays, copied) plus what was
        recorded."""
        times, used, running, waiting, hbm = self.series_arrays()
        return ReplicaResult(
            arrival_s=np.array(arrival_s, dtype=np.float64),
            first_token_s=np.asarray(first_token_s, dtype=np.float64),
            finish_s=np.asarray(finish_s, dtype=np.float64),
            output_tokens=np.array(output_tokens, dtype=np.int64),
            preemptions=np.asarray(preemptions, dtype=np.int64),
            recomputed_tokens=np.asarray(recomputed_tokens, dtype=np.int64),
            total_blocks=self.total_blocks,
            steps=self.steps,
            events=self.events,
            scheduled_tokens=self.scheduled_tokens,
            swapped_tokens=self.swapped_tokens,
            swap_s=self.swap_s,
            first_preemption=self.first_preemption,
            first_saturation=self.first_saturation,
            blocked_steps=self.blocked_steps,
            blocked_s=self.blocked_s,
            peak_used_blocks=self.peak_used,
            used_block_seconds=self.used_block_seconds,
            preemption_times_s=np.array(self.preemption_times, dtype=np.float64),
            series_s=times,
            series_used_blocks=used,
            series_running=running,
            series_waiting=waiting,
            series_hbm_utilization=hbm,
            reuse=reuse,
            busy_s=self.busy_s,
        )
