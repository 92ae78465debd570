"""The fifteenth bad-input campaign's surfaces (issue 23), run by `fuzz_surfaces.py`:

    PYTHONPATH=. python benchmarks/fuzz_surfaces.py expert15 combos15 spec15 outputs15

What the fourteen campaigns before did not try: the spellings an expert types from the engines'
own command lines into capcliff's flags and `--serve-command` (vLLM's `auto` KV dtype and its
human-readable integers, `fp8_e5m2`, `bfloat16`, SGLang's and TensorRT-LLM's aliases; expert15,
all valid), flags that only mean something beside another flag given without it or against it
(a batch plan with a headroom or a plot, an engine's own knob under another engine, swap space
without swap preemption; combos15), check specs whose TOML is valid but whose shape is not the
one documented, or whose numbers are TOML's own spellings (hex, octal, underscores, `inf`;
spec15) and outputs that point at a run's own inputs by another road, at devices or at folders
(outputs15).
"""

# Data tables: one case per line, some past 100 characters.
# ruff: noqa: E501
from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import fuzz_surfaces as fs
from fuzz_cases7 import MEM, ONLINE, SW
from fuzz_harness import Case

# fmt: off
V = "vllm serve meta-llama/Llama-3.1-8B"
S = "python -m sglang.launch_server --model-path meta-llama/Llama-3.1-8B"
T = "trtllm-serve meta-llama/Llama-3.1-8B"
BATCH = [*ONLINE[:-6], "--gpus", "1", "--arrival", "batch"]
Table = list[tuple[str, list[str], bool | None]]

# Valid spellings an expert copies from an engine's CLI (invalid=False: a refusal is a finding).
EXPERT15: Table = [
    ("kv-dtype-auto", [*SW, "--kv-cache-dtype", "auto"], False),
    ("kv-dtype-auto-memory", [*MEM, "--kv-cache-dtype", "auto"], False),
    ("kv-dtype-auto-plan", [*ONLINE, "--kv-cache-dtype", "auto"], False),
    ("kv-dtype-fp8-e5m2", [*SW, "--kv-cache-dtype", "fp8_e5m2"], False),
    ("kv-dtype-fp8-e4m3", [*SW, "--kv-cache-dtype", "fp8_e4m3"], False),
    ("kv-dtype-bfloat16", [*SW, "--kv-cache-dtype", "bfloat16"], False),
    ("kv-dtype-float16", [*SW, "--kv-cache-dtype", "float16"], False),
    ("weight-dtype-bfloat16", [*SW, "--weight-dtype", "bfloat16"], False),
    ("weight-dtype-float16", [*SW, "--weight-dtype", "float16"], False),
    ("weight-dtype-half", [*SW, "--weight-dtype", "half"], False),
    ("quantization-fp8", [*SW, "--quantization", "fp8"], False),
    ("quantization-awq-marlin", [*SW, "--quantization", "awq_marlin"], None),
    ("quantization-gptq-marlin", [*SW, "--quantization", "gptq_marlin"], None),
    ("quantization-modelopt-fp4", [*SW, "--gpu", "b200", "--quantization", "modelopt_fp4"], None),
    ("max-model-len-32k", [*SW, "--max-model-len", "32k"], False),
    ("max-model-len-32K", [*SW, "--max-model-len", "32K"], False),
    ("max-model-len-underscore", [*SW, "--max-model-len", "32_768"], False),
    ("max-num-batched-tokens-8k", [*SW, "--max-num-batched-tokens", "8k"], None),
    ("max-num-seqs-1k", [*SW, "--max-num-seqs", "1k"], None),
    ("gmu-leading-dot", [*SW, "--gpu-memory-utilization", ".9"], False),
    ("gmu-trailing-zero", [*SW, "--gpu-memory-utilization", "0.90"], False),
    ("swap-space-vllm-gib-number", [*SW, "--preemption", "swap", "--swap-space", "4"], True),
    # G alone: vLLM reads 2^30, Kubernetes 10^9; refused in one line that names GiB and GB
    ("swap-space-4G", [*SW, "--preemption", "swap", "--swap-space", "4G"], None),
    ("kv-cache-memory-20G", [*SW, "--kv-cache-memory", "20G"], None),
    ("kv-cache-memory-bytes", [*SW, "--kv-cache-memory", "21474836480"], False),
    ("gpu-total-memory-80G", [*SW, "--gpu-total-memory", "80G"], None),
    ("model-hf-repo", ["sweep", "meta-llama/Llama-3.1-8B", *fs.SMALL, "--concurrency", "4"], False),
    ("model-hf-repo-no-card", ["sweep", "meta-llama/Llama-3.1-8B-Instruct", *fs.SMALL, "--concurrency", "4"], True),
    ("model-hf-repo-upper", ["memory", "META-LLAMA/LLAMA-3.1-8B", "--gpus", "1"], False),
    ("model-hf-repo-memory", ["memory", "meta-llama/Llama-3.1-8B", "--gpus", "1"], False),
    ("model-hf-repo-qwen", ["memory", "Qwen/Qwen3-30B-A3B", "--gpus", "1"], False),
    ("concurrency-spaces", [*SW[:-1], "4, 8, 16"], False),
    ("layout-list-spaces", [*SW, "--gpus", "2", "--layout", "tp2, dp2"], False),
    ("gpu-list-spaces", [*ONLINE, "--gpu", "h100-sxm, h200-sxm"], False),
    ("engine-vLLM", [*SW, "--engine", "vLLM"], None),
    ("engine-SGLang", [*SW, "--engine", "SGLang"], None),
    ("engine-tensorrt-llm", [*SW, "--engine", "tensorrt-llm"], None),
    ("engine-trt-llm", [*SW, "--engine", "trt-llm"], None),
    ("speculative-EAGLE3", [*SW, "--speculative", "EAGLE3:3"], False),
    ("speculative-NGRAM", [*SW, "--speculative", "NGRAM:3", "--spec-accept-length", "1.5"], False),
    ("speculative-nextn-r1", ["sweep", "deepseek-r1", *fs.SMALL, "--concurrency", "4", "--gpu", "b200", "--gpus", "8", "--speculative", "nextn:1"], False),
    ("speculative-eagle3", [*SW, "--speculative", "eagle3:3"], False),
    ("rate-exponent", [*ONLINE[:-4], "--rate", "2e0", "--slo-ttft", "2"], False),
    ("seed-large", [*SW, "--seed", str(2**32 - 1)], False),
    ("offload-cpu-gb-lower", [*fs.OFFLOAD_BASE, "--offload", "cpu:64gb"], None),
    ("calibrate-layout-upper", ["calibrate", str(fs.LOGS / "vllm_v1_v16_llama31_8b_eager.txt"), "--layout", "TP1"], None),
]

