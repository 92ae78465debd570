"""Edges the seed-61 mutation sample (`benchmarks/mutation.py --packages analysis --seed 61`)
found untested. Every expected value is worked out by hand in the comments."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest

from capcliff.analysis.evaluate.steady_state import _window


def _run(arrival: list[float], ttft: list[float], finish: list[float]) -> Any:
    """The three per-request arrays `_window` reads (s)."""
    return SimpleNamespace(
        arrival_s=np.array(arrival), ttft_s=np.array(ttft), finish_s=np.array(finish)
    )


def test_the_warm_up_of_one_or_two_requests_keeps_the_last_one() -> None:
    # k = min(n - 1, ceil(0.2 n)): n = 1 gives min(0, 1) = 0, n = 2 gives min(1, 1) = 1, so the
    # window opens at the last request of the sorted order either way.
    one = _run([3.0], [0.5], [4.0])
    assert _window(one, open_loop=True) == (3.0, 3.0)
    # closed loop: from the k-th finish (4.0) to the latest first token (3.0 + 0.5)
    assert _window(one, open_loop=False) == (4.0, 3.5)
    two = _run([1.0, 0.0], [0.25, 0.5], [2.0, 3.0])
    assert _window(two, open_loop=True) == (1.0, 1.0)
    # finishes sorted 2.0, 3.0: k = 1 opens at 3.0; first tokens at 1.25 and 0.5
    assert _window(two, open_loop=False) == (3.0, 1.25)


def test_a_fleet_line_searches_replicas_within_one_node(monkeypatch: pytest.MonkeyPatch) -> None:
    # The fleet line on a GPU type tries one replica of each TP size up to the plan's GPUs, but a
    # replica never spans nodes: 4 GPUs on an 8-GPU node search up to 4, 16 GPUs up to 8.
    from capcliff.analysis.plan import online

    asked: list[int] = []

    def search(ctx: object, dep: object, gpus: int, **kw: object) -> tuple[None, dict[str, Any]]:
        asked.append(gpus)
        return None, {}

    monkeypatch.setattr(online, "resolve", lambda model, hardware, settings: None)
    monkeypatch.setattr(online, "_fleet_rank", lambda ctx, hardware: None)
    monkeypatch.setattr(online, "_search", search)
    ctx = SimpleNamespace(dep=SimpleNamespace(model=None, settings=None))
    node = SimpleNamespace(id="x8", gpus_per_node=8)
    line, note = online._type_fleet((ctx, node, 4))  # type: ignore[arg-type]
    assert line is None
    assert note == "x8: no replica of up to 4 GPUs fits and meets the target"
    online._type_fleet((ctx, node, 16))  # type: ignore[arg-type]
    assert asked == [4, 8]
