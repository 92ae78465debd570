"""Serving-engine start-up logs -> every memory figure and configuration value they print.

Pure: it takes the log's text, not a file. Four formats, whose lines (each confirmed in the
engine's source) live one module per engine family: `capcliff.calibrate.vllm_log` (V1 and V0),
`sglang_log`, `trtllm_log`. This module tells the formats apart, runs their line rules, reads
engine-config key=value pairs, and settles one figure per name.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from enum import StrEnum
from typing import Literal

from capcliff.calibrate import sglang_log, trtllm_log, vllm_log
from capcliff.errors import InputError

ConfigValue = str | int | float | bool


class LogFormat(StrEnum):
    """Which engine, and for vLLM which engine generation, wrote a start-up log."""

    VLLM_V1 = "vllm-v1"
    VLLM_V0 = "vllm-v0"
    SGLANG = "sglang"
    TRTLLM = "trtllm"


@dataclass(frozen=True)
class LoggedFigure:
    """One number as the engine logged it: canonical name, value, the engine's unit word, source."""

    name: str
    value: float
    unit: str
    line_no: int
    text: str


@dataclass(frozen=True)
class StartupLog:
    """What a start-up log says.

    `figures` holds the value the engine acts on: for KV capacity figures (`_KV_NAMES`) the
    minimum over ranks (vLLM and SGLang size every rank's cache to the smallest) or, for
    TensorRT-LLM, the last allocation (its first one is a provisional cache for profiling); for
    every other figure the first line that printed it. `readings` keeps every number read, every
    rank's and every repeat, in line order.
    """

    format: LogFormat
    figures: dict[str, LoggedFigure]
    config: dict[str, ConfigValue]
    failure: str | None
    readings: tuple[LoggedFigure, ...]


# Named groups are figure names; `c_<key>` groups are config values; an `args` group holds
# key=value pairs (engine config, ServerArgs, a non-default-args dict) read through _ARG_*.
_RULES: Mapping[LogFormat, tuple[re.Pattern[str], ...]] = {
    LogFormat.VLLM_V1: vllm_log.LINES,
    LogFormat.VLLM_V0: vllm_log.LINES,
    LogFormat.SGLANG: sglang_log.LINES,
    LogFormat.TRTLLM: trtllm_log.LINES,
}
# Phrases only one format prints; the format with the most distinct hits wins (ties: enum order).
_SIGNATURES: Mapping[LogFormat, tuple[re.Pattern[str], ...]] = {
    LogFormat.VLLM_V1: vllm_log.V1_SIGNATURES,
    LogFormat.VLLM_V0: vllm_log.V0_SIGNATURES,
    LogFormat.SGLANG: sglang_log.SIGNATURES,
    LogFormat.TRTLLM: trtllm_log.SIGNATURES,
}
# The engines' refusals to start, tried in this order.
_FAILURES = vllm_log.FAILURES + sglang_log.FAILURES

# Lines a server prints once per start (the API server's version and its non-default args, the
# V0 engine's config line, SGLang's ServerArgs): two of one kind mean the log holds two starts,
# whose figures must not be mixed.
_STARTS = (
    "vLLM API server version",
    "non-default args:",
    "Initializing an LLM engine (v",
    "server_args=ServerArgs(",
)

_FAILURE_TAIL = re.compile(r"\s+Try increasing[^.]*\.")
# Terminal colour codes (ECMA-48 CSI sequences): vLLM's coloured formatter (VLLM_LOGGING_COLOR,
# vllm/logging_utils/formatter.py) and `script`/tmux captures wrap words and numbers in them.
_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
# A memory figure printed in a smaller binary unit than the GiB its name holds: the divisor.
_TO_GIB = {"MiB": 2**10, "MB": 2**10, "bytes": 2**30}