# serve commands an expert runs today (each valid: a refusal is a finding)
SERVE15: list[tuple[str, list[str], str, bool | None]] = [
    ("vllm-everyday", [], f"{V} --host 0.0.0.0 --port 8000 --served-model-name llama --disable-log-requests --trust-remote-code", False),
    ("vllm-eq-everywhere", ["--gpus", "2"], f"{V} --tensor-parallel-size=2 --gpu-memory-utilization=0.95 --max-model-len=8k --max-num-seqs=256", False),
    ("vllm-kv-e4m3", [], f"{V} --kv-cache-dtype fp8_e4m3", False),
    ("vllm-kv-e5m2", [], f"{V} --kv-cache-dtype fp8_e5m2", False),
    ("vllm-dtype-bfloat16", [], f"{V} --dtype bfloat16", False),
    ("vllm-dtype-half", [], f"{V} --dtype half", False),
    ("vllm-dtype-float32", [], f"{V} --dtype float32", None),
    ("vllm-underscores", ["--gpus", "2"], f"{V} --tensor_parallel_size 2 --max_num_seqs 64", False),
    ("vllm-gmu-dot", [], f"{V} --gpu-memory-utilization .85", False),
    ("vllm-swap-space-number", [], f"{V} --swap-space 8", False),
    ("vllm-kv-cache-memory-bytes-G", [], f"{V} --kv-cache-memory-bytes 20G", False),
    ("vllm-max-batched-8k", [], f"{V} --max-num-batched-tokens 8k", False),
    ("vllm-config-yaml", [], f"{V} --config cfg.yaml", None),
    ("vllm-O3", [], f"{V} -O3", False),
    ("vllm-compilation-json", [], V + " --compilation-config '{\"level\": 3}'", False),
    ("vllm-generation-config", [], f"{V} --generation-config auto", False),
    ("vllm-block-size-32", [], f"{V} --block-size 32", False),
    ("vllm-prefix-on", [], f"{V} --enable-prefix-caching", False),
    ("vllm-chunked-prefill", [], f"{V} --enable-chunked-prefill", False),
    ("vllm-model-flag", [], "vllm serve --model meta-llama/Llama-3.1-8B", None),
    ("vllm-instruct", [], "vllm serve meta-llama/Llama-3.1-8B-Instruct", None),
    ("vllm-seed", [], f"{V} --seed 1234", False),
    ("vllm-uv-run", [], f"uv run {V}", None),
    ("vllm-python-m-cli", [], "python -m vllm.entrypoints.cli.main serve meta-llama/Llama-3.1-8B", None),
    ("sglang-tp-size", ["--gpus", "2"], f"{S} --tp-size 2", False),
    ("sglang-tensor-parallel-size", ["--gpus", "2"], f"{S} --tensor-parallel-size 2", False),
    ("sglang-everyday", [], f"{S} --host 0.0.0.0 --port 30000 --trust-remote-code --attention-backend fa3", False),
    ("sglang-kv-e5m2", [], f"{S} --kv-cache-dtype fp8_e5m2", False),
    ("sglang-kv-auto", [], f"{S} --kv-cache-dtype auto", False),
    ("sglang-context-length", [], f"{S} --context-length 8192 --max-running-requests 128 --chunked-prefill-size 8192", False),
    ("sglang-mem-dot", [], f"{S} --mem-fraction-static .85", False),
    ("sglang-model-path-eq", [], "python -m sglang.launch_server --model-path=meta-llama/Llama-3.1-8B", False),
    ("sglang-dtype", [], f"{S} --dtype bfloat16", False),
    ("sglang-quantization-fp8", [], f"{S} --quantization fp8", False),
    ("trtllm-everyday", [], f"{T} --backend pytorch --max_batch_size 64 --max_num_tokens 8192 --kv_cache_free_gpu_memory_fraction 0.9 --host 0.0.0.0 --port 8000", False),
    ("trtllm-extra-options", [], f"{T} --extra_llm_api_options cfg.yml", None),
    ("trtllm-trust-remote-code", [], f"{T} --trust_remote_code", False),
    ("trtllm-max-seq-len", [], f"{T} --max_seq_len 8192", False),
]

