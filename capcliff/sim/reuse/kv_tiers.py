"""KV offload tiers below HBM: host DRAM and NVMe, each with a capacity, links and a policy.

Policy: write-through (the engines' defaults) or write-back. Write-through: when a request
releases its KV, its full blocks are copied to every tier (vLLM's `OffloadingConnector` stores
computed blocks to CPU as they complete,
vllm/distributed/kv_transfer/kv_connector/v1/offloading_connector.py; LMCache stores every
chunk; SGLang HiCache's `--hicache-write-policy write_through`,
python/sglang/srt/mem_cache/hiradix_cache.py). A tier keeps, per content node, a prefix-closed
range of blocks like the GPU cache (capcliff.sim.reuse.prefix_cache) and evicts its least recently
written node's tail when full. Tiers are inclusive: what is in DRAM may also be on NVMe.
Write-back (SGLang's `--hicache-write-policy write_back`: a node goes to host memory when it is
evicted from the device): when HBM evicts a node's tail, the node's cached blocks up to that tail
are copied to every tier (those still in HBM too: a tier holds a prefix-closed range per node,
so this writes somewhat more than the evicted blocks alone). Evictions inside a run of identical
decode steps are settled, and so stored, at the run's end (not at the step that allocated the
block): the link-busy check sees that time.

On a lookup, blocks past the GPU hit that a tier holds are loaded instead of recomputed when
loading is faster: latency + bytes / read bandwidth < tokens x FLOPs per token / FLOP/s (the
matmul work only: attention would make recompute dearer, so the rule errs towards recompute).
A load is synchronous: its time is added to the step that admits the request. A write is
asynchronous and skipped when its link is still busy with earlier transfers at that moment, so
a link never carries more than its bandwidth x time (the write starts when the link is idle).

Bandwidths are per GPU (each GPU moves its own shard of the KV): PCIe (one direction of the
host link) for DRAM, the node's NVMe bandwidth / GPUs per node for NVMe.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass

from capcliff.errors import InputError
from capcliff.sim.reuse.prefix_cache import PrefixCache


@dataclass(frozen=True)
class KVTier:
    """One offload tier of a replica, per GPU: capacity in tokens of KV, bandwidths in bytes/s,
    latency per transfer in seconds."""

    name: str  # cpu or nvme
    tokens: int
    read_bytes_per_s: float
    write_bytes_per_s: float
    latency_s: float

    def __post_init__(self) -> None:
        if self.tokens < 0 or self.read_bytes_per_s <= 0 or self.write_bytes_per_s <= 0:
            raise InputError(f"offload {self.name}: needs a capacity >= 0 and bandwidths > 0")


@dataclass(frozen=True)
class TierRecord:
    """What one tier did over a run (one replica, or summed over replicas)."""

    name: str
    hit_tokens: int  # tokens loaded from this tier instead of recomputed
    read_bytes: float  # per GPU
    written_bytes: float  # per GPU
    busy_s: float  # time its link spent moving bytes
    recompute_saved_s: float  # estimated recompute time of the loaded tokens, less the loads
    skipped_writes: int


class _Tier:
    """A tier's state: per-node cached extents (absolute blocks), LRU, link clock, counters."""

    def __init__(self, spec: KVTier, cache: PrefixCache, block_bytes: float) -> None:
        self.spec, self.cache, self.block_bytes = spec, cache, block_bytes
        size = cache.block_size
        self.capacity = spec.tokens // size
        self.end = list(cache.own_start)
        self.used = 0
        self._heap: list[tuple[float, int, int]] = []
        self._stamp = [0] * len(self.end)
        self._seq = 0
        self.busy_until = 0.0
        self.hit_tokens = 0
        self.read_bytes = self.written_bytes = self.busy_s = self.saved_s = 0.0
        self.skipped = 0

    def reach(self, node: int, limit: int, start: int) -> int:
        """How far blocks [start, limit) on `node`'s path are held here without a gap (blocks
        before `start` are held by faster tiers or HBM)."""
        hit = start
        for a, _, hi in self.cache.segments(node, limit):
            if hi <= start:
                continue
            if self.end[a] < hi:
                return max(start, self.end[a])
            hit = hi
        return hit

    def write(self, node: int, blocks: int, now_s: float) -> None:
        """Write-through of blocks [0, blocks) on `node`'s path (what is not there yet)."""
        if self.capacity == 0 or blocks <= 0:
            return
        segments = self.cache.segments(node, blocks)
        self._store([(a, max(self.end[a], lo), hi) for a, lo, hi in segments], now_s)

    def write_node(self, a: int, end: int, now_s: float) -> None:
        """Write-back of node a's blocks up to `end` (what is not there yet)."""
        if self.capacity:
            self._store([(a, max(self.end[a], self.cache.own_start[a]), end)], now_s)

    def _store(self, ranges: list[tuple[int, int, int]], now_s: float) -> None:
        """Copy the (node, first, end) block ranges in if the link is idle and they fit (room is
        made by evicting other nodes, least recently written first, tail first)."""
        new = [(a, lo, hi) for a, lo, hi in ranges if hi > lo]
        count = sum(hi - lo for _, lo, hi in new)
        if not count:
            return
        own = self.cache.own_start
        writing = {a for a, _, _ in new}
        evictable = self.used - sum(self.end[a] - own[a] for a in writing)
        if self.busy_until > now_s or self.used + count - evictable > self.capacity:
            self.skipped += 1
            return
        duration = self.spec.latency_s + count * self.block_bytes / self.spec.write_bytes_per_s
        self.busy_until = now_s + duration
        self.busy_s += duration
        self.written_bytes += count * self.block_bytes
        self._make_room(count, writing)
        for a, _, hi in reversed(new):
            self.end[a] = hi
            self._seq += 1
            self._stamp[a] = self._seq
            heapq.heappush(self._heap, (now_s, self._seq, a))
        self.used += count

    def _make_room(self, count: int, keep: set[int]) -> None:
        """Evict until `count` more blocks fit, never from the nodes in `keep`."""
        heap, own = self._heap, self.cache.own_start
        kept: list[tuple[float, int, int]] = []
        while self.used + count > self.capacity and heap:
            entry = heap[0]
            _, s, a = entry
            spare = self.end[a] - own[a]
            if s != self._stamp[a] or spare <= 0:
                heapq.heappop(heap)
                continue
            if a in keep:
                kept.append(heapq.heappop(heap))
                continue
            take = min(spare, self.used + count - self.capacity)
            self.end[a] -= take
            self.used -= take
            if take == spare:
                heapq.heappop(heap)
        for entry in kept:
            heapq.heappush(heap, entry)

    def load_s(self, blocks: int) -> float:
        """Time to read `blocks` blocks from this tier."""
        return self.spec.latency_s + blocks * self.block_bytes / self.spec.read_bytes_per_s

    def record(self) -> TierRecord:
        return TierRecord(
            self.spec.name, self.hit_tokens, self.read_bytes, self.written_bytes, self.busy_s,
            self.saved_s, self.skipped,
        )  # fmt: skip


