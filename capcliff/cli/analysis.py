"""The analysis commands: `sweep`, `plan` and `calibrate` (registered on `cli.app`).

Like every command, they parse flags, call the core and render; domain errors reach `cli.main`.
"""

from __future__ import annotations

from enum import StrEnum
from typing import TYPE_CHECKING, Annotated

import typer

from capcliff.cli.app import (
    DEFAULT_GPU,
    DEFAULT_MODEL,
    EngineOption,
    GpuOption,
    KvDtypeOption,
    MaxModelLenOption,
    _calibration_terms,
    _choice,
    app,
)
from capcliff.errors import InputError

if TYPE_CHECKING:  # types only: the commands import their modules lazily to keep --help fast
    from capcliff.analysis.deployment import WorkloadChoice
    from capcliff.analysis.sweep import SweepPlan, SweepReport
    from capcliff.catalog.catalogs import Model
    from capcliff.catalog.layout import Layout
    from capcliff.catalog.specs import HardwareSpec
    from capcliff.memory.budget import BudgetSettings
    from capcliff.memory.weights import WeightScheme
    from capcliff.sim.workload import Requests
    from capcliff.units import KVDType

IslOption = Annotated[int | None, typer.Option(help="Input tokens per request (fixed).")]
WorkloadOption = Annotated[
    str | None, typer.Option(help="A preset (reasoning, chat, chat-short) or a trace.jsonl.")
]
ArrivalOption = Annotated[str, typer.Option(help="batch, clients or poisson.")]
RateOption = Annotated[float | None, typer.Option(help="Poisson arrival rate, requests/s.")]
ClientsOption = Annotated[int | None, typer.Option(help="Closed-loop clients.")]
PolicyOption = Annotated[
    str | None, typer.Option(help="Admission policy (default: the engine's own).")
]
SloTtftOption = Annotated[float | None, typer.Option(help="TTFT p99 limit, s (online serving).")]
SloTpotOption = Annotated[float | None, typer.Option(help="TPOT p99 limit, s (online serving).")]
SeedOption = Annotated[int, typer.Option(help="Random seed for the workload.")]
CalibrationOption = Annotated[
    str | None, typer.Option(help="Overhead terms fitted by `capcliff calibrate` (a TOML file).")
]
DEFAULT_SWEEP_MODEL = "deepseek-r1-distill-llama-8b"  # the study's single-GPU scenario


class SweepFormat(StrEnum):
    """How `sweep` prints its result."""

    TABLE = "table"
    JSON = "json"
    CSV = "csv"


class PlanFormat(StrEnum):
    """How `plan` prints its result."""

    TABLE = "table"
    JSON = "json"
    MARKDOWN = "markdown"


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

    from capcliff.analysis.deployment import WorkloadChoice
    from capcliff.files import read_text
    from capcliff.sim.workload import Arrival

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
    from capcliff.catalog.layout import enumerate_layouts, parse_layout
    from capcliff.memory.layout_memory import layout_memory
    from capcliff.memory.weights import WeightScheme

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

    from capcliff.analysis.sweep import build_sweep_report

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
        from capcliff.cli.render import sweep_figure_bytes

        data = sweep_figure_bytes(report, fmt)
    except ImportError:
        raise InputError(
            "plot: matplotlib is not installed; pip install 'capcliff[plot]'"
        ) from None
    write_bytes_atomic(path, data, overwrite=force)


