"""Serving-engine start-up logs -> every memory figure and configuration value they print.

Pure: it takes the log's text, not a file. Four formats, each line confirmed in the engine's source:
- vLLM V1: vllm/v1/worker/gpu_worker.py, gpu_model_runner.py, vllm/v1/core/kv_cache_utils.py,
  vllm/v1/metrics/loggers.py (`num_gpu_blocks is:`), vllm/v1/engine/core.py (engine config).
- vLLM V0: vllm/worker/model_runner.py, vllm/worker/worker.py (three successive layouts of the
  memory profile), vllm/executor/executor_base.py (`# <device> blocks:`, max concurrency).
- SGLang: python/sglang/srt/model_executor/model_runner.py, mem_cache/memory_pool.py,
  managers/scheduler.py (`max_total_num_tokens=`), the `server_args=ServerArgs(...)` line.
- TensorRT-LLM: cpp kvCacheManager.cpp / trtGptModelInflightBatching.cpp and
  tensorrt_llm/_torch/pyexecutor/_util.py (memory profiling lines).

Old vLLM ("Loading model weights took 14.99 GB") and SGLang ("avail mem=6.09 GB") divide by 2**30
and print "GB": such figures are GiB here, and `LoggedFigure.unit` keeps the engine's word.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Literal

from capcliff.errors import InputError
from capcliff.units import GIB

ConfigValue = str | int | float | bool

# A logged number: sign, comma-grouped thousands ("702,800"), decimals; never a trailing dot.
_NUM = r"-?\d+(?:,\d{3})*(?:\.\d+)?"


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

    @property
    def value_bytes(self) -> float | None:
        """The figure in bytes where it is a memory size in GiB (`*_gib`), else None."""
        return self.value * GIB if self.name.endswith("_gib") else None


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


def _rules(*patterns: str) -> tuple[re.Pattern[str], ...]:
    return tuple(re.compile(p.replace("NUM", _NUM)) for p in patterns)


# Named groups are figure names; `c_<key>` groups are config values; an `args` group holds
# key=value pairs (engine config, ServerArgs, a non-default-args dict) read through _ARG_*.
_VLLM_PROFILE_PHRASES = {  # vllm/worker/worker.py: "results: a=1 b=2", the table, the sentences
    "Memory profiling takes": "profiling_s",
    "duration": "profiling_s",
    "total_gpu_memory": "total_memory_gib",
    "gpu_memory_utilization": "gpu_memory_utilization",
    "initial_memory_usage": "initial_memory_gib",
    "peak_torch_memory": "peak_torch_gib",
    "memory_usage_post_profile": "post_profile_memory_gib",
    "non_torch_memory": "non_torch_gib",
    "kv_cache_size": "kv_cache_gib",
    "available_kv_cache_memory": "kv_cache_gib",
    "the current vLLM instance can use": "requested_memory_gib",
    "model weights take": "weights_gib",
    "PyTorch activation peak memory": "activation_peak_gib",
    "the rest of the memory reserved for KV Cache is": "kv_cache_gib",
}
_VLLM = _rules(
    *(
        rf"{re.escape(k)}(?: takes)?\s*[=(]?\s*(?P<{v}>NUM)"
        for k, v in _VLLM_PROFILE_PHRASES.items()
    ),
    r"gpu_memory_utilization \(NUM\) = (?P<requested_memory_gib>NUM)",
    r"Loading model weights took (?P<weights_gib>NUM)",
    r"Model loading took (?P<weights_gib>NUM) \w+(?: memory)? and (?P<weights_load_s>NUM) sec",
    r"Available KV cache memory: (?P<kv_cache_gib>NUM)",
    r"GPU KV cache size: (?P<kv_tokens>NUM) tokens",
    r"Maximum concurrency for (?P<max_concurrency_len>NUM) tokens per request: "
    r"(?P<max_concurrency>NUM)x",
    r"\w+ blocks: (?P<gpu_blocks>NUM), # CPU blocks: (?P<cpu_blocks>NUM)",
    r"num_gpu_blocks is: (?P<gpu_blocks>NUM)",
    r"Graph capturing finished in (?P<cudagraph_capture_s>NUM) secs?, took (?P<cudagraph_gib>NUM)",
    r"Free memory on device \((?P<free_at_start_gib>NUM)/(?P<total_memory_gib>NUM) GiB\)",
    r"Desired GPU memory utilization is \((?P<gpu_memory_utilization>NUM), "
    r"(?P<requested_memory_gib>NUM) GiB\)",
    r"Actual usage is (?P<weights_gib>NUM) GiB for weight\b",
    r"Actual usage is (?P<consumed_gib>NUM) GiB for consumed memory",
    r"(?P<activation_peak_gib>NUM) GiB for peak activation",
    r"(?P<non_torch_gib>NUM) GiB for non-torch memory",
    r"(?P<cudagraph_gib>NUM) GiB for CUDAGraph memory",
    r"--kv-cache-memory=(?P<suggested_kv_cache_fit_bytes>\d+)`?(?: \([^)]*\))? to fit",
    r"--kv-cache-memory=(?P<suggested_kv_cache_full_bytes>\d+)`?(?: \([^)]*\))? to fully",
    r"Current kv cache memory in use is (?P<kv_cache_in_use_bytes>\d+) bytes",
    r"Current kv cache memory in use is (?P<kv_cache_in_use_gib>NUM) GiB",
    r"Total non KV cache memory: (?P<non_kv_cache_gib>NUM)",
    r"torch peak memory increase: (?P<activation_peak_gib>NUM)",
    r"non-torch forward increase memory: (?P<non_torch_gib>NUM)",
    r"; weights memory: (?P<weights_gib>NUM)",
    r"Initializing an? (?:V[01] )?LLM engine \(v(?P<c_engine_version>[^)]+)\) with config: "
    r"(?P<args>.*)",
    r"vLLM API server version (?P<c_engine_version>\S+)",
    r"non-default args: (?P<args>\{.*\})",
    r"Using max model len (?P<c_max_model_len>\d+)",
    r"Chunked prefill is enabled with (?P<args>max_num_batched_tokens=\d+)",
)
_SGLANG = _rules(
    r"Load weight begin\. avail mem=(?P<avail_before_load_gib>NUM)",
    r"Load weight end\..*?avail mem=(?P<avail_after_load_gib>NUM)",
    r"Load weight end\..*?mem usage=(?P<weights_gib>NUM)",
    r"Load weight end\..*?type=(?P<c_architecture>\w+)",
    r"Load weight end\..*?dtype=(?P<c_dtype>[\w.]+)",
    r"KV Cache is allocated\. #tokens: (?P<kv_tokens>NUM), K size: (?P<k_size_gib>NUM) GB, "
    r"V size: (?P<v_size_gib>NUM)",
    r"KV Cache is allocated\. #tokens: (?P<kv_tokens>NUM), KV size: (?P<kv_cache_gib>NUM)",
    r"Memory pool end\. avail mem=(?P<avail_after_pool_gib>NUM)",
    r"Capture cuda graph begin\..*?avail mem=(?P<avail_before_cudagraph_gib>NUM)",
    r"Capture cuda graph end\..*?mem usage=(?P<cudagraph_gib>NUM)",
    r"Capture cuda graph end\..*?avail mem=(?P<avail_after_cudagraph_gib>NUM)",
    r"Init torch distributed ends\. mem usage=(?P<distributed_init_gib>NUM)",
    r"server_args=ServerArgs\((?P<args>.*)\)",
    r"(?P<args>\bmax_total_num_tokens=\d+.*)",
)
_TRTLLM = _rules(
    r"Memory usage when calculating max tokens in paged kv cache: total: "
    r"(?P<total_memory_gib>NUM) GiB, available: (?P<avail_before_kv_gib>NUM) GiB",
    r"Number of blocks in KV cache primary pool: (?P<gpu_blocks>NUM)",
    r"Number of blocks in KV cache secondary pool: (?P<cpu_blocks>NUM)",
    r"Number of tokens per block: (?P<tokens_per_block>NUM)",
    r"tokens per block=(?P<tokens_per_block>NUM)",
    r"primary blocks=(?P<gpu_blocks>NUM), secondary blocks=(?P<cpu_blocks>NUM)",
    r"\[MemUsageChange\] Allocated (?P<kv_cache_gib>NUM) GiB for max tokens(?: in paged KV cache)?"
    r" \((?P<kv_tokens>NUM)\)",
    r"loading model weights \(inside torch\) in memory usage profiling: (?P<weights_gib>NUM)",
    r"loading model weights \(outside torch\) in memory usage profiling: (?P<non_torch_gib>NUM)",
    r"Peak memory during memory usage profiling \(torch \+ non-torch\): (?P<peak_memory_gib>NUM) "
    r"GiB, available KV cache memory when calculating max tokens: (?P<kv_budget_gib>NUM)",
    r"fraction is set (?P<free_gpu_memory_fraction>NUM)",
    r"device total memory (?P<total_memory_gib>NUM)",
    r"free_gpu_memory_fraction\s*[=:]\s*(?P<free_gpu_memory_fraction>NUM)",
    r"TensorRT-LLM version: (?P<c_engine_version>\S+)",
    r"(?P<args>\bmax_seq_len=\d+.*)",
)
_RULES: Mapping[LogFormat, tuple[re.Pattern[str], ...]] = {
    LogFormat.VLLM_V1: _VLLM,
    LogFormat.VLLM_V0: _VLLM,
    LogFormat.SGLANG: _SGLANG,
    LogFormat.TRTLLM: _TRTLLM,
}

# Phrases only one format prints; the format with the most distinct hits wins (ties: enum order).
_SIGNATURES: Mapping[LogFormat, tuple[re.Pattern[str], ...]] = {
    LogFormat.VLLM_V1: _rules(
        r"Initializing a V1 LLM engine",
        r"Available KV cache memory:",
        r"GPU KV cache size:",
        r"\bEngineCore",
        r"Desired GPU memory utilization is",
        r"To serve at least one request with the models?'s max seq len",
    ),
    LogFormat.VLLM_V0: _rules(
        r"Initializing an LLM engine|Initializing a V0 LLM engine",
        r"Loading model weights took",
        r"Memory profiling results",
        r"the current vLLM instance can use",
        r"\w+ blocks: \d+, # CPU blocks:",
        r"VllmWorkerProcess",
        r"is larger than the maximum number of tokens that can be stored in KV cache",
    ),
    LogFormat.SGLANG: _rules(
        r"server_args=ServerArgs\(",
        r"Load weight (?:begin|end)\.",
        r"KV Cache is allocated\. #tokens",
        r"max_total_num_tokens=",
        r"Memory pool end\.",
        r"Capture cuda graph (?:begin|end)\.",
    ),
    LogFormat.TRTLLM: _rules(
        r"\[TensorRT-LLM\]",
        r"\[TRT-LLM\]",
        r"for max tokens in paged KV cache",
        r"paged kv cache: total:",
        r"KV cache primary pool",
        r"Number of tokens per block",
    ),
}

# The engine's refusal to start. Spaces match any whitespace: the messages wrap.
_FAILURES = tuple(
    re.compile(p.replace("NUM", _NUM).replace(" ", r"\s+"))
    for p in (
        r"The model's max seq len \((?P<failed_max_model_len>NUM)\) is larger than the maximum "
        r"number of tokens that can be stored in KV cache \((?P<failed_kv_tokens>NUM)\)\.",
        r"To serve at least one request with the models?'s max seq len "
        r"\((?P<failed_max_model_len>NUM)\), \(?(?P<failed_kv_needed_gib>NUM) GiB KV cache is "
        r"needed, which is larger than the available KV cache memory "
        r"\((?P<failed_kv_available_gib>NUM) GiB\)\.(?: Based on the available memory, the "
        r"estimated maximum model length is (?P<estimated_max_model_len>NUM)\.)?",
        r"No available memory for the cache blocks\.",
        r"Not enough memory\. Please try to increase --mem-fraction-static\.",
    )
)
_FAILURE_TAIL = re.compile(r"\s+Try increasing[^.]*\.")

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
    "attention_backend disable_cuda_graph max_model_len"
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
    r"|(?<=[ \[])(?:[DP]P\d+ )*TP\d+(?: EP\d+)?(?=\])"
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
    best = max(scores, key=scores.__getitem__)
    if scores[best] == 0:
        raise InputError(
            "startup log: no vLLM, SGLang or TensorRT-LLM start-up line found; expected e.g. "
            "'Available KV cache memory:' (vLLM V1), '# GPU blocks:' (vLLM V0), "
            "'KV Cache is allocated.' (SGLang) or '[MemUsageChange] Allocated ... for max tokens'"
            " (TensorRT-LLM)"
        )
    return best


def parse_startup_log(text: str) -> StartupLog:
    """Every memory figure, configuration value and start-up failure in an engine's log."""
    log_format = detect_format(text)
    scan = _Scan()
    for line_no, line in enumerate(text.splitlines(), start=1):
        for rule in _RULES[log_format]:
            if match := rule.search(line):
                _take(scan, match, line, line_no)
    failure = _take_failure(scan, text)
    readings = sorted(scan.readings, key=lambda r: r.line_no)
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
    value = float(raw.strip("'\"").rstrip(".").replace(",", ""))
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
