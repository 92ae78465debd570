"""The sixteenth bad-input campaign's surfaces (issue 23), run by `fuzz_surfaces.py`:

    PYTHONPATH=. python benchmarks/fuzz_surfaces.py tools16 cal16 configs16 quant16 st16 traces16 \
        mut16 calfile16

What the fourteen campaigns before did not try, on the file surfaces only: the result files of
bench tools other than `vllm bench serve` and SGLang's `bench_serving`, and of those two run with
their other datasets and options (genai-perf and AIPerf exports, `vllm bench throughput` and
`vllm bench latency` JSON, SGLang's `bench_one_batch_server` and `bench_offline_throughput`,
`vllm bench serve --save-detailed` with its per-request arrays, `--metadata`, goodput, ShareGPT and
generated-shared-prefix datasets whose `random_*_len` fields were never used; tools16); runs of
one file that disagree on what was measured (different lengths asked, a percentile-only run,
lengths past the model's context, a run with every request failed; cal16); config.json files of
families whose layers are not Llama's (an ungated two-matrix MLP: GPT-NeoX, StarCoder2, Phi-2,
Nemotron; Gemma 1's tied embeddings by default; encoder-decoders; configs16); quantization
configs as real checkpoints ship them (Qwen3-FP8's block FP8 with modules left out, RedHat's
compressed-tensors W8A8 and W4A16 with a KV scheme, ModelOpt's side file, a GPTQ v2 checkpoint;
quant16); safetensors folders whose index and headers disagree (st16); session traces whose turns
skip numbers, whose ids mix types, and plain traces given as CSV (traces16); structure-aware
mutations, each key of a real quantization config, side file, SGLang row, shard index, header,
session row (mut16) and written calibration file (calfile16) set to each wrong type.
"""

# Data tables: one case per line, some past 100 characters.
# ruff: noqa: E501
from __future__ import annotations

import json
from collections.abc import Callable, Iterator

import fuzz_surfaces as fs
from fuzz_cases7 import CAL, _lines, _st
from fuzz_cases13 import DSV3, LLAMA, MEM8, QWEN_MOE
from fuzz_harness import Case, FileSpec

# fmt: off
R = fs.RUNS
SG = fs.SG_RUNS
MEM = ["memory", "{d}/m", "--gpus", "1", "--gpu", "h200-sxm"]
CAL_SG = ["calibrate", "{d}/r.jsonl", "--model", "llama-3.1-8b", "--gpu", "h100-sxm"]


def _sg(dataset: str, run: dict[str, object], **extra: object) -> dict[str, object]:
    """An SGLang bench_serving row as its `--dataset-name DATASET` writes it: the random_* fields
    hold their defaults whatever the dataset (bench_serving.py writes args.random_input_len)."""
    return {**run, "dataset_name": dataset, "random_input_len": 1024, "random_output_len": 1024,
            "random_range_ratio": 0.0, "total_input_tokens": 200 * 300, "total_output_tokens": 200 * 128, **extra}


GENAI = {
    "request_throughput": {"unit": "requests/sec", "avg": 3.3},
    "request_latency": {"unit": "ms", "avg": 3000.0, "p99": 3500.0},
    "time_to_first_token": {"unit": "ms", "avg": 150.0, "p99": 300.0},
    "inter_token_latency": {"unit": "ms", "avg": 24.0, "p99": 30.0},
    "output_token_throughput": {"unit": "tokens/sec", "avg": 1200.0},
    "output_sequence_length": {"unit": "tokens", "avg": 128.0},
    "input_sequence_length": {"unit": "tokens", "avg": 1024.0},
    "request_count": {"unit": "count", "avg": 200},
    "input_config": {"model": ["meta-llama/Llama-3.1-8B-Instruct"], "concurrency": 32, "endpoint_type": "chat"},
}
GENAI_CSV = ("Metric,avg,min,max,p99,p90,p75\nTime To First Token (ms),150.00,90.00,300.00,290.00,200.00,170.00\n"
             "Inter Token Latency (ms),24.00,20.00,30.00,29.00,27.00,25.00\n\nMetric,Value\n"
             "Output Token Throughput (per sec),1200.00\nRequest Throughput (per sec),3.30\n")
VLLM_THROUGHPUT = {"elapsed_time": 40.0, "num_requests": 1000, "total_num_tokens": 1152000, "requests_per_second": 25.0, "tokens_per_second": 28800.0}
VLLM_LATENCY = {"avg_latency": 1.8, "latencies": [1.7, 1.8, 1.9], "percentiles": {"10": 1.7, "50": 1.8, "99": 1.9}}
SG_ONE_BATCH = {"run_name": "default", "batch_size": 32, "input_len": 1024, "output_len": 128, "latency": 4.2,
                "output_throughput": 1000.0, "overall_throughput": 9000.0, "last_ttft": 0.5, "last_gen_throughput": 980.0}
SG_OFFLINE = {"backend": "engine", "successful_requests": 1000, "total_latency": 60.0, "total_input_tokens": 1024000,
              "total_output_tokens": 128000, "request_throughput": 16.6, "input_throughput": 17000.0, "output_throughput": 2133.0,
              "total_throughput": 19000.0}
DETAILED = {"input_lens": [1024] * 200, "output_lens": [128] * 200, "ttfts": [0.15] * 200,
            "itls": [[0.024] * 127] * 3, "generated_texts": ["x"] * 3, "errors": [""] * 200}

