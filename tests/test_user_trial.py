"""An expert user's trial (2026-12-07, h-user): figures a first-time user read wrongly."""

from __future__ import annotations

from types import SimpleNamespace


def _no_slo_layout() -> SimpleNamespace:
    """A 2-replica layout sustaining 1.74 requests/s (its saturation: no SLO), at cap 476."""
    points = (SimpleNamespace(cap=476, state=SimpleNamespace(throughput_rps=0.87)),)
    at = SimpleNamespace(
        ttft_p99_s=0.12, tpot_p99_s=0.033, ttft_p99_half_width=0.07, tpot_p99_half_width=0.76
    )
    capacity = SimpleNamespace(
        cap=476, points=points, saturation_rps=0.87, at_sustained=at, simulated_cliff=None
    )
    layout = SimpleNamespace(name="dpa2", dp=2, tp=1, pp=1)
    return SimpleNamespace(
        memory=SimpleNamespace(layout=layout), capacity=capacity, sustained_rps=1.74,
        saturation_rps=1.74, refined=True,
    )  # fmt: skip


def test_without_an_slo_the_latencies_are_said_to_be_at_the_headroom_below_saturation() -> None:
    # Without an SLO `at_sustained` is the run at (1 - headroom) x saturation (capacity.py), so
    # the TTFT beside "sustains 1.74 ... saturation 1.74" was read as the saturation's.
    # At the default 20 % headroom: 0.8 x 1.74 = 1.392 -> "1.39 requests/s".
    from capcliff.analysis.plan.online_rows import recommendation_reasons_online

    line = recommendation_reasons_online(_no_slo_layout(), {}, 0.2)[0]  # type: ignore[arg-type]
    assert "saturation 1.74; at the 20% headroom below it (1.39 requests/s) TTFT p99 0.12 s" in line
    assert "; there TTFT" not in line
    # within an SLO the run is at the sustained rate itself: "there"
    line = recommendation_reasons_online(_no_slo_layout(), {})[0]  # type: ignore[arg-type]
    assert "saturation 1.74; there TTFT p99 0.12 s" in line


def _memory(per_replica: int, dp: int) -> SimpleNamespace:
    return SimpleNamespace(
        layout=SimpleNamespace(dp=dp),
        kv_capacity_tokens_per_replica=per_replica,
        kv_capacity_tokens_total=per_replica * dp,
    )


def test_the_cap_memory_note_is_per_replica_like_the_cap_and_the_table() -> None:
    # Qwen3-32B FP8 KV dp4-tp2 on 8 x H200: the table's KV tok/rep 1,446,144 and cap 168 per
    # replica, and the note printed the four replicas' 6,111,552 vs 5,784,576. Per replica:
    # 6,111,552 / 4 = 1,527,888 and 5,784,576 / 4 = 1,446,144; 1,527,888 / 1,446,144 - 1 = +5.7 %.
    from capcliff.analysis.plan.commands import _cap_memory_note

    capped = _memory(1_527_888, 4)
    settings = SimpleNamespace(max_num_seqs=None, model_copy=lambda update: settings)
    dep = SimpleNamespace(
        settings=settings,
        hardware=None,
        on=lambda hw, s: SimpleNamespace(memory=lambda layout, length: capped),
    )
    (note,) = _cap_memory_note(dep, _memory(1_446_144, 4), 168, 33_792)  # type: ignore[arg-type]
    assert "holds 1,527,888 KV tokens per replica, not 1,446,144 (+5.7%)" in note
    (note,) = _cap_memory_note(dep, _memory(1_446_144, 1), 168, 33_792)  # type: ignore[arg-type]
    assert "holds 1,527,888 KV tokens, not 1,446,144 (+5.7%)" in note
