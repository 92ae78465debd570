"""What a GPU buys and what a latency target costs, as ratios on the same model (issue 19).

Run: python benchmarks/gpu_ratios.py [--requests N]   (prints Markdown; asserts nothing; ~5 min)

MLPerf Inference (datacenter, 8 GPUs) reports throughput per system; its ratios between systems
on one model are what a buyer compares. The public ratios below are the ones issue 19 quotes
from MLPerf Inference results (not in this repository); capcliff's are computed here.

- **Offline** (every request waiting): the most output tokens/s of the layouts listed, from
  `capcliff sweep` at a high concurrency (the engine's limit applies), uncalibrated.
- **Server / Interactive**: the most requests/s `capcliff plan --layout L` sustains within the
  scenario's TTFT and TPOT p99 limits (MLPerf's per-token latency is TPOT).

Named assumptions: the workload (`ISL`/`OSL` below) is a short chat turn, not MLPerf's dataset
(OpenOrca for Llama 2 70B; its lengths vary per request); Llama 3.1 stands in for Llama 2 70B
(same shape but a 128k vocabulary and GQA-8 in both); NVIDIA systems run TensorRT-LLM and AMD
systems vLLM, as their MLPerf submissions do; FP4 on B200, FP8 on H100/H200/MI300X/MI325X.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from dataclasses import dataclass
from typing import Any

ISL, OSL = 1024, 256  # named assumption: a short chat turn
CONCURRENCY = "256,1024,4096"


@dataclass(frozen=True)
class System:
    """One 8-GPU system serving one model."""

    gpu: str
    dtype: str
    engine: str
    layouts: str  # comma-separated candidates


@dataclass(frozen=True)
class Ratio:
    """capcliff's throughput ratio of two systems against the public one."""

    label: str
    model: str
    num: System
    den: System
    public: tuple[float, float]  # the measured ratio (a range where the issue gives one)


H200 = {"8b": System("h200-sxm", "fp8", "trtllm", "dp8"),
        "70b": System("h200-sxm", "fp8", "trtllm", "dp8,dp4-tp2"),
        "405b": System("h200-sxm", "fp8", "trtllm", "tp8")}  # fmt: skip
B200 = {"8b": System("b200", "nvfp4", "trtllm", "dp8"),
        "70b": System("b200", "nvfp4", "trtllm", "dp8,dp4-tp2"),
        "405b": System("b200", "nvfp4", "trtllm", "tp8,dp2-tp4")}  # fmt: skip
MI300X_70B = System("mi300x", "fp8", "vllm", "dp8,dp4-tp2")
MODELS = {"8b": "llama-3.1-8b", "70b": "llama-3.1-70b", "405b": "llama-3.1-405b"}
RATIOS = (
    Ratio("B200 FP4 / H200 FP8", "8b", B200["8b"], H200["8b"], (2.1, 2.1)),
    Ratio("B200 FP4 / H200 FP8", "70b", B200["70b"], H200["70b"], (2.9, 2.9)),
    Ratio("B200 FP4 / H200 FP8", "405b", B200["405b"], H200["405b"], (2.9, 2.9)),
    Ratio("MI300X (vLLM) / H200 (TRT-LLM)", "70b", MI300X_70B, H200["70b"], (0.7, 0.8)),
)
# MLPerf's latency scenarios: (TTFT p99 s, TPOT p99 s) for Server and Interactive.
SCENARIOS = {"8b": ((2.0, 0.100), (0.5, 0.030)), "70b": ((2.0, 0.200), (0.45, 0.040))}
INTERACTIVE_PUBLIC = (0.36, 0.82)  # Interactive over Server throughput, issue 19


def _capcliff(args: list[str]) -> dict[str, Any]:
    out = subprocess.run(
        [sys.executable, "-m", "capcliff", *args, "--format", "json"],
        check=True, capture_output=True, text=True,
    ).stdout  # fmt: skip
    result: dict[str, Any] = json.loads(out)
    return result


