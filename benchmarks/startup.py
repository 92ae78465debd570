"""Start-up and `capcliff memory` wall time: prints figures, asserts nothing.

Run: python benchmarks/startup.py
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import time

COMMANDS = {
    "capcliff --help": ["--help"],
    "capcliff memory (default, 8 GPUs, all layouts)": ["memory"],
    "capcliff memory deepseek-r1 --format json": ["memory", "deepseek-r1", "--format", "json"],
}


def wall_seconds(args: list[str], repeats: int = 5) -> float:
    """Median wall time of `python -m capcliff ARGS` over `repeats` runs."""
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        subprocess.run([sys.executable, "-m", "capcliff", *args], capture_output=True, check=True)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    for label, args in COMMANDS.items():
        print(f"{label:50s} {wall_seconds(args) * 1000:8.0f} ms (median of 5)")


if __name__ == "__main__":
    main()
