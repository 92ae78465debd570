"""Start-up and per-command time: prints figures, asserts nothing.

For each command: the wall time and the CPU time (user + system, of the child process) of
`python -m capcliff ARGS`, the best and the median of `--repeats` runs (the best is the figure to
compare: on a shared machine the others only add other people's load); then the import time of
the CLI (`python -X importtime`: the cumulative microseconds of `capcliff.cli.main`, and the
largest packages under it).

Run: PYTHONPATH=. python benchmarks/startup.py [--repeats 5] [--plan]
(`--plan` adds the default `capcliff plan`, with the default workers, one and two: a few
seconds of CPU per run; the CPU counts the pool's workers too.)
"""

from __future__ import annotations

import argparse
import contextlib
import os
import resource
import statistics
import subprocess
import sys
import time

COMMANDS = {
    "capcliff --help": ["--help"],
    "capcliff plan --help": ["plan", "--help"],
    "capcliff memory (default, 8 GPUs, all layouts)": ["memory"],
    "capcliff memory deepseek-r1": ["memory", "deepseek-r1"],
}
PLAN = {
    "capcliff plan (the default)": ["plan"],
    "capcliff plan --jobs 1": ["plan", "--jobs", "1"],
    "capcliff plan --jobs 2": ["plan", "--jobs", "2"],
}


# The children write and reuse .pyc files, as an installed package has them (with
# PYTHONDONTWRITEBYTECODE set, every edited module would be compiled again on every run).
ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


def run_once(args: list[str]) -> tuple[float, float]:
    """(wall seconds, CPU seconds) of one `python -m capcliff ARGS`."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    command = [sys.executable, "-m", "capcliff", *args]
    subprocess.run(command, capture_output=True, check=True, env=ENV)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu


def import_times(module: str = "capcliff.cli.main", top: int = 8) -> tuple[int, list[str]]:
    """Cumulative import microseconds of `module`, and the `top` largest packages it pulls in
    (first-level imports of third-party packages and capcliff's own modules)."""
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", f"import {module}"],
        capture_output=True,
        text=True,
        check=True,
        env=ENV,
    )
    rows: dict[str, int] = {}
    for line in done.stderr.splitlines():
        parts = line.split("|")
        if len(parts) != 3 or not parts[1].strip().isdigit():
            continue
        name = parts[2].rstrip()
        cumulative = int(parts[1])
        rows[name.strip()] = max(rows.get(name.strip(), 0), cumulative)
    total = rows.get(module, 0)
    roots = {"numpy", "pydantic", "rich", "typer", "click", "pandas", "rich.markdown"}
    named = [n for n in rows if n in roots or (n.startswith("capcliff.") and n != module)]
    named.sort(key=lambda n: -rows[n])
    return total, [f"{n} {rows[n] / 1000:.0f} ms" for n in named[:top]]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--plan", action="store_true", help="also time the default plan")
    options = parser.parse_args()
    commands = COMMANDS | (PLAN if options.plan else {})
    print(f"{'command':48s} {'wall best/median':>18s} {'CPU best/median':>18s}")
    for label, args in commands.items():
        run_once(args)  # a warm-up run: the .pyc files written, the files in the page cache
        runs = [run_once(args) for _ in range(options.repeats)]
        walls, cpus = [w for w, _ in runs], [c for _, c in runs]
        wall = f"{min(walls):.2f} / {statistics.median(walls):.2f} s"
        cpu = f"{min(cpus):.2f} / {statistics.median(cpus):.2f} s"
        print(f"{label:48s} {wall:>18s} {cpu:>18s}")
    import_times()  # warm-up
    total, largest = import_times()
    print(f"import capcliff.cli.main: {total / 1000:.0f} ms ({', '.join(largest)})")
    with contextlib.suppress(OSError):  # no load average on this system
        print(f"load average (1 min): {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs")


if __name__ == "__main__":
    main()