# flags that mean something only beside another flag, or for another engine
COMBOS15: Table = [
    ("plan-batch-headroom", [*BATCH, "--headroom", "0.5"], True),
    ("plan-batch-plot", [*BATCH, "--plot", "{d}/p.png"], True),
    ("plan-batch-slo", [*BATCH, "--slo-ttft", "2"], None),
    ("plan-online-objective-cost", [*ONLINE, "--objective", "cost"], True),
    ("plan-nodes-and-gpus-disagree", [*ONLINE[:-6], "--gpus", "4", "--nodes", "1", "--rate", "2", "--slo-ttft", "2"], True),
    ("plan-nodes-and-gpus-agree", [*ONLINE[:-6], "--gpus", "8", "--nodes", "1", "--rate", "2", "--slo-ttft", "2"], None),
    ("plan-nodes-zero", [*ONLINE[:-6], "--nodes", "0", "--rate", "2", "--slo-ttft", "2"], True),
    ("plan-nodes-huge", [*ONLINE[:-6], "--nodes", "1000000", "--rate", "2", "--slo-ttft", "2"], True),
    ("plan-serve-local-path-catalog", [*ONLINE, "--serve-local-path"], None),
    ("plan-jobs-zero", [*ONLINE[:2], "--jobs", "0", *ONLINE[4:]], True),
    ("plan-jobs-huge", [*ONLINE[:2], "--jobs", "100000", *ONLINE[4:]], None),
    ("plan-price-without-gpu-list", [*ONLINE, "--price-gpu-hour", "2.5"], False),
    ("plan-price-three-for-two", [*ONLINE, "--gpu", "h100-sxm,h200-sxm", "--price-gpu-hour", "1,2,3"], True),
    ("plan-price-dup-gpu", [*ONLINE, "--gpu", "h100-sxm,h100-sxm", "--price-gpu-hour", "1,2"], True),
    ("plan-disagg-batch", [*BATCH, "--disagg"], None),
    ("plan-disagg-layout-tp2-gpus-1", [*ONLINE, "--disagg", "--layout", "tp2"], True),
    ("sweep-swap-space-no-swap", [*SW, "--swap-space", "8GiB"], None),  # a warning, by design
    ("sweep-offload-policy-no-offload", [*SW, "--offload-policy", "write-back"], True),
    ("sweep-kv-transfer-no-disagg", [*SW, "--kv-transfer-overhead-ms", "5"], True),
    ("sweep-spec-acceptance-no-speculative", [*SW, "--spec-acceptance", "0.8,0.6"], True),
    ("sweep-spec-accept-length-no-speculative", [*SW, "--spec-accept-length", "2"], True),
    ("sweep-spec-overlap-vllm", [*SW, "--speculative", "ngram:3", "--spec-overlap"], True),
    ("sweep-recv-interval-vllm", [*SW, "--scheduler-recv-interval", "4"], True),
    ("sweep-adp-balance-vllm", [*SW, "--attention-dp-balance", "on"], True),
    ("sweep-mem-fraction-vllm", [*SW, "--mem-fraction-static", "0.8"], True),
    ("sweep-gmu-sglang", [*SW, "--engine", "sglang", "--gpu-memory-utilization", "0.8"], True),
    ("sweep-free-fraction-vllm", [*SW, "--free-gpu-memory-fraction", "0.8"], True),
    ("sweep-chunked-prefill-v1", [*SW, "--no-enable-chunked-prefill"], True),
    ("sweep-fp8-gemm-vllm", [*SW, "--fp8-gemm-backend", "flashinfer_trtllm"], None),
    ("sweep-routing-dp1", [*SW, "--routing", "least-loaded"], None),
    ("sweep-context-single-turn", [*SW, "--context", "1000"], True),
    ("sweep-turns-trace", ["sweep", "llama-3.1-8b", "--workload", "{d}/t.jsonl", "--concurrency", "4", "--turns", "3"], True),
    ("sweep-rrr-trace", ["sweep", "llama-3.1-8b", "--workload", "{d}/t.jsonl", "--concurrency", "4", "--random-range-ratio", "0.5"], True),
    ("sweep-rrr-lognormal", [*SW[:2], "--isl", "100", "--num-requests", "20", "--concurrency", "4", "--osl", "lognormal:100:200", "--random-range-ratio", "0.5"], None),
    ("sweep-isl-trace", ["sweep", "llama-3.1-8b", "--workload", "{d}/t.jsonl", "--concurrency", "4", "--isl", "100"], True),
    ("sweep-num-requests-trace", ["sweep", "llama-3.1-8b", "--workload", "{d}/t.jsonl", "--concurrency", "4", "--num-requests", "50"], None),
    ("sweep-clients-and-concurrency-list", [*SW[:-1], "4,8", "--clients", "4"], None),
    ("sweep-isl-past-max-model-len", [*SW, "--max-model-len", "150"], True),
    ("sweep-osl-past-context", [*SW[:2], "--isl", "100", "--osl", "200000", "--num-requests", "4", "--concurrency", "4"], None),
    ("sweep-block-size-past-max-model-len", [*SW, "--block-size", "4096", "--max-model-len", "1024"], None),
    ("sweep-max-batched-below-isl-v0", [*SW, "--engine", "vllm-v0", "--no-enable-chunked-prefill", "--max-num-batched-tokens", "50"], True),
    ("sweep-gpus-zero-layout-tp1", [*SW, "--gpus", "0", "--layout", "tp1"], True),
    ("sweep-layout-dp-gpus", [*SW, "--gpus", "4", "--layout", "dp4"], False),
    ("sweep-layout-total-under-gpus", [*SW, "--gpus", "4", "--layout", "tp2"], None),
    ("memory-layout-list", [*MEM[:-2], "--gpus", "2", "--layout", "tp2,dp2"], None),
    ("memory-layout-all-upper", [*MEM, "--layout", "ALL"], None),
    ("memory-gpus-huge", [*MEM[:-2], "--gpus", "1048576"], None),
    ("memory-gpus-2-63", [*MEM[:-2], "--gpus", str(2**63)], True),
    ("calibrate-gpus-zero", ["calibrate", str(fs.LOGS / "vllm_v1_v16_llama31_8b_eager.txt"), "--gpus", "0"], True),
    ("calibrate-max-model-len-zero", ["calibrate", str(fs.LOGS / "vllm_v1_v16_llama31_8b_eager.txt"), "--max-model-len", "0"], True),
    ("calibrate-speculative-on-log", ["calibrate", str(fs.LOGS / "vllm_v1_v16_llama31_8b_eager.txt"), "--speculative", "ngram:3"], True),
    ("calibrate-engine-version-on-log", ["calibrate", str(fs.LOGS / "vllm_v1_v16_llama31_8b_eager.txt"), "--engine-version", "0.4.3"], True),
    ("trtllm-on-mi300x", [*SW, "--engine", "trtllm", "--gpu", "mi300x"], True),
    ("trtllm-on-mi355x-memory", [*MEM, "--engine", "trtllm", "--gpu", "mi355x"], True),
    ("trtllm-fleet-with-amd", [*ONLINE, "--engine", "trtllm", "--gpu", "h100-sxm,mi300x"], True),
    ("trtllm-disagg-part-on-amd", [*SW, "--engine", "trtllm", "--disagg", "1p:tp1@mi300x,1d:tp1"], True),
    ("trtllm-serve-on-amd", [*SW, "--gpu", "mi325x", "--serve-command", T], True),
    ("sglang-on-mi300x", [*SW, "--engine", "sglang", "--gpu", "mi300x"], False),
    ("calibrate-calibration-no-speculative", ["calibrate", str(fs.LOGS / "vllm_v1_v16_llama31_8b_eager.txt"), "--calibration", "{d}/c.toml"], True),
]

TRACE = '{"input_tokens": 100, "output_tokens": 50}\n' * 8

