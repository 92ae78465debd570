"""The sizing spec `capcliff check` reads (TOML).

A spec holds one or more `[[scenario]]` tables: a deployment (model, GPUs, layout, engine and its
settings), a `[scenario.workload]` and the `[scenario.expect]` assertions. Loading validates the
shape with pydantic (`extra="forbid"`: an unknown key names the nearest valid one), then the
references (catalog ids, config paths, trace files, relative to the spec's folder). Every problem
is one line `path: field: message`, all of them at once.
"""

from __future__ import annotations

import difflib
import unicodedata
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationInfo,
    field_validator,
    model_validator,
)

from capcliff.analysis.deployment_settings import DeploymentSettings, check_gpu_count
from capcliff.analysis.disagg.pools import parse_disagg
from capcliff.analysis.serve_command import named_files
from capcliff.analysis.setting_refusals import refuse_disagg_only
from capcliff.catalog.catalogs import catalog_id_of_repo, get_hardware, get_model, model_catalog
from capcliff.catalog.layout import parse_layout
from capcliff.catalog.specs import MAX_USD_PER_GPU_HOUR, MIN_USD_PER_GPU_HOUR
from capcliff.check.spec_errors import field_line, validation_lines
from capcliff.errors import CatalogError, InputError
from capcliff.file_fields import refuse_bool_number
from capcliff.files import jsonl_lines, parse_json, parse_toml, read_text
from capcliff.sim.traffic.length_spec import histogram_file, histogram_spec, parse_output_lengths
from capcliff.sim.traffic.sessions import SESSION_PRESETS, WORKLOAD_PRESETS
from capcliff.sim.traffic.workload import Arrival, parse_trace
from capcliff.sim.traffic.workload_rules import (
    check_arrival,
    check_shape_numbers,
    check_workload_numbers,
    implied_arrival,
)
from capcliff.units import MAX_SLO_TPOT_S, MAX_SLO_TTFT_S, slo_seconds_problem

DEFAULT_SPEC = Path("capcliff.toml")
DEFAULT_NUM_REQUESTS = 1000
# code points XML 1.0 forbids besides the control characters (its `Char` production)
XML_NONCHARACTERS = frozenset("\ufffe\uffff")
DEFAULT_TOLERANCE = 0.05  # a baseline figure may worsen by 5 % before the check fails


class _Spec(BaseModel):
    # NaN and inf are refused in every number (`tpot_p99_max_s = inf` passed every check)
    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)

    @field_validator("*", mode="before")
    @classmethod
    def _no_bool_numbers(cls, value: Any, info: ValidationInfo) -> Any:
        return refuse_bool_number(cls, value, info)


def _parsed(parse: Callable[[str], object], text: str) -> str:
    """`text` if `parse` accepts it; else a ValueError carrying the parser's message."""
    try:
        parse(text)
    except InputError as exc:
        raise ValueError(str(exc).split(": ", 1)[-1]) from None
    return text


# Assertions about `capcliff plan`'s aggregated search and fleet: a `disagg` scenario has neither.
AGGREGATED_ONLY = (
    "recommended_layout", "sustained_rps_min", "replicas_max", "usd_per_million_tokens_max",
)  # fmt: skip


