"""The verification's ladder (`capacity.verified`): searched, not walked, for the same step.

The ladder steps the rate down 3 % at a time from the rate the search found; the answer is the
first step whose fresh sample meets the SLO with its noise added. Here the simulation is replaced
by a margin over the SLO that is a function of the rate, so the step a plain walk down the ladder
finds can be worked out by hand (or by the walk written out below) and compared."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import capcliff.analysis.evaluate.capacity as capacity_module
from capcliff.analysis.evaluate.capacity import VERIFY_BACKOFF, VERIFY_TRIES, _next_rung
from capcliff.analysis.evaluate.rate_search import RatePoint
from capcliff.analysis.evaluate.solver import Slo

SLO = Slo(ttft_s=1.0, tpot_s=1.0)


def test_the_next_step_is_where_the_margin_reaches_the_limit_at_the_set_elasticity() -> None:
    # 10 % over the limit, falling 0.97^1.7 = 0.9495 x a step: 1.0445 after one, 0.9917 after two
    assert _next_rung((0, 1.10), None, 8) == 2
    # 30 % over: ln 1.3 / 0.0518 = 5.1 steps, but at most two before a step has passed
    assert _next_rung((1, 1.30), None, 8) == 3
    # 2 % over: one step (1.02 x 0.9495 = 0.968)
    assert _next_rung((3, 1.02), None, 8) == 4


def test_between_a_miss_and_a_pass_the_step_is_where_their_log_margin_line_crosses_one() -> None:
    # ln 1.05 = 0.0488 at step 1, ln 0.95 = -0.0513 at step 5: zero at 1 + 4 x 0.0488 / 0.1001
    # = 2.95, so step 3 is the first step at or past it
    assert _next_rung((1, 1.05), (5, 0.95), 8) == 3


def test_the_next_step_stays_strictly_inside_the_bracket() -> None:
    # far over the limit, two steps at most, and the ladder ends at 2
    assert _next_rung((0, 2.0), None, 2) == 1
    # barely over, a pass far below: at least one step down
    assert _next_rung((0, 1.0001), (7, 0.5), 8) == 1
    # a growing queue (no finite margin): one step, or halfway to a known pass
    assert _next_rung((2, math.inf), None, 8) == 3
    assert _next_rung((2, math.inf), (6, 0.9), 8) == 4


@dataclass
class _Fresh:
    """Stands in for the fresh sample: a 'sample' is its rate (per replica)."""

    choice: object
    seed: int

    def reseeded(self, seed: int) -> _Fresh:
        return _Fresh(self.choice, seed)

    def at_rate(self, n: int, rate: float) -> float:
        return rate

    def mean_output_tokens(self) -> float:
        return 1.0


@dataclass(frozen=True)
class _Run:
    """Stands in for a simulation's result: the rate it ran at."""

    rate: float
    total_preemptions: int = 0


def _verify(
    monkeypatch: pytest.MonkeyPatch,
    margin: Callable[[float], float],
    worthless: Callable[[float], bool] | None = None,
) -> tuple[RatePoint | None, list[float]]:
    """`verified` from a found rate of 10 requests/s with the margin over the SLO at each rate
    given by `margin`; (its answer, the rates it simulated)."""
    monkeypatch.setattr(capacity_module, "steady_state", lambda result, **_: result.rate)
    monkeypatch.setattr(capacity_module, "peak_in_system", lambda rate: 0)
    monkeypatch.setattr(capacity_module, "meets_slo", lambda rate, slo: margin(rate) <= 1)
    monkeypatch.setattr(capacity_module, "meets_slo_surely", lambda rate, slo: margin(rate) <= 1)
    monkeypatch.setattr(capacity_module, "_surely_margin", lambda rate, slo: margin(rate))
    found = RatePoint(cap=8, rate_rps=10.0, state=None, meets=True, requests=100)  # type: ignore[arg-type]
    runs: list[float] = []

    def run(rate: float, cap: int) -> _Run:
        runs.append(rate)
        return _Run(rate)

    workload = _Fresh(choice=None, seed=0)
    got = capacity_module.verified(run, workload, SLO, found, [], 50, worthless=worthless)  # type: ignore[arg-type]
    return got, runs


