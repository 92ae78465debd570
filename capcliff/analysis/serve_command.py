"""An engine launch command a user runs today, read into the deployment settings capcliff models.

`parse_serve_command` reads `vllm serve MODEL ...`, `python -m sglang.launch_server ...` and
`trtllm-serve MODEL ...` (with shell quoting, `\\`-newlines, `#` comments, `--flag=value` and
leading `VAR=value` assignments; a line break without its `\\` ends the command, and more after
it is refused) and the YAML file it names (vLLM's `--config`, trtllm-serve's
`--config/--extra_llm_api_options`, `engine_yaml`) into the model, the layout and the
`DeploymentSettings` keys those flags set; every flag it does not model is listed in
`ServeCommand.unmodelled`, never dropped in silence. What the engine's own parser refuses is
refused here too (a switch given a value, a `--speculative-config` that is not a JSON object or
has K < 1, an SGLang choice it does not offer, fewer `CUDA_VISIBLE_DEVICES` than the TP group).
`merged_settings` and `merged_target` combine it with what the user also gave as capcliff flags
or spec keys: a different value for the same setting is a one-line error.

Flag names are the engines' own:
- vLLM: `vllm/engine/arg_utils.py` (`EngineArgs`; `--kv-cache-memory-bytes` is
  `CacheConfig.kv_cache_memory_bytes`, per GPU; `--kv-offloading-size` GiB over the replica's
  TP ranks with `--kv-offloading-backend native`, vllm/config/cache.py; `--async-scheduling`
  and `--no-async-scheduling` are its overlap scheduler on and off). With
  `--enable-expert-parallel` the MoE layers span all `tp x dp` ranks
  (`FusedMoEParallelConfig.make`), which is capcliff's `ep = tp x dp`.
- SGLang: `python/sglang/srt/server_args.py` (`--tp` counts every rank of an attention-DP group;
  `--max-running-requests` is the group's total under `--enable-dp-attention`, per replica
  otherwise; each rank takes `max_running_requests // dp_size` (managers/tp_worker.py, issue
  sgl-project/sglang#10868 at 71f24ef) and newer versions assert it is > 0 ("max_running_request
  is zero"): fewer than one per rank is refused; `--enable-hierarchical-cache --hicache-size GB`
  per rank, `--hicache-write-policy write_through|write_back`; `--disable-radix-cache`;
  `--disable-overlap-schedule`, `--scheduler-recv-interval`).
- TensorRT-LLM: `trtllm-serve` (tensorrt_llm/commands/serve.py: `--tp_size`, `--pp_size`,
  `--ep_size`, `--max_batch_size`, `--max_num_tokens`, `--max_seq_len`,
  `--kv_cache_free_gpu_memory_fraction`); one server per replica, so no DP.
"""

from __future__ import annotations

import json
import math
import re
import shlex
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from capcliff.analysis.engine_yaml import scalar
from capcliff.catalog.layout import Layout, parse_layout
from capcliff.errors import InputError
from capcliff.files import is_file
from capcliff.units import (
    GB,
    GIB,
    INT_LITERAL,
    parse_human_int,
    parse_kv_dtype,
    parse_weight_dtype,
)

if TYPE_CHECKING:
    from capcliff.catalog.catalogs import Model

FIELD = "serve_command"
_ENV_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
_SPEC_V2 = {
    f"SGLANG_ENABLE_SPEC_V2={value}": on
    for on, values in ((True, ("1", "true", "True")), (False, ("0", "false", "False")))
    for value in values
}
# The engines' speculative method names (analysis/flags.py writes them) as capcliff's methods.
_SGLANG_METHODS = {"NEXTN": "mtp", "EAGLE": "eagle", "EAGLE3": "eagle", "NGRAM": "ngram"}
_VLLM_METHODS = {"mtp": "mtp", "deepseek_mtp": "mtp", "eagle": "eagle", "eagle3": "eagle",
                 "ngram": "ngram"}  # fmt: skip
# SGLang's --speculative-algorithm choices (python/sglang/srt/server_args.py); STANDALONE (a
# small draft model run as such) is one capcliff does not model.
_SGLANG_ALGORITHMS = frozenset({"EAGLE", "EAGLE3", "NEXTN", "STANDALONE", "NGRAM"})
# SGLang's --deepep-mode choices (server_args.py)
_DEEPEP_MODES = ("auto", "normal", "low_latency")

# Flags that do not change capacity or latency (networking, logging, naming, loading), skipped
# without a warning.
_INERT = frozenset(
    {
        "host", "port", "served-model-name", "trust-remote-code", "api-key", "disable-log-requests",
        "disable-log-stats", "uvicorn-log-level", "log-level", "download-dir", "tokenizer",
        "revision", "seed", "enable-chunked-prefill", "backend", "log_level", "trust_remote_code",
    }
)  # fmt: skip
_BOOLEAN = frozenset(
    {
        "enable-expert-parallel", "enable-prefix-caching", "no-enable-prefix-caching",
        "enforce-eager", "enable-dp-attention", "disable-radix-cache", "enable-hierarchical-cache",
        "disable-cuda-graph", "trust-remote-code", "disable-log-requests", "disable-log-stats",
        "enable-chunked-prefill", "no-enable-chunked-prefill", "disable-overlap-schedule",
        "async-scheduling", "no-async-scheduling",
    }
)  # fmt: skip


@dataclass(frozen=True)
class ServeCommand:
    """What an engine command line says about the deployment."""

    engine: str  # vllm, sglang or trtllm (a DeploymentSettings engine)
    model: str  # as the command names it: an HF repo id or a model directory
    layout: Layout
    settings: dict[str, Any] = field(default_factory=dict)  # DeploymentSettings keys
    unmodelled: tuple[str, ...] = ()  # flags (and env assignments) capcliff does not model

    def warning(self) -> str | None:
        """One line naming the flags capcliff does not model (None when every flag is)."""
        if not self.unmodelled:
            return None
        flags = ", ".join(self.unmodelled)
        return f"{FIELD}: flags capcliff does not model, left out of the sizing: {flags}"


