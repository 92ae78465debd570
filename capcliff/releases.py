"""Engine releases as numbers: `parse_version` reads the release a user, a benchmark row or a
start-up log names (`0.4.3`, `v0.4.3.post2`, `sglang 0.4.3`) as (major, minor, patch), which the
release-dependent rules compare (perf.profiles' step-time profiles, memory's CUDA-graph capture
sizes, calibrate's graphs-in-budget release)."""

from __future__ import annotations

import re

from capcliff.errors import InputError

_VERSION = re.compile(r"(\d+)\.(\d+)(?:\.(\d+))?")


def parse_version(text: str) -> tuple[int, int, int]:
    """(major, minor, patch) of a release named like 0.4.3, v0.4.3.post2 or sglang 0.4.3."""
    found = _VERSION.search(text)
    if found is None:
        raise InputError(f"engine_version: {text!r} is not a release like 0.4.3")
    major, minor, patch = found.groups()
    return int(major), int(minor), int(patch or 0)
