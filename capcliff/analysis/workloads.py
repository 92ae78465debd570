"""The workload a command asks for (fixed lengths, a preset or a trace) turned into requests.

The rules a workload must obey (lengths >= 1, a finite rate > 0, at least one client, a trace's
fields) live in `sim.workload`; this module only maps the flags and spec keys onto it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

import numpy as np

from capcliff.errors import InputError
from capcliff.sim.traffic.length_spec import OutputLengths, parse_output_lengths
from capcliff.sim.traffic.sessions import (
    SESSION_PRESETS,
    SessionShape,
    SessionSpec,
    describe_sessions,
    generate_sessions,
    is_session_trace,
    parse_session_trace,
    requests_from_session_trace,
    shaped_session_spec,
)
from capcliff.sim.traffic.workload import (
    PRESETS,
    Arrival,
    Requests,
    WorkloadSpec,
    arrival_times_s,
    draws,
    generate_requests,
    parse_trace,
    preset,
    ranged_length,
    requests_from_trace,
)
from capcliff.sim.traffic.workload_rules import (
    MAX_REQUESTS,
    check_arrival,
    check_shape_numbers,
    check_workload_numbers,
)
from capcliff.units import counted


def is_online(requests: Requests) -> bool:
    """Whether requests arrive over time (closed-loop clients, Poisson, a timed trace)."""
    return bool(requests.closed_loop) or bool(np.any(requests.arrival_s > 0))


def concurrency_past_requests(
    workloads: list[tuple[str, Requests]], concurrencies: tuple[int, ...]
) -> list[str]:
    """A warning when a batch sweep's concurrency exceeds its requests: such a point runs every
    request at once, the same run as a concurrency of the number of requests."""
    batch = [len(r.input_tokens) for _, r in workloads if not is_online(r)]
    if not batch:
        return []
    n = min(batch)
    over = [c for c in concurrencies if c > n]
    if not over:
        return []
    listed = ", ".join(f"{c:,}" for c in over)
    return [
        f"concurrency {listed}: more than the {n:,} requests of the batch, so each runs them all "
        f"at once (the same run as {n:,}); raise --num-requests to see past it"
    ]


# The most concurrencies one sweep may simulate (each is a whole simulation).
MAX_CONCURRENCY_POINTS = 256
# The most output lengths one sweep may list (each is a whole sweep over the concurrencies; 5,000
# ran for minutes).
MAX_OUTPUT_LENGTHS = 64
# The most one sweep simulates, over its whole grid (layouts x output lengths x concurrencies,
# twice with speculation: the same grid without it): each axis within its own limit, the product
# was not (64 lengths x 1..2000:256's 171 concurrencies x 2,000 requests, 21,888,000 requests,
# had no answer when the campaign's 20 CPU s limit killed it; at the ~15 ms a point that 256
# points took, its 10,944 points are minutes, and 200,000 requests a point far more).
# Set, as a named limit, at what the pure-Python event loop answers in seconds: 256 points of
# 2,000 requests (512,000) took 3.8 CPU s and 16 points of 200,000 (3,200,000) 20 s
# (benchmarks/fuzz_cases19.py, grid19); a grid's first sample, before an online point's stopping
# rule draws more (`MAX_DOUBLINGS`).
MAX_SWEEP_SIMULATIONS = 1_024
MAX_SWEEP_REQUESTS = 1_000_000


def check_sweep_size(axes: tuple[tuple[int, str], ...], requests_each: int) -> None:
    """Refuse a sweep grid past `MAX_SWEEP_SIMULATIONS` points or `MAX_SWEEP_REQUESTS` requests
    simulated in all. `axes`: (count, name) of each grid axis, e.g. ((64, "output lengths"),
    (256, "concurrencies")); `requests_each`: the requests one point simulates."""
    points = 1
    for count, _ in axes:
        points *= count
    total = points * requests_each
    # one point is the simulation's own limit (`SimConfig.max_requests`, per replica)
    if points <= MAX_SWEEP_SIMULATIONS and (points == 1 or total <= MAX_SWEEP_REQUESTS):
        return
    grid = " x ".join(f"{count:,} {name}" for count, name in axes if count > 1)
    raise InputError(
        f"sweep: {grid} = {points:,} simulations of {requests_each:,} requests "
        f"({total:,} in all), past the most one sweep runs ({MAX_SWEEP_SIMULATIONS:,} "
        f"simulations, {MAX_SWEEP_REQUESTS:,} requests; minutes to hours of CPU past it): "
        f"sweep fewer concurrencies (64..8192:16), output lengths or layouts, or fewer "
        f"requests (--num-requests)"
    )


def parse_concurrency(text: str) -> tuple[int, ...]:
    """`64,128,256`, `64..8192` (doubling) or `64..8192:16`: N after the colon is a count of
    points, log-spaced from the low end to the high end inclusive (rounded and deduplicated, so
    a span with fewer integers yields fewer), never a step."""
    try:
        if ".." not in text:
            values = [int(v) for v in text.split(",")]  # "4,,8": an empty item is refused
        else:
            span, _, count = text.partition(":")
            low, high = (int(v) for v in span.split(".."))
            # past int64 numpy's geomspace raised a TypeError; below 1 it warned on stderr
            if not 1 <= low <= high <= MAX_REQUESTS:
                raise ValueError(span)
            if count:
                # one point cannot hold both ends: `1..4096:1` (a step written for a count) ran
                # the low end alone
                least = 2 if low < high else 1
                if not least <= int(count) <= MAX_CONCURRENCY_POINTS:
                    raise ValueError(count)
                grid = np.geomspace(low, high, int(count))
                values = sorted({round(v) for v in grid})
            else:
                values = [low * 2**i for i in range(64) if low * 2**i <= high]
    except ValueError:
        values = []
    if (
        not values
        or not 1 <= min(values) <= max(values) <= MAX_REQUESTS
        or len(set(values)) > MAX_CONCURRENCY_POINTS
    ):
        raise InputError(
            f"concurrency: cannot read {text!r:.60}; write 64,128,256 or 64..8192 (doubling) or "
            f"64..8192:16, where 16 counts points (2 or more: both ends), not a step "
            f"(at most {MAX_CONCURRENCY_POINTS} values, each >= 1 and <= {MAX_REQUESTS:,})"
        )
    return tuple(sorted(set(values)))


@dataclass(frozen=True)
class WorkloadChoice:
    """The workload flags of `capcliff sweep`."""

    num_requests: int
    isl: int | None = None
    osl: tuple[int, ...] = ()
    preset_name: str | None = None
    trace_lines: tuple[str, ...] | None = None
    arrival: Arrival = Arrival.BATCH
    rate_per_s: float | None = None
    clients: int | None = None
    random_range_ratio: float | None = None  # lengths uniform on [R x L, L] (bench tools' rule)
    think_time_s: float | None = None  # sessions: mean between turns; clients, traces: fixed
    turns: float | None = None  # sessions: mean turns per session
    context_tokens: int | None = None  # sessions: each session's own starting context
    # output lengths as a distribution (`sim.traffic.length_spec`), e.g. lognormal:8000:30000;
    # `osl` then holds its max_tokens
    output_lengths: str | None = None
    # sessions: the context they are kept within where the served one is shorter than the
    # preset's window (`sessions_within`); None: the preset's
    session_window: int | None = None

    def __post_init__(self) -> None:
        check_workload_numbers(
            num_requests=self.num_requests, isl=self.isl, osl=self.osl, rate=self.rate_per_s,
            clients=self.clients,
        )  # fmt: skip
        sessions = self.trace_lines is None and self.preset_name in SESSION_PRESETS
        if self.trace_lines is not None:
            _check_trace_flags(self)
        _check_shape(self, sessions=sessions)
        if self.rate_per_s is not None and _timed_trace(self.trace_lines):  # was ignored unsaid
            raise InputError(
                "rate: a trace with arrival times replays them (or --clients); drop --rate "
                "(a trace without times arrives at the rate given)"
            )
        # a trace replays its own arrival times; session presets take clients or a rate as given
        if self.trace_lines is None and not sessions:
            check_arrival(self.arrival.value, rate=self.rate_per_s, clients=self.clients)
        elif sessions:
            _check_session_load(self)

    @property
    def longest_request_bound(self) -> int | None:
        """The longest request (input + max_tokens, tokens) a sample of any size can hold: a
        session preset's context limit (a turn is drawn only where prompt + max_tokens fits it,
        `sessions._session`); None where the sample decides (fixed lengths, a trace, a
        single-turn preset)."""
        if self.trace_lines is not None or self.preset_name not in SESSION_PRESETS:
            return None
        return self.session_spec().max_context_tokens

    def session_spec(self) -> SessionSpec:
        """The session preset with the shape the flags give (its own values elsewhere)."""
        assert self.preset_name in SESSION_PRESETS
        shape = SessionShape(
            turns=self.turns, isl=self.isl, osl=self.osl[0] if self.osl else None,
            think_time_s=self.think_time_s, context_tokens=self.context_tokens,
            range_ratio=self.random_range_ratio, window_tokens=self.session_window,
        )  # fmt: skip
        return shaped_session_spec(self.preset_name, shape)


def _check_session_load(choice: WorkloadChoice) -> None:
    """A session preset runs `clients` users or starts sessions at a rate: one of them, and an
    arrival, where one is named (batch: none, the default), that is theirs (`--clients 4
    --rate 1` ran the rate and `--arrival poisson --clients 4` the clients, each dropping the
    other unsaid)."""
    rate, clients = choice.rate_per_s, choice.clients
    if rate is not None and clients is not None:
        raise InputError(
            "rate: a session preset runs --clients users or starts sessions at --rate; give one"
        )
    if choice.arrival is not Arrival.BATCH and (rate is not None or clients is not None):
        check_arrival(choice.arrival.value, rate=rate, clients=clients)


def _timed_trace(lines: tuple[str, ...] | None) -> bool:
    """Whether `lines` are a trace that carries its own arrival times: a session trace, or a
    request trace with an arrival_s past 0 (all 0 or absent: untimed, a rate applies)."""
    if lines is None:
        return False
    if is_session_trace(lines):
        return True
    return any(row.arrival_s for row in parse_trace(lines))


def _check_trace_flags(choice: WorkloadChoice) -> None:
    """A trace gives each request's lengths, and its own arrivals unless a rate (untimed rows)
    or clients replay it: lengths and an arrival beside it were dropped unsaid."""
    for name, given in (("isl", choice.isl is not None), ("osl", bool(choice.osl)),
                        ("random_range_ratio", choice.random_range_ratio is not None)):  # fmt: skip
        if given:
            raise InputError(
                f"{name}: a trace gives each request's own lengths; drop --{name.replace('_', '-')}"
            )
    if choice.arrival is not Arrival.BATCH:  # as given: batch is also "not said" (the default)
        check_arrival(choice.arrival.value, rate=choice.rate_per_s, clients=choice.clients)


def _check_shape(choice: WorkloadChoice, *, sessions: bool) -> None:
    """The flags that shape lengths and sessions belong to workloads that have them."""
    check_shape_numbers(
        range_ratio=choice.random_range_ratio, think_time=choice.think_time_s, turns=choice.turns,
        context=choice.context_tokens,
    )  # fmt: skip
    if not sessions:
        for name, value in (("turns", choice.turns), ("context", choice.context_tokens)):
            if value is not None:
                raise InputError(f"{name}: only a session preset (multiturn-chat, agentic) has it")
    if choice.preset_name is not None and not sessions and (choice.isl is not None or choice.osl):
        raise InputError(
            f"isl: preset {choice.preset_name} has its own lengths; give --isl/--osl without "
            "it, or a session preset"
        )
    if choice.random_range_ratio is not None and choice.isl is None and not choice.osl:
        raise InputError("random_range_ratio: applies to given lengths; give --isl/--osl")
    if sessions and len(choice.osl) > 1:
        raise InputError("osl: a session preset takes one output length per turn")
    if choice.output_lengths is not None and (sessions or choice.random_range_ratio is not None):
        raise InputError(
            "osl: a lognormal output length is for single-turn requests, without "
            "--random-range-ratio (it draws its own spread)"
        )
    timed_by_trace = choice.trace_lines is not None and is_session_trace(choice.trace_lines)
    if choice.think_time_s and not (sessions or timed_by_trace or choice.clients is not None):
        raise InputError(
            "think_time: needs closed-loop users (--clients), a session preset or a session trace"
        )


def _preset_requests(choice: WorkloadChoice, rng: np.random.Generator) -> Requests:
    """The requests of a single-turn preset; an unknown name is refused listing every preset
    and what a trace is (`t.json` read "unknown preset", listing three)."""
    name = choice.preset_name or ""
    if name not in PRESETS:
        known = ", ".join([*PRESETS, *SESSION_PRESETS])
        raise InputError(
            f"workload: unknown {name!r:.80}; give a preset ({known}) or a trace: a JSON Lines "
            "file, one request per line, named *.jsonl"
        )
    spec = preset(
        name,
        num_requests=choice.num_requests,
        arrival=choice.arrival,
        rate_per_s=choice.rate_per_s,
        clients=choice.clients,
    )
    return generate_requests(spec, rng)


def sessions_within(
    choice: WorkloadChoice, served_tokens: int | None
) -> tuple[WorkloadChoice, str]:
    """`choice` with a session preset kept within the served context where it is shorter than
    the preset's window, and a line saying so ("" where nothing changed). A session ends where
    its next turn and max_tokens would not fit (`sessions._session`), as an agent harness starts
    anew at the model's limit; the agentic preset's 131,072-token window was refused outright
    for every model serving 40,960 (the Qwen3 family: fuzz_random seeds 42-47, left)."""
    if served_tokens is None or choice.trace_lines is not None:
        return choice, ""
    if choice.preset_name not in SESSION_PRESETS:
        return choice, ""
    window = SESSION_PRESETS[choice.preset_name].max_context_tokens
    if served_tokens >= window:
        return choice, ""
    note = (
        f"workload {choice.preset_name}: sessions kept within the {served_tokens:,}-token context "
        f"served (the preset's window is {window:,}): a session ends where its next turn would "
        "not fit, as a harness starts anew at the model's limit"
    )
    return replace(choice, session_window=served_tokens), note


def with_arrival(label: str, choice: WorkloadChoice) -> str:
    """`label` with how the requests arrive, for the headers of `sweep` and `check` (a check's
    Poisson scenario read "isl 500, osl 200, 30 requests" as if a batch): traces and session
    presets with users say it in their own label already."""
    if choice.trace_lines is not None:
        return label
    if choice.preset_name in SESSION_PRESETS:
        users = choice.clients if choice.rate_per_s is None else None
        return label if users is None else f"{label}, {counted(users, 'user')}"
    if choice.arrival is Arrival.POISSON and choice.rate_per_s is not None:
        unit = "request/s" if choice.rate_per_s == 1 else "requests/s"
        return f"{label}, Poisson arrivals at {choice.rate_per_s:g} {unit}"
    if choice.arrival is Arrival.CLIENTS and choice.clients is not None:
        return f"{label}, {counted(choice.clients, 'closed-loop client')}"
    return f"{label}, every request queued at t = 0 (batch)"


def plan_workloads(choice: WorkloadChoice, seed: int) -> tuple[str, list[tuple[str, Requests]]]:
    """(label, [(series label, requests)]) for fixed lengths, a preset or a trace."""
    if choice.trace_lines is not None:
        return _trace_workload(choice, seed)
    if choice.preset_name in SESSION_PRESETS:
        name = choice.preset_name
        clients = choice.clients if choice.rate_per_s is None else None
        if clients is None and choice.rate_per_s is None:
            raise InputError(f"workload {name}: give --clients N (users) or --rate R (requests/s)")
        shape = choice.session_spec()
        sessions = generate_sessions(
            shape, choice.num_requests, np.random.default_rng(seed), clients=clients,
            rate_per_s=choice.rate_per_s,
        )  # fmt: skip
        return f"{name} ({describe_sessions(shape)})", [(name, sessions)]
    if choice.preset_name is not None:
        return choice.preset_name, [
            (choice.preset_name, _preset_requests(choice, np.random.default_rng(seed)))
        ]
    if choice.isl is None or not choice.osl:
        raise InputError("workload: give --isl and --osl, or --workload PRESET|trace.jsonl")
    series = []
    ratio = choice.random_range_ratio
    if choice.output_lengths is not None:
        return _distributed(choice, seed)
    for osl in choice.osl:
        spec = WorkloadSpec(
            num_requests=choice.num_requests,
            input=ranged_length(choice.isl, ratio),
            output=ranged_length(osl, ratio),
            arrival=choice.arrival,
            rate_per_s=choice.rate_per_s,
            clients=choice.clients,
            think_time_s=choice.think_time_s or 0.0,
            max_input_tokens=choice.isl,
            max_output_tokens=osl,
        )
        drawing = np.random.default_rng(seed) if draws(spec) else None
        series.append((f"osl {osl}", generate_requests(spec, drawing)))
    label = f"isl {choice.isl}, osl {'/'.join(map(str, choice.osl))}"
    if ratio is not None:
        label += f", range ratio {ratio:g} (each length uniform on [{ratio:g} L, L])"
    if choice.think_time_s:
        label += f", think {choice.think_time_s:g} s"
    return label, series


def output_lengths(choice: WorkloadChoice) -> OutputLengths | None:
    """The output-length distribution the choice names, if any."""
    if choice.output_lengths is None:
        return None
    return parse_output_lengths(choice.output_lengths)


def _distributed(choice: WorkloadChoice, seed: int) -> tuple[str, list[tuple[str, Requests]]]:
    """Fixed input lengths and outputs drawn from the choice's distribution."""
    lengths = output_lengths(choice)
    assert lengths is not None and choice.isl is not None
    spec = WorkloadSpec(
        num_requests=choice.num_requests,
        input=ranged_length(choice.isl, None),
        output=lengths.dist,
        arrival=choice.arrival,
        rate_per_s=choice.rate_per_s,
        clients=choice.clients,
        think_time_s=choice.think_time_s or 0.0,
        max_input_tokens=choice.isl,
        max_output_tokens=lengths.max_tokens,
    )
    requests = generate_requests(spec, np.random.default_rng(seed))
    label = f"isl {choice.isl}, {lengths.label}"
    if choice.think_time_s:
        label += f", think {choice.think_time_s:g} s"
    return label, [(lengths.label.removeprefix("osl "), requests)]


