"""Tables that never cut a number: at any width they show every figure whole, or leave it out.

A number never wraps or ends in an ellipsis. When the full table is wider than the console, the
columns named as low-value are dropped one by one (a bar chart first); when it still does not fit,
the rows are printed one figure per line (a vertical layout). Only prose columns (sources, repo
ids) may fold onto several lines.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Literal

from rich.cells import cell_len
from rich.console import Console, ConsoleOptions, RenderableType, RenderResult
from rich.table import Table
from rich.text import Text

Justify = Literal["left", "right"]


@dataclass(frozen=True)
class Column:
    """A table column: its header, alignment, and whether its cells are prose that may fold."""

    header: str
    justify: Justify = "right"
    prose: bool = False


# The narrowest a prose column may fold to, in cells.
PROSE_MIN_WIDTH = 16


class Fitted:
    """The first of several renderings of the same content that fits the console's width
    (each given with the narrowest width it needs); the last one when none does."""

    def __init__(self, candidates: Sequence[tuple[int, RenderableType]], last: RenderableType):
        self.candidates = list(candidates)
        self.last = last

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        yield next((r for width, r in self.candidates if width <= options.max_width), self.last)


def narrowest_width(columns: Sequence[Column], rows: Sequence[Sequence[str]]) -> int:
    """Cells a table needs without cutting a number: each column as wide as its widest cell or
    header (prose columns may fold down to PROSE_MIN_WIDTH), plus rich's borders and padding
    (one rule and two spaces per column, one closing rule)."""
    total = 1
    for i, col in enumerate(columns):
        widest = max([cell_len(col.header), *(cell_len(row[i]) for row in rows)])
        total += 3 + (min(widest, PROSE_MIN_WIDTH) if col.prose else widest)
    return total


def _table(title: str | None, columns: Sequence[Column], rows: Sequence[Sequence[str]]) -> Table:
    table = Table(title=title)
    for col in columns:
        if col.prose:
            table.add_column(col.header, justify=col.justify, overflow="fold")
        else:
            table.add_column(col.header, justify=col.justify, no_wrap=True)
    for row in rows:
        table.add_row(*row)
    return table


def vertical(title: str | None, columns: Sequence[Column], rows: Sequence[Sequence[str]]) -> Text:
    """One block per row: its first cell, then `header: value` per line (blank cells left out)."""
    lines = [] if title is None else [title]
    for row in rows:
        lines.append(row[0])
        lines += [f"  {col.header}: {cell}" for col, cell in zip(columns[1:], row[1:], strict=True)
                  if col.header and cell]  # fmt: skip
    return Text("\n".join(lines), no_wrap=True, overflow="ignore")


def _without(
    columns: Sequence[Column], rows: Sequence[Sequence[str]], dropped: set[str]
) -> tuple[list[Column], list[list[str]]]:
    keep = [i for i, col in enumerate(columns) if col.header not in dropped]
    return [columns[i] for i in keep], [[row[i] for i in keep] for row in rows]


def _narrower(
    title: str | None,
    columns: Sequence[Column],
    rows: Sequence[Sequence[str]],
    droppable: Sequence[str],
) -> Iterator[tuple[int, RenderableType]]:
    dropped: set[str] = set()
    yield narrowest_width(columns, rows), _table(title, columns, rows)
    for header in droppable:
        dropped.add(header)
        kept, cells = _without(columns, rows, dropped)
        yield narrowest_width(kept, cells), _table(title, kept, cells)


def fitted_table(
    title: str | None,
    columns: Sequence[Column],
    rows: Sequence[Sequence[str]],
    *,
    droppable: Sequence[str] = (),
) -> Fitted:
    """The table as wide as it needs; narrower without the `droppable` columns (in that order);
    else one figure per line."""
    return Fitted(list(_narrower(title, columns, rows, droppable)), vertical(title, columns, rows))
