"""The plain reference simulator with a prefix cache kept block by block: every cached block is a
dictionary entry keyed by the content it holds (the node that owns it and its index), with a
count of the running requests that use it. No ranges, no heaps: the fast simulator's prefix
cache (capcliff.sim.reuse.prefix_cache) keeps the same model as per-node ranges and must agree.

The model both follow: a block of a request on node n is owned by the deepest node on n's path
whose own part starts at or before it; lookups take the longest run of cached blocks from block
0, at most (tokens - 1) // B; a request that stops publishes its full blocks (SGLang's
retraction keeps only what it had prefilled); eviction takes the unreferenced blocks of the
node released least recently (deepest first within one release), highest index first (SGLang:
all of them); evictions are settled when a waiting request is looked up and when the step's
allocations are done.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from capcliff.perf.step_time import StepTimeModel
from capcliff.sim.config import KVCapacity, SimConfig
from capcliff.sim.policies import Candidate, Policy
from capcliff.sim.reuse.kv_tiers import KVTier
from capcliff.sim.traffic.workload import Requests
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
        self.on_evict: Callable[[int, int], None] | None = None

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
            if self.on_evict is not None:
                self.on_evict(oldest, max(j for (a, j) in self.refs if a == oldest) + 1)
            take = blocks if self.radix else blocks[-count:]
            for j in take:
                del self.refs[(oldest, j)]
            count -= len(take)
            self.evicted += len(take)


class BlockTier:
    """An offload tier block by block: the blocks it holds, the last write time of each node,
    its link's busy time (the model of capcliff.sim.reuse.kv_tiers)."""

    def __init__(self, spec: KVTier, cache: BlockCache, kv_bytes_per_token: float) -> None:
        self.spec, self.cache = spec, cache
        self.block_bytes = kv_bytes_per_token * cache.B
        self.capacity = spec.tokens // cache.B
        self.held: set[tuple[int, int]] = set()
        self.written: dict[int, tuple[float, int]] = {}
        self.order = 0
        self.busy_until = 0.0
        self.hit_tokens = 0
        self.skipped = 0

    def reach(self, node: int, limit: int, start: int) -> int:
        j = start
        while j < limit and self.cache.key(node, j) in self.held:
            j += 1
        return j

    def load_s(self, blocks: int) -> float:
        return self.spec.latency_s + blocks * self.block_bytes / self.spec.read_bytes_per_s

    def store(self, keys: list[tuple[int, int]], now: float) -> None:
        new = [k for k in keys if k not in self.held]
        if not new or self.capacity == 0:
            return
        writing = [a for a in dict.fromkeys(a for a, _ in new)]
        evictable = len([k for k in self.held if k[0] not in writing])
        if self.busy_until > now or len(self.held) + len(new) - evictable > self.capacity:
            self.skipped += 1
            return
        duration = self.spec.latency_s + len(new) * self.block_bytes / self.spec.write_bytes_per_s
        self.busy_until = now + duration
        while len(self.held) + len(new) > self.capacity:
            others = {a for a, _ in self.held if a not in writing}
            oldest = min(others, key=lambda a: self.written[a])
            self.held.remove(max(k for k in self.held if k[0] == oldest))
        self.held.update(new)
        for a in reversed(writing):
            self.order += 1
            self.written[a] = (now, self.order)


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
        self.tiers = [BlockTier(t, self.cache, capacity.kv_bytes_per_token) for t in capacity.tiers]
        self.write_back = capacity.offload_write_back
        self.recompute_s = model.flops_per_token / model.flops_per_s
        self.pending_load_s = 0.0
        if self.tiers and self.write_back:
            self.cache.on_evict = self._evicting
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
        cached = self.plan(self.node[r.idx], hit, (todo - 1) // self.B)[0] * self.B
        chunk = min(todo - cached, budget)
        blocks = blocks_for(cached + chunk, self.B) - hit
        blocks += self.cache.revivable(self.node[r.idx], hit)
        return Candidate(r.prompt, r.generated, r.output, r.max_output, 0, chunk, blocks, cached)

    def started(self, r: Req, cand: Candidate) -> None:
        if cand.kv_tokens:
            return
        node = self.node[r.idx]
        hit = self.cache.lookup(node, r.prefill_target)
        reach = cand.cached_tokens // self.B
        if reach > hit:
            self.load(node, hit, reach)
        revived = self.cache.revivable(node, hit)
        self.cache.acquire(node, hit)
        r.blocks = cand.blocks_now - revived + hit
        r.context = cand.cached_tokens
        self.shared[r.idx], self.prefilled[r.idx] = hit, r.prefill_target
        self.queried += r.prefill_target
        self.hit_tokens += hit * self.B

    def released_blocks(self, r: Req, *, finished: bool) -> int:
        keep = r.context
        if self.cache.radix and not finished:
            keep = min(keep, self.prefilled[r.idx])
        if finished:
            keep = r.prompt + r.output - 1
        hit, self.shared[r.idx] = self.shared[r.idx], 0
        if not self.write_back:
            keys = [self.cache.key(self.node[r.idx], j) for j in range(keep // self.B)]
            for tier in self.tiers:
                tier.store(keys, self.t)
        dropped = self.cache.release(self.node[r.idx], hit, keep // self.B, self.t)
        return r.blocks - hit + dropped

    # offload tiers
    def _evicting(self, node: int, end: int) -> None:
        keys = [(node, j) for j in range(self.cache.own[node], end)]
        for tier in self.tiers:
            tier.store(keys, self.t)

    def plan(self, node: int, hit: int, limit: int) -> tuple[int, float]:
        reach, load_s, start = hit, 0.0, hit
        for tier in self.tiers:
            end = tier.reach(node, limit, start)
            if end > start:
                load_s += tier.load_s(end - start)
                start = reach = end
        if reach == hit or load_s >= (reach - hit) * self.B * self.recompute_s:
            return hit, 0.0
        return reach, load_s

    def load(self, node: int, hit: int, reach: int) -> None:
        start = hit
        for tier in self.tiers:
            end = min(tier.reach(node, reach, start), reach)
            if end <= start:
                continue
            duration = tier.load_s(end - start)
            tier.busy_until = max(tier.busy_until, self.t) + duration
            tier.hit_tokens += (end - start) * self.B
            self.pending_load_s += duration
            start = end

    def loads_s(self) -> float:
        taken, self.pending_load_s = self.pending_load_s, 0.0
        return taken


def hit_rate(sim: ReferenceReuseSim) -> float:
    return sim.hit_tokens / sim.queried if sim.queried else 0.0


__all__ = ["BlockCache", "ReferenceReuseSim", "hit_rate", "np"]
