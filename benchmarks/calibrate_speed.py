"""How long `capcliff calibrate` takes on a 20-row benchmark file (target: under 2 s).

Run: python benchmarks/calibrate_speed.py   (prints seconds; asserts nothing)

The file: DeepSeek-R1 on 8 x H200, TP8, SGLang, 1,024/1,024 tokens, 20 concurrencies from 1 to
256 (measurements are placeholders: the fit's cost does not depend on their values). The command
runs in a fresh interpreter, as a user runs it, five times; the median and the range are printed
with the process's CPU time (the machine is shared, so wall time varies with load).
"""

from __future__ import annotations

import csv
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).parent.parent
CONCURRENCIES = (1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64, 96, 128, 160, 192, 224, 256, 5, 10)


def _write_file(path: Path) -> None:
    with path.open("w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(
            ["row_id", "concurrency", "input_len", "output_len", "output_throughput_tok_s",
             "mean_tpot_ms"]
        )  # fmt: skip
        for i, c in enumerate(CONCURRENCIES):
            writer.writerow([f"S{i}", c, 1024, 1024, round(100 * c**0.7, 1), 8 + 0.2 * c])


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        bench = Path(tmp) / "bench.csv"
        _write_file(bench)
        command = [sys.executable, "-m", "capcliff", "calibrate", str(bench), "--model",
                   "deepseek-r1", "--gpu", "h200-sxm", "--gpus", "8", "--layout", "tp8",
                   "--engine", "sglang"]  # fmt: skip
        walls, cpus = [], []
        for _ in range(5):
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            start = time.perf_counter()
            subprocess.run(command, cwd=ROOT, check=True, capture_output=True)
            walls.append(time.perf_counter() - start)
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            cpus.append(after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime)
    print(f"capcliff calibrate, {len(CONCURRENCIES)}-row CSV (40 simulations):")
    print(f"  wall {statistics.median(walls):.2f} s (range {min(walls):.2f}-{max(walls):.2f})")
    print(f"  CPU  {statistics.median(cpus):.2f} s (range {min(cpus):.2f}-{max(cpus):.2f})")


if __name__ == "__main__":
    main()
