"""The twentieth bad-input campaign's surfaces (issue 23), run by `fuzz_surfaces.py`:

    PYTHONPATH=. python benchmarks/fuzz_surfaces.py recipes20 yaml20 mutants20 spec20

What the eighteen campaigns before did not try: the engine command lines users paste from the
engines' own recipes and deployment guides, whole (vllm-project/recipes for DeepSeek-R1, gpt-oss,
Qwen3-235B on ROCm, Kimi K2's TP+PP and DP+EP lines; SGLang's DeepSeek lines with DP attention,
`--mem-fraction-static=0.9`, commented-out flags after a trailing `\\`; trtllm-serve's DeepSeek-R1
and gpt-oss lines with `--tensor_parallel_size`, `--free_gpu_memory_fraction`; recipes20), the
YAML files those lines name (trtllm-serve's `--extra_llm_api_options`/`--config` with
kv_cache_config, enable_attention_dp, speculative_config and cuda_graph_config, vLLM's `--config`
of the gpt-oss recipe; yaml20), then structure-aware mutations of both: a line the recipe forgot
to continue with `\\`, a flag twice, a value in the wrong unit (a percentage, GiB with a unit
word, `8k` where the engine wants an int), flags the engines removed in later releases, a model
that is not capcliff's model argument, a YAML whose value is out of range, a list, tabbed, empty
or missing (mutants20), and check specs that carry those lines with the YAML beside the spec
(spec20).

Most valid cases carry a witness: capcliff's own flag set to the value the engine runs with
(`--layout`, `--kv-dtype`, `--free-gpu-memory-fraction`, ...). A line capcliff misreads then
conflicts with its witness and is counted as a refused valid input, so a misreading is counted
rather than passing as an exit 0.

Each case's verdict is the engine's own, read from its parser: vLLM's FlexibleArgumentParser
(vllm/utils/argparse_utils.py: `_` and `-` alike in flag names, `--config` YAML inserted before
the command-line flags so that these win, one `--config` at most), SGLang's argparse
(python/sglang/srt/server_args.py), trtllm-serve's click options (tensorrt_llm/commands/serve.py
at 00209af: `--tensor_parallel_size/--tp_size`, `--moe_expert_parallel_size/--ep_size`,
`--free_gpu_memory_fraction/--kv_cache_free_gpu_memory_fraction`, `--config/--extra_llm_api_options`
whose YAML (yaml.safe_load) overrides the flags) and the shell (a line break without `\\` ends
the command; `#` starts a comment).
"""

# Data tables: one case per line, some past 100 characters.
# ruff: noqa: E501
from __future__ import annotations

import json
from collections.abc import Callable, Iterator

import fuzz_surfaces as fs
from fuzz_cases11 import REAL
from fuzz_harness import Case, FileSpec

# fmt: off
SM = [*fs.SMALL, "--concurrency", "4"]
H200, B200, MI300 = ["--gpu", "h200-sxm"], ["--gpu", "b200"], ["--gpu", "mi300x"]
# vllm-project/recipes DeepSeek/DeepSeek-V3.md, "Running DeepSeek-R1 with FP4 on 4xB200": the
# recipe's own line 3 lacks its trailing backslash, so a shell runs `--enable_expert_parallel` as a
# command of its own and the server starts without EP
DSR1_FP4_RECIPE = "CUDA_VISIBLE_DEVICES=0,1,2,3 vllm serve nvidia/DeepSeek-R1-0528-FP4 \\\n  --trust-remote-code \\\n  --tensor-parallel-size 4\n  --enable_expert_parallel"
# vllm-project/recipes Qwen/Qwen3.md, BF16 on MI300X
QWEN_ROCM = ('HIP_VISIBLE_DEVICES="4,5,6,7" \\\nVLLM_USE_V1=1 \\\nVLLM_ROCM_USE_AITER=1 \\\nVLLM_ROCM_USE_AITER_MHA=0 \\\n'
             "SAFETENSORS_FAST_GPU=1  \\\nvllm serve Qwen/Qwen3-235B-A22B \\\n--trust-remote-code \\\n-tp 4 \\\n--disable-log-requests \\\n"
             "--distributed-executor-backend mp \\\n--max-num-batched-tokens 32768 \\\n--max-model-len 32768 \\\n"
             "--no-enable-prefix-caching \\\n--gpu-memory-utilization 0.8")
