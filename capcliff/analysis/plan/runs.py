"""Simulations a plan asks for more than once, run once.

`simulate` is pure (data in, result out), so runs with equal inputs are one run. A timed trace is
its own size whatever a sample asks for, so the fleet check at the load (one replica of the
recommended layout at its cap) and the reuse advice's run of that layout at the trace's times are
the same run where the fleet is one replica: on a trace of 100,000 single-turn sessions, a replay
of 1.2 s CPU.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from capcliff.perf.step_time import StepTimeModel
from capcliff.sim.config import KVCapacity, SimConfig, resolved_prefix_caching
from capcliff.sim.result import SimResult
from capcliff.sim.simulate import requests_key, simulate
from capcliff.sim.traffic.workload import Requests


@dataclass
class SimRuns:
    """The runs done so far, by their inputs: requests bit for bit, the rest by value, with
    prefix caching as it resolves for the requests."""

    _done: dict[tuple[object, ...], SimResult] = field(default_factory=dict)

    def simulate(
        self,
        requests: Requests,
        model: StepTimeModel,
        capacity: KVCapacity,
        config: SimConfig,
        *,
        dp: int = 1,
        groups: int = 1,
    ) -> SimResult:
        """`simulate`, run once per distinct set of inputs."""
        config = resolved_prefix_caching(config, shares_content=requests.has_content)
        key = (requests_key(requests), model, capacity, config, dp, groups)
        if key not in self._done:
            self._done[key] = simulate(requests, model, capacity, config, dp=dp, groups=groups)
        return self._done[key]