TOOLS16: list[tuple[str, list[str], dict[str, FileSpec], bool | None]] = [
    # SGLang bench_serving with a dataset whose lengths are not random_*_len: valid, fitted on
    # the totals' means (tests/test_bad_input16.py checks the lengths)
    ("sglang-sharegpt", CAL_SG, {"r.jsonl": _lines([_sg("sharegpt", r) for r in SG])}, False),
    ("sglang-gsp", CAL_SG, {"r.jsonl": _lines([_sg("generated-shared-prefix", r) for r in SG])}, False),
    ("sglang-random-ids", CAL_SG, {"r.jsonl": _lines([{**r, "dataset_name": "random-ids"} for r in SG])}, False),
    ("sglang-random-named", CAL_SG, {"r.jsonl": _lines([{**r, "dataset_name": "random"} for r in SG])}, False),
    ("sglang-dataset-name-number", CAL_SG, {"r.jsonl": _lines([{**r, "dataset_name": 7} for r in SG])}, True),
    ("sglang-dataset-name-list", CAL_SG, {"r.jsonl": _lines([{**r, "dataset_name": ["random"]} for r in SG])}, True),
    ("sglang-sharegpt-output-len", CAL_SG, {"r.jsonl": _lines([_sg("sharegpt", r, sharegpt_output_len=128) for r in SG])}, False),
    ("sglang-mixed-datasets", CAL_SG, {"r.jsonl": _lines([SG[0], _sg("sharegpt", SG[1]), SG[2]])}, False),
    ("sglang-accept-length", CAL_SG, {"r.jsonl": _lines([{**r, "accept_length": 2.1} for r in SG])}, False),
    ("sglang-request-rate-inf-literal", CAL_SG, {"r.jsonl": "\n".join(json.dumps({**r, "request_rate": float("inf")}) for r in SG) + "\n"}, False),
    # vLLM bench serve options that add keys
    ("vllm-save-detailed", CAL, {"r.json": _lines([{**r, **DETAILED} for r in R])}, False),
    ("vllm-goodput-colon-key", CAL, {"r.json": _lines([{**r, "request_goodput:": None} for r in R])}, False),
    ("vllm-goodput-value", CAL, {"r.json": _lines([{**r, "request_goodput": 3.0} for r in R])}, False),
    ("vllm-metadata", CAL, {"r.json": _lines([{**r, "tp": "1", "engine": "v1", "note": "x"} for r in R])}, False),
    ("vllm-label", CAL, {"r.json": _lines([{**r, "label": "run-a", "endpoint_type": "openai-chat"} for r in R])}, False),
    ("vllm-ramp-up", CAL, {"r.json": _lines([{**r, "ramp_up_strategy": "linear", "ramp_up_start_rps": 1, "ramp_up_end_rps": 10} for r in R])}, True),
    ("vllm-ramp-up-null", CAL, {"r.json": _lines([{**r, "ramp_up_strategy": None} for r in R])}, False),
    ("vllm-burstiness-0.5", CAL, {"r.json": _lines([{**r, "burstiness": 0.5} for r in R])}, None),
    ("vllm-served-model-path", CAL, {"r.json": _lines([{**r, "model_id": "/models/Llama-3.1-8B-Instruct"} for r in R])}, False),
    # other tools' files: refused, saying which formats are read
    ("genai-perf-json", ["calibrate", "{d}/profile_export_genai_perf.json", "--model", "llama-3.1-8b", "--gpu", "h100-sxm"], {"profile_export_genai_perf.json": json.dumps(GENAI, indent=2)}, True),
    ("genai-perf-csv", ["calibrate", "{d}/profile_export_genai_perf.csv", "--model", "llama-3.1-8b", "--gpu", "h100-sxm"], {"profile_export_genai_perf.csv": GENAI_CSV}, True),
    ("aiperf-json", ["calibrate", "{d}/profile_export_aiperf.json", "--model", "llama-3.1-8b", "--gpu", "h100-sxm"], {"profile_export_aiperf.json": json.dumps({"records": {"ttft": {"unit": "ms", "avg": 150.0}}, "input_config": {}})}, True),
    ("genai-perf-profile-export-jsonl", ["calibrate", "{d}/profile_export.jsonl", "--model", "llama-3.1-8b", "--gpu", "h100-sxm"], {"profile_export.jsonl": '{"metadata": {"x_request_id": "1"}, "metrics": {"time_to_first_token": {"value": 150.0, "unit": "ms"}}}\n'}, True),
    ("vllm-bench-throughput", CAL, {"r.json": json.dumps(VLLM_THROUGHPUT)}, True),
    ("vllm-bench-latency", CAL, {"r.json": json.dumps(VLLM_LATENCY)}, True),
    ("sglang-one-batch", CAL_SG, {"r.jsonl": _lines([SG_ONE_BATCH, {**SG_ONE_BATCH, "batch_size": 64}])}, True),
    ("sglang-offline-throughput", CAL_SG, {"r.jsonl": _lines([SG_OFFLINE])}, True),
    ("trtllm-bench-json", CAL, {"r.json": json.dumps({"engine": {"model": "meta-llama/Llama-3.1-8B"}, "performance": {"output_throughput_tok_s": 1200.0}})}, True),
]


# Runs of one file that disagree on what was measured ---------------------------------------------