@app.command()
def sweep(
    model: Annotated[
        str, typer.Argument(help="Catalog id, a config.json path, or a model directory.")
    ] = DEFAULT_SWEEP_MODEL,
    gpu: GpuOption = DEFAULT_GPU,
    gpus: Annotated[int | None, typer.Option(help="GPUs (default: the layout's, else 1).")] = None,
    layout: Annotated[
        str | None, typer.Option(help="Layouts, comma-separated (default: most KV per replica).")
    ] = None,
    isl: IslOption = None,
    osl: Annotated[
        str | None, typer.Option(help="Output tokens per request; a comma list sweeps them.")
    ] = None,
    workload: WorkloadOption = None,
    num_requests: Annotated[int, typer.Option(help="Requests to simulate.")] = 2000,
    arrival: ArrivalOption = "batch",
    rate: RateOption = None,
    clients: ClientsOption = None,
    concurrency: Annotated[
        str, typer.Option(help="64,128,256 or 64..8192 (doubling) or 64..8192:16.")
    ] = "32..2048",
    policy: PolicyOption = None,
    engine: EngineOption = "vllm",
    kv_dtype: KvDtypeOption = "bf16",
    max_model_len: MaxModelLenOption = None,
    gpu_memory_utilization: Annotated[float, typer.Option(help="vLLM's memory fraction.")] = 0.9,
    calibration: CalibrationOption = None,
    slo_ttft: SloTtftOption = None,
    slo_tpot: SloTpotOption = None,
    seed: SeedOption = 0,
    plot: Annotated[str | None, typer.Option(help="Write a figure: FILE.png or FILE.svg.")] = None,
    force: Annotated[bool, typer.Option(help="Replace an existing plot file.")] = False,
    output: Annotated[SweepFormat, typer.Option("--format", help="table, json or csv.")] = (
        SweepFormat.TABLE
    ),
) -> None:
    """Simulate serving across concurrency (and output lengths, layouts): cliff and sweet spot."""
    from capcliff.analysis.deployment import parse_concurrency, plan_workloads
    from capcliff.analysis.solver import Slo
    from capcliff.analysis.sweep import SweepPlan
    from capcliff.catalog.catalogs import get_hardware, get_model
    from capcliff.memory.budget import BudgetSettings, EngineName
    from capcliff.memory.weights import WeightScheme
    from capcliff.units import parse_kv_dtype

    spec = get_hardware(gpu)
    resolved = get_model(model)
    overrides, calibrated = _calibration_terms(calibration)
    settings = BudgetSettings(
        engine=_choice(EngineName, engine, "engine"),
        gpu_memory_utilization=gpu_memory_utilization,
        term_overrides=overrides,
        calibrated_terms=calibrated,
    )
    choice = _workload_choice(isl, osl, workload, num_requests, arrival, rate, clients)
    label, workloads = plan_workloads(choice, seed)
    length = _sweep_max_model_len(max_model_len, workloads)
    kv = parse_kv_dtype(kv_dtype)
    scheme = WeightScheme.as_shipped(resolved.arch)
    layouts = _sweep_layouts(layout, gpus, resolved, spec, settings, kv, length)
    slo = Slo.of(slo_ttft, slo_tpot)
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
        from capcliff.cli.render import sweep_csv

        typer.echo(sweep_csv(report), nl=False)
    else:
        from capcliff.cli.render import make_console, sweep_view

        make_console().print(sweep_view(report))


PlanGpuOption = Annotated[
    str,
    typer.Option(
        help="Hardware id; a comma list (h100-sxm,h200-sxm,b200,mi300x) sizes a fleet on each."
    ),
]
ArrivalChoice = Annotated[
    str | None,
    typer.Option(
        help="batch (offline: every request at t = 0), poisson or clients "
        "(default: online, from --rate or --clients)."
    ),
]


def _prices(text: str | None, gpu_ids: list[str]) -> dict[str, float]:
    """`--price-gpu-hour 3.5` (every GPU type) or `3,4,6` (one per --gpu, in order)."""
    if text is None:
        return {}
    try:
        values = [float(v) for v in text.split(",") if v.strip()]
    except ValueError:
        values = []
    if len(values) == 1:
        values = values * len(gpu_ids)
    if len(values) != len(gpu_ids) or any(not v > 0 or v == float("inf") for v in values):
        raise InputError(
            f"price-gpu-hour: cannot read {text!r}; give one price > 0 in $/GPU-hour, or one per "
            f"--gpu ({len(gpu_ids)})"
        )
    return dict(zip(gpu_ids, values, strict=True))


def _mode_arrival(arrival: str | None, rate: float | None, clients: int | None) -> str:
    """The arrival pattern: as given, else poisson with --rate, clients with --clients, else
    online at saturation (requests waiting, no arrival process)."""
    if arrival is not None:
        return arrival
    if rate is not None and clients is not None:
        raise InputError("rate: give --rate or --clients, not both")
    if rate is not None:
        return "poisson"
    if clients is not None:
        return "clients"
    return "online"


