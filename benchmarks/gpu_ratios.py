"""What a GPU buys and what a latency target costs, as ratios on the same model (issue 19).

Run: python benchmarks/gpu_ratios.py [--requests N] [--only TEXT] [--no-scenarios]
(prints Markdown; asserts nothing; ~5-10 min for all; `--only H100` runs the ratios whose label
contains "H100", `--no-scenarios` skips the Interactive / Server table)

MLPerf Inference (datacenter, 8 GPUs) reports throughput per system; its ratios between systems
on one model are what a buyer compares. The public ratios below are the ones issue 19 quotes
from MLPerf Inference results (not in this repository); capcliff's are computed here.

- **Offline** (every request waiting): the most output tokens/s of the layouts listed, from
  `capcliff sweep` at a high concurrency (the engine's limit applies), uncalibrated.
- **Server / Interactive**: the most requests/s `capcliff plan --layout L` sustains within the
  scenario's TTFT and TPOT p99 limits (MLPerf's per-token latency is TPOT). A GPU pair whose
  public source also prints Server tokens/s gets its Server ratio in a second table.

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
    # the measured Server-scenario ratio, where the source prints one
    public_server: tuple[float, float] | None = None


H200 = {"8b": System("h200-sxm", "fp8", "trtllm", "dp8"),
        "70b": System("h200-sxm", "fp8", "trtllm", "dp8,dp4-tp2"),
        "405b": System("h200-sxm", "fp8", "trtllm", "tp8")}  # fmt: skip
B200 = {"8b": System("b200", "nvfp4", "trtllm", "dp8"),
        "70b": System("b200", "nvfp4", "trtllm", "dp8,dp4-tp2"),
        "405b": System("b200", "nvfp4", "trtllm", "tp8,dp2-tp4")}  # fmt: skip
MI300X_70B = System("mi300x", "fp8", "vllm", "dp8,dp4-tp2")
MI325X_70B = System("mi325x", "fp8", "vllm", "dp8,dp4-tp2")
# 70B in FP8 does not fit one 80 GB H100 with room for KV (`capcliff memory llama-3.1-70b --gpu
# h100-sxm --weight-dtype fp8`: dp8 does not fit); NVIDIA's MLPerf v4.1 H100 system ran TP 2 x 4
# (closed/NVIDIA/configs/llama2-70b/Offline/__init__.py, H100_SXM_80GB_TP2x4).
H100_70B = System("h100-sxm", "fp8", "trtllm", "dp4-tp2,tp8")
MODELS = {"8b": "llama-3.1-8b", "70b": "llama-3.1-70b", "405b": "llama-3.1-405b"}
RATIOS = (
    Ratio("B200 FP4 / H200 FP8", "8b", B200["8b"], H200["8b"], (2.1, 2.1)),
    Ratio("B200 FP4 / H200 FP8", "70b", B200["70b"], H200["70b"], (2.9, 2.9)),
    Ratio("B200 FP4 / H200 FP8", "405b", B200["405b"], H200["405b"], (2.9, 2.9)),
    Ratio("MI300X (vLLM) / H200 (TRT-LLM)", "70b", MI300X_70B, H200["70b"], (0.7, 0.8)),
    # MLPerf Inference Llama 2 70B Offline tokens/s, NVIDIA, 8 GPUs, TensorRT-LLM (FP8 in v4.1):
    # v4.0 (99.9 %) H200 27,738.3 / H100 21,805.8 = 1.272; v4.1 H200 (700 W) 31,302.7 / H100
    # 24,524.9 = 1.276 (mlcommons/inference_results_v4.0 and _v4.1, closed/NVIDIA/results).
    # Server: v4.0 26,485.43 / 20,556.40 = 1.288; v4.1 29,228.2 / 21,605.8 = 1.353.
    Ratio(
        "H200 FP8 / H100 FP8 (TRT-LLM)", "70b", H200["70b"], H100_70B, (1.27, 1.28), (1.29, 1.35)
    ),
    # MLPerf Inference v5.1 Llama 2 70B Offline tokens/s, AMD, 8 GPUs, the same vLLM 0.9.0.2
    # build, FP8: MI325X 34,520.4 / MI300X 27,803.9 = 1.242 (mlcommons/inference_results_v5.1,
    # closed/AMD/results/8xMI325X_2xEPYC_9575F_1 and 8xMI300X_2xEPYC_9575F, summary.html).
    # Server: 32,027.6 / 24,593.8 = 1.302.
    Ratio("MI325X / MI300X (vLLM FP8)", "70b", MI325X_70B, MI300X_70B, (1.24, 1.24), (1.30, 1.30)),
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


def _ratio_row(
    label: str,
    model: str,
    num: tuple[float, str],
    den: tuple[float, str],
    public: tuple[float, float],
) -> str:
    """One Markdown row: capcliff's ratio num / den (each a figure and where) against `public`."""
    (n, nw), (d, dw), (lo, hi) = num, den, public
    ours = n / d if d else float("nan")
    pub = f"{lo:.2f}" if lo == hi else f"{lo:.2f}-{hi:.2f}"
    fig = "{:,.0f}" if n >= 1000 else "{:.2f}"
    return (
        f"| {label} | {model} | {ours:.2f} ({fig.format(n)} at {nw} / {fig.format(d)} at {dw}) "
        f"| {pub} | {_verdict(ours, public)} |"
    )


def main() -> None:
    """Print the GPU ratios and the latency-target ratios."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=3000, help="requests per sweep")
    parser.add_argument("--only", default="", help="run only the ratios whose label contains this")
    parser.add_argument("--no-scenarios", action="store_true", help="skip Interactive / Server")
    a = parser.parse_args()
    chosen = [r for r in RATIOS if a.only.lower() in r.label.lower()]
    print(f"isl {ISL}, osl {OSL}, 8 GPUs, uncalibrated\n")
    print("| ratio | model | capcliff (offline tok/s, where) | public | off by |")
    print("|---|---|---|---:|---|")
    for r in chosen:
        model = MODELS[r.model]
        num, den = offline_tok_s(model, r.num, a.requests), offline_tok_s(model, r.den, a.requests)
        print(_ratio_row(r.label, model, num, den, r.public))
    with_server = [r for r in chosen if r.public_server is not None]
    if with_server:
        print("\n| ratio | model | capcliff (Server rps, TTFT 2 s / TPOT 200 ms p99) | public | "
              "off by |")  # fmt: skip
        print("|---|---|---|---:|---|")
    for r in with_server:
        assert r.public_server is not None
        model, slo = MODELS[r.model], SCENARIOS[r.model][0]
        num, den = sustained_rps(model, r.num, slo), sustained_rps(model, r.den, slo)
        print(_ratio_row(r.label, model, num, den, r.public_server))
    if a.no_scenarios:
        return
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
