"""Valid input through the CLI: every catalog model, GPU and engine (issue 23's other half).

    PYTHONPATH=. python benchmarks/valid_matrix.py [--seed 0] [--sample 150] [--jobs 1]
        [--no-memory] [--no-sample] [--show 60]

The bad-input campaigns (`fuzz_surfaces.py`, `fuzz_cases*.py`) mutate a handful of valid inputs;
this one runs valid input only, each command in a child process (a fork of this warm interpreter,
or with `--spawn` a fresh `python -m capcliff`; `CAPCLIFF_SIM_CORE=python`, `nice`, killed past
60 CPU s or 600 s wall):

- the memory matrix: `memory` for every model x GPU x engine (vllm, sglang, trtllm) x `--gpus`
  1, 2, 8, then at 8 GPUs `--kv-cache-dtype fp8` and each `--quantization` the model can take;
- a seeded sample of `plan` and `sweep` over models x GPUs x engines x workloads (fixed lengths
  including reasoning outputs of 16k-32k and prompts of 64k-128k, the presets, lognormal
  outputs) with `--speculative`, `--offload`, `--disagg`, `--rate` / `--slo-*`,
  `--arrival batch` and `--format json` drawn at random; small `--num-requests`, `--jobs 1`.

Each outcome is classed:

- ok: exit 0 (or 1 for a failed check) with sane output;
- refused: exit 2 with one `error:` line (listed with its message: valid input must be answered,
  not refused, unless no engine could run it, e.g. TensorRT-LLM on AMD);
- crash: a traceback, exit 4 or any other exit code, or exit 2 with other than one line;
- slow: past 20 CPU seconds (user + sys of the child; what the fuzz harness counts as a hang);
  hang: killed past 60 CPU seconds (or 600 s of wall time);
- nonsense: exit 0 with NaN or inf, a negative byte count, rate, time or token count, a fraction
  above 1 or a percentage above 100, output throughput past the compute roofline (each output
  token costs at least 2 x active parameters FLOPs, at the GPU's fastest dense rate) or a layout
  that 'fits' with weights per GPU above the GPU's memory.

Prints a table of outcomes per command, then each failing command with its first problem. Nothing
is asserted (tests/test_valid_matrix.py holds the regressions).
"""

from __future__ import annotations

import argparse
import collections
import json
import math
import os
import random
import re
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ["CAPCLIFF_SIM_CORE"] = "python"  # before capcliff is imported: forks inherit it

import capcliff.cli  # noqa: E402, F401  (imported once here, so that each fork starts warm)
from capcliff.catalog.catalogs import get_model, hardware_catalog, model_catalog  # noqa: E402
from capcliff.memory.params import param_count  # noqa: E402

ENGINES = ("vllm", "sglang", "trtllm")
MEMORY_GPUS = (1, 2, 8)
CPU_LIMIT_S = 20.0  # the fuzz harness's hang limit, CPU seconds of the child
# a child is killed past 60 CPU seconds, or 600 s of wall time (the cores are shared: wall time
# runs several times the CPU time under load, so the limit that classes is the CPU one)
KILL_CPU_S = 60.0
WALL_LIMIT_S = 600.0
PRESETS = ("reasoning", "chat", "chat-short", "multiturn-chat", "agentic")
ISLS = (128, 1000, 4000, 65536, 131072)
OSLS = ("1", "200", "1000", "16384", "32768", "lognormal:2000:8000")
# a keyed figure whose name says it can never be below zero
NON_NEGATIVE = re.compile(
    r"(bytes|_s$|_s_|rps|tok|tokens|concurrency|throughput|makespan|usd|gpus)"
)
FRACTION = re.compile(r"(fraction|utilization|hit_rate|share)$")
TEXT_NONSENSE = re.compile(
    r"(?<![\w.-])-?(nan|inf)(?![\w])|(?<![\w.])-\d[\d,.]*\s*(GB|GiB|tok|req|s\b)", re.I
)
PERCENT = re.compile(r"(?<![±+\-\d.])(\d[\d,]*(?:\.\d+)?)\s?%")


