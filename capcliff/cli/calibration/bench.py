"""`capcliff calibrate BENCH.csv|.json|.jsonl`: step-time terms fitted to serving benchmarks.

Called by `cli.checks.calibrate` when its file is benchmark output, not a start-up log.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import typer

from capcliff.analysis.sweep.step_fit import FIT_TERMS, StepFit
from capcliff.cli.app import DEFAULT_GPU, NO_GPU_NOTE, OutputFormat
from capcliff.cli.calibration.points import POINT_TABLE_HEADER, point_row, points_json
from capcliff.errors import InputError


@dataclass(frozen=True)
class BenchArgs:
    """The `calibrate` flags a benchmark fit uses."""

    path: Path
    model: str | None
    gpu: str | None  # None: not given (rows are matched to the default GPU, none is recorded)
    gpus: int | None
    layout: str | None
    engine: str | None
    kv_dtype: str
    weight_dtype: str | None
    max_model_len: int | None
    output: Path | None
    force: bool
    fmt: OutputFormat
    engine_version: str | None = None
    speculative: str | None = None  # a speculative deployment: fit its acceptance length
    calibration: str | None = None  # step terms to fit the acceptance length with


def calibrate_benchmark(args: BenchArgs) -> None:
    """Read the benchmark rows of the deployment, fit, print residuals, write the file."""
    from capcliff.analysis.deployment import resolve
    from capcliff.analysis.deployment_settings import settings_of
    from capcliff.analysis.sweep.step_fit import fit_step_terms
    from capcliff.calibrate.benchmarks import DeploymentFilter, read_benchmark_file
    from capcliff.catalog.catalogs import get_hardware, get_model
    from capcliff.catalog.layout import parse_layout
    from capcliff.cli.calibration.written import check_replaced
    from capcliff.files import check_outputs

    model_path = [Path(args.model)] if args.model is not None and Path(args.model).exists() else []
    given = [Path(args.calibration)] if args.calibration is not None else []
    check_outputs(
        [("--output", args.output)], inputs=[args.path, *model_path, *given], force=args.force
    )
    check_replaced(args.output)
    if args.calibration is not None and args.speculative is None:
        raise InputError(
            "calibration: a step-time fit starts from the engine profile; --calibration applies "
            "to an acceptance fit (with --speculative) only"
        )
    if args.model is None:
        raise InputError("model: a benchmark file does not name a catalog model; pass --model")
    model, hardware = get_model(args.model), get_hardware(args.gpu or DEFAULT_GPU)
    layout = parse_layout(args.layout or f"tp{args.gpus or 1}")
    if args.gpus is not None and layout.gpus != args.gpus:
        raise InputError(f"layout: {layout.name} uses {layout.gpus} GPUs, not --gpus {args.gpus}")
    settings = settings_of(
        {"engine": args.engine or "vllm", "weight_dtype": args.weight_dtype,
         "kv_cache_dtype": args.kv_dtype, "max_model_len": args.max_model_len,
         "engine_version": args.engine_version, "speculative": args.speculative,
         "calibration": args.calibration}
    )  # fmt: skip
    names = (model.id, model.name, Path(model.local_path).name if model.local_path else "")
    keep = DeploymentFilter(
        hf_repo=model.hf_repo, gpu=hardware.id, gpus=layout.gpus, layout=layout.name,
        engine=settings.engine.value, model_names=tuple(n for n in names if n),
        any_model=args.force,
    )  # fmt: skip
    points = read_benchmark_file(args.path, keep)
    if not points:
        raise InputError(
            f"{args.path}: no rows match --model {model.id} --gpu {hardware.id} --gpus "
            f"{layout.gpus} --layout {layout.name} --engine {settings.engine.value} with "
            "concurrency, input_len, output_len and a throughput or TPOT"
        )
    dep = resolve(model, hardware, settings, layout=layout.name)
    if dep.speculation is not None:
        from capcliff.cli.calibration.acceptance import AcceptArgs, calibrate_acceptance

        accept = AcceptArgs(
            args.path, args.output, args.calibration, args.gpu, args.kv_dtype,
            args.engine_version, args.fmt,
        )  # fmt: skip
        return calibrate_acceptance(accept, dep, layout, points)
    # One run fits the scale alone (fixed_s kept at the profile's), two or more fit both terms.
    terms = FIT_TERMS if len(points) >= len(FIT_TERMS) else ("scale",)
    fit = fit_step_terms(dep, layout, points, terms=terms)
    if args.gpu is None:  # after the checks: an input refused says so in one line
        typer.echo(NO_GPU_NOTE, err=True)
    if args.fmt is OutputFormat.JSON:
        import json

        typer.echo(json.dumps(fit_dict(fit, args.output, dep.first_wave), indent=2))
    else:
        typer.echo(fit_text(fit, args.output, dep.first_wave), nl=False)
    if args.output is not None:
        _write(args, fit, model.id, model.arch.shape_label, layout.name, settings.engine.value)


def _write(
    args: BenchArgs, fit: StepFit, model_id: str, model_shape: str, layout: str, engine: str
) -> None:
    """Write the step-time section, keeping a replaced calibration file's start-up terms."""
    from capcliff.calibrate.calibration_file import StepTimeCalibration
    from capcliff.cli.calibration.written import write_section

    assert args.output is not None
    seen = [p.point.concurrency for p in fit.points]
    step = StepTimeCalibration(
        fixed_s=round(fit.fixed_s, 6), scale=round(fit.scale, 4), profile=fit.profile,
        source=str(args.path), points=len(fit.points),
        concurrency_min=min(seen), concurrency_max=max(seen),
        request_overhead_s=round(fit.request_overhead_s, 4),
    )  # fmt: skip
    write_section(
        args.output, "step_time", step,
        base=args.output if args.output.exists() else None,  # --force: keep what it holds
        new={"engine": engine, "source": str(args.path), "model": model_id,
             "model_shape": model_shape, "gpu": args.gpu, "layout": layout,
             "kv_cache_dtype": args.kv_dtype, "engine_version": args.engine_version},
    )  # fmt: skip


