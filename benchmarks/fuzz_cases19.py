"""The nineteenth bad-input campaign's surfaces (issue 23), run by `fuzz_surfaces.py`:

    PYTHONPATH=. python benchmarks/fuzz_surfaces.py grid19 spec19 slo19 price19 opts19

What the eighteen campaigns before did not try: sweep grids at their extremes and in product
(concurrency lists and ranges that repeat, descend, hold a zero, an exponent or a count past
the integers of the span; output-length lists that repeat or descend; `--isl` and `--rate`
written as lists or ranges, which they are not; and the product of layouts, output lengths,
concurrencies and requests per point, each within its own limit, whose whole grid would run for
hours; grid19); speculative decoding against each engine, layout (PP, EP, attention DP),
quantisation, KV dtype, workload (sessions, traces, clients, a rate), offload, preemption,
calibration, memory and check, MTP and NEXTN on models without MTP layers (a Kimi K2 config with
zero, a Llama config that names some), acceptance at its ends (E = 1, E = K + 1; spec19); `plan
--rate` with SLOs no layout can meet (a TTFT below one prefill, a TPOT below one decode step,
both at once, each at its documented bounds) across fleets, disaggregation, clients, sessions,
headroom and node counts: answers, not errors (slo19); prices and node counts beside GPU lists
(zero, tiny and huge prices, a price per GPU type in another order than the types, node counts
against the GPUs and the node size; price19); options of memory, check and calibrate whose
pairings no campaign tried (opts19).
"""

# Data tables: one case per line, some past 100 characters.
# ruff: noqa: E501
from __future__ import annotations

import json
from collections.abc import Callable, Iterator

import fuzz_surfaces as fs
from fuzz_cases7 import _lines
from fuzz_cases11 import REAL
from fuzz_cases13 import LLAMA
from fuzz_harness import Case

# fmt: off
SW = ["sweep", "llama-3.1-8b", "--isl", "100", "--osl", "100", "--num-requests", "20"]
SW_C = [*SW, "--concurrency", "4"]
SW_NO_OSL = ["sweep", "llama-3.1-8b", "--isl", "100", "--num-requests", "20", "--concurrency", "4"]
OSL64 = ",".join(str(i) for i in range(100, 6500, 100))
OSL32 = ",".join(str(i) for i in range(100, 3300, 100))
C256 = "1..2000:256"


def _list(values: range | list[int]) -> str:
    return ",".join(str(v) for v in values)


