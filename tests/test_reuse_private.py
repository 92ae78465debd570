"""Requests whose content is their own (no block two requests share): the prefix cache can hit
only a preempted request's own blocks, so a run without preemptions is the same with the cache
on or off, whatever the offload tiers (`prefix_reuse.content_is_private`), and the reuse advice
simulates it once."""

from __future__ import annotations

import dataclasses
import json
import math
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from capcliff.analysis.evaluate import online_load as load_module
from capcliff.analysis.evaluate.capacity import Replica
from capcliff.analysis.evaluate.online_load import OnlineWorkload
from capcliff.analysis.plan import fleet as fleet_module
from capcliff.analysis.plan import reuse_advice as advice_module
from capcliff.analysis.plan import runs as runs_module
from capcliff.analysis.plan.reuse_advice import reuse_advice
from capcliff.analysis.plan.runs import SimRuns
from capcliff.analysis.workloads import WorkloadChoice
from capcliff.catalog.layout import Layout
from capcliff.cli import app
from capcliff.errors import InputError
from capcliff.sim.config import KVCapacity, SimConfig
from capcliff.sim.result import SimResult
from capcliff.sim.reuse.kv_tiers import KVTier
from capcliff.sim.reuse.prefix_cache import PrefixCache
from capcliff.sim.reuse.prefix_reuse import content_is_private
from capcliff.sim.simulate import simulate
from capcliff.sim.traffic.workload import Requests, parse_trace
from tests.simtools import constant_model, llama_8b_h200, toy_model


def _requests(
    prompts: list[int],
    outputs: list[int],
    arrivals: list[float],
    *,
    node: list[int] | None = None,
    parent: list[int] | None = None,
) -> Requests:
    """Requests on content nodes (default: request i on its own root node i)."""
    n = len(prompts)
    node = list(range(n)) if node is None else node
    parent = [-1] * (max(node) + 1) if parent is None else parent
    return Requests(
        input_tokens=np.asarray(prompts, dtype=np.int64),
        output_tokens=np.asarray(outputs, dtype=np.int64),
        max_output_tokens=np.asarray(outputs, dtype=np.int64),
        arrival_s=np.asarray(arrivals, dtype=np.float64),
        content_node=np.asarray(node, dtype=np.int64),
        content_parent=np.asarray(parent, dtype=np.int64),
        content_fork_tokens=np.zeros(len(parent), dtype=np.int64),
    )


def _differences(x: Any, y: Any, path: str = "") -> list[str]:
    """The fields where x and y differ, bit for bit (NaN equals NaN)."""
    if (x is None) != (y is None):
        return [path]
    if dataclasses.is_dataclass(x) and not isinstance(x, type):
        return [d for f in dataclasses.fields(x) for d in _differences(
            getattr(x, f.name), getattr(y, f.name), f"{path}.{f.name}")]  # fmt: skip
    if isinstance(x, np.ndarray):
        same = x.dtype == y.dtype and np.array_equal(x, y, equal_nan=x.dtype.kind == "f")
        return [] if same else [path]
    if isinstance(x, tuple | list):
        if len(x) != len(y):
            return [path]
        return [d for k, (a, b) in enumerate(zip(x, y, strict=True))
                for d in _differences(a, b, f"{path}[{k}]")]  # fmt: skip
    if isinstance(x, float) and math.isnan(x) and math.isnan(y):
        return []
    return [] if x == y else [path]


def test_requests_each_on_its_own_root_node_are_private() -> None:
    assert content_is_private(_requests([5, 6, 7], [2, 2, 2], [0.0, 0.0, 0.0]))


def test_requests_without_content_nodes_are_private() -> None:
    plain = Requests(np.array([5, 6]), np.array([2, 2]), np.array([2, 2]), np.zeros(2))
    assert content_is_private(plain)


def test_two_turns_of_one_session_share_their_node() -> None:
    assert not content_is_private(_requests([5, 12], [2, 2], [0.0, 0.0], node=[0, 0]))


def test_two_sessions_under_one_shared_prefix_share_its_node() -> None:
    # nodes 1 and 2 both fork from the prefix node 0: node 0 is on both paths
    shared = _requests([5, 6], [2, 2], [0.0, 0.0], node=[1, 2], parent=[-1, 0, 0])
    assert not content_is_private(shared)


def test_one_session_under_a_prefix_of_its_own_is_private() -> None:
    # node 1 forks from node 0, which no other request's path passes
    alone = _requests([5, 6], [2, 2], [0.0, 0.0], node=[1, 2], parent=[-1, 0, -1])
    assert content_is_private(alone)


