"""The steps a jump may last before SGLang's decaying ratio admits the head of the queue
(`fast_forward._sglang_limit`) come from the cohort's kept crossings, with no sort; they must be
what sorting the members' remaining outputs and scanning every step in one go gives, at every
call (the crossings themselves, member by member: `tests/test_sglang_admission_sums.py`)."""

from __future__ import annotations

import dataclasses
from functools import partial

import numpy as np
import pytest

from capcliff.sim.config import PreemptionMode
from capcliff.sim.loop import fast_forward
from capcliff.sim.loop.replica import ReplicaSim
from capcliff.sim.loop.state import ReplicaState
from capcliff.sim.policies import (
    Candidate,
    NewTokenRatio,
    sglang_admit,
)
from tests.reference_sglang import sglang_first_admissible_step
from tests.simtools import pressure_case, toy_model

# a clip of 60 where outputs reach about 150 + 300 tokens: some members cross it while decoding;
# one of 4,096: nobody's reaches it (then the running sums answer, no crossings kept)
CLIPS = [60, 4096]


def _sorted_limit(sim: ReplicaState, cand: Candidate, limit: int, *, step: int, free: int) -> int:
    # the straightforward answer: every member's remaining output, sorted, every step scanned
    ratio, co, clip = sim.rule.ratio, sim.cohort, fast_forward.SGLANG_CLIP_MAX_NEW_TOKENS
    assert ratio is not None
    members = co.members()
    future = np.sort(sim.requests.max_output_tokens[members] - (co.generated_base[members] + step))
    need = (
        cand.prefill_tokens
        + cand.kv_tokens
        + min(cand.max_output_tokens - cand.generated_tokens, clip)
    )
    hit = sglang_first_admissible_step(
        need_tokens=need,
        blocks_now=cand.blocks_now,
        free_blocks_after=free - co.blocks_needed_by_step(step, limit),
        block_size=sim.block_size,
        ratios=ratio.values(sim.ratio_base, sim.ratio_steps + np.arange(limit)),
        future_tokens=future,
        clip=clip,
    )
    return limit if hit is None else max(hit, 1)


def _near_misses(
    sim: ReplicaState, cand: Candidate, limit: int, *, step: int, free: int
) -> list[Candidate]:
    # The candidate resized to need the most tokens the rule would let in at a few steps of the
    # run: an answer one token of reserve off at any step would differ for one of them. The
    # reserve summed member by member, clipped term by term: min(x - j, clip).
    co, clip = sim.cohort, fast_forward.SGLANG_CLIP_MAX_NEW_TOKENS
    members = co.members()
    x = sim.requests.max_output_tokens[members] - (co.generated_base[members] + step)
    j = np.arange(limit)
    reserve = np.minimum(x[None, :] - j[:, None], clip).sum(axis=1)
    assert sim.rule.ratio is not None
    ratios = sim.rule.ratio.values(sim.ratio_base, sim.ratio_steps + j)
    left = (free - co.blocks_needed_by_step(step, limit)) * sim.block_size - ratios * reserve
    need = (
        cand.prefill_tokens
        + cand.kv_tokens
        + min(cand.max_output_tokens - cand.generated_tokens, clip)
    )
    crossings = (x - clip).tolist()  # the step at which each member's remaining reaches the clip
    steps = sorted({0, 1, limit - 1, *(c + 1 for c in crossings)} & set(range(limit)))
    probes = []
    for at in steps[:12]:
        for grow in (int(np.ceil(left[at])) - 1 - need, int(np.ceil(left[at])) - need):
            probes.append(
                cand._replace(kv_tokens=cand.kv_tokens + grow)
                if cand.kv_tokens
                else cand._replace(prompt_tokens=cand.prompt_tokens + grow)
            )
    return probes


@pytest.mark.parametrize("clip", CLIPS)
@pytest.mark.parametrize(("scalar", "window"), [(64, 256), (1, 1), (3, 2)])
@pytest.mark.parametrize("whole", [False, True], ids=["decaying", "ratio-1"])
@pytest.mark.parametrize("mode", [PreemptionMode.RECOMPUTE, PreemptionMode.SWAP])
@pytest.mark.parametrize("seed", range(6))
def test_the_kept_limit_is_the_sorted_scans_at_every_call(
    seed: int,
    mode: PreemptionMode,
    whole: bool,
    scalar: int,
    window: int,
    clip: int,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # A ratio held at 1 leaves whole tokens to the candidate, so a probe one token either side
    # of the limit tells a reserve one token off; the decaying ratios are the engine's.
    requests, capacity, config, rule = pressure_case(seed, "sglang", mode)
    if whole:
        rule = dataclasses.replace(rule, ratio=NewTokenRatio(init=1.0, floor=1.0, decay=0.0))
    rng = np.random.default_rng(200 + seed)
    slack = np.where(rng.random(len(requests)) < 0.7, rng.integers(0, 300, len(requests)), 0)
    requests = dataclasses.replace(requests, max_output_tokens=requests.output_tokens + slack)
    rule = dataclasses.replace(rule, admit=partial(sglang_admit, clip=clip))
    kept = fast_forward._sglang_limit
    answers: list[tuple[int, int]] = []

    def checked(sim: ReplicaState, cand: Candidate, limit: int, *, step: int, free: int) -> int:
        for probe in [cand, *_near_misses(sim, cand, limit, step=step, free=free)]:
            expected = _sorted_limit(sim, probe, limit, step=step, free=free)
            assert kept(sim, probe, limit, step=step, free=free) == expected
        got = kept(sim, cand, limit, step=step, free=free)
        answers.append((got, limit))
        return got

    monkeypatch.setattr(fast_forward, "SGLANG_CLIP_MAX_NEW_TOKENS", clip)
    monkeypatch.setattr(fast_forward, "SGLANG_SCALAR_STEPS", scalar)
    monkeypatch.setattr(fast_forward, "SGLANG_WINDOW_STEPS", window)
    monkeypatch.setattr(fast_forward, "_sglang_limit", checked)
    result = ReplicaSim(requests, toy_model(), capacity, config, rule).run()
    assert len(result.finish_s) == len(requests)
    assert answers  # asked, not skipped


def test_the_pressure_runs_ask_runs_that_end_in_an_admission(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # the equivalence above is worth something only if some answers are admissions before the
    # run's end and some runs outlast a first window
    kept = fast_forward._sglang_limit
    answers: list[tuple[int, int]] = []

    def recorded(sim: ReplicaState, cand: Candidate, limit: int, *, step: int, free: int) -> int:
        got = kept(sim, cand, limit, step=step, free=free)
        answers.append((got, limit))
        return got

    monkeypatch.setattr(fast_forward, "SGLANG_CLIP_MAX_NEW_TOKENS", CLIPS[0])
    monkeypatch.setattr(fast_forward, "SGLANG_SCALAR_STEPS", 1)
    monkeypatch.setattr(fast_forward, "SGLANG_WINDOW_STEPS", 1)
    monkeypatch.setattr(fast_forward, "_sglang_limit", recorded)
    for seed in range(8):
        requests, capacity, config, rule = pressure_case(seed, "sglang", PreemptionMode.RECOMPUTE)
        rule = dataclasses.replace(rule, admit=partial(sglang_admit, clip=CLIPS[0]))
        ReplicaSim(requests, toy_model(), capacity, config, rule).run()
    assert any(got < limit for got, limit in answers)
    assert any(limit > 2 for _, limit in answers)