_KV_NAMES = frozenset(
    {"kv_cache_gib", "kv_tokens", "gpu_blocks", "max_concurrency", "k_size_gib", "v_size_gib"}
)
_ARG_PAIR = re.compile(r"(?<![\w.])'?(\w+)'?\s*[=:]\s*('[^']*'|\"[^\"]*\"|[^,\s)}]+)")
_ARG_FIGURES = {
    "gpu_memory_utilization": "gpu_memory_utilization",
    "mem_fraction_static": "mem_fraction_static",
    "free_gpu_memory_fraction": "free_gpu_memory_fraction",
    "max_total_num_tokens": "kv_tokens",
}
_ARG_SAME = (  # config keys capcliff names as vLLM does
    "model dtype kv_cache_dtype quantization enforce_eager block_size max_num_seqs swap_space "
    "max_num_batched_tokens chunked_prefill_size max_prefill_tokens enable_prefix_caching "
    "tensor_parallel_size pipeline_parallel_size data_parallel_size enable_expert_parallel "
    "attention_backend disable_cuda_graph max_model_len enable_lora"
)
_ARG_ALIASES = (  # SGLang's and TensorRT-LLM's own key = capcliff's config key
    "model_path=model max_seq_len=max_model_len context_len=max_model_len "
    "context_length=max_model_len tp_size=tensor_parallel_size pp_size=pipeline_parallel_size "
    "dp_size=data_parallel_size ep_size=expert_parallel_size page_size=block_size "
    "max_running_requests=max_num_seqs max_num_requests=max_num_seqs "
    "max_num_tokens=max_num_batched_tokens"
)
_ARG_CONFIG = {k: k for k in _ARG_SAME.split()} | {
    k: v for k, v in (pair.split("=") for pair in _ARG_ALIASES.split())
}
_UNIT_AFTER = re.compile(r"\s*(GiB|GB|MiB|MB|bytes|tokens|seconds|secs?|s|x)\b")
_DEFAULT_UNITS = (  # name suffix -> unit word, for a number its line gives no unit for
    ("_gib", "GiB"),
    ("_s", "seconds"),
    ("_bytes", "bytes"),
    ("_blocks", "blocks"),
    ("_block", "tokens"),
    ("tokens", "tokens"),
    ("_len", "tokens"),
    ("concurrency", "x"),
)
_RANK = re.compile(
    r"Worker_\w+|VllmWorker(?:Process)? (?:rank|pid)=\d+|\[RANK \d+\]"
    r"|(?<=[ \[])(?:[DP]P\d+ )*TP\d+(?: EP\d+)?(?=\])|\[gpu=\d+\]"  # SGLang 0.2: [gpu=0]
)


@dataclass
class _Scan:
    readings: list[LoggedFigure] = field(default_factory=list)
    config: dict[str, ConfigValue] = field(default_factory=dict)
    rank_by_line: dict[int, str] = field(default_factory=dict)

    def add(self, figure: LoggedFigure) -> None:
        if not any(r.name == figure.name and r.line_no == figure.line_no for r in self.readings):
            self.readings.append(figure)


def detect_format(text: str) -> LogFormat:
    """The engine that wrote `text`, from phrases only that engine logs."""
    scores = {fmt: sum(1 for p in pats if p.search(text)) for fmt, pats in _SIGNATURES.items()}
    _refuse_two_engines(scores)
    best = max(scores, key=scores.__getitem__)
    if scores[best] == 0:
        printed = next((what for phrase, what in _PRINTED if phrase in text), None)
        if printed is not None:
            raise InputError(
                f"startup log: no start-up line found: this is {printed}, which capcliff does not "
                f"read; {_RESULTS_READ}, or an engine's start-up log"
            )
        raise InputError(
            "startup log: no vLLM, SGLang or TensorRT-LLM start-up line found; expected e.g. "
            "'Available KV cache memory:' (vLLM V1), '# GPU blocks:' (vLLM V0), "
            "'KV Cache is allocated.' (SGLang) or '[MemUsageChange] Allocated ... for max tokens'"
            f" (TensorRT-LLM); {_RESULTS_READ}"
        )
    return best


_FAMILIES = {
    "vLLM": (LogFormat.VLLM_V1, LogFormat.VLLM_V0),
    "SGLang": (LogFormat.SGLANG,),
    "TensorRT-LLM": (LogFormat.TRTLLM,),
}


def _refuse_two_engines(scores: Mapping[LogFormat, int]) -> None:
    """An InputError when two engine families each print two or more of their own phrases: two
    engines' logs joined (a vLLM log followed by an SGLang one was read as whichever printed
    more of its phrases, the other's figures dropped unsaid)."""
    found = [name for name, fmts in _FAMILIES.items() if max(scores[f] for f in fmts) >= 2]
    if len(found) > 1:
        raise InputError(
            f"logfile: holds start-up lines of {' and '.join(found)}: two engines' logs joined; "
            "cut it to one engine's start"
        )


