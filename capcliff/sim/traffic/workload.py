"""Workloads: a spec (lengths, arrivals) -> a set of requests. Randomness comes in as a Generator.

Arrival patterns:
- `batch`: every request is there at t = 0 (the study's offline batches).
- `clients`: N closed-loop users; each sends its next request when its last one finishes (plus an
  optional think time). The simulator decides those arrival times, so a request carries its client
  and `arrival_s` is NaN for every request but each client's first.
- `poisson`: open loop at a rate (exponential gaps).
- `trace`: the `arrival_s` of a JSONL trace, replayed as given.

Lengths: fixed, uniform, normal, lognormal (given its mean and p99) or empirical (sampled from given
values). Every length is clipped to [1, max].
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from enum import StrEnum
from functools import cached_property

import numpy as np
import numpy.typing as npt

from capcliff.errors import InputError
from capcliff.files import finite_number, number_text, parse_json
from capcliff.sim.traffic.workload_rules import (
    MAX_TOKENS_PER_REQUEST,
    check_arrival,
    check_count,
    check_seconds_bound,
    check_workload_numbers,
)

IntArray = npt.NDArray[np.int64]
FloatArray = npt.NDArray[np.float64]

# z such that Phi(z) = 0.99: the 99th percentile of a standard normal.
Z_P99 = 2.3263478740408408


@dataclass(frozen=True)
class Fixed:
    """Every request has exactly `tokens` tokens."""

    tokens: int

    def __post_init__(self) -> None:
        check_count("tokens", self.tokens)


@dataclass(frozen=True)
class Uniform:
    """Integers drawn uniformly from [low, high], both included."""

    low: int
    high: int


@dataclass(frozen=True)
class Normal:
    """A normal distribution of `mean` and `std` tokens, rounded and clipped to [1, max]."""

    mean: float
    std: float


@dataclass(frozen=True)
class LogNormal:
    """A lognormal distribution named by its mean and 99th percentile, in tokens.

    mean = exp(mu + sigma^2 / 2) and p99 = exp(mu + z sigma) with z = 2.3263, so
    sigma = z - sqrt(z^2 - 2 ln(p99 / mean)) (the root with sigma < z) and
    mu = ln(mean) - sigma^2 / 2.
    A solution needs mean < p99 <= mean x exp(z^2 / 2) (about 15 x the mean).
    """

    mean: float
    p99: float

    def __post_init__(self) -> None:
        if not 0 < self.mean < self.p99:
            raise InputError(f"lognormal: need 0 < mean < p99, got {self.mean}, {self.p99}")
        if 2 * math.log(self.p99 / self.mean) > Z_P99**2:
            raise InputError(f"lognormal: p99 {self.p99} is over 15 x the mean {self.mean}")

    @cached_property  # a session stream draws one length at a time: computed once, not each
    def sigma(self) -> float:
        """Standard deviation of ln(tokens)."""
        return Z_P99 - math.sqrt(Z_P99**2 - 2 * math.log(self.p99 / self.mean))

    @cached_property
    def mu(self) -> float:
        """Mean of ln(tokens)."""
        return math.log(self.mean) - self.sigma**2 / 2


@dataclass(frozen=True)
class Empirical:
    """Lengths sampled with replacement from observed `values`, each with its `weights` (a
    histogram's counts; none: equally likely)."""

    values: tuple[int, ...]
    weights: tuple[float, ...] = ()

    def __post_init__(self) -> None:
        if not self.values or min(self.values) < 1:
            raise InputError("empirical: needs at least one length, all >= 1")
        if self.weights and (
            len(self.weights) != len(self.values)
            or not all(math.isfinite(w) and w > 0 for w in self.weights)
        ):
            raise InputError("empirical: one finite count > 0 per length")

    @property
    def probabilities(self) -> npt.NDArray[np.float64] | None:
        """Each value's probability (None: equally likely)."""
        if not self.weights:
            return None
        w: npt.NDArray[np.float64] = np.asarray(self.weights, dtype=np.float64)
        normalized: npt.NDArray[np.float64] = w / w.sum()
        return normalized


LengthDist = Fixed | Uniform | Normal | LogNormal | Empirical


def ranged_length(tokens: int, ratio: float | None) -> LengthDist:
    """`tokens` fixed, or with a range ratio R integers uniform on [max(1, int(R x tokens)),
    tokens], both ends included: the rule of SGLang's bench_serving (`sample_random_requests`:
    `np.random.randint(max(int(input_len * range_ratio), 1), input_len + 1)`) and of vLLM's
    benchmarks/benchmark_serving.py before `vllm bench serve` (which now draws the symmetric
    [L(1 - R), L(1 + R)] instead)."""
    check_count("tokens", tokens)
    if ratio is None or ratio >= 1:
        return Fixed(tokens)
    return Uniform(max(1, int(tokens * ratio)), tokens)


def sample_lengths(
    dist: LengthDist, n: int, rng: np.random.Generator | None, *, max_tokens: int
) -> IntArray:
    """`n` token counts drawn from `dist`, rounded and clipped to [1, max_tokens] (`rng` None:
    `dist` is fixed, nothing to draw)."""
    if isinstance(dist, Fixed):
        raw: npt.NDArray[np.float64] = np.full(n, float(dist.tokens))
    elif isinstance(dist, Uniform):
        raw = _drawing(rng).integers(dist.low, dist.high, size=n, endpoint=True).astype(np.float64)
    elif isinstance(dist, Normal):
        raw = _drawing(rng).normal(dist.mean, dist.std, size=n)
    elif isinstance(dist, LogNormal):
        raw = _drawing(rng).lognormal(dist.mu, dist.sigma, size=n)
    else:
        raw = _drawing(rng).choice(
            np.asarray(dist.values, dtype=np.float64), size=n, p=dist.probabilities
        )
    return np.clip(np.rint(raw), 1, max_tokens).astype(np.int64)


def sample_length(dist: LengthDist, rng: np.random.Generator, *, max_tokens: int) -> int:
    """`sample_lengths(dist, 1, rng, max_tokens=max_tokens)[0]` without building arrays: the
    same draw (numpy's scalar call takes the one value its size-1 call takes, leaving the
    Generator in the same state), rounded half to even as `np.rint` and clipped alike. A session
    stream draws its lengths one at a time, so this is most of the cost of a session."""
    if isinstance(dist, Fixed):
        raw = float(dist.tokens)
    elif isinstance(dist, Uniform):
        raw = float(rng.integers(dist.low, dist.high, endpoint=True))
    elif isinstance(dist, Normal):
        raw = float(rng.normal(dist.mean, dist.std))
    elif isinstance(dist, LogNormal):
        raw = float(rng.lognormal(dist.mu, dist.sigma))
    else:
        raw = float(rng.choice(np.asarray(dist.values, dtype=np.float64), p=dist.probabilities))
    if raw != raw:  # NaN: whatever the array path makes of it
        return int(np.clip(np.rint(raw), 1, max_tokens).astype(np.int64))
    if raw >= max_tokens:
        return max_tokens
    return 1 if raw <= 1 else round(raw)


class Arrival(StrEnum):
    """How requests arrive."""

    BATCH = "batch"
    CLIENTS = "clients"
    POISSON = "poisson"


@dataclass(frozen=True)
class WorkloadSpec:
    """What to generate: how many requests, their lengths and how they arrive."""

    num_requests: int
    input: LengthDist
    output: LengthDist
    arrival: Arrival = Arrival.BATCH
    rate_per_s: float | None = None  # poisson only
    clients: int | None = None  # closed-loop clients only
    think_time_s: float = 0.0
    max_input_tokens: int = 131_072
    max_output_tokens: int = 32_768  # the engine's max_tokens: outputs are cut there

    def __post_init__(self) -> None:
        check_workload_numbers(
            num_requests=self.num_requests, rate=self.rate_per_s, clients=self.clients
        )
        check_count("max_input_tokens", self.max_input_tokens)
        check_count("max_output_tokens", self.max_output_tokens)
        if not (math.isfinite(self.think_time_s) and self.think_time_s >= 0):
            raise InputError(f"think_time_s: must be a finite number >= 0, got {self.think_time_s}")
        check_arrival(self.arrival.value, rate=self.rate_per_s, clients=self.clients)


@dataclass(frozen=True)
class Requests:
    """A set of requests as parallel arrays, one entry per request.

    `arrival_s` is NaN for a closed-loop request that is sent when its client's previous one ends.
    `max_output_tokens` is the limit the engine sees (max_tokens); `output_tokens` is what it
    generates.
    """

    input_tokens: IntArray
    output_tokens: IntArray
    max_output_tokens: IntArray
    arrival_s: FloatArray
    client: IntArray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    closed_loop: bool = False
    think_time_s: float = 0.0
    # Sessions (capcliff.sim.traffic.sessions): per request, the think time before it is sent once
    # its client's previous requests have finished (default: think_time_s), whether it is sent
    # together with the request before it (a fan-out wave), and its content node; per content
    # node, its parent (-1: none) and the tokens it shares with that parent. No content nodes:
    # every request is its own content (nothing shared).
    think_s: FloatArray = field(default_factory=lambda: np.zeros(0))
    joins_previous: npt.NDArray[np.bool_] = field(default_factory=lambda: np.zeros(0, dtype=bool))
    content_node: IntArray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    content_parent: IntArray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    content_fork_tokens: IntArray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))

    def __post_init__(self) -> None:
        n = len(self.input_tokens)
        if not len(self.client):
            object.__setattr__(self, "client", np.full(n, -1, dtype=np.int64))
        if not len(self.think_s):
            object.__setattr__(self, "think_s", np.full(n, self.think_time_s))
        if not len(self.joins_previous):
            object.__setattr__(self, "joins_previous", np.zeros(n, dtype=bool))
        if not len(self.content_node):
            object.__setattr__(self, "content_node", np.full(n, -1, dtype=np.int64))
        arrays = (
            self.output_tokens,
            self.max_output_tokens,
            self.arrival_s,
            self.client,
            self.think_s,
            self.joins_previous,
            self.content_node,
        )
        if any(len(a) != n for a in arrays):
            raise InputError("requests: every field needs one entry per request")
        if n and (self.input_tokens.min() < 1 or self.output_tokens.min() < 1):
            raise InputError("requests: input and output lengths must be >= 1 token")
        if n and (self.output_tokens > self.max_output_tokens).any():
            raise InputError("requests: an output is longer than its max_output_tokens")

    def __len__(self) -> int:
        return len(self.input_tokens)

    def subset(self, indices: IntArray) -> Requests:
        """The requests at `indices`, in that order."""
        return Requests(
            input_tokens=self.input_tokens[indices],
            output_tokens=self.output_tokens[indices],
            max_output_tokens=self.max_output_tokens[indices],
            arrival_s=self.arrival_s[indices],
            client=self.client[indices],
            closed_loop=self.closed_loop,
            think_time_s=self.think_time_s,
            think_s=self.think_s[indices],
            joins_previous=self.joins_previous[indices],
            content_node=self.content_node[indices],
            content_parent=self.content_parent,
            content_fork_tokens=self.content_fork_tokens,
        )

    @property
    def has_content(self) -> bool:
        """Whether requests name shared content (sessions, shared prefixes)."""
        return bool(len(self.content_parent))