class Expectations(_Spec):
    """`[scenario.expect]`: the assertions; each is checked only when given."""

    fits: bool | None = None
    kv_headroom_min: float | None = Field(default=None, ge=0, lt=1)  # fraction of KV capacity
    no_preemption_at: int | None = Field(default=None, ge=1)  # running requests
    cliff_concurrency_min: int | None = Field(default=None, ge=1)  # running requests
    ttft_p99_max_s: float | None = Field(default=None, gt=0)
    tpot_p99_max_s: float | None = Field(default=None, gt=0)
    output_throughput_min_tok_s: float | None = Field(default=None, gt=0)
    prefix_hit_rate_min: float | None = Field(default=None, ge=0, le=1)  # token-weighted, in HBM
    recommended_layout: str | None = None
    max_model_len_fits: int | None = Field(default=None, ge=1)  # tokens
    sustained_rps_min: float | None = Field(default=None, gt=0)  # online: req/s within the SLO
    replicas_max: int | None = Field(default=None, ge=1)  # online: replicas for rate / clients
    # online: $/M output tokens; past $1M per million tokens ($1 a token) no limit can fail
    usd_per_million_tokens_max: float | None = Field(default=None, gt=0, le=1e6)

    @field_validator("ttft_p99_max_s", "tpot_p99_max_s")
    @classmethod
    def _seconds(cls, value: float | None, info: ValidationInfo) -> float | None:
        most = MAX_SLO_TTFT_S if info.field_name == "ttft_p99_max_s" else MAX_SLO_TPOT_S
        problem = None if value is None else slo_seconds_problem(value, most_s=most)
        if problem is not None:
            raise ValueError(problem)
        return value

    @field_validator("recommended_layout")
    @classmethod
    def _layout_name(cls, value: str | None) -> str | None:
        return None if value is None else parse_layout(_parsed(parse_layout, value)).name


class CheckWorkload(_Spec):
    """`[scenario.workload]`: fixed lengths (isl + osl), a preset or a trace; the arrivals."""

    # The numbers' domains are `sim.workload.check_workload_numbers`, as for the CLI's flags.
    isl: int | None = None  # input tokens per request
    # output tokens per request, or a distribution: lognormal:MEAN:P99[:MAX] (sim.length_spec)
    osl: int | str | None = None
    preset: str | None = None  # reasoning, chat, chat-short, multiturn-chat, agentic
    trace: str | None = None  # a JSONL file, relative to the spec file
    arrival: Arrival | None = None  # batch (default), clients, poisson
    rate: float | None = None  # requests/s (poisson)
    clients: int | None = None  # closed-loop users (default: concurrency)
    num_requests: int | None = None  # default 1000; a trace has its own
    concurrency: int | None = Field(default=None, ge=1)  # the cap on running requests
    # lengths uniform on [R x L, L] (SGLang's bench_serving rule); (0, 1]
    random_range_ratio: float | None = None
    think_time: float | None = None  # s; sessions: mean between turns; clients, traces: fixed
    turns: float | None = None  # session presets: mean turns per session
    context: int | None = None  # session presets: each session's own starting context, tokens

    @property
    def output_cut(self) -> tuple[int, ...]:
        """The output length, or a distribution's max_tokens, as a one-length tuple (() if
        none); a bad distribution is an InputError naming osl."""
        if self.osl is None:
            return ()
        if isinstance(self.osl, str):
            return (parse_output_lengths(self.osl).max_tokens,)
        return (self.osl,)

    @field_validator("osl", mode="before")
    @classmethod
    def _lengths(cls, value: object) -> object:
        """An integer or a distribution's text: anything else is one message, not one per
        member of the union."""
        if (
            value is None
            or isinstance(value, str)
            or (isinstance(value, int) and not isinstance(value, bool))
        ):
            return value
        raise ValueError(
            f'must be an integer number of tokens or "lognormal:MEAN:P99[:MAX]", got {value!r}'
        )

    @field_validator("preset")
    @classmethod
    def _known_preset(cls, value: str | None) -> str | None:
        if value is not None and value not in WORKLOAD_PRESETS:
            raise ValueError(f"unknown preset {value!r}; known: {', '.join(WORKLOAD_PRESETS)}")
        return value

    @model_validator(mode="after")
    def _one_source(self) -> CheckWorkload:
        try:
            check_workload_numbers(
                num_requests=self.num_requests, isl=self.isl, osl=self.output_cut,
                rate=self.rate, clients=self.clients,
            )  # fmt: skip
            check_shape_numbers(
                range_ratio=self.random_range_ratio, think_time=self.think_time,
                turns=self.turns, context=self.context,
            )  # fmt: skip
        except InputError as exc:
            raise ValueError(str(exc)) from None
        if self.preset not in SESSION_PRESETS:
            for name, value in (("turns", self.turns), ("context", self.context)):
                if value is not None:
                    raise ValueError(f"{name}: only a session preset (multiturn-chat, agentic)")
        lengths = self.isl is not None or self.osl is not None
        shapes_sessions = self.preset in SESSION_PRESETS  # its isl/osl are per turn
        sources = [s for s, on in (("isl/osl", lengths and not shapes_sessions),
                                   ("preset", self.preset is not None),
                                   ("trace", self.trace is not None)) if on]  # fmt: skip
        if len(sources) != 1:
            raise ValueError("give isl and osl, or preset, or trace (exactly one)")
        if sources == ["isl/osl"] and (self.isl is None or self.osl is None):
            raise ValueError(
                f"{'osl' if self.isl is not None else 'isl'}: needed with "
                f"{'isl' if self.isl is not None else 'osl'}"
            )
        # a trace replays its own arrival times, or is replayed by `clients` users (then
        # `arrival = "clients"` only says so)
        clients = self.arrival is None or self.arrival.value == "clients"
        if self.trace is not None and (self.rate is not None or not clients):
            raise ValueError("arrival: a trace replays its own arrival times (or clients)")
        if self.trace is not None and self.num_requests is not None:
            raise ValueError("num_requests: a trace has as many requests as lines")
        given = None if self.arrival is None else self.arrival.value
        arrival = implied_arrival(given, rate=self.rate, clients=self.clients)
        try:  # clients default to the concurrency here
            check_arrival(
                arrival, rate=self.rate, clients=self.clients,
                clients_optional=self.concurrency is not None,
            )  # fmt: skip
        except InputError as exc:
            raise ValueError(str(exc)) from None
        return self

    @property
    def request_count(self) -> int | None:
        """Requests to generate (None for a trace: its line count)."""
        if self.trace is not None:
            return None
        return DEFAULT_NUM_REQUESTS if self.num_requests is None else self.num_requests


