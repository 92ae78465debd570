"""Runs bad-input cases through `capcliff.cli.main` in forked children and classifies them.

A case is a command line (paths as `{d}/name`, `{d}` the case's own folder), the files it needs
and whether its input is invalid. Each runs in a child forked from a warm parent (imports and
catalogs loaded once), with a wall-clock limit and a memory limit, and is classed as:

- traceback: an exit code other than 0, 1 or 2, or `Traceback` in the output;
- hang: past the time limit, or killed for memory (a blow-up);
- nonsense: exit 0 although the input is invalid, or an answer that prints a percentage of nan
  or inf (`NONSENSE_TEXT`, whatever the input), or one a case's own `answer` reading finds wrong;
- lost: an input file of the case changed or vanished;
- lines: exit 2 with other than one `error: ...` line (a check spec or baseline lists every
  problem, one `error: path: field: message` line each, by design: read these by hand), or with
  an error line past MAX_ERROR_LINE_CHARS (an input echoed whole is no line to read);
- ok: anything else.
"""

from __future__ import annotations

import collections
import hashlib
import os
import resource
import shutil
import signal
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

FileSpec = bytes | str | tuple[str, ...]
TIME_LIMIT_S = 20.0  # CPU seconds of the child: a hang (wall time is shared with other work)
WALL_LIMIT_S = 120.0
MEMORY_LIMIT_BYTES = 6 << 30
# figures no answer may print: a percentage or an error band of nan or inf
NONSENSE_TEXT = ("nan%", "inf%", "±nan", "±inf", "nan %", "inf %")
# an error line longer than this echoed the input whole (capcliff clips its lines at 1,000)
MAX_ERROR_LINE_CHARS = 2000


@dataclass
class Case:
    """One bad (or valid, `invalid=False`) input through the CLI."""

    surface: str
    name: str
    argv: list[str]
    files: dict[str, FileSpec] = field(default_factory=dict)
    invalid: bool | None = True  # None: either answer is fine, only crashes count
    setup: Callable[[Path], None] | None = None
    # environment for the child (a fresh interpreter, `python -m capcliff`, so that variables
    # read at start-up, such as PYTHONIOENCODING, apply); None: a fork of the warm parent
    env: dict[str, str] | None = None
    # files the case's --force is asked to replace (neither an input nor a model file): a
    # change to them is the answer, not a loss
    replaced: tuple[str, ...] = ()
    # a reading of the answer (standard output) of a run that exits 0: a problem it returns makes
    # the case nonsense (a valid input answered wrongly); None: the exit code is all
    answer: Callable[[str], str | None] | None = None


@dataclass
class Outcome:
    case: Case
    kind: str
    code: int | None
    seconds: float
    stderr: str
    stdout_tail: str
    stdout: str = ""  # the whole answer (for checks of its figures by a campaign)


def _make(folder: Path, files: dict[str, FileSpec]) -> None:
    for name, spec in files.items():
        path = folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(spec, tuple):
            if spec[0] == "dir":
                path.mkdir(exist_ok=True)
            elif spec[0] == "symlink":
                path.symlink_to(spec[1])
            elif spec[0] == "fifo":
                os.mkfifo(path)
            continue
        path.write_bytes(spec if isinstance(spec, bytes) else spec.encode("utf-8"))


def _digests(folder: Path) -> dict[str, str]:
    out = {}
    for path in sorted(folder.rglob("*")):
        if path.is_file() and not path.is_symlink() and path.stat().st_size < 50_000_000:
            out[str(path.relative_to(folder))] = hashlib.sha1(path.read_bytes()).hexdigest()
    return out


