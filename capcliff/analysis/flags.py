"""A recommended deployment as ready-to-paste engine command lines, with warnings on known traps.

The lines are the deployment simulated: every setting that changed the simulation is a flag, or,
where an engine has no flag for it, a line in `unexpressed` says so (never dropped in silence).
`analysis/serve_command/` reads these lines back into the same settings.

Flag names are the engines' own: `vllm serve` (vllm/engine/arg_utils.py; `--kv-cache-memory-bytes`
is `CacheConfig.kv_cache_memory_bytes`, KV bytes per GPU, which overrides
--gpu-memory-utilization; `--enable-prefix-caching` / `--no-enable-prefix-caching`;
`--kv-offloading-backend native --kv-offloading-size GiB`, the CPU buffer summed over the
replica's TP ranks, vllm/config/cache.py `kv_offloading_size`), `python -m sglang.launch_server`
(python/sglang/srt/server_args.py: `--disable-radix-cache`; `--enable-hierarchical-cache
--hicache-size GB` per rank, `--hicache-write-policy write_through|write_back`, as in SGLang's
docs/advanced_features/hicache_best_practices.md; `--page-size`, `--disable-cuda-graph`) and
`trtllm-serve` (TensorRT-LLM docs, commands/trtllm-serve: --tp_size, --pp_size, --ep_size,
--max_batch_size, --max_num_tokens, --max_seq_len, --kv_cache_free_gpu_memory_fraction, --backend;
KV block reuse and host offload live in `kv_cache_config` of --extra_llm_api_options).
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass

from capcliff.analysis.flag_releases import (
    VLLM_V0_LINE_RELEASE,
    Release,
    first,
    takes,
    vllm_block_sizes,
)
from capcliff.analysis.node_span import (
    NodeSpan,
    node_span,
    node_warning,
    sglang_node_flags,
    vllm_node_flags,
)
from capcliff.catalog.layout import Layout
from capcliff.units import GB, GIB, counted


@dataclass(frozen=True)
class Deployment:
    """What the flags must say: the model, the layout and the engine settings."""

    model: str  # the HF repo id (or a local model directory) the engine loads
    layout: Layout
    max_num_seqs: int
    max_num_batched_tokens: int
    max_model_len: int
    gpu_memory_utilization: float
    mem_fraction_static: float
    kv_cache_dtype: str  # "auto" or "fp8"
    moe: bool
    mla: bool
    # the engines whose "auto" would store the checkpoint's own KV quantisation (FP8) where
    # "auto" here means a 16-bit cache: their lines name it (memory/kv_default.py)
    kv_auto_checkpoint: frozenset[str] = frozenset()
    # the checkpoint names a compressed-tensors kv_cache_scheme: vLLM stores FP8 whatever its
    # --kv-cache-dtype (memory/kv_default.py), where "auto" here means a 16-bit cache
    kv_vllm_forced_fp8: bool = False
    quantization: str | None = None  # online quantization at load ("fp8"); None: as shipped
    dtype: str | None = None  # --dtype: 16-bit weights cast at load ("float16"); None: as shipped
    kv_cache_memory_bytes: int | None = None  # vLLM --kv-cache-memory-bytes, per GPU
    prefix_caching: bool | None = None  # None: the engine's default (on)
    offload_cpu_bytes: int = 0  # host-memory KV offload per replica
    offload_nvme_bytes: int = 0  # NVMe KV offload per replica
    offload_write_back: bool = False
    block_size: int | None = None  # None: the engine's default
    enforce_eager: bool = False
    all2all_backend: str = "none"  # capcliff's AllToAllBackend value
    # speculative decoding: (method mtp|eagle|ngram, K draft tokens, EAGLE draft checkpoint)
    speculative: tuple[str, int, str | None] | None = None
    spec_overlap: bool = False  # SGLang: speculation under the overlap scheduler
    # TensorRT-LLM attention_dp_config (timeout_iters, batching_wait_iters) with enable_balance;
    # None: off
    adp_balance: tuple[int, int] | None = None
    # vLLM's V0 engine (--engine vllm-v0, releases 0.6 - 0.7): it has no KV offloading flags
    vllm_v0: bool = False
    # V0's chunked prefill as given (None: V0's default at max_model_len, which the line keeps)
    enable_chunked_prefill: bool | None = None
    # a RoPE table over config.json's (canonical JSON; None: the config's own)
    rope_scaling: str | None = None
    # SGLang's --chunked-prefill-size where the simulated chunk is below max_num_batched_tokens
    # (vLLM's budget, raised to the cap as vLLM requires; SGLang's chunk does not bound its
    # decode batch); None: max_num_batched_tokens
    chunked_prefill_size: int | None = None
    gpus_per_node: int | None = None  # the GPU's node; None: not known (no node flags)
    # the release each engine's line is for ("vllm", "sglang", "trtllm"; one absent: the latest
    # modelled, or V0's VLLM_V0_LINE_RELEASE for a V0 line): the line names only its flags
    releases: tuple[tuple[str, Release], ...] = ()


def line_release(dep: Deployment, engine: str) -> Release | None:
    """The release `engine`'s line (vllm, sglang, trtllm) is for; None: the latest modelled."""
    for name, release in dep.releases:
        if name == engine:
            return release
    return VLLM_V0_LINE_RELEASE if engine == "vllm" and dep.vllm_v0 else None