# vllm-project/recipes Moonshotai/Kimi-K2.md, with the model folder as ./kimi
KIMI_TP_PP = "vllm serve ./kimi     --trust-remote-code     --tokenizer-mode auto     --tensor-parallel-size 8     --pipeline-parallel-size 2     --dtype bfloat16     --quantization fp8     --max-model-len 2048     --max-num-seqs 1     --max-num-batched-tokens 1024     --enable-chunked-prefill     --disable-log-requests     --kv-cache-dtype fp8"
KIMI_DP_EP = "vllm serve ./kimi --port 8000 --served-model-name kimi-k2 --trust-remote-code --data-parallel-size 16 --data-parallel-size-local 8 --data-parallel-address 10.0.0.1 --data-parallel-rpc-port 13345 --enable-expert-parallel --max-num-batched-tokens 8192 --max-num-seqs 256 --gpu-memory-utilization 0.85 --enable-auto-tool-choice --tool-call-parser kimi_k2"
# vllm-project/recipes OpenAI/GPT-OSS.md
GPTOSS_EVAL = "vllm serve openai/gpt-oss-120b \\\n  --tensor_parallel_size 8 \\\n  --max-model-len 131072 \\\n  --max-num-batched-tokens 10240 \\\n  --max-num-seqs 128 \\\n  --gpu-memory-utilization 0.85 \\\n  --no-enable-prefix-caching"
GPTOSS_MI300 = "vllm serve openai/gpt-oss-120b --tensor-parallel-size=8 --attention-backend ROCM_AITER_UNIFIED_ATTN -cc.pass_config.fuse_rope_kvcache=True -cc.use_inductor_graph_partition=True --gpu-memory-utilization 0.95 --block-size=64"
GPTOSS_HOPPER_YAML = "no-enable-prefix-caching: true\nmax-cudagraph-capture-size: 2048\nmax-num-batched-tokens: 8192\nstream-interval: 20\n"
GPTOSS_EAGLE_YAML = 'kv-cache-dtype: fp8\nno-enable-prefix-caching: true\nmax-cudagraph-capture-size: 2048\nmax-num-batched-tokens: 8192\nstream-interval: 20\nspeculative-config: \'{"model":"nvidia/gpt-oss-120b-Eagle3-v2","num_speculative_tokens":3,"method":"eagle3","draft_tensor_parallel_size":1}\'\n'
GPTOSS_LAUNCH = "vllm serve openai/gpt-oss-120b \\\n  --config {yaml} \\\n  --tensor-parallel-size 1"
# the SGLang lines of the public scripts the code search finds (DeepSeek on 8 GPUs)
SG_TUTU = "python -m sglang.launch_server --served-model-name=ds-r1 --model-path=deepseek-ai/DeepSeek-R1 \\\n--enable-p2p-check --trust-remote-code --host=0.0.0.0 --port=28001 \\\n--mem-fraction-static=0.9 \\\n--random-seed=446369220 \\\n--tp=8 --max-total-tokens=65000 --max-running-requests=64 \n# --disable-radix \\\n# --enable-torch-compile --torch-compile-max-bs 1 \\\n"
SG_AITER = "SGLANG_USE_AITER=1 \\\npython3 -m sglang.launch_server \\\n--model-path deepseek-ai/DeepSeek-R1 \\\n--port 30000 \\\n--host 0.0.0.0 \\\n--served-model-name deepseek-r1 \\\n--tp-size 8 \\\n--trust-remote-code \\\n--chunked-prefill-size 130172 \\\n--max-running-requests 128 \\\n--mem-fraction-static 0.85 \\\n# --enable-torch-compile \\\n# --enable-ep-moe \\\n# --dp-size 8 \\\n# --enable-dp-attention \\\n#--disable-cuda-graph \\\n"
SG_R1 = "python3 -m sglang.launch_server --model-path deepseek-ai/DeepSeek-R1 --trust-remote-code"
# TensorRT-LLM examples/serve/deepseek_r1_reasoning_parser.sh and its YAML
TRT_R1 = "trtllm-serve \\\n    deepseek-ai/DeepSeek-R1 \\\n    --host localhost --port 8000 \\\n    --trust_remote_code \\\n    --max_batch_size 1024 --max_num_tokens 8192 \\\n    --tp_size 8 --ep_size 8 --pp_size 1 \\\n    {opt} ./config.yml \\\n    --reasoning_parser deepseek-r1"
TRT_R1_YAML = "cuda_graph_config:\n    enable_padding: true\n    max_batch_size: 512\nenable_attention_dp: true\nkv_cache_config:\n    dtype: fp8\n    free_gpu_memory_fraction: 0.8\nstream_interval: 10\nmoe_config:\n    backend: DEEPGEMM\n"
TRT_R1_PLAIN = "trtllm-serve deepseek-ai/DeepSeek-R1 --backend pytorch --tp_size 8 --pp_size 1 --ep_size 4 --max_batch_size 161 --max_num_tokens 1160 --kv_cache_free_gpu_memory_fraction 0.8 --trust_remote_code"
# TensorRT-LLM deployment guide for gpt-oss (max-throughput, Hopper/Blackwell)
TRT_OSS = "trtllm-serve openai/gpt-oss-120b --host 0.0.0.0 --port 8000 --backend pytorch --max_batch_size 720 --max_num_tokens 16384 --kv_cache_free_gpu_memory_fraction 0.9 --tp_size 8 --ep_size 8 --trust_remote_code --extra_llm_api_options max_throughput.yaml"
TRT_OSS_YAML = "enable_attention_dp: false\ncuda_graph_config:\n  enable_padding: true\n  max_batch_size: 720\nmoe_config:\n  backend: TRITON\nstream_interval: 20\n"
TRT_8B = "trtllm-serve meta-llama/Llama-3.1-8B --backend pytorch"

