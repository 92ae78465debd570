"""Mutation testing of the core packages: how many small planted bugs do the tests catch?

Not part of CI (it runs the tests once per mutant). For each package it lists every mutation site
inside a function body, draws a random sample of them, plants each one in turn and runs only the
test files that call the mutated function (found once by a recorded baseline run, below). A
mutant is *killed* when a test fails (or the run exceeds its time limit) and *survives* when
every test still passes; a mutant in a function that no test calls survives without a run. It
prints the kill rate per package and every survivor (file:line, function, mutation).

Mutations (one at a time): a comparison flipped (`<` <-> `<=`, `>` <-> `>=`, `==` <-> `!=`,
`is` <-> `is not`, `in` <-> `not in`), an arithmetic operator swapped (`+` <-> `-`, `*` <-> `/`,
`//` -> `*`, and the same in `+=`/`-=`), an integer constant off by one (n -> n + 1 and n -> n - 1),
`min` <-> `max`, a `not` dropped, `and` <-> `or`. Not mutated: module- and class-level
statements (constants, dataclass fields), default argument values, docstrings, annotations,
`assert` statements, `raise` statements and f-strings (error-message text).

How: one worker process per package imports capcliff and the tests once; a mutant is compiled
from the module's AST and its function's code object is swapped into the live function
(`__code__`), so every reference to the function, however imported, runs the mutant (one under a
functools cache is patched beneath it, and the cache emptied before and after each run, so no
result cached by the original code hides the mutant's). The test modules are re-imported for
every run (module-level values are recomputed with the mutant), and Hypothesis keeps no example
database between runs (derandomized, no deadline). Tests that already fail without any mutant are
deselected.

Test selection (coverage-based, as mutmut and Stryker do it): the baseline runs every test file
that imports capcliff.analysis, check or cli (the only layers that can reach an analysis
function; for memory/sim/perf, every test file) with each of the package's functions
instrumented to record its callers (a call recorded at the function's entry, nested functions
and comprehensions included in their enclosing function): the test whose own call phase called
it, or the whole file when the call came from importing the file or from a fixture's setup or
teardown (a fixture's value may be shared by other tests), or when the file holds a functools
cache (a test may reuse what another test computed). A mutant can only change a test whose run
calls the mutated function, so each mutant runs those tests and files only (every case of a
parametrized test), fastest first, stopping at the first failure; a test that reads state
another test left behind in some other way would be missed. The record is cached per test file
(in the system's temp directory, keyed by the content of capcliff/, the tests' helpers and the
file), so a rerun after adding a test file runs only that file. A mutant's time limit is three
times the baseline time of what it runs plus --limit-s; a mutant past it is counted as killed
(a timeout, as mutmut and Stryker count it: an endless loop is a caught bug), in its own column.
A pytest usage or internal error (exit code 3 or 4) gives no verdict: the mutant is skipped.

Run (2 shared cores: keep it niced, and size the sample to the time you have):
    nice -n 19 python benchmarks/mutation.py --sample 40 --budget-s 840
    nice -n 19 python benchmarks/mutation.py --packages sim --sample 10 --seed 3
    nice -n 19 python benchmarks/mutation.py --packages analysis --seed 7 --skip 12  # resume
"""

from __future__ import annotations

import argparse
import ast
import copy
import hashlib
import importlib
import json
import os
import random
import resource
import signal
import subprocess
import sys
import tempfile
import time
import types
from collections import defaultdict
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent

# The layers that can call a package's functions (layering: catalog -> memory -> perf/calibrate ->
# sim -> analysis -> check -> cli); a test file that imports none of them cannot reach one.
_REACHING = {
    "analysis": ("capcliff.analysis", "capcliff.check", "capcliff.cli", "capcliff.__main__"),
}
_CACHE = Path(tempfile.gettempdir()) / "capcliff-mutation"
_RECORD_FORMAT = "3"  # FileRecord's fields and what is instrumented; a new one: every record stale


