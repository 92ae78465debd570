"""The steady state's verdicts at their edges (`evaluate/steady_state.py`), found untested by
planting the module's mutants against its fast tests. Values are worked out by hand."""

from __future__ import annotations

from dataclasses import replace

import pytest

from capcliff.analysis.evaluate.steady_state import SteadyState


def _state(**changes: object) -> SteadyState:
    base = SteadyState(
        requests=1_000, measured=100, window_s=(0.0, 10.0), throughput_rps=10.0,
        output_tok_s=1_000.0, arrival_rps=None, ttft_p99_s=1.0, tpot_p99_s=0.05,
        tpot_mean_s=0.04, e2e_mean_s=5.0, rps_half_width=0.05, tpot_half_width=0.05,
        queue_growing=False,
    )  # fmt: skip
    return replace(base, **changes)  # type: ignore[arg-type]


def test_settled_at_exactly_the_least_measured_and_the_widest_half_widths() -> None:
    # 100 measured requests and both half-widths at exactly 5 % of their means: settled
    assert _state().settled


@pytest.mark.parametrize(
    "changes",
    [{"measured": 99}, {"rps_half_width": 0.0501}, {"tpot_half_width": 0.0501}],
)
def test_one_request_short_or_a_half_width_past_5_percent_is_not_settled(
    changes: dict[str, object],
) -> None:
    assert not _state(**changes).settled


def test_the_p99s_judge_a_limit_at_exactly_5_percent_half_widths() -> None:
    assert _state(ttft_p99_half_width=0.05, tpot_p99_half_width=0.05).p99_settled
    assert not _state(ttft_p99_half_width=0.0501, tpot_p99_half_width=0.05).p99_settled
    assert not _state(ttft_p99_half_width=0.05, tpot_p99_half_width=0.0501).p99_settled


@pytest.mark.parametrize(
    ("served", "half_width", "saturated"),
    [
        (9.7, 0.0, False),  # exactly 97 % of the 10/s offered is served: not short
        (9.69, 0.0, True),  # 96.9 % is short
        (9.6, 0.011, False),  # 9.6 x 1.011 = 9.7056 with its half-width: not short
    ],
)
def test_an_open_loop_is_saturated_below_97_percent_of_the_offered_rate(
    served: float, half_width: float, saturated: bool
) -> None:
    state = _state(arrival_rps=10.0, throughput_rps=served, rps_half_width=half_width)
    assert state.saturated is saturated


def test_a_growing_queue_saturates_and_a_closed_loop_never_does() -> None:
    assert _state(arrival_rps=10.0, queue_growing=True).saturated
    # no offered rate (backlog, clients): never saturated, even at a low throughput
    assert not _state(throughput_rps=0.1, queue_growing=True).saturated


def test_a_relative_half_width_is_students_t_over_the_batches() -> None:
    import math

    import numpy as np

    from capcliff.analysis.evaluate.steady_state import relative_half_width

    # two batches 1 and 3: mean 2, s = sqrt(2), 1 degree of freedom (t = 12.706):
    # 12.706 x sqrt(2) / sqrt(2) / 2 = 6.353; a NaN batch is left out
    assert relative_half_width(np.array([1.0, 3.0])) == pytest.approx(6.353)
    assert relative_half_width(np.array([1.0, math.nan, 3.0])) == pytest.approx(6.353)
    # three batches 1, 2, 3: mean 2, s = 1, t(2 df) = 4.303: 4.303 / sqrt(3) / 2 = 1.2422
    assert relative_half_width(np.array([1.0, 2.0, 3.0])) == pytest.approx(1.2422, abs=1e-4)
    # one batch has no spread, and a mean of 0 no relative one
    assert relative_half_width(np.array([5.0])) == math.inf
    assert relative_half_width(np.array([-1.0, 1.0])) == math.inf


def _run(arrival: object, ttft: object, finish: object) -> object:
    from types import SimpleNamespace

    import numpy as np

    n = 200
    return SimpleNamespace(
        arrival_s=np.asarray(arrival, dtype=float), ttft_s=np.asarray(ttft, dtype=float),
        finish_s=np.asarray(finish, dtype=float), tpot_s=np.full(n, 0.01), e2e_s=np.ones(n),
        output_tokens=np.full(n, 10), makespan_s=float(np.max(finish)),
    )  # fmt: skip


