"""The fourteenth bad-input campaign's surfaces (issue 23), run by `fuzz_surfaces.py`:

    PYTHONPATH=. python benchmarks/fuzz_surfaces.py serve14 sglang14 trtllm14 layout14 flags14 spec14

What the thirteen campaigns before did not try: engine command lines (`--serve-command`) at the
spellings an engine's own parser reads differently from a plain split (a switch given `=false`
or a following `false`, repeated flags, human-readable integers with `_` or a `T` suffix, flags
of another engine, environment assignments that name fewer GPUs than the layout, a TP that does
not divide the heads, DP x TP past the GPUs given, a speculative config with K in the millions,
JSON that is not JSON; serve14), SGLang's and TensorRT-LLM's own flags at their special values
(`--chunked-prefill-size -1`, `--hicache-size 0`, an unknown write policy or speculative
algorithm, EP on a dense model; sglang14, trtllm14), layout strings whose parts contradict the
model or the GPUs (EP on a dense model, EP that does not divide the experts, PP past the layers,
a part given twice; layout14), flags that contradict one another or the GPU (an arrival against
its rate or clients, FP4 KV on a Hopper, a concurrency range reversed, a max_model_len below the
prompt; flags14) and check specs that combine these keys (spec14).
"""

# Data tables: one case per line, some past 100 characters.
# ruff: noqa: E501
from __future__ import annotations

from collections.abc import Callable, Iterator

import fuzz_surfaces as fs
from fuzz_cases7 import MEM, MOE, ONLINE, SW
from fuzz_harness import Case

# fmt: off
V = "vllm serve meta-llama/Llama-3.1-8B"
S = "python -m sglang.launch_server --model-path meta-llama/Llama-3.1-8B"
SQ = "python -m sglang.launch_server --model-path Qwen/Qwen3-30B-A3B"
T = "trtllm-serve meta-llama/Llama-3.1-8B"
VQ = "vllm serve Qwen/Qwen3-30B-A3B"
SPEC_JSON = '\'{"method":"ngram","num_speculative_tokens":%s,"prompt_lookup_max":4}\''
SPEC_EAGLE = '\'{"method":"eagle3","num_speculative_tokens":%s}\''
G8 = ["--gpus", "8"]