CAL16: list[tuple[str, list[str], dict[str, FileSpec], bool | None]] = [
    ("different-lengths-per-run", CAL, {"r.json": _lines([R[0], {**R[1], "total_input_tokens": 409_600}, R[2]])}, None),
    ("every-request-failed", CAL, {"r.json": _lines([R[0], {**R[1], "completed": 0, "total_output_tokens": 0, "output_throughput": 0.0, "mean_tpot_ms": 0.0, "mean_ttft_ms": 0.0}, R[2]])}, True),
    ("percentiles-only", CAL, {"r.json": _lines([{k: v for k, v in r.items() if not k.startswith("mean_") and k != "output_throughput"} for r in R])}, True),
    ("inputs-past-context", CAL, {"r.json": _lines([{**r, "total_input_tokens": 200 * 200_000} for r in R])}, True),
    ("outputs-past-context", CAL, {"r.json": _lines([{**r, "total_output_tokens": 200 * 200_000} for r in R])}, True),
    ("sglang-asked-past-context", CAL_SG, {"r.jsonl": _lines([{**r, "random_input_len": 200_000} for r in SG])}, True),
    ("concurrency-float-whole", CAL, {"r.json": _lines([{**r, "max_concurrency": float(r["max_concurrency"])} for r in R])}, False),  # type: ignore[arg-type]
    ("concurrency-1e400", CAL, {"r.json": fs._json_with(R[0], "max_concurrency", "1e400")}, True),
    ("completed-float-fraction", CAL, {"r.json": _lines([{**R[0], "completed": 199.5}, *R[1:]])}, True),
    ("one-run-per-file-line-ending-cr", CAL, {"r.json": "\r".join(json.dumps(r) for r in R)}, False),
    ("runs-separated-by-commas", CAL, {"r.json": ",\n".join(json.dumps(r) for r in R)}, True),
    ("runs-wrapped-in-object", CAL, {"r.json": json.dumps({"results": R})}, True),
    # RFC 7464 JSON text sequences: Python reads the record separator as white space; the runs
    # are read as written
    ("ndjson-with-rs-separators", CAL, {"r.json": "".join("\x1e" + json.dumps(r) + "\n" for r in R)}, None),
    # a CSV of two GPUs named alike: the GH200 and H100 PCIe rows are not the H200's or H100 SXM's
    ("csv-gh200-rows-beside-h200", ["calibrate", "{d}/b.csv", "--model", "llama-3.1-8b", "--gpu", "h200-sxm"],
     {"b.csv": "hardware,concurrency,input_len,output_len,output_throughput_tok_s,mean_tpot_ms\n8x H200,8,1024,128,500,14\n8x GH200,32,1024,128,300,60\n8x H200,64,1024,128,1800,32\n"}, False),
    ("csv-only-gh200-rows", ["calibrate", "{d}/b.csv", "--model", "llama-3.1-8b", "--gpu", "h200-sxm"],
     {"b.csv": "hardware,concurrency,input_len,output_len,output_throughput_tok_s,mean_tpot_ms\n8x GH200,8,1024,128,500,14\n"}, True),
    ("csv-h100-pcie-rows", ["calibrate", "{d}/b.csv", "--model", "llama-3.1-8b", "--gpu", "h100-sxm"],
     {"b.csv": "hardware,concurrency,input_len,output_len,output_throughput_tok_s,mean_tpot_ms\nH100 PCIe,8,1024,128,500,14\n"}, True),
    # vllm bench serve --result-filename takes any name: JSON results under a log's suffix
    ("results-named-txt", ["calibrate", "{d}/run.txt", "--model", "llama-3.1-8b", "--gpu", "h100-sxm"], {"run.txt": _lines(R)}, False),
    ("results-no-suffix-bom", ["calibrate", "{d}/run", "--model", "llama-3.1-8b", "--gpu", "h100-sxm"], {"run": "\ufeff" + json.dumps(R[1], indent=2)}, False),
    ("log-named-txt-starting-brace", ["calibrate", "{d}/log.txt", "--model", "llama-3.1-8b"], {"log.txt": "{not json\n" + (fs.LOGS / "vllm_v1_v16_llama31_8b_eager.txt").read_text()}, None),  # read as JSON now: refused
    ("log-two-models-two-starts", ["calibrate", "{d}/log.txt", "--model", "llama-3.1-8b"],
     {"log.txt": (fs.LOGS / "vllm_v1_v16_llama31_8b_eager.txt").read_text() + (fs.LOGS / "vllm_v1_v04_qwen3_235b_fp8_8xl40s_tp8.txt").read_text()}, True),
    ("log-sglang-and-vllm", ["calibrate", "{d}/log.txt", "--model", "llama-3.1-8b"],
     {"log.txt": (fs.LOGS / "vllm_v1_v16_llama31_8b_eager.txt").read_text() + (fs.LOGS / "sglang_s02_qwq_32b_4xl4_tp4.txt").read_text()}, True),
]


# config.json of families whose layers are not Llama's -------------------------------------------

STARCODER2 = {"architectures": ["Starcoder2ForCausalLM"], "model_type": "starcoder2", "hidden_size": 6144, "intermediate_size": 24576,
              "num_attention_heads": 48, "num_key_value_heads": 4, "num_hidden_layers": 40, "vocab_size": 49152,
              "max_position_embeddings": 16384, "use_bias": True, "sliding_window": 4096, "torch_dtype": "float32", "tie_word_embeddings": False}
PYTHIA = {"architectures": ["GPTNeoXForCausalLM"], "model_type": "gpt_neox", "hidden_size": 5120, "intermediate_size": 20480,
          "num_attention_heads": 40, "num_hidden_layers": 36, "vocab_size": 50688, "max_position_embeddings": 2048,
          "torch_dtype": "float16", "tie_word_embeddings": False, "rotary_pct": 0.25}
PHI2 = {"architectures": ["PhiForCausalLM"], "model_type": "phi", "hidden_size": 2560, "intermediate_size": 10240,
        "num_attention_heads": 32, "num_key_value_heads": 32, "num_hidden_layers": 32, "vocab_size": 51200,
        "max_position_embeddings": 2048, "torch_dtype": "float16", "tie_word_embeddings": False, "partial_rotary_factor": 0.4}