# (name, argv, invalid?)
GRID19: list[tuple[str, list[str], bool | None]] = [
    # concurrency: lists and ranges at their edges
    ("conc-duplicates", [*SW, "--concurrency", "4,4,4"], False),
    ("conc-descending", [*SW, "--concurrency", "16,8,4,2"], False),
    ("conc-descending-duplicates", [*SW, "--concurrency", "8,4,8,4"], False),
    ("conc-list-1000-same", [*SW, "--concurrency", ",".join(["4"] * 1000)], False),
    ("conc-list-100k-same", [*SW, "--concurrency", ",".join(["4"] * 100_000)], False),
    ("conc-list-256-distinct", [*SW, "--concurrency", _list(range(1, 257))], False),
    ("conc-list-257-distinct", [*SW, "--concurrency", _list(range(1, 258))], True),
    ("conc-list-300-items-256-distinct", [*SW, "--concurrency", _list([*range(1, 257), *range(1, 45)])], False),
    ("conc-list-with-zero", [*SW, "--concurrency", "0,4,8"], True),
    ("conc-list-zero-only", [*SW, "--concurrency", "0"], True),
    ("conc-list-negative", [*SW, "--concurrency", "4,-8"], True),
    ("conc-list-trailing-comma", [*SW, "--concurrency", "4,8,"], True),
    ("conc-list-leading-comma", [*SW, "--concurrency", ",4,8"], True),
    ("conc-list-spaces", [*SW, "--concurrency", "4, 8, 16"], None),
    ("conc-list-semicolon", [*SW, "--concurrency", "4;8"], True),
    ("conc-list-float", [*SW, "--concurrency", "4.0,8.0"], True),
    ("conc-list-exponent", [*SW, "--concurrency", "1e2"], True),
    ("conc-list-past-max", [*SW, "--concurrency", "4,10000001"], True),
    ("conc-list-at-max", [*SW, "--concurrency", "10000000"], None),
    ("conc-range-zero-low", [*SW, "--concurrency", "0..64"], True),
    ("conc-range-zero-both", [*SW, "--concurrency", "0..0"], True),
    ("conc-range-one-one", [*SW, "--concurrency", "1..1"], False),
    ("conc-range-same-ends-count-2", [*SW, "--concurrency", "8..8:2"], None),
    ("conc-range-same-ends-count-256", [*SW, "--concurrency", "8..8:256"], None),
    ("conc-range-count-past-integers", [*SW, "--concurrency", "1..3:256"], False),
    ("conc-range-count-256-full", [*SW, "--concurrency", "1..256:256"], False),
    ("conc-range-count-257", [*SW, "--concurrency", "1..4096:257"], True),
    ("conc-range-count-zero", [*SW, "--concurrency", "1..64:0"], True),
    ("conc-range-count-empty", [*SW, "--concurrency", "1..64:"], None),
    ("conc-range-count-float", [*SW, "--concurrency", "1..64:4.5"], True),
    ("conc-range-count-exponent", [*SW, "--concurrency", "1..64:1e1"], True),
    ("conc-range-count-huge", [*SW, "--concurrency", "1..64:" + "9" * 40], True),
    ("conc-range-descending-count", [*SW, "--concurrency", "64..1:4"], True),
    ("conc-range-three-dots", [*SW, "--concurrency", "1...64"], True),
    ("conc-range-two-ranges", [*SW, "--concurrency", "1..8..64"], True),
    ("conc-range-open-high", [*SW, "--concurrency", "4.."], True),
    ("conc-range-open-low", [*SW, "--concurrency", "..64"], True),
    ("conc-range-only-count", [*SW, "--concurrency", ":16"], True),
    ("conc-range-two-counts", [*SW, "--concurrency", "1..64:4:2"], True),
    ("conc-range-exponent-ends", [*SW, "--concurrency", "1e1..1e3"], True),
    ("conc-range-underscore-ends", [*SW, "--concurrency", "1_0..1_000"], None),
    ("conc-range-hex-ends", [*SW, "--concurrency", "0x10..0x20"], True),
    ("conc-range-negative-low", [*SW, "--concurrency", "-4..8"], True),
    ("conc-range-huge-high", [*SW, "--concurrency", "1.." + "9" * 30], True),
    ("conc-range-doubling-to-max", [*SW, "--concurrency", "1..10000000"], None),
    ("conc-range-list-mixed", [*SW, "--concurrency", "4,8..16"], True),
    ("conc-range-unicode-dots", [*SW, "--concurrency", "1\u202564"], True),
    ("conc-range-spaces", [*SW, "--concurrency", "1 .. 64"], None),
    # output lengths
    ("osl-duplicates", [*SW_NO_OSL, "--osl", "100,100"], False),
    ("osl-descending", [*SW_NO_OSL, "--osl", "300,200,100"], False),
    ("osl-list-64", [*SW_NO_OSL, "--osl", OSL64], False),
    ("osl-list-65", [*SW_NO_OSL, "--osl", OSL64 + ",6500"], True),
    ("osl-list-64-same", [*SW_NO_OSL, "--osl", ",".join(["100"] * 64)], False),
    ("osl-list-65-same", [*SW_NO_OSL, "--osl", ",".join(["100"] * 65)], None),
    ("osl-list-with-zero", [*SW_NO_OSL, "--osl", "0,100"], True),
    ("osl-list-negative", [*SW_NO_OSL, "--osl", "100,-1"], True),
    ("osl-list-empty-item", [*SW_NO_OSL, "--osl", "100,,200"], True),
    ("osl-list-range", [*SW_NO_OSL, "--osl", "100..400"], True),
    ("osl-list-range-count", [*SW_NO_OSL, "--osl", "100..400:4"], True),
    ("osl-list-float", [*SW_NO_OSL, "--osl", "100.5,200"], True),
    ("osl-list-k-suffix", [*SW_NO_OSL, "--osl", "1k,2k"], None),
    ("osl-list-lognormal-item", [*SW_NO_OSL, "--osl", "100,lognormal:100:200"], True),
    ("osl-list-past-context", [*SW_NO_OSL, "--osl", "100,200000"], True),
    ("osl-list-on-plan", ["plan", "llama-3.1-8b", "--gpus", "1", "--jobs", "1", "--isl", "100", "--osl", "100,200", "--num-requests", "20", "--arrival", "batch"], True),
    # --isl and --rate take one number
    ("isl-list", [*SW_C[:2], "--isl", "100,200", "--osl", "100", "--num-requests", "20", "--concurrency", "4"], True),
    ("isl-range", [*SW_C[:2], "--isl", "100..200", "--osl", "100", "--num-requests", "20", "--concurrency", "4"], True),
    ("isl-zero", [*SW_C[:2], "--isl", "0", "--osl", "100", "--num-requests", "20", "--concurrency", "4"], True),
    ("rate-list", [*SW_C, "--rate", "1,2"], True),
    ("rate-range", [*SW_C, "--rate", "1..4"], True),
    ("rate-zero", [*SW_C, "--rate", "0"], True),
    ("plan-rate-list", ["plan", "llama-3.1-8b", "--gpus", "1", "--jobs", "1", *fs.SMALL, "--rate", "1,2", "--slo-ttft", "2"], True),
    ("plan-concurrency-flag", ["plan", "llama-3.1-8b", "--gpus", "1", "--jobs", "1", *fs.SMALL, "--concurrency", "4"], True),
    # products: each axis within its limit, the grid past any answer in time
    ("grid-osl64-conc256", ["sweep", "llama-3.1-8b", "--isl", "100", "--osl", OSL64, "--concurrency", C256], True),
    ("grid-osl32-conc256", ["sweep", "llama-3.1-8b", "--isl", "100", "--osl", OSL32, "--concurrency", C256], True),
    ("grid-osl64-conc256-few-requests", ["sweep", "llama-3.1-8b", "--isl", "100", "--osl", OSL64, "--concurrency", C256, "--num-requests", "20"], None),
    ("grid-osl64-conc256-layouts", ["sweep", "llama-3.1-8b", "--isl", "100", "--osl", OSL64, "--concurrency", C256, "--gpus", "8", "--layout", "tp8,dp8,dp2-tp4,dp4-tp2"], True),
    ("grid-conc256-requests-200k", ["sweep", "llama-3.1-8b", "--isl", "100", "--osl", "100", "--concurrency", C256, "--num-requests", "200000"], True),
    ("grid-conc64-requests-200k", ["sweep", "llama-3.1-8b", "--isl", "100", "--osl", "100", "--concurrency", "1..2000:64", "--num-requests", "200000"], True),
    ("grid-conc16-requests-200k", ["sweep", "llama-3.1-8b", "--isl", "100", "--osl", "100", "--concurrency", "1..2000:16", "--num-requests", "200000"], True),
    ("grid-conc100-requests-20k-long", ["sweep", "llama-3.1-8b", "--isl", "1000", "--osl", "1000", "--concurrency", "1..20000:100", "--num-requests", "20000"], True),
    ("grid-osl64-requests-200k", ["sweep", "llama-3.1-8b", "--isl", "100", "--osl", OSL64, "--concurrency", "64", "--num-requests", "200000"], True),
    ("grid-osl64-conc256-rate", ["sweep", "llama-3.1-8b", "--isl", "100", "--osl", OSL64, "--concurrency", C256, "--rate", "50"], True),
    ("grid-osl64-conc256-clients", ["sweep", "llama-3.1-8b", "--isl", "100", "--osl", OSL64, "--concurrency", C256, "--clients", "64"], True),
    ("grid-osl64-conc256-disagg", ["sweep", "llama-3.1-8b", "--isl", "100", "--osl", OSL64, "--concurrency", C256, "--disagg", "1p:tp1,1d:tp1"], True),
    ("grid-conc256-session-clients", ["sweep", "llama-3.1-8b", "--workload", "multiturn-chat", "--clients", "64", "--concurrency", C256, "--num-requests", "200000"], True),
    ("grid-conc256-speculative", ["sweep", "llama-3.1-8b", "--isl", "100", "--osl", OSL64, "--concurrency", C256, "--speculative", "eagle:3"], True),
    ("grid-small-default", ["sweep", "llama-3.1-8b", "--isl", "1000", "--osl", "1000"], False),
    ("grid-conc256-default-requests", ["sweep", "llama-3.1-8b", "--isl", "1000", "--osl", "1000", "--concurrency", C256], False),
    ("grid-osl8-conc32", ["sweep", "llama-3.1-8b", "--isl", "100", "--osl", "100,200,300,400,500,600,700,800", "--concurrency", "1..2000:32"], False),
    ("plan-layouts-repeated-1000", ["plan", "llama-3.1-8b", "--gpus", "1", "--jobs", "1", *fs.SMALL, "--rate", "2", "--slo-ttft", "2", "--layout", ",".join(["tp1"] * 1000)], False),
    ("plan-layouts-every-8", ["plan", "llama-3.1-8b", "--gpus", "8", "--jobs", "1", *fs.SMALL, "--rate", "2", "--slo-ttft", "2", "--layout", "tp8,dp8,dp2-tp4,dp4-tp2,tp4-pp2,tp2-pp4,pp8"], None),
    ("sweep-layouts-repeated-1000", [*SW_C, "--gpus", "1", "--layout", ",".join(["tp1"] * 1000)], False),
    ("sweep-layouts-every-8-conc256", ["sweep", "llama-3.1-8b", "--isl", "100", "--osl", "100", "--concurrency", C256, "--gpus", "8", "--layout", "tp8,dp8,dp2-tp4,dp4-tp2,tp4-pp2,tp2-pp4,pp8"], None),
]