def candidate_tests(package: str) -> list[str]:
    """The test files whose run could call one of the package's functions."""
    reaching = _REACHING.get(package.split(".")[0])
    return [
        str(path.relative_to(ROOT))
        for path in sorted((ROOT / "tests").glob("test_*.py"))
        if reaching is None or any(r in path.read_text() for r in reaching)
    ]


def _digest(*paths: Path) -> str:
    h = hashlib.sha256()
    for path in paths:
        h.update(str(path.relative_to(ROOT)).encode() + b"\0" + path.read_bytes() + b"\0")
    return h.hexdigest()[:16]


def _tree_digest() -> str:
    """capcliff's sources and the tests' shared helpers (conftest, simtools, ...)."""
    helpers = [p for p in (ROOT / "tests").glob("*.py") if not p.name.startswith("test_")]
    return _RECORD_FORMAT + _digest(*sorted((ROOT / "capcliff").rglob("*.py")), *sorted(helpers))


@dataclass
class FileRecord:
    """One test file's baseline: its digest, run time (s), failing tests, the functions it
    called ("module:qualname") outside any test's own call (importing the file, fixtures' setup
    and teardown), and those each test called in its call, with the test's time (s)."""

    digest: str
    seconds: float
    failing: list[str]
    calls: list[str]
    tests: dict[str, list[str]]
    test_seconds: dict[str, float]

    def select(self, name: str, path: str) -> list[tuple[str, float]]:
        """(file or test node id, seconds) to run for a mutant of function `name`: the whole
        file when it calls the function outside a test's own call, or when a test may reuse
        what another computed (a functools cache in the file); else the tests that call it."""
        whole = name in self.calls or (
            ("cache" in (text := (ROOT / path).read_text()) and "functools" in text)
            and any(name in c for c in self.tests.values())
        )
        if whole:
            return [(path, self.seconds)]
        # a parametrized test's every case (a case's id may not parse back on a command line)
        chosen: dict[str, float] = defaultdict(float)
        for test, called in self.tests.items():
            if name in called:
                chosen[test.split("[")[0]] += self.test_seconds[test]
        return list(chosen.items())


_COMPARE_SWAP: dict[type[ast.cmpop], type[ast.cmpop]] = {
    ast.Lt: ast.LtE,
    ast.LtE: ast.Lt,
    ast.Gt: ast.GtE,
    ast.GtE: ast.Gt,
    ast.Eq: ast.NotEq,
    ast.NotEq: ast.Eq,
    ast.Is: ast.IsNot,
    ast.IsNot: ast.Is,
    ast.In: ast.NotIn,
    ast.NotIn: ast.In,
}
_BINOP_SWAP: dict[type[ast.operator], type[ast.operator]] = {
    ast.Add: ast.Sub,
    ast.Sub: ast.Add,
    ast.Mult: ast.Div,
    ast.Div: ast.Mult,
    ast.FloorDiv: ast.Mult,
}
_MINMAX = ("min", "max")
_SYMBOL = {
    ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">=", ast.Eq: "==", ast.NotEq: "!=",
    ast.Is: "is", ast.IsNot: "is not", ast.In: "in", ast.NotIn: "not in", ast.Add: "+",
    ast.Sub: "-", ast.Mult: "*", ast.Div: "/", ast.FloorDiv: "//", ast.And: "and", ast.Or: "or",
}  # fmt: skip


@dataclass(frozen=True)
class Site:
    """One mutation: where (module file, function, line) and what."""

    package: str
    path: str  # relative to the repository root
    module: str
    qualname: str  # of the enclosing top-level function or method
    line: int
    kind: str  # compare, binop, augassign, int, minmax, not, boolop
    index: int  # the node's position in ast.walk order over the module
    detail: str  # the mutation in words, e.g. "< -> <="
    variant: int = 0  # for int constants: +1 (0) or -1 (1)