def arrival_times_s(spec: WorkloadSpec, rng: np.random.Generator | None) -> FloatArray:
    """Arrival time of each request (NaN where a closed-loop client decides it; `rng` None: the
    arrivals are not Poisson, nothing to draw)."""
    n = spec.num_requests
    if spec.arrival is Arrival.POISSON:
        assert spec.rate_per_s is not None
        return np.cumsum(_drawing(rng).exponential(1.0 / spec.rate_per_s, size=n))
    times = np.zeros(n)
    if spec.arrival is Arrival.CLIENTS:
        assert spec.clients is not None
        times[spec.clients :] = np.nan
    return times


def draws(spec: WorkloadSpec) -> bool:
    """Whether `generate_requests` draws anything for `spec`: a length that is not fixed, or
    Poisson arrivals. One that does not needs no generator (numpy's random module takes about
    9 ms of CPU to load, 1 % of a batch plan)."""
    fixed = isinstance(spec.input, Fixed) and isinstance(spec.output, Fixed)
    return not fixed or spec.arrival is Arrival.POISSON


def _drawing(rng: np.random.Generator | None) -> np.random.Generator:
    if rng is None:
        raise ValueError("a workload that draws needs a generator (see `draws`)")
    return rng


def generate_requests(spec: WorkloadSpec, rng: np.random.Generator | None) -> Requests:
    """Draw the requests of `spec`: inputs, then outputs, then arrivals (same seed, same
    requests; `rng` None: `spec` draws nothing, `draws`)."""
    n = spec.num_requests
    inputs = sample_lengths(spec.input, n, rng, max_tokens=spec.max_input_tokens)
    outputs = sample_lengths(spec.output, n, rng, max_tokens=spec.max_output_tokens)
    arrivals = arrival_times_s(spec, rng)
    clients = spec.clients if spec.arrival is Arrival.CLIENTS else None
    return Requests(
        input_tokens=inputs,
        output_tokens=outputs,
        max_output_tokens=np.full(n, spec.max_output_tokens, dtype=np.int64),
        arrival_s=arrivals,
        client=np.arange(n, dtype=np.int64) % clients if clients else np.full(n, -1, np.int64),
        closed_loop=clients is not None,
        think_time_s=spec.think_time_s,
    )


