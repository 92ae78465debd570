"""Rendered screens at a fixed width against golden files (regenerate: pytest --update-golden).

These catch unintended changes to what users see; the numbers in them are asserted on their own
merits elsewhere (test_memory, test_engines, test_catalog).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from capcliff.cli.app import app

GOLDEN = Path(__file__).parent / "golden"
SCREENS = {
    "hardware": ["hardware"],
    "memory-llama-8b-tp1": ["memory", "llama-3.1-8b", "--layout", "tp1", "--max-model-len", "8192"],
    "memory-405b-all": ["memory", "llama-3.1-405b", "--max-model-len", "32768"],
}


@pytest.mark.parametrize("name", sorted(SCREENS))
def test_screen_matches_golden(name: str, update_golden: bool) -> None:
    result = CliRunner().invoke(app, SCREENS[name], env={"COLUMNS": "100"})
    assert result.exit_code == 0, result.output
    path = GOLDEN / f"{name}.txt"
    if update_golden:
        path.write_text(result.output)
    assert path.read_text() == result.output