def _trace_workload(choice: WorkloadChoice, seed: int) -> tuple[str, list[tuple[str, Requests]]]:
    """A trace as recorded, replayed by a fixed pool of `clients` users, or (rows without
    arrival times) at a Poisson rate, drawn as a generated workload's arrivals of `seed` are."""
    assert choice.trace_lines is not None
    clients, think = choice.clients, choice.think_time_s
    pool = "" if clients is None else f", {clients:,} users"
    if is_session_trace(choice.trace_lines):
        rows = parse_session_trace(choice.trace_lines)
        requests = requests_from_session_trace(rows, clients=clients, think_time_s=think)
        return f"session trace{pool}", [("sessions", requests)]
    requests = requests_from_trace(
        parse_trace(choice.trace_lines), clients=clients, think_time_s=think
    )
    if choice.rate_per_s is not None:  # untimed rows (a timed trace's rate is refused)
        spec = WorkloadSpec(
            num_requests=len(requests.arrival_s), input=ranged_length(1, None),
            output=ranged_length(1, None), arrival=Arrival.POISSON, rate_per_s=choice.rate_per_s,
        )  # fmt: skip
        arrivals = arrival_times_s(spec, np.random.default_rng(seed))
        rate = f", {choice.rate_per_s:g} requests/s (Poisson)"
        return f"trace{rate}", [("trace", replace(requests, arrival_s=arrivals))]
    return f"trace{pool}", [("trace", requests)]