@dataclass(frozen=True)
class TraceRow:
    """One request of a trace: its lengths and, optionally, when it arrived."""

    input_tokens: int
    output_tokens: int
    arrival_s: float | None = None


def _trace_int(row: dict[str, object], key: str, line: int) -> int:
    value = row.get(key)
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise InputError(f"trace line {line}: {key}: must be an integer >= 1, got {value!r}")
    if value > MAX_TOKENS_PER_REQUEST:  # 10**40 overflowed numpy's int64 (a traceback)
        raise InputError(
            f"trace line {line}: {key}: {value:.3g} is past the sanity bound "
            f"{MAX_TOKENS_PER_REQUEST:,}"
        )
    return value


def jsonl_objects(lines: Iterable[str]) -> Iterator[tuple[int, dict[str, object]]]:
    """(line number, object) of each non-blank line of a JSONL trace."""
    for number, text in enumerate(lines, start=1):
        if not text.strip():
            continue
        row = parse_json(
            text, source=f"trace line {number}", finite=False, unique_keys=True
        )  # fields say
        if not isinstance(row, dict):
            raise InputError(f"trace line {number}: expected a JSON object")
        yield number, row


TRACE_KEYS = ("input_tokens", "output_tokens", "arrival_s")


def refuse_unknown_keys(row: dict[str, object], line: int, known: tuple[str, ...]) -> None:
    """A key the trace format does not have is an error: a misspelt `think_time` for `think_s`,
    or a session row in a plain trace, was dropped unsaid and the row simulated without it."""
    unknown = [key for key in row if key not in known]
    if unknown and "completed" in row:  # a bench tool's result row, not a request
        tool = (
            "`vllm bench serve --save-result`"
            if "num_prompts" in row
            else ("SGLang `bench_serving --output-file`")
        )
        raise InputError(
            f"trace line {line}: a {tool} result (a run's totals), not a request; a trace holds "
            f"one request per line ({', '.join(known)}); results are `capcliff calibrate`'s input"
        )
    if unknown:
        raise InputError(
            f"trace line {line}: {unknown[0]!r:.40}: unknown key; valid: {', '.join(known)}"
        )


