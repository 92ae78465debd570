"""The sixth bad-input campaign's surfaces (issue 23), run by `fuzz_surfaces.py`:

    PYTHONPATH=. python benchmarks/fuzz_surfaces.py combos6 cards6 configs6 spec6 files6 outputs6 env6

What the five campaigns before did not try: pairs and triples of options each valid alone
(combos6); hardware and model-card TOML files given by path (cards6); HF config.json shapes of
multimodal, hybrid and partial-MoE checkpoints (configs6); every check-spec key the earlier
campaigns' key list lacks, read from the spec's own pydantic models, at TOML dates, times,
arrays, tables and 64-bit extremes, and spec structures (arrays where tables are expected,
scenario names an output format cannot hold) (spec6); compressed, binary and mid-line-cut input
files and token counts at the limits (files6); output paths that clash with each other or with an
input another way (outputs6); and the environment (env6: a fresh interpreter per case).
"""

# Data tables: one case per line, some past 100 characters, some with look-alike letters
# (fullwidth, Cyrillic) on purpose; the case builders are long lists, not logic.
# ruff: noqa: E501, RUF001
from __future__ import annotations

import gzip
import json
import re
import tomllib
from collections.abc import Callable, Iterator
from pathlib import Path

from fuzz_harness import Case, FileSpec
from fuzz_surfaces import (
    CAL_OK,
    LOGS,
    PLAIN_ROWS,
    RUNS,
    SESSION_ROWS,
    SMALL,
    SPEC,
    SPEC_KEYS,
    llama_config,
)

ROOT = Path(__file__).resolve().parent.parent
SW = ["sweep", "llama-3.1-8b", *SMALL, "--concurrency", "4"]
MOE = ["sweep", "qwen3-30b-a3b", *SMALL, "--concurrency", "4"]
PLAN = ["plan", "llama-3.1-8b", "--jobs", "1", *SMALL]
ONLINE = [*PLAN, "--rate", "2", "--slo-ttft", "2"]
SESS = ["--workload", "multiturn-chat", "--num-requests", "20"]
SW_SESS = ["sweep", "llama-3.1-8b", *SESS, "--concurrency", "4"]


def _lines(rows: list[dict[str, object]]) -> str:
    return "\n".join(json.dumps(r) for r in rows) + "\n"


# Pairs (and triples) of options, each valid alone --------------------------------------------