def _words(text: str) -> list[str]:
    try:
        return shlex.split(_one_command(text))
    except ValueError as exc:
        raise InputError(f"{FIELD}: cannot read {text!r} as a shell command ({exc})") from None


def _one_command(text: str) -> str:
    """`text` as the one command a shell runs from it: a `\\` before a line break joins the
    lines, a `#` that starts a word outside quotes comments out the rest of its line, and a
    line break outside quotes ends the command. What follows that break must be blank or
    comment lines: the engines' recipes paste one command per block, and a line that goes on
    without its `\\` (vllm-project/recipes DeepSeek-V3.md's FP4 line before
    `--enable_expert_parallel`) is run by the shell as a command of its own, its flags never
    reaching the engine; that is refused, not read as one line."""
    out: list[str] = []
    quote, i = "", 0
    while i < len(text):
        char = text[i]
        if quote:
            if char == "\\" and quote == '"' and i + 1 < len(text):
                out.append(text[i : i + 2])
                i += 2
                continue
            quote = "" if char == quote else quote
        elif char in "'\"":
            quote = char
        elif char == "\\":
            joined = text[i + 1 : i + 2] == "\n" or text[i + 1 : i + 3] == "\r\n"
            # a `\\` before a line break joins the lines; before anything else it escapes it
            out.append(" " if joined else text[i : i + 2])
            i += (3 if text[i + 1] == "\r" else 2) if joined else 2
            continue
        elif char == "#" and (not out or out[-1][-1:].isspace()):
            i = text.find("\n", i)
            i = len(text) if i < 0 else i
            continue
        elif char == "\n":
            if not "".join(out).strip():  # blank or comment lines before the command
                out.clear()
                i += 1
                continue
            _refuse_second_command(text, i)
            break
        out.append(char)
        i += 1
    return "".join(out)


def _refuse_second_command(text: str, at: int) -> None:
    """A one-line error when a line after the break at `at` holds more than a comment."""
    for line in text[at + 1 :].splitlines():
        if line.strip() and not line.strip().startswith("#"):
            raise InputError(
                f"{FIELD}: the command goes on after a line break with no `\\` before it "
                f"({line.strip()[:40]!r}); a shell runs that line as a command of its own and "
                "the engine never sees it: end each line but the last with ` \\`"
            )


def _engine(words: list[str]) -> tuple[str, list[str]]:
    """The engine and the words after its program name."""
    if words[:2] == ["vllm", "serve"]:
        return "vllm", words[2:]
    if words and Path(words[0]).name == "trtllm-serve":
        rest = words[1:]
        return "trtllm", rest[1:] if rest[:1] == ["serve"] else rest
    if len(words) >= 3 and Path(words[0]).name.startswith("python") and words[1] == "-m":
        if words[2] == "sglang.launch_server":
            return "sglang", words[3:]
        if words[2] == "vllm.entrypoints.openai.api_server":
            return "vllm", words[3:]
    raise InputError(
        f"{FIELD}: cannot tell the engine from {' '.join(words[:3])!r}; give a `vllm serve "
        "MODEL ...`, `python -m sglang.launch_server --model-path MODEL ...` or `trtllm-serve "
        "MODEL ...` line"
    )


# vLLM's flags that take one value or more (argparse nargs="+"): `--served-model-name a b`
# answers to both names (vllm/config/model.py served_model_name: str | list[str]), and
# `--lora-modules name=path ...` (vllm/entrypoints/openai/cli_args.py); their words after the
# first were read as stray positional words.
_MANY_VALUES = {"vllm": frozenset({"served-model-name", "lora-modules"})}


def _options(
    words: list[str], many: frozenset[str] = frozenset()
) -> tuple[list[str], list[tuple[str, str | None]]]:
    """Positional words and (flag name without dashes, value or None for a switch); a flag of
    `many` takes every word up to the next flag (joined by spaces)."""
    positional: list[str] = []
    options: list[tuple[str, str | None]] = []
    i = 0
    while i < len(words):
        word = words[i]
        if not word.startswith("-") or word == "-":
            positional.append(word)
            i += 1
            continue
        name, eq, value = word.lstrip("-").partition("=")
        if not name or word.startswith("---"):  # `--`, `--=3`, `---tp`: argparse refuses them
            raise InputError(
                f"{FIELD}: {word!r:.40} is not a flag the engine reads; write --name or "
                "--name=value"
            )
        if eq and name.replace("_", "-") in _BOOLEAN:
            # argparse refuses a value after a switch ("ignored explicit argument")
            raise InputError(
                f"{FIELD}: --{name} is a switch and takes no value, got {word!r}; give --{name} "
                "alone (or leave it out)"
            )
        if eq:
            options.append((name, value))
        elif (
            name.replace("_", "-") in _BOOLEAN
            or i + 1 >= len(words)
            or words[i + 1].startswith("--")
        ):
            options.append((name, None))
        elif name.replace("_", "-") in many:
            end = next(
                (j for j in range(i + 1, len(words)) if words[j].startswith("-")), len(words)
            )
            options.append((name, " ".join(words[i + 1 : end])))
            i = end - 1
        else:
            options.append((name, words[i + 1]))
            i += 1
        i += 1
    return positional, options


def _integer(flag: str, value: str | None) -> int:
    return parse_human_int(value, field=f"{FIELD}: --{flag}")


def _plain_int(flag: str, value: str | None) -> int:
    """An integer flag of SGLang (argparse `type=int`, python/sglang/srt/server_args.py),
    trtllm-serve (click `type=int`, tensorrt_llm/commands/serve.py) or vLLM's parallel sizes:
    Python's int() of the word, so `8k` or `2.0` is refused there as here (vLLM's human-readable
    `--max-model-len 8k` is its own), then a whole number >= 1."""
    text = (value or "").strip()
    if not re.fullmatch(INT_LITERAL, text):
        try:
            text = str(int(text))  # digits of another script, as int() reads them
        except ValueError:
            raise InputError(
                f"{FIELD}: {_label(flag)} wants a whole number >= 1, got {value!r:.40} (the "
                "engine reads it with int())"
            ) from None
    return parse_human_int(text, field=f"{FIELD}: {_label(flag)}")