Row = tuple[str, list[str], str, dict[str, FileSpec], bool | None]
KIMI = {"kimi/config.json": json.dumps(REAL["kimi-k2"])}
MEM = ["memory"]

RECIPES20: list[Row] = [
    ("vllm-r1-fp8-8xh200", [*MEM, *H200, "--layout", "tp8-ep8"], "vllm serve deepseek-ai/DeepSeek-R1 \\\n  --trust-remote-code \\\n  --tensor-parallel-size 8 \\\n  --enable_expert_parallel", {}, False),
    ("vllm-r1-0528-repo-id", ["sweep", "deepseek-r1", *H200, *SM], "vllm serve deepseek-ai/DeepSeek-R1-0528 --trust-remote-code --tensor-parallel-size 8 --enable_expert_parallel", {}, None),
    ("vllm-r1-fp4-recipe-missing-backslash", [*MEM, *B200], DSR1_FP4_RECIPE, {}, True),
    ("vllm-r1-fp4-recipe-fixed", [*MEM, *B200, "--layout", "tp4-ep4"], DSR1_FP4_RECIPE.replace("size 4\n", "size 4 \\\n"), {}, False),
    ("vllm-gptoss-eval-8xh100", [*MEM, "--gpu", "h100-sxm", "--layout", "tp8", "--max-num-seqs", "128", "--gpu-memory-utilization", "0.85"], GPTOSS_EVAL, {}, False),
    ("vllm-gptoss-mi300x", [*MEM, *MI300, "--layout", "tp8", "--block-size", "64"], GPTOSS_MI300, {}, False),
    ("vllm-gptoss-hopper-config", ["sweep", "gpt-oss-120b", *H200, *SM], GPTOSS_LAUNCH.format(yaml="GPT-OSS_Hopper.yaml"), {"GPT-OSS_Hopper.yaml": GPTOSS_HOPPER_YAML}, False),
    ("vllm-gptoss-eagle-config-fp8", [*MEM, *B200, "--kv-dtype", "fp8"], GPTOSS_LAUNCH.format(yaml="GPT-OSS_EAGLE3_Blackwell.yaml"), {"GPT-OSS_EAGLE3_Blackwell.yaml": GPTOSS_EAGLE_YAML}, False),
    ("vllm-qwen3-235b-rocm-bf16", [*MEM, *MI300, "--layout", "tp4", "--max-model-len", "32768"], QWEN_ROCM, {}, False),
    ("vllm-qwen3-235b-rocm-fp8-swap", [*MEM, *MI300, "--layout", "tp4"], QWEN_ROCM.replace("A22B", "A22B-FP8").replace("--disable-log-requests", "--disable-log-requests \\\n--swap-space 16"), {}, None),
    ("vllm-kimi-tp8-pp2", [*MEM, "--gpu", "h100-sxm", "--layout", "tp8-pp2", "--kv-dtype", "fp8"], KIMI_TP_PP, KIMI, False),
    ("vllm-kimi-dp16-ep", [*MEM, "--gpu", "h100-sxm", "--layout", "dp16-ep16"], KIMI_DP_EP, KIMI, False),
    ("vllm-kimi-model-shell-variable", [*MEM, "--gpu", "h100-sxm"], KIMI_DP_EP.replace("./kimi", "$MODEL_PATH"), KIMI, True),
    ("vllm-gptoss-literal-dots", [*MEM, *H200], "vllm serve ... --tool-call-parser openai --enable-auto-tool-choice", {}, True),
    ("vllm-uv-run-prefix", [*MEM, *H200], "uv run vllm serve deepseek-ai/DeepSeek-R1 --trust-remote-code --tensor-parallel-size 8 --gpu-memory-utilization=0.90 --enable-prefix-caching --enable-chunked-prefill --max-model-len=16384 --enable-expert-parallel", {}, None),
    ("sglang-r1-tp8", [*MEM, *H200, "--layout", "tp8"], f"{SG_R1} --tp 8", {}, False),
    ("sglang-r1-dp-attention", [*MEM, *H200, "--layout", "dpa8"], f"{SG_R1} --tp 8 --dp 8 --enable-dp-attention", {}, False),
    ("sglang-r1-dpa-deepep", [*MEM, *H200, "--layout", "dp8-ep8"], f"{SG_R1} --tp 8 --dp 8 --enable-dp-attention --ep-size 8 --moe-a2a-backend deepep --deepep-mode auto", {}, False),
    ("sglang-r1-eq-spellings-comments", [*MEM, *H200, "--layout", "tp8", "--mem-fraction-static", "0.9", "--max-num-seqs", "64"], SG_TUTU, {}, False),
    ("sglang-r1-aiter-commented-tail", [*MEM, *MI300, "--layout", "tp8", "--mem-fraction-static", "0.85", "--max-num-batched-tokens", "130172"], SG_AITER, {}, False),
    ("sglang-qwen3-235b-ep8", [*MEM, *H200, "--layout", "tp8-ep8"], "python3 -m sglang.launch_server --model-path Qwen/Qwen3-235B-A22B --tp 8 --ep-size 8 --context-length 32768 --mem-fraction-static 0.85 --chunked-prefill-size 8192 --max-running-requests 256", {}, False),
    ("sglang-gptoss-tp4", [*MEM, *H200, "--layout", "tp4"], "python3 -m sglang.launch_server --model-path openai/gpt-oss-120b --tp 4 --mem-fraction-static 0.88", {}, False),
    ("trtllm-r1-extra-llm-api-options", [*MEM, *H200, "--layout", "dp8-ep8", "--kv-dtype", "fp8", "--free-gpu-memory-fraction", "0.8"], TRT_R1.format(opt="--extra_llm_api_options"), {"config.yml": TRT_R1_YAML}, False),
    ("trtllm-r1-config-alias", [*MEM, *H200, "--layout", "dp8-ep8", "--kv-dtype", "fp8", "--free-gpu-memory-fraction", "0.8"], TRT_R1.format(opt="--config"), {"config.yml": TRT_R1_YAML}, False),
    ("trtllm-r1-plain-ep4", [*MEM, *H200, "--layout", "tp8-ep4", "--free-gpu-memory-fraction", "0.8"], TRT_R1_PLAIN, {}, None),
    ("trtllm-gptoss-max-throughput", [*MEM, *B200, "--layout", "tp8-ep8", "--free-gpu-memory-fraction", "0.9"], TRT_OSS, {"max_throughput.yaml": TRT_OSS_YAML}, False),
    ("trtllm-long-option-names", ["sweep", "llama-3.1-8b", *SM, "--gpus", "2", "--layout", "tp2", "--free-gpu-memory-fraction", "0.85"], f"{TRT_8B} --tensor_parallel_size 2 --free_gpu_memory_fraction 0.85", {}, False),
    ("trtllm-long-ep-name", [*MEM, *H200, "--layout", "tp8-ep8"], "trtllm-serve deepseek-ai/DeepSeek-R1 --tensor_parallel_size 8 --moe_expert_parallel_size 8", {}, False),
    ("trtllm-long-pp-name", ["sweep", "llama-3.1-8b", *SM, "--gpus", "2", "--layout", "pp2"], f"{TRT_8B} --pipeline_parallel_size 2", {}, False),
]


