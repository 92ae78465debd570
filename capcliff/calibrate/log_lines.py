"""The shared vocabulary of the start-up log parsers: how a logged number looks, how a line rule
is written.

A line rule is a regular expression in which `NUM` stands for a logged number. Its named groups
are figure names (`kv_cache_gib`, `gpu_blocks`: the suffix names the unit); a `c_<key>` group is a
configuration value; an `args` group holds key=value pairs (an engine config, SGLang's
`ServerArgs`, vLLM's non-default args), read by `capcliff.calibrate.startup_logs`.
"""

from __future__ import annotations

import re

# A logged number: sign, comma-grouped thousands ("702,800"), decimals; never a trailing dot.
NUM = r"-?\d+(?:,\d{3})*(?:\.\d+)?"


def compile_lines(*patterns: str) -> tuple[re.Pattern[str], ...]:
    """Line rules, with `NUM` replaced by the logged-number pattern."""
    return tuple(re.compile(p.replace("NUM", NUM)) for p in patterns)


def compile_failures(*patterns: str) -> tuple[re.Pattern[str], ...]:
    """An engine's refusals to start: spaces match any whitespace (the messages wrap)."""
    return tuple(re.compile(p.replace("NUM", NUM).replace(" ", r"\s+")) for p in patterns)
