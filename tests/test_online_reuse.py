"""Online plans of session workloads: users or a session rate, the prefix cache, reuse advice."""

from __future__ import annotations

import json

import numpy as np
from hypothesis import given
from hypothesis import strategies as st
from typer.testing import CliRunner

from capcliff.analysis.evaluate.online_load import OnlineWorkload
from capcliff.analysis.evaluate.session_load import requests_per_session
from capcliff.analysis.plan.fleet import Unit, replicas_for
from capcliff.analysis.plan.online_reuse import REUSE_REQUESTS
from capcliff.analysis.workloads import WorkloadChoice
from capcliff.catalog.layout import Layout
from capcliff.cli import app
from capcliff.sim.traffic.workload import Requests

runner = CliRunner()
BLOCK = 16  # vLLM's default block size (tokens)
SYSTEM_PROMPT = 200  # multiturn-chat's shared prefix (sim/sessions.py)


def _plan(*args: str) -> dict:  # type: ignore[type-arg]
    result = runner.invoke(
        app, ["plan", "llama-3.1-8b", "--gpu", "h200-sxm", "--gpus", "1", "--workload",
              "multiturn-chat", "--jobs", "1", "--seed", "0", *args, "--format", "json"],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    return json.loads(result.output)  # type: ignore[no-any-return]


def _reusable(sample: Requests) -> np.ndarray:  # type: ignore[type-arg]
    """Per request, the tokens an earlier request already computed: turn 1 its system prompt,
    turn k > 1 the previous turn's prompt + output (its history). Worked from the sample's
    session order, not from the cache."""
    previous: dict[int, int] = {}
    out = []
    for node, prompt, output in zip(
        sample.content_node.tolist(), sample.input_tokens.tolist(),
        sample.output_tokens.tolist(), strict=True,
    ):  # fmt: skip
        out.append(previous.get(node, SYSTEM_PROMPT))
        previous[node] = prompt + output
    return np.asarray(out)


def test_users_running_chat_sessions_hit_their_history_within_worked_bounds() -> None:
    users = 16
    report = _plan("--clients", str(users))
    assert report["mode"] == "online" and report["recommended"] is not None
    sessions = report["sessions"]
    assert sessions["preemptions"] == 0  # 16 users on an H200's ~800k KV tokens: no pressure
    sample = OnlineWorkload(
        WorkloadChoice(num_requests=1, preset_name="multiturn-chat", clients=users), seed=0
    ).with_clients(REUSE_REQUESTS, users)
    prompts = sample.input_tokens.sum()
    reusable = _reusable(sample)
    # Upper bound: every reusable token hits.
    upper = reusable.sum() / prompts
    # Lower bound without eviction: only full blocks of what was computed hit (the last output
    # token has no KV: floor((r - 1) / B) x B), and the users' first turns, sent together at
    # t = 0, find no cached system prompt (blocks join the cache when a request releases them):
    # users x floor(199 / 16) x 16 = 16 x 192 tokens missed.
    full = (np.floor((reusable - 1) / BLOCK) * BLOCK).sum()
    lower = (full - users * ((SYSTEM_PROMPT - 1) // BLOCK) * BLOCK) / prompts
    assert lower <= sessions["prefix_cache_hit_rate"] <= upper
    # The reuse advice ran at the same load: caching off has no hits, on has the same rate.
    points = {p["label"]: p for p in report["reuse"]["points"]}
    assert points["caching off"]["prefix_cache_hit_rate"] in (None, 0.0)
    assert points["caching on"]["prefix_cache_hit_rate"] == sessions["prefix_cache_hit_rate"]
    assert "--enable-prefix-caching" in report["reuse"]["flags"]


def test_a_session_rate_is_planned_online_with_the_hit_rate() -> None:
    report = _plan("--rate", "4")
    assert report["load"]["kind"] == "rate" and report["load"]["offered_rps"] == 4
    assert not report["load"]["saturated"]
    # about 82 % of prompt tokens are history or system prompt (the bound above); a rate of
    # sessions at 4 requests/s on an H200 evicts nothing it needs
    assert 0.75 < report["sessions"]["prefix_cache_hit_rate"] < 0.83


def test_users_per_replica_count_their_think_time() -> None:
    # 10 requests/s per replica, 20 % headroom: 8 usable. A user's cycle is 0.5 s waiting for
    # the answer plus 9.5 s thinking: 10 s, so a replica holds 8 x 10 = 80 users (Little's law);
    # 200 users need ceil(200 / 80) = 3 replicas. Without think time: 8 x 0.5 = 4 users each.
    thinking = Unit(Layout(), 1, sustained_rps=10.0, cap=64, e2e_mean_s=0.5, think_s=9.5)
    assert replicas_for(thinking, offered_rps=None, clients=200, headroom=0.2) == 3
    at_once = Unit(Layout(), 1, sustained_rps=10.0, cap=64, e2e_mean_s=0.5)
    assert replicas_for(at_once, offered_rps=None, clients=200, headroom=0.2) == 50


@given(st.sampled_from(["multiturn-chat", "agentic"]), st.integers(50, 400), st.integers(0, 99))
def test_requests_per_session_equals_requests_over_sessions_started(
    name: str, n: int, seed: int
) -> None:
    # At a rate, every session is its own client: requests / distinct clients counts sessions
    # independently of the content tree that requests_per_session reads.
    choice = WorkloadChoice(num_requests=1, preset_name=name, rate_per_s=1.0)
    sample = OnlineWorkload(choice, seed=seed).at_rate(n, 1.0)
    assert requests_per_session(sample) == len(sample.client) / len(np.unique(sample.client))
