"""Regenerate public_serving_rows.csv's InferenceX rows from the InferenceX API fixture.

Run: python benchmarks/data/inferencex_to_rows.py NEW.json OLD.json > rows.csv
(the fixture github.com/vngcloud/InferenceX-app packages/app/cypress/fixtures/api/
benchmarks.json at the two commits in COMMITS, in that order: `git show COMMIT:PATH`). A run in
both versions is kept once, from the first. Keeps single-node, aggregated (not disaggregated)
runs without speculative decoding on GPUs capcliff has a card for; drops every run already in
shared/reference/serving_benchmarks.csv (matched on its TTFT and TPOT at full precision).

With --speculative (first argument) it keeps the speculative runs instead (every one is MTP)
and writes public_speculative_rows.csv: the same columns plus the speculative settings. The
fixture records only the method; the draft tokens per step come from the run's InferenceX
launch script (SPEC_SCRIPTS), and no acceptance length is recorded (the column stays empty).
"""

from __future__ import annotations

import csv
import json
import sys
from pathlib import Path
from typing import Any

# HEAD when fetched (the file last changed in 528c414, 2026-06-14) and the file's first version.
COMMITS = ("7fe6d62ad57a3df061be692e86578c7111d880c7", "cac6246")
SOURCE = (
    "github.com/vngcloud/InferenceX-app packages/app/cypress/fixtures/api/benchmarks.json "
    "@{commit} (InferenceX production-API snapshot for DeepSeek-R1-0528)"
)
COLUMNS = [
    "row_id", "model", "hardware", "num_gpus", "parallelism", "engine", "engine_version",
    "server_flags", "benchmark_tool", "dataset", "input_len", "output_len", "num_requests",
    "concurrency", "duration_s", "request_throughput_req_s", "output_throughput_tok_s",
    "total_or_other_throughput", "mean_ttft_ms", "median_ttft_ms", "p99_ttft_ms",
    "mean_tpot_ms", "mean_itl_ms", "mean_e2e_latency_ms", "median_e2e_latency_ms", "notes",
    "source", "reliability",
]  # fmt: skip
GPUS = {"h100": "H100", "h200": "H200", "b200": "B200", "b300": "B300", "mi300x": "MI300X",
        "mi325x": "MI325X", "mi355x": "MI355X"}  # fmt: skip
ENGINES = {"sglang": "SGLang", "trt": "TensorRT-LLM"}
MODELS = {"fp8": "deepseek-ai/DeepSeek-R1-0528", "fp4": "nvidia/DeepSeek-R1-0528-FP4"}
SPEC_COLUMNS = ["spec_method", "spec_num_draft_tokens", "spec_accept_length", "spec_source"]
INFERENCEX = "github.com/SemiAnalysisAI/InferenceX"
# Draft tokens per step K of the speculative runs, from InferenceX's single-node launch scripts
# at the commit that last changed the script before the run's date (benchmarks/, later
# benchmarks/single_node/): SGLang `--speculative-algorithm EAGLE --speculative-num-steps K
# --speculative-eagle-topk 1 --speculative-num-draft-tokens K+1` (the MTP layer as an EAGLE
# draft: a chain of K); TensorRT-LLM `speculative_config: decoding_type: MTP,
# num_nextn_predict_layers: K` with K = 3, or 1 when `enable_attention_dp` is on.
# (framework, hardware, precision) -> (K without DP attention, K with it, script @ commit)
SPEC_SCRIPTS = {
    ("sglang", "h200", "fp8"): (2, 2, "benchmarks/single_node/dsr1_fp8_h200_mtp.sh @cd5f6dd26"),
    ("sglang", "b200", "fp8"): (2, 2, "benchmarks/dsr1_fp8_b200_mtp.sh @e62c6acdf (unchanged "
                                      "in K to 1b234994f)"),
    ("sglang", "b200", "fp4"): (2, 2, "benchmarks/single_node/dsr1_fp4_b200_mtp.sh @292726bb8"),
    ("sglang", "b300", "fp8"): (2, 2, "benchmarks/single_node/dsr1_fp8_b300_mtp.sh @f8543f9d1"),
    ("sglang", "mi325x", "fp8"): (3, 3, "benchmarks/single_node/dsr1_fp8_mi325x_mtp.sh "
                                        "@8283444dd"),
    ("sglang", "mi355x", "fp8"): (3, 3, "benchmarks/single_node/dsr1_fp8_mi355x_mtp.sh "
                                        "@c178e2822"),
    ("sglang", "mi355x", "fp4"): (3, 3, "benchmarks/single_node/dsr1_fp4_mi355x_mtp.sh "
                                        "@8a16828e6"),
    ("trt", "h200", "fp8"): (3, 1, "benchmarks/dsr1_fp8_h200_trt_mtp_slurm.sh @bf3456727"),
    ("trt", "b200", "fp8"): (3, 1, "benchmarks/dsr1_fp8_b200_trt_mtp.sh @5d517074c (the same K "
                                   "at bf3456727, the recipe of the January runs)"),
    ("trt", "b200", "fp4"): (3, 1, "benchmarks/dsr1_fp4_b200_trt_mtp.sh @0aae52d4c"),
}  # fmt: skip