def test_an_open_loop_window_opens_after_a_fifth_of_the_arrivals() -> None:
    from typing import Any, cast

    import numpy as np

    from capcliff.analysis.evaluate.steady_state import steady_state

    # 200 requests arriving 1 s apart, 10 s each: the window opens at arrival ceil(0.2 x 200) =
    # 40 (40 s) and closes at the last arrival (199 s), 159 s. Finished inside: arrivals 30-189
    # (160); started inside: 40-199 (160). TTFTs i / 100 s: inside 0.40 ... 1.99 s, whose p99
    # sits 0.99 x 159 = 157.41 ranks up: 0.40 + 1.5741 = 1.9741 s
    i = np.arange(200)
    state = steady_state(cast(Any, _run(i, i / 100, i + 10)), open_loop=True)
    assert state.window_s == (40.0, 199.0)
    assert state.measured == 160
    assert state.throughput_rps == pytest.approx(160 / 159)
    assert state.arrival_rps == pytest.approx(160 / 159)
    assert state.ttft_p99_s == pytest.approx(1.9741)
    # 10 tokens each: 1,600 tokens over 159 s; with E[O] = 12.5 given, 160 / 159 x 12.5
    assert state.output_tok_s == pytest.approx(1600 / 159)
    with_mean = steady_state(cast(Any, _run(i, i / 100, i + 10)), open_loop=True, mean_output=12.5)
    assert with_mean.output_tok_s == pytest.approx(160 / 159 * 12.5)
    # 16 finishes in each of the ten 15.9 s batches: no spread
    assert state.rps_half_width == 0.0
    assert not state.queue_growing


def test_a_backlog_window_closes_at_the_last_first_token() -> None:
    from typing import Any, cast

    import numpy as np

    from capcliff.analysis.evaluate.steady_state import steady_state

    # 200 requests waiting at t = 0, request i's first token at i s and its end at i + 10 s: the
    # window opens at the 41st finish (50 s) and closes at the last first token (199 s);
    # finished inside: i = 40-189 (150), over 149 s
    i = np.arange(200)
    state = steady_state(cast(Any, _run(np.zeros(200), i, i + 10)), open_loop=False)
    assert state.window_s == (50.0, 199.0)
    assert state.measured == 150
    assert state.throughput_rps == pytest.approx(150 / 149)
    assert state.arrival_rps is None


@pytest.mark.parametrize(
    ("ttft", "growing"),
    [
        ([0, 0, 0, 0, 0, 0, 5], False),  # 7 requests: too few to judge
        ([0.5, 0.5, 0, 0, 0, 0, 2, 2], False),  # last quarter 2.0 s = 2 x 0.5 + 1: not past it
        ([0.5, 0.5, 0, 0, 0, 0, 2, 2.5], True),  # 2.25 s > 2.0 s
        # quarters of 3: first 0 s, last (5 + 0.5 + 0.5) / 3 = 2 s > 1 s (quarters of 2 or 4
        # would read 0.5 > 1 s or 1.5 > 2 x 2.5 + 1 s: not growing)
        ([0, 0, 0, 10, 0, 0, 0, 0, 0, 5, 0.5, 0.5], True),
    ],
)
def test_a_queue_grows_when_its_last_quarter_waits_twice_the_first_plus_a_second(
    ttft: list[float], growing: bool
) -> None:
    import numpy as np

    from capcliff.analysis.evaluate.steady_state import _queue_growing

    assert _queue_growing(np.array(ttft, dtype=float)) is growing


def test_a_window_closed_early_by_the_users_running_out_ends_there() -> None:
    from typing import Any, cast

    import numpy as np

    from capcliff.analysis.evaluate.steady_state import steady_state

    # the open-loop run above closed at 150 s instead of 199 s: finished inside are arrivals
    # 30-140 (111) over 110 s
    i = np.arange(200)
    state = steady_state(cast(Any, _run(i, i / 100, i + 10)), open_loop=True, until_s=150.0)
    assert state.window_s == (40.0, 150.0)
    assert state.measured == 111
    assert state.throughput_rps == pytest.approx(111 / 110)


def test_exactly_the_least_measured_requests_give_a_window_and_one_fewer_the_whole_run() -> None:
    from typing import Any, cast

    import numpy as np

    from capcliff.analysis.evaluate.steady_state import steady_state

    # 125 arrivals 1 s apart, 10 s each: the window [25, 124] s holds 100 finishes (arrivals
    # 15-114) and 100 starts (25-124): measured
    i = np.arange(125)
    finish = i + 10.0
    run: Any = _run(i, np.zeros(125), finish)
    run.tpot_s, run.e2e_s, run.output_tokens = np.full(125, 0.01), np.ones(125), np.ones(125)
    assert steady_state(cast(Any, run), open_loop=True).measured == 100
    # request 15 ending at 24.5 s, before the window opens, leaves 99 finishes: the whole run
    finish[15] = 24.5
    run.finish_s = finish
    whole = steady_state(cast(Any, run), open_loop=True)
    assert (whole.measured, whole.window_s) == (0, (0.0, 134.0))
    # the whole run's figures: 125 requests, one token each, over its 134 s
    assert whole.throughput_rps == whole.output_tok_s == pytest.approx(125 / 134)