# vLLM's `--speculative-config` method names (vllm/config/speculative.py `SpeculativeMethod`):
# "mtp" for a model's own MTP layers, "eagle3" for an EAGLE-3 head, "ngram" for prompt lookup.
VLLM_SPEC_METHOD = {"mtp": "mtp", "eagle": "eagle3", "ngram": "ngram"}
# SGLang's `--speculative-algorithm` (python/sglang/srt/server_args.py; NEXTN is read as EAGLE
# over the model's MTP layers).
SGLANG_SPEC_ALGORITHM = {"mtp": "NEXTN", "eagle": "EAGLE3", "ngram": "NGRAM"}
DRAFT_PLACEHOLDER = "<EAGLE-3 draft checkpoint>"
# TensorRT-LLM's LLM-API speculative configs (tensorrt_llm.llmapi MTPDecodingConfig,
# Eagle3DecodingConfig, NGramDecodingConfig; examples/llm-api/llm_speculative_decoding.py), set
# through --extra_llm_api_options as `speculative_config` with its `decoding_type`.
TRTLLM_SPEC_DECODING_TYPE = {"mtp": "MTP", "eagle": "Eagle3", "ngram": "NGram"}


def trtllm_speculative_config(
    spec: tuple[str, int, str | None] | None, release: Release | None = None
) -> str | None:
    """The `speculative_config` of trtllm-serve's --extra_llm_api_options YAML, in flow style:
    MTP counts its draft layers (num_nextn_predict_layers), EAGLE-3 and n-gram their draft
    length (max_draft_len); None without speculation. Before the release that names
    "decoding_type Eagle3" (flag_releases), EAGLE-3 is decoding_type Eagle (its
    eagle3_one_model on by default) with `speculative_model_dir`."""
    if spec is None:
        return None
    method, k, draft = spec
    eagle3 = takes(release, "trtllm", "decoding_type Eagle3")
    kind = TRTLLM_SPEC_DECODING_TYPE[method] if method != "eagle" or eagle3 else "Eagle"
    fields = [f"decoding_type: {kind}"]
    if method == "mtp":
        fields.append(f"num_nextn_predict_layers: {k}")
    else:
        fields.append(f"max_draft_len: {k}")
    if method == "eagle":
        key = "speculative_model" if eagle3 else "speculative_model_dir"
        fields.append(f"{key}: {draft or DRAFT_PLACEHOLDER}")
    return "speculative_config: {" + ", ".join(fields) + "}"


def vllm_speculative_flags(
    spec: tuple[str, int, str | None] | None, release: Release | None = None
) -> list[str]:
    """`--speculative-config '{"method": ..., "num_speculative_tokens": K[, "model": DRAFT]}'`;
    none where vLLM `release` has no such config or method (`line_gaps` says so). Before
    "method mtp" (flag_releases) MTP names no method: vLLM takes the draft from the model's
    own layers."""
    if spec is None or not takes(release, "vllm", "--speculative-config"):
        return []
    method, k, draft = spec
    if method == "eagle" and not takes(release, "vllm", "method eagle3"):
        return []
    if method == "mtp" and not takes(release, "vllm", "method mtp"):
        return ["--speculative-config", f'{{"num_speculative_tokens": {k}}}']
    config = f'{{"method": "{VLLM_SPEC_METHOD[method]}", "num_speculative_tokens": {k}'
    if method == "eagle":
        config += f', "model": "{draft or DRAFT_PLACEHOLDER}"'
    return ["--speculative-config", config + "}"]


def sglang_speculative_flags(
    spec: tuple[str, int, str | None] | None, release: Release | None = None
) -> list[str]:
    """`--speculative-algorithm A --speculative-num-steps K --speculative-eagle-topk 1
    --speculative-num-draft-tokens K+1` (a chain of K drafts; NGRAM takes the draft count);
    none where SGLang `release` lacks the algorithm (`line_gaps` says so)."""
    if spec is None:
        return []
    method, k, draft = spec
    if not takes(release, "sglang", f"--speculative-algorithm {SGLANG_SPEC_ALGORITHM[method]}"):
        return []
    args = ["--speculative-algorithm", SGLANG_SPEC_ALGORITHM[method]]
    if method == "ngram":
        return [*args, "--speculative-num-draft-tokens", str(k + 1)]
    if method == "eagle":
        args += ["--speculative-draft-model-path", draft or DRAFT_PLACEHOLDER]
    return [
        *args, "--speculative-num-steps", str(k), "--speculative-eagle-topk", "1",
        "--speculative-num-draft-tokens", str(k + 1),
    ]  # fmt: skip