NEMOTRON = {"architectures": ["NemotronForCausalLM"], "model_type": "nemotron", "hidden_size": 4096, "intermediate_size": 16384,
            "num_attention_heads": 32, "num_key_value_heads": 8, "head_dim": 128, "num_hidden_layers": 32, "vocab_size": 256000,
            "max_position_embeddings": 4096, "torch_dtype": "bfloat16", "tie_word_embeddings": False, "hidden_act": "relu2"}
# google/gemma-7b config.json: no tie_word_embeddings (GemmaConfig's default: True)
GEMMA7B = {"architectures": ["GemmaForCausalLM"], "model_type": "gemma", "hidden_size": 3072, "intermediate_size": 24576,
           "num_attention_heads": 16, "num_key_value_heads": 16, "head_dim": 256, "num_hidden_layers": 28, "vocab_size": 256000,
           "max_position_embeddings": 8192, "torch_dtype": "bfloat16", "hidden_act": "gelu"}
FALCON = {"architectures": ["FalconForCausalLM"], "model_type": "falcon", "hidden_size": 4544, "num_attention_heads": 71,
          "num_hidden_layers": 32, "multi_query": True, "parallel_attn": True, "vocab_size": 65024, "torch_dtype": "bfloat16",
          "intermediate_size": 18176}
# Qwen/QwQ-32B's config.json with the YaRN table its README gives for long inputs
QWQ_YARN = {"architectures": ["Qwen2ForCausalLM"], "model_type": "qwen2", "hidden_size": 5120, "intermediate_size": 27648,
            "num_attention_heads": 40, "num_key_value_heads": 8, "num_hidden_layers": 64, "vocab_size": 152064,
            "max_position_embeddings": 40960, "tie_word_embeddings": False, "torch_dtype": "bfloat16",
            "rope_scaling": {"factor": 4.0, "original_max_position_embeddings": 32768, "type": "yarn"}}
CONFIGS16: list[tuple[str, dict[str, object] | str, bool | None]] = [
    ("starcoder2-ungated-mlp", STARCODER2, True),
    ("gpt-neox-ungated-mlp", PYTHIA, True),
    ("phi2-ungated-mlp", PHI2, True),
    ("nemotron-ungated-mlp", NEMOTRON, True),
    ("falcon-multi-query", FALCON, True),
    ("gpt-neox-by-architecture-only", {k: v for k, v in PYTHIA.items() if k != "model_type"}, True),
    ("starcoder2-model-type-only", {k: v for k, v in STARCODER2.items() if k != "architectures"}, True),
    ("gemma1-tie-default", GEMMA7B, False),
    ("gemma1-tie-given", {**GEMMA7B, "tie_word_embeddings": True}, False),
    ("encoder-decoder-flag", {**LLAMA, "is_encoder_decoder": True}, True),
    ("t5-shaped", {"architectures": ["T5ForConditionalGeneration"], "model_type": "t5", "d_model": 512, "num_layers": 6, "num_heads": 8, "vocab_size": 32128, "is_encoder_decoder": True}, True),
    ("llama-architectures-string", {**LLAMA, "architectures": "LlamaForCausalLM"}, True),
    ("llama-architectures-empty", {**LLAMA, "architectures": []}, False),
    ("llama-type-unknown-arch-known", {**LLAMA, "model_type": "my_llama"}, None),
    ("qwen-moe-shared-expert-zero", {**QWEN_MOE, "shared_expert_intermediate_size": 0}, False),
    ("dsv3-moe-layer-freq-zero", {**DSV3, "moe_layer_freq": 0}, True),
    ("dsv3-moe-layer-freq-past-layers", {**DSV3, "moe_layer_freq": 100}, None),
    ("rope-scaling-factor-zero", {**LLAMA, "rope_scaling": {"rope_type": "llama3", "factor": 0.0}}, None),
    # vLLM's _get_and_verify_max_len: the context is max_position_embeddings x factor (YaRN's from
    # its original positions), except llama3/longrope/su and Gemma 3
    ("qwq-yarn-context", {**QWQ_YARN}, False),
    ("yarn-no-original", {**QWQ_YARN, "rope_scaling": {"type": "yarn", "factor": 4.0}}, True),
    ("yarn-factor-null", {**QWQ_YARN, "rope_scaling": {"type": "yarn", "factor": None, "original_max_position_embeddings": 32768}}, True),
    ("linear-factor-string", {**QWQ_YARN, "rope_scaling": {"type": "linear", "factor": "4"}}, True),
    ("linear-factor-zero", {**QWQ_YARN, "rope_scaling": {"type": "linear", "factor": 0.0}}, True),
    ("linear-factor-1e300", {**QWQ_YARN, "rope_scaling": {"type": "linear", "factor": 1e300}}, True),
    ("rope-scaling-list", {**QWQ_YARN, "rope_scaling": [4.0]}, True),
    ("rope-parameters-v5-yarn", {**{k: v for k, v in QWQ_YARN.items() if k != "rope_scaling"}, "rope_parameters": {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 32768, "rope_theta": 1e6}}, False),
    ("mrope-no-factor", {**QWQ_YARN, "rope_scaling": {"type": "mrope", "mrope_section": [16, 24, 24]}}, False),
    ("max-pos-string", {**LLAMA, "max_position_embeddings": "131072"}, True),
    ("head-dim-null", {**LLAMA, "head_dim": None}, None),
    ("kv-heads-null", {**LLAMA, "num_key_value_heads": None}, None),
    ("vocab-null", {**LLAMA, "vocab_size": None}, True),
    # Qwen-1: intermediate_size counts w1 and w2 together (QWenMLP: intermediate_size // 2 each)
    ("qwen1-half-width-mlp", {"architectures": ["QWenLMHeadModel"], "model_type": "qwen", "hidden_size": 4096, "intermediate_size": 22016,
                              "num_attention_heads": 32, "num_hidden_layers": 32, "vocab_size": 151936, "kv_channels": 128,
                              "max_position_embeddings": 8192, "tie_word_embeddings": False}, True),
    # Llama 3.2 Vision's text model without its vision_config: cross-attention layers' KV is of image tokens
    ("mllama-text-cross-attention", {"architectures": ["MllamaForConditionalGeneration"], "model_type": "mllama", "torch_dtype": "bfloat16",
                                     "text_config": {**LLAMA, "model_type": "mllama_text_model", "num_hidden_layers": 40, "cross_attention_layers": [3, 8, 13, 18, 23, 28, 33, 38]}}, True),
    # gated MoE families sized as published (Phi-3.5-MoE 41.9B, OLMoE 6.9B, DeepSeek-V2-Lite 15.7B)
    ("phimoe-valid", {"architectures": ["PhiMoEForCausalLM"], "model_type": "phimoe", "hidden_size": 4096, "intermediate_size": 6400, "num_attention_heads": 32,
                      "num_key_value_heads": 8, "num_hidden_layers": 32, "num_local_experts": 16, "num_experts_per_tok": 2, "vocab_size": 32064,
                      "max_position_embeddings": 131072, "tie_word_embeddings": False, "attention_bias": True, "torch_dtype": "bfloat16"}, False),
    ("olmoe-valid", {"architectures": ["OlmoeForCausalLM"], "model_type": "olmoe", "hidden_size": 2048, "intermediate_size": 1024, "num_attention_heads": 16,
                     "num_key_value_heads": 16, "num_hidden_layers": 16, "num_experts": 64, "num_experts_per_tok": 8, "vocab_size": 50304,
                     "max_position_embeddings": 4096, "tie_word_embeddings": False, "torch_dtype": "bfloat16"}, False),
    ("deepseek-v2-lite-valid", {**DSV3, "model_type": "deepseek_v2", "hidden_size": 2048, "intermediate_size": 10944, "q_lora_rank": None,
                                "moe_intermediate_size": 1408, "n_routed_experts": 64, "n_shared_experts": 2, "num_experts_per_tok": 6,
                                "first_k_dense_replace": 1, "num_attention_heads": 16, "num_key_value_heads": 16, "num_hidden_layers": 27,
                                "vocab_size": 102400}, False),
]


