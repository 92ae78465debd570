"""Each engine's flags and environment assignments read into capcliff's settings: a table of
flag readers per engine and `Reading`, what has been read so far. Every flag without a reader is
listed as not modelled, never dropped in silence.

Flag names are the engines' own:
- vLLM: `vllm/engine/arg_utils.py` (`EngineArgs`; `--kv-cache-memory-bytes` is
  `CacheConfig.kv_cache_memory_bytes`, per GPU; `--kv-offloading-size` GiB over the replica's
  TP ranks with `--kv-offloading-backend native`, vllm/config/cache.py; `--async-scheduling`
  and `--no-async-scheduling` are its overlap scheduler on and off; `--rope-scaling` (before 0.11)
  and `--hf-overrides '{"rope_scaling": ...}'` lay a RoPE table over config.json). With
  `--enable-expert-parallel` the MoE layers span all `tp x dp` ranks
  (`FusedMoEParallelConfig.make`), which is capcliff's `ep = tp x dp`.
- SGLang: `python/sglang/srt/server_args.py` (`--tp` counts every rank of an attention-DP group;
  `--max-running-requests` is the group's total under `--enable-dp-attention`, per replica
  otherwise; each rank takes `max_running_requests // dp_size` (managers/tp_worker.py, issue
  sgl-project/sglang#10868 at 71f24ef) and newer versions assert it is > 0 ("max_running_request
  is zero"): fewer than one per rank is refused; `--enable-hierarchical-cache --hicache-size GB`
  per rank, `--hicache-write-policy write_through|write_back`; `--disable-radix-cache`;
  `--disable-overlap-schedule`, `--scheduler-recv-interval`; `--json-model-override-args
  '{"rope_scaling": ...}'`).
- TensorRT-LLM: `trtllm-serve` (tensorrt_llm/commands/serve.py: `--tp_size`, `--pp_size`,
  `--ep_size`, `--max_batch_size`, `--max_num_tokens`, `--max_seq_len`,
  `--kv_cache_free_gpu_memory_fraction`); one server per replica, so no DP.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from capcliff.analysis.serve_command.command import FIELD
from capcliff.errors import InputError
from capcliff.files import json_problem
from capcliff.units import INT_LITERAL, parse_human_int, parse_kv_dtype, parse_weight_dtype

_SPEC_V2 = {
    f"SGLANG_ENABLE_SPEC_V2={value}": on
    for on, values in ((True, ("1", "true", "True")), (False, ("0", "false", "False")))
    for value in values
}


# Flags that do not change capacity or latency (networking, logging, naming, loading), skipped
# without a warning.
_INERT = frozenset(
    {
        "host", "port", "served-model-name", "trust-remote-code", "api-key", "disable-log-requests",
        "disable-log-stats", "uvicorn-log-level", "log-level", "download-dir", "tokenizer",
        "revision", "seed", "enable-chunked-prefill", "backend", "log_level", "trust_remote_code",
        # where a line's GPUs lie over nodes (capcliff/analysis/node_span.py: the lines it prints
        # past one node carry them): SGLang's and vLLM's multi-node launch, and vLLM's Ray
        "nnodes", "node-rank", "dist-init-addr", "data-parallel-size-local",
        "data-parallel-address", "data-parallel-rpc-port", "data-parallel-start-rank", "headless",
        "distributed-executor-backend",
    }
)  # fmt: skip


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
class Reading:
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
    release: tuple[int, int, int] | None = None  # the engine's release (None: latest modelled)


def _kv_dtype(r: Reading, flag: str, value: str | None) -> None:
    if (value or "auto") != "auto":  # auto: the model's dtype, capcliff's default
        r.settings["kv_cache_dtype"] = parse_kv_dtype(value or "", field=FIELD).value


# `--dtype` values at 2 bytes a weight (vLLM, SGLang): bf16 and fp16 size alike, so they are inert
_SIXTEEN_BIT = frozenset({"auto", "bfloat16", "bf16", "float16", "half", "fp16"})


def _dtype(r: Reading, flag: str, value: str | None) -> None:
    """A 16-bit --dtype changes nothing capcliff sizes; float32 weights (4 bytes each) were
    sized as 16-bit ones unsaid."""
    if (value or "").strip().lower() not in _SIXTEEN_BIT:
        raise InputError(
            f"{FIELD}: --{flag} {value or '(no value)'}: capcliff sizes 16-bit weights (auto, "
            "bfloat16, float16) or a quantization; float32 serving is not modelled"
        )


def _quantization(r: Reading, flag: str, value: str | None) -> None:
    try:
        r.settings["weight_dtype"] = parse_weight_dtype(value or "", field=FIELD).value
    except InputError:
        r.unmodelled.append(f"--{flag} {value}")


def _setting(key: str, read: Callable[[str, str | None], Any]) -> Callable[..., None]:
    def apply(r: Reading, flag: str, value: str | None) -> None:
        r.settings[key] = read(flag, value)

    return apply


def _size(key: str, read: Callable[[str, str | None], int] = _plain_int) -> Callable[..., None]:
    def apply(r: Reading, flag: str, value: str | None) -> None:
        r.sizes[key] = read(flag, value)

    return apply


def _switch(name: str) -> Callable[..., None]:
    def apply(r: Reading, flag: str, value: str | None) -> None:
        r.switches.add(name)

    return apply


def _chunked_prefill(r: Reading, flag: str, value: str | None) -> None:
    """SGLang's --chunked-prefill-size; -1 turns chunked prefill off (server_args.py), which
    capcliff does not model: named, not refused."""
    if (value or "").strip() == "-1":
        r.unmodelled.append(f"--{flag} -1 (chunked prefill off)")
        r.settings.pop("max_num_batched_tokens", None)
    else:
        r.settings["max_num_batched_tokens"] = _plain_int(flag, value)


def _model(r: Reading, flag: str, value: str | None) -> None:
    r.model = value


def _text(flag: str, value: str | None) -> str:
    return value or ""


def _chunked_prefill_v0(flag: str, value: str | None) -> bool:
    """vLLM's --enable-chunked-prefill (StoreBoolean to 0.8.4: bare or `=true`/`=false`, any
    case; BooleanOptionalAction from 0.8.5, with --no-enable-chunked-prefill): it changes only
    V0, where `finish` keeps it (V1 always chunks)."""
    if flag == "no-enable-chunked-prefill":
        return False
    if value is None or value.lower() in ("true", "false"):
        return value is None or value.lower() == "true"
    raise InputError(f"{FIELD}: --enable-chunked-prefill wants true or false, got {value!r:.20}")


def _yaml_bool(flag: str, value: str | None) -> bool:
    """A boolean of trtllm-serve's YAML (written back as `true`/`false` by `_flat_options`)."""
    if value not in ("true", "false"):
        raise InputError(f"{FIELD}: {flag} wants true or false, got {value!r}")
    return value == "true"