def _reference_keys() -> set[tuple[float, float]]:
    """(mean TTFT, mean TPOT) in ms of every shared/reference serving row."""
    shared = Path("/work/shared/reference/serving_benchmarks.csv")
    seen: set[tuple[float, float]] = set()
    if shared.exists():
        for r in csv.DictReader(shared.open()):
            if r["mean_ttft_ms"] and r["mean_tpot_ms"]:
                seen.add((round(float(r["mean_ttft_ms"]), 6), round(float(r["mean_tpot_ms"]), 6)))
    return seen


def _spec_settings(r: dict[str, Any]) -> dict[str, object] | None:
    """The speculative columns of run `r`, or None when no launch script gives its K."""
    script = SPEC_SCRIPTS.get((r["framework"], r["hardware"], r["precision"]))
    if script is None:
        return None
    k = script[1] if r["decode_dp_attention"] else script[0]
    return {
        "spec_method": r["spec_method"], "spec_num_draft_tokens": k, "spec_accept_length": "",
        "spec_source": f"fixture spec_method; K: {INFERENCEX} {script[2]}; acceptance not "
                       "recorded",
    }  # fmt: skip


def main(args: list[str]) -> None:
    speculative = args[:1] == ["--speculative"]
    paths = args[1:] if speculative else args
    seen = _reference_keys()
    columns = COLUMNS + SPEC_COLUMNS if speculative else COLUMNS
    out = csv.DictWriter(sys.stdout, columns, lineterminator="\n")
    out.writeheader()
    n = 0
    records = [
        (r, commit)
        for path, commit in zip(paths, COMMITS, strict=False)
        for r in json.loads(Path(path).read_text())
    ]
    for r, commit in records:
        if r["disagg"] or r["is_multinode"] or (r["spec_method"] != "none") != speculative:
            continue
        if r["framework"] not in ENGINES or r["hardware"] not in GPUS or r["model"] != "dsr1":
            continue
        if r["precision"] not in MODELS:
            continue
        m = r["metrics"]
        if "output_tput_per_gpu" not in m or "mean_ttft" not in m:
            continue
        key = (round(m["mean_ttft"] * 1e3, 6), round(m["mean_tpot"] * 1e3, 6))
        if key in seen:
            continue
        seen.add(key)
        tp, ep = r["decode_tp"], r["decode_ep"]
        layout = f"TP{tp}" + (f" + EP{ep}" if ep > 1 else "")
        layout += " + DP attention" if r["decode_dp_attention"] else " (no DP attention)"
        spec = _spec_settings(r) if speculative else {}
        if spec is None:
            continue
        n += 1
        image = r.get("image") or "not recorded (fixture image null)"
        out.writerow({
            "row_id": f"{'S' if speculative else 'P'}{n:03d}",
            "model": f"{MODELS[r['precision']]} (InferenceX model key dsr1, {r['precision']})",
            "hardware": f"{tp}x {GPUS[r['hardware']]} (InferenceX runner {r['hardware']})",
            "num_gpus": tp, "parallelism": layout,
            "engine": ENGINES[r["framework"]], "engine_version": image,
            "server_flags": "not in fixture (InferenceX benchmarks/ launch scripts of that date)",
            "benchmark_tool": "InferenceX benchmark_serving.py (bench_serving), request-rate "
                              "inf, max-concurrency = conc",
            "dataset": "random (nominal ISL/OSL)", "input_len": r["isl"], "output_len": r["osl"],
            "num_requests": "", "concurrency": r["conc"], "duration_s": "",
            "request_throughput_req_s": "",
            # InferenceX per-GPU throughput = system throughput / GPUs of the run (TP here).
            "output_throughput_tok_s": m["output_tput_per_gpu"] * tp,
            "total_or_other_throughput": f"tput_per_gpu={m['tput_per_gpu']}",
            "mean_ttft_ms": m["mean_ttft"] * 1e3, "median_ttft_ms": m["median_ttft"] * 1e3,
            "p99_ttft_ms": m["p99_ttft"] * 1e3, "mean_tpot_ms": m["mean_tpot"] * 1e3,
            "mean_itl_ms": m["mean_itl"] * 1e3, "mean_e2e_latency_ms": m["mean_e2el"] * 1e3,
            "median_e2e_latency_ms": m["median_e2el"] * 1e3,
            "notes": f"InferenceX {r['date']}; precision {r['precision']}; output throughput = "
                     "output_tput_per_gpu x TP; client: random ISL/OSL, --random-range-ratio "
                     "0.8, num_prompts = 10 x conc, --ignore-eos (InferenceMAX README)",
            "source": f"{SOURCE.format(commit=commit)}; run {r.get('run_url') or 'not recorded'}",
            "reliability": "high for numbers (raw API row with its run URL); server flags "
                           "not recorded",
            **spec,
        })  # fmt: skip


if __name__ == "__main__":
    main(sys.argv[1:])
