"""benchmarks/fidelity.py's chat-endpoint rows: `vllm bench serve --backend openai-chat` counts
a prompt's own tokens, the server prefills the rendered chat (the model's template around the
prompt), and vLLM V1's prefix cache computes the template's shared leading blocks once a run.
The counts are worked here from token ids, not taken from the table they check."""

from __future__ import annotations

from typing import Any

import pandas as pd
import pytest

from tests.simtools import benchmark_module

FIDELITY = benchmark_module("fidelity")

# gpt-oss's default harmony system message in o200k_harmony ids, as a public render of it
# printed them (mlx_lm `apply_chat_template`, 2025-11-18): <|start|>system<|message|>"You are
# ChatGPT, a large language model trained by OpenAI.\nKnowledge cutoff: 2024-06\nCurrent date:
# 2025-11-18\n\nReasoning: medium\n\n# Valid channels: analysis, commentary, final. Channel must
# be included for every message."<|end|>
HARMONY_SYSTEM = [
    200006, 17360, 200008, 3575, 553, 17554, 162016, 11, 261, 4410, 6439, 2359, 22203, 656,
    7788, 17527, 558, 87447, 100594, 25, 220, 1323, 19, 12, 3218, 198, 6576, 3521, 25, 220,
    1323, 20, 12, 994, 12, 1157, 279, 30377, 289, 25, 14093, 279, 2, 13888, 18403, 25, 8450,
    11, 49159, 11, 1721, 13, 21030, 2804, 413, 7360, 395, 1753, 3176, 13, 200007,
]  # fmt: skip
COMMENTARY = [11, 49159]  # ", commentary": vLLM drops the channel when a request has no tools
START, MESSAGE, END = 200006, 200008, 200007
DEVELOPER, USER, ASSISTANT = 77944, 1428, 173781


def _row(row_id: str) -> dict[str, Any]:
    rows = pd.read_csv(FIDELITY.PUBLIC_ROWS)
    return dict(rows[rows["row_id"] == row_id].iloc[0])


def test_the_harmony_count_from_its_token_ids() -> None:
    system = HARMONY_SYSTEM.copy()
    at = system.index(COMMENTARY[1]) - 1
    del system[at : at + 2]
    developer = [START, DEVELOPER, MESSAGE, END]  # an empty developer message
    header = [START, USER, MESSAGE]
    tail = [END, START, ASSISTANT]  # after the prompt: <|end|><|start|>assistant
    shared = len(system) + len(developer) + len(header)
    assert (len(system), shared) == (59, 66)
    for model in ("gpt-oss-120b", "gpt-oss-20b"):
        assert FIDELITY.CHAT_TEMPLATE_TOKENS[model] == (shared + len(tail), shared)


@pytest.mark.parametrize(
    ("row", "input_len", "shared"),
    [
        ("P212", 128 + 69, 66),  # gpt-oss-120b, 1,000 x 128/4 through /v1/chat/completions
        ("P216", 128 + 69, 66),  # gpt-oss-20b, 0.11.0
        ("P209", 128 + 3, 2),  # DeepSeek-R1-0528: BOS, User ... Assistant (special tokens)
        # Qwen3-32B: <|im_start|>user\n ... <|im_end|>\n<|im_start|>assistant\n
        ("P222", 128 + 8, 3),
        ("P219", 2000 + 8, 3),  # Qwen3-235B-A22B-Instruct-2507-FP8
        ("P223", 2048, 0),  # vLLM's completions endpoint: the prompt as counted
    ],
)
def test_chat_rows_are_served_with_their_template(row: str, input_len: int, shared: int) -> None:
    point = FIDELITY._point(_row(row), row)
    assert (point.input_len, point.shared_prefix_tokens) == (input_len, shared)


def test_a_chat_row_of_a_model_without_a_count_is_refused() -> None:
    r = _row("P212")
    r["model"] = "Qwen/Qwen3-30B-A3B (BF16)"
    with pytest.raises(ValueError, match="CHAT_TEMPLATE_TOKENS"):
        FIDELITY._point(r, "P212")