# (name, extra sweep flags, serve command, invalid)
SERVE14: list[tuple[str, list[str], str, bool | None]] = [
    ("switch-eq-false", [], f"{V} --enable-prefix-caching=false", True),
    ("switch-eq-true", [], f"{V} --enforce-eager=true", True),
    ("switch-then-false", [], f"{V} --enable-prefix-caching false", True),
    ("switch-eq-empty", [], f"{V} --enforce-eager=", True),
    ("no-switch-eq-1", [], f"{V} --no-enable-prefix-caching=1", True),
    ("tp-twice-last-wins", ["--gpus", "4"], f"{V} --tensor-parallel-size 2 --tensor-parallel-size 4", None),
    ("tp-long-and-short", ["--gpus", "2"], f"{V} --tensor-parallel-size 4 -tp 2", None),
    ("tp-eq-and-space", ["--gpus", "2"], f"{V} --tensor-parallel-size=2", False),
    ("tp-zero", [], f"{V} --tp 0", True),
    ("tp-3-heads-32", ["--gpus", "3"], f"{V} --tp 3", True),
    ("tp-3-with-8-gpus", G8, f"{V} --tp 3", True),
    ("tp-2-dp-8-on-8", G8, f"{V} --tp 2 --dp 8", True),
    ("tp-8-pp-2-on-8", G8, f"{V} --tp 8 --pp 2", True),
    ("tp-2-with-gpus-1", ["--gpus", "1"], f"{V} --tp 2", True),
    ("tp-underscore", ["--gpus", "2"], f"{V} --tp 0_2", False),
    ("tp-plus", ["--gpus", "2"], f"{V} --tp +2", False),
    ("tp-negative", [], f"{V} --tp -2", True),
    ("tp-float", [], f"{V} --tp 2.0", True),
    ("tp-1k", [], f"{V} --tp 1k", True),
    ("tp-unit-suffix-g", [], f"{V} --tp 1G", True),
    ("tp-shell-variable", [], f"{V} --tp $TP", True),
    ("tp-quoted", ["--gpus", "2"], f"{V} --tp '2'", False),
    ("max-model-len-32k", [], f"{V} --max-model-len 32k", False),
    ("max-model-len-32K", [], f"{V} --max-model-len 32K", False),
    ("max-model-len-underscore", [], f"{V} --max-model-len 32_768", False),
    ("max-model-len-1.5k", [], f"{V} --max-model-len 1.5k", None),
    ("max-model-len-0.5-not-whole", [], f"{V} --max-model-len 0.0005k", True),
    ("max-model-len-past-context", [], f"{V} --max-model-len 200000", True),
    ("max-model-len-past-context-env", [], f"VLLM_ALLOW_LONG_MAX_MODEL_LEN=1 {V} --max-model-len 200000", None),
    ("max-model-len-past-context-env-0", [], f"VLLM_ALLOW_LONG_MAX_MODEL_LEN=0 {V} --max-model-len 200000", True),
    ("max-model-len-below-prompt", [], f"{V} --max-model-len 50", None),
    ("max-model-len-minus-1", [], f"{V} --max-model-len -1", None),
    ("max-model-len-1T", [], f"{V} --max-model-len 1T", True),
    ("max-num-seqs-zero", [], f"{V} --max-num-seqs 0", True),
    ("max-num-seqs-twice", [], f"{V} --max-num-seqs 8 --max-num-seqs=16", None),
    ("gmu-zero", [], f"{V} --gpu-memory-utilization 0", True),
    ("gmu-one", [], f"{V} --gpu-memory-utilization 1", None),
    ("gmu-1.5", [], f"{V} --gpu-memory-utilization 1.5", True),
    ("gmu-negative", [], f"{V} --gpu-memory-utilization -0.5", True),
    ("gmu-percent", [], f"{V} --gpu-memory-utilization 90%", True),
    ("gmu-inf", [], f"{V} --gpu-memory-utilization inf", True),
    ("kv-dtype-fp8", [], f"{V} --kv-cache-dtype fp8", False),
    ("kv-dtype-int3", [], f"{V} --kv-cache-dtype int3", True),
    ("kv-dtype-fp8-on-mi355x", ["--gpu", "mi355x"], f"{V} --kv-cache-dtype fp8", None),
    ("quantization-bogus", [], f"{V} --quantization bogus", None),
    ("quantization-fp8-h100", ["--gpu", "h100-sxm"], f"{V} --quantization fp8", False),
    ("block-size-7", [], f"{V} --block-size 7", None),
    ("block-size-0", [], f"{V} --block-size=0", True),
    ("swap-space-negative", [], f"{V} --swap-space -4", True),
    ("swap-space-nan", [], f"{V} --swap-space nan", True),
    ("kv-offloading-size-zero", [], f"{V} --kv-offloading-size 0", None),
    ("kv-offloading-size-negative", [], f"{V} --kv-offloading-size -8", True),
    ("kv-offloading-size-nan", [], f"{V} --kv-offloading-size nan", True),
    ("kv-offloading-size-inf", [], f"{V} --kv-offloading-size inf", True),
    ("kv-cache-memory-bytes-zero", [], f"{V} --kv-cache-memory-bytes 0", True),
    ("kv-cache-memory-bytes-1G", [], f"{V} --kv-cache-memory-bytes 1G", False),
    ("spec-config-k-huge", [], f"{V} --speculative-config " + SPEC_JSON % "1000000", True),
    ("spec-config-k-zero", [], f"{V} --speculative-config " + SPEC_JSON % "0", True),
    ("spec-config-k-negative", [], f"{V} --speculative-config " + SPEC_JSON % "-3", True),
    ("spec-config-k-float", [], f"{V} --speculative-config " + SPEC_EAGLE % "3.0", False),
    ("spec-config-k-string", [], f"{V} --speculative-config " + SPEC_EAGLE % '"3"', False),
    ("spec-config-not-json", [], f"{V} --speculative-config not-json", True),
    ("spec-config-unknown-method", [], f"{V} --speculative-config " + "'{\"method\":\"medusa9\",\"num_speculative_tokens\":3}'", None),
    ("spec-config-and-flag", ["--speculative", "ngram:5"], f"{V} --speculative-config " + SPEC_JSON % "3", True),
    ("spec-config-mtp-dense", [], f"{V} --speculative-config " + "'{\"method\":\"deepseek_mtp\",\"num_speculative_tokens\":1}'", True),
    ("backslash-newline", [], f"{V} \\\n  --max-num-seqs 8", False),
    ("backslash-crlf", [], f"{V} \\\r\n  --max-num-seqs 8", None),
    ("trailing-backslash", [], f"{V} \\", True),
    ("tabs", [], V.replace(" ", "\t") + "\t--max-num-seqs\t8", False),
    ("unmatched-double-quote", [], f'{V} --max-num-seqs "8', True),
    ("smart-quotes", [], f"{V} --max-num-seqs \u201c8\u201d", True),
    ("sglang-flag-on-vllm", [], f"{V} --mem-fraction-static 0.5", None),
    ("trtllm-flag-on-vllm", [], f"{V} --tp_size 2", None),
    ("cuda-visible-2-tp-4", ["--gpus", "4"], f"CUDA_VISIBLE_DEVICES=0,1 {V} --tp 4", True),
    ("cuda-visible-empty", [], f"CUDA_VISIBLE_DEVICES= {V}", True),
    ("cuda-visible-4-tp-4", ["--gpus", "4"], f"CUDA_VISIBLE_DEVICES=0,1,2,3 {V} --tp 4", False),
    ("env-prefix-binary", [], f"env FOO=1 {V}", None),
    ("no-model", [], "vllm serve", True),
    ("no-model-only-flags", [], "vllm serve --tp 1", True),
    ("model-flag-and-positional", [], f"{V} --model Qwen/Qwen3-8B", True),
    ("model-unknown-repo", [], "vllm serve nobody/NoSuchModel-7B", True),
    ("model-missing-abs-path", [], "vllm serve /nonexistent/llama", True),
    ("model-repo-upper-case", [], "vllm serve META-LLAMA/LLAMA-3.1-8B", None),
    ("model-repo-revision-colon", [], f"{V}:main", True),
    ("api-server-module", [], "python3 -m vllm.entrypoints.openai.api_server --model meta-llama/Llama-3.1-8B", False),
    ("vllm-v0-engine", ["--engine", "vllm-v0"], V, None),
    ("engine-trtllm-vllm-line", ["--engine", "trtllm"], V, True),
    ("ep-dense-vllm", ["--gpus", "2"], f"{V} --tp 2 --enable-expert-parallel", None),
    ("dp-on-dense-vllm", ["--gpus", "2"], f"{V} --data-parallel-size 2", None),
    ("double-dash-then-flags", [], f"{V} -- --tp 2", True),
    ("empty-flag-name", [], f"{V} --=3", True),
    ("triple-dash", ["--gpus", "2"], f"{V} ---tp 2", True),
    ("short-tp-eq", ["--gpus", "2"], f"{V} -tp=2", False),
    ("shell-comment", [], f"{V} # --tp 2", False),  # valid (campaign 20): the shell drops the comment, TP 1 runs
    ("shell-pipe", [], f"{V} | tee log", True),
    ("shell-redirect-background", [], f"{V} > log 2>&1 &", True),
    ("shell-arithmetic", [], f"{V} --max-model-len $((4096*2))", True),
    ("nohup-prefix", [], f"nohup {V}", True),
    ("docker-run", [], "docker run vllm/vllm-openai --model meta-llama/Llama-3.1-8B", True),
    ("offloading-backend-lmcache", [], f"{V} --kv-offloading-size 64 --kv-offloading-backend lmcache", None),
    ("async-on-then-off", [], f"{V} --async-scheduling --no-async-scheduling", None),
    ("pp-2", ["--gpus", "2"], f"{V} --pp 2", False),
    ("pp-past-layers", ["--gpus", "33"], f"{V} --pp 33", True),
    ("batched-tokens-below-seqs", [], f"{V} --max-num-batched-tokens 10", True),
    ("kv-cache-memory-bytes-1T", [], f"{V} --kv-cache-memory-bytes 1T", True),
    ("spec-config-method-list", [], f"{V} --speculative-config " + "'{\"method\":[1],\"num_speculative_tokens\":3}'", None),
    ("spec-config-k-nan", [], f"{V} --speculative-config " + SPEC_EAGLE % "NaN", True),
    ("spec-config-k-1e400", [], f"{V} --speculative-config " + SPEC_EAGLE % "1e400", True),
    ("spec-config-k-17", [], f"{V} --speculative-config " + SPEC_EAGLE % "17", True),
    ("spec-config-k-true", [], f"{V} --speculative-config " + SPEC_EAGLE % "true", True),
]