def grid19_cases() -> Iterator[Case]:
    for name, argv, invalid in GRID19:
        yield Case("grid19", name, argv, {}, invalid)
    # a check scenario's grid: the same product through a spec
    spec = fs.SPEC.replace("concurrency = 4", 'concurrency = "1..2000:256"').replace("num_requests = 20", "num_requests = 200000")
    yield Case("grid19", "check-conc256-requests-200k", ["check", "{d}/s.toml"], {"s.toml": spec}, True)
    spec_list = fs.SPEC.replace("concurrency = 4", "concurrency = [4, 4, 8]")
    yield Case("grid19", "check-conc-array-duplicates", ["check", "{d}/s.toml"], {"s.toml": spec_list}, None)
    spec_osl = fs.SPEC.replace("osl = 100", f'osl = "{OSL64}"').replace("concurrency = 4", f'concurrency = "{C256}"').replace("num_requests = 20", "num_requests = 2000")
    yield Case("grid19", "check-osl64-conc256", ["check", "{d}/s.toml"], {"s.toml": spec_osl}, True)


DS = ["--gpus", "8", "--gpu", "h200-sxm", "--isl", "100", "--osl", "100", "--num-requests", "20", "--concurrency", "4"]
MODELS = {
    "llama": ["sweep", "llama-3.1-8b", *SW_C[2:]],
    "qwen-moe": ["sweep", "qwen3-30b-a3b", *SW_C[2:]],
    "gpt-oss": ["sweep", "gpt-oss-20b", *SW_C[2:]],
    "r1": ["sweep", "deepseek-r1", *DS],
}
SPEC_METHODS = {
    "mtp1": ["--speculative", "mtp:1"],
    "nextn2": ["--speculative", "nextn:2"],
    "deepseek-mtp3": ["--speculative", "deepseek_mtp:3"],
    "eagle3": ["--speculative", "eagle:3"],
    "eagle3-draft": ["--speculative", "eagle:3:yuhuili/EAGLE3-LLaMA3.1-Instruct-8B"],
    "eagle3-alias": ["--speculative", "EAGLE3:2"],
    "ngram-len": ["--speculative", "ngram:3", "--spec-accept-length", "1.8"],
}
ENGINES = ["vllm", "vllm-v0", "sglang", "trtllm"]


def _spec_invalid(model: str, method: str) -> bool | None:
    """MTP on a model without MTP layers is bad input; everything else the engine decides."""
    if method in {"mtp1", "nextn2", "deepseek-mtp3"} and model != "r1":
        return True
    return None


