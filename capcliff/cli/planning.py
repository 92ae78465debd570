"""`capcliff plan`: online serving (the default) or an offline batch (registered on `cli.app`).

Like every command, it parses flags, calls the core and renders; domain errors reach `cli.main`.
"""

from __future__ import annotations

from enum import StrEnum
from typing import TYPE_CHECKING, Annotated

import typer

from capcliff.cli.app import (
    COUNT,
    DEFAULT_GPU,
    DEFAULT_MODEL,
    SHARE,
    ForceOption,
    SeedOption,
    _choice,
    app,
    deployment_options,
    print_warnings,
)
from capcliff.cli.workload_options import (
    ClientsOption,
    ContextOption,
    IslOption,
    RangeRatioOption,
    RateOption,
    SloTpotOption,
    SloTtftOption,
    ThinkTimeOption,
    TurnsOption,
    WorkloadOption,
    input_paths,
    refuse_count_with_trace,
    workload_choice,
)
from capcliff.errors import InputError

if TYPE_CHECKING:  # types only: the command imports its modules lazily to keep --help fast
    from pathlib import Path

    from capcliff.analysis.deployment import Deployment
    from capcliff.analysis.deployment_settings import DeploymentSettings
    from capcliff.analysis.evaluate.solver import Slo
    from capcliff.analysis.plan.types import PlanReport
    from capcliff.analysis.workloads import WorkloadChoice
    from capcliff.catalog.layout import Layout


class PlanFormat(StrEnum):
    """How `plan` prints its result."""

    TABLE = "table"
    JSON = "json"
    MARKDOWN = "markdown"


def _plan_gpus(
    gpus: int | None, nodes: int | None, gpus_per_node: int, layouts: tuple[Layout, ...] = ()
) -> int:
    """--gpus, else --nodes whole nodes, else the named layouts' GPUs, else one node. Every
    named layout must use exactly the GPUs planned."""
    if gpus is not None and nodes is not None:
        raise InputError("gpus: give --gpus or --nodes, not both")
    from capcliff.analysis.deployment_settings import check_gpu_count

    if gpus is None and nodes is None and layouts:
        gpus = layouts[0].gpus
        where = f"{layouts[0].name} uses"
    else:
        where = "--gpus" if gpus is not None else "--nodes"
    count = (1 if nodes is None else nodes) * gpus_per_node if gpus is None else gpus
    count = check_gpu_count(count, gpus_per_node=gpus_per_node)
    wrong = [f"{lay.name} ({lay.gpus})" for lay in layouts if lay.gpus != count]
    if wrong:
        raise InputError(
            f"layout: {', '.join(wrong)} do not use the {count} GPUs planned ({where} {count}); "
            "every layout must span them all"
        )
    return count


def _plan_layouts(text: str | None) -> tuple[Layout, ...]:
    """The layouts named by --layout (none: every layout), each once."""
    if text is None:
        return ()
    from capcliff.catalog.layout import parse_layout_list

    return parse_layout_list(text)


PlanGpuOption = Annotated[
    str,
    typer.Option(
        help="Hardware id; a comma list (h100-sxm,h200-sxm,b200,mi300x) sizes a fleet on each "
        "(with --disagg: each pool may run on any of them)."
    ),
]
PlanArrivalOption = Annotated[
    str | None,
    typer.Option(
        help="batch (offline: every request at t = 0), poisson or clients (default: online, "
        "from --rate or --clients, else the most each layout sustains)."
    ),
]


def _prices(text: str | None, gpu_ids: list[str]) -> dict[str, float]:
    """`--price-gpu-hour 3.5` (every GPU type) or `3,4,6` (one per --gpu, in order)."""
    from capcliff.catalog.specs import MAX_USD_PER_GPU_HOUR, MIN_USD_PER_GPU_HOUR

    if text is None:
        return {}
    try:
        values = [float(v) for v in text.split(",")]  # "2," (a price left out) is refused
    except ValueError:
        values = []
    if len(values) == 1:
        values = values * len(gpu_ids)
    if len(values) != len(gpu_ids) or any(
        not MIN_USD_PER_GPU_HOUR <= v <= MAX_USD_PER_GPU_HOUR for v in values
    ):
        raise InputError(
            f"price-gpu-hour: cannot read {text!r:.60}; give one price in [{MIN_USD_PER_GPU_HOUR}, "
            f"{MAX_USD_PER_GPU_HOUR:,.0f}] $/GPU-hour, or one per --gpu ({len(gpu_ids)})"
        )
    return dict(zip(gpu_ids, values, strict=True))


