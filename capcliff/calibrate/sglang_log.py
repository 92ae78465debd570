"""The lines of an SGLang start-up log that capcliff reads, and the phrases only SGLang prints.

Each line confirmed in SGLang's source: python/sglang/srt/model_executor/model_runner.py,
mem_cache/memory_pool.py, managers/scheduler.py (`max_total_num_tokens=`), the
`server_args=ServerArgs(...)` line. SGLang ("avail mem=6.09 GB") divides by 2**30 and prints
"GB": such figures are GiB (`LoggedFigure.unit` keeps the engine's word).
"""

from __future__ import annotations

from capcliff.calibrate.log_lines import compile_failures, compile_lines

LINES = compile_lines(
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
SIGNATURES = compile_lines(
    r"server_args=ServerArgs\(",
    r"Load weight (?:begin|end)\.",
    r"KV Cache is allocated\. #tokens",
    r"max_total_num_tokens=",
    r"Memory pool end\.",
    r"Capture cuda graph (?:begin|end)\.",
)

# SGLang's refusal to start when the static memory fraction leaves no room for the KV pool.
FAILURES = compile_failures(
    r"Not enough memory\. Please try to increase --mem-fraction-static\.",
)