def _number(flag: str, value: str | None) -> float:
    try:
        return float(value or "")
    except ValueError:
        raise InputError(f"{FIELD}: {_label(flag)} wants a number, got {value!r}") from None


def _label(flag: str) -> str:
    """A flag as the user wrote it: `--name`, or a YAML key (`kv_cache_config.dtype`)."""
    return flag if "." in flag else f"--{flag}"


@dataclass
class _Reading:
    """The settings read so far, the parallel sizes and what is not modelled."""

    engine: str
    settings: dict[str, Any] = field(default_factory=dict)
    sizes: dict[str, int] = field(default_factory=dict)
    switches: set[str] = field(default_factory=set)
    unmodelled: list[str] = field(default_factory=list)
    model: str | None = None
    spec_v2: bool | None = None  # SGLANG_ENABLE_SPEC_V2 from the environment
    visible_gpus: int | None = None  # CUDA_VISIBLE_DEVICES: the GPUs the server sees
    vllm_v0: bool = False  # VLLM_USE_V1=0: vLLM's V0 engine (capcliff's vllm-v0)


def _kv_dtype(r: _Reading, flag: str, value: str | None) -> None:
    if (value or "auto") != "auto":  # auto: the model's dtype, capcliff's default
        r.settings["kv_cache_dtype"] = parse_kv_dtype(value or "", field=FIELD).value


# `--dtype` values at 2 bytes a weight (vLLM, SGLang): bf16 and fp16 size alike, so they are inert
_SIXTEEN_BIT = frozenset({"auto", "bfloat16", "bf16", "float16", "half", "fp16"})


def _dtype(r: _Reading, flag: str, value: str | None) -> None:
    """A 16-bit --dtype changes nothing capcliff sizes; float32 weights (4 bytes each) were
    sized as 16-bit ones unsaid."""
    if (value or "").strip().lower() not in _SIXTEEN_BIT:
        raise InputError(
            f"{FIELD}: --{flag} {value or '(no value)'}: capcliff sizes 16-bit weights (auto, "
            "bfloat16, float16) or a quantization; float32 serving is not modelled"
        )


def _quantization(r: _Reading, flag: str, value: str | None) -> None:
    try:
        r.settings["weight_dtype"] = parse_weight_dtype(value or "", field=FIELD).value
    except InputError:
        r.unmodelled.append(f"--{flag} {value}")


def _setting(key: str, read: Callable[[str, str | None], Any]) -> Callable[..., None]:
    def apply(r: _Reading, flag: str, value: str | None) -> None:
        r.settings[key] = read(flag, value)

    return apply


def _size(key: str, read: Callable[[str, str | None], int] = _plain_int) -> Callable[..., None]:
    def apply(r: _Reading, flag: str, value: str | None) -> None:
        r.sizes[key] = read(flag, value)

    return apply


def _switch(name: str) -> Callable[..., None]:
    def apply(r: _Reading, flag: str, value: str | None) -> None:
        r.switches.add(name)

    return apply


def _chunked_prefill(r: _Reading, flag: str, value: str | None) -> None:
    """SGLang's --chunked-prefill-size; -1 turns chunked prefill off (server_args.py), which
    capcliff does not model: named, not refused."""
    if (value or "").strip() == "-1":
        r.unmodelled.append(f"--{flag} -1 (chunked prefill off)")
        r.settings.pop("max_num_batched_tokens", None)
    else:
        r.settings["max_num_batched_tokens"] = _plain_int(flag, value)


def _model(r: _Reading, flag: str, value: str | None) -> None:
    r.model = value


def _text(flag: str, value: str | None) -> str:
    return value or ""


def _yaml_bool(flag: str, value: str | None) -> bool:
    """A boolean of trtllm-serve's YAML (written back as `true`/`false` by `_flat_options`)."""
    if value not in ("true", "false"):
        raise InputError(f"{FIELD}: {flag} wants true or false, got {value!r}")
    return value == "true"


def _block_reuse(r: _Reading, flag: str, value: str | None) -> None:
    """kv_cache_config.enable_block_reuse: false is prefix caching off; true is TensorRT-LLM's
    default (KvCacheConfig), which changes nothing."""
    if not _yaml_bool(flag, value):
        r.settings["prefix_caching"] = "off"


# trtllm-serve's --backend choices and alias (ChoiceWithAlias, tensorrt_llm/commands/serve.py)
_TRTLLM_BACKENDS = frozenset({"pytorch", "tensorrt", "trt", "_autodeploy"})


def _trtllm_backend(r: _Reading, flag: str, value: str | None) -> None:
    """--backend changes nothing capcliff sizes, but click refuses a value not among its
    choices, and so the server never starts."""
    if value not in _TRTLLM_BACKENDS:
        choices = ", ".join(sorted(_TRTLLM_BACKENDS))
        raise InputError(f"{FIELD}: --backend {value!r} is not one of trtllm-serve's {choices}")


def _attention_dp(r: _Reading, flag: str, value: str | None) -> None:
    """enable_attention_dp: each of the --tp_size ranks runs attention on its own requests
    (tensorrt_llm/mapping.py: attention TP 1, DP = tp_size) while the MoE layers span them."""
    if _yaml_bool(flag, value):
        r.switches.add("adp")
    else:
        r.switches.discard("adp")


