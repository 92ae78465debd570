"""The `capcliff` command line: parse, call the core, render, map errors to exit codes.

Exit codes: 0 ok, 1 a sizing check failed, 2 usage or invalid input, 4 internal error.
"""

from __future__ import annotations

import sys
import traceback
from enum import StrEnum
from typing import TYPE_CHECKING, Annotated, Any, TypeVar

import typer

from capcliff.errors import CapcliffError, InputError

if TYPE_CHECKING:  # types only: the commands import their modules lazily to keep --help fast
    from capcliff.budget import BudgetSettings
    from capcliff.catalog import Model
    from capcliff.layout import Layout
    from capcliff.specs import HardwareSpec
    from capcliff.sweep_report import SweepPlan, SweepReport, WorkloadChoice
    from capcliff.units import KVDType
    from capcliff.weights import WeightScheme
    from capcliff.workload import Requests

E = TypeVar("E", bound=StrEnum)
DEFAULT_SWEEP_MODEL = "deepseek-r1-distill-llama-8b"  # the study's single-GPU scenario
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


class SweepFormat(StrEnum):
    """How `sweep` prints its result."""

    TABLE = "table"
    JSON = "json"
    CSV = "csv"


FormatOption = Annotated[OutputFormat, typer.Option("--format", help="table or json.")]
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
    gpu: Annotated[str, typer.Option(help="Hardware id (see `capcliff hardware`).")] = DEFAULT_GPU,
    gpus: Annotated[
        int | None, typer.Option(help="GPUs to lay out (default 8; multiples of a node).")
    ] = None,
    layout: Annotated[str, typer.Option(help="A layout such as dp4-tp2, or 'all'.")] = "all",
    engine: Annotated[str, typer.Option(help="vllm, vllm-v0, sglang or trtllm.")] = "vllm",
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


def _workload_choice(
    isl: int | None,
    osl: str | None,
    workload: str | None,
    num_requests: int,
    arrival: str,
    rate: float | None,
    clients: int | None,
) -> WorkloadChoice:
    from pathlib import Path

    from capcliff.files import read_text
    from capcliff.sweep_report import WorkloadChoice
    from capcliff.workload import Arrival

    trace = None
    preset_name = None
    if workload is not None:
        if workload.endswith(".jsonl"):
            trace = tuple(read_text(Path(workload), field="workload").splitlines())
        else:
            preset_name = workload
    lengths: tuple[int, ...] = ()
    if osl:
        try:
            lengths = tuple(int(v) for v in osl.split(",") if v.strip())
        except ValueError:
            raise InputError(f"osl: cannot read {osl!r}; write 1024 or 1024,4096,16384") from None
    return WorkloadChoice(
        num_requests=num_requests,
        isl=isl,
        osl=lengths,
        preset_name=preset_name,
        trace_lines=trace,
        arrival=_choice(Arrival, arrival, "arrival"),
        rate_per_s=rate,
        clients=clients,
    )


def _sweep_max_model_len(given: int | None, workloads: list[tuple[str, Requests]]) -> int:
    """The context the engine is configured for: given, else the longest request."""
    if given is not None:
        return given
    return max(int((r.input_tokens + r.max_output_tokens).max()) for _, r in workloads)


def _sweep_layouts(
    text: str | None,
    gpus: int | None,
    model: Model,
    spec: HardwareSpec,
    settings: BudgetSettings,
    kv_dtype: KVDType,
    max_model_len: int,
) -> list[Layout]:
    """The named layouts, or the fitting layout of `gpus` with the most KV in all."""
    from capcliff.layout import enumerate_layouts, parse_layout
    from capcliff.memory import layout_memory
    from capcliff.weights import WeightScheme

    if text:
        layouts = [parse_layout(part) for part in text.split(",") if part.strip()]
        wrong = [lay.name for lay in layouts if gpus is not None and lay.gpus != gpus]
        if wrong:
            raise InputError(f"layout: {', '.join(wrong)} do not use --gpus {gpus}")
        return layouts
    count = gpus or 1
    scheme = WeightScheme.as_shipped(model.arch)
    memories = [
        layout_memory(
            model.arch, spec, lay, scheme=scheme, kv_dtype=kv_dtype,
            max_model_len=max_model_len, settings=settings,
        )
        for lay in enumerate_layouts(count, arch=model.arch)
    ]  # fmt: skip
    fitting = [m for m in memories if m.fits]
    if not fitting:
        raise InputError(f"layout: no layout of {count} GPUs fits; run `capcliff memory`")
    return [max(fitting, key=lambda m: (m.kv_capacity_tokens_total, -m.layout.tp)).layout]


def _run_sweep(
    model: Model,
    spec: HardwareSpec,
    plan: SweepPlan,
    settings: BudgetSettings,
    kv_dtype: KVDType,
    max_model_len: int,
    policy: str | None,
    scheme: WeightScheme,
) -> SweepReport:
    """Build the report with a progress bar on stderr when it is a terminal."""
    from rich.console import Console
    from rich.progress import Progress

    from capcliff.sweep_report import build_sweep_report

    console = Console(stderr=True)
    with Progress(console=console, transient=True, disable=not console.is_terminal) as bar:
        task = bar.add_task("simulating", total=len(plan.layouts) * len(plan.workloads))
        return build_sweep_report(
            model,
            spec,
            plan,
            scheme=scheme,
            kv_dtype=kv_dtype,
            max_model_len=max_model_len,
            settings=settings,
            policy=policy,
            progress=lambda done, total: bar.update(task, completed=done, total=total),
        )