# Quantization configs as real checkpoints ship them ---------------------------------------------

QWEN3_FP8 = {"activation_scheme": "dynamic", "fmt": "e4m3", "quant_method": "fp8", "weight_block_size": [128, 128],
             "modules_to_not_convert": ["lm_head", "model.layers.0.mlp.gate"]}
CT_W8A8 = {"quant_method": "compressed-tensors", "format": "int-quantized", "quantization_status": "compressed",
           "ignore": ["lm_head"], "kv_cache_scheme": None,
           "config_groups": {"group_0": {"targets": ["Linear"], "input_activations": {"num_bits": 8, "type": "int", "strategy": "token", "dynamic": True, "symmetric": True},
                                         "weights": {"num_bits": 8, "type": "int", "strategy": "channel", "symmetric": True}}}}
CT_W4A16_KV = {**CT_W8A8, "format": "pack-quantized",
               "kv_cache_scheme": {"num_bits": 8, "type": "float", "strategy": "tensor", "dynamic": False, "symmetric": True},
               "config_groups": {"group_0": {"targets": ["Linear"], "input_activations": None,
                                             "weights": {"num_bits": 4, "type": "int", "strategy": "group", "group_size": 128, "symmetric": True}}}}
GPTQ_V2 = {"quant_method": "gptq", "bits": 4, "group_size": 128, "desc_act": True, "sym": True, "checkpoint_format": "gptq_v2",
           "meta": {"quantizer": ["gptqmodel:2.0.0"]}, "true_sequential": True, "damp_percent": 0.01}
MODELOPT_SIDE = {"producer": {"name": "modelopt", "version": "0.19.0"},
                 "quantization": {"quant_algo": "FP8", "kv_cache_quant_algo": "FP8", "exclude_modules": ["lm_head"]}}


def _quant(cfg: dict[str, object], quant: object) -> str:
    return json.dumps({**cfg, "quantization_config": quant})