def _block_reuse(r: Reading, flag: str, value: str | None) -> None:
    """kv_cache_config.enable_block_reuse: false is prefix caching off; true is TensorRT-LLM's
    default (KvCacheConfig), which changes nothing."""
    if not _yaml_bool(flag, value):
        r.settings["prefix_caching"] = "off"


def _attention_window(r: Reading, flag: str, value: str | None) -> None:
    """kv_cache_config.max_attention_window: a window vector gives each window size a pool of its
    own, the memory split in proportion to window x bytes a token (kvCacheManager.cpp
    `calculateWindowSizeToShare`); capcliff sizes the default, every layer over max_seq_len
    (memory.layout_memory.sliding_context_tokens): named, not refused."""
    r.unmodelled.append(
        f"{flag}: {value} (a KV pool per window size; sized as TensorRT-LLM's default, every "
        "layer holding every token)"
    )


# trtllm-serve's --backend choices and alias (ChoiceWithAlias, tensorrt_llm/commands/serve.py)
_TRTLLM_BACKENDS = frozenset({"pytorch", "tensorrt", "trt", "_autodeploy"})


def _trtllm_backend(r: Reading, flag: str, value: str | None) -> None:
    """--backend changes nothing capcliff sizes, but click refuses a value not among its
    choices, and so the server never starts."""
    if value not in _TRTLLM_BACKENDS:
        choices = ", ".join(sorted(_TRTLLM_BACKENDS))
        raise InputError(f"{FIELD}: --backend {value!r} is not one of trtllm-serve's {choices}")


