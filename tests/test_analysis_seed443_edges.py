"""Edges the analysis mutation sample of seed 443 found untested (benchmarks/mutation.py
--packages analysis --sample 40 --seed 443): each value worked out by hand in its comment."""

from __future__ import annotations

import numpy as np


def test_an_empty_backlog_of_sessions_is_one_request_sent_at_once() -> None:
    from capcliff.analysis.evaluate.online_load import OnlineWorkload
    from capcliff.analysis.workloads import WorkloadChoice

    # a backlog asked for 0 requests is drawn as 1 (max(n, 1)); as any backlog, one user per
    # session sends its first turn at t = 0: a backlog of one request has one user, user 0
    chat = OnlineWorkload(WorkloadChoice(num_requests=100, preset_name="multiturn-chat"), 0)
    one = chat.backlog(0)
    assert len(one) == 1
    np.testing.assert_array_equal(one.arrival_s, [0.0])
    np.testing.assert_array_equal(one.client, [0])


def test_a_request_done_exactly_at_the_last_arrival_is_done_in_the_window() -> None:
    from capcliff.analysis.disagg.online import falls_behind

    # 125 arrivals, one a second (0 to 124 s): the window runs from arrival ceil(0.2 x 125) = 25
    # (25 s) to the last (124 s), 100 arrivals, so a growing queue needs a deficit over
    # max(0.2 x 100, 4 sqrt(200) = 56.57). The warm-up's 25 finish after the window; of the
    # window's, 43 finish half a second after they arrive (25.5 to 67.5 s), one exactly at
    # 124 s, the rest at 200 s: 44 done, a deficit of 56, so the queue keeps up. Without the
    # one at 124 s it would be 57, over the bound.
    arrived = np.arange(125.0)
    done = np.full(125, 200.0)
    done[:25] = 300.0
    done[25:68] = arrived[25:68] + 0.5
    done[68] = 124.0
    assert not falls_behind(arrived, done)
    done[68] = 124.5
    assert falls_behind(arrived, done)


def test_the_cap_grid_is_the_half_octave_factors_times_the_base() -> None:
    from types import SimpleNamespace
    from typing import Any

    from capcliff.analysis.evaluate.capacity import sweep_caps

    # CAP_FACTORS 0.5, 0.71, 1, 1.41, 2 times a base of 1,000: 500, 710, 1,000, 1,410, 2,000
    # (not 1,000 / 0.71 = 1,408 or 1,000 / 1.41 = 709); capped at the larger of the base and
    # the engine's max_num_seqs
    def replica(seqs: int) -> Any:
        return SimpleNamespace(config=SimpleNamespace(max_num_seqs=seqs))

    assert sweep_caps(replica(4096), 1000) == [500, 710, 1000, 1410, 2000]
    assert sweep_caps(replica(256), 1000) == [500, 710, 1000]
    # 2,000 clipped to a limit of 1,500: 1,410 lies within half a grid step (1.19) below it
    # (1,500 / 1,410 = 1.06) and is the limit again; 1,800 / 1,410 = 1.28 keeps it
    assert sweep_caps(replica(1500), 1000) == [500, 710, 1000, 1500]
    assert sweep_caps(replica(1800), 1000) == [500, 710, 1000, 1410, 1800]
    # the trial's case: a base of 45 under --max-num-seqs 64 tried 63 and 64 (64 / 63 = 1.02)
    assert sweep_caps(replica(64), 45) == [22, 32, 45, 64]
