"""`capcliff plan` rankings against the study's layout results (shared/reference/paper_findings.md).

Prints Markdown for docs/validation.md; asserts nothing. Run: python benchmarks/plan_vs_study.py
(a batch by makespan, the study's own measure), or `--online`: the default `capcliff plan MODEL
--gpu h200-sxm --gpus 8` (steady state, the reasoning workload, no SLO), run as a user runs it,
with the layouts by sustained requests/s, the recommendation and the layouts it ties with.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time

from capcliff.analysis.deployment import resolve
from capcliff.analysis.deployment_settings import DeploymentSettings
from capcliff.analysis.plan.batch import build_plan_report
from capcliff.analysis.workloads import WorkloadChoice
from capcliff.catalog.catalogs import get_hardware, get_model

CASES = [
    ("deepseek-r1-distill-qwen-14b", "best at DP=8 (332 s); PP=2+TP=4 3.5x slower"),
    ("deepseek-r1-distill-qwen-32b", "best at DP=4+TP=2 (484 s); TP=8 beats DP=8"),
    ("llama-3.1-405b", "TP=8 986 s, far ahead of PP=8 7,537 s"),
    ("deepseek-r1", "PP=4+TP=2 1,663 s ahead of TP=8 2,047 s"),
]


ONLINE = [("deepseek-r1-distill-llama-8b", "DP=8 (below 32B, DP wins)"), *CASES]
NAMED = ("dp8", "tp4-pp2", "dp4-tp2", "tp8", "pp8", "tp2-pp4")


def online() -> None:
    print("Default `capcliff plan MODEL --gpu h200-sxm --gpus 8` (reasoning, no SLO; seed 0).\n")
    print(
        "| model | recommended (ties) | top three (sustained req/s) | the study's layouts | study |"
    )
    print("|---|---|---|---|---|")
    for model_id, study in ONLINE:
        start = time.perf_counter()
        out = subprocess.run(
            [sys.executable, "-m", "capcliff", "plan", model_id, "--gpu", "h200-sxm", "--gpus",
             "8", "--format", "json", "--jobs", "1"],
            capture_output=True, text=True, check=True,
        ).stdout  # fmt: skip
        report = json.loads(out)
        rows = sorted(
            (r for r in report["layouts"] if r.get("capacity")),
            key=lambda r: -r["capacity"]["sustained_rps"],
        )
        rate = {r["name"]: r["capacity"]["sustained_rps"] for r in rows}
        rank = {r["name"]: i + 1 for i, r in enumerate(rows)}
        rec = report["recommended"] or {}
        chosen = f"{rec.get('layout', '-')} ({', '.join(rec.get('tie') or []) or 'no tie'})"
        top = ", ".join(f"{r['name']} {rate[r['name']]:.2f}" for r in rows[:3])
        where = ", ".join(f"{n} #{rank[n]} ({rate[n]:.2f})" for n in NAMED if n in rank)
        elapsed = time.perf_counter() - start
        print(f"| {model_id} | {chosen} | {top} | {where} | {study} | <!-- {elapsed:.0f} s -->")


def main() -> None:
    if "--online" in sys.argv:
        online()
        return
    requests = int(sys.argv[1]) if len(sys.argv) > 1 else 2000
    print(f"Reasoning preset, a batch of {requests:,} requests, vLLM, 8 x H200, by makespan.\n")
    print("| model | capcliff's top three (makespan s) | the study's layouts in capcliff | study |")
    print("|---|---|---|---|")
    for model_id, study in CASES:
        start = time.perf_counter()
        dep = resolve(get_model(model_id), get_hardware("h200-sxm"), DeploymentSettings())
        report = build_plan_report(
            dep,
            gpus=8,
            workload=WorkloadChoice(num_requests=requests, preset_name="reasoning"),
            objective="makespan",
            slo=None,
            seed=0,
        )
        rows = sorted(
            (r for r in report.layouts if r.sweet_spot is not None),
            key=lambda r: r.sweet_spot.makespan_s if r.sweet_spot else 0.0,
        )
        rank = {r.name: i + 1 for i, r in enumerate(rows)}
        top = ", ".join(
            f"{r.name} {r.sweet_spot.makespan_s:,.0f}" for r in rows[:3] if r.sweet_spot
        )
        named = ("dp8", "tp4-pp2", "dp4-tp2", "tp8", "pp8", "tp2-pp4")
        where = ", ".join(
            f"{n} #{rank[n]} ({r.sweet_spot.makespan_s:,.0f})"
            for n in named
            for r in rows
            if r.name == n and r.sweet_spot
        )
        elapsed = time.perf_counter() - start
        print(f"| {model_id} | {top} | {where} | {study} | <!-- {elapsed:.0f} s -->")


if __name__ == "__main__":
    main()
