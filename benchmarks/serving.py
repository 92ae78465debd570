"""Online serving: wall and CPU time of `capcliff plan`, and the stopping rule's stability.

Prints figures, asserts nothing. Each command runs as `python -m capcliff ...` in a child
process; the wall time includes start-up, and the CPU time (user + system of the child) shows
how much of the wall was spent waiting for a core on a shared machine.

- the default online plan (DeepSeek-R1-Distill-Qwen-32B, 8 x H200, `reasoning`), target <= 1.5 s;
- fleet sizing across four GPU types, target <= 5 s;
- stability: the recommended cap and sustained rate at the stopping rule's size and with four
  times as many requests (`--num-requests 4N`), target < 10 % apart: the default plan, and the
  session workloads `multiturn-chat` and `agentic` (llama-3.1-8b, 1 x H200, 16 users).

Every command runs with the default `--jobs` (the cores other work leaves idle), and once more
with `--jobs 1` for the CPU time of a serial run.

Run: python benchmarks/serving.py [--quick]   (--quick: timings only, no 4x runs)
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import time

DEFAULT = ["plan", "--format", "json"]
FLEET = [
    "plan", "llama-3.1-8b", "--workload", "chat", "--rate", "100", "--slo-ttft", "2",
    "--slo-tpot", "0.05", "--gpus", "1", "--gpu", "h100-sxm,h200-sxm,b200,mi300x",
    "--format", "json",
]  # fmt: skip
SESSIONS = [
    ["plan", "llama-3.1-8b", "--gpu", "h200-sxm", "--gpus", "1", "--workload", preset,
     "--clients", "16", "--format", "json"]
    for preset in ("multiturn-chat", "agentic")
]  # fmt: skip


def run(args: list[str]) -> tuple[float, float, dict[str, object]]:
    """(wall s, child CPU s, parsed JSON) of one `python -m capcliff` run."""
    before = os.times()
    start = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "capcliff", *args], capture_output=True, text=True, check=True
    )
    wall = time.perf_counter() - start
    after = os.times()
    cpu = (after.children_user - before.children_user) + (
        after.children_system - before.children_system
    )
    return wall, cpu, json.loads(done.stdout)


def timed(name: str, args: list[str], repeats: int) -> dict[str, object]:
    """Print the median wall and CPU time of `repeats` runs; return the last report."""
    walls, cpus = [], []
    report: dict[str, object] = {}
    for _ in range(repeats):
        wall, cpu, report = run(args)
        walls.append(wall)
        cpus.append(cpu)
    print(
        f"{name}: wall {statistics.median(walls):.2f} s (min {min(walls):.2f}), "
        f"CPU {statistics.median(cpus):.2f} s, over {repeats} runs"
    )
    return report


def cap_and_rate(report: dict[str, object]) -> tuple[int, float]:
    """The recommended max_num_seqs and the sustained requests/s of a plan report."""
    rec = report["recommended"]
    load = report["load"]
    assert isinstance(rec, dict) and isinstance(load, dict)
    return int(rec["max_num_seqs"]), float(load["sustained_rps"])


def stability(name: str, args: list[str], sized: dict[str, object]) -> None:
    """Print the cap and sustained rate at the stopping rule's size and at 4x it."""
    n = int(str(sized["simulated_requests"]))
    _, _, larger = run([*args, "--num-requests", str(4 * n)])
    (cap, rate), (cap4, rate4) = cap_and_rate(sized), cap_and_rate(larger)
    print(
        f"stability, {name}: stopping rule (up to {n:,} requests per run) cap {cap}, "
        f"{rate:.3f} req/s; 4x ({4 * n:,}) cap {cap4}, {rate4:.3f} req/s; change "
        f"{abs(cap4 / cap - 1):.1%} and {abs(rate4 / rate - 1):.1%}"
    )


def main() -> None:
    quick = "--quick" in sys.argv
    print(f"CPU cores: {os.cpu_count()}, load {os.getloadavg()[0]:.2f} (shared: wall times vary)")
    sized = timed("default online plan", DEFAULT, 1 if quick else 3)
    timed("fleet across h100-sxm, h200-sxm, b200, mi300x", FLEET, 1 if quick else 3)
    timed("default online plan, one worker (--jobs 1)", [*DEFAULT, "--jobs", "1"], 1)
    timed("fleet, one worker (--jobs 1)", [*FLEET, "--jobs", "1"], 1)
    if quick:
        return
    stability("default plan", DEFAULT, sized)
    for args in SESSIONS:
        stability(args[args.index("--workload") + 1], args, run(args)[2])


if __name__ == "__main__":
    main()