# (name, argv, invalid?) beyond the method x model x engine product
SPEC19: list[tuple[str, list[str], bool | None]] = [
    # acceptance at its ends
    ("accept-length-exactly-1", [*SW_C, "--speculative", "ngram:3", "--spec-accept-length", "1"], False),
    ("accept-length-exactly-k1", [*SW_C, "--speculative", "ngram:3", "--spec-accept-length", "4"], False),
    ("accept-length-just-past-k1", [*SW_C, "--speculative", "ngram:3", "--spec-accept-length", "4.0000001"], True),
    ("accept-length-just-below-1", [*SW_C, "--speculative", "ngram:3", "--spec-accept-length", "0.9999999"], True),
    ("accept-length-without-spec", [*SW_C, "--spec-accept-length", "2"], True),
    ("acceptance-without-spec", [*SW_C, "--spec-acceptance", "0.8,0.6"], True),
    ("spec-overlap-without-spec-sglang", [*SW_C, "--engine", "sglang", "--spec-overlap"], True),
    ("acceptance-all-ones", [*SW_C, "--speculative", "eagle:3", "--spec-acceptance", "1,1,1"], False),
    ("acceptance-all-zeros", [*SW_C, "--speculative", "eagle:3", "--spec-acceptance", "0,0,0"], False),
    ("acceptance-zero-then-ones", [*SW_C, "--speculative", "eagle:3", "--spec-acceptance", "0,1,1"], False),
    ("acceptance-increasing", [*SW_C, "--speculative", "eagle:3", "--spec-acceptance", "0.2,0.5,0.9"], False),
    ("acceptance-k16", [*SW_C, "--speculative", "eagle:16", "--spec-acceptance", ",".join(["0.9"] * 16)], False),
    ("acceptance-percent", [*SW_C, "--speculative", "eagle:2", "--spec-acceptance", "80%,60%"], True),
    ("acceptance-percent-numbers", [*SW_C, "--speculative", "eagle:2", "--spec-acceptance", "80,60"], True),
    ("acceptance-nan", [*SW_C, "--speculative", "eagle:2", "--spec-acceptance", "nan,0.5"], True),
    ("acceptance-spaces", [*SW_C, "--speculative", "eagle:2", "--spec-acceptance", "0.8, 0.6"], None),
    ("acceptance-one-for-k2", [*SW_C, "--speculative", "eagle:2", "--spec-acceptance", "0.8"], True),
    ("acceptance-with-ngram", [*SW_C, "--speculative", "ngram:2", "--spec-acceptance", "0.5,0.5"], False),
    ("k-17", [*SW_C, "--speculative", "eagle:17"], True),
    ("k-leading-zero", [*SW_C, "--speculative", "eagle:03"], None),
    ("k-plus", [*SW_C, "--speculative", "eagle:+3"], True),
    # valid as Python reads it: int() takes any Unicode decimal digit, as SGLang's argparse
    # `--speculative-num-steps` (type=int) does; vLLM's JSON --speculative-config would not
    ("k-fullwidth", [*SW_C, "--speculative", "eagle:\uff13"], None),
    ("k-superscript", [*SW_C, "--speculative", "eagle:\u00b3"], True),
    ("k-arabic-indic", [*SW_C, "--speculative", "eagle:\u0663"], None),
    ("method-only", [*SW_C, "--speculative", "eagle"], True),
    ("method-medusa", [*SW_C, "--speculative", "medusa:3"], True),
    ("method-draft-model", [*SW_C, "--speculative", "draft_model:3"], True),
    ("method-suffix", [*SW_C, "--speculative", "suffix:3"], True),
    ("method-mtp-draft", ["sweep", "deepseek-r1", *DS, "--speculative", "mtp:1:some/draft"], True),
    ("ngram-draft", [*SW_C, "--speculative", "ngram:3:some/draft", "--spec-accept-length", "2"], True),
    ("eagle-draft-path", [*SW_C, "--speculative", "eagle:3:/nonexistent/draft"], None),
    ("eagle-draft-colon", [*SW_C, "--speculative", "eagle:3:org/model:rev"], None),
    # MTP on models without MTP layers, by config
    ("mtp-kimi-k2-zero-layers", ["sweep", "{d}/kimi/config.json", *DS, "--speculative", "mtp:1"], True),
    ("mtp-llama-config-naming-nextn", ["sweep", "{d}/llama/config.json", *SW_C[2:], "--speculative", "mtp:1"], True),
    ("mtp-glm45-one-layer-k3", ["sweep", "{d}/glm/config.json", *DS, "--speculative", "mtp:3"], None),
    ("mtp-r1-k16", ["sweep", "deepseek-r1", *DS, "--speculative", "mtp:16"], None),
    ("mtp-r1-fp4-b200", ["sweep", "deepseek-r1-0528-fp4", "--gpus", "4", "--gpu", "b200", "--isl", "100", "--osl", "100", "--num-requests", "20", "--concurrency", "4", "--speculative", "mtp:3"], None),
    # against layouts, quantisation, workloads and settings
    ("r1-mtp-ep8", ["sweep", "deepseek-r1", *DS, "--layout", "tp8-ep8", "--speculative", "mtp:1"], None),
    ("r1-mtp-dp8-ep8", ["sweep", "deepseek-r1", *DS, "--layout", "dp8-ep8", "--speculative", "mtp:1"], None),
    ("r1-mtp-pp2", ["sweep", "deepseek-r1", *DS, "--layout", "tp4-pp2", "--speculative", "mtp:1"], None),
    ("r1-mtp-attention-dp-trtllm", ["sweep", "deepseek-r1", *DS, "--layout", "dp8-ep8", "--engine", "trtllm", "--speculative", "mtp:3"], None),
    ("r1-mtp-disagg", ["sweep", "deepseek-r1", *DS[2:], "--disagg", "1p:tp8,1d:tp8", "--speculative", "mtp:1"], None),
    ("r1-mtp-kv-fp8", ["sweep", "deepseek-r1", *DS, "--kv-dtype", "fp8", "--speculative", "mtp:1"], None),
    ("r1-mtp-deepep", ["sweep", "deepseek-r1", *DS, "--layout", "dp8-ep8", "--all2all-backend", "deepep_low_latency", "--speculative", "mtp:1"], None),
    ("llama-eagle-pp2", [*SW_C, "--gpus", "2", "--layout", "pp2", "--speculative", "eagle:3"], None),
    ("llama-eagle-dp2", [*SW_C, "--gpus", "2", "--layout", "dp2", "--speculative", "eagle:3"], None),
    ("llama-eagle-fp8", [*SW_C, "--quantization", "fp8", "--speculative", "eagle:3"], None),
    ("llama-eagle-int4", [*SW_C, "--quantization", "int4", "--speculative", "eagle:3"], None),
    # speculation adds no rule here: NVFP4 weights on Hopper are answered as without it (vLLM
    # runs them through its Marlin FP4 path where the GPU has no FP4 cores)
    ("llama-eagle-nvfp4-hopper", [*SW_C, "--quantization", "nvfp4", "--gpu", "h100-sxm", "--speculative", "eagle:3"], None),
    ("llama-eagle-kv-fp8", [*SW_C, "--kv-dtype", "fp8", "--speculative", "eagle:3"], None),
    ("llama-eagle-mi300x-sglang", [*SW_C, "--gpu", "mi300x", "--engine", "sglang", "--speculative", "eagle:3"], None),
    ("llama-eagle-trace", ["sweep", "llama-3.1-8b", "--workload", "{d}/t.jsonl", "--concurrency", "4", "--speculative", "eagle:3"], None),
    ("llama-eagle-sessions", ["sweep", "llama-3.1-8b", "--workload", "agentic", "--clients", "4", "--num-requests", "20", "--concurrency", "4", "--speculative", "eagle:3"], None),
    ("llama-eagle-rate", [*SW_C, "--rate", "2", "--speculative", "eagle:3"], None),
    ("llama-eagle-lognormal", [*SW_NO_OSL, "--osl", "lognormal:100:300", "--speculative", "eagle:3"], None),
    ("llama-eagle-osl-1", [*SW_NO_OSL, "--osl", "1", "--speculative", "eagle:3"], None),
    ("llama-eagle-osl-list", [*SW_NO_OSL, "--osl", "1,2,100", "--speculative", "eagle:3"], None),
    ("llama-eagle-offload", [*SW_C, "--offload", "cpu:64GiB", "--speculative", "eagle:3"], None),
    ("llama-eagle-swap", [*SW_C, "--engine", "vllm-v0", "--preemption", "swap", "--speculative", "eagle:3"], None),
    ("llama-eagle-max-num-seqs-1", [*SW_C, "--max-num-seqs", "1", "--speculative", "eagle:3"], None),
    ("llama-eagle-block-size-1", [*SW_C, "--block-size", "1", "--speculative", "eagle:3"], None),
    ("llama-eagle-batched-tokens-below-k", [*SW_C, "--max-num-batched-tokens", "2", "--speculative", "eagle:3"], None),
    ("llama-eagle-max-model-len-tight", [*SW_C, "--max-model-len", "200", "--speculative", "eagle:16"], None),
    ("llama-eagle-kv-cache-memory-tiny", [*SW_C, "--kv-cache-memory", "2MiB", "--speculative", "eagle:3"], None),
    ("llama-eagle-enforce-eager", [*SW_C, "--enforce-eager", "--speculative", "eagle:3"], None),
    ("llama-eagle-overlap-trtllm", [*SW_C, "--engine", "trtllm", "--spec-overlap", "--speculative", "eagle:3"], True),
    ("llama-eagle-overlap-v0", [*SW_C, "--engine", "vllm-v0", "--spec-overlap", "--speculative", "eagle:3"], True),
    ("llama-ngram-overlap-sglang", [*SW_C, "--engine", "sglang", "--spec-overlap", "--speculative", "ngram:3", "--spec-accept-length", "2"], None),
    ("llama-eagle-recv-interval", [*SW_C, "--engine", "sglang", "--scheduler-recv-interval", "8", "--speculative", "eagle:3"], None),
    ("llama-eagle-step-kernels", [*SW_C, "--step-source", "kernels", "--speculative", "eagle:3"], True),
    ("llama-eagle-serve-command-ngram", [*SW_C, "--speculative", "eagle:3", "--serve-command", 'vllm serve meta-llama/Llama-3.1-8B-Instruct --speculative-config \'{"method": "ngram", "num_speculative_tokens": 3}\''], True),
    ("llama-serve-command-k-other", [*SW_C, "--speculative", "eagle:3", "--serve-command", 'vllm serve meta-llama/Llama-3.1-8B-Instruct --speculative-config \'{"method": "eagle3", "model": "x/y", "num_speculative_tokens": 5}\''], True),
    ("plan-eagle-fleet", ["plan", "llama-3.1-8b", "--jobs", "1", *fs.SMALL, "--gpus", "1", "--rate", "2", "--slo-ttft", "2", "--gpu", "h100-sxm,mi300x", "--speculative", "eagle:3"], None),
    ("plan-eagle-batch", ["plan", "llama-3.1-8b", "--jobs", "1", *fs.SMALL, "--gpus", "1", "--arrival", "batch", "--speculative", "eagle:3"], None),
    ("plan-mtp-llama", ["plan", "llama-3.1-8b", "--jobs", "1", *fs.SMALL, "--gpus", "1", "--rate", "2", "--slo-ttft", "2", "--speculative", "mtp:1"], True),
    ("plan-eagle-clients", ["plan", "llama-3.1-8b", "--jobs", "1", *fs.SMALL, "--gpus", "1", "--clients", "4", "--speculative", "eagle:3"], None),
    ("plan-eagle-slo-tpot-tight", ["plan", "llama-3.1-8b", "--jobs", "1", *fs.SMALL, "--gpus", "1", "--rate", "2", "--slo-tpot", "0.001", "--speculative", "eagle:3"], None),
    ("memory-speculative-flag", ["memory", "llama-3.1-8b", "--gpus", "1", "--speculative", "eagle:3"], True),
    ("check-speculative-mtp-llama", ["check", "{d}/s.toml"], True),
    ("check-speculative-k0", ["check", "{d}/s.toml"], True),
    ("check-speculative-accept-length-no-method", ["check", "{d}/s.toml"], True),
    ("check-speculative-eagle", ["check", "{d}/s.toml"], None),
]
SPEC_FILES = {
    "check-speculative-mtp-llama": fs.SPEC.replace('engine = "vllm"', 'engine = "vllm"\nspeculative = "mtp:1"'),
    "check-speculative-k0": fs.SPEC.replace('engine = "vllm"', 'engine = "vllm"\nspeculative = "eagle:0"'),
    "check-speculative-accept-length-no-method": fs.SPEC.replace('engine = "vllm"', 'engine = "vllm"\nspec_accept_length = 2.0'),
    "check-speculative-eagle": fs.SPEC.replace('engine = "vllm"', 'engine = "vllm"\nspeculative = "eagle:3"'),
}
KIMI = REAL["kimi-k2"]
LLAMA_NEXTN = {**LLAMA, "num_nextn_predict_layers": 1}
GLM = REAL["glm-4.5"]


