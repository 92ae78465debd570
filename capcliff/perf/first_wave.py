"""A benchmark run's first wave: what its first requests pay once, per engine and GPU vendor.

A closed-loop benchmark (`vllm bench serve` / SGLang `bench_serving` with `--max-concurrency C`,
as InferenceX runs them) sends its first C requests together to a server that has served only a
warm-up prompt. On the public runs those requests take seconds longer than the rest: the runs'
mean TTFT sits far above their median (1.9 x at the median run) while the median matches the
simulated steps. What makes them slow is not identified in any engine source (kernels built or
tuned on the first use of a batch shape is the likeliest), so the figure is calibrated, not
modeled: per run, the first wave's excess per request is

    D = N / C x ((measured mean - measured median) - (simulated mean - simulated median)) TTFT

(N requests, C clients), and the figure shipped is the median D over the public runs of the
engine on the vendor's GPUs with two clients or more (`benchmarks/first_wave.py --write`
recomputes it from `benchmarks/data` and states its held-out error: each deployment predicted
with the median of the other deployments). A single client sends no wave: InferenceX's client
warms up with copies of the run's first prompt (`--num-warmups 2 x C`), so one client's first
prefill is a shape the warm-up ran, and such runs measure D within 0.04 s. A replayed benchmark
run (`analysis.sweep.step_fit`) reads the figure through `Deployment.first_wave`; steady-state
questions (a plan's sustained rate, a sweep's converged point) have no first wave.

Loading the shipped data file is this module's only I/O (package data, read once, cached).
"""

from __future__ import annotations

from functools import cache

from pydantic import BaseModel, ConfigDict, Field

from capcliff.perf.op_curves import data_file

FIRST_WAVE_FILE = "first_wave.json"


class FirstWaveFigure(BaseModel):
    """The first wave of one engine on one GPU vendor's runs (seconds per first request)."""

    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True)

    engine: str
    vendor: str  # as the hardware catalog spells it: "NVIDIA", "AMD"
    seconds: float = Field(ge=0, le=600, allow_inf_nan=False)
    runs: int = Field(ge=1)  # the runs of two clients or more the median is taken over
    deployments: int = Field(ge=1)
    # median |error| of mean TTFT over every run of the engine on the vendor (one client's
    # too), each deployment predicted with the figure of the other deployments (a fraction),
    # and without any first wave
    held_out_error: float = Field(ge=0, allow_inf_nan=False)
    without_error: float = Field(ge=0, allow_inf_nan=False)


class FirstWaveTable(BaseModel):
    """The shipped figures and how they were made."""

    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True)

    about: str
    source: str
    written: str
    figures: tuple[FirstWaveFigure, ...]


@cache
def first_wave_table() -> FirstWaveTable:
    """The shipped table (`capcliff/perf/data/first_wave.json`), validated."""
    return FirstWaveTable.model_validate(data_file(FIRST_WAVE_FILE))


def first_wave_figure(engine: str, vendor: str) -> FirstWaveFigure | None:
    """The calibrated first wave of `engine` on `vendor`'s GPUs, or None where no public run
    measured one (then a simulated run has none)."""
    for figure in first_wave_table().figures:
        if figure.engine == engine and figure.vendor == vendor:
            return figure
    return None