SGLANG14: list[tuple[str, list[str], str, bool | None]] = [
    ("dpa-tp2-dp2", ["--gpus", "2"], f"{S} --tp 2 --dp 2 --enable-dp-attention", None),
    ("dpa-tp3-dp2", ["--gpus", "3"], f"{S} --tp 3 --dp 2 --enable-dp-attention", True),
    ("dp-zero", [], f"{S} --dp 0", True),
    ("ep-on-dense", ["--gpus", "2"], f"{S} --tp 2 --ep 2", None),
    ("ep-3-moe-tp3", ["--gpus", "3"], f"{SQ} --tp 3 --ep 3", True),
    ("mem-fraction-zero", [], f"{S} --mem-fraction-static 0", True),
    ("mem-fraction-negative", [], f"{S} --mem-fraction-static -0.1", True),
    ("mem-fraction-one", [], f"{S} --mem-fraction-static 1", None),
    ("hicache-size-zero", [], f"{S} --enable-hierarchical-cache --hicache-size 0", None),
    ("hicache-size-negative", [], f"{S} --enable-hierarchical-cache --hicache-size -5", True),
    ("hicache-size-nan", [], f"{S} --enable-hierarchical-cache --hicache-size nan", True),
    ("hicache-policy-bogus", [], f"{S} --enable-hierarchical-cache --hicache-size 64 --hicache-write-policy bogus", True),
    ("hicache-policy-selective", [], f"{S} --enable-hierarchical-cache --hicache-size 64 --hicache-write-policy write_through_selective", None),
    ("max-running-zero", [], f"{S} --max-running-requests 0", True),
    ("spec-steps-zero", [], f"{S} --speculative-algorithm EAGLE --speculative-num-steps 0 --speculative-draft-model-path x/y", True),
    ("spec-steps-huge", [], f"{S} --speculative-algorithm NGRAM --speculative-num-draft-tokens 1000000", True),
    ("spec-algorithm-bogus", [], f"{S} --speculative-algorithm BOGUS --speculative-num-steps 3", True),
    ("spec-nextn-dense", [], f"{S} --speculative-algorithm NEXTN --speculative-num-steps 2", True),
    ("page-size-zero", [], f"{S} --page-size 0", True),
    ("context-length-below-prompt", [], f"{S} --context-length 10", None),
    ("chunked-prefill-minus-1", [], f"{S} --chunked-prefill-size -1", False),
    ("chunked-prefill-zero", [], f"{S} --chunked-prefill-size 0", True),
    ("recv-interval-zero", [], f"{S} --scheduler-recv-interval 0", True),
    ("tp-size-and-tp", ["--gpus", "2"], f"{S} --tp 4 --tp-size 2", None),
    ("moe-a2a-bogus", G8, f"{SQ} --tp 8 --moe-a2a-backend bogus", None),
    ("deepep-mode-bogus", G8, f"{SQ} --tp 8 --ep 8 --moe-a2a-backend deepep --deepep-mode bogus", True),
    ("spec-v2-env-no-spec", [], f"SGLANG_ENABLE_SPEC_V2=1 {S}", None),
    ("model-path-missing", [], "python -m sglang.launch_server --tp 1", True),
    ("vllm-flag-on-sglang", [], f"{S} --gpu-memory-utilization 0.9", None),
    ("positional-model", [], "python -m sglang.launch_server meta-llama/Llama-3.1-8B", True),
    ("python3.12", [], "python3.12 -m sglang.launch_server --model-path meta-llama/Llama-3.1-8B", False),
    ("model-flag", [], "python -m sglang.launch_server --model meta-llama/Llama-3.1-8B", False),
    ("eagle-topk-zero", [], f"{S} --speculative-algorithm EAGLE --speculative-num-steps 3 --speculative-eagle-topk 0", True),
    ("ngram-one-draft", [], f"{S} --speculative-algorithm NGRAM --speculative-num-draft-tokens 1", None),
    ("standalone", [], f"{S} --speculative-algorithm STANDALONE --speculative-num-steps 3", None),
    ("algorithm-lower-case", [], f"{S} --speculative-algorithm eagle3 --speculative-num-steps 3 --speculative-draft-model-path a/b", None),
    ("hicache-size-tiny", [], f"{S} --enable-hierarchical-cache --hicache-size 0.0001", True),
    ("hicache-size-huge", [], f"{S} --enable-hierarchical-cache --hicache-size 1e30", True),
    ("hicache-size-without-enable", [], f"{S} --hicache-size 64", None),
    ("moe-runner-bogus", [], f"{S} --moe-runner-backend bogus", True),
    ("fp8-gemm-bogus", [], f"{S} --fp8-gemm-backend bogus", None),
    ("mem-fraction-tiny", [], f"{S} --mem-fraction-static 0.01", None),
    ("disable-radix-eq-true", [], f"{S} --disable-radix-cache=true", True),
]

