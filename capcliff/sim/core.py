"""Which event loop simulates a replica: the pure-Python one, or its compiled copy.

The simulator's event loop (the modules in `CORE_MODULES`) is plain Python, and that source is the
reference. Asked to (`CAPCLIFF_COMPILE=1 pip install .`, or `python hatch_build.py`), the install
compiles a copy of those modules with mypyc (`hatch_build.py`; the default install compiles
nothing): the copy lives in `capcliff.sim._core` (a separately named package, so a compiled module
never shadows the source it came from) and runs the same code, about three times faster. Nothing
depends on it: a missing or stale build falls back to the pure-Python loop with the same results,
bit for bit.

The group holds the replica's loop and the classes built on it for two-pool and attention-DP runs
(`LandedReplicaSim`, `PrefillReplicaSim`, `LockstepSim`): mypyc lets no interpreted class subclass
a compiled one, and a compiled `LockstepSim` takes only compiled ranks, so a simulation takes all
its classes from the loaders below (`replica_class`, `landed_class`, `prefill_class`,
`lockstep_class`), which hand out one core or the other.

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
    from capcliff.sim.loop.landed import LandedReplicaSim
    from capcliff.sim.loop.lockstep import LockstepSim
    from capcliff.sim.loop.prefill_pool import PrefillReplicaSim
    from capcliff.sim.loop.replica import ReplicaSim

# The modules of the event loop that are compiled together (their imports of one another point
# at the compiled copies). `hatch_build.py` reads this tuple.
CORE_MODULES = (
    "admission",
    "admit_step",
    "balance",
    "clients",
    "cohort",
    "exclusive_prefill",
    "fast_forward",
    "head",
    "landed",
    "lockstep",
    "prefill_only",
    "prefill_pool",
    "replica",
    "state",
    "step_plan",
    "thrash",
    "timeline",
    "victims",
)
CORE_PACKAGE = "capcliff.sim.loop"  # where the event loop's sources live
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


def _loop_module(name: str) -> ModuleType:
    """Core module `name`: its compiled copy when current (and not switched off), else the
    source. A compiled class takes only compiled ones where it names another core class (a rank
    of a compiled `LockstepSim` is a compiled `ReplicaSim`), so callers take every class of one
    simulation from here."""
    compiled = _compiled()
    package = CORE_PACKAGE if compiled is None else COMPILED_PACKAGE
    return importlib.import_module(f"{package}.{name}")


def replica_class() -> type[ReplicaSim]:
    """The `ReplicaSim` class to simulate plain replicas with: the compiled copy when it is
    current, else `capcliff.sim.loop.replica.ReplicaSim` (same results either way)."""
    cls: type[ReplicaSim] = _loop_module("replica").ReplicaSim
    return cls


def landed_class() -> type[LandedReplicaSim]:
    """`capcliff.sim.loop.landed.LandedReplicaSim` (a decode pool's replica), compiled when
    current."""
    cls: type[LandedReplicaSim] = _loop_module("landed").LandedReplicaSim
    return cls


def prefill_class() -> type[PrefillReplicaSim]:
    """`capcliff.sim.loop.prefill_pool.PrefillReplicaSim` (a prefill pool's replica), compiled when
    current."""
    cls: type[PrefillReplicaSim] = _loop_module("prefill_pool").PrefillReplicaSim
    return cls


def lockstep_class() -> type[LockstepSim]:
    """`capcliff.sim.loop.lockstep.LockstepSim` (attention-DP ranks on one clock), compiled when
    current; its ranks must be of the same core (`replica_class`, `landed_class` called with it)."""
    cls: type[LockstepSim] = _loop_module("lockstep").LockstepSim
    return cls