QUANT16: list[tuple[str, dict[str, FileSpec], bool | None]] = [
    ("qwen3-moe-fp8-block", {"m/config.json": _quant(QWEN_MOE, QWEN3_FP8)}, False),
    ("ct-w8a8-int", {"m/config.json": _quant(LLAMA, CT_W8A8)}, False),
    ("ct-w4a16-fp8-kv", {"m/config.json": _quant(LLAMA, CT_W4A16_KV)}, False),
    # vLLM's test reads `type != "float" and num_bits != 8`: a float scheme of 3 bits loads
    ("ct-kv-scheme-num-bits-3-float", {"m/config.json": _quant(LLAMA, {**CT_W4A16_KV, "kv_cache_scheme": {"num_bits": 3, "type": "float", "strategy": "tensor"}})}, None),
    ("ct-kv-scheme-int4", {"m/config.json": _quant(LLAMA, {**CT_W4A16_KV, "kv_cache_scheme": {"num_bits": 4, "type": "int", "strategy": "tensor"}})}, True),
    ("ct-kv-scheme-per-channel", {"m/config.json": _quant(LLAMA, {**CT_W4A16_KV, "kv_cache_scheme": {"num_bits": 8, "type": "float", "strategy": "channel"}})}, True),
    ("ct-kv-scheme-list", {"m/config.json": _quant(LLAMA, {**CT_W4A16_KV, "kv_cache_scheme": [8]})}, True),
    ("gptq-v2-desc-act", {"m/config.json": _quant(LLAMA, GPTQ_V2)}, False),
    ("modelopt-side-file", {"m/config.json": json.dumps(LLAMA), "m/hf_quant_config.json": json.dumps(MODELOPT_SIDE)}, False),
    ("modelopt-side-file-and-config-disagree", {"m/config.json": _quant(LLAMA, {"quant_method": "fp8"}), "m/hf_quant_config.json": json.dumps({**MODELOPT_SIDE, "quantization": {"quant_algo": "NVFP4", "group_size": 16}})}, None),
    ("modelopt-side-file-quantization-null", {"m/config.json": json.dumps(LLAMA), "m/hf_quant_config.json": json.dumps({**MODELOPT_SIDE, "quantization": None})}, True),
    ("modelopt-side-file-list", {"m/config.json": json.dumps(LLAMA), "m/hf_quant_config.json": "[]"}, True),
    ("gptq-side-file-and-awq-side-file", {"m/config.json": json.dumps(LLAMA), "m/quantize_config.json": json.dumps({"bits": 4, "group_size": 128}), "m/quant_config.json": json.dumps({"w_bit": 4, "q_group_size": 128, "zero_point": True})}, None),
    ("awq-side-file-autoawq-keys", {"m/config.json": json.dumps(LLAMA), "m/quant_config.json": json.dumps({"w_bit": 4, "q_group_size": 128, "zero_point": True, "version": "GEMM"})}, False),
    ("fp8-modules-not-convert-string", {"m/config.json": _quant(LLAMA, {**QWEN3_FP8, "modules_to_not_convert": "lm_head"})}, True),
    # vLLM's Fp8Config: block-wise weights take dynamic activations only; static per-tensor loads
    ("fp8-block-activation-scheme-static", {"m/config.json": _quant(LLAMA, {**QWEN3_FP8, "activation_scheme": "static"})}, True),
    ("fp8-tensor-activation-scheme-static", {"m/config.json": _quant(LLAMA, {"quant_method": "fp8", "activation_scheme": "static"})}, False),
    ("fp8-activation-scheme-unknown", {"m/config.json": _quant(LLAMA, {**QWEN3_FP8, "activation_scheme": "per-token"})}, True),
    ("fp8-activation-scheme-list", {"m/config.json": _quant(LLAMA, {**QWEN3_FP8, "activation_scheme": ["dynamic"]})}, True),
    ("fp8-fmt-e5m2", {"m/config.json": _quant(LLAMA, {**QWEN3_FP8, "fmt": "e5m2"})}, None),
    ("quant-in-text-config-and-top-disagree", {"m/config.json": json.dumps({"architectures": ["LlavaForConditionalGeneration"], "model_type": "llava", "quantization_config": {"quant_method": "fp8"}, "text_config": {**LLAMA, "quantization_config": GPTQ_V2}})}, None),
]


# Safetensors folders whose index and headers disagree -------------------------------------------

W = {"dtype": "BF16", "shape": [2, 2], "data_offsets": [0, 8]}
SH = ("model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors")
ST16: list[tuple[str, dict[str, FileSpec], bool | None]] = [
    ("index-names-tensor-no-shard-holds", {"m/model.safetensors.index.json": json.dumps({"weight_map": {"a": SH[0], "b": SH[1], "c": SH[1]}}), f"m/{SH[0]}": _st({"a": W}), f"m/{SH[1]}": _st({"b": W})}, None),
    ("index-maps-tensor-to-other-shard", {"m/model.safetensors.index.json": json.dumps({"weight_map": {"a": SH[1], "b": SH[0]}}), f"m/{SH[0]}": _st({"a": W}), f"m/{SH[1]}": _st({"b": W})}, None),
    ("index-names-itself", {"m/model.safetensors.index.json": json.dumps({"weight_map": {"a": "model.safetensors.index.json"}}), "m/model.safetensors": _st({"a": W})}, True),
    ("index-names-dot", {"m/model.safetensors.index.json": json.dumps({"weight_map": {"a": "."}}), "m/model.safetensors": _st({"a": W})}, True),
    ("index-names-empty-string", {"m/model.safetensors.index.json": json.dumps({"weight_map": {"a": ""}}), "m/model.safetensors": _st({"a": W})}, True),
    ("index-metadata-total-size-negative", {"m/model.safetensors.index.json": json.dumps({"metadata": {"total_size": -1}, "weight_map": {"a": SH[0]}}), f"m/{SH[0]}": _st({"a": W})}, None),
    ("index-metadata-string", {"m/model.safetensors.index.json": json.dumps({"metadata": "x", "weight_map": {"a": SH[0]}}), f"m/{SH[0]}": _st({"a": W})}, None),
    ("index-deep-nesting", {"m/model.safetensors.index.json": '{"metadata": ' + "[" * 100_000 + "]" * 100_000 + ', "weight_map": {}}', "m/model.safetensors": _st({"a": W})}, True),
    ("index-utf16", {"m/model.safetensors.index.json": json.dumps({"weight_map": {"a": "model.safetensors"}}).encode("utf-16"), "m/model.safetensors": _st({"a": W})}, True),
    ("index-bom", {"m/model.safetensors.index.json": b"\xef\xbb\xbf" + json.dumps({"weight_map": {"a": "model.safetensors"}}).encode(), "m/model.safetensors": _st({"a": W})}, False),
    ("header-leading-space", {"m/model.safetensors": _st(b' {"a": {"dtype": "BF16", "shape": [2, 2], "data_offsets": [0, 8]}}')}, None),
    ("header-metadata-nested", {"m/model.safetensors": _st({"__metadata__": {"format": {"pt": 1}}, "a": W})}, True),
    ("header-metadata-null", {"m/model.safetensors": _st({"__metadata__": None, "a": W})}, True),
    ("header-5000-digit-offset", {"m/model.safetensors": _st(b'{"a": {"dtype": "BF16", "shape": [2, 2], "data_offsets": [0, ' + fs.HUGE_INT.encode() + b"]}}")}, True),
    ("header-float-offset", {"m/model.safetensors": _st(b'{"a": {"dtype": "BF16", "shape": [2, 2], "data_offsets": [0, 8.0]}}')}, True),
    ("header-float-shape", {"m/model.safetensors": _st(b'{"a": {"dtype": "BF16", "shape": [2.0, 2], "data_offsets": [0, 8]}}')}, True),
    ("header-deep-nesting", {"m/model.safetensors": _st(b'{"a": ' + b"[" * 100_000 + b"]" * 100_000 + b"}")}, True),
    ("header-nan-shape", {"m/model.safetensors": _st(b'{"a": {"dtype": "BF16", "shape": [NaN, 2], "data_offsets": [0, 8]}}')}, True),
    ("header-f4-odd-elements", {"m/model.safetensors": _st({"a": {"dtype": "F4", "shape": [3], "data_offsets": [0, 2]}}, b"\0\0")}, True),
    ("header-f6-shape", {"m/model.safetensors": _st({"a": {"dtype": "F6_E2M3", "shape": [4], "data_offsets": [0, 3]}}, b"\0\0\0")}, None),
    ("shard-uppercase-suffix", {"m/model.SAFETENSORS": _st({"a": W})}, None),
    ("shard-empty-file", {"m/model.safetensors": b""}, True),
    ("shard-only-header-no-tensors", {"m/model.safetensors": _st({}, b"")}, None),
]