TRTLLM14: list[tuple[str, list[str], str, bool | None]] = [
    ("tp2", ["--gpus", "2"], f"{T} --tp_size 2", False),
    ("tp0", [], f"{T} --tp_size 0", True),
    ("serve-subcommand", [], "trtllm-serve serve meta-llama/Llama-3.1-8B", False),
    ("ep3-tp8-dense", G8, f"{T} --tp_size 8 --ep_size 3", True),
    ("max-batch-zero", [], f"{T} --max_batch_size 0", True),
    ("free-fraction-1.5", [], f"{T} --kv_cache_free_gpu_memory_fraction 1.5", True),
    ("free-fraction-zero", [], f"{T} --kv_cache_free_gpu_memory_fraction 0", True),
    ("max-seq-len-zero", [], f"{T} --max_seq_len 0", True),
    ("dash-spelling", ["--gpus", "2"], f"{T} --tp-size 2", None),
    ("backend-pytorch", [], f"{T} --backend pytorch", False),
    ("no-model", [], "trtllm-serve --tp_size 1", True),
    ("engine-vllm-trtllm-line", ["--engine", "vllm"], T, True),
    ("free-fraction-nan", [], f"{T} --kv_cache_free_gpu_memory_fraction nan", True),
    ("max-num-tokens-1", [], f"{T} --max_num_tokens 1", True),
    ("pp2", ["--gpus", "2"], f"{T} --pp_size 2", False),
    ("ep2-dense", ["--gpus", "2"], f"{T} --ep_size 2 --tp_size 2", True),
    ("max-seq-len-below-prompt", [], f"{T} --max_seq_len 50", None),
    ("serve-no-model", [], "trtllm-serve serve", True),
    ("binary-path", [], "/usr/bin/trtllm-serve meta-llama/Llama-3.1-8B", False),
]