_COMMON = {
    "max-num-batched-tokens": _setting("max_num_batched_tokens", _integer),
    "kv-cache-dtype": _kv_dtype,
    "dtype": _dtype,
    "quantization": _quantization,
    "q": _quantization,
    "model": _model,
}
_VLLM: dict[str, Callable[..., None]] = {
    **_COMMON,
    "tensor-parallel-size": _size("tp"), "tp": _size("tp"),
    "pipeline-parallel-size": _size("pp"), "pp": _size("pp"),
    "data-parallel-size": _size("dp"), "dp": _size("dp"),
    "enable-expert-parallel": _switch("ep"),
    "max-num-seqs": _setting("max_num_seqs", _integer),
    "max-model-len": _setting("max_model_len", _integer),
    "gpu-memory-utilization": _setting("gpu_memory_utilization", _number),
    "kv-cache-memory-bytes": _setting("kv_cache_memory", _integer),
    "kv-cache-memory": _setting("kv_cache_memory", _integer),
    "block-size": _setting("block_size", _integer),
    "enforce-eager": _setting("enforce_eager", lambda f, v: True),
    "enable-prefix-caching": _setting("prefix_caching", lambda f, v: "on"),
    "no-enable-prefix-caching": _setting("prefix_caching", lambda f, v: "off"),
    "swap-space": _setting("swap_space", lambda f, v: f"{_number(f, v):g}GiB"),
    "kv-offloading-size": _setting("offload_gib", _number),
    "kv-offloading-backend": _setting("offload_backend", _text),
    "all2all-backend": _setting("all2all_backend", _text),
    "speculative-config": _setting("spec_config", _text),
    # vLLM V1's AsyncScheduler is its overlap scheduler (perf/host_time.py)
    "async-scheduling": _setting("overlap_schedule", lambda f, v: True),
    "no-async-scheduling": _setting("overlap_schedule", lambda f, v: False),
}  # fmt: skip
_SGLANG: dict[str, Callable[..., None]] = {
    **_COMMON,
    "model-path": _model,
    "tp": _size("tp"), "tp-size": _size("tp"), "tensor-parallel-size": _size("tp"),
    "dp": _size("dp"), "dp-size": _size("dp"), "data-parallel-size": _size("dp"),
    "pp-size": _size("pp"), "pipeline-parallel-size": _size("pp"),
    "ep-size": _size("ep"), "ep": _size("ep"), "expert-parallel-size": _size("ep"),
    "enable-dp-attention": _switch("dpa"),
    "mem-fraction-static": _setting("mem_fraction_static", _number),
    "max-running-requests": _setting("max_running_requests", _plain_int),
    "context-length": _setting("max_model_len", _plain_int),
    "chunked-prefill-size": _chunked_prefill,
    "page-size": _setting("block_size", _plain_int),
    "disable-radix-cache": _setting("prefix_caching", lambda f, v: "off"),
    "disable-overlap-schedule": _setting("overlap_schedule", lambda f, v: False),
    "scheduler-recv-interval": _setting("scheduler_recv_interval", _plain_int),
    "disable-cuda-graph": _setting("enforce_eager", lambda f, v: True),
    "enable-hierarchical-cache": _switch("hicache"),
    "hicache-size": _setting("hicache_gb", _number),
    "hicache-write-policy": _setting("hicache_policy", _text),
    "moe-a2a-backend": _setting("a2a", _text),
    "moe-runner-backend": _setting("moe_backend", _text),
    "deepep-mode": _setting("deepep_mode", _text),
    "speculative-algorithm": _setting("spec_algorithm", _text),
    "speculative-num-steps": _setting("spec_steps", _plain_int),
    "speculative-num-draft-tokens": _setting("spec_draft_tokens", _plain_int),
    "speculative-eagle-topk": _setting("spec_topk", _plain_int),
    "speculative-draft-model-path": _setting("spec_draft", _text),
}  # fmt: skip
# trtllm-serve's click options (tensorrt_llm/commands/serve.py at 00209af: each long name with
# its short alias), and the keys of its --config/--extra_llm_api_options YAML (TorchLlmArgs,
# tensorrt_llm/llmapi/llm_args.py), flattened as `section.key`, that override them
_TRTLLM: dict[str, Callable[..., None]] = {
    "tp_size": _size("tp"), "tensor_parallel_size": _size("tp"),
    "pp_size": _size("pp"), "pipeline_parallel_size": _size("pp"),
    "ep_size": _size("ep"), "moe_expert_parallel_size": _size("ep"),
    "max_batch_size": _setting("max_num_seqs", _plain_int),
    "max_num_tokens": _setting("max_num_batched_tokens", _plain_int),
    "max_seq_len": _setting("max_model_len", _plain_int),
    "kv_cache_free_gpu_memory_fraction": _setting("free_gpu_memory_fraction", _number),
    "free_gpu_memory_fraction": _setting("free_gpu_memory_fraction", _number),
    "kv_cache_config.free_gpu_memory_fraction": _setting("free_gpu_memory_fraction", _number),
    "kv_cache_config.dtype": _kv_dtype,
    "kv_cache_config.enable_block_reuse": _block_reuse,
    "enable_attention_dp": _attention_dp,
    "backend": _trtllm_backend,
    "speculative_config.decoding_type": _setting("trt_spec_type", _text),
    "speculative_config.num_nextn_predict_layers": _setting("trt_spec_k", _text),
    "speculative_config.max_draft_len": _setting("trt_spec_k", _text),
    "speculative_config.speculative_model": _setting("trt_spec_draft", _text),
    "speculative_config.speculative_model_dir": _setting("trt_spec_draft", _text),
}  # fmt: skip
# sections of trtllm-serve's YAML that change nothing capcliff sizes (CUDA graph capture, the MoE
# kernel, streaming and logging)
_TRTLLM_INERT = frozenset(
    {
        "cuda_graph_config", "moe_config", "stream_interval", "print_iter_log",
        "num_postprocess_workers", "trust_remote_code", "enable_chunked_prefill", "backend",
        "enable_iter_perf_stats", "reasoning_parser", "return_perf_metrics",
    }
)  # fmt: skip
_READERS = {"vllm": _VLLM, "sglang": _SGLANG, "trtllm": _TRTLLM}


def _dotted_json(options: list[tuple[str, str | None]], flag: str) -> list[tuple[str, str | None]]:
    """`options` with vLLM's dotted keys of the JSON argument `flag` (`--speculative-config.method
    ngram --speculative-config.num_speculative_tokens 3`, the same as the JSON object; vllm
    utils/argparse_utils.py FlexibleArgumentParser) merged into one `flag` JSON value, after
    any JSON the flag was given whole. A value is read as JSON where it is one (3 is a number),
    else as text."""
    whole: dict[str, Any] = {}
    dotted: dict[str, Any] = {}
    rest: list[tuple[str, str | None]] = []
    for name, value in options:
        head, dot, key = name.partition(".")
        if head.replace("_", "-") != flag or (not dot and value is None):
            rest.append((name, value))
        elif not dot:
            try:
                parsed = json.loads(value or "")
            except ValueError:
                return options  # not JSON: the flag's own reader says so
            if not isinstance(parsed, dict):
                return options
            whole.update(parsed)
        else:
            *parents, leaf = key.split(".")
            where = dotted
            for part in parents:
                where = where.setdefault(part, {}) if isinstance(where.get(part, {}), dict) else {}
            try:
                where[leaf] = True if value is None else json.loads(value)
            except ValueError:
                where[leaf] = value
    if not dotted:
        return options
    return [*rest, (flag, json.dumps({**whole, **dotted}))]