@app.command()
def plan(
    model: Annotated[
        str, typer.Argument(help="Catalog id, a config.json path, or a model directory.")
    ] = DEFAULT_MODEL,
    gpu: PlanGpuOption = DEFAULT_GPU,
    gpus: Annotated[int | None, typer.Option(help="GPUs (default: one node).")] = None,
    nodes: Annotated[int | None, typer.Option(help="Nodes of the GPU's node size.")] = None,
    isl: IslOption = None,
    osl: Annotated[int | None, typer.Option(help="Output tokens per request (fixed).")] = None,
    workload: WorkloadOption = None,
    num_requests: Annotated[
        int | None,
        typer.Option(
            help="Requests per simulation (batch: 500; online: sized by the stopping rule)."
        ),
    ] = None,
    arrival: ArrivalChoice = None,
    rate: RateOption = None,
    clients: ClientsOption = None,
    engine: EngineOption = "vllm",
    policy: PolicyOption = None,
    kv_dtype: KvDtypeOption = "bf16",
    weight_dtype: Annotated[
        str | None,
        typer.Option(
            "--weight-dtype", "--quantization", help="Weight dtype (default: as shipped)."
        ),
    ] = None,
    max_model_len: MaxModelLenOption = None,
    slo_ttft: SloTtftOption = None,
    slo_tpot: SloTpotOption = None,
    objective: Annotated[
        str, typer.Option(help="Batch mode: makespan, goodput or cost.")
    ] = "makespan",
    headroom: Annotated[
        float, typer.Option(help="Online: spare capacity kept in fleet sizing (0.2 = 20 %).")
    ] = 0.2,
    price_gpu_hour: Annotated[
        str | None,
        typer.Option(help="$ per GPU-hour: one for all, or one per --gpu (default: catalog)."),
    ] = None,
    routing: Annotated[
        str, typer.Option(help="Online: round-robin or least-loaded across replicas.")
    ] = "round-robin",
    jobs: Annotated[
        int | None, typer.Option(help="Worker processes for simulations (default: CPU cores).")
    ] = None,
    calibration: CalibrationOption = None,
    seed: SeedOption = 0,
    output: Annotated[PlanFormat, typer.Option("--format", help="table, json or markdown.")] = (
        PlanFormat.TABLE
    ),
) -> None:
    """Recommend a layout, admission cap and fleet for online serving (or an offline batch),
    with engine flags."""
    from capcliff.analysis.plan_types import Objective
    from capcliff.analysis.solver import Slo
    from capcliff.catalog.catalogs import get_hardware, get_model
    from capcliff.memory.budget import BudgetSettings, EngineName
    from capcliff.memory.weights import WeightScheme
    from capcliff.units import parse_kv_dtype, parse_weight_dtype

    gpu_ids = [g.strip() for g in gpu.split(",") if g.strip()]
    if not gpu_ids:
        raise InputError("gpu: give a hardware id (see `capcliff hardware`)")
    specs = [get_hardware(g) for g in gpu_ids]
    spec = specs[0]
    resolved = get_model(model)
    overrides, calibrated = _calibration_terms(calibration)
    scheme = None
    if weight_dtype is not None:
        scheme = WeightScheme.quantised(resolved.arch, parse_weight_dtype(weight_dtype))
    if gpus is not None and nodes is not None:
        raise InputError("gpus: give --gpus or --nodes, not both")
    count = gpus or (nodes or 1) * spec.gpus_per_node
    lengths = str(osl) if osl is not None else None
    preset_default = None if (isl or osl or workload) else "reasoning"
    pattern = _mode_arrival(arrival, rate, clients)
    batch = pattern == "batch"
    goal = _choice(Objective, objective, "objective").value
    choice = _workload_choice(
        isl, lengths, workload or preset_default,
        num_requests or 500, "batch" if pattern == "online" else pattern, rate, clients,
    )  # fmt: skip
    slo = Slo.of(slo_ttft, slo_tpot)
    settings = BudgetSettings(
        engine=_choice(EngineName, engine, "engine"),
        term_overrides=overrides,
        calibrated_terms=calibrated,
    )
    if batch:
        from capcliff.analysis.plan import build_plan_report

        report = build_plan_report(
            resolved, spec, gpus=count, workload=choice, settings=settings,
            kv_dtype=parse_kv_dtype(kv_dtype), max_model_len=max_model_len, policy=policy,
            objective=goal, slo=slo, seed=seed,
            scheme=scheme,
        )  # fmt: skip
    else:
        from capcliff.analysis.parallel import default_jobs
        from capcliff.analysis.serving import OnlineOptions, build_online_plan
        from capcliff.sim.config import Routing

        if jobs is not None and jobs < 1:
            raise InputError(f"jobs: must be >= 1, got {jobs}")
        options = OnlineOptions(
            slo=slo, headroom=headroom, least_requests=num_requests, fleet_gpus=tuple(specs),
            prices=_prices(price_gpu_hour, gpu_ids), jobs=jobs or default_jobs(),
            routing=_choice(Routing, routing, "routing"),
        )  # fmt: skip
        report = build_online_plan(
            resolved, spec, gpus=count, workload=choice, settings=settings,
            kv_dtype=parse_kv_dtype(kv_dtype), max_model_len=max_model_len, policy=policy,
            seed=seed, options=options, scheme=scheme,
        )  # fmt: skip
    if output is PlanFormat.JSON:
        typer.echo(report.model_dump_json(indent=2))
    elif output is PlanFormat.MARKDOWN:
        from capcliff.cli.render_plan import plan_markdown

        typer.echo(plan_markdown(report), nl=False)
    else:
        from capcliff.cli.render import make_console
        from capcliff.cli.render_plan import plan_view

        make_console().print(plan_view(report))
