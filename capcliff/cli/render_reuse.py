"""Text for reuse: what prefix caching and host offload are worth (batch and online plans)."""

from __future__ import annotations

from capcliff.analysis.plan.types import PlanReport


def reuse_lines(report: PlanReport) -> list[str]:
    """What prefix caching and host offload are worth at this workload."""
    advice = report.reuse
    if advice is None:
        return []
    ttft = "TTFT p99 of the steady state" if report.mode == "online" else "TTFT p99"
    lines = [f"Reuse (recommended layout at its cap; {ttft}, HBM / offload hit rate):"]
    for p in advice.points:
        hit = "-" if p.prefix_cache_hit_rate is None else f"{p.prefix_cache_hit_rate:.0%}"
        plural = "" if p.preemptions == 1 else "s"  # "1 preemptions" (fuzz_random seed 38)
        lines.append(
            f"  - {p.label}: TTFT p99 {p.ttft_p99_s:,.2f} s, hit {hit} / {p.offload_hit_rate:.0%}"
            f", {p.output_throughput_tok_s:,.0f} tok/s, {p.preemptions:,} preemption{plural}"
        )
    size = advice.recommended_offload_bytes
    pick = "none (it would not pay)"
    if size:
        pick = (
            f"{size / 2**30:.0f} GiB per replica: hit rate {advice.hit_rate_without:.0%} -> "
            f"{advice.hit_rate_with:.0%}, TTFT p99 {advice.ttft_p99_change:+.0%}"
        )
    # SGLang's radix cache is on by default: no flag at all read "flags: " (h-user3)
    flags = " ".join(advice.flags) or "none (the engine's defaults)"
    lines.append(f"  - recommended host offload: {pick}; flags: {flags}")
    return lines