def _write_plot(report: SweepReport, path_text: str, force: bool) -> None:
    from pathlib import Path

    from capcliff.files import write_bytes_atomic

    path = Path(path_text)
    fmt = path.suffix.lstrip(".").lower()
    if fmt not in ("png", "svg"):
        raise InputError(f"plot: {path_text!r} must end in .png or .svg")
    try:
        from capcliff.render import sweep_figure_bytes

        data = sweep_figure_bytes(report, fmt)
    except ImportError:
        raise InputError(
            "plot: matplotlib is not installed; pip install 'capcliff[plot]'"
        ) from None
    write_bytes_atomic(path, data, overwrite=force)


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


@app.command()
def sweep(
    model: Annotated[
        str, typer.Argument(help="Catalog id, a config.json path, or a model directory.")
    ] = DEFAULT_SWEEP_MODEL,
    gpu: Annotated[str, typer.Option(help="Hardware id (see `capcliff hardware`).")] = DEFAULT_GPU,
    gpus: Annotated[int | None, typer.Option(help="GPUs (default: the layout's, else 1).")] = None,
    layout: Annotated[
        str | None, typer.Option(help="Layouts, comma-separated (default: most KV per replica).")
    ] = None,
    isl: Annotated[int | None, typer.Option(help="Input tokens per request (fixed).")] = None,
    osl: Annotated[
        str | None, typer.Option(help="Output tokens per request; a comma list sweeps them.")
    ] = None,
    workload: Annotated[
        str | None, typer.Option(help="A preset (reasoning, chat, chat-short) or a trace.jsonl.")
    ] = None,
    num_requests: Annotated[int, typer.Option(help="Requests to simulate.")] = 2000,
    arrival: Annotated[str, typer.Option(help="batch, clients or poisson.")] = "batch",
    rate: Annotated[float | None, typer.Option(help="Poisson arrival rate, requests/s.")] = None,
    clients: Annotated[int | None, typer.Option(help="Closed-loop clients.")] = None,
    concurrency: Annotated[
        str, typer.Option(help="64,128,256 or 64..8192 (doubling) or 64..8192:16.")
    ] = "32..2048",
    policy: Annotated[
        str | None, typer.Option(help="Admission policy (default: the engine's own).")
    ] = None,
    engine: Annotated[str, typer.Option(help="vllm, vllm-v0, sglang or trtllm.")] = "vllm",
    kv_dtype: KvDtypeOption = "bf16",
    max_model_len: MaxModelLenOption = None,
    gpu_memory_utilization: Annotated[float, typer.Option(help="vLLM's memory fraction.")] = 0.9,
    slo_ttft: Annotated[float | None, typer.Option(help="TTFT p99 limit, s (online).")] = None,
    slo_tpot: Annotated[float | None, typer.Option(help="TPOT p99 limit, s (online).")] = None,
    seed: Annotated[int, typer.Option(help="Random seed for the workload.")] = 0,
    plot: Annotated[str | None, typer.Option(help="Write a figure: FILE.png or FILE.svg.")] = None,
    force: Annotated[bool, typer.Option(help="Replace an existing plot file.")] = False,
    output: Annotated[SweepFormat, typer.Option("--format", help="table, json or csv.")] = (
        SweepFormat.TABLE
    ),
) -> None:
    """Simulate serving across concurrency (and output lengths, layouts): cliff and sweet spot."""
    from capcliff.budget import BudgetSettings, EngineName
    from capcliff.catalog import get_hardware, get_model
    from capcliff.solver import Slo
    from capcliff.sweep_report import SweepPlan, parse_concurrency, plan_workloads
    from capcliff.units import parse_kv_dtype
    from capcliff.weights import WeightScheme

    spec = get_hardware(gpu)
    resolved = get_model(model)
    settings = BudgetSettings(
        engine=_choice(EngineName, engine, "engine"), gpu_memory_utilization=gpu_memory_utilization
    )
    choice = _workload_choice(isl, osl, workload, num_requests, arrival, rate, clients)
    label, workloads = plan_workloads(choice, seed)
    length = _sweep_max_model_len(max_model_len, workloads)
    kv = parse_kv_dtype(kv_dtype)
    scheme = WeightScheme.as_shipped(resolved.arch)
    layouts = _sweep_layouts(layout, gpus, resolved, spec, settings, kv, length)
    slo = None
    if slo_ttft is not None or slo_tpot is not None:
        slo = Slo(ttft_s=slo_ttft or float("inf"), tpot_s=slo_tpot or float("inf"))
    plan = SweepPlan(
        layouts=tuple(layouts),
        workloads=tuple(workloads),
        concurrencies=parse_concurrency(concurrency),
        workload_label=label,
        seed=seed,
        slo=slo,
    )
    report = _run_sweep(resolved, spec, plan, settings, kv, length, policy, scheme)
    if plot:
        _write_plot(report, plot, force)
    if output is SweepFormat.JSON:
        typer.echo(report.model_dump_json(indent=2))
    elif output is SweepFormat.CSV:
        from capcliff.render import sweep_csv

        typer.echo(sweep_csv(report), nl=False)
    else:
        from capcliff.render import make_console, sweep_view

        make_console().print(sweep_view(report))


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

    from capcliff.budget import BudgetSettings
    from capcliff.calibrate import calibrate as run_calibration
    from capcliff.calibrate import model_id_from_log
    from capcliff.calibration import calibration_toml
    from capcliff.catalog import get_hardware, get_model, model_catalog
    from capcliff.files import read_text, write_text_atomic
    from capcliff.startup_logs import parse_startup_log
    from capcliff.units import parse_kv_dtype, parse_weight_dtype
    from capcliff.weights import WeightScheme

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

        from capcliff.render import calibration_dict

        typer.echo(json.dumps(calibration_dict(result, str(target)), indent=2))
        return
    from capcliff.render import calibration_view, make_console

    make_console().print(calibration_view(result, str(target)))


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
