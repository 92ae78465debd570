"""`plan --disagg` and `sweep --disagg`: parse, call the core, render (registered through
`cli.analysis`'s commands)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import typer

from capcliff.errors import InputError

if TYPE_CHECKING:
    from capcliff.analysis.deployment import Deployment
    from capcliff.analysis.evaluate.solver import Slo
    from capcliff.analysis.workloads import WorkloadChoice
    from capcliff.sim.traffic.workload import Requests


def plan_disagg(
    dep: Deployment, gpus: int, choice: WorkloadChoice, goal: str, slo: Slo | None, seed: int,
    output: str, prices: dict[str, float], types: tuple[str, ...] = (),
) -> None:  # fmt: skip
    """`plan --disagg`: table or JSON (Markdown is not offered for it); each pool is also tried
    on each GPU type of `types`."""
    from capcliff.analysis.disagg.plan import build_disagg_plan
    from capcliff.cli.progress import progress_bar

    if output == "markdown":
        raise InputError("format: plan --disagg prints a table or json, not markdown")
    with progress_bar("simulating", None) as tick:
        report = build_disagg_plan(
            dep,
            gpus=gpus,
            workload=choice,
            objective=goal,
            slo=slo,
            seed=seed,
            prices=prices,
            types=types,
            progress=tick,
        )
    if output == "json":
        from capcliff.cli.render import report_json

        typer.echo(report_json(report))
        return
    from capcliff.cli.render import make_console
    from capcliff.cli.render_disagg import disagg_plan_view

    make_console().print(disagg_plan_view(report))


def sweep_disagg(
    dep: Deployment, text: str, aggregated: tuple[str | None, int | None, str | None],
    workloads: list[tuple[str, Requests]], concurrencies: tuple[int, ...], label: str,
    slo: Slo | None, seed: int, output: str, reference: Requests,
) -> Deployment:  # fmt: skip
    """`sweep --disagg SPEC`: table or JSON; `dep` with its calibration checked on each pool
    (whose warnings the caller says). `reference`: the workload's fixed reference sample (the
    analytic cliff's, `workloads.reference_workloads`)."""
    from capcliff.analysis.disagg.pools import check_pool_calibration, parse_disagg
    from capcliff.analysis.disagg.sweep import build_disagg_sweep, disagg_nothing_fits
    from capcliff.cli.progress import progress_bar

    spec = parse_disagg(text)
    for flag, value in zip(("--layout", "--gpus", "--plot"), aggregated, strict=True):
        # --gpus that is the pools' own count says nothing else, as a check spec's `gpus` beside
        # its `disagg` (Scenario's rule) and --gpus beside a --layout of that many GPUs
        if value is not None and not (flag == "--gpus" and value == spec.gpus):
            raise InputError(
                f"disagg: {flag} does not apply; --disagg names both pools' layouts"
                + (f" ({spec.name} uses {spec.gpus} GPUs)" if flag == "--gpus" else "")
            )
    if output == "csv":
        raise InputError("format: sweep --disagg prints a table or json, not csv")
    if len(workloads) > 1:
        raise InputError("osl: sweep --disagg takes one output length")
    dep = check_pool_calibration(dep, spec)
    if (answer := disagg_nothing_fits(dep, spec, workloads[0][1])) is not None:
        from capcliff.cli.render import make_console, no_fit_view, report_json

        if output == "json":
            typer.echo(report_json(answer))
        else:
            make_console().print(no_fit_view(answer))
        return dep
    with progress_bar("simulating", len(concurrencies)) as tick:
        report = build_disagg_sweep(
            dep, spec, workloads[0][1], concurrencies, workload_label=label, seed=seed,
            slo=slo, progress=tick, reference=reference,
        )  # fmt: skip
    if output == "json":
        from capcliff.cli.render import report_json

        typer.echo(report_json(report))
        return dep
    from capcliff.cli.render import make_console
    from capcliff.cli.render_disagg import disagg_sweep_view

    make_console().print(disagg_sweep_view(report))
    return dep


def plan_cheapest(
    dep: Deployment, choice: WorkloadChoice, slo: Slo, seed: int, output: str,
    prices: dict[str, float], types: tuple[str, ...] = (), jobs: int = 1,
) -> None:  # fmt: skip
    """`plan --disagg --rate R --slo-...` without a GPU count: the cheapest cluster on any of
    --gpu's types and `types`, each price's options over up to `jobs` worker processes."""
    from capcliff.analysis.disagg.fleet import cheapest_cluster
    from capcliff.cli.progress import progress_bar

    if output == "markdown":
        raise InputError("format: plan --disagg prints a table or json, not markdown")
    with progress_bar("simulating", None) as tick:
        report = cheapest_cluster(
            dep, workload=choice, slo=slo, seed=seed, prices=prices, progress=tick,
            types=types, jobs=jobs,
        )  # fmt: skip
    if output == "json":
        from capcliff.cli.render import report_json

        typer.echo(report_json(report))
        return
    from capcliff.cli.render import make_console
    from capcliff.cli.render_disagg import cheapest_view

    make_console().print(cheapest_view(report))