def vllm_serves_dp(dep: Deployment) -> bool:
    """Whether the line's vLLM release takes `--data-parallel-size` in `vllm serve`: V1 from
    0.8.3 (vllm-project/vllm PR #13923, v0.8.3 release notes, "Single node data parallel with
    API server support"; data/flag_releases.toml); V0 runs no DP of its own."""
    return not dep.vllm_v0 and takes(line_release(dep, "vllm"), "vllm", "--data-parallel-size")


def vllm_separate_replicas(dep: Deployment) -> bool:
    """Whether the layout's DP replicas must be separate `vllm serve` processes: a MoE model's
    independent replicas, and any model's before `vllm serve` took `--data-parallel-size`
    (`vllm_serves_dp`). vLLM's `--data-parallel-size` runs a MoE model's DP ranks in
    lockstep (dummy forward passes on idle ranks) with its MoE layers over all `dp x tp` ranks
    of a stage, TP-sharded by default (docs.vllm.ai, serving/data_parallel_deployment), which
    is attention DP (`dpa`), not independent replicas."""
    lay = dep.layout
    if lay.dp <= 1 or lay.attention_dp:
        return False
    return dep.moe or not vllm_serves_dp(dep)


def _rope_flags(dep: Deployment, overrides: str) -> list[str]:
    """The engine's flag laying the RoPE table over config.json: `overrides` (vLLM's
    --hf-overrides, SGLang's --json-model-override-args) with {"rope_scaling": table}; vLLM V0's
    releases (0.6 - 0.7) take --rope-scaling, which vLLM dropped in 0.11.1."""
    if dep.rope_scaling is None:
        return []
    if dep.vllm_v0:
        return ["--rope-scaling", dep.rope_scaling]
    return [overrides, f'{{"rope_scaling": {dep.rope_scaling}}}']


def _vllm_dp_flag(dep: Deployment) -> list[str]:
    """`--data-parallel-size N` (`line_dp`: 1 for one replica of separate servers, one node's
    replicas where they pass a node); none where the release has no such flag
    (`vllm_serves_dp`)."""
    if not vllm_serves_dp(dep):
        return []
    return ["--data-parallel-size", str(line_dp(dep, "vllm"))]


def vllm_command(dep: Deployment) -> str:
    """`vllm serve MODEL ...` for the deployment (for one replica where the replicas must be
    separate servers, `vllm_separate_replicas`, or where its release has no
    --data-parallel-size), with only the flags its release parses (`line_release`)."""
    lay = dep.layout
    span = line_span(dep, "vllm")
    release = line_release(dep, "vllm")
    args = [
        *_vllm_environment(dep, release), "vllm", "serve", dep.model,
        "--tensor-parallel-size", str(lay.tp),
        "--pipeline-parallel-size", str(lay.pp),
        *_vllm_dp_flag(dep),
    ]  # fmt: skip
    args += vllm_node_flags(span, lay.tp, lay.pp)
    if dep.moe and lay.ep > 1 and takes(release, "vllm", "--enable-expert-parallel"):
        args.append("--enable-expert-parallel")
    if dep.quantization is not None:
        args += ["--quantization", dep.quantization]
    if dep.dtype is not None:
        args += ["--dtype", dep.dtype]
    args += [
        "--max-num-seqs", str(dep.max_num_seqs),
        "--max-num-batched-tokens", str(dep.max_num_batched_tokens),
        "--gpu-memory-utilization", f"{dep.gpu_memory_utilization:g}",
        "--max-model-len", str(dep.max_model_len),
        "--kv-cache-dtype", named_kv(dep, "vllm", "bfloat16"),
    ]  # fmt: skip
    args += _rope_flags(dep, "--hf-overrides") + _vllm_cache_flags(dep, release)
    if dep.enforce_eager:
        args.append("--enforce-eager")
    args += _vllm_v0_chunked_prefill(dep, release)
    if dep.all2all_backend in VLLM_DEEPEP_MODES and takes(release, "vllm", "--all2all-backend"):
        args += ["--all2all-backend", dep.all2all_backend]
    return command_text(args + vllm_speculative_flags(dep.speculative, release))


# capcliff's all2all backends that name one of vLLM's DeepEP kernels
VLLM_DEEPEP_MODES = ("deepep_high_throughput", "deepep_low_latency")