LAYOUT14: list[tuple[str, list[str], bool | None]] = [
    ("dp2-tp4-pp2-ep8-on-8", [*SW, *G8, "--layout", "dp2-tp4-pp2-ep8"], True),
    ("ep2-dense", [*SW, "--gpus", "2", "--layout", "tp2-ep2"], True),
    ("ep3-128-experts", [*MOE, "--gpus", "3", "--layout", "tp3-ep3"], True),
    ("ep-past-experts", ["sweep", "qwen3-30b-a3b", *fs.SMALL, "--concurrency", "4", "--gpus", "256", "--layout", "dp256-ep256"], True),
    ("pp-past-layers", [*SW, "--gpus", "64", "--layout", "pp64"], True),
    ("pp-equal-layers", [*SW, "--gpus", "32", "--layout", "pp32"], None),
    ("tp-twice", [*SW, "--gpus", "8", "--layout", "tp2-tp4"], True),
    ("dp-twice", [*SW, "--gpus", "4", "--layout", "dp2-dp2"], True),
    ("tp-negative", [*SW, "--layout", "tp-2"], True),
    ("double-dash", [*SW, "--gpus", "4", "--layout", "tp2--pp2"], True),
    ("trailing-dash", [*SW, "--gpus", "2", "--layout", "tp2-"], True),
    ("upper-case", [*SW, "--gpus", "2", "--layout", "TP2"], None),
    ("list-with-repeat", [*SW, "--gpus", "2", "--layout", "tp2,tp2"], None),
    ("list-one-too-big", [*SW, "--gpus", "2", "--layout", "tp2,tp4"], True),
    ("tp-3-heads", [*SW, "--gpus", "3", "--layout", "tp3"], True),
    ("tp-past-kv-heads", [*SW, "--gpus", "16", "--layout", "tp16"], None),
    ("tp-past-heads", [*SW, "--gpus", "64", "--layout", "tp64"], True),
    ("dp-below-gpus", [*SW, *G8, "--layout", "dp2"], None),
    ("memory-dp2-tp4-pp2", [*MEM[:-2], *G8, "--layout", "dp2-tp4-pp2"], True),
    ("memory-ep-dense", [*MEM[:-2], "--gpus", "2", "--layout", "tp2-ep2"], None),
    ("plan-layout-past-gpus", [*ONLINE, "--layout", "tp2"], True),
    ("plan-layout-ep-dense", [*ONLINE[:-6], "--gpus", "2", "--rate", "2", "--slo-ttft", "2", "--layout", "tp2-ep2"], None),
    ("routing-bogus", [*SW, "--routing", "random"], True),
    ("routing-least-loaded-dp1", [*SW, "--routing", "least-loaded"], None),
    ("routing-upper", [*SW, "--gpus", "2", "--layout", "dp2", "--routing", "LEAST-LOADED"], None),
]

