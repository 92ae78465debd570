"""Steady-state edges that mutation testing found untested (`benchmarks/mutation.py --packages
analysis`, seed 7): each expected value worked out by hand."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

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


@pytest.mark.parametrize(
    ("state", "open_loop", "more"),
    [
        # a bounded queue: the rate and mean TPOT must settle; the p99s too, open loop only
        ({"settled": True, "p99_settled": False}, False, False),
        ({"settled": True, "p99_settled": False}, True, True),
        ({"settled": True, "p99_settled": True}, True, False),
        ({"settled": False, "p99_settled": True}, False, True),
        # a growing queue: 100 measured requests and a 5 % rate half-width are enough
        ({"saturated": True, "measured": 100, "rps_half_width": 0.05}, True, False),
        ({"saturated": True, "measured": 99, "rps_half_width": 0.05}, True, True),
        ({"saturated": True, "measured": 100, "rps_half_width": 0.051}, False, True),
    ],
)
def test_a_sweep_point_needs_more_requests_until_its_steady_state_settles(
    monkeypatch: pytest.MonkeyPatch, state: dict[str, Any], open_loop: bool, more: bool
) -> None:
    from capcliff.analysis.evaluate import steady_point

    fake = SimpleNamespace(**{"saturated": False, **state})
    monkeypatch.setattr(steady_point, "steady_state", lambda result, open_loop: fake)
    assert steady_point.needs_more(None, open_loop=open_loop) is more  # type: ignore[arg-type]