def _vllm_environment(dep: Deployment, release: Release | None) -> list[str]:
    """The variables the vllm line sets: the engine where the release's default is the other
    one (V0 under VLLM_USE_V1=0, harmless before 0.8; V1 under VLLM_USE_V1=1 before 0.8) and
    the DeepEP kernels where only VLLM_ALL2ALL_BACKEND names them (0.9.1 - 0.11.0)."""
    env = []
    if dep.vllm_v0:
        env.append("VLLM_USE_V1=0")
    elif release is not None and release < first("vllm", "V1 by default"):
        env.append("VLLM_USE_V1=1")
    deepep = dep.all2all_backend in VLLM_DEEPEP_MODES
    if (
        deepep
        and takes(release, "vllm", "VLLM_ALL2ALL_BACKEND=deepep")
        and not takes(release, "vllm", "--all2all-backend")
    ):
        env.append(f"VLLM_ALL2ALL_BACKEND={dep.all2all_backend}")
    return env


def _vllm_v0_chunked_prefill(dep: Deployment, release: Release | None) -> list[str]:
    """V0's chunked prefill where one was given: on is `--enable-chunked-prefill`; off is
    `--no-enable-chunked-prefill` where the release's flag is a BooleanOptionalAction, else
    StoreBoolean's `--enable-chunked-prefill=False`. Left out, V0 chunks only past 32K tokens
    (arg_utils.py), and without chunking it refuses a --max-num-batched-tokens below
    --max-model-len (config.py SchedulerConfig._verify_args, 0.6.6)."""
    if not dep.vllm_v0 or dep.enable_chunked_prefill is None:
        return []
    if dep.enable_chunked_prefill:
        return ["--enable-chunked-prefill"]
    if takes(release, "vllm", "--no-enable-chunked-prefill"):
        return ["--no-enable-chunked-prefill"]
    return ["--enable-chunked-prefill=False"]


def _vllm_cache_flags(dep: Deployment, release: Release | None) -> list[str]:
    """The KV bytes, prefix caching, CPU offload and block size flags release `release` takes."""
    args = []
    if dep.kv_cache_memory_bytes is not None and takes(release, "vllm", "--kv-cache-memory-bytes"):
        args += ["--kv-cache-memory-bytes", str(dep.kv_cache_memory_bytes)]
    if dep.prefix_caching is not None:
        caching = "--enable-prefix-caching" if dep.prefix_caching else "--no-enable-prefix-caching"
        args.append(caching)
    if (
        dep.offload_cpu_bytes
        and not dep.vllm_v0
        and takes(release, "vllm", "--kv-offloading-backend")
    ):
        size = dep.offload_cpu_bytes / GIB
        args += ["--kv-offloading-backend", "native", "--kv-offloading-size", f"{size:g}"]
    sizes = vllm_block_sizes(release)
    if dep.block_size is not None and (sizes is None or dep.block_size in sizes):
        args += ["--block-size", str(dep.block_size)]
    return args


def line_span(dep: Deployment, engine: str) -> NodeSpan | None:
    """How `engine`'s line's GPUs lie over nodes: vLLM's separate replicas and TensorRT-LLM's
    line are one replica; the other lines run every DP rank (`node_span`)."""
    if dep.gpus_per_node is None:
        return None
    lay = dep.layout
    one = (engine == "vllm" and vllm_separate_replicas(dep)) or engine == "trtllm"
    return node_span(
        dp=1 if one else lay.dp, tp=lay.tp, pp=lay.pp, attention_dp=lay.attention_dp,
        gpus_per_node=dep.gpus_per_node,
    )  # fmt: skip


def line_dp(dep: Deployment, engine: str) -> int:
    """The DP ranks `engine`'s (vllm, sglang) line runs: one node's independent replicas where
    they pass a node, one replica for vLLM's separate replicas, else all of the layout's."""
    span = line_span(dep, engine)
    if span is not None and span.local_dp is not None:
        return span.local_dp
    return 1 if engine == "vllm" and vllm_separate_replicas(dep) else dep.layout.dp