def redraw(choice: WorkloadChoice, seed: int) -> Callable[[int], tuple[tuple[str, Requests], ...]]:
    """The workloads of `choice` drawn again at n requests, as (label, requests): the online
    stopping rule grows a sample with it. `sweep` and `check` share it, so a point grows the same
    way whichever command asks."""

    def draw(n: int) -> tuple[tuple[str, Requests], ...]:
        return tuple(plan_workloads(replace(choice, num_requests=n), seed)[1])

    return draw


# set: the fixed sample the analytic figures of a generated workload come from (the p99 cliff,
# the online cap grid, max_model_len): this many requests drawn with this seed, whatever the
# run's own seed and size
REFERENCE_SEED = 0
REFERENCE_REQUESTS = 1000


def reference_workloads(choice: WorkloadChoice) -> tuple[tuple[str, Requests], ...]:
    """The workloads of `choice` as the fixed reference sample, as (label, requests): the
    analytic p99 cliff is a property of the workload's lengths, so it comes from the same
    REFERENCE_REQUESTS requests drawn with REFERENCE_SEED whichever command asks and whatever
    its --seed and --num-requests (a 40-request batch's p99 is nearly its longest request). A
    trace is its own reference (its rows, whatever the seed). The same sample as the online
    search's (`OnlineWorkload.reference`): every request waiting, lengths alone drawn."""
    if choice.trace_lines is not None:
        return tuple(plan_workloads(choice, REFERENCE_SEED)[1])
    if choice.preset_name in SESSION_PRESETS:
        # sessions drawn without think times, as the online plan's backlog is
        # (`session_load.session_stream`): a think time draws from the same Generator as the
        # lengths, so with one the sample, and the cliff, moved with --think-time (88 against
        # the plan's 93 for multiturn-chat at think 10 s and 0)
        shape = replace(choice.session_spec(), think_time_s=0.0)
        rng = np.random.default_rng(REFERENCE_SEED)
        sessions = generate_sessions(shape, REFERENCE_REQUESTS, rng, clients=1)
        return ((choice.preset_name, sessions),)
    choice = replace(
        choice, arrival=Arrival.BATCH, rate_per_s=None, clients=None, think_time_s=None
    )
    return tuple(
        plan_workloads(replace(choice, num_requests=REFERENCE_REQUESTS), REFERENCE_SEED)[1]
    )
