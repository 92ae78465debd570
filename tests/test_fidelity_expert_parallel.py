"""benchmarks/fidelity.py's parallelism per row: InferenceX's SGLang DeepSeek-R1 FP4 rows on B200
that the public rows record as plain TP ran with EP equal to TP (dsr1_fp4_b200_docker.sh's
`--enable-ep-moe` until 2025-11-10, then `--ep-size $EP_SIZE` with `ep` = `tp` in
nvidia-master.yaml); every other row keeps its cell."""

from __future__ import annotations

from typing import Any

import pandas as pd
import pytest

from tests.simtools import benchmark_module

FIDELITY = benchmark_module("fidelity")
SPECULATIVE_ROWS = FIDELITY.PUBLIC_ROWS.with_name("public_speculative_rows.csv")


def _row(row_id: str, table: Any = FIDELITY.PUBLIC_ROWS) -> dict[str, Any]:
    """One row of a public CSV as resolve_rows reads it (pandas records: NaN for a blank)."""
    rows = pd.read_csv(table)
    return dict(rows[rows["row_id"] == row_id].iloc[0])


@pytest.mark.parametrize(
    ("row", "cell"),
    [
        ("P185", "TP8 + EP8 (no DP attention)"),  # FP4, 2025-11-10, recorded "TP8"
        ("P187", "TP4 + EP4 (no DP attention)"),  # FP4, 2025-11-10, recorded "TP4"
        ("P098", "TP8 + EP8 (no DP attention)"),  # FP4, 2025-11-02: --enable-ep-moe
        ("P090", "TP8 + EP8 (no DP attention)"),  # FP4, 0.5.12: recorded with EP already
        ("P079", "TP8 (no DP attention)"),  # FP8: nvidia-master.yaml ep: 1 from 2026
    ],
)
def test_serving_rows(row: str, cell: str) -> None:
    assert FIDELITY._parallelism(_row(row), "sglang") == cell


def test_mtp_rows_keep_their_cell() -> None:
    # S043: dsr1_fp4_b200_mtp.sh, another script; its cell is kept as recorded.
    r = _row("S043", SPECULATIVE_ROWS)
    assert FIDELITY._parallelism(r, "sglang") == "TP8 (no DP attention)"


def test_other_engines_keep_their_cell() -> None:
    assert FIDELITY._parallelism(_row("P185"), "trtllm") == "TP8 (no DP attention)"
