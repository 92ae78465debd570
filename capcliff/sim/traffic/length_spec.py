"""Output lengths given as a distribution on the command line or in a spec.

Reasoning traffic has long, heavy-tailed outputs; a fixed `--osl` cannot say so. Two forms:
- `lognormal:MEAN:P99[:MAX]`: named the way its users describe it, by its mean and 99th
  percentile in tokens (`LogNormal`), cut at the engine's `max_tokens` the client sends, MAX by
  default DEFAULT_CUT x P99 (a set assumption, printed in the workload label);
- `hist:FILE`: a histogram the user measured (one `tokens[,count]` row per line), which the
  command reads (`histogram_spec`) into the inline form `histogram:L*C,L*C,...`; lengths are
  drawn in proportion to the counts and cut at the longest.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

from capcliff.errors import InputError
from capcliff.sim.traffic.length_mean import expected_length
from capcliff.sim.traffic.workload import Empirical, LogNormal

PREFIX = "lognormal:"
FILE_PREFIX = "hist:"
INLINE_PREFIX = "histogram:"
MAX_BINS = 100_000  # the most rows a histogram may have (a sanity bound)
DEFAULT_CUT = 2.0  # set: max_tokens = 2 x the p99 unless the spec gives it
MAX_TOKENS = 10_000_000  # the longest output a spec may name (a sanity bound, not an engine one)


@dataclass(frozen=True)
class OutputLengths:
    """A distribution of output lengths and the max_tokens that cuts it, tokens."""

    dist: LogNormal | Empirical
    max_tokens: int

    @property
    def label(self) -> str:
        """'osl lognormal mean 8,000, p99 30,000, cut at 60,000' or 'osl histogram of 12
        lengths, mean 3,100, up to 16,384'."""
        if isinstance(self.dist, Empirical):
            mean = expected_length(self.dist, max_tokens=self.max_tokens)
            return (
                f"osl histogram of {len(self.dist.values):,} lengths, mean {mean:,.0f}, up to "
                f"{self.max_tokens:,}"
            )
        return (
            f"osl lognormal mean {self.dist.mean:,.0f}, p99 {self.dist.p99:,.0f}, cut at "
            f"{self.max_tokens:,}"
        )


def is_length_spec(text: str) -> bool:
    """Whether `text` names a distribution rather than a list of lengths."""
    lowered = text.strip().lower()
    return lowered.startswith((PREFIX, FILE_PREFIX, INLINE_PREFIX))


def histogram_file(text: str) -> str | None:
    """The path of `hist:PATH` (None for any other form)."""
    stripped = text.strip()
    return stripped[len(FILE_PREFIX) :] if stripped.lower().startswith(FILE_PREFIX) else None


MAX_COUNT = 1e15  # set: a row's count (weights past it are a corrupt file, not a histogram)


def _check_header(cells: list[str], *, source: str, field: str, line: int) -> None:
    """A header naming the columns the other way round (`count,tokens`) read each count as a
    length and each length as a count, unsaid: the columns are read by position."""
    words = [c.lower() for c in cells]
    if len(words) >= 2 and "count" in words[0] and ("token" in words[1] or "len" in words[1]):
        raise InputError(
            f"{field}: {source} line {line}: the header names count before tokens; the columns "
            "are read by position: write tokens,count"
        )


def histogram_spec(text: str, *, source: str, field: str = "osl") -> str:
    """A histogram file's text -> `histogram:L*C,...`. One row per line: `tokens` or
    `tokens,count` (commas, tabs or spaces); blank lines and `#` comments skipped, and a first
    line that is not numbers (a header). Lengths in [1, MAX_TOKENS], counts finite and > 0."""
    bins: dict[int, float] = {}
    rows = [line.split("#", 1)[0].strip() for line in text.splitlines()]
    numbered = [(n, r) for n, r in enumerate(rows, 1) if r]
    for k, (n, row) in enumerate(numbered):
        cells = row.replace(",", " ").split()
        try:
            numbers = [float(c) for c in cells]
        except ValueError:
            if k == 0:
                _check_header(cells, source=source, field=field, line=n)
                continue  # a header
            raise InputError(
                f"{field}: {source} line {n}: cannot read {row!r}; write tokens[,count]"
            ) from None
        if len(numbers) not in (1, 2):
            raise InputError(f"{field}: {source} line {n}: write tokens[,count], got {row!r}")
        tokens, count = numbers[0], numbers[1] if len(numbers) == 2 else 1.0
        if not (tokens.is_integer() and 1 <= tokens <= MAX_TOKENS):
            raise InputError(
                f"{field}: {source} line {n}: tokens must be an integer in "
                f"[1, {MAX_TOKENS:,}], got {cells[0]}"
            )
        if not (math.isfinite(count) and 0 < count < MAX_COUNT):
            raise InputError(
                f"{field}: {source} line {n}: count must be a number > 0 and < {MAX_COUNT:.0e}, "
                f"got {cells[1]}"
            )
        bins[int(tokens)] = bins.get(int(tokens), 0.0) + count
    if not bins:
        raise InputError(
            f"{field}: {source} holds no lengths; write one tokens[,count] row per line"
        )
    if len(bins) > MAX_BINS:
        raise InputError(f"{field}: {source} has {len(bins):,} lengths, past {MAX_BINS:,}")
    return INLINE_PREFIX + ",".join(f"{t}*{c:g}" for t, c in sorted(bins.items()))


def _parse_histogram(text: str, field: str) -> OutputLengths:
    values, weights = [], []
    hint = f"{field}: write histogram:TOKENS*COUNT,... or hist:FILE, got {text[:60]!r}"
    for part in text.strip()[len(INLINE_PREFIX) :].split(","):
        tokens, _, count = part.partition("*")
        try:
            t, c = int(tokens), float(count or 1)
        except ValueError:
            raise InputError(hint) from None
        if not (1 <= t <= MAX_TOKENS and math.isfinite(c) and c > 0):
            raise InputError(hint)
        values.append(t)
        weights.append(c)
    return OutputLengths(Empirical(tuple(values), tuple(weights)), max(values))


@lru_cache(maxsize=32)  # the online search reads the workload's mean output many times
def parse_output_lengths(text: str, *, field: str = "osl") -> OutputLengths:
    """`lognormal:MEAN:P99[:MAX]` or `histogram:L*C,...` -> OutputLengths; a bad spec is one
    InputError naming `field`. (`hist:FILE` is read by the command first: `histogram_spec`.)"""
    if text.strip().lower().startswith(INLINE_PREFIX):
        return _parse_histogram(text, field)
    if histogram_file(text) is not None:
        raise InputError(f"{field}: {text!r}: the histogram file was not read")
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