FLAGS14: list[tuple[str, list[str], bool | None]] = [
    ("arrival-batch-rate", [*SW, "--arrival", "batch", "--rate", "2"], True),
    ("arrival-poisson-clients", [*SW, "--arrival", "poisson", "--clients", "4"], True),
    ("arrival-clients-rate", [*SW, "--arrival", "clients", "--rate", "2"], True),
    ("rate-and-clients", [*SW, "--rate", "2", "--clients", "4"], True),
    ("arrival-poisson-no-rate-sweep", [*SW, "--arrival", "poisson"], None),
    ("plan-arrival-batch-rate", [*ONLINE, "--arrival", "batch"], True),
    ("plan-arrival-clients-rate", [*ONLINE, "--arrival", "clients"], True),
    ("kv-fp4-h100", [*SW, "--gpu", "h100-sxm", "--kv-dtype", "fp4"], None),
    ("kv-fp8-mi300x", [*SW, "--gpu", "mi300x", "--kv-dtype", "fp8"], None),
    ("weight-fp4-h100", [*SW, "--gpu", "h100-sxm", "--weight-dtype", "fp4"], None),
    ("weight-fp8-mi300x", [*SW, "--gpu", "mi300x", "--weight-dtype", "fp8"], None),
    ("weight-nvfp4-mi300x", [*SW, "--gpu", "mi300x", "--weight-dtype", "nvfp4"], None),
    ("kv-dtype-bogus", [*SW, "--kv-dtype", "fp3"], True),
    ("weight-dtype-bogus", [*SW, "--weight-dtype", "int3"], True),
    ("max-model-len-below-prompt", [*SW, "--max-model-len", "50"], None),
    ("max-model-len-past-context", [*SW, "--max-model-len", "1000000"], True),
    ("max-model-len-past-allowed", [*SW, "--max-model-len", "1000000", "--allow-long-max-model-len"], None),
    ("gmu-1.5", [*SW, "--gpu-memory-utilization", "1.5"], True),
    ("gmu-0.01", [*SW, "--gpu-memory-utilization", "0.01"], None),
    ("gmu-1", [*SW, "--gpu-memory-utilization", "1"], None),
    ("gtm-no-unit", [*SW, "--gpu-total-memory", "80"], None),
    ("gtm-GB", [*SW, "--gpu-total-memory", "80GB"], None),
    ("gtm-zero", [*SW, "--gpu-total-memory", "0GiB"], True),
    ("gtm-above-card", [*SW, "--gpu", "h100-sxm", "--gpu-total-memory", "200GiB"], None),
    ("gtm-negative", [*SW, "--gpu-total-memory", "-80GiB"], True),
    ("gtm-percent", [*SW, "--gpu-total-memory", "90%"], True),
    ("concurrency-range", [*SW[:-1], "32..1024"], False),
    ("concurrency-reversed", [*SW[:-1], "1024..32"], True),
    ("concurrency-zero-start", [*SW[:-1], "0..64"], True),
    ("concurrency-same-ends", [*SW[:-1], "32..32"], None),
    ("concurrency-points-zero", [*SW[:-1], "32..1024:0"], True),
    ("concurrency-points-one", [*SW[:-1], "32..1024:1"], None),
    ("concurrency-points-huge", [*SW[:-1], "32..1024:100000"], None),
    ("concurrency-three-dots", [*SW[:-1], "32...1024"], True),
    ("concurrency-step-word", [*SW[:-1], "32..1024 step 32"], True),
    ("concurrency-negative", [*SW[:-1], "-4"], True),
    ("concurrency-list-range", [*SW[:-1], "4,8..16"], None),
    ("concurrency-dup", [*SW[:-1], "4,4,4"], None),
    ("osl-lognormal-p99-below-mean", [*SW[:2], "--isl", "100", "--num-requests", "20", "--concurrency", "4", "--osl", "lognormal:1000:500"], True),
    ("osl-lognormal-zero", [*SW[:2], "--isl", "100", "--num-requests", "20", "--concurrency", "4", "--osl", "lognormal:0:100"], True),
    ("osl-lognormal-max-below-mean", [*SW[:2], "--isl", "100", "--num-requests", "20", "--concurrency", "4", "--osl", "lognormal:1000:2000:10"], True),
    ("osl-lognormal-extra-part", [*SW[:2], "--isl", "100", "--num-requests", "20", "--concurrency", "4", "--osl", "lognormal:100:200:400:800"], True),
    ("osl-range", [*SW[:2], "--isl", "100", "--num-requests", "20", "--concurrency", "4", "--osl", "100..200"], True),
    ("osl-list-and-zero", [*SW[:2], "--isl", "100", "--num-requests", "20", "--concurrency", "4", "--osl", "100,0"], True),
    ("osl-hist-missing", [*SW[:2], "--isl", "100", "--num-requests", "20", "--concurrency", "4", "--osl", "hist:{d}/none.csv"], True),
    ("isl-above-context", [*SW[:2], "--isl", "200000", "--osl", "10", "--num-requests", "4", "--concurrency", "4"], None),
    ("num-requests-1", [*SW[:2], "--isl", "100", "--osl", "100", "--num-requests", "1", "--concurrency", "4"], None),
    ("num-requests-1-plan-online", [*ONLINE[:2], "--jobs", "1", "--isl", "100", "--osl", "100", "--num-requests", "1", "--gpus", "1", "--rate", "2", "--slo-ttft", "2"], None),
    ("slo-tpot-tiny", [*ONLINE, "--slo-tpot", "1e-9"], None),
    ("slo-ttft-negative-zero", [*ONLINE[:-2], "--slo-ttft", "-0.0"], True),
    ("seed-2-64", [*SW, "--seed", str(2**64)], None),
    ("format-upper", [*SW, "--format", "JSON"], None),
    ("plan-format-csv", [*ONLINE, "--format", "csv"], True),
    ("price-per-gpu-with-one-gpu-list", [*ONLINE, "--price-gpu-hour", "2,3"], True),
    ("price-gpu-list-priced-inline", [*ONLINE[:-6], "--gpus", "1", "--rate", "2", "--gpu", "h100-sxm:2,h200-sxm:3"], True),
    ("offload-two-nvme", [*fs.OFFLOAD_BASE, "--offload", "nvme:1TiB,nvme:2TiB"], True),
    ("offload-nvme-before-cpu-dup", [*fs.OFFLOAD_BASE, "--offload", "cpu:8GiB,nvme:1TiB,nvme:1TiB"], True),
    ("offload-zero", [*fs.OFFLOAD_BASE, "--offload", "cpu:0GiB"], True),
    ("offload-disk", [*fs.OFFLOAD_BASE, "--offload", "disk:1TiB"], True),
    ("speculative-eagle-k0", [*SW, "--speculative", "eagle:0"], True),
    ("speculative-ngram-huge", [*SW, "--speculative", "ngram:100000"], True),
    ("speculative-ngram-negative", [*SW, "--speculative", "ngram:-3"], True),
    ("speculative-mtp-dense", [*SW, "--speculative", "mtp:2"], True),
    ("speculative-medusa", [*SW, "--speculative", "medusa:3"], True),
    ("speculative-trtllm-ngram", [*SW, "--engine", "trtllm", "--speculative", "ngram:3"], None),
    ("speculative-eagle-empty-draft", [*SW, "--speculative", "eagle:3:"], True),
    ("speculative-eagle-blank-draft", [*SW, "--speculative", "eagle:3: "], True),
    ("speculative-acceptance-too-many", [*SW, "--speculative", "ngram:2", "--spec-acceptance", "0.8,0.6,0.4"], True),
    ("speculative-acceptance-above-1", [*SW, "--speculative", "ngram:2", "--spec-acceptance", "1.5,0.6"], True),
    ("speculative-accept-length-past-k", [*SW, "--speculative", "ngram:2", "--spec-accept-length", "4"], True),
    ("disagg-tp-not-dividing", [*SW, "--disagg", "1p:tp3,1d:tp1"], True),
    ("disagg-negative", [*SW, "--disagg", "-1p:tp1,1d:tp1"], True),
    ("disagg-duplicate-decode", [*SW, "--disagg", "1p:tp1,1d:tp1,2d:tp1"], True),
    ("disagg-slash", [*SW, "--disagg", "1p:tp1/1d:tp1"], True),
    ("disagg-huge-count", [*SW, "--disagg", "100000p:tp1,100000d:tp1"], None),
    ("disagg-missing-count", [*SW, "--disagg", "p:tp1,1d:tp1"], True),
    ("disagg-ep-dense", [*SW, "--disagg", "1p:tp2-ep2,1d:tp1"], True),
    ("disagg-and-layout", [*SW, "--gpus", "2", "--layout", "tp2", "--disagg", "1p:tp1,1d:tp1"], True),
    ("disagg-and-serve-command", [*SW, "--disagg", "1p:tp1,1d:tp2", "--serve-command", f"{V} --tp 4"], True),
    ("disagg-gpus-too-few", [*SW, "--gpus", "1", "--disagg", "1p:tp1,1d:tp1"], True),
    ("workload-preset-upper", [*SW[:2], "--workload", "CHAT", "--concurrency", "4", "--num-requests", "20"], None),
    ("workload-preset-typo", [*SW[:2], "--workload", "chats", "--concurrency", "4", "--num-requests", "20"], True),
    ("workload-and-isl-session", [*SW[:2], "--workload", "multiturn-chat", "--isl", "100", "--concurrency", "4", "--num-requests", "20"], None),
    ("turns-on-single-turn", [*SW, "--turns", "3"], True),
    ("think-time-on-batch", [*SW, "--think-time", "5"], True),
    ("env-sim-core-garbage", [*SW], None),
]