def test_a_window_shorter_than_a_second_is_measured() -> None:
    from typing import Any, cast

    import numpy as np

    from capcliff.analysis.evaluate.steady_state import steady_state

    # 200 arrivals 5 ms apart, 62.5 ms each: the window [0.2, 0.995] s is 0.795 s long and holds
    # the finishes of arrivals 28-186 (159)
    i = np.arange(200)
    state = steady_state(cast(Any, _run(i / 200, np.zeros(200), i / 200 + 0.0625)), open_loop=True)
    assert state.window_s == (0.2, 0.995)
    assert state.measured == 159


def test_token_rates_spread_a_decode_over_its_span_and_count_a_single_token_once() -> None:
    from types import SimpleNamespace
    from typing import Any, cast

    import numpy as np

    from capcliff.analysis.evaluate.steady_state import _token_rates

    # A decodes 4 tokens from its first token at 1 s to 3 s (2 tokens/s): 2 in each of [0, 2)
    # and [2, 4); C decodes 1 token over 1.75-2.25 s: half in each. B's one token comes at
    # exactly 2.0 s: it counts in [2, 4) only. Rates: 2.5 / 2 = 1.25 and 3.5 / 2 = 1.75 tokens/s
    run = SimpleNamespace(
        arrival_s=np.zeros(3), ttft_s=np.array([1.0, 2.0, 1.75]),
        finish_s=np.array([3.0, 2.0, 2.25]), output_tokens=np.array([4, 1, 1]),
    )  # fmt: skip
    rates = _token_rates(cast(Any, run), np.array([0.0, 2.0, 4.0]))
    assert rates.tolist() == pytest.approx([1.25, 1.75])


def test_a_stationary_window_of_two_decode_batches_has_half_widths() -> None:
    from types import SimpleNamespace
    from typing import Any, cast

    import numpy as np

    from capcliff.analysis.evaluate.steady_state import steady_state

    # two seeds start at 0 and 0.5 s, four more at 1-2.5 s; each decodes 1 token over 0.5 s. The
    # window [0.5, 2.5] s is 2 s = 2 x (2 x 0.5 s) decode times: two batches, [0.5, 1.5) and
    # [1.5, 2.5], each with 2 tokens (2/s); 1 token a request: 2 requests/s, no spread
    start = np.arange(6.0) / 2
    run = SimpleNamespace(
        arrival_s=np.zeros(6), ttft_s=start, finish_s=start + 0.5, tpot_s=np.full(6, 0.5),
        e2e_s=start + 0.5, output_tokens=np.full(6, 1),
    )  # fmt: skip
    state = steady_state(cast(Any, run), open_loop=False, seeds=2)
    assert (state.window_s, state.batches) == ((0.5, 2.5), 2)
    assert state.throughput_rps == 2.0
    assert (state.rps_half_width, state.tpot_half_width) == (0.0, 0.0)


def test_a_stationary_window_of_one_token_requests_is_one_batch_without_half_widths() -> None:
    import math
    from types import SimpleNamespace
    from typing import Any, cast

    import numpy as np

    from capcliff.analysis.evaluate.steady_state import steady_state

    # each request ends at its first token: no decode time to size batches by, so one batch,
    # and one batch has no spread to state
    start = np.arange(6.0)
    run = SimpleNamespace(
        arrival_s=np.zeros(6), ttft_s=start, finish_s=start, tpot_s=np.full(6, math.nan),
        e2e_s=start, output_tokens=np.ones(6, dtype=int),
    )  # fmt: skip
    state = steady_state(cast(Any, run), open_loop=False, seeds=2)
    assert state.batches == 1
    assert (state.rps_half_width, state.tpot_half_width) == (math.inf, math.inf)


def test_a_stationary_window_cuts_exactly_its_batches_for_the_rate_spread() -> None:
    from types import SimpleNamespace
    from typing import Any, cast

    import numpy as np

    from capcliff.analysis.evaluate.steady_state import steady_state

    # as above (window [0.5, 2.5] s, two batches of 1 s), but the request starting at 1.5 s
    # decodes 3 tokens: batch rates 2 and 4 tokens/s, mean 3; t(1 df) 12.706 x sd 1.4142 /
    # sqrt(2) / 3 = 4.2353 (three batches would read 2, 4 and 3 tokens/s)
    start = np.arange(6.0) / 2
    run = SimpleNamespace(
        arrival_s=np.zeros(6), ttft_s=start, finish_s=start + 0.5, tpot_s=np.full(6, 0.25),
        e2e_s=start + 0.5, output_tokens=np.array([1, 1, 1, 3, 1, 1]),
    )  # fmt: skip
    state = steady_state(cast(Any, run), open_loop=False, seeds=2)
    assert (state.window_s, state.batches, state.output_tok_s) == ((0.5, 2.5), 2, 3.0)
    assert state.rps_half_width == pytest.approx(12.706 / 3)
