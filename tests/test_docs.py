"""The README is part of the product: its commands run as written."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

from capcliff.cli import main

ROOT = Path(__file__).parent.parent
README = (ROOT / "README.md").read_text()


def _blocks(section: str) -> list[str]:
    body = README.split(f"## {section}", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"```bash\n(.*?)```", body, flags=re.DOTALL)


def test_readme_has_exactly_two_setup_commands() -> None:
    commands = [line for block in _blocks("Set-up") for line in block.splitlines() if line.strip()]
    assert commands == ["pip install . && capcliff plan", "pip install -e '.[dev]' && pytest"]


def test_ci_runs_the_readme_commands() -> None:
    ci = (ROOT / ".ci" / "run").read_text()
    for block in _blocks("Set-up"):
        # `set -e` ignores a failure on the left of `&&`, so each line must end the run itself.
        assert f"{block.strip()} || exit 1\n" in ci


EXAMPLES = [line for block in _blocks("Examples") for line in block.splitlines() if line.strip()]


@pytest.mark.parametrize("command", EXAMPLES)
def test_readme_example_runs(command: str, capsys: pytest.CaptureFixture[str]) -> None:
    argv = shlex.split(command)
    assert argv[0] == "capcliff"
    assert main(argv[1:]) == 0, capsys.readouterr().err


def test_architecture_has_a_section_for_every_package() -> None:
    text = (ROOT / "docs" / "architecture.md").read_text()
    packages = sorted(p.parent.name for p in (ROOT / "capcliff").glob("*/__init__.py"))
    assert packages, "no packages found"
    missing = [name for name in packages if f"### `{name}`" not in text]
    assert not missing, f"docs/architecture.md has no section for {missing}"
