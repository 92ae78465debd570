"""Regenerate public_serving_rows.csv's InferenceX rows from the InferenceX API fixture.

Run: python benchmarks/data/inferencex_to_rows.py NEW.json OLD.json > rows.csv
(the fixture github.com/vngcloud/InferenceX-app packages/app/cypress/fixtures/api/
benchmarks.json at the two commits in COMMITS, in that order: `git show COMMIT:PATH`). A run in
both versions is kept once, from the first. Keeps single-node, aggregated (not disaggregated)
runs without speculative decoding on GPUs capcliff has a card for; drops every run already in
shared/reference/serving_benchmarks.csv (matched on its TTFT and TPOT at full precision).
"""

from __future__ import annotations

import csv
import json
import sys
from pathlib import Path

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


def main(paths: list[str]) -> None:
    shared = Path("/work/shared/reference/serving_benchmarks.csv")
    seen: set[tuple[float, float]] = set()
    if shared.exists():
        for r in csv.DictReader(shared.open()):
            if r["mean_ttft_ms"] and r["mean_tpot_ms"]:
                seen.add((round(float(r["mean_ttft_ms"]), 6), round(float(r["mean_tpot_ms"]), 6)))
    out = csv.DictWriter(sys.stdout, COLUMNS, lineterminator="\n")
    out.writeheader()
    n = 0
    records = [
        (r, commit)
        for path, commit in zip(paths, COMMITS, strict=False)
        for r in json.loads(Path(path).read_text())
    ]
    for r, commit in records:
        if r["disagg"] or r["is_multinode"] or r["spec_method"] != "none":
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
        n += 1
        image = r.get("image") or "not recorded (fixture image null)"
        out.writerow({
            "row_id": f"P{n:03d}",
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
        })  # fmt: skip


if __name__ == "__main__":
    main(sys.argv[1:])
