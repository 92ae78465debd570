"""What reuse is worth at the user's workload: prefix caching on vs off, and what each host-memory
offload size buys, with a recommended size and the engine flags that turn them on.

Every figure is a simulation of the recommended layout at its admission cap (per replica):
- caching off and on (the engine's prefix cache in HBM only);
- offload sizes per replica from OFFLOAD_START_BYTES doubling up to the host DRAM of the
  replica's GPUs (the hardware file's `host_dram_tb_per_node` shared by its GPUs), caching on.
Where no two requests share content and the caching-off run preempts nothing, no run can hit,
and the others are that run (`content_is_private`): it alone is simulated.
Recommended size (a named rule, not a fit): offload pays when the best size raises the total hit
rate (HBM + offload tiers) by at least MIN_HIT_GAIN or cuts TTFT p99 by more than
OFFLOAD_TOLERANCE against no offload; then the smallest size that reaches HIT_GAIN_SHARE of the
best size's hit-rate gain with a TTFT p99 within OFFLOAD_TOLERANCE of the best size's.

Flags: vLLM `--enable-prefix-caching` / `--no-enable-prefix-caching` and
`--kv-offloading-backend native --kv-offloading-size GiB` (the total over the replica's ranks,
vllm/config/cache.py `kv_offloading_size`); SGLang `--disable-radix-cache` and
`--enable-hierarchical-cache --hicache-size GB` (per rank, python/sglang/srt/server_args.py).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import replace
from functools import partial

from pydantic import BaseModel, ConfigDict

from capcliff.analysis.deployment import Deployment
from capcliff.analysis.offload import offload_tiers, parse_offload
from capcliff.analysis.plan.runs import SimRuns
from capcliff.memory.budget import EngineName
from capcliff.memory.layout_memory import LayoutMemory
from capcliff.sim.config import PREFIX_CACHING_POLICIES, SimConfig
from capcliff.sim.result import SimResult
from capcliff.sim.reuse.prefix_reuse import content_is_private
from capcliff.sim.simulate import simulate
from capcliff.sim.traffic.workload import Requests
from capcliff.units import GB, GIB

OFFLOAD_START_BYTES = 64 * GIB  # per replica, the smallest size tried
OFFLOAD_TOLERANCE = 0.10  # sizes within 10 % of the best TTFT p99 count as equally good
MIN_HIT_GAIN = 0.05  # 5 points of hit rate: less is not worth host memory
HIT_GAIN_SHARE = 0.95  # a size that reaches 95 % of the best size's hit-rate gain is enough


class ReusePoint(BaseModel):
    """One simulation of the recommended layout."""

    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)

    label: str  # "caching off", "caching on", "offload 256 GiB"
    offload_bytes: int  # per replica
    prefix_cache_hit_rate: float | None  # in HBM, token-weighted
    offload_hit_rate: float  # tokens loaded from offload tiers / tokens looked up
    ttft_p99_s: float
    output_throughput_tok_s: float
    preemptions: int


class ReuseAdvice(BaseModel):
    """Prefix caching and offload at the user's workload, on the recommended layout."""

    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)

    points: list[ReusePoint]
    recommended_offload_bytes: int  # 0: no offload
    flags: list[str]  # engine flags for the recommended choice
    hit_rate_without: float  # total hit rate with caching on, no offload
    hit_rate_with: float  # ... with the recommended size (= without when none)
    ttft_p99_change: float  # recommended size's TTFT p99 / no offload's - 1


def whole_run_ttft_p99(r: SimResult) -> float:
    """TTFT p99 over every request of the run (s)."""
    return float(r.ttft.p99)


def steady_ttft_p99(r: SimResult, *, open_loop: bool) -> float:
    """TTFT p99 of the steady state (s), warm-up and drain left out as the online plan measures
    it (`steady_state`): a session load's users all send their first turn at t = 0, a burst
    with nothing cached, and over a whole run of REUSE_REQUESTS those first turns are the p99.
    2026-12-07, h-user: Qwen3-32B tp2 on 2 x H200, multiturn-chat, 64 users: TTFT p99 1.117 s
    with caching off and on alike, the first wave's; past 120 s 0.800 s off, 0.252 s on."""
    from capcliff.analysis.evaluate.steady_state import steady_state

    return steady_state(r, open_loop=open_loop).ttft_p99_s


