"""A copy of the reference benchmark CSV with one cell changed, for the bad-input tests."""

from __future__ import annotations

import csv
from pathlib import Path

DSR1_CSV = Path(__file__).parent / "fixtures" / "bench" / "dsr1_0528_h200_tp8_sglang.csv"


def csv_with(
    tmp_path: Path, column: str, value: str, *, row: int = 0, extra_row: bool = False
) -> Path:
    """`DSR1_CSV` with `column` of row `row` set to `value` (and, with `extra_row`, that row
    repeated as B99), written to tmp_path/bench.csv."""
    rows = list(csv.DictReader(DSR1_CSV.open()))
    rows[row][column] = value
    if extra_row:
        rows.append({**rows[row], "row_id": "B99"})
    path = tmp_path / "bench.csv"
    with path.open("w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    return path
