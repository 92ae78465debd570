"""`--plot FILE.png|svg` on `sweep` and `plan`: the path's checks and the atomic write."""

from __future__ import annotations

import importlib
from collections.abc import Callable
from pathlib import Path

from capcliff.errors import InputError

NO_MATPLOTLIB = "plot: matplotlib is not installed; pip install 'capcliff[plot]'"


def plot_path(text: str | None) -> Path | None:
    """The figure's path (None: no figure); it must end in .png or .svg."""
    if text is None:
        return None
    from capcliff.files import output_path

    path = output_path(text, flag="--plot")
    assert path is not None
    if path.suffix.lower() not in (".png", ".svg"):
        raise InputError(f"plot: {text!r} must end in .png or .svg")
    return path


def plotting_ready(path: Path | None) -> None:
    """Before any simulation: a long run should not end in a missing dependency."""
    if path is None:
        return
    try:
        importlib.import_module("matplotlib")
    except ImportError:
        raise InputError(NO_MATPLOTLIB) from None


def write_figure(render: Callable[[str], bytes], path: Path) -> None:
    """Render the figure in the format its suffix names and write it atomically (the path was
    checked against the run's inputs and existing files before the simulation)."""
    from capcliff.files import write_bytes_atomic

    try:
        data = render(path.suffix.lstrip(".").lower())
    except ImportError:
        raise InputError(NO_MATPLOTLIB) from None
    write_bytes_atomic(path, data, overwrite=True)
