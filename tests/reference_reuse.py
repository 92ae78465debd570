"""The plain reference simulator with a prefix cache kept block by block: every cached block is a
dictionary entry keyed by the content it holds (the node that owns it and its index), with a
count of the running requests that use it. No ranges, no heaps: the fast simulator's prefix
cache (capcliff.sim.prefix_cache) keeps the same model as per-node ranges and must agree.

The model both follow: a block of a request on node n is owned by the deepest node on n's path
whose own part starts at or before it; lookups take the longest run of cached blocks from block
0, at most (tokens - 1) // B; a request that stops publishes its full blocks (SGLang's
retraction keeps only what it had prefilled); eviction takes the unreferenced blocks of the
node released least recently (deepest first within one release), highest index first (SGLang:
all of them); evictions are settled when a waiting request is looked up and when the step's
allocations are done.
"""

from __future__ import annotations

import numpy as np

from capcliff.perf.step_time import StepTimeModel
from capcliff.sim.config import KVCapacity, SimConfig
from capcliff.sim.policies import Candidate, Policy
from capcliff.sim.workload import Requests
from tests.reference_sim import ReferenceSim, Req, blocks_for


class BlockCache:
    """Cached blocks by content key, with their running references."""

    def __init__(self, parent: list[int], fork: list[int], block_size: int, radix: bool) -> None:
        self.parent, self.B, self.radix = parent, block_size, radix
        self.own = [f // block_size for f in fork]
        self.refs: dict[tuple[int, int], int] = {}  # (owner node, block index) -> references
        self.released: dict[int, tuple[float, int]] = {}  # node -> (time, order) of last release
        self.order = 0
        self.evicted = 0

    def path(self, node: int) -> list[int]:
        out = [node]
        while self.parent[out[-1]] >= 0:
            out.append(self.parent[out[-1]])
        return out[::-1]

    def key(self, node: int, j: int) -> tuple[int, int]:
        owner = [a for a in self.path(node) if self.own[a] <= j][-1]
        return owner, j

    def unreferenced(self) -> int:
        return sum(1 for count in self.refs.values() if count == 0)

    def lookup(self, node: int, tokens: int) -> int:
        hit = 0
        while hit < (tokens - 1) // self.B and self.key(node, hit) in self.refs:
            hit += 1
        return hit

    def revivable(self, node: int, hit: int) -> int:
        return sum(1 for j in range(hit) if self.refs[self.key(node, j)] == 0)

    def acquire(self, node: int, hit: int) -> None:
        for j in range(hit):
            self.refs[self.key(node, j)] += 1

    def release(self, node: int, hit: int, publish: int, now: float) -> int:
        dropped = 0
        for j in range(hit):
            k = self.key(node, j)
            self.refs[k] -= 1
            dropped += self.refs[k] == 0
        for j in range(hit, publish):
            self.refs.setdefault(self.key(node, j), 0)
        end = max(hit, publish)
        touched = {self.key(node, j)[0] for j in range(end)}
        for a in reversed(self.path(node)):
            if a in touched:
                self.order += 1
                self.released[a] = (now, self.order)
        return dropped

    def evict(self, count: int) -> None:
        while count > 0:
            spare = {a for (a, _), c in self.refs.items() if c == 0}
            if not spare:
                return
            oldest = min(spare, key=lambda a: self.released[a])
            blocks = sorted(j for (a, j), c in self.refs.items() if a == oldest and c == 0)
            take = blocks if self.radix else blocks[-count:]
            for j in take:
                del self.refs[(oldest, j)]
            count -= len(take)
            self.evicted += len(take)


class ReferenceReuseSim(ReferenceSim):
    """ReferenceSim with the block-by-block prefix cache."""

    def __init__(
        self,
        requests: Requests,
        model: StepTimeModel,
        capacity: KVCapacity,
        config: SimConfig,
        rule: Policy,
    ) -> None:
        super().__init__(requests, model, capacity, config, rule)
        n = len(requests)
        if requests.has_content:
            parent, fork = requests.content_parent.tolist(), requests.content_fork_tokens.tolist()
            self.node = requests.content_node.tolist()
        else:
            parent, fork, self.node = [-1] * n, [0] * n, list(range(n))
        self.cache = BlockCache(parent, fork, capacity.block_size, rule.name == "sglang")
        self.shared = [0] * n
        self.prefilled = [0] * n
        self.queried = self.hit_tokens = 0

    def settle(self) -> None:
        over = self.cache.unreferenced() - self.free
        if over > 0:
            self.cache.evict(over)

    def candidate(self, r: Req, budget: int) -> Candidate:
        if r.host_kv:
            return super().candidate(r, budget)
        self.settle()
        todo = r.prefill_target
        hit = self.cache.lookup(self.node[r.idx], todo)
        cached = hit * self.B
        chunk = min(todo - cached, budget)
        blocks = blocks_for(cached + chunk, self.B) - hit
        blocks += self.cache.revivable(self.node[r.idx], hit)
        return Candidate(r.prompt, r.generated, r.output, r.max_output, 0, chunk, blocks, cached)

    def started(self, r: Req, cand: Candidate) -> None:
        if cand.kv_tokens:
            return
        hit = cand.cached_tokens // self.B
        node = self.node[r.idx]
        revived = self.cache.revivable(node, hit)
        self.cache.acquire(node, hit)
        r.blocks = cand.blocks_now - revived + hit
        r.context = cand.cached_tokens
        self.shared[r.idx], self.prefilled[r.idx] = hit, r.prefill_target
        self.queried += r.prefill_target
        self.hit_tokens += cand.cached_tokens

    def released_blocks(self, r: Req, *, finished: bool) -> int:
        keep = r.context
        if self.cache.radix and not finished:
            keep = min(keep, self.prefilled[r.idx])
        if finished:
            keep = r.prompt + r.output - 1
        hit, self.shared[r.idx] = self.shared[r.idx], 0
        dropped = self.cache.release(self.node[r.idx], hit, keep // self.B, self.t)
        return r.blocks - hit + dropped


def hit_rate(sim: ReferenceReuseSim) -> float:
    return sim.hit_tokens / sim.queried if sim.queried else 0.0


__all__ = ["BlockCache", "ReferenceReuseSim", "hit_rate", "np"]