@dataclass(frozen=True)
class Outcome:
    """What the tests did with one mutant."""

    site: Site
    status: str  # killed, survived, timeout, skipped
    seconds: float
    note: str = ""


def _skip_ids(func: ast.AST) -> set[int]:
    """Nodes inside a function that are not mutated: docstrings, annotations, default values,
    asserts, raises, f-strings."""
    skip: set[int] = set()

    def mark(node: ast.AST | None) -> None:
        if node is not None:
            skip.update(id(n) for n in ast.walk(node))

    for node in ast.walk(func):
        if isinstance(node, (ast.Assert, ast.Raise, ast.JoinedStr)):
            mark(node)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            for arg in (*node.args.args, *node.args.kwonlyargs, *node.args.posonlyargs):
                mark(arg.annotation)
            for default in (*node.args.defaults, *node.args.kw_defaults):
                mark(default)  # evaluated once, at definition: a new code object leaves it
            mark(node.returns)
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                mark(body[0])
        elif isinstance(node, ast.AnnAssign):
            mark(node.annotation)
    return skip


def _functions(tree: ast.Module) -> Iterator[tuple[str, ast.AST]]:
    """(qualname, node) of every function or method defined at module or class level."""

    def walk(body: list[ast.stmt], prefix: str) -> Iterator[tuple[str, ast.AST]]:
        for node in body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                yield prefix + node.name, node
            elif isinstance(node, ast.ClassDef):
                yield from walk(node.body, f"{prefix}{node.name}.")

    yield from walk(tree.body, "")


def _site_details(node: ast.AST) -> list[tuple[str, str, int]]:
    """(kind, detail, variant) of each mutation `node` admits."""
    if isinstance(node, ast.Compare):
        return [
            ("compare", f"{_SYMBOL[type(op)]} -> {_SYMBOL[_COMPARE_SWAP[type(op)]]}", k)
            for k, op in enumerate(node.ops)
            if type(op) in _COMPARE_SWAP
        ]
    if isinstance(node, ast.BinOp) and type(node.op) in _BINOP_SWAP:
        return [("binop", f"{_SYMBOL[type(node.op)]} -> {_SYMBOL[_BINOP_SWAP[type(node.op)]]}", 0)]
    if isinstance(node, ast.AugAssign) and type(node.op) in (ast.Add, ast.Sub):
        new = _BINOP_SWAP[type(node.op)]
        return [("augassign", f"{_SYMBOL[type(node.op)]}= -> {_SYMBOL[new]}=", 0)]
    if isinstance(node, ast.Constant) and type(node.value) is int:
        n = node.value
        return [("int", f"{n} -> {n + 1}", 0), ("int", f"{n} -> {n - 1}", 1)]
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in _MINMAX:
        other = "max" if node.func.id == "min" else "min"
        return [("minmax", f"{node.func.id} -> {other}", 0)]
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        return [("not", "not x -> x", 0)]
    if isinstance(node, ast.BoolOp):
        other = ast.Or if isinstance(node.op, ast.And) else ast.And
        return [("boolop", f"{_SYMBOL[type(node.op)]} -> {_SYMBOL[other]}", 0)]
    return []


def sites_of(package: str) -> list[Site]:
    """Every mutation site in the package's modules, its subpackages' included (function bodies
    only); `package` may name a subpackage ("sim.loop")."""
    found: list[Site] = []
    for path in sorted((ROOT / "capcliff" / package.replace(".", "/")).rglob("*.py")):
        if path.name == "__init__.py":
            continue
        tree = ast.parse(path.read_text(), filename=str(path))
        order = {id(n): k for k, n in enumerate(ast.walk(tree))}
        module = ".".join(path.relative_to(ROOT).with_suffix("").parts)
        for qualname, func in _functions(tree):
            skip = _skip_ids(func)
            for node in ast.walk(func):
                if id(node) in skip:
                    continue
                for kind, detail, variant in _site_details(node):
                    found.append(
                        Site(
                            package, str(path.relative_to(ROOT)), module, qualname,
                            getattr(node, "lineno", func.lineno), kind, order[id(node)], detail,
                            variant,
                        )
                    )  # fmt: skip
    return found


