"""`capcliff calibrate BENCH --speculative mtp:K`: the acceptance length of a speculative
deployment, fitted to its benchmark results (`analysis.sweep.accept_fit`).

Called by `bench.calibrate_benchmark` when the deployment speculates. The step times
stay the profile's, or those of the `--calibration` file given (fit them on a benchmark without
speculation first); the written file carries that file's sections too, so that applying it
applies the step terms the acceptance was fitted with.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import typer

from capcliff.analysis.deployment import Deployment
from capcliff.analysis.evaluate.replica_models import step_label
from capcliff.analysis.sweep.accept_fit import AcceptFit, fit_accept_length
from capcliff.calibrate.benchmarks import BenchmarkPoint
from capcliff.catalog.layout import Layout
from capcliff.cli.app import NO_GPU_NOTE, OutputFormat
from capcliff.cli.calibration.points import POINT_TABLE_HEADER, point_row, points_json


@dataclass(frozen=True)
class AcceptArgs:
    """The `calibrate` flags an acceptance fit uses."""

    path: Path  # the benchmark file
    output: Path | None
    calibration: str | None  # the step terms kept (its sections are carried into the output)
    gpu: str | None
    kv_dtype: str
    engine_version: str | None
    fmt: OutputFormat


_BOUND = {
    "lower": "the figures are slower than one token per step allows: the step times are too "
    "fast for this deployment; calibrate them on a benchmark without speculation "
    "(--calibration)",
    "upper": "the figures are faster than every draft token accepted allows: the step times "
    "are too slow for this deployment; calibrate them on a benchmark without speculation "
    "(--calibration)",
}


def calibrate_acceptance(
    args: AcceptArgs, dep: Deployment, layout: Layout, points: list[BenchmarkPoint]
) -> None:
    """Fit, print the residuals, write the file's [speculative] section."""
    fit = fit_accept_length(dep, layout, points)
    if args.gpu is None:
        typer.echo(NO_GPU_NOTE, err=True)
    setting = dep.settings.speculative or ""
    if args.fmt is OutputFormat.JSON:
        import json

        typer.echo(json.dumps(_fit_json(fit, setting, step_label(dep), args.output), indent=2))
    else:
        typer.echo(_fit_text(fit, setting, step_label(dep), args.output), nl=False)
    if args.output is not None:
        _write(args, dep, layout, fit, setting)


def _fit_text(fit: AcceptFit, setting: str, steps: str, written: Path | None) -> str:
    seen = [p.point.concurrency for p in fit.points]
    lines = [
        f"step times: {steps}",
        f"fitted: acceptance length {fit.accept_length:.2f} tokens per step for {setting} "
        f"(modeled {fit.modeled_length:.2f}), from {len(fit.points)} run"
        f"{'s' if len(fit.points) != 1 else ''} at {min(seen)}-{max(seen)} clients",
        *([f"at its bound: {_BOUND[fit.bound]}"] if fit.bound else []),
        "",
        *POINT_TABLE_HEADER,
        *(point_row(p) for p in fit.points),
        "",
        f"written: {written}" if written else "not written (pass -o FILE)",
    ]
    return "\n".join(lines) + "\n"


def _fit_json(fit: AcceptFit, setting: str, steps: str, written: Path | None) -> dict[str, object]:
    return {
        "schema_version": 1,
        "speculative": setting,
        "step_profile": steps,
        "accept_length": fit.accept_length,
        "modeled_accept_length": fit.modeled_length,
        "bound": fit.bound,
        "points": points_json(fit.points),
        "written": None if written is None else str(written),
    }


def _write(args: AcceptArgs, dep: Deployment, layout: Layout, fit: AcceptFit, setting: str) -> None:
    """Write the [speculative] section: into the replaced file (--force), else into a copy of
    the --calibration file's sections, else into a new file."""
    from capcliff.calibrate.calibration_file import SpeculativeCalibration
    from capcliff.cli.calibration.written import write_section

    assert args.output is not None
    seen = [p.point.concurrency for p in fit.points]
    section = SpeculativeCalibration(
        speculative=setting, accept_length=round(fit.accept_length, 3), source=str(args.path),
        points=len(fit.points), concurrency_min=min(seen), concurrency_max=max(seen),
    )  # fmt: skip
    base = args.output if args.output.exists() else None
    if base is None and args.calibration is not None:
        base = Path(args.calibration)
    write_section(
        args.output, "speculative", section, base=base,
        new={"engine": dep.settings.engine.value, "source": str(args.path),
             "model": dep.model.id, "model_shape": dep.model.arch.shape_label, "gpu": args.gpu,
             "layout": layout.name, "kv_cache_dtype": args.kv_dtype,
             "engine_version": args.engine_version},
    )  # fmt: skip
