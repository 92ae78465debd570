"""vLLM V1's prefix cache where requests share nothing: a preempted request's own blocks stay
cached until later allocations reuse them, so its recompute skips what is left.

What vLLM does (vLLM V1, prefix caching on by default: vllm/engine/arg_utils.py
`_set_default_args_v1`):
- `Scheduler._preempt_request` (vllm/v1/core/sched/scheduler.py) calls `kv_cache_manager.free`
  and sets `num_computed_tokens = 0`; `SingleTypeKVCacheManager.free`
  (vllm/v1/core/single_type_kv_cache_manager.py) hands the request's blocks to
  `BlockPool.free_blocks` in reverse (`reversed(req_blocks)`: "tail blocks are freed first"),
  which appends them to the free queue's tail with their hashes kept.
- `BlockPool.get_new_blocks` pops blocks from the free queue's head (`popleft_n`) and only then
  drops a popped block's hash (`_maybe_evict_cached_block`): eviction is lazy, least recently
  freed first, and a request's last blocks before its first.
- When the request is scheduled again, `KVCacheManager.get_computed_blocks` finds the longest run
  of its blocks still cached, at most (tokens - 1) // B (`max_cache_hit_length =
  request.num_tokens - 1`), and `allocate_slots` takes them back out of the free queue
  (`touch`): they count against the free blocks like new ones, but need no compute.

The model: the free queue's cached blocks as a FIFO of segments, one per release: a preempted
request's full blocks (its own, the only ones a later lookup can hit when nothing is shared) or a
finished request's (cached, never hit, but ahead of later releases in the LRU order). Allocation is
lazy: whenever the free count drops below the cached blocks, the difference is popped from the head
(`settle`), before each release (its partial block is free but not cached) and before each lookup;
allocations only ever take the oldest blocks, so it is exact. Blocks that never held a hash (a
request's partial last block, blocks whose hash was dropped) are used before cached ones, as
`capcliff.sim.reuse.prefix_cache` models the general cache, so the two give the same runs on a
workload that shares nothing (tests/test_sim_retained.py).
"""

from __future__ import annotations

from collections import deque

_DEAD = -1  # a segment no lookup can hit (a finished request's blocks, or a hit's leftovers)


class RetainedKV:
    """The cached blocks in one replica's free queue, by release (see the module docstring)."""

    __slots__ = ("_queue", "_segment", "block_size", "cached")

    def __init__(self, block_size: int) -> None:
        self.block_size = block_size
        self._queue: deque[list[int]] = deque()  # [owner, blocks], least recently freed first
        self._segment: dict[int, list[int]] = {}  # preempted request -> its segment
        self.cached = 0  # cached blocks in the free queue (they count as free)

    def preempted(self, i: int, context_tokens: int, free: int) -> None:
        """Request i gave up `context_tokens` tokens of KV with `free` blocks free before: its
        full blocks join the queue's tail."""
        self.settle(free)
        full = context_tokens // self.block_size
        seg = [i, full]
        if not self._segment:  # the queue so far: blocks no lookup can hit, in any order
            self._queue = deque([[_DEAD, self.cached]] if self.cached else [])
        self._queue.append(seg)
        self._segment[i] = seg
        self.cached += full

    def finished(self, context_tokens: int, free: int) -> None:
        """A request that held `context_tokens` tokens finished with `free` blocks free before:
        its full blocks join the tail (only counted while no preempted request's blocks are
        queued: the order of blocks no lookup can hit does not matter until then)."""
        full = context_tokens // self.block_size
        if not self._segment:
            self.cached = (self.cached if self.cached < free else free) + full
            return
        self.settle(free)
        self.cached += full
        queue = self._queue
        if queue and queue[-1][0] == _DEAD:
            queue[-1][1] += full
        else:
            queue.append([_DEAD, full])

    def settle(self, free: int) -> None:
        """Evict the oldest cached blocks until they fit in `free` free blocks."""
        over = self.cached - free
        if over <= 0:
            return
        self.cached = free
        if not self._segment:  # nothing a lookup can hit: the queue is rebuilt when needed
            return
        queue = self._queue
        while over > 0:
            seg = queue[0]
            take = seg[1] if seg[1] <= over else over
            seg[1] -= take
            over -= take
            if seg[1] == 0:
                queue.popleft()

    def hit_blocks(self, i: int, tokens: int, free: int) -> int:
        """Blocks of request i (with `tokens` to prefill) still cached once the queue is settled
        to `free` free blocks, at most (tokens - 1) // B; changes nothing."""
        seg = self._segment.get(i)
        if seg is None or seg[1] == 0:
            return 0
        behind = 0
        for other in reversed(self._queue):  # the blocks freed after it are evicted after it
            if other is seg:
                break
            behind += other[1]
        kept = min(free, self.cached) - behind
        left = seg[1] if seg[1] < kept else kept
        limit = (tokens - 1) // self.block_size
        return max(0, left if left < limit else limit)

    def take(self, i: int, hit: int, free: int) -> None:
        """Request i is admitted with `free` blocks free before its allocation and reuses `hit`
        of its cached blocks (`hit_blocks`); the rest of its segment stays cached, never hit."""
        seg = self._segment.pop(i, None)
        if seg is None:
            return
        self.settle(free)
        seg[0] = _DEAD
        seg[1] -= hit
        self.cached -= hit
