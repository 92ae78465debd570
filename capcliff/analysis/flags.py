"""A recommended deployment as ready-to-paste engine command lines, with warnings on known traps.

Flag names are the engines' own: `vllm serve` (vllm/engine/arg_utils.py),
`python -m sglang.launch_server` (python/sglang/srt/server_args.py) and `trtllm-serve`
(TensorRT-LLM docs, commands/trtllm-serve: --tp_size, --pp_size, --ep_size, --max_batch_size,
--max_num_tokens, --max_seq_len, --kv_cache_free_gpu_memory_fraction, --backend).
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass

from capcliff.catalog.layout import Layout


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
    quantization: str | None = None  # online quantization at load ("fp8"); None: as shipped


def vllm_command(dep: Deployment) -> str:
    """`vllm serve MODEL ...` for the deployment."""
    lay = dep.layout
    args = [
        "vllm", "serve", dep.model,
        "--tensor-parallel-size", str(lay.tp),
        "--pipeline-parallel-size", str(lay.pp),
        "--data-parallel-size", str(lay.dp),
    ]  # fmt: skip
    if dep.moe and lay.ep > 1:
        args.append("--enable-expert-parallel")
    if dep.quantization is not None:
        args += ["--quantization", dep.quantization]
    args += [
        "--max-num-seqs", str(dep.max_num_seqs),
        "--max-num-batched-tokens", str(dep.max_num_batched_tokens),
        "--gpu-memory-utilization", f"{dep.gpu_memory_utilization:.2f}",
        "--max-model-len", str(dep.max_model_len),
        "--kv-cache-dtype", dep.kv_cache_dtype,
    ]  # fmt: skip
    return command_text(args)


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
    """`python -m sglang.launch_server ...` for the deployment.

    Pipeline stages map to `--pp-size` (SGLang >= 0.4.9). An attention-DP layout maps to
    `--enable-dp-attention` with `--tp` = all dp x tp ranks of the lockstep group (SGLang's
    `--tp` counts them; `--dp` divides it) and `--ep-size` dividing `--tp`.
    """
    lay = dep.layout
    args = [
        "python", "-m", "sglang.launch_server",
        "--model-path", dep.model,
        "--tp", str(lay.tp * lay.dp if lay.attention_dp else lay.tp),
        "--dp", str(lay.dp),
    ]  # fmt: skip
    if lay.pp > 1:
        args += ["--pp-size", str(lay.pp)]
    if lay.attention_dp:
        args.append("--enable-dp-attention")
    if dep.moe and lay.ep > 1:
        args += ["--ep-size", str(lay.ep)]
    args += [
        "--mem-fraction-static", f"{dep.mem_fraction_static:.3f}",
        "--max-running-requests", str(_sglang_max_running_requests(dep)),
        "--context-length", str(dep.max_model_len),
        "--chunked-prefill-size", str(dep.max_num_batched_tokens),
    ]  # fmt: skip
    if dep.kv_cache_dtype == "fp8":
        args += ["--kv-cache-dtype", "fp8_e4m3"]
    if dep.quantization is not None:
        args += ["--quantization", dep.quantization]
    return command_text(args)


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


def trtllm_command(dep: Deployment, free_gpu_memory_fraction: float) -> str:
    """`trtllm-serve MODEL ...` for one replica of the deployment (PyTorch backend): TP, PP and
    EP, the admission cap as `--max_batch_size`, and the KV share of free memory."""
    lay = dep.layout
    args = [
        "trtllm-serve", dep.model, "--backend", "pytorch",
        "--tp_size", str(lay.tp), "--pp_size", str(lay.pp),
    ]  # fmt: skip
    if dep.moe and lay.ep > 1:
        args += ["--ep_size", str(lay.ep)]
    args += [
        "--max_batch_size", str(dep.max_num_seqs),
        "--max_num_tokens", str(dep.max_num_batched_tokens),
        "--max_seq_len", str(dep.max_model_len),
        "--kv_cache_free_gpu_memory_fraction", f"{free_gpu_memory_fraction:.2f}",
    ]  # fmt: skip
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
            f"--gpu-memory-utilization {dep.gpu_memory_utilization:.2f} leaves no room for CUDA "
            "graphs and the CUDA context: lower it or add --enforce-eager"
        )
    return warnings