def unexpressed(dep: Deployment, engine: str) -> list[str]:
    """What `engine`'s line (vllm, sglang, trtllm) cannot say about the deployment simulated."""
    said: list[str] = []
    span = line_span(dep, engine)
    if span is not None and (nodes := node_warning(engine, span, dep.layout.tp, dep.layout.pp)):
        said.append(nodes)
    if dep.offload_nvme_bytes:
        said.append(
            f"{engine}: the NVMe offload tier ({dep.offload_nvme_bytes / GIB:g} GiB per replica) "
            "has no flag here: vLLM offloads natively to CPU memory only (an LMCache "
            "--kv-transfer-config with a disk backend holds it), SGLang's is a "
            "--hicache-storage-backend; the line above sets "
            + ("the CPU tier only" if dep.offload_cpu_bytes else "no offload tier")
        )
    if engine == "vllm" and dep.offload_cpu_bytes and dep.vllm_v0:
        # `--kv-offloading-backend/--kv-offloading-size` are V1's OffloadingConnector
        # (vllm/config/cache.py `kv_offloading_size`, vllm-project/vllm PR #24498, vLLM 0.11.1,
        # after V0's removal); V0's --swap-space holds preempted requests only and
        # --cpu-offload-gb holds weights, not KV
        said.append(
            f"vllm: the CPU offload tier ({dep.offload_cpu_bytes / GIB:g} GiB per replica) has "
            "no flag on vLLM V0 (--engine vllm-v0): --kv-offloading-backend came with V1 "
            "(vLLM 0.11.1); an LMCache --kv-transfer-config holds it, or serve on V1"
        )
    if engine == "vllm" and dep.offload_write_back:
        said.append(
            "vllm: --offload-policy write-back was simulated; vLLM's offloading connector "
            "stores finished requests' blocks (write-through) and has no flag for write-back"
        )
    if engine == "vllm" and dep.all2all_backend == "deepep":
        said.append("vllm: --all2all-backend deepep is SGLang's auto mode; vLLM names a mode")
    ranks = max(1, dep.layout.gpus_per_replica)
    if (
        engine == "sglang"
        and dep.offload_cpu_bytes
        and hicache_gb(dep) * ranks * GB != (dep.offload_cpu_bytes)
    ):
        said.append(
            f"sglang: --hicache-size is whole GB per rank: {hicache_gb(dep)} GB x "
            f"{counted(ranks, 'rank')} "
            f"= {hicache_gb(dep) * ranks * GB / GIB:,.2f} GiB per replica against the "
            f"{dep.offload_cpu_bytes / GIB:,.2f} GiB simulated"
        )
    if engine == "sglang" and dep.kv_cache_memory_bytes is not None:
        said.append(
            "sglang: --kv-cache-memory was simulated (vLLM's flag); SGLang has no KV-bytes "
            "flag: its pool is what --mem-fraction-static leaves after the weights"
        )
    if engine == "vllm" and dep.kv_vllm_forced_fp8 and dep.kv_cache_dtype == "auto":
        said.append(
            "vllm: stores the checkpoint's FP8 KV cache whatever --kv-cache-dtype says (its "
            "config.json names a compressed-tensors kv_cache_scheme, and vLLM's Attention sets "
            "fp8 for it), not the 16-bit cache planned: its KV pool holds twice the tokens"
        )
    if engine == "trtllm":
        said += _trtllm_unexpressed(dep)
    return said


def trtllm_adp_balance_config(balance: tuple[int, int] | None) -> str | None:
    """The `attention_dp_config` of trtllm-serve's --extra_llm_api_options YAML (flow style)
    that the attention-DP balance simulated runs (tensorrt_llm/llmapi/llm_args.py
    `AttentionDpConfig`); None when it is off."""
    if balance is None:
        return None
    timeout, wait = balance
    return (
        "attention_dp_config: {enable_balance: true, "
        f"timeout_iters: {timeout}, batching_wait_iters: {wait}}}"
    )


def named_kv(dep: Deployment, engine: str, sixteen_bit: str) -> str:
    """`engine`'s --kv-cache-dtype value: `sixteen_bit` (vLLM's `bfloat16`, SGLang's `bf16`) for
    a 16-bit cache where its `auto` would take the checkpoint's own KV quantisation, else the
    deployment's."""
    if dep.kv_cache_dtype == "auto" and engine in dep.kv_auto_checkpoint:
        return sixteen_bit
    return dep.kv_cache_dtype


def _trtllm_unexpressed(dep: Deployment) -> list[str]:
    said = []
    if dep.kv_cache_dtype == "auto" and "trtllm" in dep.kv_auto_checkpoint:
        said.append(
            "trtllm-serve: stores the checkpoint's own quantised KV cache (its "
            "kv_cache_quant_algo: FP8, NVFP4 or INT8), not the 16-bit cache planned: "
            "TensorRT-LLM cannot override a checkpoint's KV quantisation "
            "(validate_and_set_kv_cache_quant); its KV pool holds more tokens"
        )
    balance = trtllm_adp_balance_config(dep.adp_balance) if dep.layout.attention_dp else None
    if balance is not None:
        said.append(f"trtllm-serve: the attention-DP balance is `{balance}` in "
                    "--extra_llm_api_options")  # fmt: skip
    if dep.kv_cache_memory_bytes is not None:
        said.append(
            "trtllm-serve: --kv-cache-memory has no flag; set kv_cache_config.max_tokens in "
            "--extra_llm_api_options to the KV tokens it holds"
        )
    if dep.prefix_caching is False:
        said.append(
            "trtllm-serve: prefix caching off is kv_cache_config.enable_block_reuse: false in "
            "--extra_llm_api_options"
        )
    config = trtllm_speculative_config(dep.speculative, line_release(dep, "trtllm"))
    if config is not None:
        said.append(f"trtllm-serve: speculative decoding is `{config}` in --extra_llm_api_options")
    if dep.offload_cpu_bytes:
        said.append(
            f"trtllm-serve: the CPU offload tier is kv_cache_config.host_cache_size: "
            f"{dep.offload_cpu_bytes // max(1, dep.layout.gpus_per_replica)} (bytes per GPU) in "
            "--extra_llm_api_options"
        )
    return said