def spec19_cases() -> Iterator[Case]:
    for model, base in MODELS.items():
        for method, flags in SPEC_METHODS.items():
            for engine in ENGINES:
                argv = [*base, "--engine", engine, *flags]
                yield Case("spec19", f"{model}-{method}-{engine}", argv, {}, _spec_invalid(model, method))
    trace = _lines([{"arrival_s": i * 0.1, "input_tokens": 100, "output_tokens": 50} for i in range(20)])
    for name, argv, invalid in SPEC19:
        files: dict[str, str] = {}
        if name in SPEC_FILES:
            files["s.toml"] = SPEC_FILES[name]
        if "{d}/kimi" in " ".join(argv):
            files["kimi/config.json"] = json.dumps(KIMI)
        if "{d}/llama" in " ".join(argv):
            files["llama/config.json"] = json.dumps(LLAMA_NEXTN)
        if "{d}/glm" in " ".join(argv):
            files["glm/config.json"] = json.dumps(GLM)
        if "{d}/t.jsonl" in argv:
            files["t.jsonl"] = trace
        yield Case("spec19", name, argv, files, invalid)


ONLINE = ["plan", "llama-3.1-8b", "--jobs", "1", *fs.SMALL, "--gpus", "1", "--rate", "2"]
ONLINE70 = ["plan", "llama-3.1-70b", "--jobs", "1", *fs.SMALL, "--gpus", "8", "--rate", "2"]
# SLOs no layout meets are answers: plan says none meets them (exit 0); None where a refusal
# naming the SLO would do as well
SLO19: list[tuple[str, list[str], bool | None]] = [
    ("ttft-below-prefill", [*ONLINE, "--slo-ttft", "1e-6"], False),
    ("ttft-one-ms", [*ONLINE, "--slo-ttft", "0.001"], False),
    ("tpot-below-step", [*ONLINE, "--slo-tpot", "1e-5"], False),
    ("tpot-one-ms", [*ONLINE, "--slo-tpot", "0.001"], False),
    ("both-unmeetable", [*ONLINE, "--slo-ttft", "1e-6", "--slo-tpot", "1e-6"], False),
    ("ttft-unmeetable-tpot-loose", [*ONLINE, "--slo-ttft", "1e-6", "--slo-tpot", "10"], False),
    ("ttft-loose-tpot-unmeetable", [*ONLINE, "--slo-ttft", "600", "--slo-tpot", "1e-6"], False),
    ("ttft-at-max", [*ONLINE, "--slo-ttft", "600"], False),
    ("tpot-at-max", [*ONLINE, "--slo-tpot", "10"], False),
    ("ttft-past-max", [*ONLINE, "--slo-ttft", "600.001"], True),
    ("tpot-past-max", [*ONLINE, "--slo-tpot", "10.001"], True),
    ("ttft-zero", [*ONLINE, "--slo-ttft", "0"], True),
    ("tpot-zero", [*ONLINE, "--slo-tpot", "0"], True),
    ("ttft-negative", [*ONLINE, "--slo-ttft", "-1"], True),
    ("ttft-below-tpot", [*ONLINE, "--slo-ttft", "0.01", "--slo-tpot", "1"], None),
    ("ttft-ms-slip", [*ONLINE, "--slo-ttft", "500"], None),
    ("tpot-ms-slip", [*ONLINE, "--slo-tpot", "50"], None),
    ("unmeetable-fleet", [*ONLINE, "--slo-ttft", "1e-6", "--gpu", "h100-sxm,h200-sxm,mi300x"], False),
    ("unmeetable-disagg", [*ONLINE[:-4], "--gpus", "2", "--rate", "2", "--slo-ttft", "1e-6", "--disagg"], False),
    ("unmeetable-tpot-disagg", [*ONLINE[:-4], "--gpus", "2", "--rate", "2", "--slo-tpot", "1e-6", "--disagg"], False),
    ("unmeetable-clients", [*ONLINE[:-2], "--clients", "4", "--slo-ttft", "1e-6"], False),
    ("unmeetable-sessions", ["plan", "llama-3.1-8b", "--jobs", "1", "--num-requests", "20", "--gpus", "1", "--workload", "multiturn-chat", "--clients", "4", "--slo-tpot", "1e-6"], False),
    ("unmeetable-no-rate", ["plan", "llama-3.1-8b", "--jobs", "1", *fs.SMALL, "--gpus", "1", "--slo-ttft", "1e-6"], False),
    ("unmeetable-no-rate-tpot", ["plan", "llama-3.1-8b", "--jobs", "1", *fs.SMALL, "--gpus", "1", "--slo-tpot", "1e-6"], False),
    ("unmeetable-70b-all-layouts", [*ONLINE70, "--slo-ttft", "1e-6"], False),
    ("unmeetable-tpot-70b-all-layouts", [*ONLINE70, "--slo-tpot", "1e-5"], False),
    ("unmeetable-headroom-0", [*ONLINE, "--slo-ttft", "1e-6", "--headroom", "0"], False),
    ("unmeetable-headroom-099", [*ONLINE, "--slo-ttft", "1e-6", "--headroom", "0.99"], False),
    ("unmeetable-objective-cost", [*ONLINE, "--slo-ttft", "1e-6", "--objective", "cost"], None),
    ("unmeetable-json", [*ONLINE, "--slo-ttft", "1e-6", "--format", "json"], False),
    ("unmeetable-markdown", [*ONLINE, "--slo-ttft", "1e-6", "--format", "markdown"], False),
    ("unmeetable-plot", [*ONLINE, "--slo-ttft", "1e-6", "--plot", "{d}/p.svg"], False),
    ("unmeetable-speculative", [*ONLINE, "--slo-tpot", "1e-6", "--speculative", "eagle:3"], False),
    ("unmeetable-layout-named", [*ONLINE, "--slo-ttft", "1e-6", "--layout", "tp1"], False),
    ("unmeetable-rate-huge", [*ONLINE[:-2], "--rate", "1e6", "--slo-ttft", "1e-6"], None),
    ("meetable-rate-huge", [*ONLINE[:-2], "--rate", "10000", "--slo-ttft", "2"], None),
    ("meetable-rate-tiny-tight-tpot", [*ONLINE[:-2], "--rate", "0.01", "--slo-tpot", "0.02"], None),
    ("overhead-past-ttft", [*ONLINE, "--slo-ttft", "0.5", "--request-overhead-ms", "1000"], False),
    ("overhead-equal-ttft", [*ONLINE, "--slo-ttft", "1", "--request-overhead-ms", "1000"], False),
    ("sweep-unmeetable-ttft", [*SW_C, "--rate", "2", "--slo-ttft", "1e-6"], False),
    ("sweep-unmeetable-tpot", [*SW_C, "--rate", "2", "--slo-tpot", "1e-6"], False),
    ("sweep-unmeetable-both-clients", [*SW_C, "--clients", "4", "--slo-ttft", "1e-6", "--slo-tpot", "1e-6"], False),
    ("sweep-unmeetable-disagg", [*SW_C, "--rate", "2", "--slo-ttft", "1e-6", "--disagg", "1p:tp1,1d:tp1"], False),
    ("sweep-unmeetable-csv", [*SW_C, "--rate", "2", "--slo-ttft", "1e-6", "--format", "csv"], False),
    ("check-ttft-max-below-prefill", ["check", "{d}/s.toml"], False),
    ("check-slo-unmeetable-sustained", ["check", "{d}/s.toml"], False),
]
SLO_FILES = {
    "check-ttft-max-below-prefill": fs.SPEC.replace("[scenario.expect]\n", "[scenario.expect]\nttft_p99_max_s = 1e-6\n"),
    "check-slo-unmeetable-sustained": fs.SPEC.replace('arrival = "batch"\n', 'arrival = "poisson"\nrate = 2.0\n').replace("concurrency = 4\n", "").replace("[scenario.expect]\nfits = true\nkv_headroom_min = 0.1\nno_preemption_at = 4\n", "[scenario.expect]\nttft_p99_max_s = 1e-6\n"),
}