def _gpu_ids(gpu: str) -> list[str]:
    """--gpu's hardware ids, each once and none empty."""
    gpu_ids = [g.strip() for g in gpu.split(",")]
    if not any(gpu_ids):
        raise InputError("gpu: give a hardware id (see `capcliff hardware`)")
    if not all(gpu_ids):  # "h100-sxm,,h200-sxm": a price list would pair with it unseen
        raise InputError(f"gpu: {gpu!r} has an empty item; give hardware ids between the commas")
    twice = sorted({g for g in gpu_ids if gpu_ids.count(g) > 1})
    if twice:  # a second price for one GPU type would replace the first unseen
        raise InputError(
            f"gpu: {', '.join(twice)} listed more than once; give each GPU type once, with one "
            "--price-gpu-hour each"
        )
    return gpu_ids


def _pattern(arrival: str | None, rate: float | None, clients: int | None) -> str:
    """The arrival pattern: as given; else poisson with --rate, clients with --clients, else
    "online" (no arrival process: the most each layout sustains)."""
    if arrival is not None:
        return arrival
    if rate is not None and clients is not None:
        raise InputError("rate: give --rate or --clients, not both")
    if rate is not None:
        return "poisson"
    return "clients" if clients is not None else "online"


def _one_osl(osl: str | None) -> str | None:
    """plan's --osl: one length or one distribution (sweep's takes a list; an inline histogram
    is one distribution whose rows a comma separates)."""
    from capcliff.sim.traffic.length_spec import is_length_spec

    if osl is not None and "," in osl and not is_length_spec(osl):
        raise InputError(f"osl: plan takes one output length (sweep takes a list), got {osl!r}")
    return osl


