"""Which layout to recommend when the best ones cannot be told apart.

Two layouts whose figures differ by less than the model can resolve are a tie, and a tie is
decided by the rule an experienced engineer uses, not by the noise: the simpler layout.

- the band: the relative difference below which two layouts of the same model on the same GPUs
  are not told apart. The terms that separate layouts (how the engine schedules pipeline stages
  and their bubbles, tensor-parallel collectives at decode message sizes, the host time per
  step, which is per replica) are modeled from formulas and engine defaults, not measured for
  each deployment, so the model cannot resolve a gap smaller than its own held-out throughput
  error for the engine and GPU (perf/error_band.py, measured by benchmarks/fidelity.py):
  `tie_band` is that error, and at least `TIE_BAND` (set, 10 %) where the validation measured
  less. The sampling noise is added where it is wider: two layouts tie when the gap is within
  max(band, the sum of their 95 % half-widths).
- not settled (`unsettled_reason`): a gap within the sum of the two half-widths of the band's
  edge could fall on either side of it in another sample (another --seed, more requests), and
  the recommendation with it; the plan says so rather than present a coin toss as a finding.
  So too a chosen layout whose p99 is over LATENCY_FACTOR times a tied one's as estimated, but
  not beyond their sampling intervals: another sample may pass it over.
  A simpler layout clearly slower than the recommended one (below) is passed over on either side
  of the edge, so its gap settles nothing.
- clearly slower (`slower`): a layout of the tie whose TTFT or TPOT p99 (at the load its rate
  was read at) is more than LATENCY_FACTOR times another's, beyond both their 95 % sampling
  intervals, and better on neither, is passed over: the tie is in throughput, and a 45 s TTFT
  p99 beside 0.04 s (fuzz_random seed 54) is no coin toss. A factor of two lies past the
  model's held-out TTFT error (about 30 %, perf/error_band.py) on both figures.
- simpler (`simplicity`): no pipeline parallelism first (a PP layout inside a node pays bubbles
  that an idealised pipeline does not show), then fewer GPUs per replica (more replicas: finer
  scaling, smaller failure domain, and data parallelism for a model that fits one GPU with room
  for KV), then fewer pipeline stages, then less tensor parallelism.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

TIE_BAND = 0.10  # set: the least band, see the module docstring
LATENCY_FACTOR = 2.0  # set: a p99 this many times another's is a resolved difference


def tie_band(throughput_error: float | None) -> float:
    """The band for a deployment whose held-out throughput error is `throughput_error`."""
    return max(TIE_BAND, throughput_error or 0.0)


@dataclass(frozen=True)
class Option:
    """A layout's figure of merit: `value` higher is better (requests/s, 1 / makespan)."""

    name: str
    value: float
    tp: int
    pp: int
    half_width: float = 0.0  # relative 95 % half-width of `value` (0: not estimated)
    shown: str = ""  # the figure as a reader knows it, e.g. "1.60 requests/s"
    # (p99 s, relative 95 % half-width) of TTFT and of TPOT where `value` was read; (): unknown
    latencies: tuple[tuple[float, float], ...] = ()


LATENCY_NAMES = ("TTFT", "TPOT")


def _clearly_above(a: tuple[float, float], b: tuple[float, float]) -> bool:
    """Whether p99 `a` is over LATENCY_FACTOR x p99 `b` beyond both their sampling intervals,
    each taken as a factor (a p99 is positive): [p99 / (1 + h), p99 x (1 + h)] for a relative
    half-width h (a 45 s p99 at +-224 % still lies above 14 s)."""
    (va, ha), (vb, hb) = a, b
    if not all(math.isfinite(x) for x in (va, ha, vb, hb)) or vb <= 0:
        return False
    return va / (1 + ha) > LATENCY_FACTOR * vb * (1 + hb)


def slower(o: Option, pool: list[Option]) -> tuple[Option, str] | None:
    """(an option of `pool` that `o` is clearly slower than, the latency: "TTFT" or "TPOT"), or
    None: `o` is more than LATENCY_FACTOR times its p99 on one latency and better on neither."""
    for p in pool:
        if p is o or not o.latencies or not p.latencies:
            continue
        pairs = list(zip(LATENCY_NAMES, o.latencies, p.latencies, strict=False))
        worse = [name for name, a, b in pairs if _clearly_above(a, b)]
        if worse and not any(_clearly_above(b, a) for _, a, b in pairs):
            return p, worse[0]
    return None


def simplicity(o: Option) -> tuple[bool, int, int, int]:
    """Sort key: simpler first (no PP, fewer GPUs per replica, fewer stages, less TP)."""
    return (o.pp > 1, o.tp * o.pp, o.pp, o.tp)


def ties(best: Option, others: list[Option], band: float = TIE_BAND) -> list[Option]:
    """The options within `band` (or their sampling noise) of `best` (itself excluded)."""

    def width(o: Option) -> float:
        return max(band, best.half_width + o.half_width)

    return [o for o in others if o is not best and o.value >= best.value * (1 - width(o))]


