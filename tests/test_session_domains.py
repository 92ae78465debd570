"""The domains of SessionSpec and generate_sessions (capcliff/sim/traffic/sessions.py) at their
edges: each bound is inclusive or exclusive as its error message says."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from capcliff.errors import InputError
from capcliff.sim.traffic.sessions import SessionSpec, generate_sessions
from capcliff.sim.traffic.workload import Uniform


def _spec(**kw: Any) -> SessionSpec:
    base: dict[str, Any] = {"mean_turns": 2, "user_input": Uniform(5, 10), "output": Uniform(1, 5)}
    return SessionSpec(**(base | kw))


@pytest.mark.parametrize(
    "kw",
    [
        {"mean_turns": 1},  # ">= 1"
        {"prefix_tokens": 0},  # ">= 0"
        {"prefixes": 1},  # ">= 1"
        {"think_time_s": 0.0},  # ">= 0"
        {"fanout_probability": 0.0},  # "in [0, 1]"
        {"fanout_probability": 1.0},
        {"prefix_tokens": 98, "max_context_tokens": 100},  # 100 > 98 + 1
    ],
    ids=str,
)
def test_session_spec_accepts_its_edges(kw: dict[str, Any]) -> None:
    _spec(**kw)


@pytest.mark.parametrize(
    "kw",
    [
        {"mean_turns": 0.99},
        {"prefix_tokens": -1},
        {"prefixes": 0},
        {"think_time_s": -0.001},
        {"fanout_probability": -0.01},
        {"fanout_probability": 1.01},
        {"prefix_tokens": 99, "max_context_tokens": 100},  # 100 is not > 99 + 1
    ],
    ids=str,
)
def test_session_spec_refuses_just_past_its_edges(kw: dict[str, Any]) -> None:
    with pytest.raises(InputError, match="sessions:"):
        _spec(**kw)


def test_one_request_by_one_client_is_valid() -> None:
    requests = generate_sessions(_spec(), 1, np.random.default_rng(0), clients=1)
    assert len(requests.input_tokens) == 1


@pytest.mark.parametrize(
    ("num", "clients", "rate", "field"),
    [(0, 1, None, "num_requests"), (5, 0, None, "clients"), (5, None, 0.0, "rate")],
)
def test_generate_sessions_refuses_zero(
    num: int, clients: int | None, rate: float | None, field: str
) -> None:
    with pytest.raises(InputError, match=field):
        generate_sessions(_spec(), num, np.random.default_rng(0), clients=clients, rate_per_s=rate)
