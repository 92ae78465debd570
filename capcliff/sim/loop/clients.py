"""Arrivals of a replica's requests: the timed ones, and closed-loop clients that send their next
request (or wave of requests) a think time after the previous ones finish.

A request with an arrival time is queued at that time. The others wait in their client's queue,
in input order. When a client's outstanding requests have all finished, it sends the next one
after that request's think time, together with the requests right after it that join it (a
session's fan-out wave). Without waves every finish sends the next request, as before.
"""

from __future__ import annotations

import math
from bisect import insort
from collections import deque

from capcliff.sim.traffic.workload import Requests


class ClientLoop:
    """The arrivals (time, request) in order and the closed-loop clients' queues of one
    replica."""

    def __init__(self, requests: Requests, arrival: list[float]) -> None:
        self.arrival = arrival  # the replica's list: set here for requests sent by clients
        # (time, request) in order, taken from the front: the pairs are distinct, so this is the
        # order a heap would pop them in, each taken in O(1); a client's next request is
        # inserted in its place (`finished`)
        self.arrivals = deque(sorted((w, i) for i, w in enumerate(arrival) if w < math.inf))
        self.queue: dict[int, deque[int]] = {}
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
        if any(self.joins):
            self.outstanding = {}
            for _, i in self.arrivals:
                c = self.client[i]
                self.outstanding[c] = self.outstanding.get(c, 0) + 1

    def finished(self, i: int, now_s: float) -> None:
        """Request i finished at `now_s`: its client may send its next request (or wave)."""
        if not self.queue:
            return  # nobody waits for a client
        client = self.client[i]
        queue = self.queue.get(client)
        if not queue:
            return
        outstanding = self.outstanding
        if outstanding is not None:
            outstanding[client] -= 1
            if outstanding[client]:
                return
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