COMBOS6: list[tuple[str, list[str], bool | None]] = [
    # disaggregation with offload, speculation and sessions
    ("disagg-offload", [*SW, "--disagg", "1p:tp1,1d:tp1", "--offload", "cpu:64GiB"], None),
    ("disagg-spec-sessions", [*SW_SESS, "--clients", "4", "--disagg", "1p:tp1,1d:tp1", "--speculative", "ngram:3", "--spec-accept-length", "1.5"], None),
    ("disagg-offload-spec-sessions", [*SW_SESS, "--clients", "4", "--disagg", "1p:tp1,1d:tp1", "--offload", "cpu:64GiB", "--speculative", "ngram:3", "--spec-accept-length", "1.5"], None),
    ("offload-spec-sessions", [*SW_SESS, "--clients", "4", "--offload", "cpu:64GiB", "--speculative", "ngram:3", "--spec-accept-length", "1.5"], None),
    ("disagg-swap", [*SW, "--disagg", "1p:tp1,1d:tp1", "--preemption", "swap"], None),
    ("disagg-routing-least-loaded", [*SW, "--disagg", "1p:tp1,1d:tp1", "--routing", "least-loaded"], None),
    ("disagg-policy", [*SW, "--disagg", "1p:tp1,1d:tp1", "--policy", "kv-aware"], None),
    ("disagg-gpus-disagree", [*SW, "--disagg", "1p:tp1,1d:tp1", "--gpus", "3"], True),
    ("disagg-max-model-len-short", [*SW, "--disagg", "1p:tp1,1d:tp1", "--max-model-len", "50"], True),
    # layouts against --gpus and the model
    ("gpus-3-tp2-dp", [*SW, "--gpus", "3", "--layout", "dp3"], None),
    ("gpus-6-tp4", [*SW, "--gpus", "6", "--layout", "tp4"], True),
    ("pp33-of-32-layers", [*SW, "--gpus", "33", "--layout", "pp33"], True),
    ("pp32-of-32-layers", [*SW, "--gpus", "32", "--layout", "pp32"], None),
    ("pp3-uneven", [*SW, "--gpus", "3", "--layout", "pp3"], None),
    ("ep2-dense", [*SW, "--gpus", "2", "--layout", "tp2-ep2"], True),
    ("dp2-ep2-dense", [*SW, "--gpus", "2", "--layout", "dp2-ep2"], True),
    ("dpa2-dense", [*SW, "--gpus", "2", "--layout", "dpa2"], None),
    ("ep-past-experts", [*MOE, "--gpus", "256", "--layout", "dp256-ep256"], True),
    ("tp-past-kv-heads-moe", [*MOE, "--gpus", "8", "--layout", "tp8"], None),
    ("tp-not-dividing-heads-moe", [*MOE, "--gpus", "6", "--layout", "tp6"], True),
    ("layout-and-other-layout", [*SW, "--gpus", "2", "--layout", "tp2,dp2,pp2"], None),
    ("layout-list-different-gpus", [*SW, "--layout", "tp1,tp2"], None),
    # quantization and dtypes against the GPU and the engine
    ("fp4-card-on-h100", ["sweep", "deepseek-r1-0528-fp4", *SMALL, "--concurrency", "4", "--gpu", "h200-sxm", "--gpus", "8", "--layout", "tp8"], None),
    ("fp4-card-on-mi300x", ["memory", "deepseek-r1-0528-fp4", "--gpu", "mi300x", "--gpus", "8", "--layout", "tp8"], None),
    ("nvfp4-on-mi300x", [*SW, "--gpu", "mi300x", "--weight-dtype", "nvfp4"], None),
    ("mxfp4-on-h100", [*SW, "--weight-dtype", "mxfp4"], None),
    ("fp4-card-upcast-bf16", ["memory", "deepseek-r1-0528-fp4", "--gpus", "8", "--layout", "tp8", "--weight-dtype", "bf16"], None),
    ("kv-fp8-weights-int4", [*SW, "--weight-dtype", "int4", "--kv-dtype", "fp8"], None),
    ("kv-nvfp4", [*SW, "--kv-dtype", "nvfp4"], None),
    ("kv-int4", [*SW, "--kv-dtype", "int4"], None),
    ("weight-fp16-sglang", [*SW, "--weight-dtype", "fp16", "--engine", "sglang"], None),
    ("int4-trtllm", [*SW, "--weight-dtype", "int4", "--engine", "trtllm"], None),
    # engine settings against each other
    ("swap-sglang", [*SW, "--engine", "sglang", "--preemption", "swap"], None),  # a simulator what-if (README)
    ("swap-trtllm", [*SW, "--engine", "trtllm", "--preemption", "swap"], None),
    ("chunked-prefill-sglang", [*SW, "--engine", "sglang", "--enable-chunked-prefill"], True),
    ("chunked-prefill-vllm-v1-off", [*SW, "--engine", "vllm", "--no-enable-chunked-prefill"], True),
    ("spec-overlap-vllm", [*SW, "--speculative", "ngram:3", "--spec-accept-length", "1.5", "--spec-overlap"], None),
    ("recv-interval-vllm", [*SW, "--scheduler-recv-interval", "10"], True),
    ("overlap-schedule-v0", [*SW, "--engine", "vllm-v0", "--overlap-schedule"], None),
    ("moe-backend-dense", [*SW, "--engine", "trtllm", "--moe-backend", "CUTLASS"], True),
    ("all2all-dense", [*SW, "--all2all-backend", "deepep_low_latency"], True),
    ("routing-no-dp", [*SW, "--routing", "least-loaded"], None),
    ("policy-other-engine", [*SW, "--engine", "sglang", "--policy", "trtllm-no-evict"], None),
    ("policy-v0-on-v1", [*SW, "--policy", "vllm-v0"], None),
    ("mtp-on-llama", [*SW, "--speculative", "mtp:2"], True),
    ("eagle-disagg", [*SW, "--disagg", "1p:tp1,1d:tp1", "--speculative", "eagle:3", "--spec-accept-length", "2"], None),
    ("kv-transfer-overhead-alone", [*SW, "--kv-transfer-overhead-ms", "5"], True),
    ("block-size-sglang-64", [*SW, "--engine", "sglang", "--block-size", "64"], None),
    ("block-size-odd", [*SW, "--block-size", "7"], None),
    ("max-seqs-under-concurrency", [*SW, "--max-num-seqs", "2"], None),
    ("batched-tokens-under-block", [*SW, "--max-num-batched-tokens", "1"], None),
    ("batched-tokens-under-isl-v0", [*SW, "--engine", "vllm-v0", "--max-num-batched-tokens", "50"], None),
    ("max-model-len-under-isl", [*SW, "--max-model-len", "150"], True),
    ("kv-memory-past-hbm", [*SW, "--gpu", "h100-sxm", "--kv-cache-memory", "100GiB"], True),
    # answered: sweep without --gpus takes the fewest GPUs that fit (4 of 10 GiB hold 16 GB)
    ("gpu-total-under-weights", [*SW, "--gpu-total-memory", "10GiB"], False),
    ("gpu-total-past-hbm", [*SW, "--gpu-total-memory", "1TiB"], None),
    ("kv-memory-and-utilization", [*SW, "--kv-cache-memory", "10GiB", "--gpu-memory-utilization", "0.5"], None),
    ("enforce-eager-trtllm", [*SW, "--engine", "trtllm", "--enforce-eager"], None),
    ("swap-space-trtllm", [*SW, "--engine", "trtllm", "--swap-space", "4GiB"], None),
    ("step-source-measured-mi300x", [*SW, "--gpu", "mi300x", "--step-source", "measured"], None),
    ("step-source-measured-sglang", [*SW, "--engine", "sglang", "--step-source", "measured"], None),
    # workload shape against the arrival and the trace
    ("think-time-batch", [*SW, "--arrival", "batch", "--think-time", "5"], True),
    ("think-time-poisson", [*SW, "--rate", "2", "--think-time", "5"], True),
    ("range-ratio-sessions", [*SW_SESS, "--random-range-ratio", "0.5"], None),
    ("turns-chat", [*SW[:2], "--workload", "chat", "--num-requests", "20", "--concurrency", "4", "--turns", "3"], True),
    ("clients-and-rate", [*SW, "--clients", "4", "--rate", "2"], True),
    ("clients-past-requests", [*SW, "--clients", "100"], None),
    ("osl-list-rate", [*SW[:2], "--isl", "100", "--osl", "50,100", "--num-requests", "20", "--rate", "2", "--concurrency", "4"], None),
    ("slo-in-batch-sweep", [*SW, "--arrival", "batch", "--slo-ttft", "1"], None),
    # a serve command against flags
    ("serve-tp2-layout-tp4", [*SW, "--gpus", "4", "--layout", "tp4", "--serve-command", "vllm serve meta-llama/Llama-3.1-8B --tensor-parallel-size 2"], True),
    ("serve-sglang-engine-vllm", [*SW, "--engine", "vllm", "--serve-command", "python -m sglang.launch_server --model-path meta-llama/Llama-3.1-8B --tp 1"], True),
    ("serve-other-model", [*SW, "--serve-command", "vllm serve Qwen/Qwen3-8B"], True),
    ("serve-utilization-twice", [*SW, "--gpu-memory-utilization", "0.5", "--serve-command", "vllm serve meta-llama/Llama-3.1-8B --gpu-memory-utilization 0.8"], True),
    ("serve-unknown-flag", [*SW, "--serve-command", "vllm serve meta-llama/Llama-3.1-8B --no-such-flag 3"], None),
    ("serve-dtype-float32", [*SW, "--serve-command", "vllm serve meta-llama/Llama-3.1-8B --dtype float32"], True),
    ("serve-dtype-half", [*SW, "--serve-command", "vllm serve meta-llama/Llama-3.1-8B --dtype half"], False),
    ("serve-dtype-no-value", [*SW, "--serve-command", "vllm serve meta-llama/Llama-3.1-8B --dtype"], True),
    ("serve-empty", [*SW, "--serve-command", ""], True),
    ("serve-unbalanced-quote", [*SW, "--serve-command", "vllm serve 'meta-llama/Llama-3.1-8B"], True),
    # plan's own
    ("plan-nodes-and-gpus", [*ONLINE, "--nodes", "2", "--gpus", "4"], True),
    ("plan-nodes-and-gpus-agree", [*ONLINE, "--nodes", "1", "--gpus", "8"], None),
    ("plan-layout-and-disagg", [*ONLINE, "--layout", "tp1", "--disagg"], True),
    ("plan-local-path-catalog", [*ONLINE, "--serve-local-path"], True),
    ("plan-objective-cost-two-gpus", [*PLAN, "--arrival", "batch", "--objective", "cost", "--gpu", "h100-sxm,h200-sxm"], True),
    ("plan-plot-and-disagg", [*ONLINE, "--disagg", "--plot", "{d}/p.png"], True),
    ("plan-headroom-batch", [*PLAN, "--arrival", "batch", "--headroom", "0.3"], True),
    ("plan-clients-and-slo", [*PLAN, "--clients", "4", "--slo-tpot", "0.05"], None),
    ("plan-gpus-1-layout-tp2", [*ONLINE, "--gpus", "1", "--layout", "tp2"], True),
    ("plan-moe-backend-dense", [*ONLINE, "--engine", "sglang", "--moe-backend", "triton"], True),
    ("memory-all2all-dense", ["memory", "llama-3.1-8b", "--gpus", "1", "--all2all-backend", "deepep_high_throughput"], True),
    ("moe-backend-moe-model", [*MOE, "--gpus", "2", "--engine", "trtllm", "--moe-backend", "CUTLASS"], None),
    ("plan-kv-transfer-no-disagg", [*ONLINE, "--kv-transfer-overhead-ms", "5"], True),
    ("plan-kv-transfer-disagg", [*ONLINE, "--gpus", "2", "--disagg", "--kv-transfer-overhead-ms", "5"], None),
    ("memory-layout-all-gpus-3", ["memory", "llama-3.1-8b", "--gpus", "3", "--layout", "all"], None),
    ("memory-max-model-len-1", ["memory", "llama-3.1-8b", "--gpus", "1", "--max-model-len", "1"], None),
    ("memory-block-past-max-model-len", ["memory", "llama-3.1-8b", "--gpus", "1", "--max-model-len", "8", "--block-size", "16"], None),
]  # fmt: skip


