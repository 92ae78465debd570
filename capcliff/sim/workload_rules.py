"""The rules a workload's numbers obey, in one place for every way they are given.

Flags (`capcliff sweep --isl`), spec keys (`[scenario.workload]`) and callers of `sim.workload`
all check counts, lengths and rates here, so the same value gets the same one-line error whatever
it came from. Messages name the field as the spec and the flags do (`isl`, `rate`, ...).
"""

from __future__ import annotations

import math

from capcliff.errors import InputError


def check_count(field: str, value: int | None) -> None:
    """A count (requests, tokens, clients) must be an integer >= 1; None: not given."""
    if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
        raise InputError(f"{field}: must be an integer >= 1, got {value!r}")


def check_positive(field: str, value: float | None) -> None:
    """A rate or a time must be a finite number > 0; None: not given."""
    if value is not None and not (math.isfinite(value) and value > 0):
        raise InputError(f"{field}: must be a finite number > 0, got {value!r}")


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
    check_count("num_requests", num_requests)
    check_count("isl", isl)
    for length in osl:
        check_count("osl", length)
    check_positive("rate", rate)
    check_count("clients", clients)
