"""The traffic an online deployment is offered, drawn at any size: a rate, users or a trace.

Lengths come from the workload (a preset, fixed lengths or a trace) with the seed, so a sample of
n requests is the same whatever the load. Poisson arrivals are drawn once per size as unit-rate
gaps and divided by the rate: one set of random numbers serves every rate of a search, so the
search sees a smooth curve rather than fresh noise at each rate (common random numbers).

The saturation experiment (`saturation_sample`) starts in steady state rather than empty: a
replica that has served a backlog for long holds `cap` running requests, and which requests those
are is known from renewal theory. A slot's occupant at a random time is length-biased (a request
occupies its slot for a time in proportion to its output length O, so it is found there with
probability in proportion to O) and is at a uniform point of its decode: it has generated
g = floor(U x O) tokens, U uniform on [0, 1). Such a request is posed as a new one whose prompt
holds its history (I + g tokens) and which still has O - g tokens to generate. Started from that
running set, the replica is in its steady state as soon as it has prefilled it (the window opens
there, `steady_state`), instead of after the longest requests of an empty start have drained (for
the `reasoning` preset, about 3.4 turnovers of the running set: 32,768-token outputs).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from enum import StrEnum

import numpy as np
import numpy.typing as npt

from capcliff.analysis.evaluate.session_load import (
    is_session_preset,
    requests_per_session,
    session_stream,
)
from capcliff.analysis.workloads import (
    REFERENCE_SEED,
    WorkloadChoice,
    output_lengths,
    plan_workloads,
)
from capcliff.errors import InputError
from capcliff.sim.traffic.length_mean import expected_length
from capcliff.sim.traffic.sessions import SessionStream, describe_sessions, is_session_trace
from capcliff.sim.traffic.workload import PRESETS, Arrival, Requests, ranged_length

FloatArray = npt.NDArray[np.float64]
ARRIVAL_SEED_OFFSET = 1_000_003  # the arrival stream's seed: the workload's seed plus this
SEED_SEED_OFFSET = 2_000_003  # the stationary running set's stream (`saturation_sample`)
# set: a session saturation sample is run by 1.25 x cap users (`saturation_sample`)
SESSION_USERS_PER_CAP = 1.25
SESSION_DOUBLINGS = 1  # set: see `max_doublings`


class LoadKind(StrEnum):
    """What the user gave as the load."""

    RATE = "rate"  # Poisson arrivals at --rate requests/s
    CLIENTS = "clients"  # --clients closed-loop users
    TRACE = "trace"  # a trace's own timestamps
    SATURATION = "saturation"  # none: the most the deployment sustains


@dataclass
class OnlineWorkload:
    """Draws samples of the workload at any size and load. Memoises the draws it made."""

    choice: WorkloadChoice
    seed: int
    label: str = ""
    _lengths: dict[int, Requests] = field(default_factory=dict)
    _gaps: dict[int, FloatArray] = field(default_factory=dict)
    _loaded: dict[tuple[int, float | None, int | None, bool], Requests] = field(
        default_factory=dict
    )
    _streams: dict[tuple[bool, int | None, bool], SessionStream] = field(default_factory=dict)
    _per_session: float | None = None
    _reseeded: dict[int, OnlineWorkload] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.sessions:
            spec = self.choice.session_spec()
            self.label = f"{self.choice.preset_name} ({describe_sessions(spec)})"
            return
        label, series = plan_workloads(self._batch_choice(1), self.seed)
        think = self.choice.think_time_s
        if think and self.choice.clients is not None and not self._keeps_think:
            label += f", think {think:g} s"  # the users' (`with_clients`); a backlog has none
        self.label = label
        if self.is_trace:  # its rows whatever the count: the backlog, parsed once
            self._lengths[0] = series[0][1]

    @property
    def sessions(self) -> bool:
        """A session preset: every sample is drawn whole at its load (`session_load`)."""
        return self.choice.trace_lines is None and is_session_preset(self.choice.preset_name)

    def max_doublings(self, default: int) -> int:
        """How often the stopping rule may double a saturation sample (the largest sample is the
        first x 2^this; a session sample is extended to it, not restarted): `default`, or for
        sessions SESSION_DOUBLINGS (set: a session sample holds r times the requests of a
        single-turn one, and near the cliff the prefix cache's hit rate swings over long
        stretches, so their batch means settle slowly; the plan says when a layout did not
        settle)."""
        return min(default, SESSION_DOUBLINGS) if self.sessions else default

    def requests_per_unit(self) -> float:
        """Requests that run one after another: a session's (turns and fan-out, in a 1,000-request
        backlog); 1 for single requests."""
        if not self.sessions:
            return 1.0
        if self._per_session is None:
            self._per_session = requests_per_session(self.reference(1000))
        return self._per_session

    def _session_sample(
        self, n: int, rate: float | None, clients: int | None, *, think: bool = True
    ) -> Requests:
        """n requests of sessions at the load (`session_load.session_stream`). One stream per
        kind of load is kept and extended: a larger sample draws only the sessions it adds;
        without a think time (a backlog, the saturation search's users) one stream serves
        every count of users, and one stream serves every rate (`SessionStream.take`: the
        draws do not depend on the rate)."""
        timed = rate is not None or clients is not None  # a backlog has no think time
        thinks = think and timed and self.choice.session_spec().think_time_s > 0
        stream_key = (rate is not None, clients if rate is None and thinks else None, thinks)
        if stream_key not in self._streams:
            self._streams[stream_key] = session_stream(
                self.choice.session_spec(), self.seed, clients=clients, rate_rps=rate,
                think=think,
            )  # fmt: skip
        key = (n, rate, clients, think)
        if key not in self._loaded:
            users = None if rate is not None else clients or max(n, 1)
            self._loaded[key] = self._streams[stream_key].take(max(n, 1), users, rate_per_s=rate)
        return self._loaded[key]

    @property
    def kind(self) -> LoadKind:
        """The load the user gave."""
        if self.choice.trace_lines is not None and self.trace_is_timed:
            return LoadKind.TRACE
        if self.choice.clients is not None:
            return LoadKind.CLIENTS
        if self.choice.rate_per_s is not None:
            return LoadKind.RATE
        return LoadKind.SATURATION

    @property
    def trace_is_timed(self) -> bool:
        """Whether the trace carries arrival times that are not all zero."""
        return self.choice.trace_lines is not None and bool(self.backlog(0).arrival_s.max() > 0)

    @property
    def is_trace(self) -> bool:
        """A trace has a fixed size: the stopping rule cannot grow it."""
        return self.choice.trace_lines is not None

    @property
    def _keeps_think(self) -> bool:
        """A session trace: its think times are its own rows' (or --think-time's), drawn with
        its lengths."""
        lines = self.choice.trace_lines
        return lines is not None and is_session_trace(lines)

    def _batch_choice(self, n: int) -> WorkloadChoice:
        return replace(
            self.choice, num_requests=max(n, 1), arrival=Arrival.BATCH, rate_per_s=None,
            clients=None, think_time_s=self.choice.think_time_s if self._keeps_think else None,
        )  # fmt: skip

    def backlog(self, n: int) -> Requests:
        """n requests of the workload, every one waiting at t = 0 (a trace: as recorded)."""
        if self.sessions:
            return self._session_sample(n, None, None)
        key = 0 if self.is_trace else n
        if key not in self._lengths:
            _, series = plan_workloads(self._batch_choice(n), self.seed)
            self._lengths[key] = series[0][1]
        return self._lengths[key]

    def reference(self, n: int) -> Requests:
        """The fixed sample of n requests that the cap grid, the analytic cliff, max_model_len
        and the per-session figures come from: drawn with REFERENCE_SEED whatever the run's
        seed, so none of them moves with `--seed` (a trace: itself)."""
        if self.is_trace:
            return self.backlog(n)
        return self.reseeded(REFERENCE_SEED).backlog(n)

    def reseeded(self, seed: int) -> OnlineWorkload:
        """The same workload drawn with `seed` (itself for its own seed), kept: every sample it
        draws is drawn once however many searches ask for it (a verification's fresh sample,
        `capacity.verified`, at each layout and rate)."""
        if seed == self.seed:
            return self
        if seed not in self._reseeded:
            self._reseeded[seed] = OnlineWorkload(self.choice, seed)
        return self._reseeded[seed]

    def mean_output_tokens(self) -> float:
        """The workload's expected output tokens per request: the closed form of its length
        distribution (`sim.length_mean`), a trace's own mean, or (sessions) the mean of the
        1,000-request reference sample."""
        name = self.choice.preset_name
        if self.is_trace or self.sessions:
            return float(self.reference(0 if self.is_trace else 1000).output_tokens.mean())
        if name is not None:
            _, outputs, most = PRESETS[name]
            return expected_length(outputs, max_tokens=most)
        lengths = output_lengths(self.choice)
        if lengths is not None:
            return expected_length(lengths.dist, max_tokens=lengths.max_tokens)
        osl = self.choice.osl[0]
        return expected_length(ranged_length(osl, self.choice.random_range_ratio), max_tokens=osl)

    @staticmethod
    def expected_output_tokens(choice: WorkloadChoice) -> float:
        """`mean_output_tokens` of `choice` (the closed form; a trace's or the sessions'
        reference sample), whatever a run's seed and number of requests."""
        return OnlineWorkload(choice, REFERENCE_SEED).mean_output_tokens()

    def stationary_start(self) -> bool:
        """Whether saturation samples start from the stationary running set: not for sessions
        or requests that share content (a turn depends on the turns before it)."""
        return not self.sessions and not self.backlog(0 if self.is_trace else 1).has_content

    @staticmethod
    def _waiting(base: Requests) -> Requests:
        """`base` with every open arrival at t = 0: a timed trace's recorded times would cap the
        saturation run at the trace's own rate. Turns that follow an earlier one (NaN) still
        follow it."""
        arrivals = base.arrival_s
        if not np.nanmax(arrivals, initial=0.0) > 0:
            return base
        return replace(base, arrival_s=np.where(np.isnan(arrivals), arrivals, 0.0))

    def saturation_sample(self, n: int, cap: int) -> Requests:
        """`cap` requests of the stationary running set (see the module docstring), then the
        n-request backlog. Sessions: SESSION_USERS_PER_CAP x cap users running sessions back to
        back with no think time (`cap_base.users_end` closes their window). A backlog of whole
        sessions changes its mix as it drains (first turns first, long sessions last), so it has
        no steady state; users who start a new session as one ends keep the mix stationary.
        Other requests that share content: the backlog alone."""
        if self.sessions:
            users = math.ceil(SESSION_USERS_PER_CAP * cap)
            return self._session_sample(n, None, users, think=False)
        base = self._waiting(self.backlog(n))
        if not self.stationary_start():
            return base
        rng = np.random.default_rng(self.seed + SEED_SEED_OFFSET)
        weights = base.output_tokens.astype(np.float64)
        pick = rng.choice(len(base), size=cap, p=weights / weights.sum())
        outputs = base.output_tokens[pick]
        done = np.floor(rng.random(cap) * outputs).astype(np.int64)
        return Requests(
            input_tokens=np.concatenate([base.input_tokens[pick] + done, base.input_tokens]),
            output_tokens=np.concatenate([outputs - done, base.output_tokens]),
            max_output_tokens=np.concatenate(
                [base.max_output_tokens[pick] - done, base.max_output_tokens]
            ),
            arrival_s=np.concatenate([np.zeros(cap), base.arrival_s]),
        )

    def _unit_arrivals(self, n: int) -> FloatArray:
        if n not in self._gaps:
            rng = np.random.default_rng(self.seed + ARRIVAL_SEED_OFFSET)
            self._gaps[n] = np.cumsum(rng.exponential(1.0, size=n))
        return self._gaps[n]

    def offered_rps(self) -> float | None:
        """The offered request rate: --rate, or a timed trace's requests over its span."""
        if self.kind is LoadKind.RATE:
            return self.choice.rate_per_s
        if self.kind is LoadKind.TRACE:
            return self._trace_rps()
        return None

    def _trace_rps(self) -> float | None:
        """A trace's own request rate, (n - 1) intervals over its span; None when untimed."""
        arrivals = self.backlog(0).arrival_s
        span = float(arrivals.max() - arrivals.min())
        return (len(arrivals) - 1) / span if span > 0 else None

    def at_rate(self, n: int, rate_rps: float) -> Requests:
        """n requests arriving at `rate_rps` (a trace: its timestamps scaled to that rate)."""
        if rate_rps <= 0:
            raise InputError(f"rate: must be > 0, got {rate_rps}")
        if self.sessions:
            return self._session_sample(n, rate_rps, None)
        base = self.backlog(n)
        if self.is_trace:
            # its own rate, not the load: an untimed trace under --rate is a RATE load
            offered = self._trace_rps()
            if offered is None:  # untimed trace: Poisson arrivals over its rows
                arrivals = self._unit_arrivals(len(base)) / rate_rps
            else:
                arrivals = (base.arrival_s - base.arrival_s.min()) * offered / rate_rps
        else:  # len(base), not n: a sample of 0 holds one request, as a backlog of 0 does
            arrivals = self._unit_arrivals(len(base)) / rate_rps
        return replace(base, arrival_s=np.asarray(arrivals, dtype=np.float64))

    def with_clients(self, n: int, clients: int) -> Requests:
        """n requests sent by `clients` closed-loop users, each sending its next a think time
        (--think-time, default 0; a session trace: its rows') after its last one ends, as
        `sweep`'s users do (`workloads.plan_workloads`)."""
        if clients < 1:
            raise InputError(f"clients: must be >= 1, got {clients}")
        if self.sessions:
            return self._session_sample(n, None, clients)
        base = self.backlog(n)
        size = len(base)
        arrivals = np.zeros(size)
        arrivals[clients:] = np.nan
        think = 0.0 if self._keeps_think else self.choice.think_time_s or 0.0
        return replace(
            base,
            arrival_s=arrivals,
            client=np.arange(size, dtype=np.int64) % clients,
            closed_loop=True,
            think_time_s=think,
            think_s=base.think_s if self._keeps_think else np.full(size, think),
        )
