"""Steady-state edges that mutation testing found untested (`benchmarks/mutation.py --packages
analysis`, seed 7): each expected value worked out by hand."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from capcliff.analysis.evaluate.steady_state import settle


def _unsettled(n: int) -> Any:
    """A state that never settles and, with all ten batches but under 100 measured requests,
    asks for one doubling (`next_size`: n << 1)."""
    return SimpleNamespace(
        settled=False, batches=10, measured=n // 2, rps_half_width=1.0, tpot_half_width=1.0
    )


def test_settle_doubles_the_sample_up_to_the_cap_and_stops_there() -> None:
    # first 10, cap 100: 10 -> 20 -> 40 -> 80 -> min(100, 160) = 100, where n >= cap stops it
    sizes: list[int] = []

    def run(n: int) -> Any:
        sizes.append(n)
        return n

    settled = settle(run, first=10, cap=100, measure=_unsettled)
    assert sizes == [10, 20, 40, 80, 100]
    assert settled.requests == 100
    assert settled.result == 100
