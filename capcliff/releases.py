"""Engine releases as numbers: `parse_version` reads the release a user, a benchmark row or a
start-up log names (`0.4.3`, `v0.4.3.post2`, `sglang 0.4.3`) as (major, minor, patch), which the
release-dependent rules compare (perf.profiles' step-time profiles, memory's CUDA-graph capture
sizes, calibrate's graphs-in-budget release)."""

from __future__ import annotations

import re

from capcliff.errors import InputError

_VERSION = re.compile(r"(\d+)\.(\d+)(?:\.(\d+))?")
# Set: digits in one part of a release number (no engine numbers a release past 9 digits); a
# longer run is a slip, and past 4,300 digits int() failed with Python's own limit message
MAX_VERSION_DIGITS = 9


def parse_version(text: str) -> tuple[int, int, int]:
    """(major, minor, patch) of a release named like 0.4.3, v0.4.3.post2 or sglang 0.4.3."""
    found = _VERSION.search(text)
    too_long = re.search(rf"\d{{{MAX_VERSION_DIGITS + 1}}}", text)
    if found is None or too_long is not None:
        raise InputError(f"engine_version: {text!r:.60} is not a release like 0.4.3")
    major, minor, patch = found.groups()
    return int(major), int(minor), int(patch or 0)