def slo19_cases() -> Iterator[Case]:
    for name, argv, invalid in SLO19:
        files = {"s.toml": SLO_FILES[name]} if name in SLO_FILES else {}
        yield Case("slo19", name, argv, files, invalid)


FLEET = ["plan", "llama-3.1-8b", "--jobs", "1", *fs.SMALL, "--rate", "2", "--slo-ttft", "2"]
BATCH = ["plan", "llama-3.1-8b", "--jobs", "1", *fs.SMALL, "--arrival", "batch"]
PRICE19: list[tuple[str, list[str], bool | None]] = [
    ("price-zero", [*FLEET, "--gpus", "1", "--price-gpu-hour", "0"], True),
    ("price-zero-cost-objective", [*BATCH, "--gpus", "1", "--objective", "cost", "--price-gpu-hour", "0"], True),
    ("price-tiny", [*FLEET, "--gpus", "1", "--price-gpu-hour", "1e-9"], None),
    ("price-tiny-cost-objective", [*BATCH, "--gpus", "1", "--objective", "cost", "--price-gpu-hour", "1e-9"], None),
    ("price-huge", [*FLEET, "--gpus", "1", "--price-gpu-hour", "1e12"], None),
    ("price-huge-cost-objective", [*BATCH, "--gpus", "1", "--objective", "cost", "--price-gpu-hour", "1e300"], None),
    ("price-dollar", [*FLEET, "--gpus", "1", "--price-gpu-hour", "$2"], None),
    ("price-per-hour-suffix", [*FLEET, "--gpus", "1", "--price-gpu-hour", "2/h"], True),
    ("price-comma-decimal", [*FLEET, "--gpus", "1", "--price-gpu-hour", "2,50"], True),
    ("price-two-for-one-gpu", [*FLEET, "--gpus", "1", "--gpu", "h100-sxm", "--price-gpu-hour", "2,3"], True),
    ("price-one-for-three-gpus", [*FLEET, "--gpus", "1", "--gpu", "h100-sxm,h200-sxm,mi300x", "--price-gpu-hour", "2"], False),
    ("price-two-for-three-gpus", [*FLEET, "--gpus", "1", "--gpu", "h100-sxm,h200-sxm,mi300x", "--price-gpu-hour", "2,3"], True),
    ("price-four-for-three-gpus", [*FLEET, "--gpus", "1", "--gpu", "h100-sxm,h200-sxm,mi300x", "--price-gpu-hour", "2,3,4,5"], True),
    ("price-one-zero-of-three", [*FLEET, "--gpus", "1", "--gpu", "h100-sxm,h200-sxm,mi300x", "--price-gpu-hour", "2,0,4"], True),
    ("price-one-negative-of-three", [*FLEET, "--gpus", "1", "--gpu", "h100-sxm,h200-sxm,mi300x", "--price-gpu-hour", "2,-3,4"], True),
    ("price-one-nan-of-three", [*FLEET, "--gpus", "1", "--gpu", "h100-sxm,h200-sxm,mi300x", "--price-gpu-hour", "2,nan,4"], True),
    ("price-one-inf-of-three", [*FLEET, "--gpus", "1", "--gpu", "h100-sxm,h200-sxm,mi300x", "--price-gpu-hour", "2,inf,4"], True),
    ("price-disagg", [*FLEET, "--gpus", "2", "--disagg", "--gpu", "h100-sxm,h200-sxm", "--price-gpu-hour", "2,3"], None),
    ("price-disagg-one-gpu-two-prices", [*FLEET, "--gpus", "2", "--disagg", "--price-gpu-hour", "2,3"], True),
    ("price-on-sweep", [*SW_C, "--price-gpu-hour", "2"], True),
    ("price-on-memory", ["memory", "llama-3.1-8b", "--gpus", "1", "--price-gpu-hour", "2"], True),
    ("price-batch-goodput", [*BATCH, "--gpus", "1", "--objective", "goodput", "--price-gpu-hour", "2"], None),
    ("objective-cost-online", [*FLEET, "--gpus", "1", "--objective", "cost"], None),
    ("objective-goodput-online", [*FLEET, "--gpus", "1", "--objective", "goodput"], None),
    ("objective-makespan-online", [*FLEET, "--gpus", "1", "--objective", "makespan"], None),
    ("objective-unknown", [*BATCH, "--gpus", "1", "--objective", "throughput"], True),
    ("objective-upper", [*BATCH, "--gpus", "1", "--objective", "COST"], None),
    # nodes
    ("nodes-1-h100", [*FLEET, "--gpu", "h100-sxm", "--nodes", "1"], None),
    ("nodes-2-h100", [*FLEET, "--gpu", "h100-sxm", "--nodes", "2"], None),
    ("nodes-gb200-1", [*FLEET, "--gpu", "gb200", "--nodes", "1"], None),
    ("nodes-negative", [*FLEET, "--nodes", "-1"], True),
    ("nodes-and-gpus-partial-node", [*FLEET, "--gpus", "12", "--nodes", "2"], True),
    ("nodes-and-gpus-agree-2", [*FLEET, "--gpus", "16", "--nodes", "2"], None),
    ("nodes-fleet-gpu-list", [*FLEET, "--gpu", "h100-sxm,gb200", "--nodes", "1"], None),
    ("nodes-with-disagg", [*FLEET, "--nodes", "1", "--disagg"], None),
    ("nodes-with-layout-past", [*FLEET, "--nodes", "1", "--layout", "tp16"], True),
    ("nodes-1000", [*FLEET, "--nodes", "1000"], None),
    ("nodes-on-sweep", [*SW_C, "--nodes", "2"], True),
    ("nodes-float", [*FLEET, "--nodes", "1.5"], True),
    ("gpus-not-node-multiple", [*FLEET, "--gpus", "3"], None),
    ("gpus-past-node-fleet", [*FLEET, "--gpus", "16", "--gpu", "h100-sxm,mi300x"], None),
    ("price-and-nodes-fleet-cost", [*BATCH, "--nodes", "1", "--gpu", "h100-sxm,mi300x", "--objective", "cost", "--price-gpu-hour", "2,1"], None),
]