def offline_tok_s(model: str, s: System, requests: int) -> tuple[float, str]:
    """The most output tokens/s over the system's layouts and the concurrencies, and where."""
    d = _capcliff([
        "sweep", model, "--gpu", s.gpu, "--gpus", "8", "--layout", s.layouts,
        "--weight-dtype", s.dtype, "--engine", s.engine, "--isl", str(ISL), "--osl", str(OSL),
        "--concurrency", CONCURRENCY, "--num-requests", str(requests),
    ])  # fmt: skip
    best = max(
        ((float(p["output_throughput_tok_s"]), f"{ser['layout']} c{p['concurrency']}")
         for ser in d["series"] for p in ser["points"]),
        default=(0.0, "-"),
    )  # fmt: skip
    return best


def sustained_rps(model: str, s: System, slo: tuple[float, float]) -> tuple[float, str]:
    """The requests/s `plan` sustains within `slo` on the system's layouts, and which."""
    d = _capcliff([
        "plan", model, "--gpu", s.gpu, "--gpus", "8", "--layout", s.layouts,
        "--weight-dtype", s.dtype, "--engine", s.engine, "--isl", str(ISL), "--osl", str(OSL),
        "--rate", "1", "--slo-ttft", str(slo[0]), "--slo-tpot", str(slo[1]),
    ])  # fmt: skip
    rates = [
        ((lay.get("capacity") or {}).get("sustained_rps") or 0.0, lay["name"])
        for lay in d["layouts"]
    ]
    return max(rates, default=(0.0, "-"))


def _verdict(ours: float, public: tuple[float, float]) -> str:
    """'in range', or how far `ours` lies from the nearer end of the public range."""
    lo, hi = public
    if lo <= ours <= hi:
        return "in range"
    return f"{ours / (lo if ours < lo else hi) - 1:+.0%}"


def main() -> None:
    """Print the GPU ratios and the latency-target ratios."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=3000, help="requests per sweep")
    a = parser.parse_args()
    print(f"isl {ISL}, osl {OSL}, 8 GPUs, uncalibrated\n")
    print("| ratio | model | capcliff (offline tok/s, where) | public | off by |")
    print("|---|---|---|---:|---|")
    for r in RATIOS:
        model = MODELS[r.model]
        n, nw = offline_tok_s(model, r.num, a.requests)
        d, dw = offline_tok_s(model, r.den, a.requests)
        ours = n / d if d else float("nan")
        lo, hi = r.public
        pub = f"{lo:.2f}" if lo == hi else f"{lo:.2f}-{hi:.2f}"
        print(
            f"| {r.label} | {model} | {ours:.2f} ({n:,.0f} at {nw} / {d:,.0f} at {dw}) | {pub} "
            f"| {_verdict(ours, r.public)} |"
        )
    print("\n| model | system | Server rps (TTFT, TPOT p99) | Interactive rps | Interactive / "
          "Server | public |")  # fmt: skip
    print("|---|---|---|---|---:|---:|")
    for key, (server, interactive) in SCENARIOS.items():
        for s in (H200[key], B200[key]):
            srv, sl = sustained_rps(MODELS[key], s, server)
            itv, il = sustained_rps(MODELS[key], s, interactive)
            ratio = itv / srv if srv else float("nan")
            print(
                f"| {MODELS[key]} | {s.gpu} {s.dtype} {s.engine} | {srv:.2f} {sl} ({server[0]} s, "
                f"{server[1] * 1e3:.0f} ms) | {itv:.2f} {il} ({interactive[0]} s, "
                f"{interactive[1] * 1e3:.0f} ms) | {ratio:.2f} | "
                f"{INTERACTIVE_PUBLIC[0]:.2f}-{INTERACTIVE_PUBLIC[1]:.2f} |"
            )


if __name__ == "__main__":
    main()