@app.command()
@deployment_options(simulation=True)
def plan(
    model: Annotated[
        str, typer.Argument(help="Catalog id, a config.json path, or a model directory.")
    ] = DEFAULT_MODEL,
    gpu: PlanGpuOption = DEFAULT_GPU,
    gpus: Annotated[int | None, typer.Option(callback=COUNT, help="GPUs (default: one node).")] = (
        None
    ),
    nodes: Annotated[
        int | None, typer.Option(callback=COUNT, help="Nodes of the GPU's node size.")
    ] = None,
    layout: Annotated[
        str | None,
        typer.Option(
            help="Evaluate only these layouts, comma-separated (e.g. tp8 or dp2-tp4,tp8; as "
            "`sweep --layout`), each searched in full (default: every layout of the GPUs)."
        ),
    ] = None,
    isl: IslOption = None,
    osl: Annotated[
        str | None,
        typer.Option(
            help="Output tokens per request: fixed, or lognormal:MEAN:P99[:MAX] (a distribution "
            "named by its mean and p99, cut at MAX, default 2 x p99)."
        ),
    ] = None,
    workload: WorkloadOption = None,
    random_range_ratio: RangeRatioOption = None,
    think_time: ThinkTimeOption = None,
    turns: TurnsOption = None,
    context: ContextOption = None,
    num_requests: Annotated[
        int | None,
        typer.Option(
            help="Requests per simulation (batch: 500; online: at least this many, else the "
            "stopping rule decides).",
        ),
    ] = None,
    arrival: PlanArrivalOption = None,
    rate: RateOption = None,
    clients: ClientsOption = None,
    slo_ttft: SloTtftOption = None,
    slo_tpot: SloTpotOption = None,
    objective: Annotated[
        str | None,
        typer.Option(help="Batch: makespan (default), goodput or cost (online: sustained rate)."),
    ] = None,
    headroom: Annotated[
        float | None,
        typer.Option(
            callback=SHARE,
            help="Online: spare capacity fleet sizing keeps, in [0, 1) (default 0.2: 20 %).",
        ),
    ] = None,
    price_gpu_hour: Annotated[
        str | None,
        typer.Option(help="$ per GPU-hour: one for all, or one per --gpu (default: catalog)."),
    ] = None,
    jobs: Annotated[
        int | None,
        typer.Option(
            callback=COUNT,
            help="Worker processes for the searches (default: the idle cores).",
        ),
    ] = None,
    disagg: Annotated[
        bool, typer.Option("--disagg", help="Search prefill:decode splits against aggregated.")
    ] = False,
    seed: SeedOption = 0,
    serve_local_path: Annotated[
        bool,
        typer.Option(
            "--serve-local-path",
            help="Engine commands load the model directory given, not its HF repo id.",
        ),
    ] = False,
    force: ForceOption = False,
    output: Annotated[PlanFormat, typer.Option("--format", help="table, json or markdown.")] = (
        PlanFormat.TABLE
    ),
    plot: Annotated[
        str | None,
        typer.Option(
            help="Online: write each layout's rate and latency against load to "
            "FILE.png or FILE.svg."
        ),
    ] = None,
    *,
    settings: DeploymentSettings,
) -> None:
    """Recommend a layout, cap and fleet for online serving within an SLO (or a batch job)."""
    from capcliff.analysis.deployment import resolve
    from capcliff.analysis.evaluate.solver import Slo
    from capcliff.analysis.plan.types import Objective
    from capcliff.analysis.setting_refusals import (
        refuse_disagg_only,
        refuse_total_memory_across_gpus,
    )
    from capcliff.analysis.workloads import sessions_within
    from capcliff.catalog.catalogs import get_hardware, get_model

    figure = _plot_target(
        plot, disagg=disagg, force=force, inputs=input_paths(workload, model, settings, osl)
    )
    gpu_ids = _gpu_ids(gpu)
    refuse_total_memory_across_gpus(settings, gpu_ids)
    specs = [get_hardware(g) for g in gpu_ids]
    spec = specs[0]
    named = _plan_layouts(layout)
    one = named[0].name if len(named) == 1 else None
    dep = resolve(get_model(model), spec, settings, force=force, layout=one)
    # the fleet's other GPU types say their own warnings (a forced calibration of another GPU
    # applied there was unsaid)
    dep = dep.with_warnings_of(dep.on(hw) for hw in specs[1:])
    count = _plan_gpus(gpus, nodes, spec.gpus_per_node, named)
    lengths = _one_osl(osl)
    given = isl is not None or osl is not None or workload is not None
    pattern = _pattern(arrival, rate, clients)
    refuse_count_with_trace(workload, num_requests)
    requests = 500 if num_requests is None else num_requests
    choice = workload_choice(
        isl, lengths, workload if given else "reasoning", requests,
        "batch" if pattern == "online" else pattern, rate, clients,
        range_ratio=random_range_ratio, think_time=think_time, turns=turns, context=context,
    )  # fmt: skip
    choice, kept = sessions_within(choice, dep.served_context)
    dep = dep.with_warning(kept)
    given_goal = Objective.MAKESPAN.value if objective is None else objective  # "" is refused
    goal = _choice(Objective, given_goal, "objective").value
    slo = Slo.of(slo_ttft, slo_tpot)
    cheapest = disagg and gpus is None and nodes is None and rate is not None and slo is not None
    _refuse_unused(
        gpu_ids, batch=pattern == "batch" and not disagg, fleet=pattern != "batch" and not disagg,
        ranked=(disagg and not cheapest) or (not disagg and pattern == "batch"),
        price=price_gpu_hour, headroom=headroom, objective=objective,
    )  # fmt: skip
    refuse_disagg_only(settings, disagg=disagg)
    no_split: list[str] = []
    if disagg:
        from capcliff.analysis.disagg.options import NoSplitError
        from capcliff.cli.disagg import plan_cheapest, plan_disagg

        _refuse_with_disagg(named=bool(named), serve_local_path=serve_local_path)

        prices = _prices(price_gpu_hour, gpu_ids)
        others = tuple(gpu_ids[1:])  # GPU types either pool may also run on
        try:
            if cheapest and slo is not None:
                from capcliff.analysis.parallel import default_jobs, run_pool

                workers = jobs or default_jobs()
                with run_pool(workers):  # one process pool for the whole search
                    plan_cheapest(dep, choice, slo, seed, output.value, prices, others, workers)
            else:
                plan_disagg(dep, count, choice, goal, slo, seed, output.value, prices, others)
        except NoSplitError as exc:
            # no split of these GPUs holds the model: the aggregated plan the splits are compared
            # with is the answer (`aggregated_at`: the batch plan, by the objective, where no
            # rate or clients are given; else the online plan at them)
            no_split.append(f"{exc}; the plan is aggregated")
            pattern = "batch" if pattern == "online" else pattern
        else:
            print_warnings(dep.warnings)
            return
    if pattern == "batch":
        if figure is not None:
            raise InputError(
                "plot: a batch plan has no load to draw against; give --rate or "
                "--clients, or draw a batch with capcliff sweep --plot"
            )
        report = _batch_plan(dep, count, choice, goal, slo, seed, serve_local_path, named)
    else:
        from capcliff.analysis.parallel import default_jobs, run_pool
        from capcliff.analysis.plan.fleet import DEFAULT_HEADROOM
        from capcliff.analysis.plan.online import OnlineOptions, build_online_plan

        options = OnlineOptions(
            slo=slo, headroom=DEFAULT_HEADROOM if headroom is None else headroom,
            least_requests=num_requests, fleet_gpus=tuple(specs),
            prices=_prices(price_gpu_hour, gpu_ids), jobs=jobs or default_jobs(),
            serve_local_path=serve_local_path, layouts=named,
        )  # fmt: skip
        from capcliff.cli.progress import progress_bar

        with progress_bar("searching layouts", None), run_pool(options.jobs):
            report = build_online_plan(dep, gpus=count, workload=choice, seed=seed, options=options)
        if figure is not None:
            from capcliff.cli.plotting import write_figure

            def render(fmt: str) -> bytes:
                from capcliff.cli.plot_plan import plan_figure_bytes

                return plan_figure_bytes(report, fmt)

            write_figure(render, figure)
    # the deployment's warnings once the run has answered: bad input found on the way is one
    # line, with no warning about something else before it
    print_warnings([*no_split, *dep.warnings])
    _print_plan(report, output)