# (name, text that replaces the whole spec, invalid)
SPEC15: list[tuple[str, str, bool | None]] = [
    ("scenario-as-table", fs.SPEC.replace("[[scenario]]", "[scenario]"), True),
    ("scenario-empty-array", "scenario = []\n", True),
    ("workload-array-of-tables", fs.SPEC.replace("[scenario.workload]", "[[scenario.workload]]"), True),
    ("expect-array-of-tables", fs.SPEC.replace("[scenario.expect]", "[[scenario.expect]]"), True),
    ("workload-string", fs.SPEC.split("[scenario.workload]")[0] + 'workload = "chat"\n', True),
    ("workload-inline-table", fs.SPEC.split("[scenario.workload]")[0] + "workload = {isl = 100, osl = 100, arrival = \"batch\", num_requests = 20, concurrency = 4}\n", False),
    ("dotted-keys", fs.SPEC.split("[scenario.workload]")[0] + "workload.isl = 100\nworkload.osl = 100\nworkload.arrival = \"batch\"\nworkload.num_requests = 20\nworkload.concurrency = 4\n", False),
    ("isl-hex", fs.SPEC.replace("isl = 100", "isl = 0x64"), False),
    ("isl-octal", fs.SPEC.replace("isl = 100", "isl = 0o144"), False),
    ("isl-binary", fs.SPEC.replace("isl = 100", "isl = 0b1100100"), False),
    ("isl-underscore", fs.SPEC.replace("num_requests = 20", "num_requests = 2_0"), False),
    ("isl-plus", fs.SPEC.replace("isl = 100", "isl = +100"), False),
    ("isl-float-whole", fs.SPEC.replace("isl = 100", "isl = 100.0"), None),  # pydantic reads a whole float
    ("isl-bool", fs.SPEC.replace("isl = 100", "isl = true"), True),
    ("isl-2-63", fs.SPEC.replace("isl = 100", "isl = 9223372036854775807"), True),
    ("isl-neg-2-63", fs.SPEC.replace("isl = 100", "isl = -9223372036854775808"), True),
    ("headroom-float-underflow", fs.SPEC.replace('engine = "vllm"', 'engine = "vllm"\nheadroom = 1e-400'), None),
    ("kv-headroom-min-inf", fs.SPEC.replace("kv_headroom_min = 0.1", "kv_headroom_min = inf"), True),
    ("kv-headroom-min-nan", fs.SPEC.replace("kv_headroom_min = 0.1", "kv_headroom_min = nan"), True),
    ("kv-headroom-min-neg", fs.SPEC.replace("kv_headroom_min = 0.1", "kv_headroom_min = -0.5"), True),
    ("kv-headroom-min-one", fs.SPEC.replace("kv_headroom_min = 0.1", "kv_headroom_min = 1.0"), None),
    ("kv-headroom-min-above-one", fs.SPEC.replace("kv_headroom_min = 0.1", "kv_headroom_min = 1.5"), True),
    ("ttft-max-neg-inf", fs.SPEC.replace("[scenario.expect]", "[scenario.expect]\nttft_p99_max_s = -inf"), True),
    ("ttft-max-zero", fs.SPEC.replace("[scenario.expect]", "[scenario.expect]\nttft_p99_max_s = 0.0"), True),
    ("ttft-max-1e308", fs.SPEC.replace("[scenario.expect]", "[scenario.expect]\nttft_p99_max_s = 1e308"), True),
    ("no-preemption-at-zero", fs.SPEC.replace("no_preemption_at = 4", "no_preemption_at = 0"), True),
    ("cliff-min-zero", fs.SPEC.replace("[scenario.expect]", "[scenario.expect]\ncliff_concurrency_min = 0"), True),
    ("expect-empty", fs.SPEC.split("[scenario.expect]")[0] + "[scenario.expect]\n", None),
    ("fits-false-and-kv-headroom", fs.SPEC.replace("fits = true", "fits = false"), None),
    ("baseline-tolerance-zero", "baseline_tolerance = 0.0\n" + fs.SPEC, True),
    ("baseline-tolerance-one", "baseline_tolerance = 1.0\n" + fs.SPEC, True),
    ("baseline-tolerance-nan", "baseline_tolerance = nan\n" + fs.SPEC, True),
    ("baseline-tolerance-inf", "baseline_tolerance = inf\n" + fs.SPEC, True),
    ("baseline-tolerance-table", "[baseline_tolerance]\nx = 1\n" + fs.SPEC, True),
    ("name-empty", fs.SPEC.replace('name = "s"', 'name = ""'), True),
    ("name-blank", fs.SPEC.replace('name = "s"', 'name = "   "'), True),
    ("name-slash", fs.SPEC.replace('name = "s"', 'name = "a/b"'), None),
    ("name-xml", fs.SPEC.replace('name = "s"', 'name = "<x>&\\"]]>"'), None),
    ("name-dup-case", fs.SPEC + fs.SPEC.replace('name = "s"', 'name = "S"'), None),
    ("name-dup-space", fs.SPEC + fs.SPEC.replace('name = "s"', 'name = "s "'), True),
    ("name-int", fs.SPEC.replace('name = "s"', "name = 5"), True),
    ("name-very-long", fs.SPEC.replace('name = "s"', f'name = "{"x" * 100000}"'), None),
    ("gpus-float", fs.SPEC.replace('layout = "tp1"', 'layout = "tp1"\ngpus = 1.0'), None),
    ("gpus-bool", fs.SPEC.replace('layout = "tp1"', 'layout = "tp1"\ngpus = true'), True),
    ("gpus-array", fs.SPEC.replace('layout = "tp1"', 'layout = "tp1"\ngpus = [1]'), True),
    ("layout-array", fs.SPEC.replace('layout = "tp1"', 'layout = ["tp1"]'), True),
    ("gpu-array", fs.SPEC.replace('gpu = "h100-sxm"', 'gpu = ["h100-sxm"]'), True),
    ("gpu-list-string", fs.SPEC.replace('gpu = "h100-sxm"', 'gpu = "h100-sxm,h200-sxm"'), True),
    ("model-spec-folder", fs.SPEC.replace('model = "llama-3.1-8b"', 'model = "."'), True),
    ("model-empty", fs.SPEC.replace('model = "llama-3.1-8b"', 'model = ""'), True),
    ("model-tilde", fs.SPEC.replace('model = "llama-3.1-8b"', 'model = "~/llama"'), True),
    ("model-hf-repo", fs.SPEC.replace('model = "llama-3.1-8b"', 'model = "meta-llama/Llama-3.1-8B"'), False),
    ("model-hf-repo-no-card", fs.SPEC.replace('model = "llama-3.1-8b"', 'model = "meta-llama/Llama-3.1-8B-Instruct"'), True),
    ("trtllm-on-mi300x", fs.SPEC.replace('gpu = "h100-sxm"', 'gpu = "mi300x"').replace('engine = "vllm"', 'engine = "trtllm"'), True),
    ("trace-arrival-clients", fs.SPEC.replace("isl = 100\nosl = 100", 'trace = "t.jsonl"').replace('arrival = "batch"', 'arrival = "clients"').replace("num_requests = 20\n", ""), False),
    ("trace-arrival-poisson", fs.SPEC.replace("isl = 100\nosl = 100", 'trace = "t.jsonl"').replace('arrival = "batch"', 'arrival = "poisson"').replace("num_requests = 20\n", ""), True),
    ("kv-dtype-auto", fs.SPEC.replace('engine = "vllm"', 'engine = "vllm"\nkv_cache_dtype = "auto"'), False),
    ("seed-negative", fs.SPEC.replace('engine = "vllm"', 'engine = "vllm"\nseed = -1'), True),
    ("seed-2-64", fs.SPEC.replace('engine = "vllm"', 'engine = "vllm"\nseed = 18446744073709551615'), None),
    ("usd-inf", fs.SPEC.replace('engine = "vllm"', 'engine = "vllm"\nusd_per_gpu_hour = inf'), True),
    ("usd-nan", fs.SPEC.replace('engine = "vllm"', 'engine = "vllm"\nusd_per_gpu_hour = nan'), True),
    ("usd-zero", fs.SPEC.replace('engine = "vllm"', 'engine = "vllm"\nusd_per_gpu_hour = 0.0'), True),
    ("usd-negative", fs.SPEC.replace('engine = "vllm"', 'engine = "vllm"\nusd_per_gpu_hour = -2.0'), True),
    ("headroom-one", fs.SPEC.replace('engine = "vllm"', 'engine = "vllm"\nheadroom = 1.0'), True),
    ("headroom-nan", fs.SPEC.replace('engine = "vllm"', 'engine = "vllm"\nheadroom = nan'), True),
    ("swap-space-inf-string", fs.SPEC.replace('engine = "vllm"', 'engine = "vllm"\npreemption = "swap"\nswap_space = "infGiB"'), True),
    ("swap-space-float-bytes", fs.SPEC.replace('engine = "vllm"', 'engine = "vllm"\npreemption = "swap"\nswap_space = 4.5'), True),
    ("swap-space-without-swap", fs.SPEC.replace('engine = "vllm"', 'engine = "vllm"\nswap_space = "8GiB"'), None),
    ("swap-space-bare-8", fs.SPEC.replace('engine = "vllm"', 'engine = "vllm"\npreemption = "swap"\nswap_space = 8'), True),
    ("offload-policy-without-offload", fs.SPEC.replace('engine = "vllm"', 'engine = "vllm"\noffload_policy = "write-back"'), None),
    ("mem-fraction-on-vllm", fs.SPEC.replace('engine = "vllm"', 'engine = "vllm"\nmem_fraction_static = 0.5'), True),
    ("free-fraction-on-vllm", fs.SPEC.replace('engine = "vllm"', 'engine = "vllm"\nfree_gpu_memory_fraction = 0.5'), True),
    ("gmu-on-sglang", fs.SPEC.replace('engine = "vllm"', 'engine = "sglang"\ngpu_memory_utilization = 0.5'), True),
    ("recv-interval-on-vllm", fs.SPEC.replace('engine = "vllm"', 'engine = "vllm"\nscheduler_recv_interval = 4'), True),
    ("spec-overlap-on-vllm", fs.SPEC.replace('engine = "vllm"', 'engine = "vllm"\nspeculative = "ngram:3"\nspec_overlap = true'), True),
    ("spec-acceptance-without-speculative", fs.SPEC.replace('engine = "vllm"', 'engine = "vllm"\nspec_acceptance = "0.8,0.6"'), True),
    ("adp-balance-on-vllm", fs.SPEC.replace('engine = "vllm"', 'engine = "vllm"\nattention_dp_balance = "on"'), True),
    ("workload-turns-fixed", fs.SPEC.replace("isl = 100", "isl = 100\nturns = 3.0"), True),
    ("workload-context-fixed", fs.SPEC.replace("isl = 100", "isl = 100\ncontext = 1000"), True),
    ("workload-rate-and-batch", fs.SPEC.replace("num_requests = 20", "num_requests = 20\nrate = 2.0"), True),
    ("workload-clients-zero", fs.SPEC.replace('arrival = "batch"', 'arrival = "clients"\nclients = 0'), True),
    ("workload-rate-inf", fs.SPEC.replace('arrival = "batch"', "rate = inf"), True),
    ("workload-rate-1e-300", fs.SPEC.replace('arrival = "batch"', "rate = 1e-300"), True),
    ("workload-think-inf", fs.SPEC.replace('arrival = "batch"', 'arrival = "clients"\nclients = 4\nthink_time = inf'), True),
    ("workload-trace-and-isl", fs.SPEC.replace("isl = 100\nosl = 100", 'trace = "t.jsonl"\nisl = 100'), True),
    ("workload-trace-spec-relative", fs.SPEC.replace("isl = 100\nosl = 100", 'trace = "t.jsonl"').replace('arrival = "batch"', 'arrival = "clients"\nclients = 4').replace("num_requests = 20\n", ""), False),
    ("workload-trace-num-requests", fs.SPEC.replace("isl = 100\nosl = 100", 'trace = "t.jsonl"').replace('arrival = "batch"', 'arrival = "clients"\nclients = 4'), None),
    ("workload-trace-is-spec", fs.SPEC.replace("isl = 100\nosl = 100", 'trace = "s.toml"').replace('arrival = "batch"', 'arrival = "clients"\nclients = 4').replace("num_requests = 20\n", ""), True),
    ("calibration-is-spec", fs.SPEC.replace('engine = "vllm"', 'engine = "vllm"\ncalibration = "s.toml"'), True),
    ("osl-hist-is-spec", fs.SPEC.replace("osl = 100", 'osl = "hist:s.toml"'), True),
    ("model-is-spec", fs.SPEC.replace('model = "llama-3.1-8b"', 'model = "s.toml"'), True),
    ("key-quoted-unicode", fs.SPEC.replace("isl = 100", '"isl\u200b" = 100'), True),
    ("key-case", fs.SPEC.replace("isl = 100", "ISL = 100"), True),
    ("datetime-value", fs.SPEC.replace('engine = "vllm"', 'engine = "vllm"\nseed = 1979-05-27'), True),
    ("deep-nesting-inline", fs.SPEC.replace('engine = "vllm"', 'engine = "vllm"\nx = ' + "[" * 5000 + "]" * 5000), True),
    ("many-scenarios", "".join(fs.SPEC.replace('name = "s"', f'name = "s{i}"') for i in range(2000)), None),
    ("serve-and-model-disagree", fs.SPEC.replace('layout = "tp1"', f'serve_command = "{V.replace("Llama-3.1-8B", "Llama-3.1-70B")}"'), True),
    ("disagg-and-layout", fs.SPEC.replace('engine = "vllm"', 'engine = "vllm"\ndisagg = "1p:tp1,1d:tp1"'), True),
    ("kv-transfer-inf-disagg", fs.SPEC.replace('layout = "tp1"', 'disagg = "1p:tp1,1d:tp1"\nkv_transfer_overhead_ms = inf'), True),
    ("kv-transfer-1e308-disagg", fs.SPEC.replace('layout = "tp1"', 'disagg = "1p:tp1,1d:tp1"\nkv_transfer_overhead_ms = 1e308'), True),
    ("request-overhead-nan", fs.SPEC.replace('engine = "vllm"', 'engine = "vllm"\nrequest_overhead_ms = nan'), True),
]


