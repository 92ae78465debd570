"""The `capcliff` command line: parse, call the core, render, map errors to exit codes.

Exit codes: 0 ok, 1 a sizing check failed, 2 usage or invalid input, 4 internal error.
"""

from __future__ import annotations

import sys
import traceback
from enum import StrEnum
from typing import Annotated, Any, TypeVar

import typer

from capcliff.errors import CapcliffError, InputError

E = TypeVar("E", bound=StrEnum)
DEFAULT_MODEL = "deepseek-r1-distill-qwen-32b"
DEFAULT_GPU = "h200-sxm"
DEFAULT_GPUS = 8
EXIT_INPUT = 2
EXIT_INTERNAL = 4

app = typer.Typer(
    name="capcliff",
    help="Capacity planner for LLM inference serving: KV cache, the reasoning cliff, layouts.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


class OutputFormat(StrEnum):
    """How a command prints its result."""

    TABLE = "table"
    JSON = "json"


def _version(show: bool) -> None:
    if show:
        from capcliff import __version__

        typer.echo(f"capcliff {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: Annotated[
        bool, typer.Option("--version", callback=_version, is_eager=True, help="Show the version.")
    ] = False,
) -> None:
    """Capacity planner for LLM inference serving: KV cache, the reasoning cliff, layouts."""


FormatOption = Annotated[OutputFormat, typer.Option("--format", help="table or json.")]
GpuOption = Annotated[str, typer.Option(help="Hardware id (see `capcliff hardware`).")]
EngineOption = Annotated[str, typer.Option(help="vllm, vllm-v0, sglang or trtllm.")]
KvDtypeOption = Annotated[
    str, typer.Option("--kv-dtype", "--kv-cache-dtype", help="KV cache dtype: bf16, fp16, fp8.")
]
MaxModelLenOption = Annotated[
    int | None,
    typer.Option(help="Longest request, tokens (default: the log's, else the model's context)."),
]


def _resolve_gpus(gpus: int | None, layout: str, gpus_per_node: int) -> int:
    from capcliff.layout import parse_layout

    count = gpus if gpus is not None else DEFAULT_GPUS
    if layout != "all":
        from_layout = parse_layout(layout).gpus
        if gpus is not None and gpus != from_layout:
            raise InputError(f"gpus: --gpus {gpus} but layout {layout!r} uses {from_layout} GPUs")
        count = from_layout
    if count < 1 or (count > gpus_per_node and count % gpus_per_node):
        raise InputError(
            f"gpus: {count} is neither at most one node ({gpus_per_node}) nor a multiple of it"
        )
    return count


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
    from capcliff.budget import BudgetSettings, EngineName
    from capcliff.catalog import get_hardware, get_model
    from capcliff.layout import parse_layout
    from capcliff.memory_report import build_memory_report
    from capcliff.units import parse_kv_dtype, parse_weight_dtype
    from capcliff.weights import WeightScheme

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
    from capcliff.render import make_console, memory_view

    make_console().print(memory_view(report))


def _choice(kind: type[E], text: str, field: str) -> E:
    try:
        return kind(text)
    except ValueError:
        valid = ", ".join(str(v.value) for v in kind)
        raise InputError(f"{field}: unknown {text!r}; valid: {valid}") from None


def _bytes_or_none(text: str | None, field: str) -> int | None:
    from capcliff.units import parse_bytes

    return None if text is None else parse_bytes(text, field=field)


def _calibration_terms(path: str | None) -> tuple[dict[str, int], frozenset[str]]:
    if path is None:
        return {}, frozenset()
    from pathlib import Path

    from capcliff.calibration import load_calibration

    terms = load_calibration(Path(path)).terms_bytes
    return terms, frozenset(terms)


def _print_catalog(entries: list[Any], output: OutputFormat, table: str) -> None:
    if output is OutputFormat.JSON:
        import json

        typer.echo(json.dumps([e.model_dump(mode="json") for e in entries], indent=2))
        return
    from capcliff import render

    render.make_console().print(getattr(render, table)(entries))


@app.command()
def models(output: FormatOption = OutputFormat.TABLE) -> None:
    """List the model catalog."""
    from capcliff.catalog import model_catalog

    _print_catalog(list(model_catalog().values()), output, "models_table")


@app.command()
def hardware(output: FormatOption = OutputFormat.TABLE) -> None:
    """List the hardware catalog."""
    from capcliff.catalog import hardware_catalog

    _print_catalog(list(hardware_catalog().values()), output, "hardware_table")


# The analysis commands (sweep, plan) and the checking ones (calibrate, check) live in their own
# modules; importing them registers them on `app`.
from capcliff import cli_analysis, cli_checks  # noqa: E402, F401


def main(argv: list[str] | None = None) -> int:
    """Entry point: run the app; domain errors become one line on stderr and exit code 2."""
    try:
        app(args=argv, prog_name="capcliff")  # usage errors: click prints them, exits 2
    except CapcliffError as exc:
        for line in str(exc).splitlines() or [type(exc).__name__]:
            typer.echo(f"error: {line}", err=True)
        return EXIT_INPUT
    except SystemExit as exc:
        return exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    except Exception:
        traceback.print_exc(file=sys.stderr)
        return EXIT_INTERNAL
    return 0


if __name__ == "__main__":
    sys.exit(main())
