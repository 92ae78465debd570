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
