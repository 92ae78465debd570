"""Edges a sweep of mutants of `capcliff/analysis/evaluate/capacity.py` (`benchmarks/mutation.py`'s
sites of that file) found untested. Every expected value is worked out by hand in the comments."""

from __future__ import annotations

from dataclasses import replace
from types import SimpleNamespace
from typing import Any, cast

import pytest

from capcliff.analysis.deployment import resolve
from capcliff.analysis.deployment_settings import settings_of
from capcliff.analysis.evaluate.capacity import (
    CapPoint,
    Replica,
    Resumable,
    _extended_point,
)
from capcliff.analysis.evaluate.online_load import OnlineWorkload
from capcliff.catalog.catalogs import get_hardware, get_model
from capcliff.catalog.layout import parse_layout


class _ResumedError(Exception):
    """The held paused run was asked to go on."""


class _FreshRunError(Exception):
    """A fresh paused run was started; carries the cap it runs at."""


def _first_move(held_cap: int, cap: int) -> Exception:
    """What `_extended_point` at `cap` does first, given a point at `held_cap` that holds a
    paused run of the same 40-request sample: resume it or start a fresh run."""
    sample = list(range(40))  # only its length is read before the run starts
    workload = SimpleNamespace(
        saturation_sample=lambda n, cap: sample, mean_output_tokens=lambda: 8.0, sessions=None
    )

    def paused(requests: object, cap: int) -> object:
        raise _FreshRunError(cap)

    def advance(k: int) -> object:
        raise _ResumedError(k)

    replica = SimpleNamespace(config=None, run=None, paused=paused)
    held = Resumable(cast(Any, SimpleNamespace(advance=advance)), len(sample))
    prior = CapPoint(held_cap, cast(Any, None), cast(Any, None), 10, held)
    with pytest.raises((_FreshRunError, _ResumedError)) as first:
        _extended_point(
            cast(Replica, replica), cast(OnlineWorkload, workload), cap, (10, 40), True, prior
        )
    return first.value


def test_a_paused_run_held_at_another_cap_is_not_resumed() -> None:
    # the point held a run of a 40-request sample at cap 8; cap 16 draws a sample of the same
    # size, but the held run's steps admit at most 8 sequences: cap 16 starts its own run
    first = _first_move(held_cap=8, cap=16)
    assert isinstance(first, _FreshRunError) and first.args == (16,)


def test_a_paused_run_held_at_the_same_cap_goes_on() -> None:
    # the same cap and sample size: the held run goes on to the first checkpoint, 10 requests
    first = _first_move(held_cap=8, cap=8)
    assert isinstance(first, _ResumedError) and first.args == (10,)


def test_cuda_graphs_fit_with_exactly_no_headroom_left(monkeypatch: pytest.MonkeyPatch) -> None:
    # headroom = total - requested - outside terms (CUDA graphs, context): at exactly 0 bytes
    # everything outside the budget fits, so no "leaves no room for CUDA graphs" trap; 1 byte
    # less and it does not
    import capcliff.analysis.flags as flags
    from capcliff.analysis.plan.commands import engine_flags

    seen: list[bool] = []

    def capture(served: object, **kw: Any) -> list[str]:
        seen.append(kw["graphs_fit"])
        return []

    monkeypatch.setattr(flags, "flag_warnings", capture)
    dep = resolve(get_model("llama-3.1-8b"), get_hardware("h200-sxm"), settings_of({}))
    memory = dep.memory(parse_layout("tp1"), 8192)
    stage = memory.stages[0]
    outside = sum(t.bytes for t in stage.outside_terms)
    rec = SimpleNamespace(layout="tp1", max_num_seqs=64)
    config = SimpleNamespace(max_num_batched_tokens=8192)
    inputs = SimpleNamespace(config=config, max_model_len=8192)
    for spare in (0, -1):
        total = stage.requested_bytes + outside + spare
        exact = replace(memory, stages=(replace(stage, total_memory_bytes=total),))
        assert exact.stages[0].headroom_bytes == spare
        engine_flags(dep, (exact, 64), cast(Any, rec), cast(Any, inputs), "m")
    assert seen == [True, False]


