"""SGLang's slow plans, timed: prints figures, asserts nothing.

The plans whose jumps ask SGLang's rule most (`fast_forward._sglang_limit`, `sglang_admit`),
and one vLLM plan for comparison, each run as `python -m capcliff ...` with the pure-Python
event loop (`CAPCLIFF_SIM_CORE=python`) and `--jobs 1`, in CPU seconds of the child (user +
system: steady on a shared machine), best of `--runs` (3). Target: <= 12 s each (an outside
fuzz harness counts a command over 20 s as a hang).

Run: PYTHONPATH=. python benchmarks/sglang_plans.py [--runs N] [NAME ...]
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
from collections.abc import Iterable

PLANS = {
    name: command.split()
    for name, command in {
        "llama-8b": "plan llama-3.1-8b --engine sglang",
        "r1-1k": "plan deepseek-r1 --engine sglang --isl 1000 --osl 1000",
        "llama-8b-fleet": "plan llama-3.1-8b --isl 100 --osl 100 --num-requests 20 --rate 2 "
        "--slo-ttft 2 --slo-tpot 0.05 --gpu h100-sxm,h200-sxm --engine sglang",
        "llama-8b-vllm": "plan llama-3.1-8b --engine vllm",
    }.items()
}


def cpu_seconds(args: list[str], *, jobs: bool = True) -> float:
    """User + system CPU seconds of one `python -m capcliff ARGS --jobs 1` run (`jobs` False:
    ARGS alone)."""
    env = {**os.environ, "CAPCLIFF_SIM_CORE": "python"}
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(
        [sys.executable, "-m", "capcliff", *args, *(["--jobs", "1"] if jobs else [])],
        env=env,
        check=True,
        stdout=subprocess.DEVNULL,
    )
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def runs_and_names(description: str, known: Iterable[str]) -> tuple[int, list[str]]:
    """The command line of a timing script: `--runs N` and the NAMEs to time (default: all of
    `known`; an unknown one is refused naming the known)."""
    known = list(known)
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("names", nargs="*", help=f"of {', '.join(known)} (default: all)")
    options = parser.parse_args()
    unknown = sorted(set(options.names) - set(known))
    if unknown:
        parser.error(f"names: unknown {', '.join(unknown)}; known: {', '.join(known)}")
    return options.runs, options.names or known


def main() -> None:
    runs_each, names = runs_and_names(__doc__.splitlines()[0], PLANS)
    for name in names:
        times = [cpu_seconds(PLANS[name]) for _ in range(runs_each)]
        runs = ", ".join(f"{t:.1f}" for t in times)
        print(f"{name:16s} best {min(times):5.1f} s CPU  ({runs})")


if __name__ == "__main__":
    main()
