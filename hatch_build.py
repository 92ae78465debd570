"""Build hook: compile a copy of the simulator's event loop with mypyc, only when asked.

The default install (`pip install .`) builds a pure-Python wheel with hatchling alone: no
compiler, no mypy, nothing fetched at build time. Compiling is opt-in:

    CAPCLIFF_COMPILE=1 pip install .          # or: CAPCLIFF_COMPILE=1 pip install -e '.[dev]'
    python hatch_build.py                     # by hand, in place (needs mypy and setuptools)

Asked to compile, the build fails if it cannot (a build that was asked for a compiled core and
quietly shipped none would leave the compiled-versus-pure tests with nothing to compare).

The event loop (`capcliff.sim.core.CORE_MODULES`, module names in `CORE_PACKAGE`, dotted for a
module in a subpackage of it) stays pure Python; this copies those modules into
`capcliff/sim/_core/` (their imports of one another rewritten to point at the copies, and
`SOURCE_SHA256`, the digest of the sources, appended) and compiles the copies with mypyc. The
loader (`capcliff/sim/core.py`) uses them only while their digest matches the sources beside it.

The compiled modules are built into `capcliff/sim/_core/` of the source tree (git ignores them),
with `built.txt` recording what they were built from, so a second install from the same tree
reuses them instead of compiling again.

- A wheel (`CAPCLIFF_COMPILE=1 pip install .`): they are added to the wheel, which is then
  tagged for this platform.
- An editable install (`CAPCLIFF_COMPILE=1 pip install -e .`): the package imports them from the
  source tree.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import re
import shutil
import sys
import sysconfig
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent
CORE_DIR = Path("capcliff", "sim", "_core")
SWITCH = "CAPCLIFF_COMPILE"  # "1": compile the core (default: pure Python, nothing compiled)


def _core_settings() -> tuple[tuple[str, ...], str, str]:
    """(CORE_MODULES, CORE_PACKAGE, current source digest), read from capcliff/sim/core.py without
    importing the package (its dependencies need not be installed where the wheel is built)."""
    spec = importlib.util.spec_from_file_location("_capcliff_core", ROOT / "capcliff/sim/core.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return (
        tuple(module.CORE_MODULES),
        str(module.CORE_PACKAGE),
        str(module.source_digest(ROOT / "capcliff")),
    )


def _module_path(name: str) -> Path:
    """The file of core module `name` relative to its package: `replica.admission` is
    replica/admission.py."""
    return Path(*name.split(".")).with_suffix(".py")


def compile_core(out: Path) -> list[Path]:
    """Compile the core into `out` (as capcliff/sim/_core/*.so); returns the built files,
    relative to `out`. Raises on any failure."""
    from mypyc.build import mypycify  # imported here: only the build needs mypy
    from setuptools import Distribution

    modules, package, digest = _core_settings()
    alternatives = "|".join(re.escape(m) for m in sorted(modules, key=len, reverse=True))
    pattern = re.compile(re.escape(package) + r"\.(" + alternatives + r")\b")
    work = Path(tempfile.mkdtemp(prefix="capcliff-core-"))
    cwd = Path.cwd()
    try:
        shutil.copytree(
            ROOT / "capcliff",
            work / "capcliff",
            ignore=shutil.ignore_patterns("__pycache__", "_core"),
        )
        core = work / CORE_DIR
        core.mkdir()
        (core / "__init__.py").write_text('"""Compiled copies of the event loop."""\n')
        for name in modules:
            text = (ROOT / Path(*package.split(".")) / _module_path(name)).read_text()
            text = pattern.sub(r"capcliff.sim._core.\1", text)
            copy = core / _module_path(name)
            for folder in reversed(copy.relative_to(core).parents[:-1]):  # a subpackage's __init__
                (core / folder).mkdir(exist_ok=True)
                (core / folder / "__init__.py").touch()
            copy.write_text(f"{text}\nSOURCE_SHA256 = {digest!r}\n")
        os.chdir(work)
        paths = [str(CORE_DIR / _module_path(name)) for name in modules]
        options = ["--ignore-missing-imports", "--follow-imports=silent", "--python-version=3.11"]
        extensions = mypycify(
            options + paths, opt_level="3", group_name="capcliff.sim._core.native"
        )
        dist = Distribution({"name": "capcliff-core", "ext_modules": extensions})
        build = dist.get_command_obj("build_ext")
        build.build_lib = str(work / "lib")  # type: ignore[attr-defined]
        build.build_temp = str(work / "tmp")  # type: ignore[attr-defined]
        build.ensure_finalized()
        build.run()
        built = [p.relative_to(work / "lib") for p in (work / "lib").rglob("*") if p.is_file()]
        for rel in built:
            (out / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(work / "lib" / rel, out / rel)
        return built
    finally:
        os.chdir(cwd)
        shutil.rmtree(work, ignore_errors=True)


def _enabled() -> bool:
    """Whether this build was asked to compile the core (`CAPCLIFF_COMPILE=1`)."""
    return os.environ.get(SWITCH, "").strip().lower() in ("1", "true", "yes")


STAMP = CORE_DIR / "built.txt"  # what the in-place build was built from, then its files


def _stamp_key() -> str:
    """The sources' digest, this interpreter's extension suffix and this file's digest."""
    this = hashlib.sha256(Path(__file__).read_bytes()).hexdigest()
    return f"{_core_settings()[2]} {sysconfig.get_config_var('EXT_SUFFIX')} {this}"


def built_in_place() -> list[Path] | None:
    """The compiled files in the source tree if they were built from the current sources by this
    build script for this interpreter, else None (then they are built again)."""
    try:
        key, *files = (ROOT / STAMP).read_text().splitlines()
    except OSError:
        return None
    built = [Path(f) for f in files]
    if key != _stamp_key() or not built or not all((ROOT / f).is_file() for f in built):
        return None
    return built


def build_in_place() -> list[Path]:
    """Compile the core into the source tree unless it is there already; its files."""
    built = built_in_place()
    if built is None:
        built = compile_core(ROOT)
        lines = [_stamp_key(), *(p.as_posix() for p in built)]
        (ROOT / STAMP).write_text("\n".join(lines) + "\n")
    return built


try:
    from hatchling.builders.hooks.plugin.interface import BuildHookInterface
except ImportError:  # run by hand, outside a build
    BuildHookInterface = object  # type: ignore[assignment,misc]


class CoreBuildHook(BuildHookInterface):  # type: ignore[misc,valid-type]
    """Asked to (`CAPCLIFF_COMPILE=1`), builds the compiled core in the source tree (once: a
    second install from the tree reuses it) and adds it to a wheel; an editable install imports
    it from the tree. Not asked, it does nothing and the wheel is pure Python."""

    PLUGIN_NAME = "custom"

    def dependencies(self) -> list[str]:
        if not _enabled() or built_in_place() is not None:
            return []
        # numpy: the core's annotations name its array types (it is installed to run anyway)
        return ["mypy>=1.10", "setuptools>=61", "numpy>=1.26"]

    def initialize(self, version: str, build_data: dict[str, Any]) -> None:
        if self.target_name != "wheel" or not _enabled():
            return
        try:
            built = build_in_place()
        except SystemExit as exc:  # mypyc exits on a compile error: say so, and fail the build
            raise RuntimeError(f"capcliff: {SWITCH}=1 but mypyc failed ({exc!r})") from exc
        if version != "editable":
            for rel in built:
                build_data["force_include"][str(ROOT / rel)] = rel.as_posix()
            build_data["pure_python"] = False
            build_data["infer_tag"] = True
        self.app.display_info(f"capcliff: compiled simulator core: {len(built)} files")


if __name__ == "__main__":
    for path in build_in_place():
        sys.stdout.write(f"built {path}\n")
