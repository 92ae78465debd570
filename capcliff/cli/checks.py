"""The commands that hold capcliff to reality and to specs: `calibrate` and `check`.

Registered on `cli.app` when `cli` imports this module; domain errors reach `cli.main`.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated

import typer

from capcliff.cli.app import (
    DEFAULT_GPU,
    FormatOption,
    KvDtypeOption,
    MaxModelLenOption,
    OutputFormat,
    app,
)
from capcliff.errors import InputError


@app.command()
def calibrate(
    logfile: Annotated[str, typer.Argument(help="An engine start-up log (vLLM, SGLang, TRT-LLM).")],
    model: Annotated[
        str | None, typer.Option(help="Catalog id or config.json (default: from the log).")
    ] = None,
    gpu: Annotated[str, typer.Option(help="Hardware id, for what the log leaves out.")] = (
        DEFAULT_GPU
    ),
    kv_dtype: KvDtypeOption = "bf16",
    weight_dtype: Annotated[
        str | None, typer.Option(help="Weight dtype if the log omits it (e.g. a prebuilt engine).")
    ] = None,
    max_model_len: MaxModelLenOption = None,
    output: Annotated[
        str | None, typer.Option("--output", "-o", help="Calibration file to write.")
    ] = None,
    force: Annotated[bool, typer.Option(help="Replace an existing output file.")] = False,
    fmt: FormatOption = OutputFormat.TABLE,
) -> None:
    """Compare a start-up log with capcliff's prediction and write the fitted overhead terms."""
    from pathlib import Path

    from capcliff.calibrate.calibration_file import calibration_toml
    from capcliff.calibrate.compare import calibrate as run_calibration
    from capcliff.calibrate.compare import model_id_from_log
    from capcliff.calibrate.startup_logs import parse_startup_log
    from capcliff.catalog.catalogs import get_hardware, get_model, model_catalog
    from capcliff.files import read_text, write_text_atomic
    from capcliff.memory.budget import BudgetSettings
    from capcliff.memory.weights import WeightScheme
    from capcliff.units import parse_kv_dtype, parse_weight_dtype

    log = parse_startup_log(read_text(Path(logfile), field="logfile"))
    repos = {mid: card.hf_repo for mid, card in model_catalog().items()}
    model_id = model or model_id_from_log(log, repos)
    if model_id is None:
        raise InputError(
            f"model: cannot tell the model from the log ({log.config.get('model', 'not named')}); "
            "pass --model with a catalog id or a config.json"
        )
    resolved = get_model(model_id)
    result = run_calibration(
        log,
        resolved,
        get_hardware(gpu),
        base=BudgetSettings(),
        kv_dtype=parse_kv_dtype(kv_dtype),
        scheme=None
        if weight_dtype is None
        else WeightScheme.quantised(resolved.arch, parse_weight_dtype(weight_dtype)),
        max_model_len=max_model_len,
        source=logfile,
    )
    target = Path(output) if output else Path(logfile).with_suffix(".calibration.toml")
    write_text_atomic(target, calibration_toml(result.calibration), overwrite=force)
    if fmt is OutputFormat.JSON:
        import json

        from capcliff.cli.render import calibration_dict

        typer.echo(json.dumps(calibration_dict(result, str(target)), indent=2))
        return
    from capcliff.cli.render import calibration_view, make_console

    make_console().print(calibration_view(result, str(target)))


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
    from capcliff.check.runner import check_file
    from capcliff.files import write_text_atomic

    report = check_file(Path(spec), baseline=Path(baseline) if baseline else None)
    # Outputs are reports this command owns (a CI summary file may already exist): replace them.
    for target, render in (
        (junit, check_junit),
        (markdown, check_markdown),
        (write_baseline, baseline_json),
    ):
        if target:
            write_text_atomic(Path(target), render(report), overwrite=True)
    typer.echo(check_json(report) if output is CheckFormat.JSON else check_text(report), nl=False)
    raise typer.Exit(int(report.exit_code))