def _first_wave_line(first_wave: tuple[float, str]) -> str:
    seconds, how = first_wave
    return (
        f"modeled: each client's first request {seconds:.2f} s later (the run's first wave; {how})"
        if seconds > 0
        else f"modeled: no first wave ({how})"
    )


def fit_text(fit: StepFit, written: Path | None, first_wave: tuple[float, str]) -> str:
    """The fit as text: the terms, then every point's measured, modeled and calibrated figures;
    `first_wave`: the modeled run's first wave (seconds, its source: `Deployment.first_wave`)."""
    lines = [
        f"step-time profile: {fit.profile}",
        f"fitted: fixed {fit.fixed_s * 1e3:.3f} ms per step (modeled "
        f"{fit.modeled_fixed_s * 1e3:.3f} ms), scale {fit.scale:.3f} x roofline and "
        f"communication (modeled 1), from {len(fit.points)} point"
        + ("s" if len(fit.points) != 1 else "")
        + (" (one run: the scale alone, fixed kept as modeled)" if len(fit.points) == 1 else ""),
        (
            f"fitted: request overhead {fit.request_overhead_s * 1e3:.1f} ms outside the engine's "
            "steps (HTTP, tokenization, first chunk, client; the median of measured - simulated "
            "mean TTFT), added to every TTFT"
            if any(p.point.mean_ttft_s for p in fit.points)
            else "request overhead: not fitted (no row measured TTFT)"
        ),
        _first_wave_line(first_wave),
        "",
        *POINT_TABLE_HEADER,
        *(point_row(p) for p in fit.points),
        "",
        f"written: {written}" if written else "not written (pass -o FILE)",
    ]
    return "\n".join(lines) + "\n"


def fit_dict(
    fit: StepFit, written: Path | None, first_wave: tuple[float, str]
) -> dict[str, object]:
    """The fit as a JSON-ready object."""
    return {
        "schema_version": 1,
        "profile": fit.profile,
        "fixed_s": fit.fixed_s,
        "scale": fit.scale,
        "modeled_fixed_s": fit.modeled_fixed_s,
        "request_overhead_s": fit.request_overhead_s,
        "modeled_first_wave_s": first_wave[0],
        "modeled_first_wave_source": first_wave[1],
        "points": points_json(fit.points),
        "written": None if written is None else str(written),
    }
