"""`memory --layout all --calibration` of another deployment warned once per layout (33 lines
for DeepSeek-R1 on 8 GPUs); the lines that differ only in the layout are one."""

from __future__ import annotations

from capcliff.analysis.deployment_calibration import merge_layout_mismatches

HEAD = "calibration c.toml applied to another deployment: "


def test_lines_differing_only_in_the_layout_become_one() -> None:
    lines = [
        f"{HEAD}kv_cache_dtype fp8 != bf16",
        *(f"{HEAD}kv_cache_dtype fp8 != bf16; layout tp4-ep4 != {lay}" for lay in ("dp8", "tp8")),
        "another warning",
    ]
    assert merge_layout_mismatches(lines) == (
        f"{HEAD}kv_cache_dtype fp8 != bf16; layout tp4-ep4 != dp8, tp8",
        "another warning",
    )


def test_many_layouts_are_counted_and_the_first_four_named() -> None:
    lays = ["dp8", "dp4-tp2", "dp2-tp4", "tp8", "pp8", "tp2-pp4"]
    lines = [f"{HEAD}layout tp4 != {lay}" for lay in lays]
    assert merge_layout_mismatches(lines) == (
        f"{HEAD}layout tp4 != 6 other layouts (dp8, dp4-tp2, dp2-tp4, tp8, ...)",
    )


def test_other_mismatches_keep_their_own_lines() -> None:
    lines = [f"{HEAD}gpu b200 != h200-sxm; layout tp4 != tp8", f"{HEAD}layout tp4 != tp8"]
    assert merge_layout_mismatches(lines) == tuple(lines)