@dataclass
class Result:
    argv: list[str]
    group: str
    kind: str
    code: int | None
    cpu_s: float
    detail: str


def memory_cases() -> Iterator[tuple[str, list[str]]]:
    """Every model x GPU x engine x --gpus, then fp8 KV and each other quantization at 8 GPUs."""
    for model in sorted(model_catalog()):
        shipped = get_model(model).arch.linear_dtype.value
        # a bf16 checkpoint served quantized: fp8 on every GPU, int4 (AWQ/GPTQ) and nvfp4 too
        quant = ["fp8", "int4", "nvfp4"] if shipped == "bf16" else []
        for gpu in sorted(hardware_catalog()):
            for engine in ENGINES:
                base = ["memory", model, "--gpu", gpu, "--engine", engine, "--format", "json"]
                for gpus in MEMORY_GPUS:
                    yield "memory", [*base, "--gpus", str(gpus)]
                yield "memory kv-fp8", [*base, "--gpus", "8", "--kv-cache-dtype", "fp8"]
                for q in quant:
                    yield f"memory {q}", [*base, "--gpus", "8", "--quantization", q]


def _workload(rng: random.Random) -> list[str]:
    pick = rng.random()
    if pick < 0.25:
        return ["--workload", rng.choice(PRESETS)]
    if pick < 0.45:  # reasoning-length outputs
        return [
            "--isl",
            str(rng.choice((256, 1000, 2000))),
            "--osl",
            rng.choice(("16384", "32768")),
        ]
    if pick < 0.6:  # long prompts
        return ["--isl", str(rng.choice((65536, 131072))), "--osl", rng.choice(("200", "1000"))]
    return ["--isl", str(rng.choice(ISLS)), "--osl", rng.choice(OSLS)]


def _plan_extras(rng: random.Random) -> list[str]:
    extras: list[str] = []
    roll = rng.random()
    if roll < 0.15:
        extras += ["--arrival", "batch"]
    elif roll < 0.35:
        extras += ["--rate", str(rng.choice((0.5, 2, 10)))]
    if rng.random() < 0.3:
        ttft, tpot = rng.choice((1, 5, 30)), rng.choice((0.05, 0.2))
        extras += ["--slo-ttft", str(ttft), "--slo-tpot", str(tpot)]
    if rng.random() < 0.12:
        extras += ["--disagg"]
    return extras


def _sweep_extras(rng: random.Random) -> list[str]:
    extras: list[str] = []
    roll = rng.random()
    if roll < 0.15:
        extras += ["--rate", str(rng.choice((1, 5)))]
    elif roll < 0.3:
        extras += ["--clients", str(rng.choice((8, 64)))]
    if rng.random() < 0.1:
        extras += ["--disagg", "1p:tp4,1d:tp4"]
    return extras


def _extras(rng: random.Random, command: str, model: str) -> list[str]:
    extras: list[str] = []
    if rng.random() < 0.2:
        mtp = "deepseek-r1" in model and "distill" not in model
        extras += ["--speculative", "mtp:2" if mtp else rng.choice(("eagle:3", "ngram:4"))]
    if rng.random() < 0.15:
        extras += ["--offload", rng.choice(("cpu:256GiB", "cpu:512GiB,nvme:2TiB"))]
    if rng.random() < 0.15:
        extras += ["--kv-cache-dtype", "fp8"]
    extras += _plan_extras(rng) if command == "plan" else _sweep_extras(rng)
    if rng.random() < 0.5:
        extras += ["--format", "json"]
    return extras


