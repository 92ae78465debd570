"""Edges the seed-467 mutation sample (`benchmarks/mutation.py --packages sim --seed 467`) found
untested. Every expected value is worked out by hand in the comments."""

from __future__ import annotations

import pytest

from capcliff.errors import InputError
from capcliff.sim.traffic.workload import LogNormal


@pytest.mark.parametrize(("mean", "p99"), [(0.0, 10.0), (-1.0, 10.0), (10.0, 10.0)])
def test_a_lognormal_needs_a_positive_mean_under_its_p99(mean: float, p99: float) -> None:
    # mean = exp(mu + sigma^2 / 2) is positive, and p99 = exp(mu + z sigma) is above it (sigma
    # > 0): a mean of 0 (or less), or a p99 equal to the mean, names no lognormal. seed 467's
    # `0 < mean` -> `0 <= mean` let a mean of 0 through to ln(p99 / 0) (ZeroDivisionError).
    with pytest.raises(InputError, match=r"lognormal: need 0 < mean < p99, got"):
        LogNormal(mean, p99)


def test_a_lognormal_just_above_zero_is_kept() -> None:
    # mean 0.5, p99 1 (p99 / mean = 2, under the limit of about 15): with z = 2.32635,
    # sigma = z - sqrt(z^2 - 2 ln 2) = 2.32635 - sqrt(5.41190 - 1.38629) = 2.32635 - 2.00639
    # = 0.31996
    assert LogNormal(0.5, 1.0).sigma == pytest.approx(0.31996, abs=1e-4)
