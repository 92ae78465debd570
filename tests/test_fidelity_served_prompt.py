"""benchmarks/fidelity.py's served prompt length: InferenceX's client under transformers 5
tokenized DeepSeek-R1 prompts with a broken pre-tokenizer until its fix reached HF Hub repo ids
(SemiAnalysisAI/InferenceX #937, #1381), so an SGLang >= 0.5.10 server received about five
times the tokens the client counted (#937: 7,140 -> 35,921). Every other row keeps its length."""

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


def _served(r: dict[str, Any]) -> int:
    return int(FIDELITY._point(r, str(r["row_id"])).input_len)


@pytest.mark.parametrize(
    ("row", "served"),
    [
        # 8,192 x 35,921 / 7,140 = 41,213.6; 1,024 x 35,921 / 7,140 = 5,151.7
        ("P197", 41_214),  # FP4 TP4 EP4, v0.5.10.post1, 2026-04-17
        ("P204", 41_214),  # FP8 TP8, same image and date
        ("P202", 5_152),  # FP8 TP8, 1,024-token prompts
        ("P104", 8_192),  # FP4 TP4 EP4, v0.5.12, 2026-05-22: after #1381
        ("P113", 8_192),  # FP8 TP8, v0.5.12
    ],
)
def test_serving_rows(row: str, served: int) -> None:
    assert _served(_row(row)) == served


def test_the_mtp_rows_of_the_same_image_alike() -> None:
    assert _served(_row("S066", SPECULATIVE_ROWS)) == 41_214


@pytest.mark.parametrize(
    ("column", "value"),
    [
        ("notes", "InferenceX 2026-05-15; precision fp4"),  # the day #1381 merged
        ("engine_version", "lmsysorg/sglang:v0.5.9-cu130"),  # transformers 4
        ("model", "openai/gpt-oss-120b"),  # not the DeepSeek tokenizer
        ("engine", "TensorRT-LLM"),
    ],
)
def test_rows_outside_the_rule_keep_their_length(column: str, value: str) -> None:
    r = _row("P197")
    r[column] = value
    assert _served(r) == 8_192


def test_only_the_v0_5_10_rows_are_touched() -> None:
    # No other public row of InferenceX's SGLang R1 runs predates the fix on SGLang >= 0.5.10.
    for table in (FIDELITY.PUBLIC_ROWS, SPECULATIVE_ROWS):
        for r in pd.read_csv(table).to_dict("records"):
            if FIDELITY._served_prompt_factor(r) != 1.0:
                assert "v0.5.10.post1" in str(r["engine_version"]), r["row_id"]