def parse_trace(lines: Iterable[str]) -> list[TraceRow]:
    """Rows of a JSONL trace `{"input_tokens": .., "output_tokens": .., "arrival_s": ..}`.

    `arrival_s` is optional, in every row or in none; blank lines are skipped; any other key is
    refused. The caller reads
    the file.
    """
    rows: list[TraceRow] = []
    numbers: list[int] = []
    for number, row in jsonl_objects(lines):
        numbers.append(number)
        refuse_unknown_keys(row, number, TRACE_KEYS)
        arrival = row.get("arrival_s")
        # an integer of 400 digits overflowed math.isfinite
        if arrival is not None and (
            not finite_number(arrival) or not isinstance(arrival, int | float) or arrival < 0
        ):
            raise InputError(
                f"trace line {number}: arrival_s: must be a finite number >= 0 (seconds), "
                f"got {number_text(arrival):.40}"
            )
        if arrival is not None:
            check_seconds_bound(f"trace line {number}: arrival_s", arrival)
        inputs = _trace_int(row, "input_tokens", number)
        outputs = _trace_int(row, "output_tokens", number)
        rows.append(TraceRow(inputs, outputs, None if arrival is None else float(arrival)))
    if not rows:
        raise InputError("trace: no requests")
    timed = [r.arrival_s is not None for r in rows]
    if any(timed) and not all(timed):  # the untimed rows arrived at 0 s unsaid
        raise InputError(
            f"trace line {numbers[timed.index(False)]}: arrival_s: missing while line "
            f"{numbers[timed.index(True)]} has one; give every row an arrival time, or none"
        )
    return rows


