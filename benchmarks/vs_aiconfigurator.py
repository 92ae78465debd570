"""capcliff against NVIDIA aiconfigurator on the same two questions, side by side, CPU seconds.

Run: python benchmarks/vs_aiconfigurator.py [--repeat 3]
(needs the `aiconfigurator` command: pip install aiconfigurator; prints figures, asserts nothing)

The questions are aiconfigurator's default ones (`aiconfigurator cli default`: Qwen3-32B on
8 x H200 SXM, vLLM, 4,000 input and 1,000 output tokens per request):

- online: the most each layout serves under TTFT <= 2 s and TPOT <= 30 ms (aiconfigurator's
  defaults). capcliff: `plan --slo-ttft 2 --slo-tpot 0.03` (no rate: the most each layout
  sustains); aiconfigurator: `cli default --ttft 2000 --tpot 30`.
- batch: the highest throughput, no latency target. capcliff: `plan --arrival batch
  --num-requests 1000`; aiconfigurator: `cli default` with targets no configuration misses
  (TTFT 1,000 s, TPOT 100 s).

Each command runs as a fresh process (imports included, as a user runs it), one after the other
in this one run; capcliff's modules are compiled to bytecode first (`compileall`, as `pip install`
does: aiconfigurator's are, in site-packages; a checkout run with PYTHONDONTWRITEBYTECODE=1 would
otherwise compile every module from source in every run, about 0.2 s); CPU = user + system
seconds of the process and its children (os.wait4). capcliff runs its pure-Python event loop
(CAPCLIFF_SIM_CORE=python, capcliff/sim/core.py) and its default step-time source (the
roofline). The ratio is aiconfigurator's CPU over capcliff's (the best of
`--repeat` runs each). What each answered is printed under the figures.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).parent.parent
WORKLOAD = ["--isl", "4000", "--osl", "1000"]
CAPCLIFF = [sys.executable, "-m", "capcliff", "plan", "qwen3-32b", "--gpu", "h200-sxm",
            "--gpus", "8", *WORKLOAD]  # fmt: skip
AIC = ["aiconfigurator", "cli", "default", "--model-path", "Qwen/Qwen3-32B", "--total-gpus", "8",
       "--system", "h200_sxm", "--backend", "vllm", *WORKLOAD]  # fmt: skip
QUESTIONS = {
    "online (TTFT <= 2 s, TPOT <= 30 ms)": (
        [*CAPCLIFF, "--slo-ttft", "2", "--slo-tpot", "0.03"],
        [*AIC, "--ttft", "2000", "--tpot", "30"],
    ),
    "batch (highest throughput)": (
        [*CAPCLIFF, "--arrival", "batch", "--num-requests", "1000"],
        [*AIC, "--ttft", "1000000", "--tpot", "100000"],
    ),
}


@dataclass(frozen=True)
class Run:
    """One command's CPU and wall seconds and its standard output."""

    cpu_s: float
    wall_s: float
    out: str


def run(command: list[str]) -> Run:
    """Run `command` to completion; its CPU from the kernel's accounting of it and its
    children."""
    env = {**os.environ, "CAPCLIFF_SIM_CORE": "python", "PYTHONPATH": str(ROOT)}
    start = time.perf_counter()
    proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env,
                            text=True)  # fmt: skip
    assert proc.stdout is not None
    out = proc.stdout.read()
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(command)} exited {proc.returncode}")
    return Run(usage.ru_utime + usage.ru_stime, time.perf_counter() - start, out)


def best(command: list[str], repeat: int) -> Run:
    """The run with the least CPU of `repeat`."""
    return min((run(command) for _ in range(repeat)), key=lambda r: r.cpu_s)


def capcliff_answer(out: str) -> str:
    """capcliff's recommendation line."""
    return next((line for line in out.splitlines() if line.startswith("Recommended")), "?")


def aic_answer(out: str) -> str:
    """aiconfigurator's best aggregated configuration: parallelism, tokens/s/GPU, request/s."""
    lines = out.splitlines()
    start = next((i for i, line in enumerate(lines) if line.startswith("agg Top")), None)
    if start is None:
        return "?"
    cells = [c.strip() for c in lines[start + 4].split("|")]
    # | Rank | backend | tokens/s/gpu | tokens/s/user | req/s | TTFT | ... | parallel | bs |
    return f"agg {cells[-3]} x {re.sub(r'[^0-9]', '', cells[10])} replicas, " \
        f"{cells[3]} tok/s/GPU, {cells[5]} req/s"  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3, help="runs of each command (best kept)")
    args = parser.parse_args()
    if shutil.which("aiconfigurator") is None:
        raise SystemExit("needs the aiconfigurator command: pip install aiconfigurator")
    # as installed: bytecode next to the sources (read even where PYTHONDONTWRITEBYTECODE is set)
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(ROOT / "capcliff")], check=True)
    print(f"1-minute load average at the start: {os.getloadavg()[0]:.2f}\n")
    print("| question | capcliff CPU s (wall) | aiconfigurator CPU s (wall) | speed-up (CPU) |")
    print("|---|---:|---:|---:|")
    answers = []
    for question, (ours, theirs) in QUESTIONS.items():
        mine, aic = best(ours, args.repeat), best(theirs, args.repeat)
        print(f"| {question} | {mine.cpu_s:.2f} ({mine.wall_s:.2f}) | "
              f"{aic.cpu_s:.2f} ({aic.wall_s:.2f}) | {aic.cpu_s / mine.cpu_s:.1f} x |")  # fmt: skip
        answers.append((question, capcliff_answer(mine.out), aic_answer(aic.out)))
    print()
    for question, mine_says, aic_says in answers:
        print(f"{question}:\n  capcliff: {mine_says}\n  aiconfigurator: {aic_says}")


if __name__ == "__main__":
    main()