def price19_cases() -> Iterator[Case]:
    for name, argv, invalid in PRICE19:
        yield Case("price19", name, argv, {}, invalid)


MEM = ["memory", "llama-3.1-8b"]
OPTS19: list[tuple[str, list[str], bool | None]] = [
    ("memory-layout-all-gpus-1", [*MEM, "--gpus", "1", "--layout", "all"], False),
    ("memory-layout-all-json", [*MEM, "--gpus", "8", "--layout", "all", "--format", "json"], False),
    ("memory-layout-all-upper", [*MEM, "--gpus", "8", "--layout", "ALL"], None),
    ("memory-layout-list", [*MEM, "--gpus", "8", "--layout", "tp8,dp8"], None),
    ("memory-layout-past-gpus", [*MEM, "--gpus", "2", "--layout", "tp8"], True),
    ("memory-gpus-odd", [*MEM, "--gpus", "3"], None),
    ("memory-gpus-0", [*MEM, "--gpus", "0"], True),
    ("memory-kv-cache-memory-and-util", [*MEM, "--gpus", "1", "--kv-cache-memory", "10GiB", "--gpu-memory-utilization", "0.5"], None),
    ("memory-kv-cache-memory-past-gpu", [*MEM, "--gpus", "1", "--kv-cache-memory", "1TiB"], None),
    ("memory-mem-fraction-vllm", [*MEM, "--gpus", "1", "--mem-fraction-static", "0.8"], True),
    ("memory-free-fraction-sglang", [*MEM, "--gpus", "1", "--engine", "sglang", "--free-gpu-memory-fraction", "0.8"], True),
    ("memory-chunked-prefill-v1", [*MEM, "--gpus", "1", "--no-enable-chunked-prefill"], True),
    ("memory-max-model-len-1", [*MEM, "--gpus", "1", "--max-model-len", "1"], None),
    ("memory-block-size-0", [*MEM, "--gpus", "1", "--block-size", "0"], True),
    ("memory-block-size-huge", [*MEM, "--gpus", "1", "--block-size", "1048576"], True),
    ("memory-total-memory-below-weights", [*MEM, "--gpus", "1", "--gpu-total-memory", "10GiB"], None),
    ("memory-total-memory-zero", [*MEM, "--gpus", "1", "--gpu-total-memory", "0GiB"], True),
    ("memory-all2all-dense", [*MEM, "--gpus", "1", "--all2all-backend", "deepep"], True),
    ("memory-all2all-moe-ep", ["memory", "qwen3-30b-a3b", "--gpus", "2", "--layout", "tp2-ep2", "--all2all-backend", "deepep_high_throughput"], None),
    ("memory-serve-command-and-layout", [*MEM, "--gpus", "2", "--layout", "tp2", "--serve-command", "vllm serve meta-llama/Llama-3.1-8B --tensor-parallel-size 2"], False),
    ("memory-serve-command-other-layout", [*MEM, "--gpus", "2", "--layout", "dp2", "--serve-command", "vllm serve meta-llama/Llama-3.1-8B --tensor-parallel-size 2"], True),
    ("check-force-no-outputs", ["check", "{d}/s.toml", "--force"], None),
    ("check-markdown-and-json", ["check", "{d}/s.toml", "--format", "json", "--markdown", "{d}/m.md"], None),
    ("check-baseline-and-write-same", ["check", "{d}/s.toml", "--baseline", "{d}/b.json", "--write-baseline", "{d}/b.json"], True),
    ("check-write-baseline-is-spec", ["check", "{d}/s.toml", "--write-baseline", "{d}/s.toml", "--force"], True),
    ("check-junit-is-spec", ["check", "{d}/s.toml", "--junit", "{d}/s.toml", "--force"], True),
    ("calibrate-speculative-without-bench", ["calibrate", "{d}/log.txt", "--model", "llama-3.1-8b", "--speculative", "eagle:3"], True),
    ("calibrate-calibration-without-speculative", ["calibrate", "{d}/log.txt", "--model", "llama-3.1-8b", "--calibration", "{d}/c.toml"], True),
    ("calibrate-engine-version-on-log", ["calibrate", "{d}/log.txt", "--model", "llama-3.1-8b", "--engine-version", "0.10.2"], True),
    ("calibrate-gpus-on-log-disagree", ["calibrate", "{d}/log.txt", "--model", "llama-3.1-8b", "--gpus", "8"], True),
    ("calibrate-max-model-len-on-log", ["calibrate", "{d}/log.txt", "--model", "llama-3.1-8b", "--max-model-len", "4096"], None),
    ("calibrate-weight-dtype-disagrees", ["calibrate", "{d}/log.txt", "--model", "llama-3.1-8b", "--weight-dtype", "fp8"], None),
    ("calibrate-kv-dtype-disagrees", ["calibrate", "{d}/log.txt", "--model", "llama-3.1-8b", "--kv-dtype", "fp8"], None),
    ("calibrate-json", ["calibrate", "{d}/log.txt", "--model", "llama-3.1-8b", "--format", "json"], False),
]
LOG = "\n".join(ln for ln in (fs.LOGS / "vllm_v1_v16_llama31_8b_eager.txt").read_text().splitlines() if not ln.startswith("#"))


def opts19_cases() -> Iterator[Case]:
    for name, argv, invalid in OPTS19:
        files: dict[str, str] = {}
        if argv[0] == "check":
            files["s.toml"] = fs.SPEC
        if argv[0] == "calibrate":
            files["log.txt"] = LOG
            files["c.toml"] = 'engine = "vllm"\n'
        yield Case("opts19", name, argv, files, invalid)


SURFACES19: dict[str, Callable[[], Iterator[Case]]] = {
    "grid19": grid19_cases, "spec19": spec19_cases, "slo19": slo19_cases,
    "price19": price19_cases, "opts19": opts19_cases,
}
# fmt: on