def _point(
    label: str, offload: int, r: SimResult, ttft_p99: Callable[[SimResult], float] | None = None
) -> ReusePoint:
    tiers = r.reuse.tiers if r.reuse is not None else ()
    queried = r.reuse.queried_tokens if r.reuse is not None else 0
    loaded = sum(t.hit_tokens for t in tiers)
    return ReusePoint(
        label=label,
        offload_bytes=offload,
        prefix_cache_hit_rate=r.prefix_cache_hit_rate,
        offload_hit_rate=loaded / queried if queried else 0.0,
        ttft_p99_s=p99 if math.isfinite(p99 := (ttft_p99 or whole_run_ttft_p99)(r)) else 0.0,
        output_throughput_tok_s=r.output_tokens_per_s,
        preemptions=r.total_preemptions,
    )


def _unhit_point(
    label: str, offload: int, off: SimResult, ttft_p99: Callable[[SimResult], float] | None = None
) -> ReusePoint:
    """The point of a run with caching on that hit nothing and took `off`'s steps: `off`'s
    figures with hit rates of 0 (no lookup hit, in HBM or in a tier)."""
    return _point(label, offload, off, ttft_p99).model_copy(
        update={"prefix_cache_hit_rate": 0.0, "offload_hit_rate": 0.0}
    )


