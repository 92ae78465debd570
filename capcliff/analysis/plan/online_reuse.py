"""Online plans of session workloads: capacity in sessions and users, and reuse at the online load.

The layout search (`layout_capacity`) already runs sessions with the prefix cache on (the engine's
default for a workload that shares content), so its steady-state throughput and latency include
reuse. This module adds what only sessions have:
- capacity per replica in sessions/s = sustained requests/s / requests per session (turns plus
  fan-out branches, counted in the reference sample), and in users: a user's cycle per request is
  its end-to-end latency plus the mean think time before the request is sent, so by Little's law
  users = X x (E[e2e] + E[think]), X and E[e2e] of one run: the replica's operating state
  (`at_sustained`: within the SLO, or without one at the headroom below saturation). Until
  2026-12-08 X was the saturation rate beside the e2e of a run at a lighter load, which no
  closed loop of that many users reaches (15 agentic users "at 2.52 requests/s", where 15
  users send 1.67);
- the reuse advice (`reuse_advice`: caching off vs on, each host-offload size, the recommended
  size and its flags) simulated on the recommended layout at its cap, at the online load: the
  users or session rate given, or with no load (1 - headroom) x the sustained rate.
  REUSE_REQUESTS requests per run (a set size: each of up to 8 runs costs about 0.1-0.5 s CPU).
  Its hit rates and throughput are whole-run (a cold cache at the start included), so its hit
  rate is a slight lower bound of the steady state's; its TTFT p99 is the steady state's, warm-up
  and drain left out (`steady_ttft_p99`: whole-run, the users' first turns sent at once set it).
"""

from __future__ import annotations

from dataclasses import replace

from capcliff.analysis.deployment import Deployment
from capcliff.analysis.evaluate.layout_capacity import LayoutEval
from capcliff.analysis.evaluate.online_load import OnlineWorkload
from capcliff.analysis.evaluate.session_load import SessionCapacity, requests_per_session
from capcliff.analysis.plan.reuse_advice import ReuseAdvice, reuse_advice
from capcliff.analysis.plan.runs import SimRuns
from capcliff.analysis.workloads import REFERENCE_REQUESTS
from capcliff.sim.traffic.workload import Requests

REUSE_REQUESTS = 2000  # set: requests per reuse-advice run (the whole layout)


def mean_think_s(workload: OnlineWorkload) -> float:
    """The mean think time before a request is sent (s): session users', the preset's mean
    (every request in steady state follows one); sessions at a rate, a reference sample's (a
    session's first turn waits none); without sessions, the users' --think-time (or a session
    trace's own), 0 at a rate."""
    clients = workload.choice.clients
    if not workload.sessions:
        if clients is None or workload.choice.rate_per_s is not None:
            return 0.0
        return float(workload.with_clients(REFERENCE_REQUESTS, clients).think_s.mean())
    if clients is not None and workload.choice.rate_per_s is None:
        # in steady state every request of a user follows one think of the preset's mean
        # (between turns, before a fan-out wave, before the user's next session); only each
        # user's very first request waits none, which a reference sample of 1,000 requests from
        # 64 users counted 64 times (1.72 s for agentic's 2 s)
        return workload.choice.session_spec().think_time_s
    sample = workload.at_rate(REFERENCE_REQUESTS, 1.0)  # think times do not depend on it
    return float(sample.think_s.mean())


def online_requests(workload: OnlineWorkload, sustained_rps: float, headroom: float) -> Requests:
    """REUSE_REQUESTS requests at the online load: the users or rate given, else (1 - headroom)
    x the layout's sustained rate."""
    clients = workload.choice.clients
    if clients is not None and workload.choice.rate_per_s is None:
        return workload.with_clients(REUSE_REQUESTS, clients)
    rate = workload.offered_rps()
    if rate is None:
        rate = max(sustained_rps * (1 - headroom), 1e-9)
    return workload.at_rate(REUSE_REQUESTS, rate)


def online_reuse(
    dep: Deployment,
    best: LayoutEval,
    workload: OnlineWorkload,
    headroom: float,
    runs: SimRuns | None = None,
) -> tuple[SessionCapacity | None, ReuseAdvice | None]:
    """(session capacity, reuse advice) of the recommended layout at the online load; (None,
    None) for a workload that shares no content. `runs`: the plan's runs so far."""
    requests = online_requests(workload, best.sustained_rps, headroom)
    if not requests.has_content:
        return None, None
    config = replace(best.replica.config, max_num_seqs=best.capacity.cap)
    advice = reuse_advice(dep, best.memory, requests, config, runs, steady=True)
    per_session = requests_per_session(workload.reference(REFERENCE_REQUESTS))
    think = mean_think_s(workload)
    rate = best.capacity.sustained_rps
    state = best.capacity.at_sustained
    cycle = state.e2e_mean_s + think
    on = None if advice is None else next(p for p in advice.points if p.label == "caching on")
    sessions = SessionCapacity(
        requests_per_session=per_session,
        mean_think_s=think,
        sessions_per_s=rate / per_session,
        users=state.throughput_rps * cycle,
        users_rps=state.throughput_rps,
        cycle_s=cycle,
        prefix_cache_hit_rate=None if on is None else on.prefix_cache_hit_rate,
        preemptions=0 if on is None else on.preemptions,
    )
    return sessions, advice