def combos6_cases() -> Iterator[Case]:
    for name, argv, invalid in COMBOS6:
        yield Case("combos6", name, argv, {}, invalid)


# Hardware and model-card TOML files given by path ------------------------------------------------

HW_TEXT = (ROOT / "hardware" / "h100-sxm.toml").read_text()
CARD_TEXT = (ROOT / "model_cards" / "llama-3.1-8b.toml").read_text()


def _retext(text: str, key: str, raw: str | None, *, old_id: str, new_id: str) -> str:
    """`text` with its id set to `new_id` and `key = raw` (None: the line dropped)."""
    text = text.replace(f'id = "{old_id}"', f'id = "{new_id}"', 1)
    if raw is None:
        return re.sub(rf"(?m)^{re.escape(key)} = .*\n", "", text, count=1)
    return re.sub(rf"(?m)^{re.escape(key)} = .*$", lambda _: f"{key} = {raw}", text, count=1)


HW_NUMBERS = ["hbm_driver_mib", "hbm_bandwidth_tb_s", "dense_tflops_bf16", "dense_tflops_fp8",
              "scaleup_bw_gb_s_bidir", "scaleup_domain_gpus", "gpus_per_node",
              "host_dram_tb_per_node", "host_link_bw_gb_s_bidir", "scaleout_bw_gb_s_per_gpu",
              "scaleup_latency_us", "nvme_read_gb_s_per_node", "usd_per_gpu_hour"]  # fmt: skip
HW_BAD = [("0", True), ("-1", True), ("1e-300", True), ("1e300", True), ("9" * 30, True),
          ('"abc"', True), ("true", True), ("[1]", True), ("1979-05-27", True)]  # fmt: skip


def cards6_cases() -> Iterator[Case]:
    mem = ["memory", "llama-3.1-8b", "--gpus", "1", "--gpu"]
    sweep = ["sweep", "llama-3.1-8b", *SMALL, "--concurrency", "4", "--gpus", "1", "--gpu"]
    ok = _retext(HW_TEXT, "name", '"mine"', old_id="h100-sxm", new_id="g")
    for spelling in ("{d}/g", "{d}/g.toml", "./g.toml", "g.toml"):
        yield Case("cards6", f"hw-valid-{spelling}", [*mem, spelling], {"g.toml": ok}, None)
    for key in HW_NUMBERS:
        for raw, invalid in HW_BAD:
            text = _retext(HW_TEXT, key, raw, old_id="h100-sxm", new_id="g")
            yield Case(
                "cards6", f"hw-{key}={raw[:10]}", [*sweep, "{d}/g.toml"], {"g.toml": text}, invalid
            )
    for name, text, invalid in [
        ("hw-unknown-field", ok + "\nhbm_gb = 80\n", True),
        ("hw-missing-source", re.sub(r"(?m)^hbm_bandwidth_tb_s = \".*\n", "", ok), True),
        ("hw-missing-field", _retext(ok, "hbm_driver_mib", None, old_id="g", new_id="g"), True),
        ("hw-id-mismatch", ok.replace('id = "g"', 'id = "other"'), True),
        ("hw-id-of-catalog", HW_TEXT, True),
        ("hw-bom", "\ufeff" + ok, None),
        ("hw-crlf", ok.replace("\n", "\r\n"), None),
        ("hw-nul", ok.replace('name = "mine"', 'name = "mi\\u0000ne"'), None),
        ("hw-dup-key", ok + "\nhbm_driver_mib = 1\n", True),
        ("hw-empty", "", True),
        ("hw-sources-array", ok.replace("[sources]", "sources2 = 1\n[sources]").replace("[sources]", "[[sources]]"), True),
        ("hw-achievable-past-peak", ok.replace("hbm_bandwidth_tb_s = 3.35", "hbm_bandwidth_tb_s = 3.35\nhbm_achievable_tb_s = 9.0"), True),
        ("hw-fp4-on-hopper", ok.replace("dense_tflops_fp8 = 1978.9", "dense_tflops_fp8 = 1978.9\ndense_tflops_fp4 = 4000.0"), True),
        ("hw-domain-1-node-8", ok.replace("scaleup_domain_gpus = 8", "scaleup_domain_gpus = 1"), None),
    ]:  # fmt: skip
        yield Case("cards6", name, [*sweep, "{d}/g.toml"], {"g.toml": text}, invalid)
    card_ok = CARD_TEXT.replace('id = "llama-3.1-8b"', 'id = "c"', 1)
    for spelling in ("{d}/c", "{d}/c.toml"):
        yield Case(
            "cards6",
            f"card-valid-{spelling}",
            ["memory", spelling, "--gpus", "1"],
            {"c.toml": card_ok},
            None,
        )
    card_cases: list[tuple[str, str, bool | None]] = [
        ("native-fp4", card_ok.replace('native_dtype = "bf16"', 'native_dtype = "fp4"'), True),
        ("native-int", card_ok.replace('native_dtype = "bf16"', "native_dtype = 16"), True),
        ("no-source", re.sub(r'(?m)^source = ".*\n', "", card_ok, count=1), True),
        ("published-0", card_ok.replace("total = 8_030_261_248", "total = 0"), True),
        ("published-far-off", card_ok.replace("total = 8_030_261_248", "total = 80_302_612_480"), True),
        ("published-active-past-total", card_ok.replace("active = 8_030_261_248", "active = 9_000_000_000"), True),
        ("config-array", card_ok.replace("[config]", "[[config]]").replace("[config.rope_scaling]", "[config.rope_scaling_x]"), True),
        ("config-missing", card_ok.split("[config]")[0], True),
        ("config-layers-0", card_ok.replace("num_hidden_layers = 32", "num_hidden_layers = 0"), True),
        ("config-layers-str", card_ok.replace("num_hidden_layers = 32", 'num_hidden_layers = "32"'), True),
        ("config-layers-date", card_ok.replace("num_hidden_layers = 32", "num_hidden_layers = 1979-05-27"), True),
        ("config-heads-huge", card_ok.replace("num_attention_heads = 32", f"num_attention_heads = {'9' * 25}"), True),
        ("unknown-field", card_ok.replace("[published_params]", 'license = "x"\n[published_params]'), True),
        ("bom-crlf", "\ufeff" + card_ok.replace("\n", "\r\n"), None),
        ("hf-repo-empty", card_ok.replace('hf_repo = "meta-llama/Llama-3.1-8B"', 'hf_repo = ""'), None),
        ("name-nul", card_ok.replace('name = "Llama 3.1 8B"', 'name = "Llama\\u0000"'), None),
    ]  # fmt: skip
    for name, text, invalid in card_cases:
        yield Case(
            "cards6",
            f"card-{name}",
            ["memory", "{d}/c.toml", "--gpus", "1"],
            {"c.toml": text},
            invalid,
        )
        if name in ("native-fp4", "published-far-off", "config-layers-0"):
            yield Case(
                "cards6",
                f"card-stem-{name}",
                ["memory", "{d}/c", "--gpus", "1"],
                {"c.toml": text},
                invalid,
            )
    # a spec naming both by path, relative to the spec
    spec = SPEC.replace('gpu = "h100-sxm"', 'gpu = "g.toml"')
    yield Case(
        "cards6", "spec-gpu-path", ["check", "{d}/s.toml"], {"s.toml": spec, "g.toml": ok}, None
    )
    spec = SPEC.replace('model = "llama-3.1-8b"', 'model = "c.toml"')
    yield Case(
        "cards6",
        "spec-card-path",
        ["check", "{d}/s.toml"],
        {"s.toml": spec, "c.toml": card_ok},
        None,
    )
    yield Case(
        "cards6",
        "plan-gpu-list-with-path",
        [*ONLINE, "--gpu", "h100-sxm,{d}/g.toml"],
        {"g.toml": ok},
        None,
    )
    yield Case("cards6", "calibrate-gpu-path", ["calibrate", "{d}/r.json", "--model", "llama-3.1-8b", "--gpu", "{d}/g.toml"],
               {"r.json": _lines(RUNS), "g.toml": ok}, None)  # fmt: skip


