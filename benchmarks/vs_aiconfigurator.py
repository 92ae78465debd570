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

Under the table, the floor: a process that starts the interpreter and imports only the
third-party libraries capcliff's command path runs on (numpy, pydantic, typer with the pydantic
adapters it builds each parameter's coercion from, rich's console), and nothing of capcliff; set
beside the CPU a 20 x speed-up allows (aiconfigurator's CPU / 20). What is left between the two is
all capcliff may spend, imports, models and simulation included, for 20 x.

`--phases` (no aiconfigurator needed) runs each capcliff question once in this process and prints
where its CPU goes: start-up (interpreter and imports, up to the command), then, per phase of
the search (the innermost of the functions in `PHASES` running when a replica's event loop
starts; nested ones joined by /), the replica runs started, the requests they were given, and
the CPU spent inside their event loops (`ReplicaSim.run_until`; an attention-DP group's ranks in
lockstep are one run, its CPU `LockstepSim.run`'s), then the rest of the command.
`benchmarks/plan_phases.py` prints the same table for any `capcliff plan` command.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import importlib
import io
import os
import re
import shutil
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).parent.parent
FLOOR = [sys.executable, "-c", "import numpy, pydantic, rich.console, typer, typer._adapters"]
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


# the functions that name a phase of `--phases`, by module (where each is defined)
PHASES = {
    "capcliff.analysis.evaluate.layout_capacity": ("coarse_capacity",),
    "capcliff.analysis.evaluate.capacity": ("sweep_point", "verified"),
    "capcliff.analysis.evaluate.rate_search": (
        "highest_rate", "highest_rate_above", "highest_rate_below", "_narrow",
    ),
    "capcliff.analysis.evaluate.dp_group": ("group_capacity",),
    "capcliff.analysis.plan.fleet": ("check_fleet",),
    "capcliff.analysis.evaluate.solver": ("sweep",),
    "capcliff.analysis.plan.batch": ("kv_aware_gain",),
}  # fmt: skip


@dataclass
class _Tally:
    """Replica runs, their requests and their event loops' CPU seconds, by phase."""

    stack: list[str]
    runs: Counter[str]
    requests: Counter[str]
    cpu_s: Counter[str]

    def phase(self, name: str, f: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(f)
        def inside(*args: Any, **kwargs: Any) -> Any:
            self.stack.append(name)
            try:
                return f(*args, **kwargs)
            finally:
                self.stack.pop()

        return inside


def _instrument(tally: _Tally) -> None:
    """Wrap every reference to the `PHASES` functions in capcliff's modules, and the replica's
    event loop, to count into `tally`."""
    for module, names in PHASES.items():
        for name in names:
            f = getattr(importlib.import_module(module), name)
            wrapped = tally.phase(name, f)
            for mod in [m for n, m in sys.modules.items() if n.startswith("capcliff")]:
                for attr, value in list(vars(mod).items()):
                    if value is f:
                        setattr(mod, attr, wrapped)
    from capcliff.sim.core import lockstep_class, replica_class

    cls, group = replica_class(), lockstep_class()
    init, run_until, group_init, group_run = cls.__init__, cls.run_until, group.__init__, group.run

    def started(sim: Any, requests: Any, *args: Any, **kwargs: Any) -> None:
        sim.phase = "/".join(tally.stack) or "other"
        tally.runs[sim.phase] += 1
        tally.requests[sim.phase] += len(requests)
        init(sim, requests, *args, **kwargs)

    def ran(sim: Any, done: int) -> None:
        start = time.process_time()
        run_until(sim, done)
        tally.cpu_s[sim.phase] += time.process_time() - start

    def grouped(sim: Any, ranks: Any, *args: Any, **kwargs: Any) -> None:
        sim.phase = "/".join(tally.stack) or "other"
        tally.runs[sim.phase] -= len(ranks) - 1  # its ranks, each counted as started: one run
        group_init(sim, ranks, *args, **kwargs)

    def ran_together(sim: Any) -> Any:
        start = time.process_time()
        try:
            return group_run(sim)
        finally:
            tally.cpu_s[sim.phase] += time.process_time() - start

    cls.__init__, cls.run_until = started, ran  # type: ignore[method-assign]
    group.__init__, group.run = grouped, ran_together  # type: ignore[method-assign]


def phases(index: int) -> None:
    """Where the `index`-th question's CPU goes, in this process (the module docstring's
    `--phases`)."""
    question, (command, _) = list(QUESTIONS.items())[index]
    plan_phases(question, command[command.index("plan") + 1 :])


def plan_phases(question: str, plan: list[str]) -> None:
    """Where `capcliff plan *plan`'s CPU goes, in this process, one worker (the module
    docstring's `--phases`), printed under `question`."""
    os.environ["CAPCLIFF_SIM_CORE"] = "python"
    # the command's own imports (lazy in the CLI), counted in the start-up
    import capcliff.analysis.plan.online
    import capcliff.cli.planning  # noqa: F401
    from capcliff.cli.main import main as capcliff_main

    imported = time.process_time()  # since the process started: the interpreter and imports
    tally = _Tally([], Counter(), Counter(), Counter())
    _instrument(tally)
    # one worker: a pool's runs would be in other processes, out of the tally
    sys.argv = ["capcliff", "plan", *plan, "--jobs", "1"]
    ran = time.process_time()
    with contextlib.redirect_stdout(io.StringIO()), contextlib.suppress(SystemExit):
        capcliff_main()
    end = time.process_time()
    loops = sum(tally.cpu_s.values())
    print(f"{question}: CPU {end:.2f} s; start-up (interpreter, imports) {imported:.2f} s; "
          f"event loops {loops:.2f} s; the rest {end - ran - loops:.2f} s")  # fmt: skip
    print("| phase | replica runs | requests | event-loop CPU s |\n|---|---:|---:|---:|")
    for phase in sorted(tally.runs, key=lambda p: -tally.cpu_s[p]):
        print(f"| {phase} | {tally.runs[phase]} | {tally.requests[phase]:,} | "
              f"{tally.cpu_s[phase]:.2f} |")  # fmt: skip
    print(
        f"| all | {sum(tally.runs.values())} | {sum(tally.requests.values()):,} | {loops:.2f} |\n"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3, help="runs of each command (best kept)")
    parser.add_argument("--phases", action="store_true", help="where capcliff's CPU goes")
    parser.add_argument("--phases-of", type=int, help=argparse.SUPPRESS)  # one, in this process
    args = parser.parse_args()
    if args.phases_of is not None:
        phases(args.phases_of)
        return
    if args.phases:  # each question in a fresh process, as a user runs it
        subprocess.run(
            [sys.executable, "-m", "compileall", "-q", str(ROOT / "capcliff")], check=True
        )
        for index in range(len(QUESTIONS)):
            env = {**os.environ, "PYTHONPATH": str(ROOT)}
            subprocess.run(
                [sys.executable, __file__, "--phases-of", str(index)], check=True, env=env
            )
        return
    if shutil.which("aiconfigurator") is None:
        raise SystemExit("needs the aiconfigurator command: pip install aiconfigurator")
    # as installed: bytecode next to the sources (read even where PYTHONDONTWRITEBYTECODE is set)
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(ROOT / "capcliff")], check=True)
    print(f"1-minute load average at the start: {os.getloadavg()[0]:.2f}\n")
    print("| question | capcliff CPU s (wall) | aiconfigurator CPU s (wall) | speed-up (CPU) |")
    print("|---|---:|---:|---:|")
    answers, aics = [], []
    for question, (ours, theirs) in QUESTIONS.items():
        mine, aic = best(ours, args.repeat), best(theirs, args.repeat)
        aics.append(aic)
        print(f"| {question} | {mine.cpu_s:.2f} ({mine.wall_s:.2f}) | "
              f"{aic.cpu_s:.2f} ({aic.wall_s:.2f}) | {aic.cpu_s / mine.cpu_s:.1f} x |")  # fmt: skip
        answers.append((question, capcliff_answer(mine.out), aic_answer(aic.out)))
    floor = best(FLOOR, args.repeat)
    least_aic = min(aic.cpu_s for aic in aics)
    print(f"\nfloor (interpreter + numpy, pydantic, typer, rich; no capcliff): "
          f"CPU {floor.cpu_s:.2f} s;"
          f" 20 x needs at most {least_aic / 20:.2f} s, leaving capcliff"
          f" {least_aic / 20 - floor.cpu_s:.2f} s for its own imports and work\n")  # fmt: skip
    for question, mine_says, aic_says in answers:
        print(f"{question}:\n  capcliff: {mine_says}\n  aiconfigurator: {aic_says}")


if __name__ == "__main__":
    main()