SPEC14_SCENARIOS: list[tuple[str, str, bool | None]] = [
    ("serve-switch-eq-false", f'serve_command = "{V} --enable-prefix-caching=false"', True),
    ("serve-tp-3", f'serve_command = "{V} --tp 3"\ngpus = 3', True),
    ("serve-and-layout-agree", f'serve_command = "{V} --tp 1"', False),
    ("serve-cuda-visible", f'serve_command = "CUDA_VISIBLE_DEVICES=0 {V} --tp 2"\ngpus = 2', True),
    ("serve-spec-k-huge", f"serve_command = '''{V} --speculative-config {{\"method\":\"ngram\",\"num_speculative_tokens\":1000000}}'''", True),
    ("serve-hicache-negative", f'serve_command = "{S} --enable-hierarchical-cache --hicache-size -5"', True),
    ("layout-ep-dense", 'layout = "tp2-ep2"', True),
    ("speculative-huge", 'speculative = "ngram:100000"', True),
    ("speculative-and-serve", f"speculative = \"ngram:5\"\nserve_command = '''{V} --speculative-config {{\"method\":\"ngram\",\"num_speculative_tokens\":3}}'''", True),
    ("offload-dup-tier", 'offload = "cpu:8GiB,cpu:8GiB"', True),
    ("disagg-tp3", 'disagg = "1p:tp3,1d:tp1"', True),
    ("kv-fp4-h100", 'kv_cache_dtype = "fp4"', None),
    ("gmu-1.5", "gpu_memory_utilization = 1.5", True),
    ("gtm-zero", 'gpu_total_memory = "0GiB"', True),
]
# fmt: on