def expert15_cases() -> Iterator[Case]:
    for name, argv, invalid in EXPERT15:
        yield Case("expert15", name, argv, {}, invalid)
    for name, extra, command, invalid in SERVE15:
        files = {"cfg.yaml": "max-num-seqs: 8\n", "cfg.yml": "enable_chunked_prefill: true\n"}
        argv = [*SW, *extra, "--serve-command", command]
        yield Case("expert15", f"serve-{name}", argv, files, invalid)


def combos15_cases() -> Iterator[Case]:
    files = {"t.jsonl": TRACE, "c.toml": fs.CAL_OK}
    for name, argv, invalid in COMBOS15:
        yield Case("combos15", name, argv, files, invalid)


def spec15_cases() -> Iterator[Case]:
    for name, text, invalid in SPEC15:
        yield Case("spec15", name, ["check", "{d}/s.toml"], {"s.toml": text, "t.jsonl": TRACE}, invalid)


def _model_dir() -> dict[str, fs.FileSpec]:
    import json

    return {
        "m/config.json": json.dumps(fs.llama_config()),
        "m/model.safetensors": b"\x08\x00\x00\x00\x00\x00\x00\x00{}      ",
        "m/tokenizer.json": "{}",
    }


def outputs15_cases() -> Iterator[Case]:
    model = _model_dir()
    spec = fs.SPEC
    local = spec.replace('model = "llama-3.1-8b"', 'model = "m"')
    serve_local = spec.replace('model = "llama-3.1-8b"\n', "").replace('layout = "tp1"', 'serve_command = "vllm serve ./m"')
    serve_config = spec.replace('model = "llama-3.1-8b"\n', "").replace('layout = "tp1"', 'serve_command = "vllm serve meta-llama/Llama-3.1-8B %s"')
    with_trace = spec.replace("isl = 100\nosl = 100", 'trace = "t.jsonl"').replace('arrival = "batch"', 'arrival = "clients"\nclients = 4').replace("num_requests = 20\n", "")
    cases: list[tuple[str, list[str], dict[str, fs.FileSpec], bool | None, tuple[str, ...]]] = [
        ("junit-over-local-model-weights", ["check", "{d}/s.toml", "--junit", "{d}/m/model.safetensors", "--force"], {**model, "s.toml": local}, True, ()),
        ("junit-over-serve-local-weights", ["check", "{d}/s.toml", "--junit", "{d}/m/model.safetensors", "--force"], {**model, "s.toml": serve_local}, True, ()),
        ("markdown-over-serve-local-config", ["check", "{d}/s.toml", "--markdown", "{d}/m/config.json", "--force"], {**model, "s.toml": serve_local}, True, ()),
        ("junit-over-model-tokenizer-sub", ["check", "{d}/s.toml", "--junit", "{d}/m/./tokenizer.json", "--force"], {**model, "s.toml": local}, True, ()),
        ("junit-over-trace-via-dotdot", ["check", "{d}/s.toml", "--junit", "{d}/m/../t.jsonl", "--force"], {**model, "s.toml": with_trace, "t.jsonl": TRACE}, True, ()),
        ("markdown-dev-stderr", ["check", "{d}/s.toml", "--markdown", "/dev/stderr"], {"s.toml": spec}, None, ()),
        ("junit-is-spec-folder", ["check", "{d}/s.toml", "--junit", "{d}"], {"s.toml": spec}, True, ()),
        ("junit-trailing-slash", ["check", "{d}/s.toml", "--junit", "{d}/out/"], {"s.toml": spec}, True, ()),
        ("junit-existing-force", ["check", "{d}/s.toml", "--junit", "{d}/j.xml", "--force"], {"s.toml": spec, "j.xml": "<old/>"}, False, ("j.xml",)),
        ("write-baseline-over-baseline-force", ["check", "{d}/s.toml", "--baseline", "{d}/b.json", "--write-baseline", "{d}/b.json", "--force"], {"s.toml": spec}, True, ()),
        ("junit-over-calibration-in-spec-folder", ["check", "{d}/sub/s.toml", "--junit", "{d}/sub/c.toml", "--force"], {"sub/s.toml": spec.replace('engine = "vllm"', 'engine = "vllm"\ncalibration = "c.toml"'), "sub/c.toml": fs.CAL_OK}, True, ()),
        ("sweep-plot-over-model-weights-force", [*SW[:1], "{d}/m", *SW[2:], "--plot", "{d}/m/model.safetensors", "--force"], model, True, ()),
        ("sweep-plot-over-model-weights-png", [*SW[:1], "{d}/m", *SW[2:], "--plot", "{d}/m/weights.png", "--force"], {**model, "m/weights.png": b"\x89PNG keep"}, None, ("m/weights.png",)),
        ("sweep-plot-over-serve-local-weights", [*SW, "--serve-command", "vllm serve {d}/m", "--plot", "{d}/m/model.safetensors", "--force"], model, True, ()),
        ("plan-plot-over-serve-local-config-svg", [*ONLINE, "--serve-command", "vllm serve {d}/m", "--plot", "{d}/m/config.svg", "--force"], {**model, "m/config.svg": "<svg/>"}, None, ("m/config.svg",)),
        ("plan-plot-over-calibration-force", [*ONLINE, "--calibration", "{d}/c.toml", "--plot", "{d}/c.toml", "--force"], {"c.toml": fs.CAL_OK}, True, ()),
        ("plan-plot-over-price-gpu-file", [*ONLINE, "--gpu", "{d}/g.toml", "--plot", "{d}/g.toml", "--force"], {"g.toml": (fs.ROOT / "hardware" / "h100-sxm.toml").read_text()}, True, ()),
        ("sweep-plot-dir-with-png-name", [*SW, "--plot", "{d}/p.png"], {"p.png": ("dir",)}, True, ()),
        ("sweep-plot-dangling-link-force", [*SW, "--plot", "{d}/p.png", "--force"], {"p.png": ("symlink", "missing/p.png")}, None, ()),
        ("sweep-plot-link-to-trace-force", ["sweep", "llama-3.1-8b", "--workload", "{d}/t.jsonl", "--concurrency", "4", "--plot", "{d}/p.svg", "--force"], {"t.jsonl": TRACE, "p.svg": ("symlink", "t.jsonl")}, True, ()),
        ("junit-over-serve-config-yaml", ["check", "{d}/s.toml", "--junit", "{d}/cfg.yaml", "--force"], {"s.toml": serve_config % "--config cfg.yaml", "cfg.yaml": "max-num-seqs: 8\n"}, True, ()),
        ("markdown-over-serve-config-eq", ["check", "{d}/s.toml", "--markdown", "{d}/cfg.yaml", "--force"], {"s.toml": serve_config % "--config=cfg.yaml", "cfg.yaml": "max-num-seqs: 8\n"}, True, ()),
        ("write-baseline-over-trtllm-options", ["check", "{d}/s.toml", "--write-baseline", "{d}/o.yml", "--force"], {"s.toml": serve_config.replace("vllm serve", "trtllm-serve").replace('engine = "vllm"', 'engine = "trtllm"') % "--extra_llm_api_options o.yml", "o.yml": "enable_chunked_prefill: true\n"}, True, ()),
        ("junit-over-serve-chat-template", ["check", "{d}/s.toml", "--junit", "{d}/t.jinja", "--force"], {"s.toml": serve_config % "--chat-template t.jinja", "t.jinja": "{{ messages }}"}, True, ()),
        ("junit-name-249-bytes", ["check", "{d}/s.toml", "--junit", "{d}/" + "j" * 245 + ".xml"], {"s.toml": spec}, False, ()),
        ("calibrate-out-name-250-bytes", ["calibrate", str(fs.LOGS / "vllm_v1_v16_llama31_8b_eager.txt"), "-o", "{d}/" + "c" * 245 + ".toml"], {}, False, ()),
        ("calibrate-out-over-serve-model", ["calibrate", str(fs.LOGS / "vllm_v1_v16_llama31_8b_eager.txt"), "--model", "{d}/m/config.json", "-o", "{d}/m/model.safetensors", "--force"], model, True, ()),
        ("calibrate-out-link-to-log", ["calibrate", "{d}/log.txt", "-o", "{d}/c.toml", "--force"], {"log.txt": (fs.LOGS / "vllm_v1_v16_llama31_8b_eager.txt").read_text(), "c.toml": ("symlink", "log.txt")}, True, ()),
    ]
    for name, argv, files, invalid, replaced in cases:
        yield Case("outputs15", name, argv, files, invalid, replaced=replaced)

