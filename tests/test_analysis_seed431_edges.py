"""Edges the analysis mutation sample of seed 431 found untested (benchmarks/mutation.py
--packages analysis --sample 40 --seed 431): each value worked out by hand in its comment."""

from __future__ import annotations

import numpy as np
import pytest

from capcliff.analysis.deployment_settings import settings_of
from capcliff.errors import InputError


@pytest.mark.parametrize(
    ("values", "named"),
    [
        # declared order: gpu_memory_utilization, then max_num_seqs, then block_size
        ({"block_size": 0, "max_num_seqs": 0}, "--max-num-seqs: "),
        ({"max_num_seqs": 0, "gpu_memory_utilization": 2.0}, "--gpu-memory-utilization: "),
    ],
)
def test_of_several_bad_settings_the_first_declared_is_named(
    values: dict[str, object], named: str
) -> None:
    # one line, one field: the first of the model's fields that fails, whatever the order given
    with pytest.raises(InputError) as caught:
        settings_of(values)
    assert str(caught.value).startswith(named)


def test_the_analytic_cliff_at_a_percentile_reads_that_percentile_of_the_peaks() -> None:
    from capcliff.analysis.evaluate.solver import analytic_cliff_percentile
    from capcliff.sim.traffic.workload import Requests

    # peaks (input + output - 1) of 100 and 200 tokens; their median, interpolated, is 150
    # tokens, so 1,500 one-token blocks hold 10 such requests per replica, 20 on two
    outputs = np.array([50, 100])
    requests = Requests(
        input_tokens=np.array([51, 101]), output_tokens=outputs, max_output_tokens=outputs,
        arrival_s=np.zeros(2),
    )  # fmt: skip
    at = {"blocks_per_replica": 1500, "block_size": 1}
    assert analytic_cliff_percentile(requests, percentile=50, **at) == 10
    assert analytic_cliff_percentile(requests, percentile=50, dp=2, **at) == 20
    # the p99 peak is 100 + 0.99 x 100 = 199 tokens: 1,500 // 199 = 7
    assert analytic_cliff_percentile(requests, percentile=99, **at) == 7


def test_a_sweet_spot_at_the_cliff_is_not_also_past_it() -> None:
    from types import SimpleNamespace

    from capcliff.analysis.sweep.timelines import _named_points

    # the sweet spot, 16, already hit the cliff and no larger cap was swept: nothing lies past
    # it, so only the sweet spot is named (not the same point twice)
    points = tuple(
        SimpleNamespace(concurrency=c, hit_cliff=cliff) for c, cliff in ((8, False), (16, True))
    )
    named = _named_points(points, 16)  # type: ignore[arg-type]
    assert {name: p.concurrency for name, p in named.items()} == {"sweet spot": 16}


def test_a_ttft_cut_of_exactly_the_tolerance_is_not_worth_an_offload() -> None:
    from capcliff.analysis.plan.reuse_advice import ReusePoint, recommended_size
    from capcliff.units import GIB

    def point(offload_gib: int, ttft_s: float) -> ReusePoint:
        label = f"offload {offload_gib} GiB" if offload_gib else "caching on"
        return ReusePoint(
            label=label, offload_bytes=offload_gib * GIB, prefix_cache_hit_rate=0.4,
            offload_hit_rate=0.0, ttft_p99_s=ttft_s, output_throughput_tok_s=1.0, preemptions=0,
        )  # fmt: skip

    # no hit gain; offload pays only when it cuts TTFT p99 by MORE than 10 %: 1.0 s -> 0.9 s is
    # exactly 10 % (1 - 0.10 is the float 0.9), so no size is recommended; 0.89 s is more
    assert recommended_size([point(0, 1.0), point(64, 0.9)]) == 0
    assert recommended_size([point(0, 1.0), point(64, 0.89)]) == 64 * GIB


def test_when_nothing_meets_the_search_is_quoted_up_to_its_dearest_option() -> None:
    from types import SimpleNamespace
    from typing import Any, cast

    from capcliff.analysis.disagg.fleet_reasons import Spent, cheapest_reasons
    from capcliff.analysis.disagg.options import MAX_NODES

    options = [SimpleNamespace(usd_per_hour=p) for p in (12.0, 48.5, 24.0)]
    spent = Spent(
        options=cast(Any, options), tried=[], stop=None, rate_per_s=2.0, offered_tok_s=500.0,
        types=["h100-sxm", "h200-sxm"], skipped=1,
    )  # fmt: skip
    # the dearest of the three options searched, $48.50 per hour, bounds the search; 3 options
    # less 1 skipped split were simulated
    assert cheapest_reasons(spent, None, (False, None, False)) == [
        f"no option up to {MAX_NODES} nodes of h100-sxm, h200-sxm ($48.50 per hour) meets the "
        "SLOs at this rate (2 options simulated, 1 split skipped as their prefill pool "
        "falls behind)"
    ]