# A bench tool's printed summary, saved as a log (`... | tee bench.txt`): its headings, in the
# tools' source (vllm/benchmarks/serve.py and SGLang bench_serving.py: " Serving Benchmark Result
# "; trtllm-bench reporting.py: "PERFORMANCE OVERVIEW").
_PRINTED = (
    ("Serving Benchmark Result", "`vllm bench serve` or SGLang `bench_serving`'s printed summary"),
    (
        "PERFORMANCE OVERVIEW",
        "trtllm-bench's printed report (nor is its --report_json read)",
    ),
)
_RESULTS_READ = (
    "benchmark results are read from a .json, .jsonl or .csv file (`vllm bench serve "
    "--save-result`, SGLang `bench_serving --output-file`, a CSV of concurrency, input_len, "
    "output_len and output_throughput_tok_s or mean_tpot_ms)"
)


def parse_startup_log(text: str) -> StartupLog:
    """Every memory figure, configuration value and start-up failure in an engine's log."""
    text = _ANSI.sub("", text)
    log_format = detect_format(text)
    _refuse_two_starts(text)
    scan = _Scan()
    for line_no, line in enumerate(text.splitlines(), start=1):
        for rule in _RULES[log_format]:
            if match := rule.search(line):
                _take(scan, match, line, line_no)
    failure = _take_failure(scan, text)
    if log_format is LogFormat.SGLANG:
        _derive_sglang_weights(scan)
    readings = sorted(scan.readings, key=lambda r: r.line_no)
    if failure is None:
        _refuse_negative_kv(readings)
    if readings:
        scan.config["ranks_seen"] = _ranks_seen(readings, scan.rank_by_line)
    kv_pick: Literal["min", "last"] = "last" if log_format is LogFormat.TRTLLM else "min"
    return StartupLog(
        format=log_format,
        figures=_settle(readings, kv_pick=kv_pick),
        config=scan.config,
        failure=failure,
        readings=tuple(readings),
    )


def _derive_sglang_weights(scan: _Scan) -> None:
    """SGLang's weights figure where its log prints none: before 0.4 "Load weight end." gave the
    memory free after loading, not the "mem usage=" later releases add, which is the same rank's
    free memory before loading less after (model_runner.py: `weight_load_mem_usage =
    before_avail_memory - after_avail_memory`). A log of 0.2 or 0.3 read as stating no weights
    ("nothing to fit")."""
    if any(r.name == "weights_gib" for r in scan.readings):
        return
    after = next((r for r in scan.readings if r.name == "avail_after_load_gib"), None)
    if after is None:
        return
    rank = scan.rank_by_line.get(after.line_no, "")
    before = next(
        (
            r
            for r in scan.readings
            if r.name == "avail_before_load_gib"
            and r.line_no < after.line_no
            and scan.rank_by_line.get(r.line_no, "") == rank
        ),
        None,
    )
    if before is not None:
        weights = round(before.value - after.value, 6)
        scan.add(replace(after, name="weights_gib", value=weights))


def _refuse_two_starts(text: str) -> None:
    """An InputError when a start-of-server line appears twice: the log holds two starts."""
    lines = text.splitlines()
    for phrase in _STARTS:
        # a line right after its own copy is one line printed by two logging handlers (vLLM's
        # own and the root logger's, when an app configures both), not a second start
        at = [
            n
            for n, line in enumerate(lines, start=1)
            if phrase in line and (n == 1 or lines[n - 2] != line)
        ]
        if len(at) > 1:
            raise InputError(
                f"logfile: holds {len(at)} server starts ('{phrase}' at lines "
                f"{', '.join(map(str, at[:5]))}{', ...' if len(at) > 5 else ''}); cut it to one "
                "start (the last begins near line "
                f"{at[-1]})"
            )


def _refuse_negative_kv(readings: Sequence[LoggedFigure]) -> None:
    """An InputError for a negative KV capacity in a log that records no failed start: vLLM
    refuses to start when the memory left for the cache is not positive
    (vllm/v1/core/kv_cache_utils.py, check_enough_kv_cache_memory: "No available memory for the
    cache blocks"), SGLang likewise ("Not enough memory", model_runner.py)."""
    for r in readings:
        if r.name in _KV_NAMES and r.value < 0:
            raise InputError(
                f"logfile: line {r.line_no}: {r.name}: {r.value:g} is negative, yet the log "
                "records no failed start (an engine refuses to start without room for a KV "
                "cache); valid: a figure >= 0, or the log of the failed start with its error"
            )