class KVTiers:
    """The offload tiers of one replica (fastest first) over its prefix cache's content."""

    def __init__(
        self,
        specs: tuple[KVTier, ...],
        cache: PrefixCache,
        *,
        kv_bytes_per_token: float,
        recompute_s_per_token: float,
        write_back: bool = False,
    ) -> None:
        self.write_back = write_back
        block_bytes = kv_bytes_per_token * cache.block_size
        self.tiers = [_Tier(spec, cache, block_bytes) for spec in specs]
        self.cache = cache
        self.recompute_s_per_token = recompute_s_per_token

    def plan(self, node: int, gpu_hit: int, limit: int) -> tuple[int, float]:
        """(blocks reachable from the tiers past the GPU hit, load time) for a lookup of up to
        `limit` blocks: each tier serves what it holds past what faster tiers hold, and the load
        is used only if it beats recomputing those tokens."""
        reach, load_s, start = gpu_hit, 0.0, gpu_hit
        for tier in self.tiers:
            end = tier.reach(node, limit, start)
            if end > start:
                load_s += tier.load_s(end - start)
                start = reach = end
        if reach == gpu_hit:
            return gpu_hit, 0.0
        tokens = (reach - gpu_hit) * self.cache.block_size
        if load_s >= tokens * self.recompute_s_per_token:
            return gpu_hit, 0.0
        return reach, load_s

    def load(self, node: int, gpu_hit: int, reach: int, now_s: float) -> float:
        """Load blocks [gpu_hit, reach) (as `plan` found them); returns the time it takes."""
        total, start = 0.0, gpu_hit
        size = self.cache.block_size
        for tier in self.tiers:
            end = min(tier.reach(node, reach, start), reach)
            if end <= start:
                continue
            blocks = end - start
            duration = tier.load_s(blocks)
            tier.busy_until = max(tier.busy_until, now_s) + duration
            tier.busy_s += duration
            tier.read_bytes += blocks * tier.block_bytes
            tier.hit_tokens += blocks * size
            tier.saved_s += blocks * size * self.recompute_s_per_token - duration
            total += duration
            start = end
        return total

    def write(self, node: int, blocks: int, now_s: float) -> None:
        """Write-through of a released request's full blocks to every tier."""
        if not self.write_back:
            for tier in self.tiers:
                tier.write(node, blocks, now_s)

    def evicted(self, a: int, end: int, now_s: float) -> None:
        """HBM is evicting node a's tail (cached up to `end`): write-back copies it out."""
        if self.write_back:
            for tier in self.tiers:
                tier.write_node(a, end, now_s)

    def records(self) -> tuple[TierRecord, ...]:
        """Each tier's figures so far."""
        return tuple(t.record() for t in self.tiers)