class Scenario(DeploymentSettings):
    """One `[[scenario]]`: a deployment, its workload and what must hold.

    The engine and memory keys (engine, weight_dtype, kv_cache_dtype, max_model_len,
    kv_cache_memory, max_num_seqs, calibration, preemption, routing ...) are `DeploymentSettings`,
    the same settings `memory`, `sweep` and `plan` take as flags.
    """

    name: str = Field(min_length=1)
    model: str  # catalog id, or a config.json path / model folder relative to the spec
    gpu: str  # hardware catalog id
    gpus: int | None = Field(default=None, ge=1)  # default: the layout's
    layout: str = "auto"  # "auto" (what `capcliff plan` recommends) or e.g. "dp4-tp2"
    headroom: float = Field(default=0.2, ge=0, lt=1)  # online fleet sizing: spare capacity
    # default: the hardware file's
    usd_per_gpu_hour: float | None = Field(
        default=None, ge=MIN_USD_PER_GPU_HOUR, le=MAX_USD_PER_GPU_HOUR
    )
    disagg: str | None = None  # a disaggregated deployment, e.g. "1p:tp8,3d:dp8-ep8"
    seed: int = Field(default=0, ge=0)  # the workload's random seed
    # the engine command line the deployment runs (`vllm serve MODEL ...`): it sets the model,
    # layout and settings; a key that says otherwise is an error (analysis/serve_command/)
    serve_command: str | None = None
    workload: CheckWorkload
    expect: Expectations = Field(default_factory=Expectations)

    @model_validator(mode="before")
    @classmethod
    def _from_serve_command(cls, data: Any, info: ValidationInfo) -> Any:
        if not isinstance(data, dict) or not isinstance(data.get("serve_command"), str):
            return data
        from capcliff.analysis.serve_command import read_into

        base_dir = (info.context or {}).get("base_dir")  # the spec's folder (`parse_spec`)
        try:
            return read_into(data, set(DeploymentSettings.model_fields), base_dir=base_dir)
        except InputError as exc:
            raise ValueError(str(exc)) from None

    @field_validator("name")
    @classmethod
    def _printable_name(cls, value: str) -> str:
        # JUnit XML cannot hold NUL or most control characters (the report was not XML), and a
        # newline broke the text table's one line per scenario
        bad = next((c for c in value if unicodedata.category(c) == "Cc"), None)
        if bad is not None:
            raise ValueError(f"must be printable text; got the control character U+{ord(bad):04X}")
        # U+FFFE and U+FFFF are no XML characters either (XML 1.0 `Char`): the JUnit report
        # written for such a name was not well-formed, and a CI job could not read it
        bad = next((c for c in value if c in XML_NONCHARACTERS), None)
        if bad is not None:
            raise ValueError(f"must be printable text; got the noncharacter U+{ord(bad):04X}")
        if not value.strip() or all(unicodedata.category(c) == "Cf" for c in value.strip()):
            # a name of format characters only (a zero-width space) prints as nothing
            raise ValueError("is blank; give the scenario a name")
        if value != value.strip():  # "s" and "s " printed alike and were two baseline keys
            raise ValueError(f"{value!r:.60} has spaces at an end; give the name without them")
        return value

    @field_validator("layout")
    @classmethod
    def _layout(cls, value: str) -> str:
        return value if value == "auto" else parse_layout(_parsed(parse_layout, value)).name

    @field_validator("disagg")
    @classmethod
    def _disagg(cls, value: str | None) -> str | None:
        return None if value is None else parse_disagg(_parsed(parse_disagg, value)).name

    @model_validator(mode="after")
    def _gpus_and_counts(self) -> Scenario:
        if self.disagg is not None and self.layout != "auto":
            raise ValueError("layout: give layout or disagg, not both")
        if self.disagg is not None:
            for key in AGGREGATED_ONLY:
                if getattr(self.expect, key) is not None:
                    raise ValueError(
                        f"expect.{key}: not with disagg (it judges `capcliff plan`'s aggregated "
                        "layouts); drop it or give a layout"
                    )
        try:
            refuse_disagg_only(self, disagg=self.disagg is not None)
        except InputError as exc:
            raise ValueError(str(exc)) from None
        self._refuse_fleet_keys_of_a_batch()
        named = self.disagg or (None if self.layout == "auto" else self.layout)
        if named is None and self.gpus is None:
            raise ValueError("gpus: needed when layout is auto")
        if named is not None and self.gpus is not None and self.gpus != self._named_gpus():
            kind = "layout" if self.disagg is None else "disagg"
            raise ValueError(f"gpus: {self.gpus}, but {kind} {named} uses {self._named_gpus()}")
        requests = self.workload.request_count
        if requests is not None:
            for problem in running_problems(self, requests):
                raise ValueError(problem)
        return self

    def _refuse_fleet_keys_of_a_batch(self) -> None:
        """`headroom` and `expect.replicas_max` size a fleet for the workload's rate or clients
        (as `capcliff plan --headroom` needs --rate or --clients); a batch has neither: the
        headroom changed nothing and replicas_max held at one replica whatever it said."""
        w = self.workload
        given = None if w.arrival is None else w.arrival.value
        if w.trace is not None or implied_arrival(given, rate=w.rate, clients=w.clients) != "batch":
            return
        keys = [k for k in ("headroom",) if k in self.model_fields_set]
        keys += ["expect.replicas_max"] if self.expect.replicas_max is not None else []
        for key in keys:
            raise ValueError(
                f"{key}: sizes a fleet for the workload's rate or clients, and a batch has "
                "neither; give workload.rate or workload.clients, or drop it"
            )

    def _named_gpus(self) -> int:
        """GPUs of the named disaggregated deployment, else of the named layout."""
        return parse_disagg(self.disagg).gpus if self.disagg else parse_layout(self.layout).gpus

    @property
    def gpu_count(self) -> int:
        """GPUs the scenario deploys on."""
        return self.gpus if self.gpus is not None else self._named_gpus()


