"""The commands that hold capcliff to reality and to specs: `calibrate` and `check`.

Registered on `cli.app` when `cli` imports this module; domain errors reach `cli.main`.
"""

from __future__ import annotations

from enum import StrEnum
from typing import TYPE_CHECKING, Annotated

import typer

from capcliff.cli.app import (
    COUNT,
    DEFAULT_GPU,
    NO_GPU_NOTE,
    ForceOption,
    FormatOption,
    OutputFormat,
    _choice,
    app,
    max_model_len_option,
    print_warning,
)
from capcliff.errors import InputError

if TYPE_CHECKING:
    from capcliff.calibrate.startup_logs import StartupLog


@app.command()
def calibrate(
    logfile: Annotated[
        str,
        typer.Argument(
            help="An engine start-up log (vLLM, SGLang, TRT-LLM), or serving benchmark results: "
            "a `vllm bench serve --save-result` .json, an SGLang bench_serving .jsonl or a .csv."
        ),
    ],
    model: Annotated[
        str | None, typer.Option(help="Catalog id or config.json (default: from the log).")
    ] = None,
    gpu: Annotated[
        str | None,
        typer.Option(
            help="Hardware id of the GPU the log or benchmark ran on: recorded in the "
            "calibration, which is then refused on other GPUs (without it the file records "
            "none, and the fit takes what the input leaves out from the default GPU)."
        ),
    ] = None,
    engine: Annotated[
        str | None, typer.Option(help="Refuse a log of another engine (default: the log's).")
    ] = None,
    layout: Annotated[
        str | None,
        typer.Option(help="Refuse a log of another layout, e.g. tp8 (default: the log's)."),
    ] = None,
    gpus: Annotated[
        int | None, typer.Option(callback=COUNT, help="GPUs of the benchmarked deployment.")
    ] = None,
    kv_dtype: Annotated[
        str | None,
        typer.Option(
            "--kv-cache-dtype",
            "--kv-dtype",
            help="KV cache dtype if the log omits it (default bf16).",
        ),
    ] = None,
    weight_dtype: Annotated[
        str | None, typer.Option(help="Weight dtype if the log omits it (e.g. a prebuilt engine).")
    ] = None,
    max_model_len: Annotated[
        int | None,
        typer.Option(
            parser=max_model_len_option,
            metavar="<int>",
            help="Longest request, tokens (32768, 32K or 32k, as vLLM reads them), if the log "
            "omits it.",
        ),
    ] = None,
    output: Annotated[
        str | None,
        typer.Option("--output", "-o", help="Calibration file to write (default: write none)."),
    ] = None,
    force: Annotated[
        bool,
        typer.Option(
            help="Replace an existing output file; fit benchmark rows that name another model."
        ),
    ] = False,
    fmt: FormatOption = OutputFormat.TABLE,
    engine_version: Annotated[
        str | None,
        typer.Option(
            help="Benchmark results only: the engine release (e.g. 0.4.3) whose step-time "
            "profile the fit starts from (default: the latest modelled)."
        ),
    ] = None,
    speculative: Annotated[
        str | None,
        typer.Option(
            help="Benchmark results only: the runs used speculative decoding (mtp:K, "
            "eagle:K[:DRAFT], ngram:K); fits its mean acceptance length, not the step terms."
        ),
    ] = None,
    calibration: Annotated[
        str | None,
        typer.Option(
            help="With --speculative: the calibration whose step terms the acceptance fit "
            "keeps (fitted on a benchmark without speculation); the written file carries it."
        ),
    ] = None,
) -> None:
    """Compare a start-up log with capcliff's prediction, or fit step times to benchmark
    results; with -o, write the fitted terms."""
    from pathlib import Path

    from capcliff.calibrate.benchmarks import is_benchmark_file
    from capcliff.files import output_path
    from capcliff.units import parse_kv_dtype

    for flag, value in (("gpu", gpu), ("model", model), ("engine", engine), ("layout", layout)):
        if value is not None and not value.strip():  # "" read as not given
            raise InputError(f"{flag}: empty; give a value or leave the flag out")
    # by its capcliff name (fp8_e4m3 is fp8, auto bf16): the file records it, and a deployment
    # is matched against it by that name
    given_kv, kv_dtype = kv_dtype, parse_kv_dtype(kv_dtype or "bf16", field="kv-cache-dtype").value
    if is_benchmark_file(Path(logfile)):
        from capcliff.cli.calibration.bench import BenchArgs, calibrate_benchmark

        return calibrate_benchmark(
            BenchArgs(
                Path(logfile), model, gpu, gpus, layout, engine, kv_dtype, weight_dtype,
                max_model_len, output_path(output, flag="--output"), force, fmt,
                engine_version, speculative, calibration,
            )
        )  # fmt: skip

    # --engine-version and --gpus were ignored unsaid (a log states its own layout: --layout)
    flags = (("--speculative", speculative), ("--calibration", calibration),
             ("--engine-version", engine_version), ("--gpus", gpus))  # fmt: skip
    given_flags = [flag for flag, value in flags if value is not None]
    if given_flags:  # --engine-version was ignored unsaid
        given = given_flags[0]
        raise InputError(f"{given.lstrip('-')}: applies to benchmark results, not a start-up log")
    from capcliff.calibrate.calibration_file import calibration_toml
    from capcliff.calibrate.compare import LogClaims, model_id_from_log
    from capcliff.calibrate.compare import calibrate as run_calibration
    from capcliff.calibrate.startup_logs import parse_startup_log
    from capcliff.catalog.catalogs import get_hardware, get_model, model_catalog
    from capcliff.cli.calibration.written import check_replaced
    from capcliff.files import check_outputs, read_text, write_text_atomic
    from capcliff.memory.budget import BudgetSettings, EngineName
    from capcliff.memory.weights import WeightScheme
    from capcliff.units import parse_kv_dtype, parse_weight_dtype

    target = output_path(output, flag="--output")
    inputs = [Path(logfile)] + ([Path(model)] if model is not None and Path(model).exists() else [])
    check_outputs([("--output", target)], inputs=inputs, force=force)
    check_replaced(target)
    log = parse_startup_log(read_text(Path(logfile), field="logfile"))
    _refuse_another_length(log, max_model_len)
    _refuse_another_kv_dtype(log, given_kv)
    repos = {mid: card.hf_repo for mid, card in model_catalog().items()}
    from_log = model_id_from_log(log, repos)
    model_id = model if model is not None else from_log
    if model_id is None:
        raise InputError(
            f"model: cannot tell the model from the log ({log.config.get('model', 'not named')}); "
            "pass --model with a catalog id or a config.json"
        )
    resolved = get_model(model_id)
    claims = LogClaims(
        model=model,
        model_in_log=from_log,
        engine=None if engine is None else _choice(EngineName, engine, "engine"),
        layout=layout,
    )
    result = run_calibration(
        log,
        resolved,
        get_hardware(gpu or DEFAULT_GPU),
        base=BudgetSettings(),
        kv_dtype=None
        if (given_kv or "auto").strip().lower() == "auto"
        else parse_kv_dtype(kv_dtype),
        scheme=None
        if weight_dtype is None
        else WeightScheme.planned(resolved.arch, parse_weight_dtype(weight_dtype)),
        max_model_len=max_model_len,
        source=logfile,
        gpu=gpu,
        claims=claims,
    )
    written = None if target is None else str(target)
    if gpu is None:  # after the checks: an input refused says so in one line
        typer.echo(NO_GPU_NOTE, err=True)
    if fmt is OutputFormat.JSON:
        import json

        from capcliff.cli.calibration.render_log import calibration_dict

        typer.echo(json.dumps(calibration_dict(result, written), indent=2))
    else:
        from capcliff.cli.calibration.render_log import calibration_view
        from capcliff.cli.render import make_console

        make_console().print(calibration_view(result, written))
    if target is not None:
        fitted = result.calibration
        if target.exists():  # --force: keep the benchmark sections the replaced file carries
            from capcliff.calibrate.calibration_file import load_calibration

            kept = load_calibration(target)
            fitted = fitted.model_copy(
                update={"step_time": kept.step_time, "speculative": kept.speculative}
            )
        write_text_atomic(target, calibration_toml(fitted), overwrite=force)


