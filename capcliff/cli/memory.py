"""The catalog and memory commands: `memory`, `models`, `hardware` (registered on `cli.app`)."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from capcliff.cli.app import (
    DEFAULT_GPU,
    DEFAULT_MODEL,
    EngineOption,
    FormatOption,
    GpuOption,
    KvDtypeOption,
    MaxModelLenOption,
    OutputFormat,
    _bytes_or_none,
    _calibration_terms,
    _choice,
    _resolve_gpus,
    app,
)
from capcliff.errors import InputError


@app.command()
def memory(
    model: Annotated[
        str, typer.Argument(help="Catalog id, a config.json path, or a model directory.")
    ] = DEFAULT_MODEL,
    gpu: GpuOption = DEFAULT_GPU,
    gpus: Annotated[
        int | None, typer.Option(help="GPUs to lay out (default 8; multiples of a node).")
    ] = None,
    layout: Annotated[str, typer.Option(help="A layout such as dp4-tp2, or 'all'.")] = "all",
    engine: EngineOption = "vllm",
    weight_dtype: Annotated[
        str | None,
        typer.Option(
            "--weight-dtype",
            "--quantization",
            help="bf16, fp16, fp8, int4 (awq/gptq), mxfp4, nvfp4 (default: as shipped).",
        ),
    ] = None,
    kv_dtype: KvDtypeOption = "bf16",
    max_model_len: MaxModelLenOption = None,
    gpu_total_memory: Annotated[
        str | None, typer.Option(help="Override the driver-reported memory, e.g. 139.81GiB.")
    ] = None,
    gpu_memory_utilization: Annotated[float, typer.Option(help="vLLM's memory fraction.")] = 0.9,
    max_num_seqs: Annotated[int | None, typer.Option(help="Engine max_num_seqs.")] = None,
    max_num_batched_tokens: Annotated[
        int | None, typer.Option(help="Engine max_num_batched_tokens (prefill chunk budget).")
    ] = None,
    block_size: Annotated[int | None, typer.Option(help="KV block (page) size, tokens.")] = None,
    kv_cache_memory: Annotated[
        str | None, typer.Option(help="vLLM --kv-cache-memory: KV bytes per GPU, e.g. 21.43GiB.")
    ] = None,
    enforce_eager: Annotated[bool, typer.Option(help="No CUDA graphs.")] = False,
    mem_fraction_static: Annotated[float | None, typer.Option(help="SGLang's fraction.")] = None,
    free_gpu_memory_fraction: Annotated[
        float, typer.Option(help="TensorRT-LLM's KV fraction of free memory.")
    ] = 0.9,
    calibration: Annotated[
        str | None, typer.Option(help="A calibration file written by `capcliff calibrate`.")
    ] = None,
    output: FormatOption = OutputFormat.TABLE,
) -> None:
    """Weights, KV bytes per token, the engine's budget and KV capacity for every layout."""
    from capcliff.catalog.catalogs import get_hardware, get_model
    from capcliff.catalog.layout import parse_layout
    from capcliff.memory.budget import BudgetSettings, EngineName
    from capcliff.memory.report import build_memory_report
    from capcliff.memory.weights import WeightScheme
    from capcliff.units import parse_kv_dtype, parse_weight_dtype

    spec = get_hardware(gpu)
    resolved = get_model(model)
    count = _resolve_gpus(gpus, layout, spec.gpus_per_node)
    arch = resolved.arch
    scheme = (
        WeightScheme.as_shipped(arch)
        if weight_dtype is None
        else WeightScheme.quantised(arch, parse_weight_dtype(weight_dtype))
    )
    length = max_model_len or arch.max_position_embeddings
    if length is None or length < 1:
        raise InputError("max_model_len: the model config has no max_position_embeddings; pass one")
    overrides, calibrated = _calibration_terms(calibration)
    settings = BudgetSettings(
        engine=_choice(EngineName, engine, "engine"),
        gpu_memory_utilization=gpu_memory_utilization,
        gpu_total_memory_bytes=_bytes_or_none(gpu_total_memory, "gpu_total_memory"),
        max_num_seqs=max_num_seqs,
        max_num_batched_tokens=max_num_batched_tokens,
        block_size=block_size,
        kv_cache_memory_bytes=_bytes_or_none(kv_cache_memory, "kv_cache_memory"),
        enforce_eager=enforce_eager,
        mem_fraction_static=mem_fraction_static,
        free_gpu_memory_fraction=free_gpu_memory_fraction,
        term_overrides=overrides,
        calibrated_terms=calibrated,
    )
    report = build_memory_report(
        resolved,
        spec,
        gpus=count,
        layouts=None if layout == "all" else [parse_layout(layout)],
        scheme=scheme,
        kv_dtype=parse_kv_dtype(kv_dtype),
        max_model_len=length,
        settings=settings,
    )
    if output is OutputFormat.JSON:
        typer.echo(report.model_dump_json(indent=2))
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