def running_problems(scenario: Scenario, requests: int) -> list[str]:
    """A concurrency the workload cannot reach: it has fewer requests than that in all."""
    asked = (
        ("workload.concurrency", scenario.workload.concurrency),
        ("expect.no_preemption_at", scenario.expect.no_preemption_at),
        ("expect.cliff_concurrency_min", scenario.expect.cliff_concurrency_min),
    )
    return [
        f"{name}: {value} running requests need at least as many requests; the workload has "
        f"{requests}"
        for name, value in asked
        if value is not None and value > requests
    ]


class CheckSpec(_Spec):
    """A whole spec file."""

    scenario: list[Scenario] = Field(min_length=1)
    baseline_tolerance: float = Field(default=DEFAULT_TOLERANCE, gt=0, lt=1)  # relative

    @model_validator(mode="after")
    def _unique_names(self) -> CheckSpec:
        seen: set[str] = set()
        for i, scenario in enumerate(self.scenario):
            if scenario.name in seen:
                raise ValueError(f"scenario[{i}].name: duplicate {scenario.name!r}")
            seen.add(scenario.name)
        return self


def model_reference(text: str, base_dir: Path) -> str:
    """A catalog id as written; a config path resolved against the spec's folder (a name that
    is a folder only in the current directory too: it was read from there, whatever the spec's
    folder held)."""
    if text in model_catalog() or Path(text).is_absolute():
        return text
    candidate = base_dir / text
    if not candidate.exists() and not Path(text).exists() and catalog_id_of_repo(text):
        return text  # an HF repo id of a model card (`meta-llama/Llama-3.1-8B`)
    if Path(text).suffix == ".json" or "/" in text or candidate.exists() or Path(text).exists():
        return str(candidate)
    return text


