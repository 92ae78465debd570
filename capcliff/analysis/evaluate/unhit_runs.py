"""Runs read for their steps alone (a steady state, latencies), with a prefix cache that cannot
hit: simulated with the cache off, which takes the same steps faster.

Where no request can hit another's blocks (`sim.reuse.prefix_reuse.content_is_private`: a
trace of single-turn sessions) and a run with the cache off preempts nothing, the run with it on
takes the very same steps, bit for bit; it differs only in its prefix-cache figures (a hit rate
of 0), which such a reader never looks at. Where the run with the cache off preempts, the cache
may give a preempted request its own blocks back: the run is done as configured (the first run
wasted, at about half the cost of the second: the cache's bookkeeping rules out the loop's fast
paths).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from capcliff.sim.config import SimConfig, resolved_prefix_caching
from capcliff.sim.result import SimResult
from capcliff.sim.reuse.prefix_reuse import content_is_private
from capcliff.sim.traffic.workload import Requests


def steps_run(
    requests: Requests, config: SimConfig, run: Callable[[SimConfig], SimResult]
) -> SimResult:
    """`run(config)` of `requests`, or, where it is the same, `run` with the prefix cache off (its
    result then has no prefix-cache figures: for a reader of its steps alone)."""
    caching = resolved_prefix_caching(config, shares_content=requests.has_content).prefix_caching
    if caching and content_is_private(requests):
        result = run(replace(config, prefix_caching=False))
        if result.total_preemptions == 0:
            return result
    return run(config)