# the flags that name an engine's YAML options file: vLLM's FlexibleArgumentParser `--config`;
# trtllm-serve's `--config`, alias `--extra_llm_api_options` (tensorrt_llm/commands/serve.py)
_CONFIG_FLAGS = {"vllm": ("config",), "trtllm": ("config", "extra_llm_api_options")}


def _with_config_file(
    engine: str, options: list[tuple[str, str | None]], base_dir: Path | None
) -> list[tuple[str, str | None]]:
    """`options` with the named YAML file's options in: vLLM inserts them before the command
    line's, which win (`_pull_args_from_config`, vllm/utils/argparse_utils.py, refuses a second
    `--config`); trtllm-serve's YAML overrides the flags (`update_llm_args_with_extra_dict`
    after `get_llm_args`, tensorrt_llm/commands/serve.py), its last `--config` counting."""
    names = _CONFIG_FLAGS.get(engine, ())
    at = [i for i, (name, _) in enumerate(options) if name in names]
    if not at:
        return options
    if engine == "vllm" and len(at) > 1:
        raise InputError(
            f'{FIELD}: --config is given {len(at)} times; vLLM reads one config file ("More '
            'than one config file specified!"): merge them into one'
        )
    flag, value = options[at[-1]]
    data = _config_mapping(flag, value, base_dir)
    rest = [option for i, option in enumerate(options) if i not in at]
    if engine == "vllm":
        return [*_flat_options(data, nested=False), *rest]
    return [*rest, *_flat_options(data, nested=True)]


def _config_mapping(flag: str, value: str | None, base_dir: Path | None) -> dict[Any, Any]:
    """The mapping of the YAML file `--flag value` names; a missing, unreadable or non-mapping
    file is a one-line error (the engine does not start without it)."""
    from capcliff.analysis.engine_yaml import read_mapping
    from capcliff.files import read_text

    if not value:
        raise InputError(f"{FIELD}: --{flag} names no file; give the YAML file's path")
    path = Path(value).expanduser()
    if base_dir is not None and not path.is_absolute() and is_file(base_dir / path):
        path = base_dir / path
    text = read_text(path, field=f"{FIELD}: --{flag}")
    try:
        return read_mapping(text)
    except InputError as exc:
        raise InputError(f"{FIELD}: --{flag} {value}: {exc}") from None


def _flat_options(data: Mapping[Any, Any], *, nested: bool) -> list[tuple[str, str | None]]:
    """A YAML mapping as (flag name, value) pairs: vLLM's `key: true` is the switch `--key`
    (false leaves it out) and a mapping is its JSON; trtllm-serve's nested sections are
    `section.key`, its booleans `true`/`false`."""
    out: list[tuple[str, str | None]] = []
    for key, value in data.items():
        name = str(key)
        if nested and isinstance(value, dict):
            out += [(f"{name}.{k}", v) for k, v in _flat_options(value, nested=True)]
        elif value is None or (value is False and not nested):
            continue
        elif isinstance(value, bool):
            out.append((name, ("true" if value else "false") if nested else None))
        elif isinstance(value, dict | list):
            out.append((name, json.dumps(value)))
        else:
            out.append((name, str(value)))
    return out


def _assignments(words: list[str]) -> list[str]:
    """The leading `VAR=value` words, taken off `words` (after an `env` that runs the same
    command: `env VAR=1 vllm serve ...` is `VAR=1 vllm serve ...`)."""
    if words and words[0] in ("env", "/usr/bin/env"):
        words.pop(0)
    env = []
    while words and _ENV_RE.match(words[0]):
        env.append(words.pop(0))
    return env


def parse_serve_command(text: str, *, base_dir: Path | None = None) -> ServeCommand:
    """The deployment an engine command line launches (see the module docstring). A YAML file
    the line names (`--config`, trtllm-serve's `--extra_llm_api_options`) is read from
    `base_dir` (a spec's folder) where it lies there, else from the current folder."""
    words = _words(text)
    env = _assignments(words)
    if not words:
        raise InputError(f"{FIELD}: empty; give the engine command line, e.g. 'vllm serve MODEL'")
    engine, rest = _engine(words)
    reading = _Reading(engine)
    _environment(reading, env)
    positional, options = _options(rest, _MANY_VALUES.get(engine, frozenset()))
    options = _with_config_file(engine, options, base_dir)
    if engine == "vllm":
        options = _dotted_json(options, "speculative-config")
    _read_options(reading, options)
    # SGLang's launch_server takes no positional argument: the model is --model-path
    extra = positional if reading.model is not None or engine == "sglang" else positional[1:]
    if extra:  # `--tensor-parallel-size 2 2`: the engines' argparse refuses the second 2
        raise InputError(
            f"{FIELD}: {extra[0]!r:.40} is neither the model nor a flag's value; the engine "
            "refuses it (unrecognized arguments)"
        )
    if reading.model is None and positional:
        reading.model = positional[0]
    if not reading.model:
        raise InputError(f"{FIELD}: the command names no model")
    layout = _layout(reading)
    _check_visible(reading, layout)
    _finish(reading, layout)
    return ServeCommand(
        engine=engine, model=reading.model, layout=layout, settings=reading.settings,
        unmodelled=tuple(reading.unmodelled),
    )  # fmt: skip