@dataclass(frozen=True)
class SpecFile:
    """A validated spec, where it was read from, and the trace lines it names (by scenario)."""

    path: Path
    spec: CheckSpec
    traces: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    histograms: tuple[Path, ...] = ()  # the `osl = "hist:FILE"` files it read

    @property
    def base_dir(self) -> Path:
        """The folder relative paths in the spec start from."""
        return self.path.parent

    def model_ref(self, scenario: Scenario) -> str:
        """What `catalog.get_model` should load for `scenario`."""
        return model_reference(scenario.model, self.base_dir)

    def input_paths(self) -> list[Path]:
        """Every file the spec makes a run read: itself, traces, model configs, calibrations."""
        paths = [self.path]
        for s in self.spec.scenario:
            ref = Path(self.model_ref(s))
            if ref.exists():
                paths.append(ref / "config.json" if ref.is_dir() else ref)
            for name in (s.workload.trace, s.calibration):
                if name is not None:
                    paths.append(self.base_dir / name)
            if s.serve_command is not None:  # the engine's own files: `--config cfg.yaml`
                paths += named_files(s.serve_command, (self.base_dir, Path.cwd()))
        return paths + list(self.histograms)


def _reference_problems(scenario: Scenario, base_dir: Path) -> list[str]:
    """Unknown ids and unreadable model configs, as `field: message` lines."""
    problems = []
    try:
        hardware = get_hardware(scenario.gpu)
        check_gpu_count(scenario.gpu_count, gpus_per_node=hardware.gpus_per_node)
    except InputError as exc:
        problems.append(str(exc))
    try:
        get_model(model_reference(scenario.model, base_dir))
    except CatalogError as exc:
        problems += [f"model: {line}" for line in str(exc).splitlines()]
    except InputError as exc:
        problems.append(str(exc))
    return problems


def _trace(scenario: Scenario, base_dir: Path) -> tuple[tuple[str, ...], list[str]]:
    """The trace's lines and any problem with it (unreadable, malformed, too short)."""
    assert scenario.workload.trace is not None
    try:
        text = read_text(base_dir / scenario.workload.trace, field="workload.trace")
        lines = jsonl_lines(text)
        rows = parse_trace(lines)
    except InputError as exc:
        message = str(exc)
        return (), [message if message.startswith("workload.") else f"workload.trace: {message}"]
    return lines, running_problems(scenario, len(rows))


def _spec_problems(spec: CheckSpec, base_dir: Path) -> tuple[dict[str, tuple[str, ...]], list[str]]:
    traces: dict[str, tuple[str, ...]] = {}
    lines: list[str] = []
    for i, scenario in enumerate(spec.scenario):
        problems = _reference_problems(scenario, base_dir)
        if scenario.workload.trace is not None:
            traces[scenario.name], more = _trace(scenario, base_dir)
            problems += more
        lines += [field_line(f"scenario[{i}]", p) for p in problems]
    return traces, lines


