"""The catalog and memory commands: `memory`, `models`, `hardware` (registered on `cli.app`)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any

import typer

from capcliff.cli.app import (
    COUNT,
    DEFAULT_GPU,
    DEFAULT_MODEL,
    ForceOption,
    FormatOption,
    GpuOption,
    OutputFormat,
    _resolve_gpus,
    app,
    deployment_options,
    print_warnings,
)
from capcliff.errors import InputError

if TYPE_CHECKING:
    from capcliff.analysis.deployment_settings import DeploymentSettings


@app.command()
@deployment_options(simulation=False)
def memory(
    model: Annotated[
        str, typer.Argument(help="Catalog id, a config.json path, or a model directory.")
    ] = DEFAULT_MODEL,
    gpu: GpuOption = DEFAULT_GPU,
    gpus: Annotated[
        int | None,
        typer.Option(callback=COUNT, help="GPUs to lay out (default 8; multiples of a node)."),
    ] = None,
    layout: Annotated[
        str, typer.Option(help="Layouts such as dp4-tp2 or tp8,dpa8-ep8 (one GPU count), or 'all'.")
    ] = "all",
    force: ForceOption = False,
    output: FormatOption = OutputFormat.TABLE,
    *,
    settings: DeploymentSettings,
) -> None:
    """Weights, KV bytes per token, the engine's budget and KV capacity for every layout."""
    from capcliff.analysis.deployment import resolve
    from capcliff.analysis.max_model_len import check_model_context
    from capcliff.catalog.catalogs import get_hardware, get_model
    from capcliff.catalog.layout import parse_layout_list
    from capcliff.memory.report import build_memory_report

    spec = get_hardware(gpu)
    resolved = get_model(model)
    count = _resolve_gpus(gpus, layout, spec.gpus_per_node)
    named = None if layout == "all" else parse_layout_list(layout)
    one = named[0].name if named is not None and len(named) == 1 else None
    dep = resolve(resolved, spec, settings, force=force, layout=one)
    if settings.calibration is not None and one is None:
        # --layout all (the default): a calibration made on one layout is applied to every
        # layout, and each other one is said (it was unsaid); named layouts refuse it unforced
        from capcliff.catalog.layout import enumerate_layouts

        every = named is None
        dep = dep.with_warnings_of(
            resolve(resolved, spec, settings, force=every or force, layout=lay.name)
            for lay in (enumerate_layouts(count, arch=resolved.arch) if every else named or ())
        )
    resolved = dep.model  # with a --rope-scaling applied
    given = settings.max_model_len
    engine = settings.engine.value
    length = resolved.arch.default_context_for(engine) if given is None else given
    if length is None:
        raise InputError("max_model_len: the model config has no max_position_embeddings; pass one")
    check_model_context(length, resolved.arch.context_for(engine),
                        allow_long=settings.allow_long_max_model_len)  # fmt: skip
    if named is not None:
        # named layouts none of which can exist for the model (tp3 on 32 heads, EP or attention
        # DP on a dense model) are bad input, as `plan` and `sweep` say; `memory` answered "no
        # layout of 3 GPUs fits", though dp3 and pp3 fit (fuzz_random seed 60)
        from capcliff.analysis.what_fits import refuse_impossible

        refuse_impossible(dep, tuple(named), length)
    print_warnings(dep.warnings)
    report = build_memory_report(
        resolved,
        spec,
        gpus=count,
        layouts=None if named is None else list(named),
        scheme=dep.scheme,
        kv_dtype=dep.kv_dtype,
        max_model_len=length,
        settings=dep.budget,
        # SGLang starts with a pool shorter than its context and caps requests at it; a plan's
        # workload still needs its longest request held (plan and sweep refuse it)
        caps_to_pool=engine == "sglang",
    )
    if output is OutputFormat.JSON:
        from capcliff.cli.render import report_json

        typer.echo(report_json(report))
        return
    from capcliff.cli.render import make_console, memory_view

    make_console().print(memory_view(report))


def _print_catalog(entries: list[Any], output: OutputFormat, table: str) -> None:
    if output is OutputFormat.JSON:
        import json

        typer.echo(json.dumps([e.model_dump(mode="json") for e in entries], indent=2))
        return
    from capcliff.cli import render

    render.make_console().print(getattr(render, table)(entries))


@app.command()
def models(output: FormatOption = OutputFormat.TABLE) -> None:
    """List the model catalog."""
    from capcliff.catalog.catalogs import model_catalog

    _print_catalog(list(model_catalog().values()), output, "models_table")


@app.command()
def hardware(output: FormatOption = OutputFormat.TABLE) -> None:
    """List the hardware catalog."""
    from capcliff.catalog.catalogs import hardware_catalog

    _print_catalog(list(hardware_catalog().values()), output, "hardware_table")