def _refuse_unused(
    gpu_ids: list[str], *, batch: bool, fleet: bool, ranked: bool, price: str | None,
    headroom: float | None, objective: str | None,
) -> None:  # fmt: skip
    """A flag the plan being made does not read is an error, not dropped unsaid: a batch plan
    sizes one GPU type and ranks by GPU-hours (no prices, no fleet headroom); an online plan's
    objective is the sustained rate (`batch`: an aggregated batch plan; `fleet`: an aggregated
    online plan; `ranked`: a plan that ranks by --objective)."""
    if batch and len(gpu_ids) > 1:
        raise InputError(
            f"gpu: a batch plan sizes one GPU type, got {len(gpu_ids)}; give one, or "
            "--rate/--clients for an online fleet over several"
        )
    if batch and price is not None:
        raise InputError(
            "price-gpu-hour: a batch plan ranks by GPU-hours (--objective cost), not dollars; "
            "leave it unset, or give --rate/--clients for an online fleet's cost"
        )
    if headroom is not None and not fleet:
        raise InputError(
            "headroom: only an online aggregated plan sizes a fleet with spare capacity; "
            "leave it unset, or give --rate/--clients without --disagg"
        )
    if objective is not None and not ranked:
        raise InputError(
            "objective: an online plan ranks by the sustained rate within the SLO; give "
            "--arrival batch for makespan, goodput or cost, or leave it unset"
        )


def _plot_target(text: str | None, *, disagg: bool, force: bool, inputs: list[Path]) -> Path | None:
    """The --plot path, checked before anything is simulated."""
    from capcliff.cli.plotting import plot_path, plotting_ready
    from capcliff.files import check_outputs

    path = plot_path(text)
    if path is not None and disagg:
        raise InputError(
            "plot: not with --disagg yet (plot its pools with capcliff sweep --disagg)"
        )
    check_outputs([("--plot", path)], inputs=inputs, force=force)
    plotting_ready(path)
    return path


def _batch_plan(
    dep: Deployment, gpus: int, choice: WorkloadChoice, goal: str, slo: Slo | None, seed: int,
    serve_local_path: bool, layouts: tuple[Layout, ...],
) -> PlanReport:  # fmt: skip
    """The offline batch plan, with a progress bar on a terminal."""
    from capcliff.analysis.plan.batch import build_plan_report
    from capcliff.cli.progress import progress_bar

    with progress_bar("simulating", None) as tick:
        return build_plan_report(
            dep, gpus=gpus, workload=choice, objective=goal, slo=slo, seed=seed, progress=tick,
            serve_local_path=serve_local_path, layouts=layouts,
        )  # fmt: skip


def _print_plan(report: PlanReport, output: PlanFormat) -> None:
    if output is PlanFormat.JSON:
        from capcliff.cli.render import report_json

        typer.echo(report_json(report))
    elif output is PlanFormat.MARKDOWN:
        from capcliff.cli.render_plan import plan_markdown

        typer.echo(plan_markdown(report), nl=False)
    else:
        from capcliff.cli.render import make_console
        from capcliff.cli.render_plan import plan_view

        make_console().print(plan_view(report))


def _refuse_with_disagg(*, named: bool, serve_local_path: bool) -> None:
    """Refuse what `plan --disagg` does not take: layouts to evaluate (it searches the pools'
    layouts) and --serve-local-path (its worker lines load the HF repo id)."""
    if named:
        raise InputError("layout: not with --disagg (it searches the pools' layouts)")
    if serve_local_path:
        raise InputError(
            "serve_local_path: not with --disagg (its worker lines load the HF repo id); "
            "plan without --disagg to serve the model directory"
        )
