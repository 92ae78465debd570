"""The workload flags `sweep` and `plan` share, and the files a run reads.

The flags carry no domain checks of their own: every workload's numbers are checked in one place,
`sim.workload_rules`, whether they come from flags or from a spec.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Annotated, Any

import typer

from capcliff.cli.app import POSITIVE, _choice
from capcliff.errors import InputError
from capcliff.units import MAX_SLO_TPOT_S, MAX_SLO_TTFT_S, slo_seconds_problem

if TYPE_CHECKING:
    from pathlib import Path

    from capcliff.analysis.deployment_settings import DeploymentSettings
    from capcliff.analysis.workloads import WorkloadChoice

IslOption = Annotated[
    int | None,
    typer.Option(help="Input tokens per request (session presets: new input per turn, mean)."),
]
WorkloadOption = Annotated[
    str | None,
    typer.Option(
        help="A preset (reasoning, chat, chat-short, multiturn-chat, agentic) or a trace.jsonl."
    ),
]
ArrivalOption = Annotated[str, typer.Option(help="batch, clients or poisson.")]
RateOption = Annotated[float | None, typer.Option(help="Poisson arrival rate, requests/s.")]
ClientsOption = Annotated[int | None, typer.Option(help="Closed-loop clients.")]
RangeRatioOption = Annotated[
    float | None,
    typer.Option(
        "--random-range-ratio",
        help="Draw each input and output length uniformly from [R x L, L], 0 < R <= 1 "
        "(SGLang's bench_serving rule).",
    ),
]
ThinkTimeOption = Annotated[
    float | None,
    typer.Option(
        "--think-time",
        help="Seconds a user waits before its next turn (sessions: the mean; 0 allowed).",
    ),
]
TurnsOption = Annotated[float | None, typer.Option(help="Session presets: mean turns per session.")]
ContextOption = Annotated[
    int | None,
    typer.Option(help="Session presets: each session's own starting context, tokens."),
]


def _slo(most_s: float) -> Callable[[Any, Any, float | None], float | None]:
    def check(ctx: Any, param: Any, value: float | None) -> float | None:
        POSITIVE(ctx, param, value)
        problem = None if value is None else slo_seconds_problem(value, most_s=most_s)
        if problem is not None:
            raise InputError(f"{param.opts[0]}: {problem}")
        return value

    return check


SloTtftOption = Annotated[
    float | None,
    typer.Option(
        callback=_slo(MAX_SLO_TTFT_S), help="TTFT p99 limit, s (online serving; at most 600)."
    ),
]
SloTpotOption = Annotated[
    float | None,
    typer.Option(
        callback=_slo(MAX_SLO_TPOT_S), help="TPOT p99 limit, s (online serving; at most 10)."
    ),
]


def workload_choice(
    isl: int | None,
    osl: str | None,
    workload: str | None,
    num_requests: int,
    arrival: str,
    rate: float | None,
    clients: int | None,
    *,
    range_ratio: float | None = None,
    think_time: float | None = None,
    turns: float | None = None,
    context: int | None = None,
) -> WorkloadChoice:
    """The workload the flags describe: fixed lengths (`osl` may list several), a preset (a
    session preset shaped by --isl/--osl/--turns/--context/--think-time) or a trace file."""
    from pathlib import Path

    from capcliff.analysis.workloads import MAX_OUTPUT_LENGTHS, WorkloadChoice
    from capcliff.files import jsonl_lines, read_text
    from capcliff.sim.traffic.length_spec import (
        histogram_file,
        histogram_spec,
        is_length_spec,
        parse_output_lengths,
    )
    from capcliff.sim.traffic.sessions import SESSION_PRESETS
    from capcliff.sim.traffic.workload import Arrival

    trace = None
    preset_name = None
    if workload is not None:
        if workload.endswith(".jsonl"):
            trace = jsonl_lines(read_text(Path(workload), field="workload"))
        else:
            preset_name = workload
    lengths: tuple[int, ...] = ()
    distributed = None
    if osl is not None and is_length_spec(osl):
        source = histogram_file(osl)
        distributed = osl if source is None else histogram_spec(
            read_text(Path(source), field="osl"), source=source
        )  # fmt: skip
        lengths = (parse_output_lengths(distributed).max_tokens,)
    elif osl is not None:
        try:
            # each once: "10,10,..." ran the same sweep once per repeat; an empty item ("100,",
            # "100,,200": a list cut or a value left out) is refused, as --concurrency's is
            lengths = tuple(dict.fromkeys(int(v) for v in osl.split(",")))
        except ValueError:
            lengths = ()
        if not lengths or len(lengths) > MAX_OUTPUT_LENGTHS:  # each: a whole sweep
            raise InputError(
                f"osl: cannot read {osl!r:.60}; write 1024 or 1024,4096,16384 (at most "
                f"{MAX_OUTPUT_LENGTHS} lengths) or lognormal:MEAN:P99"
            )
    if arrival == "batch" and preset_name in SESSION_PRESETS and (rate, clients) != (None, None):
        raise InputError(  # the library reads batch as no arrival named; here it was typed
            "arrival: a session preset's users (--clients) or sessions started at --rate, not "
            "batch; drop --arrival batch"
        )
    return WorkloadChoice(
        num_requests=num_requests,
        isl=isl,
        osl=lengths,
        preset_name=preset_name,
        trace_lines=trace,
        arrival=_choice(Arrival, arrival, "arrival"),
        rate_per_s=rate,
        clients=clients,
        random_range_ratio=range_ratio,
        think_time_s=think_time,
        turns=turns,
        context_tokens=context,
        output_lengths=distributed,
    )


# Requests a sweep simulates when --num-requests is not given.
DEFAULT_SWEEP_REQUESTS = 2000


def refuse_count_with_trace(
    workload: str | None, num_requests: int | None, arrival: str | None = None
) -> None:
    """A trace has as many requests as lines: --num-requests beside one was ignored unsaid; and
    it replays its own arrival times, so `--arrival batch` beside one was ignored too."""
    if workload is None or not workload.endswith(".jsonl"):
        return
    if num_requests is not None:
        raise InputError("num_requests: a trace has as many requests as lines; drop --num-requests")
    if arrival == "batch":
        raise InputError(
            "arrival: a trace replays its own arrival times (all at t = 0 where it has none), "
            "--clients its rows or --rate its untimed rows; drop --arrival batch"
        )


def input_paths(
    workload: str | None, model: str, settings: DeploymentSettings, osl: str | None = None
) -> list[Path]:
    """The files a run reads (an output may never be one of them)."""
    from pathlib import Path

    from capcliff.sim.traffic.length_spec import histogram_file

    paths = [Path(workload)] if workload is not None and workload.endswith(".jsonl") else []
    source = None if osl is None else histogram_file(osl)
    if source is not None:
        paths.append(Path(source))
    if Path(model).exists():
        paths.append(Path(model) / "config.json" if Path(model).is_dir() else Path(model))
    if settings.calibration is not None:
        paths.append(Path(settings.calibration))
    return paths
