"""The analysis commands: `sweep` and `plan` (registered on `cli.app`).

Like every command, they parse flags, call the core and render; domain errors reach `cli.main`.
"""

from __future__ import annotations

from enum import StrEnum
from typing import TYPE_CHECKING, Annotated

import typer

from capcliff.cli.app import (
    COUNT,
    DEFAULT_GPU,
    ForceOption,
    GpuOption,
    SeedOption,
    app,
    deployment_options,
    print_warnings,
)
from capcliff.cli.workload_options import (
    DEFAULT_SWEEP_REQUESTS,
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

if TYPE_CHECKING:  # types only: the commands import their modules lazily to keep --help fast
    from pathlib import Path

    from capcliff.analysis.deployment import Deployment
    from capcliff.analysis.deployment_settings import DeploymentSettings
    from capcliff.analysis.sweep.report import SweepNoFit, SweepPlan, SweepReport
    from capcliff.catalog.layout import Layout

DEFAULT_SWEEP_MODEL = "deepseek-r1-distill-llama-8b"  # the study's single-GPU scenario


class SweepFormat(StrEnum):
    """How `sweep` prints its result."""

    TABLE = "table"
    JSON = "json"
    CSV = "csv"


def _sweep_layouts(
    text: str | None, gpus: int | None, dep: Deployment, length: int
) -> list[Layout]:
    """The named layouts (each once, as plan reads them), or the fitting layout of `gpus` with
    the most KV in all; without `gpus`, of the fewest GPUs (1, 2, 4, ... up to a node) any layout
    of which fits (a model larger than one GPU is answered, not refused). Where none fits: every
    layout of the last count tried, for the answer to say why each does not."""
    from capcliff.catalog.layout import enumerate_layouts, parse_layout_list

    if text is not None:
        layouts = list(parse_layout_list(text))
        wrong = [lay.name for lay in layouts if gpus is not None and lay.gpus != gpus]
        if wrong:
            raise InputError(f"layout: {', '.join(wrong)} do not use --gpus {gpus}")
        return layouts
    from capcliff.analysis.deployment_settings import check_gpu_count

    node = dep.hardware.gpus_per_node
    counts = [check_gpu_count(gpus, gpus_per_node=node)] if gpus is not None else []
    counts = counts or [2**k for k in range(node.bit_length()) if 2**k <= node]
    for count in counts:
        memories = [
            dep.memory(lay, length) for lay in enumerate_layouts(count, arch=dep.model.arch)
        ]
        if fitting := [m for m in memories if m.fits]:
            return [max(fitting, key=lambda m: (m.kv_capacity_tokens_total, -m.layout.tp)).layout]
    return [m.layout for m in memories]


def _run_sweep(dep: Deployment, plan: SweepPlan, max_model_len: int) -> SweepReport:
    """Build the report with progress on stderr, one tick per simulated point."""
    from capcliff.analysis.sweep.report import build_sweep_report
    from capcliff.cli.progress import progress_bar

    total = len(plan.layouts) * len(plan.workloads) * len(plan.concurrencies)
    with progress_bar("simulating", total) as tick:
        return build_sweep_report(dep, plan, max_model_len=max_model_len, progress=tick)


def _caps_past_given(
    given: int | None, layouts: list[Layout], concurrencies: tuple[int, ...]
) -> list[str]:
    """A sweep's concurrency is the cap on running requests (max_num_seqs = concurrency / dp per
    replica, README): a point past the --max-num-seqs given runs more than that engine would,
    which sizes only the KV pool here. Said, not silently overridden."""
    if given is None:
        return []
    over = sorted({c for c in concurrencies for lay in layouts if -(-c // lay.dp) > given})
    if not over:
        return []
    return [
        f"--max-num-seqs {given:,}: concurrency {', '.join(f'{c:,}' for c in over)} runs more "
        "requests per replica than that (a sweep's concurrency is the cap on running requests, "
        "max_num_seqs = concurrency / DP); --max-num-seqs sized the KV pool only (the profile "
        "run and CUDA graphs follow it)"
    ]


def _say_nothing_fits(answer: SweepNoFit, output: SweepFormat, plot_path: Path | None) -> None:
    """The sweep's answer where no layout fits (exit 0: a model that does not fit is an answer):
    the table and JSON say it; a CSV has its columns and no rows, the answer on stderr."""
    from capcliff.cli.render import (
        make_console,
        no_fit_line,
        no_fit_view,
        report_json,
        sweep_csv_header,
    )

    if output is SweepFormat.JSON:
        typer.echo(report_json(answer))
    elif output is SweepFormat.CSV:
        typer.echo(sweep_csv_header(), nl=False)
        print_warnings([no_fit_line(answer)])
    else:
        make_console().print(no_fit_view(answer))
    if plot_path is not None:
        print_warnings([f"plot: {plot_path} not written: no layout fits, nothing was simulated"])


def _write_plot(report: SweepReport, path: Path) -> None:
    from capcliff.cli.plotting import write_figure

    def render(fmt: str) -> bytes:
        from capcliff.cli.render import sweep_figure_bytes

        return sweep_figure_bytes(report, fmt)

    write_figure(render, path)


@app.command()
@deployment_options(simulation=True)
def sweep(
    model: Annotated[
        str, typer.Argument(help="Catalog id, a config.json path, or a model directory.")
    ] = DEFAULT_SWEEP_MODEL,
    gpu: GpuOption = DEFAULT_GPU,
    gpus: Annotated[
        int | None,
        typer.Option(
            callback=COUNT,
            help="GPUs (default: the layout's, else the fewest of a node that fit: 1, 2, 4, ...).",
        ),
    ] = None,
    layout: Annotated[
        str | None, typer.Option(help="Layouts, comma-separated (default: most KV per replica).")
    ] = None,
    isl: IslOption = None,
    osl: Annotated[
        str | None,
        typer.Option(
            help="Output tokens per request; a comma list sweeps them; or lognormal:MEAN:P99[:MAX] "
            "(a distribution named by its mean and p99, cut at MAX, default 2 x p99)."
        ),
    ] = None,
    workload: WorkloadOption = None,
    random_range_ratio: RangeRatioOption = None,
    think_time: ThinkTimeOption = None,
    turns: TurnsOption = None,
    context: ContextOption = None,
    num_requests: Annotated[
        int | None, typer.Option(help="Requests to simulate (default 2000; a trace has its own).")
    ] = None,
    arrival: Annotated[
        str | None,
        typer.Option(
            help="batch, clients or poisson (default: poisson with --rate, clients with "
            "--clients, else batch)."
        ),
    ] = None,
    rate: RateOption = None,
    clients: ClientsOption = None,
    concurrency: Annotated[
        str,
        typer.Option(
            help="Requests running at once over all of a layout's replicas (a DP layout's "
            "max_num_seqs x DP; `plan` prints its cap per replica): 64,128,256; 64..8192 "
            "(doubling); or 64..8192:16, where 16 is a count of points, log-spaced between the "
            "ends (not a step)."
        ),
    ] = "32..2048",
    slo_ttft: SloTtftOption = None,
    slo_tpot: SloTpotOption = None,
    disagg: Annotated[
        str | None,
        typer.Option(help="Disaggregated: prefill and decode instances, e.g. 1p:tp8,3d:dp8-ep8."),
    ] = None,
    seed: SeedOption = 0,
    plot: Annotated[str | None, typer.Option(help="Write a figure: FILE.png or FILE.svg.")] = None,
    force: ForceOption = False,
    output: Annotated[SweepFormat, typer.Option("--format", help="table, json or csv.")] = (
        SweepFormat.TABLE
    ),
    *,
    settings: DeploymentSettings,
) -> None:
    """Simulate serving across concurrency (and output lengths, layouts): cliff and sweet spot."""
    from capcliff.analysis.deployment import resolve
    from capcliff.analysis.evaluate.solver import Slo
    from capcliff.analysis.setting_refusals import refuse_disagg_only
    from capcliff.analysis.sweep.report import SweepPlan
    from capcliff.analysis.workloads import (
        concurrency_past_requests,
        parse_concurrency,
        plan_workloads,
        redraw,
        reference_workloads,
        sessions_within,
        with_arrival,
    )
    from capcliff.catalog.catalogs import get_hardware, get_model
    from capcliff.catalog.layout import parse_layout_list
    from capcliff.cli.plotting import plot_path as parse_plot_path
    from capcliff.cli.plotting import plotting_ready
    from capcliff.files import check_outputs

    plot_path = parse_plot_path(plot)
    check_outputs(
        [("--plot", plot_path)], inputs=input_paths(workload, model, settings, osl), force=force
    )
    plotting_ready(plot_path)
    # each once, as plan reads them: "tp2,tp2" swept tp2 twice
    names = () if layout is None else parse_layout_list(layout)
    one = names[0].name if len(names) == 1 else None
    dep = resolve(get_model(model), get_hardware(gpu), settings, force=force, layout=one)
    from capcliff.sim.traffic.workload_rules import implied_arrival

    pattern = implied_arrival(arrival, rate=rate, clients=clients)
    refuse_count_with_trace(workload, num_requests, arrival)
    requests = DEFAULT_SWEEP_REQUESTS if num_requests is None else num_requests
    choice = workload_choice(
        isl, osl, workload, requests, pattern, rate, clients, range_ratio=random_range_ratio,
        think_time=think_time, turns=turns, context=context,
    )  # fmt: skip
    choice, kept = sessions_within(choice, dep.served_context)
    dep = dep.with_warning(kept)
    concurrencies = parse_concurrency(concurrency)
    label, workloads = plan_workloads(choice, seed)
    label = with_arrival(label, choice)
    repeats = concurrency_past_requests(workloads, concurrencies)  # said once the run is done
    refuse_disagg_only(settings, disagg=disagg is not None)
    if disagg is not None:
        from capcliff.cli.disagg import sweep_disagg

        dep = sweep_disagg(dep, disagg, (layout, gpus, plot), workloads, concurrencies, label,
                           Slo.of(slo_ttft, slo_tpot), seed, output.value,
                           reference_workloads(choice)[0][1])  # fmt: skip
        print_warnings([*dep.warnings, *repeats])
        return
    bound = choice.longest_request_bound
    length = max(dep.context_length(requests, bound=bound) for _, requests in workloads)
    layouts = _sweep_layouts(layout, gpus, dep, length)
    from capcliff.analysis.sweep.report import nothing_fits

    if (answer := nothing_fits(dep, layouts, max_model_len=length)) is not None:
        _say_nothing_fits(answer, output, plot_path)
        print_warnings(dep.warnings)
        return
    if settings.calibration is not None and one is None:  # a calibration made on another layout
        for lay in layouts:  # is refused (or, with --force, said) as for a named one
            checked = resolve(dep.model, dep.hardware, settings, force=force, layout=lay.name)
        dep = checked if len(layouts) == 1 else dep
    plan = SweepPlan(
        layouts=tuple(layouts),
        workloads=tuple(workloads),
        concurrencies=concurrencies,
        workload_label=label,
        seed=seed,
        slo=Slo.of(slo_ttft, slo_tpot),
        redraw=None if choice.trace_lines is not None else redraw(choice, seed),
        references=reference_workloads(choice),
    )
    report = _run_sweep(dep, plan, length)
    # the deployment's warnings once the run has answered: bad input found on the way is one
    # line, with no warning about something else before it
    print_warnings(dep.warnings)
    if output is SweepFormat.JSON:
        from capcliff.cli.render import report_json

        typer.echo(report_json(report))
    elif output is SweepFormat.CSV:
        from capcliff.cli.render import sweep_csv

        typer.echo(sweep_csv(report), nl=False)
    else:
        from capcliff.cli.render import make_console, sweep_view

        make_console().print(sweep_view(report))
    if plot_path is not None:
        _write_plot(report, plot_path)
    print_warnings([*repeats, *_caps_past_given(settings.max_num_seqs, layouts, concurrencies)])