def _child(argv: list[str], folder: Path) -> None:
    os.chdir(folder)
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT_BYTES, MEMORY_LIMIT_BYTES))
    out = os.open(folder / ".stdout", os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
    err = os.open(folder / ".stderr", os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
    os.dup2(out, 1)
    os.dup2(err, 2)
    code = 99
    try:
        from capcliff.cli import main

        code = main(argv)
    except MemoryError:
        os.write(2, b"MemoryError (child)\n")
        code = 98
    except BaseException as exc:  # the classification wants every escape, SystemExit too
        import traceback

        os.write(2, ("Traceback (escaped main)\n" + traceback.format_exc()).encode())
        code = 97 if not isinstance(exc, SystemExit) else int(exc.code or 0)
    finally:
        import sys

        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code if 0 <= code < 256 else 96)


def _spawn(argv: list[str], folder: Path, env: dict[str, str]) -> int:
    """A fresh `python -m capcliff ARGV` in `folder` with `env` over this environment."""
    import subprocess
    import sys

    root = str(Path(__file__).resolve().parent.parent)
    full = {**os.environ, "PYTHONPATH": root, **env}
    full = {k: v for k, v in full.items() if v != "<unset>"}
    with open(folder / ".stdout", "wb") as out, open(folder / ".stderr", "wb") as err:
        proc = subprocess.Popen(
            [sys.executable, "-m", "capcliff", *argv], cwd=folder, env=full, stdout=out,
            stderr=err, preexec_fn=lambda: resource.setrlimit(
                resource.RLIMIT_AS, (MEMORY_LIMIT_BYTES, MEMORY_LIMIT_BYTES)),
        )  # fmt: skip
    _SPAWNED[proc.pid] = proc  # held, so that Popen's own reaper never waits on it first
    return proc.pid


_SPAWNED: dict[int, object] = {}


def _cpu_seconds(pid: int) -> float:
    """CPU seconds a running child has used (Linux /proc; 0 when unreadable)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError):
        return 0.0


def run_case(case: Case, root: Path) -> Outcome:
    """Run one case in a forked child (or a fresh interpreter, for a case's environment);
    classify it."""
    folder = Path(tempfile.mkdtemp(dir=root))
    _make(folder, case.files)
    if case.setup is not None:
        case.setup(folder)
    before = _digests(folder)
    argv = [a.replace("{d}", str(folder)) for a in case.argv]
    start = time.monotonic()
    if case.env is not None:
        pid = _spawn(argv, folder, case.env)
    else:
        pid = os.fork()
        if pid == 0:
            _child(argv, folder)
    code, kind, seconds = _wait(pid, start)
    err, out = (_read(folder / name) for name in (".stderr", ".stdout"))
    after = _digests(folder)
    lost = [k for k, v in before.items() if after.get(k) != v and k not in case.replaced]
    kind = kind or _classify(case, code, err, out, lost=bool(lost))
    problem = case.answer(out) if kind == "ok" and code == 0 and case.answer else None
    if problem:
        kind, err = "nonsense", err + f"\n[answer: {problem}]"
    if lost and kind != "lost":
        err += f"\n[lost: {lost}]"
    shutil.rmtree(folder, ignore_errors=True)
    return Outcome(case, kind, code, seconds, err, out[-300:], out)


def _reaped(pid: int, status: int) -> None:
    """Tell a spawned child's Popen that it was waited for (its own reaper must not wait)."""
    spawned = _SPAWNED.pop(pid, None)
    if spawned is not None:
        spawned.returncode = status  # type: ignore[attr-defined]


def _wait(pid: int, start: float) -> tuple[int | None, str, float]:
    """(exit code, "hang" or "", CPU seconds) of the child `pid`, killed past the limits."""
    while True:
        done, status, usage = os.wait4(pid, os.WNOHANG)
        if done:
            _reaped(pid, status)
            seconds = usage.ru_utime + usage.ru_stime
            if not os.WIFEXITED(status):
                return None, "hang", seconds  # killed by a signal: memory
            return os.WEXITSTATUS(status), "hang" if seconds > TIME_LIMIT_S else "", seconds
        cpu = _cpu_seconds(pid)
        if time.monotonic() - start > WALL_LIMIT_S or cpu > TIME_LIMIT_S:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            _reaped(pid, -9)
            # its CPU seconds, as for a child that finished (the wall time past WALL_LIMIT_S
            # was printed as "120.3 s CPU" for a child that had used a fraction of that)
            return None, "hang", cpu
        time.sleep(0.05)


def _read(path: Path) -> str:
    return path.read_text(errors="replace") if path.exists() else ""


def _classify(case: Case, code: int | None, err: str, out: str, *, lost: bool) -> str:
    """The class of a finished child (see the module docstring)."""
    if code in (96, 97, 98, 99) or code not in (0, 1, 2) or "Traceback" in err + out:
        return "traceback" if code != 98 else "hang"
    if lost:
        return "lost"
    if code == 0 and case.invalid:
        return "nonsense"
    if code == 0 and any(t in (err + out).lower() for t in NONSENSE_TEXT):
        return "nonsense"
    if code == 2 and not (err.startswith("error: ") and err.count("\n") == 1):
        return "lines"
    if code == 2 and len(err) > MAX_ERROR_LINE_CHARS:
        return "lines"
    if code == 2 and case.invalid is False:
        return "refused-valid"
    return "ok"


def run_all(cases: Sequence[Case], *, jobs: int = 2) -> list[Outcome]:
    """Every case, `jobs` at a time (each in its own forked child)."""
    import contextlib
    import io
    from concurrent.futures import ThreadPoolExecutor

    from capcliff.cli import main

    with contextlib.redirect_stdout(io.StringIO()):
        main(["memory", "llama-3.1-8b", "--gpus", "1", "--format", "json"])  # warm the catalogs
    root = Path(tempfile.mkdtemp(prefix="capcliff-fuzz-"))
    with ThreadPoolExecutor(jobs) as pool:
        outcomes = list(pool.map(lambda c: run_case(c, root), cases))
    shutil.rmtree(root, ignore_errors=True)
    return outcomes


def report(outcomes: Sequence[Outcome], *, show: int = 400) -> None:
    """Counts per surface and class; each finding on one line."""
    kinds = ("traceback", "hang", "nonsense", "lost", "lines", "refused-valid", "ok")
    table: dict[str, collections.Counter[str]] = collections.defaultdict(collections.Counter)
    for o in outcomes:
        table[o.case.surface][o.kind] += 1
    print(f"{'surface':<14}" + "".join(f"{k:>14}" for k in kinds) + f"{'cases':>8}")
    for surface, counts in sorted(table.items()):
        print(
            f"{surface:<14}"
            + "".join(f"{counts[k]:>14}" for k in kinds)
            + f"{sum(counts.values()):>8}"
        )
    total: collections.Counter[str] = sum(table.values(), collections.Counter())
    print(f"{'total':<14}" + "".join(f"{total[k]:>14}" for k in kinds) + f"{len(outcomes):>8}")
    shown = 0
    for o in outcomes:
        if o.kind == "ok" or shown >= show:
            continue
        shown += 1
        last = [ln for ln in o.stderr.strip().splitlines() if ln.strip()]
        tail = last[-1] if last else o.stdout_tail.strip().splitlines()[-1:] or [""]
        text = tail if isinstance(tail, str) else tail[0]
        name = f"{o.case.surface}/{o.case.name}"
        print(f"[{o.kind}] {name} rc={o.code} {o.seconds:.1f}s :: {text[:220]}")


def print_classes(
    outcomes: Sequence[Outcome],
    counts: dict[str, int],
    kind_of: Callable[[str], str | None],
    words: dict[tuple[str, str], Sequence[str]],
) -> None:
    """Count each outcome in its class (`kind_of` of its kind; an exit 2 whose first line misses
    a word its case needs is unclear) and print the counts, then one line per finding."""
    findings = []
    for o in outcomes:
        first = (o.stderr.strip().splitlines() or [""])[0]
        kind = kind_of(o.kind)
        need = words.get((o.case.surface, o.case.name), ())
        if kind is None and o.code == 2 and not all(w.lower() in first.lower() for w in need):
            kind = "unclear"
        if kind:
            counts[kind] += 1
            detail = (first or o.stderr.strip()[-300:])[:300]
            findings.append(f"{kind:<13} {o.case.surface}/{o.case.name}: {detail}")
    print(f"{len(outcomes)} cases: " + ", ".join(f"{k} {v}" for k, v in counts.items()))
    for line in findings:
        print(line)