def _walk(
    margin: Callable[[float], float], worthless: Callable[[float], bool] | None
) -> tuple[float | None, int]:
    """The ladder walked step by step from 10 requests/s: (the rate answered, None for none or
    the found rate itself when no step passes and none is worthless, runs)."""
    rate, runs = 10.0, 0
    for _ in range(VERIFY_TRIES):
        if worthless is not None and worthless(rate):
            return None, runs
        runs += 1
        if margin(rate) <= 1:
            return rate, runs
        rate *= 1 - VERIFY_BACKOFF
    return 10.0, runs


def test_a_ladder_whose_third_step_passes_answers_it_in_three_runs(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # margin 1.10 x (rate / 10)^1.7: 1.10, 1.0445, 0.9917 at steps 0, 1, 2. A walk runs all
    # three; the search runs step 0, guesses step 2 (passes), and checks step 1 (misses).
    got, runs = _verify(monkeypatch, lambda rate: 1.10 * (rate / 10) ** 1.7)
    assert got is not None and got.rate_rps == pytest.approx(10 * 0.97**2)
    assert sorted(runs, reverse=True) == pytest.approx([10.0, 9.7, 9.409])


def test_a_ladder_whose_fifth_step_passes_saves_runs(monkeypatch: pytest.MonkeyPatch) -> None:
    # margin 1.20 x (rate / 10)^1.7: steps 0-3 miss (1.20, 1.139, 1.082, 1.027), step 4 passes
    # (0.975). A walk runs five; the search: 0, then ln 1.2 / 0.0518 = 3.5 steps, at most two:
    # step 2 (misses), then ln 1.082 / 0.0518 = 1.5 -> two more: step 4 (passes), then step 3
    # (misses): four.
    got, runs = _verify(monkeypatch, lambda rate: 1.20 * (rate / 10) ** 1.7)
    assert got is not None and got.rate_rps == pytest.approx(10 * 0.97**4)
    assert runs == pytest.approx([10.0, 10 * 0.97**2, 10 * 0.97**4, 10 * 0.97**3])


@settings(max_examples=300, deadline=None)
@given(
    top=st.floats(0.7, 1.6),
    elasticity=st.floats(0.1, 6.0),
    floor=st.one_of(st.none(), st.floats(7.0, 10.5)),
)
def test_a_monotone_ladder_gets_the_walks_answer_in_at_most_one_run_more(
    top: float, elasticity: float, floor: float | None
) -> None:
    def margin(rate: float) -> float:
        return top * (rate / 10) ** elasticity

    worthless = None if floor is None else (lambda rate: rate < floor)
    with pytest.MonkeyPatch.context() as monkeypatch:
        got, runs = _verify(monkeypatch, margin, worthless)
    expected, walked = _walk(margin, worthless)
    assert (None if got is None else got.rate_rps) == expected
    assert len(runs) <= walked + 1


@settings(max_examples=200, deadline=None)
@given(margins=st.lists(st.floats(0.8, 1.2), min_size=VERIFY_TRIES, max_size=VERIFY_TRIES))
def test_any_ladder_answers_a_passing_step_never_above_the_walks(margins: list[float]) -> None:
    # Not monotone: whatever step is answered passes, the step above it misses, and its rate is
    # at or below the rate a walk answers (the walk answers the first passing step); when no
    # step passes, the found rate, as the walk.
    rates = [10.0]
    for _ in range(VERIFY_TRIES - 1):
        rates.append(rates[-1] * (1 - VERIFY_BACKOFF))

    def margin(rate: float) -> float:
        return margins[rates.index(rate)]

    with pytest.MonkeyPatch.context() as monkeypatch:
        got, _ = _verify(monkeypatch, margin)
    expected, _ = _walk(margin, None)
    if all(m > 1 for m in margins):  # the walk's answer: the found rate, unverified
        assert got is not None and got.rate_rps == expected == 10.0
        return
    assert got is not None and margin(got.rate_rps) <= 1
    assert expected is not None and got.rate_rps <= expected
    step = rates.index(got.rate_rps)
    assert step == 0 or margins[step - 1] > 1