def test_a_preempted_request_re_hits_its_own_blocks_so_the_cache_changes_that_run() -> None:
    # The case of tests/test_sim_retained.py: 2 requests of 8 + 10 tokens in 6 blocks of 4, 1 ms
    # per step. B is preempted at 12 tokens (3 full blocks cached); A's blocks in steps 5 and 9
    # take two of them from the LRU head, so B's recompute hits 1 block: 4 tokens it need not
    # compute again, which the run with the cache off computes.
    requests = _requests([8, 8], [10, 10], [0.0, 0.0])
    assert content_is_private(requests)
    capacity = KVCapacity(6, 4)
    on = simulate(requests, constant_model(1e-3), capacity, SimConfig(prefix_caching=True))
    off = simulate(requests, constant_model(1e-3), capacity, SimConfig(prefix_caching=False))
    assert list(on.preemptions) == list(off.preemptions) == [0, 1]
    assert on.reuse is not None and on.reuse.prefill_tokens_saved == 4
    assert off.scheduled_tokens - on.scheduled_tokens == 4


TIER = KVTier("cpu", tokens=4096, read_bytes_per_s=1e12, write_bytes_per_s=1e9, latency_s=1e-6)


@settings(max_examples=60, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    policy=st.sampled_from(["vllm", "vllm-first-chunk", "sglang"]),
    tiers=st.booleans(),
)
def test_without_preemptions_private_requests_run_alike_with_the_cache_on_or_off(
    seed: int, policy: str, tiers: bool
) -> None:
    rng = np.random.default_rng(seed)
    n = int(rng.integers(5, 40))
    prompts = rng.integers(1, 120, n).tolist()
    outputs = rng.integers(1, 60, n).tolist()
    arrivals = np.cumsum(rng.exponential(0.002, n)) if seed % 2 else np.zeros(n)
    requests = _requests(prompts, outputs, arrivals.tolist())
    block = int(rng.choice([1, 4, 16]))
    need = max(p + o for p, o in zip(prompts, outputs, strict=True))
    blocks = -(-need // block) + int(rng.integers(0, 3 * need)) // block
    capacity = KVCapacity(
        blocks, block, kv_bytes_per_token=1000, tiers=(TIER,) if tiers else (),
        offload_write_back=bool(seed % 3 == 0),
    )  # fmt: skip
    seqs = int(rng.integers(1, 16))
    config = SimConfig(
        policy=policy, max_num_seqs=seqs, max_num_batched_tokens=int(rng.integers(seqs, 200))
    )
    model = toy_model()
    off = simulate(requests, model, capacity, dataclasses.replace(config, prefix_caching=False))
    on: SimResult = simulate(
        requests, model, capacity, dataclasses.replace(config, prefix_caching=True)
    )
    if off.total_preemptions:  # then the cache may give a request its own blocks back
        return
    assert _differences(off, on) == [".reuse"]
    assert on.reuse is not None and on.reuse.prefill_tokens_saved == 0
    assert all(t.hit_tokens == 0 for t in on.reuse.tiers)


def _configs_run(monkeypatch: pytest.MonkeyPatch, module: Any) -> list[SimConfig]:
    """The config of each run `module` asks `simulate` for, as the runs come."""
    configs: list[SimConfig] = []
    real = module.simulate

    def recording(*args: Any, **kwargs: Any) -> SimResult:
        configs.append(args[3])
        return real(*args, **kwargs)

    monkeypatch.setattr(module, "simulate", recording)
    return configs


def _advice_inputs(requests: Requests) -> tuple[Any, Any, Requests, SimConfig]:
    dep = llama_8b_h200("vllm")
    memory = dep.memory(Layout(tp=1), 2048)
    config = dataclasses.replace(dep.sim_config(2048), max_num_seqs=8, prefix_caching=True)
    return dep, memory, requests, config


def _trace(rng: np.random.Generator, n: int) -> tuple[list[int], list[int], list[float]]:
    prompts = rng.integers(20, 400, n).tolist()
    outputs = rng.integers(5, 80, n).tolist()
    return prompts, outputs, np.cumsum(rng.exponential(0.01, n)).tolist()


def test_the_advice_on_private_requests_is_the_advice_of_every_replay(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    requests = _requests(*_trace(np.random.default_rng(7), 300))
    inputs = _advice_inputs(requests)
    calls = _configs_run(monkeypatch, advice_module)
    once = reuse_advice(*inputs)
    assert len(calls) == 1  # the caching-off run alone
    monkeypatch.setattr(advice_module, "content_is_private", lambda _: False)
    every = reuse_advice(*inputs)
    assert once is not None and every is not None
    # caching off, caching on, and each offload size (64 GiB doubling within the host's DRAM)
    assert len(calls) == 1 + len(every.points)
    assert once == every
    assert [p.prefix_cache_hit_rate for p in once.points][:2] == [None, 0.0]


def test_requests_that_share_content_are_replayed_at_every_size(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # two-turn sessions: request 2k + 1 is the second turn of request 2k (one node each pair)
    prompts, outputs, arrivals = _trace(np.random.default_rng(11), 200)
    node = [i // 2 for i in range(200)]
    requests = _requests(prompts, outputs, arrivals, node=node)
    calls = _configs_run(monkeypatch, advice_module)
    advice = reuse_advice(*_advice_inputs(requests))
    assert advice is not None
    assert len(calls) == len(advice.points) >= 3  # off, on and at least one offload size
    assert advice.points[1].prefix_cache_hit_rate is not None
    assert advice.points[1].prefix_cache_hit_rate > 0


def _replica(blocks: int) -> tuple[Replica, SimConfig]:
    config = SimConfig(policy="vllm", max_num_seqs=4, max_num_batched_tokens=64)
    return Replica(constant_model(1e-3), KVCapacity(blocks, 4), config), config


def test_the_fleet_check_of_private_requests_runs_with_the_cache_off_when_none_is_preempted(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # 6 requests of 8 + 10 tokens, 4 at a time in 60 blocks of 4: 4 x 5 = 20 blocks at most
    requests = _requests([8] * 6, [10] * 6, [0.0] * 6)
    replica, config = _replica(60)
    configs = _configs_run(monkeypatch, fleet_module)
    result = fleet_module._fleet_run(
        replica, requests, replace(config, prefix_caching=None), (1, 1)
    )
    assert [c.prefix_caching for c in configs] == [False]
    on = replace(config, prefix_caching=True)
    configured = simulate(requests, replica.steps, replica.capacity, on)
    assert _differences(result, configured) == [".reuse"]


def test_the_fleet_check_runs_as_configured_once_the_cache_off_run_preempts(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # 2 requests of 8 + 10 tokens in 6 blocks of 4: the second is preempted (see above), and
    # the cache then gives it a block back: the run with the cache off is not the fleet's
    requests = _requests([8, 8], [10, 10], [0.0, 0.0])
    replica, config = _replica(6)
    configs = _configs_run(monkeypatch, fleet_module)
    result = fleet_module._fleet_run(
        replica, requests, replace(config, prefix_caching=None), (1, 1)
    )
    assert [c.prefix_caching for c in configs] == [False, None]
    assert result.reuse is not None and result.reuse.prefill_tokens_saved == 4


def test_the_fleet_check_of_shared_content_runs_as_configured_at_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    requests = _requests([8, 20], [4, 4], [0.0, 0.5], node=[0, 0])  # two turns of one session
    replica, config = _replica(60)
    configs = _configs_run(monkeypatch, fleet_module)
    fleet_module._fleet_run(replica, requests, replace(config, prefix_caching=None), (1, 1))
    assert [c.prefix_caching for c in configs] == [None]


def test_a_root_node_owns_every_block_of_a_lookup_from_its_start() -> None:
    # blocks of 4: root 0 from block 0; node 1 forks from it at 8 tokens (its own part from block
    # 2); root 2 starts at 6 tokens (block 1)
    cache = PrefixCache([-1, 0, -1], [0, 8, 6], 4)
    assert cache.segments(0, 5) == [(0, 0, 5)]
    assert cache.segments(0, 0) == []
    assert cache.segments(1, 5) == [(0, 0, 2), (1, 2, 5)]
    assert cache.segments(2, 3) == [(2, 1, 3)]
    assert cache.segments(2, 1) == []


def test_a_timed_trace_is_parsed_once_for_its_label_and_its_backlog(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    lines = tuple(
        json.dumps({"session_id": f"s{i}", "turn": 0, "input_tokens": 50 + i,
                    "output_tokens": 20, "arrival_s": i * 0.01})
        for i in range(5)
    )  # fmt: skip
    parses: list[int] = []
    real = load_module.plan_workloads

    def counting(*args: Any, **kwargs: Any) -> Any:
        parses.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(load_module, "plan_workloads", counting)
    workload = OnlineWorkload(WorkloadChoice(num_requests=1, trace_lines=lines), seed=3)
    backlog = workload.backlog(0)
    assert len(parses) == 1
    assert backlog.input_tokens.tolist() == [50, 51, 52, 53, 54]
    assert backlog.arrival_s.tolist() == [0.0, 0.01, 0.02, 0.03, 0.04]


def test_a_trace_line_with_a_byte_order_mark_is_refused_as_json_refuses_it() -> None:
    with pytest.raises(InputError, match=r"trace line 1: \(json\): Unexpected UTF-8 BOM"):
        parse_trace(['\ufeff{"input_tokens": 5, "output_tokens": 2}'])


def test_a_trace_line_naming_a_key_twice_is_refused() -> None:
    with pytest.raises(InputError, match=r"trace line 2: .*'output_tokens': key given twice"):
        parse_trace(['{"input_tokens": 5, "output_tokens": 2}',
                     '{"input_tokens": 5, "output_tokens": 2, "output_tokens": 3}'])  # fmt: skip


def test_runs_with_equal_inputs_are_simulated_once(monkeypatch: pytest.MonkeyPatch) -> None:
    configs = _configs_run(monkeypatch, runs_module)
    runs, model, capacity = SimRuns(), constant_model(1e-3), KVCapacity(60, 4)
    first = runs.simulate(_requests([8, 9], [4, 4], [0.0, 0.1]), model, capacity, SimConfig())
    again = runs.simulate(_requests([8, 9], [4, 4], [0.0, 0.1]), model, capacity, SimConfig())
    assert again is first and len(configs) == 1


def test_a_default_prefix_cache_is_the_setting_it_resolves_to(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # requests on content nodes: None (the engine's default) resolves to on for vllm
    configs = _configs_run(monkeypatch, runs_module)
    runs, model, capacity = SimRuns(), constant_model(1e-3), KVCapacity(60, 4)
    requests = _requests([8, 9], [4, 4], [0.0, 0.1])
    runs.simulate(requests, model, capacity, SimConfig(prefix_caching=None))
    runs.simulate(requests, model, capacity, SimConfig(prefix_caching=True))
    assert [c.prefix_caching for c in configs] == [True]


def test_runs_of_other_requests_or_settings_are_simulated_apart(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    configs = _configs_run(monkeypatch, runs_module)
    runs, model, capacity = SimRuns(), constant_model(1e-3), KVCapacity(60, 4)
    requests = _requests([8, 9], [4, 4], [0.0, 0.1])
    runs.simulate(requests, model, capacity, SimConfig())
    runs.simulate(_requests([8, 9], [4, 4], [0.0, 0.2]), model, capacity, SimConfig())
    runs.simulate(requests, model, capacity, SimConfig(max_num_seqs=1))
    runs.simulate(requests, model, capacity, SimConfig(), dp=2)
    assert len(configs) == 4


def test_a_plan_on_single_turn_sessions_replays_the_trace_once_for_fleet_and_reuse(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # 400 sessions of one turn, 10 ms apart: the fleet check (one replica at the trace's times)
    # and the reuse advice's caching-off run are one run, and the advice needs no other
    rows = [{"session_id": f"s{i}", "turn": 0, "input_tokens": 50, "output_tokens": 20,
             "arrival_s": i * 0.01} for i in range(400)]  # fmt: skip
    trace = tmp_path / "t.jsonl"
    trace.write_text("".join(json.dumps(r) + "\n" for r in rows))
    configs = _configs_run(monkeypatch, runs_module)
    argv = ["plan", "llama-3.1-8b", "--gpus", "1", "--jobs", "1", "--workload", str(trace)]
    result = CliRunner().invoke(app, argv)
    assert result.exit_code == 0, result.output
    assert [c.prefix_caching for c in configs] == [False]
    assert "caching on: TTFT p99" in result.output


def test_a_replica_run_for_its_steps_alone_is_its_run_less_the_cache_figures() -> None:
    # private requests that fit (no preemption): the run with the cache off, the same steps
    requests = _requests([8] * 6, [10] * 6, [0.0, 0.01, 0.02, 0.03, 0.04, 0.05])
    replica, _ = _replica(60)
    on = replace(replica, config=replace(replica.config, prefix_caching=None))
    assert _differences(on.steps_run(requests, 4), on.run(requests, 4)) == [".reuse"]
    assert on.steps_run(requests, 4).reuse is None


def test_a_replica_run_of_shared_content_for_its_steps_alone_keeps_the_cache() -> None:
    requests = _requests([8, 20], [4, 4], [0.0, 0.5], node=[0, 0])
    replica, _ = _replica(60)
    on = replace(replica, config=replace(replica.config, prefix_caching=None))
    alone = on.steps_run(requests, 4)
    assert _differences(alone, on.run(requests, 4)) == []
    assert alone.reuse is not None and alone.reuse.prefill_tokens_saved > 0
