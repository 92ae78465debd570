"""Output lengths given as a distribution on the command line or in a spec: `lognormal:MEAN:P99`.

Reasoning traffic has long, heavy-tailed outputs; a fixed `--osl` cannot say so. A lognormal is
named the way its users describe it, by its mean and 99th percentile in tokens (`LogNormal`), and
cut at the engine's `max_tokens` the client sends: `lognormal:MEAN:P99:MAX`, MAX by default
DEFAULT_CUT x P99 (a set assumption, printed in the workload label).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from capcliff.errors import InputError
from capcliff.sim.traffic.workload import LogNormal

PREFIX = "lognormal:"
DEFAULT_CUT = 2.0  # set: max_tokens = 2 x the p99 unless the spec gives it
MAX_TOKENS = 10_000_000  # the longest output a spec may name (a sanity bound, not an engine one)


@dataclass(frozen=True)
class OutputLengths:
    """A distribution of output lengths and the max_tokens that cuts it, tokens."""

    dist: LogNormal
    max_tokens: int

    @property
    def label(self) -> str:
        """'osl lognormal mean 8,000, p99 30,000, cut at 60,000'."""
        return (
            f"osl lognormal mean {self.dist.mean:,.0f}, p99 {self.dist.p99:,.0f}, cut at "
            f"{self.max_tokens:,}"
        )


def is_length_spec(text: str) -> bool:
    """Whether `text` names a distribution rather than a list of lengths."""
    return text.strip().lower().startswith(PREFIX)


def parse_output_lengths(text: str, *, field: str = "osl") -> OutputLengths:
    """`lognormal:MEAN:P99[:MAX]` -> OutputLengths; a bad spec is one InputError naming `field`."""
    parts = text.strip().split(":")
    hint = (
        f"{field}: write a number of tokens, lognormal:MEAN:P99 or lognormal:MEAN:P99:MAX "
        f"(tokens), got {text!r}"
    )
    if parts[0].lower() != PREFIX[:-1] or len(parts) not in (3, 4):
        raise InputError(hint)
    try:
        numbers = [float(p) for p in parts[1:]]
    except ValueError:
        raise InputError(hint) from None
    if not all(math.isfinite(v) and 1 <= v <= MAX_TOKENS for v in numbers):
        raise InputError(
            f"{field}: every figure must be a length in [1, {MAX_TOKENS:,}], got {text!r}"
        )
    mean, p99 = numbers[0], numbers[1]
    try:
        dist = LogNormal(mean, p99)
    except InputError as exc:
        raise InputError(f"{field}: {exc}") from None
    cut = round(numbers[2]) if len(numbers) == 3 else min(MAX_TOKENS, round(DEFAULT_CUT * p99))
    if cut < p99:
        raise InputError(f"{field}: max_tokens {cut:,} is below the p99 {p99:,.0f}; raise it")
    return OutputLengths(dist, cut)
