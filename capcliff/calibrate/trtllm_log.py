"""The lines of a TensorRT-LLM start-up log that capcliff reads, and the phrases only it prints.

Each line confirmed in TensorRT-LLM's source: cpp kvCacheManager.cpp /
trtGptModelInflightBatching.cpp and tensorrt_llm/_torch/pyexecutor/_util.py (memory profiling
lines).
"""

from __future__ import annotations

from capcliff.calibrate.log_lines import compile_lines

LINES = compile_lines(
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
SIGNATURES = compile_lines(
    r"\[TensorRT-LLM\]",
    r"\[TRT-LLM\]",
    r"for max tokens in paged KV cache",
    r"paged kv cache: total:",
    r"KV cache primary pool",
    r"Number of tokens per block",
)
