"""A minimal calibration file for tests: one deployment's step terms written by hand."""

from __future__ import annotations


def calibration_toml(engine: str, request_overhead_s: float | str) -> str:
    """A calibration of llama-3.1-8b on one H200 with `engine`: fixed_s 2 ms, scale 1, and
    `request_overhead_s` (a str is written as given, for bad values such as "nan")."""
    return f"""engine = "{engine}"
source = "by hand"
model = "llama-3.1-8b"
gpu = "h200-sxm"
layout = "tp1"
[step_time]
fixed_s = 0.002
scale = 1.0
profile = "by hand"
source = "by hand"
points = 2
request_overhead_s = {request_overhead_s}
"""