# a third pass: lists with empty or repeated parts, degenerate distributions, spec keys that a
# scenario's other keys make meaningless
W = [*SW[:2], "--isl", "100", "--num-requests", "20", "--concurrency", "4"]
ROUND3: Table = [
    ("osl-list-dup", [*W, "--osl", "100,100"], None),
    ("osl-list-empty-part", [*W, "--osl", "100,,200"], True),
    ("osl-list-trailing-comma", [*W, "--osl", "100,"], True),
    ("osl-lognormal-p99-equals-mean", [*W, "--osl", "lognormal:100:100"], None),
    ("osl-lognormal-max-between", [*W, "--osl", "lognormal:100:200:201"], None),
    ("osl-lognormal-tiny", [*W, "--osl", "lognormal:1:2"], None),
    ("osl-lognormal-p99-past-context", [*W, "--osl", "lognormal:100:1000000"], True),
    ("osl-lognormal-spaces", [*W, "--osl", "lognormal: 100 : 200"], None),
    ("osl-lognormal-upper", [*W, "--osl", "LOGNORMAL:100:200"], None),
    ("spec-acceptance-empty-part", [*SW, "--speculative", "ngram:3", "--spec-acceptance", "0.8,,0.6"], True),
    ("price-empty-part", [*ONLINE, "--gpu", "h100-sxm,h200-sxm", "--price-gpu-hour", "2,,3"], True),
    ("offload-empty-part", [*fs.OFFLOAD_BASE, "--offload", "cpu:8GiB,,nvme:1TiB"], True),
    ("disagg-empty-part", [*SW, "--disagg", "1p:tp1,,1d:tp1"], True),
    ("concurrency-empty-part", [*SW[:-1], "4,,8"], True),
    ("layout-empty-part", [*SW, "--gpus", "2", "--layout", "tp2,,dp2"], True),
    ("gpu-list-empty-part", [*ONLINE, "--gpu", "h100-sxm,,h200-sxm"], True),
    ("gpu-list-trailing-comma", [*ONLINE, "--gpu", "h100-sxm,"], True),
    ("disagg-dup-prefill", [*SW, "--disagg", "1p:tp1,1p:tp1,1d:tp1"], True),
    ("turns-below-one", ["sweep", "llama-3.1-8b", "--workload", "multiturn-chat", "--num-requests", "20", "--concurrency", "4", "--clients", "4", "--turns", "0.5"], True),
    ("turns-one", ["sweep", "llama-3.1-8b", "--workload", "multiturn-chat", "--num-requests", "20", "--concurrency", "4", "--clients", "4", "--turns", "1"], None),
    ("context-zero", ["sweep", "llama-3.1-8b", "--workload", "multiturn-chat", "--num-requests", "20", "--concurrency", "4", "--clients", "4", "--context", "0"], None),
    ("context-past-model", ["sweep", "llama-3.1-8b", "--workload", "multiturn-chat", "--num-requests", "20", "--concurrency", "4", "--clients", "4", "--context", "200000"], True),
    ("preset-chat-with-isl", [*SW[:2], "--workload", "chat", "--isl", "100", "--num-requests", "20", "--concurrency", "4"], None),
    ("preset-reasoning-with-osl", [*SW[:2], "--workload", "reasoning", "--osl", "100", "--num-requests", "20", "--concurrency", "4"], None),
    ("plan-rate-tiny", [*ONLINE[:-4], "--rate", "1e-9", "--slo-ttft", "2"], None),
    ("plan-headroom-tiny", [*ONLINE, "--headroom", "1e-300"], None),
    ("plan-clients-one-slo-max", [*ONLINE[:-4], "--clients", "1", "--slo-ttft", "600", "--slo-tpot", "10"], None),
    ("memory-layout-fewer-gpus", [*MEM[:-2], "--gpus", "8", "--layout", "tp1"], None),
    ("sweep-policy-other-engine", [*SW, "--engine", "sglang", "--policy", "vllm-v0"], None),
    ("sweep-engine-version-future", [*SW, "--engine-version", "99.0.0"], None),
    ("sweep-engine-version-ancient", [*SW, "--engine-version", "0.0.1"], None),
]

