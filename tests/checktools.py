"""`capcliff check` from a spec file's path, as the tests run it (the CLI loads the spec and the
baseline itself, checking output paths against them first)."""

from __future__ import annotations

from pathlib import Path

from capcliff.check.report import CheckReport, load_baseline
from capcliff.check.runner import run_checks
from capcliff.check.spec import load_spec


def check_file(spec: Path, *, baseline: Path | None = None) -> CheckReport:
    """Load `spec` (and `baseline`) and run every scenario; InputError for a bad input."""
    stored = None if baseline is None else load_baseline(baseline)
    return run_checks(load_spec(spec), baseline=stored)
