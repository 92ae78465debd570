"""A mutant's verdict may not depend on the mutants run before it (benchmarks/mutation.py).

The tool plants mutants one after another in one worker process. It emptied the mutated
function's own functools cache only; a cached caller kept what the mutant made it return, and
the next mutant's tests read it: a verdict that depended on the order the mutants ran in (one
way a kill can hold in one run and not the next, as seed 601's landed-output guard's did). Here
a mutant of `_parse_histogram` returning the histogram's shortest length as its longest:
`parse_output_lengths` (an lru_cache) kept that answer for `histogram:500*98,2000*2`.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

from capcliff.sim.traffic import length_spec
from capcliff.sim.traffic.length_spec import parse_output_lengths

SPEC = "histogram:500*98,2000*2"  # lengths up to 2,000


def _mutation() -> ModuleType:
    path = Path(__file__).resolve().parent.parent / "benchmarks" / "mutation.py"
    spec = importlib.util.spec_from_file_location("capcliff_mutation_tool", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def _mutant(text: str, field: str) -> object:
    """`_parse_histogram` with `max(values)` -> `min(values)` (run with length_spec's globals)."""
    values, weights = [], []
    for part in text.strip()[len(INLINE_PREFIX) :].split(","):  # noqa: F821
        tokens, _, count = part.partition("*")
        values.append(int(tokens))
        weights.append(float(count or 1))
    return OutputLengths(Empirical(tuple(values), tuple(weights)), min(values))  # noqa: F821


def test_a_mutant_leaves_nothing_cached_for_the_next_one() -> None:
    tool = _mutation()
    original = length_spec._parse_histogram.__code__
    parse_output_lengths.cache_clear()
    try:
        length_spec._parse_histogram.__code__ = _mutant.__code__  # planted
        assert parse_output_lengths(SPEC).max_tokens == 500  # the mutant's answer
        length_spec._parse_histogram.__code__ = original  # restored
        tool._clear_cache(length_spec, "_parse_histogram")  # the tool's old clean-up
        assert parse_output_lengths(SPEC).max_tokens == 500  # still the mutant's: stale
        tool.clear_caches()  # the clean-up around each mutant now
        assert parse_output_lengths(SPEC).max_tokens == 2000
    finally:
        length_spec._parse_histogram.__code__ = original
        parse_output_lengths.cache_clear()