def _mutate(tree: ast.Module, site: Site) -> ast.Module:
    """A copy of `tree` with `site` planted."""
    mutant = copy.deepcopy(tree)
    node = next(n for k, n in enumerate(ast.walk(mutant)) if k == site.index)
    if site.kind == "compare":
        assert isinstance(node, ast.Compare)
        node.ops[site.variant] = _COMPARE_SWAP[type(node.ops[site.variant])]()
    elif site.kind == "binop":
        assert isinstance(node, ast.BinOp)
        node.op = _BINOP_SWAP[type(node.op)]()
    elif site.kind == "augassign":
        assert isinstance(node, ast.AugAssign)
        node.op = _BINOP_SWAP[type(node.op)]()
    elif site.kind == "int":
        assert isinstance(node, ast.Constant)
        node.value = node.value + (1 if site.variant == 0 else -1)
    elif site.kind == "minmax":
        assert isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
        node.func.id = "max" if node.func.id == "min" else "min"
    elif site.kind == "not":
        assert isinstance(node, ast.UnaryOp)
        _replace(mutant, node, node.operand)
    elif site.kind == "boolop":
        assert isinstance(node, ast.BoolOp)
        node.op = ast.Or() if isinstance(node.op, ast.And) else ast.And()
    return ast.fix_missing_locations(mutant)


def _replace(tree: ast.AST, old: ast.AST, new: ast.AST) -> None:
    """Put `new` where `old` is in its parent."""
    for parent in ast.walk(tree):
        for field, value in ast.iter_fields(parent):
            if value is old:
                setattr(parent, field, new)
                return
            if isinstance(value, list):
                for k, item in enumerate(value):
                    if item is old:
                        value[k] = new
                        return


def _code_named(code: types.CodeType, qualname: str) -> types.CodeType | None:
    """The code object for `qualname` among `code`'s constants, depth first."""
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            if const.co_qualname == qualname:
                return const
            inner = _code_named(const, qualname)
            if inner is not None:
                return inner
    return None


def _live_function(module: types.ModuleType, qualname: str) -> types.FunctionType | None:
    """The function object the module holds under `qualname` (unwrapping properties,
    static/class methods and cached properties)."""
    obj: object = module
    for part in qualname.split("."):
        holder = obj
        obj = vars(holder).get(part) if isinstance(holder, type) else getattr(holder, part, None)
        if obj is None:
            return None
    for attr in ("fget", "__func__", "func", "__wrapped__"):  # __wrapped__: a functools cache
        if not isinstance(obj, types.FunctionType) and hasattr(obj, attr):
            obj = getattr(obj, attr)
    while isinstance(obj, types.FunctionType) and obj.__code__.co_qualname != qualname:
        wrapped = getattr(obj, "__wrapped__", None)  # a decorator that kept the original
        if wrapped is None:
            return None
        obj = wrapped
    return obj if isinstance(obj, types.FunctionType) else None


def _clear_cache(module: types.ModuleType, qualname: str) -> None:
    """Empty the functools cache (`lru_cache`, `cache`) that wraps the function, if one does:
    results the original code (or an earlier mutant) cached would hide a mutant's."""
    obj: object = module
    for part in qualname.split("."):
        obj = vars(obj).get(part) if isinstance(obj, type) else getattr(obj, part, None)
    clear = getattr(obj, "cache_clear", None)
    if callable(clear):
        clear()


