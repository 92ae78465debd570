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


def test_a_kv_pool_exactly_the_device_is_accepted_and_a_byte_more_refused() -> None:
    from capcliff.errors import InputError
    from tests.simtools import llama_8b_h200

    # "more than the device" refuses only past it: 80 GiB of 80 GiB is allowed
    dep = llama_8b_h200("vllm", gpu_total_memory="80GiB", kv_cache_memory="80GiB")
    assert dep.settings.kv_cache_memory == 80 * 2**30
    with pytest.raises(InputError, match="^kv_cache_memory: 80.00 GiB per GPU is more than"):
        llama_8b_h200("vllm", gpu_total_memory="80GiB", kv_cache_memory=80 * 2**30 + 1)


def test_the_step_label_names_only_the_overheads_that_are_there() -> None:
    from capcliff.analysis.evaluate.replica_models import step_label
    from tests.simtools import llama_8b_h200

    # vLLM models no request overhead (0 s) and its speculation keeps the overlap scheduler (no
    # host time per step): neither is named. SGLang's speculative worker without SPEC_V2 has
    # host time per step, and its front end a request overhead: both are.
    plain = step_label(llama_8b_h200("vllm"))
    assert "request overhead" not in plain
    spec = step_label(llama_8b_h200("vllm", speculative="ngram:3", spec_accept_length=2.0))
    assert "speculative ngram:3, 2.00 tokens/step" in spec
    assert "no overlap scheduler" not in spec
    assert "request overhead" not in spec
    sglang = step_label(llama_8b_h200("sglang", speculative="ngram:3", spec_accept_length=2.0))
    assert "; no overlap scheduler: " in sglang
    assert "; request overhead " in sglang


def test_a_run_opened_inside_a_run_is_the_outer_one(monkeypatch: pytest.MonkeyPatch) -> None:
    from capcliff.analysis import parallel

    monkeypatch.setattr(parallel, "idle_cores", lambda: 4)
    with parallel.run_pool(4):
        outer = parallel._current_run()
        assert outer is not None and outer.workers == 4
        with parallel.run_pool(2):  # nested: no second pool, the outer run's 4 workers
            assert parallel._current_run() is outer
        assert parallel._current_run() is outer  # the inner exit leaves the outer run open
    assert parallel._current_run() is None