def _read_options(r: _Reading, options: list[tuple[str, str | None]]) -> None:
    """Each option through its engine's reader, in order (the last of a flag given twice wins,
    as with argparse and click); an option with no reader is named as not modelled."""
    readers = _READERS[r.engine]
    for name, value in options:
        key = name if r.engine == "trtllm" else name.replace("_", "-")
        if key in readers:
            readers[key](r, key, value)
        elif r.engine == "trtllm" and key.partition(".")[0] in _TRTLLM_INERT:
            continue
        elif r.engine == "trtllm" and "." in key:  # a key of its YAML's sections
            r.unmodelled.append(f"{key}: {value}")
        elif key not in _INERT:
            r.unmodelled.append(f"--{name}" if value is None else f"--{name} {value}")


def _environment(r: _Reading, assignments: list[str]) -> None:
    """VLLM_ALLOW_LONG_MAX_MODEL_LEN=1 allows a max_model_len past the model's context;
    SGLANG_ENABLE_SPEC_V2=1 runs SGLang's speculation under the overlap scheduler (`spec_overlap`,
    read only with a speculative algorithm); the GPUs a process sees change nothing modelled; any
    other assignment is not modelled."""
    for assignment in assignments:
        name, _, value = assignment.partition("=")
        if r.engine == "vllm" and name == "VLLM_USE_V1" and value.strip() in ("0", "1"):
            # vllm/envs.py (0.7 - 0.10): bool(int(os.getenv("VLLM_USE_V1", "1"))); 0 runs V0
            r.vllm_v0 = value.strip() == "0"
        elif name == "VLLM_ALLOW_LONG_MAX_MODEL_LEN":  # vllm/envs.py: "1" or "true", else off
            if value.strip().lower() in ("1", "true"):
                r.settings["allow_long_max_model_len"] = True
        elif r.engine == "sglang" and assignment in _SPEC_V2:
            r.spec_v2 = _SPEC_V2[assignment]
        elif name == "CUDA_VISIBLE_DEVICES":
            r.visible_gpus = len([d for d in value.split(",") if d.strip()])
        else:
            r.unmodelled.append(assignment)


def _check_visible(r: _Reading, layout: Layout) -> None:
    """A server that sees fewer GPUs than one TP group (which never spans nodes) does not
    start: CUDA_VISIBLE_DEVICES names the GPUs of the node it runs on."""
    if r.visible_gpus is not None and r.visible_gpus < layout.tp:
        raise InputError(
            f"{FIELD}: CUDA_VISIBLE_DEVICES names {r.visible_gpus} GPU(s) but the command's "
            f"TP is {layout.tp}; name at least {layout.tp} GPUs or lower the TP"
        )


