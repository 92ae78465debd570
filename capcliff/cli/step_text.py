"""How every simulating report names its step times: the engine profile and its error band."""

from __future__ import annotations

from capcliff.report_header import SimulationHeader


def step_text(report: SimulationHeader) -> str:
    """'vllm V1 (>= 0.8), modeled (held-out error (median): throughput ±20 %, ...)'."""
    band = report.error_band
    return report.step_profile + (f" ({band.text})" if band is not None else "")