R3_SPEC = fs.SPEC.replace('engine = "vllm"', 'engine = "vllm"\n%s')
SPEC_ROUND3: list[tuple[str, str, bool | None]] = [
    ("layout-tp2-gpus-4", fs.SPEC.replace('layout = "tp1"', 'layout = "tp2"\ngpus = 4'), True),
    ("layout-tp1-gpus-2", fs.SPEC.replace('layout = "tp1"', 'layout = "tp1"\ngpus = 2'), True),
    ("disagg-gpus-1", fs.SPEC.replace('layout = "tp1"', 'disagg = "1p:tp1,1d:tp1"\ngpus = 1'), True),
    ("disagg-gpus-8", fs.SPEC.replace('layout = "tp1"', 'disagg = "1p:tp1,1d:tp1"\ngpus = 8'), True),
    ("headroom-fixed-layout-batch", R3_SPEC % "headroom = 0.5", True),
    ("usd-without-cost-assertion", R3_SPEC % "usd_per_gpu_hour = 2.0", None),
    ("recommended-layout-with-fixed-layout", fs.SPEC.replace("[scenario.expect]", '[scenario.expect]\nrecommended_layout = "tp1"'), None),
    ("sustained-rps-batch", fs.SPEC.replace("[scenario.expect]", "[scenario.expect]\nsustained_rps_min = 1.0"), None),  # the most the layout sustains: a figure of its own
    ("replicas-max-batch", fs.SPEC.replace("[scenario.expect]", "[scenario.expect]\nreplicas_max = 2"), True),
    ("clients-past-requests", fs.SPEC.replace('arrival = "batch"', 'arrival = "clients"\nclients = 1000'), None),
    ("concurrency-zero", fs.SPEC.replace("concurrency = 4", "concurrency = 0"), True),
    ("think-time-batch", fs.SPEC.replace("num_requests = 20", "num_requests = 20\nthink_time = 5.0"), True),
    ("preset-and-trace", fs.SPEC.replace("isl = 100\nosl = 100", 'preset = "chat"\ntrace = "t.jsonl"'), True),
    ("engine-version-sglang-on-vllm", R3_SPEC % 'engine_version = "0.4.3"', None),
    ("seed-with-trace", fs.SPEC.replace("isl = 100\nosl = 100", 'trace = "t.jsonl"').replace('arrival = "batch"', 'arrival = "clients"').replace("num_requests = 20\n", "").replace('engine = "vllm"', 'engine = "vllm"\nseed = 7'), None),
    ("routing-dp1", R3_SPEC % 'routing = "least-loaded"', None),
    ("offload-on-batch-single-turn", R3_SPEC % 'offload = "cpu:64GiB"', None),
    ("rate-and-clients", fs.SPEC.replace('arrival = "batch"', "rate = 2.0\nclients = 4"), True),
    ("expect-ttft-and-tpot-batch", fs.SPEC.replace("[scenario.expect]", "[scenario.expect]\nttft_p99_max_s = 30.0\ntpot_p99_max_s = 1.0"), None),
    ("two-scenarios-same-outputs", fs.SPEC + fs.SPEC.replace('name = "s"', 'name = "t"'), False),
]


def round3_cases() -> Iterator[Case]:
    for name, argv, invalid in ROUND3:
        yield Case("round15", name, argv, {"t.jsonl": TRACE}, invalid)
    for name, text, invalid in SPEC_ROUND3:
        yield Case("round15", f"spec-{name}", ["check", "{d}/s.toml"], {"s.toml": text, "t.jsonl": TRACE}, invalid)
    # a serve command's local model folder beside the spec, run from the folder above it
    model = {f"sub/{k}": v for k, v in _model_dir().items()}
    for name, command, invalid in [
        ("spec-serve-local-dotslash", "vllm serve ./m", False),
        ("spec-serve-local-bare", "vllm serve m --tensor-parallel-size 1", False),
        ("spec-serve-local-missing", "vllm serve ./elsewhere", True),
    ]:
        text = fs.SPEC.replace('model = "llama-3.1-8b"\n', "").replace('layout = "tp1"', f'serve_command = "{command}"')
        yield Case("round15", name, ["check", "sub/s.toml"], {**model, "sub/s.toml": text}, invalid)
    for name, command, invalid in [
        ("serve-served-model-name-two", "vllm serve meta-llama/Llama-3.1-8B --served-model-name a b", False),
        ("serve-served-model-name-two-then-flag", "vllm serve meta-llama/Llama-3.1-8B --served-model-name a b --max-num-seqs 8", False),
        ("serve-spec-config-dotted", "vllm serve meta-llama/Llama-3.1-8B --speculative-config.method eagle3 --speculative-config.num_speculative_tokens 3", False),
        ("serve-spec-config-dotted-k-zero", "vllm serve meta-llama/Llama-3.1-8B --speculative-config.method ngram --speculative-config.num_speculative_tokens 0", True),
        ("serve-spec-config-dotted-k-nan", "vllm serve meta-llama/Llama-3.1-8B --speculative-config.method eagle3 --speculative-config.num_speculative_tokens NaN", True),
        ("serve-spec-config-dotted-deep", "vllm serve meta-llama/Llama-3.1-8B --speculative-config.a.b.c 1 --speculative-config.a 2", None),
        ("serve-lora-modules-two", "vllm serve meta-llama/Llama-3.1-8B --lora-modules a=/x b=/y", None),
        ("serve-sglang-served-model-name-two", "python -m sglang.launch_server --model-path meta-llama/Llama-3.1-8B --served-model-name a b", True),
    ]:
        yield Case("round15", name, [*SW, "--serve-command", command], {}, invalid)