def _take(scan: _Scan, match: re.Match[str], line: str, line_no: int) -> None:
    for group, raw in match.groupdict().items():
        if raw is None:
            continue
        if group == "args":
            _take_args(scan, raw, line, line_no)
        elif group.startswith("c_"):
            _set_config(scan.config, group.removeprefix("c_"), raw)
        else:
            unit = _UNIT_AFTER.match(line, match.end(group))
            scan.add(_figure(group, raw, unit.group(1) if unit else None, line, line_no))
    scan.rank_by_line[line_no] = _rank_label(line)


def _take_args(scan: _Scan, args: str, line: str, line_no: int) -> None:
    for key, raw in _ARG_PAIR.findall(args):
        if key in _ARG_FIGURES and _config_value(raw) is not None:
            scan.add(_figure(_ARG_FIGURES[key], raw, None, line, line_no))
        elif key in _ARG_CONFIG:
            _set_config(scan.config, _ARG_CONFIG[key], raw)


def _take_failure(scan: _Scan, text: str) -> str | None:
    for pattern in _FAILURES:
        if match := pattern.search(text):
            line_no = text.count("\n", 0, match.start()) + 1
            tail = _FAILURE_TAIL.match(text, match.end())
            words = " ".join(text[match.start() : tail.end() if tail else match.end()].split())
            for name, raw in match.groupdict().items():
                if raw is not None:
                    scan.add(_figure(name, raw, None, words, line_no))
            return words
    return None


def _figure(name: str, raw: str, unit: str | None, text: str, line_no: int) -> LoggedFigure:
    try:
        value = float(raw.strip("'\"").rstrip(".").replace(",", ""))
    except ValueError:  # a line cut or garbled where a figure stands ('46611true')
        raise InputError(
            f"logfile: line {line_no}: {name}: cannot read {raw.strip()[:40]!r} as a number"
        ) from None
    if name.endswith("_gib") and unit in _TO_GIB:  # '87849 MiB' is 85.79 GiB, not 87849 GiB
        value, unit = value / _TO_GIB[unit], "GiB"
    return LoggedFigure(
        name=name, value=value, unit=unit or _default_unit(name), line_no=line_no, text=text.strip()
    )


def _default_unit(name: str) -> str:
    return next((unit for suffix, unit in _DEFAULT_UNITS if name.endswith(suffix)), "")


def _set_config(config: dict[str, ConfigValue], key: str, raw: str) -> None:
    """Record a config value; a later line wins (engines print the effective value last)."""
    value = _config_value(raw)
    if value is not None:
        config[key] = value


def _config_value(raw: str) -> ConfigValue | None:
    text = raw.strip().strip("'\"").removeprefix("torch.")
    if text in {"", "None", "null"}:
        return None
    if text in {"True", "False"}:
        return text == "True"
    number = text.rstrip(".").replace(",", "")
    for kind in (int, float):
        try:
            return kind(number)
        except ValueError:
            pass
    return text


def _rank_label(line: str) -> str:
    match = _RANK.search(line)
    return match.group(0) if match else ""


def _ranks_seen(readings: Sequence[LoggedFigure], rank_by_line: Mapping[int, str]) -> int:
    """Distinct ranks among the lines that report weights (every rank loads its shard)."""
    lines = {r.line_no for r in readings}
    weight_lines = {r.line_no for r in readings if r.name == "weights_gib"} or lines
    return max(1, len({rank_by_line.get(n, "") for n in weight_lines}))


def _settle(
    readings: Iterable[LoggedFigure], *, kv_pick: Literal["min", "last"]
) -> dict[str, LoggedFigure]:
    """One figure per name: KV capacity by `kv_pick` across ranks, anything else the first."""
    figures: dict[str, LoggedFigure] = {}
    for reading in readings:
        held = figures.get(reading.name)
        lower = held is not None and reading.value < held.value
        if held is None or (reading.name in _KV_NAMES and (kv_pick == "last" or lower)):
            figures[reading.name] = reading
    return figures