# HF config.json: multimodal nesting, hybrid attention, partial MoE ----------------------------


def configs6_cases() -> Iterator[Case]:
    c = llama_config()
    qwen = dict(tomllib.loads((ROOT / "model_cards" / "qwen3-30b-a3b.toml").read_text())["config"])
    gemma = dict(tomllib.loads((ROOT / "model_cards" / "gemma-3-27b.toml").read_text())["config"])

    def gtext(**changes: object) -> dict[str, object]:
        return {**gemma, "text_config": {**gemma["text_config"], **changes}}

    llava = {"architectures": ["LlavaForConditionalGeneration"], "model_type": "llava",
             "vision_config": {"hidden_size": 1024, "num_hidden_layers": 24}}  # fmt: skip
    variants: list[tuple[str, object, bool | None]] = [
        ("text-config-nested", {**llava, "text_config": c}, None),
        ("text-config-list", {**llava, "text_config": [c]}, True),
        ("text-config-string", {**llava, "text_config": "llama"}, True),
        ("text-config-null", {**llava, "text_config": None}, True),
        ("text-config-and-top-level", {**c, "text_config": {**c, "num_hidden_layers": 16}}, None),
        ("text-config-partial", {**llava, "text_config": {"hidden_size": 4096}}, True),
        ("text-config-deeper", {**llava, "text_config": {"text_config": c}}, True),
        ("text-config-dtype-outside", {**llava, "torch_dtype": "bfloat16", "text_config": {k: v for k, v in c.items() if k != "torch_dtype"}}, None),
        ("llm-config-key", {**llava, "llm_config": c}, None),
        ("no-kv-heads", {k: v for k, v in c.items() if k != "num_key_value_heads"}, None),
        ("kv-heads-null", {**c, "num_key_value_heads": None}, False),  # transformers: null is the heads
        ("kv-heads-0", {**c, "num_key_value_heads": 0}, True),
        ("head-dim-null", {**c, "head_dim": None}, None),
        ("head-dim-other", {**c, "head_dim": 64}, None),
        ("head-dim-float", {**c, "head_dim": 128.0}, True),
        ("rope-list", {**c, "rope_scaling": [1, 2]}, None),
        ("rope-factor-0", {**c, "rope_scaling": {"rope_type": "yarn", "factor": 0}}, None),
        ("rope-yarn-maxpos", {**c, "rope_scaling": {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 32768}, "max_position_embeddings": 131072}, None),
        ("model-type-int", {**c, "model_type": 5}, None),
        ("architectures-string", {**c, "architectures": "LlamaForCausalLM"}, None),
        ("moe-topk-only", {**c, "num_experts_per_tok": 2}, None),
        ("moe-experts-only", {**c, "num_local_experts": 8}, True),
        ("moe-experts-1", {**c, "num_local_experts": 1, "num_experts_per_tok": 1}, None),
        ("moe-qwen-no-topk", {k: v for k, v in qwen.items() if k != "num_experts_per_tok"}, True),
        ("moe-qwen-intermediate-0", {**qwen, "moe_intermediate_size": 0}, True),
        ("moe-qwen-experts-str", {**qwen, "num_experts": "128"}, True),
        ("moe-qwen-sparse-step-0", {**qwen, "decoder_sparse_step": 0}, True),
        ("moe-qwen-sparse-step-past", {**qwen, "decoder_sparse_step": 100}, True),
        ("gemma-layer-types-short", gtext(layer_types=["sliding_attention"] * 3), True),
        ("gemma-window-pattern-0", gtext(sliding_window_pattern=0), True),
        ("gemma-window-pattern-past", gtext(sliding_window_pattern=1000), None),
        ("gemma-window-past-context", gtext(sliding_window=10_000_000), None),
        ("gemma-top-level-layer-types", {**gemma, "layer_types": ["sliding_attention"] * 3}, None),  # the text model's are read
        ("hybrid-mamba-layers", {**c, "layer_types": ["mamba"] * 32}, True),
        ("hybrid-mixed-list", {**c, "layer_types": ["full_attention", 5] * 16}, True),
        ("hybrid-window-list-per-layer", {**c, "sliding_window": [4096] * 32}, True),
        ("max-window-layers-past", {**c, "use_sliding_window": True, "sliding_window": 4096, "max_window_layers": 100}, None),
        ("use-sliding-false-window-set", {**c, "use_sliding_window": False, "sliding_window": 4096}, None),
        ("tie-embeddings-str", {**c, "tie_word_embeddings": "false"}, True),
        ("vocab-huge", {**c, "vocab_size": 10**12}, True),
        ("intermediate-huge", {**c, "intermediate_size": 10**12}, True),
        ("hidden-not-heads-multiple", {**c, "hidden_size": 4000}, None),
        ("torch-dtype-float32", {**c, "torch_dtype": "float32"}, False),  # vLLM serves it in 16 bits
        ("dtype-key-new", {**{k: v for k, v in c.items() if k != "torch_dtype"}, "dtype": "bfloat16"}, None),
        ("dtype-both-disagree", {**c, "dtype": "float16"}, None),
        ("quant-config-null", {**c, "quantization_config": None}, None),
        ("compression-config-key", {**c, "compression_config": {"quant_method": "fp8"}}, False),
        ("compression-config-bad", {**c, "compression_config": {"quant_method": "gguf"}}, True),
        ("quant-fp8-no-method", {**c, "quantization_config": {"weight_block_size": [128, 128]}}, True),
        ("nested-huge-depth", {**c, "x": json.loads("[" * 500 + "]" * 500)}, None),
        ("unicode-keys", {**c, "ｈidden_size": 4096}, None),
    ]  # fmt: skip
    for name, config, invalid in variants:
        text = json.dumps(config)
        yield Case(
            "configs6", name, ["memory", "{d}/m", "--gpus", "1"], {"m/config.json": text}, invalid
        )
        if invalid is not True:
            yield Case(
                "configs6",
                f"sweep-{name}",
                ["sweep", "{d}/m", *SMALL, "--concurrency", "4", "--gpus", "1"],
                {"m/config.json": text},
                invalid,
            )
    # hf_quant_config.json beside the config (ModelOpt checkpoints)
    for name, side, invalid in [
        ("hf-quant-fp4", {"quantization": {"quant_algo": "NVFP4", "kv_cache_quant_algo": None}}, False),
        ("hf-quant-garbage", {"quantization": "x"}, True),
        ("hf-quant-binary", b"\x00\x01", True),
        ("hf-quant-beside-inline", {"quantization": "x"}, False),  # config.json's own wins, as in vLLM
    ]:  # fmt: skip
        inline = {**c, "quantization_config": {"quant_method": "fp8"}} if "inline" in name else c
        files: dict[str, FileSpec] = {"m/config.json": json.dumps(inline),
                                      "m/hf_quant_config.json": side if isinstance(side, bytes) else json.dumps(side)}  # fmt: skip
        yield Case("configs6", name, ["memory", "{d}/m", "--gpus", "1"], files, invalid)


