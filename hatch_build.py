"""Build hook: compile a copy of the simulator's event loop with mypyc, if it can be done.

The event loop (`capcliff.sim.core.CORE_MODULES`) stays pure Python; this copies those modules
into `capcliff/sim/_core/` (their imports of one another rewritten to point at the copies, and
`SOURCE_SHA256`, the digest of the sources, appended) and compiles the copies with mypyc. The
loader (`capcliff/sim/core.py`) uses them only while their digest matches the sources beside it.

Nothing may fail because of it: any error (no compiler, no mypy, a module mypyc cannot compile)
leaves the pure-Python loop in place and the install goes on. `CAPCLIFF_BUILD_CORE=0` skips it.

The compiled modules are built into `capcliff/sim/_core/` of the source tree (git ignores them),
with `built.txt` recording what they were built from, so a second install from the same tree
(CI's `pip install .` then `pip install -e .`) reuses them instead of compiling again.

- A wheel (`pip install .`): they are added to the wheel, which is then tagged for this platform.
- An editable install (`pip install -e .`): the package imports them from the source tree.
- By hand: `python hatch_build.py` (needs mypy and setuptools; prints the files).
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
SWITCH = "CAPCLIFF_BUILD_CORE"


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


def compile_core(out: Path) -> list[Path]:
    """Compile the core into `out` (as capcliff/sim/_core/*.so); returns the built files,
    relative to `out`. Raises on any failure."""
    from mypyc.build import mypycify  # imported here: only the build needs mypy
    from setuptools import Distribution

    modules, package, digest = _core_settings()
    pattern = re.compile(re.escape(package) + r"\.(" + "|".join(modules) + r")\b")
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
            text = (ROOT / Path(*package.split(".")) / f"{name}.py").read_text()
            text = pattern.sub(r"capcliff.sim._core.\1", text)
            (core / f"{name}.py").write_text(f"{text}\nSOURCE_SHA256 = {digest!r}\n")
        os.chdir(work)
        paths = [str(CORE_DIR / f"{name}.py") for name in modules]
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
    return os.environ.get(SWITCH, "1") != "0"


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
    """Builds the compiled core in the source tree (once: `pip install .` then `pip install -e .`
    reuse it) and adds it to a wheel; an editable install imports it from the tree."""

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
            if version != "editable":
                for rel in built:
                    build_data["force_include"][str(ROOT / rel)] = rel.as_posix()
                build_data["pure_python"] = False
                build_data["infer_tag"] = True
            self.app.display_info(f"capcliff: compiled simulator core: {len(built)} files")
        except (Exception, SystemExit) as exc:  # never fail the install (mypyc exits on errors)
            self.app.display_warning(f"capcliff: no compiled simulator core ({exc!r}); pure Python")


if __name__ == "__main__":
    for path in build_in_place():
        sys.stdout.write(f"built {path}\n")
