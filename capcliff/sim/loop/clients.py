"""Arrivals of a replica's requests: the timed ones, and closed-loop clients that send their next
request (or wave of requests) a think time after the previous ones finish.

A request with an arrival time is queued at that time. The others wait in their client's queue,
in input order. When a client's outstanding requests have all finished, it sends the next one
after that request's think time, together with the requests right after it that join it (a
session's fan-out wave). Without waves every finish sends the next request, as before.

Sessions (requests with content nodes) are not bound to a user past its first one: a user whose
session ends takes the next session not yet started from a pool shared by the replica's users,
in the order the sessions were generated, as the bench tools' clients do (vLLM
benchmarks/multi_turn/benchmark_serving_multi_turn.py `client_main`: `task_queue.get()` when a
client has fewer active conversations than it may; InferenceX trace_replay_tester `--recycle`).
A fixed assignment (user u runs sessions u, u + N, ...) leaves the users whose sessions were
short idle while the others finish theirs, so the load falls through the run's second half and a
run past the cliff ends in a long tail that is not past it.
"""

from __future__ import annotations

import math
from bisect import insort
from collections import deque
from collections.abc import Iterable

from capcliff.sim.traffic.workload import Requests


class ClientLoop:
    """The arrivals (time, request) in order and the closed-loop clients' queues of one
    replica."""

    def __init__(self, requests: Requests, arrival: list[float]) -> None:
        self.arrival = arrival  # the replica's list: set here for requests sent by clients
        # (time, request) in order, taken from the front: the pairs are distinct, so this is the
        # order a heap would pop them in, each taken in O(1); a client's next request is
        # inserted in its place (`finished`)
        timed: Iterable[tuple[float, int]] = zip(arrival, range(len(arrival)), strict=True)
        if math.inf in arrival:  # sent by a client: not timed yet
            timed = ((w, i) for w, i in timed if w < math.inf)
        self.arrivals = deque(sorted(timed))
        self.queue: dict[int, deque[int]] = {}
        self.pool: deque[deque[int]] = deque()  # sessions no user has started (`_pool`)
        # requests of a client not finished yet, where requests are sent in waves
        self.outstanding: dict[int, int] | None = None
        self.client: list[int] = []
        self.think_s: list[float] = []
        self.joins: list[bool] = []
        if len(self.arrivals) == len(arrival):
            return  # every request has its time: no client sends one (`finished` does nothing)
        self.client = requests.client.tolist()
        self.think_s = requests.think_s.tolist()
        self.joins = requests.joins_previous.tolist()
        for i, when in enumerate(arrival):
            if when == math.inf:
                self.queue.setdefault(self.client[i], deque()).append(i)
        if requests.has_content:
            self._pool(requests, arrival)
        if any(self.joins):
            self.outstanding = {}
            for _, i in self.arrivals:
                c = self.client[i]
                self.outstanding[c] = self.outstanding.get(c, 0) + 1

    def _pool(self, requests: Requests, arrival: list[float]) -> None:
        """Move every user's sessions after its first to the shared pool, ordered as generated
        (the k-th session of user u is session k x N + u of the generator and of a trace)."""
        node = requests.content_node.tolist()
        parent = requests.content_parent.tolist()
        carried = set(node)  # a prefix node carries no request; a session's branches fork from it
        session = [n if parent[n] < 0 or parent[n] not in carried else parent[n] for n in node]
        sent: dict[int, int] = {}  # each user's first request sent at a time
        for _, i in self.arrivals:
            sent.setdefault(self.client[i], i)
        later: list[tuple[int, int, deque[int]]] = []
        for client, queue in self.queue.items():
            current = session[sent.get(client, queue[0])]
            own: deque[int] = deque()
            parts: list[deque[int]] = []
            for i in queue:
                if session[i] != current:
                    current = session[i]
                    parts.append(deque())
                (parts[-1] if parts else own).append(i)
            self.queue[client] = own
            later.extend((k, client, part) for k, part in enumerate(parts))
        self.pool.extend(part for _, _, part in sorted(later, key=lambda t: t[:2]))

    def finished(self, i: int, now_s: float) -> None:
        """Request i finished at `now_s`: its client may send its next request (or wave), or
        start the next session of the pool."""
        if not self.queue:
            return  # nobody waits for a client
        client = self.client[i]
        queue = self.queue.get(client)
        if not queue and not self.pool:
            return
        outstanding = self.outstanding
        if outstanding is not None:
            outstanding[client] -= 1
            if outstanding[client]:
                return
        if not queue:
            queue = self.queue[client] = self.pool.popleft()
            for j in queue:
                self.client[j] = client
        nxt = queue.popleft()
        when = self.arrival[nxt] = now_s + self.think_s[nxt]
        insort(self.arrivals, (when, nxt))
        if outstanding is not None:
            sent = 1
            while queue and self.joins[queue[0]]:
                nxt = queue.popleft()
                self.arrival[nxt] = when
                insort(self.arrivals, (when, nxt))
                sent += 1
            outstanding[client] = sent