def command_text(args: list[str]) -> str:
    """A command line to paste into a shell: the program and its positional arguments on the
    first line, then one option (with its value) per line, each line but the last ending in
    ` \\`; every word shell-quoted."""
    lines: list[list[str]] = [[]]
    for word in args:
        if word.startswith("--"):
            lines.append([])
        lines[-1].append(shlex.quote(word))
    return " \\\n  ".join(" ".join(line) for line in lines)


def sglang_command(dep: Deployment) -> str:
    """`python -m sglang.launch_server ...` for the deployment (prefixed by
    `SGLANG_ENABLE_SPEC_V2=1` when speculation was simulated under the overlap scheduler), with
    only the flags its release parses (`line_release`).

    Pipeline stages map to `--pp-size`. An attention-DP layout maps to `--enable-dp-attention`
    with `--tp` = all dp x tp ranks of the lockstep group (SGLang's `--tp` counts them; `--dp`
    divides it) and `--ep-size` dividing `--tp`.
    """
    lay = dep.layout
    release = line_release(dep, "sglang")
    # SGLang 0.5.x runs EAGLE/NEXTN speculation without its overlap scheduler unless this
    # variable is set (python/sglang/srt/environ.py SGLANG_ENABLE_SPEC_V2); it must reach the
    # server's environment, so it prefixes the command rather than being set on a line before.
    overlap = (
        dep.spec_overlap and dep.speculative and takes(release, "sglang", "SGLANG_ENABLE_SPEC_V2")
    )
    args = [
        *(["SGLANG_ENABLE_SPEC_V2=1"] if overlap else []), "python", "-m", "sglang.launch_server",
        "--model-path", dep.model,
        "--tp", str(sglang_tp(dep)),
        "--dp", str(line_dp(dep, "sglang")),
    ]  # fmt: skip
    if lay.pp > 1 and takes(release, "sglang", "--pp-size"):
        args += ["--pp-size", str(lay.pp)]
    args += sglang_node_flags(line_span(dep, "sglang"))
    if lay.attention_dp:
        args.append("--enable-dp-attention")
    args += _sglang_ep_flags(dep, release)
    args += [
        "--mem-fraction-static", f"{dep.mem_fraction_static:g}",
        "--max-running-requests", str(_sglang_max_running_requests(dep)),
        "--context-length", str(dep.max_model_len),
        "--chunked-prefill-size", str(dep.chunked_prefill_size or dep.max_num_batched_tokens),
    ]  # fmt: skip
    args += _rope_flags(dep, "--json-model-override-args") + _sglang_kv_flags(dep, release)
    if dep.quantization is not None:
        args += ["--quantization", dep.quantization]
    if dep.dtype is not None:
        args += ["--dtype", dep.dtype]
    args += _sglang_cache_flags(dep, release)
    return command_text(args + sglang_speculative_flags(dep.speculative, release))


def sglang_tp(dep: Deployment) -> int:
    """SGLang's `--tp`: the layout's TP, or all dp x tp ranks of an attention-DP group."""
    lay = dep.layout
    return lay.tp * lay.dp if lay.attention_dp else lay.tp


def sglang_ep_expressible(dep: Deployment) -> bool:
    """Whether the SGLang line can run the layout's expert parallelism: from the release that
    reads "--ep-size without --enable-ep-moe" any `--ep-size`; before it (from "--ep-size")
    only EP over the whole --tp group, which `--enable-ep-moe` (or `--enable-deepep-moe`)
    sets."""
    release = line_release(dep, "sglang")
    if takes(release, "sglang", "--ep-size without --enable-ep-moe"):
        return True
    return takes(release, "sglang", "--ep-size") and dep.layout.ep == sglang_tp(dep)