def _refuse_another_kv_dtype(log: StartupLog, given: str | None) -> None:
    """--kv-cache-dtype (`given`; None: not given) against a log that states its own: the flag
    stood in for the log's `auto` and fitted another cache (`--kv-dtype fp8` on a vLLM log of
    `auto`, a 16-bit cache, sized half the KV bytes per token)."""
    from capcliff.units import parse_kv_dtype

    stated = log.config.get("kv_cache_dtype")
    if given is None or stated is None:
        return
    kv_dtype = parse_kv_dtype(given).value
    if str(stated) == "auto":
        # auto takes the checkpoint's KV quantization where the release does (TensorRT-LLM's:
        # the flag says it; SGLang's and vLLM's: compare.log_kv_dtype, against the model)
        return
    try:
        ran = parse_kv_dtype(str(stated)).value  # vLLM's and SGLang's auto: the model's dtype
    except InputError:
        return
    if (ran == "fp8") != (kv_dtype == "fp8"):  # bf16 and fp16 size alike
        raise InputError(
            f"kv-cache-dtype: the log ran kv_cache_dtype={stated}, not {given} (the flag "
            "stands in only where a log omits it)"
        )


def _refuse_another_length(log: StartupLog, max_model_len: int | None) -> None:
    """--max-model-len against a log that states its own: the log's was used and the flag
    dropped unsaid."""
    from capcliff.calibrate.compare import stated_max_model_len

    stated = stated_max_model_len(log)
    if max_model_len is not None and stated is not None and stated != max_model_len:
        raise InputError(
            f"max-model-len: the log ran {stated:,} tokens, not {max_model_len:,} (the flag "
            "stands in only where a log omits it)"
        )