# Check specs: the keys the earlier campaigns' list lacks; structures --------------------------

TOML_ODD = [("datetime", "1979-05-27T07:32:00Z", True), ("time", "07:32:00", True),
            ("array", "[]", True), ("table", "{}", True), ("int64-past", str(2**63), True),
            ("int-neg-64", str(-(2**63)), True), ("nul-string", '"a\\u0000b"', True),
            ("newline-string", '"a\\nb"', True), ("hex", "0x10", None), ("float-1e-320", "1e-320", None),
            ("bool", "false", None), ("space-string", '" "', True)]  # fmt: skip


# any seed is a seed, and a replica limit of 2**63 is met by every plan
UNBOUNDED = ("seed", "replicas_max")


def _spec_fields() -> dict[str, list[str]]:
    """Every spec key by table, from the spec's own pydantic models."""
    from capcliff.check.spec import CheckSpec, CheckWorkload, Expectations, Scenario

    tables = {"": CheckSpec, "scenario": Scenario, "scenario.workload": CheckWorkload,
              "scenario.expect": Expectations}  # fmt: skip
    skip = {"scenario", "workload", "expect"}
    return {t: [k for k in m.model_fields if k not in skip] for t, m in tables.items()}


def _spec_set(table: str, key: str, raw: str) -> str:
    from fuzz_surfaces import _spec_with

    return _spec_with(table, key, raw)


def spec6_cases() -> Iterator[Case]:
    argv = ["check", "{d}/s.toml", "--format", "json"]
    fields = _spec_fields()
    for table, keys in fields.items():
        # the keys the earlier list lacks at every odd kind; its own at the kinds not tried
        pairs = [(k, TOML_ODD) for k in keys if k not in SPEC_KEYS[table]]
        pairs += [(k, TOML_ODD[:2] + TOML_ODD[4:6]) for k in SPEC_KEYS[table]]
        for key, kinds in pairs:
            for label, raw, invalid in kinds:
                unbounded = key in UNBOUNDED and label.startswith("int64")
                yield Case("spec6", f"{table or 'top'}.{key}={label}", argv,
                           {"s.toml": _spec_set(table, key, raw)}, None if unbounded else invalid)  # fmt: skip
    _, _, rest = SPEC.partition("[[scenario]]\n")
    for name, text, invalid in [
        ("scenario-as-table", SPEC.replace("[[scenario]]", "[scenario]"), True),
        ("scenario-empty-array", "scenario = []\n", True),
        ("scenario-array-of-strings", 'scenario = ["s"]\n', True),
        ("workload-array-of-tables", SPEC.replace("[scenario.workload]", "[[scenario.workload]]"), True),
        ("expect-string", SPEC.replace("[scenario.expect]\nfits = true\nkv_headroom_min = 0.1\nno_preemption_at = 4\n", 'expect = "fits"\n'), True),
        ("expect-empty", SPEC.replace("fits = true\nkv_headroom_min = 0.1\nno_preemption_at = 4\n", ""), None),
        ("dotted-keys", SPEC.replace("isl = 100\n", "").replace('engine = "vllm"', 'engine = "vllm"\nworkload.isl = 100'), True),
        ("dup-key", SPEC.replace("isl = 100", "isl = 100\nisl = 200"), True),
        ("dup-table", SPEC + "[scenario.workload]\nisl = 5\n", True),
        ("two-same-name", SPEC + "[[scenario]]\n" + rest, True),
        ("two-names-differ-case", SPEC + "[[scenario]]\n" + rest.replace('name = "s"', 'name = "S"'), None),
        ("name-nul", SPEC.replace('name = "s"', 'name = "s\\u0000x"'), True),
        ("name-control", SPEC.replace('name = "s"', 'name = "s\\u001bx"'), True),
        ("name-newline", SPEC.replace('name = "s"', 'name = "s\\nx"'), True),
        ("name-long", SPEC.replace('name = "s"', f'name = "{"s" * 5000}"'), None),
        ("name-unicode", SPEC.replace('name = "s"', 'name = "скв 🚀 ｓ"'), None),
        ("name-markup", SPEC.replace('name = "s"', 'name = "[bold]x[/] <a>&amp; ]]> |b|"'), None),
        ("model-card-path", SPEC.replace('model = "llama-3.1-8b"', f'model = "{ROOT}/model_cards/llama-3.1-8b.toml"'), None),
        # an HF repo id names its model card, as `vllm serve` takes it (campaign 15)
        ("model-hf-repo", SPEC.replace('model = "llama-3.1-8b"', 'model = "meta-llama/Llama-3.1-8B"'), False),
        ("unicode-key-homoglyph", SPEC.replace("isl = 100", "іsl = 100"), True),
        ("key-with-space", SPEC.replace("isl = 100", '"isl " = 100\nisl = 100'), True),
        ("hundred-scenarios", "".join(SPEC.replace('name = "s"', f'name = "s{i}"') for i in range(100)), None),
        ("crlf-bom", "\ufeff" + SPEC.replace("\n", "\r\n"), None),
        ("utf8-bom-twice", "\ufeff\ufeff" + SPEC, True),
        ("trailing-nul", SPEC + "\x00", True),
        ("osl-hist-is-the-spec", SPEC.replace("osl = 100", 'osl = "hist:s.toml"'), True),
        ("osl-hist-missing", SPEC.replace("osl = 100", 'osl = "hist:nope.csv"'), True),
        ("kv-transfer-without-disagg", SPEC.replace('engine = "vllm"', 'engine = "vllm"\nkv_transfer_overhead_ms = 5.0'), True),
        ("kv-transfer-with-disagg", SPEC.replace('layout = "tp1"', 'disagg = "1p:tp1,1d:tp1"').replace('engine = "vllm"', 'engine = "vllm"\nkv_transfer_overhead_ms = 5.0').replace("fits = true\n", ""), None),
        ("moe-backend-dense", SPEC.replace('engine = "vllm"', 'engine = "trtllm"\nmoe_backend = "CUTLASS"'), True),
        ("all2all-dense", SPEC.replace('engine = "vllm"', 'engine = "vllm"\nall2all_backend = "deepep_low_latency"'), True),
        ("trace-mixed-arrivals", SPEC.replace('isl = 100\nosl = 100\narrival = "batch"\nnum_requests = 20\n', 'trace = "t.jsonl"\n'), True),
        ("multiline-string-key", SPEC.replace('name = "s"', 'name = """\ns"""'), None),
    ]:  # fmt: skip
        files: dict[str, FileSpec] = {"s.toml": text}
        if name == "trace-mixed-arrivals":
            files["t.jsonl"] = _lines([PLAIN_ROWS[0], {"input_tokens": 5, "output_tokens": 5}] * 3)
        yield Case("spec6", name, argv, files, invalid)
        if name.startswith("name-"):
            out = ["check", "{d}/s.toml", "--junit", "{d}/j.xml", "--markdown", "{d}/m.md"]
            yield Case("spec6", f"{name}-junit-markdown", out, {"s.toml": text}, invalid)