# Session traces whose turns skip, ids that mix types; CSV given as a trace ----------------------

S = fs.SESSION_ROWS
TRACES16: list[tuple[str, str, bool | None]] = [
    ("turn-gap", _lines([S[0], {**S[1], "turn": 5}, S[2], S[3]]), None),
    ("session-id-int-and-string", _lines([S[0], S[1], {**S[2], "session_id": 1}, {**S[3], "session_id": "1"}]), None),
    ("session-id-float", _lines([{**S[0], "session_id": 1.5}, S[1]]), True),
    ("session-id-object", _lines([{**S[0], "session_id": {"a": 1}}, S[1]]), True),
    ("session-id-5000-digits", '{"session_id": ' + fs.HUGE_INT + ', "turn": 0, "input_tokens": 5, "output_tokens": 5}\n', None),
    ("later-turn-arrival-and-think", _lines([S[0], {**S[1], "arrival_s": 9.0}, S[2], S[3]]), None),
    ("first-turn-think-only", _lines([{k: v for k, v in {**S[0], "think_s": 3.0}.items() if k != "arrival_s"}, S[1]]), None),
    ("arrival-1e-320", _lines([{**S[0], "arrival_s": 1e-320}, S[1]]), None),
    ("think-1e300", _lines([S[0], {**S[1], "think_s": 1e300}]), True),
    ("arrival-unsorted-sessions", _lines([{**S[2], "arrival_s": 5.0}, S[3], {**S[0], "arrival_s": 1.0}, S[1]]), False),
    ("csv-trace", "arrival_s,input_tokens,output_tokens\n0.0,50,20\n0.4,60,30\n", True),
    ("tsv-trace", "arrival_s\tinput_tokens\toutput_tokens\n0.0\t50\t20\n", True),
    ("json-object-of-rows", json.dumps({"requests": fs.PLAIN_ROWS}), True),
    ("single-line-10mb", json.dumps({"input_tokens": 5, "output_tokens": 5, "pad": "x" * 10_000_000}) + "\n", True),
    ("plain-arrival-5000-digits", '{"arrival_s": ' + fs.HUGE_INT + ', "input_tokens": 5, "output_tokens": 5}\n', True),
    ("plain-tokens-float-whole", _lines([{**r, "input_tokens": float(r["input_tokens"])} for r in fs.PLAIN_ROWS]), None),  # type: ignore[arg-type]
]


# Structure-aware mutations: each key of a real file's shape set to each wrong type ------------

WRONG = ["null", "true", "0", "-1", '"x"', "[]", "{}", "1e400", "NaN", fs.HUGE_INT, "0.5"]


def _mutants(obj: dict[str, object]) -> Iterator[tuple[str, str]]:
    """(key=raw, JSON text) of `obj` with one key's value (nested objects' too) set to each of
    WRONG, as the raw JSON text."""
    for key, value in obj.items():
        for raw in WRONG:
            yield f"{key}={raw[:8]}", fs._json_with(obj, key, raw)
        if isinstance(value, dict):
            for inner, text in _mutants(value):
                yield f"{key}.{inner}", fs._json_with(obj, key, text)