def _yaml_case(name: str, yaml_text: str, extra: list[str], invalid: bool | None, *, cmd: str = f"{TRT_8B} --extra_llm_api_options ./x.yml") -> Row:
    return (name, ["sweep", "llama-3.1-8b", *SM, *extra], cmd, {"x.yml": yaml_text}, invalid)


R1_SPEC = "trtllm-serve deepseek-ai/DeepSeek-R1 --tp_size 8 --ep_size 8 --extra_llm_api_options ./x.yml"
YAML20: list[Row] = [
    _yaml_case("trt-yaml-fraction-overrides-flag", "kv_cache_config:\n  free_gpu_memory_fraction: 0.8\n", ["--free-gpu-memory-fraction", "0.8"], False, cmd=f"{TRT_8B} --kv_cache_free_gpu_memory_fraction 0.95 --extra_llm_api_options ./x.yml"),
    _yaml_case("trt-yaml-fraction-against-witness", "kv_cache_config:\n  free_gpu_memory_fraction: 0.8\n", ["--free-gpu-memory-fraction", "0.95"], True),
    _yaml_case("trt-yaml-block-reuse-off", "kv_cache_config:\n  enable_block_reuse: false\n", ["--prefix-caching", "off"], False),
    _yaml_case("trt-yaml-block-reuse-off-against-on", "kv_cache_config:\n  enable_block_reuse: false\n", ["--prefix-caching", "on"], True),
    _yaml_case("trt-yaml-kv-fp8-flow-style", "kv_cache_config: {dtype: fp8, free_gpu_memory_fraction: 0.85}\n", ["--kv-dtype", "fp8", "--free-gpu-memory-fraction", "0.85"], False),
    _yaml_case("trt-yaml-kv-fp8-against-bf16", "kv_cache_config:\n  dtype: fp8\n", ["--kv-dtype", "bf16"], True),
    _yaml_case("trt-yaml-tp-overrides-flag", "tensor_parallel_size: 2\n", ["--gpus", "2", "--layout", "tp2"], False, cmd=f"{TRT_8B} --tp_size 4 --extra_llm_api_options ./x.yml"),
    _yaml_case("trt-yaml-batch-and-tokens", "max_batch_size: 64\nmax_num_tokens: 4096\nmax_seq_len: 8192\n", ["--max-num-seqs", "64", "--max-num-batched-tokens", "4096", "--max-model-len", "8192"], False),
    _yaml_case("trt-yaml-comments-and-quotes", "# low latency\nkv_cache_config:   # the pool\n  dtype: 'fp8'   # e4m3\n  free_gpu_memory_fraction: \"0.75\"\n", ["--free-gpu-memory-fraction", "0.75"], False),  # valid: pydantic's lax float reads "0.75"
    _yaml_case("trt-yaml-inert-keys-only", "cuda_graph_config:\n  enable_padding: true\n  batch_sizes: [1, 2, 4, 8]\nstream_interval: 10\nprint_iter_log: false\nmoe_config:\n  backend: CUTLASS\n", [], False),
    _yaml_case("trt-yaml-fraction-1.5", "kv_cache_config:\n  free_gpu_memory_fraction: 1.5\n", [], True),
    _yaml_case("trt-yaml-fraction-percent", "kv_cache_config:\n  free_gpu_memory_fraction: 80%\n", [], True),
    _yaml_case("trt-yaml-batch-zero", "max_batch_size: 0\n", [], True),
    _yaml_case("trt-yaml-not-a-mapping", "- kv_cache_config\n- enable_attention_dp\n", [], True),
    _yaml_case("trt-yaml-scalar", "fp8\n", [], True),
    _yaml_case("trt-yaml-tab-indent", "kv_cache_config:\n\tfree_gpu_memory_fraction: 0.8\n", [], True),
    _yaml_case("trt-yaml-empty", "", [], None),
    _yaml_case("trt-yaml-missing-file", "", [], True, cmd=f"{TRT_8B} --extra_llm_api_options ./nope.yml"),
    _yaml_case("trt-yaml-is-folder", "", [], True, cmd=f"{TRT_8B} --extra_llm_api_options ./"),
    _yaml_case("trt-yaml-binary", "\x00\x01\xff", [], True),
    _yaml_case("trt-yaml-adp-dense", "enable_attention_dp: true\n", ["--gpus", "2"], None, cmd=f"{TRT_8B} --tp_size 2 --extra_llm_api_options ./x.yml"),
    _yaml_case("trt-yaml-unknown-kv-key", "kv_cache_config:\n  free_gpu_memory_fractions: 0.8\n", [], None),
    _yaml_case("trt-yaml-dup-key-last-wins", "kv_cache_config:\n  free_gpu_memory_fraction: 0.5\n  free_gpu_memory_fraction: 0.8\n", ["--free-gpu-memory-fraction", "0.8"], False),  # valid: safe_load keeps the last key
    _yaml_case("trt-yaml-deep-nesting", "a:\n" + "".join("  " * i + f"k{i}:\n" for i in range(1, 60)) + "  " * 60 + "v: 1\n", [], None),
    ("trt-yaml-r1-mtp", [*MEM, *H200, "--layout", "tp8-ep8"], R1_SPEC, {"x.yml": "speculative_config:\n  decoding_type: MTP\n  num_nextn_predict_layers: 3\n"}, False),
    ("trt-yaml-r1-mtp-against-witness", ["sweep", "deepseek-r1", *H200, *SM, "--speculative", "mtp:1"], R1_SPEC, {"x.yml": "speculative_config:\n  decoding_type: MTP\n  num_nextn_predict_layers: 3\n"}, True),
    ("trt-yaml-r1-mtp-zero", [*MEM, *H200], R1_SPEC, {"x.yml": "speculative_config: {decoding_type: MTP, num_nextn_predict_layers: 0}\n"}, True),
    ("trt-yaml-r1-adp-tp-in-yaml", [*MEM, *H200, "--layout", "dp8-ep8"], "trtllm-serve deepseek-ai/DeepSeek-R1 --extra_llm_api_options ./x.yml", {"x.yml": "tensor_parallel_size: 8\nmoe_expert_parallel_size: 8\nenable_attention_dp: true\n"}, False),
    ("vllm-config-cli-wins", ["sweep", "llama-3.1-8b", *SM, "--gpus", "2", "--layout", "tp2"], "vllm serve meta-llama/Llama-3.1-8B --config c.yaml -tp 2", {"c.yaml": "tensor-parallel-size: 4\nmax-num-seqs: 32\n"}, False),
    ("vllm-config-seqs-against-witness", ["sweep", "llama-3.1-8b", *SM, "--max-num-seqs", "64"], "vllm serve meta-llama/Llama-3.1-8B --config c.yaml", {"c.yaml": "max-num-seqs: 32\n"}, True),
    ("vllm-config-underscores", ["sweep", "llama-3.1-8b", *SM, "--kv-dtype", "fp8", "--max-num-seqs", "32"], "vllm serve meta-llama/Llama-3.1-8B --config c.yaml", {"c.yaml": "kv_cache_dtype: fp8\nmax_num_seqs: 32\n"}, False),
    ("vllm-config-gmu-1.5", ["sweep", "llama-3.1-8b", *SM], "vllm serve meta-llama/Llama-3.1-8B --config c.yaml", {"c.yaml": "gpu-memory-utilization: 1.5\n"}, True),
    ("vllm-config-twice", ["sweep", "llama-3.1-8b", *SM], "vllm serve meta-llama/Llama-3.1-8B --config a.yaml --config b.yaml", {"a.yaml": "max-num-seqs: 32\n", "b.yaml": "max-num-seqs: 64\n"}, True),
    ("vllm-config-missing", ["sweep", "llama-3.1-8b", *SM], "vllm serve meta-llama/Llama-3.1-8B --config nope.yaml", {}, True),
    ("vllm-config-model-key", ["sweep", "llama-3.1-8b", *SM, "--max-num-seqs", "32"], "vllm serve --config c.yaml", {"c.yaml": "model: meta-llama/Llama-3.1-8B\nmax-num-seqs: 32\n"}, False),  # valid: vLLM takes the model from the config when the line has none
    ("vllm-config-spec-as-mapping", ["sweep", "llama-3.1-8b", *SM, "--speculative", "ngram:4", "--spec-accept-length", "2"], "vllm serve meta-llama/Llama-3.1-8B --config c.yaml", {"c.yaml": "speculative-config:\n  method: ngram\n  num_speculative_tokens: 4\n  prompt_lookup_max: 4\n"}, False),
]

