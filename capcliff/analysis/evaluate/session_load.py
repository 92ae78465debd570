"""Session workloads (`multiturn-chat`, `agentic`) as online load: users, a session rate, a backlog.

A session preset cannot be drawn as lengths first and timed later (`OnlineWorkload`'s way for
single requests): a turn's prompt holds the session's history, and its arrival follows the turn
before it. So every sample is drawn whole (`sim.sessions.SessionStream`) with the seed, at the
size and load asked for, and a larger sample extends a smaller one of the same load (its first n
requests are the n-request sample's):
- users (`--clients N`): N users each run sessions back to back (a think time between turns and
  before a user's next session);
- a rate (`--rate R`, requests/s): sessions start as a Poisson process at R / mean turns per
  session, each session its own closed loop, so about R requests/s are offered;
- a backlog (the saturation search): every session starts at t = 0, one user each
  (clients = n >= the number of sessions), so the engine always has work until the sample drains.
Lengths come from the same Generator in the same order at every load, except that the rate draws
session start gaps between sessions: a rate search sees nearly, not exactly, common random numbers.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
from pydantic import BaseModel, ConfigDict

from capcliff.sim.traffic.sessions import SESSION_PRESETS, SessionSpec, SessionStream
from capcliff.sim.traffic.workload import Requests


class SessionCapacity(BaseModel):
    """Online, session workloads: what one replica of the recommended layout carries."""

    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)

    requests_per_session: float  # turns plus fan-out branches, reference sample
    mean_think_s: float  # before a request is sent (0 for a session's first turn)
    sessions_per_s: float  # per replica, within the SLO (or at saturation without one)
    # per replica: the users of its operating state (within the SLO, or the headroom below
    # saturation), users_rps x cycle_s (Little's law on one run)
    users: float
    users_rps: float  # requests/s those users send (the state's measured throughput)
    cycle_s: float  # a user's cycle per request: E[think] + E[e2e] in that state
    prefix_cache_hit_rate: float | None  # at the online load, caching on (token-weighted)
    preemptions: int  # at the online load, caching on, whole layout


def is_session_preset(name: str | None) -> bool:
    """Whether `name` is a session preset (multi-turn chat, agent sessions)."""
    return name in SESSION_PRESETS


def session_stream(
    spec: SessionSpec,
    seed: int,
    *,
    clients: int | None = None,
    rate_rps: float | None = None,
    think: bool = True,
) -> SessionStream:
    """The sessions shaped as `spec`, drawn with `seed` as far as a sample asks
    (`SessionStream.take`): run by `clients` users, started at `rate_rps` requests/s, or
    (neither) all started at once (a backlog: `take(n, clients=n)`, one user per session).
    `think=False`: users send each request as soon as the one before it ends (the saturation
    experiment). Without a think time the users' count is `take`'s, so one stream serves every
    count of users and every size: a larger sample extends a smaller one."""
    spec = spec if think else replace(spec, think_time_s=0.0)
    rng = np.random.default_rng(seed)
    if rate_rps is not None:
        return SessionStream(spec, rng, rate_per_s=rate_rps)
    if clients is not None and spec.think_time_s > 0:
        return SessionStream(spec, rng, clients=clients)
    backlog = replace(spec, think_time_s=0.0)  # every turn waits: the engine is never idle
    return SessionStream(backlog, rng, clients=1)


def session_spec(name: str) -> SessionSpec:
    """The preset's session shape."""
    return SESSION_PRESETS[name]


def requests_per_session(requests: Requests) -> float:
    """Requests / distinct sessions of a sample (turns plus fan-out branches per session)."""
    nodes = requests.content_node
    parents = requests.content_parent
    if not len(nodes):
        return 1.0
    # a session is a content node forked from a shared prefix (or a root); fan-out branches are
    # children of a session's node: count the nodes whose parent is a prefix or none
    session_nodes = {int(n) for n in nodes}
    roots = {n for n in session_nodes if int(parents[n]) not in session_nodes}  # -1 is none
    return len(nodes) / max(1, len(roots))
