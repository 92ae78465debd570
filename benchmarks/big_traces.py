"""Plans and sweeps of the largest traces the fuzz harness gives, timed: prints figures, asserts
nothing.

The cases of benchmarks/fuzz_cases12.py (`big12`): 100,000 and 10,000 single-turn sessions of
50 / 20 tokens, 10 ms apart (`_sessions`), and the same rows as a plain request trace, each run
as `python -m capcliff ...` with the pure-Python event loop (`CAPCLIFF_SIM_CORE=python`), in
CPU seconds of the child (user + system: steady on a shared machine), best of `--runs` (3).
Target: well under 20 s each (the harness counts a command over 20 s as a hang); < 12 s.

Run: PYTHONPATH=. python benchmarks/big_traces.py [--runs N] [NAME ...]
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

from sglang_plans import cpu_seconds, runs_and_names

PLAN = "plan llama-3.1-8b --gpus 1 --jobs 1 --workload"
CASES = {
    "plan-100k-sessions": (PLAN, "sessions", 100_000),
    "plan-10k-sessions": (PLAN, "sessions", 10_000),
    "sweep-100k-sessions": ("sweep llama-3.1-8b --concurrency 4 --workload", "sessions", 100_000),
    "plan-10k-requests": (PLAN, "requests", 10_000),
}


def trace_text(kind: str, n: int) -> str:
    """n rows of 50 / 20 tokens 10 ms apart: single-turn sessions (the fuzz case's) or requests."""
    session = kind == "sessions"
    return "".join(
        json.dumps(
            ({"session_id": f"s{i}", "turn": 0} if session else {})
            | {"input_tokens": 50, "output_tokens": 20, "arrival_s": i * 0.01}
        )
        + "\n"
        for i in range(n)
    )


def main() -> None:
    runs_each, names = runs_and_names(__doc__.splitlines()[0], CASES)
    with tempfile.TemporaryDirectory() as folder:
        for name in names:
            command, kind, n = CASES[name]
            trace = Path(folder) / f"{kind}-{n}.jsonl"
            if not trace.exists():
                trace.write_text(trace_text(kind, n))
            args = [*command.split(), str(trace)]
            times = [cpu_seconds(args, jobs=False) for _ in range(runs_each)]
            runs = ", ".join(f"{t:.1f}" for t in times)
            print(f"{name:20s} best {min(times):5.1f} s CPU  ({runs})")


if __name__ == "__main__":
    main()