MUT_GPTOSS = "vllm serve openai/gpt-oss-120b --tensor-parallel-size 8"
MUTANTS20: list[Row] = [
    ("vllm-recipe-second-line-no-backslash", ["sweep", "llama-3.1-8b", *SM], "vllm serve meta-llama/Llama-3.1-8B\n  --max-num-seqs 8", {}, True),
    ("vllm-recipe-export-line-then-serve", ["sweep", "llama-3.1-8b", *SM], "export VLLM_USE_DEEP_GEMM=1\nvllm serve meta-llama/Llama-3.1-8B", {}, True),
    ("vllm-trailing-blank-lines", ["sweep", "llama-3.1-8b", *SM], "vllm serve meta-llama/Llama-3.1-8B --max-num-seqs 8\n\n  \n", {}, False),
    ("vllm-comment-line-inside", ["sweep", "llama-3.1-8b", *SM, "--max-num-seqs", "8"], "vllm serve meta-llama/Llama-3.1-8B \\\n  --max-num-seqs 8 \\\n  # --enforce-eager \\\n", {}, False),
    ("vllm-quoted-hash-is-no-comment", ["sweep", "llama-3.1-8b", *SM], "vllm serve meta-llama/Llama-3.1-8B --served-model-name 'a#b' --max-num-seqs 8", {}, False),
    ("vllm-ep-flag-twice", [*MEM, *H200, "--layout", "tp8-ep8"], f"{MUT_GPTOSS} --enable-expert-parallel --enable_expert_parallel", {}, False),
    ("vllm-tp-dash-and-underscore", [*MEM, *H200, "--layout", "tp4"], "vllm serve openai/gpt-oss-120b --tensor_parallel_size 8 --tensor-parallel-size 4", {}, False),
    ("vllm-gmu-percent", [*MEM, *H200], f"{MUT_GPTOSS} --gpu-memory-utilization 95", {}, True),
    ("vllm-swap-space-with-unit", ["sweep", "llama-3.1-8b", *SM], "vllm serve meta-llama/Llama-3.1-8B --swap-space 16GiB", {}, True),
    ("vllm-max-model-len-128k", ["sweep", "llama-3.1-8b", *SM, "--max-model-len", "128000"], "vllm serve meta-llama/Llama-3.1-8B --max-model-len 128k", {}, False),
    ("vllm-removed-num-scheduler-steps", ["sweep", "llama-3.1-8b", *SM], "vllm serve meta-llama/Llama-3.1-8B --num-scheduler-steps 8", {}, None),
    ("vllm-removed-speculative-model", ["sweep", "llama-3.1-8b", *SM], "vllm serve meta-llama/Llama-3.1-8B --speculative-model '[ngram]' --num-speculative-tokens 5 --ngram-prompt-lookup-max 4", {}, None),
    ("vllm-removed-use-v2-block-manager", ["sweep", "llama-3.1-8b", *SM], "vllm serve meta-llama/Llama-3.1-8B --use-v2-block-manager", {}, None),
    ("vllm-model-not-capcliffs", ["sweep", "qwen3-235b-a22b", *H200, *SM], "vllm serve Qwen/Qwen3-30B-A3B --tensor-parallel-size 2", {}, True),
    ("vllm-instruct-variant", ["sweep", "llama-3.1-8b", *SM], "vllm serve meta-llama/Llama-3.1-8B-Instruct", {}, None),
    ("vllm-model-folder-vs-repo", ["sweep", "{d}/kimi", "--gpu", "h100-sxm", *SM], KIMI_DP_EP.replace("./kimi", "moonshotai/Kimi-K2-Instruct"), KIMI, None),
    ("sglang-mem-fraction-percent", [*MEM, *H200], f"{SG_R1} --tp 8 --mem-fraction-static 85", {}, True),
    ("sglang-chunked-prefill-8k", [*MEM, *H200], f"{SG_R1} --tp 8 --chunked-prefill-size 8k", {}, True),
    ("sglang-hicache-size-with-unit", [*MEM, *H200], f"{SG_R1} --tp 8 --enable-hierarchical-cache --hicache-size 64GB", {}, True),
    ("sglang-dp-attention-twice", [*MEM, *H200, "--layout", "dpa8"], f"{SG_R1} --tp 8 --dp 8 --enable-dp-attention --enable-dp-attention", {}, False),
    ("sglang-dp-attention-without-tp", [*MEM, *H200], f"{SG_R1} --dp 8 --enable-dp-attention", {}, True),
    ("sglang-ep-past-tp", [*MEM, *H200], f"{SG_R1} --tp 8 --ep-size 16", {}, True),
    ("sglang-removed-enable-ep-moe", [*MEM, *H200], f"{SG_R1} --tp 8 --enable-ep-moe", {}, None),
    ("sglang-removed-enable-deepep-moe", [*MEM, *H200], f"{SG_R1} --tp 8 --dp 8 --enable-dp-attention --enable-deepep-moe", {}, None),
    ("sglang-abbreviated-speculative-algo", [*MEM, *H200], f"{SG_R1} --tp 8 --speculative-algo NEXTN --speculative-num-steps 2", {}, None),
    ("sglang-model-path-twice", [*MEM, *H200], f"{SG_R1} --tp 8 --model-path Qwen/Qwen3-235B-A22B", {}, None),
    ("trtllm-fraction-percent", ["sweep", "llama-3.1-8b", *SM], f"{TRT_8B} --kv_cache_free_gpu_memory_fraction 90", {}, True),
    ("trtllm-ep-past-tp", [*MEM, *H200], "trtllm-serve deepseek-ai/DeepSeek-R1 --tp_size 8 --ep_size 16", {}, True),
    ("trtllm-tp-long-and-short", ["sweep", "llama-3.1-8b", *SM, "--gpus", "2", "--layout", "tp2"], f"{TRT_8B} --tensor_parallel_size 4 --tp_size 2", {}, False),
    ("trtllm-fraction-long-and-short", ["sweep", "llama-3.1-8b", *SM, "--free-gpu-memory-fraction", "0.7"], f"{TRT_8B} --free_gpu_memory_fraction 0.5 --kv_cache_free_gpu_memory_fraction 0.7", {}, False),
    ("trtllm-backend-bogus", ["sweep", "llama-3.1-8b", *SM], f"{TRT_8B.replace(' --backend pytorch', '')} --backend torch", {}, True),
    ("trtllm-tp-size-dash", ["sweep", "llama-3.1-8b", *SM], f"{TRT_8B} --tp-size 2", {}, None),
]

