"""The header every sizing report starts with: what was sized, on what, with which engine, dtypes.

`capcliff memory`, `capcliff sweep` and `capcliff plan` each return one pydantic result; their
first fields are these, so a reader (or a script reading the JSON) finds the same keys, spelled
the same way, at the top of each. Plain strings and integers only: this module sits beside
`units` and `errors`, below every package, so that `memory` and `analysis` can both extend it.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

SCHEMA_VERSION = 2  # of the JSON form of memory, sweep and plan reports (2: online serving)


class ReportHeader(BaseModel):
    """Which model on which hardware, how many GPUs, which engine, dtypes and context length."""

    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)

    schema_version: int
    model: str  # catalog id, or the config.json's path
    hardware: str  # catalog id
    gpus: int
    engine: str  # vllm, vllm-v0, sglang or trtllm
    weight_dtype: str  # of the linear weights, "(experts ...)" when the experts differ
    kv_dtype: str
    max_model_len: int  # tokens
    overheads: str  # "modeled" or "calibrated": where the KV budget's overhead terms come from


class ErrorBandOut(BaseModel):
    """The median absolute error the validation measured for this engine and GPU (fractions;
    None: not measured), and on which rows (perf/error_band.py)."""

    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)

    throughput: float | None
    tpot: float | None
    ttft: float | None
    rows: int
    scope: str
    calibrated: bool
    text: str  # the phrase outputs print
    # what to do about it: "calibrate to tighten" where the validation's calibrated band of the
    # same rows is narrower, else what calibrating did; "" on a calibrated band
    advice: str = ""


class SimulationHeader(ReportHeader):
    """The header of a report that simulates serving: the policy and the workload too."""

    policy: str  # the admission and preemption policy simulated
    step_profile: str = ""  # the engine and version the step times assume, modeled or calibrated
    error_band: ErrorBandOut | None = None  # the held-out error of its figures
    workload: str  # preset name, trace path or "isl/osl" label
    num_requests: int
    seed: int
