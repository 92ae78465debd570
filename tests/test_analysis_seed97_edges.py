"""Edges the seed-97 mutation sample (`benchmarks/mutation.py --packages analysis --seed 97`)
found untested. Every expected value is worked out by hand in the comments."""

from __future__ import annotations

import math

from capcliff.analysis.deployment import DeploymentSettings, resolve
from capcliff.analysis.disagg.fleet import _limit
from capcliff.analysis.plan.ties import Option, decide, simplicity
from capcliff.catalog.catalogs import get_hardware, get_model


def test_no_pipeline_comes_before_fewer_gpus_per_replica() -> None:
    # the rule's first criterion is "no PP": tp1-pp2 uses 2 GPUs per replica and tp4 uses 4,
    # but tp4 has no pipeline stages, so it is the simpler of the two and wins their tie
    # (0.98 is 2 % below 1.0, inside the 10 % band)
    pp = Option("tp1-pp2", 1.0, tp=1, pp=2)
    tp = Option("tp4", 0.98, tp=4, pp=1)
    assert simplicity(tp) < simplicity(pp)
    assert simplicity(tp) == (False, 4, 1, 4)
    assert decide([pp, tp])[0] is tp


def test_without_speculation_a_sequence_holds_no_lookahead_slots() -> None:
    # no speculative method: nothing is verified ahead, so 0 slots (capacity() only asks under
    # speculation; the method's own answer is pinned here)
    dep = resolve(get_model("llama-3.1-8b"), get_hardware("h200-sxm"), DeploymentSettings())
    assert dep.speculation is None
    assert dep.lookahead_tokens_per_sequence() == 0


def test_the_cheapest_cluster_report_echoes_a_finite_slo_limit_and_none_for_no_limit() -> None:
    # an SLO limit left out is infinite inside the search; the report says None (no limit) for
    # it and carries a given limit as it was given (2.0 s, 0.05 s)
    assert _limit(2.0) == 2.0
    assert _limit(0.05) == 0.05
    assert _limit(math.inf) is None