def _sglang_ep_flags(dep: Deployment, release: Release | None) -> list[str]:
    """`--ep-size` (with `--enable-ep-moe` before "--ep-size without --enable-ep-moe", where
    DeepEP's own switch does not set it), or nothing where the release cannot run the layout's
    EP."""
    if not (dep.moe and dep.layout.ep > 1) or not sglang_ep_expressible(dep):
        return []
    args = ["--ep-size", str(dep.layout.ep)]
    if not takes(
        release, "sglang", "--ep-size without --enable-ep-moe"
    ) and not sglang_deepep_expressible(dep):
        args.insert(0, "--enable-ep-moe")
    return args


def sglang_deepep_expressible(dep: Deployment) -> bool:
    """Whether the SGLang line can run the DeepEP all-to-all simulated: from "--deepep-mode", with
    the layout's EP expressible, and its auto mode beside DP attention only from "--deepep-mode
    auto with --enable-dp-attention" (flag_releases)."""
    release = line_release(dep, "sglang")
    mode = SGLANG_DEEPEP_MODES.get(dep.all2all_backend)
    if (
        mode is None
        or not takes(release, "sglang", "--deepep-mode")
        or not sglang_ep_expressible(dep)
    ):
        return False
    auto_dpa = mode == "auto" and dep.layout.attention_dp
    return not auto_dpa or takes(release, "sglang", "--deepep-mode auto with --enable-dp-attention")


def _sglang_kv_flags(dep: Deployment, release: Release | None) -> list[str]:
    """`--kv-cache-dtype`: FP8 as fp8_e4m3 (fp8_e5m2, the same bytes, where the release has no
    e4m3), or bf16 where `auto` would take the checkpoint's FP8 and the release names bf16."""
    if dep.kv_cache_dtype == "fp8":
        fp8 = "fp8_e4m3" if takes(release, "sglang", "--kv-cache-dtype fp8_e4m3") else "fp8_e5m2"
        return ["--kv-cache-dtype", fp8]
    if named_kv(dep, "sglang", "bf16") == "bf16" and takes(
        release, "sglang", "--kv-cache-dtype bf16"
    ):
        return ["--kv-cache-dtype", "bf16"]
    return []


# capcliff's all2all backends as SGLang's --deepep-mode names them
SGLANG_DEEPEP_MODES = {"deepep": "auto", "deepep_high_throughput": "normal",
                       "deepep_low_latency": "low_latency"}  # fmt: skip


def _sglang_cache_flags(dep: Deployment, release: Release | None) -> list[str]:
    """The radix cache off, HiCache (host offload, GB per rank), page size, CUDA graphs off and
    the DeepEP all-to-all, as release `release` names them."""
    args = []
    if dep.prefix_caching is False:
        args.append("--disable-radix-cache")
    if dep.offload_cpu_bytes and takes(release, "sglang", "--hicache-size"):
        policy = "write_back" if dep.offload_write_back else "write_through"
        args += [
            "--enable-hierarchical-cache", "--hicache-size", str(hicache_gb(dep)),
            "--hicache-write-policy", policy,
        ]  # fmt: skip
    if dep.block_size is not None and takes(release, "sglang", "--page-size"):
        args += ["--page-size", str(dep.block_size)]
    if dep.enforce_eager:
        args.append("--disable-cuda-graph")
    mode = SGLANG_DEEPEP_MODES.get(dep.all2all_backend)
    if mode is None or not sglang_deepep_expressible(dep):
        return args
    if takes(release, "sglang", "--moe-a2a-backend"):
        return [*args, "--moe-a2a-backend", "deepep", "--deepep-mode", mode]
    return [*args, "--enable-deepep-moe", "--deepep-mode", mode]


def hicache_gb(dep: Deployment) -> int:
    """SGLang's `--hicache-size` for the CPU offload tier: whole GB (server_args `hicache_size:
    int`) per rank, the replica's tier shared by its ranks, rounded to the nearest GB."""
    return max(1, round(dep.offload_cpu_bytes / max(1, dep.layout.gpus_per_replica) / GB))


def _sglang_max_running_requests(dep: Deployment) -> int:
    """SGLang's `--max-running-requests` for `dep.max_num_seqs` per replica (requests).

    SGLang divides the flag among the ranks of an attention-DP group (`ModelRunner`: `dp_size =
    server_args.dp_size if server_args.enable_dp_attention else 1`, then `max_running_requests //
    dp_size`), so that layout takes the group's total. Plain `--dp` launches one scheduler per
    replica with the same server arguments, each enforcing the whole flag, so it takes the
    per-replica cap (dp x the cap would let every replica admit dp times past its cliff).
    """
    lay = dep.layout
    return dep.max_num_seqs * (lay.dp if lay.attention_dp else 1)