def test_a_point_with_linear_steps_is_predicted_from_its_two_bases_alone() -> None:
    # no floor, no host time and no request overhead: the steps are linear in (fixed, scale),
    # so the profile's prediction is the bases' combination and no third run is simulated; a
    # request overhead of 1 ms is not linear in them (`_basis`), and is simulated
    from capcliff.analysis.sweep import step_fit
    from capcliff.calibrate.benchmarks import CLIENT_TURNAROUND_S, BenchmarkPoint
    from capcliff.catalog.layout import Layout
    from tests.simtools import llama_8b_h200

    point = BenchmarkPoint("c2", 2, 64, 4, num_requests=4, client_turnaround_s=CLIENT_TURNAROUND_S)
    run = step_fit._run(llama_8b_h200("vllm"), Layout(), point, {})
    steps = replace(run.steps, host_fixed_s=0.0, host_per_seq_s=0.0)
    assert steps.eager_floor_s == 0.0 and steps.extend_floor_s == 0.0
    for overhead_s, simulated in ((0.0, False), (1e-3, True)):
        config = replace(run.config, request_overhead_s=overhead_s)
        linear = replace(run, steps=steps, config=config)
        assert (step_fit._basis(linear, point).modeled is not None) is simulated


def test_the_overload_note_comes_before_the_other_notes(monkeypatch: pytest.MonkeyPatch) -> None:
    # 1,000 requests/s overload one H200's Llama-3.1-8B replica (`test_serving`); with a note
    # from other GPU types' searches already taken (two: the first place, not the last but one),
    # the overload still leads the notes
    import capcliff.analysis.plan.online as online
    from tests.test_serving import _plan

    searched = online._other_fleets
    other = ["another type: a first note", "another type: a second note"]

    def with_a_note(*args: Any) -> tuple[list[Any], list[str]]:
        fleets, notes = searched(*args)
        return fleets, [*notes, *other]

    monkeypatch.setattr(online, "_other_fleets", with_a_note)
    notes = _plan("--rate", "1000", "--slo-ttft", "5", "--slo-tpot", "0.2")["notes"]
    assert notes[0].startswith("overload:") and set(other) <= set(notes[1:])


def test_a_cap_saturating_above_the_tolerance_below_the_best_rate_is_searched(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from capcliff.analysis.evaluate import capacity
    from capcliff.analysis.evaluate.rate_search import RatePoint
    from tests.test_analysis_mutants_seed201 import cap_point, within_slo

    # cap 8 saturates at 10/s and passes at 8/s; cap 4 saturating at 8.2/s could still pass
    # above 0.95 x 8 = 7.6/s, so it is searched; cap 2 at 7.5/s cannot, and is skipped
    light = cast(Any, SimpleNamespace(ttft_p99_s=1.0, tpot_p99_s=0.05))
    found = RatePoint(8, 8.0, light, True)
    searched: list[int] = []
    stubs = {
        "highest_rate": lambda probes, cap, sat, size: (found, found),
        "highest_rate_above": lambda probes, cap, *rest: searched.append(cap),
        "verified": lambda *a, **k: None,
    }
    for name, stub in stubs.items():
        monkeypatch.setattr(capacity, name, stub)
    within_slo((cap_point(2, 7.5), cap_point(4, 8.2), cap_point(8, 10.0)))
    assert searched == [4]


@pytest.mark.parametrize("trace", [False, True])
def test_a_cap_past_the_base_is_probed_for_thrashing_unless_the_workload_is_a_trace(
    monkeypatch: pytest.MonkeyPatch, trace: bool
) -> None:
    # a probed cap of a workload that starts from its stationary running set is first run on a
    # short sample, and a cap that thrashes there is that point; a trace (its own requests,
    # simulated once) is never probed
    from capcliff.analysis.evaluate import capacity

    class SimulatedError(Exception):
        """The point goes on to the full run."""

    thrashed = cast(CapPoint, SimpleNamespace(cap=16))
    probed: list[int] = []

    def probe(replica: object, workload: object, cap: int) -> CapPoint:
        probed.append(cap)
        return thrashed

    def simulated() -> float:
        raise SimulatedError

    monkeypatch.setattr(capacity, "_probed", probe)
    workload = SimpleNamespace(
        is_trace=trace, stationary_start=lambda: True, requests_per_unit=lambda: 1.0,
        max_doublings=lambda most: 0, backlog=lambda n: [0] * 50, mean_output_tokens=simulated,
    )  # fmt: skip
    replica = cast(Replica, None)
    if trace:
        with pytest.raises(SimulatedError):
            capacity.saturation_point(replica, cast(Any, workload), 16, None, probe=True)
        assert probed == []
    else:
        assert (
            capacity.saturation_point(replica, cast(Any, workload), 16, None, probe=True)
            is thrashed
        )
        assert probed == [16]