def offload_sizes(dep: Deployment, memory: LayoutMemory) -> list[int]:
    """Sizes per replica to try: 64 GiB doubling while within the replica's host DRAM, and the
    host tier `--offload` gives (the deployment simulated and printed), ascending; none on vLLM
    V0, which has no KV offloading flag (`--kv-offloading-size` is V1's, vLLM 0.11).
    (2026-12-07, h-user2: Llama-3.3-70B FP8 on tp2 with --offload cpu:400GiB listed 64, 128 and
    256 GiB, not the 400 GiB its engine lines carried.)"""
    if dep.settings.engine is EngineName.VLLM_V0:
        return []
    layout = memory.layout
    gpus = max(1, layout.gpus // layout.dp)
    host = dep.hardware.host_dram_bytes_per_gpu * gpus
    sizes, size = [], OFFLOAD_START_BYTES
    while size <= host:
        sizes.append(size)
        size *= 2
    given = parse_offload(dep.settings.offload).get("cpu", 0) if dep.settings.offload else 0
    if 0 < given <= host:
        sizes.append(given)
    return sorted(set(sizes))


def given_offload_note(dep: Deployment, advice: ReuseAdvice | None) -> list[str]:
    """When the `--offload` given (its host tier, the one the advice sizes) is not the size the
    advice recommends: said beside the engine lines, which state the deployment simulated with
    the size given (2026-12-07, h-user: Qwen3-32B multiturn-chat with --offload cpu:256GiB
    printed "recommended host offload: none (it would not pay)" above a vLLM line with
    --kv-offloading-size 256 and an SGLang line with --hicache-size 137, unremarked)."""
    if advice is None or dep.settings.offload is None:
        return []
    given = parse_offload(dep.settings.offload).get("cpu", 0)
    if given == advice.recommended_offload_bytes:
        return []
    pick = advice.recommended_offload_bytes
    size = f"{pick / GIB:.0f} GiB" if pick else "none"
    return [
        f"--offload: the engine lines carry the cpu tier given ({given / GIB:.0f} GiB per "
        f"replica), the deployment simulated; the reuse advice recommends {size}"
    ]


def total_hit_rate(p: ReusePoint) -> float:
    """Tokens served from HBM or an offload tier / tokens looked up."""
    return (p.prefix_cache_hit_rate or 0.0) + p.offload_hit_rate


def recommended_size(points: list[ReusePoint]) -> int:
    """The offload size the module docstring's rule picks (0: none)."""
    base = next(p for p in points if p.label == "caching on")
    sized = [p for p in points if p.offload_bytes]
    if not sized:
        return 0
    best_hit = max(total_hit_rate(p) for p in sized)
    best_ttft = min(p.ttft_p99_s for p in sized)
    gain = best_hit - total_hit_rate(base)
    if gain < MIN_HIT_GAIN and best_ttft >= base.ttft_p99_s * (1 - OFFLOAD_TOLERANCE):
        return 0
    good = [
        p
        for p in sized
        if total_hit_rate(p) - total_hit_rate(base) >= HIT_GAIN_SHARE * gain
        and p.ttft_p99_s <= best_ttft * (1 + OFFLOAD_TOLERANCE)
    ]
    return min(good, key=lambda p: p.offload_bytes).offload_bytes


def reuse_flags(engine: EngineName, offload_bytes: int, tp_ranks: int) -> list[str]:
    """The engine flags for prefix caching on and `offload_bytes` of host offload per replica."""
    if engine is EngineName.SGLANG:
        flags = []  # the radix cache is on unless --disable-radix-cache
        if offload_bytes:
            per_rank = offload_bytes / tp_ranks / GB
            flags += ["--enable-hierarchical-cache", f"--hicache-size {per_rank:.0f}"]
        return flags
    flags = ["--enable-prefix-caching"]
    if offload_bytes:
        size = offload_bytes / GIB
        flags += ["--kv-offloading-backend native", f"--kv-offloading-size {size:.0f}"]
    return flags


def reuse_advice(
    dep: Deployment,
    memory: LayoutMemory,
    requests: Requests,
    config: SimConfig,
    runs: SimRuns | None = None,
    steady: bool = False,
) -> ReuseAdvice | None:
    """Caching off / on and each offload size on `memory`'s layout; None where the workload shares
    no content or the policy has no modelled prefix cache. `runs`: the plan's runs so far.
    `steady`: TTFT p99 of each run's steady state (an online load), else of the whole run."""
    from capcliff.analysis.evaluate.replica_models import replica_models

    if not requests.has_content or config.policy not in PREFIX_CACHING_POLICIES:
        return None
    capacity, model = replica_models(dep, memory)
    capacity = replace(capacity, tiers=())
    dp = memory.layout.dp

    def run(caching: bool, offload: int) -> SimResult:
        tiers = offload_tiers(
            {"cpu": offload}, dep.hardware, gpus_per_replica=max(1, memory.layout.gpus // dp),
            kv_bytes_per_token_per_gpu=memory.kv_bytes_per_token_per_gpu,
        ) if offload else ()  # fmt: skip
        cap = replace(capacity, tiers=tiers)
        sim = simulate if runs is None else runs.simulate
        return sim(requests, model, cap, replace(config, prefix_caching=caching), dp=dp)

    ttft: Callable[[SimResult], float] | None = None
    if steady:
        ttft = partial(steady_ttft_p99, open_loop=not requests.closed_loop)
    off = run(False, 0)
    sizes = [(f"offload {size / GIB:.0f} GiB", size) for size in offload_sizes(dep, memory)]
    if off.total_preemptions == 0 and content_is_private(requests):
        # nothing to hit: every run is the caching-off one (`content_is_private`)
        unhit = [
            _unhit_point(label, size, off, ttft) for label, size in [("caching on", 0), *sizes]
        ]
        points = [_point("caching off", 0, off, ttft), *unhit]
    else:
        points = [_point("caching off", 0, off, ttft), _point("caching on", 0, run(True, 0), ttft)]
        points += [_point(label, size, run(True, size), ttft) for label, size in sizes]
    size = recommended_size(points)
    tp_ranks = max(1, memory.layout.gpus // dp)
    base = points[1]
    chosen = next((p for p in points if size and p.offload_bytes == size), base)
    return ReuseAdvice(
        points=points,
        recommended_offload_bytes=size,
        flags=reuse_flags(dep.settings.engine, size, tp_ranks),
        hit_rate_without=total_hit_rate(base),
        hit_rate_with=total_hit_rate(chosen),
        ttft_p99_change=chosen.ttft_p99_s / base.ttft_p99_s - 1 if base.ttft_p99_s else 0.0,
    )
