"""Edges the analysis mutation sample of seed 557 found untested (benchmarks/mutation.py
--packages analysis --sample 40 --seed 557): each value worked out by hand in its comment."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest

from capcliff.analysis.plan.fleet import Unit, replicas_for
from capcliff.analysis.plan.online_rows import _capacity
from capcliff.analysis.plan.types import CapSaturation, LoadPoint
from capcliff.analysis.sweep.step_fit import _with_shared_prefix
from capcliff.catalog.layout import Layout
from capcliff.errors import InputError
from capcliff.sim.traffic.workload import Requests


def test_a_negative_headroom_is_refused() -> None:
    # Headroom is the share of a replica's sustained rate kept spare, in [0, 1): -0.2 would run
    # replicas at 120 % of what they sustain (10 requests/s on 4/s replicas: ceil(10 / 4.8) = 3
    # instead of 4 at 20 %), so it is refused naming the field like 1.0 is.
    # (Seed 557's `0 <= headroom` -> `-1 <= headroom` let it through.)
    unit = Unit(Layout(), 1, 4.0, 64, 2.0)
    with pytest.raises(InputError, match=r"^headroom: must be in \[0, 1\), got -0.2$"):
        replicas_for(unit, offered_rps=10.0, clients=None, headroom=-0.2)


def test_a_one_token_shared_prefix_is_a_content_node() -> None:
    # A shared prefix of 1 token is still shared: content node 0 is the prefix, request i is node
    # i + 1, forked from node 0 after 1 token. Only 0 tokens leaves the requests as they are.
    # (Seed 557's `tokens <= 0` -> `<= 1` dropped a 1-token prefix.)
    requests = Requests(np.array([5, 7, 9]), np.array([2, 2, 2]), np.array([2, 2, 2]),
                        np.zeros(3))  # fmt: skip
    shared = _with_shared_prefix(requests, 1)
    assert shared.content_node.tolist() == [1, 2, 3]
    assert shared.content_parent.tolist() == [-1, 0, 0, 0]
    assert shared.content_fork_tokens.tolist() == [0, 1, 1, 1]
    assert _with_shared_prefix(requests, 0) is requests


def test_each_caps_saturation_counts_every_replica_of_the_layout() -> None:
    # A layout of dp = 2 engine replicas, ranked without an SLO. Each point is one replica's run:
    # cap 64 finishes 3 requests/s, cap 128 (the chosen cap) 4.5/s at 900 output tok/s. The
    # layout's rates are all replicas together (`CapSaturation`, `LoadPoint`): 6 and 9
    # requests/s, 1,800 tok/s; a probe at 2.5 requests/s per replica is 5 offered.
    # (Seed 557's `throughput_rps * dp` -> `/ dp` gave each cap 1.5 and 2.25 requests/s.)
    def point(cap: int, rps: float, short: bool) -> SimpleNamespace:
        return SimpleNamespace(
            cap=cap, hit_cliff=short, state=SimpleNamespace(throughput_rps=rps, output_tok_s=900.0),
            thrashing=False, requests=5 * cap,
        )  # fmt: skip

    probe = SimpleNamespace(
        cap=128, rate_rps=2.5, meets=True,
        state=SimpleNamespace(ttft_p99_s=0.5, tpot_p99_s=0.05),
    )  # fmt: skip
    capacity = SimpleNamespace(
        cap=128, at_sustained=None, points=[point(128, 4.5, True), point(64, 3.0, False)],
        probes=[probe], meets_slo=True, best_ttft_p99_s=None, best_tpot_p99_s=None, settled=True,
        simulated_requests=1_000,
    )  # fmt: skip
    ev: Any = SimpleNamespace(
        capacity=capacity, memory=SimpleNamespace(layout=SimpleNamespace(dp=2)), refined=False,
        saturation_rps=9.0, sustained_rps=9.0,
    )  # fmt: skip
    row = _capacity(ev, within_slo=False)
    assert row.caps == [
        CapSaturation(max_num_seqs=64, saturation_rps=6.0, kv_ran_short=False, thrashing=False,
                      requests=320),
        CapSaturation(max_num_seqs=128, saturation_rps=9.0, kv_ran_short=True, thrashing=False,
                      requests=640),
    ]  # fmt: skip
    assert row.output_tok_s == 1800.0
    assert row.load_curve == [
        LoadPoint(max_num_seqs=128, offered_rps=5.0, ttft_p99_s=0.5, tpot_p99_s=0.05,
                  meets_slo=True)
    ]  # fmt: skip
