"""The online stopping rule's cost and answers: prints figures, asserts nothing.

For each plan below, the CPU time (user + system of the child) of `capcliff plan ... --jobs 1
--format json` on the pure-Python loop, the best of `--repeats` runs, the recommendation, and
every saturation point the stopping rule settled (a spy on `capacity.saturation_point` in the
child): the rate, its relative 95 % half-width, the requests it came from. With `--against DIR`
(another checkout, e.g. the commit before a change) each run alternates between the two trees,
so both see the same load, and each point's rate is printed side by side, its move in units of
the earlier half-width (|move| <= 1: inside the interval the earlier run printed).

Run: PYTHONPATH=. python benchmarks/stopping_rule.py [--repeats 3] [--against /path/to/old]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
from pathlib import Path

PLANS = {
    "multi-turn, 1 GPU": [
        "llama-3.1-8b", "--gpus", "1", "--workload", "multiturn-chat", "--clients", "64",
    ],
    "multi-turn, 8 GPUs": ["llama-3.1-8b", "--workload", "multiturn-chat", "--clients", "64"],
    "agentic, 1 GPU": ["llama-3.1-8b", "--gpus", "1", "--workload", "agentic", "--clients", "16"],
    "qwen3-32b within an SLO": [
        "qwen3-32b", "--gpu", "h200-sxm", "--gpus", "8", "--isl", "4000", "--osl", "1000",
        "--slo-ttft", "2", "--slo-tpot", "0.03",
    ],
}  # fmt: skip

# The child: the plan, with every settled saturation point recorded (to stderr, last line).
DRIVER = """
import json, sys
import capcliff.analysis.evaluate.capacity as capacity
seen = []
inner = capacity.saturation_point
def spy(replica, workload, cap, least, **kw):
    point = inner(replica, workload, cap, least, **kw)
    if kw.get("settle_it", True):
        s = point.state
        seen.append([replica.capacity.blocks, cap, s.throughput_rps, s.rps_half_width,
                     point.requests, s.settled])
    return point
capacity.saturation_point = spy
from capcliff.cli.main import main
main(sys.argv[1:])
print(json.dumps(seen), file=sys.stderr)
"""
Point = tuple[float, float, int, bool]  # rate, relative half-width, requests, settled


def run_once(tree: Path, args: list[str]) -> tuple[float, dict[str, object], dict[str, Point]]:
    """(CPU seconds, the JSON report, the settled points by 'KV blocks/cap') of one plan run
    from the sources in `tree`."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env.update(PYTHONPATH=str(tree), CAPCLIFF_SIM_CORE="python")
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    command = [sys.executable, "-c", DRIVER, "plan", *args, "--jobs", "1", "--format", "json"]
    out = subprocess.run(command, capture_output=True, check=True, env=env, cwd=tree, text=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    points = {
        f"{blocks}/{cap}": (rate, hw, n, ok)
        for blocks, cap, rate, hw, n, ok in json.loads(out.stderr.strip().splitlines()[-1])
    }
    return cpu, json.loads(out.stdout), points


def summary(report: dict[str, object]) -> str:
    """The recommended layout, its cap and rate, and the largest sample simulated."""
    rec = report.get("recommended") or {}
    load = report.get("load") or {}
    assert isinstance(rec, dict) and isinstance(load, dict)
    return (
        f"{rec.get('layout')} cap {rec.get('max_num_seqs')}, "
        f"{load.get('sustained_rps', float('nan')):.3f} req/s sustained, "
        f"largest sample {report.get('simulated_requests')}, settled {report.get('settled')}"
    )


def main() -> None:
    """Print the figures."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--against", type=Path, default=None)
    parser.add_argument("--only", default=None, help="run only the plans whose name has this")
    args = parser.parse_args()
    here = Path(__file__).resolve().parent.parent
    trees = {"this": here} | ({"against": args.against.resolve()} if args.against else {})
    for name, plan in PLANS.items():
        if args.only and args.only not in name:
            continue
        cpu: dict[str, list[float]] = {t: [] for t in trees}
        reports: dict[str, dict[str, object]] = {}
        points: dict[str, dict[str, Point]] = {}
        for _ in range(args.repeats):
            for label, tree in trees.items():
                seconds, reports[label], points[label] = run_once(tree, plan)
                cpu[label].append(seconds)
        print(f"{name}: capcliff plan {' '.join(plan)} --jobs 1", flush=True)
        for label in trees:
            print(f"  {label:8s} CPU best {min(cpu[label]):.2f} s  {summary(reports[label])}")
        for key in sorted(set().union(*(p.keys() for p in points.values()))):
            row = []
            for label in trees:
                p = points[label].get(key)
                row.append("-" if p is None else f"{p[0]:.3f} ±{100 * p[1]:.1f} % n={p[2]}")
            line = f"    KV blocks/cap {key:12s} " + "  |  ".join(row)
            old, new = points.get("against", {}).get(key), points["this"].get(key)
            if old is not None and new is not None and 0 < old[1] < float("inf"):
                line += f"  move {(new[0] - old[0]) / (old[0] * old[1]):+.2f} half-widths"
            print(line, flush=True)


if __name__ == "__main__":
    main()