# Input files: compressed, binary, cut mid-line; token counts at the limits ---------------------


def files6_cases() -> Iterator[Case]:
    plain = _lines(PLAIN_ROWS)
    trace = ["sweep", "llama-3.1-8b", "--workload", "{d}/t.jsonl", "--concurrency", "4"]
    for name, body, invalid in [
        ("gzip", gzip.compress(plain.encode()), True),
        ("gzip-suffix", None, True),
        ("binary-junk", bytes(range(256)) * 8, True),
        ("only-bom", "\ufeff", True),
        ("bom-then-blank", "\ufeff\n\n", True),
        ("line-separator-u2028", plain.replace("\n", "\u2028"), True),
        ("nel-u0085", plain.replace("\n", "\u0085"), True),
        ("cut-mid-number", plain[: plain.rindex("10") + 1], True),
        ("cut-mid-key", plain[: plain.rindex("output") + 3], True),
        ("blank-lines-between", plain.replace("\n", "\n\n  \n"), None),
        ("comment-line", "# a trace\n" + plain, True),
        ("json-array", json.dumps(PLAIN_ROWS), True),
        ("null-line", plain + "null\n", True),
        ("number-line", plain + "5\n", True),
        ("zero-tokens-both", _lines([{**PLAIN_ROWS[0], "input_tokens": 0, "output_tokens": 0}, *PLAIN_ROWS[1:]]), True),
        ("output-1e9", _lines([{**PLAIN_ROWS[0], "output_tokens": 10**9}, *PLAIN_ROWS[1:]]), True),
        ("input-1e9", _lines([{**PLAIN_ROWS[0], "input_tokens": 10**9}, *PLAIN_ROWS[1:]]), True),
        ("output-past-context", _lines([{**PLAIN_ROWS[0], "output_tokens": 131_100}, *PLAIN_ROWS[1:]]), True),
        ("output-1e5", _lines([{**PLAIN_ROWS[0], "output_tokens": 100_000}, *PLAIN_ROWS[1:]]), None),
        ("tokens-mixed-types", _lines([{**PLAIN_ROWS[0], "input_tokens": "50"}, *PLAIN_ROWS[1:]]), True),
        ("arrival-descending", _lines([{**r, "arrival_s": 10.0 - i} for i, r in enumerate(PLAIN_ROWS)]), None),
        ("arrival-missing-some", _lines([PLAIN_ROWS[0], {k: v for k, v in PLAIN_ROWS[1].items() if k != "arrival_s"}, PLAIN_ROWS[2]]), True),
        ("huge-line", json.dumps({**PLAIN_ROWS[0], "note": "x" * 5_000_000}) + "\n", True),
        ("surrogate-escape", plain.replace('"input_tokens"', '"input_tokens\\ud800"', 1), True),
    ]:  # fmt: skip
        files: dict[str, FileSpec] = {"t.jsonl": body if body is not None else plain}
        argv = trace
        if name == "gzip-suffix":
            files = {"t.jsonl.gz": gzip.compress(plain.encode())}
            argv = [a.replace("t.jsonl", "t.jsonl.gz") for a in trace]
        yield Case("files6", f"trace-{name}", argv, files, invalid)
    sess = _lines(SESSION_ROWS)
    for name, body, invalid in [
        ("session-think-1e9", _lines([SESSION_ROWS[0], {**SESSION_ROWS[1], "think_s": 1e9}, *SESSION_ROWS[2:]]), None),
        ("session-think-nan-string", sess.replace('"think_s": 1.0', '"think_s": "NaN"'), True),
        ("session-id-mixed-types", sess.replace('"session_id": "b"', '"session_id": 7'), None),
        ("session-id-null", sess.replace('"session_id": "b"', '"session_id": null'), True),
        ("session-10k-turns", _lines([{"session_id": "a", "turn": i, "input_tokens": 5, "output_tokens": 2, **({"arrival_s": 0.0} if i == 0 else {"think_s": 0.0})} for i in range(10_000)]), None),
    ]:  # fmt: skip
        yield Case("files6", f"trace-{name}", trace, {"t.jsonl": body}, invalid)
    # output-length histograms (`--osl hist:FILE`)
    hist = [
        "sweep",
        "llama-3.1-8b",
        "--isl",
        "100",
        "--osl",
        "hist:{d}/h.csv",
        "--num-requests",
        "20",
        "--concurrency",
        "4",
    ]
    for name, body, invalid in [
        ("header-swapped", "count,tokens\n5,100\n", True),
        ("header-other-words", "length,n\n100,1\n", None),
        ("count-1e300", "tokens,count\n100,1e300\n", True),
        ("bom-crlf", "\ufefftokens,count\r\n100,1\r\n", False),
        ("duplicate-rows", "tokens,count\n100,1\n100,2\n", None),
        ("fractional-count", "tokens,count\n100,1.5\n", None),
        ("tabs", "tokens\tcount\n100\t1\n", None),
        ("gzip", gzip.compress(b"tokens,count\n100,1\n"), True),
        ("three-columns", "tokens,count,x\n100,1,2\n", True),
        ("only-header", "tokens,count\n", True),
    ]:  # fmt: skip
        yield Case("files6", f"hist-{name}", hist, {"h.csv": body}, invalid)
    # calibration inputs: logs and benchmark results
    log = (LOGS / "vllm_v1_v16_llama31_8b_eager.txt").read_text()
    cal_log = ["calibrate", "{d}/l.txt", "--model", "llama-3.1-8b"]
    cal_json = ["calibrate", "{d}/r.json", "--model", "llama-3.1-8b", "--gpu", "h100-sxm"]
    rows = _lines(RUNS)
    cut = log.index("GiB", log.index("KV cache")) if "KV cache" in log else len(log) // 2
    for name, argv, files, invalid in [
        ("log-gzip", cal_log, {"l.txt": gzip.compress(log.encode())}, True),
        ("log-gzip-suffix", [*cal_log[:1], "{d}/l.txt.gz", *cal_log[2:]], {"l.txt.gz": gzip.compress(log.encode())}, True),
        ("log-binary", cal_log, {"l.txt": bytes(range(256)) * 64}, True),
        ("log-cut-mid-line", cal_log, {"l.txt": log[: cut - 4]}, None),
        ("log-junk-prefix", cal_log, {"l.txt": b"\x00\xff" * 100 + log.encode()}, True),
        ("log-ansi-colours", cal_log, {"l.txt": log.replace("INFO", "\x1b[32mINFO\x1b[0m")}, None),
        ("log-u2028", cal_log, {"l.txt": log.replace("\n", "\u2028")}, None),
        ("log-two-engines", cal_log, {"l.txt": log + (LOGS / next(p.name for p in sorted(LOGS.iterdir()) if "sglang" in p.name)).read_text()}, None),
        ("bench-gzip", cal_json, {"r.json": gzip.compress(rows.encode())}, True),
        ("bench-cut-mid-line", cal_json, {"r.json": rows[: len(rows) - 40]}, True),
        ("bench-binary", cal_json, {"r.json": bytes(range(256)) * 8}, True),
        ("bench-u2028", cal_json, {"r.json": rows.replace("\n", "\u2028")}, None),
        ("bench-concurrency-float", cal_json, {"r.json": _lines([{**RUNS[0], "max_concurrency": 8.5}, *RUNS[1:]])}, True),
        ("bench-dates-odd", cal_json, {"r.json": _lines([{**r, "date": "garbage"} for r in RUNS])}, None),
        ("calfile-gzip", [*SW, "--calibration", "{d}/c.toml"], {"c.toml": gzip.compress(CAL_OK.encode())}, True),
        ("calfile-cut", [*SW, "--calibration", "{d}/c.toml"], {"c.toml": CAL_OK[: CAL_OK.index("0.0314") + 3]}, None),
        ("calfile-datetime", [*SW, "--calibration", "{d}/c.toml"], {"c.toml": CAL_OK.replace('engine_version = "0.10.2"', "engine_version = 2026-01-01")}, True),
    ]:  # fmt: skip
        yield Case("files6", name, argv, files, invalid)