class CheckFormat(StrEnum):
    """How `check` prints its result."""

    TABLE = "table"
    JSON = "json"


@app.command()
def check(
    spec: Annotated[str, typer.Argument(help="The sizing spec (TOML).")] = "capcliff.toml",
    output: Annotated[CheckFormat, typer.Option("--format", help="table or json.")] = (
        CheckFormat.TABLE
    ),
    junit: Annotated[str | None, typer.Option(help="Write JUnit XML here.")] = None,
    markdown: Annotated[str | None, typer.Option(help="Write a Markdown summary here.")] = None,
    baseline: Annotated[
        str | None, typer.Option(help="Fail on capacity regressions against this stored run.")
    ] = None,
    write_baseline: Annotated[
        str | None, typer.Option(help="Store this run's capacity figures here.")
    ] = None,
    force: ForceOption = False,
) -> None:
    """Run a sizing spec's scenarios and assertions: exit 0 pass, 1 fail, 2 invalid, 4 crash."""
    from pathlib import Path

    from capcliff.check.output import (
        baseline_json,
        check_json,
        check_junit,
        check_markdown,
        check_text,
    )
    from capcliff.check.report import load_baseline
    from capcliff.check.runner import check_spec_file
    from capcliff.check.spec import load_spec
    from capcliff.cli.progress import progress_bar
    from capcliff.files import check_outputs, output_path, write_text_atomic

    targets = [
        ("--junit", junit, check_junit),
        ("--markdown", markdown, check_markdown),
        ("--write-baseline", write_baseline, baseline_json),
    ]
    outputs = [(flag, output_path(text, flag=flag)) for flag, text, _ in targets]
    read = [Path(spec)] + ([] if baseline is None else [Path(baseline)])
    check_outputs(outputs, inputs=read, force=force)
    spec_file = load_spec(Path(spec))
    check_outputs(outputs, inputs=spec_file.input_paths() + read, force=force)
    stored = None if baseline is None else load_baseline(Path(baseline))
    with progress_bar("checking", None) as tick:
        report = check_spec_file(
            spec_file, baseline=stored, force=force, progress=tick, warn=print_warning
        )
    typer.echo(check_json(report) if output is CheckFormat.JSON else check_text(report), nl=False)
    for (_, path), (_, _, render) in zip(outputs, targets, strict=True):
        if path is not None:
            write_text_atomic(path, render(report), overwrite=True)  # checked above
    raise typer.Exit(int(report.exit_code))
