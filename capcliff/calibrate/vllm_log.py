"""The lines of a vLLM start-up log that capcliff reads, and the phrases that tell V1 from V0.

Each line confirmed in vLLM's source:
- V1: vllm/v1/worker/gpu_worker.py, gpu_model_runner.py, vllm/v1/core/kv_cache_utils.py (0.7's
  `# GPU blocks: N` without CPU blocks),
  vllm/v1/metrics/loggers.py (`num_gpu_blocks is:`), vllm/v1/engine/core.py (engine config).
- V0: vllm/worker/model_runner.py, vllm/worker/worker.py (three successive layouts of the memory
  profile), vllm/executor/executor_base.py (`# <device> blocks:`, max concurrency).
Old vLLM ("Loading model weights took 14.99 GB") divides by 2**30 and prints "GB": such figures
are GiB (`LoggedFigure.unit` keeps the engine's word).
"""

from __future__ import annotations

import re

from capcliff.calibrate.log_lines import compile_failures, compile_lines

_PROFILE_PHRASES = {  # vllm/worker/worker.py: "results: a=1 b=2", the table, the sentences
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
LINES = compile_lines(
    *(rf"{re.escape(k)}(?: takes)?\s*[=(]?\s*(?P<{v}>NUM)" for k, v in _PROFILE_PHRASES.items()),
    r"gpu_memory_utilization \(NUM\) = (?P<requested_memory_gib>NUM)",
    r"Loading model weights took (?P<weights_gib>NUM)",
    r"Model loading took (?P<weights_gib>NUM) \w+(?: memory)? and (?P<weights_load_s>NUM) sec",
    r"Available KV cache memory: (?P<kv_cache_gib>NUM)",
    r"GPU KV cache size: (?P<kv_tokens>NUM) tokens",
    r"Maximum concurrency for (?P<max_concurrency_len>NUM) tokens per request: "
    r"(?P<max_concurrency>NUM)x",
    r"\w+ blocks: (?P<gpu_blocks>NUM), # CPU blocks: (?P<cpu_blocks>NUM)",
    # V1 of 0.7.0-0.7.2 (vllm/v1/core/kv_cache_utils.py): the GPU's blocks alone
    r"# GPU blocks: (?P<gpu_blocks>NUM)(?![\d,.])",
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

# Phrases only V1 prints, and phrases only V0 prints.
V1_SIGNATURES = compile_lines(
    r"Initializing a V1 LLM engine",
    r"Available KV cache memory:",
    r"GPU KV cache size:",
    r"\bEngineCore",
    r"Desired GPU memory utilization is",
    r"To serve at least one request with the models?'s max seq len",
    # V1's own modules, which V0 never had; 0.7.0-0.7.2's V1 (VLLM_USE_V1=1) logged V0's words
    # ("Initializing an LLM engine", "Loading model weights took") and its blocks alone
    r"\bgpu_model_runner\.py\b",
    r"\bkv_cache_utils\.py\b",
    r"# GPU blocks: \d+(?![\d,.])",
)
V0_SIGNATURES = compile_lines(
    r"Initializing an LLM engine|Initializing a V0 LLM engine",
    r"Loading model weights took",
    r"Memory profiling results",
    r"the current vLLM instance can use",
    r"\w+ blocks: \d+, # CPU blocks:",
    r"VllmWorkerProcess",
    r"is larger than the maximum number of tokens that can be stored in KV cache",
)

# vLLM's refusals to start (V0's max-seq-len check, V1's, and the profile finding no room).
FAILURES = compile_failures(
    r"The model's max seq len \((?P<failed_max_model_len>NUM)\) is larger than the maximum "
    r"number of tokens that can be stored in KV cache \((?P<failed_kv_tokens>NUM)\)\.",
    r"To serve at least one request with the models?'s max seq len "
    r"\((?P<failed_max_model_len>NUM)\), \(?(?P<failed_kv_needed_gib>NUM) GiB KV cache is "
    r"needed, which is larger than the available KV cache memory "
    r"\((?P<failed_kv_available_gib>NUM) GiB\)\.(?: Based on the available memory, the "
    r"estimated maximum model length is (?P<estimated_max_model_len>NUM)\.)?",
    r"No available memory for the cache blocks\.",
)
