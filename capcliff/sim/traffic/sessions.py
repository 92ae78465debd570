"""Session workloads: multi-turn chat and agent sessions whose prompts resend the history.

A session is a chain of turns. Turn k's prompt is the session's shared prefix (a system prompt,
or an agent's tools and instructions), every earlier turn's new input and output, and its own new
input: P_k = prefix + sum_{j<k} (input_j + output_j) + input_k. The session is one content node
(capcliff.sim.reuse.prefix_cache) forked from its prefix's node, so a prefix cache can reuse all but
the new input. Agent sessions add fan-out: after a turn, a wave of parallel branch requests
(sub-agents, tool calls answered by the model) forks from the context and runs at once; their
outputs come back into the next turn's input.

Arrivals: with `clients` N, N users each run sessions back to back (a closed loop: turn k + 1 is
sent a think time after turn k finishes); with a rate, sessions start as a Poisson process at
rate / E[requests per session] (`requests_per_session`: the turns that fit the context limit
plus the fan-out branches), so requests are offered at `rate` per second, and each session is
its own closed loop. (Until 2026-12-08 the divisor was the preset's mean turns: agentic sessions
cut at a 40,960-token context send 14.9 requests, not 30, so a plan's "2.02 requests/s" ran at
0.87 and its latencies were a lighter load's.)

Sources of the presets (every figure either cited or a named assumption):
- `multiturn-chat`: WildChat-1M statistics (Zhao et al., "WildChat: 1M ChatGPT Interaction Logs
  in the Wild", ICLR 2024, arXiv:2405.01470, Table 2): 2.54 turns per conversation, user turns
  of 295.58 +- 1,609.18 tokens, assistant turns of 441.34 +- 410.91 tokens. Lengths are
  lognormal with that mean and standard deviation: sigma^2 = ln(1 + (sd / mean)^2), and
  p99 = exp(mu + 2.3263 sigma) with mu = ln(mean) - sigma^2 / 2: user sigma = 1.849,
  mu = 3.981, p99 = 3,951; assistant sigma = 0.791, mu = 5.777, p99 = 2,030. Turns per session
  geometric with mean 2.54. Assumptions (no dataset gives them): one 200-token system prompt
  shared by every session, think time exponential with mean 10 s, history capped at 32,768
  tokens (the session ends when a prompt + max_tokens 4,096 would pass it).
- `agentic`: named assumptions shaped on the source notes' "fan-out x branching x tools" (no
  public trace statistics ship with capcliff): an 8,000-token prefix (instructions and tool
  schemas) shared by every session; 30 turns per session (geometric mean); each turn's new
  input is a tool result, lognormal mean 1,500, p99 15,000 tokens; each output a tool call or
  a short answer, lognormal mean 300, p99 3,000; tool latency exponential with mean 2 s; after
  a turn, with probability 0.1, a fan-out wave of 3 branches (input lognormal mean 500,
  p99 5,000; output like the turn's); history capped at 131,072 tokens.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Iterable
from dataclasses import dataclass, field, replace

import numpy as np
import numpy.typing as npt

from capcliff.errors import InputError
from capcliff.files import finite_number, number_text
from capcliff.sim.traffic.length_mean import expected_length
from capcliff.sim.traffic.workload import (
    PRESETS,
    LengthDist,
    LogNormal,
    Requests,
    jsonl_objects,
    ranged_length,
    refuse_unknown_keys,
    sample_length,
)
from capcliff.sim.traffic.workload_rules import (
    MAX_TOKENS_PER_REQUEST,
    MAX_TURNS,
    check_count,
    check_range_ratio,
    check_seconds_bound,
    check_think_time,
    check_turns,
)
from capcliff.units import counted


@dataclass(frozen=True)
class SessionSpec:
    """How sessions look: turns, lengths, the shared prefix, think time and fan-out."""

    mean_turns: float
    user_input: LengthDist
    output: LengthDist
    prefix_tokens: int = 0
    prefixes: int = 1  # distinct shared prefixes, sessions spread over them evenly
    think_time_s: float = 0.0  # mean of an exponential
    fanout_probability: float = 0.0
    fanout_width: int = 0
    branch_input: LengthDist | None = None
    max_context_tokens: int = 32_768
    max_output_tokens: int = 4_096
    # a context of the session's own (documents, a repository) sent with its first turn and
    # shared with no other session; None: none
    start_context: LengthDist | None = None

    def __post_init__(self) -> None:
        if self.mean_turns < 1:
            raise InputError(f"sessions: mean turns must be >= 1, got {self.mean_turns}")
        if self.prefix_tokens < 0 or self.prefixes < 1:
            raise InputError("sessions: prefix tokens must be >= 0 and prefixes >= 1")
        if self.think_time_s < 0:
            raise InputError(f"sessions: think time must be >= 0, got {self.think_time_s}")
        if not 0 <= self.fanout_probability <= 1:
            raise InputError("sessions: fan-out probability must be in [0, 1]")
        if self.max_context_tokens <= self.prefix_tokens + 1:
            raise InputError("sessions: max context must exceed the shared prefix")


SESSION_PRESETS: dict[str, SessionSpec] = {
    "multiturn-chat": SessionSpec(
        mean_turns=2.54,
        user_input=LogNormal(295.58, 3_951),
        output=LogNormal(441.34, 2_030),
        prefix_tokens=200,
        think_time_s=10.0,
        max_context_tokens=32_768,
        max_output_tokens=4_096,
    ),
    "agentic": SessionSpec(
        mean_turns=30,
        user_input=LogNormal(1_500, 15_000),
        output=LogNormal(300, 3_000),
        prefix_tokens=8_000,
        think_time_s=2.0,
        fanout_probability=0.1,
        fanout_width=3,
        branch_input=LogNormal(500, 5_000),
        max_context_tokens=131_072,
        max_output_tokens=8_192,
    ),
}


# Every preset a workload can name: single-turn (sim.workload) and sessions.
WORKLOAD_PRESETS = (*PRESETS, *SESSION_PRESETS)


@dataclass(frozen=True)
class SessionShape:
    """What a user changed of a session preset (None: the preset's value). Lengths are means
    (the preset's distribution rescaled to them, its shape kept) or, with `range_ratio` R,
    integers uniform on [R x L, L] as the bench tools draw them (`workload.ranged_length`)."""

    turns: float | None = None  # mean turns per session (geometric)
    isl: int | None = None  # new input tokens per turn
    osl: int | None = None  # output tokens per turn
    think_time_s: float | None = None  # mean think time between turns, s (0: none)
    context_tokens: int | None = None  # the session's own starting context, tokens (0: none)
    range_ratio: float | None = None
    # the context the sessions are kept within, tokens: the served one where it is shorter than
    # the preset's own window (None: the preset's)
    window_tokens: int | None = None

    def __post_init__(self) -> None:
        check_turns(self.turns)
        check_think_time(self.think_time_s)
        check_range_ratio(self.range_ratio)
        check_count("isl", self.isl, most=MAX_TOKENS_PER_REQUEST)
        check_count("osl", self.osl, most=MAX_TOKENS_PER_REQUEST)
        check_count("context", self.context_tokens, most=MAX_TOKENS_PER_REQUEST, least=0)


def rescaled(dist: LengthDist, mean: int, ratio: float | None) -> LengthDist:
    """`dist` moved to mean `mean` tokens: a lognormal keeps its sigma (p99 scales with the mean);
    any other distribution, or a range ratio, gives `ranged_length(mean, ratio)`."""
    if ratio is None and isinstance(dist, LogNormal):
        return LogNormal(mean, dist.p99 * mean / dist.mean)
    return ranged_length(mean, ratio)


def shaped_session_spec(name: str, shape: SessionShape) -> SessionSpec:
    """Preset `name` with what `shape` changes. The output limit grows to a longer asked output
    (the engine's max_tokens); a starting context that leaves no room for a turn is refused."""
    base = SESSION_PRESETS[name]
    window = base.max_context_tokens
    if shape.window_tokens is not None and shape.window_tokens < window:
        window = shape.window_tokens
        room = window - base.prefix_tokens - base.max_output_tokens
        if room < 1:
            raise InputError(
                f"max_model_len: {name}'s turns need more than {window:,} tokens of context "
                f"(a shared prefix of {base.prefix_tokens:,} and max_tokens "
                f"{base.max_output_tokens:,}); serve a longer context or pick another workload"
            )
    spec = replace(
        base,
        mean_turns=base.mean_turns if shape.turns is None else shape.turns,
        think_time_s=base.think_time_s if shape.think_time_s is None else shape.think_time_s,
        max_context_tokens=window,
    )
    if shape.isl is not None:
        room = spec.max_context_tokens - spec.prefix_tokens - spec.max_output_tokens
        if shape.isl >= room:  # its turns were drawn from the few short ones that fit
            raise InputError(
                f"isl: {shape.isl:,} new tokens a turn leave no room for a turn in {name}'s "
                f"{spec.max_context_tokens:,}-token context (at most {room - 1:,})"
            )
        spec = replace(spec, user_input=rescaled(base.user_input, shape.isl, shape.range_ratio))
    if shape.osl is not None:
        spec = replace(
            spec,
            output=rescaled(base.output, shape.osl, shape.range_ratio),
            max_output_tokens=max(base.max_output_tokens, shape.osl),
        )
    if shape.context_tokens:  # 0: none of its own, the presets' start_context
        room = spec.max_context_tokens - spec.prefix_tokens - spec.max_output_tokens
        if shape.context_tokens >= room:
            raise InputError(
                f"context: {shape.context_tokens:,} tokens leave no room for a turn in "
                f"{name}'s {spec.max_context_tokens:,}-token context (at most {room - 1:,})"
            )
        spec = replace(spec, start_context=ranged_length(shape.context_tokens, shape.range_ratio))
    return spec


def _mean_tokens(dist: LengthDist, limit: int) -> float:
    return expected_length(dist, max_tokens=limit)


def describe_sessions(spec: SessionSpec) -> str:
    """The session shape in one line, for a report's header: mean turns, new input and output
    tokens per turn, starting context, think time."""
    parts = [
        counted(spec.mean_turns, "turn", "g"),  # "1 turns" (seed 36)
        f"isl {_mean_tokens(spec.user_input, spec.max_context_tokens):,.0f}",
        f"osl {_mean_tokens(spec.output, spec.max_output_tokens):,.0f}",
    ]
    if spec.prefix_tokens:
        parts.append(f"shared prefix {spec.prefix_tokens:,}")
    if spec.start_context is not None:
        context = _mean_tokens(spec.start_context, spec.max_context_tokens)
        parts.append(f"context {context:,.0f}")
    parts.append(f"think {spec.think_time_s:g} s")
    if spec.fanout_width:
        parts.append(f"fan-out {spec.fanout_width} at p {spec.fanout_probability:g}")
    return ", ".join(parts)


@dataclass
class _Builder:
    """Requests in generation order, and the content tree, as they are generated."""

    inputs: list[int] = field(default_factory=list)
    outputs: list[int] = field(default_factory=list)
    arrival: list[float] = field(default_factory=list)
    think: list[float] = field(default_factory=list)
    joins: list[bool] = field(default_factory=list)
    client: list[int] = field(default_factory=list)
    node: list[int] = field(default_factory=list)
    parent: list[int] = field(default_factory=list)
    fork: list[int] = field(default_factory=list)
    nodes_at: list[int] = field(default_factory=list)  # content nodes when each request was added

    def new_node(self, parent: int, fork_tokens: int) -> int:
        self.parent.append(parent)
        self.fork.append(fork_tokens)
        return len(self.parent) - 1

    def add(
        self,
        *,
        prompt: int,
        output: int,
        node: int,
        client: int,
        arrival_s: float,
        think_s: float,
        joins: bool = False,
    ) -> None:
        self.inputs.append(prompt)
        self.outputs.append(output)
        self.node.append(node)
        self.client.append(client)
        self.arrival.append(arrival_s)
        self.think.append(think_s)
        self.joins.append(joins)
        self.nodes_at.append(len(self.parent))

    def requests(
        self, max_output_tokens: int, n: int | None = None, *, own_limits: bool = False
    ) -> Requests:
        """The first `n` requests (default: all), with the content nodes made by then; each
        sent with max_tokens `max_output_tokens`, or (`own_limits`) its own output's."""
        n = len(self.inputs) if n is None else n
        nodes = self.nodes_at[n - 1] if n else 0
        outputs = np.minimum(np.asarray(self.outputs[:n], dtype=np.int64), max_output_tokens)
        return Requests(
            input_tokens=np.asarray(self.inputs[:n], dtype=np.int64),
            output_tokens=outputs,
            max_output_tokens=outputs.copy()
            if own_limits
            else np.full(n, max_output_tokens, dtype=np.int64),
            arrival_s=np.asarray(self.arrival[:n], dtype=np.float64),
            client=np.asarray(self.client[:n], dtype=np.int64),
            closed_loop=True,
            think_s=np.asarray(self.think[:n], dtype=np.float64),
            joins_previous=np.asarray(self.joins[:n], dtype=bool),
            content_node=np.asarray(self.node[:n], dtype=np.int64),
            content_parent=np.asarray(self.parent[:nodes], dtype=np.int64),
            content_fork_tokens=np.asarray(self.fork[:nodes], dtype=np.int64),
        )


class _Draws:
    """Lengths and think times drawn in blocks from one Generator (same seed, same sessions)."""

    def __init__(self, spec: SessionSpec, rng: np.random.Generator) -> None:
        self.spec, self.rng = spec, rng

    def length(self, dist: LengthDist, limit: int) -> int:
        return sample_length(dist, self.rng, max_tokens=limit)

    def think(self) -> float:
        mean = self.spec.think_time_s
        return float(self.rng.exponential(mean)) if mean > 0 else 0.0

    def turns(self) -> int:
        # geometric on {1, 2, ...} with mean m: success probability 1 / m
        return int(self.rng.geometric(1.0 / self.spec.mean_turns))


def _session(
    b: _Builder, d: _Draws, *, prefix_node: int, client: int, first_arrival_s: float
) -> int:
    """Append one whole session's requests; returns how many."""
    spec = d.spec
    node = b.new_node(prefix_node, spec.prefix_tokens) if prefix_node >= 0 else b.new_node(-1, 0)
    context, carried, made = spec.prefix_tokens, 0, 0
    own = 0 if spec.start_context is None else d.length(spec.start_context, spec.max_context_tokens)
    for turn in range(d.turns()):
        new_input = d.length(spec.user_input, spec.max_context_tokens) + carried + own
        own = 0
        output = d.length(spec.output, spec.max_output_tokens)
        prompt = context + new_input
        if prompt + spec.max_output_tokens > spec.max_context_tokens:  # room for max_tokens
            break
        first = made == 0
        b.add(
            prompt=prompt,
            output=output,
            node=node,
            client=client,
            arrival_s=first_arrival_s if first else math.nan,
            think_s=0.0 if first else d.think(),
        )
        made += 1
        context, carried = prompt + output, 0
        if turn and spec.fanout_width and d.rng.random() < spec.fanout_probability:
            branch_dist = spec.branch_input or spec.user_input
            think = d.think()
            for k in range(spec.fanout_width):
                branch = b.new_node(node, context)
                branch_out = d.length(spec.output, spec.max_output_tokens)
                branch_in = context + d.length(branch_dist, spec.max_context_tokens)
                if branch_in + spec.max_output_tokens > spec.max_context_tokens:
                    break
                b.add(
                    prompt=branch_in,
                    output=branch_out,
                    node=branch,
                    client=client,
                    arrival_s=math.nan,
                    think_s=think,
                    joins=k > 0,
                )
                made += 1
                carried += branch_out
    return made


# set: sessions drawn (fixed seed, a Generator of its own) to estimate requests per session
MEAN_SESSIONS = 2_000
MEAN_SEED = 20_261_208


@functools.lru_cache(maxsize=64)
def requests_per_session(spec: SessionSpec) -> float:
    """E[requests a session sends] (turns that fit the context plus fan-out branches), as a
    ratio estimator over MEAN_SESSIONS sessions drawn with MEAN_SEED: mean_turns x (requests
    sent / turns drawn). The geometric turns' own noise cancels in the ratio, and where no turn
    is cut and no branch is sent it is mean_turns exactly."""
    draws = _CountedDraws(spec, np.random.default_rng(MEAN_SEED))
    b = _Builder()
    sent = sum(_session(b, draws, prefix_node=-1, client=0, first_arrival_s=0.0)
               for _ in range(MEAN_SESSIONS))  # fmt: skip
    return spec.mean_turns * (sent / draws.drawn) if sent != draws.drawn else spec.mean_turns


class _CountedDraws(_Draws):
    """`_Draws` that count the turns drawn (before the context limit cuts a session)."""

    drawn = 0

    def turns(self) -> int:
        count = super().turns()
        self.drawn += count
        return count


class SessionStream:
    """Sessions drawn whole, one after another, from one Generator, and extended on demand: a
    sample of n requests is the first n requests generated (the last session cut at n), so the
    first n requests of a larger sample are the n-request sample's, draw for draw
    (prefix-consistent), and growing a sample draws only the sessions it adds.

    Sessions are run by `clients` users or started at `rate_per_s` (see `generate_sessions`).
    With users and no think time the draws do not depend on the number of users, so one stream
    serves any (`take`'s `clients`); with a think time, a user's next session starts after one,
    drawn for the sessions past the first `clients`, so the stream is its users'. At a rate the
    draws do not depend on the rate either: a session's start gap is numpy's exponential of
    scale E[requests per session] / rate, which is that scale times one standard exponential
    draw, bit for bit and taking the same bits of the Generator. The stream keeps those draws,
    so one stream serves every rate (`take`'s `rate_per_s`), its sessions' starts summed in
    the same order."""

    def __init__(
        self,
        spec: SessionSpec,
        rng: np.random.Generator,
        *,
        clients: int | None = None,
        rate_per_s: float | None = None,
    ) -> None:
        if (clients is None) == (rate_per_s is None):
            raise InputError("sessions: give either clients or a rate")
        if clients is not None and clients < 1:
            raise InputError(f"clients: must be >= 1, got {clients}")
        if rate_per_s is not None and not rate_per_s > 0:
            raise InputError(f"rate: must be > 0, got {rate_per_s}")
        self.spec, self.clients, self.rate_per_s = spec, clients, rate_per_s
        self._b, self._d = _Builder(), _Draws(spec, rng)
        self._prefixes = (
            [self._b.new_node(-1, 0) for _ in range(spec.prefixes)] if spec.prefix_tokens else []
        )
        # each request's session, in generation order, counting only sessions that sent a turn:
        # a session whose first turn did not fit is no user's (user k % N starting an empty one
        # never sent anything, and its later sessions waited forever)
        self._session: list[int] = []
        self._sessions, self._started, self._start_s = 0, 0, 0.0
        # at a rate: each session's start gap over E[requests per session] / rate (a standard
        # exponential), and, for each session that sent a turn, (its first request, its
        # session's draw index)
        self._gaps: list[float] = []
        self._firsts: list[tuple[int, int]] = []

    def _extend(self, n: int) -> None:
        """Draw whole sessions until at least `n` requests exist."""
        b, d, spec = self._b, self._d, self.spec
        empty = 0  # sessions with no turn that fits, in a row
        while len(b.inputs) < n:
            k = self._sessions
            prefix = self._prefixes[k % len(self._prefixes)] if self._prefixes else -1
            arrival = math.nan
            if self.rate_per_s is not None:
                # rng.exponential(scale) is scale x rng.standard_exponential() (numpy's
                # random_exponential), the same value and the same draws
                gap = float(d.rng.standard_exponential())
                self._gaps.append(gap)
                self._start_s += requests_per_session(spec) / self.rate_per_s * gap
                arrival = self._start_s
            first = len(b.inputs)
            count = _session(b, d, prefix_node=prefix, client=k, first_arrival_s=arrival)
            if count and self.rate_per_s is not None:
                self._firsts.append((first, k))
            if count and self.clients is not None and self._started >= self.clients:
                b.think[first] = d.think()  # a user's next session starts after a think time
            self._session.extend([self._started] * count)
            self._sessions += 1
            self._started += count > 0
            empty = 0 if count else empty + 1
            if empty > 100 * max(n, 1):
                raise InputError("sessions: no turn fits the context limit")

    def take(
        self, n: int, clients: int | None = None, *, rate_per_s: float | None = None
    ) -> Requests:
        """The first `n` requests, run by `clients` users (default: the stream's; another count
        only without a think time), each user's requests in the order it sends them. A stream
        at a rate: sessions started at `rate_per_s` (default: the stream's), the requests
        those of a stream drawn at that rate."""
        check_count("num_requests", n)
        users = self.clients if clients is None else clients
        if self.rate_per_s is None and users != self.clients and self.spec.think_time_s > 0:
            raise ValueError("SessionStream.take: a think time ties the stream to its users")
        if rate_per_s is not None and (self.rate_per_s is None or not rate_per_s > 0):
            raise ValueError("SessionStream.take: a rate > 0, of a stream drawn at a rate")
        self._extend(n)
        requests = self._b.requests(self.spec.max_output_tokens, n)
        if users is None:  # a rate: each session is its own closed loop
            if rate_per_s is None or rate_per_s == self.rate_per_s:
                return requests
            return replace(requests, arrival_s=self._starts(n, rate_per_s))
        session = np.asarray(self._session[:n], dtype=np.int64)
        first = np.ones(n, dtype=bool)
        first[1:] = session[1:] != session[:-1]
        arrival = np.where(first & (session < users), 0.0, np.nan)
        labelled = replace(requests, client=session % users, arrival_s=arrival)
        return labelled.subset(np.argsort(labelled.client, kind="stable").astype(np.int64))

    def _starts(self, n: int, rate_per_s: float) -> npt.NDArray[np.float64]:
        """The first `n` requests' arrivals with sessions started at `rate_per_s`: each
        session's first turn at its start (the gaps times E[requests per session] / rate,
        summed in order as `_extend` sums them: numpy's cumulative sum adds one after another),
        NaN after."""
        starts = np.cumsum(np.asarray(self._gaps) * (requests_per_session(self.spec) / rate_per_s))
        arrival = np.full(n, np.nan)
        firsts = np.asarray(self._firsts, dtype=np.int64).reshape(-1, 2)
        firsts = firsts[firsts[:, 0] < n]
        arrival[firsts[:, 0]] = starts[firsts[:, 1]]
        return arrival


def generate_sessions(
    spec: SessionSpec,
    num_requests: int,
    rng: np.random.Generator,
    *,
    clients: int | None = None,
    rate_per_s: float | None = None,
) -> Requests:
    """`num_requests` requests of sessions, run by `clients` users or started at a rate: with
    users, N users each run sessions back to back (user u sessions u, u + N, ...); at a rate, each
    session is its own closed loop. The first n requests of a larger sample are the n-request
    sample's (`SessionStream`)."""
    if num_requests < 1:
        raise InputError(f"num_requests: must be >= 1, got {num_requests}")
    stream = SessionStream(spec, rng, clients=clients, rate_per_s=rate_per_s)
    return stream.take(num_requests)


@dataclass(frozen=True)
class SessionRow:
    """One turn of a session trace (tokens new in this turn)."""

    session_id: str
    turn: int
    input_tokens: int
    output_tokens: int
    arrival_s: float | None
    think_s: float | None
    prefix_id: str | None
    prefix_tokens: int


def _number(row: dict[str, object], key: str, line: int) -> float | None:
    value = row.get(key)
    if value is None:
        return None
    # NaN passes `value < 0`; an integer of 400 digits overflowed math.isfinite
    if not finite_number(value) or not isinstance(value, int | float) or value < 0:
        raise InputError(
            f"trace line {line}: {key}: must be a finite number >= 0 (seconds), got "
            f"{number_text(value):.40}"
        )
    check_seconds_bound(f"trace line {line}: {key}", value)
    return float(value)


def _count(row: dict[str, object], key: str, line: int, *, least: int) -> int:
    value = row.get(key, None if least else 0)
    if isinstance(value, bool) or not isinstance(value, int) or value < least:
        raise InputError(f"trace line {line}: {key}: must be an integer >= {least}, got {value!r}")
    most = MAX_TURNS if key == "turn" else MAX_TOKENS_PER_REQUEST  # 10**40 overflowed numpy
    if value > most:
        raise InputError(f"trace line {line}: {key}: {value:.3g} is past the sanity bound {most:,}")
    return value


SESSION_TRACE_KEYS = ("session_id", "turn", "input_tokens", "output_tokens", "arrival_s",
                      "think_s", "prefix_id", "prefix_tokens")  # fmt: skip


def parse_session_trace(lines: Iterable[str]) -> list[SessionRow]:
    """Rows of a JSONL session trace: `session_id`, `turn`, `input_tokens` (new this turn),
    `output_tokens`, `arrival_s` or `think_s`, optional `prefix_id` and `prefix_tokens`."""
    rows: list[SessionRow] = []
    seen: dict[tuple[str, int], int] = {}  # (session, turn): the line that gave it
    for number, row in jsonl_objects(lines):
        if "session_id" not in row:
            raise InputError(f"trace line {number}: session_id: missing")
        refuse_unknown_keys(row, number, SESSION_TRACE_KEYS)
        session = row["session_id"]
        if isinstance(session, bool) or not isinstance(session, str | int):
            raise InputError(
                f"trace line {number}: session_id: must be a string or an integer, got "
                f"{session!r:.40}"
            )
        turn = _count(row, "turn", number, least=0)
        if (str(session), turn) in seen:  # which of the two comes first is not said
            raise InputError(
                f"trace line {number}: turn: session {str(session)!r:.40} turn {turn} is also "
                f"line {seen[str(session), turn]}; give each turn once"
            )
        seen[str(session), turn] = number
        prefix = row.get("prefix_id")
        if prefix is not None and (isinstance(prefix, bool) or not isinstance(prefix, str | int)):
            # NaN, 1.5 or [1] named a prefix by its text ("nan"), shared with any other so named
            raise InputError(
                f"trace line {number}: prefix_id: must be a string or an integer, got "
                f"{prefix!r:.40}"
            )
        if prefix is not None and row.get("prefix_tokens") is None:  # shared 0 tokens unsaid
            raise InputError(
                f"trace line {number}: prefix_id: a shared prefix needs its prefix_tokens (the "
                "tokens the sessions share); give them or drop prefix_id"
            )
        if prefix is None and row.get("prefix_tokens"):  # the tokens were dropped unsaid
            raise InputError(
                f"trace line {number}: prefix_tokens: a shared prefix needs its prefix_id "
                "(sessions with the same prefix_id share it); give one or drop prefix_tokens"
            )
        rows.append(
            SessionRow(
                session_id=str(session),
                turn=turn,
                input_tokens=_count(row, "input_tokens", number, least=1),
                output_tokens=_count(row, "output_tokens", number, least=1),
                arrival_s=_number(row, "arrival_s", number),
                think_s=_number(row, "think_s", number),
                prefix_id=None if prefix is None else str(prefix),
                prefix_tokens=_count(row, "prefix_tokens", number, least=0),
            )
        )
    if not rows:
        raise InputError("trace: no requests")
    _refuse_later_prefixes(rows)
    return rows


def _refuse_later_prefixes(rows: list[SessionRow]) -> None:
    """A session's shared prefix is its first turn's (the later turns resend the history that
    starts with it): a later turn naming another prefix was ignored unsaid."""
    heads: dict[str, SessionRow] = {}
    for r in sorted(rows, key=lambda r: (r.session_id, r.turn)):
        head = heads.setdefault(r.session_id, r)
        named = r.prefix_id is not None
        if named and (r.prefix_id, r.prefix_tokens) != (head.prefix_id, head.prefix_tokens):
            raise InputError(
                f"trace: session {r.session_id!r:.40} turn {r.turn}: prefix_id "
                f"{r.prefix_id!r:.40} with {r.prefix_tokens} prefix_tokens, where its first turn "
                f"has {head.prefix_id!r:.40} with {head.prefix_tokens}; a session keeps its "
                "first turn's prefix"
            )


def is_session_trace(lines: Iterable[str]) -> bool:
    """Whether a JSONL trace is a session trace (its first object has a `session_id`)."""
    for _, row in jsonl_objects(lines):
        return "session_id" in row
    return False


def requests_from_session_trace(
    rows: list[SessionRow],
    *,
    max_output_tokens: int | None = None,
    clients: int | None = None,
    think_time_s: float | None = None,
) -> Requests:
    """The session trace as requests: a session's first turn arrives at its `arrival_s` (0 when
    absent), each later turn `think_s` after the previous one finishes.

    With `clients` N, a fixed pool of N users replays it as the bench tools' clients do: the
    requests are labelled as if user u ran sessions u, u + N, u + 2N, ... (in the trace's order),
    each user's first session at t = 0; the simulator then hands a user whose session ends the
    next session no user has started, from a pool shared by the replica's users
    (sim/loop/clients.py), so the labels after the first session are only where a session
    starts out. The trace's `arrival_s` is then unused. `think_time_s` replaces every think time
    of the trace (the gap between turns of a session; between a user's sessions there is none
    unless it is given)."""
    sessions: dict[str, list[SessionRow]] = {}
    for r in rows:
        sessions.setdefault(r.session_id, []).append(r)
    b = _Builder()
    prefix_nodes: dict[tuple[str, int], int] = {}
    limit = max_output_tokens or max(r.output_tokens for r in rows)
    for index, (sid, turns) in enumerate(sessions.items()):
        turns.sort(key=lambda r: r.turn)
        head = turns[0]
        shared = head.prefix_tokens if head.prefix_id is not None else 0
        if shared:
            key = (head.prefix_id or "", shared)
            if key not in prefix_nodes:
                prefix_nodes[key] = b.new_node(-1, 0)
            node = b.new_node(prefix_nodes[key], shared)
        else:
            node = b.new_node(-1, 0)
        context = shared
        client = index if clients is None else index % clients
        pooled_later = clients is not None and index >= clients  # waits for its user
        for k, r in enumerate(turns):
            if k and r.arrival_s is not None and r.think_s is None and clients is None:
                raise InputError(
                    f"trace: session {sid!r} turn {r.turn}: a later turn needs think_s "
                    "(it is sent after the previous turn finishes)"
                )
            prompt = context + r.input_tokens
            output = min(r.output_tokens, limit)
            if k == 0 and clients is None:
                arrival, think = r.arrival_s or 0.0, 0.0
            elif k == 0:  # a pooled user's first session starts at 0, a later one when free
                arrival = math.nan if pooled_later else 0.0
                think = (think_time_s or 0.0) if pooled_later else 0.0
            else:
                arrival = math.nan
                think = think_time_s if think_time_s is not None else (r.think_s or 0.0)
            b.add(
                prompt=prompt, output=output, node=node, client=client, arrival_s=arrival,
                think_s=think,
            )  # fmt: skip
            context = prompt + output
    # each turn's max_tokens is its own output, as the bench tools replay a trace (see
    # workload.requests_from_trace); a limit given is every turn's
    return b.requests(limit, own_limits=max_output_tokens is None)
