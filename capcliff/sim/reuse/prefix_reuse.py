"""A replica's use of its prefix cache: what a waiting request hits, what admission takes, what a
finish or a preemption gives back, and the hit-rate record.

Block accounting with caching (vllm/v1/core/block_pool.py, `get_num_free_blocks` counts the free
queue, cached blocks included): free = never-hashed free blocks + cached blocks no running
request references. A request that hits h blocks takes the unreferenced ones among them out of
the free count (vLLM's `num_evictable_computed_blocks` in `allocate_slots`) and allocates only
blocks past them; when it stops it gives back its own blocks (which join the cache) and drops its
references. Whenever allocation has left fewer free blocks than cached unreferenced ones, the
difference is evicted (`settle`), in the cache's LRU order, before anything else happens.

What each engine keeps when it gives a request up (where the engine does so):
- vLLM V1 `_preempt_request` (vllm/v1/core/sched/scheduler.py) calls `kv_cache_manager.free`:
  every full block stays cached, so the request's recompute hits what was not evicted since.
- SGLang `retract_decode` (python/sglang/srt/managers/schedule_batch.py) frees the tokens past
  what `cache_unfinished_req` had put in the radix tree (the prefill) and unlocks the rest.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

from capcliff.perf.step_time import StepTimeModel
from capcliff.sim.reuse.kv_tiers import KVTier, KVTiers, TierRecord
from capcliff.sim.reuse.prefix_cache import PrefixCache
from capcliff.sim.traffic.workload import Requests

if TYPE_CHECKING:  # types only: config imports this package's tiers
    from capcliff.sim.config import KVCapacity, SimConfig
    from capcliff.sim.policies import Candidate, Policy

FloatArray = npt.NDArray[np.float64]


@dataclass(frozen=True)
class ReuseRecord:
    """A replica's prefix-cache figures. Token-weighted: hit / queried tokens, where a lookup
    queries the whole prompt (+ generated tokens after a preemption), as vLLM's
    `PrefixCacheStats` counts `queries` and `hits`. `queried_tokens` and `hit_tokens` count every
    lookup (the prefill they save); the hit rate, as vLLM reports it, counts only requests never
    preempted: `PrefixCacheStats.record(num_tokens, num_hits, preempted)`
    (vllm/v1/metrics/stats.py) puts a preempted request's lookup in `preempted_queries` and
    `preempted_hits`, which `vllm:prefix_cache_queries` and `vllm:prefix_cache_hits` leave out.
    A resumed request mostly hits its own blocks, freed a step before, so counting it would
    report hits past the cliff that no new request gets."""

    queried_tokens: int
    hit_tokens: int
    evicted_blocks: int
    lookup_s: FloatArray  # admission time of each lookup
    lookup_queried: FloatArray
    lookup_hit: FloatArray
    tiers: tuple[TierRecord, ...] = ()
    resumed_queried_tokens: int = 0  # lookups of requests preempted before (in the totals)
    resumed_hit_tokens: int = 0
    lookup_resumed: npt.NDArray[np.bool_] = field(default_factory=lambda: np.zeros(0, dtype=bool))

    @property
    def hit_rate(self) -> float:
        """Hit tokens / queried tokens of requests never preempted (0 when none looked up)."""
        queried = self.queried_tokens - self.resumed_queried_tokens
        return (self.hit_tokens - self.resumed_hit_tokens) / queried if queried else 0.0


class PrefixReuse:
    """The prefix cache of one replica and the per-request state that goes with it."""

    def __init__(
        self,
        requests: Requests,
        block_size: int,
        *,
        radix: bool,
        tiers: tuple[KVTier, ...] = (),
        kv_bytes_per_token: float = 0.0,
        recompute_s_per_token: float = 0.0,
        write_back: bool = False,
    ) -> None:
        n = len(requests)
        if requests.has_content:
            parent = requests.content_parent.tolist()
            fork = requests.content_fork_tokens.tolist()
            self.node = requests.content_node.tolist()
        else:  # nothing shared: each request is its own content (a preempted one re-hits itself)
            parent, fork, self.node = [-1] * n, [0] * n, list(range(n))
        self.cache = PrefixCache(parent, fork, block_size, whole_tail=radix)
        self.tiers = (
            KVTiers(
                tiers, self.cache, kv_bytes_per_token=kv_bytes_per_token,
                recompute_s_per_token=recompute_s_per_token, write_back=write_back,
            )
            if tiers
            else None
        )  # fmt: skip
        self.now_s = 0.0
        if self.tiers is not None and write_back:
            self.cache.on_evict = self._evicting
        self.load_s = 0.0  # loads from the tiers of the step being built
        self._memo_key: tuple[int, int, int] = (-1, -1, -1)
        self._memo = (0, 0, 0)
        self.radix = radix
        self.block_size = block_size
        self.shared = [0] * n  # cached blocks a running request references (its hit)
        self.prefilled = [0] * n  # prompt + generated at its admission (SGLang keeps these)
        self.queried = self.hit_tokens = self.resumed_queried = self.resumed_hit = 0
        self._samples: tuple[list[float], list[float], list[float]] = ([], [], [])
        self._resumed: list[bool] = []

    def settle(self, free: int, now_s: float) -> None:
        """Evict until the cached unreferenced blocks fit in the `free` count (at `now_s`)."""
        cache = self.cache
        if free < cache.unreferenced:
            self.now_s = now_s
            cache.evict(cache.unreferenced - free)

    def _evicting(self, node: int, end: int) -> None:
        assert self.tiers is not None
        self.tiers.evicted(node, end, self.now_s)

    def lookup(self, i: int, tokens: int) -> tuple[int, int, int]:
        """(blocks of KV it need not compute, blocks hit in HBM, of which unreferenced) for
        request i with `tokens` tokens to prefill; blocks past the HBM hit come from the
        offload tiers."""
        key = (i, tokens, self.cache.version)
        if key == self._memo_key:  # the head of the queue, asked again with nothing changed
            return self._memo
        node = self.node[i]
        hit, revive = self.cache.lookup_revivable(node, tokens)
        reach = hit
        if self.tiers is not None:
            reach = self.tiers.plan(node, hit, (tokens - 1) // self.block_size)[0]
        self._memo_key, self._memo = key, (reach, hit, revive)
        return reach, hit, revive

    def admit(self, i: int, tokens: int, now_s: float, *, resumed: bool = False) -> tuple[int, int]:
        """Request i starts with what `lookup` found for its `tokens`: references its HBM hit
        and loads the rest of its reach from the tiers (time added to `load_s`). `resumed`: it
        was preempted before (its lookup is counted apart, as vLLM counts it). Returns (blocks
        hit in HBM, of which unreferenced)."""
        reach, hit_blocks, _ = self.lookup(i, tokens)
        if reach > hit_blocks and self.tiers is not None:
            self.load_s += self.tiers.load(self.node[i], hit_blocks, reach, now_s)
        self.shared[i], self.prefilled[i] = hit_blocks, tokens
        hit_tokens = hit_blocks * self.block_size
        self.queried += tokens
        self.hit_tokens += hit_tokens
        if resumed:
            self.resumed_queried += tokens
            self.resumed_hit += hit_tokens
        times, queried, hit = self._samples
        times.append(now_s)
        queried.append(tokens)
        hit.append(hit_tokens)
        self._resumed.append(resumed)
        revived = self.cache.acquire(self.node[i], hit_blocks) if hit_blocks else 0
        return hit_blocks, revived

    def take_load_s(self) -> float:
        """The time of the loads from offload tiers of the step being built (then 0)."""
        taken, self.load_s = self.load_s, 0.0
        return taken

    def held_blocks(
        self, i: int, cand: Candidate, blocks: int, now_s: float, *, resumed: bool = False
    ) -> int:
        """Admit request i (`admit`) as `cand`, which allocated `blocks`: the blocks it holds in
        all, its hit among them (blocks it revived were not allocated for it)."""
        tokens = cand.prefill_tokens + cand.cached_tokens
        hit, revived = self.admit(i, tokens, now_s, resumed=resumed)
        return blocks - revived + hit

    def freed_blocks(
        self, i: int, held: int, context_tokens: int, now_s: float, *, finished: bool
    ) -> int:
        """Request i, holding `held` blocks in all, stops (`release`): the blocks that become
        free (its own, and shared ones whose last reference it held)."""
        shared = self.shared[i]
        return held - shared + self.release(i, context_tokens, now_s, finished=finished)

    def release(self, i: int, context_tokens: int, now_s: float, *, finished: bool) -> int:
        """Request i stops holding `context_tokens` tokens of KV (finished or preempted): its
        full blocks join the cache (SGLang keeps only its prefill when it retracts). Returns
        the cached blocks whose last reference this dropped; its own blocks past its hit come
        back to the caller's free count as before."""
        keep = context_tokens
        if self.radix and not finished:
            keep = min(keep, self.prefilled[i])
        hit, self.shared[i] = self.shared[i], 0
        if self.tiers is not None:
            self.tiers.write(self.node[i], keep // self.block_size, now_s)
        return self.cache.release(self.node[i], hit, keep // self.block_size, now_s)

    def record(self) -> ReuseRecord:
        """The figures so far."""
        times, queried, hit = (np.asarray(s, dtype=np.float64) for s in self._samples)
        tiers = () if self.tiers is None else self.tiers.records()
        return ReuseRecord(
            self.queried, self.hit_tokens, self.cache.evicted_blocks, times, queried, hit, tiers,
            resumed_queried_tokens=self.resumed_queried, resumed_hit_tokens=self.resumed_hit,
            lookup_resumed=np.asarray(self._resumed, dtype=bool),
        )  # fmt: skip


def content_is_private(requests: Requests) -> bool:
    """Whether no content node lies on two requests' paths (each request's blocks are its own).

    Then a block one request computed can be hit only by that request, and only after it was
    preempted (a finished request is never looked up again): a run without preemptions hits
    nothing, with or without offload tiers (a tier holds only what a release wrote). Until a
    first preemption, a run with the prefix cache on takes the steps of the run with it off: its
    lookups find nothing (`candidate` asks for the blocks of the chunk alone, as without a cache,
    since no prefix-caching policy allocates whole prompts), cached blocks no running request
    references count as free, a finish frees the blocks it held, and a tier's loads and writes
    cost no step time when nothing is loaded. So the first preemption, if any, comes at the same
    step in both, and a run with caching off and no preemption is the run of every cache size
    (tests/test_reuse_private.py checks it bit for bit). Conservative: a shared parent node
    counts even where the fork leaves it no full block."""
    if not requests.has_content:
        return True  # each request is its own content
    node = requests.content_node
    if len(node) and node.min() < 0:
        return False
    parent = requests.content_parent
    paths, level = [], node
    for _ in range(len(parent) + 1):  # a path is no longer than the nodes there are
        if not len(level):
            break
        paths.append(level)
        up = parent[level]
        level = up[up >= 0]
    on_paths = np.concatenate(paths) if paths else node
    return len(np.unique(on_paths)) == len(on_paths)


def replica_reuse(
    requests: Requests,
    capacity: KVCapacity,
    model: StepTimeModel,
    config: SimConfig,
    rule: Policy,
) -> PrefixReuse | None:
    """The prefix cache of a replica (None with caching off): SGLang's is a radix cache; its
    offload tiers are the capacity's; recomputing a token costs the matmul FLOPs per token."""
    if not config.prefix_caching:
        return None
    return PrefixReuse(
        requests, capacity.block_size, radix=rule.name == "sglang", tiers=capacity.tiers,
        kv_bytes_per_token=capacity.kv_bytes_per_token,
        recompute_s_per_token=model.flops_per_token / model.flops_per_s,
        write_back=capacity.offload_write_back,
    )  # fmt: skip


@dataclass(frozen=True)
class ReuseSummary:
    """A deployment's prefix-cache figures (all replicas together)."""

    hit_rate: float  # token-weighted: hit / queried tokens of requests never preempted (vLLM's)
    queried_tokens: int
    prefill_tokens_saved: int  # = hit tokens: prefill compute skipped
    evicted_blocks: int
    time_s: FloatArray  # end of each time bin
    hit_rate_series: FloatArray  # token-weighted hit rate of the lookups in each bin (NaN: none)
    tiers: tuple[TierRecord, ...] = ()  # each offload tier, summed over replicas
    resumed_hit_rate: float | None = None  # the same over lookups of preempted requests
    queried_series: FloatArray = field(default_factory=lambda: np.zeros(0))  # tokens per bin
    resumed_queried_tokens: int = 0  # lookups of preempted requests (in `queried_tokens`)
    resumed_hit_tokens: int = 0

    def hit_rate_between(self, start_s: float, end_s: float = math.inf) -> float | None:
        """Token-weighted hit rate of new requests' lookups in the bins ending in (start, end]
        (None: no lookup there)."""
        inside = (self.time_s > start_s) & (self.time_s <= end_s)
        queried = float(self.queried_series[inside].sum()) if len(self.queried_series) else 0.0
        if queried <= 0:
            return None
        hits = np.nan_to_num(self.hit_rate_series[inside]) * self.queried_series[inside]
        return float(hits.sum()) / queried


def reuse_summary(records: list[ReuseRecord], grid_s: FloatArray) -> ReuseSummary:
    """Sum the replicas' records; the hit rate over time is binned on `grid_s` (bin k holds the
    lookups in (grid[k-1], grid[k]])."""
    queried = sum(r.queried_tokens for r in records)
    hit = sum(r.hit_tokens for r in records)
    resumed_q = sum(r.resumed_queried_tokens for r in records)
    resumed_h = sum(r.resumed_hit_tokens for r in records)
    new = np.concatenate([_new_lookups(r) for r in records])
    times = np.concatenate([r.lookup_s for r in records])[new]
    bins = np.searchsorted(grid_s, times, side="left").clip(0, len(grid_s) - 1)
    q = np.bincount(bins, np.concatenate([r.lookup_queried for r in records])[new], len(grid_s))
    h = np.bincount(bins, np.concatenate([r.lookup_hit for r in records])[new], len(grid_s))
    with np.errstate(divide="ignore", invalid="ignore"):
        series = np.where(q > 0, h / q, np.nan)
    return ReuseSummary(
        hit_rate=(hit - resumed_h) / (queried - resumed_q) if queried > resumed_q else 0.0,
        resumed_hit_rate=resumed_h / resumed_q if resumed_q else None,
        queried_series=q.astype(np.float64),
        resumed_queried_tokens=resumed_q,
        resumed_hit_tokens=resumed_h,
        queried_tokens=queried,
        prefill_tokens_saved=hit,
        evicted_blocks=sum(r.evicted_blocks for r in records),
        time_s=grid_s,
        hit_rate_series=series,
        tiers=_summed_tiers(records),
    )


def _new_lookups(record: ReuseRecord) -> npt.NDArray[np.bool_]:
    """Which of a record's lookups are of requests never preempted (all, in an old record)."""
    if len(record.lookup_resumed) != len(record.lookup_s):
        return np.ones(len(record.lookup_s), dtype=bool)
    return ~record.lookup_resumed


def _summed_tiers(records: list[ReuseRecord]) -> tuple[TierRecord, ...]:
    """Each tier's records summed over replicas (replicas have the same tiers)."""
    if not records or not records[0].tiers:
        return ()
    out = []
    for k, first in enumerate(records[0].tiers):
        parts = [r.tiers[k] for r in records]
        out.append(
            TierRecord(
                first.name,
                sum(p.hit_tokens for p in parts),
                sum(p.read_bytes for p in parts),
                sum(p.written_bytes for p in parts),
                sum(p.busy_s for p in parts),
                sum(p.recompute_saved_s for p in parts),
                sum(p.skipped_writes for p in parts),
            )
        )
    return tuple(out)
