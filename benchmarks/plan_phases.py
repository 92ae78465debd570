"""Where one `capcliff plan` command's CPU goes, by phase of the search: replica runs, requests
and event-loop CPU seconds (`vs_aiconfigurator.py --phases`' table, for any plan command).

Run: python benchmarks/plan_phases.py MODEL [plan options ...]
e.g. python benchmarks/plan_phases.py qwen3-30b-a3b --slo-ttft 2 --seed 1
(one worker, `--jobs 1`, added; the pure-Python event loop; prints figures, asserts nothing)

A phase is the innermost of `vs_aiconfigurator.PHASES`' functions running when a run starts
(nested ones joined by /); an attention-DP group's ranks stepping in lockstep are one run
(`dp_group.group_capacity`'s probes and verification).
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.vs_aiconfigurator import plan_phases


def main() -> None:
    plan = sys.argv[1:]
    if not plan or plan[0] in ("-h", "--help"):
        raise SystemExit(__doc__)
    plan_phases(f"capcliff plan {' '.join(plan)}", plan)


if __name__ == "__main__":
    main()