# Output paths --------------------------------------------------------------------------------


def _symlink(target: str, link: str) -> Callable[[Path], None]:
    def make(folder: Path) -> None:
        (folder / link).symlink_to(target)

    return make


def outputs6_cases() -> Iterator[Case]:
    chk = ["check", "{d}/s.toml"]
    long_name = "a" * 300 + ".xml"
    trace_spec = SPEC.replace(
        'isl = 100\nosl = 100\narrival = "batch"\nnum_requests = 20\n', 'trace = "t.jsonl"\n'
    )
    hist_spec = SPEC.replace("osl = 100", 'osl = "hist:h.csv"')
    for name, argv, files, invalid, setup in [
        ("junit-inside-a-file", [*chk, "--junit", "{d}/s.toml/j.xml"], {"s.toml": SPEC}, True, None),
        ("junit-name-too-long", [*chk, "--junit", "{d}/" + long_name], {"s.toml": SPEC}, True, None),
        ("junit-and-markdown-dotdot", [*chk, "--junit", "{d}/o", "--markdown", "{d}/x/../o"], {"s.toml": SPEC, "x": ("dir",)}, True, None),
        ("junit-and-markdown-symlinked-dir", [*chk, "--junit", "{d}/x/o", "--markdown", "{d}/y/o"], {"s.toml": SPEC, "x": ("dir",), "y": ("symlink", "x")}, True, None),
        ("junit-and-markdown-existing-hardlinks", [*chk, "--junit", "{d}/o1", "--markdown", "{d}/o2", "--force"], {"s.toml": SPEC, "o1": "old"}, None, lambda d: (d / "o2").hardlink_to(d / "o1")),
        ("junit-dangling-symlink-to-markdown", [*chk, "--junit", "{d}/l", "--markdown", "{d}/o.md"], {"s.toml": SPEC}, True, _symlink("o.md", "l")),
        ("junit-is-symlink-to-spec-via-dir", [*chk, "--junit", "{d}/y/s.toml", "--force"], {"s.toml": SPEC, "y": ("symlink", ".")}, True, None),
        ("markdown-is-hist-file", [*chk, "--markdown", "{d}/h.csv", "--force"], {"s.toml": hist_spec, "h.csv": "tokens,count\n100,1\n"}, True, None),
        ("markdown-is-trace-via-symlink", [*chk, "--markdown", "{d}/l.jsonl", "--force"], {"s.toml": trace_spec.replace("no_preemption_at = 4", "no_preemption_at = 2").replace("concurrency = 4", "concurrency = 2"), "t.jsonl": _lines(PLAIN_ROWS), "l.jsonl": ("symlink", "t.jsonl")}, True, None),
        ("write-baseline-is-baseline-hardlink", [*chk, "--baseline", "{d}/b.json", "--write-baseline", "{d}/c.json", "--force"], {"s.toml": SPEC, "b.json": "{}"}, True, _hardlink("b.json", "c.json")),
        ("junit-dash", [*chk, "--junit", "-"], {"s.toml": SPEC}, True, None),
        ("write-baseline-dash", [*chk, "--write-baseline", "-"], {"s.toml": SPEC}, True, None),
        ("calibrate-out-dash", ["calibrate", "{d}/r.json", "--model", "llama-3.1-8b", "--gpu", "h100-sxm", "-o", "-"], {"r.json": _lines(RUNS)}, True, None),
        ("junit-newline-name", [*chk, "--junit", "{d}/a\nb.xml"], {"s.toml": SPEC}, None, None),
        ("junit-in-readonly-dir", [*chk, "--junit", "{d}/ro/j.xml"], {"s.toml": SPEC, "ro": ("dir",)}, None, lambda d: (d / "ro").chmod(0o500)),
        ("junit-is-model-weights", [*chk, "--junit", "{d}/m/model.safetensors", "--force"], {"s.toml": SPEC.replace('model = "llama-3.1-8b"', 'model = "m"'), "m/config.json": json.dumps(llama_config()), "m/model.safetensors": b"x"}, True, None),
        ("junit-is-model-readme", [*chk, "--junit", "{d}/m/README.md", "--force"], {"s.toml": SPEC.replace('model = "llama-3.1-8b"', 'model = "m"'), "m/config.json": json.dumps(llama_config()), "m/README.md": "keep"}, None, None),
        ("junit-is-model-tokenizer", [*chk, "--junit", "{d}/m/tokenizer.model", "--force"], {"s.toml": SPEC.replace('model = "llama-3.1-8b"', 'model = "m"'), "m/config.json": json.dumps(llama_config()), "m/tokenizer.model": b"x"}, True, None),
        ("markdown-is-model-merges", [*chk, "--markdown", "{d}/m/merges.txt", "--force"], {"s.toml": SPEC.replace('model = "llama-3.1-8b"', 'model = "m"'), "m/config.json": json.dumps(llama_config()), "m/merges.txt": "a b\n"}, True, None),
        ("junit-and-markdown-dangling-link-both-new", [*chk, "--junit", "{d}/x/o", "--markdown", "{d}/o"], {"s.toml": SPEC, "x": ("dir",)}, True, _symlink("../o", "x/o")),
        ("plot-is-serve-config", [*SW, "--plot", "{d}/p.svg", "--serve-command", "vllm serve meta-llama/Llama-3.1-8B --config {d}/p.svg", "--force"], {"p.svg": "x"}, None, None),
        ("plot-is-calibration-via-symlink", [*SW, "--calibration", "{d}/c.toml", "--plot", "{d}/l.svg", "--force"], {"c.toml": CAL_OK, "l.svg": ("symlink", "c.toml")}, True, None),
        ("plot-uppercase-suffix", [*SW, "--plot", "{d}/p.PNG"], {}, None, None),
        ("plot-pdf", [*SW, "--plot", "{d}/p.pdf"], {}, True, None),
        ("plot-no-suffix", [*SW, "--plot", "{d}/p"], {}, True, None),
        ("calibrate-out-is-log-symlinked-dir", ["calibrate", "{d}/l.txt", "--model", "llama-3.1-8b", "-o", "{d}/y/l.txt", "--force"],
         {"l.txt": (LOGS / "vllm_v1_v16_llama31_8b_eager.txt").read_text(), "y": ("symlink", ".")}, True, None),
        ("calibrate-out-is-calibration-input", ["calibrate", "{d}/r.json", "--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--speculative", "ngram:3", "--calibration", "{d}/c.toml", "-o", "{d}/./c.toml", "--force"],
         {"r.json": _lines(RUNS), "c.toml": CAL_OK}, True, None),
        ("calibrate-out-is-hardware-file", ["calibrate", "{d}/r.json", "--model", "llama-3.1-8b", "--gpu", "{d}/g.toml", "-o", "{d}/g.toml", "--force"],
         {"r.json": _lines(RUNS), "g.toml": _retext(HW_TEXT, "name", '"g"', old_id="h100-sxm", new_id="g")}, True, None),
        ("plot-is-hardware-file", [*SW, "--gpus", "1", "--gpu", "{d}/g.toml", "--plot", "{d}/g.toml", "--force"],
         {"g.toml": _retext(HW_TEXT, "name", '"g"', old_id="h100-sxm", new_id="g")}, True, None),
        ("plot-is-model-card-file", ["sweep", "{d}/c.toml", *SMALL, "--concurrency", "4", "--gpus", "1", "--plot", "{d}/c.toml", "--force"],
         {"c.toml": CARD_TEXT.replace('id = "llama-3.1-8b"', 'id = "c"', 1)}, True, None),
        ("junit-is-spec-gpu-file", [*chk, "--junit", "{d}/g.toml", "--force"],
         {"s.toml": SPEC.replace('gpu = "h100-sxm"', 'gpu = "g.toml"'), "g.toml": _retext(HW_TEXT, "name", '"g"', old_id="h100-sxm", new_id="g")}, True, None),
    ]:  # fmt: skip
        replaced = {"junit-and-markdown-existing-hardlinks": ("o1", "o2"),
                    "junit-is-model-readme": ("m/README.md",), "plot-is-serve-config": ("p.svg",)}  # fmt: skip
        yield Case("outputs6", name, argv, files, invalid, setup, replaced=replaced.get(name, ()))


