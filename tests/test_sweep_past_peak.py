"""Within an SLO the saturation sweep stops at the first cap past the throughput peak
(`capacity.past_peak`): a cap whose throughput, plus its 95 % half-width, is below the best."""

from __future__ import annotations

from types import SimpleNamespace

from capcliff.analysis.evaluate.capacity import (
    cap_grid,
    past_peak,
    saturation_caps,
    sweep_caps,
)
from capcliff.analysis.evaluate.solver import Slo
from tests.test_search_reuse import _replica, _workload


def _point(throughput: float, half_width: float) -> SimpleNamespace:
    return SimpleNamespace(
        state=SimpleNamespace(throughput_rps=throughput, rps_half_width=half_width)
    )


def test_a_fall_beyond_the_noise_is_past_the_peak() -> None:
    # 4.312 x (1 + 0.0139) = 4.372 requests/s, below the best 4.672
    assert past_peak(_point(4.312, 0.0139), 4.672)  # type: ignore[arg-type]


def test_a_fall_within_the_noise_is_not() -> None:
    # 10.105 x (1 + 0.016) = 10.267 requests/s, above the best 10.253
    assert not past_peak(_point(10.105, 0.016), 10.253)  # type: ignore[arg-type]
    # the best itself
    assert not past_peak(_point(10.253, 0.0), 10.253)  # type: ignore[arg-type]


def test_the_slo_sweep_climbs_until_the_first_cap_past_the_peak() -> None:
    replica, workload = _replica(400), _workload()
    points = saturation_caps(replica, workload, slo=Slo(ttft_s=5.0, tpot_s=0.05))
    climbed = points[1:]  # the lowest cap comes first, then the climb from the next one up
    for i, point in enumerate(climbed[:-1]):
        best = max(p.state.throughput_rps for p in climbed[: i + 1])
        assert not past_peak(point, best) and not point.thrashing
    _, base = cap_grid(workload, replica)
    grid = sweep_caps(replica, base)
    last = climbed[-1]
    best = max(p.state.throughput_rps for p in climbed)
    assert (
        last.cap == grid[-1]
        or past_peak(last, best)
        or last.thrashing
        or (last.state.throughput_rps < 0.9 * best)
    )
