"""Progress on stderr while a command simulates: one tick per simulated point.

Shown only when stderr is a terminal (a bar that disappears when done); nothing otherwise, so a
pipe, a CI log or a JSON consumer never sees it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager


@contextmanager
def progress_bar(description: str, total: int | None) -> Iterator[Callable[[], None]]:
    """A callable to call once per simulated point; `total` None when unknown in advance."""
    from rich.console import Console

    console = Console(stderr=True)
    if not console.is_terminal:
        yield lambda: None
        return
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    columns = (
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn() if total is not None else TextColumn("{task.completed} points"),
        TimeElapsedColumn(),
    )
    with Progress(*columns, console=console, transient=True) as bar:
        task = bar.add_task(description, total=total)
        yield lambda: bar.advance(task)