def clear_caches() -> None:
    """Empty every functools cache (`lru_cache`, `cache`) of the loaded capcliff modules, so
    that a mutant's run depends on no mutant before it. `_clear_cache` empties the mutated
    function's own cache only; a cached caller kept what the mutant made it return (a mutant
    of `_parse_histogram` left `parse_output_lengths` holding its answer), and the tests of the
    mutants after it in the same worker read it: a verdict that depended on the order the
    mutants ran in (tests/test_mutation_caches.py)."""
    for name, module in list(sys.modules.items()):
        if (name != "capcliff" and not name.startswith("capcliff.")) or module is None:
            continue
        for value in list(vars(module).values()):
            holders = [value, *vars(value).values()] if isinstance(value, type) else [value]
            for obj in holders:
                clear = getattr(obj, "cache_clear", None)
                if callable(clear) and getattr(obj, "__module__", None) == name:
                    clear()


class _TimeoutError(Exception):
    """A mutant ran past its time limit (an endless loop counts as caught)."""


def _on_alarm(signum: int, frame: object) -> None:
    raise _TimeoutError


_HIT = "__mutation_hit__"  # the recorder's name in an instrumented module's globals


def _instrument(
    package: str, record: Callable[[str], None]
) -> list[tuple[types.FunctionType, types.CodeType]]:
    """Swap every function of the package for a copy that calls record("module:qualname") on
    entry; returns (function, original code) pairs to restore."""
    swapped = []
    for path in sorted((ROOT / "capcliff" / package.replace(".", "/")).rglob("*.py")):
        if path.name == "__init__.py":
            continue
        name = ".".join(path.relative_to(ROOT).with_suffix("").parts)
        module = importlib.import_module(name)
        tree = ast.parse(path.read_text(), filename=str(path))
        qualnames = []
        for qualname, func in _functions(tree):
            assert isinstance(func, (ast.FunctionDef, ast.AsyncFunctionDef))
            body = func.body
            first = body[0]
            at = int(isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant))
            call = ast.parse(f"{_HIT}({f'{name}:{qualname}'!r})").body[0]
            for node in ast.walk(call):
                ast.copy_location(node, body[min(at, len(body) - 1)])
            body.insert(at, call)
            qualnames.append(qualname)
        code = compile(ast.fix_missing_locations(tree), str(path), "exec")
        vars(module)[_HIT] = record
        for qualname in qualnames:
            new = _code_named(code, qualname)
            live = _live_function(module, qualname)
            if (
                new is not None
                and live is not None
                and new.co_freevars == live.__code__.co_freevars
            ):
                swapped.append((live, live.__code__))
                live.__code__ = new
                _clear_cache(module, qualname)  # a cached call would record no caller
    return swapped


class _Recorder:
    """A pytest plugin: which test file is running (its collection included), for how long,
    which of its tests fail, and which instrumented functions it calls."""

    def __init__(self) -> None:
        self.current = ""
        self.since = time.monotonic()
        self.seconds: dict[str, float] = defaultdict(float)
        self.calls: dict[str, set[str]] = defaultdict(set)
        self.failing: dict[str, set[str]] = defaultdict(set)
        self.test = ""  # the node id of the test in its call phase, else ""
        self.tests: dict[str, dict[str, set[str]]] = defaultdict(lambda: defaultdict(set))
        self.test_seconds: dict[str, dict[str, float]] = defaultdict(lambda: defaultdict(float))

    def hit(self, name: str) -> None:
        if self.test:
            self.tests[self.current][self.test].add(name)
        else:
            self.calls[self.current].add(name)

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_call(self, item: Any) -> None:
        self.test = item.nodeid
        self.tests[self.current][self.test]

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_teardown(self, item: Any) -> None:
        self.test = ""

    def _switch(self, path: Path | None) -> None:
        now = time.monotonic()
        self.seconds[self.current] += now - self.since
        self.since = now
        self.current = "" if path is None else str(Path(path).relative_to(ROOT))

    def pytest_collectstart(self, collector: Any) -> None:
        if isinstance(collector, pytest.Module):
            self._switch(collector.path)

    def pytest_runtest_protocol(self, item: Any, nextitem: Any) -> None:
        self._switch(item.path)

    def pytest_runtest_logreport(self, report: Any) -> None:
        self.test = ""
        self.test_seconds[report.nodeid.split("::")[0]][report.nodeid] += report.duration
        if report.failed:
            self.failing[report.nodeid.split("::")[0]].add(report.nodeid)

    def pytest_collectreport(self, report: Any) -> None:
        if report.failed:
            self.failing[report.nodeid.split("::")[0]].add(report.nodeid)

    def pytest_sessionfinish(self) -> None:
        self._switch(None)


