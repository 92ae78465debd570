"""The prefix cache of a replica, in O(events): cached KV blocks that later requests reuse.

Content model. Tokens are not simulated one by one, so a request's token sequence is named by a
*content node*: node n is a token sequence that equals its parent's first `fork_tokens[n]` tokens
and continues with tokens of its own. A request on node n carries the first `prompt` tokens of n
(a multi-turn session is one node whose turns extend it; a shared system prompt is a parent node;
fan-out branches are child nodes forked at the shared context). Block j of a request (tokens
[jB, (j+1)B)) is owned by the deepest node on its path whose own part begins at or before the
block: node n owns blocks from `fork_tokens[n] // B` on, because a block that straddles a fork
already differs from the parent's (vLLM chains each block's hash on all tokens before it).

State per node: cached blocks are the range [own_start, cached_end) (prefix-closed: an engine
evicts a node's tail first) and the references of running requests cover [own_start, ref_end).
The tail [max(ref_end, own_start), cached_end) is cached but unreferenced: free for admission,
evicted least recently used first. Lookup walks the path from the root (O(depth), a handful of
nodes), so the cost per event does not grow with tokens.

Engine semantics (what differs between the two engines is a flag, `whole_tail`):
- vLLM automatic prefix caching (vllm/v1/core/block_pool.py, vllm/v1/core/kv_cache_manager.py):
  full blocks are hashed; a hit is the longest run of cached full blocks, at most
  (prompt - 1) // B of them (`max_cache_hit_length = request.num_tokens - 1`); freed blocks keep
  their hash in the free queue (`free_blocks` appends them in reverse, tail first) and a block
  is evicted when `get_new_blocks` pops it (`_maybe_evict_cached_block`): exactly the blocks
  needed, least recently freed first.
- SGLang radix cache (python/sglang/srt/mem_cache/radix_cache.py): token- (page-) granular
  matching, capped at input - 1 tokens; `evict(num_tokens)` removes whole least-recently-used
  leaves until enough is free, so it may free more than asked (`whole_tail`).

Simplifications (named): a request's blocks join the cache when it releases them (finish or
preemption), not as they fill, so two concurrent requests do not share blocks computed in the
same interval; LRU age is kept per node (the time its references last dropped), not per block;
free blocks that never held a hash are used before cached ones are evicted.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable


class PrefixCache:
    """Cached KV blocks of one replica, over content nodes (see the module docstring)."""

    def __init__(
        self,
        parent: list[int],
        fork_tokens: list[int],
        block_size: int,
        *,
        whole_tail: bool = False,
    ) -> None:
        if len(parent) != len(fork_tokens):
            raise ValueError("prefix cache: parent and fork_tokens differ in length")
        self.block_size = block_size
        self.whole_tail = whole_tail
        self.parent = parent
        self.own_start = [f // block_size for f in fork_tokens]
        self.cached_end = list(self.own_start)
        self.ref_end = list(self.own_start)
        self.refs: dict[int, dict[int, int]] = {}  # node -> {reach: running requests}
        self.unreferenced = 0  # cached blocks no running request references
        self.in_use = 0  # cached blocks some running request references
        self._paths: dict[int, tuple[int, ...]] = {}
        self._bounds: dict[int, list[tuple[int, int, float]]] = {}
        self.version = 0  # changes whenever what a lookup could see changes
        # called with (node, cached end) before a node's tail is evicted (write-back tiers)
        self.on_evict: Callable[[int, int], None] | None = None
        self._heap: list[tuple[float, int, int]] = []  # (last release, stamp, node)
        self._stamp = [0] * len(parent)
        self._seq = 0
        self.evicted_blocks = 0

    # --- content paths ----------------------------------------------------------------------
    def path(self, node: int) -> tuple[int, ...]:
        """Nodes from the root down to `node`."""
        found = self._paths.get(node)
        if found is None:
            chain = [node]
            while (up := self.parent[chain[-1]]) >= 0:
                chain.append(up)
            found = tuple(reversed(chain))
            self._paths[node] = found
        return found

    def segments(self, node: int, limit: int) -> list[tuple[int, int, int]]:
        """(node, first block, end block) of each node's share of blocks [0, limit)."""
        if self.parent[node] < 0:  # a root owns every block from its start (the loop's one pass)
            lo = self.own_start[node]
            return [(node, lo, limit)] if limit > lo else []
        bounds = self._bounds.get(node)
        if bounds is None:
            path, own = self.path(node), self.own_start
            ends = [float(own[b]) for b in path[1:]] + [float("inf")]
            bounds = self._bounds[node] = [(a, own[a], e) for a, e in zip(path, ends, strict=True)]
        out = []
        for a, lo, end in bounds:
            hi = limit if end >= limit else int(end)
            if hi > lo:
                out.append((a, lo, hi))
            if hi >= limit:
                break
        return out

    # --- requests ---------------------------------------------------------------------------
    def lookup(self, node: int, prompt_tokens: int) -> int:
        """Blocks of a request on `node` with `prompt_tokens` tokens that hit: the longest run of
        cached blocks from block 0, at most (prompt_tokens - 1) // B (the last token is always
        computed, to get its logits)."""
        limit = (prompt_tokens - 1) // self.block_size
        cached = self.cached_end
        hit = 0
        for a, _, hi in self.segments(node, limit):
            if cached[a] < hi:
                return cached[a]
            hit = hi
        return hit

    def lookup_revivable(self, node: int, prompt_tokens: int) -> tuple[int, int]:
        """(`lookup`, and how many of those hit blocks no running request references: taking them
        takes them out of the free count) in one walk of the path, blocks."""
        limit = (prompt_tokens - 1) // self.block_size
        cached, ref = self.cached_end, self.ref_end
        hit = revive = 0
        for a, lo, hi in self.segments(node, limit):
            end = cached[a] if cached[a] < hi else hi
            if end > lo:
                revive += max(0, end - max(ref[a], lo))
            hit = end
            if end < hi:
                break
        return hit, revive

    def acquire(self, node: int, hit_blocks: int) -> int:
        """A request on `node` starts using its `hit_blocks` cached blocks; returns how many of
        them were unreferenced (they stop counting as free)."""
        revived = 0
        for a, lo, hi in self.segments(node, hit_blocks):
            refs = self.refs.setdefault(a, {})
            refs[hi] = refs.get(hi, 0) + 1
            old = self.ref_end[a]
            if hi > old:
                self.ref_end[a] = hi
                revived += hi - max(old, lo)
        self.unreferenced -= revived
        self.in_use += revived
        self.version += 1
        return revived

    def release(self, node: int, hit_blocks: int, publish_blocks: int, now_s: float) -> int:
        """A request on `node` that hit `hit_blocks` blocks stops running; its own full blocks
        [hit_blocks, publish_blocks) join the cache. Returns the cached blocks whose last
        reference this dropped (they become free, still cached)."""
        dropped = 0
        end = max(hit_blocks, publish_blocks)
        segments = self.segments(node, end)
        for a, lo, hi in segments:
            if hit_blocks > lo:  # this node held a reference
                dropped += self._unref(a, lo, min(hi, hit_blocks))
            start = max(lo, hit_blocks)
            if hi > start and hi > self.cached_end[a]:
                # contiguous: cached_end >= start (references protect the hit part)
                self.unreferenced += hi - max(self.cached_end[a], start)
                self.cached_end[a] = hi
        for a, _, _ in reversed(segments):  # the deepest is the older: evicted first (tail first)
            self._touch(a, now_s)
        self.unreferenced += dropped
        self.in_use -= dropped
        self.version += 1
        return dropped

    def _unref(self, a: int, lo: int, reach: int) -> int:
        refs = self.refs[a]
        left = refs[reach] - 1
        if left:
            refs[reach] = left
            return 0
        del refs[reach]
        old = self.ref_end[a]
        if reach < old:
            return 0
        new = max(refs) if refs else lo
        self.ref_end[a] = new
        return old - max(new, lo)

    def _touch(self, a: int, now_s: float) -> None:
        self._seq += 1
        self._stamp[a] = self._seq
        heapq.heappush(self._heap, (now_s, self._seq, a))

    # --- pressure ---------------------------------------------------------------------------
    def evict(self, blocks: int) -> int:
        """Evict at least `blocks` unreferenced blocks, least recently released node first, each
        node's tail first (whole tails with `whole_tail`). Returns how many were evicted."""
        evicted = 0
        heap, stamp, own, ref, cached = (
            self._heap,
            self._stamp,
            self.own_start,
            self.ref_end,
            self.cached_end,
        )
        while evicted < blocks and heap:
            _, s, a = heap[0]
            if s != stamp[a]:
                heapq.heappop(heap)
                continue
            spare = cached[a] - max(ref[a], own[a])
            if spare <= 0:
                heapq.heappop(heap)
                continue
            take = spare if self.whole_tail else min(spare, blocks - evicted)
            if self.on_evict is not None:
                self.on_evict(a, cached[a])
            cached[a] -= take
            evicted += take
            if take == spare:
                heapq.heappop(heap)
        self.unreferenced -= evicted
        self.evicted_blocks += evicted
        self.version += evicted > 0
        return evicted