# The options file an attention-DP line names: TensorRT-LLM sets attention DP only in the LLM
# API's options (`enable_attention_dp`, tensorrt_llm/llmapi/llm_args.py), as its DeepSeek-R1
# recipes do (`--extra_llm_api_options ./extra-llm-api-config.yml` holding
# `enable_attention_dp: true`, with --tp_size and --ep_size the group's ranks).
TRTLLM_OPTIONS_FILE = "extra-llm-api-config.yml"


def trtllm_command(dep: Deployment, free_gpu_memory_fraction: float) -> str:
    """`trtllm-serve MODEL ...` for one replica of the deployment (PyTorch backend): TP, PP and
    EP, the admission cap as `--max_batch_size`, the KV share of free memory, and chunked
    prefill, which capcliff simulates on every engine but vLLM V0 and TensorRT-LLM leaves off
    unless told (`enable_chunked_prefill` defaults to False in tensorrt_llm/llmapi/llm_args.py;
    trtllm-serve's `--enable_chunked_prefill` switch, tensorrt_llm/commands/serve.py): without
    it a prompt runs whole in one step, within --max_num_tokens. An attention-DP group is one
    server of `--tp_size` ranks (attention TP 1 on each, tensorrt_llm/mapping.py),
    `--max_batch_size` per rank, its options file naming `enable_attention_dp`
    (`TRTLLM_OPTIONS_FILE`)."""
    lay = dep.layout
    ranks = lay.tp * (lay.dp if lay.attention_dp else 1)
    args = [
        "trtllm-serve", dep.model, "--backend", "pytorch",
        "--tp_size", str(ranks), "--pp_size", str(lay.pp),
    ]  # fmt: skip
    if dep.moe and lay.ep > 1:
        args += ["--ep_size", str(lay.ep)]
    args += [
        "--max_batch_size", str(dep.max_num_seqs),
        "--max_num_tokens", str(dep.max_num_batched_tokens),
        "--max_seq_len", str(dep.max_model_len),
        "--kv_cache_free_gpu_memory_fraction", f"{free_gpu_memory_fraction:g}",
        "--enable_chunked_prefill",
    ]  # fmt: skip
    if lay.attention_dp:
        args += ["--extra_llm_api_options", TRTLLM_OPTIONS_FILE]
    return command_text(args)


def flag_warnings(
    dep: Deployment, *, sweet_spot: int, one_request_fits: bool, graphs_fit: bool
) -> list[str]:
    """Known traps in the settings: a cap far below the sweet spot, a context that cannot fit one
    request, a utilisation that leaves no room for CUDA graphs."""
    warnings = []
    per_replica_sweet = -(-sweet_spot // dep.layout.dp)
    if dep.max_num_seqs * 2 <= per_replica_sweet:
        warnings.append(
            f"--max-num-seqs {dep.max_num_seqs} is far below the sweet spot "
            f"({per_replica_sweet} per replica): throughput is left on the table"
        )
    if not one_request_fits:
        warnings.append(
            f"--max-model-len {dep.max_model_len} cannot fit one request in the KV cache: "
            "the engine will refuse to start"
        )
    if not graphs_fit:
        warnings.append(
            f"--gpu-memory-utilization {dep.gpu_memory_utilization:g} leaves no room for CUDA "
            "graphs and the CUDA context: lower it or add --enforce-eager"
        )
    lay = dep.layout
    if vllm_separate_replicas(dep) and dep.moe:
        warnings.append(
            f"vllm: the line is one replica of {lay.name}: run {lay.dp} of them behind a load "
            f"balancer. vLLM's --data-parallel-size {lay.dp} would run this MoE model's "
            f"replicas in lockstep with its MoE layers over all {lay.dp * lay.tp} ranks "
            f"({lay.in_lockstep().name}), another deployment than the one simulated"
        )
    elif vllm_separate_replicas(dep):
        warnings.append(
            f"vllm: the line is one replica of {lay.name}: run {lay.dp} of them behind a load "
            f"balancer; {_vllm_line_release(dep)} takes no --data-parallel-size in `vllm serve` "
            "(from 0.8.3, vllm-project/vllm PR #13923)"
        )
    if lay.dp > 1 and lay.attention_dp and not vllm_serves_dp(dep):
        warnings.append(
            f"vllm: {_vllm_line_release(dep)} serves no attention-DP layout ({lay.name}): "
            "`vllm serve --data-parallel-size` came in 0.8.3 (vllm-project/vllm PR #13923); "
            "serve a later release"
        )
    return warnings


def _vllm_line_release(dep: Deployment) -> str:
    """The vLLM release a line is for, in words."""
    if dep.vllm_v0:
        return "vLLM V0"
    release = line_release(dep, "vllm")
    assert release is not None  # only asked where the release is known and old
    return "vLLM " + ".".join(str(part) for part in release)