SPEC20_TRT = 'serve_command = "trtllm-serve meta-llama/Llama-3.1-8B --extra_llm_api_options x.yml"'
SPEC20: list[tuple[str, str, dict[str, FileSpec], bool | None]] = [
    ("trt-yaml-beside-spec", f"{SPEC20_TRT}\nfree_gpu_memory_fraction = 0.8", {"sub/x.yml": "kv_cache_config:\n  free_gpu_memory_fraction: 0.8\n"}, False),
    ("trt-yaml-beside-spec-against-key", f"{SPEC20_TRT}\nfree_gpu_memory_fraction = 0.95", {"sub/x.yml": "kv_cache_config:\n  free_gpu_memory_fraction: 0.8\n"}, True),
    ("trt-yaml-missing-beside-spec", SPEC20_TRT, {}, True),
    ("vllm-recipe-missing-backslash", 'serve_command = """vllm serve meta-llama/Llama-3.1-8B\n  --max-num-seqs 8"""', {}, True),
    ("vllm-recipe-continued", 'serve_command = """vllm serve meta-llama/Llama-3.1-8B \\\\\n  --max-num-seqs 8"""', {}, False),
    ("vllm-config-beside-spec", 'serve_command = "vllm serve meta-llama/Llama-3.1-8B --config c.yaml"\nmax_num_seqs = 32', {"sub/c.yaml": "max-num-seqs: 32\n"}, False),
]
# fmt: on