def _layout(r: _Reading) -> Layout:
    tp, pp, dp = (r.sizes.get(k, 1) for k in ("tp", "pp", "dp"))
    if r.engine == "vllm":
        return Layout(dp=dp, tp=tp, pp=pp, ep=tp * dp if "ep" in r.switches else 1)
    ep = r.sizes.get("ep", 1)
    if ep > tp > 0 or (ep > 0 and tp > 0 and tp % ep):
        # trtllm: moe_tp_size x moe_ep_size must equal tp_size (tensorrt_llm/mapping.py);
        # SGLang: each rank's EP rank is tp_rank // (tp_size // ep_size)
        # (python/sglang/srt/entrypoints/engine.py), so EP divides the TP ranks
        raise InputError(
            f"{FIELD}: an EP size of {ep} does not divide the TP size {tp}: the engine splits "
            f"the {tp} TP ranks into EP groups; give an EP size that divides {tp}"
        )
    if r.engine == "trtllm" and "adp" in r.switches:
        return Layout(dp=tp, tp=1, pp=pp, ep=ep, attention_dp=True)
    if r.engine == "trtllm":
        return Layout(tp=tp, pp=pp, ep=ep)
    if "dpa" in r.switches and dp > 1:  # --tp counts every rank of the lockstep group
        if tp % dp:
            raise InputError(f"{FIELD}: --dp {dp} does not divide --tp {tp} (SGLang DP attention)")
        return Layout(dp=dp, tp=tp // dp, pp=pp, ep=ep, attention_dp=True)
    return Layout(dp=dp, tp=tp, pp=pp, ep=ep)


def _running_per_replica(running: int, layout: Layout) -> int:
    """SGLang's `--max-running-requests` per replica: the group's total under DP attention,
    `running // dp_size` each (SGLang's tp_worker, which asserts it is > 0), else per replica."""
    ranks = layout.lockstep_replicas
    if running < ranks:
        raise InputError(
            f"{FIELD}: --max-running-requests {running} is the total of {ranks} attention-DP "
            f"ranks, {running} // {ranks} = 0 each, and SGLang does not start; give at least "
            f"{ranks}"
        )
    return running // ranks


def _finish(r: _Reading, layout: Layout) -> None:
    """Engine-specific settings that need the layout: SGLang's request cap and HiCache, vLLM's
    offload backend and all-to-all, the engine itself."""
    s = r.settings
    s["engine"] = "vllm-v0" if r.vllm_v0 else r.engine
    running = s.pop("max_running_requests", None)
    if running is not None:
        s["max_num_seqs"] = _running_per_replica(running, layout)
    gib, backend = s.pop("offload_gib", None), s.pop("offload_backend", None)
    _refuse_v0_offload(r.vllm_v0 and (gib, backend) != (None, None), "VLLM_USE_V1=0")
    if gib is not None and backend in (None, "native"):
        s["offload"] = f"cpu:{gib:g}GiB"  # the total over the replica's ranks = per replica
    elif gib is not None:
        r.unmodelled.append(f"--kv-offloading-backend {backend}")
    size, policy = s.pop("hicache_gb", None), s.pop("hicache_policy", None)
    if "hicache" in r.switches and size is not None:
        ranks = layout.gpus_per_replica
        s["offload"] = f"cpu:{size * ranks * GB / GIB:g}GiB"  # per rank, GB
        if policy is not None:
            s["offload_policy"] = policy.replace("_", "-")
    elif "hicache" in r.switches:
        r.unmodelled.append("--enable-hierarchical-cache without --hicache-size")
    _all_to_all(r)
    _speculation(r)


def _all_to_all(r: _Reading) -> None:
    """SGLang's --moe-a2a-backend and --deepep-mode, vLLM's --all2all-backend, as capcliff's
    `all2all_backend`; a backend it does not model is named."""
    s = r.settings
    a2a, mode = s.pop("a2a", None), s.pop("deepep_mode", None)
    if mode is not None and mode not in _DEEPEP_MODES:
        raise InputError(
            f"{FIELD}: --deepep-mode {mode!r} is not one of SGLang's {', '.join(_DEEPEP_MODES)}"
        )
    if a2a == "deepep":
        modes = {None: "deepep", "auto": "deepep", "normal": "deepep_high_throughput",
                 "low_latency": "deepep_low_latency"}  # fmt: skip
        s["all2all_backend"] = modes.get(mode, "deepep")
    elif a2a not in (None, "none"):
        r.unmodelled.append(f"--moe-a2a-backend {a2a}")
    if s.get("all2all_backend") not in (None, "none", *_DEEPEP):
        r.unmodelled.append(f"--all2all-backend {s.pop('all2all_backend')}")


def _speculation(r: _Reading) -> None:
    """`speculative` (mtp:K, eagle:K[:DRAFT], ngram:K) from SGLang's `--speculative-*` flags or
    vLLM's `--speculative-config` JSON, and SGLang's overlap setting; a tree of drafts (top-k
    above 1) or a method capcliff does not model is named as not modelled."""
    s = r.settings
    keys = ("spec_algorithm", "spec_steps", "spec_draft_tokens", "spec_topk", "spec_draft")
    algorithm, steps, drafts, topk, draft = (s.pop(k, None) for k in keys)
    config = s.pop("spec_config", None)
    trt = tuple(s.pop(k, None) for k in ("trt_spec_type", "trt_spec_k", "trt_spec_draft"))
    spec: str | None = None
    if algorithm is not None:
        spec = _sglang_speculation(r, str(algorithm), steps, drafts, topk, draft)
    elif config is not None:
        spec = _vllm_speculation(r, str(config))
    elif trt[0] is not None:
        spec = _trtllm_speculation(r, *trt)
    if spec is None:
        return
    s["speculative"] = spec
    if r.engine == "sglang" and r.spec_v2 is not None:
        s["spec_overlap"] = r.spec_v2


def _sglang_speculation(
    r: _Reading, algorithm: str, steps: int | None, drafts: int | None, topk: int | None,
    draft: str | None,
) -> str | None:  # fmt: skip
    if algorithm.upper() not in _SGLANG_ALGORITHMS:
        known = ", ".join(sorted(_SGLANG_ALGORITHMS))
        raise InputError(
            f"{FIELD}: --speculative-algorithm {algorithm!r} is not one of SGLang's {known}"
        )
    method = _SGLANG_METHODS.get(algorithm.upper())
    if method == "ngram" and drafts is not None:
        return f"ngram:{max(1, drafts - 1)}"
    tree = topk is not None and topk > 1
    if method is None or steps is None or tree:
        why = "a tree of drafts (--speculative-eagle-topk above 1)" if tree else (
            "method or --speculative-num-steps not read"
        )  # fmt: skip
        r.unmodelled.append(f"--speculative-algorithm {algorithm} ({why})")
        return None
    if method == "eagle" and draft:
        return f"eagle:{steps}:{draft}"
    # EAGLE without a draft checkpoint runs the model's own MTP layers, as NEXTN does
    return f"{'mtp' if method == 'eagle' else method}:{steps}"


def _vllm_speculation(r: _Reading, config: str) -> str | None:
    """vLLM reads --speculative-config as a JSON object into `SpeculativeConfig` (pydantic, lax:
    3, 3.0 and "3" are K = 3), which wants num_speculative_tokens > 0."""
    try:
        data = json.loads(config)
    except ValueError:
        data = None
    if not isinstance(data, dict):
        raise InputError(
            f"{FIELD}: --speculative-config {config!r:.60} is not a JSON object; give e.g. "
            '\'{"method": "ngram", "num_speculative_tokens": 3}\''
        )
    method = _VLLM_METHODS.get(str(data.get("method")))
    k, model = _speculative_tokens(data.get("num_speculative_tokens")), data.get("model")
    if method is not None and k is not None:
        return f"{method}:{k}" + (f":{model}" if method == "eagle" and model else "")
    r.unmodelled.append(f"--speculative-config {config}")
    return None


# trtllm-serve's speculative_config decoding types (tensorrt_llm/llmapi/llm_args.py
# DecodingBaseConfig subclasses) as capcliff's methods; flags.py writes them back
_TRTLLM_METHODS = {"MTP": "mtp", "Eagle": "eagle", "Eagle3": "eagle", "NGram": "ngram"}


def _trtllm_speculation(r: _Reading, kind: str, k: str | None, draft: str | None) -> str | None:
    """speculative_config of trtllm-serve's YAML: MTP counts num_nextn_predict_layers, EAGLE and
    n-gram max_draft_len; both must be whole numbers >= 1."""
    method = _TRTLLM_METHODS.get(kind)
    what = "num_nextn_predict_layers" if kind == "MTP" else "max_draft_len"
    count = _speculative_tokens(None if k is None else scalar(k), f"speculative_config.{what}")
    if method is None or count is None:
        r.unmodelled.append(f"speculative_config: decoding_type {kind} (method or length not read)")
        return None
    return f"{method}:{count}" + (f":{draft}" if method == "eagle" and draft else "")


def _speculative_tokens(
    value: object, field: str = "--speculative-config num_speculative_tokens"
) -> int | None:
    """num_speculative_tokens as vLLM's lax pydantic int reads it (None: not given); a value
    that is no whole number above 0 is a one-line error."""
    if value is None:
        return None
    number: float | None = None
    numeric = isinstance(value, int | float) and not isinstance(value, bool)
    if numeric or (isinstance(value, str) and re.fullmatch(INT_LITERAL, value.strip())):
        number = float(value)  # type: ignore[arg-type]  # a number or a whole-number string
    if number is None or not (1 <= number < math.inf and number == int(number)):
        raise InputError(f"{FIELD}: {field} wants a whole number >= 1, got {value!r:.40}")
    return int(number)


_DEEPEP = ("deepep", "deepep_high_throughput", "deepep_low_latency")


def _same(key: str, given: Any, read: Any) -> bool:
    if key == "engine":  # vllm-v0 is the vLLM command's older engine
        return bool(given == read or (given, read) == ("vllm-v0", "vllm"))
    if key in ("kv_cache_memory", "swap_space", "offload"):
        return str(given).replace(" ", "").lower() == str(read).replace(" ", "").lower() or (
            isinstance(read, int) and _bytes_equal(given, read)
        )
    if isinstance(read, float) and isinstance(given, int | float):
        return abs(float(given) - read) < 1e-9
    return bool(given == read)


def _bytes_equal(given: Any, read: int) -> bool:
    from capcliff.units import parse_bytes

    try:
        return parse_bytes(str(given), field=FIELD) == read
    except InputError:
        return False


def _flag(key: str) -> str:
    return "--" + key.replace("_", "-")


def merged_settings(command: ServeCommand, given: Mapping[str, Any]) -> dict[str, Any]:
    """`given` (DeploymentSettings keys; None: not given) with the command's settings filled in.
    A setting given with another value than the command's is a one-line error."""
    merged = dict(given)
    for key, value in command.settings.items():
        mine = given.get(key)
        if mine is None:
            merged[key] = value
        elif not _same(key, mine, value):
            raise InputError(
                f"{FIELD}: {_flag(key)} {mine} conflicts with the command's {value}; "
                "drop one of them"
            )
    engine = merged.get("engine")
    if command.engine == "vllm" and "offload" in command.settings:
        _refuse_v0_offload(str(getattr(engine, "value", engine)) == "vllm-v0", "--engine vllm-v0")
    return merged


def _refuse_v0_offload(v0: bool, how: str) -> None:
    """vLLM's offloading flags are V1's OffloadingConnector (vllm/config/cache.py
    `kv_offloading_size`, vllm-project/vllm PR #24498, vLLM 0.11, after V0's removal): V0's
    parser refuses them."""
    if v0:
        raise InputError(
            f"{FIELD}: --kv-offloading-size/--kv-offloading-backend are vLLM V1's (0.11 and "
            f"later); {how} runs V0, which has no KV offloading flag: drop one of them"
        )


def merged_target(
    command: ServeCommand, *, model: str | None, layout: str | None, base_dir: Path | None = None
) -> tuple[str, str]:
    """(model, layout name): the command's, or the given ones where they agree with it. The
    model the command names is found in the catalog by its HF repo id (or used as a path). A
    vLLM line's DP ranks of a MoE model are attention DP (`Layout.in_lockstep`)."""
    given = model is not None
    model = model if model is not None else catalog_model(command.model, base_dir=base_dir)
    named = _catalogued(model)
    # a path relative to a spec's folder is checked where the spec is read
    if (
        given
        and named is not None
        and named.hf_repo.lower() != command.model.lower()
        and not Path(command.model).exists()
    ):
        raise InputError(
            f"{FIELD}: model {model} ({named.hf_repo or 'no HF repo'}) conflicts with the "
            f"command's {command.model}"
        )
    ours = command.layout
    if command.engine == "vllm" and named is not None and named.arch.moe is not None:
        # vLLM runs a MoE model's DP ranks in lockstep with the MoE layers over all dp x tp
        # ranks, TP-sharded without --enable-expert-parallel (docs.vllm.ai,
        # serving/data_parallel_deployment)
        ours = ours.in_lockstep()
    read = parse_layout(layout).name if layout not in (None, "all") else None
    if read is not None and read != ours.name:
        raise InputError(f"{FIELD}: --layout {read} conflicts with the command's {ours.name}")
    return model, ours.name


def _catalogued(model: str) -> Model | None:
    from capcliff.catalog.catalogs import get_model

    try:
        return get_model(model)
    except InputError:
        return None


def named_files(text: str, folders: Iterable[Path]) -> list[Path]:
    """The files a command line names (`--config cfg.yaml`, `--extra_llm_api_options=x.yml`),
    found under any of `folders`: the engine reads them, so no output of a run may replace one."""
    try:
        words = _words(text)
    except InputError:
        return []
    names = [part for word in words for part in (word, word.partition("=")[2]) if part]
    return [
        folder / name
        for name in names
        for folder in folders
        if not name.startswith("-") and is_file(folder / name)
    ]


def catalog_model(name: str, *, base_dir: Path | None = None) -> str:
    """The catalog id whose HF repo is `name` (case-insensitive), else `name` itself when it is
    a catalog id or a path (here, or in `base_dir`: a spec's folder, which reads it from
    there); else a one-line error."""
    from capcliff.catalog.catalogs import model_catalog

    catalog = model_catalog()
    by_repo = {card.hf_repo.lower(): mid for mid, card in catalog.items() if card.hf_repo}
    if name.lower() in by_repo:
        return by_repo[name.lower()]
    if (
        name in catalog
        or Path(name).exists()
        or (base_dir is not None and (base_dir / name).exists())
    ):
        return name
    if name.startswith((".", "/", "~")):  # a path, not a repo id
        where = "here" if base_dir is None else f"here or in {base_dir}"
        raise InputError(f"{FIELD}: the model folder {name!r} is not {where}; give its path")
    raise InputError(
        f"{FIELD}: no model card has hf_repo {name!r}; pass the model's catalog id or a "
        "config.json path as MODEL (see `capcliff models`)"
    )


def read_into(
    keys: Mapping[str, Any], settings: set[str], *, base_dir: Path | None = None
) -> dict[str, Any]:
    """A spec scenario's keys (`keys`, with `serve_command`) with the command's model, layout
    and settings (`settings`: the DeploymentSettings keys) filled in; conflicts are errors. A
    model folder the command names may lie in `base_dir` (the spec's folder)."""
    command = parse_serve_command(str(keys["serve_command"]), base_dir=base_dir)
    merged = merged_settings(command, {k: keys.get(k) for k in settings})
    layout = keys.get("layout")
    model, name = merged_target(
        command,
        model=None if keys.get("model") is None else str(keys["model"]),
        layout=None if layout in (None, "auto") else str(layout),
        base_dir=base_dir,
    )
    given = {k: v for k, v in merged.items() if v is not None}
    return {**keys, **given, "model": model, "layout": name}