# a fourth pass: features the simulator has, taken together (disagg with speculation, offload,
# sessions, swap; engines with features of another)
DIS = [*SW, "--disagg", "1p:tp1,1d:tp1"]
SESS = ["--workload", "multiturn-chat", "--clients", "4"]
SW_NO_LEN = ["sweep", "llama-3.1-8b", "--num-requests", "20", "--concurrency", "4"]
QWEN = ["sweep", "qwen3-30b-a3b", *fs.SMALL, "--concurrency", "4", "--gpus", "2"]
ROUND4: Table = [
    ("disagg-speculative", [*DIS, "--speculative", "eagle:3"], None),
    ("disagg-offload-sessions", [*SW_NO_LEN, "--disagg", "1p:tp1,1d:tp1", *SESS, "--offload", "cpu:64GiB"], None),
    ("disagg-swap", [*DIS, "--preemption", "swap"], None),
    ("disagg-least-loaded", [*DIS, "--routing", "least-loaded"], None),
    ("disagg-calibration", [*DIS, "--calibration", "{d}/c.toml"], None),
    ("disagg-plot", [*DIS, "--plot", "{d}/p.svg"], None),
    ("disagg-csv", [*DIS, "--format", "csv"], None),
    ("disagg-json", [*DIS, "--format", "json"], None),
    ("disagg-kv-fp8", [*DIS, "--kv-cache-dtype", "fp8"], None),
    ("disagg-max-model-len-32K", [*DIS, "--max-model-len", "32K"], False),
    ("plan-disagg-speculative", [*ONLINE[:-6], "--gpus", "2", "--rate", "2", "--slo-ttft", "2", "--disagg", "--speculative", "ngram:3", "--spec-accept-length", "1.5"], None),
    ("plan-disagg-sessions", ["plan", "llama-3.1-8b", "--jobs", "1", "--num-requests", "20", "--gpus", "2", "--slo-ttft", "2", "--disagg", *SESS], None),
    ("plan-fleet-sessions", ["plan", "llama-3.1-8b", "--jobs", "1", "--num-requests", "20", "--gpus", "1", "--slo-ttft", "2", "--gpu", "h100-sxm,mi300x", *SESS], None),
    ("dense-dpa2", [*SW, "--gpus", "2", "--layout", "dpa2"], None),
    ("trtllm-dpa2-balance", [*QWEN, "--engine", "trtllm", "--layout", "dpa2", "--attention-dp-balance", "on"], None),
    ("vllm-v0-speculative", [*SW, "--engine", "vllm-v0", "--speculative", "ngram:3", "--spec-accept-length", "1.5"], None),
    ("vllm-v0-offload", [*SW_NO_LEN, "--engine", "vllm-v0", *SESS, "--offload", "cpu:64GiB"], None),
    ("trtllm-offload", [*SW_NO_LEN, "--engine", "trtllm", *SESS, "--offload", "cpu:64GiB"], None),
    ("trtllm-swap", [*SW, "--engine", "trtllm", "--preemption", "swap"], None),
    ("kernels-mi300x", [*SW, "--step-source", "kernels", "--gpu", "mi300x"], None),
    ("kernels-sglang-b300", [*SW, "--step-source", "kernels", "--engine", "sglang", "--gpu", "b300"], None),
    ("sessions-think-zero-clients-1", [*SW_NO_LEN, "--workload", "agentic", "--clients", "1", "--think-time", "0"], None),
    ("sessions-rate-and-turns", [*SW_NO_LEN, "--workload", "multiturn-chat", "--rate", "0.5", "--turns", "2"], None),
    ("sessions-context-and-prefix-off", [*SW_NO_LEN, *SESS, "--context", "2000", "--prefix-caching", "off"], None),
    ("sweep-osl-list-layout-list", [*SW[:2], "--isl", "100", "--osl", "50,100", "--num-requests", "20", "--concurrency", "4,8", "--gpus", "2", "--layout", "tp2,dp2"], None),
    ("sweep-moe-ep-deepep", [*QWEN, "--layout", "dp2-ep2", "--all2all-backend", "deepep_low_latency"], None),
    ("sweep-moe-backend-marlin-dense", [*SW, "--moe-backend", "marlin"], True),
    ("sweep-fp8-gemm-h100", [*SW, "--engine", "sglang", "--fp8-gemm-backend", "flashinfer_trtllm", "--gpu", "h100-sxm"], None),
    ("sweep-recv-interval-speculative", [*SW, "--engine", "sglang", "--scheduler-recv-interval", "4", "--speculative", "ngram:3", "--spec-accept-length", "1.5"], None),
    ("memory-disagg-flag", [*MEM, "--disagg", "1p:tp1,1d:tp1"], True),
    ("calibrate-log-auto-kv-fp8", ["calibrate", str(fs.LOGS / "vllm_v1_v16_llama31_8b_eager.txt"), "--kv-dtype", "fp8"], True),
    ("calibrate-log-auto-kv-auto", ["calibrate", str(fs.LOGS / "vllm_v1_v16_llama31_8b_eager.txt"), "--kv-dtype", "auto"], False),
    ("calibrate-trtllm-log-kv-fp8", ["calibrate", str(fs.LOGS / "trtllm_t01_llama31_8b_rtx5090.txt"), "--model", "llama-3.1-8b", "--kv-dtype", "fp8"], None),
]


def round4_cases() -> Iterator[Case]:
    for name, argv, invalid in ROUND4:
        yield Case("round15", f"r4-{name}", argv, {"c.toml": fs.CAL_OK}, invalid)
    # a calibration written with a KV alias, then used for the deployment it was made on
    deployment = ["--gpu", "h200-sxm", "--gpus", "8", "--layout", "tp8", "--engine", "sglang"]
    for kv in ("fp8_e4m3", "auto"):
        def write(folder: Path, kv: str = kv) -> None:  # a child of its own: main is not re-entrant
            import os
            import subprocess
            import sys

            argv = ["calibrate", str(fs.DSR1_CSV), "--model", "deepseek-r1", *deployment]
            env = {**os.environ, "PYTHONPATH": str(fs.ROOT)}
            subprocess.run([sys.executable, "-m", "capcliff", *argv, "--kv-dtype", kv, "-o", str(folder / "c.toml")], env=env, capture_output=True, check=False)

        sweep = ["sweep", "deepseek-r1", *deployment, "--kv-dtype", kv, *fs.SMALL, "--concurrency", "4"]
        yield Case("round15", f"r4-calibration-kv-{kv}-applies", [*sweep, "--calibration", "{d}/c.toml"], {}, False, setup=write)


SURFACES15: dict[str, Callable[[], Iterator[Case]]] = {
    "expert15": expert15_cases,
    "combos15": combos15_cases,
    "spec15": spec15_cases,
    "outputs15": outputs15_cases,
    "round15": round3_cases,
    "round15b": round4_cases,
}
# fmt: on