def _hardlink(source: str, link: str) -> Callable[[Path], None]:
    def make(folder: Path) -> None:
        (folder / link).hardlink_to(folder / source)

    return make


# The environment (a fresh interpreter each) -----------------------------------------------------


def env6_cases() -> Iterator[Case]:
    mem = ["memory", "llama-3.1-8b", "--gpus", "1"]
    for name, env, argv, invalid in [
        ("sim-core-bogus", {"CAPCLIFF_SIM_CORE": "bogus"}, SW, None),
        ("sim-core-empty", {"CAPCLIFF_SIM_CORE": ""}, SW, None),
        ("sim-core-upper", {"CAPCLIFF_SIM_CORE": "PYTHON"}, SW, None),
        ("columns-0", {"COLUMNS": "0"}, SW, None),
        ("columns-negative", {"COLUMNS": "-5"}, SW, None),
        ("columns-text", {"COLUMNS": "abc"}, SW, None),
        ("columns-1", {"COLUMNS": "1"}, SW, None),
        ("columns-huge", {"COLUMNS": "100000"}, mem, None),
        ("columns-huge-error", {"COLUMNS": "100000"}, [*SW, "--gpus", "3", "--layout", "tp2"], True),
        ("columns-1-error", {"COLUMNS": "1"}, [*SW, "--gpus", "3", "--layout", "tp2"], True),
        ("lines-0", {"LINES": "0"}, mem, None),
        ("no-color", {"NO_COLOR": "1"}, SW, None),
        ("force-color", {"FORCE_COLOR": "1"}, SW, None),
        ("term-dumb", {"TERM": "dumb"}, SW, None),
        ("ascii-stdout", {"PYTHONIOENCODING": "ascii"}, SW, None),
        ("ascii-stdout-error", {"PYTHONIOENCODING": "ascii"}, [*SW, "--gpus", "3", "--layout", "tp2"], True),
        ("ascii-stdout-unicode-arg", {"PYTHONIOENCODING": "ascii"}, ["memory", "ľlama", "--gpus", "1"], True),
        ("lang-c", {"LANG": "C", "LC_ALL": "C", "PYTHONUTF8": "0"}, SW, None),
        ("lang-c-check", {"LANG": "C", "LC_ALL": "C", "PYTHONUTF8": "0"}, ["check", "{d}/s.toml"], None),
        ("home-unset", {"HOME": "<unset>"}, SW, None),
        ("tmpdir-missing", {"TMPDIR": "/nonexistent"}, [*SW, "--plot", "{d}/p.png"], None),
        ("mplconfig-unwritable", {"MPLCONFIGDIR": "/proc/none"}, [*SW, "--plot", "{d}/p.png"], None),
    ]:  # fmt: skip
        files: dict[str, FileSpec] = (
            {"s.toml": SPEC.replace('name = "s"', 'name = "ｓ→é"')} if "check" in name else {}
        )
        yield Case("env6", name, argv, files, invalid, env=env)


SURFACES6: dict[str, Callable[[], Iterator[Case]]] = {
    "combos6": combos6_cases, "cards6": cards6_cases, "configs6": configs6_cases,
    "spec6": spec6_cases, "files6": files6_cases, "outputs6": outputs6_cases,
    "env6": env6_cases,
}  # fmt: skip