def _serve(surface: str, table: list[tuple[str, list[str], str, bool | None]]) -> Iterator[Case]:
    for name, extra, command, invalid in table:
        base = MOE if "Qwen3-30B" in command else SW
        yield Case(surface, name, [*base, *extra, "--serve-command", command], {}, invalid)


def serve14_cases() -> Iterator[Case]:
    yield from _serve("serve14", SERVE14)
    # the same lines through memory and plan, whose targets are read from the command
    for name, command, invalid in [
        ("memory-tp-3", f"{V} --tp 3", None),
        ("memory-cuda-visible", f"CUDA_VISIBLE_DEVICES=0 {V} --tp 2", True),
        ("memory-switch-eq-false", f"{V} --enforce-eager=false", True),
        ("memory-catalogue-line", f"{V} --tp 2", None),
    ]:
        yield Case("serve14", name, ["memory", "--serve-command", command], {}, invalid)
    for name, command, invalid in [
        ("plan-tp-3", f"{V} --tp 3", True),
        ("plan-dp-tp-past-gpus", f"{V} --tp 2 --dp 2", True),
        ("plan-spec-k-huge", f"{V} --speculative-config " + SPEC_JSON % "1000000", True),
    ]:
        yield Case("serve14", name, [*ONLINE, "--serve-command", command], {}, invalid)


def sglang14_cases() -> Iterator[Case]:
    yield from _serve("sglang14", SGLANG14)


def trtllm14_cases() -> Iterator[Case]:
    yield from _serve("trtllm14", TRTLLM14)


def layout14_cases() -> Iterator[Case]:
    for name, argv, invalid in LAYOUT14:
        yield Case("layout14", name, argv, {}, invalid)


def flags14_cases() -> Iterator[Case]:
    for name, argv, invalid in FLAGS14:
        env = {"CAPCLIFF_SIM_CORE": "garbage"} if name.startswith("env-") else None
        yield Case("flags14", name, argv, {}, invalid, env=env)
    for columns in ("abc", "0", "-5", "99999999"):
        yield Case("flags14", f"env-columns-{columns}", SW, {}, None, env={"COLUMNS": columns})


def spec14_cases() -> Iterator[Case]:
    for name, key, invalid in SPEC14_SCENARIOS:
        spec = fs.SPEC.replace('engine = "vllm"\n', f'engine = "vllm"\n{key}\n', 1)
        if key.startswith("layout"):
            spec = fs.SPEC.replace('layout = "tp1"', key)
        if "serve_command" in key:  # the layout (and the engine) from the command
            spec = spec.replace('layout = "tp1"\n', "")
            spec = spec.replace('engine = "vllm"', 'engine = "sglang"') if "sglang" in key else spec
        yield Case("spec14", name, ["check", "{d}/s.toml"], {"s.toml": spec}, invalid)


SURFACES14: dict[str, Callable[[], Iterator[Case]]] = {
    "serve14": serve14_cases,
    "sglang14": sglang14_cases,
    "trtllm14": trtllm14_cases,
    "layout14": layout14_cases,
    "flags14": flags14_cases,
    "spec14": spec14_cases,
}