def _attention_dp(r: Reading, flag: str, value: str | None) -> None:
    """enable_attention_dp: each of the --tp_size ranks runs attention on its own requests
    (tensorrt_llm/mapping.py: attention TP 1, DP = tp_size) while the MoE layers span them."""
    if _yaml_bool(flag, value):
        r.switches.add("adp")
    else:
        r.switches.discard("adp")


def _config_override(r: Reading, flag: str, value: str | None) -> None:
    """vLLM's --hf-overrides and SGLang's --json-model-override-args: a JSON object of config
    keys laid over config.json at launch. Its `rope_scaling` is read (the RoPE table the context
    is derived from); any other key is named as not modelled."""
    given, problem = json_problem(value or "")
    if not isinstance(given, dict):
        why = "" if problem is None else f" ({problem:.80})"
        raise InputError(
            f"{FIELD}: --{flag} wants a JSON object of config keys, got {value!r:.60}{why}"
        )
    table = given.pop("rope_scaling", None)
    if table is not None:
        r.settings["rope_scaling"] = json.dumps(table)
    if given:
        r.unmodelled.append(f"--{flag} {json.dumps(given)}")


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
    # vLLM <= 0.10's --rope-scaling (a JSON table), and --hf-overrides '{"rope_scaling": ...}'
    "rope-scaling": _setting("rope_scaling", _text),
    "hf-overrides": _config_override,
    # vLLM V1's AsyncScheduler is its overlap scheduler (perf/host_time.py)
    "async-scheduling": _setting("overlap_schedule", lambda f, v: True),
    "enable-chunked-prefill": _setting("v0_chunked_prefill", _chunked_prefill_v0),
    "no-enable-chunked-prefill": _setting("v0_chunked_prefill", _chunked_prefill_v0),
    "no-async-scheduling": _setting("overlap_schedule", lambda f, v: False),
}  # fmt: skip


_SGLANG: dict[str, Callable[..., None]] = {
    **_COMMON,
    "model-path": _model,
    "tp": _size("tp"), "tp-size": _size("tp"), "tensor-parallel-size": _size("tp"),
    "dp": _size("dp"), "dp-size": _size("dp"), "data-parallel-size": _size("dp"),
    "pp-size": _size("pp"), "pipeline-parallel-size": _size("pp"),
    "ep-size": _size("ep"), "ep": _size("ep"), "expert-parallel-size": _size("ep"),
    # SGLang < 0.5.5: EP over the whole --tp group (`self.ep_size = self.tp_size`), the only EP
    # before 0.4.10; --enable-deepep-moe (0.4.5 - 0.4.x) does the same with DeepEP
    "enable-ep-moe": _switch("ep_moe"),
    "enable-deepep-moe": _switch("deepep_moe"),
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
    "json-model-override-args": _config_override,
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
    "kv_cache_config.max_attention_window": _attention_window,
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


def read_options(r: Reading, options: list[tuple[str, str | None]]) -> None:
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


def read_environment(r: Reading, assignments: list[str]) -> None:
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
        elif r.engine == "vllm" and name == "VLLM_ALL2ALL_BACKEND":
            # vllm/envs.py 0.9.1 - 0.11.0, before --all2all-backend (which wins when given)
            r.settings.setdefault("all2all_backend", value.strip())
        elif r.engine == "sglang" and assignment in _SPEC_V2:
            r.spec_v2 = _SPEC_V2[assignment]
        elif name == "CUDA_VISIBLE_DEVICES":
            r.visible_gpus = len([d for d in value.split(",") if d.strip()])
        else:
            r.unmodelled.append(assignment)
