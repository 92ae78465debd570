"""Which event loop simulates a replica: the pure-Python one, or its compiled copy.

The simulator's event loop (the modules in `CORE_MODULES`) is plain Python, and that source is the
reference. Installing capcliff also tries to compile a copy of those modules with mypyc
(`hatch_build.py`): the copy lives in `capcliff.sim._core` (a separately named package, so a
compiled module never shadows the source it came from) and runs the same code, about three times
faster. Nothing depends on it: a missing, failed or stale build falls back to the pure-Python loop
with the same results, bit for bit.

The compiled copy is used only if it was built from the current source: every compiled module
carries `SOURCE_SHA256`, the digest of the package's sources it was built from (`source_digest`:
every capcliff module, since the types the loop was compiled against come from the modules it
imports too), and the loader compares it with the digest of the installed sources. An edited
source therefore runs as Python until the core is rebuilt (`python hatch_build.py`, or
reinstalling). The digest costs a few milliseconds, once per process.

`CAPCLIFF_SIM_CORE=python` in the environment forces the pure-Python loop.
"""

from __future__ import annotations

import hashlib
import importlib
import os
from functools import cache
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from capcliff.sim.replica import ReplicaSim

# The modules of the event loop that are compiled together (their imports of one another point
# at the compiled copies). `hatch_build.py` reads this tuple.
CORE_MODULES = (
    "admission",
    "admit_step",
    "clients",
    "cohort",
    "fast_forward",
    "prefill_only",
    "replica",
    "step_plan",
    "thrash",
    "timeline",
    "victims",
)
COMPILED_PACKAGE = "capcliff.sim._core"
ENV_SWITCH = "CAPCLIFF_SIM_CORE"  # "python": never load the compiled copy


def source_digest(package: Path | None = None) -> str:
    """SHA-256 over the paths and bytes of every Python source of the capcliff package in
    `package` (default: this one), less the compiled copies' folder."""
    package = package or Path(__file__).parent.parent
    h = hashlib.sha256()
    for rel, path in sorted((p.relative_to(package).as_posix(), p) for p in package.rglob("*.py")):
        if not rel.startswith("sim/_core/"):
            h.update(rel.encode() + b"\0")
            h.update(path.read_bytes())
    return h.hexdigest()


def load_compiled(package: str = COMPILED_PACKAGE, digest: str | None = None) -> ModuleType | None:
    """The compiled `replica` module of `package` if every compiled module imports and was built
    from sources with `digest` (default: the current sources); else None."""
    try:
        want = digest or source_digest()
        modules = [importlib.import_module(f"{package}.{name}") for name in CORE_MODULES]
    except (ImportError, OSError):
        return None
    if any(getattr(m, "SOURCE_SHA256", None) != want for m in modules):
        return None
    return modules[CORE_MODULES.index("replica")]


@cache
def _built() -> ModuleType | None:
    return load_compiled()


def _compiled() -> ModuleType | None:
    """The compiled `replica` module, unless the environment asks for pure Python (read on
    every call, so a test can switch it)."""
    if os.environ.get(ENV_SWITCH, "").lower() == "python":
        return None
    return _built()


def core_name() -> str:
    """'compiled' if replicas run the compiled event loop, else 'python'."""
    return "python" if _compiled() is None else "compiled"


def replica_class() -> type[ReplicaSim]:
    """The `ReplicaSim` class to simulate plain replicas with: the compiled copy when it is
    current, else `capcliff.sim.replica.ReplicaSim` (same results either way)."""
    compiled = _compiled()
    if compiled is not None:
        cls: type[ReplicaSim] = compiled.ReplicaSim
        return cls
    from capcliff.sim.replica import ReplicaSim

    return ReplicaSim