def _run_tests(files: list[str], deselect: list[str], plugins: list[object], stop: bool) -> int:
    """Run the test files or node ids in this process (test modules re-imported); pytest's exit
    code."""
    for name in [m for m in sys.modules if m == "tests" or m.startswith(("tests.", "conftest"))]:
        del sys.modules[name]
    args = ["-q", "-p", "no:cacheprovider", "-p", "no:randomly", "--no-header"]
    args += [a for d in deselect for a in ("--deselect", d)]
    args += ["-x"] if stop else []
    return int(pytest.main([*args, *files], plugins=plugins))


def baseline(package: str) -> tuple[dict[str, FileRecord], float, int]:
    """Each candidate test file's record (run now where the cache is stale), the seconds the
    run took and how many files it ran."""
    tree = _tree_digest()
    cache = _CACHE / f"{package}.json"
    cached = json.loads(cache.read_text()) if cache.exists() else {}
    files = candidate_tests(package)
    digests = {
        f: hashlib.sha256((tree + _digest(ROOT / f)).encode()).hexdigest()[:16] for f in files
    }
    stale = [f for f in files if cached.get(f, {}).get("digest") != digests[f]]
    started = time.monotonic()
    if stale:
        recorder = _Recorder()
        swapped = _instrument(package, recorder.hit)
        try:
            _run_tests(stale, [], [recorder], stop=False)
        finally:
            for function, code in swapped:
                function.__code__ = code
        for f in stale:
            record = FileRecord(
                digests[f],
                recorder.seconds[f],
                sorted(recorder.failing[f]),
                sorted(recorder.calls[f]),
                {t: sorted(c) for t, c in recorder.tests[f].items()},
                dict(recorder.test_seconds[f]),
            )
            cached[f] = asdict(record)
        cache.parent.mkdir(parents=True, exist_ok=True)
        cache.write_text(json.dumps(cached, indent=0))
    return {f: FileRecord(**cached[f]) for f in files}, time.monotonic() - started, len(stale)


WORKER_MEMORY_BYTES = 4 << 30  # set: the address space a worker may use


def worker(package: str, site_json: str, out_path: str, limit_s: float) -> None:
    """Plant each site in turn and run the tests that call it (one process, imports kept)."""
    os.chdir(ROOT)
    sys.path.insert(0, str(ROOT))
    # A mutant that loops while it allocates grew ~100 MB/s to 6 GB on a shared machine before its
    # time limit: past WORKER_MEMORY_BYTES it fails with MemoryError, a caught bug as a timeout is.
    resource.setrlimit(resource.RLIMIT_AS, (WORKER_MEMORY_BYTES, WORKER_MEMORY_BYTES))
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 1)  # pytest's report would drown the results; they go to out_path
    os.dup2(devnull, 2)
    from hypothesis import settings

    settings.register_profile("mutation", database=None, derandomize=True, deadline=None)
    settings.load_profile("mutation")
    sites = [Site(**s) for s in json.loads(Path(site_json).read_text())]
    records, baseline_s, rerun = baseline(package)
    deselect = [t for r in records.values() for t in r.failing]
    signal.signal(signal.SIGALRM, _on_alarm)
    with open(out_path, "a") as out:
        head = {"baseline_s": baseline_s, "files": len(records), "rerun": rerun}
        out.write(json.dumps({**head, "deselected": deselect}) + "\n")
        out.flush()
        for site in sites:
            name = f"{site.module}:{site.qualname}"
            chosen = sorted(
                (item for f in records for item in records[f].select(name, f)), key=lambda i: i[1]
            )
            limit = limit_s + 3 * sum(seconds for _, seconds in chosen)
            outcome = _try(site, [item for item, _ in chosen], deselect, limit)
            out.write(json.dumps(asdict(outcome)) + "\n")
            out.flush()