def _rows(surface: str, rows: list[Row]) -> Iterator[Case]:
    for name, argv, command, files, invalid in rows:
        yield Case(surface, name, [*argv, "--serve-command", command], dict(files), invalid)


def recipes20_cases() -> Iterator[Case]:
    yield from _rows("recipes20", RECIPES20)


def yaml20_cases() -> Iterator[Case]:
    yield from _rows("yaml20", YAML20)


def mutants20_cases() -> Iterator[Case]:
    yield from _rows("mutants20", MUTANTS20)


def spec20_cases() -> Iterator[Case]:
    for name, keys, files, invalid in SPEC20:
        spec = fs.SPEC.replace('layout = "tp1"\n', "").replace('engine = "vllm"\n', f"{keys}\n")
        if "trtllm-serve" in keys:
            spec = spec.replace("[scenario.workload]", 'engine = "trtllm"\n[scenario.workload]')
        yield Case(
            "spec20", name, ["check", "{d}/sub/s.toml"], {**files, "sub/s.toml": spec}, invalid
        )


SURFACES20: dict[str, Callable[[], Iterator[Case]]] = {
    "recipes20": recipes20_cases,
    "yaml20": yaml20_cases,
    "mutants20": mutants20_cases,
    "spec20": spec20_cases,
}