def decide(
    options: list[Option], band: float = TIE_BAND
) -> tuple[Option, list[Option], Option | None]:
    """(recommended, the others it ties with within `band`, the best by value when that is not
    the one recommended). `options` must not be empty."""
    best = max(options, key=lambda o: (o.value, [-k for k in simplicity(o)]))
    tied = ties(best, options, band)
    pool = [best, *tied]
    quick = [o for o in pool if slower(o, pool) is None] or pool
    chosen = min(quick, key=lambda o: (simplicity(o), -o.value))
    rest = [o for o in [best, *tied] if o is not chosen]
    return chosen, rest, (best if chosen is not best else None)


def tie_reason(
    chosen: Option, rest: list[Option], fastest: Option | None, band: float = TIE_BAND
) -> str:
    """One line on a tie: who ties, why the recommended one, and the runner-up. The reason is
    the width that made the tie (`ties`): the band where every layout of the tie is within it
    of the best, else also their sampling noise, with the widest gap and summed half-widths (a
    tie at 0.44x the best read "within 10 %" before, fuzz_random seed 17)."""
    if not rest:
        return ""
    best = fastest or chosen
    gaps = {
        o.name: (
            1 - o.value / best.value if best.value > 0 else 0.0,
            best.half_width + o.half_width,
        )
        for o in [chosen, *rest]
        if o is not best
    }
    names = ", ".join(f"{o.name} ({o.shown or f'{o.value:,.3g}'})" for o in rest)
    widest = max(gap for gap, _ in gaps.values())
    if widest <= band:
        why = f"within {band:.0%} (the model's held-out throughput error, or their sampling noise)"
    else:
        noise = max(width for gap, width in gaps.values() if gap > band)
        why = (
            f"up to {widest:.0%} below {best.name}, past the model's {band:.0%} held-out "
            "throughput error but within their sampling noise (95 % half-widths summing to "
            f"{noise:.0%})"
        )
    pool = [chosen, *rest]
    passed = [(o, found) for o in rest if (found := slower(o, pool)) is not None]
    simplest = "the simplest (no pipeline stages, fewer GPUs per replica)"
    if any(simplicity(o) < simplicity(chosen) for o, _ in passed):
        simplest += " of those not clearly slower"
    line = f"ties with {names}: {why}, which it cannot resolve; {chosen.name} is {simplest}"
    for o, (than, metric) in passed:
        if simplicity(o) < simplicity(chosen):
            line += (
                f"; {o.name} is passed over: its {metric} p99 is over {LATENCY_FACTOR:g}x "
                f"{than.name}'s, beyond both sampling intervals"
            )
    if fastest is not None:
        line += f"; runner-up {fastest.name}, the best as simulated"
    return line


def unsettled_reason(options: list[Option], band: float = TIE_BAND) -> str:
    """One line when `decide`'s choice rests on a gap within sampling noise of the band's edge
    (empty when it does not): the chosen layout inside the band by less than the two layouts'
    summed 95 % half-widths, or a simpler one outside it by less than that. Another sample of
    the same load may then land on the other side and recommend the other layout. Gaps where
    the noise alone is as wide as the band are ties already (`ties`), never unsettled."""
    chosen, rest, fastest = decide(options, band)
    best = fastest or chosen
    if best.value <= 0:
        return ""
    for o in sorted(options, key=lambda o: (simplicity(o), -o.value)):
        noise = best.half_width + o.half_width
        if o is best or not 0 < noise < band or simplicity(o) > simplicity(chosen):
            continue
        if o is not chosen and slower(o, [o, chosen, best]) is not None:
            continue  # passed over inside the band too (fuzz_random seeds 61-64 reading)
        gap = 1 - o.value / best.value
        if abs(gap - band) > noise:
            continue
        other = best if o is chosen else o
        side = "inside" if o is chosen else "outside"
        return (
            f"not settled: {o.name} is {gap:.1%} below {best.name}, {side} the {band:.0%} band "
            f"by less than their sampling noise (95 % half-widths summing to {noise:.1%}), so "
            f"another --seed or more requests (--num-requests) may recommend {other.name}"
        )
    return _latency_unsettled(chosen, rest)


def _latency_unsettled(chosen: Option, others: list[Option]) -> str:
    """One line when the chosen layout's TTFT or TPOT p99 is over LATENCY_FACTOR times a tied
    layout's as estimated, but not beyond their sampling intervals (`slower` keeps it): another
    sample may resolve the gap and pass it over."""
    for o in others:
        if not chosen.latencies or not o.latencies:
            continue
        for name, (va, ha), (vb, hb) in zip(
            LATENCY_NAMES, chosen.latencies, o.latencies, strict=False
        ):
            if vb > 0 and math.isfinite(ha) and math.isfinite(hb) and va > LATENCY_FACTOR * vb:
                return (
                    f"not settled: {chosen.name}'s {name} p99 is {va / vb:.1f}x {o.name}'s, "
                    f"within their sampling intervals (+-{ha:.0%}, +-{hb:.0%}), so another --seed "
                    f"or more requests (--num-requests) may pass {chosen.name} over"
                )
    return ""
