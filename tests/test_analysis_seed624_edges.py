"""Edges the seed-624 mutation sample (`benchmarks/mutation.py --packages analysis --seed 624`)
found untested. Every expected value is worked out by hand in the comments."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any, cast

import pytest

from capcliff.analysis.engine_yaml import scalar
from capcliff.analysis.evaluate.capacity import Replica
from capcliff.analysis.evaluate.layout_capacity import LayoutEval, SearchSettings, coarse_capacity
from capcliff.analysis.evaluate.online_load import OnlineWorkload
from capcliff.analysis.plan.commands import served_context
from capcliff.analysis.plan.group_note import group_note
from capcliff.analysis.serve_command.shell import command_words
from capcliff.analysis.workloads import WorkloadChoice
from capcliff.catalog.layout import Layout
from tests.calibration_text import calibration_toml
from tests.simtools import llama_8b_h200
from tests.test_search_reuse import _replica


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("ab'", "ab'"),  # a plain scalar may end with a quote: it is not quoted
        ("it's'", "it's'"),
        ("'x'", "x"),  # quoted at both ends
        ("'it''s'", "it's"),  # a doubled quote inside single quotes is one quote
    ],
)
def test_a_scalar_is_single_quoted_only_when_it_starts_and_ends_with_a_quote(
    text: str, value: str
) -> None:
    # YAML (and yaml.safe_load("a: ab'") = {'a': "ab'"}): a single-quoted scalar starts with
    # the quote; a plain one may hold quotes after its first character. Seed 624's
    # `text[-1] == text[-1] == "'"` read "ab'" as quoted and gave "b".
    assert scalar(text) == value


def test_a_relative_calibration_path_without_a_spec_folder_is_read_from_here(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # `--calibration sglang.toml` on the command line: no spec folder (base_dir None), so the
    # path is read from the current folder. The file fitted no request overhead, which
    # replaces SGLang's default 6.9 ms: (0.0, "calibrated"). Seed 624's `base_dir is not None
    # or not path.is_absolute()` joined None / path (a TypeError).
    (tmp_path / "sglang.toml").write_text(calibration_toml("sglang", 0.0))
    monkeypatch.chdir(tmp_path)
    dep = llama_8b_h200("sglang", calibration="sglang.toml")
    assert dep.request_overhead == (0.0, "calibrated")


def test_the_coarse_run_sits_at_071_of_the_grid_base() -> None:
    # 40 blocks of 16 = 640 tokens; every request 100 in + 100 out holds 100 + 100/2 = 150
    # tokens on average, + 8 of rounding: the steady cliff is 640 // 158 = 4 requests. The
    # decode knee up to 2 x 4 = 8 sequences: Llama-3.1-8B's decode on an H200 is weight-bound
    # at so few sequences (the step time barely grows), so 7 sequences give 7/8 of 8's tokens/s,
    # under 90 %: the knee is 8, and 8 / 1.41 rounds to 6. The base is min(4, 6, 256) = 4, and
    # the coarse cap round(0.71 x 4) = round(2.84) = 3. Seed 624's `min(1, ...)` ran it at 1.
    replica = _replica(40)
    workload = OnlineWorkload(WorkloadChoice(num_requests=1, isl=100, osl=(100,)), seed=0)
    coarse = coarse_capacity(replica, SearchSettings(workload, replica.config, None, None))
    assert coarse.cap == 3
    assert [p.cap for p in coarse.points] == [3]
    # no SLO: the coarse run's saturation rate is the sustained rate
    assert coarse.sustained_rps == coarse.saturation_rps > 0


@pytest.mark.parametrize(
    ("text", "words"),
    [
        (r"vllm serve m --served-model-name my\ model", ["my model"]),
        (r"vllm serve m --served-model-name a\"b\"c", ['a"b"c']),
    ],
)
def test_a_backslash_escapes_one_character_and_the_next_is_kept(
    text: str, words: list[str]
) -> None:
    # As a shell splits it: `\ ` is a space inside the word, `\"` a quote, and the character
    # after the escaped one starts the rest of the word. Seed 624's `i += 3` after an escape
    # dropped it ("my odel").
    assert command_words(text) == ["vllm", "serve", "m", "--served-model-name", *words]


def _moe_best(layout: Layout) -> LayoutEval:
    replica = cast(Replica, SimpleNamespace(steps=SimpleNamespace(moe=object())))  # a MoE step
    memory = cast(Any, SimpleNamespace(layout=layout))
    capacity = cast(Any, SimpleNamespace(sustained_rps=2.0))
    return LayoutEval(memory, replica, capacity, refined=True, alone=None)


def test_one_moe_replica_is_not_said_to_step_in_lockstep() -> None:
    # Without an SLO the plan notes that attention-DP ranks step in lockstep (a prefill on one
    # stalls all) only where there are ranks to stall: dp 2 is noted, one replica (tp8, dp 1) is
    # not. Seed 624's `dp > 0` called one MoE replica "its 1 ranks step in lockstep".
    (note,) = group_note(_moe_best(Layout(dp=2, tp=4)), within_slo=False)
    assert note.startswith("dp2-tp4: its 2 ranks step in lockstep")
    assert group_note(_moe_best(Layout(tp=8)), within_slo=False) == []


def test_a_workload_that_needs_the_whole_context_is_served_at_it_as_planned() -> None:
    # Llama-3.1-8B's context is 131,072 tokens (config.json). A workload whose longest request
    # rounds up to 131,072 is served at --max-model-len 131,072 as planned: nothing longer is
    # asked, so the line says it is the workload's (the engine refuses longer prompts), not the
    # model's context. Seed 624's `context < planned` went on to the model's-context note.
    dep = llama_8b_h200("vllm")
    assert served_context(dep, dep.memory(Layout(), 131_072), 131_072) == (
        131_072,
        "--max-model-len 131072: the workload's longest request rounded up to whole KiB "
        "tokens; the engine refuses longer prompts",
    )
