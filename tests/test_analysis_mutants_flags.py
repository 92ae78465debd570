"""Edges of the engine flags and warnings that mutation testing found untested
(`benchmarks/mutation.py --packages analysis`, seed 7): each expected value worked out by hand."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from capcliff.analysis.flags import flag_warnings


def _dep(max_num_seqs: int, dp: int) -> Any:
    return SimpleNamespace(
        max_num_seqs=max_num_seqs, moe=False, layout=SimpleNamespace(dp=dp, attention_dp=False),
        vllm_v0=False, releases=(),
    )  # fmt: skip


@pytest.mark.parametrize(
    ("max_num_seqs", "dp", "sweet_spot", "far_below"),
    [
        (64, 1, 128, True),  # 2 x 64 = 128 <= 128: at twice the cap it is far below
        (64, 1, 127, False),  # 128 > 127
        (64, 2, 255, True),  # ceil(255 / 2) = 128 per replica
        (64, 2, 253, False),  # ceil(253 / 2) = 127
    ],
)
def test_a_cap_is_far_below_the_sweet_spot_from_half_of_it_per_replica(
    max_num_seqs: int, dp: int, sweet_spot: int, far_below: bool
) -> None:
    warnings = flag_warnings(
        _dep(max_num_seqs, dp), sweet_spot=sweet_spot, one_request_fits=True, graphs_fit=True
    )
    assert any("is far below the sweet spot" in w for w in warnings) is far_below
    if far_below:
        assert "(128 per replica)" in warnings[0]  # 128 / 1 and ceil(255 / 2)