def _try(site: Site, files: list[str], deselect: list[str], limit_s: float) -> Outcome:
    """Plant `site`, run the tests, restore the original code."""
    module = importlib.import_module(site.module)
    path = ROOT / site.path
    tree = ast.parse(path.read_text(), filename=str(path))
    code = compile(_mutate(tree, site), str(path), "exec")
    new = _code_named(code, site.qualname)
    live = _live_function(module, site.qualname)
    if new is None or live is None or new.co_freevars != live.__code__.co_freevars:
        return Outcome(site, "skipped", 0.0, "function not reachable for patching")
    if not files:
        return Outcome(site, "survived", 0.0, "no test calls this function")
    original = live.__code__
    live.__code__ = new
    clear_caches()  # what the original code (or an earlier mutant) cached would hide this one
    started = time.monotonic()
    status, note = "survived", f"{len(files)} test files or tests"
    signal.setitimer(signal.ITIMER_REAL, limit_s)
    try:
        code = _run_tests(files, deselect, [], stop=True)
        if code in (3, 4):  # pytest's internal or usage error: no verdict
            status, note = "skipped", f"pytest exit code {code}"
        elif code not in (0, 5):  # 5: every test deselected (none ran), not a failure
            # the alarm raised inside a test reads as that test's failure
            timed_out = time.monotonic() - started >= limit_s
            status = "timeout" if timed_out else "killed"
    except _TimeoutError:
        status = "timeout"
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        live.__code__ = original
        clear_caches()  # what the mutant cached goes with it, in its callers' caches too
    return Outcome(site, status, time.monotonic() - started, note)


def _source_line(site: Site) -> str:
    return (ROOT / site.path).read_text().splitlines()[site.line - 1].strip()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--packages", default="memory,sim,analysis")
    parser.add_argument("--sample", type=int, default=40, help="mutants per package")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--budget-s", type=float, default=840.0, help="for all packages")
    parser.add_argument(
        "--limit-s", type=float, default=30.0, help="per mutant, on top of 3x its files' baseline"
    )
    parser.add_argument(
        "--skip", type=int, default=0,
        help="leave out each sample's first N mutants (to resume a run its budget cut short)",
    )  # fmt: skip
    parser.add_argument("--json", help="write every outcome here")
    parser.add_argument("--worker", nargs=3, metavar=("PACKAGE", "SITES", "OUT"))
    args = parser.parse_args()
    if args.worker:
        worker(*args.worker, limit_s=args.limit_s)
        return
    packages = args.packages.split(",")
    rng = random.Random(args.seed)
    deadline = time.monotonic() + args.budget_s
    outcomes: list[Outcome] = []
    totals: dict[str, int] = {}
    for k, package in enumerate(packages):
        every = sites_of(package)
        totals[package] = len(every)
        chosen = rng.sample(every, min(args.sample, len(every)))[args.skip :]
        outcomes += _run_package(package, chosen, deadline, len(packages) - k, args.limit_s)
    _print(outcomes, totals)
    if args.json:
        Path(args.json).write_text(json.dumps([asdict(o) for o in outcomes], indent=1))