def _toml(text: str, path: Path) -> dict[str, Any]:
    """The spec's tables: TOML, or the same tables as a JSON object in a `*.json` file (read as
    TOML, a generated JSON spec failed as "Invalid statement"); _Spec refuses NaN and inf."""
    if path.suffix.lower() != ".json":
        if text.lstrip("\ufeff \t\r\n").startswith("{"):  # no TOML document starts with `{`
            raise CatalogError(
                f"{path}: (toml): holds JSON, not a spec: a spec is TOML, or its tables as one "
                'JSON object ({"scenario": [...]}) in a *.json file; a bench tool\'s results are '
                "`capcliff calibrate`'s input"
            )
        return parse_toml(text, source=str(path), error=CatalogError, finite=False)
    data = parse_json(text, source=str(path), error=CatalogError, finite=False, unique_keys=True)
    if not isinstance(data, dict):
        raise CatalogError(
            f"{path}: (json): a spec is an object of the TOML spec's tables "
            f'({{"scenario": [...]}}), got {type(data).__name__}'
        )
    return data


def parse_spec(text: str, *, path: Path) -> SpecFile:
    """Validate a spec's TOML (or JSON) `text` read from `path` (relative paths start at its
    folder).

    Raises CatalogError listing every problem, one `path: field: message` line each.
    """
    data = _toml(text, path)
    _refuse_no_scenario(data, path)
    histograms, problems = _read_histograms(data, path.parent)
    # a histogram that could not be read is said once, not again as "was not read"
    said = tuple(p.split(":", 1)[0] + ":" for p in problems)
    where = {"base_dir": path.parent}  # a serve_command's model folder is read from there
    lines = validation_lines(CheckSpec, data, context=where)
    problems += [p for p in lines if not said or not p.startswith(said)]
    if problems:
        raise CatalogError("\n".join(f"{path}: {p}" for p in problems))
    spec = CheckSpec.model_validate(data, context=where)
    traces, problems = _spec_problems(spec, path.parent)
    if problems:
        raise CatalogError("\n".join(f"{path}: {p}" for p in problems))
    return SpecFile(path=path, spec=spec, traces=traces, histograms=tuple(histograms))


def _refuse_no_scenario(data: dict[str, Any], path: Path) -> None:
    """One line for a file with no `scenario` table and no key that misspells it (a sweep's or
    a report's JSON given as the spec): each of its keys was a line of its own."""
    if "scenario" in data or difflib.get_close_matches(
        "scenario", map(str.lower, data), cutoff=0.8
    ):
        return
    keys = ", ".join(list(data)[:4]) + (" ..." if len(data) > 4 else "")
    raise CatalogError(
        f"{path}: scenario: missing; a spec lists [[scenario]] tables (docs/check.md), this "
        f"file holds {keys or 'nothing'}"
    )


def _read_histograms(data: dict[str, Any], base_dir: Path) -> tuple[list[Path], list[str]]:
    """Each scenario's `osl = "hist:FILE"` (relative to the spec's folder) read into its
    inline form in `data`, in place: (the files read, problem lines)."""
    read: list[Path] = []
    problems: list[str] = []
    scenarios = data.get("scenario")
    for i, scenario in enumerate(scenarios if isinstance(scenarios, list) else []):
        workload = scenario.get("workload") if isinstance(scenario, dict) else None
        osl = workload.get("osl") if isinstance(workload, dict) else None
        name = histogram_file(osl) if isinstance(osl, str) else None
        if name is None or not isinstance(workload, dict):
            continue
        try:
            file = base_dir / name
            workload["osl"] = histogram_spec(read_text(file, field="osl"), source=name)
            read.append(file)
        except InputError as exc:
            problems.append(f"scenario[{i}].workload.{exc}")
    return read, problems


def load_spec(path: Path = DEFAULT_SPEC) -> SpecFile:
    """Read and validate the spec at `path` (see `parse_spec`)."""
    return parse_spec(read_text(path, field="spec"), path=path)
