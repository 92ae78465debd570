"""Print capcliff's output-throughput ratios between GPUs on the same model and workload:
MI300X / H200 and MI325X / MI300X (8 GPUs, one replica per layout below), at a few concurrencies.

Public measurements to compare with (issue 19; not in this repository): MI300X (vLLM) over H200
(TensorRT-LLM) is 0.7-0.8x in MLPerf Inference. Run before and after a change to the per-vendor
terms: `PYTHONPATH=. python benchmarks/amd_ratios.py`.
"""

from __future__ import annotations

import json
import subprocess
import sys

CASES = (  # model, weight dtype, layout, engine
    ("llama-3.1-70b", "fp8", "tp8", "vllm"),
    ("llama-3.1-8b", "bf16", "tp8", "vllm"),
    ("deepseek-r1", "fp8", "tp8", "sglang"),  # the InferenceX DeepSeek-R1 deployments
)
PAIRS = (("mi300x", "h200-sxm"), ("mi325x", "mi300x"))
CONCURRENCY = "16,64,256"
ISL, OSL = 1024, 1024
REQUESTS = 400


def throughput(model: str, dtype: str, layout: str, engine: str, gpu: str) -> dict[int, float]:
    """Output tokens/s per concurrency from `capcliff sweep --format json`."""
    cmd = [
        sys.executable, "-m", "capcliff", "sweep", model, "--gpu", gpu, "--gpus", "8",
        "--layout", layout, "--engine", engine, "--weight-dtype", dtype,
        "--isl", str(ISL), "--osl", str(OSL),
        "--concurrency", CONCURRENCY, "--num-requests", str(REQUESTS), "--format", "json",
    ]  # fmt: skip
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    points = json.loads(out)["series"][0]["points"]
    return {int(p["concurrency"]): float(p["output_throughput_tok_s"]) for p in points}


def main() -> None:
    """Print one line per (model, pair, concurrency)."""
    print(f"isl {ISL}, osl {OSL}, 8 GPUs, one replica; ratio of output tok/s")
    for model, dtype, layout, engine in CASES:
        cache = {
            gpu: throughput(model, dtype, layout, engine, gpu) for pair in PAIRS for gpu in pair
        }
        for num, den in PAIRS:
            ratios = "  ".join(
                f"c{c}: {cache[num][c] / cache[den][c]:.2f}" for c in sorted(cache[num])
            )
            print(f"{model} {dtype} {layout} {engine}  {num}/{den}  {ratios}")


if __name__ == "__main__":
    main()
