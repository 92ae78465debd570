"""Plant the bug classes that issue 9 found the suite blind to, one at a time, and check that the
tests now catch each.

Each bug is a one-line edit (text -> text) in a copy of the working tree; the named tests run
against the copy and the bug counts as caught when one of them fails. An edit whose text is no
longer in the code is reported as "site gone" (update the list when the code moves). Not part of
CI; it runs the named test files once per bug (a few minutes in all).

Run: nice -n 19 python benchmarks/planted_bugs.py [NAME-SUBSTRING]
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FIGURES = ["tests/test_figures.py"]
SIMULATE = ["tests/test_simulate.py"]


@dataclass(frozen=True)
class Bug:
    """One planted bug: in `path`, `old` becomes `new`; `tests` should catch it."""

    bug_class: str
    name: str
    path: str
    old: str
    new: str
    tests: list[str]


BUGS = [
    Bug("percentiles", "p99 computed as p95", "capcliff/sim/result.py",
        "np.percentile(finite, [50, 90, 99])", "np.percentile(finite, [50, 90, 95])", FIGURES),
    Bug("percentiles", "sweep report prints p90 as p99", "capcliff/analysis/sweep/report.py",
        "_finite(getattr(stats, stat))",
        '_finite(getattr(stats, "p90" if stat == "p99" else stat))', FIGURES),
    Bug("percentiles", "plan's sweet spot reports TTFT p90 as p99",
        "capcliff/analysis/plan/batch.py",
        "ttft_p99_s=r.ttft.p99", "ttft_p99_s=r.ttft.p90", FIGURES),
    Bug("goodput", "goodput ignores TPOT", "capcliff/sim/result.py",
        "good = int(((self.ttft_s <= ttft_s) & (tpot <= tpot_s)).sum())",
        "good = int((self.ttft_s <= ttft_s).sum())", FIGURES),
    Bug("goodput", "goodput ignores TTFT", "capcliff/sim/result.py",
        "good = int(((self.ttft_s <= ttft_s) & (tpot <= tpot_s)).sum())",
        "good = int((tpot <= tpot_s).sum())", FIGURES),
    Bug("goodput", "SLO check ignores TPOT", "capcliff/analysis/evaluate/solver.py",
        "return ttft <= slo.ttft_s and tpot <= slo.tpot_s", "return ttft <= slo.ttft_s", FIGURES),
    Bug("KV utilisation", "mean KV from each run's last sample", "capcliff/sim/loop/timeline.py",
        "(first + last) / 2 * duration_s", "last * duration_s", FIGURES),
    Bug("KV utilisation", "mean KV is the fullest replica's", "capcliff/sim/result.py",
        "return float(np.mean(shares))", "return float(np.max(shares))", FIGURES),
    Bug("KV utilisation", "peak KV is the emptiest replica's", "capcliff/sim/result.py",
        "peak_kv_utilization=max(r.peak_used_blocks", "peak_kv_utilization=min(r.peak_used_blocks",
        FIGURES),
    Bug("HBM utilisation", "HBM utilisation over the effective bandwidth",
        "capcliff/sim/loop/replica.py",
        "Recorder(capacity.blocks, model.peak_bandwidth_bytes_per_s",
        "Recorder(capacity.blocks, model.bandwidth_bytes_per_s", FIGURES),
    Bug("HBM utilisation", "HBM utilisation summed over replicas", "capcliff/sim/result.py",
        "hbm / len(replicas)", "hbm", FIGURES),
    Bug("fits", "request fit counts the last token's KV", "capcliff/sim/simulate.py",
        "longest = requests.input_tokens + requests.output_tokens - 1",
        "longest = requests.input_tokens + requests.output_tokens", SIMULATE),
    Bug("fits", "request fit refuses a request exactly at capacity", "capcliff/sim/simulate.py",
        "if blocks > capacity.blocks:", "if blocks >= capacity.blocks:", SIMULATE),
    Bug("fits", "max_model_len fit refuses exactly the capacity",
        "capcliff/memory/layout_memory.py", "if tight.blocks < needed_blocks:",
        "if tight.blocks <= needed_blocks:",
        ["tests/test_fit.py"]),
    Bug("SGLang retraction", "retracts the most generated first", "capcliff/sim/loop/victims.py",
        "return min(candidates)[1]", "return max(candidates)[1]", SIMULATE),
    Bug("SGLang retraction", "ties retract the shortest prompt", "capcliff/sim/policies.py",
        "return generated_tokens, -prompt_tokens, -admit_seq",
        "return generated_tokens, prompt_tokens, -admit_seq",
        ["tests/test_scheduler.py", *SIMULATE]),
    Bug("SGLang retraction", "a request in prefill is never retracted while others decode",
        "capcliff/sim/loop/victims.py", "if (x := sim.partial) is not None:",
        "if (x := sim.partial) is not None and best is None:", SIMULATE),
    Bug("SGLang retraction", "the ratio is not restarted after a retraction",
        "capcliff/sim/loop/replica.py", "            self.ratio_steps = 0\n", "", SIMULATE),
    Bug("SGLang retraction", "the restarted ratio leaves out the retract steps",
        "capcliff/sim/policies.py", "(generated + self.retract_steps * running) / max_output",
        "(generated + running) / max_output", ["tests/test_scheduler.py"]),
    Bug("SGLang retraction", "the restarted ratio counts the prefilling request",
        "capcliff/sim/loop/replica.py",
        "running = len(self.running) - n", "running = len(self.running)",
        SIMULATE),
    Bug("SGLang retraction", "retracted requests are requeued at the front",
        "capcliff/sim/policies.py", "requeue=Requeue.BACK, whole_prompt_blocks=False",
        "requeue=Requeue.FRONT, whole_prompt_blocks=False", ["tests/test_scheduler.py"]),
    Bug("preemption", "vLLM preempts its earliest admission", "capcliff/sim/loop/victims.py",
        "return next(reversed(sim.running))", "return next(iter(sim.running))", SIMULATE),
]  # fmt: skip


def _copy_tree() -> Path:
    """The working tree without caches and git metadata, in a temporary directory."""
    dest = Path(tempfile.mkdtemp()) / "capcliff-planted"
    skip = shutil.ignore_patterns(
        ".git", "__pycache__", ".pytest_cache", ".mypy_cache", ".ruff_cache", ".hypothesis"
    )
    shutil.copytree(ROOT, dest, ignore=skip)
    return dest


def _passes(tests: list[str], tree: Path) -> bool:
    """Whether the test files pass in `tree`."""
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider", *tests],
        cwd=tree,
        capture_output=True,
        check=False,
    )
    return run.returncode == 0


def plant(bug: Bug, tree: Path) -> str:
    """caught, missed or site gone."""
    path = tree / bug.path
    original = path.read_text()
    if original.count(bug.old) != 1:
        return "site gone"
    path.write_text(original.replace(bug.old, bug.new))
    try:
        passed = _passes(bug.tests, tree)
    finally:
        path.write_text(original)
    return "missed" if passed else "caught"


def main() -> None:
    wanted = sys.argv[1] if len(sys.argv) > 1 else ""
    tree = _copy_tree()
    try:
        control = sorted({t for bug in BUGS for t in bug.tests})
        if not _passes(control, tree):  # a failure without any bug would read as "caught"
            sys.exit(f"the tests fail with no bug planted: {' '.join(control)}")
        results = []
        for bug in BUGS:
            if wanted not in bug.name:
                continue
            started = time.monotonic()
            verdict = plant(bug, tree)
            results.append((bug, verdict))
            print(f"{verdict:9} {time.monotonic() - started:5.1f} s  {bug.bug_class}: {bug.name}")
        caught = sum(v == "caught" for _, v in results)
        print(f"\n{caught} of {len(results)} planted bugs caught")
    finally:
        shutil.rmtree(tree.parent)


if __name__ == "__main__":
    main()