def sample_cases(seed: int, count: int) -> Iterator[tuple[str, list[str]]]:
    """`count` plan and sweep commands drawn with `seed` over models, GPUs, engines, workloads."""
    rng = random.Random(seed)
    models, gpus = sorted(model_catalog()), sorted(hardware_catalog())
    for _ in range(count):
        command = rng.choice(("plan", "sweep"))
        model, gpu, engine = rng.choice(models), rng.choice(gpus), rng.choice(ENGINES)
        argv = [command, model, "--gpu", gpu, "--engine", engine, *_workload(rng)]
        if command == "plan":
            argv += ["--num-requests", "100", "--jobs", "1"]
            if rng.random() < 0.5:
                argv += ["--gpus", "8"]
        else:
            argv += [
                "--num-requests",
                "200",
                "--concurrency",
                rng.choice(("16,64", "32..512", "8")),
            ]
        extras = _extras(rng, command, model)
        if command == "sweep" and "--gpus" not in extras and rng.random() < 0.4:
            named = ["--layout", rng.choice(("tp8", "tp4", "tp2", "dp2-tp4"))]
            extras += [] if "--disagg" in extras else named  # --disagg names the pools' own
        yield command, argv + extras


def _numbers(node: object, key: str = "") -> Iterator[tuple[str, float]]:
    if isinstance(node, dict):
        for k, v in node.items():
            yield from _numbers(v, str(k))
    elif isinstance(node, list):
        for v in node:
            yield from _numbers(v, key)
    elif isinstance(node, (int, float)) and not isinstance(node, bool):
        yield key, float(node)


def _json_problem(data: object) -> str | None:
    for key, value in _numbers(data):
        if not math.isfinite(value):
            return f"{key} = {value}"
        if value < 0 and NON_NEGATIVE.search(key) and not key.endswith("gain"):
            return f"{key} = {value} < 0"
        if FRACTION.search(key) and value > 1 + 1e-9 and "gpu_memory" not in key:
            return f"{key} = {value} > 1"
    return None


def _peak_flops(gpu: str) -> float:
    spec = hardware_catalog()[gpu]
    return max(f for f in (spec.dense_flops_per_s(d) for d in ("bf16", "fp8", "fp4")) if f)


def _roofline_problem(argv: list[str], data: dict[str, object]) -> str | None:
    """Output tokens/s per GPU above peak FLOPs / (2 x active parameters)."""
    model, gpu = argv[1], argv[argv.index("--gpu") + 1]
    if model not in model_catalog() or gpu not in hardware_catalog():
        return None
    limit = _peak_flops(gpu) / (2 * param_count(get_model(model).arch).active)
    for lay in data.get("layouts") or []:
        if not isinstance(lay, dict):
            continue
        per_replica = int(lay.get("tp") or 1) * int(lay.get("pp") or 1)
        cap = lay.get("capacity") or {}
        tok_s = cap.get("output_tok_s") if isinstance(cap, dict) else None
        if isinstance(tok_s, (int, float)) and tok_s / per_replica > limit:
            per_gpu = tok_s / per_replica
            return f"{lay.get('name')}: {per_gpu:.0f} output tok/s a GPU > roofline {limit:.0f}"
    return None


def _fit_problem(data: dict[str, object]) -> str | None:
    """A layout that fits with more weights per GPU than the GPU holds."""
    total = None
    for lay in data.get("layouts") or []:
        if not isinstance(lay, dict) or not lay.get("fits"):
            continue
        for stage in lay.get("stages") or []:
            total = stage.get("total_memory_bytes")
            if total and (stage.get("weights_bytes") or 0) > total:
                weights = stage["weights_bytes"]
                return f"{lay.get('name')} fits with weights {weights} B > {total} B a GPU"
        if (
            total
            and int(lay.get("tp") or 1) * int(lay.get("pp") or 1) * int(lay.get("dp") or 1) > 0
            and (lay.get("kv_capacity_tokens_per_replica") or 1) <= 0
        ):
            return f"{lay.get('name')} fits with no KV tokens"
    return None


def _text_problem(text: str) -> str | None:
    match = TEXT_NONSENSE.search(text)
    if match:
        start = max(0, match.start() - 40)
        return "text: " + text[start : match.end() + 20].replace("\n", " ")
    for match in PERCENT.finditer(text):
        if float(match.group(1).replace(",", "")) > 100:
            start = max(0, match.start() - 60)
            return "text: " + text[start : match.end()].replace("\n", " ")
    return None