def mut16_cases() -> Iterator[Case]:
    """Only crashes, hangs, lost files and two-line errors count (invalid=None): a wrong type
    may be one a reader takes as absent, by design."""
    for label, quant in [("fp8", QWEN3_FP8), ("ct", CT_W4A16_KV), ("gptq", GPTQ_V2)]:
        cfg = QWEN_MOE if label == "fp8" else LLAMA
        for name, text in _mutants(quant):
            config = json.dumps({**cfg, "quantization_config": "__Q__"}).replace('"__Q__"', text)
            yield Case("mut16", f"quant-{label}-{name}", MEM, {"m/config.json": config}, None)
    for name, text in _mutants(MODELOPT_SIDE):
        yield Case("mut16", f"modelopt-side-{name}", MEM, {"m/config.json": json.dumps(LLAMA), "m/hf_quant_config.json": text}, None)
    for name, text in _mutants(_sg("sharegpt", SG[1])):
        yield Case("mut16", f"sglang-{name}", CAL_SG, {"r.jsonl": text + "\n"}, None)
    index = {"metadata": {"total_size": 16}, "weight_map": {"a": SH[0], "b": SH[1]}}
    shards = {f"m/{SH[0]}": _st({"a": W}), f"m/{SH[1]}": _st({"b": W})}
    for name, text in _mutants(index):
        yield Case("mut16", f"index-{name}", MEM, {"m/config.json": json.dumps(LLAMA), "m/model.safetensors.index.json": text, **shards}, None)
    header = {"__metadata__": {"format": "pt"}, "a": W}
    for name, text in _mutants(header):
        yield Case("mut16", f"header-{name}", MEM, {"m/config.json": json.dumps(LLAMA), "m/model.safetensors": _st(text.encode())}, None)
    for name, text in _mutants(S[2]):
        yield Case("mut16", f"session-{name}", ["sweep", "llama-3.1-8b", "--workload", "{d}/t.jsonl", "--concurrency", "4"],
                   {"t.jsonl": "\n".join([json.dumps(S[0]), json.dumps(S[1]), text, json.dumps(S[3])]) + "\n"}, None)


# A calibration file as `capcliff calibrate -o` writes it from fuzz_surfaces.RUNS, applied to a
# sweep; each of its values set to each wrong TOML value (calfile_cases tried hand-picked ones)
CAL_FILE = """engine = "vllm"
source = "r.json"
model = "llama-3.1-8b"
model_shape = "llama L32 h4096 a32/kv8 d128 i14336 v128256 bf16"
gpu = "h100-sxm"
layout = "tp1"
kv_cache_dtype = "bf16"

[terms_gib]
weights_overhead = 0.0314

[step_time]
fixed_s = 0.003475
scale = 1.8052
profile = "vllm V1 >= 0.14 (async scheduling)"
source = "r.json"
points = 3
concurrency_min = 8
concurrency_max = 64
request_overhead_s = 0.0
"""
WRONG_TOML = ["nan", "inf", "-inf", "-1", "0", "-0.0", '"x"', "[]", "{}", "true", fs.HUGE_INT[:40], "1e308", "1970-01-01"]


def calfile16_cases() -> Iterator[Case]:
    sweep = ["sweep", "llama-3.1-8b", "--gpu", "h100-sxm", *fs.SMALL, "--concurrency", "4", "--calibration", "{d}/c.toml"]
    yield Case("calfile16", "valid", sweep, {"c.toml": CAL_FILE}, False)
    for line in CAL_FILE.splitlines():
        if " = " not in line:
            continue
        key = line.split(" = ", 1)[0]
        for raw in WRONG_TOML:
            text = CAL_FILE.replace(line, f"{key} = {raw}", 1)
            yield Case("calfile16", f"{key}={raw[:10]}", sweep, {"c.toml": text}, None)


def tools16_cases() -> Iterator[Case]:
    for name, argv, files, invalid in TOOLS16:
        yield Case("tools16", name, argv, files, invalid)


def cal16_cases() -> Iterator[Case]:
    for name, argv, files, invalid in CAL16:
        yield Case("cal16", name, argv, files, invalid)


def configs16_cases() -> Iterator[Case]:
    for name, cfg, invalid in CONFIGS16:
        text = cfg if isinstance(cfg, str) else json.dumps(cfg)
        yield Case("configs16", name, MEM8, {"m/config.json": text}, invalid)
    sweep = ["sweep", "{d}/m", "--gpus", "1", "--gpu", "h200-sxm", *fs.SMALL, "--concurrency", "4"]
    yield Case("configs16", "sweep-starcoder2", sweep, {"m/config.json": json.dumps(STARCODER2)}, True)
    yield Case("configs16", "sweep-gemma1", sweep, {"m/config.json": json.dumps(GEMMA7B)}, False)
    long = ["sweep", "{d}/m", "--gpus", "2", "--gpu", "h200-sxm", "--isl", "100000", "--osl", "1000", "--num-requests", "2", "--concurrency", "1"]
    yield Case("configs16", "sweep-qwq-yarn-100k", long, {"m/config.json": json.dumps(QWQ_YARN)}, False)
    yield Case("configs16", "sweep-qwq-no-yarn-100k", long, {"m/config.json": json.dumps({**QWQ_YARN, "rope_scaling": None})}, True)


def quant16_cases() -> Iterator[Case]:
    for name, files, invalid in QUANT16:
        yield Case("quant16", name, MEM, files, invalid)


def st16_cases() -> Iterator[Case]:
    cfg = {"m/config.json": json.dumps(LLAMA)}
    for name, files, invalid in ST16:
        yield Case("st16", name, MEM, {**cfg, **files}, invalid)


def traces16_cases() -> Iterator[Case]:
    sweep = ["sweep", "llama-3.1-8b", "--workload", "{d}/t.jsonl", "--concurrency", "4"]
    for name, text, invalid in TRACES16:
        yield Case("traces16", name, sweep, {"t.jsonl": text}, invalid)
    yield Case("traces16", "csv-suffix", ["sweep", "llama-3.1-8b", "--workload", "{d}/t.csv", "--concurrency", "4"],
               {"t.csv": "arrival_s,input_tokens,output_tokens\n0.0,50,20\n"}, True)


SURFACES16: dict[str, Callable[[], Iterator[Case]]] = {
    "tools16": tools16_cases, "cal16": cal16_cases, "configs16": configs16_cases,
    "quant16": quant16_cases, "st16": st16_cases, "traces16": traces16_cases,
    "mut16": mut16_cases, "calfile16": calfile16_cases,
}
# fmt: on
