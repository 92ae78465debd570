"""`analysis.evaluate.online_load.OnlineWorkload` at its edges: which load the user gave, the
samples it draws at a rate, for clients and for the saturation experiment, and a trace's own
rate. Every expected value is worked out by hand in the test's comment. Mutants of this module
survived in every analysis mutation sample so far (seeds 7, 8 and 51)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import numpy as np
import pytest

from capcliff.analysis.evaluate.online_load import LoadKind, OnlineWorkload
from capcliff.analysis.workloads import WorkloadChoice
from capcliff.errors import InputError
from capcliff.sim.traffic.workload import Arrival


def _fixed(**flags: Any) -> OnlineWorkload:
    """isl 100, osl 50, plus the given flags."""
    return OnlineWorkload(WorkloadChoice(num_requests=1, isl=100, osl=(50,), **flags), seed=3)


def _trace(rows: Sequence[tuple[int, int, float | None]], **flags: Any) -> OnlineWorkload:
    lines = tuple(
        json.dumps(
            {"input_tokens": i, "output_tokens": o} | ({} if a is None else {"arrival_s": a})
        )
        for i, o, a in rows
    )
    return OnlineWorkload(WorkloadChoice(num_requests=1, trace_lines=lines, **flags), seed=3)


def test_the_load_kind_is_what_the_user_gave() -> None:
    assert _fixed().kind is LoadKind.SATURATION
    assert _fixed(rate_per_s=2.0, arrival=Arrival.POISSON).kind is LoadKind.RATE
    assert _fixed(clients=4, arrival=Arrival.CLIENTS).kind is LoadKind.CLIENTS
    timed = [(10, 4, 2.0), (20, 6, 0.0), (30, 8, 4.0)]
    assert _trace(timed).kind is LoadKind.TRACE
    # a timed trace replays its own times: a rate given with it is refused, not ignored
    with pytest.raises(InputError, match=r"^rate: a trace with arrival times replays them"):
        _trace(timed, rate_per_s=7.0)
    # a trace whose times are all 0 (or absent) is not timed: a backlog, or the rate given
    assert not _trace([(10, 4, 0.0), (20, 6, 0.0)]).trace_is_timed
    assert _trace([(10, 4, 0.0), (20, 6, 0.0)]).kind is LoadKind.SATURATION
    assert _trace([(10, 4, None), (20, 6, None)], rate_per_s=2.0).kind is LoadKind.RATE


def test_the_offered_rate() -> None:
    assert _fixed(rate_per_s=2.5, arrival=Arrival.POISSON).offered_rps() == 2.5
    assert _fixed(clients=4, arrival=Arrival.CLIENTS).offered_rps() is None
    assert _fixed().offered_rps() is None
    # a timed trace at 2, 0 and 4 s: 2 intervals over 4 s = 0.5 request/s
    assert _trace([(10, 4, 2.0), (20, 6, 0.0), (30, 8, 4.0)]).offered_rps() == 0.5
    # one interval of half a second: 2 requests/s (a span under 1 s is still a span)
    assert _trace([(10, 4, 0.0), (20, 6, 0.5)]).offered_rps() == 2.0
    # an untimed trace under --rate 2: the rate given
    assert _trace([(10, 4, None), (20, 6, None)], rate_per_s=2.0).offered_rps() == 2.0


def test_a_backlog_is_every_request_waiting_at_zero() -> None:
    workload = _fixed()
    backlog = workload.backlog(4)
    assert backlog.input_tokens.tolist() == [100] * 4
    assert backlog.output_tokens.tolist() == [50] * 4
    assert backlog.max_output_tokens.tolist() == [50] * 4
    assert backlog.arrival_s.tolist() == [0.0] * 4
    assert workload.backlog(4) is backlog  # drawn once per size
    assert len(workload.backlog(0)) == 1  # never an empty draw: max(n, 1) requests
    assert len(workload.backlog(7)) == 7
    # a trace is read whole whatever n, in arrival order: (20, 6) at 0, (10, 4) at 2, (30, 8) at 4
    trace = _trace([(10, 4, 2.0), (20, 6, 0.0), (30, 8, 4.0)])
    assert trace.backlog(1).input_tokens.tolist() == [20, 10, 30]
    assert trace.backlog(9).arrival_s.tolist() == [0.0, 2.0, 4.0]


def test_arrivals_at_a_rate_share_one_set_of_random_gaps() -> None:
    workload = _fixed()
    at2, at4 = workload.at_rate(6, 2.0).arrival_s, workload.at_rate(6, 4.0).arrival_s
    # twice the rate: every arrival at exactly half the time (the same unit-rate gaps)
    assert np.array_equal(at4 * 2, at2)
    assert len(at2) == 6 and bool(np.all(np.diff(at2) > 0)) and at2[0] > 0
    with pytest.raises(InputError, match="rate: must be > 0"):
        workload.at_rate(6, 0.0)
    with pytest.raises(InputError, match="rate: must be > 0"):
        workload.at_rate(6, -1.0)


def test_a_sample_of_zero_at_a_rate_holds_one_request_as_a_backlog_of_zero_does() -> None:
    # A backlog of 0 holds max(0, 1) = 1 request, and so do a session sample and a clients
    # sample of 0; a single-turn sample of 0 at a rate refused instead ("every field needs one
    # entry per request": one request, no arrival time; seen in seed 139's note, fixed in 151).
    workload = _fixed()
    zero, one = workload.at_rate(0, 2.0), workload.at_rate(1, 2.0)
    assert len(zero) == 1 and len(workload.with_clients(0, 1)) == 1
    # the same request at the same time as a sample of 1: the first unit-rate gap, halved
    assert zero.arrival_s.tolist() == one.arrival_s.tolist() and zero.arrival_s[0] > 0
    assert zero.input_tokens.tolist() == [100] and zero.output_tokens.tolist() == [50]


def test_a_timed_trace_is_replayed_at_a_rate_by_scaling_its_own_times() -> None:
    # arrivals 10, 12 and 14 s: its own rate is 2 / 4 = 0.5 request/s. At 1 request/s every gap
    # is half as long, counted from the first arrival: 0, 1 and 2 s.
    trace = _trace([(10, 4, 10.0), (20, 6, 12.0), (30, 8, 14.0)])
    assert trace.at_rate(0, 1.0).arrival_s.tolist() == [0.0, 1.0, 2.0]
    # at 0.25 request/s: twice as long, 0, 4 and 8 s
    assert trace.at_rate(0, 0.25).arrival_s.tolist() == [0.0, 4.0, 8.0]


def test_an_untimed_trace_at_a_rate_gets_poisson_arrivals_even_under_rate() -> None:
    # An untimed trace has no times to scale: its rows arrive as a Poisson stream at the rate.
    # This held without --rate but not with it (the load's rate was taken for the trace's own,
    # and every row arrived at 0: a batch at every rate a search tried).
    rows: list[tuple[int, int, float | None]] = [(10, 4, None), (20, 6, None), (30, 8, None)]
    plain, rated = _trace(rows), _trace(rows, rate_per_s=2.0)
    at2 = rated.at_rate(0, 2.0).arrival_s
    assert bool(np.all(np.diff(at2) > 0)) and at2[0] > 0
    assert np.array_equal(at2, plain.at_rate(0, 2.0).arrival_s)  # same seed, same stream
    assert np.array_equal(rated.at_rate(0, 4.0).arrival_s * 2, at2)


def test_clients_send_one_request_each_then_one_as_each_ends() -> None:
    requests = _fixed().with_clients(5, 2)
    # 2 clients: requests 0 and 1 start at 0, the rest wait for an end (NaN); client i mod 2
    assert requests.arrival_s[:2].tolist() == [0.0, 0.0]
    assert bool(np.all(np.isnan(requests.arrival_s[2:])))
    assert requests.client.tolist() == [0, 1, 0, 1, 0]
    assert requests.closed_loop and requests.think_time_s == 0.0
    one = _fixed().with_clients(3, 1)  # 1 client, the least allowed
    assert one.arrival_s[0] == 0.0 and bool(np.all(np.isnan(one.arrival_s[1:])))
    assert one.client.tolist() == [0, 0, 0]
    with pytest.raises(InputError, match="clients: must be >= 1"):
        _fixed().with_clients(3, 0)


def test_the_saturation_sample_is_cap_requests_part_way_then_the_backlog() -> None:
    workload = _fixed()
    assert workload.stationary_start()
    sample = workload.saturation_sample(3, 2)
    inputs, outputs = sample.input_tokens, sample.output_tokens
    # 2 running requests, each with g of its 50 tokens generated (0 <= g <= 49): prompt 100 + g,
    # 50 - g >= 1 to go, so 150 tokens at its end; its max_tokens falls by g too
    assert len(sample) == 5
    assert (inputs[:2] + outputs[:2]).tolist() == [150, 150]
    assert bool(np.all((outputs[:2] >= 1) & (outputs[:2] <= 50)))
    assert sample.max_output_tokens[:2].tolist() == outputs[:2].tolist()
    # then the 3-request backlog as drawn; everything waits at 0
    assert inputs[2:].tolist() == [100] * 3 and outputs[2:].tolist() == [50] * 3
    assert sample.arrival_s.tolist() == [0.0] * 5


def test_a_running_request_is_at_a_uniform_point_of_its_decode() -> None:
    # g = floor(U x 50), U uniform on [0, 1): g is uniform on 0..49, mean 24.5 and standard
    # deviation 14.4; over 2,000 requests the mean is 24.5 +/- 0.32, so within 1.5 of it
    # (4.6 standard errors); and g reaches both ends, 0 and 49
    sample = _fixed().saturation_sample(1, 2000)
    done = sample.input_tokens[:2000] - 100
    assert abs(float(done.mean()) - 24.5) < 1.5
    assert int(done.min()) == 0 and int(done.max()) == 49


def test_requests_that_share_content_start_from_the_backlog_alone() -> None:
    # a session trace (its rows carry a session_id): a turn depends on the turns before it,
    # so no stationary running set is drawn and the saturation sample is the backlog itself
    rows = [
        {"session_id": "a", "turn": 0, "input_tokens": 10, "output_tokens": 4, "arrival_s": 0.0},
        {"session_id": "a", "turn": 1, "input_tokens": 30, "output_tokens": 5, "think_s": 1.0},
    ]
    lines = tuple(json.dumps(r) for r in rows)
    trace = OnlineWorkload(WorkloadChoice(num_requests=1, trace_lines=lines), seed=3)
    assert not trace.sessions and trace.is_trace
    assert not trace.stationary_start()
    assert trace.saturation_sample(0, 5) is trace.backlog(0)


def test_the_mean_output_is_the_length_distributions() -> None:
    assert _fixed().mean_output_tokens() == 50.0
    # --random-range-ratio 0.5: uniform on the integers 25..50, mean (25 + 50) / 2 = 37.5
    assert _fixed(random_range_ratio=0.5).mean_output_tokens() == pytest.approx(37.5)
    # a trace's own: (4 + 6 + 8) / 3 = 6
    assert _trace([(10, 4, 2.0), (20, 6, 0.0), (30, 8, 4.0)]).mean_output_tokens() == 6.0


def test_single_requests_are_one_unit_and_double_freely() -> None:
    workload = _fixed()
    assert not workload.sessions and not workload.is_trace
    assert workload.requests_per_unit() == 1.0
    assert workload.max_doublings(5) == 5 and workload.max_doublings(0) == 0
    assert _trace([(10, 4, 2.0), (20, 6, 0.0)]).is_trace


def _sessions(seed: int = 3) -> OnlineWorkload:
    return OnlineWorkload(WorkloadChoice(num_requests=1, preset_name="multiturn-chat"), seed)


def test_a_session_preset_doubles_at_most_once_and_starts_empty() -> None:
    workload = _sessions()
    assert workload.sessions
    assert workload.max_doublings(5) == 1  # min(5, SESSION_DOUBLINGS = 1)
    assert workload.max_doublings(0) == 0
    assert not workload.stationary_start()  # a turn depends on the turns before it
    # a trace is never a session preset, whatever it holds
    assert not _trace([(10, 4, 2.0), (20, 6, 0.0)]).sessions


def test_a_session_saturation_sample_is_run_by_a_quarter_more_users_than_the_cap() -> None:
    workload = _sessions()
    # ceil(1.25 x 4) = 5 users, labelled 0..4; ceil(1.25 x 1) = 2
    assert np.unique(workload.saturation_sample(200, 4).client).tolist() == [0, 1, 2, 3, 4]
    assert np.unique(workload.saturation_sample(200, 1).client).tolist() == [0, 1]
    assert workload.backlog(10) is workload.backlog(10)  # drawn once per size and load


def test_the_reference_sample_is_drawn_with_seed_zero_whatever_the_runs_seed() -> None:
    from capcliff.analysis.evaluate.session_load import requests_per_session

    chat = WorkloadChoice(num_requests=1, preset_name="chat")  # random lengths
    at3, at0 = OnlineWorkload(chat, 3), OnlineWorkload(chat, 0)
    reference = at3.reference(50)
    assert np.array_equal(reference.input_tokens, at0.backlog(50).input_tokens)
    assert not np.array_equal(reference.input_tokens, at3.backlog(50).input_tokens)
    assert at3.reference(50) is reference  # one reference workload, memoised
    assert at0.reference(50) is at0.backlog(50)  # seed 0 is its own reference
    # sessions: the per-session figures come from the 1,000-request reference sample
    sessions = _sessions()
    thousand = sessions.reference(1000)
    assert len(thousand) == 1000
    assert sessions.requests_per_unit() == requests_per_session(thousand)
    assert sessions.requests_per_unit() > 1  # multi-turn: more than one request a session
    assert sessions.mean_output_tokens() == float(thousand.output_tokens.mean())


def test_a_timed_traces_saturation_sample_has_every_request_waiting() -> None:
    # Saturation is the most a replica serves with every request waiting. Rows recorded at
    # 1 request/s would otherwise cap it at the trace's own rate (a plan once read 100 req/s
    # "saturation" off a 100 req/s trace, and asked for twice the GPUs for 20 % headroom).
    timed = _trace([(10, 4, 0.0), (20, 6, 1.0), (30, 8, 2.0)])
    sample = timed.saturation_sample(0, 2)
    assert sample.arrival_s.tolist() == [0.0] * 5  # 2 seeds of the running set + 3 rows
    assert sample.input_tokens[2:].tolist() == [10, 20, 30]  # the rows, in the trace's order
    # the same rows untimed give the same sample, seeds included: the times do not matter
    untimed = _trace([(10, 4, None), (20, 6, None), (30, 8, None)]).saturation_sample(0, 2)
    assert sample.input_tokens.tolist() == untimed.input_tokens.tolist()
    assert sample.output_tokens.tolist() == untimed.output_tokens.tolist()
    # the load itself keeps the recorded times: 2 intervals over 2 s is 1 request/s
    assert timed.offered_rps() == pytest.approx(1.0)
    assert timed.backlog(0).arrival_s.tolist() == [0.0, 1.0, 2.0]


def test_a_session_traces_later_turns_still_follow_their_first() -> None:
    rows = [
        {"session_id": "a", "turn": 0, "input_tokens": 10, "output_tokens": 4, "arrival_s": 5.0},
        {"session_id": "a", "turn": 1, "input_tokens": 30, "output_tokens": 5, "think_s": 1.0},
        {"session_id": "b", "turn": 0, "input_tokens": 10, "output_tokens": 4, "arrival_s": 9.0},
    ]
    lines = tuple(json.dumps(r) for r in rows)
    trace = OnlineWorkload(WorkloadChoice(num_requests=1, trace_lines=lines), seed=3)
    arrivals = trace.saturation_sample(0, 5).arrival_s
    # first turns wait at t = 0; the later turn (NaN) is sent when turn 0 of "a" finishes
    assert arrivals[0] == 0.0 and np.isnan(arrivals[1]) and arrivals[2] == 0.0