def output_problem(argv: list[str], stdout: str) -> str | None:
    """The first nonsense in an exit-0 answer, or None."""
    if "--format" in argv and argv[argv.index("--format") + 1] == "json":
        try:
            data = json.loads(stdout)
        except ValueError as exc:
            return f"not JSON: {exc}"
        if not isinstance(data, dict):
            return None
        return _json_problem(data) or _fit_problem(data) or _roofline_problem(argv, data)
    return _text_problem(stdout)


@dataclass
class _Running:
    group: str
    argv: list[str]
    pid: int
    folder: str
    started: float


def _child(argv: list[str], folder: str) -> None:
    """In a forked child of the warm parent: run the CLI with its output in `folder`, then exit."""
    os.chdir(folder)
    os.dup2(os.open("out", os.O_WRONLY | os.O_CREAT | os.O_TRUNC), 1)
    os.dup2(os.open("err", os.O_WRONLY | os.O_CREAT | os.O_TRUNC), 2)
    os.nice(10)
    code = 97
    try:
        from capcliff.cli import main

        code = main(argv)
    except BaseException:  # every escape is a finding
        import traceback

        sys.stderr.write("Traceback (escaped main)\n" + traceback.format_exc())
        code = 97
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code if 0 <= code < 256 else 96)


def _start(group: str, argv: list[str], *, spawn: bool) -> _Running:
    folder = tempfile.mkdtemp(prefix="valid_matrix_")
    if spawn:  # a fresh `python -m capcliff`, as a user runs it
        env = {**os.environ, "CAPCLIFF_SIM_CORE": "python", "PYTHONPATH": str(ROOT)}
        with open(Path(folder) / "out", "w") as out, open(Path(folder) / "err", "w") as err:
            proc = subprocess.Popen(
                ["nice", "-n", "10", sys.executable, "-m", "capcliff", *argv],
                stdout=out, stderr=err, cwd=folder, env=env,
            )  # fmt: skip
        pid = proc.pid
        _SPAWNED[pid] = proc  # held, so that Popen's reaper never waits on it first
    else:
        pid = os.fork()
        if pid == 0:
            _child(argv, folder)
    return _Running(group, argv, pid, folder, time.monotonic())


_SPAWNED: dict[int, subprocess.Popen[bytes]] = {}


def _finish(run: _Running, status: int | None, cpu_s: float) -> Result:
    out, err = (Path(run.folder) / name for name in ("out", "err"))
    stdout = out.read_text(errors="replace") if out.exists() else ""
    stderr = err.read_text(errors="replace") if err.exists() else ""
    shutil.rmtree(run.folder, ignore_errors=True)
    proc = _SPAWNED.pop(run.pid, None)
    if proc is not None:
        proc.returncode = status if status is not None else -9
    if status is None:
        why = f"killed past {KILL_CPU_S:.0f} CPU s or {WALL_LIMIT_S:.0f} s wall"
        return Result(run.argv, run.group, "hang", None, cpu_s, why)
    return classify(run.group, run.argv, os.waitstatus_to_exitcode(status), cpu_s, stdout, stderr)


