"""Edges the memory mutation sample of seed 626 found untested (benchmarks/mutation.py --packages
memory --sample 40 --seed 626). Every expected value is worked out by hand in the comments."""

from __future__ import annotations

from capcliff.memory.engines import sglang_piecewise_sizes


def test_sglangs_piecewise_sizes_up_to_a_2048_token_chunk_one_by_one() -> None:
    # server_args.py `_generate_piecewise_cuda_graph_tokens` (0.5.9-0.5.12), up to the smallest
    # tier's chunk of 2,048 tokens: range(4, 33, 4), range(48, 257, 16), range(288, 513, 32),
    # range(576, 1025, 64), then range(1280, 4097, 256) to 2,048: 8 + 14 + 8 + 8 + 4 = 42 sizes.
    # (Seed 626's range(287, 513, 32) gave 287, 319, ..., 511: also 8 sizes, so the reserve, 8 MiB
    # a size, did not change; the list did.)
    assert sglang_piecewise_sizes(2048) == [
        4, 8, 12, 16, 20, 24, 28, 32,
        48, 64, 80, 96, 112, 128, 144, 160, 176, 192, 208, 224, 240, 256,
        288, 320, 352, 384, 416, 448, 480, 512,
        576, 640, 704, 768, 832, 896, 960, 1024,
        1280, 1536, 1792, 2048,
    ]  # fmt: skip
