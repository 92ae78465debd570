"""How a point past the cliff fails: queueing, preemption or the prefix cache's loss, and the fix.

Past the cliff (the KV cache filled at least once: `first_saturation`) the engine pays for its
load in one of three ways, each measured on the run:
- queueing: requests wait for KV blocks. Mean waiting requests L (time-weighted over the run's
  even grid, summed over replicas) and, by Little's law, the mean time a request waits
  W = L / throughput; peak waiting is the grid's largest sample;
- preemption: tokens computed again after a recompute preemption. With a prefix cache a resumed
  request re-hits what survived of its blocks, so its cost is its lookup's miss (queried - hit of
  resumed lookups); without one, every token it had;
- prefix-cache loss: prefill the cache saved before the cliff and no longer saves after it:
  (hit rate of new requests before the cliff - after it) x tokens they queried after it.
The two token costs are compared with each other and with the tokens the engine computed in all
(`scheduled_tokens`); when neither reaches DOMINANT_SHARE of them, the engine is simply full and
queueing is what the user sees.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from capcliff.sim.result import SimResult

# A token cost dominates when it is at least this share of the tokens the engine computed (set:
# below it, recomputation or lost hits change throughput by less than the run-to-run spread of a
# steady-state estimate).
DOMINANT_SHARE = 0.10

ADVICE = {
    "queueing": "requests wait for KV blocks while the engine runs full; a lower cap does not "
    "help: add KV (a layout with more KV per replica, FP8 KV) or replicas",
    "preemption": "recomputing preempted requests costs the throughput; lower the cap "
    "(max_num_seqs) to where the KV cache holds the running set, or add KV",
    "prefix-cache loss": "the running set evicts the cached sessions; add KV or a CPU offload "
    "tier (--offload), or lower the cap so cached prefixes survive between turns",
}

# The advice where no lower cap of the sweep does better by its sweet spot's measure (the point is
# at or below the sweet spot): lowering the cap would cost more than the recompute or lost hits do
# (2026-12-07, h-user2: DeepSeek-R1-Distill-Qwen-32B dp4-tp2, 16k answers, 400 requests: the
# sweet spot was 512, 7,305 tok/s with 0.58 preemptions a request, above 5,134 tok/s at 128 where
# the KV cache held the running set, and the line beside it said to lower the cap).
ADVICE_AT_SWEET_SPOT = {
    "preemption": "recomputing preempted requests costs throughput, but no lower cap of this "
    "sweep does better (the sweet spot is at or past this point): keep the cap, or add KV (a "
    "layout with more KV per replica, FP8 KV) to keep its throughput without the recompute",
    "prefix-cache loss": "the running set evicts the cached sessions, but no lower cap of this "
    "sweep does better (the sweet spot is at or past this point): add KV or a CPU offload tier "
    "(--offload) to keep the cached prefixes",
}


class PastCliff(BaseModel):
    """A point past the cliff, as the engine fails there."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    preemptions_per_request: float
    peak_waiting: float  # requests, the largest sample of the run's grid
    mean_waiting: float  # requests, time-weighted
    mean_wait_s: float  # Little's law: mean waiting / requests per s
    kv_blocked_s: float  # the longest any replica refused the head of the queue for KV
    hit_rate: float | None  # new requests, whole run (vLLM's prefix_cache_hits / queries)
    hit_rate_before_cliff: float | None
    hit_rate_after_cliff: float | None
    recompute_share: float  # recomputed tokens / tokens computed
    cache_loss_share: float  # prefill no longer saved past the cliff / tokens computed
    dominant: str  # queueing, preemption or prefix-cache loss
    advice: str

    def statement(self) -> str:
        """One line: what dominates, its figures, and what fixes it."""
        hits = ""
        if self.hit_rate_after_cliff is not None and self.hit_rate_before_cliff is not None:
            hits = f", hit rate {self.hit_rate_before_cliff:.0%} -> {self.hit_rate_after_cliff:.0%}"
        return (
            f"{self.dominant} dominates (waiting mean {self.mean_waiting:,.0f}, peak "
            f"{self.peak_waiting:,.0f}, {self.mean_wait_s:,.1f} s each; "
            f"{self.preemptions_per_request:.2f} preemptions/request, recompute "
            f"{self.recompute_share:.0%}{hits}): {self.advice}"
        )


def past_cliff(r: SimResult) -> PastCliff | None:
    """How `r` fails past the cliff (None: its KV cache never filled)."""
    if r.first_saturation is None:
        return None
    cliff_s = r.first_saturation[1]
    n = max(1, len(r.e2e_s))
    alive = r.series.time_s <= r.makespan_s
    waiting = r.series.waiting[alive] if alive.any() else r.series.waiting
    mean_waiting = float(waiting.mean()) if len(waiting) else 0.0
    rate = r.requests_per_s
    computed = max(1, r.scheduled_tokens)
    reuse = r.reuse
    if reuse is None:
        recompute = r.total_recomputed_tokens
        before = after = whole = None
        lost = 0.0
    else:
        recompute = reuse.resumed_queried_tokens - reuse.resumed_hit_tokens
        whole = reuse.hit_rate
        before, after = reuse.hit_rate_between(0.0, cliff_s), reuse.hit_rate_between(cliff_s)
        queried_after = float(reuse.queried_series[reuse.time_s > cliff_s].sum())
        lost = max(0.0, (before or 0.0) - (after or 0.0)) * queried_after
    recompute_share, loss_share = recompute / computed, lost / computed
    if max(recompute_share, loss_share) < DOMINANT_SHARE:
        dominant = "queueing"
    else:
        dominant = "preemption" if recompute_share >= loss_share else "prefix-cache loss"
    return PastCliff(
        preemptions_per_request=r.total_preemptions / n,
        peak_waiting=float(waiting.max()) if len(waiting) else 0.0,
        mean_waiting=mean_waiting,
        mean_wait_s=mean_waiting / rate if rate > 0 else 0.0,
        kv_blocked_s=r.blocked_s,
        hit_rate=whole,
        hit_rate_before_cliff=before,
        hit_rate_after_cliff=after,
        recompute_share=recompute_share,
        cache_loss_share=loss_share,
        dominant=dominant,
        advice=ADVICE[dominant],
    )


def within_sweet_spot(past: PastCliff) -> PastCliff:
    """`past` at a point no lower cap of its sweep beats (at or below the sweet spot): the advice
    keeps the cap rather than lowering it (ADVICE_AT_SWEET_SPOT; queueing's already does)."""
    advice = ADVICE_AT_SWEET_SPOT.get(past.dominant, past.advice)
    return past.model_copy(update={"advice": advice})
