"""Renders `capcliff calibrate`'s start-up-log result: a table of logged against modeled figures,
and its JSON form."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.console import Group, RenderableType
from rich.text import Text

from capcliff.cli.tables import Column, fitted_table

if TYPE_CHECKING:
    from capcliff.calibrate.compare import CalibrationResult


def _figure(value: float) -> str:
    return f"{value:,.0f}" if value >= 1000 else f"{value:,.3f}"


def calibration_view(result: CalibrationResult, written: str | None) -> RenderableType:
    """The log against capcliff's prediction, before and after the fitted terms."""
    title = (
        f"{result.engine.value} start-up log vs capcliff ({result.layout.name}, "
        f"max_model_len {result.max_model_len:,})"
    )
    columns = [Column("figure", "left")] + [
        Column(h) for h in ("logged", "modeled", "error", "calibrated")
    ]
    rows = [
        [
            fig.name,
            _figure(fig.logged),
            _figure(fig.predicted),
            f"{fig.error * 100:+.1f} %",
            _figure(fig.calibrated),
        ]
        for fig in result.figures
    ]
    table = fitted_table(title, columns, rows, droppable=("error",))
    terms = ", ".join(f"{k} {v:.2f} GiB" for k, v in sorted(result.calibration.terms_gib.items()))
    saved = written if written is not None else "nothing (pass -o FILE to write a calibration)"
    lines = [f"fitted: {terms or 'nothing to fit'}", f"written: {saved}"]
    lines += [f"note: {note}" for note in result.notes]
    return Group(table, Text("\n".join(lines)))


def calibration_dict(result: CalibrationResult, written: str | None) -> dict[str, object]:
    """The calibration result as a JSON-ready object."""
    return {
        "schema_version": 1,
        "engine": result.engine.value,
        "layout": result.layout.name,
        "max_model_len": result.max_model_len,
        "figures": [
            {
                "name": f.name,
                "logged": f.logged,
                "modeled": f.predicted,
                "error": f.error,
                "calibrated": f.calibrated,
            }
            for f in result.figures
        ],
        "terms_gib": result.calibration.terms_gib,
        "written": written,
        "notes": list(result.notes),
    }