def _run_package(
    package: str, chosen: list[Site], deadline: float, packages_left: int, limit_s: float
) -> list[Outcome]:
    """Run one package's sample in a worker until its share of the time budget is spent. A
    worker that dies before its share is spent (a mutant looping while it allocates meets
    WORKER_MEMORY_BYTES in numpy's C code, which ends the process rather than raising) counts
    the mutant it was running as a timeout, a caught bug, and a new worker takes the rest."""
    end = time.monotonic() + (deadline - time.monotonic()) / packages_left
    done: list[Outcome] = []
    while len(done) < len(chosen) and time.monotonic() < end:
        left = chosen[len(done) :]
        ran, finished = _run_worker(package, left, end, limit_s, first=not done)
        done.extend(ran or [])
        if finished or ran is None or len(ran) == len(left) or time.monotonic() >= end:
            break  # None: it died before its baseline ran, so no mutant is to blame
        done.append(Outcome(left[len(ran)], "timeout", 0.0, "the worker died (memory limit)"))
    if len(done) < len(chosen):
        print(f"{package}: time budget spent after {len(done)} of {len(chosen)} mutants")
    return done


def _run_worker(
    package: str, sites: list[Site], end: float, limit_s: float, *, first: bool
) -> tuple[list[Outcome] | None, bool]:
    """(the outcomes a worker over `sites` recorded by monotonic time `end`, None if it recorded
    not even its baseline; whether it exited normally)."""
    tmp = Path(tempfile.mkdtemp())
    (tmp / "sites.json").write_text(json.dumps([asdict(s) for s in sites]))
    out = tmp / "out.jsonl"
    cmd = [sys.executable, __file__, "--limit-s", str(limit_s), "--worker", package,
           str(tmp / "sites.json"), str(out)]  # fmt: skip
    proc = subprocess.Popen(cmd)
    try:
        proc.wait(timeout=max(end - time.monotonic(), 1.0))
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
        return _recorded(out, package, first), True  # the budget, not the mutant, ended it
    return _recorded(out, package, first), proc.returncode == 0


def _recorded(out: Path, package: str, first: bool) -> list[Outcome] | None:
    """The outcomes a worker wrote to `out` (its first line: the baseline, printed once); None
    without that line."""
    lines = out.read_text().splitlines() if out.exists() else []
    if not lines:
        return None
    if first:
        head = json.loads(lines[0])
        print(
            f"{package}: baseline {head['baseline_s']:.1f} s ({head['rerun']} of {head['files']} "
            f"candidate test files run, the rest cached); deselected {head['deselected']}"
        )
    done = []
    for line in lines[1:]:
        raw = json.loads(line)
        done.append(Outcome(Site(**raw.pop("site")), **raw))
    return done


def _print(outcomes: list[Outcome], totals: dict[str, int]) -> None:
    print()
    print(f"{'package':10} {'sites':>6} {'run':>5} {'killed':>7} {'timeout':>8} {'survived':>9} "
          f"{'skipped':>8} {'kill rate':>10}")  # fmt: skip
    for package, total in totals.items():
        mine = [o for o in outcomes if o.site.package == package]
        count = {s: sum(o.status == s for o in mine) for s in ("killed", "timeout", "survived")}
        skipped = sum(o.status == "skipped" for o in mine)
        tried = count["killed"] + count["timeout"] + count["survived"]
        rate = (count["killed"] + count["timeout"]) / tried if tried else float("nan")
        print(f"{package:10} {total:6} {tried:5} {count['killed']:7} {count['timeout']:8} "
              f"{count['survived']:9} {skipped:8} {rate:10.0%}")  # fmt: skip
    survivors = [o for o in outcomes if o.status == "survived"]
    if survivors:
        print("\nsurvivors:")
        for o in sorted(survivors, key=lambda o: (o.site.path, o.site.line)):
            s = o.site
            uncalled = " (no test calls it)" if o.note.startswith("no test") else ""
            print(f"  {s.path}:{s.line} {s.qualname}: {s.detail}{uncalled}   | {_source_line(s)}")


if __name__ == "__main__":
    main()