def requests_from_trace(
    rows: list[TraceRow],
    *,
    max_output_tokens: int | None = None,
    clients: int | None = None,
    think_time_s: float | None = None,
) -> Requests:
    """The trace replayed as given: arrivals from the trace (0 where a row has none). With
    `clients` N, a fixed pool of N users sends the rows instead (the trace's arrivals unused):
    user u sends rows u, u + N, u + 2N, ... in the trace's order, each `think_time_s` (default 0)
    after its previous one finishes."""
    outputs = np.array([r.output_tokens for r in rows], dtype=np.int64)
    # each row's max_tokens is its own output, as the bench tools replay a trace (`vllm bench
    # serve` sends "max_tokens": output_len with ignore_eos, vllm/benchmarks/lib/
    # endpoint_request_func.py; SGLang bench_serving "max_new_tokens": output_len); it was the
    # trace's longest output for every row, so a 4,095-token prompt of 1 output beside a 1-token
    # prompt of 4,095 read as an 8,190-token request and max_model_len 4,096 was refused
    limits = outputs if max_output_tokens is None else np.full(len(rows), max_output_tokens)
    n = len(rows)
    if clients is not None:
        check_count("clients", clients)
        arrivals = np.where(np.arange(n) < clients, 0.0, np.nan)
        order = np.arange(n)
        client = np.arange(n, dtype=np.int64) % clients
    else:
        arrivals = np.array([0.0 if r.arrival_s is None else r.arrival_s for r in rows])
        order = np.argsort(arrivals, kind="stable")
        client = np.full(n, -1, dtype=np.int64)
    return Requests(
        input_tokens=np.array([r.input_tokens for r in rows], dtype=np.int64)[order],
        output_tokens=np.minimum(outputs, limits)[order],
        max_output_tokens=np.asarray(limits, dtype=np.int64)[order],
        arrival_s=arrivals[order],
        client=client,
        closed_loop=clients is not None,
        think_time_s=0.0 if think_time_s is None else think_time_s,
    )


# Presets. `reasoning` is modelled on NaturalReasoning as the study describes it
# (shared/reference/paper_findings.md): about 77 % of prompts are 50-150 tokens, about 45 % of
# answers exceed 5,000 tokens.
# - prompts: lognormal, mean 110, p99 272 -> sigma = 0.4286, mu = 4.6087 (median 100.4 tokens);
#   P(50 <= x <= 150) = Phi(ln(150/100.4)/0.4286) - Phi(ln(50/100.4)/0.4286)
#                     = Phi(0.937) - Phi(-1.627) = 0.826 - 0.052 = 0.774.
# - answers: lognormal, mean 7,300, p99 45,000 -> sigma = 0.9944, mu = 8.4012 (median 4,452);
#   P(x > 5,000) = 1 - Phi((ln 5000 - 8.4012)/0.9944) = 1 - Phi(0.117) = 0.454;
#   answers are cut at max_tokens = 32,768, which P(x > 32,768) = 1 - Phi(2.007) = 2.2 % reach.
# `chat` and `chat-short` are named assumptions (no chat trace ships with capcliff): a
# ShareGPT-like conversation turn and a short question-answer turn.
PRESETS: dict[str, tuple[LengthDist, LengthDist, int]] = {
    "reasoning": (LogNormal(110, 272), LogNormal(7_300, 45_000), 32_768),
    "chat": (LogNormal(300, 2_000), LogNormal(250, 1_200), 4_096),
    "chat-short": (LogNormal(128, 512), LogNormal(128, 512), 1_024),
}


def preset(
    name: str,
    *,
    num_requests: int,
    arrival: Arrival = Arrival.BATCH,
    rate_per_s: float | None = None,
    clients: int | None = None,
) -> WorkloadSpec:
    """A named workload (`reasoning`, `chat`, `chat-short`) of `num_requests` requests."""
    if name not in PRESETS:
        raise InputError(f"workload: unknown preset {name!r}; known: {', '.join(PRESETS)}")
    inputs, outputs, max_output = PRESETS[name]
    return WorkloadSpec(
        num_requests=num_requests,
        input=inputs,
        output=outputs,
        arrival=arrival,
        rate_per_s=rate_per_s,
        clients=clients,
        max_output_tokens=max_output,
    )
