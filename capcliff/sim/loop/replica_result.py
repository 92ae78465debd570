"""One replica's simulation result: per-request timings and the run's records.

Its own module so that the compiled copy of the event loop (`capcliff.sim.core`) returns the same
class as the pure-Python one.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from capcliff.sim.reuse.prefix_reuse import ReuseRecord

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]


@dataclass(frozen=True)
class ReplicaResult:
    """One replica's run. Times in seconds from t = 0; arrays per request of this replica."""

    arrival_s: FloatArray
    first_token_s: FloatArray
    finish_s: FloatArray
    output_tokens: IntArray
    preemptions: IntArray
    recomputed_tokens: IntArray
    total_blocks: int
    steps: int
    events: int
    scheduled_tokens: int  # all tokens of every step (prefill, recompute and decode)
    swapped_tokens: int  # tokens of KV moved out to the host (and back)
    swap_s: float
    first_preemption: tuple[int, float] | None  # (step, time)
    first_saturation: tuple[int, float] | None
    blocked_steps: int  # steps in which a waiting request was refused for lack of KV
    blocked_s: float
    peak_used_blocks: int
    used_block_seconds: float  # time integral of blocks in use
    preemption_times_s: FloatArray
    series_s: FloatArray  # event times (end of a step or of a run of decode steps)
    series_used_blocks: FloatArray
    series_running: FloatArray
    series_waiting: FloatArray
    series_hbm_utilization: FloatArray
    reuse: ReuseRecord | None = None  # with prefix caching on
    busy_s: float = 0.0  # time spent in engine steps (the makespan less idle gaps)

    @property
    def makespan_s(self) -> float:
        """Time the last request finished."""
        return float(self.finish_s.max()) if len(self.finish_s) else 0.0