def _cpu_s(pid: int) -> float:
    """CPU seconds a running child has used (Linux /proc; 0 when unreadable)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError):
        return 0.0


def run_all(cases: list[tuple[str, list[str]]], *, jobs: int, spawn: bool) -> list[Result]:
    """Every case, `jobs` at a time, each killed past the wall limit."""
    pending, running, results = list(reversed(cases)), [], []
    while pending or running:
        while pending and len(running) < jobs:
            running.append(_start(*pending.pop(), spawn=spawn))
        for run in list(running):
            pid, status, usage = os.wait4(run.pid, os.WNOHANG)
            if pid:
                results.append(_finish(run, status, usage.ru_utime + usage.ru_stime))
            elif time.monotonic() - run.started > WALL_LIMIT_S or _cpu_s(run.pid) > KILL_CPU_S:
                os.kill(run.pid, signal.SIGKILL)
                _, _, usage = os.wait4(run.pid, 0)
                results.append(_finish(run, None, usage.ru_utime + usage.ru_stime))
            else:
                continue
            running.remove(run)
        time.sleep(0.02)
    return results


def classify(
    group: str, argv: list[str], code: int, cpu_s: float, stdout: str, stderr: str
) -> Result:
    """The outcome class of one finished command."""
    lines = [line for line in stderr.splitlines() if line.strip()]
    errors = [line for line in lines if line.startswith("error")]
    if "Traceback" in stderr or "Traceback" in stdout or code not in (0, 1, 2):
        tail = lines[-1] if lines else ""
        return Result(argv, group, "crash", code, cpu_s, tail[:200])
    if code == 2:
        if len(errors) != 1:
            return Result(
                argv, group, "crash", code, cpu_s, f"exit 2 with {len(errors)} error lines"
            )
        return Result(argv, group, "refused", code, cpu_s, errors[0][:240])
    problem = output_problem(argv, stdout)
    if problem:
        return Result(argv, group, "nonsense", code, cpu_s, problem[:240])
    if cpu_s > CPU_LIMIT_S:
        return Result(argv, group, "slow", code, cpu_s, f"{cpu_s:.1f} CPU s")
    return Result(argv, group, "ok", code, cpu_s, "")


KINDS = ("ok", "refused", "crash", "hang", "slow", "nonsense")


def report(results: list[Result], show: int) -> None:
    counts: dict[str, collections.Counter[str]] = collections.defaultdict(collections.Counter)
    for r in results:
        counts[r.group][r.kind] += 1
        counts["all"][r.kind] += 1
    print(f"{'group':<16}" + "".join(f"{k:>10}" for k in KINDS) + f"{'cases':>8}")
    for group in sorted(counts, key=lambda g: (g == "all", g)):
        row = counts[group]
        print(f"{group:<16}" + "".join(f"{row[k]:>10}" for k in KINDS) + f"{sum(row.values()):>8}")
    cpu = sorted(r.cpu_s for r in results)
    if cpu:
        median, total = cpu[len(cpu) // 2], sum(cpu)
        print(f"CPU s per case: median {median:.1f}, max {cpu[-1]:.1f}, total {total:.0f}")
    failing = [r for r in results if r.kind != "ok"]
    # refusals with one message are listed once, with how many commands gave it
    by_message: dict[str, list[Result]] = collections.defaultdict(list)
    for r in failing:
        key = re.sub(r"\d[\d,.]*", "N", r.detail) if r.kind == "refused" else f"{id(r)}"
        by_message[key].append(r)
    print()
    for group in list(by_message.values())[:show]:
        r = group[0]
        more = f"  (and {len(group) - 1} more like it)" if len(group) > 1 else ""
        print(f"[{r.kind}] exit {r.code}, {r.cpu_s:.1f} CPU s: {r.detail}{more}")
        print("    python -m capcliff " + shlex.join(r.argv))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--sample", type=int, default=150, help="plan and sweep commands to draw")
    parser.add_argument("--jobs", type=int, default=1, help="commands run at once")
    parser.add_argument(
        "--spawn", action="store_true",
        help="a fresh interpreter per command (default: a fork of this warm one, imports done)",
    )  # fmt: skip
    parser.add_argument("--no-memory", action="store_true", help="skip the memory matrix")
    parser.add_argument("--no-sample", action="store_true", help="skip the plan/sweep sample")
    parser.add_argument("--only", default="", help="run only commands whose text contains this")
    parser.add_argument("--show", type=int, default=80, help="failing commands to list")
    args = parser.parse_args()
    cases: list[tuple[str, list[str]]] = []
    if not args.no_memory:
        cases += list(memory_cases())
    if not args.no_sample:
        cases += list(sample_cases(args.seed, args.sample))
    cases = [c for c in cases if args.only in " ".join(c[1])]
    results = run_all(cases, jobs=max(1, args.jobs), spawn=args.spawn)
    report(results, args.show)


if __name__ == "__main__":
    main()
