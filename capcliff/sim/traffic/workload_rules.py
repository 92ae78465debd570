"""The rules a workload's numbers obey, in one place for every way they are given.

Flags (`capcliff sweep --isl`), spec keys (`[scenario.workload]`) and callers of `sim.workload`
all check counts, lengths and rates here, so the same value gets the same one-line error whatever
it came from. Messages name the field as the spec and the flags do (`isl`, `rate`, ...).
"""

from __future__ import annotations

import math

from capcliff.errors import InputError

# Sanity bounds (set, not modeled): far past any serving run capcliff is meant to simulate, and
# low enough that the request arrays (a few int64 per request) stay within a laptop's memory.
MAX_REQUESTS = 10_000_000
MAX_TOKENS_PER_REQUEST = 1 << 30  # ~1.07 billion: 100x the longest context of any model today
MAX_TURNS = 100_000  # mean turns per session: far past any agent run
# Set: the latest time a trace or a think time may name, s (about 31.7 years; Unix timestamps,
# 1.7e9 today, are past it: a run starting there reads as 54 years idle). A double holds 1e9 s to
# 1.2e-7 s, finer than any step; at 1e300 s a 5 ms step no longer moves the clock and every
# latency read 0.
MAX_SECONDS = 1e9

# Set: the lowest arrival rate, requests/s. MAX_REQUESTS at this rate span 1e11 s, where a double
# still resolves 15 us, finer than any step; at 1e-300 a 5 ms step no longer moved the clock and
# the plan printed a TPOT of 0 ms.
MIN_RATE = 1e-4


def check_seconds_bound(where: str, value: float) -> None:
    """An InputError when a finite time `value` (s) is past MAX_SECONDS; `where` names it."""
    if value > MAX_SECONDS:
        raise InputError(
            f"{where}: {value:g} s is past {MAX_SECONDS:g} s (31 years), where the simulated "
            "clock loses its resolution; give seconds from the run's start, not Unix timestamps"
        )


def check_count(field: str, value: int | None, *, most: int | None = None, least: int = 1) -> None:
    """A count (requests, tokens, clients) must be an integer >= `least` (1 unless said) and at
    most `most`; None: not given."""
    bad = isinstance(value, bool) or not isinstance(value, int) or value < least
    if value is not None and bad:
        raise InputError(f"{field}: must be an integer >= {least}, got {value!r}")
    if value is not None and most is not None and value > most:
        raise InputError(f"{field}: {value:,} is past the sanity bound {most:,}")


def check_positive(field: str, value: float | None) -> None:
    """A rate or a time must be a finite number > 0; None: not given."""
    if value is not None and not (math.isfinite(value) and value > 0):
        raise InputError(f"{field}: must be a finite number > 0, got {value!r}")


def check_range_ratio(value: float | None) -> None:
    """`random_range_ratio` R: each length is drawn from [R x L, L], so 0 < R <= 1; None: not
    given (fixed lengths)."""
    if value is not None and not (math.isfinite(value) and 0 < value <= 1):
        raise InputError(f"random_range_ratio: must be in (0, 1], got {value!r}")


def check_think_time(value: float | None) -> None:
    """A think time (mean of an exponential, s) must be finite and >= 0 (0: none)."""
    if value is not None and not (math.isfinite(value) and value >= 0):
        raise InputError(f"think_time: must be a finite number >= 0 (seconds), got {value!r}")
    if value is not None:
        check_seconds_bound("think_time", value)


def check_turns(value: float | None) -> None:
    """Mean turns per session: finite and >= 1."""
    if value is not None and not (math.isfinite(value) and 1 <= value <= MAX_TURNS):
        raise InputError(f"turns: must be a number in [1, {MAX_TURNS:,}], got {value!r}")


def implied_arrival(arrival: str | None, *, rate: float | None, clients: int | None) -> str:
    """The arrival as given; else poisson with a rate, clients with clients, else batch."""
    if arrival is not None:
        return arrival
    if rate is not None:
        return "poisson"
    return "clients" if clients is not None else "batch"


def check_arrival(
    arrival: str, *, rate: float | None, clients: int | None, clients_optional: bool = False
) -> None:
    """A rate belongs to a poisson arrival and clients to a clients arrival, and each of those
    needs its own (`clients_optional`: a check spec may let clients follow its concurrency)."""
    if rate is not None and arrival != "poisson":
        raise InputError(f"rate: only a poisson arrival has a rate (the arrival is {arrival})")
    if clients is not None and arrival != "clients":
        raise InputError(f"clients: only a clients arrival has clients (the arrival is {arrival})")
    if arrival == "poisson" and rate is None:
        raise InputError("rate: a poisson arrival needs a rate (requests/s)")
    if arrival == "clients" and clients is None and not clients_optional:
        raise InputError("clients: a clients arrival needs at least one client")


def check_workload_numbers(
    *,
    num_requests: int | None = None,
    isl: int | None = None,
    osl: tuple[int, ...] = (),
    rate: float | None = None,
    clients: int | None = None,
) -> None:
    """The rules every workload's numbers obey, whoever gives them (flags, a spec, a caller):
    counts and lengths >= 1, a rate finite and > 0. Named as the spec keys name them."""
    check_count("num_requests", num_requests, most=MAX_REQUESTS)
    check_count("isl", isl, most=MAX_TOKENS_PER_REQUEST)
    for length in osl:
        check_count("osl", length, most=MAX_TOKENS_PER_REQUEST)
    check_positive("rate", rate)
    if rate is not None and rate < MIN_RATE:
        raise InputError(
            f"rate: {rate:g} requests/s is under {MIN_RATE:g} (one request in 2.8 hours), where "
            "the arrivals outrun the simulated clock's resolution; give requests per second"
        )
    check_count("clients", clients, most=MAX_REQUESTS)


def check_shape_numbers(
    *,
    range_ratio: float | None = None,
    think_time: float | None = None,
    turns: float | None = None,
    context: int | None = None,
) -> None:
    """The domains of the numbers that shape lengths and sessions (flags and spec keys alike)."""
    check_range_ratio(range_ratio)
    check_think_time(think_time)
    check_turns(turns)
    # 0: no context of the session's own, as the presets have (fuzz_random seeds 42-43)
    check_count("context", context, most=MAX_TOKENS_PER_REQUEST, least=0)
