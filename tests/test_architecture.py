"""The package's layers: each package imports only the packages below it, and inside `analysis`
each layer (disagg > plan > sweep > evaluate > the root modules) only the layers below it.

Imports are read with `ast` from every module, at module level, inside functions and under
`TYPE_CHECKING` alike: an import made only for a type hint still points one way.
"""

from __future__ import annotations

import ast
from graphlib import CycleError, TopologicalSorter
from pathlib import Path

import pytest

ROOT = Path(__file__).parent.parent / "capcliff"

# docs/architecture.md: units/errors -> catalog -> memory -> perf, calibrate -> sim -> analysis
# -> check -> cli (a rank may import lower ranks; perf and calibrate share one and never meet)
PACKAGE_RANK = {
    "": 0, "catalog": 1, "memory": 2, "perf": 3, "calibrate": 3, "sim": 4, "analysis": 5,
    "check": 6, "cli": 7,
}  # fmt: skip
ANALYSIS_RANK = {"": 0, "evaluate": 1, "sweep": 2, "plan": 3, "disagg": 4}


def _modules() -> dict[str, Path]:
    found = {}
    for path in ROOT.rglob("*.py"):
        parts = list(path.relative_to(ROOT.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        found[".".join(parts)] = path
    return found


def _imports(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
    return {n for n in names if n == "capcliff" or n.startswith("capcliff.")}


def _package(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 2 or (len(parts) == 2 and parts[1] in PACKAGE_RANK) else ""


def _analysis_layer(module: str) -> str:
    """The layer of an `analysis` module; a subpackage that is no layer of its own
    (`serve_command`) belongs to the root layer."""
    parts = module.split(".")
    return parts[2] if len(parts) >= 3 and parts[2] in ANALYSIS_RANK else ""


MODULES = _modules()


ENTRY_POINTS = {"capcliff.__main__"}  # `python -m capcliff` runs the CLI


@pytest.mark.parametrize("module", sorted(set(MODULES) - ENTRY_POINTS))
def test_module_imports_only_packages_below_it(module: str) -> None:
    rank = PACKAGE_RANK[_package(module)]
    up = [
        name
        for name in _imports(MODULES[module])
        if _package(name) != _package(module) and PACKAGE_RANK[_package(name)] >= rank
    ]
    assert not up, f"{module} imports {up} (same rank or above)"


@pytest.mark.parametrize("module", sorted(m for m in MODULES if m.startswith("capcliff.analysis")))
def test_analysis_layer_imports_only_layers_below_it(module: str) -> None:
    rank = ANALYSIS_RANK[_analysis_layer(module)]
    up = [
        name
        for name in _imports(MODULES[module])
        if name.startswith("capcliff.analysis.")
        and _analysis_layer(name) != _analysis_layer(module)
        and ANALYSIS_RANK[_analysis_layer(name)] > rank
    ]
    assert not up, f"{module} imports {up} from a layer above it"


def test_no_flat_room_of_more_than_twenty_modules() -> None:
    rooms = {p.parent for p in ROOT.rglob("*.py")}
    crowded = {
        str(room.relative_to(ROOT.parent)): n
        for room in rooms
        if (n := len([p for p in room.glob("*.py") if p.name != "__init__.py"])) > 20
    }
    assert not crowded, f"rooms of more than 20 modules: {crowded}"


def _edges(module: str) -> set[str]:
    """The capcliff modules `module` imports: `from package import name` counts `name` when it is
    a module of its own (and the package only for names that are not)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(MODULES[module].read_text())):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            subs = {f"{node.module}.{a.name}" for a in node.names} & MODULES.keys()
            found |= subs
            if len(subs) < len(node.names):
                found.add(node.module)
    return {n for n in found if n in MODULES and n != module}


def _cycle() -> list[str]:
    """One import cycle among capcliff's modules, or [] if there is none."""
    try:
        TopologicalSorter({m: _edges(m) for m in MODULES}).prepare()
    except CycleError as err:
        return list(err.args[1])
    return []


def test_no_import_cycle_not_even_for_type_hints() -> None:
    cycle = _cycle()
    assert not cycle, f"import cycle: {' -> '.join(cycle)}"


def test_capcliff_memory_never_imports_numpy() -> None:
    # numpy costs ~0.1 s of start-up; the memory calculators need none of it (issue 23)
    import subprocess
    import sys

    code = (
        "import sys\nfrom capcliff.cli.main import main\n"
        "try:\n    main(['memory', 'llama-3.1-8b'])\nexcept SystemExit:\n    pass\n"
        "print('numpy' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip().splitlines()[-1] == "False"
