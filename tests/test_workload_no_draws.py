"""A workload that draws nothing needs no random generator (`draws`): fixed lengths sent all at
once or by closed-loop clients. The batch plan's workload is one, so it never loads numpy's
random module (about 9 ms of CPU)."""

from __future__ import annotations

import numpy as np
import pytest

from capcliff.perf import moe_tables
from capcliff.perf.moe_tables import has_table_shape
from capcliff.sim.traffic.workload import (
    Arrival,
    Fixed,
    LogNormal,
    Uniform,
    WorkloadSpec,
    draws,
    generate_requests,
)
from tests.conftest import arch_of


def test_fixed_lengths_at_once_need_no_generator() -> None:
    # 5 requests of 4,000 in and 1,000 out, all at t = 0: nothing is drawn, so the requests are
    # those lengths and zeros, by hand, with or without a generator
    spec = WorkloadSpec(num_requests=5, input=Fixed(4000), output=Fixed(1000))
    assert not draws(spec)
    bare = generate_requests(spec, None)
    assert bare.input_tokens.tolist() == [4000] * 5
    assert bare.output_tokens.tolist() == [1000] * 5
    assert bare.arrival_s.tolist() == [0.0] * 5
    drawn = generate_requests(spec, np.random.default_rng(7))
    for name in ("input_tokens", "output_tokens", "max_output_tokens", "arrival_s", "client"):
        assert np.array_equal(getattr(bare, name), getattr(drawn, name)), name


def test_closed_loop_clients_draw_nothing_either() -> None:
    # 2 clients: the first two requests start at t = 0, the other three when a client frees up
    spec = WorkloadSpec(
        num_requests=5, input=Fixed(10), output=Fixed(3), arrival=Arrival.CLIENTS, clients=2
    )
    assert not draws(spec)
    requests = generate_requests(spec, None)
    assert requests.arrival_s[:2].tolist() == [0.0, 0.0]
    assert np.isnan(requests.arrival_s[2:]).all()
    assert requests.client.tolist() == [0, 1, 0, 1, 0]


@pytest.mark.parametrize(
    "spec",
    [
        WorkloadSpec(num_requests=3, input=Uniform(1, 9), output=Fixed(5)),
        WorkloadSpec(num_requests=3, input=Fixed(5), output=LogNormal(100.0, 400.0)),
        WorkloadSpec(
            num_requests=3, input=Fixed(5), output=Fixed(5), arrival=Arrival.POISSON,
            rate_per_s=2.0,
        ),
    ],
)  # fmt: skip
def test_a_workload_that_draws_refuses_to_run_without_a_generator(spec: WorkloadSpec) -> None:
    assert draws(spec)
    with pytest.raises(ValueError, match="needs a generator"):
        generate_requests(spec, None)


def test_a_dense_model_is_ruled_out_of_the_moe_tables_without_reading_them(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def unread() -> dict[str, object]:
        raise AssertionError("the MoE tables' file was read for a dense model")

    monkeypatch.setattr(moe_tables, "_file", unread)
    assert not has_table_shape(arch_of("qwen3-32b"))  # dense: no routed experts at all
